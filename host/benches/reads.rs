//! `cargo bench -p brainscan --bench reads`: `GET /api/v1/scans/{id}` of a completed,
//! charged scan against nginx serving the same JSON body as a static file, side by side in
//! one run.
//!
//! Both servers run as their own processes on loopback: a real `brainscan serve` (SQLite,
//! the rate limit off so the bench measures the read path and not the limiter) that scans a
//! real 30 s clip end to end, and nginx (Debian `nginx-light`) with a generated config. The
//! load comes from `wrk` (Debian `wrk`), 64 keep-alive connections, with its latency
//! distribution. The bench prints requests per second and p99 for each and the ratio
//! brainscan / nginx. Targets (issue 17): ratio ≥ 0.5 and p99 ≤ 10 ms on a 2-core machine.
//!
//! Needs ffmpeg, nginx and wrk: `scripts/bench-tools` installs the last two.
//! `BRAINSCAN_BENCH_SECS` sets each load phase's length (default 10 s).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

#[path = "../../tests/common/served.rs"]
#[allow(dead_code)]
mod served;

use served::{Proc, brainscan, free_port, wait_for};

const CONNECTIONS: u32 = 64;

fn tool(name: &str) -> PathBuf {
    ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("`{name}` was not found: run scripts/bench-tools (Debian nginx-light and wrk)")
        })
}

/// nginx serving `root` on loopback, one worker per core, no access log.
fn nginx(dir: &Path, root: &Path) -> (Proc, String) {
    let port = free_port();
    let conf = dir.join("nginx.conf");
    std::fs::create_dir_all(dir.join("nginx-tmp")).expect("tmp");
    std::fs::write(
        &conf,
        format!(
            "worker_processes auto;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/nginx-error.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  access_log off;\n  default_type application/json;\n  types {{ video/mp4 mp4; }}\n\
             \x20 client_body_temp_path {d}/nginx-tmp;\n  keepalive_requests 1000000;\n\
             \x20 server {{ listen 127.0.0.1:{port}; root {r}; }}\n}}\n",
            d = dir.display(),
            r = root.display()
        ),
    )
    .expect("nginx.conf");
    let child = Command::new(tool("nginx"))
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("nginx-error.log"))
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn nginx");
    (Proc(child), format!("http://127.0.0.1:{port}"))
}

/// `brainscan serve` on loopback with `cache_mib` of rendered-result cache.
fn serve(data: &Path, cache_mib: u32) -> (Proc, String) {
    let mut command = brainscan(
        data,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--allow-loopback-fetch",
            "--rate-limit-per-sec",
            "0",
        ],
    );
    command.env("BRAINSCAN_RESULT_CACHE_MIB", cache_mib.to_string());
    served::spawn_serve(command)
}

/// Requests per second and p99 (ms) of `wrk` at [`CONNECTIONS`] connections.
fn load(url: &str, key: &str, secs: u64) -> (f64, f64) {
    let out = Command::new(tool("wrk"))
        .args([
            "-t2",
            &format!("-c{CONNECTIONS}"),
            &format!("-d{secs}s"),
            "--latency",
            "-H",
            &format!("Authorization: Bearer {key}"),
            url,
        ])
        .output()
        .expect("wrk");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "wrk failed: {text}");
    assert!(
        !text.contains("Non-2xx"),
        "{url} answered errors under load:\n{text}"
    );
    let rps = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Requests/sec in wrk output:\n{text}"));
    let p99 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("99%"))
        .map(|v| millis(v.trim()))
        .unwrap_or_else(|| panic!("no 99% line in wrk output:\n{text}"));
    (rps, p99)
}

/// wrk's durations ("812.00us", "3.21ms", "1.02s") in milliseconds.
fn millis(v: &str) -> f64 {
    let (num, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e3)
    } else {
        panic!("unknown wrk duration {v}")
    };
    num.parse::<f64>().expect("wrk number") * scale
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing: skip the run.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let secs: u64 = std::env::var("BRAINSCAN_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().expect("tempdir");
    let www = dir.path().join("www");
    std::fs::create_dir_all(&www).expect("www");
    let status = Command::new("ffmpeg")
        .args(["-loglevel", "error", "-y", "-f", "lavfi", "-i"])
        .arg("testsrc2=s=320x180:r=25")
        .args(["-f", "lavfi", "-i", "sine=frequency=300:sample_rate=16000"])
        .args(["-t", "30", "-c:v", "libx264", "-preset", "ultrafast"])
        .args(["-pix_fmt", "yuv420p", "-c:a", "aac"])
        .arg(www.join("clip.mp4"))
        .status()
        .expect("ffmpeg");
    assert!(status.success(), "ffmpeg could not make the clip");
    let (_nginx, nginx_base) = nginx(dir.path(), &www);
    let data = dir.path().join("brainscan");
    let key = served::funded_key(&data);
    let (_server, base) = serve(&data, 64);
    let http = reqwest::Client::new();
    wait_for(&http, &format!("{base}/readyz")).await;
    wait_for(&http, &format!("{nginx_base}/clip.mp4")).await;
    let created: serde_json::Value = http
        .post(format!("{base}/api/v1/scans"))
        .bearer_auth(&key)
        .json(&serde_json::json!({
            "input": {"type": "video", "video_url": format!("{nginx_base}/clip.mp4")}
        }))
        .send()
        .await
        .expect("submit")
        .json()
        .await
        .expect("json");
    let id = created["scan_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no scan id: {created}"))
        .to_owned();
    let url = format!("{base}/api/v1/scans/{id}");
    let body = loop {
        let r = http.get(&url).bearer_auth(&key).send().await.expect("get");
        let bytes = r.bytes().await.expect("body");
        let v: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        match v["status"].as_str() {
            Some("complete") => break bytes,
            Some("error") => panic!("the scan failed: {v}"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    // nginx serves the same bytes at the same path.
    let copy = www.join(format!("api/v1/scans/{id}"));
    std::fs::create_dir_all(copy.parent().expect("parent")).expect("dirs");
    std::fs::write(&copy, &body).expect("copy");
    let nginx_url = format!("{nginx_base}/api/v1/scans/{id}");
    let check = http.get(&nginx_url).send().await.expect("nginx get");
    assert_eq!(
        check.bytes().await.expect("bytes"),
        body,
        "nginx body differs"
    );
    println!(
        "GET of a completed scan: {} bytes of JSON, {CONNECTIONS} connections, {secs} s each, wrk -t2",
        body.len()
    );
    // Warm both (connections, caches) before measuring.
    load(&url, &key, 1);
    load(&nginx_url, &key, 1);
    let (ours, ours_p99) = load(&url, &key, secs);
    let (theirs, theirs_p99) = load(&nginx_url, &key, secs);
    // The same read with the cache off: a second process on the same database.
    let (_uncached_server, uncached_base) = serve(&data, 0);
    wait_for(&http, &format!("{uncached_base}/readyz")).await;
    let uncached_url = format!("{uncached_base}/api/v1/scans/{id}");
    load(&uncached_url, &key, 1);
    let (uncached, uncached_p99) = load(&uncached_url, &key, secs);
    println!("nginx (baseline)  {theirs:>9.0} req/s   p99 {theirs_p99:>6.2} ms");
    println!("brainscan         {ours:>9.0} req/s   p99 {ours_p99:>6.2} ms");
    println!(
        "brainscan, cache off {uncached:>6.0} req/s   p99 {uncached_p99:>6.2} ms ({:.1}x slower than with it)",
        ours / uncached
    );
    println!(
        "ratio brainscan/nginx: {:.2} (target ≥ 0.5); p99 {} the 10 ms target",
        ours / theirs,
        if ours_p99 <= 10.0 { "within" } else { "over" }
    );
}
