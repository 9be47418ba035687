//! The HTTP edge: routes, extractors, error bodies and response views. Nothing outside this
//! module knows about HTTP (except the webhook body, which is the scan view).

pub mod admin;
pub mod analyze;
pub mod artifacts;
pub mod client_addr;
pub mod compare;
pub mod console;
pub mod error;
pub mod extract;
pub mod health;
pub mod host_check;
pub mod intelligence;
pub mod lenses;
pub mod openapi;
pub mod router;
pub mod scans;
pub mod server;
pub mod session;
pub mod views;
pub mod wallet;

pub use error::ApiError;
pub use router::router;
