//! The fMRI render behind a signed, expiring URL (local artifact store).

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::TestApp;

async fn fetch(t: &TestApp, url: &str) -> (StatusCode, Option<String>, Vec<u8>) {
    let r = t.http.get(url).send().await.expect("send");
    let status = StatusCode::from_u16(r.status().as_u16()).expect("status");
    let ctype = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, ctype, r.bytes().await.expect("body").to_vec())
}

#[tokio::test]
async fn the_fmri_url_serves_the_carpet_plot_for_one_hour_and_refuses_tampering() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let (_, created) = t
        .submit(&org, "clip.mp4", json!({"options": {"include_fmri": true}}))
        .await;
    let id = created["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");
    let (_, scan) = t.get(&org, &format!("/scans/{id}")).await;
    let url = scan["fmri_url"].as_str().expect("fmri_url").to_owned();

    // No API key needed: the signature is the credential.
    let (status, ctype, body) = fetch(&t, &url).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ctype.as_deref(), Some("image/png"));
    let reader = png::Decoder::new(std::io::Cursor::new(body))
        .read_info()
        .expect("a PNG");
    let info = reader.info();
    // 5 s clip: 5 columns of the cell width, 7 rows of 24 px with 2 px gaps.
    assert_eq!(
        info.width,
        5 * brainscan::render::cell_width(5),
        "one column per second"
    );
    assert_eq!(info.height, 7 * 24 + 6 * 2);

    // Tampered signature, or another key with this signature: refused.
    let tampered = url.replace("signature=", "signature=0");
    let (status, _, body) = fetch(&t, &tampered).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let err: Value = serde_json::from_slice(&body).expect("error body");
    assert_eq!(err["error"], "invalid_signature");
    let other = url.replace("/fmri.png", "/other.png");
    assert_eq!(fetch(&t, &other).await.0, StatusCode::FORBIDDEN);
    let bare = url.split('?').next().expect("path").to_owned();
    assert_eq!(fetch(&t, &bare).await.0, StatusCode::FORBIDDEN);
    // Pushing the expiry forward breaks the signature too.
    let expires: i64 = url
        .split("expires=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .and_then(|s| s.parse().ok())
        .expect("expires");
    let now = chrono::Utc::now().timestamp();
    assert!(
        (3590..=3610).contains(&(expires - now)),
        "expires in an hour: {}",
        expires - now
    );
    let extended = url.replace(
        &format!("expires={expires}"),
        &format!("expires={}", expires + 86_400),
    );
    assert_eq!(fetch(&t, &extended).await.0, StatusCode::FORBIDDEN);

    // An hour and a minute later the same link has expired; a fresh fetch gives a new one.
    t.clock
        .set(chrono::Utc::now() + chrono::Duration::seconds(3_660));
    let (status, _, body) = fetch(&t, &url).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let err: Value = serde_json::from_slice(&body).expect("error body");
    assert_eq!(err["error"], "link_expired");
    let (_, again) = t.get(&org, &format!("/scans/{id}")).await;
    let fresh = again["fmri_url"].as_str().expect("fresh url");
    assert_ne!(fresh, url);
    assert_eq!(fetch(&t, fresh).await.0, StatusCode::OK);
    t.stop().await;
}

#[tokio::test]
async fn without_include_fmri_nothing_is_rendered() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let (_, created) = t.submit(&org, "clip.mp4", json!({})).await;
    let id = created["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");
    let (_, scan) = t.get(&org, &format!("/scans/{id}")).await;
    assert!(scan.get("fmri_url").is_none());
    let stored = t.dir.path().join("artifacts/scans").join(&id);
    assert!(!stored.exists(), "no render stored for {id}");
}

/// Artifact downloads: a range reads and sends exactly its bytes, every response says
/// `nosniff`, and past `BRAINSCAN_ARTIFACT_CONCURRENCY` streams a download is refused 503
/// `busy` (with `Retry-After`) until one in progress ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_stream_exact_ranges_with_nosniff_and_a_concurrency_cap() {
    let t = crate::support::TestApp::start_with(
        |c| c.artifacts.artifact_concurrency = 1,
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    // 15 MiB of a known pattern (the largest artifact is 16 MiB): more than loopback socket
    // buffers hold, so an unread response keeps streaming.
    let bytes: Vec<u8> = (0..15 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let key = "scans/scan_test/big.mp4";
    t.app.artifacts.put(key, bytes.clone()).await.expect("put");
    let url = t
        .app
        .artifacts
        .signed_url(key, &t.base, t.app.clock.now_ms() / 1000)
        .await
        .expect("url");
    let get = |range: Option<&str>| {
        let mut r = t.http.get(&url);
        if let Some(range) = range {
            r = r.header("range", range);
        }
        r.send()
    };

    let r = get(Some("bytes=1000000-1000000")).await.expect("send");
    assert_eq!(r.status().as_u16(), 206);
    let h = r.headers().clone();
    assert_eq!(
        h["content-range"],
        format!("bytes 1000000-1000000/{}", bytes.len()).as_str()
    );
    assert_eq!(h["content-length"], "1");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["content-type"], "video/mp4");
    assert_eq!(
        r.bytes().await.expect("body").as_ref(),
        &bytes[1_000_000..=1_000_000]
    );
    let r = get(Some("bytes=-4096")).await.expect("send");
    assert_eq!(r.status().as_u16(), 206);
    assert_eq!(
        r.bytes().await.expect("body").as_ref(),
        &bytes[bytes.len() - 4096..]
    );
    let r = get(Some(&format!("bytes={}-", bytes.len())))
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 416);

    // One download in progress (headers read, body not): the next is refused.
    let first = get(None).await.expect("send");
    assert_eq!(first.status().as_u16(), 200);
    assert_eq!(
        first.headers()["content-length"],
        bytes.len().to_string().as_str()
    );
    let second = get(Some("bytes=0-0")).await.expect("send");
    assert_eq!(second.status().as_u16(), 503);
    assert_eq!(second.headers()["retry-after"], "1");
    let v: Value = second.json().await.expect("json");
    assert_eq!(v["error"], "busy");
    // The first completes whole and correct, and frees its slot.
    assert_eq!(first.bytes().await.expect("body").as_ref(), &bytes[..]);
    let mut freed = false;
    for _ in 0..50 {
        if get(Some("bytes=0-0"))
            .await
            .expect("send")
            .status()
            .as_u16()
            == 206
        {
            freed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(freed, "the slot is released once the body is sent");
    // Error bodies and JSON say nosniff too.
    let (s, _) = t.get(&t.org("acme", 0).await, "/scans/scan_missing").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let r = t
        .http
        .get(format!("{}/api/v1/lenses", t.base))
        .send()
        .await
        .expect("send");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    t.stop().await;
}

/// Security round 4: 40 connections that never read a 4 MB video held every artifact slot, and
/// every tenant's links answered 503 for as long as they stayed open. A client now holds at
/// most `BRAINSCAN_ARTIFACT_CONCURRENCY_PER_CLIENT` slots (429 past that, while other clients
/// still get theirs), and a reader that stops reading is cut off by the send timeout, which
/// frees its slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_readers_cannot_hold_the_artifact_slots() {
    use tokio::io::AsyncWriteExt;
    let t = crate::support::TestApp::start_with(
        |c| {
            c.artifacts.artifact_concurrency = 8;
            c.artifacts.artifact_concurrency_per_client = 2;
            c.http.send_timeout_secs = 1;
            c.http.trusted_proxies = vec!["127.0.0.1".parse().expect("proxy")];
        },
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    // 15 MiB: more than loopback socket buffers hold, so an unread response stalls.
    let bytes: Vec<u8> = (0..15 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let key = "scans/scan_test/slow.mp4";
    t.app.artifacts.put(key, bytes.clone()).await.expect("put");
    let url = t
        .app
        .artifacts
        .signed_url(key, &t.base, t.app.clock.now_ms() / 1000)
        .await
        .expect("url");
    let path = url.trim_start_matches(&t.base).to_owned();
    let addr = t.base.trim_start_matches("http://").to_owned();
    // Two connections from one client that ask for the whole file and never read.
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let mut s = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nX-Forwarded-For: 198.51.100.1\r\n\r\n")
                .as_bytes(),
        )
        .await
        .expect("write");
        stalled.push(s);
    }
    let status = |client: &'static str| {
        let (http, url) = (t.http.clone(), url.clone());
        async move {
            http.get(url)
                .header("x-forwarded-for", client)
                .header("range", "bytes=0-0")
                .send()
                .await
                .expect("send")
                .status()
                .as_u16()
        }
    };
    // Wait until both stalled responses hold their slots.
    let mut held = false;
    for _ in 0..50 {
        if t.app
            .artifact_clients
            .held_by("198.51.100.1".parse().expect("ip"))
            == 2
        {
            held = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(held, "both stalled downloads hold a slot");
    assert_eq!(
        status("198.51.100.1").await,
        429,
        "the client holds its cap"
    );
    assert_eq!(status("203.0.113.5").await, 206, "another client is served");
    // The send timeout (1 s here) cuts the stalled readers off and frees their slots.
    let mut freed = false;
    for _ in 0..60 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if t.app
            .artifact_clients
            .held_by("198.51.100.1".parse().expect("ip"))
            == 0
        {
            freed = true;
            break;
        }
    }
    assert!(freed, "a reader that stops reading is cut off");
    assert_eq!(status("198.51.100.1").await, 206);
    drop(stalled);
    t.stop().await;
}

/// The deadline grows with the body: a minute, and a second per 64 KiB (16 MiB: 316 s).
#[test]
fn an_artifact_body_has_a_deadline_by_its_size() {
    use brainscan::api::artifacts::body_deadline;
    assert_eq!(body_deadline(0).as_secs(), 60);
    assert_eq!(body_deadline(16 * 1024 * 1024).as_secs(), 60 + 256);
}
