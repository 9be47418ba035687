//! `cargo bench -p brainscan --bench queue`: the job queue at scale-out.
//!
//! 1. Claim latency with 10 000 jobs queued: each claim takes and finishes one job, timed
//!    one at a time and with four claimers racing, on the embedded SQLite file (the
//!    baseline, measured in the same run) and on PostgreSQL (`SKIP LOCKED`).
//! 2. Throughput in scans per minute of real `brainscan` processes on one PostgreSQL
//!    database: one API process and one, then two, worker processes, each running one job at
//!    a time, on 3 s audio clips (download, decode, qualia on this machine's GPU or
//!    lavapipe, the default plugins).
//!
//! Needs PostgreSQL at `BRAINSCAN_TEST_POSTGRES_URL` (default the local server) and ffmpeg.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use brainscan::store::Db;
use brainscan::store::jobs::NewJob;

/// The scale-out tests' fresh-database guard, shared rather than written twice.
#[path = "../../tests/scaleout/pg.rs"]
mod pg;
#[path = "../../tests/common/served.rs"]
#[allow(dead_code)]
mod served;
use pg::FreshPg;

const QUEUED: usize = 10_000;
const CLAIMS: usize = 2_000;

async fn fill(db: &Db) {
    for i in 0..QUEUED {
        db.enqueue(&NewJob {
            id: format!("job_{i:06}"),
            kind: "scan".into(),
            payload: "{}".into(),
            // Fifty organisations: the claim counts each one's running jobs.
            org_id: Some(format!("org_{:02}", i % 50)),
            max_attempts: 3,
            run_after: 0,
            created_at: i as i64,
        })
        .await
        .expect("enqueue");
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Claims (and finishes) `CLAIMS` jobs with `claimers` racing; per-claim latencies.
async fn claims(db: Arc<Db>, claimers: usize) -> Vec<Duration> {
    let mut tasks = Vec::new();
    for w in 0..claimers {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let worker = format!("w{w}");
            let mut lat = Vec::new();
            for _ in 0..CLAIMS / claimers {
                let t = Instant::now();
                let job = db
                    .claim_job("scan", &worker, 1_000, 60_000)
                    .await
                    .expect("claim")
                    .expect("a queued job");
                lat.push(t.elapsed());
                db.finish_job(&job.id, &worker, None, 1_001)
                    .await
                    .expect("finish");
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    all.sort();
    all
}

async fn claim_latency() {
    println!("## Claim latency with {QUEUED} jobs queued ({CLAIMS} claims each)\n");
    println!("| engine | claimers | p50 | p99 | claims/s |");
    println!("|---|---|---|---|---|");
    let mut p50s = Vec::new();
    for engine in ["sqlite", "postgres"] {
        for claimers in [1, 4] {
            let dir = tempfile::tempdir().expect("tempdir");
            let (url, _pg) = if engine == "sqlite" {
                (
                    format!("sqlite://{}?mode=rwc", dir.path().join("b.db").display()),
                    None,
                )
            } else {
                let pg = FreshPg::new().await;
                (pg.url.clone(), Some(pg))
            };
            let db = Arc::new(Db::connect(&url).await.expect("db"));
            fill(&db).await;
            let started = Instant::now();
            let lat = claims(db.clone(), claimers).await;
            let rate = lat.len() as f64 / started.elapsed().as_secs_f64();
            let (p50, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.99));
            println!(
                "| {engine} | {claimers} | {:.2} ms | {:.2} ms | {rate:.0} |",
                p50.as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3
            );
            p50s.push((engine, claimers, p50));
            db.pool.close().await;
        }
    }
    for claimers in [1, 4] {
        let get = |e: &str| {
            p50s.iter()
                .find(|(x, c, _)| *x == e && *c == claimers)
                .map(|(_, _, d)| d.as_secs_f64())
                .unwrap_or(f64::NAN)
        };
        println!(
            "\np50 ratio postgres / sqlite (baseline) with {claimers} claimer(s): {:.2}",
            get("postgres") / get("sqlite")
        );
    }
}

struct Proc(Child, String);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn brainscan(url: &str, data: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_brainscan"));
    std::fs::create_dir_all(data).expect("data dir");
    c.args(args)
        .env("BRAINSCAN_DATABASE_URL", url)
        .env("BRAINSCAN_DATA_DIR", data)
        .env("BRAINSCAN_LOG", "warn");
    c
}

fn serve(url: &str, data: &std::path::Path, role: &str) -> Proc {
    let mut child = brainscan(
        url,
        data,
        &[
            "serve",
            "--role",
            role,
            "--listen",
            "127.0.0.1:0",
            "--allow-loopback-fetch",
            "--workers",
            "1",
            "--probe-timeout-secs",
            "1",
            "--rate-limit-per-sec",
            "0",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    let base = served::listening_base(&mut child);
    Proc(child, base)
}

async fn ready(http: &reqwest::Client, base: &str) {
    for _ in 0..600 {
        if http
            .get(format!("{base}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{base} never became ready");
}

/// Scans per minute with `workers` worker processes.
async fn throughput(workers: usize, scans: usize, media_url: &str) -> f64 {
    let pg = FreshPg::new().await;
    let url = pg.url.clone();
    let dir = tempfile::tempdir().expect("tempdir");
    let cli = |args: &[&str]| {
        let out = brainscan(&url, &dir.path().join("cli"), args)
            .output()
            .expect("cli");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf8")
    };
    cli(&["migrate"]);
    cli(&["admin", "org", "create", "bench"]);
    cli(&[
        "admin", "wallet", "credit", "--org", "bench", "--usd", "10000",
    ]);
    let key = cli(&["admin", "key", "create", "--org", "bench"])
        .trim()
        .to_owned();
    let http = reqwest::Client::new();
    let api = serve(&url, &dir.path().join("api"), "api");
    let procs: Vec<Proc> = (0..workers)
        .map(|i| serve(&url, &dir.path().join(format!("w{i}")), "worker"))
        .collect();
    ready(&http, &api.1).await;
    for p in &procs {
        ready(&http, &p.1).await;
    }
    let db = Db::open(&url).await.expect("db");
    let started = Instant::now();
    let mut ids = Vec::new();
    for _ in 0..scans {
        let v: serde_json::Value = http
            .post(format!("{}/api/v1/scans", api.1))
            .bearer_auth(&key)
            .json(&serde_json::json!({"input": {"type": "audio", "audio_url": media_url}}))
            .send()
            .await
            .expect("submit")
            .json()
            .await
            .expect("json");
        ids.push(v["scan_id"].as_str().expect("scan id").to_owned());
    }
    loop {
        let mut done = 0;
        for id in &ids {
            let row = db.get_scan_by_id(id).await.expect("scan");
            assert!(row.status != "error", "{id}: {:?}", row.error);
            done += usize::from(row.status == "complete");
        }
        if done == ids.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let per_minute = scans as f64 / started.elapsed().as_secs_f64() * 60.0;
    db.pool.close().await;
    drop(procs);
    drop(api);
    drop(pg);
    per_minute
}

async fn media_server(dir: &std::path::Path) -> String {
    let status = Command::new("ffmpeg")
        .args([
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=300:sample_rate=16000",
            "-t",
            "3",
        ])
        .arg(dir.join("tone.wav"))
        .status()
        .expect("ffmpeg");
    assert!(status.success());
    let bytes = Arc::new(std::fs::read(dir.join("tone.wav")).expect("tone"));
    let app = axum::Router::new().route(
        "/tone.wav",
        axum::routing::get(move || {
            let b = bytes.clone();
            async move { ([("content-type", "audio/wav")], (*b).clone()) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/tone.wav")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing: skip the run.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    claim_latency().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let media = media_server(dir.path()).await;
    let scans = std::env::var("BRAINSCAN_BENCH_SCANS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    println!("\n## Throughput: {scans} scans of a 3 s clip, one API process\n");
    println!("| worker processes | scans/minute |");
    println!("|---|---|");
    let one = throughput(1, scans, &media).await;
    println!("| 1 (baseline) | {one:.1} |");
    let two = throughput(2, scans, &media).await;
    println!("| 2 | {two:.1} |");
    println!("\nratio 2 workers / 1 worker: {:.2}", two / one);
}
