//! The stored result of a completed scan, in the field names of the spec.
//!
//! The worker stores the full result whatever the output options were; `GET` shows the fields
//! the options ask for (see `api::scans`). Keeping everything lets the intelligence memory use
//! moments and curves even of scans created without `include_reasons`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The seven Yeo-7 network names, in the order of the spec and of every `T x 7` series.
pub const NETWORKS: [&str; 7] = [
    "Visual",
    "Somatomotor",
    "Dorsal Attention",
    "Ventral Attention",
    "Limbic",
    "Frontoparietal",
    "Default Mode",
];

/// `raw` key to `raw_labeled` key, per the spec's table.
pub fn labeled_network(raw: &str) -> &'static str {
    match raw {
        "Visual" => "Visual",
        "Somatomotor" => "Voice",
        "Frontoparietal" => "Cognitive",
        "Limbic" => "Emotional",
        "Default Mode" => "Memory",
        "Dorsal Attention" => "Attention",
        "Ventral Attention" => "Salience",
        _ => "Unknown",
    }
}

/// The grade of a clip that has no overall score (nothing to read, or no lens scored). The
/// spec makes `grade` a string of its bands; `E`, the band below 45, is the true one for a
/// clip that engages no one: a black, silent or unchanging clip gives the model nothing to
/// respond to. Documented in the README with `low_signal`.
pub const UNSCORED_GRADE: &str = "E";

/// Letter grade for an overall score when the model gives none (spec thresholds).
pub fn grade_for(score: f64) -> &'static str {
    if score >= 75.0 {
        "B"
    } else if score >= 60.0 {
        "C"
    } else if score >= 45.0 {
        "D"
    } else {
        "E"
    }
}

/// Benchmark label for a percentile (spec bands).
pub fn benchmark_label(percentile: f64) -> &'static str {
    if percentile >= 90.0 {
        "well above average"
    } else if percentile >= 70.0 {
        "above average"
    } else if percentile >= 40.0 {
        "average"
    } else if percentile >= 20.0 {
        "below average"
    } else {
        "well below average"
    }
}

/// Everything a completed scan produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanResult {
    pub overall_score: Option<f64>,
    pub grade: Option<String>,
    pub duration_sec: f64,
    pub lenses: Vec<String>,
    pub timeline: Vec<StoredSecond>,
    pub moments: Vec<Moment>,
    pub summary: String,
    pub buy_moments: Option<Vec<BuyMoment>>,
    pub manipulation: Option<Manipulation>,
    /// Object-store key of the rendered fMRI artifact, when one was rendered.
    pub fmri_key: Option<String>,
    /// Object-store key of its poster image (the cortex video's still), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fmri_poster_key: Option<String>,
    /// True when nothing in the clip changes (black, silent or constant): the result then says
    /// "nothing to read" (see `analysis::NOTHING_TO_READ`).
    #[serde(default)]
    pub low_signal: bool,
    /// Which model and analysis modules produced the result.
    #[serde(default)]
    pub provenance: serde_json::Value,
    /// Which streams the clip had; kept so `POST /analyze` can re-run the analysis plugins
    /// on the stored networks, and shown by `GET` as `modalities`.
    #[serde(default = "both_streams")]
    pub modalities: StoredModalities,
    /// The transcript the plugins saw (empty when the clip had no speech or no transcript
    /// was made); kept for re-runs and the intelligence memory, and shown by `GET` as the
    /// additive `transcript`.
    #[serde(default)]
    pub transcript: Vec<TranscriptLine>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StoredModalities {
    /// The clip has a picture (not a uniform field).
    pub video: bool,
    /// The clip has audible sound.
    pub audio: bool,
    /// Speech and language were analysed (voice activity and a transcript).
    #[serde(default)]
    pub speech: bool,
}

/// Results stored before modalities were recorded came from video scans with sound.
fn both_streams() -> StoredModalities {
    StoredModalities {
        video: true,
        audio: true,
        speech: false,
    }
}

/// One line of a scan's transcript (subtitles or speech recognition), times in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TranscriptLine {
    pub start_sec: f32,
    pub end_sec: f32,
    pub text: String,
}

/// One second of the stored timeline; all optional parts are kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSecond {
    pub second: u32,
    pub scores: BTreeMap<String, f64>,
    #[serde(default)]
    pub benchmark: BTreeMap<String, Benchmark>,
    #[serde(default)]
    pub reasons: BTreeMap<String, String>,
    /// Network values in [`NETWORKS`] order.
    pub raw: [f64; 7],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Benchmark {
    pub percentile: f64,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Moment {
    /// `attention_drop`, `attention_peak`, `lens_drop` or `lens_peak`.
    #[serde(rename = "type")]
    pub kind: String,
    pub lens: String,
    pub second: u32,
    pub from: f64,
    pub to: f64,
    pub delta: f64,
    pub z: f64,
    pub reason: String,
    #[serde(rename = "brainReason")]
    pub brain_reason: String,
    #[serde(rename = "contentLine")]
    pub content_line: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BuyMoment {
    pub start_sec: u32,
    pub end_sec: u32,
    pub peak_sec: u32,
    pub strength: String,
    pub strength_pct: f64,
    pub quote: Option<String>,
    pub insight: String,
    pub trigger: String,
}

/// The spec's Manipulation block. Every number is directional and network-proxied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Manipulation {
    pub conversion_risk: f64,
    pub risk_band: String,
    pub cognitive_sovereignty_index: f64,
    pub sovereignty: f64,
    pub pbi: f64,
    pub threat: Threat,
    pub population: Population,
    pub quadrant: Quadrant,
    pub circuits: Vec<Circuit>,
    pub mechanisms: Vec<Mechanism>,
    pub timeline: Vec<ExposureSecond>,
    pub peak_moment: Option<PeakMoment>,
    pub tactics: Vec<Tactic>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Threat {
    pub label: String,
    pub severity: String,
    pub color: String,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Population {
    pub per_ten: f64,
    pub per_ten_thousand: f64,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Quadrant {
    pub key: String,
    pub label: String,
    pub lowers_guard: f64,
    pub wins_over: f64,
    pub how: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Circuit {
    pub key: String,
    pub label: String,
    pub plain: String,
    pub value: f64,
    pub direction: String,
    pub reading: String,
    pub meaning: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Mechanism {
    pub key: String,
    pub label: String,
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ExposureSecond {
    pub sec: u32,
    pub exposure: f64,
    pub reward: f64,
    pub effort: f64,
    pub alarm: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PeakMoment {
    pub peak_sec: u32,
    pub start_sec: u32,
    pub end_sec: u32,
    pub quote: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Tactic {
    pub tactic: String,
    pub kind: String,
    pub at_sec: u32,
    pub quote: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grade_and_benchmark_edges() {
        assert_eq!(grade_for(75.0), "B");
        assert_eq!(grade_for(74.99), "C");
        assert_eq!(grade_for(60.0), "C");
        assert_eq!(grade_for(45.0), "D");
        assert_eq!(grade_for(44.9), "E");
        assert_eq!(benchmark_label(90.0), "well above average");
        assert_eq!(benchmark_label(70.0), "above average");
        assert_eq!(benchmark_label(40.0), "average");
        assert_eq!(benchmark_label(20.0), "below average");
        assert_eq!(benchmark_label(19.9), "well below average");
    }

    #[test]
    fn every_network_has_a_label() {
        for n in NETWORKS {
            assert_ne!(labeled_network(n), "Unknown");
        }
    }
}
