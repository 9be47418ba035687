//! The local commands through the real binary, the model files, and the shipped statistics.

use std::process::Command;

use brainscan::inference::model::FaceSampling;
use brainscan::inference::prior::{CorpusClip, corpus_stats};
use brainscan::inference::{Model, Presence, Qualia};

use crate::support::{analyse_with, brainscan, ok, qualia, qualia_v1, real_media};

#[test]
fn scan_prints_seven_networks_per_second_as_json_and_as_a_table() {
    let clip = real_media().join("bigbuckbunny.mp4");
    let doc: serde_json::Value = serde_json::from_str(&ok(&brainscan(&[
        "scan",
        clip.to_str().expect("utf8"),
        "--json",
    ])))
    .expect("json");
    assert_eq!(doc["model"], "qualia-2.11.1");
    assert_eq!(doc["time_base"], "stimulus");
    assert_eq!(doc["seconds"], 6);
    assert_eq!(doc["modalities"]["video"], true);
    let rows = doc["networks"].as_array().expect("rows");
    assert_eq!(rows.len(), 6);
    for name in brainscan::result::NETWORKS {
        assert!(rows[3][name].as_f64().expect(name).is_finite());
    }
    let table = ok(&brainscan(&["scan", clip.to_str().expect("utf8")]));
    assert!(table.contains("qualia-2.11.1"), "{table}");
    assert_eq!(table.lines().count(), 2 + 6, "{table}");
}

/// A direct run prints the result and nothing else (issue: the local CLI, point 3). Without
/// `XDG_RUNTIME_DIR`, Mesa's lavapipe warns on stderr unless the binary provides a private
/// runtime folder; a failure is one line with a stable code, not a backtrace, even with
/// `RUST_BACKTRACE` set.
#[test]
fn a_direct_run_prints_only_the_result_and_an_error_is_one_line() {
    let clip = real_media().join("bigbuckbunny.mp4");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_brainscan"))
            .args(args)
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("BRAINSCAN_MODEL_DIR")
            .env_remove("BRAINSCAN_LOG")
            .env("RUST_BACKTRACE", "1")
            .output()
            .expect("brainscan runs")
    };
    let out = run(&["scan", clip.to_str().expect("utf8"), "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "stray stderr");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("only JSON on stdout");
    assert_eq!(doc["seconds"], 6);

    let out = run(&["scan", "/nonexistent/clip.mp4"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err, "error[not_found]: /nonexistent/clip.mp4: no such file\n",
        "one line with its code"
    );
    assert!(out.stdout.is_empty());

    let out = run(&[
        "scan",
        clip.to_str().expect("utf8"),
        "--models-dir",
        "/nonexistent/models",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error[not_found]: ") && err.contains("scripts/fetch-models"),
        "{err}"
    );
}

/// Shell completions and man pages are generated from the clap definitions, so every command
/// is in them (a command added without them would be missing from neither).
#[test]
fn completions_and_man_pages_list_every_command() {
    let commands = [
        "serve", "scan", "features", "model", "bench", "plugin", "admin",
    ];
    for (shell, marker) in [
        ("bash", "_brainscan()"),
        ("zsh", "#compdef brainscan"),
        ("fish", "complete -c brainscan"),
    ] {
        let script = ok(&brainscan(&["completions", shell]));
        assert!(script.contains(marker), "{shell}: {marker}");
        for c in commands {
            assert!(script.contains(c), "{shell} completions lack {c}");
        }
    }
    let bad = brainscan(&["completions", "cmd.exe"]);
    assert!(!bad.status.success());
    let page = ok(&brainscan(&["man"]));
    assert!(page.contains(".TH brainscan 1"), "{page}");
    for c in commands {
        assert!(page.contains(c), "the man page lacks {c}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    ok(&brainscan(&[
        "man",
        "--out",
        dir.path().to_str().expect("utf8"),
    ]));
    let scan = std::fs::read_to_string(dir.path().join("brainscan-scan.1")).expect("scan page");
    assert!(scan.contains("max\\-duration"), "{scan}");
}

#[test]
fn features_prints_a_csv_that_model_fit_reads_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let csv = ok(&brainscan(&[
        "features",
        real_media().join("trailer_bbb.mp4").to_str().expect("utf8"),
    ]));
    let header = csv.lines().next().expect("header");
    assert!(
        header.starts_with("second,contrast,colourfulness,edges,flicker"),
        "{header}"
    );
    for name in [
        "loudness",
        "speech_presence",
        "word_rate",
        "intelligibility",
        "semantic_change",
        "axis_social",
        "axis_pressure",
        "axis_evidence",
        "axis_product",
        "video_present",
    ] {
        assert!(header.split(',').any(|c| c == name), "{name} in {header}");
    }
    assert!(header.ends_with("has_video,has_audio,has_speech"));
    assert_eq!(csv.lines().count(), 1 + 56);
    // Fitting 37 features needs more than one 56 s clip: the round trip uses v1's 27.
    let v1 = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/qualia/v1");
    let csv = ok(&brainscan(&[
        "features",
        "--model",
        v1,
        real_media().join("trailer_bbb.mp4").to_str().expect("utf8"),
    ]));
    std::fs::write(d.join("f.csv"), &csv).expect("write");
    // Targets: a made-up network series that follows loudness and motion, to exercise fit.
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|c| c.parse().expect("num")).collect())
        .collect();
    let mut targets = String::from(
        "second,Visual,Somatomotor,Dorsal Attention,Ventral Attention,Limbic,Frontoparietal,Default Mode\n",
    );
    for (t, r) in rows.iter().enumerate() {
        let (motion, level) = (r[5], r[10]);
        targets.push_str(&format!(
            "{t},{},{},{},0,0,0,{}\n",
            motion * 10.0,
            level / 10.0,
            motion * 5.0,
            -level / 20.0
        ));
    }
    std::fs::write(d.join("y.csv"), targets).expect("write");
    let out = d.join("fitted");
    let report = ok(&brainscan(&[
        "model",
        "fit",
        "--features",
        d.join("f.csv").to_str().expect("utf8"),
        "--targets",
        d.join("y.csv").to_str().expect("utf8"),
        "--out",
        out.to_str().expect("utf8"),
        "--version",
        "trial-1",
        "--model",
        v1,
    ]));
    assert!(report.contains("held-out Pearson r"), "{report}");
    let fitted = Model::load(&out).expect("the fitted folder loads");
    assert_eq!(fitted.id(), "qualia-trial-1");
    // Fitted from a prior model (v1 has hand-set weights): ridge shrank toward them.
    assert_eq!(fitted.manifest.provenance["source"], "prior+fitted");
    // Scanning with the fitted model records its version.
    let doc: serde_json::Value = serde_json::from_str(&ok(&brainscan(&[
        "scan",
        "--model",
        out.to_str().expect("utf8"),
        "--json",
        real_media().join("jfk.wav").to_str().expect("utf8"),
    ])))
    .expect("json");
    assert_eq!(doc["model"], "qualia-trial-1");
}

#[test]
fn a_tampered_or_foreign_model_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = Model::embedded().expect("embedded");
    good.write(dir.path()).expect("write");
    let mut bytes = std::fs::read(dir.path().join("model.safetensors")).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(dir.path().join("model.safetensors"), &bytes).expect("write");
    let out = brainscan(&[
        "model",
        "show",
        "--model",
        dir.path().to_str().expect("utf8"),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("checksum"), "{err}");
    // A model for another feature set (a renamed feature) is refused even with a valid checksum.
    let mut foreign = good.clone();
    foreign.manifest.features[3].name = "sharpness".into();
    foreign.manifest.weights.clear();
    foreign.write(dir.path()).expect("write");
    let err = Model::load(dir.path()).expect_err("foreign features");
    assert!(err.to_string().contains("feature list"), "{err}");
    // A face-sampling block that reads outside the models folder, or detail frames smaller
    // than the model's own, is refused before anything runs.
    let escapes: fn(&mut FaceSampling) = |f| f.cascade = "../../etc/passwd".into();
    let smaller: fn(&mut FaceSampling) = |f| f.width = 80;
    for spoil in [escapes, smaller] {
        let mut bad = good.clone();
        spoil(
            bad.manifest
                .sampling
                .faces
                .as_mut()
                .expect("v2.2 samples faces"),
        );
        bad.write(dir.path()).expect("write");
        let err = Model::load(dir.path()).expect_err("bad face sampling");
        assert!(err.to_string().contains("unsupported sampling"), "{err}");
    }
}

#[tokio::test]
async fn scan_fetches_urls_through_the_ssrf_guard() {
    let bytes = std::fs::read(real_media().join("jfk.wav")).expect("read");
    let app = axum::Router::new().route(
        "/jfk.wav",
        axum::routing::get(move || {
            let b = bytes.clone();
            async move { ([(http::header::CONTENT_TYPE, "audio/wav")], b) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    let url = format!("http://{addr}/jfk.wav");
    let refused = tokio::task::spawn_blocking({
        let url = url.clone();
        move || brainscan(&["scan", &url])
    })
    .await
    .expect("join");
    assert!(!refused.status.success(), "loopback is refused by default");
    let allowed = tokio::task::spawn_blocking(move || {
        brainscan(&["scan", "--json", "--allow-loopback-fetch", &url])
    })
    .await
    .expect("join");
    let doc: serde_json::Value = serde_json::from_str(&ok(&allowed)).expect("json");
    assert_eq!(doc["seconds"], 11);
    assert_eq!(doc["modalities"]["audio"], true);
}

/// The model's z-scoring statistics must be what the current kernels (and, for v2, the
/// speech features) compute on the corpus that its model.json names (rebuild with
/// scripts/build-qualia-prior after changing a feature).
/// `shared`: `q` is the default model, whose analyses of the corpus other tests share
/// ([`crate::support::analyse_shared`]).
async fn check_shipped_statistics(q: &Qualia, shared: bool) {
    let model = &q.model;
    let corpus = model.manifest.provenance["corpus"]
        .as_array()
        .expect("corpus list")
        .clone();
    let mut clips = Vec::new();
    for (entry, media) in corpus.iter().zip(crate::support::corpus_clips(model)) {
        let out = if shared {
            crate::support::analyse_shared(&media).await
        } else {
            analyse_with(q, &media).await
        };
        assert_eq!(
            entry["seconds"].as_u64(),
            Some(out.seconds as u64),
            "{}",
            media.display()
        );
        clips.push(CorpusClip {
            features: out.features,
            presence: Presence {
                video: out.modalities.video,
                audio: out.modalities.audio,
                speech: out.modalities.speech,
            },
        });
    }
    let (mean, mut std) = corpus_stats(&clips, &model.feature_list(), &model.absent);
    // v2 subtracts a drive feature's no-stimulus value, not its corpus mean, and its content
    // features' spread is at least their construction unit.
    let mean = if model.manifest.format >= 2 {
        let units = brainscan::inference::language::content_units(
            crate::support::listener().embedder.as_ref(),
            &model.axes,
        )
        .expect("content units");
        brainscan::inference::prior::raise_to_units(&mut std, &model.feature_list(), &units);
        brainscan::inference::v2::centres(&mean)
    } else {
        mean
    };
    for (k, name) in model.features.iter().enumerate() {
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-4 * b.abs().max(1.0);
        assert!(
            close(mean[k], model.mean[k]),
            "{}: {name}: mean {} vs shipped {}",
            model.id(),
            mean[k],
            model.mean[k]
        );
        assert!(
            close(std[k], model.std[k]),
            "{}: {name}: std {} vs shipped {}",
            model.id(),
            std[k],
            model.std[k]
        );
    }
}

#[tokio::test]
async fn the_shipped_statistics_are_those_of_the_reference_corpus() {
    check_shipped_statistics(&qualia(), true).await;
    check_shipped_statistics(&qualia_v1(), false).await;
}

#[test]
fn no_adapter_is_a_clear_error_naming_the_package() {
    // DX12 does not exist on Linux: with the backend forced to it, no adapter can be found.
    let out = Command::new(env!("CARGO_BIN_EXE_brainscan"))
        .args(["scan", real_media().join("jfk.wav").to_str().expect("utf8")])
        .env("WGPU_BACKEND", "dx12")
        .output()
        .expect("brainscan runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no GPU adapter found") && err.contains("mesa-vulkan-drivers"),
        "{err}"
    );
}

#[test]
fn long_clips_need_max_duration_and_then_stream_through() {
    // Ten minutes of a moving test pattern and a tone: over the 3-minute default, inside the
    // 30-minute local bound.
    let dir = tempfile::tempdir().expect("tempdir");
    crate::support::ffmpeg(
        dir.path(),
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=160x90:r=10:d=600",
            "-f",
            "lavfi",
            "-i",
            "sine=f=330:r=16000:d=600",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-c:a",
            "aac",
            "long.mp4",
        ],
    );
    let clip = dir.path().join("long.mp4");
    let path = clip.to_str().expect("utf8");
    let refused = brainscan(&["scan", path]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("--max-duration"), "{err}");
    let csv = ok(&brainscan(&["features", "--max-duration", "900", path]));
    assert_eq!(csv.lines().count(), 1 + 600);
    let over = brainscan(&["features", "--max-duration", "1801", path]);
    assert!(!over.status.success(), "more than 30 minutes is refused");
}

/// `bench` (like `model corpus` and `model calibrate`) shows a step bar on a terminal and
/// nothing extra when stderr is a pipe. The terminal is a real pseudo-terminal from util-linux's
/// `script`.
#[test]
fn bench_shows_its_steps_on_a_terminal_and_stays_quiet_in_a_pipe() {
    let clip = real_media().join("bikes.mp4");
    let clip = clip.to_str().expect("utf8");
    let piped = brainscan(&["bench", clip, "--runs", "1"]);
    let stdout = ok(&piped);
    assert!(stdout.contains("v1 full scan"), "{stdout}");
    // Where Whisper ran: the CPU, as `auto` decides on lavapipe.
    assert!(stdout.contains("whisper on      cpu"), "{stdout}");
    // And the face search, likewise.
    assert!(stdout.contains("faces on        cpu"), "{stdout}");
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(!stderr.contains("measuring"), "a bar in a pipe: {stderr}");
    let command = format!("{} bench {clip} --runs 1", env!("CARGO_BIN_EXE_brainscan"));
    let tty = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("BRAINSCAN_MODEL_DIR")
        .output()
        .expect("script (util-linux) runs");
    let text = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{text}");
    // Four steps for one run: decode, scan, the v1 baseline, the kernels alone.
    for step in ["measuring", "decode only", "/4", "v1 full scan"] {
        assert!(text.contains(step), "no {step:?} on the terminal: {text}");
    }
}
