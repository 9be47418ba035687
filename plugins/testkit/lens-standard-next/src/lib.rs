//! Test kit: the default lens plugin's code under a newer version, for hot-swap tests. Every
//! reason ends in " (v2.11)" so a test can tell from the output alone which version scored it
//! and check that the result's provenance names that version.
#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;

use brainscan_sdk::{Clip, Describe, LensPlugin, LensSeries, PluginError};

#[path = "../../../lens-standard/src/lens.rs"]
mod lens;

struct Next;

impl Describe for Next {
    fn description() -> String {
        lens::StandardLenses::description()
    }
}

impl LensPlugin for Next {
    fn provides() -> Vec<String> {
        lens::StandardLenses::provides()
    }

    fn score(clip: &Clip, lenses: &[String]) -> Result<Vec<LensSeries>, PluginError> {
        let mut out = lens::StandardLenses::score(clip, lenses)?;
        for s in &mut out {
            for sec in &mut s.seconds {
                sec.reason.push_str(" (v2.11)");
            }
        }
        Ok(out)
    }
}

brainscan_sdk::export_lens!(Next, name = "lens-standard", version = "2.11.0");
