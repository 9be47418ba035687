//! The plugin host: analysis modules (lens scores, moments, the manipulation block) run as
//! sandboxed WebAssembly components behind the WIT contract in `wit/analysis@1.0.0/`.
//!
//! - [`manifest`]: what a plugin is (name, version, kind, digest, limits it asked for).
//! - [`bindings`]: the generated host bindings and conversions to the service's result types.
//! - [`runtime`]: one wasmtime engine, compiled components, one call under hard limits.
//! - [`conformance`]: the checks every upload passes before it can go live, also run by
//!   `brainscan plugin test`.
//! - [`registry`]: content-addressed storage, the active version per slot (an atomic pointer
//!   swap), rollback and the crash-loop breaker.
//! - [`defaults`]: the default plugins, built for `wasm32-wasip2` and embedded in the binary.

pub mod bindings;
pub mod commands;
pub mod conformance;
pub mod defaults;
pub mod manifest;
pub mod registry;
pub mod runtime;

pub use manifest::{Kind, Manifest};
pub use registry::{ActiveSet, Registry};
pub use runtime::{CallFailure, ClipData, PluginError, PluginRuntime};
