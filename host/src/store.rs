//! All SQL lives here. Queries are written once in the portable subset (`$n` placeholders,
//! BIGINT milliseconds, TEXT JSON) and run through `sqlx::AnyPool`, so the same code serves the
//! embedded SQLite file and PostgreSQL. Modules below own one group of tables each.

pub mod db;
pub mod jobs;
pub mod memory;
pub mod orgs;
pub mod people;
pub mod plugins;
pub mod recall;
pub mod scans;
pub mod secrets;
pub mod wallet;
pub mod webhooks;

pub use db::{Backend, Db, JOBS_CHANNEL, PLUGINS_CHANNEL};

/// Errors of the storage layer. Callers map `NotFound` and `Conflict` to API errors; the rest
/// are internal.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("corrupt stored document: {0}")]
    Json(#[from] serde_json::Error),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// An insert's outcome with a unique-constraint violation turned into `Conflict(message())`
/// (a taken organisation name, an email that has an account).
pub(crate) fn conflict_on_unique<T>(
    outcome: Result<T, sqlx::Error>,
    message: impl FnOnce() -> String,
) -> StoreResult<T> {
    match outcome {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            Err(StoreError::Conflict(message()))
        }
        other => Ok(other?),
    }
}
