//! Evidence for the qualia model from data that is independent of its weights.
//!
//! - [`neurosynth`]: each stimulus construct's expected profile over the seven networks, derived
//!   from the Neurosynth v7 coordinate database (the source of v2's prior weights and of the
//!   default lens definitions).
//! - [`alice`]: the Brennan et al. (2016) "Alice" fMRI set: a stimulus proxy built from its word
//!   alignment, the group-average ROI targets and their noise ceiling.
//! - [`evaluate`]: held-out correlation, baselines and ceilings, and the ridge-toward-the-prior
//!   fit with nested cross-validation.
//!
//! The reference data is read in place from `$BRAINSCAN_REFERENCE_DATA`, else from the shared
//! folder beside the clone (`../shared/data`; see [`reference_data_dir`]). Its terms allow use
//! in place, not copies: nothing of it is committed here, only what is derived from it, with
//! the sha256 of every input (`models/qualia/v2/grounding/reference-inputs.sha256`). Every file
//! is treated as untrusted: sizes are bounded and malformed rows fail with the file and line
//! named.

pub mod alice;
pub mod evaluate;
pub mod neurosynth;

/// Pearson correlation, kept in [`crate::stats`] (the model's fitting uses it too).
pub use crate::stats::pearson;

use std::path::{Path, PathBuf};

/// The two folders a reference data folder holds.
pub const REFERENCE_FOLDERS: [&str; 2] = ["neurosynth-v7", "alice-brennan2016"];

/// Where the reference data lives: `$BRAINSCAN_REFERENCE_DATA` when set, else the shared data
/// folder beside the clone (`<clone>/../shared/data`) when it holds both
/// [`REFERENCE_FOLDERS`]; `None` when neither is there (a clone elsewhere: the tests that need
/// it are not run, see `scripts/test`).
#[must_use]
pub fn reference_data_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("BRAINSCAN_REFERENCE_DATA") {
        return Some(PathBuf::from(dir));
    }
    let shared = shared_data_dir()?;
    REFERENCE_FOLDERS
        .iter()
        .all(|f| shared.join(f).is_dir())
        .then_some(shared)
}

/// The shared data folder beside the clone (`<clone>/../shared/data`), when it exists: the
/// reference data and the real media that some tests read in place.
#[must_use]
pub fn shared_data_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .parent()?
        .join("shared")
        .join("data");
    dir.is_dir().then_some(dir)
}

/// Reads a file of at most `max` bytes.
///
/// # Errors
/// The file is missing, unreadable or larger than `max`.
pub fn read_bounded(path: &Path, max: u64) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context;
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    anyhow::ensure!(
        meta.len() <= max,
        "{} is {} bytes; at most {max} are accepted",
        path.display(),
        meta.len()
    );
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// `sha256:<hex>` of a file's bytes (recorded as provenance of derived tables).
#[must_use]
pub fn sha256(bytes: &[u8]) -> String {
    crate::inference::model::checksum(bytes)
}

/// z-scores a series in place (mean 0, population SD 1; constant series become 0).
pub fn zscore(v: &mut [f64]) {
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt();
    for x in v.iter_mut() {
        *x = if sd > 0.0 { (*x - m) / sd } else { 0.0 };
    }
}
