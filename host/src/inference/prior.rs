//! qualia v1's prior weights: each one set from a well-established finding, with its reason,
//! written into `model.json` so anyone can audit them. These are literature priors, not weights
//! fitted to fMRI (see `models/qualia/v1/README.md`); `brainscan model fit` replaces them when an
//! operator has data.
//!
//! The feature statistics that z-score inputs come from a reference corpus of clips (their
//! per-second features, as `brainscan features` writes them), never from the clip being scanned.

use std::collections::BTreeMap;

use super::features::{self, FEATURE_COUNT, FEATURES, Modality};
use super::language::{AXES, NEUTRAL};
use super::model::{
    AxisSpec, FeatureSpec, Manifest, Model, NETWORK_COUNT, Presence, ResponseSpec, Sampling,
    SemanticSpec, WeightNote,
};
use super::v2;
use crate::result::NETWORKS;

pub struct Prior {
    pub network: &'static str,
    pub feature: &'static str,
    pub weight: f32,
    pub reason: &'static str,
}

const fn w(
    network: &'static str,
    feature: &'static str,
    weight: f32,
    reason: &'static str,
) -> Prior {
    Prior {
        network,
        feature,
        weight,
        reason,
    }
}

/// The v1 prior. Weights are in z units of response per z unit of (HRF-filtered) feature.
pub const PRIOR: &[Prior] = &[
    w(
        "Visual",
        "contrast",
        0.35,
        "Early visual cortex responds monotonically to luminance contrast (contrast-response functions in V1-V3, e.g. Boynton et al. 1999).",
    ),
    w(
        "Visual",
        "edges",
        0.30,
        "Oriented edge energy is the preferred stimulus of V1 simple/complex cells; image edge density predicts occipital BOLD in natural-image encoding models.",
    ),
    w(
        "Visual",
        "motion",
        0.30,
        "Luminance change over time (flicker, motion energy) drives striate and extrastriate cortex; motion-energy models predict visual-cortex responses to movies (Nishimoto et al. 2011).",
    ),
    w(
        "Visual",
        "motion_coarse",
        0.10,
        "Large-field motion adds drive to visual cortex beyond local flicker (MT+ lies at the visual/dorsal-attention border in Yeo-7).",
    ),
    w(
        "Visual",
        "colourfulness",
        0.10,
        "Chromatic contrast drives V1/V4 colour-selective populations (weak prior).",
    ),
    w(
        "Visual",
        "saliency",
        0.10,
        "Local centre-surround contrast adds stimulus drive in early visual areas (weak prior).",
    ),
    w(
        "Somatomotor",
        "level_db",
        0.35,
        "Yeo-7's somatomotor network contains auditory cortex (Heschl's gyrus, superior temporal plane), whose BOLD rises with sound level.",
    ),
    w(
        "Somatomotor",
        "syllabic",
        0.20,
        "Auditory cortex tracks the 2-8 Hz syllabic envelope of speech (envelope tracking, e.g. Giraud & Poeppel 2012).",
    ),
    w(
        "Somatomotor",
        "speech_ratio",
        0.15,
        "Speech-band energy engages superior temporal auditory cortex more than out-of-band sound.",
    ),
    w(
        "Somatomotor",
        "flux",
        0.10,
        "Spectro-temporal change (onsets) drives auditory cortex beyond steady sound.",
    ),
    w(
        "Somatomotor",
        "onset_rate",
        0.10,
        "Rate of acoustic events drives auditory responses (sound-rate effects on auditory BOLD).",
    ),
    w(
        "Somatomotor",
        "motion",
        0.10,
        "Observed movement engages premotor/somatomotor cortex (action observation), weak prior.",
    ),
    w(
        "Dorsal Attention",
        "motion_coarse",
        0.35,
        "Coherent large-field motion drives MT+/V5 and the intraparietal sulcus, both in the dorsal attention network.",
    ),
    w(
        "Dorsal Attention",
        "motion",
        0.25,
        "Motion engages dorsal-stream areas that orient attention in space (Corbetta & Shulman 2002).",
    ),
    w(
        "Dorsal Attention",
        "saliency",
        0.15,
        "Spatially distinct, salient locations drive top-down/bottom-up orienting in FEF/IPS.",
    ),
    w(
        "Dorsal Attention",
        "edges",
        0.05,
        "Visual clutter raises search demands on the dorsal attention network (weak prior).",
    ),
    w(
        "Ventral Attention",
        "cut",
        0.40,
        "Abrupt scene changes (film cuts, event boundaries) evoke salience/ventral-attention responses (anterior insula, TPJ; Zacks et al. 2010).",
    ),
    w(
        "Ventral Attention",
        "onset_strength",
        0.30,
        "Sudden sounds capture attention through the ventral attention/salience network (stimulus-driven reorienting).",
    ),
    w(
        "Ventral Attention",
        "level_change",
        0.30,
        "Abrupt loudness changes are deviant events that engage the salience network (mismatch/oddball responses).",
    ),
    w(
        "Ventral Attention",
        "luma_change",
        0.20,
        "Abrupt global luminance changes are visual transients that trigger reorienting.",
    ),
    w(
        "Limbic",
        "bass_ratio",
        0.10,
        "Low-frequency, loud sound relates to arousal responses in orbitofrontal/temporal-pole regions (weak prior).",
    ),
    w(
        "Limbic",
        "level_db",
        0.05,
        "Overall sound intensity relates to arousal (weak prior).",
    ),
    w(
        "Limbic",
        "colourfulness",
        0.05,
        "Colour saturation relates to affective appraisal (weak prior).",
    ),
    w(
        "Frontoparietal",
        "syllabic",
        0.20,
        "Following continuous speech loads working memory and control regions (weak-to-moderate prior).",
    ),
    w(
        "Frontoparietal",
        "speech_ratio",
        0.10,
        "Speech content engages frontoparietal control for comprehension (weak prior).",
    ),
    w(
        "Frontoparietal",
        "cut",
        0.10,
        "Event boundaries update working memory in lateral prefrontal/parietal cortex (weak prior).",
    ),
    w(
        "Default Mode",
        "motion",
        -0.25,
        "The default mode network deactivates with external sensory load (task-negative response, Raichle et al. 2001).",
    ),
    w(
        "Default Mode",
        "level_db",
        -0.20,
        "Loud external stimulation deactivates the default mode network.",
    ),
    w(
        "Default Mode",
        "cut",
        -0.15,
        "Abrupt external events pull attention outward, lowering default-mode activity.",
    ),
    w(
        "Default Mode",
        "contrast",
        -0.10,
        "High-contrast visual input is external load (weak prior).",
    ),
    w(
        "Default Mode",
        "onset_strength",
        -0.10,
        "Sudden sounds pull attention outward (weak prior).",
    ),
    w(
        "Default Mode",
        "syllabic",
        0.30,
        "Sustained narrative speech engages the default mode network over long timescales (Lerner et al. 2011; Simony et al. 2016).",
    ),
    w(
        "Default Mode",
        "speech_ratio",
        0.10,
        "Speech-dominated soundtracks tend to carry narrative (weak prior).",
    ),
];

/// Raw feature values that stand for an absent modality in v1: a black, still frame and
/// silence. (v2 uses the corpus mean instead: an absent stream reads as "typical", z = 0.)
#[must_use]
pub fn absent_values() -> Vec<f32> {
    FEATURES
        .iter()
        .map(|(name, modality, _)| match (*modality, *name) {
            (Modality::Audio, "level_db") => -100.0,
            (Modality::Audio, n) if n.starts_with("mel_") => (1e-6f32).ln(),
            _ => 0.0,
        })
        .collect()
}

/// Smallest standard deviation per feature, so a feature that barely varies in the corpus
/// cannot blow up z-scores (documented in the model card).
#[must_use]
pub fn std_floor(feature: &str) -> f32 {
    match feature {
        "level_db" | "level_change" | "loudness" | "loudness_change" => 1.0,
        f if f.starts_with("mel_shape_") => 0.25,
        f if f.starts_with("mel_") => 0.5,
        "onset_rate" | "word_rate" | "intelligibility" => 0.25,
        "video_present" | "audio_present" | "speech_present" => 0.5,
        "speech_presence" => 0.1,
        f if f.starts_with("axis_") || f == "semantic_change" => 0.02,
        _ => 0.01,
    }
}

/// One clip's per-second features (`rows x F`) and which modalities it really had.
#[derive(Debug, Clone)]
pub struct CorpusClip {
    pub features: Vec<f32>,
    pub presence: Presence,
}

/// Mean and floored std of per-second features over a corpus, for the feature list `list`
/// (name and modality per column). A feature's statistics use only the clips that had its
/// modality: a clip without sound says nothing about typical loudness. A feature no clip had
/// keeps `fallback` as its mean.
#[must_use]
pub fn corpus_stats(
    clips: &[CorpusClip],
    list: &[(&str, Modality)],
    fallback: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let f = list.len();
    let present = |c: &CorpusClip, k: usize| c.presence.has(list[k].1);
    let mut mean = vec![0f64; f];
    let mut count = vec![0f64; f];
    for c in clips {
        for row in c.features.chunks_exact(f) {
            for (k, v) in row.iter().enumerate() {
                if present(c, k) {
                    mean[k] += f64::from(*v);
                    count[k] += 1.0;
                }
            }
        }
    }
    for (m, n) in mean.iter_mut().zip(&count) {
        *m /= n.max(1.0);
    }
    let mut var = vec![0f64; f];
    for c in clips {
        for row in c.features.chunks_exact(f) {
            for (k, v) in row.iter().enumerate() {
                if present(c, k) {
                    var[k] += (f64::from(*v) - mean[k]).powi(2);
                }
            }
        }
    }
    let std = var
        .iter()
        .zip(&count)
        .zip(list.iter())
        .map(|((v, n), (name, _))| ((v / n.max(1.0)).sqrt() as f32).max(std_floor(name)))
        .collect();
    let mean = mean
        .iter()
        .zip(&count)
        .enumerate()
        .map(|(k, (m, n))| if *n > 0.0 { *m as f32 } else { fallback[k] })
        .collect();
    (mean, std)
}

/// The v1 feature list as (name, modality).
#[must_use]
pub fn v1_list() -> Vec<(&'static str, Modality)> {
    FEATURES.iter().map(|f| (f.0, f.1)).collect()
}

/// The v2 feature list as (name, modality).
#[must_use]
pub fn v2_list() -> Vec<(&'static str, Modality)> {
    v2::FEATURES.iter().map(|f| (f.0, f.1)).collect()
}

/// A prior model's provenance: `source: prior`, the caveat clients read, and the corpus the
/// statistics came from.
fn prior_provenance(
    summary: &str,
    corpus: serde_json::Value,
) -> BTreeMap<String, serde_json::Value> {
    BTreeMap::from([
        ("source".to_owned(), serde_json::json!("prior")),
        ("summary".to_owned(), serde_json::json!(summary)),
        ("corpus".to_owned(), corpus),
    ])
}

/// `model.json`'s feature list from a feature table.
fn feature_specs(table: &[(&str, Modality, &str)]) -> Vec<FeatureSpec> {
    table
        .iter()
        .map(|(name, modality, description)| FeatureSpec {
            name: (*name).into(),
            modality: *modality,
            description: (*description).into(),
        })
        .collect()
}

/// Default sampling of v1 (see QUALIA-MODEL.md).
#[must_use]
pub fn default_sampling() -> Sampling {
    Sampling {
        fps: 10,
        width: 160,
        height: 90,
        sample_rate: features::SAMPLE_RATE,
        hop: features::HOP as u32,
        window: features::WINDOW as u32,
        onset_threshold: 0.5,
        hop_offset: 0,
        normalise_dbfs: None,
        active_picture: false,
    }
}

/// Builds the prior model from corpus statistics.
#[must_use]
pub fn build(version: &str, mean: Vec<f32>, std: Vec<f32>, corpus: serde_json::Value) -> Model {
    let f = FEATURE_COUNT;
    let mut weights = vec![0f32; NETWORK_COUNT * f];
    let mut notes = Vec::new();
    for p in PRIOR {
        let n = NETWORKS
            .iter()
            .position(|x| *x == p.network)
            .unwrap_or_else(|| panic!("unknown network {}", p.network));
        let k = features::feature_index(p.feature)
            .unwrap_or_else(|| panic!("unknown feature {}", p.feature));
        weights[n * f + k] = p.weight;
        notes.push(WeightNote {
            network: p.network.into(),
            feature: p.feature.into(),
            weight: p.weight,
            reason: p.reason.into(),
        });
    }
    let provenance = prior_provenance(
        "Weights are literature priors set by hand from the findings listed per weight; they are NOT fitted to fMRI. Feature statistics come from the reference corpus below.",
        corpus,
    );
    let taps = 32;
    let manifest = Manifest {
        name: "qualia".into(),
        version: version.into(),
        format: 1,
        networks: NETWORKS.iter().map(|s| (*s).to_owned()).collect(),
        features: feature_specs(&FEATURES),
        sampling: default_sampling(),
        response: ResponseSpec {
            kind: "spm-double-gamma (peak 6 s, undershoot 16 s, ratio 1/6), unit sum".into(),
            taps,
            lag_seconds: 5,
        },
        provenance,
        weights: notes,
        semantic: None,
        checksum: String::new(),
    };
    Model {
        features: FEATURES.iter().map(|f| f.0.to_owned()).collect(),
        modality: FEATURES.iter().map(|f| f.1).collect(),
        mean,
        std,
        absent: absent_values(),
        weights,
        bias: vec![0.0; NETWORK_COUNT],
        hrf: features::canonical_hrf(taps),
        lag: 5,
        axes: Vec::new(),
        manifest,
    }
}

/// v2's prior: v1's weights carried over to the renamed v2 features, plus hand-set priors for
/// the speech and language features. All of these are literature priors set by hand; the
/// grounded readout (Neurosynth-derived profiles, fitted on real fMRI) replaces them.
pub const PRIOR_V2_LANGUAGE: &[Prior] = &[
    w(
        "Somatomotor",
        "speech_presence",
        0.20,
        "Voice-selective regions of superior temporal cortex (in Yeo-7's somatomotor network with auditory cortex) respond more to voices than to other sounds (Belin et al. 2000).",
    ),
    w(
        "Default Mode",
        "intelligibility",
        0.25,
        "Intelligible speech engages anterior temporal, angular-gyrus and medial prefrontal language/semantic regions beyond acoustically matched unintelligible speech (Scott et al. 2000; Lerner et al. 2011); much of that cortex lies in Yeo-7's default mode network.",
    ),
    w(
        "Frontoparietal",
        "word_rate",
        0.10,
        "Faster, denser speech raises comprehension load in left inferior frontal and control regions (weak prior).",
    ),
    w(
        "Default Mode",
        "semantic_change",
        0.10,
        "Event boundaries in narratives shift default-mode activity patterns (Baldassano et al. 2017); weak prior.",
    ),
    w(
        "Ventral Attention",
        "semantic_change",
        0.10,
        "A change of topic is a salient event boundary (weak prior).",
    ),
    w(
        "Default Mode",
        "axis_social",
        0.15,
        "Social and mentalising content engages medial prefrontal cortex, temporo-parietal junction and precuneus, core default-mode regions (Mars et al. 2012).",
    ),
    w(
        "Limbic",
        "axis_emotion",
        0.15,
        "Emotional language engages temporal-pole and orbitofrontal cortex, Yeo-7's limbic network (weak prior).",
    ),
    w(
        "Frontoparietal",
        "axis_numbers",
        0.15,
        "Numbers and quantities engage the intraparietal sulcus and lateral prefrontal cortex (Dehaene et al. 2003).",
    ),
    w(
        "Ventral Attention",
        "axis_imperative",
        0.10,
        "Direct address and calls to action are salient social signals (weak prior).",
    ),
];

/// v1 feature names that v2 carries under another name; v1's `luma` has no v2 counterpart.
fn v2_name(v1: &str) -> Option<&'static str> {
    match v1 {
        "luma" => None,
        "motion" => Some("flicker"),
        "level_db" => Some("loudness"),
        "level_change" => Some("loudness_change"),
        other => v2::FEATURES.iter().find(|f| f.0 == other).map(|f| f.0),
    }
}

/// Default sampling of v2: v1's, with the causal hop grid.
#[must_use]
pub fn default_sampling_v2() -> Sampling {
    Sampling {
        hop_offset: 3,
        normalise_dbfs: Some(v2::NORMALISED_DBFS as f32),
        active_picture: true,
        ..default_sampling()
    }
}

/// Builds the v2 prior model from corpus statistics and the semantic axis directions.
#[must_use]
pub fn build_v2(
    version: &str,
    mean: Vec<f32>,
    std: Vec<f32>,
    axes: Vec<f32>,
    embedder: &str,
    corpus: serde_json::Value,
) -> Model {
    let f = v2::FEATURE_COUNT_V2;
    let mut weights = vec![0f32; NETWORK_COUNT * f];
    let mut notes = Vec::new();
    // Dropped in v2: Yeo-7's somatomotor network holds auditory cortex, and a visual weight
    // there made a silent video read as heard.
    let carried = PRIOR
        .iter()
        .filter(|p| !(p.network == "Somatomotor" && p.feature == "motion"))
        .filter_map(|p| v2_name(p.feature).map(|name| (p, name)));
    let added = PRIOR_V2_LANGUAGE.iter().map(|p| (p, p.feature));
    for (p, feature) in carried.chain(added) {
        let n = NETWORKS
            .iter()
            .position(|x| *x == p.network)
            .unwrap_or_else(|| panic!("unknown network {}", p.network));
        let k = v2::feature_index(feature).unwrap_or_else(|| panic!("unknown feature {feature}"));
        weights[n * f + k] += p.weight;
        notes.retain(|x: &WeightNote| !(x.network == p.network && x.feature == feature));
        notes.push(WeightNote {
            network: p.network.into(),
            feature: feature.into(),
            weight: weights[n * f + k],
            reason: p.reason.into(),
        });
    }
    let provenance = prior_provenance(
        "Weights are literature priors set by hand (v1's, carried to the v2 features, plus priors for the speech and language features); they are NOT fitted to fMRI. Feature statistics come from the reference corpus below. Absent streams read as the corpus mean.",
        corpus,
    );
    let taps = 32;
    let manifest = Manifest {
        name: "qualia".into(),
        version: version.into(),
        format: 2,
        networks: NETWORKS.iter().map(|s| (*s).to_owned()).collect(),
        features: feature_specs(&v2::FEATURES),
        sampling: default_sampling_v2(),
        response: ResponseSpec {
            kind: "spm-double-gamma (peak 6 s, undershoot 16 s, ratio 1/6), unit sum; stimulus time uses the taps from the peak (lag) onwards, BOLD time all taps".into(),
            taps,
            lag_seconds: 5,
        },
        provenance,
        weights: notes,
        semantic: Some(SemanticSpec {
            embedder: embedder.into(),
            axes: AXES
                .iter()
                .map(|a| AxisSpec {
                    name: a.name.into(),
                    meaning: a.meaning.into(),
                    anchors: a.anchors.iter().map(|s| (*s).to_owned()).collect(),
                })
                .collect(),
            neutral: NEUTRAL.iter().map(|s| (*s).to_owned()).collect(),
        }),
        checksum: String::new(),
    };
    Model {
        features: v2::FEATURES.iter().map(|f| f.0.to_owned()).collect(),
        modality: v2::FEATURES.iter().map(|f| f.1).collect(),
        absent: mean.clone(),
        mean,
        std,
        weights,
        bias: vec![0.0; NETWORK_COUNT],
        hrf: features::canonical_hrf(taps),
        lag: 5,
        axes,
        manifest,
    }
}
