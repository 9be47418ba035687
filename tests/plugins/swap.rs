//! Hot swap under load, the crash-loop breaker and custom lenses.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use brainscan::analysis::score_clip;
use brainscan::config::PluginConfig;
use brainscan::plugins::conformance::fixture_clip;
use brainscan::result::ScanResult;
use serde_json::{Value, json};

use brainscan::plugins::defaults::{LENS_STANDARD, LENS_STANDARD_VERSION};

use crate::kit::{clip_saying, kit, service, wasm};
use crate::support::NEXT_LENS_VERSION;

const NEXT_MARK: &str = " (v2.11)";

/// The lens-standard version that scored `r`, read from its output (the test kit's next
/// version marks every reason), checked against the version its provenance names.
fn version_that_ran(r: &ScanResult) -> String {
    let marked: Vec<bool> = r
        .timeline
        .iter()
        .flat_map(|s| s.reasons.values())
        .map(|reason| reason.ends_with(NEXT_MARK))
        .collect();
    assert!(!marked.is_empty());
    assert!(
        marked.iter().all(|m| *m == marked[0]),
        "one scan mixed two versions"
    );
    let ran = if marked[0] {
        NEXT_LENS_VERSION
    } else {
        LENS_STANDARD_VERSION
    };
    assert_eq!(
        r.provenance["plugins"][0]["version"], ran,
        "provenance must name the version whose output this is"
    );
    assert_eq!(r.provenance["plugins"][0]["name"], "lens-standard");
    ran.to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swapping_versions_under_load_fails_nothing_and_provenance_tells_the_truth() {
    let k = kit(PluginConfig::defaults()).await;
    k.registry
        .install(&wasm("lens_standard_next.wasm"), "upload", true)
        .await
        .expect("install the next version");
    let lenses: Vec<String> = vec![
        "attention".into(),
        "memory".into(),
        "purchase_intent".into(),
    ];
    let done = Arc::new(AtomicBool::new(false));
    let mut scans = Vec::new();
    for _ in 0..6 {
        let registry = k.registry.clone();
        let lenses = lenses.clone();
        let done = done.clone();
        scans.push(tokio::spawn(async move {
            let clip = fixture_clip(60);
            let mut versions = Vec::new();
            while !done.load(Ordering::Relaxed) || versions.len() < 20 {
                let r = score_clip(
                    &registry,
                    &clip,
                    &lenses,
                    json!({"model": "synthetic"}),
                    None,
                    "org_swap",
                )
                .await
                .expect("no scan may fail during a swap");
                versions.push(version_that_ran(&r));
            }
            versions
        }));
    }
    for _ in 0..25 {
        k.registry
            .activate("lens-standard", NEXT_LENS_VERSION)
            .await
            .expect("activate");
        tokio::time::sleep(Duration::from_millis(8)).await;
        let back = k
            .registry
            .rollback("lens:lens-standard")
            .await
            .expect("rollback");
        assert_eq!(back.to.as_deref(), Some(LENS_STANDARD));
        tokio::time::sleep(Duration::from_millis(8)).await;
    }
    done.store(true, Ordering::Relaxed);
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for s in scans {
        for v in s.await.expect("task") {
            *seen.entry(v).or_default() += 1;
        }
    }
    // Both versions really ran while the swaps went on.
    assert!(
        seen.get(LENS_STANDARD_VERSION).copied().unwrap_or(0) > 0,
        "{seen:?}"
    );
    assert!(
        seen.get(NEXT_LENS_VERSION).copied().unwrap_or(0) > 0,
        "{seen:?}"
    );
    let events = k.registry.events(200).await.expect("events");
    assert!(events.iter().filter(|e| e.action == "rollback").count() >= 25);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scans_through_the_service_finish_while_an_operator_swaps_and_rolls_back() {
    let svc = service(|c| c.queue.workers = 4).await;
    let key = svc.org("acme").await;
    svc.registry
        .install(&wasm("lens_standard_next.wasm"), "upload", true)
        .await
        .expect("install");
    let body = json!({"input": {"type": "video", "video_url": svc.media.url("/media/clip.mp4")}});
    let mut ids = Vec::new();
    for i in 0..16 {
        let r: Value = svc
            .http
            .post(format!("{}/api/v1/scans", svc.base))
            .bearer_auth(&key)
            .json(&body)
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        ids.push(r["scan_id"].as_str().expect("id").to_owned());
        if i % 2 == 0 {
            svc.registry
                .activate("lens-standard", NEXT_LENS_VERSION)
                .await
                .expect("activate");
        } else {
            svc.registry.rollback("lens").await.expect("rollback");
        }
    }
    for id in &ids {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let scan = loop {
            let s: Value = svc
                .http
                .get(format!("{}/api/v1/scans/{id}", svc.base))
                .bearer_auth(&key)
                .send()
                .await
                .expect("send")
                .json()
                .await
                .expect("json");
            if s["status"] != "queued" && s["status"] != "processing" {
                break s;
            }
            assert!(tokio::time::Instant::now() < deadline, "stuck: {s}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(scan["status"], "complete", "{scan}");
        let result: ScanResult = stored_result(&svc, id).await;
        version_that_ran(&result);
        assert_eq!(
            scan["provenance"], result.provenance,
            "the API shows the stored provenance"
        );
    }
    svc.stop().await;
}

async fn stored_result(svc: &crate::kit::Service, id: &str) -> ScanResult {
    let row = svc.app.db.get_scan_by_id(id).await.expect("scan");
    serde_json::from_str(row.result_json.as_deref().expect("stored result")).expect("result json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_looping_version_is_rolled_back_by_the_breaker() {
    let k = kit(PluginConfig::defaults()).await;
    for file in ["lens_custom.wasm", "hostile_flaky.wasm"] {
        let i = k
            .registry
            .install(&wasm(file), "upload", true)
            .await
            .expect(file);
        k.registry
            .activate(&i.manifest.name, &i.manifest.version)
            .await
            .expect("activate");
    }
    let calm = vec!["calm".to_owned()];
    let boom = clip_saying(20, "and then: boom");
    // 0.2.0 handles ordinary clips …
    let ok = score_clip(
        &k.registry,
        &fixture_clip(20),
        &calm,
        json!({}),
        None,
        "org_a",
    )
    .await
    .expect("ordinary clip");
    assert_eq!(ok.provenance["plugins"][0]["version"], "0.2.0");
    // … and traps on this one. Three strikes from one organisation's scans do not trip the
    // breaker (one tenant cannot roll back an operator's plugin for everyone) …
    for strike in 1..=4 {
        let org = if strike < 4 { "org_a" } else { "org_b" };
        let err = score_clip(&k.registry, &boom, &calm, json!({}), None, org)
            .await
            .expect_err("0.2.0 traps");
        assert_eq!(err.code, "plugin_failed");
        assert!(
            err.message
                .starts_with("plugin lens-custom@0.2.0 (lens) trapped"),
            "strike {strike}: {}",
            err.message
        );
        if strike == 3 {
            let events = k.registry.events(10).await.expect("events");
            assert!(
                events.iter().all(|e| e.action != "breaker"),
                "one organisation tripped the breaker: {events:?}"
            );
        }
    }
    // … a fourth from a second organisation does.
    let events = k.registry.events(10).await.expect("events");
    let trip = &events[0];
    assert_eq!(trip.action, "breaker");
    assert_eq!(trip.slot, "lens:lens-custom");
    assert_eq!(trip.from.as_deref(), Some("lens-custom@0.2.0"));
    assert_eq!(trip.to.as_deref(), Some("lens-custom@0.1.0"));
    assert!(
        trip.reason
            .contains("4 failures within 60 s from 2 organisations"),
        "{}",
        trip.reason
    );
    // The next scan of the same clip runs on the last good version.
    let r = score_clip(&k.registry, &boom, &calm, json!({}), None, "org_a")
        .await
        .expect("rolled back");
    assert_eq!(r.provenance["plugins"][0]["version"], "0.1.0");
    assert_eq!(r.lenses, vec!["calm".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_lens_is_offered_once_active_and_conflicts_are_refused() {
    let k = kit(PluginConfig::defaults()).await;
    let builtin = k.registry.snapshot().lenses();
    assert_eq!(
        builtin,
        ["attention", "memory", "purchase_intent", "manipulation"]
    );
    // Requested before it exists: dropped, like any unknown lens.
    let wanted = vec!["attention".to_owned(), "calm".to_owned()];
    // A clip of 11.03 s has 12 one-second rows: duration_sec reports the timeline's length,
    // as the spec defines it, not the media's fractional length.
    let mut clip = fixture_clip(12);
    clip.duration_sec = 11.03;
    let r = score_clip(&k.registry, &clip, &wanted, json!({}), None, "org_a")
        .await
        .expect("scan");
    assert_eq!(r.lenses, vec!["attention".to_owned()]);
    assert_eq!((r.timeline.len(), r.duration_sec), (12, 12.0));

    k.registry
        .install(&wasm("lens_custom.wasm"), "upload", true)
        .await
        .expect("install");
    assert!(
        !k.registry.snapshot().lenses().contains(&"calm".to_owned()),
        "installed is not active"
    );
    k.registry
        .activate("lens-custom", "0.1.0")
        .await
        .expect("activate");
    assert_eq!(
        k.registry.snapshot().lenses(),
        [
            "attention",
            "memory",
            "purchase_intent",
            "manipulation",
            "calm"
        ]
    );
    let r = score_clip(
        &k.registry,
        &fixture_clip(12),
        &wanted,
        json!({}),
        None,
        "org_a",
    )
    .await
    .expect("scan");
    assert_eq!(r.lenses, wanted);
    let calm: Vec<f64> = r.timeline.iter().map(|s| s.scores["calm"]).collect();
    assert_eq!(calm.len(), 12);
    assert!(calm.iter().all(|v| (0.0..=100.0).contains(v)));
    assert!(
        calm.windows(2).any(|w| w[0] != w[1]),
        "calm follows the networks: {calm:?}"
    );
    let names: Vec<&str> = r.provenance["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    // Lens plugins first (built-in, then custom), then moments; no manipulation plugin,
    // since that lens was not asked for.
    assert_eq!(names, ["lens-standard", "lens-custom", "moments-standard"]);

    // A second plugin may not take over a lens another active plugin provides.
    let other = k
        .registry
        .install(&wasm("hostile_trap.wasm"), "test", false)
        .await
        .expect("stored without checks");
    let err = k
        .registry
        .activate(&other.manifest.name, &other.manifest.version)
        .await
        .expect_err("conflict");
    assert_eq!(err.code(), "conflict");
    assert!(err.to_string().contains("calm"), "{err}");

    // Deactivated: the lens is gone from the offer again.
    k.registry
        .deactivate("lens-custom")
        .await
        .expect("deactivate");
    assert!(!k.registry.snapshot().lenses().contains(&"calm".to_owned()));
}

/// Buy moments come whenever reasons are on (spec), not only when `purchase_intent` was asked
/// for: the host scores that lens for the moments plugin and keeps it out of the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buy_moments_do_not_need_the_purchase_intent_lens() {
    let k = kit(PluginConfig::defaults()).await;
    let clip = fixture_clip(60);
    let only_attention = vec!["attention".to_owned()];
    let with_pi = vec!["attention".to_owned(), "purchase_intent".to_owned()];
    let a = score_clip(
        &k.registry,
        &clip,
        &only_attention,
        json!({}),
        None,
        "org_a",
    )
    .await
    .expect("scan");
    let b = score_clip(&k.registry, &clip, &with_pi, json!({}), None, "org_a")
        .await
        .expect("scan");
    assert_eq!(a.lenses, only_attention);
    for second in &a.timeline {
        assert_eq!(second.scores.keys().collect::<Vec<_>>(), ["attention"]);
    }
    assert!(
        a.moments.iter().all(|m| m.lens == "attention"),
        "{:?}",
        a.moments
    );
    let buy = |r: &ScanResult| serde_json::to_value(&r.buy_moments).expect("json");
    assert!(
        b.buy_moments.as_ref().is_some_and(|v| !v.is_empty()),
        "the fixture clip has a buy window"
    );
    assert_eq!(buy(&a), buy(&b));
}
