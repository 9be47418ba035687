//! Connecting, dialect detection and migrations.

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

use super::StoreResult;

/// Which engine is behind the pool; the few statements that must differ branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The shared database handle.
#[derive(Debug, Clone)]
pub struct Db {
    pub pool: AnyPool,
    pub backend: Backend,
}

/// Migrations per dialect, embedded so the binary is self-contained. Released migrations are
/// never edited: a change is a new numbered file.
const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../../../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "plugins",
        include_str!("../../../migrations/sqlite/0002_plugins.sql"),
    ),
];

impl Db {
    /// Connects and runs pending migrations.
    ///
    /// # Errors
    /// Fails when the database cannot be opened or a migration fails.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            anyhow::bail!("unsupported database URL (expected sqlite:// or postgres://)");
        };
        if backend == Backend::Postgres {
            anyhow::bail!(
                "PostgreSQL mode is not available in this build yet; use the default SQLite file"
            );
        }
        let options = AnyConnectOptions::from_str(url)?;
        let pool = AnyPoolOptions::new()
            .max_connections(if backend == Backend::Sqlite { 8 } else { 20 })
            .acquire_timeout(Duration::from_secs(30))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // WAL lets readers proceed during writes; the busy timeout makes
                        // writers queue for the single write lock instead of failing.
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA busy_timeout = 10000").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await?;
        let db = Self { pool, backend };
        db.migrate().await?;
        Ok(db)
    }

    async fn migrate(&self) -> StoreResult<()> {
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
        )
        .execute(&self.pool)
        .await?;
        for (version, name, sql) in SQLITE_MIGRATIONS {
            let mut tx = self.pool.begin().await?;
            let done: Option<(i64,)> =
                sqlx::query_as("SELECT version FROM schema_migrations WHERE version = $1")
                    .bind(*version)
                    .fetch_optional(&mut *tx)
                    .await?;
            if done.is_some() {
                continue;
            }
            tracing::info!(version, name, "applying migration");
            tx.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(*sql))).await?;
            sqlx::query(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            )
            .bind(*version)
            .bind(*name)
            .bind(chrono::Utc::now().timestamp_millis())
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        }
        Ok(())
    }

    /// A trivial round trip for readiness checks.
    pub async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}
