//! The hostile-plugin battery: each is refused at upload with a clear error, and when one is
//! run anyway (loaded without the checks) it fails only its own call while a normal call
//! beside it succeeds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use brainscan::config::PluginConfig;
use brainscan::plugins::conformance::fixture_clip;
use brainscan::plugins::{CallFailure, PluginRuntime};

use crate::kit::{kit, wasm};

/// (component, the upload error code, words the message must contain).
const REFUSED: &[(&str, &str, &str)] = &[
    ("hostile_loop.wasm", "conformance_failed", "ran out of fuel"),
    ("hostile_oom.wasm", "conformance_failed", "memory limit"),
    ("hostile_trap.wasm", "conformance_failed", "trapped"),
    ("hostile_huge.wasm", "conformance_failed", "over the cap"),
    ("hostile_nan.wasm", "conformance_failed", "invalid output"),
    (
        "hostile_seconds.wasm",
        "conformance_failed",
        "invalid output",
    ),
    (
        "other_world.wasm",
        "unsupported_world",
        "does not export exactly one brainscan plugin world",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_hostile_plugin_is_refused_at_upload() {
    let k = kit(PluginConfig::defaults()).await;
    for (file, code, words) in REFUSED {
        let err = k
            .registry
            .install(&wasm(file), "upload", true)
            .await
            .expect_err(file);
        assert_eq!(err.code(), *code, "{file}: {err}");
        assert!(err.to_string().contains(words), "{file}: {err}");
    }
    // A core module (what `cargo build --target wasm32-unknown-unknown` makes), random bytes
    // and an empty file never reach the compiler's later stages.
    let core_module = b"\0asm\x01\0\0\0".to_vec();
    let err = k
        .registry
        .install(&core_module, "upload", true)
        .await
        .expect_err("core module");
    assert_eq!(err.code(), "not_a_component", "{err}");
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let err = k
        .registry
        .install(&noise, "upload", true)
        .await
        .expect_err("noise");
    assert_eq!(err.code(), "invalid_wasm", "{err}");
    let err = k
        .registry
        .install(&[], "upload", true)
        .await
        .expect_err("empty");
    assert_eq!(err.code(), "invalid_wasm", "{err}");

    // Nothing of it was stored: only the built-in defaults are installed.
    let list = k.registry.list().await.expect("list");
    let mut ids: Vec<String> = list.iter().map(|l| l.manifest.id()).collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            brainscan::plugins::defaults::LENS_STANDARD,
            brainscan::plugins::defaults::MANIPULATION_STANDARD,
            brainscan::plugins::defaults::MOMENTS_STANDARD
        ]
    );
}

#[tokio::test]
async fn a_file_over_the_size_limit_is_refused_before_parsing() {
    let mut config = PluginConfig::defaults();
    config.plugin_max_bytes = 1024;
    let k = kit(PluginConfig::defaults()).await;
    let runtime = PluginRuntime::new(config, None).expect("runtime");
    let err = runtime
        .load(&wasm("lens_custom.wasm"), "upload")
        .expect_err("too large");
    assert_eq!(err.code(), "payload_too_large", "{err}");
    drop(k);
}

/// (component, the limit its call must hit).
const RUNTIME_FAILURES: &[(&str, &str)] = &[
    ("hostile_loop.wasm", "fuel"),
    ("hostile_oom.wasm", "memory"),
    ("hostile_trap.wasm", "trap"),
    ("hostile_huge.wasm", "output"),
    ("hostile_nan.wasm", "invalid_output"),
    ("hostile_seconds.wasm", "invalid_output"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hostile_call_fails_alone_while_a_normal_call_beside_it_succeeds() {
    let runtime = PluginRuntime::new(PluginConfig::defaults(), None).expect("runtime");
    let standard = Arc::new(
        runtime
            .load(&wasm("lens_standard.wasm"), "test")
            .expect("lens-standard"),
    );
    let clip = fixture_clip(120);
    let lenses: Vec<String> = standard.manifest.provides.clone();
    let (baseline, _) = runtime
        .score(&standard, &clip, &lenses)
        .await
        .expect("baseline");
    for (file, limit) in RUNTIME_FAILURES {
        let hostile = Arc::new(runtime.load(&wasm(file), "test").expect(file));
        let provides = hostile.manifest.provides.clone();
        let (bad, good) = tokio::join!(
            runtime.score(&hostile, &clip, &provides),
            runtime.score(&standard, &clip, &lenses),
        );
        let err = bad.expect_err(file);
        assert_eq!(err.failure.limit(), *limit, "{file}: {err}");
        assert_eq!(err.name, hostile.manifest.name);
        assert_eq!(err.version, hostile.manifest.version);
        let message = err.to_string();
        assert!(
            message.starts_with(&format!(
                "plugin {}@{} (lens)",
                hostile.manifest.name, hostile.manifest.version
            )),
            "{message}"
        );
        let (series, _) = good.unwrap_or_else(|e| panic!("normal call beside {file}: {e}"));
        assert_eq!(series, baseline, "beside {file}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_deadline_is_stopped_by_the_epoch_not_by_fuel() {
    let mut config = PluginConfig::defaults();
    // Fuel that would last minutes: only the wall-clock deadline can stop the loop.
    config.plugin_fuel_base = 1 << 50;
    config.plugin_timeout_ms = 300;
    let runtime = PluginRuntime::new(config, None).expect("runtime");
    let hostile = Arc::new(
        runtime
            .load(&wasm("hostile_loop.wasm"), "test")
            .expect("load"),
    );
    let started = Instant::now();
    let err = runtime
        .score(&hostile, &fixture_clip(10), &hostile.manifest.provides)
        .await
        .expect_err("loop");
    assert_eq!(err.failure, CallFailure::Timeout { ms: 300 }, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_host_refuses_bad_input_before_it_enters_wasm() {
    let runtime = PluginRuntime::new(PluginConfig::defaults(), None).expect("runtime");
    let standard = Arc::new(
        runtime
            .load(&wasm("lens_standard.wasm"), "test")
            .expect("load"),
    );
    let mut clip = fixture_clip(5);
    clip.networks[2][3] = f32::NAN;
    let err = runtime
        .score(&standard, &clip, &standard.manifest.provides)
        .await
        .expect_err("nan input");
    assert_eq!(err.failure.limit(), "input", "{err}");
    // Not a plugin fault: it must not count towards the crash-loop breaker.
    assert!(!err.failure.is_plugin_fault());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_lens_plugin_is_deterministic_across_runtimes() {
    let a = PluginRuntime::new(PluginConfig::defaults(), None).expect("runtime");
    let b = PluginRuntime::new(PluginConfig::defaults(), None).expect("runtime");
    let pa = Arc::new(a.load(&wasm("lens_standard.wasm"), "t").expect("load"));
    let pb = Arc::new(b.load(&wasm("lens_standard.wasm"), "t").expect("load"));
    let clip = fixture_clip(180);
    let lenses = pa.manifest.provides.clone();
    let (first, s1) = a.score(&pa, &clip, &lenses).await.expect("first");
    let (second, s2) = b.score(&pb, &clip, &lenses).await.expect("second");
    assert_eq!(first, second);
    // Fuel counts instructions: the same input costs exactly the same on any machine.
    assert_eq!(s1.fuel_used, s2.fuel_used);
    assert_eq!(first.len(), 4);
    for s in &first {
        assert_eq!(s.seconds.len(), 180);
        assert!(
            s.seconds
                .iter()
                .all(|x| (0.0..=100.0).contains(&x.score) && !x.reason.is_empty())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_moments_and_manipulation_plugins_are_deterministic_and_consistent() {
    let a = PluginRuntime::new(PluginConfig::defaults(), None).expect("runtime");
    let b = PluginRuntime::new(PluginConfig::defaults(), None).expect("runtime");
    let clip = fixture_clip(180);
    let lens = Arc::new(a.load(&wasm("lens_standard.wasm"), "t").expect("load"));
    let lenses = lens.manifest.provides.clone();
    let (series, _) = a.score(&lens, &clip, &lenses).await.expect("score");

    let ma = Arc::new(a.load(&wasm("moments_standard.wasm"), "t").expect("load"));
    let mb = Arc::new(b.load(&wasm("moments_standard.wasm"), "t").expect("load"));
    let (d1, s1) = a.detect(&ma, &clip, &series).await.expect("detect");
    let (d2, s2) = b.detect(&mb, &clip, &series).await.expect("detect");
    assert_eq!(d1, d2);
    assert_eq!(s1.fuel_used, s2.fuel_used);
    assert!(!d1.moments.is_empty(), "the fixture has sharp events");
    for m in &d1.moments {
        let s = series.iter().find(|s| s.lens == m.lens).expect("lens");
        assert!((m.second as usize) < 180 && m.second >= 1);
        assert!((m.to - f64::from(s.seconds[m.second as usize].score)).abs() < 0.051);
        assert!((m.delta - (m.to - m.from)).abs() < 1e-9);
        assert!(m.z.abs() >= 1.75, "{m:?}");
        assert!(m.reason.starts_with(&m.brain_reason));
    }
    assert!(
        d1.summary
            .ends_with("not a measurement of any real audience.")
    );

    let pa = Arc::new(
        a.load(&wasm("manipulation_standard.wasm"), "t")
            .expect("load"),
    );
    let pb = Arc::new(
        b.load(&wasm("manipulation_standard.wasm"), "t")
            .expect("load"),
    );
    let (m1, f1) = a.analyze(&pa, &clip).await.expect("analyze");
    let (m2, f2) = b.analyze(&pb, &clip).await.expect("analyze");
    assert_eq!(m1, m2);
    assert_eq!(f1.fuel_used, f2.fuel_used);
    // conversion_risk is the mean of the manipulation lens (one decimal each way).
    let lens_mean = series
        .iter()
        .find(|s| s.lens == "manipulation")
        .map(|s| s.seconds.iter().map(|x| f64::from(x.score)).sum::<f64>() / 180.0)
        .expect("manipulation lens");
    assert!(
        (m1.conversion_risk - lens_mean).abs() < 0.1,
        "{} vs {lens_mean}",
        m1.conversion_risk
    );
    assert_eq!(m1.timeline.len(), 180);
    assert!(
        !m1.tactics.is_empty(),
        "the fixture transcript has persuasion phrases"
    );
}
