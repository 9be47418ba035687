//! Face detection for qualia's face features: a Viola-Jones detector that runs OpenCV's trained
//! Haar cascades (`haarcascade_frontalface_default.xml`, installed from the `opencv-python-headless`
//! wheel by `scripts/fetch-models` with its sha256 checked).
//!
//! Why our own detector rather than a binding: the cascade is a few hundred lines to evaluate,
//! OpenCV itself is a large C++ dependency the service does not otherwise need, and the pure-Rust
//! crates that exist target other model formats. The algorithm follows OpenCV's
//! `detectMultiScale` step by step (see [`detect`]) so the cascade behaves as it was trained;
//! `tests/opencv.rs` checks the boxes against OpenCV's own on frames of a real clip.
//!
//! [`DeviceCascade`] decides the windows on a wgpu device (a GPU machine's, issue 45) and finds
//! the same faces; `tests/device.rs` checks that on lavapipe.

mod cascade;
mod detect;
pub mod device;

pub use cascade::{Cascade, CascadeError, Feature, MAX_FILE_BYTES, Stage, Weak, WeightedRect};
pub use detect::{Face, Options, detect};
pub use device::{DeviceCascade, DeviceError, SearchTimes};

/// The share of a picture of `picture_area` pixels that `faces` cover (their areas summed,
/// at most 1): a face filling a third of the frame reads 0.33 whatever the resolution.
#[must_use]
pub fn coverage(faces: &[Face], picture_area: u64) -> f64 {
    if picture_area == 0 {
        return 0.0;
    }
    (faces.iter().map(Face::area).sum::<u64>() as f64 / picture_area as f64).min(1.0)
}
