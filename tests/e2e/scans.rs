use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::TestApp;

#[tokio::test]
async fn create_normalises_lenses_and_model_and_answers_202() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let (s, body) = t
        .submit(
            &org,
            "clip.mp4",
            json!({"lenses": ["memory", "emotion", "memory", "attention"], "model": "mary"}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["status"], "queued");
    assert_eq!(body["lenses"], json!(["memory", "attention"]));
    let id = body["scan_id"].as_str().expect("id");
    assert!(id.starts_with("qualia_run_"), "{id}");
    assert_eq!(id.split('_').count(), 4);

    let (s, body) = t.submit(&org, "clip.mp4", json!({})).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    assert_eq!(
        body["lenses"],
        json!(["attention", "purchase_intent", "manipulation"])
    );

    // A long list is capped, not refused: 100 unknown names then a known one is read as
    // its first 64 names (all unknown), so the defaults apply; a known name first is kept.
    let mut long: Vec<String> = (0..100).map(|i| format!("unknown{i}")).collect();
    long.push("memory".into());
    let (s, body) = t.submit(&org, "clip.mp4", json!({ "lenses": long })).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{body}");
    assert_eq!(
        body["lenses"],
        json!(["attention", "purchase_intent", "manipulation"])
    );
    long.insert(0, "memory".into());
    let (s, body) = t.submit(&org, "clip.mp4", json!({ "lenses": long })).await;
    assert_eq!(
        (s, &body["lenses"]),
        (StatusCode::ACCEPTED, &json!(["memory"]))
    );

    // Unknown values are ignored (spec): a list with nothing else in it, or an empty one, is
    // the same as no list.
    for lenses in [json!(["emotion"]), json!([]), json!(["emotion", "bogus"])] {
        let (s, body) = t
            .submit(&org, "clip.mp4", json!({ "lenses": lenses }))
            .await;
        assert_eq!(s, StatusCode::ACCEPTED, "{lenses}: {body}");
        assert_eq!(
            body["lenses"],
            json!(["attention", "purchase_intent", "manipulation"]),
            "{lenses}"
        );
    }
    t.stop().await;
}

#[tokio::test]
async fn invalid_bodies_get_the_error_envelope() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let media = t.media.url("/media/clip.mp4");
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!({"input": {"type": "text", "text": "buy now"}}),
            400,
            "unsupported_input",
        ),
        (
            json!({"input": {"type": "url", "url": media, "modality": "image"}}),
            400,
            "unsupported_input",
        ),
        (json!({"input": {"type": "video"}}), 400, "invalid_request"),
        (
            json!({"input": {"type": "hologram", "url": media}}),
            400,
            "invalid_request",
        ),
        (
            json!({"input": {"type": "video", "video_url": "not a url"}}),
            400,
            "invalid_request",
        ),
        (
            json!({"input": {"type": "video", "video_url": media}, "model": "gpt"}),
            400,
            "invalid_request",
        ),
        (
            json!({"input": {"type": "video", "video_url": media}, "granularity": "frame"}),
            400,
            "invalid_request",
        ),
        (
            json!({"input": {"type": "video", "video_url": media}, "lenses": "attention"}),
            400,
            "invalid_request",
        ),
        (
            json!({"input": {"type": "video", "video_url": media}, "options": {"include_raw": "yes"}}),
            400,
            "invalid_request",
        ),
        (
            json!({"input": {"type": "video", "video_url": media}, "webhook_url": "http://10.0.0.5/hook"}),
            400,
            "url_not_allowed",
        ),
        (json!({"nothing": true}), 400, "invalid_request"),
        (
            json!({"input": {"type": "video", "video_url": t.media.url("/media/page.html")}}),
            422,
            "no_media_on_page",
        ),
        (
            json!({"input": {"type": "video", "video_url": t.media.url("/media/garbage.bin")}}),
            422,
            "unsupported_media",
        ),
        (
            json!({"input": {"type": "video", "video_url": t.media.url("/media/missing.mp4")}}),
            422,
            "download_failed",
        ),
    ];
    for (body, status, code) in cases {
        let (s, got) = t.post(&org, "/scans", &body).await;
        assert_eq!(
            (s.as_u16(), got["error"].as_str()),
            (status, Some(code)),
            "{body} -> {got}"
        );
        assert!(got["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    // Bad JSON, no content type, oversize body, unknown route, wrong method.
    let r = t
        .http
        .post(t.url("/scans"))
        .bearer_auth(&org.key)
        .header("content-type", "application/json")
        .body("{\"input\":")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(
        r.json::<Value>().await.expect("json")["error"],
        "invalid_json"
    );
    let r = t
        .http
        .post(t.url("/scans"))
        .bearer_auth(&org.key)
        .body("{}")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 415);
    assert_eq!(
        r.json::<Value>().await.expect("json")["error"],
        "unsupported_media_type"
    );
    let big = format!(
        "{{\"input\":{{\"type\":\"video\",\"text\":\"{}\"}}}}",
        "x".repeat(100_000)
    );
    let r = t
        .http
        .post(t.url("/scans"))
        .bearer_auth(&org.key)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 413);
    assert_eq!(
        r.json::<Value>().await.expect("json")["error"],
        "payload_too_large"
    );
    let r = t
        .http
        .get(format!("{}/api/v2/nothing", t.base))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(r.json::<Value>().await.expect("json")["error"], "not_found");
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let r = t
            .http
            .request(method.parse().expect("m"), t.url("/wallet"))
            .bearer_auth(&org.key)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), 405, "{method}");
        assert_eq!(
            r.json::<Value>().await.expect("json")["error"],
            "method_not_allowed"
        );
    }
    // Nothing above was stored.
    let (_, list) = t.get(&org, "/scans").await;
    assert_eq!(list["total"], 0);
    t.stop().await;
}

/// An MP4 whose index (`moov`) is at its end, larger than the submit-time probe reads from
/// its start: the end is read by a Range request and the clip is refused up front. A host that
/// ignores ranges gets the clip accepted, and the worker refuses it.
#[tokio::test]
async fn over_three_minutes_is_refused_up_front_from_the_end_of_the_file() {
    // long.mp4 is 7.7 KB with its moov in the last 2.6 KB: 3000 bytes from either end.
    let t = TestApp::start_with(
        |c| c.fetch.probe_bytes = 3000,
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 1_000).await;
    let before = t.wallet(&org).await;
    let (s, body) = t
        .submit_url(&org, "video", &t.media.url("/ranged/long.mp4"))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"], "video_too_long");
    assert!(
        body["message"]
            .as_str()
            .expect("message")
            .contains("200.0 seconds"),
        "{body}"
    );
    assert_eq!(t.wallet(&org).await, before);

    let (s, body) = t.submit(&org, "long.mp4", json!({})).await;
    assert_eq!(s, StatusCode::ACCEPTED, "a host without ranges: {body}");
    let id = body["scan_id"].as_str().expect("id");
    assert_eq!(t.wait_final(id).await, "error");
    let (_, scan) = t.get(&org, &format!("/scans/{id}")).await;
    assert!(
        scan["error"]
            .as_str()
            .expect("error")
            .starts_with("video_too_long"),
        "{scan}"
    );
    t.stop().await;
}

#[tokio::test]
async fn over_three_minutes_is_rejected_up_front_with_no_charge() {
    let t = TestApp::start().await;
    let org = t.org("acme", 1_000).await;
    let before = t.wallet(&org).await;
    let (s, body) = t.submit(&org, "long.mp4", json!({})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"], "video_too_long");
    assert_eq!(t.wallet(&org).await, before);
    let (_, list) = t.get(&org, "/scans").await;
    assert_eq!(list["total"], 0);
    t.stop().await;
}

#[tokio::test]
async fn completed_scan_shows_fields_by_options() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let (_, a) = t.submit(&org, "clip.mp4", json!({"lenses": ["attention", "manipulation"], "options": {"include_raw": true, "include_fmri": true}})).await;
    let (_, b) = t.submit(&org, "clip.mp4", json!({"lenses": ["memory"], "options": {"include_reasons": false, "include_benchmark": false}})).await;
    let a_id = a["scan_id"].as_str().expect("id");
    let b_id = b["scan_id"].as_str().expect("id");
    assert_eq!(t.wait_final(a_id).await, "complete");
    assert_eq!(t.wait_final(b_id).await, "complete");

    let (s, a) = t.get(&org, &format!("/scans/{a_id}")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(a["status"], "complete");
    assert_eq!(a["duration_sec"], 5.0);
    let timeline = a["timeline"].as_array().expect("timeline");
    assert_eq!(timeline.len(), 5, "one entry per second");
    let first = &timeline[0];
    assert_eq!(first["second"], 0);
    assert!(first["scores"]["attention"].is_number());
    assert!(first["scores"].get("memory").is_none());
    assert_eq!(first["benchmark"]["attention"]["label"], "average");
    assert!(first["reasons"]["attention"].is_string());
    assert_eq!(first["raw"].as_object().expect("raw").len(), 7);
    assert_eq!(first["raw"]["Default Mode"], first["raw_labeled"]["Memory"]);
    assert_eq!(first["raw"]["Somatomotor"], first["raw_labeled"]["Voice"]);
    assert!(a["moments"].is_array());
    assert!(a["summary"].is_string());
    assert!(a.get("buy_moments").is_some_and(Value::is_null));
    let fmri = a["fmri_url"].as_str().expect("a signed fMRI URL");
    assert!(
        fmri.starts_with(&format!(
            "{}/api/v1/artifacts/scans/{a_id}/fmri.png?expires=",
            t.base
        )),
        "{fmri}"
    );
    assert_eq!(a["manipulation"]["risk_band"], "moderate");
    assert_eq!(a["grade"], "C");

    let (_, b) = t.get(&org, &format!("/scans/{b_id}")).await;
    for absent in [
        "moments",
        "summary",
        "buy_moments",
        "manipulation",
        "fmri_url",
    ] {
        assert!(b.get(absent).is_none(), "{absent} must be absent: {b}");
    }
    let e = &b["timeline"][0];
    for absent in ["benchmark", "reasons", "raw", "raw_labeled"] {
        assert!(e.get(absent).is_none(), "{absent} must be absent");
    }
    t.stop().await;
}

#[tokio::test]
async fn in_flight_and_error_shapes() {
    let t = TestApp::start_with(|_| {}, std::sync::Arc::new(crate::support::FailingAnalyzer)).await;
    let org = t.org("acme", 10_000).await;
    let (_, body) = t.submit(&org, "clip.mp4", json!({})).await;
    let id = body["scan_id"].as_str().expect("id");
    let (s, early) = t.get(&org, &format!("/scans/{id}")).await;
    assert_eq!(s, StatusCode::OK);
    assert!(early.get("timeline").is_none());
    assert!(early["progress"].is_number() && early["stage"].is_string());
    assert_eq!(t.wait_final(id).await, "error");
    let (_, failed) = t.get(&org, &format!("/scans/{id}")).await;
    assert_eq!(failed["status"], "error");
    assert!(
        failed["error"]
            .as_str()
            .expect("error")
            .starts_with("plugin_failed: plugin lens-broken@1.0.0 (lens) trapped"),
        "{failed}"
    );
    assert!(failed.get("overall_score").is_none());
    // Failed scans are never charged.
    assert_eq!(t.wallet(&org).await["free_credit_remaining_usd"], 2.5);
    assert_eq!(t.app.db.charge_count(id).await.expect("count"), 0);
    t.stop().await;
}

#[tokio::test]
async fn worker_retries_a_flaky_host_then_gives_up() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    // The host answers the submit-time probe, then 503 twice, then the file: attempts 1 and 2
    // fail transiently and attempt 3 (of 3) completes.
    let url = t.media.url("/flaky/clip.mp4?fail=2");
    let (s, body) = t.submit_url(&org, "video", &url).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{body}");
    let id = body["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");
    assert_eq!(
        t.media.state.hits.lock().expect("lock")["flaky/clip.mp4/2"],
        4
    );

    // Three failures exhaust the attempts: the scan ends in error, uncharged.
    let url = t.media.url("/flaky/tone.wav?fail=3");
    let (s, body) = t.submit_url(&org, "audio", &url).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{body}");
    let id = body["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "error");
    let (_, failed) = t.get(&org, &format!("/scans/{id}")).await;
    assert_eq!(
        failed["error"],
        "download_failed: the media host answered HTTP 503"
    );
    assert_eq!(t.app.db.charge_count(&id).await.expect("count"), 0);
    t.stop().await;
}

#[tokio::test]
async fn other_organisations_scans_are_invisible() {
    let t = TestApp::start().await;
    let a = t.org("a", 10_000).await;
    let b = t.org("b", 10_000).await;
    let (_, created) = t.submit(&a, "clip.mp4", json!({})).await;
    let id = created["scan_id"].as_str().expect("id");
    t.wait_final(id).await;
    let (s_missing, missing) = t.get(&b, "/scans/qualia_run_doesnot_exist").await;
    let (s_other, other) = t.get(&b, &format!("/scans/{id}")).await;
    assert_eq!(
        (s_missing, s_other),
        (StatusCode::NOT_FOUND, StatusCode::NOT_FOUND)
    );
    assert_eq!(
        missing, other,
        "another organisation's scan must look exactly like a missing one"
    );
    let (_, list) = t.get(&b, "/scans").await;
    assert_eq!(list["total"], 0);
    let (_, analyze) = t.post(&b, "/analyze", &json!({"scan_id": id})).await;
    assert_eq!(analyze["error"], "not_found");
    // B's fetch did not settle A's charge.
    assert_eq!(t.app.db.charge_count(id).await.expect("count"), 0);
    t.stop().await;
}

#[tokio::test]
async fn list_is_newest_first_and_clamped() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (_, b) = t.submit_tone(&org, json!({})).await;
        ids.push(b["scan_id"].as_str().expect("id").to_owned());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (_, list) = t.get(&org, "/scans?limit=0").await;
    assert_eq!(
        (
            list["object"].as_str(),
            list["total"].as_i64(),
            list["limit"].as_i64(),
            list["offset"].as_i64()
        ),
        (Some("list"), Some(3), Some(1), Some(0))
    );
    assert_eq!(list["scans"][0]["scan_id"], ids[2].as_str());
    let (_, list) = t.get(&org, "/scans?limit=1000&offset=1").await;
    assert_eq!(list["limit"], 100);
    let got: Vec<&str> = list["scans"]
        .as_array()
        .expect("scans")
        .iter()
        .map(|s| s["scan_id"].as_str().expect("id"))
        .collect();
    assert_eq!(got, vec![ids[1].as_str(), ids[0].as_str()]);
    let entry = &list["scans"][0];
    assert_eq!(entry["input"]["kind"], "audio");
    assert!(entry["created_at"].as_str().expect("ts").ends_with('Z'));
    let (s, bad) = t.get(&org, "/scans?limit=abc").await;
    assert_eq!(
        (s, bad["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
    // Lenses endpoint.
    let (_, lenses) = t.get(&org, "/lenses").await;
    assert_eq!(
        lenses["lenses"],
        json!(["attention", "memory", "purchase_intent", "manipulation"])
    );
    t.stop().await;
}

#[tokio::test]
async fn idempotency_key_replays_and_conflicts() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let body = json!({"input": {"type": "video", "video_url": t.media.url("/media/clip.mp4")}, "lenses": ["memory"]});
    let send = |b: Value, key: &'static str| {
        let req = t
            .http
            .post(t.url("/scans"))
            .bearer_auth(&org.key)
            .header("idempotency-key", key)
            .json(&b);
        async move {
            let r = req.send().await.expect("send");
            let replayed = r.headers().get("idempotent-replayed").is_some();
            (
                r.status().as_u16(),
                replayed,
                r.json::<Value>().await.expect("json"),
            )
        }
    };
    let (s1, r1, first) = send(body.clone(), "order-1").await;
    let (s2, r2, second) = send(body.clone(), "order-1").await;
    assert_eq!((s1, r1), (202, false));
    assert_eq!((s2, r2), (202, true));
    assert_eq!(first, second);
    let mut other = body.clone();
    other["lenses"] = json!(["attention"]);
    let (s3, _, conflict) = send(other, "order-1").await;
    assert_eq!((s3, conflict["error"].as_str()), (409, Some("conflict")));
    let (_, list) = t.get(&org, "/scans").await;
    assert_eq!(list["total"], 1, "a replay must not create a second scan");
    // Past 24 hours the key is free again.
    t.clock
        .set(chrono::Utc::now() + chrono::Duration::hours(25));
    let (s4, r4, third) = send(body, "order-1").await;
    assert_eq!((s4, r4), (202, false));
    assert_ne!(third["scan_id"], first["scan_id"]);
    t.stop().await;
}

#[tokio::test]
async fn health_readiness_and_metrics() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let (_, b) = t.submit(&org, "clip.mp4", json!({})).await;
    t.wait_final(b["scan_id"].as_str().expect("id")).await;
    let h: Value = t
        .http
        .get(format!("{}/healthz", t.base))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(h["status"], "ok");
    let r = t
        .http
        .get(format!("{}/readyz", t.base))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.headers().get("x-request-id").is_some());
    // A made-up method is counted, under a fixed label (no series per client-chosen token).
    let brew = reqwest::Method::from_bytes(b"BREWCOFFEE").expect("method");
    t.http
        .request(brew, format!("{}/healthz", t.base))
        .send()
        .await
        .expect("send");
    let text = t
        .http
        .get(format!("{}/metrics", t.base))
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("text");
    assert!(text.contains("brainscan_http_requests_total"), "{text}");
    assert!(!text.contains("BREWCOFFEE"), "{text}");
    assert!(text.contains("method=\"OTHER\""), "{text}");
    assert!(
        text.contains("brainscan_scans{status=\"complete\"}"),
        "{text}"
    );
    assert!(text.contains("brainscan_queue_jobs{"), "{text}");
    assert!(text.contains("brainscan_job_duration_seconds"), "{text}");
    assert!(!text.contains(&org.key));
    t.stop().await;
}

#[tokio::test]
async fn a_cancelled_scan_stays_cancelled_and_is_never_charged() {
    let t = TestApp::start_with(
        |c| c.fetch.probe_timeout_secs = 1,
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 10_000).await;
    // The slow host makes the submit probe time out (accepted unprobed) and keeps the worker
    // downloading for a few seconds.
    let url = t.media.url("/slow/clip.mp4");
    let (s, b) = t.submit_url(&org, "video", &url).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{b}");
    let id = b["scan_id"].as_str().expect("id").to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while t.app.db.get_scan_by_id(&id).await.expect("scan").stage != "downloading" {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (s, cancelled) = t
        .post(&org, &format!("/scans/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert!(
        cancelled["error"]
            .as_str()
            .expect("error")
            .starts_with("cancelled: ")
    );
    // The worker notices at its next heartbeat (500 ms in tests) and stops mid-download; the
    // slow clip would take over 4 s to download.
    let cancelled_at = tokio::time::Instant::now();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let depth = t.app.db.queue_depth().await.expect("depth");
        if depth.iter().all(|(kind, _, n)| kind != "scan" || *n == 0) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "job never finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(3),
        "the job ran on after the cancel"
    );
    let (_, after) = t.get(&org, &format!("/scans/{id}")).await;
    assert_eq!(after["status"], "cancelled", "{after}");
    assert_eq!(t.app.db.charge_count(&id).await.expect("count"), 0);
    let (s, again) = t
        .post(&org, &format!("/scans/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(
        (s.as_u16(), again["error"].as_str()),
        (409, Some("scan_not_cancellable"))
    );
    let other = t.org("other", 0).await;
    let (s, _) = t
        .post(&other, &format!("/scans/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    t.stop().await;
}

/// Tenant fairness (issue: contract and hardening): organisation A queues twenty scans from a
/// drip-feed host before B submits one. With two workers and A capped at two running scans,
/// B's scan is claimed at the first free worker, ahead of A's older backlog, so it waits at
/// most about one of A's scans; first-in-first-out it would wait for all twenty.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_organisations_backlog_does_not_hold_up_another() {
    let t = TestApp::start_with(
        |c| {
            c.queue.workers = 2;
            c.queue.org_running_scans = 2;
            c.fetch.probe_timeout_secs = 1;
        },
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let a = t.org("a", 10_000).await;
    let b = t.org("b", 10_000).await;
    let slow = t.media.url("/slow/tone.wav"); // 2 KiB per 100 ms: about 2.5 s per scan
    // Submitted at once: two probe the host (the organisation's probe share), the rest are
    // accepted unprobed, so the whole backlog is queued within the probe timeout.
    let submitted =
        futures_util::future::join_all((0..20).map(|_| t.submit_url(&a, "audio", &slow))).await;
    let mut backlog = Vec::new();
    for (s, body) in submitted {
        assert_eq!(s, StatusCode::ACCEPTED, "{body}");
        backlog.push(body["scan_id"].as_str().expect("id").to_owned());
    }
    let (s, body) = t.submit_tone(&b, json!({})).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{body}");
    let bs = body["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&bs).await, "complete");
    let mut a_done = 0;
    for id in &backlog {
        let row = t.app.db.get_scan_by_id(id).await.expect("scan");
        a_done += usize::from(row.status == "complete");
    }
    assert!(
        a_done <= 3,
        "B finished only after {a_done} of A's twenty scans"
    );
    t.stop().await;
}

/// Submit-time probes are bounded per organisation: with one slot, a second submission made
/// while the first is still probing a slow host is accepted at once, unprobed (the worker
/// checks the file), instead of a second fetch running alongside.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_of_submissions_does_not_probe_more_than_the_organisations_share() {
    let t = TestApp::start_with(
        |c| {
            c.fetch.probe_concurrency_per_org = 1;
            c.fetch.probe_timeout_secs = 3;
            c.queue.workers = 0;
        },
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 10_000).await;
    let slow = t.media.url("/slow/clip.mp4"); // 2 KiB per 100 ms: the probe runs its 3 s out
    let first = {
        let (http, url, key) = (t.http.clone(), t.url("/scans"), org.key.clone());
        let slow = slow.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let r = http
                .post(url)
                .bearer_auth(key)
                .json(&json!({"input": {"type": "video", "video_url": slow}}))
                .send()
                .await
                .expect("send");
            (r.status().as_u16(), started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = std::time::Instant::now();
    let (s, body) = t.submit_url(&org, "video", &slow).await;
    let second = started.elapsed();
    assert_eq!(s, StatusCode::ACCEPTED, "{body}");
    let (s, first_took) = first.await.expect("join");
    assert_eq!(s, 202);
    assert!(
        first_took >= Duration::from_millis(2_500),
        "the first submission probed for {first_took:?}"
    );
    assert!(
        second < Duration::from_millis(1_500),
        "the second waited {second:?}: it probed instead of finding the share taken"
    );
    t.stop().await;
}

/// Security: a host that drips the file just above the minimum rate until the whole-download
/// deadline passes fails the scan at once (permanent, no retries that would hold a worker for
/// the deadline again), uncharged.
#[tokio::test]
async fn a_download_that_outlasts_its_deadline_with_bytes_flowing_is_not_retried() {
    let t = TestApp::start_with(
        |c| {
            c.fetch.fetch_timeout_secs = 1;
            c.fetch.probe_timeout_secs = 1;
            // 20 KiB/s from /slow: above a minimum rate of 1 KiB/s.
            c.fetch.fetch_min_rate_kib = 1;
            c.queue.scan_max_attempts = 3;
        },
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 10_000).await;
    let before = t.wallet(&org).await;
    let (s, b) = t
        .submit_url(&org, "video", &t.media.url("/slow/clip.mp4"))
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{b}");
    let id = b["scan_id"].as_str().expect("id").to_owned();
    let started = std::time::Instant::now();
    assert_eq!(t.wait_final(&id).await, "error");
    let (_, scan) = t.get(&org, &format!("/scans/{id}")).await;
    let error = scan["error"].as_str().expect("error");
    assert!(
        error.starts_with("download_failed") && error.contains("minimum transfer rate"),
        "{scan}"
    );
    // One attempt of ~1 s, not three with back-off between them.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(t.wallet(&org).await, before);
    t.stop().await;
}

/// Security: failed scans are never charged, so an organisation has a bounded budget of
/// failed work: once that many of its scans failed within the hour, new submissions are
/// refused 429 (nothing queued, nothing fetched) while other organisations go on.
#[tokio::test]
async fn an_organisation_whose_scans_keep_failing_is_refused_after_its_budget() {
    let t = TestApp::start_with(
        |c| {
            c.queue.org_failed_scans_per_hour = 2;
            c.fetch.fetch_timeout_secs = 1;
            c.fetch.probe_timeout_secs = 1;
            c.fetch.fetch_min_rate_kib = 1;
        },
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("dripper", 10_000).await;
    let other = t.org("bystander", 10_000).await;
    for _ in 0..2 {
        let (s, b) = t
            .submit_url(&org, "video", &t.media.url("/slow/clip.mp4"))
            .await;
        assert_eq!(s, StatusCode::ACCEPTED, "{b}");
        assert_eq!(
            t.wait_final(b["scan_id"].as_str().expect("id")).await,
            "error"
        );
    }
    let (s, e) = t.submit(&org, "clip.mp4", json!({})).await;
    assert_eq!(
        (s.as_u16(), e["error"].as_str()),
        (429, Some("rate_limited")),
        "{e}"
    );
    assert!(
        e["message"]
            .as_str()
            .expect("message")
            .contains("failed in the last hour"),
        "{e}"
    );
    let (s, b) = t.submit(&other, "clip.mp4", json!({})).await;
    assert_eq!(
        s,
        StatusCode::ACCEPTED,
        "another organisation is not affected: {b}"
    );
    t.stop().await;
}
