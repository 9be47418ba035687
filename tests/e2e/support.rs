//! Test fixtures: media generated with ffmpeg, a loopback media/webhook server, and `TestApp`.

#![allow(dead_code)]

/// The version the test kit's `lens-standard-next` (`plugins/testkit/lens-standard-next`)
/// ships `lens-standard`'s code under: one above the built-in, for swap and rollback tests.
pub const NEXT_LENS_VERSION: &str = "2.11.0";

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as AxPath, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use brainscan::analyzer::{AnalysisInput, Analyzer, StageError};
use brainscan::app::App;
use brainscan::clock::ShiftedClock;
use brainscan::config::ServeConfig;
use brainscan::result::*;
use brainscan::serve::Running;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tempfile::TempDir;

/// Media files made once per test run.
pub struct Fixtures {
    _dir: TempDir,
    pub dir: PathBuf,
}

pub fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_path_buf();
        let ff = |args: &[&str]| {
            let ok = Command::new("ffmpeg")
                .args(["-loglevel", "error", "-y"])
                .args(args)
                .current_dir(&path)
                .status()
                .expect("ffmpeg must be installed (the test command installs it)");
            assert!(ok.success(), "ffmpeg failed: {args:?}");
        };
        ff(&[
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=160x90:rate=10",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:sample_rate=16000",
            "-t",
            "5",
            "-c:v",
            "mpeg4",
            "-c:a",
            "aac",
            "-shortest",
            "clip.mp4",
        ]);
        ff(&[
            "-f",
            "lavfi",
            "-i",
            "color=c=black:s=32x18:r=2",
            "-t",
            "200",
            "-c:v",
            "mpeg4",
            "long.mp4",
        ]);
        ff(&[
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=300:sample_rate=8000",
            "-t",
            "3",
            "tone.wav",
        ]);
        std::fs::write(
            path.join("page.html"),
            "<!doctype html><html><body>not media</body></html>",
        )
        .expect("write");
        std::fs::write(path.join("garbage.bin"), vec![0x5a_u8; 4096]).expect("write");
        // Pages that publish media (tests/e2e/pages.rs): relative addresses resolve against
        // the page, a declared video wins over audio and over the page's own players.
        for (name, html) in [
            (
                "page_og.html",
                r#"<!doctype html><html><head><title>Blender</title>
                <meta property="og:audio" content="tone.wav">
                <meta property="og:video" content="clip.mp4">
                </head><body><video src="missing.mp4"></video></body></html>"#,
            ),
            (
                "page_jsonld.html",
                r#"<html><head><script type="application/ld+json">
                {"@context":"https://schema.org","@type":"AudioObject","contentUrl":"/media/tone.wav"}
                </script></head><body><p>An episode.</p></body></html>"#,
            ),
            // The chosen candidate is itself a page: not followed.
            (
                "page_chain.html",
                r#"<html><head><meta property="og:video" content="page_og.html"></head></html>"#,
            ),
            // The chosen candidate is a private address: the guard refuses it.
            (
                "page_private.html",
                r#"<html><head><meta property="og:video" content="http://10.0.0.5/ad.mp4"></head></html>"#,
            ),
        ] {
            std::fs::write(path.join(name), html).expect("write");
        }
        Fixtures {
            _dir: dir,
            dir: path,
        }
    })
}

/// Runs `ffmpeg ARGS` in `dir` (quiet, overwriting) to make a test file; panics when it fails.
pub fn ffmpeg_in(dir: &Path, args: &[&str]) {
    let ok = Command::new("ffmpeg")
        .args(["-loglevel", "error", "-y"])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("ffmpeg must be installed (the test command installs it)");
    assert!(ok.success(), "ffmpeg failed: {args:?}");
}

/// What the loopback server saw and should answer.
#[derive(Default)]
pub struct ServerState {
    pub dir: PathBuf,
    pub hits: Mutex<HashMap<String, u32>>,
    pub hooks: Mutex<Vec<(HeaderMap, Vec<u8>)>>,
    /// Status the webhook receiver answers; 0 means 200.
    pub hook_status: AtomicU16,
    /// Webhook requests to refuse with 500 before accepting.
    pub hook_failures: AtomicU16,
}

pub struct MediaServer {
    pub addr: SocketAddr,
    pub state: Arc<ServerState>,
}

impl MediaServer {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("mp4") => "video/mp4",
        Some("wav") => "audio/wav",
        Some("html") => "text/html; charset=utf-8",
        _ => "application/octet-stream",
    }
}

async fn media(State(s): State<Arc<ServerState>>, AxPath(name): AxPath<String>) -> Response {
    *s.hits
        .lock()
        .expect("lock")
        .entry(format!("media/{name}"))
        .or_default() += 1;
    match std::fs::read(s.dir.join(&name)) {
        Ok(bytes) => ([(header::CONTENT_TYPE, content_type(&name))], bytes).into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Serves the file honouring a `Range: bytes=a-b` request (206 with `Content-Range`), as
/// object stores and CDNs do; `/media` ignores ranges.
async fn ranged(
    State(s): State<Arc<ServerState>>,
    AxPath(name): AxPath<String>,
    headers: HeaderMap,
) -> Response {
    let Ok(bytes) = std::fs::read(s.dir.join(&name)) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let total = bytes.len() as u64;
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("bytes="))
        .and_then(|v| v.split_once('-'))
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)));
    match range {
        Some((a, b)) if a < total => {
            let b = b.min(total - 1);
            (
                StatusCode::PARTIAL_CONTENT,
                [
                    (header::CONTENT_TYPE, content_type(&name).to_owned()),
                    (header::CONTENT_RANGE, format!("bytes {a}-{b}/{total}")),
                ],
                bytes[a as usize..=b as usize].to_vec(),
            )
                .into_response()
        }
        _ => ([(header::CONTENT_TYPE, content_type(&name))], bytes).into_response(),
    }
}

/// Streams the file slowly: 2 KiB every 100 ms.
async fn slow(State(s): State<Arc<ServerState>>, AxPath(name): AxPath<String>) -> Response {
    let Ok(bytes) = std::fs::read(s.dir.join(&name)) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let chunks: Vec<Vec<u8>> = bytes.chunks(2048).map(<[u8]>::to_vec).collect();
    let stream = futures_util::stream::unfold(chunks.into_iter(), |mut it| async move {
        let next = it.next()?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        Some((Ok::<_, std::io::Error>(next), it))
    });
    (
        [(header::CONTENT_TYPE, content_type(&name))],
        Body::from_stream(stream),
    )
        .into_response()
}

/// Serves the first request (the submit-time probe), answers 503 to the next `fail`, then
/// serves the file again. Hits are counted under `flaky/{name}/{fail}`.
async fn flaky(
    State(s): State<Arc<ServerState>>,
    AxPath(name): AxPath<String>,
    Query(q): Query<HashMap<String, u32>>,
) -> Response {
    let fail = q.get("fail").copied().unwrap_or(1);
    let n = {
        let mut hits = s.hits.lock().expect("lock");
        let n = hits.entry(format!("flaky/{name}/{fail}")).or_default();
        *n += 1;
        *n
    };
    if n > 1 && n <= 1 + fail {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    media(State(s), AxPath(name)).await
}

async fn redirect(Query(q): Query<HashMap<String, String>>) -> Response {
    let to = q.get("to").cloned().unwrap_or_default();
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

async fn hook(
    State(s): State<Arc<ServerState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    s.hooks.lock().expect("lock").push((headers, body.to_vec()));
    if s.hook_failures.load(Ordering::SeqCst) > 0 {
        s.hook_failures.fetch_sub(1, Ordering::SeqCst);
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    match s.hook_status.load(Ordering::SeqCst) {
        0 => StatusCode::OK,
        c => StatusCode::from_u16(c).unwrap_or(StatusCode::OK),
    }
}

pub async fn media_server() -> MediaServer {
    let state = Arc::new(ServerState {
        dir: fixtures().dir.clone(),
        ..Default::default()
    });
    let router = Router::new()
        .route("/media/{name}", get(media))
        .route("/slow/{name}", get(slow))
        .route("/ranged/{name}", get(ranged))
        .route("/flaky/{name}", get(flaky))
        .route("/redirect", get(redirect))
        .route("/hook", post(hook))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });
    MediaServer { addr, state }
}

/// A deterministic analysis stage for tests: a fixed-formula result for the probed duration.
/// It stands in for the inference core and plugins (other issues) so billing, options and
/// memory can be tested on completed scans.
pub struct FixtureAnalyzer;

pub fn fixture_result(duration: f64, lenses: &[String]) -> ScanResult {
    let t = duration.ceil().max(1.0) as u32;
    let timeline = (0..t)
        .map(|s| {
            let scores: BTreeMap<String, f64> = lenses
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    (
                        l.clone(),
                        40.0 + 10.0 * i as f64 + if s == 2 { -20.0 } else { f64::from(s) },
                    )
                })
                .collect();
            StoredSecond {
                second: s,
                benchmark: scores
                    .iter()
                    .map(|(l, v)| {
                        (
                            l.clone(),
                            Benchmark {
                                percentile: *v,
                                label: benchmark_label(*v).into(),
                            },
                        )
                    })
                    .collect(),
                reasons: scores
                    .keys()
                    .map(|l| (l.clone(), format!("{l} moved at second {s}")))
                    .collect(),
                scores,
                raw: [0.1 * f64::from(s), 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
            }
        })
        .collect();
    let moments = lenses
        .iter()
        .map(|l| Moment {
            kind: if l == "attention" {
                "attention_drop".into()
            } else {
                "lens_drop".into()
            },
            lens: l.clone(),
            second: 2,
            from: 41.0,
            to: 20.0,
            delta: -21.0,
            z: -2.5,
            reason: format!("{l} fell sharply once the soundtrack went silent"),
            brain_reason: format!("{l} dropped"),
            content_line: None,
        })
        .collect();
    let manipulation = lenses
        .iter()
        .any(|l| l == "manipulation")
        .then(|| Manipulation {
            conversion_risk: 42.0,
            risk_band: "moderate".into(),
            cognitive_sovereignty_index: 0.1,
            sovereignty: 58.0,
            pbi: 0.2,
            threat: Threat {
                label: "Moderate".into(),
                severity: "moderate".into(),
                color: "#f5a623".into(),
                note: "n".into(),
            },
            population: Population {
                per_ten: 4.2,
                per_ten_thousand: 4200.0,
                note: "n".into(),
            },
            quadrant: Quadrant {
                key: "clean".into(),
                label: "Clean".into(),
                lowers_guard: 30.0,
                wins_over: 40.0,
                how: "h".into(),
            },
            circuits: vec![],
            mechanisms: vec![Mechanism {
                key: "SR".into(),
                label: "Social Reward".into(),
                share: 1.0,
            }],
            timeline: vec![],
            peak_moment: None,
            tactics: vec![],
        });
    ScanResult {
        overall_score: Some(61.0),
        grade: Some(grade_for(61.0).into()),
        // As the real assembly reports it: the timeline's length (rounded-up seconds).
        duration_sec: f64::from(t),
        lenses: lenses.to_vec(),
        timeline,
        moments,
        summary: "A steady clip with one dip at second 2.".into(),
        buy_moments: None,
        manipulation,
        fmri_key: None,
        fmri_poster_key: None,
        low_signal: false,
        provenance: json!({"model": "test-fixture"}),
        modalities: StoredModalities {
            video: true,
            audio: true,
            speech: false,
        },
        transcript: vec![brainscan::plugins::bindings::TranscriptLine {
            start_sec: 1.2,
            end_sec: 2.8,
            text: "Grab a pair of these trainers before the weekend sale ends".into(),
        }],
    }
}

impl Analyzer for FixtureAnalyzer {
    fn lenses(&self) -> Vec<String> {
        brainscan::scan::BUILTIN_LENSES
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    fn analyze<'a>(
        &'a self,
        input: AnalysisInput<'a>,
    ) -> BoxFuture<'a, Result<ScanResult, StageError>> {
        Box::pin(async move {
            Ok(fixture_result(
                input.probe.duration_sec.unwrap_or(1.0),
                &input.request.lenses,
            ))
        })
    }
}

/// An analysis stage that fails the way a broken plugin does.
pub struct FailingAnalyzer;

impl Analyzer for FailingAnalyzer {
    fn lenses(&self) -> Vec<String> {
        brainscan::scan::BUILTIN_LENSES
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    fn analyze<'a>(
        &'a self,
        _input: AnalysisInput<'a>,
    ) -> BoxFuture<'a, Result<ScanResult, StageError>> {
        Box::pin(async {
            Err(StageError::permanent(
                "plugin_failed",
                "plugin lens-broken@1.0.0 (lens) trapped: wasm `unreachable` instruction executed",
            ))
        })
    }
}

/// An in-process service with its own database, clock and loopback media server.
pub struct TestApp {
    pub app: Arc<App>,
    pub clock: Arc<ShiftedClock>,
    pub base: String,
    pub http: reqwest::Client,
    pub media: MediaServer,
    running: Option<Running>,
    pub dir: TempDir,
}

pub struct Org {
    pub id: String,
    pub key: String,
    pub secret: String,
}

/// How long a scan may stay queued or processing before a test calls it stuck. It detects a
/// hang; it does not time the service. A fixture scan takes well under a second alone, but
/// its first recall embedding loads multilingual-e5 (470 MB) while the other test thread
/// runs real clips on the same 2 cores, and CI once saw that pass 30 s.
pub const STUCK_AFTER: Duration = Duration::from_secs(180);

pub fn config(dir: &Path) -> ServeConfig {
    let mut c = ServeConfig::with_data_dir(dir.to_path_buf());
    c.queue.workers = 2;
    c.queue.poll_ms = 50;
    c.queue.retry_base_ms = 100;
    c.queue.lease_ms = 5_000;
    c.queue.heartbeat_ms = 500;
    c.queue.shutdown_grace_secs = 2;
    c.webhook.webhook_retry_base_ms = 100;
    c.http.key_cache_secs = 1;
    c.http.rate_limit_per_sec = 10_000;
    c.http.rate_limit_burst = 10_000;
    c.http.client_rate_limit_per_sec = 10_000;
    c.http.client_rate_limit_burst = 10_000;
    c
}

impl TestApp {
    pub async fn start() -> Self {
        Self::start_with(|_| {}, Arc::new(FixtureAnalyzer)).await
    }

    pub async fn start_with(
        tweak: impl FnOnce(&mut ServeConfig),
        analyzer: Arc<dyn Analyzer>,
    ) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let media = media_server().await;
        let mut c = config(dir.path());
        // The loopback media and webhook server, on its port only: 127.0.0.1 on any other
        // port, other loopback addresses and `localhost` stay refused (tests/e2e/ssrf.rs).
        c.fetch.fetch_allow_addrs = vec![media.addr];
        tweak(&mut c);
        let clock = ShiftedClock::new();
        let app = App::build(c, clock.clone(), analyzer).await.expect("app");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let running = brainscan::serve::start(app.clone(), listener).expect("start");
        let base = format!("http://{}", running.addr);
        Self {
            app,
            clock,
            base,
            http: reqwest::Client::new(),
            media,
            running: Some(running),
            dir,
        }
    }

    pub async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await;
        }
    }

    pub async fn org(&self, name: &str, deposit_cents: i64) -> Org {
        let org = brainscan::store::orgs::Org {
            id: brainscan::ids::new_org_id(),
            name: name.into(),
            webhook_secret: brainscan::webhooks::new_secret(),
            created_at: self.app.clock.now_ms(),
        };
        use brainscan::clock::Clock;
        self.app
            .db
            .create_org(&org, &brainscan::billing::period_of(self.clock.now()))
            .await
            .expect("org");
        let key = brainscan::auth::generate(&org.id, 0);
        self.app.db.insert_api_key(&key.row).await.expect("key");
        if deposit_cents > 0 {
            self.app
                .db
                .credit_wallet(&org.id, deposit_cents, "test", 0)
                .await
                .expect("credit");
        }
        Org {
            id: org.id,
            key: key.secret,
            secret: org.webhook_secret,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/api/v1{}", self.base, path)
    }

    pub async fn get(&self, org: &Org, path: &str) -> (StatusCode, Value) {
        let r = self
            .http
            .get(self.url(path))
            .bearer_auth(&org.key)
            .send()
            .await
            .expect("send");
        let status = StatusCode::from_u16(r.status().as_u16()).expect("status");
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, org: &Org, path: &str, body: &Value) -> (StatusCode, Value) {
        let r = self
            .http
            .post(self.url(path))
            .bearer_auth(&org.key)
            .json(body)
            .send()
            .await
            .expect("send");
        let status = StatusCode::from_u16(r.status().as_u16()).expect("status");
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Submits a video scan of a fixture file served by the media server.
    pub async fn submit(&self, org: &Org, file: &str, extra: Value) -> (StatusCode, Value) {
        let mut body = json!({"input": {"type": "video", "video_url": self.media.url(&format!("/media/{file}"))}});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                b.insert(k.clone(), v.clone());
            }
        }
        self.post(org, "/scans", &body).await
    }

    /// Submits a scan of `url` as input type `kind` (`video` or `audio`).
    pub async fn submit_url(&self, org: &Org, kind: &str, url: &str) -> (StatusCode, Value) {
        let mut input = json!({"type": kind});
        input[format!("{kind}_url")] = json!(url);
        self.post(org, "/scans", &json!({ "input": input })).await
    }

    /// Submits an audio scan of the 3 s tone fixture; `extra` adds top-level fields.
    pub async fn submit_tone(&self, org: &Org, extra: Value) -> (StatusCode, Value) {
        let input =
            json!({"input": {"type": "audio", "audio_url": self.media.url("/media/tone.wav")}});
        let mut body = extra;
        if let (Some(b), Some(i)) = (body.as_object_mut(), input.as_object()) {
            b.extend(i.clone());
        }
        self.post(org, "/scans", &body).await
    }

    /// Polls (without fetching the completed body, which would settle the charge) until the
    /// scan leaves queued/processing, [`STUCK_AFTER`] at most.
    pub async fn wait_final(&self, scan_id: &str) -> String {
        let deadline = tokio::time::Instant::now() + STUCK_AFTER;
        loop {
            let row = self.app.db.get_scan_by_id(scan_id).await.expect("scan");
            if !matches!(row.status.as_str(), "queued" | "processing") {
                return row.status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "scan {scan_id} stuck in {} at stage {} ({}%) after {STUCK_AFTER:?}",
                row.status,
                row.stage,
                row.progress
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The number of charges on a scan released by a webhook. The service charges after the
    /// receiver answers 2xx, so the charge trails the delivery the test server saw: this
    /// waits (10 s at most) for the first charge, then gives the count.
    pub async fn charges_after_delivery(&self, scan_id: &str) -> i64 {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let n = self.app.db.charge_count(scan_id).await.expect("count");
            if n > 0 || tokio::time::Instant::now() >= deadline {
                return n;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn wallet(&self, org: &Org) -> Value {
        let (s, w) = self.get(org, "/wallet").await;
        assert_eq!(s, StatusCode::OK);
        w
    }
}

/// The folder of the real test clips (`scripts/fetch-test-media` fetches them once).
pub fn real_clips() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(root.join("scripts/fetch-test-media"))
        .output()
        .expect("scripts/fetch-test-media runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).expect("utf8").trim())
}

/// One authenticated JSON call; `body` makes it a POST.
pub async fn call(http: &reqwest::Client, url: String, key: &str, body: Option<&Value>) -> Value {
    let req = match body {
        Some(b) => http.post(url).json(b),
        None => http.get(url),
    };
    req.bearer_auth(key)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

/// The real binary, for tests of processes.
pub const BIN: &str = env!("CARGO_BIN_EXE_brainscan");

pub fn admin(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("admin")
        .args(args)
        .env("BRAINSCAN_DATA_DIR", dir)
        .output()
        .expect("run admin");
    assert!(
        out.status.success(),
        "admin {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

/// `brainscan admin …` with `stdin` on standard input (a password), whatever its outcome.
pub fn admin_output(dir: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new(BIN)
        .arg("admin")
        .args(args)
        .env("BRAINSCAN_DATA_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run admin");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("admin output")
}

/// As [`admin`], with `stdin` on standard input.
pub fn admin_with_stdin(dir: &Path, args: &[&str], stdin: &str) -> String {
    let out = admin_output(dir, args, stdin);
    assert!(
        out.status.success(),
        "admin {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

/// An organisation `acme` with $20 in its wallet in the data folder `dir`; returns its key.
pub fn funded_key(dir: &Path) -> String {
    admin(dir, &["org", "create", "acme"]);
    let key = admin(dir, &["key", "create", "--org", "acme"])
        .trim()
        .to_owned();
    admin(
        dir,
        &["wallet", "credit", "--org", "acme", "--usd", "20.00"],
    );
    key
}

/// Submits a scan and returns its id.
pub async fn create_scan(http: &reqwest::Client, base: &str, key: &str, body: &Value) -> String {
    let created: Value = http
        .post(format!("{base}/api/v1/scans"))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    created["scan_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no scan id in {created}"))
        .to_owned()
}

pub async fn scan_state(http: &reqwest::Client, base: &str, key: &str, id: &str) -> Value {
    http.get(format!("{base}/api/v1/scans/{id}"))
        .bearer_auth(key)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

/// Polls `GET /scans/{id}` every 100 ms until `pred` holds ([`STUCK_AFTER`] at most).
pub async fn wait_for(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    id: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + STUCK_AFTER;
    loop {
        let s = scan_state(http, base, key, id).await;
        if pred(&s) {
            return s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out; last state {s}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub struct Server {
    pub child: Child,
    pub base: String,
}

/// A failed assertion must not leave a server running after the test.
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `brainscan serve` on a free loopback port with short queue timings; returns once it
/// prints its address.
pub fn serve(dir: &Path) -> Server {
    serve_with_env(dir, &[])
}

/// [`serve`] with extra environment variables (e.g. `BRAINSCAN_ADMIN_TOKEN`).
pub fn serve_with_env(dir: &Path, env: &[(&str, &str)]) -> Server {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--allow-loopback-fetch",
            "--workers",
            "1",
            "--lease-ms",
            "1500",
            "--heartbeat-ms",
            "300",
            "--poll-ms",
            "100",
            "--probe-timeout-secs",
            "1",
            "--shutdown-grace-secs",
            "0",
        ])
        .env("BRAINSCAN_DATA_DIR", dir)
        .env("BRAINSCAN_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    let base = line.trim().rsplit(' ').next().expect("address").to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{line}");
    Server { child, base }
}
