//! Scale-out mode: the queue on both engines, several real `brainscan` processes on one
//! PostgreSQL database, and the artifact stores (local folder and S3-compatible).

mod pg;
mod processes;
mod queue;
mod recall;
mod s3;

/// The e2e suite's fixtures: generated media and the loopback media server.
#[path = "../e2e/support.rs"]
mod support;
