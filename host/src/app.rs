//! The shared application state: one `Arc<App>` holds the pools, clients and configuration.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tokio::sync::Notify;

use crate::analyzer::Analyzer;
use crate::auth::KeyResolver;
use crate::clock::{Clock, SystemClock};
use crate::config::ServeConfig;
use crate::media::fetch::Fetcher;
use crate::store::Db;

pub struct App {
    pub config: ServeConfig,
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    pub keys: KeyResolver,
    pub fetcher: Fetcher,
    pub analyzer: Arc<dyn Analyzer>,
    /// Rendered artifacts (fMRI images) and their signed URLs.
    pub artifacts: crate::artifacts::Artifacts,
    /// The plugin registry, when this process runs plugins (the admin API needs it).
    pub plugins: Option<Arc<crate::plugins::Registry>>,
    /// Wakes idle in-process workers when a job is queued (polling is the fallback).
    pub wake: Notify,
    /// False until start-up checks pass, and again while shutting down.
    pub ready: AtomicBool,
    /// Per-organisation request rate limit (GCRA token bucket); `None` when disabled.
    pub limiter: Option<governor::DefaultKeyedRateLimiter<String>>,
    /// Embeds scan texts (workers) and queries (API), and searches remembered texts.
    pub recall: crate::intelligence::recall::Recall,
    /// Requests per client address before key lookup; `None` when disabled.
    pub client_limiter: Option<governor::DefaultKeyedRateLimiter<std::net::IpAddr>>,
    /// Failed admin authentications per client address.
    pub admin_lockout: crate::lockout::Lockout,
    /// Console sign-in's failure counts and password-hash slots.
    pub signin: crate::people::SignInGuard,
    /// How the console's session cookie is set (from the configuration, once).
    pub cookie_policy: crate::people::CookiePolicy,
    /// Artifact responses each client address holds (`BRAINSCAN_ARTIFACT_CONCURRENCY_PER_CLIENT`).
    pub artifact_clients: Arc<crate::client_slots::ClientSlots>,
    /// Submit-time probes in flight, in total and per organisation.
    pub probe_slots: Arc<crate::media::probe_slots::ProbeSlots>,
    /// Rendered bodies of completed, charged scans (`GET /scans/{id}`).
    pub rendered: crate::body_cache::RenderedScans,
    /// This process's scratch folder (downloads, renders), outside the data folder.
    pub scratch: crate::scratch::Scratch,
    /// Artifact responses streaming now (`BRAINSCAN_ARTIFACT_CONCURRENCY`).
    pub artifact_slots: Arc<tokio::sync::Semaphore>,
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
        let db = Self::open_db(&config).await?;
        Self::assemble(config, clock, db, analyzer, None).await
    }

    /// Creates the data folder and opens the database.
    ///
    /// # Errors
    /// When the folder cannot be created or the database cannot be opened.
    pub async fn open_db(config: &ServeConfig) -> anyhow::Result<Db> {
        std::fs::create_dir_all(&config.store.data_dir)?;
        Db::connect(&config.store.database_url()).await
    }

    /// Wires an opened database, the analysis stage and (optionally) the plugin registry, and
    /// opens the artifact store.
    ///
    /// # Errors
    /// When the HTTP client for fetching media cannot be built or the artifact store cannot
    /// be opened.
    pub async fn assemble(
        config: ServeConfig,
        clock: Arc<dyn Clock>,
        db: Db,
        analyzer: Arc<dyn Analyzer>,
        plugins: Option<Arc<crate::plugins::Registry>>,
    ) -> anyhow::Result<Arc<Self>> {
        let keys = KeyResolver::new(db.clone(), Duration::from_secs(config.http.key_cache_secs));
        let fetcher = Fetcher::new(&config.fetch)?;
        let artifacts = crate::artifacts::Artifacts::open(
            &config.artifacts,
            &config.store.data_dir,
            &db,
            clock.now_ms(),
        )
        .await?;
        tracing::info!(store = %artifacts.location, "artifact store ready");
        let limiter = std::num::NonZeroU32::new(config.http.rate_limit_per_sec).map(|rate| {
            let burst =
                std::num::NonZeroU32::new(config.http.rate_limit_burst.max(1)).unwrap_or(rate);
            governor::RateLimiter::keyed(governor::Quota::per_second(rate).allow_burst(burst))
        });
        let client_limiter =
            std::num::NonZeroU32::new(config.http.client_rate_limit_per_sec).map(|rate| {
                let burst = std::num::NonZeroU32::new(config.http.client_rate_limit_burst.max(1))
                    .unwrap_or(rate);
                governor::RateLimiter::keyed(governor::Quota::per_second(rate).allow_burst(burst))
            });
        let recall = crate::intelligence::recall::Recall::new(
            crate::speech::ModelPaths::under(&config.models_dir).multilingual_embedder,
        );
        let probe_slots = crate::media::probe_slots::ProbeSlots::new(
            config.fetch.probe_concurrency,
            config.fetch.probe_concurrency_per_org,
        );
        let rendered = crate::body_cache::RenderedScans::new(
            config.http.result_cache_mib.saturating_mul(1024 * 1024),
        );
        let scratch = crate::scratch::Scratch::create().map_err(|e| {
            anyhow::anyhow!(
                "cannot make a scratch folder in {}: {e}",
                std::env::temp_dir().display()
            )
        })?;
        let artifact_slots = Arc::new(tokio::sync::Semaphore::new(
            config.artifacts.artifact_concurrency.max(1),
        ));
        let cookie_policy = crate::people::CookiePolicy::from_config(&config);
        let artifact_clients =
            crate::client_slots::ClientSlots::new(config.artifacts.artifact_concurrency_per_client);
        Ok(Arc::new(Self {
            recall,
            config,
            db,
            clock,
            keys,
            rendered,
            fetcher,
            analyzer,
            artifacts,
            plugins,
            wake: Notify::new(),
            ready: AtomicBool::new(false),
            limiter,
            client_limiter,
            admin_lockout: crate::lockout::Lockout::default(),
            signin: crate::people::SignInGuard::default(),
            cookie_policy,
            artifact_clients,
            probe_slots,
            artifact_slots,
            scratch,
        }))
    }

    /// The production wiring: wall clock, the qualia model on the GPU (or lavapipe), and the
    /// plugin registry with the embedded defaults.
    ///
    /// # Errors
    /// As [`App::build`], plus: no GPU adapter, a model that fails its checks, a default
    /// plugin that does not load.
    pub async fn production(config: ServeConfig) -> anyhow::Result<Arc<Self>> {
        let db = Self::open_db(&config).await?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let (model, benchmarks) = match std::env::var_os("BRAINSCAN_MODEL_DIR") {
            Some(dir) => {
                let dir = std::path::Path::new(&dir);
                (
                    crate::inference::model::Model::load(dir)?,
                    crate::benchmark::BenchmarkTable::load_dir(dir)?,
                )
            }
            None => (
                crate::inference::model::Model::embedded()?,
                Some(crate::benchmark::BenchmarkTable::embedded()?),
            ),
        };
        // Percentiles against another model's scores would mislead: drop such a table.
        let benchmarks = benchmarks.filter(|t| {
            let same = t.model == model.id();
            if !same {
                tracing::warn!(
                    table = %t.model, model = %model.id(),
                    "benchmark.json was built with another model, so scans carry no benchmarks; rebuild it with `brainscan model corpus`"
                );
            }
            same
        });
        match &benchmarks {
            Some(t) => {
                tracing::info!(corpus_seconds = t.seconds, lens_plugin = %t.lens_plugin, "benchmarks ready")
            }
            None => {
                tracing::warn!("the model folder has no benchmark.json: scans carry no benchmarks")
            }
        }
        let gpu = crate::inference::gpu::GpuContext::new()?;
        tracing::info!(model = %model.id(), adapter = %gpu.adapter_info.name, "qualia ready");
        let runtime = crate::plugins::PluginRuntime::new(
            config.plugins.clone(),
            Some(config.plugins.cache_dir(&config.store.data_dir)),
        )?;
        let registry = crate::plugins::Registry::open(runtime, db.clone(), clock.clone())
            .await
            .map_err(|e| anyhow::anyhow!("plugin registry: {e}"))?;
        let paths = crate::speech::ModelPaths::under(&config.models_dir);
        // Only processes that analyse need Whisper; every process embeds (queries or texts).
        let speech = if config.role.runs_workers() {
            // Where Whisper runs is decided here, once, as the local CLI decides it.
            let on_device = crate::speech::whisper_on_device(&gpu.adapter_info)?;
            let (device, queue, adapter) = (
                gpu.device().clone(),
                gpu.queue().clone(),
                gpu.adapter_info.clone(),
            );
            let speech = tokio::task::spawn_blocking(move || {
                let on = on_device.then_some(crate::speech::whisper::DeviceHandle {
                    device: &device,
                    queue: &queue,
                    adapter: &adapter,
                    precision: None,
                });
                crate::speech::Speech::load_with(&paths, on)
            })
            .await??
            .remembering(config.queue.transcript_memory);
            tracing::info!(model = %speech.model_id(), whisper_on = %speech.computed_on(), "speech model ready");
            Some(Arc::new(speech))
        } else {
            None
        };
        // v2's language features need the embedder next to Whisper and the VAD.
        let listener = match (&speech, model.format() >= 2) {
            (Some(speech), true) => {
                let dir = crate::speech::ModelPaths::under(&config.models_dir).embedder;
                let embedder =
                    tokio::task::spawn_blocking(move || crate::embed::shared_english(&dir))
                        .await??;
                Some(Arc::new(crate::inference::run::Listener::new(
                    speech.clone(),
                    embedder,
                    &config.models_dir,
                )))
            }
            _ => None,
        };
        // The semantic axes for speech in other languages take seconds to build (210
        // sentences through e5): build them now, in the background, rather than in the first
        // such scan. A scan that needs them meanwhile waits for this build, not a second one.
        if let Some(listener) = &listener {
            let (listener, axes) = (listener.clone(), model.axes.clone());
            tokio::task::spawn_blocking(move || {
                match listener
                    .multilingual
                    .reader(listener.embedder.as_ref(), &axes)
                {
                    Ok(_) => tracing::info!("semantic axes for speech in other languages ready"),
                    Err(e) => tracing::warn!(
                        "the semantic axes for other languages could not be built; they are tried again at the first such scan: {e:#}"
                    ),
                }
            });
        }
        let gpu = Arc::new(gpu);
        // Only processes that analyse run the face detector.
        let faces = if config.role.runs_workers() {
            // Where the search runs is decided here, once, as for Whisper.
            let on_device = crate::inference::faces::faces_on_device(&gpu.adapter_info)?;
            // Reading and parsing the 1 MB cascade is blocking work, like the speech models.
            let (sampling, dir) = (model.manifest.sampling.clone(), config.models_dir.clone());
            let on = gpu.clone();
            let faces = tokio::task::spawn_blocking(move || {
                crate::inference::faces::load_for(&sampling, &dir, on_device.then_some(&*on))
            })
            .await??;
            if let Some(f) = &faces {
                tracing::info!(faces_on = %f.computed_on(), "face detector ready");
            }
            faces
        } else {
            None
        };
        // The cortex surface is drawn once, on qualia's adapter, by processes that run scans.
        let cortex = if config.role.runs_workers() {
            let (gpu, dir) = (gpu.clone(), config.models_dir.clone());
            let video = tokio::task::spawn_blocking(move || {
                crate::render::video::CortexVideo::new(&gpu, &dir)
            })
            .await??;
            tracing::info!("cortex surfaces drawn for include_fmri");
            Some(Arc::new(video))
        } else {
            None
        };
        let analyzer = Arc::new(crate::analysis::Analysis {
            cortex,
            qualia: Arc::new(crate::inference::run::Qualia {
                gpu,
                model: Arc::new(model),
                listener,
                faces,
            }),
            plugins: registry.clone(),
            benchmarks: benchmarks.map(Arc::new),
            speech,
        });
        let app = Self::assemble(config, clock, db, analyzer, Some(registry)).await?;
        let embedder = app.recall.embedder().await?;
        tracing::info!(model = %embedder.model_id, "text embedding model ready");
        Ok(app)
    }

    /// This process's scratch folder: each download makes a job folder here, removed when
    /// its scan's stage ends (see [`crate::scratch`]).
    pub fn tmp_dir(&self) -> PathBuf {
        self.scratch.path().to_path_buf()
    }

    /// Lens names accepted in `POST /scans`.
    pub fn available_lenses(&self) -> Vec<String> {
        self.analyzer.lenses()
    }
}
