//! People in the console (issue 44): sign-in by password and by one-time link, sessions that
//! are never API keys, CSRF on every write, plans that meter console scans and never touch
//! the wallet, keys created by owners on paid plans, and one organisation's session seeing
//! nothing of another's. Each test runs the real server on loopback.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Org, TestApp};
use brainscan::people::{self, Plan, Role};
use brainscan::store::people::Person;

const PASSWORD: &str = "correct horse battery staple";

/// A person with `PASSWORD` in `org` with `role`.
async fn person(t: &TestApp, email: &str, org: &Org, role: Role) -> Person {
    let p = match t.app.db.person_by_email(email).await.expect("lookup") {
        Some(p) => p,
        None => {
            let p = Person {
                id: people::new_person_id(),
                email: email.into(),
                password_hash: Some(people::hash_password(PASSWORD).expect("hash")),
                created_at: 0,
            };
            t.app.db.create_person(&p).await.expect("person");
            p
        }
    };
    t.app
        .db
        .set_membership(&p.id, &org.id, role, 0)
        .await
        .expect("membership");
    p
}

/// A signed-in browser, as far as the server can tell: its cookie and CSRF token.
struct Session {
    cookie: String,
    csrf: String,
    me: Value,
}

fn session_cookie(r: &reqwest::Response) -> Option<String> {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("brainscan_session="))
        .map(|v| v.split(';').next().unwrap_or_default().to_owned())
}

async fn sign_in_raw(t: &TestApp, email: &str, password: &str) -> reqwest::Response {
    t.http
        .post(format!("{}/console/session/sign-in", t.base))
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .expect("send")
}

async fn sign_in(t: &TestApp, email: &str) -> Session {
    let r = sign_in_raw(t, email, PASSWORD).await;
    assert_eq!(r.status(), StatusCode::OK);
    let set = r
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a cookie")
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(!set.contains("Secure"), "plain http on loopback: {set}");
    let cookie = session_cookie(&r).expect("session cookie");
    let me: Value = r.json().await.expect("json");
    Session {
        cookie,
        csrf: me["csrf_token"].as_str().expect("csrf").to_owned(),
        me,
    }
}

/// A console call: the session cookie, its CSRF token on writes, and the acting organisation.
async fn call(
    t: &TestApp,
    s: &Session,
    method: reqwest::Method,
    path: &str,
    org: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = t
        .http
        .request(method.clone(), format!("{}{path}", t.base))
        .header("cookie", &s.cookie);
    if method != reqwest::Method::GET {
        req = req.header("x-csrf-token", &s.csrf);
    }
    if let Some(org) = org {
        req = req.header("x-brainscan-org", org);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let r = req.send().await.expect("send");
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn get(t: &TestApp, s: &Session, path: &str) -> (StatusCode, Value) {
    call(t, s, reqwest::Method::GET, path, None, None).await
}

async fn post(t: &TestApp, s: &Session, path: &str, body: Value) -> (StatusCode, Value) {
    call(t, s, reqwest::Method::POST, path, None, Some(body)).await
}

fn tone_scan(t: &TestApp) -> Value {
    json!({"input": {"type": "audio", "audio_url": t.media.url("/media/tone.wav")}})
}

#[tokio::test]
async fn console_scans_use_the_plan_and_never_the_wallet() {
    let t = TestApp::start().await;
    let org = t.org("acme", 1_000).await;
    person(&t, "ada@example.com", &org, Role::Member).await;
    let s = sign_in(&t, "ada@example.com").await;
    assert_eq!(s.me["email"], "ada@example.com");
    assert_eq!(s.me["orgs"][0]["plan"], "free");
    assert_eq!(s.me["orgs"][0]["monthly_scans"], 1);
    assert_eq!(s.me["orgs"][0]["used_this_month"], 0);
    let before = t.wallet(&org).await;

    // One person, one organisation: no X-Brainscan-Org needed.
    let (status, created) = post(&t, &s, "/console/api/v1/scans", tone_scan(&t)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let id = created["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");
    let (status, done) = get(&t, &s, &format!("/console/api/v1/scans/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(done["status"], "complete");
    assert_eq!(t.app.db.charge_count(&id).await.expect("count"), 0);
    assert_eq!(t.wallet(&org).await, before, "the wallet is untouched");

    // In the organisation's list and memory like any other scan, read with its API key.
    let (_, list) = t.get(&org, "/scans").await;
    assert!(
        list["scans"]
            .as_array()
            .expect("scans")
            .iter()
            .any(|x| x["scan_id"] == id.as_str()),
        "{list}"
    );
    let (_, intel) = t.get(&org, "/intelligence").await;
    assert_eq!(intel["scan_count"], 1, "{intel}");

    // The Free plan's one scan is used: the next is refused in plain words.
    let (status, e) = post(&t, &s, "/console/api/v1/scans", tone_scan(&t)).await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED, "{e}");
    assert_eq!(e["error"], "plan_allowance_used");
    assert!(
        e["message"]
            .as_str()
            .expect("message")
            .contains("1 console scan a month"),
        "{e}"
    );
    // API scans are untouched by the plan: the key still starts one, billed to the wallet.
    let (status, _) = t.submit_tone(&org, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED);

    // A paid plan raises the allowance at once.
    t.app
        .db
        .set_org_plan(&org.id, Plan::Pro)
        .await
        .expect("plan");
    let (_, me) = get(&t, &s, "/console/session/me").await;
    assert_eq!(me["orgs"][0]["plan"], "pro");
    assert_eq!(me["orgs"][0]["monthly_scans"], 60);
    assert_eq!(me["orgs"][0]["used_this_month"], 1);
    let (status, _) = post(&t, &s, "/console/api/v1/scans", tone_scan(&t)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    t.stop().await;
}

/// Security round 4: a scan cancelled once a worker had begun cost nothing and was counted
/// nowhere, and a console cancel gave the plan allowance back, so a Free person could keep a
/// worker busy forever. Work that began now uses the allowance and counts as failed work; a
/// scan cancelled while still queued stays free.
#[tokio::test]
async fn a_scan_cancelled_after_work_began_uses_the_allowance_and_counts_as_failed_work() {
    use std::time::Duration;
    let t = TestApp::start_with(
        |c| c.fetch.probe_timeout_secs = 1,
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 1_000).await;
    person(&t, "ada@example.com", &org, Role::Member).await;
    let s = sign_in(&t, "ada@example.com").await;
    // The slow host: the submit probe times out (accepted unprobed) and the worker downloads
    // for seconds, long enough to cancel it while it works.
    let slow = json!({"input": {"type": "video", "video_url": t.media.url("/slow/clip.mp4")}});
    let (status, created) = post(&t, &s, "/console/api/v1/scans", slow).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let id = created["scan_id"].as_str().expect("id").to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while t.app.db.get_scan_by_id(&id).await.expect("scan").stage != "downloading" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the worker never began"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, cancelled) = post(
        &t,
        &s,
        &format!("/console/api/v1/scans/{id}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    let (_, me) = get(&t, &s, "/console/session/me").await;
    assert_eq!(me["orgs"][0]["used_this_month"], 1, "{me}");
    let (status, e) = post(&t, &s, "/console/api/v1/scans", tone_scan(&t)).await;
    assert_eq!(
        (status, e["error"].as_str()),
        (StatusCode::PAYMENT_REQUIRED, Some("plan_allowance_used"))
    );
    assert_eq!(
        t.app
            .db
            .failed_scans_since(&org.id, 0)
            .await
            .expect("count"),
        1
    );
    t.stop().await;

    // Cancelled while queued (no worker runs here): free, and no failed work.
    let t = TestApp::start_with(
        |c| c.queue.workers = 0,
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 1_000).await;
    person(&t, "ada@example.com", &org, Role::Member).await;
    let s = sign_in(&t, "ada@example.com").await;
    let (status, created) = post(&t, &s, "/console/api/v1/scans", tone_scan(&t)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let id = created["scan_id"].as_str().expect("id").to_owned();
    let (status, _) = post(
        &t,
        &s,
        &format!("/console/api/v1/scans/{id}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, me) = get(&t, &s, "/console/session/me").await;
    assert_eq!(me["orgs"][0]["used_this_month"], 0, "{me}");
    assert_eq!(
        t.app
            .db
            .failed_scans_since(&org.id, 0)
            .await
            .expect("count"),
        0
    );
    t.stop().await;
}

#[tokio::test]
async fn every_write_needs_the_sessions_csrf_token() {
    let t = TestApp::start().await;
    let org = t.org("acme", 1_000).await;
    person(&t, "ada@example.com", &org, Role::Owner).await;
    t.app
        .db
        .set_org_plan(&org.id, Plan::Pro)
        .await
        .expect("plan");
    let s = sign_in(&t, "ada@example.com").await;
    let post = |path: &str, csrf: Option<&str>| {
        let mut r = t
            .http
            .post(format!("{}{path}", t.base))
            .header("cookie", &s.cookie)
            .json(&json!({"name": "ci", "input": {"type": "audio", "audio_url": t.media.url("/media/tone.wav")}}));
        if let Some(c) = csrf {
            r = r.header("x-csrf-token", c);
        }
        r.send()
    };
    let keys = format!("/console/session/orgs/{}/keys", org.id);
    for path in [
        "/console/api/v1/scans",
        keys.as_str(),
        "/console/session/sign-out",
    ] {
        for csrf in [None, Some("not-the-token")] {
            let r = post(path, csrf).await.expect("send");
            assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path} {csrf:?}");
            let e: Value = r.json().await.expect("json");
            assert_eq!(e["error"], "csrf_failed", "{path}");
        }
    }
    assert_eq!(
        t.app.db.list_api_keys(&org.id).await.expect("keys").len(),
        1,
        "only the test's own key: nothing was created"
    );
    // Reads need no token, and the session is still alive.
    let (status, _) = get(&t, &s, "/console/api/v1/wallet").await;
    assert_eq!(status, StatusCode::OK);
    t.stop().await;
}

#[tokio::test]
async fn a_session_is_never_an_api_key_and_a_key_never_a_session() {
    let t = TestApp::start().await;
    let org = t.org("acme", 1_000).await;
    person(&t, "ada@example.com", &org, Role::Owner).await;
    let s = sign_in(&t, "ada@example.com").await;
    let token = s.cookie.trim_start_matches("brainscan_session=").to_owned();
    let status = |r: reqwest::Response| r.status();

    // The public API: a cookie alone, or the session token as a bearer key, is refused.
    let r = t
        .http
        .get(t.url("/wallet"))
        .header("cookie", &s.cookie)
        .send()
        .await
        .expect("send");
    assert_eq!(status(r), StatusCode::UNAUTHORIZED);
    let r = t
        .http
        .get(t.url("/wallet"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("send");
    assert_eq!(status(r), StatusCode::UNAUTHORIZED);
    // The console's API: an API key, as a bearer or in the cookie, is refused.
    let console_wallet = format!("{}/console/api/v1/wallet", t.base);
    let r = t
        .http
        .get(&console_wallet)
        .bearer_auth(&org.key)
        .send()
        .await
        .expect("send");
    assert_eq!(status(r), StatusCode::UNAUTHORIZED);
    let r = t
        .http
        .get(&console_wallet)
        .header("cookie", format!("brainscan_session={}", org.key))
        .send()
        .await
        .expect("send");
    assert_eq!(status(r), StatusCode::UNAUTHORIZED);
    let r = t
        .http
        .get(&console_wallet)
        .header("cookie", &s.cookie)
        .send()
        .await
        .expect("send");
    assert_eq!(status(r), StatusCode::OK);

    // Signing out ends the session for good.
    let (code, _) = call(
        &t,
        &s,
        reqwest::Method::POST,
        "/console/session/sign-out",
        None,
        None,
    )
    .await;
    assert_eq!(code, StatusCode::NO_CONTENT);
    let r = t
        .http
        .get(&console_wallet)
        .header("cookie", &s.cookie)
        .send()
        .await
        .expect("send");
    assert_eq!(status(r), StatusCode::UNAUTHORIZED);
    t.stop().await;
}

#[tokio::test]
async fn another_organisations_session_sees_none_of_this_ones_scans_or_keys() {
    let t = TestApp::start().await;
    let acme = t.org("acme", 1_000).await;
    let rival = t.org("rival", 1_000).await;
    t.app
        .db
        .set_org_plan(&acme.id, Plan::Pro)
        .await
        .expect("plan");
    person(&t, "ada@acme.example", &acme, Role::Owner).await;
    person(&t, "eve@rival.example", &rival, Role::Owner).await;
    let (_, created) = t.submit_tone(&acme, json!({})).await;
    let id = created["scan_id"].as_str().expect("id").to_owned();
    t.wait_final(&id).await;

    let eve = sign_in(&t, "eve@rival.example").await;
    assert_eq!(eve.me["orgs"].as_array().expect("orgs").len(), 1);
    let scan = format!("/console/api/v1/scans/{id}");
    // In her own organisation the scan does not exist; acme she cannot act in at all.
    let (status, _) = call(&t, &eve, reqwest::Method::GET, &scan, Some(&rival.id), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, e) = call(&t, &eve, reqwest::Method::GET, &scan, Some(&acme.id), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
    let (status, list) = get(&t, &eve, "/console/api/v1/scans").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["total"], 0, "{list}");
    let keys = format!("/console/session/orgs/{}/keys", acme.id);
    let (status, _) = get(&t, &eve, &keys).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = post(&t, &eve, &keys, json!({"name": "mine"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let acme_key = t.app.db.list_api_keys(&acme.id).await.expect("keys")[0]
        .id
        .clone();
    let (status, _) = call(
        &t,
        &eve,
        reqwest::Method::DELETE,
        &format!("/console/session/orgs/{}/keys/{acme_key}", rival.id),
        None,
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "her own organisation has no such key"
    );
    let (status, _) = t.get(&acme, "/wallet").await;
    assert_eq!(status, StatusCode::OK, "acme's key still works");
    t.stop().await;
}

#[tokio::test]
async fn owners_on_paid_plans_create_keys_that_are_shown_once_and_work() {
    let t = TestApp::start().await;
    let org = t.org("acme", 1_000).await;
    person(&t, "ada@example.com", &org, Role::Owner).await;
    person(&t, "bob@example.com", &org, Role::Member).await;
    let ada = sign_in(&t, "ada@example.com").await;
    let bob = sign_in(&t, "bob@example.com").await;
    let keys = format!("/console/session/orgs/{}/keys", org.id);

    let (status, e) = post(&t, &ada, &keys, json!({"name": "ci"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(e["error"], "plan_required", "{e}");
    let (_, list) = get(&t, &ada, &keys).await;
    assert_eq!(list["can_create_keys"], false);

    t.app
        .db
        .set_org_plan(&org.id, Plan::Studio)
        .await
        .expect("plan");
    let (status, e) = post(&t, &bob, &keys, json!({"name": "ci"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(e["error"], "owner_only", "{e}");
    let (status, e) = post(&t, &ada, &keys, json!({"name": "  "})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");

    let (status, created) = post(&t, &ada, &keys, json!({"name": "ci runner"})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let secret = created["key"].as_str().expect("key").to_owned();
    let key_id = created["id"].as_str().expect("id").to_owned();
    assert!(secret.starts_with("sk_live_"));
    let (_, list) = get(&t, &ada, &keys).await;
    let text = list.to_string();
    assert!(
        !text.contains(&secret),
        "the list never shows a secret: {text}"
    );
    let listed = list["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["id"] == key_id.as_str())
        .expect("listed")
        .clone();
    assert_eq!(listed["name"], "ci runner");
    assert_eq!(listed["made_in"], "console");

    // The new key works against the public API, for this organisation.
    let r = t
        .http
        .get(t.url("/wallet"))
        .bearer_auth(&secret)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::OK);

    let (status, _) = call(
        &t,
        &ada,
        reqwest::Method::DELETE,
        &format!("{keys}/{key_id}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // The test server caches keys for 1 s.
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    let r = t
        .http
        .get(t.url("/wallet"))
        .bearer_auth(&secret)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    t.stop().await;
}

#[tokio::test]
async fn sign_in_answers_alike_for_unknown_emails_and_is_rate_limited() {
    let t = TestApp::start().await;
    let org = t.org("acme", 1_000).await;
    person(&t, "ada@example.com", &org, Role::Owner).await;
    let r = sign_in_raw(&t, "nobody@example.com", PASSWORD).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let unknown: Value = r.json().await.expect("json");
    let r = sign_in_raw(&t, "ada@example.com", "wrong password here").await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let wrong: Value = r.json().await.expect("json");
    assert_eq!(
        unknown, wrong,
        "the answer does not tell which emails have accounts"
    );
    assert_eq!(wrong["error"], "invalid_credentials");

    // Five failures a minute from one address (two above, three here), then even the right
    // password waits.
    for _ in 0..3 {
        let r = sign_in_raw(&t, "ada@example.com", "wrong password here").await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    let r = sign_in_raw(&t, "ada@example.com", PASSWORD).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().get("retry-after").is_some());
    assert!(session_cookie(&r).is_none());
    t.stop().await;
}

/// Sign-in through a trusted proxy (127.0.0.1 in the test), as from `client`.
async fn sign_in_from(t: &TestApp, client: &str, email: &str, password: &str) -> reqwest::Response {
    t.http
        .post(format!("{}/console/session/sign-in", t.base))
        .header("x-forwarded-for", client)
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .expect("send")
}

/// Security round 4: the limit was checked before the hash and recorded after it, so 30
/// parallel attempts were all checked and the right password among them signed in, and 150
/// guesses met no 429. Every attempt is now counted before its hash: from one address at most
/// five of a burst are checked, and the right password inside the burst is refused like the
/// rest; from 150 addresses against one email, five and the few the growing delay lets
/// through while the burst lasts.
#[tokio::test]
async fn a_burst_of_sign_ins_is_limited_as_a_sequence_is() {
    let t = TestApp::start_with(
        |c| c.http.trusted_proxies = vec!["127.0.0.1".parse().expect("proxy")],
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 1_000).await;
    person(&t, "ada@example.com", &org, Role::Owner).await;
    person(&t, "bob@example.com", &org, Role::Owner).await;
    let tally = |statuses: &[StatusCode]| {
        let n = |s: StatusCode| statuses.iter().filter(|x| **x == s).count();
        (
            n(StatusCode::OK),
            n(StatusCode::UNAUTHORIZED),
            n(StatusCode::TOO_MANY_REQUESTS) + n(StatusCode::SERVICE_UNAVAILABLE),
        )
    };
    // 30 from one address: 29 wrong, then the right one while they are in flight.
    let mut burst = Vec::new();
    for _ in 0..29 {
        let t = &t;
        burst.push(async move {
            sign_in_from(t, "198.51.100.7", "ada@example.com", "wrong password here")
                .await
                .status()
        });
    }
    let right = async {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        sign_in_from(&t, "198.51.100.7", "ada@example.com", PASSWORD)
            .await
            .status()
    };
    let (mut statuses, right) = tokio::join!(futures_util::future::join_all(burst), right);
    assert_ne!(
        right,
        StatusCode::OK,
        "the right password inside a burst is refused"
    );
    statuses.push(right);
    let (ok, checked, refused) = tally(&statuses);
    assert_eq!(ok, 0);
    assert!(checked <= 5, "{checked} of 30 were checked: {statuses:?}");
    assert_eq!(checked + refused, 30);

    // 150 from one address against another email: five checked.
    let statuses = futures_util::future::join_all((0..150).map(|_| async {
        sign_in_from(&t, "198.51.100.8", "bob@example.com", "wrong password here")
            .await
            .status()
    }))
    .await;
    let (ok, checked, refused) = tally(&statuses);
    assert_eq!((ok, checked + refused), (0, 150));
    assert!(checked <= 5, "{checked} of 150 were checked");

    // 150 from 150 addresses against one email (a botnet): five, then one per growing delay
    // (1 s, 2 s, 4 s …) while the burst lasts.
    let started = std::time::Instant::now();
    let statuses = futures_util::future::join_all((0..150).map(|i| {
        let t = &t;
        async move {
            sign_in_from(
                t,
                &format!("203.0.113.{i}"),
                "ada@example.com",
                "wrong guess here",
            )
            .await
            .status()
        }
    }))
    .await;
    let seconds = started.elapsed().as_secs_f64();
    let (ok, checked, _) = tally(&statuses);
    // Delays of 1, 2, 4 … s: within s seconds at most log2(s + 1) + 1 beyond the five.
    let allowed = 5 + (seconds + 1.0).log2().floor() as usize + 1;
    assert_eq!(ok, 0);
    assert!(
        checked <= allowed,
        "{checked} of 150 were checked in {seconds:.1} s (at most {allowed})"
    );
    t.stop().await;
}

/// Security round 4: behind a proxy, five failures for made-up emails from the proxy's
/// address blocked the owner's right password and a fresh link. With the proxy trusted, a
/// guesser's address is its own; and a guesser of the owner's email slows the owner down by
/// a growing delay, never locks them out: after waiting, the right password from another
/// address signs in. Link sign-ins are not limited at all (238 random bits, nothing to guess).
#[tokio::test]
async fn a_guesser_cannot_lock_the_owner_out() {
    let t = TestApp::start_with(
        |c| c.http.trusted_proxies = vec!["127.0.0.1".parse().expect("proxy")],
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 1_000).await;
    let ada = person(&t, "ada@example.com", &org, Role::Owner).await;
    // Five made-up emails from the guesser's address: that address is locked, no other.
    for i in 0..5 {
        let r = sign_in_from(
            &t,
            "198.51.100.66",
            &format!("x{i}@example.com"),
            "guess guess",
        )
        .await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    let r = sign_in_from(&t, "198.51.100.66", "ada@example.com", PASSWORD).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let r = sign_in_from(&t, "192.0.2.10", "ada@example.com", PASSWORD).await;
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "the owner from their own address"
    );

    // Five wrong passwords for the owner's email, from five addresses: the owner waits the
    // delay, then signs in from a sixth.
    for i in 0..5 {
        let r = sign_in_from(
            &t,
            &format!("203.0.113.{i}"),
            "ada@example.com",
            "guess guess",
        )
        .await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    let r = sign_in_from(&t, "192.0.2.11", "ada@example.com", PASSWORD).await;
    let wait = if r.status() == StatusCode::TOO_MANY_REQUESTS {
        let secs: u64 = r.headers()["retry-after"]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("seconds");
        assert!(secs <= 2, "a delay, not a lock: {secs} s");
        secs
    } else {
        assert_eq!(r.status(), StatusCode::OK);
        0
    };
    if wait > 0 {
        tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
        let r = sign_in_from(&t, "192.0.2.11", "ada@example.com", PASSWORD).await;
        assert_eq!(r.status(), StatusCode::OK, "after the delay");
    }

    // A sign-in link from the locked address still works: links are not guessed.
    let token = people::new_token();
    let now = t.app.clock.now_ms();
    t.app
        .db
        .create_signin_link(
            &brainscan::auth::hash_hex(&token),
            &ada.id,
            now,
            now + 60_000,
        )
        .await
        .expect("link");
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let r = browser
        .post(format!("{}/console/session/link", t.base))
        .header("x-forwarded-for", "198.51.100.66")
        .form(&[("token", token.as_str())])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(session_cookie(&r).is_some());
    t.stop().await;
}

#[tokio::test]
async fn a_sign_in_link_works_once() {
    let t = TestApp::start().await;
    let org = t.org("acme", 1_000).await;
    let p = Person {
        id: people::new_person_id(),
        email: "lin@example.com".into(),
        password_hash: None,
        created_at: 0,
    };
    t.app.db.create_person(&p).await.expect("person");
    t.app
        .db
        .set_membership(&p.id, &org.id, Role::Member, 0)
        .await
        .expect("membership");
    // Without a password, password sign-in fails like any wrong password.
    let r = sign_in_raw(&t, "lin@example.com", PASSWORD).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    let token = people::new_token();
    let now = t.app.clock.now_ms();
    t.app
        .db
        .create_signin_link(&brainscan::auth::hash_hex(&token), &p.id, now, now + 60_000)
        .await
        .expect("link");
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let link = format!("{}/console/session/link?token={token}", t.base);
    // Opening the link uses nothing (a mail scanner's GET): it shows whose account it signs
    // in to, with a button that posts the token back, and it keeps no copy in any cache.
    for _ in 0..2 {
        let r = browser.get(&link).send().await.expect("send");
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["cache-control"], "no-store");
        assert!(
            r.headers()["content-security-policy"]
                .to_str()
                .expect("ascii")
                .contains("frame-ancestors 'none'")
        );
        assert!(session_cookie(&r).is_none(), "a GET signs nobody in");
        let page = r.text().await.expect("page");
        assert!(page.contains("lin@example.com"), "{page}");
        assert!(page.contains(r#"<form method="post" action="/console/session/link">"#));
        assert!(page.contains(&format!(r#"value="{token}""#)));
    }
    // Another site cannot post it (login CSRF: signing a browser in to its account).
    let r = browser
        .post(format!("{}/console/session/link", t.base))
        .header("origin", "https://evil.example")
        .form(&[("token", token.as_str())])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let host = t.base.trim_start_matches("http://");
    let confirm = || {
        browser
            .post(format!("{}/console/session/link", t.base))
            .header("origin", format!("http://{host}"))
            .form(&[("token", token.as_str())])
    };
    let r = confirm().send().await.expect("send");
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/console/#/scans");
    assert_eq!(r.headers()["cache-control"], "no-store");
    let cookie = session_cookie(&r).expect("signed in");
    let r = browser
        .get(format!("{}/console/session/me", t.base))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("send");
    assert_eq!(r.headers()["cache-control"], "no-store");
    let me: Value = r.json().await.expect("json");
    assert_eq!(me["email"], "lin@example.com");

    let r = confirm().send().await.expect("send");
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/console/#/signin/link-expired");
    assert!(session_cookie(&r).is_none(), "a used link signs nobody in");
    let r = browser.get(&link).send().await.expect("send");
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "a used link shows no page"
    );
    assert_eq!(r.headers()["location"], "/console/#/signin/link-expired");
    t.stop().await;
}

/// The operator's commands for people and plans, as an operator types them.
#[test]
fn the_cli_manages_people_and_plans() {
    use crate::support::{admin, admin_output, admin_with_stdin};
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    admin(data, &["org", "create", "acme"]);
    let added = admin(data, &["person", "add", "Lin@Example.com", "--org", "acme"]);
    assert!(
        added.contains("account created for lin@example.com"),
        "{added}"
    );
    assert!(
        added.contains("lin@example.com is a member of acme"),
        "{added}"
    );
    assert!(
        added.contains("next: brainscan admin person link lin@example.com"),
        "{added}"
    );
    let promoted = admin(
        data,
        &[
            "person",
            "add",
            "lin@example.com",
            "--org",
            "acme",
            "--role",
            "owner",
        ],
    );
    assert!(
        promoted.contains("is an owner of acme") && !promoted.contains("created"),
        "{promoted}"
    );
    assert_eq!(
        admin(data, &["person", "list", "--org", "acme"]),
        "lin@example.com\towner\n"
    );
    let set = admin_with_stdin(
        data,
        &["person", "password", "lin@example.com"],
        "a long enough passphrase\n",
    );
    assert!(set.contains("password set for lin@example.com"), "{set}");
    let shown = admin(data, &["org", "show", "acme"]);
    assert!(
        shown.contains("plan:           free (0 of 1 console scans used this month)"),
        "{shown}"
    );
    admin(data, &["org", "plan", "acme", "studio"]);
    assert!(admin(data, &["org", "show", "acme"]).contains("plan:           studio (0 of 150"));
    admin(
        data,
        &["person", "remove", "lin@example.com", "--org", "acme"],
    );
    assert_eq!(admin(data, &["person", "list", "--org", "acme"]), "");

    // Mistakes answer in words, and change nothing.
    let fails = |args: &[&str], stdin: &str, expect: &str| {
        let out = admin_output(data, args, stdin);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(expect),
            "{args:?}: {err}"
        );
    };
    fails(
        &["org", "plan", "acme", "enterprise"],
        "",
        "the plan is free, pro or studio",
    );
    fails(
        &[
            "person",
            "add",
            "x@example.com",
            "--org",
            "acme",
            "--role",
            "boss",
        ],
        "",
        "the role is `owner` or `member`",
    );
    fails(
        &["person", "add", "not-an-email", "--org", "acme"],
        "",
        "name@example.com",
    );
    fails(
        &[
            "person",
            "add",
            "y@example.com",
            "--org",
            "acme",
            "--password-stdin",
        ],
        "short\n",
        "at least 12 characters",
    );
    fails(
        &["person", "link", "nobody@example.com"],
        "",
        "no account for nobody@example.com",
    );
    fails(
        &["person", "link", "lin@example.com", "--minutes", "0"],
        "",
        "a link lasts 1-1440 minutes",
    );
    fails(
        &["person", "link", "lin@example.com", "--base-url", "ftp://x"],
        "",
        "http(s) URL",
    );
    fails(
        &["person", "remove", "lin@example.com", "--org", "acme"],
        "",
        "lin@example.com is not in acme",
    );
    assert!(admin(data, &["org", "show", "acme"]).contains("plan:           studio"));
}
