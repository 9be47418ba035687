//! The connection layer (`api/server.rs`): a client that sends its headers too slowly is cut
//! off, and connections over the cap wait until one closes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{FixtureAnalyzer, TestApp};

fn addr(t: &TestApp) -> String {
    t.base.trim_start_matches("http://").to_owned()
}

/// Reads until the server closes the connection (or `limit` passes); returns what it sent.
async fn read_to_close(stream: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let t = TestApp::start_with(
        |c| c.http.header_read_timeout_secs = 1,
        Arc::new(FixtureAnalyzer),
    )
    .await;
    let mut slow = TcpStream::connect(addr(&t)).await.expect("connect");
    // A request line and one header, then nothing: the blank line never comes.
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    let started = Instant::now();
    let sent = read_to_close(&mut slow, Duration::from_secs(8))
        .await
        .expect("the server must close a connection whose headers never end");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_secs(5),
        "closed after {waited:?}"
    );
    let text = String::from_utf8_lossy(&sent);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
    // A client that sends its headers in time is served as before.
    let r = t
        .http
        .get(format!("{}/healthz", t.base))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 200);
    t.stop().await;
}

#[tokio::test]
async fn connections_over_the_cap_wait_until_one_closes() {
    let t = TestApp::start_with(|c| c.http.max_connections = 1, Arc::new(FixtureAnalyzer)).await;
    // Holds the only slot (connected, nothing sent yet).
    let holder = TcpStream::connect(addr(&t)).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut waiting = TcpStream::connect(addr(&t)).await.expect("connect");
    waiting
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    assert!(
        read_to_close(&mut waiting, Duration::from_millis(700))
            .await
            .is_none(),
        "served over the cap"
    );
    drop(holder);
    let sent = read_to_close(&mut waiting, Duration::from_secs(5))
        .await
        .expect("served once the slot was free");
    let text = String::from_utf8_lossy(&sent);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    t.stop().await;
}

/// Security (DNS rebinding): a request that names a host the service does not answer for is
/// refused 421 on every route but `/healthz`; IP literals, `localhost`, the public URL's host
/// and configured names are served.
#[tokio::test]
async fn requests_for_unknown_host_names_are_refused() {
    let t = TestApp::start_with(
        |c| {
            c.artifacts.public_url = Some("https://scan.example.com".into());
            c.http.allowed_hosts = vec!["api.internal".into()];
        },
        Arc::new(FixtureAnalyzer),
    )
    .await;
    let status = |path: &'static str, host: &'static str| {
        let (http, url) = (t.http.clone(), format!("{}{path}", t.base));
        async move {
            http.get(url)
                .header("host", host)
                .send()
                .await
                .expect("send")
        }
    };
    for host in [
        "attacker.example",
        "attacker.example:8080",
        "localhost.attacker.example",
    ] {
        for path in ["/metrics", "/readyz", "/api/v1/lenses"] {
            let r = status(path, host).await;
            assert_eq!(r.status().as_u16(), 421, "{host}{path}");
            let v: serde_json::Value = r.json().await.expect("json");
            assert_eq!(v["error"], "host_not_allowed");
        }
        assert_eq!(status("/healthz", host).await.status().as_u16(), 200);
    }
    for host in [
        "127.0.0.1",
        "localhost:1234",
        "scan.example.com",
        "API.internal",
        "[::1]:80",
    ] {
        assert_eq!(
            status("/readyz", host).await.status().as_u16(),
            200,
            "{host}"
        );
    }
    t.stop().await;
}
