//! Test kit: Never returns: spins until fuel or the deadline stops it.
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

    fn score(_clip: &Clip, _lenses: &[String]) -> Result<Vec<LensSeries>, PluginError> {
        let mut x: u64 = 0;
        loop {
            x = core::hint::black_box(x.wrapping_add(1));
        }
    }
}

brainscan_sdk::export_lens!(Plugin);
