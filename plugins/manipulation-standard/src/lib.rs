//! The default manipulation plugin. Every definition is in `README.md` beside this file.

// no_std in the component; std on the host, where the unit tests run.
#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

pub mod block;
pub mod tactics;

use alloc::string::String;

use brainscan_sdk::{Clip, Describe, Manipulation, ManipulationPlugin, PluginError};

pub struct StandardManipulation;

impl Describe for StandardManipulation {
    fn description() -> String {
        "Guard-down exposure (reward − effort − alarm), circuits, quadrant, mechanisms and transcript tactics".into()
    }
}

impl ManipulationPlugin for StandardManipulation {
    fn analyze(clip: &Clip) -> Result<Manipulation, PluginError> {
        Ok(block::analyze(clip))
    }
}

brainscan_sdk::export_manipulation!(StandardManipulation);
