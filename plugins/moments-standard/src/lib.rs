//! The default moments plugin. Definitions and thresholds: `README.md` beside this file.

// no_std in the component; std on the host, where the unit tests run.
#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

pub mod buy;
pub mod moments;
pub mod summary;

use alloc::string::String;
use alloc::vec::Vec;

use brainscan_sdk::{Clip, Describe, Detection, LensSeries, MomentsPlugin, PluginError};

pub struct StandardMoments;

impl Describe for StandardMoments {
    fn description() -> String {
        "Sharp lens shifts (|z| ≥ 1.75 against the clip's own swings), buy windows and an analyst-style summary".into()
    }
}

impl MomentsPlugin for StandardMoments {
    fn detect(clip: &Clip, lenses: &[LensSeries]) -> Result<Detection, PluginError> {
        let moments: Vec<_> = lenses
            .iter()
            .enumerate()
            .flat_map(|(i, s)| moments::detect(clip, s, i))
            .collect();
        let moments = moments::in_time_order(moments);
        let buy = lenses
            .iter()
            .find(|s| s.lens == "purchase_intent")
            .and_then(|pi| buy::windows(clip, pi));
        let summary = summary::write(
            lenses,
            &moments,
            buy.as_deref(),
            brainscan_sdk::text::has_words(clip),
        );
        Ok(Detection {
            moments,
            buy_moments: buy,
            summary,
        })
    }
}

brainscan_sdk::export_moments!(StandardMoments);
