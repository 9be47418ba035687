//! The network-profile table the v2 prior is built from: each stimulus construct's expected
//! profile over the seven networks (log odds with a bootstrap interval), derived from
//! Neurosynth v7 by `grounding::neurosynth::build` and committed at
//! `models/qualia/v2/grounding/network-profiles.json`.
//!
//! The type lives here, with the model that reads it, and not beside its derivation: the
//! derivation and the model's evaluation (`grounding`) run the model, so a model that read
//! `grounding`'s types made the two modules depend on each other.

use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// One construct's row of the profile table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub construct: String,
    pub topics: Vec<usize>,
    pub meaning: String,
    /// MNI studies about the construct, and how many of their foci were cortical.
    pub studies: usize,
    pub foci: usize,
    /// Log odds ratio per network, in [`crate::result::NETWORKS`] order, rounded to 1e-3.
    pub log_odds: Vec<f64>,
    pub ci_low: Vec<f64>,
    pub ci_high: Vec<f64>,
}

impl Profile {
    /// The log odds of `network`, or 0 where its 95 % interval includes 0 (the data does not
    /// say which way that network goes).
    #[must_use]
    pub fn credible(&self, network: usize) -> f64 {
        if self.ci_low[network] > 0.0 || self.ci_high[network] < 0.0 {
            self.log_odds[network]
        } else {
            0.0
        }
    }
}

/// The committed table: method, inputs with checksums, attribution, rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileTable {
    pub method: String,
    pub networks: Vec<String>,
    pub inputs: Vec<InputFile>,
    pub licence: String,
    pub attribution: String,
    pub reference_studies: usize,
    pub reference_foci: usize,
    pub profiles: Vec<Profile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputFile {
    pub file: String,
    pub sha256: String,
}

impl ProfileTable {
    /// The row for `construct`.
    #[must_use]
    pub fn get(&self, construct: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.construct == construct)
    }

    /// The committed table (`models/qualia/v2/grounding/network-profiles.json` in the repo).
    ///
    /// # Errors
    /// Missing or malformed file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let bytes = super::model::read_bounded(path, 1 << 20)?;
        serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
    }

    /// Where the repository keeps the table.
    #[must_use]
    pub fn committed_path() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../models/qualia/v2/grounding/network-profiles.json")
    }
}
