//! Test kit: Returns megabytes of reasons.
#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

#[allow(unused_imports)]
use brainscan_sdk::{Clip, Describe, LensPlugin, LensSecond, LensSeries, PluginError};

struct Plugin;

impl Describe for Plugin {}

#[allow(dead_code)]
fn series(lens: &str, clip: &Clip, score: f32) -> LensSeries {
    LensSeries {
        lens: lens.into(),
        seconds: clip
            .networks
            .iter()
            .map(|_| LensSecond {
                score,
                reason: String::from("test kit"),
            })
            .collect(),
    }
}

impl LensPlugin for Plugin {
    fn provides() -> Vec<String> {
        vec!["calm".into()]
    }

    fn score(clip: &Clip, _lenses: &[String]) -> Result<Vec<LensSeries>, PluginError> {
        let mut s = series("calm", clip, 50.0);
        for x in &mut s.seconds {
            x.reason = "x".repeat(200_000);
        }
        Ok(vec![s])
    }
}

brainscan_sdk::export_lens!(Plugin);
