//! `/admin/v1/plugins…`: the operator's HTTP surface, guarded by the admin token.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::kit::{Service, service, wasm};

const TOKEN: &str = "admin-secret-for-tests-0123456789abcdef";

/// The admin token set, and the admin API on the service's one (public) address, as an
/// operator without `BRAINSCAN_OPS_LISTEN` asks for it explicitly.
fn with_token(c: &mut brainscan::config::ServeConfig) {
    c.plugins.admin_token = Some(TOKEN.into());
    c.http.admin_on_public_listener = true;
}

fn admin_url(svc: &Service, path: &str) -> String {
    format!("{}/admin/v1{}", svc.base, path)
}

async fn call(req: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let r = req.send().await.expect("send");
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn lenses(svc: &Service, key: &str) -> Vec<String> {
    let (s, v) = call(
        svc.http
            .get(format!("{}/api/v1/lenses", svc.base))
            .bearer_auth(key),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    serde_json::from_value(v["lenses"].clone()).expect("lenses")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_configured_token_the_admin_api_does_not_exist() {
    let svc = service(|_| {}).await;
    let key = svc.org("acme").await;
    for auth in [None, Some("anything"), Some(key.as_str())] {
        let mut req = svc.http.get(admin_url(&svc, "/plugins"));
        if let Some(a) = auth {
            req = req.bearer_auth(a);
        }
        let (s, v) = call(req).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
        assert_eq!(v["error"], "not_found");
    }
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_install_activate_roll_back_and_remove_over_http() {
    let svc = service(with_token).await;
    let key = svc.org("acme").await;

    // An organisation's API key is not the admin token.
    for bad in [key.as_str(), "admin-secret-for-test", ""] {
        let (s, v) = call(svc.http.get(admin_url(&svc, "/plugins")).bearer_auth(bad)).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{bad:?}: {v}");
    }

    let (s, v) = call(svc.http.get(admin_url(&svc, "/plugins")).bearer_auth(TOKEN)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["data"][0]["name"], "lens-standard");
    assert_eq!(v["data"][0]["source"], "builtin");
    assert_eq!(v["data"][0]["active_in"], "lens:lens-standard");

    // A hostile upload is refused with the check that failed; nothing is stored.
    let (s, v) = call(
        svc.http
            .post(admin_url(&svc, "/plugins"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/wasm")
            .body(wasm("hostile_oom.wasm")),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"], "conformance_failed");
    assert!(
        v["message"]
            .as_str()
            .expect("message")
            .contains("memory limit"),
        "{v}"
    );
    let (s, v) = call(
        svc.http
            .post(admin_url(&svc, "/plugins"))
            .bearer_auth(TOKEN)
            .body(b"\0asm\x01\0\0\0".to_vec()),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"], "not_a_component");

    // A custom lens, installed and activated in one call.
    let custom = wasm("lens_custom.wasm");
    let (s, v) = call(
        svc.http
            .post(admin_url(&svc, "/plugins?activate=true"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/wasm")
            .body(custom.clone()),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["plugin"]["name"], "lens-custom");
    assert_eq!(v["plugin"]["version"], "0.1.0");
    assert_eq!(v["plugin"]["provides"], json!(["calm"]));
    assert_eq!(v["activated"]["slot"], "lens:lens-custom");
    let rows = v["conformance"]["rows"].as_array().expect("rows");
    assert!(rows.iter().all(|r| r["passed"] == true), "{v}");
    assert!(
        rows.iter()
            .any(|r| r["stats"]["fuel_used"].as_u64().unwrap_or(0) > 0)
    );
    // The same bytes again: nothing new.
    let (s, v) = call(
        svc.http
            .post(admin_url(&svc, "/plugins"))
            .bearer_auth(TOKEN)
            .body(custom),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["new"], false);

    // Clients see the new lens at once, and scans accept it.
    assert!(lenses(&svc, &key).await.contains(&"calm".to_owned()));
    let (s, created) = call(
        svc.http
            .post(format!("{}/api/v1/scans", svc.base))
            .bearer_auth(&key)
            .json(&json!({
                "input": {"type": "video", "video_url": svc.media.url("/media/clip.mp4")},
                "lenses": ["calm", "attention", "nonsense"],
            })),
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{created}");
    let id = created["scan_id"].as_str().expect("id").to_owned();
    let scan = loop {
        let (_, v) = call(
            svc.http
                .get(format!("{}/api/v1/scans/{id}", svc.base))
                .bearer_auth(&key),
        )
        .await;
        if v["status"] != "queued" && v["status"] != "processing" {
            break v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(scan["status"], "complete", "{scan}");
    assert_eq!(scan["lenses"], json!(["calm", "attention"]));
    assert!(
        scan["timeline"][0]["scores"]["calm"].as_f64().is_some(),
        "{scan}"
    );

    // No earlier version of lens-custom: a rollback is refused, a deactivation is not.
    let (s, v) = call(
        svc.http
            .post(admin_url(&svc, "/plugins/rollback"))
            .bearer_auth(TOKEN)
            .json(&json!({"slot": "lens:lens-custom"})),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    let (s, v) = call(
        svc.http
            .delete(admin_url(&svc, "/plugins/lens-custom@0.1.0"))
            .bearer_auth(TOKEN),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "active versions stay: {v}");
    let (s, v) = call(
        svc.http
            .post(admin_url(&svc, "/plugins/deactivate"))
            .bearer_auth(TOKEN)
            .json(&json!({"slot": "lens-custom"})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["from"], "lens-custom@0.1.0");
    assert!(!lenses(&svc, &key).await.contains(&"calm".to_owned()));
    let (s, _) = call(
        svc.http
            .delete(admin_url(&svc, "/plugins/lens-custom@0.1.0"))
            .bearer_auth(TOKEN),
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, v) = call(
        svc.http
            .delete(admin_url(&svc, "/plugins/no-version-here"))
            .bearer_auth(TOKEN),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, v) = call(
        svc.http
            .post(admin_url(&svc, "/plugins/lens-custom@9.9.9/activate"))
            .bearer_auth(TOKEN),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");

    // The event log tells the story, newest first.
    let (s, v) = call(
        svc.http
            .get(admin_url(&svc, "/plugins/events?limit=5"))
            .bearer_auth(TOKEN),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let actions: Vec<&str> = v["data"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["action"].as_str().expect("action"))
        .collect();
    assert_eq!(actions[..2], ["deactivate", "activate"], "{v}");
    svc.stop().await;
}

/// Five failed admin authentications lock the address out for a minute: then even the right
/// token is answered 429 without being compared, so guessing cannot go on at speed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_failed_admin_logins_lock_the_address_out() {
    let svc = service(with_token).await;
    for attempt in 0..brainscan::lockout::MAX_FAILURES {
        let (s, v) = call(
            svc.http
                .get(admin_url(&svc, "/plugins"))
                .bearer_auth(format!("wrong-guess-{attempt}")),
        )
        .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "attempt {attempt}: {v}");
    }
    let r = svc
        .http
        .get(admin_url(&svc, "/plugins"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 429);
    let wait: u64 = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("retry-after");
    assert!((1..=60).contains(&wait), "{wait}");
    let v: serde_json::Value = r.json().await.expect("json");
    assert!(
        v["message"]
            .as_str()
            .expect("message")
            .contains("failed admin authentications"),
        "{v}"
    );
    svc.stop().await;
}

/// Security: requests that present no token are refused without counting (anyone could
/// otherwise lock the operator out), and behind a trusted proxy the lockout is keyed on the
/// client that `X-Forwarded-For` names, so one guesser does not lock out everyone behind the
/// proxy, and a forged header from an untrusted peer changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lockout_counts_presented_tokens_per_client_behind_a_trusted_proxy() {
    let svc = service(|c| {
        with_token(c);
        c.http.trusted_proxies = vec!["127.0.0.1".parse().expect("proxy")];
    })
    .await;
    let get = |xff: &str, token: Option<&str>| {
        let mut r = svc
            .http
            .get(admin_url(&svc, "/plugins"))
            .header("x-forwarded-for", xff);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        async move { r.send().await.expect("send").status().as_u16() }
    };
    // Many requests with no token from the operator's own address: never a lockout.
    for _ in 0..3 * brainscan::lockout::MAX_FAILURES {
        assert_eq!(get("198.51.100.1", None).await, 401);
    }
    assert_eq!(get("198.51.100.1", Some(TOKEN)).await, 200);
    // A guesser behind the same proxy locks out only itself.
    for attempt in 0..brainscan::lockout::MAX_FAILURES {
        assert_eq!(
            get("203.0.113.66", Some(&format!("guess-{attempt}"))).await,
            401
        );
    }
    assert_eq!(get("203.0.113.66", Some(TOKEN)).await, 429);
    assert_eq!(get("198.51.100.1", Some(TOKEN)).await, 200);
    // A forged entry on the left does not move the guesser to another bucket.
    assert_eq!(get("198.51.100.1, 203.0.113.66", Some("guess")).await, 429);
    svc.stop().await;
}

/// Security: with an admin token and no operations address, the admin API is not on the
/// public address unless the operator asks for it there (404, the same as no admin API).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_stays_off_the_public_address_by_default() {
    let svc = service(|c| c.plugins.admin_token = Some(TOKEN.into())).await;
    let (s, v) = call(svc.http.get(admin_url(&svc, "/plugins")).bearer_auth(TOKEN)).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    svc.stop().await;
}
