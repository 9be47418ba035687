//! Scale-out mode: the queue on both engines, several real `brainscan` processes on one
//! PostgreSQL database, and the artifact stores (local folder and S3-compatible).

mod pg;
mod queue;
