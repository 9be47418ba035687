//! Connecting, dialect detection and migrations.

use std::str::FromStr;
use std::sync::Arc;
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
#[derive(Clone)]
pub struct Db {
    pub pool: AnyPool,
    pub backend: Backend,
    /// The connection URL, kept for the Postgres `LISTEN` connection (it may hold a password,
    /// so `Debug` leaves it out).
    url: Arc<str>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

/// Notification channels (Postgres `LISTEN/NOTIFY`): a job was queued, the plugin set changed.
pub const JOBS_CHANNEL: &str = "brainscan_jobs";
pub const PLUGINS_CHANNEL: &str = "brainscan_plugins";

/// Key of the advisory lock that serialises migrations when several processes start at once.
const MIGRATION_LOCK: i64 = 0x6272_6169_6e73;

type Migration = (i64, &'static str, &'static str);

/// Migrations per dialect, embedded so the binary is self-contained. Released migrations are
/// never edited: a change is a new numbered file in both folders.
pub(super) const SQLITE_MIGRATIONS: &[Migration] = &[
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
    (
        3,
        "scaleout",
        include_str!("../../../migrations/sqlite/0003_scaleout.sql"),
    ),
    (
        4,
        "recall",
        include_str!("../../../migrations/sqlite/0004_recall.sql"),
    ),
    (
        5,
        "fairness",
        include_str!("../../../migrations/sqlite/0005_fairness.sql"),
    ),
    (
        6,
        "list_summary",
        include_str!("../../../migrations/sqlite/0006_list_summary.sql"),
    ),
    (
        7,
        "memory_rollup",
        include_str!("../../../migrations/sqlite/0007_memory_rollup.sql"),
    ),
    (
        8,
        "people",
        include_str!("../../../migrations/sqlite/0008_people.sql"),
    ),
    (
        9,
        "no_free_work",
        include_str!("../../../migrations/sqlite/0009_no_free_work.sql"),
    ),
];

const POSTGRES_MIGRATIONS: &[Migration] = &[
    (
        1,
        "init",
        include_str!("../../../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "plugins",
        include_str!("../../../migrations/postgres/0002_plugins.sql"),
    ),
    (
        3,
        "scaleout",
        include_str!("../../../migrations/postgres/0003_scaleout.sql"),
    ),
    (
        4,
        "recall",
        include_str!("../../../migrations/postgres/0004_recall.sql"),
    ),
    (
        5,
        "fairness",
        include_str!("../../../migrations/postgres/0005_fairness.sql"),
    ),
    (
        6,
        "list_summary",
        include_str!("../../../migrations/postgres/0006_list_summary.sql"),
    ),
    (
        7,
        "memory_rollup",
        include_str!("../../../migrations/postgres/0007_memory_rollup.sql"),
    ),
    (
        8,
        "people",
        include_str!("../../../migrations/postgres/0008_people.sql"),
    ),
    (
        9,
        "no_free_work",
        include_str!("../../../migrations/postgres/0009_no_free_work.sql"),
    ),
];

impl Db {
    /// Connects and runs pending migrations.
    ///
    /// # Errors
    /// Fails when the database cannot be opened or a migration fails.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let db = Self::open(url).await?;
        db.migrate().await?;
        Ok(db)
    }

    /// Connects without migrating.
    ///
    /// # Errors
    /// An unsupported URL or an unreachable database.
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            anyhow::bail!("unsupported database URL (expected sqlite:// or postgres://)");
        };
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
            .await
            .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
        Ok(Self {
            pool,
            backend,
            url: url.into(),
        })
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Runs pending migrations. On PostgreSQL an advisory lock makes concurrent starts of
    /// several processes take turns, so each migration runs exactly once.
    ///
    /// # Errors
    /// A failing migration (its transaction is rolled back).
    pub async fn migrate(&self) -> StoreResult<()> {
        let mut conn = self.pool.acquire().await?;
        let migrations = match self.backend {
            Backend::Sqlite => SQLITE_MIGRATIONS,
            Backend::Postgres => {
                // The function returns `void`, which the Any driver cannot decode: wrap it.
                sqlx::query("SELECT 1 FROM (SELECT pg_advisory_lock($1)) AS l")
                    .bind(MIGRATION_LOCK)
                    .execute(&mut *conn)
                    .await?;
                POSTGRES_MIGRATIONS
            }
        };
        let result = apply(&mut conn, migrations).await;
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT 1 FROM (SELECT pg_advisory_unlock($1)) AS l")
                .bind(MIGRATION_LOCK)
                .execute(&mut *conn)
                .await?;
        }
        result
    }

    /// A trivial round trip for readiness checks.
    pub async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

pub(super) async fn apply(
    conn: &mut sqlx::AnyConnection,
    migrations: &[Migration],
) -> StoreResult<()> {
    use sqlx::Connection;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    )
    .execute(&mut *conn)
    .await?;
    for (version, name, sql) in migrations {
        let mut tx = conn.begin().await?;
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

/// Sends a notification on `channel` when the surrounding transaction commits (Postgres);
/// nothing on SQLite, whose processes rely on polling and in-process wake-ups.
pub(crate) async fn notify(
    backend: Backend,
    conn: &mut sqlx::AnyConnection,
    channel: &str,
    payload: &str,
) -> StoreResult<()> {
    if backend == Backend::Postgres {
        sqlx::query("SELECT 1 FROM (SELECT pg_notify($1, $2)) AS n")
            .bind(channel)
            .bind(payload)
            .execute(conn)
            .await?;
    }
    Ok(())
}
