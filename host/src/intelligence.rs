//! Cross-scan intelligence: rollups over an organisation's remembered scans, and recall.
//!
//! Recall is semantic (sentence embeddings, see [`recall`]).

use std::collections::BTreeMap;

pub mod recall;

use serde::Serialize;
use utoipa::ToSchema;

use crate::store::memory::MemoryRollup;

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

/// The rollup of an organisation's memory as the database aggregated it
/// ([`crate::store::memory::MemoryRollup`]): averages per lens (the mean over scans of each
/// scan's mean score), per-second curves (the mean at each second over the scans that reach
/// it) and drop moments counted once per scan by `(second, lens)`, rounded for the response.
#[must_use]
pub fn rollup(memory: MemoryRollup) -> Rollup {
    let lens_averages = memory
        .lens_means
        .into_iter()
        .map(|(lens, mean)| (lens, round2(mean)))
        .collect();
    let mut avg_lens_curves: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (lens, _second, mean) in memory.curves {
        // Rows come ordered by lens and second, and a timeline has every second from 0.
        avg_lens_curves.entry(lens).or_default().push(round2(mean));
    }
    let recurring_drop_seconds = memory
        .drops
        .into_iter()
        .map(|(second, lens, count)| DropSecond {
            second: u32::try_from(second).unwrap_or(u32::MAX),
            lens,
            count: u32::try_from(count).unwrap_or(u32::MAX),
        })
        .collect();
    Rollup {
        scan_count: usize::try_from(memory.scan_count).unwrap_or(0),
        lens_averages,
        avg_lens_curves,
        recurring_drop_seconds,
        query: None,
        recall: None,
    }
}
