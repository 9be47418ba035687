//! Test kit: A custom lens, `calm`: high when salience and focused attention are quiet.
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
        let seconds = clip
            .networks
            .iter()
            .map(|n| {
                let z = -(n.ventral_attention + n.dorsal_attention) as f64 / 2.0;
                let score = (100.0 * brainscan_sdk::stats::logistic(1.7 * z)) as f32;
                LensSecond {
                    score,
                    reason: if score >= 50.0 {
                        "Calm: salience is quiet.".into()
                    } else {
                        "Less calm: salience is up.".into()
                    },
                }
            })
            .collect();
        Ok(vec![LensSeries {
            lens: "calm".into(),
            seconds,
        }])
    }
}

brainscan_sdk::export_lens!(Plugin);
