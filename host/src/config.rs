//! Typed configuration, one struct per area. Values come from defaults < `BRAINSCAN_*`
//! environment variables < command-line flags (clap resolves the last two); the field docs
//! double as `--help`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use clap::builder::BoolishValueParser;

/// The shortest admin token `serve` starts with: 32 characters of `openssl rand -hex 32`
/// output carry 128 bits, beyond guessing over HTTP.
pub const MIN_ADMIN_TOKEN_CHARS: usize = 32;

/// `BRAINSCAN_ADMIN_TOKEN`, trimmed; `None` when unset or blank.
fn admin_token_from_env() -> Option<String> {
    std::env::var("BRAINSCAN_ADMIN_TOKEN")
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
}

/// A reverse proxy's address or CIDR block (`BRAINSCAN_TRUSTED_PROXIES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustedProxy(pub ipnet::IpNet);

impl std::str::FromStr for TrustedProxy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        s.parse::<ipnet::IpNet>()
            .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
            .map(Self)
            .map_err(|_| format!("{s:?} is not an IP address or CIDR block"))
    }
}

impl TrustedProxy {
    #[must_use]
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        self.0.contains(&ip)
    }
}

/// Where state lives. Shared by every subcommand that touches the database.
#[derive(Debug, Clone, Args)]
pub struct StoreConfig {
    /// Folder for the SQLite file, artifacts and temporary downloads.
    #[arg(long, env = "BRAINSCAN_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,

    /// Database URL. Defaults to a SQLite file in the data folder
    /// (`sqlite://DATA_DIR/brainscan.db`). Its value is never shown by `--help` (a Postgres
    /// URL carries a password).
    #[arg(long, env = "BRAINSCAN_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
}

impl StoreConfig {
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => format!(
                "sqlite://{}?mode=rwc",
                self.data_dir.join("brainscan.db").display()
            ),
        }
    }
}

/// Limits and policy for every outbound fetch (media downloads and webhooks).
#[derive(Debug, Clone, Args)]
pub struct FetchConfig {
    /// Largest media file accepted, in bytes (the download stops and fails past it).
    #[arg(long, env = "BRAINSCAN_FETCH_MAX_BYTES", default_value_t = 512 * 1024 * 1024)]
    pub fetch_max_bytes: u64,

    /// Seconds allowed for a whole media download.
    #[arg(long, env = "BRAINSCAN_FETCH_TIMEOUT_SECS", default_value_t = 300)]
    pub fetch_timeout_secs: u64,

    /// Seconds allowed to connect to a media host.
    #[arg(
        long,
        env = "BRAINSCAN_FETCH_CONNECT_TIMEOUT_SECS",
        default_value_t = 10
    )]
    pub fetch_connect_timeout_secs: u64,

    /// Redirects followed per fetch; each hop is checked again.
    #[arg(long, env = "BRAINSCAN_FETCH_MAX_REDIRECTS", default_value_t = 5)]
    pub fetch_max_redirects: usize,

    /// Slowest transfer accepted for media, in KiB/s averaged from the first byte on: once
    /// `fetch_min_rate_grace_secs` have passed, a download whose average falls below it is
    /// aborted (`download_failed`), so a drip-feeding host cannot hold a worker for the whole
    /// timeout. 0 turns the check off.
    #[arg(long, env = "BRAINSCAN_FETCH_MIN_RATE_KIB", default_value_t = 64)]
    pub fetch_min_rate_kib: u64,

    /// Seconds a download may run before the minimum rate applies (connection set-up, slow
    /// start).
    #[arg(
        long,
        env = "BRAINSCAN_FETCH_MIN_RATE_GRACE_SECS",
        default_value_t = 10
    )]
    pub fetch_min_rate_grace_secs: u64,

    /// Bytes read from the start of a clip at submit time to probe its duration.
    #[arg(long, env = "BRAINSCAN_PROBE_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub probe_bytes: u64,

    /// Seconds the submit-time duration probe may take before the scan is accepted unprobed
    /// (the worker probes the full file again).
    #[arg(long, env = "BRAINSCAN_PROBE_TIMEOUT_SECS", default_value_t = 10)]
    pub probe_timeout_secs: u64,

    /// Submit-time probes running at once in this process, and per organisation. A
    /// submission that finds none free is accepted unprobed (the worker checks the file).
    #[arg(long, env = "BRAINSCAN_PROBE_CONCURRENCY", default_value_t = 16)]
    pub probe_concurrency: usize,

    #[arg(long, env = "BRAINSCAN_PROBE_CONCURRENCY_PER_ORG", default_value_t = 2)]
    pub probe_concurrency_per_org: usize,

    /// Development only: allow fetching from loopback addresses (127.0.0.0/8, ::1).
    /// Off by default; private, link-local and metadata addresses stay refused.
    #[arg(long, env = "BRAINSCAN_ALLOW_LOOPBACK_FETCH", default_value_t = false, value_parser = BoolishValueParser::new())]
    pub allow_loopback_fetch: bool,

    /// Exact socket addresses (IP:port) that may be fetched although the address policy
    /// refuses their range, e.g. an internal media host. Comma separated.
    #[arg(long, env = "BRAINSCAN_FETCH_ALLOW_ADDRS", value_delimiter = ',')]
    pub fetch_allow_addrs: Vec<SocketAddr>,
}

impl FetchConfig {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.fetch_timeout_secs)
    }
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.fetch_connect_timeout_secs)
    }
    pub fn probe_timeout(&self) -> Duration {
        Duration::from_secs(self.probe_timeout_secs)
    }
    /// The minimum transfer rate, `None` when turned off.
    pub fn min_rate(&self) -> Option<MinRate> {
        (self.fetch_min_rate_kib > 0).then(|| MinRate {
            bytes_per_sec: self.fetch_min_rate_kib * 1024,
            grace: Duration::from_secs(self.fetch_min_rate_grace_secs),
        })
    }
}

/// A download slower than `bytes_per_sec` on average, once `grace` has passed, is aborted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinRate {
    pub bytes_per_sec: u64,
    pub grace: Duration,
}

impl MinRate {
    /// How long a download that has `bytes` may run in all before its average falls below
    /// the rate (never less than the grace).
    #[must_use]
    pub fn allowed(&self, bytes: u64) -> Duration {
        self.grace.max(Duration::from_secs_f64(
            bytes as f64 / self.bytes_per_sec as f64,
        ))
    }
}

/// Transcripts a worker process remembers unless told otherwise (`speech::memory`): a few
/// kilobytes each, so enough for every variant of a campaign scanned in one sitting.
pub const DEFAULT_TRANSCRIPT_MEMORY: u64 = 64;

/// The durable job queue and its in-process workers.
#[derive(Debug, Clone, Args)]
pub struct QueueConfig {
    /// Scan workers in this process (0 runs an API-only process).
    #[arg(long, env = "BRAINSCAN_WORKERS", default_value_t = 2)]
    pub workers: usize,

    /// Milliseconds a claimed job stays leased without a heartbeat before another worker may
    /// take it over.
    #[arg(long, env = "BRAINSCAN_LEASE_MS", default_value_t = 30_000)]
    pub lease_ms: u64,

    /// Milliseconds between lease heartbeats (keep well under the lease).
    #[arg(long, env = "BRAINSCAN_HEARTBEAT_MS", default_value_t = 5_000)]
    pub heartbeat_ms: u64,

    /// Milliseconds an idle worker waits before polling for work again.
    #[arg(long, env = "BRAINSCAN_POLL_MS", default_value_t = 500)]
    pub poll_ms: u64,

    /// Transcripts this process's workers remember by the audio they were heard from (least
    /// recently used out; 0 remembers none): a track scanned again, such as one voice-over
    /// under several cuts of an ad, is not transcribed again.
    #[arg(long, env = "BRAINSCAN_TRANSCRIPT_MEMORY", default_value_t = DEFAULT_TRANSCRIPT_MEMORY)]
    pub transcript_memory: u64,

    /// Attempts a scan job gets (transient failures and crashed workers) before `error`.
    #[arg(long, env = "BRAINSCAN_SCAN_MAX_ATTEMPTS", default_value_t = 3)]
    pub scan_max_attempts: i64,

    /// Base of the exponential retry backoff, in milliseconds.
    #[arg(long, env = "BRAINSCAN_RETRY_BASE_MS", default_value_t = 2_000)]
    pub retry_base_ms: u64,

    /// Seconds a worker may take to finish its job at shutdown before the job is released.
    #[arg(long, env = "BRAINSCAN_SHUTDOWN_GRACE_SECS", default_value_t = 20)]
    pub shutdown_grace_secs: u64,

    /// Scans of one organisation that may end in `error` within an hour before its new
    /// submissions are refused (429 `rate_limited`) until the hour has passed. Failed scans
    /// are never charged, so without a budget one organisation could keep the workers
    /// downloading and decoding for free. 0 turns it off.
    #[arg(
        long,
        env = "BRAINSCAN_ORG_FAILED_SCANS_PER_HOUR",
        default_value_t = 30
    )]
    pub org_failed_scans_per_hour: i64,

    /// Most scans of one organisation running at once, across every worker sharing the
    /// database; an organisation with nothing running goes ahead of another's backlog. The
    /// default, 1, is below the default worker count (2), so one organisation never holds
    /// every worker; `serve` warns when it would.
    #[arg(long, env = "BRAINSCAN_ORG_RUNNING_SCANS", default_value_t = 1)]
    pub org_running_scans: i64,
}

/// Webhook delivery.
#[derive(Debug, Clone, Args)]
pub struct WebhookConfig {
    /// Delivery attempts per completed scan before giving up.
    #[arg(long, env = "BRAINSCAN_WEBHOOK_MAX_ATTEMPTS", default_value_t = 8)]
    pub webhook_max_attempts: i64,

    /// Base of the delivery retry backoff in milliseconds (doubles per attempt, capped at
    /// one hour), so eight attempts span about ten minutes by default.
    #[arg(long, env = "BRAINSCAN_WEBHOOK_RETRY_BASE_MS", default_value_t = 5_000)]
    pub webhook_retry_base_ms: u64,

    /// Seconds a receiver has to answer one delivery.
    #[arg(long, env = "BRAINSCAN_WEBHOOK_TIMEOUT_SECS", default_value_t = 10)]
    pub webhook_timeout_secs: u64,

    /// Webhook deliveries in flight per worker process. Each organisation has at most one in
    /// flight, so a receiver that never answers holds one slot, not the others' deliveries.
    #[arg(long, env = "BRAINSCAN_WEBHOOK_WORKERS", default_value_t = 8)]
    pub webhook_workers: usize,
}

/// The HTTP server.
#[derive(Debug, Clone, Args)]
pub struct HttpConfig {
    /// Address to listen on.
    #[arg(long, env = "BRAINSCAN_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// A second address for the operator routes (`/metrics`, `/admin/v1`, and the probes).
    /// When set, those routes leave the public address (404 there), so they can be kept on a
    /// private network. Unset: everything on `BRAINSCAN_LISTEN`.
    #[arg(long, env = "BRAINSCAN_OPS_LISTEN")]
    pub ops_listen: Option<SocketAddr>,

    /// Largest request body accepted, in bytes.
    #[arg(long, env = "BRAINSCAN_MAX_BODY_BYTES", default_value_t = 64 * 1024)]
    pub max_body_bytes: usize,

    /// Most connections open at once; further ones wait in the listen backlog until one
    /// closes.
    #[arg(long, env = "BRAINSCAN_MAX_CONNECTIONS", default_value_t = 1024)]
    pub max_connections: usize,

    /// Seconds a client has to send a request's headers before the connection is closed
    /// (slow-header clients cannot hold connections).
    #[arg(long, env = "BRAINSCAN_HEADER_READ_TIMEOUT_SECS", default_value_t = 10)]
    pub header_read_timeout_secs: u64,

    /// Seconds one write to a client may wait for the client to read before the connection is
    /// closed (a reader that stops reading cannot hold a response, or the artifact slot it
    /// takes, any longer).
    #[arg(long, env = "BRAINSCAN_SEND_TIMEOUT_SECS", default_value_t = 30)]
    pub send_timeout_secs: u64,

    /// Seconds a request may take before it is answered 503.
    #[arg(long, env = "BRAINSCAN_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,

    /// Seconds an API-key lookup is cached; a revoked key stops working within this time.
    #[arg(long, env = "BRAINSCAN_KEY_CACHE_SECS", default_value_t = 5)]
    pub key_cache_secs: u64,

    /// MiB of rendered completed-scan bodies kept in memory for `GET /scans/{id}` (0 turns
    /// the cache off). A completed, charged result never changes.
    #[arg(long, env = "BRAINSCAN_RESULT_CACHE_MIB", default_value_t = 64)]
    pub result_cache_mib: u64,

    /// Sustained requests per second allowed per organisation (0 disables the limit).
    #[arg(long, env = "BRAINSCAN_RATE_LIMIT_PER_SEC", default_value_t = 20)]
    pub rate_limit_per_sec: u32,

    /// Requests per second one client address may make that present an API key, checked
    /// before the key is looked up, so a flood of made-up keys cannot reach the database at
    /// will (0 disables it). The address is read through `BRAINSCAN_TRUSTED_PROXIES`: behind
    /// a proxy that is not configured there, every client shares the proxy's address.
    #[arg(
        long,
        env = "BRAINSCAN_CLIENT_RATE_LIMIT_PER_SEC",
        default_value_t = 100
    )]
    pub client_rate_limit_per_sec: u32,

    /// Requests one client address may burst above its sustained rate.
    #[arg(long, env = "BRAINSCAN_CLIENT_RATE_LIMIT_BURST", default_value_t = 200)]
    pub client_rate_limit_burst: u32,

    /// Requests an organisation may burst above the sustained rate.
    #[arg(long, env = "BRAINSCAN_RATE_LIMIT_BURST", default_value_t = 40)]
    pub rate_limit_burst: u32,

    /// Reverse proxies whose `X-Forwarded-For` names the client (addresses or CIDR blocks,
    /// comma-separated, e.g. `127.0.0.1,10.0.0.0/8`). Only a request from one of them is
    /// read as coming from the address it forwards for; any other request is its peer.
    /// Empty: `X-Forwarded-For` is never read.
    #[arg(long, env = "BRAINSCAN_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<TrustedProxy>,

    /// Host names a request may name in its `Host` header, besides any IP address,
    /// `localhost` and the host of `BRAINSCAN_PUBLIC_URL` (comma-separated; `*` turns the
    /// check off). Any other name is answered 421: a web page that rebinds its own name to
    /// this service's address cannot read it.
    #[arg(long, env = "BRAINSCAN_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// Serve `/admin/v1` on the public address even though an admin token is set and there is
    /// no `BRAINSCAN_OPS_LISTEN`. Off by default: the admin API then answers only on the
    /// operations address, never where the public can reach it.
    #[arg(long, env = "BRAINSCAN_ADMIN_ON_PUBLIC_LISTENER", default_value_t = false, value_parser = BoolishValueParser::new())]
    pub admin_on_public_listener: bool,

    /// Whether the console's session cookie is `Secure` (then named `__Host-brainscan_session`,
    /// path `/`): `auto` decides from this configuration, never from a request: yes when
    /// `BRAINSCAN_PUBLIC_URL` is `https://…`, or when it is unset and `BRAINSCAN_LISTEN` is not
    /// a loopback address; no for an `http://` public URL or a loopback listener. `always` and
    /// `never` say so outright (`never` only for plain-HTTP set-ups you trust).
    #[arg(long, env = "BRAINSCAN_SECURE_COOKIES", value_enum, default_value_t = SecureCookies::Auto)]
    pub secure_cookies: SecureCookies,

    /// Log as JSON lines (for production log shippers) instead of human-readable text.
    #[arg(long, env = "BRAINSCAN_LOG_JSON", default_value_t = false, value_parser = BoolishValueParser::new())]
    pub log_json: bool,
}

/// The plugin host: where compiled plugins are cached, the admin token, and the limits every
/// plugin call runs under. A plugin may ask for more fuel or memory in its self-description; it
/// gets the smaller of its request and the ceiling here.
#[derive(Debug, Clone, Args)]
pub struct PluginConfig {
    /// Folder for precompiled plugin artifacts (native code keyed by plugin digest and engine
    /// build). Defaults to `DATA_DIR/plugin-cache`. Safe to delete; it is rebuilt on demand.
    #[arg(long, env = "BRAINSCAN_PLUGIN_CACHE_DIR")]
    pub plugin_cache_dir: Option<PathBuf>,

    /// Bearer token for `/admin/v1/…`, at least [`MIN_ADMIN_TOKEN_CHARS`] characters, read
    /// from the environment only (`BRAINSCAN_ADMIN_TOKEN`): a command-line flag would show it
    /// to every user of the machine in the process list. White space around it is dropped
    /// (a token read from a file keeps its newline); `serve` refuses one with white space
    /// inside. Unset or empty: the admin API answers 404 (it is off).
    #[arg(skip = admin_token_from_env())]
    pub admin_token: Option<String>,

    /// Fuel every call gets before the per-second share (fuel counts wasm instructions).
    #[arg(long, env = "BRAINSCAN_PLUGIN_FUEL_BASE", default_value_t = 20_000_000)]
    pub plugin_fuel_base: u64,

    /// Fuel per second of clip when the plugin asks for nothing.
    #[arg(
        long,
        env = "BRAINSCAN_PLUGIN_FUEL_PER_SECOND",
        default_value_t = 2_000_000
    )]
    pub plugin_fuel_per_second: u64,

    /// The most fuel per second of clip a plugin may ask for.
    #[arg(
        long,
        env = "BRAINSCAN_PLUGIN_FUEL_PER_SECOND_MAX",
        default_value_t = 20_000_000
    )]
    pub plugin_fuel_per_second_max: u64,

    /// Linear memory a plugin gets when it asks for nothing, bytes.
    #[arg(long, env = "BRAINSCAN_PLUGIN_MEMORY_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub plugin_memory_bytes: u64,

    /// The most linear memory a plugin may ask for, bytes.
    #[arg(long, env = "BRAINSCAN_PLUGIN_MEMORY_MAX_BYTES", default_value_t = 128 * 1024 * 1024)]
    pub plugin_memory_max_bytes: u64,

    /// Wall-clock deadline of one plugin call, milliseconds (epoch interruption, with an
    /// outer timeout as a backstop).
    #[arg(long, env = "BRAINSCAN_PLUGIN_TIMEOUT_MS", default_value_t = 2_000)]
    pub plugin_timeout_ms: u64,

    /// Largest output one call may return (strings plus 8 bytes per number), bytes.
    #[arg(long, env = "BRAINSCAN_PLUGIN_OUTPUT_MAX_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub plugin_output_max_bytes: u64,

    /// Write `/tmp/perf-<pid>.map` naming every compiled plugin function, so `perf record`
    /// and `perf report` show where a plugin's time goes by its Rust function names (build the
    /// plugin unstripped). For profiling; leave off in production.
    #[arg(long, env = "BRAINSCAN_PLUGIN_PERFMAP", default_value_t = false, value_parser = BoolishValueParser::new())]
    pub plugin_perfmap: bool,

    /// Plugin calls that may run at once (each holds one pooled instance).
    #[arg(long, env = "BRAINSCAN_PLUGIN_CONCURRENCY", default_value_t = 16)]
    pub plugin_concurrency: u32,

    /// Crash-loop breaker: this many failed calls of one slot's version …
    #[arg(long, env = "BRAINSCAN_PLUGIN_BREAKER_FAILURES", default_value_t = 3)]
    pub plugin_breaker_failures: u32,

    /// … within this many seconds roll the slot back to its last good version.
    #[arg(
        long,
        env = "BRAINSCAN_PLUGIN_BREAKER_WINDOW_SECS",
        default_value_t = 60
    )]
    pub plugin_breaker_window_secs: u64,

    /// … and only when those failures came from at least this many organisations' scans, so
    /// one tenant's input cannot roll back an operator's plugin for everyone.
    #[arg(long, env = "BRAINSCAN_PLUGIN_BREAKER_ORGS", default_value_t = 2)]
    pub plugin_breaker_orgs: u32,

    /// Largest plugin file accepted by `plugin install` and the admin API, bytes.
    #[arg(long, env = "BRAINSCAN_PLUGIN_MAX_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub plugin_max_bytes: u64,
}

impl PluginConfig {
    pub fn cache_dir(&self, data_dir: &std::path::Path) -> PathBuf {
        self.plugin_cache_dir
            .clone()
            .unwrap_or_else(|| data_dir.join("plugin-cache"))
    }

    /// Every default, for tools that run plugins outside the service.
    pub fn defaults() -> Self {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            inner: PluginConfig,
        }
        Wrapper::parse_from(["brainscan"]).inner
    }
}

/// `BRAINSCAN_SECURE_COOKIES`: whether the session cookie is `Secure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SecureCookies {
    /// Decided from `BRAINSCAN_PUBLIC_URL` and `BRAINSCAN_LISTEN`.
    Auto,
    Always,
    Never,
}

/// What one `brainscan serve` process does. Several processes on one PostgreSQL database
/// split the work: API processes take requests and queue jobs, worker processes run them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// The HTTP API only; queued jobs are left to worker processes.
    Api,
    /// Job workers only; HTTP serves just `/healthz`, `/readyz` and `/metrics`.
    Worker,
    /// Both, in one process (the embedded single-machine default).
    All,
}

impl Role {
    pub fn serves_api(self) -> bool {
        matches!(self, Self::Api | Self::All)
    }
    pub fn runs_workers(self) -> bool {
        matches!(self, Self::Worker | Self::All)
    }
}

/// Where rendered artifacts (the fMRI image) are kept, and how their URLs are signed.
#[derive(Debug, Clone, Args)]
pub struct ArtifactConfig {
    /// Artifact store: a folder path or `file:///…` (default `DATA_DIR/artifacts`), or
    /// `s3://BUCKET[/PREFIX]` for S3-compatible storage. S3 credentials, region and endpoint
    /// come from the standard `AWS_*` variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`).
    #[arg(long, env = "BRAINSCAN_ARTIFACTS_URL")]
    pub artifacts_url: Option<String>,

    /// Public base URL of this service (e.g. `https://scan.example.com`), used in signed
    /// artifact URLs of the local store. Unset: the request's `Host` header, over http.
    #[arg(long, env = "BRAINSCAN_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Most artifact responses (`GET /api/v1/artifacts/…`) streaming at once; more answer
    /// 503 `busy` with `Retry-After`.
    #[arg(long, env = "BRAINSCAN_ARTIFACT_CONCURRENCY", default_value_t = 32)]
    pub artifact_concurrency: usize,

    /// Most of those one client address (an IPv6 client by its /64) may hold at once; more
    /// answer 429 with `Retry-After`. Each response also has a deadline: one minute plus a
    /// second for every 64 KiB of its body, and `BRAINSCAN_SEND_TIMEOUT_SECS` for any one
    /// write.
    #[arg(
        long,
        env = "BRAINSCAN_ARTIFACT_CONCURRENCY_PER_CLIENT",
        default_value_t = 4
    )]
    pub artifact_concurrency_per_client: usize,
}

/// Everything `brainscan serve` needs.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// `api`, `worker` or `all` (see the operator guide: several processes share one
    /// PostgreSQL database and one artifact store).
    #[arg(long, env = "BRAINSCAN_ROLE", value_enum, default_value_t = Role::All)]
    pub role: Role,
    #[command(flatten)]
    pub store: StoreConfig,
    #[command(flatten)]
    pub http: HttpConfig,
    #[command(flatten)]
    pub fetch: FetchConfig,
    #[command(flatten)]
    pub queue: QueueConfig,
    #[command(flatten)]
    pub webhook: WebhookConfig,
    #[command(flatten)]
    pub plugins: PluginConfig,
    #[command(flatten)]
    pub artifacts: ArtifactConfig,
    /// Folder of the speech and text models (Whisper, Silero VAD, all-MiniLM-L6-v2) that
    /// `scripts/fetch-models` fills.
    #[arg(long, env = "BRAINSCAN_MODELS_DIR", default_value_os_t = default_models_dir())]
    pub models_dir: PathBuf,
}

/// `BRAINSCAN_MODELS_DIR` when set, else [`default_models_dir`] (for tools and tests that do
/// not parse the command line).
pub fn default_models_dir_from_env() -> PathBuf {
    std::env::var_os("BRAINSCAN_MODELS_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(default_models_dir, PathBuf::from)
}

/// `$XDG_CACHE_HOME/brainscan/models`, else `~/.cache/brainscan/models` (where
/// `scripts/fetch-models` puts them), else `models` in the working folder.
pub fn default_models_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    match cache {
        Some(c) => c.join("brainscan").join("models"),
        None => PathBuf::from("models"),
    }
}

impl ServeConfig {
    /// A configuration with every default, rooted at `data_dir`; used by tests and embedders.
    pub fn with_data_dir(data_dir: PathBuf) -> Self {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            inner: ServeConfig,
        }
        let mut config = Wrapper::parse_from(["brainscan"]).inner;
        config.store.data_dir = data_dir;
        config.store.database_url = None;
        config
    }
}
