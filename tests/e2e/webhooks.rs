use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::TestApp;

#[tokio::test]
async fn completed_scan_is_posted_signed_and_retried() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    t.media.state.hook_failures.store(1, Ordering::SeqCst);
    let hook = t.media.url("/hook");
    let (s, b) = t.submit_tone(&org, json!({"webhook_url": hook})).await;
    assert_eq!(s.as_u16(), 202, "{b}");
    let id = b["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while t.media.state.hooks.lock().expect("lock").len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "webhook not retried"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let hooks = t.media.state.hooks.lock().expect("lock").clone();
    let (first_headers, _) = &hooks[0];
    let (headers, body) = &hooks[1];
    let h = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .expect(name)
            .to_owned()
    };
    // One message id across retries, so receivers can de-duplicate.
    assert_eq!(first_headers.get("webhook-id"), headers.get("webhook-id"));
    let expected = brainscan::webhooks::sign(
        &org.secret,
        &h("webhook-id"),
        h("webhook-timestamp").parse().expect("ts"),
        body,
    )
    .expect("sign");
    assert_eq!(h("webhook-signature"), expected);
    // A receiver with a different secret would reject it.
    let wrong = brainscan::webhooks::sign(
        &brainscan::webhooks::new_secret(),
        &h("webhook-id"),
        h("webhook-timestamp").parse().expect("ts"),
        body,
    )
    .expect("sign");
    assert_ne!(h("webhook-signature"), wrong);
    let scan: Value = serde_json::from_slice(body).expect("json");
    assert_eq!(scan["scan_id"], id.as_str());
    assert_eq!(scan["status"], "complete");
    assert!(scan["timeline"].is_array());

    // The attempt is recorded after the receiver answers, so it can trail the delivery.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let codes: Vec<Option<i64>> = loop {
        let deliveries = t.app.db.deliveries_for_scan(&id).await.expect("deliveries");
        if deliveries.len() >= 2 || tokio::time::Instant::now() >= deadline {
            break deliveries.iter().map(|d| d.status_code).collect();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(codes, vec![Some(500), Some(200)]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_brainscan"))
        .args(["admin", "webhook", "deliveries", "--scan", &id])
        .env("BRAINSCAN_DATA_DIR", t.dir.path())
        .output()
        .expect("admin");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("attempt 1") && text.contains("HTTP 500"),
        "{text}"
    );
    assert!(
        text.contains("attempt 2") && text.contains("HTTP 200"),
        "{text}"
    );
    // The delivered body is the whole result, so delivery settled the charge, once, though
    // it took two attempts (tests/e2e/billing.rs covers every route).
    assert_eq!(t.charges_after_delivery(&id).await, 1);
    t.stop().await;
}

/// Billing: a webhook charges the scan only once the receiver accepts it (2xx). Every
/// attempt refused leaves the wallet untouched; the first accepted one charges, once.
#[tokio::test]
async fn a_webhook_charges_only_when_the_receiver_accepts_it() {
    let t = TestApp::start_with(
        |c| c.webhook.webhook_max_attempts = 3,
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 10_000).await;
    let before = t.wallet(&org).await;
    // Every attempt answered 500.
    t.media.state.hook_status.store(500, Ordering::SeqCst);
    let (s, b) = t
        .submit_tone(&org, json!({"webhook_url": t.media.url("/hook")}))
        .await;
    assert_eq!(s.as_u16(), 202, "{b}");
    let id = b["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let jobs = t.app.db.deliveries_for_scan(&id).await.expect("deliveries");
        if jobs.len() >= 3 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "3 attempts expected"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let row = t.app.db.get_scan_by_id(&id).await.expect("scan");
    assert!(
        row.charged_at.is_none(),
        "three refused deliveries charged the scan"
    );
    let after = t.wallet(&org).await;
    assert_eq!(
        after["deposit_balance_usd"], before["deposit_balance_usd"],
        "{after}"
    );
    assert_eq!(
        after["free_credit_remaining_usd"], before["free_credit_remaining_usd"],
        "{after}"
    );

    // A second scan whose receiver accepts: charged once, by the webhook.
    t.media.state.hook_status.store(0, Ordering::SeqCst);
    let (_, b) = t
        .submit_tone(&org, json!({"webhook_url": t.media.url("/hook")}))
        .await;
    let id = b["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while t
        .app
        .db
        .get_scan_by_id(&id)
        .await
        .expect("scan")
        .charged_at
        .is_none()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "an accepted webhook charges"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    t.stop().await;
}

/// Security: a webhook URL's query (often the receiver's token) is delivered to, but not
/// kept in the delivery records that operators read and the CLI prints.
#[tokio::test]
async fn delivery_records_keep_no_webhook_query() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let hook = format!("{}?token=receiver-secret-123", t.media.url("/hook"));
    let (s, b) = t.submit_tone(&org, json!({"webhook_url": hook})).await;
    assert_eq!(s.as_u16(), 202, "{b}");
    let id = b["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let deliveries = loop {
        let d = t.app.db.deliveries_for_scan(&id).await.expect("deliveries");
        if !d.is_empty() {
            break d;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no delivery recorded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        deliveries[0].status_code,
        Some(200),
        "delivered with its query"
    );
    assert!(
        !deliveries[0].url.contains("receiver-secret"),
        "{}",
        deliveries[0].url
    );
    assert!(
        deliveries[0].url.ends_with("/hook?…"),
        "{}",
        deliveries[0].url
    );
    t.stop().await;
}
