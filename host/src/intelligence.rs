//! Cross-scan intelligence: rollups over an organisation's remembered scans, and recall.
//!
//! Recall is semantic (sentence embeddings, see [`recall`]).

use std::collections::{BTreeMap, HashMap, HashSet};

pub mod recall;

use serde::Serialize;
use utoipa::ToSchema;

use crate::result::ScanResult;

/// One remembered scan.
#[derive(Debug, Clone)]
pub struct Remembered {
    pub scan_id: String,
    pub created_at: i64,
    pub result: ScanResult,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct DropSecond {
    pub second: u32,
    pub lens: String,
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RecallHit {
    pub scan_id: String,
    /// `moment` (a moment's reason), `summary` (a scan's written read) or `transcript` (a
    /// line of what is said in the clip).
    pub kind: String,
    /// The lens the text concerns; `overall` for summaries and transcript lines.
    pub lens: String,
    /// The second the text refers to: the moment's second, the line's start, 0 for summaries.
    pub second: u32,
    pub text: String,
    /// Cosine similarity of the text and the query, 0-1 (hits below 0.1 are not returned).
    pub score: f64,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Rollup {
    pub scan_count: usize,
    pub lens_averages: BTreeMap<String, f64>,
    pub avg_lens_curves: BTreeMap<String, Vec<f64>>,
    pub recurring_drop_seconds: Vec<DropSecond>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<Vec<RecallHit>>,
}

/// At most this many recall hits (spec).
pub const MAX_RECALL: usize = 8;
/// Recurring drop seconds listed.
pub const MAX_DROP_SECONDS: usize = 50;

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Averages per lens (the mean over scans of each scan's mean score), per-second curves (the
/// mean at each second over the scans that reach it) and drop moments counted by
/// `(second, lens)`.
pub fn rollup(scans: &[Remembered]) -> Rollup {
    let mut per_scan_means: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut curve_sums: BTreeMap<String, Vec<(f64, u32)>> = BTreeMap::new();
    let mut drops: HashMap<(u32, String), u32> = HashMap::new();
    for scan in scans {
        for lens in &scan.result.lenses {
            let series: Vec<f64> = scan
                .result
                .timeline
                .iter()
                .filter_map(|s| s.scores.get(lens).copied())
                .collect();
            if series.is_empty() {
                continue;
            }
            per_scan_means
                .entry(lens.clone())
                .or_default()
                .push(series.iter().sum::<f64>() / series.len() as f64);
            let curve = curve_sums.entry(lens.clone()).or_default();
            if curve.len() < series.len() {
                curve.resize(series.len(), (0.0, 0));
            }
            for (i, v) in series.iter().enumerate() {
                curve[i].0 += v;
                curve[i].1 += 1;
            }
        }
        let mut seen = HashSet::new();
        for m in scan
            .result
            .moments
            .iter()
            .filter(|m| m.kind.ends_with("_drop"))
        {
            // A scan counts once per (second, lens).
            if seen.insert((m.second, m.lens.clone())) {
                *drops.entry((m.second, m.lens.clone())).or_default() += 1;
            }
        }
    }
    let lens_averages = per_scan_means
        .into_iter()
        .map(|(lens, means)| (lens, round2(means.iter().sum::<f64>() / means.len() as f64)))
        .collect();
    let avg_lens_curves = curve_sums
        .into_iter()
        .map(|(lens, sums)| {
            (
                lens,
                sums.into_iter()
                    .map(|(s, n)| round2(s / f64::from(n)))
                    .collect(),
            )
        })
        .collect();
    let mut recurring: Vec<DropSecond> = drops
        .into_iter()
        .map(|((second, lens), count)| DropSecond {
            second,
            lens,
            count,
        })
        .collect();
    recurring.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.second.cmp(&b.second))
            .then(a.lens.cmp(&b.lens))
    });
    recurring.truncate(MAX_DROP_SECONDS);
    Rollup {
        scan_count: scans.len(),
        lens_averages,
        avg_lens_curves,
        recurring_drop_seconds: recurring,
        query: None,
        recall: None,
    }
}
