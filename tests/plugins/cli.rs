//! `brainscan plugin …` against a running `brainscan serve`: a swap made by another process
//! reaches the server within seconds, with no restart.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::{BIN, admin, serve};

fn plugin(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg("plugin")
        .args(args)
        .env("BRAINSCAN_DATA_DIR", dir)
        .env("BRAINSCAN_LOG", "warn")
        .output()
        .expect("run plugin");
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("utf8"),
        String::from_utf8(out.stderr).expect("utf8"),
    )
}

fn wasm_path(file: &str) -> String {
    Path::new(brainscan::plugins::defaults::WASM_DIR)
        .join(file)
        .display()
        .to_string()
}

#[test]
fn plugin_test_prints_the_checks_and_fails_a_hostile_plugin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ok, out, err) = plugin(dir.path(), &["test", &wasm_path("lens_custom.wasm")]);
    assert!(ok, "{out}{err}");
    for column in ["fuel used", "fuel budget", "peak memory", "time ms"] {
        assert!(out.contains(column), "{out}");
    }
    assert!(out.contains("determinism"), "{out}");
    let (ok, out, _) = plugin(
        dir.path(),
        &["test", "--json", &wasm_path("lens_custom.wasm")],
    );
    assert!(ok);
    let report: Value = serde_json::from_str(&out).expect("json report");
    assert_eq!(report["plugin"], "lens-custom@0.1.0");
    assert!(report["rows"].as_array().expect("rows").len() >= 5);

    // The template a team copies passes as it ships.
    let (ok, out, err) = plugin(dir.path(), &["test", &wasm_path("lens_template.wasm")]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("lens-template@0.1.0"), "{out}");

    let (ok, out, err) = plugin(dir.path(), &["test", &wasm_path("hostile_loop.wasm")]);
    assert!(!ok, "a hostile plugin must fail the check");
    assert!(
        format!("{out}{err}").contains("ran out of fuel"),
        "{out}{err}"
    );
    // `plugin test` needs no database: nothing was created in the data folder.
    assert!(!dir.path().join("brainscan.db").exists());
}

async fn lenses(base: &str, key: &str) -> Vec<String> {
    let v: Value = reqwest::Client::new()
        .get(format!("{base}/api/v1/lenses"))
        .bearer_auth(key)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    serde_json::from_value(v["lenses"].clone()).expect("lenses")
}

async fn until_lenses(base: &str, key: &str, calm: bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let now = lenses(base, key).await;
        if now.contains(&"calm".to_owned()) == calm {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server did not pick up the change: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_made_with_the_cli_reaches_a_running_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    admin(dir.path(), &["org", "create", "acme"]);
    let key = admin(dir.path(), &["key", "create", "--org", "acme"])
        .trim()
        .to_owned();
    let mut server = serve(dir.path());
    assert_eq!(
        lenses(&server.base, &key).await,
        ["attention", "memory", "purchase_intent", "manipulation"]
    );

    let (ok, out, err) = plugin(
        dir.path(),
        &["install", &wasm_path("lens_custom.wasm"), "--activate"],
    );
    assert!(ok, "{out}{err}");
    assert!(out.contains("lens-custom@0.1.0"), "{out}");
    until_lenses(&server.base, &key, true).await;

    let (ok, out, _) = plugin(dir.path(), &["list", "--json"]);
    assert!(ok);
    let list: Vec<Value> = serde_json::from_str(&out).expect("json");
    let custom = list
        .iter()
        .find(|p| p["name"] == "lens-custom")
        .expect("listed");
    assert_eq!(custom["active_in"], "lens:lens-custom");

    let (ok, out, err) = plugin(dir.path(), &["deactivate", "lens-custom"]);
    assert!(ok, "{out}{err}");
    until_lenses(&server.base, &key, false).await;
    let (ok, out, _) = plugin(dir.path(), &["events"]);
    assert!(ok);
    assert!(out.contains("deactivate"), "{out}");
    assert!(out.contains("lens-custom@0.1.0"), "{out}");

    server.child.kill().ok();
    server.child.wait().ok();
}
