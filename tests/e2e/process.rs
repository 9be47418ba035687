//! The real binary: a process killed mid-job loses nothing, and SIGTERM hands the job back.

use std::process::Command;

use serde_json::json;

use crate::support::{admin, create_scan, funded_key, media_server, serve_with_env, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_job_then_restarted_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = funded_key(dir.path());
    let media = media_server().await;
    let http = reqwest::Client::new();

    // Each process's scratch folder is made in TMPDIR: here, one the test can look into.
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).expect("scratch");
    let env = [("TMPDIR", scratch.to_str().expect("utf8"))];
    let serve = |dir: &std::path::Path| serve_with_env(dir, &env);
    let mut server = serve(dir.path());
    let body = json!({"input": {"type": "video", "video_url": media.url("/slow/clip.mp4")}});
    let id = create_scan(&http, &server.base, &key, &body).await;
    wait_for(&http, &server.base, &key, &id, |s| {
        s["stage"] == "downloading"
    })
    .await;

    // SIGKILL: no chance to clean up or release the lease.
    server.child.kill().expect("kill");
    server.child.wait().expect("wait");

    let server = serve(dir.path());
    let done = wait_for(&http, &server.base, &key, &id, |s| {
        s["status"] == "error" || s["status"] == "complete"
    })
    .await;
    // The re-run job completes on the restarted process: not lost, not stuck in processing,
    // and its provenance names the plugin that actually scored it.
    assert_eq!(done["status"], "complete", "{done}");
    assert_eq!(
        done["provenance"]["plugins"][0]["name"], "lens-standard",
        "{done}"
    );
    let none = admin(dir.path(), &["webhook", "deliveries", "--scan", &id]);
    assert!(none.contains("no webhook deliveries recorded"), "{none}");
    // The killed process's scratch folder (and its download) is gone; the live one holds
    // nothing but its lock once the job is done.
    let folders = brainscan::scratch::folders_in(&scratch);
    assert_eq!(folders.len(), 1, "{folders:?}");
    let leftovers: Vec<_> = std::fs::read_dir(&folders[0])
        .expect("scratch")
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != ".lock")
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    assert!(
        !dir.path().join("tmp").exists(),
        "nothing is written in the data folder's tmp"
    );

    // SIGTERM mid-download: the job is handed back (not failed) and finishes after a restart.
    let mut server = server;
    let id2 = create_scan(&http, &server.base, &key, &body).await;
    wait_for(&http, &server.base, &key, &id2, |s| {
        s["stage"] == "downloading"
    })
    .await;
    let pid = server.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let status = server.child.wait().expect("wait");
    assert!(status.success(), "graceful exit: {status:?}");
    let db = brainscan::store::Db::connect(&format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("brainscan.db").display()
    ))
    .await
    .expect("db");
    let row = db.get_scan_by_id(&id2).await.expect("scan");
    assert_eq!(row.status, "processing", "released, not failed");
    drop(db);
    let server = serve(dir.path());
    let done = wait_for(&http, &server.base, &key, &id2, |s| {
        s["status"] == "error" || s["status"] == "complete"
    })
    .await;
    assert_eq!(done["status"], "complete", "{done}");
    let mut server = server;
    server.child.kill().ok();
    server.child.wait().ok();
}

/// `serve` refuses a guessable admin token before it opens anything, and `--help` never
/// prints the database URL it read from the environment (a Postgres URL holds a password).
#[test]
fn serve_refuses_a_short_admin_token_and_hides_the_database_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(crate::support::BIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("BRAINSCAN_DATA_DIR", dir.path())
        .env("BRAINSCAN_ADMIN_TOKEN", "letmein")
        .output()
        .expect("run serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started with a 7-character token");
    assert!(stderr.contains("at least 32 characters"), "{stderr}");

    let help = Command::new(crate::support::BIN)
        .args(["serve", "--help"])
        .env(
            "BRAINSCAN_DATABASE_URL",
            "postgres://scan:hunter2@db.internal/brainscan",
        )
        .env(
            "BRAINSCAN_ADMIN_TOKEN",
            "0123456789abcdef0123456789abcdef-secret",
        )
        .output()
        .expect("run serve --help");
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    assert!(text.contains("BRAINSCAN_DATABASE_URL"), "{text}");
    assert!(
        !text.contains("hunter2") && !text.contains("-secret"),
        "{text}"
    );
}

/// With `BRAINSCAN_OPS_LISTEN`, `/metrics` and `/admin/v1` answer only on the operations
/// address (404 on the public one), the public API only on the public one, and the probes on
/// both: the real binary, two loopback ports.
#[tokio::test]
async fn operator_routes_move_to_their_own_address() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(crate::support::BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--ops-listen",
            "127.0.0.1:0",
        ])
        .env("BRAINSCAN_DATA_DIR", dir.path())
        .env(
            "BRAINSCAN_ADMIN_TOKEN",
            "0123456789abcdef0123456789abcdef-ops",
        )
        .env("BRAINSCAN_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut address = |prefix: &str| {
        let line = lines.next().expect("a line").expect("read");
        assert!(line.starts_with(prefix), "{line}");
        line.rsplit(' ').next().expect("address").to_owned()
    };
    let public = address("brainscan listening on ");
    let ops = address("brainscan operations (metrics, admin) on ");
    assert_ne!(public, ops);
    let http = reqwest::Client::new();
    let status = |base: &str, path: &str| {
        let (http, url) = (http.clone(), format!("{base}{path}"));
        async move {
            http.get(url)
                .header(
                    "authorization",
                    "Bearer 0123456789abcdef0123456789abcdef-ops",
                )
                .send()
                .await
                .expect("request")
                .status()
                .as_u16()
        }
    };
    assert_eq!(status(&public, "/metrics").await, 404);
    assert_eq!(status(&public, "/admin/v1/plugins").await, 404);
    assert_eq!(status(&ops, "/metrics").await, 200);
    assert_eq!(status(&ops, "/admin/v1/plugins").await, 200);
    // The public API is not on the operations address (401 there would mean it is served).
    assert_eq!(status(&ops, "/api/v1/lenses").await, 404);
    assert_eq!(status(&public, "/api/v1/lenses").await, 401);
    for base in [&public, &ops] {
        assert_eq!(status(base, "/healthz").await, 200);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Operators' settings as they write them: booleans as `1`, `yes` or `true`; the admin token
/// from the environment with a file's trailing newline; the admin API on the public address
/// only when asked for. White space inside a token and a boolean like `maybe` are refused.
#[tokio::test]
async fn boolean_settings_and_the_admin_token_read_as_operators_write_them() {
    const TOKEN: &str = "0123456789abcdef0123456789abcdef-env";
    let http = reqwest::Client::new();
    let admin = |base: String, token: &'static str| {
        let http = http.clone();
        async move {
            http.get(format!("{base}/admin/v1/plugins"))
                .bearer_auth(token)
                .send()
                .await
                .expect("send")
                .status()
                .as_u16()
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let padded = format!("  {TOKEN}\n");
    for yes in ["1", "yes", "true"] {
        let server = serve_with_env(
            dir.path(),
            &[
                ("BRAINSCAN_ADMIN_TOKEN", &padded),
                ("BRAINSCAN_ADMIN_ON_PUBLIC_LISTENER", yes),
                ("BRAINSCAN_LOG_JSON", yes),
            ],
        );
        assert_eq!(admin(server.base.clone(), TOKEN).await, 200, "{yes}");
    }
    let server = serve_with_env(dir.path(), &[("BRAINSCAN_ADMIN_TOKEN", TOKEN)]);
    assert_eq!(
        admin(server.base.clone(), TOKEN).await,
        404,
        "not on the public address unless asked for"
    );
    drop(server);
    for (name, value, expected) in [
        ("BRAINSCAN_LOG_JSON", "maybe", "maybe"),
        (
            "BRAINSCAN_ADMIN_TOKEN",
            "0123456789abcdef 0123456789abcdef",
            "white space",
        ),
    ] {
        let out = Command::new(crate::support::BIN)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("BRAINSCAN_DATA_DIR", dir.path())
            .env(name, value)
            .output()
            .expect("run serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}={value} started");
        assert!(stderr.contains(expected), "{stderr}");
    }
}
