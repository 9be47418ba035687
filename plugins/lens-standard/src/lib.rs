//! The default lens plugin. Formulas and their rationale: `README.md` beside this file.

// no_std in the component; std on the host, where the unit tests and the native bench run.
#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

pub mod lens;

brainscan_sdk::export_lens!(lens::StandardLenses);
