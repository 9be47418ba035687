use std::time::Duration;

use axum::http::StatusCode;
use serde_json::Value;

use crate::support::TestApp;

async fn status_with(t: &TestApp, auth: Option<&str>) -> (u16, Value) {
    let mut r = t.http.get(t.url("/wallet"));
    if let Some(a) = auth {
        r = r.header("authorization", a);
    }
    let r = r.send().await.expect("send");
    (r.status().as_u16(), r.json().await.expect("json"))
}

#[tokio::test]
async fn missing_malformed_unknown_and_revoked_keys_are_401() {
    let t = TestApp::start().await;
    let org = t.org("acme", 0).await;
    let (ok, _) = status_with(&t, Some(&format!("Bearer {}", org.key))).await;
    assert_eq!(ok, 200);
    let unknown = format!("Bearer sk_live_{}", "A".repeat(40));
    for auth in [
        None,
        Some("Bearer"),
        Some("Basic abc"),
        Some("Bearer sk_live_short"),
        Some(unknown.as_str()),
        Some(&format!("Token {}", org.key)),
    ] {
        let (status, body) = status_with(&t, auth).await;
        assert_eq!(status, 401, "{auth:?}");
        assert_eq!(body["error"], "unauthorized");
    }
    // Scheme is case-insensitive.
    assert_eq!(
        status_with(&t, Some(&format!("bearer {}", org.key)))
            .await
            .0,
        200
    );

    // Revocation takes effect within the key cache time (1 s in tests).
    let id = brainscan::auth::key_id(&org.key).expect("id");
    t.app.db.revoke_api_key(&id, 0).await.expect("revoke");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (s, body) = status_with(&t, Some(&format!("Bearer {}", org.key))).await;
        if s == 401 {
            assert_eq!(body["error"], "unauthorized");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "revoked key still accepted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    t.stop().await;
}

#[tokio::test]
async fn every_endpoint_requires_a_key() {
    let t = TestApp::start().await;
    for (method, path) in [
        ("GET", "/scans"),
        ("POST", "/scans"),
        ("GET", "/scans/qualia_run_a_b"),
        ("GET", "/wallet"),
        ("GET", "/intelligence"),
        ("POST", "/analyze"),
        ("GET", "/lenses"),
    ] {
        let r = t
            .http
            .request(method.parse().expect("method"), t.url(path))
            .send()
            .await
            .expect("send");
        assert_eq!(
            r.status().as_u16(),
            StatusCode::UNAUTHORIZED.as_u16(),
            "{method} {path}"
        );
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["error"], "unauthorized");
    }
    t.stop().await;
}

#[tokio::test]
async fn each_organisation_is_rate_limited_on_its_own() {
    let t = TestApp::start_with(
        |c| {
            c.http.rate_limit_per_sec = 1;
            c.http.rate_limit_burst = 3;
        },
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let a = t.org("a", 0).await;
    let b = t.org("b", 0).await;
    for _ in 0..3 {
        assert_eq!(t.get(&a, "/wallet").await.0, StatusCode::OK);
    }
    let r = t
        .http
        .get(t.url("/wallet"))
        .bearer_auth(&a.key)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 429);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=2).contains(&retry), "{retry}");
    assert_eq!(
        r.json::<Value>().await.expect("json")["error"],
        "rate_limited"
    );
    // Another organisation is unaffected.
    assert_eq!(t.get(&b, "/wallet").await.0, StatusCode::OK);
    t.stop().await;
}

/// Security: one client address is limited before any key is looked up, so a flood of
/// made-up keys is answered 429 after the burst instead of reaching the database each time.
#[tokio::test]
async fn a_flood_of_made_up_keys_is_limited_per_address_before_lookup() {
    let t = crate::support::TestApp::start_with(
        |c| {
            c.http.client_rate_limit_per_sec = 1;
            c.http.client_rate_limit_burst = 3;
        },
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let mut statuses = Vec::new();
    for i in 0..6 {
        let r = t
            .http
            .get(format!("{}/api/v1/wallet", t.base))
            .bearer_auth(format!("sk_live_madeup{i:040}"))
            .send()
            .await
            .expect("send");
        statuses.push(r.status().as_u16());
        if r.status().as_u16() == 429 {
            assert!(r.headers().contains_key("retry-after"));
            let v: serde_json::Value = r.json().await.expect("json");
            assert_eq!(v["error"], "rate_limited");
            assert!(
                v["message"]
                    .as_str()
                    .expect("message")
                    .contains("this address"),
                "{v}"
            );
        }
    }
    assert_eq!(&statuses[..3], [401, 401, 401], "{statuses:?}");
    assert!(statuses[3..].iter().all(|s| *s == 429), "{statuses:?}");
    t.stop().await;
}
