//! brainscan: a self-hostable brain-response scan service.
//!
//! The binary (`src/main.rs`) only parses the command line and calls into these modules. Each
//! module owns one stage of the data flow in `ARCHITECTURE.md`: HTTP types stay in [`api`], SQL
//! in [`store`], media handling in [`media`], the job runner in [`queue`].

pub mod admin;
pub mod analysis;
pub mod analyzer;
pub mod api;
pub mod app;
pub mod artifacts;
pub mod auth;
pub mod benchmark;
pub mod billing;
pub mod body_cache;
pub mod charge;
pub mod cli;
pub mod cli_error;
pub mod client_slots;
pub mod clock;
pub mod compute_threads;
pub mod config;
pub mod cortex_surface;
pub mod embed;
pub mod grounding;
pub mod ids;
pub mod inference;
pub mod intelligence;
pub mod jobs;
pub mod listen;
pub mod lm;
pub mod local;
pub mod lockout;
pub mod mcp;
pub mod media;
pub mod metrics;
pub mod npy;
pub mod people;
pub mod pipeline;
pub mod placement;
pub mod plugins;
pub mod queue;
pub mod render;
pub mod result;
pub mod runtime_dir;
pub mod scan;
pub mod scratch;
pub mod serve;
pub mod speech;
pub mod stats;
pub mod store;
pub mod url_syntax;
pub mod webhooks;

#[cfg(test)]
mod layering;
