//! Tests of the qualia inference core (issue: media decoding and the inference core).
//!
//! GPU tests run on whatever adapter wgpu finds; on CI machines that is Mesa's lavapipe.

mod artefacts;
mod battery;
mod cli;
mod cortex_video;
mod faces;
mod grounding;
mod known_groups;
mod languages;
mod languages_decomposed;
mod lenses;
mod motion_energy;
mod parity;
mod robustness;
mod shaders;
mod support;
mod v2;
mod validity;
