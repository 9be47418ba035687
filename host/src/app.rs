//! The shared application state: one `Arc<App>` holds the pools, clients and configuration.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tokio::sync::Notify;

use crate::auth::KeyResolver;
use crate::clock::{Clock, SystemClock};
use crate::config::ServeConfig;
use crate::media::fetch::Fetcher;
use crate::pipeline::{Analyzer, Unavailable};
use crate::store::Db;

pub struct App {
    pub config: ServeConfig,
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    pub keys: KeyResolver,
    pub fetcher: Fetcher,
    pub analyzer: Arc<dyn Analyzer>,
    /// Wakes idle in-process workers when a job is queued (polling is the fallback).
    pub wake: Notify,
    /// False until start-up checks pass, and again while shutting down.
    pub ready: AtomicBool,
    /// Per-organisation request rate limit (GCRA token bucket); `None` when disabled.
    pub limiter: Option<governor::DefaultKeyedRateLimiter<String>>,
}

impl App {
    /// Opens the database (running migrations) and builds clients.
    ///
    /// # Errors
    /// When the data folder cannot be created or the database cannot be opened.
    pub async fn build(
        config: ServeConfig,
        clock: Arc<dyn Clock>,
        analyzer: Arc<dyn Analyzer>,
    ) -> anyhow::Result<Arc<Self>> {
        std::fs::create_dir_all(&config.store.data_dir)?;
        let tmp = config.store.data_dir.join("tmp");
        std::fs::create_dir_all(&tmp)?;
        // Downloads of a crashed process are orphaned here; nothing else uses the folder.
        for entry in std::fs::read_dir(&tmp)?.flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
        let db = Db::connect(&config.store.database_url()).await?;
        let keys = KeyResolver::new(db.clone(), Duration::from_secs(config.http.key_cache_secs));
        let fetcher = Fetcher::new(&config.fetch)?;
        let limiter = std::num::NonZeroU32::new(config.http.rate_limit_per_sec).map(|rate| {
            let burst =
                std::num::NonZeroU32::new(config.http.rate_limit_burst.max(1)).unwrap_or(rate);
            governor::RateLimiter::keyed(governor::Quota::per_second(rate).allow_burst(burst))
        });
        Ok(Arc::new(Self {
            config,
            db,
            clock,
            keys,
            fetcher,
            analyzer,
            wake: Notify::new(),
            ready: AtomicBool::new(false),
            limiter,
        }))
    }

    /// The production wiring: wall clock, and the analysis stage this build has.
    ///
    /// # Errors
    /// As [`App::build`].
    pub async fn production(config: ServeConfig) -> anyhow::Result<Arc<Self>> {
        Self::build(config, Arc::new(SystemClock), Arc::new(Unavailable)).await
    }

    /// Where downloads are written; removed when their scan's stage ends.
    pub fn tmp_dir(&self) -> PathBuf {
        self.config.store.data_dir.join("tmp")
    }

    /// Lens names accepted in `POST /scans`.
    pub fn available_lenses(&self) -> Vec<String> {
        self.analyzer.lenses()
    }
}
