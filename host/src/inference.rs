//! `qualia`, the inference core: per-second responses of the seven Yeo networks predicted from
//! decoded video and audio, computed on the GPU through wgpu (lavapipe on machines without
//! one). The design is in `shared/design/QUALIA-MODEL.md`; the kernels are in `shaders/`.
//! v2 adds speech and language features ([`language`]) and derives its feature set from the
//! kernel outputs ([`v2`]).

pub mod faces;
pub mod features;
pub mod fit;
pub mod gpu;
pub mod language;
pub mod model;
pub mod motion;
pub mod multilingual;
pub mod picture;
pub mod prior;
pub mod profiles;
pub mod reference;
pub mod run;
pub mod shipped_evaluation;
pub mod v2;

pub use gpu::{GpuContext, GpuError};
pub use model::{Model, Presence, TimeBase};
pub use run::{Qualia, QualiaError, QualiaOutput};
