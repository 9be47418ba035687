//! `POST /analyze` through the service with the real plugin stage: it re-runs the active
//! manipulation plugin on the networks a scan stored — also for a scan created without the
//! `manipulation` lens — and the block agrees with what that scan would have shown.

use std::time::Duration;

use serde_json::{Value, json};

use crate::kit::service;

async fn call(
    http: &reqwest::Client,
    url: String,
    key: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let req = match body {
        Some(b) => http.post(url).json(b),
        None => http.get(url),
    };
    let res = req.bearer_auth(key).send().await.expect("send");
    let status = res.status().as_u16();
    (status, res.json().await.expect("json"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyze_reruns_the_manipulation_plugin_on_stored_networks() {
    let svc = service(|_| {}).await;
    let key = svc.org("acme").await;
    let url = |p: &str| format!("{}/api/v1{p}", svc.base);
    let media = svc.media.url("/media/clip.mp4");
    let mut ids = Vec::new();
    for lenses in [json!(["attention"]), json!(["attention", "manipulation"])] {
        let body = json!({"input": {"type": "video", "video_url": media}, "lenses": lenses});
        let (s, r) = call(&svc.http, url("/scans"), &key, Some(&body)).await;
        assert_eq!(s, 202, "{r}");
        ids.push(r["scan_id"].as_str().expect("id").to_owned());
    }
    let mut scans = Vec::new();
    for id in &ids {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let (_, s) = call(&svc.http, url(&format!("/scans/{id}")), &key, None).await;
            if s["status"] == "complete" {
                scans.push(s);
                break;
            }
            assert!(s["status"] != "error", "{s}");
            assert!(tokio::time::Instant::now() < deadline, "timed out: {s}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let (without, with) = (&scans[0], &scans[1]);
    assert!(
        without.get("manipulation").is_none(),
        "not scored, not shown"
    );
    assert!(without["summary"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(without["moments"].is_array());

    let (before_s, before) = call(&svc.http, url("/wallet"), &key, None).await;
    assert_eq!(before_s, 200);
    let (s, a) = call(
        &svc.http,
        url("/analyze"),
        &key,
        Some(&json!({"scan_id": ids[0]})),
    )
    .await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(a["scan_id"], ids[0].as_str());
    assert_eq!(a["plugin"]["name"], "manipulation-standard");
    let m = &a["result"]["manipulation"];
    let seconds = without["timeline"].as_array().expect("timeline").len();
    assert_eq!(m["timeline"].as_array().expect("timeline").len(), seconds);
    // The same clip (same stored networks) gives the same block as the scan that scored it.
    let (s, b) = call(
        &svc.http,
        url("/analyze"),
        &key,
        Some(&json!({"scan_id": ids[1]})),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["result"]["manipulation"], with["manipulation"]);
    assert_eq!(
        b["result"]["manipulation"], *m,
        "both scans stored the same networks"
    );
    let (_, after) = call(&svc.http, url("/wallet"), &key, None).await;
    assert_eq!(before, after, "analyze is never charged");

    let (s, e) = call(
        &svc.http,
        url("/analyze"),
        &key,
        Some(&json!({"scan_id": "qualia_run_nope_nope"})),
    )
    .await;
    assert_eq!(s, 404, "{e}");
    svc.stop().await;
}

/// Contract: the summary speaks only of the requested lenses. Purchase intent is scored for
/// buy moments whenever reasons are on, but a scan that asked for attention alone gets no
/// sentence about buying intent, and the summary's moment count is the moments it returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_speaks_only_of_the_requested_lenses() {
    let kit = crate::kit::kit(brainscan::config::PluginConfig::defaults()).await;
    let clip = brainscan::plugins::conformance::fixture_clip(40);
    let only = |lenses: &[&str]| {
        let lenses: Vec<String> = lenses.iter().map(|l| (*l).to_owned()).collect();
        let (registry, clip) = (kit.registry.clone(), clip.clone());
        async move {
            brainscan::analysis::score_clip(&registry, &clip, &lenses, json!({}), None, "org_test")
                .await
                .expect("scored")
        }
    };
    let attention = only(&["attention"]).await;
    let both = only(&["attention", "purchase_intent"]).await;
    assert!(
        both.summary.to_lowercase().contains("buying intent"),
        "the fixture must give purchase intent a sentence when it is requested: {}",
        both.summary
    );
    let text = attention.summary.to_lowercase();
    assert!(
        !text.contains("buying intent") && !text.contains("buy"),
        "{text}"
    );
    assert!(attention.moments.iter().all(|m| m.lens == "attention"));
    if let Some(count) = text
        .split("one of ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
    {
        assert_eq!(count, attention.moments.len(), "{text}");
    }
    // Buy moments are still given (from the basis series), the same as when requested.
    assert_eq!(
        attention.buy_moments.as_ref().map(Vec::len),
        both.buy_moments.as_ref().map(Vec::len)
    );
}
