//! Test kit: Allocates until the memory limit refuses.
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
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(vec![1u8; 8 * 1024 * 1024]);
            core::hint::black_box(&hoard);
        }
    }
}

brainscan_sdk::export_lens!(Plugin);
