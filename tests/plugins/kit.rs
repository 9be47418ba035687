//! Shared set-up: components from the build, a registry on a fresh SQLite file, a service
//! whose networks are synthetic (no GPU needed) but whose plugin stage is the real one.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use brainscan::analyzer::{AnalysisInput, Analyzer, StageError};
use brainscan::app::App;
use brainscan::clock::{Clock, SystemClock};
use brainscan::config::{PluginConfig, ServeConfig};
use brainscan::plugins::bindings::{ClipData, TranscriptLine};
use brainscan::plugins::conformance::fixture_clip;
use brainscan::plugins::{PluginRuntime, Registry};
use brainscan::result::ScanResult;
use brainscan::serve::Running;
use brainscan::store::Db;
use futures_util::future::BoxFuture;
use tempfile::TempDir;

/// A component built from `plugins/` (file names use underscores: `hostile_loop.wasm`).
pub fn wasm(file: &str) -> Vec<u8> {
    let path = Path::new(brainscan::plugins::defaults::WASM_DIR).join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A registry with the defaults installed, on its own database and cache folder.
pub struct Kit {
    pub registry: Arc<Registry>,
    pub db: Db,
    pub dir: TempDir,
}

pub async fn kit(config: PluginConfig) -> Kit {
    let (db, runtime, dir) = empty_store(config).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let registry = Registry::open(runtime, db.clone(), clock)
        .await
        .expect("registry");
    Kit { registry, db, dir }
}

/// A new SQLite database and a plugin runtime with its cache folder, in one temporary folder;
/// no registry opened yet.
pub async fn empty_store(config: PluginConfig) -> (Db, Arc<PluginRuntime>, TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::connect(&format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("brainscan.db").display()
    ))
    .await
    .expect("db");
    let runtime =
        PluginRuntime::new(config, Some(dir.path().join("plugin-cache"))).expect("runtime");
    (db, runtime, dir)
}

/// The canonical synthetic clip with a transcript line at second 1.
pub fn clip_saying(seconds: usize, text: &str) -> ClipData {
    let mut clip = fixture_clip(seconds);
    clip.transcript = vec![TranscriptLine {
        start_sec: 1.0,
        end_sec: 2.0,
        text: text.into(),
    }];
    clip
}

/// Synthetic networks (the conformance fixture, one row per second of the probed media)
/// through the real plugin stage: the service path of a scan minus the GPU.
pub struct PluginStage {
    pub registry: Arc<Registry>,
}

impl Analyzer for PluginStage {
    fn lenses(&self) -> Vec<String> {
        self.registry.snapshot().lenses()
    }

    fn analyze<'a>(
        &'a self,
        input: AnalysisInput<'a>,
    ) -> BoxFuture<'a, Result<ScanResult, StageError>> {
        Box::pin(async move {
            let seconds = input.probe.duration_sec.unwrap_or(1.0).ceil().max(1.0) as usize;
            brainscan::analysis::score_clip(
                &self.registry,
                &fixture_clip(seconds),
                &input.request.lenses,
                serde_json::json!({"model": "synthetic-networks"}),
                None,
                input.org_id,
            )
            .await
        })
    }
}

/// A running service (router + workers) whose plugin stage is [`PluginStage`].
pub struct Service {
    pub app: Arc<App>,
    pub registry: Arc<Registry>,
    pub base: String,
    pub http: reqwest::Client,
    pub media: crate::support::MediaServer,
    running: Option<Running>,
    pub dir: TempDir,
}

pub async fn service(tweak: impl FnOnce(&mut ServeConfig)) -> Service {
    let dir = tempfile::tempdir().expect("tempdir");
    let media = crate::support::media_server().await;
    let mut config = crate::support::config(dir.path());
    // The loopback media server, on its port only (as tests/e2e/support.rs does).
    config.fetch.fetch_allow_addrs = vec![media.addr];
    tweak(&mut config);
    let db = App::open_db(&config).await.expect("db");
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let runtime = PluginRuntime::new(
        config.plugins.clone(),
        Some(config.plugins.cache_dir(&config.store.data_dir)),
    )
    .expect("runtime");
    let registry = Registry::open(runtime, db.clone(), clock.clone())
        .await
        .expect("registry");
    let analyzer = Arc::new(PluginStage {
        registry: registry.clone(),
    });
    let app = App::assemble(config, clock, db, analyzer, Some(registry.clone()))
        .await
        .expect("app");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let running = brainscan::serve::start(app.clone(), listener).expect("start");
    Service {
        base: format!("http://{}", running.addr),
        app,
        registry,
        http: reqwest::Client::new(),
        media,
        running: Some(running),
        dir,
    }
}

impl Service {
    pub async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await;
        }
    }

    /// An organisation with a funded wallet; returns its API key.
    pub async fn org(&self, name: &str) -> String {
        let org = brainscan::store::orgs::Org {
            id: brainscan::ids::new_org_id(),
            name: name.into(),
            webhook_secret: brainscan::webhooks::new_secret(),
            created_at: self.app.clock.now_ms(),
        };
        self.app
            .db
            .create_org(&org, &brainscan::billing::period_of(self.app.clock.now()))
            .await
            .expect("org");
        let key = brainscan::auth::generate(&org.id, 0);
        self.app.db.insert_api_key(&key.row).await.expect("key");
        self.app
            .db
            .credit_wallet(&org.id, 100_000, "test", 0)
            .await
            .expect("credit");
        key.secret
    }
}
