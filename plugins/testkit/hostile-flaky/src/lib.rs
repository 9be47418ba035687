//! Test kit: a bad new release of `lens-custom` (0.2.0). It passes conformance, then traps on
//! clips whose transcript says 'boom' — what the crash-loop breaker exists for.
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
        if clip.transcript.iter().any(|l| l.text.contains("boom")) {
            panic!("boom");
        }
        let calm = 50.0 + 10.0 * clip.networks[0].default_mode;
        Ok(vec![series("calm", clip, calm.clamp(0.0, 100.0))])
    }
}

brainscan_sdk::export_lens!(Plugin, name = "lens-custom", version = "0.2.0");
