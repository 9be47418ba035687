//! Benchmarks: where a second's lens score falls among the per-second scores of a reference
//! corpus of real clips.
//!
//! The table lives beside the model it was built with (`models/qualia/<version>/
//! benchmark.json`) because a percentile only means something for scores made the same way:
//! the same model and the same lens plugin. `brainscan model corpus DIR` builds it — it runs
//! the model and the built-in lens plugin on every clip in `DIR` and stores 101 quantiles
//! (0th … 100th percentile) of the per-second scores of each lens. A lens is benchmarked only
//! when the plugin that scored it is the one the table was built with (same name and
//! version); other lenses — custom ones, or the built-in ones after a lens plugin upgrade —
//! get no benchmark entry rather than a misleading one.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::result::benchmark_label;

/// The benchmark table embedded with the built-in model.
pub const EMBEDDED: &[u8] = include_bytes!("../../models/qualia/v2/benchmark.json");

/// Quantiles per lens: index `i` is the `i`-th percentile.
pub const QUANTILES: usize = 101;

/// Largest `benchmark.json` read from disk.
const MAX_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorpusClip {
    pub file: String,
    pub sha256: String,
    pub seconds: usize,
    pub video: bool,
    pub audio: bool,
}

/// Where one lens's benchmark labels change, in score units: below `p20` is "well below
/// average", `p20`–`p40` "below average", `p40`–`p70` "average", `p70`–`p90` "above
/// average", above `p90` "well above average".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BenchmarkBands {
    pub p20: f64,
    pub p40: f64,
    pub p70: f64,
    pub p90: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkTable {
    pub format: u32,
    /// `qualia-<version>` of the model whose networks were scored.
    pub model: String,
    /// `name@version` of the lens plugin that scored them.
    pub lens_plugin: String,
    /// sha256 of that plugin's component.
    pub lens_plugin_digest: String,
    pub clips: Vec<CorpusClip>,
    /// Per-second scores behind each lens's quantiles.
    pub seconds: usize,
    pub quantiles: BTreeMap<String, Vec<f64>>,
    /// Why the corpus is what it is; shown by `brainscan model show`.
    #[serde(default)]
    pub note: String,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchmarkError {
    #[error("reading {0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0} is larger than {MAX_BYTES} bytes")]
    TooLarge(String),
    #[error("benchmark table: {0}")]
    Json(#[from] serde_json::Error),
    #[error("benchmark table: {0}")]
    Invalid(String),
}

/// The `p`-th quantile of sorted values (linear interpolation between closest ranks, the
/// "type 7" estimator of R and numpy's default).
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

impl BenchmarkTable {
    /// Builds a table from per-lens per-second scores.
    ///
    /// # Errors
    /// When a lens has no scores or a score is outside 0-100.
    pub fn build(
        model: String,
        lens_plugin: String,
        lens_plugin_digest: String,
        clips: Vec<CorpusClip>,
        scores: BTreeMap<String, Vec<f64>>,
        note: String,
    ) -> Result<Self, BenchmarkError> {
        let seconds = clips.iter().map(|c| c.seconds).sum();
        let mut quantiles = BTreeMap::new();
        for (lens, mut v) in scores {
            if v.is_empty() {
                return Err(BenchmarkError::Invalid(format!(
                    "lens {lens} has no scores"
                )));
            }
            if v.iter().any(|x| !(0.0..=100.0).contains(x)) {
                return Err(BenchmarkError::Invalid(format!(
                    "lens {lens} has a score outside 0-100"
                )));
            }
            v.sort_by(f64::total_cmp);
            let q = (0..QUANTILES)
                .map(|i| (quantile(&v, i as f64 / 100.0) * 100.0).round() / 100.0)
                .collect();
            quantiles.insert(lens, q);
        }
        let table = Self {
            format: 1,
            model,
            lens_plugin,
            lens_plugin_digest,
            clips,
            seconds,
            quantiles,
            note,
        };
        table.validate()?;
        Ok(table)
    }

    /// # Errors
    /// A table whose quantiles are missing, not finite, outside 0-100 or not non-decreasing.
    pub fn validate(&self) -> Result<(), BenchmarkError> {
        if self.format != 1 {
            return Err(BenchmarkError::Invalid(format!(
                "format {} (this build reads format 1)",
                self.format
            )));
        }
        for (lens, q) in &self.quantiles {
            if q.len() != QUANTILES {
                return Err(BenchmarkError::Invalid(format!(
                    "lens {lens} has {} quantiles, expected {QUANTILES}",
                    q.len()
                )));
            }
            if q.iter()
                .any(|x| !x.is_finite() || !(0.0..=100.0).contains(x))
            {
                return Err(BenchmarkError::Invalid(format!(
                    "lens {lens} has a quantile outside 0-100"
                )));
            }
            if q.windows(2).any(|w| w[1] < w[0]) {
                return Err(BenchmarkError::Invalid(format!(
                    "lens {lens}: quantiles must not decrease"
                )));
            }
        }
        Ok(())
    }

    /// # Errors
    /// Malformed or invalid JSON.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BenchmarkError> {
        let t: Self = serde_json::from_slice(bytes)?;
        t.validate()?;
        Ok(t)
    }

    /// The embedded table.
    ///
    /// # Errors
    /// Only for a broken build (a test guards it).
    pub fn embedded() -> Result<Self, BenchmarkError> {
        Self::from_bytes(EMBEDDED)
    }

    /// `dir/benchmark.json`, or `None` when the folder has none (a model without a corpus
    /// table: scans then carry no benchmark entries).
    ///
    /// # Errors
    /// An unreadable, oversized or invalid file.
    pub fn load_dir(dir: &Path) -> Result<Option<Self>, BenchmarkError> {
        let path = dir.join("benchmark.json");
        let name = path.display().to_string();
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(BenchmarkError::Io(name, e)),
        };
        if meta.len() > MAX_BYTES {
            return Err(BenchmarkError::TooLarge(name));
        }
        let bytes = std::fs::read(&path).map_err(|e| BenchmarkError::Io(name, e))?;
        Self::from_bytes(&bytes).map(Some)
    }

    /// Percentile 0-100 (whole number) of `score` among the corpus's per-second scores of
    /// `lens`: the share of corpus seconds scoring below it, interpolated between quantiles;
    /// a score equal to a run of tied quantiles takes the middle of the run, except that a
    /// score equal to the corpus median is the 50th percentile, as the lens scale scores a tie
    /// across the median (`plugins/readouts`): otherwise a music track at rest, 50 on purchase
    /// intent, was benchmarked "below average" (the middle of a run from the 3rd to the 68th
    /// quantile). `None` when the table has no such lens.
    pub fn percentile(&self, lens: &str, score: f64) -> Option<f64> {
        let q = self.quantiles.get(lens)?;
        let below = q.iter().filter(|x| **x < score).count();
        let at_or_below = q.iter().filter(|x| **x <= score).count();
        let p = if at_or_below == 0 {
            0.0
        } else if below == QUANTILES {
            100.0
        } else if at_or_below > below && below <= QUANTILES / 2 && QUANTILES / 2 < at_or_below {
            // The run of ties holds the median quantile: the score is the corpus median.
            50.0
        } else if at_or_below > below {
            // Ties: indices below..at_or_below-1 equal the score.
            (below + at_or_below - 1) as f64 / 2.0
        } else {
            let (a, b) = (q[below - 1], q[below]);
            (below - 1) as f64 + (score - a) / (b - a)
        };
        Some(p.round().clamp(0.0, 100.0))
    }

    /// The spec's `{percentile, label}` for a score.
    pub fn entry(&self, lens: &str, score: f64) -> Option<crate::result::Benchmark> {
        self.percentile(lens, score)
            .map(|p| crate::result::Benchmark {
                percentile: p,
                label: benchmark_label(p).to_owned(),
            })
    }

    /// The scores at which a lens's benchmark label changes (the 20th, 40th, 70th and 90th
    /// corpus percentiles; see [`benchmark_label`]).
    pub fn bands(&self, lens: &str) -> Option<BenchmarkBands> {
        let q = self.quantiles.get(lens)?;
        let at = |p: usize| q.get(p).copied().map(|v| (v * 10.0).round() / 10.0);
        Some(BenchmarkBands {
            p20: at(20)?,
            p40: at(40)?,
            p70: at(70)?,
            p90: at(90)?,
        })
    }

    /// Whether this table's percentiles apply to scores from plugin `name@version`.
    pub fn applies_to(&self, plugin_id: &str) -> bool {
        self.lens_plugin == plugin_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(q: Vec<f64>) -> BenchmarkTable {
        BenchmarkTable {
            format: 1,
            model: "m".into(),
            lens_plugin: "lens-standard@1.0.0".into(),
            lens_plugin_digest: String::new(),
            clips: vec![],
            seconds: 0,
            quantiles: [("attention".to_owned(), q)].into_iter().collect(),
            note: String::new(),
        }
    }

    #[test]
    fn percentiles_interpolate_between_quantiles() {
        // Quantile i is score i/2 + 25: 25 … 75.
        let t = table((0..101).map(|i| f64::from(i) / 2.0 + 25.0).collect());
        assert_eq!(t.percentile("attention", 10.0), Some(0.0));
        assert_eq!(t.percentile("attention", 25.0), Some(0.0));
        assert_eq!(t.percentile("attention", 50.0), Some(50.0));
        assert_eq!(t.percentile("attention", 50.2), Some(50.0));
        assert_eq!(t.percentile("attention", 50.3), Some(51.0));
        assert_eq!(t.percentile("attention", 74.9), Some(100.0));
        assert_eq!(t.percentile("attention", 80.0), Some(100.0));
        assert_eq!(t.percentile("memory", 50.0), None);
        let e = t.entry("attention", 70.0).expect("entry");
        assert_eq!(
            (e.percentile, e.label.as_str()),
            (90.0, "well above average")
        );
        assert_eq!(
            t.entry("attention", 59.9).expect("e").label,
            "above average"
        );
        assert_eq!(
            t.entry("attention", 30.0).expect("e").label,
            "well below average"
        );
    }

    #[test]
    fn ties_take_the_middle_of_the_run() {
        // 0..=40 below 50, 41..=59 exactly 50, 60..=100 above.
        let q: Vec<f64> = (0..101)
            .map(|i| match i {
                0..=40 => 40.0 + f64::from(i) / 10.0,
                41..=59 => 50.0,
                _ => 60.0 + f64::from(i) / 10.0,
            })
            .collect();
        assert_eq!(table(q).percentile("attention", 50.0), Some(50.0));
        // A run off the median keeps its middle: 20..=40 all 45.
        let q: Vec<f64> = (0..101)
            .map(|i| match i {
                0..=19 => f64::from(i),
                20..=40 => 45.0,
                _ => 50.0 + f64::from(i) / 10.0,
            })
            .collect();
        assert_eq!(table(q).percentile("attention", 45.0), Some(30.0));
        // A run from the 3rd to the 68th quantile holds the median: 50, not its middle (35.5).
        let q: Vec<f64> = (0..101)
            .map(|i| match i {
                0..=2 => f64::from(i),
                3..=68 => 50.0,
                _ => 60.0 + f64::from(i) / 10.0,
            })
            .collect();
        assert_eq!(table(q).percentile("attention", 50.0), Some(50.0));
    }

    #[test]
    fn build_computes_type_7_quantiles_and_validation_refuses_bad_tables() {
        let scores: BTreeMap<String, Vec<f64>> =
            [("attention".to_owned(), vec![10.0, 20.0, 30.0, 40.0, 50.0])]
                .into_iter()
                .collect();
        let t = BenchmarkTable::build(
            "qualia-1".into(),
            "lens-standard@1.0.0".into(),
            "d".into(),
            vec![],
            scores,
            String::new(),
        )
        .expect("build");
        let q = &t.quantiles["attention"];
        assert_eq!((q[0], q[25], q[50], q[100]), (10.0, 20.0, 30.0, 50.0));
        // h = 4 · 0.1 = 0.4 → 10 + 0.4 · 10
        assert_eq!(q[10], 14.0);

        let mut bad = t.clone();
        bad.quantiles.get_mut("attention").expect("lens")[3] = 99.0;
        assert!(bad.validate().is_err(), "decreasing after index 3");
        let mut short = t;
        short.quantiles.get_mut("attention").expect("lens").pop();
        assert!(short.validate().is_err());
    }

    #[test]
    fn the_embedded_table_loads_and_covers_the_built_in_lenses() {
        let t = BenchmarkTable::embedded().expect("embedded table");
        for lens in crate::scan::BUILTIN_LENSES {
            assert!(t.quantiles.contains_key(lens), "{lens}");
        }
        assert!(t.seconds > 0 && !t.clips.is_empty());
        // Built with the lens plugin this binary embeds, on the model it embeds.
        assert_eq!(t.lens_plugin, crate::plugins::defaults::LENS_STANDARD);
        assert_eq!(
            t.model,
            crate::inference::model::Model::embedded()
                .expect("model")
                .id()
        );
    }
}
