//! Real `brainscan` processes on one PostgreSQL database: API-only and worker-only roles,
//! a worker killed mid-job, charging and idempotency across API processes, and a plugin swap
//! made by one process reaching the workers.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use brainscan::store::Db;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::pg::FreshPg;
use crate::support::media_server;

const BIN: &str = env!("CARGO_BIN_EXE_brainscan");

/// A database plus the folders its processes use.
pub struct Cluster {
    pg: FreshPg,
    pub dir: TempDir,
    /// Environment every process gets on top of the defaults (e.g. an S3 artifact store).
    pub env: Vec<(String, String)>,
}

impl Cluster {
    pub async fn new() -> Self {
        let pg = FreshPg::new().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let c = Self {
            pg,
            dir,
            env: Vec::new(),
        };
        c.cli(&["migrate"]);
        c
    }

    fn command(&self, data: &str) -> Command {
        let data_dir = self.dir.path().join(data);
        std::fs::create_dir_all(&data_dir).expect("data dir");
        let mut cmd = Command::new(BIN);
        cmd.env("BRAINSCAN_DATABASE_URL", &self.pg.url)
            .env("BRAINSCAN_DATA_DIR", &data_dir)
            // One artifact folder for every process, as an operator would mount it.
            .env("BRAINSCAN_ARTIFACTS_URL", self.dir.path().join("artifacts"))
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Runs a one-shot subcommand (its own process) and returns stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = self.command("cli").args(args).output().expect("run");
        assert!(
            out.status.success(),
            "brainscan {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf8")
    }

    /// An organisation with $200 (eighty minimum-price scans) and its API key.
    pub fn org(&self, name: &str) -> String {
        self.cli(&["admin", "org", "create", name]);
        self.cli(&[
            "admin", "wallet", "credit", "--org", name, "--usd", "200.00",
        ]);
        self.cli(&["admin", "key", "create", "--org", name])
            .trim()
            .to_owned()
    }

    pub fn serve(&self, name: &str, role: &str, extra: &[&str]) -> Proc {
        let log = self.dir.path().join(format!("{name}.log"));
        let mut child = self
            .command(name)
            .args([
                "serve",
                "--role",
                role,
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
                "2000",
                "--probe-timeout-secs",
                "1",
                "--shutdown-grace-secs",
                "0",
                "--key-cache-secs",
                "1",
            ])
            .args(extra)
            .env("BRAINSCAN_LOG", "info")
            .env(
                "BRAINSCAN_ADMIN_TOKEN",
                "admin-secret-for-the-scale-out-test-0123",
            )
            .env("BRAINSCAN_ADMIN_ON_PUBLIC_LISTENER", "yes")
            // One organisation submits every scan here: its cap must let both workers claim
            // at once, or the claims this suite checks would never race (the default is 1).
            .env("BRAINSCAN_ORG_RUNNING_SCANS", "8")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("spawn serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read");
        let base = line
            .trim()
            .rsplit(' ')
            .next()
            .unwrap_or_default()
            .to_owned();
        assert!(
            base.starts_with("http://127.0.0.1:"),
            "{name} did not start: {line}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        Proc { child, base, log }
    }

    pub async fn db(&self) -> Db {
        Db::open(&self.pg.url).await.expect("db")
    }
}

pub struct Proc {
    child: Child,
    pub base: String,
    log: PathBuf,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Scan ids this process logged as completed.
    fn completed(&self) -> Vec<String> {
        completed_in(&self.log())
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A gauge or counter value from a process's `/metrics`.
async fn metric(http: &reqwest::Client, base: &str, name: &str) -> Option<f64> {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn completed_in(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("scan complete"))
        .filter_map(|l| {
            let at = l.find("scan.id=")? + "scan.id=".len();
            Some(
                l[at..]
                    .split(|c: char| c.is_whitespace() || c == '}' || c == ',')
                    .next()?
                    .trim_matches('"')
                    .to_owned(),
            )
        })
        .collect()
}

pub async fn ready(http: &reqwest::Client, p: &Proc) {
    for _ in 0..600 {
        if let Ok(r) = http.get(format!("{}/readyz", p.base)).send().await
            && r.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} never became ready:\n{}", p.base, p.log());
}

pub async fn submit(http: &reqwest::Client, api: &Proc, key: &str, body: &Value) -> (u16, Value) {
    let r = http
        .post(format!("{}/api/v1/scans", api.base))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .expect("send");
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Polls the database (not the API, whose first fetch would settle the charge).
pub async fn wait_complete(db: &Db, ids: &[String], within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let mut pending = Vec::new();
        for id in ids {
            let row = db.get_scan_by_id(id).await.expect("scan");
            match row.status.as_str() {
                "complete" => {}
                "queued" | "processing" => pending.push((id.clone(), row.status, row.stage)),
                other => panic!("scan {id} ended {other}: {:?}", row.error),
            }
        }
        if pending.is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} scans unfinished, e.g. {:?}",
            pending.len(),
            pending.first()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The scan ids each of `procs` logged as completed, read once the logs hold `expected` lines
/// between them or `within` has passed. A worker logs "scan complete" just after the commit that
/// `wait_complete` sees, so logs read the moment the database says "complete" can still lack the
/// last line: reading them at once made the 40-scan test fail 1 run in many (39 of 40 logged).
async fn logged_completions(
    procs: &[&Proc],
    expected: usize,
    within: Duration,
) -> Vec<Vec<String>> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let logged: Vec<Vec<String>> = procs.iter().map(|p| p.completed()).collect();
        let lines: usize = logged.iter().map(Vec::len).sum();
        if lines >= expected || tokio::time::Instant::now() >= deadline {
            return logged;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Claims per scan job, from the queue table.
async fn attempts(db: &Db) -> HashMap<String, i64> {
    use sqlx::Row;
    sqlx::query("SELECT payload, attempts FROM jobs WHERE kind = 'scan'")
        .fetch_all(&db.pool)
        .await
        .expect("jobs")
        .iter()
        .map(|r| {
            let payload: String = r.get("payload");
            let v: Value = serde_json::from_str(&payload).expect("payload");
            (
                v["scan_id"].as_str().expect("scan id").to_owned(),
                r.get::<i64, _>("attempts"),
            )
        })
        .collect()
}

pub fn tone(media: &crate::support::MediaServer) -> Value {
    json!({"input": {"type": "audio", "audio_url": media.url("/media/tone.wav")}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_api_and_two_worker_processes_complete_40_scans_each_once() {
    let cluster = Cluster::new().await;
    let key = cluster.org("acme");
    let media = media_server().await;
    let http = reqwest::Client::new();
    let api = cluster.serve("api", "api", &[]);
    let w1 = cluster.serve("w1", "worker", &[]);
    let w2 = cluster.serve("w2", "worker", &[]);
    for p in [&api, &w1, &w2] {
        ready(&http, p).await;
    }
    // The API process runs no workers; the workers serve no API.
    let r = http
        .get(format!("{}/api/v1/lenses", w1.base))
        .bearer_auth(&key)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 404, "a worker serves no public API");

    let mut ids = Vec::new();
    for _ in 0..40 {
        let (status, body) = submit(&http, &api, &key, &tone(&media)).await;
        assert_eq!(status, 202, "{body}");
        ids.push(body["scan_id"].as_str().expect("id").to_owned());
    }
    let db = cluster.db().await;
    wait_complete(&db, &ids, Duration::from_secs(300)).await;

    let logged = logged_completions(&[&w1, &w2, &api], 40, Duration::from_secs(10)).await;
    let [by_w1, by_w2, by_api] = <[Vec<String>; 3]>::try_from(logged).expect("three logs");
    assert!(by_api.is_empty(), "the API process ran a scan");
    let all: Vec<&String> = by_w1.iter().chain(&by_w2).collect();
    let unique: HashSet<&String> = all.iter().copied().collect();
    assert_eq!(
        all.len(),
        40,
        "40 completions logged (w1 {}, w2 {})",
        by_w1.len(),
        by_w2.len()
    );
    assert_eq!(unique.len(), 40, "no scan processed twice");
    assert_eq!(unique, ids.iter().collect::<HashSet<_>>());
    assert!(
        !by_w1.is_empty() && !by_w2.is_empty(),
        "both workers took jobs (w1 {}, w2 {})",
        by_w1.len(),
        by_w2.len()
    );
    let tries = attempts(&db).await;
    assert_eq!(tries.len(), 40);
    assert!(
        tries.values().all(|&n| n == 1),
        "every job claimed once: {tries:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_killed_mid_job_loses_nothing() {
    let cluster = Cluster::new().await;
    let key = cluster.org("acme");
    let media = media_server().await;
    let http = reqwest::Client::new();
    let api = cluster.serve("api", "api", &[]);
    let mut doomed = cluster.serve("doomed", "worker", &[]);
    ready(&http, &api).await;
    ready(&http, &doomed).await;

    // The slow route trickles the file, so the job is surely mid-download when killed.
    let body = json!({"input": {"type": "video", "video_url": media.url("/slow/clip.mp4")}});
    let (status, created) = submit(&http, &api, &key, &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["scan_id"].as_str().expect("id").to_owned();
    let db = cluster.db().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while db.get_scan_by_id(&id).await.expect("scan").status != "processing" {
        assert!(tokio::time::Instant::now() < deadline, "never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    doomed.kill();
    let rescuer = cluster.serve("rescuer", "worker", &[]);
    wait_complete(&db, std::slice::from_ref(&id), Duration::from_secs(120)).await;
    let logged = logged_completions(&[&rescuer, &doomed], 1, Duration::from_secs(10)).await;
    assert_eq!(logged[0], std::slice::from_ref(&id));
    assert!(logged[1].is_empty());
    assert_eq!(
        attempts(&db).await.get(&id),
        Some(&2),
        "claimed by the killed worker, then once more"
    );
    // The result is whole and charged once when first fetched.
    let scan: Value = http
        .get(format!("{}/api/v1/scans/{id}", api.base))
        .bearer_auth(&key)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(scan["status"], "complete", "{scan}");
    assert_eq!(db.charge_count(&id).await.expect("count"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn charging_and_idempotency_hold_across_api_processes() {
    let cluster = Cluster::new().await;
    let key = cluster.org("acme");
    let media = media_server().await;
    let http = reqwest::Client::new();
    let a = cluster.serve("api-a", "api", &[]);
    let b = cluster.serve("api-b", "api", &[]);
    let w = cluster.serve("w", "worker", &[]);
    for p in [&a, &b, &w] {
        ready(&http, p).await;
    }

    // The same Idempotency-Key sent to both API processes at once makes one scan.
    let body = tone(&media);
    let send = |p: &Proc| {
        http.post(format!("{}/api/v1/scans", p.base))
            .bearer_auth(&key)
            .header("Idempotency-Key", "order-42")
            .json(&body)
            .send()
    };
    let (ra, rb) = tokio::join!(send(&a), send(&b));
    let (ra, rb) = (ra.expect("a"), rb.expect("b"));
    let mut ids = HashSet::new();
    for r in [ra, rb] {
        let status = r.status().as_u16();
        let v: Value = r.json().await.expect("json");
        // One wins (202); the other replays it or, if it raced the insert, reports the key
        // in use; never a second scan.
        assert!(matches!(status, 200 | 202 | 409), "{status} {v}");
        if let Some(id) = v["scan_id"].as_str() {
            ids.insert(id.to_owned());
        }
    }
    assert_eq!(ids.len(), 1, "one scan for one idempotency key: {ids:?}");
    let id = ids.into_iter().next().expect("id");
    let db = cluster.db().await;
    use sqlx::Row;
    let scans: i64 = sqlx::query("SELECT COUNT(*) AS n FROM scans")
        .fetch_one(&db.pool)
        .await
        .expect("count")
        .get("n");
    assert_eq!(scans, 1);

    wait_complete(&db, std::slice::from_ref(&id), Duration::from_secs(120)).await;
    let before = db.wallet(&org_id(&db).await).await.expect("wallet");
    // Ten concurrent first fetches, five on each API process: one charge.
    let fetches = (0..10).map(|i| {
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        http.get(format!("{base}/api/v1/scans/{id}"))
            .bearer_auth(&key)
            .send()
    });
    let results = futures_util::future::join_all(fetches).await;
    let mut bodies = HashSet::new();
    for r in results {
        let r = r.expect("fetch");
        assert_eq!(r.status().as_u16(), 200);
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["status"], "complete");
        bodies.insert(v.to_string());
    }
    assert_eq!(bodies.len(), 1, "every fetch shows the same result");
    assert_eq!(db.charge_count(&id).await.expect("count"), 1);
    let after = db.wallet(&org_id(&db).await).await.expect("wallet");
    // Money left = deposit + the unused free allowance; the allowance cancels out.
    let spent = (before.deposit_cents - before.free_used_cents)
        - (after.deposit_cents - after.free_used_cents);
    let price: i64 = sqlx::query("SELECT price_cents FROM scans WHERE id = $1")
        .bind(&id)
        .fetch_one(&db.pool)
        .await
        .expect("price")
        .get("price_cents");
    assert_eq!(spent, price, "charged exactly the scan's price once");
}

async fn org_id(db: &Db) -> String {
    use sqlx::Row;
    sqlx::query("SELECT id FROM orgs")
        .fetch_one(&db.pool)
        .await
        .expect("org")
        .get("id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_swap_through_one_process_reaches_every_worker() {
    let cluster = Cluster::new().await;
    let key = cluster.org("acme");
    let media = media_server().await;
    let http = reqwest::Client::new();
    let api = cluster.serve("api", "api", &[]);
    let w = cluster.serve("w", "worker", &[]);
    ready(&http, &api).await;
    ready(&http, &w).await;
    let generation = || metric(&http, &w.base, "brainscan_plugin_generation");
    let start = generation()
        .await
        .expect("worker reports its plugin generation");

    // Install and activate through the CLI: a third process.
    let next = Path::new(brainscan::plugins::defaults::WASM_DIR).join("lens_standard_next.wasm");
    cluster.cli(&[
        "plugin",
        "install",
        next.to_str().expect("path"),
        "--activate",
    ]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if generation().await.is_some_and(|g| g > start) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the worker did not load the new plugin set within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let db = cluster.db().await;
    let (status, created) = submit(&http, &api, &key, &tone(&media)).await;
    assert_eq!(status, 202, "{created}");
    let id = created["scan_id"].as_str().expect("id").to_owned();
    wait_complete(&db, std::slice::from_ref(&id), Duration::from_secs(120)).await;
    let provenance = stored_provenance(&db, &id).await;
    assert_eq!(provenance["plugins"][0]["name"], "lens-standard");
    assert_eq!(
        provenance["plugins"][0]["version"],
        crate::support::NEXT_LENS_VERSION
    );

    // Roll back through the admin API of the API process.
    let r = http
        .post(format!("{}/admin/v1/plugins/rollback", api.base))
        .bearer_auth("admin-secret-for-the-scale-out-test-0123")
        .json(&json!({"slot": "lens-standard"}))
        .send()
        .await
        .expect("rollback");
    assert!(r.status().is_success(), "{:?}", r.text().await);
    let (_, created) = submit(&http, &api, &key, &tone(&media)).await;
    let id = created["scan_id"].as_str().expect("id").to_owned();
    wait_complete(&db, std::slice::from_ref(&id), Duration::from_secs(120)).await;
    let provenance = stored_provenance(&db, &id).await;
    assert_eq!(
        provenance["plugins"][0]["version"],
        brainscan::plugins::defaults::LENS_STANDARD_VERSION
    );
}

async fn stored_provenance(db: &Db, id: &str) -> Value {
    let row = db.get_scan_by_id(id).await.expect("scan");
    let result: Value =
        serde_json::from_str(row.result_json.as_deref().expect("result")).expect("json");
    result["provenance"].clone()
}

#[test]
fn completion_lines_are_parsed() {
    let log = "2026-11-23T01:00:00Z  INFO job{job.id=j1}: brainscan::pipeline: scan complete scan.id=sc_run_a_b\nother line";
    assert_eq!(completed_in(log), ["sc_run_a_b"]);
}
