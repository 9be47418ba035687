//! `qualia`, the inference core: per-second responses of the seven Yeo networks predicted from
//! decoded video and audio, computed on the GPU through wgpu (lavapipe on machines without
//! one). The design is in `shared/design/QUALIA-MODEL.md`; the kernels are in `shaders/`.

pub mod features;
pub mod fit;
pub mod gpu;
pub mod model;
pub mod prior;
pub mod reference;
pub mod run;

pub use gpu::{GpuContext, GpuError};
pub use model::Model;
pub use run::{Qualia, QualiaError, QualiaOutput};
