use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use crate::support::TestApp;

async fn complete_one(t: &TestApp, org: &crate::support::Org) -> String {
    let (s, b) = t.submit_tone(org, json!({})).await;
    assert_eq!(s.as_u16(), 202, "{b}");
    let id = b["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");
    id
}

fn money(w: &Value) -> (f64, f64, f64, i64) {
    (
        w["deposit_balance_usd"].as_f64().expect("deposit"),
        w["free_credit_remaining_usd"].as_f64().expect("free"),
        w["total_available_usd"].as_f64().expect("total"),
        w["scans_remaining_estimate"].as_i64().expect("estimate"),
    )
}

#[tokio::test]
async fn wallet_has_every_field() {
    let t = TestApp::start().await;
    t.clock.set(
        Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0)
            .single()
            .expect("t"),
    );
    let org = t.org("acme", 2_000).await;
    let w = t.wallet(&org).await;
    assert_eq!(
        w,
        json!({
            "object": "wallet", "currency": "usd",
            "deposit_balance_usd": 20.0, "free_credit_remaining_usd": 2.5, "free_credit_monthly_usd": 2.5,
            "free_credit_period_start": "2026-11-01", "total_available_usd": 22.5,
            "reserved_usd": 0.0, "price_per_scan_usd": {"qualia": 2.5}, "scans_remaining_estimate": 9
        })
    );
    t.stop().await;
}

#[tokio::test]
async fn free_credit_then_deposit_then_402_and_month_rollover() {
    let t = TestApp::start().await;
    t.clock.set(
        Utc.with_ymd_and_hms(2026, 11, 30, 23, 0, 0)
            .single()
            .expect("t"),
    );
    let org = t.org("acme", 300).await; // $3.00 deposit + $2.50 free = two scans
    assert_eq!(money(&t.wallet(&org).await), (3.0, 2.5, 5.5, 2));

    let first = complete_one(&t, &org).await;
    // Completed but not fetched: nothing charged yet, so the total is still deposit + free
    // (the spec's formula), but the scan is owed: it is reserved, and the estimate of scans
    // a new create would accept is net of it.
    let w = t.wallet(&org).await;
    assert_eq!(money(&w), (3.0, 2.5, 5.5, 1));
    assert_eq!(w["reserved_usd"], 2.5);
    let second = complete_one(&t, &org).await;
    // Two owed scans ($5.00) leave $0.50: the wallet says no scan is left, and a third is
    // refused before any work, as it predicts.
    let w = t.wallet(&org).await;
    assert_eq!(money(&w), (3.0, 2.5, 5.5, 0));
    assert_eq!(w["reserved_usd"], 5.0);
    let (s, err) = t.submit_tone(&org, json!({})).await;
    assert_eq!(
        (s.as_u16(), err["error"].as_str()),
        (402, Some("insufficient_balance")),
        "{err}"
    );
    // Refused before the media host is asked anything: no probe for a caller who cannot pay.
    let counted = t.media.url("/flaky/tone.wav?fail=0");
    let (s, _) = t.submit_url(&org, "audio", &counted).await;
    assert_eq!(s.as_u16(), 402);
    let hits = t.media.state.hits.lock().expect("lock").clone();
    assert_eq!(hits.get("flaky/tone.wav/0"), None, "{hits:?}");

    // First fetch settles: free credit first. The second scan is still reserved.
    let (s, _) = t.get(&org, &format!("/scans/{first}")).await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(money(&t.wallet(&org).await), (3.0, 0.0, 3.0, 0));
    // Second fetch of the same scan charges nothing more.
    t.get(&org, &format!("/scans/{first}")).await;
    assert_eq!(money(&t.wallet(&org).await), (3.0, 0.0, 3.0, 0));
    // The next scan comes out of the deposit.
    t.get(&org, &format!("/scans/{second}")).await;
    assert_eq!(money(&t.wallet(&org).await), (0.5, 0.0, 0.5, 0));
    let (s, _) = t.submit_tone(&org, json!({})).await;
    assert_eq!(s.as_u16(), 402);

    // December 1st (UTC): a new month's free credit.
    t.clock.set(
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 1)
            .single()
            .expect("t"),
    );
    let w = t.wallet(&org).await;
    assert_eq!(money(&w), (0.5, 2.5, 3.0, 1));
    assert_eq!(w["free_credit_period_start"], "2026-12-01");
    let third = complete_one(&t, &org).await;
    t.get(&org, &format!("/scans/{third}")).await;
    assert_eq!(money(&t.wallet(&org).await), (0.5, 0.0, 0.5, 0));
    for id in [&first, &second, &third] {
        assert_eq!(t.app.db.charge_count(id).await.expect("count"), 1);
    }
    t.stop().await;
}

#[tokio::test]
async fn split_charge_across_free_credit_and_deposit_is_exact() {
    let t = TestApp::start().await;
    let org = t.org("acme", 1_000).await;
    let ids = [
        complete_one(&t, &org).await,
        complete_one(&t, &org).await,
        complete_one(&t, &org).await,
    ];
    for id in &ids {
        t.get(&org, &format!("/scans/{id}")).await;
    }
    // 3 x 2.50 = 7.50 = 2.50 free + 5.00 deposit.
    assert_eq!(money(&t.wallet(&org).await), (5.0, 0.0, 5.0, 2));
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_first_fetches_charge_exactly_once() {
    let t = TestApp::start().await;
    let org = t.org("acme", 1_000).await;
    let id = complete_one(&t, &org).await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (http, url, key, barrier) = (
            t.http.clone(),
            t.url(&format!("/scans/{id}")),
            org.key.clone(),
            barrier.clone(),
        );
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let r = http.get(url).bearer_auth(key).send().await.expect("send");
            (r.status().as_u16(), r.json::<Value>().await.expect("json"))
        }));
    }
    for task in tasks {
        let (status, body) = task.await.expect("join");
        assert_eq!(status, 200);
        assert_eq!(body["status"], "complete");
    }
    assert_eq!(t.app.db.charge_count(&id).await.expect("count"), 1);
    assert_eq!(money(&t.wallet(&org).await), (10.0, 0.0, 10.0, 4));
    // The scan is in the organisation's memory exactly once.
    let (_, intel) = t.get(&org, "/intelligence").await;
    assert_eq!(intel["scan_count"], 1);
    t.stop().await;
}

/// The scan's entry in the organisation's list.
async fn listed(t: &TestApp, org: &crate::support::Org, id: &str) -> Value {
    let (_, list) = t.get(org, "/scans").await;
    list["scans"]
        .as_array()
        .expect("scans")
        .iter()
        .find(|s| s["scan_id"] == id)
        .expect("listed")
        .clone()
}

/// Waits until the media server has received `n` webhook deliveries.
async fn hooks_received(t: &TestApp, n: usize) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let hooks = t.media.state.hooks.lock().expect("lock").clone();
        if hooks.len() >= n {
            return hooks
                .iter()
                .map(|(_, body)| serde_json::from_slice(body).expect("json body"))
                .collect();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no webhook delivery"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A completed result is charged once, at the first moment it leaves the service, whichever
/// route that is: the webhook body, `POST /analyze`, or `GET`. The list does not show an
/// uncharged result's summary.
#[tokio::test]
async fn every_route_that_releases_a_result_charges_it_once() {
    let t = TestApp::start().await;
    let org = t.org("acme", 2_000).await;

    // The webhook delivers the whole result: that is the release.
    let hook = t.media.url("/hook");
    let (_, b) = t.submit_tone(&org, json!({"webhook_url": hook})).await;
    let by_hook = b["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&by_hook).await, "complete");
    let delivered = hooks_received(&t, 1).await;
    assert_eq!(delivered[0]["status"], "complete");
    assert!(delivered[0]["timeline"].is_array(), "{}", delivered[0]);
    assert_eq!(t.charges_after_delivery(&by_hook).await, 1);
    t.get(&org, &format!("/scans/{by_hook}")).await;
    assert_eq!(t.app.db.charge_count(&by_hook).await.expect("count"), 1);

    // Before any fetch, the list shows only where the scan stands.
    let by_analyze = complete_one(&t, &org).await;
    let entry = listed(&t, &org, &by_analyze).await;
    assert_eq!(entry["status"], "complete");
    assert!(
        entry["summary"]
            .as_str()
            .expect("summary")
            .starts_with("Complete: fetch"),
        "{entry}"
    );
    assert_eq!(t.app.db.charge_count(&by_analyze).await.expect("count"), 0);
    // POST /analyze reads part of the result: charged, once.
    let (s, r) = t
        .post(&org, "/analyze", &json!({"scan_id": by_analyze}))
        .await;
    assert_eq!(s.as_u16(), 200, "{r}");
    assert_eq!(t.app.db.charge_count(&by_analyze).await.expect("count"), 1);
    t.post(&org, "/analyze", &json!({"scan_id": by_analyze}))
        .await;
    let (_, scan) = t.get(&org, &format!("/scans/{by_analyze}")).await;
    assert_eq!(t.app.db.charge_count(&by_analyze).await.expect("count"), 1);
    // Charged: the list now carries the result's own summary.
    let entry = listed(&t, &org, &by_analyze).await;
    assert_eq!(entry["summary"], scan["summary"], "{entry}");
    // The list reads the summary column and never loads a result.
    let (_, rows) = t.app.db.list_scans(&org.id, 100, 0).await.expect("list");
    assert!(rows.iter().all(|r| r.result_json.is_none()));
    let row = rows.iter().find(|r| r.id == by_analyze).expect("row");
    assert_eq!(row.summary.as_deref(), scan["summary"].as_str());

    // Two scans charged, $5.00: $2.50 free credit and $2.50 of the deposit.
    assert_eq!(money(&t.wallet(&org).await), (17.5, 0.0, 17.5, 7));
    t.stop().await;
}

/// The webhook delivery and client fetches racing for the same completed scan: one charge.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_webhook_racing_fetches_charges_once() {
    let t = TestApp::start().await;
    let org = t.org("acme", 2_000).await;
    let hook = t.media.url("/hook");
    let (_, b) = t.submit_tone(&org, json!({"webhook_url": hook})).await;
    let id = b["scan_id"].as_str().expect("id").to_owned();
    // Fetchers poll from before completion, so they hit the scan as the webhook job starts.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (http, url, key) = (
            t.http.clone(),
            t.url(&format!("/scans/{id}")),
            org.key.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let r = http.get(&url).bearer_auth(&key).send().await.expect("send");
                let v: Value = r.json().await.expect("json");
                if v["status"] == "complete" {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("join");
    }
    hooks_received(&t, 1).await;
    assert_eq!(t.app.db.charge_count(&id).await.expect("count"), 1);
    assert_eq!(money(&t.wallet(&org).await).2, 20.0);
    t.stop().await;
}

/// `GET /scans/{id}` of a completed scan: the first fetch charges and fills the in-process
/// cache of rendered bodies; later fetches are served from it, byte for byte, with no second
/// charge. An in-flight scan is never cached, and each public base (Host) has its own body.
#[tokio::test]
async fn completed_bodies_are_cached_after_the_charge_and_never_before() {
    let t = TestApp::start_with(
        // The fetches below name a host of their own.
        |c| c.http.allowed_hosts = vec!["api.example.test".into(), "other.example.test".into()],
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 1_000).await;
    let (s, b) = t.submit_tone(&org, json!({})).await;
    assert_eq!(s.as_u16(), 202, "{b}");
    let id = b["scan_id"].as_str().expect("id").to_owned();
    let (_, early) = t.get(&org, &format!("/scans/{id}")).await;
    if early["status"] != "complete" {
        assert_eq!(
            t.app.rendered.entries().await,
            0,
            "an in-flight scan was cached"
        );
    }
    assert_eq!(t.wait_final(&id).await, "complete");
    let fetch = |host: &'static str| {
        let (http, url, key) = (
            t.http.clone(),
            t.url(&format!("/scans/{id}")),
            org.key.clone(),
        );
        async move {
            let r = http
                .get(url)
                .bearer_auth(key)
                .header("host", host)
                .send()
                .await
                .expect("send");
            assert_eq!(r.status().as_u16(), 200);
            assert_eq!(r.headers()["content-type"], "application/json");
            r.bytes().await.expect("body")
        }
    };
    let first = fetch("api.example.test").await;
    assert_eq!(t.app.db.charge_count(&id).await.expect("count"), 1);
    assert_eq!(t.app.rendered.entries().await, 1);
    let second = fetch("api.example.test").await;
    assert_eq!(
        first, second,
        "the cached body differs from the rendered one"
    );
    let parsed: Value = serde_json::from_slice(&second).expect("json");
    assert_eq!(parsed["status"], "complete");
    assert_eq!(parsed["scan_id"], id.as_str());
    fetch("other.example.test").await;
    assert_eq!(
        t.app.rendered.entries().await,
        2,
        "one body per public base"
    );
    assert_eq!(t.app.db.charge_count(&id).await.expect("count"), 1);
    assert_eq!(money(&t.wallet(&org).await).3, 4, "charged once");
    t.stop().await;
}

/// Billing: a route that fails charges nothing. `GET /compare` with a missing or unfinished
/// `b` leaves `a` uncharged (both are looked up before either is settled), and `POST
/// /analyze` that cannot produce its block leaves the scan uncharged.
#[tokio::test]
async fn compare_and_analyze_charge_only_when_they_answer() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let scan = |lenses: Value| {
        let t = &t;
        let org = &org;
        async move {
            let (s, b) = t.submit(org, "clip.mp4", json!({ "lenses": lenses })).await;
            assert_eq!(s.as_u16(), 202, "{b}");
            let id = b["scan_id"].as_str().expect("id").to_owned();
            assert_eq!(t.wait_final(&id).await, "complete");
            id
        }
    };
    let charged = |id: String| {
        let t = &t;
        async move {
            t.app
                .db
                .get_scan_by_id(&id)
                .await
                .expect("scan")
                .charged_at
                .is_some()
        }
    };
    let a = scan(json!(["attention"])).await;
    let (s, r) = t
        .get(
            &org,
            &format!("/compare?a={a}&b=qualia_run_missing0000000000"),
        )
        .await;
    assert_eq!(s.as_u16(), 404, "{r}");
    assert!(!charged(a.clone()).await, "a missing b charged a");
    // b not finished yet (its media still downloading): 409, and still nothing charged.
    let (_, running) = t
        .submit_url(&org, "video", &t.media.url("/slow/clip.mp4"))
        .await;
    let b = running["scan_id"].as_str().expect("id").to_owned();
    let (s, r) = t.get(&org, &format!("/compare?a={a}&b={b}")).await;
    assert_eq!(
        (s.as_u16(), r["error"].as_str()),
        (409, Some("scan_not_complete"))
    );
    assert!(!charged(a.clone()).await, "an unfinished b charged a");

    let (s, r) = t.post(&org, "/analyze", &json!({"scan_id": a})).await;
    assert_eq!(
        (s.as_u16(), r["error"].as_str()),
        (422, Some("manipulation_not_scored"))
    );
    assert!(
        !charged(a.clone()).await,
        "a failed /analyze charged the scan"
    );

    // Both complete: each charged once, by the comparison.
    let c = scan(json!(["attention"])).await;
    let (s, r) = t.get(&org, &format!("/compare?a={a}&b={c}")).await;
    assert_eq!(s.as_u16(), 200, "{r}");
    assert!(charged(a).await && charged(c).await);
    t.stop().await;
}
