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
            "price_per_scan_usd": {"qualia": 2.5}, "scans_remaining_estimate": 9
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
    // Completed but not fetched: nothing charged yet, but the scan is owed.
    assert_eq!(money(&t.wallet(&org).await), (3.0, 2.5, 5.5, 2));
    let second = complete_one(&t, &org).await;
    // Two owed scans ($5.00) leave $0.50: a third is refused before any work.
    let (s, err) = t.submit_tone(&org, json!({})).await;
    assert_eq!(
        (s.as_u16(), err["error"].as_str()),
        (402, Some("insufficient_balance")),
        "{err}"
    );

    // First fetch settles: free credit first.
    let (s, _) = t.get(&org, &format!("/scans/{first}")).await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(money(&t.wallet(&org).await), (3.0, 0.0, 3.0, 1));
    // Second fetch of the same scan charges nothing more.
    t.get(&org, &format!("/scans/{first}")).await;
    assert_eq!(money(&t.wallet(&org).await), (3.0, 0.0, 3.0, 1));
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
