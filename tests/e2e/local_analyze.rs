//! `brainscan analyze`: the local command's result equals the service's for the same clip,
//! it runs a custom lens plugin on real media, and a direct run in a clean environment
//! prints nothing but the result.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{BIN, create_scan, fixtures, funded_key, media_server, serve, wait_for};

/// `brainscan analyze ARGS…` with an environment holding only what a user's shell would
/// (PATH, HOME) plus the speech-model folder; returns (success, stdout, stderr).
fn analyze(args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("analyze").args(args).env_clear();
    for var in ["PATH", "HOME", "BRAINSCAN_MODELS_DIR"] {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    let out = cmd.output().expect("run analyze");
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("utf8"),
        String::from_utf8(out.stderr).expect("utf8"),
    )
}

fn without_id(mut v: Value) -> Value {
    v.as_object_mut().expect("object").remove("scan_id");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_prints_the_services_result_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = funded_key(dir.path());
    let media = media_server().await;
    let http = reqwest::Client::new();
    let mut server = serve(dir.path());
    let body = json!({"input": {"type": "video", "video_url": media.url("/media/clip.mp4")}});
    let id = create_scan(&http, &server.base, &key, &body).await;
    let service = wait_for(&http, &server.base, &key, &id, |s| {
        s["status"] == "complete" || s["status"] == "error"
    })
    .await;
    assert_eq!(service["status"], "complete", "{service}");
    server.child.kill().ok();
    server.child.wait().ok();

    let clip = fixtures().dir.join("clip.mp4");
    let clip = clip.to_str().expect("utf8");
    let (ok, out, err) = analyze(&[clip, "--json"]);
    assert!(ok, "analyze failed: {err}");
    assert_eq!(err, "", "a direct run printed to stderr");
    let local: Value = serde_json::from_str(&out).expect("analyze --json is JSON");
    assert_eq!(local["scan_id"], "local");
    assert_eq!(
        without_id(local),
        without_id(service),
        "analyze --json differs from GET /scans/{{id}}"
    );

    // The readable form carries the same scores, the moments and the summary.
    let (ok, table, err) = analyze(&[clip]);
    assert!(ok, "{err}");
    assert_eq!(err, "");
    assert!(table.starts_with("overall "), "{table}");
    assert!(table.contains("\nmoments ("), "{table}");
    assert!(table.contains("\nsummary: "), "{table}");
}

#[test]
fn analyze_runs_a_custom_lens_plugin_on_real_media_and_refuses_a_hostile_one() {
    let clip = fixtures().dir.join("clip.mp4");
    let clip = clip.to_str().expect("utf8");
    let wasm = |f: &str| {
        Path::new(brainscan::plugins::defaults::WASM_DIR)
            .join(f)
            .display()
            .to_string()
    };
    let custom = wasm("lens_custom.wasm");
    let (ok, out, err) = analyze(&[
        clip,
        "--json",
        "--plugin",
        &custom,
        "--lenses",
        "calm,attention",
        "--raw",
    ]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["lenses"], json!(["calm", "attention"]));
    let timeline = v["timeline"].as_array().expect("timeline");
    assert!(!timeline.is_empty());
    // The plugin scored this clip's own networks: calm is its formula of the two attention
    // series that `--raw` prints beside it (plugins/testkit/lens-custom), every second.
    for s in timeline {
        let calm = s["scores"]["calm"].as_f64().expect("calm score");
        let z = -(s["raw"]["Ventral Attention"].as_f64().expect("raw")
            + s["raw"]["Dorsal Attention"].as_f64().expect("raw"))
            / 2.0;
        let expected = 100.0 / (1.0 + (-1.7 * z).exp());
        assert!((calm - expected).abs() < 0.06, "{calm} vs {expected}: {s}");
    }
    assert!(
        v["provenance"]["plugins"]
            .as_array()
            .expect("plugins")
            .iter()
            .any(|p| p["name"] == "lens-custom"),
        "{}",
        v["provenance"]
    );

    let (ok, out, err) = analyze(&[clip, "--plugin", &wasm("hostile_loop.wasm")]);
    assert!(!ok, "a plugin that never returns was accepted: {out}");
    assert!(err.contains("hostile_loop.wasm"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
}

/// On a terminal, `analyze` shows how far decoding has come on stderr; in a pipe (above) its
/// stderr stays empty. util-linux `script` gives the command a real pseudo-terminal.
#[test]
fn analyze_shows_progress_on_a_terminal() {
    let clip = fixtures().dir.join("clip.mp4");
    let command = format!("{BIN} analyze {} --json", clip.display());
    let tty = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    let text = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{text}");
    assert!(text.contains("analysing"), "no bar on the terminal: {text}");
    assert!(text.contains("\"scan_id\": \"local\""), "{text}");
}

/// `brainscan analyze` refuses a clip over 180 s as the service does (`video_too_long`),
/// also one just over (180.3 s), which used to reach the plugins and fail as `plugin_failed`.
#[test]
fn a_clip_just_over_three_minutes_is_video_too_long() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clip = dir.path().join("long.wav");
    let args = [
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=300:sample_rate=8000",
        "-t",
        "180.3",
        "long.wav",
    ];
    crate::support::ffmpeg_in(dir.path(), &args);
    let (ok, _, stderr) = analyze(&[clip.to_str().expect("utf8")]);
    assert!(!ok);
    assert!(stderr.starts_with("error[video_too_long]"), "{stderr}");
    assert!(stderr.contains("180.3"), "{stderr}");
}
