//! One wasmtime engine for the process and one call of one plugin under hard limits.
//!
//! Limits are enforced together, each by the mechanism that cannot be talked around:
//! - **fuel** (deterministic): `base + per_second × seconds` instructions; the same input
//!   always runs out at the same point, so a plugin that passes conformance at the longest clip
//!   passes in production;
//! - **wall clock**: an epoch deadline (a ticker thread bumps the engine's epoch every
//!   [`EPOCH_TICK`]) traps a guest that overruns, and an outer `tokio::time::timeout` is the
//!   backstop should the blocking thread ever not come back;
//! - **memory**: a [`ResourceLimiter`] that refuses growth past the grant (and records the
//!   peak for `plugin test`), on top of the pooling allocator's per-slot maximum;
//! - **output**: measured after the call (strings + 8 bytes per number) against a cap;
//! - **logs**: lines and bytes per call are capped; the excess is counted, not kept.
//!
//! Calls run on tokio's blocking pool and never block the async runtime. Every call gets a
//! fresh `Store` (a trapped instance can never be reused) instantiated from a cached
//! `InstancePre`, which with the pooling allocator costs microseconds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker, types::ComponentItem};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter, Store,
    Trap,
};

pub use super::bindings::ClipData;
use super::bindings::{self, Level, OutputSize, wit};
use super::manifest::{self, Kind, Manifest, RequestedLimits, SUPPORTED_WIT};
use crate::config::PluginConfig;

/// How often the epoch advances; deadlines are whole ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);
/// Log lines and bytes one call may write.
pub const LOG_MAX_LINES: usize = 64;
pub const LOG_MAX_BYTES: usize = 16 * 1024;
const LOG_LINE_MAX: usize = 1024;
/// Pooled instance slots. Calls beyond this wait on a semaphore rather than fail.
const POOL_SLOTS: u32 = 64;

/// Why a plugin call failed. Each names the limit it hit, with the limit's value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallFailure {
    #[error("ran out of fuel (budget {budget} for this clip)")]
    OutOfFuel { budget: u64 },
    #[error("ran past its deadline of {ms} ms")]
    Timeout { ms: u64 },
    #[error("hit its memory limit of {bytes} bytes")]
    MemoryLimit { bytes: u64 },
    #[error("trapped: {0}")]
    Trap(String),
    #[error("returned {bytes} bytes of output, over the cap of {cap}")]
    OutputTooLarge { bytes: u64, cap: u64 },
    #[error("returned invalid output: {0}")]
    InvalidOutput(String),
    #[error("declined the input ({code}): {message}")]
    Declined { code: String, message: String },
    #[error("the host refused to send it this input: {0}")]
    InvalidInput(String),
    #[error("could not be started: {0}")]
    Instantiate(String),
}

impl CallFailure {
    /// The limit hit, for metrics and the breaker: `fuel`, `timeout`, `memory`, `output`,
    /// `trap`, `invalid_output`, `declined`, `input`, `instantiate`.
    pub fn limit(&self) -> &'static str {
        match self {
            Self::OutOfFuel { .. } => "fuel",
            Self::Timeout { .. } => "timeout",
            Self::MemoryLimit { .. } => "memory",
            Self::Trap(_) => "trap",
            Self::OutputTooLarge { .. } => "output",
            Self::InvalidOutput(_) => "invalid_output",
            Self::Declined { .. } => "declined",
            Self::InvalidInput(_) => "input",
            Self::Instantiate(_) => "instantiate",
        }
    }

    /// Failures that say the plugin is broken (as opposed to the input being unusable); the
    /// crash-loop breaker counts these.
    pub fn is_plugin_fault(&self) -> bool {
        !matches!(self, Self::InvalidInput(_) | Self::Declined { .. })
    }
}

/// A failed call, naming the plugin, its version and what went wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("plugin {name}@{version} ({kind}) {failure}", kind = kind.as_str())]
pub struct PluginError {
    pub name: String,
    pub version: String,
    pub kind: Kind,
    pub failure: CallFailure,
}

/// Limits granted to one plugin: its requests, capped by the host's ceilings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Granted {
    pub fuel_base: u64,
    pub fuel_per_second: u64,
    pub memory_bytes: u64,
    pub timeout_ms: u64,
    pub output_bytes: u64,
}

impl Granted {
    pub fn new(config: &PluginConfig, asked: &RequestedLimits) -> Self {
        Self {
            fuel_base: config.plugin_fuel_base,
            fuel_per_second: asked
                .fuel_per_second
                .unwrap_or(config.plugin_fuel_per_second)
                .min(config.plugin_fuel_per_second_max),
            memory_bytes: asked
                .memory_bytes
                .unwrap_or(config.plugin_memory_bytes)
                .min(config.plugin_memory_max_bytes),
            timeout_ms: config.plugin_timeout_ms,
            output_bytes: config.plugin_output_max_bytes,
        }
    }

    /// The fuel for a clip of `seconds` (deterministic in the input size).
    pub fn fuel(&self, seconds: usize) -> u64 {
        self.fuel_base
            .saturating_add(self.fuel_per_second.saturating_mul(seconds as u64))
    }
}

/// What a call cost, for `plugin test`, the bench and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct CallStats {
    pub fuel_used: u64,
    pub fuel_budget: u64,
    pub peak_memory_bytes: u64,
    pub output_bytes: u64,
    /// Instantiating the component in the call's fresh store.
    pub instantiate_ns: u64,
    /// The guest call itself, arguments lowered and results lifted included.
    pub call_ns: u64,
    pub log_lines: usize,
    pub log_dropped: usize,
}

/// Refuses memory growth past the grant and remembers the peak.
struct Limiter {
    max_memory: usize,
    peak: usize,
    hit: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            self.hit = true;
            return Ok(false);
        }
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// What a guest gets in its store: the limiter and a capped log.
pub struct HostState {
    limiter: Limiter,
    plugin: String,
    log_lines: usize,
    log_bytes: usize,
    log_dropped: usize,
}

impl wit::Host for HostState {}

impl bindings::lens::brainscan::analysis::host::Host for HostState {
    fn log(&mut self, level: Level, message: String) {
        if self.log_lines >= LOG_MAX_LINES
            || self.log_bytes + message.len().min(LOG_LINE_MAX) > LOG_MAX_BYTES
        {
            self.log_dropped += 1;
            return;
        }
        let mut cut = message.len().min(LOG_LINE_MAX);
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        // A plugin's text must not forge log lines or drive a terminal: newlines, escape
        // sequences and other control characters are written as escapes.
        let line = escape_controls(&message[..cut]);
        self.log_lines += 1;
        self.log_bytes += cut;
        let plugin = self.plugin.as_str();
        match level {
            Level::Debug => tracing::debug!(plugin, "{line}"),
            Level::Info => tracing::info!(plugin, "{line}"),
            Level::Warn => tracing::warn!(plugin, "{line}"),
            Level::Error => tracing::error!(plugin, "{line}"),
        }
    }
}

/// `text` with every control character (newline, carriage return, ESC, DEL, C1…) written as
/// its Rust escape (`\n`, `\u{1b}`), so one plugin log call is one log line of plain text.
fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// A component ready to instantiate, for the world it targets.
#[derive(Clone)]
pub enum Pre {
    Lens(bindings::lens::LensPre<HostState>),
    Moments(bindings::moments::MomentsPre<HostState>),
    Manipulation(bindings::manipulation::ManipulationPre<HostState>),
}

/// An installed plugin, compiled and linked: cheap to clone, kept while any slot or in-flight
/// scan refers to it.
pub struct LoadedPlugin {
    pub manifest: Manifest,
    pub granted: Granted,
    pre: Pre,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("id", &self.manifest.id())
            .field("digest", &self.manifest.digest)
            .finish_non_exhaustive()
    }
}

/// Why an upload is refused before anything runs it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    #[error("the file is {0} bytes, over the limit of {1}")]
    TooLarge(u64, u64),
    #[error(
        "this is a core WebAssembly module, not a component; build with `cargo build --target wasm32-wasip2` (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule,
    #[error("this is not a WebAssembly component: {0}")]
    NotWasm(String),
    #[error("the component does not export exactly one brainscan plugin world (lens, moments or manipulation) of a supported contract version ({supported}); it exports: {0}", supported = SUPPORTED_WIT.join(", "))]
    UnsupportedWorld(String),
    #[error(
        "the component imports {0}, which contract 1.0.0 does not grant (only brainscan:analysis/host and brainscan:analysis/types)"
    )]
    ForbiddenImport(String),
    #[error("the component could not be linked or started: {0}")]
    Instantiate(String),
    #[error("describe() failed: {0}")]
    Describe(String),
    #[error("invalid self-description: {0}")]
    BadManifest(String),
}

impl LoadError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::TooLarge(..) => "payload_too_large",
            Self::CoreModule => "not_a_component",
            Self::NotWasm(_) => "invalid_wasm",
            Self::UnsupportedWorld(_) => "unsupported_world",
            Self::ForbiddenImport(_) => "forbidden_import",
            Self::Instantiate(_) | Self::Describe(_) => "plugin_failed",
            Self::BadManifest(_) => "invalid_manifest",
        }
    }
}

pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// The process's plugin engine: configuration, linker, precompiled cache and call limits.
pub struct PluginRuntime {
    engine: Engine,
    linker: Linker<HostState>,
    config: PluginConfig,
    cache_dir: Option<PathBuf>,
    slots: tokio::sync::Semaphore,
    stop_ticker: Arc<AtomicBool>,
    /// Hex of the engine's compatibility hash: precompiled code is only reused by the build
    /// (wasmtime version, settings, CPU features) that made it.
    compat: String,
    /// The key of the native-code cache's HMACs (a service secret from the database, set by
    /// the registry). Without it the cache is neither read nor written.
    cache_key: std::sync::OnceLock<Vec<u8>>,
}

impl Drop for PluginRuntime {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}

impl PluginRuntime {
    /// Builds the engine and starts the epoch ticker.
    ///
    /// # Errors
    /// When wasmtime rejects the configuration (e.g. the pooling allocator cannot reserve
    /// its address space).
    pub fn new(config: PluginConfig, cache_dir: Option<PathBuf>) -> anyhow::Result<Arc<Self>> {
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .consume_fuel(true)
            .epoch_interruption(true)
            .cranelift_opt_level(wasmtime::OptLevel::Speed);
        if config.plugin_perfmap {
            wasm.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let mut pool = PoolingAllocationConfig::default();
        let max_memory = usize::try_from(config.plugin_memory_max_bytes)?;
        pool.total_component_instances(POOL_SLOTS)
            .total_core_instances(POOL_SLOTS * 4)
            .total_memories(POOL_SLOTS * 2)
            .total_tables(POOL_SLOTS * 4)
            .max_memory_size(max_memory);
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm).map_err(|e| anyhow::anyhow!("plugin engine: {e}"))?;
        let mut linker = Linker::new(&engine);
        bindings::lens::brainscan::analysis::host::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |s| s,
        )
        .map_err(|e| anyhow::anyhow!("plugin linker: {e}"))?;
        let stop_ticker = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.clone();
            let stop = stop_ticker.clone();
            std::thread::Builder::new()
                .name("plugin-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        engine.increment_epoch();
                    }
                })?;
        }
        let compat = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            engine.precompile_compatibility_hash().hash(&mut h);
            env!("CARGO_PKG_VERSION").hash(&mut h);
            format!("{:016x}", h.finish())
        };
        let slots =
            tokio::sync::Semaphore::new(config.plugin_concurrency.clamp(1, POOL_SLOTS) as usize);
        Ok(Arc::new(Self {
            engine,
            linker,
            config,
            cache_dir,
            slots,
            stop_ticker,
            compat,
            cache_key: std::sync::OnceLock::new(),
        }))
    }

    /// Sets the key that signs and checks cached native code (once; later calls are ignored).
    /// Native code is mapped into the process and run, so a cache entry is used only when its
    /// HMAC under this key matches: anyone who can write the cache folder (a shared volume,
    /// another user) but cannot read the database cannot make the service run their code. A
    /// plain checksum beside the file, as before, they could simply rewrite.
    pub fn set_cache_key(&self, key: &[u8]) {
        let _ = self.cache_key.set(key.to_vec());
    }

    /// The HMAC-SHA256 of `compiled` under the cache key; `None` without a key.
    fn cache_mac(&self, compiled: &[u8]) -> Option<hmac::Hmac<Sha256>> {
        use hmac::Mac;
        let key = self.cache_key.get()?;
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(key).ok()?;
        mac.update(compiled);
        Some(mac)
    }

    pub fn config(&self) -> &PluginConfig {
        &self.config
    }

    /// Compiles (or loads precompiled) and inspects a component, then asks it to describe
    /// itself. Nothing here runs the plugin's analysis code.
    ///
    /// # Errors
    /// A [`LoadError`] naming why the file cannot be a plugin.
    pub fn load(&self, bytes: &[u8], source: &str) -> Result<LoadedPlugin, LoadError> {
        if bytes.len() as u64 > self.config.plugin_max_bytes {
            return Err(LoadError::TooLarge(
                bytes.len() as u64,
                self.config.plugin_max_bytes,
            ));
        }
        if !bytes.starts_with(b"\0asm") {
            return Err(LoadError::NotWasm(
                "it does not start with the WebAssembly magic bytes".into(),
            ));
        }
        // Header: magic, then version (u16) and layer (u16): layer 1 is a component.
        if bytes.len() >= 8 && bytes[6..8] == [0, 0] {
            return Err(LoadError::CoreModule);
        }
        let digest = digest_of(bytes);
        let component = self.compile(bytes, &digest)?;
        let kind = self.inspect(&component)?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::Instantiate(format!("{e:#}")))?;
        let pre = match kind.0 {
            Kind::Lens => Pre::Lens(
                bindings::lens::LensPre::new(pre)
                    .map_err(|e| LoadError::Instantiate(format!("{e:#}")))?,
            ),
            Kind::Moments => Pre::Moments(
                bindings::moments::MomentsPre::new(pre)
                    .map_err(|e| LoadError::Instantiate(format!("{e:#}")))?,
            ),
            Kind::Manipulation => Pre::Manipulation(
                bindings::manipulation::ManipulationPre::new(pre)
                    .map_err(|e| LoadError::Instantiate(format!("{e:#}")))?,
            ),
        };
        let info = self.describe(&pre)?;
        let manifest = manifest_from(info, kind.0, kind.1, digest, bytes.len() as u64, source)?;
        let granted = Granted::new(&self.config, &manifest.limits);
        Ok(LoadedPlugin {
            manifest,
            granted,
            pre,
        })
    }

    fn cache_path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        Some(
            self.cache_dir
                .as_ref()?
                .join(format!("{hex}-{}.cwasm", self.compat)),
        )
    }

    /// Compiles once per digest and engine build; later loads map the cached native code.
    fn compile(&self, bytes: &[u8], digest: &str) -> Result<Component, LoadError> {
        if let Some(path) = self.cache_path(digest)
            && let Some(component) = self.load_cached(&path)
        {
            return Ok(component);
        }
        let compiled = self
            .engine
            .precompile_component(bytes)
            .map_err(|e| LoadError::NotWasm(format!("{e:#}")))?;
        if let Some(path) = self.cache_path(digest)
            && let Some(mac) = self.cache_mac(&compiled)
            && let Err(e) = write_cached(&path, &compiled, &mac)
        {
            tracing::warn!(path = %path.display(), "could not cache a compiled plugin: {e}");
        }
        deserialize(&self.engine, &compiled).map_err(|e| LoadError::NotWasm(format!("{e:#}")))
    }

    fn load_cached(&self, path: &Path) -> Option<Component> {
        use hmac::Mac;
        let compiled = std::fs::read(path).ok()?;
        let mac = self.cache_mac(&compiled)?;
        let sidecar = std::fs::read_to_string(path.with_extension("hmac")).ok()?;
        let expected = hex_bytes(sidecar.trim())?;
        // Constant-time comparison (hmac's verify).
        if mac.verify_slice(&expected).is_err() {
            tracing::warn!(path = %path.display(), "a cached compiled plugin failed its HMAC; recompiling");
            return None;
        }
        deserialize(&self.engine, &compiled).ok()
    }

    /// Which world the component targets, and at which contract version; refuses imports
    /// beyond the contract's.
    fn inspect(&self, component: &Component) -> Result<(Kind, String), LoadError> {
        let ty = component.component_type();
        for (name, _) in ty.imports(&self.engine) {
            let allowed = SUPPORTED_WIT.iter().any(|v| {
                name == format!("brainscan:analysis/host@{v}")
                    || name == format!("brainscan:analysis/types@{v}")
            });
            if !allowed {
                return Err(LoadError::ForbiddenImport(name.to_owned()));
            }
        }
        let exports: Vec<(String, bool)> = ty
            .exports(&self.engine)
            .map(|(n, item)| {
                (
                    n.to_owned(),
                    matches!(item.ty, ComponentItem::ComponentInstance(_)),
                )
            })
            .collect();
        let mut found = Vec::new();
        for kind in Kind::ALL {
            for v in SUPPORTED_WIT {
                if exports
                    .iter()
                    .any(|(n, inst)| *inst && *n == kind.export_name(v))
                {
                    found.push((kind, (*v).to_owned()));
                }
            }
        }
        if found.len() != 1 {
            let names: Vec<&str> = exports.iter().map(|(n, _)| n.as_str()).collect();
            return Err(LoadError::UnsupportedWorld(if names.is_empty() {
                "nothing".into()
            } else {
                names.join(", ")
            }));
        }
        Ok(found.remove(0))
    }

    fn store(&self, plugin: String, granted: &Granted, fuel: u64) -> Store<HostState> {
        let mut store = Store::new(
            &self.engine,
            HostState {
                limiter: Limiter {
                    max_memory: usize::try_from(granted.memory_bytes).unwrap_or(usize::MAX),
                    peak: 0,
                    hit: false,
                },
                plugin,
                log_lines: 0,
                log_bytes: 0,
                log_dropped: 0,
            },
        );
        store.limiter(|s| &mut s.limiter);
        // Fuel is always enabled on this engine, so setting it cannot fail.
        let _ = store.set_fuel(fuel);
        let ticks = granted
            .timeout_ms
            .div_ceil(EPOCH_TICK.as_millis() as u64)
            .max(1);
        store.set_epoch_deadline(ticks);
        store.epoch_deadline_trap();
        store
    }

    fn describe(&self, pre: &Pre) -> Result<wit::PluginInfo, LoadError> {
        let granted = Granted::new(&self.config, &RequestedLimits::default());
        let mut store = self.store("(describe)".into(), &granted, granted.fuel_base);
        let err = |e: wasmtime::Error| LoadError::Describe(format!("{e:#}"));
        match pre {
            Pre::Lens(p) => p
                .instantiate(&mut store)
                .map_err(err)?
                .brainscan_analysis_lens_plugin()
                .call_describe(&mut store)
                .map_err(err),
            Pre::Moments(p) => p
                .instantiate(&mut store)
                .map_err(err)?
                .brainscan_analysis_moments_plugin()
                .call_describe(&mut store)
                .map_err(err),
            Pre::Manipulation(p) => p
                .instantiate(&mut store)
                .map_err(err)?
                .brainscan_analysis_manipulation_plugin()
                .call_describe(&mut store)
                .map_err(err),
        }
    }

    /// Runs a guest function under the plugin's limits on the blocking pool, with the outer
    /// timeout as a backstop, and classifies what went wrong.
    async fn run<T, F>(
        &self,
        plugin: &Arc<LoadedPlugin>,
        seconds: usize,
        call: F,
    ) -> Result<(T, CallStats), PluginError>
    where
        T: OutputSize + Send + 'static,
        F: FnOnce(
                &Pre,
                &mut Store<HostState>,
                &mut CallStats,
            ) -> wasmtime::Result<Result<T, wit::PluginError>>
            + Send
            + 'static,
    {
        let m = &plugin.manifest;
        let fail = |failure| PluginError {
            name: m.name.clone(),
            version: m.version.clone(),
            kind: m.kind,
            failure,
        };
        let _permit = self.slots.acquire().await.map_err(|_| {
            fail(CallFailure::Instantiate(
                "the plugin host is shutting down".into(),
            ))
        })?;
        let granted = plugin.granted;
        let fuel = granted.fuel(seconds);
        let mut store = self.store(m.id(), &granted, fuel);
        let owned = plugin.clone();
        let task = tokio::task::spawn_blocking(move || {
            let mut stats = CallStats {
                fuel_budget: fuel,
                ..CallStats::default()
            };
            let out = call(&owned.pre, &mut store, &mut stats);
            stats.fuel_used = fuel - store.get_fuel().unwrap_or(0);
            let state = store.data();
            stats.peak_memory_bytes = state.limiter.peak as u64;
            stats.log_lines = state.log_lines;
            stats.log_dropped = state.log_dropped;
            (out, stats, state.limiter.hit)
        });
        let backstop = Duration::from_millis(granted.timeout_ms) + Duration::from_secs(2);
        let (out, stats, memory_hit) = match tokio::time::timeout(backstop, task).await {
            Err(_) => {
                return Err(fail(CallFailure::Timeout {
                    ms: granted.timeout_ms,
                }));
            }
            Ok(Err(join)) => {
                return Err(fail(CallFailure::Trap(format!(
                    "the host thread failed: {join}"
                ))));
            }
            Ok(Ok(v)) => v,
        };
        if stats.log_dropped > 0 {
            tracing::warn!(plugin = %m.id(), dropped = stats.log_dropped, "plugin log lines over the cap were dropped");
        }
        let value = match out {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                return Err(fail(CallFailure::Declined {
                    code: e.code.chars().take(64).collect(),
                    message: e.message.chars().take(500).collect(),
                }));
            }
            Err(e) => {
                let failure = match e.downcast_ref::<Trap>() {
                    Some(Trap::OutOfFuel) => CallFailure::OutOfFuel { budget: fuel },
                    Some(Trap::Interrupt) => CallFailure::Timeout {
                        ms: granted.timeout_ms,
                    },
                    _ if memory_hit => CallFailure::MemoryLimit {
                        bytes: granted.memory_bytes,
                    },
                    Some(trap) => CallFailure::Trap(trap.to_string()),
                    None => CallFailure::Trap(format!("{e:#}").chars().take(500).collect()),
                };
                return Err(fail(failure));
            }
        };
        let mut stats = stats;
        stats.output_bytes = value.output_size() as u64;
        if stats.output_bytes > granted.output_bytes {
            return Err(fail(CallFailure::OutputTooLarge {
                bytes: stats.output_bytes,
                cap: granted.output_bytes,
            }));
        }
        Ok((value, stats))
    }

    fn input_error(plugin: &LoadedPlugin, message: String) -> PluginError {
        PluginError {
            name: plugin.manifest.name.clone(),
            version: plugin.manifest.version.clone(),
            kind: plugin.manifest.kind,
            failure: CallFailure::InvalidInput(message),
        }
    }

    fn output_error(plugin: &LoadedPlugin, message: String) -> PluginError {
        PluginError {
            name: plugin.manifest.name.clone(),
            version: plugin.manifest.version.clone(),
            kind: plugin.manifest.kind,
            failure: CallFailure::InvalidOutput(message),
        }
    }

    /// Scores `lenses` (already filtered to those the plugin provides) over the clip.
    ///
    /// # Errors
    /// A [`PluginError`] naming the plugin, version and limit or check that failed.
    pub async fn score(
        &self,
        plugin: &Arc<LoadedPlugin>,
        clip: &ClipData,
        lenses: &[String],
    ) -> Result<(Vec<wit::LensSeries>, CallStats), PluginError> {
        clip.validate(crate::scan::MAX_DURATION_SECS as usize + 1)
            .map_err(|e| Self::input_error(plugin, e))?;
        self.score_unchecked(plugin, clip.to_wit(), lenses).await
    }

    /// [`Self::score`] without the host's input check: conformance uses it to send bad input
    /// on purpose. The output is still checked.
    pub(crate) async fn score_unchecked(
        &self,
        plugin: &Arc<LoadedPlugin>,
        clip: wit::Clip,
        lenses: &[String],
    ) -> Result<(Vec<wit::LensSeries>, CallStats), PluginError> {
        let seconds = clip.networks.len();
        let wanted = lenses.to_vec();
        let (series, stats) = self
            .run(plugin, seconds, move |pre, store, stats| {
                let Pre::Lens(p) = pre else {
                    return Err(wasmtime::Error::msg("not a lens plugin"));
                };
                let t = Instant::now();
                let inst = p.instantiate(&mut *store)?;
                stats.instantiate_ns = t.elapsed().as_nanos() as u64;
                let t = Instant::now();
                let out =
                    inst.brainscan_analysis_lens_plugin()
                        .call_score(&mut *store, &clip, &wanted);
                stats.call_ns = t.elapsed().as_nanos() as u64;
                out
            })
            .await?;
        bindings::check_lens_output(&series, seconds, lenses)
            .map_err(|e| Self::output_error(plugin, e))?;
        Ok((series, stats))
    }

    /// Finds moments, buy moments and the summary.
    ///
    /// # Errors
    /// As [`Self::score`].
    pub async fn detect(
        &self,
        plugin: &Arc<LoadedPlugin>,
        clip: &ClipData,
        series: &[wit::LensSeries],
    ) -> Result<(wit::Detection, CallStats), PluginError> {
        clip.validate(crate::scan::MAX_DURATION_SECS as usize + 1)
            .map_err(|e| Self::input_error(plugin, e))?;
        self.detect_unchecked(plugin, clip.to_wit(), series.to_vec())
            .await
    }

    pub(crate) async fn detect_unchecked(
        &self,
        plugin: &Arc<LoadedPlugin>,
        clip: wit::Clip,
        series: Vec<wit::LensSeries>,
    ) -> Result<(wit::Detection, CallStats), PluginError> {
        let seconds = clip.networks.len();
        let lenses: Vec<String> = series.iter().map(|s| s.lens.clone()).collect();
        let (d, stats) = self
            .run(plugin, seconds, move |pre, store, stats| {
                let Pre::Moments(p) = pre else {
                    return Err(wasmtime::Error::msg("not a moments plugin"));
                };
                let t = Instant::now();
                let inst = p.instantiate(&mut *store)?;
                stats.instantiate_ns = t.elapsed().as_nanos() as u64;
                let t = Instant::now();
                let out = inst.brainscan_analysis_moments_plugin().call_detect(
                    &mut *store,
                    &clip,
                    &series,
                );
                stats.call_ns = t.elapsed().as_nanos() as u64;
                out
            })
            .await?;
        bindings::check_detection(&d, seconds, &lenses)
            .map_err(|e| Self::output_error(plugin, e))?;
        Ok((d, stats))
    }

    /// Produces the manipulation block.
    ///
    /// # Errors
    /// As [`Self::score`].
    pub async fn analyze(
        &self,
        plugin: &Arc<LoadedPlugin>,
        clip: &ClipData,
    ) -> Result<(wit::Manipulation, CallStats), PluginError> {
        clip.validate(crate::scan::MAX_DURATION_SECS as usize + 1)
            .map_err(|e| Self::input_error(plugin, e))?;
        self.analyze_unchecked(plugin, clip.to_wit()).await
    }

    pub(crate) async fn analyze_unchecked(
        &self,
        plugin: &Arc<LoadedPlugin>,
        clip: wit::Clip,
    ) -> Result<(wit::Manipulation, CallStats), PluginError> {
        let seconds = clip.networks.len();
        let (m, stats) = self
            .run(plugin, seconds, move |pre, store, stats| {
                let Pre::Manipulation(p) = pre else {
                    return Err(wasmtime::Error::msg("not a manipulation plugin"));
                };
                let t = Instant::now();
                let inst = p.instantiate(&mut *store)?;
                stats.instantiate_ns = t.elapsed().as_nanos() as u64;
                let t = Instant::now();
                let out = inst
                    .brainscan_analysis_manipulation_plugin()
                    .call_analyze(&mut *store, &clip);
                stats.call_ns = t.elapsed().as_nanos() as u64;
                out
            })
            .await?;
        bindings::check_manipulation(&m, seconds).map_err(|e| Self::output_error(plugin, e))?;
        Ok((m, stats))
    }

    /// Instantiates without calling anything: the bench's instantiate latency.
    ///
    /// # Errors
    /// When instantiation fails.
    pub fn instantiate_only(&self, plugin: &LoadedPlugin) -> anyhow::Result<Duration> {
        let mut store = self.store("(bench)".into(), &plugin.granted, plugin.granted.fuel_base);
        let t = Instant::now();
        // The instance is dropped with the store; only the instantiate step is timed.
        match &plugin.pre {
            Pre::Lens(p) => {
                p.instantiate(&mut store)
                    .map_err(|e| anyhow::anyhow!("{e:#}"))?;
            }
            Pre::Moments(p) => {
                p.instantiate(&mut store)
                    .map_err(|e| anyhow::anyhow!("{e:#}"))?;
            }
            Pre::Manipulation(p) => {
                p.instantiate(&mut store)
                    .map_err(|e| anyhow::anyhow!("{e:#}"))?;
            }
        }
        let elapsed = t.elapsed();
        drop(store);
        Ok(elapsed)
    }
}

fn manifest_from(
    info: wit::PluginInfo,
    kind: Kind,
    wit_version: String,
    digest: String,
    size_bytes: u64,
    source: &str,
) -> Result<Manifest, LoadError> {
    let bad = |m: String| Err(LoadError::BadManifest(m));
    if !manifest::valid_name(&info.name) {
        return bad(format!(
            "name {:?}: use 1-64 lower-case letters, digits and '-'",
            info.name
        ));
    }
    if !manifest::valid_version(&info.version) {
        return bad(format!(
            "version {:?} is not MAJOR.MINOR.PATCH",
            info.version
        ));
    }
    if info.author.len() > 200 || info.description.len() > 500 {
        return bad("author (≤ 200 bytes) or description (≤ 500 bytes) is too long".into());
    }
    match kind {
        Kind::Lens => {
            if info.provides.is_empty() || info.provides.len() > 32 {
                return bad("a lens plugin must provide 1-32 lens names".into());
            }
            if let Some(l) = info.provides.iter().find(|l| !manifest::valid_lens_name(l)) {
                return bad(format!(
                    "lens name {l:?}: use 1-32 of [a-z0-9_], starting with a letter"
                ));
            }
            let unique: std::collections::BTreeSet<_> = info.provides.iter().collect();
            if unique.len() != info.provides.len() {
                return bad("a lens name is listed twice".into());
            }
        }
        Kind::Moments | Kind::Manipulation => {
            if !info.provides.is_empty() {
                return bad("only lens plugins provide lens names".into());
            }
        }
    }
    Ok(Manifest {
        name: info.name,
        version: info.version,
        kind,
        wit_version,
        digest,
        size_bytes,
        author: info.author,
        description: info.description,
        provides: info.provides,
        limits: RequestedLimits {
            fuel_per_second: info.limits.fuel_per_second,
            memory_bytes: info.limits.memory_bytes,
        },
        source: source.to_owned(),
    })
}

fn write_cached(path: &Path, compiled: &[u8], mac: &hmac::Hmac<Sha256>) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Write-then-rename so a crash never leaves a half-written artifact under the final name.
    use hmac::Mac;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, compiled)?;
    let tag: String = mac
        .clone()
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(path.with_extension("hmac"), tag)?;
    std::fs::rename(tmp, path)
}

/// Bytes of a lower-case hex string; `None` when it is not one.
fn hex_bytes(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Maps precompiled native code.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, compiled: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `compiled` is either what `Engine::precompile_component` returned in this
    // process, or a cache file whose HMAC under the service's cache key (a secret in the
    // database) matched just before this call, so a service process wrote it; the file name
    // carries the engine's compatibility hash, and wasmtime checks it again on load.
    unsafe { Component::deserialize(engine, compiled) }
}

#[cfg(test)]
mod control_tests {
    use super::escape_controls;

    /// Security: a plugin cannot forge a second log line or send terminal escapes.
    #[test]
    fn plugin_log_lines_escape_control_characters() {
        assert_eq!(escape_controls("plain text, é"), "plain text, é");
        assert_eq!(
            escape_controls("ok\nERROR forged line\r\u{1b}[2J\u{7f}\u{85}"),
            "ok\\nERROR forged line\\r\\u{1b}[2J\\u{7f}\\u{85}"
        );
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    /// Security: cached native code is run only when its HMAC under the service's key
    /// matches. An entry written under another key, or a file changed after writing (with
    /// its sidecar left as it was), is recompiled, not mapped; without a key nothing is cached.
    #[test]
    fn cached_native_code_is_used_only_under_its_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = |key: Option<&[u8]>| {
            let r = PluginRuntime::new(PluginConfig::defaults(), Some(dir.path().to_path_buf()))
                .expect("runtime");
            if let Some(k) = key {
                r.set_cache_key(k);
            }
            r
        };
        let bytes = crate::plugins::defaults::DEFAULTS[0].1;
        let digest = format!("sha256:{:x}", Sha256::digest(bytes));
        let writer = runtime(Some(b"key-a"));
        writer.compile(bytes, &digest).expect("compiles");
        let path = writer.cache_path(&digest).expect("path");
        assert!(path.exists() && path.with_extension("hmac").exists());
        assert!(runtime(Some(b"key-a")).load_cached(&path).is_some());
        assert!(runtime(Some(b"key-b")).load_cached(&path).is_none());
        assert!(runtime(None).load_cached(&path).is_none());
        let mut tampered = std::fs::read(&path).expect("read");
        let last = tampered.len() - 1;
        tampered[last] ^= 0x01;
        std::fs::write(&path, tampered).expect("write");
        assert!(runtime(Some(b"key-a")).load_cached(&path).is_none());
        // Without a key, compiling writes nothing.
        let empty = tempfile::tempdir().expect("tempdir");
        let keyless =
            PluginRuntime::new(PluginConfig::defaults(), Some(empty.path().to_path_buf()))
                .expect("runtime");
        keyless.compile(bytes, &digest).expect("compiles");
        assert_eq!(std::fs::read_dir(empty.path()).expect("dir").count(), 0);
    }
}
