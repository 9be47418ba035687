use crate::support::TestApp;

#[tokio::test]
async fn hostile_urls_are_refused_before_any_connection() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let port = t.media.addr.port();
    let r = |to: &str| t.media.url(&format!("/redirect?to={}", urlencode(to)));
    let direct = [
        "http://127.0.0.2/clip.mp4".to_owned(),
        "http://127.0.0.1/clip.mp4".into(),
        "http://127.0.0.1:1/clip.mp4".into(),
        format!("http://localhost:{port}/media/clip.mp4"),
        "http://[::1]/x".into(),
        "http://10.0.0.1/x".into(),
        "http://172.16.5.4/x".into(),
        "http://192.168.1.1/x".into(),
        "http://169.254.169.254/latest/meta-data/".into(),
        "http://metadata.google.internal/computeMetadata/v1/".into(),
        "http://100.64.0.1/x".into(),
        "http://0.0.0.0/x".into(),
        "http://[::]/x".into(),
        "http://[fd00::1]/x".into(),
        "http://[fe80::1]/x".into(),
        "http://224.0.0.1/x".into(),
        "http://[::ffff:169.254.169.254]/x".into(),
        "http://[::ffff:10.0.0.1]/x".into(),
        "http://[64:ff9b::a9fe:a9fe]/x".into(),
    ];
    let redirects = [
        r(&format!("http://127.0.0.2:{port}/media/clip.mp4")),
        r(&format!("http://[::1]:{port}/media/clip.mp4")),
        r("http://169.254.169.254/latest/meta-data/"),
        r("http://10.0.0.1/x"),
        // The allowed media host's address on another port (FETCH_ALLOW_ADDRS names a port).
        r("http://127.0.0.1:1/media/clip.mp4"),
        r(&format!("http://localhost:{port}/media/clip.mp4")),
        r(&r(&r("http://192.168.0.1/x"))),
        // Numeric IPv4 forms: the URL grammar refuses them in a request (below), so the
        // guard meets them only as redirect targets, which the WHATWG parser reads.
        r("http://2852039166/x"), // 169.254.169.254 as one decimal number
        r("http://0xa9.0xfe.0xa9.0xfe/x"),
    ];
    for url in direct.iter().chain(redirects.iter()) {
        let (s, body) = t.submit_url(&org, "video", url).await;
        assert_eq!(
            (s.as_u16(), body["error"].as_str()),
            (400, Some("url_not_allowed")),
            "{url} -> {body}"
        );
    }
    for url in [
        "file:///etc/passwd",
        "gopher://example.com/",
        "ftp://example.com/clip.mp4",
        "http://user:pw@example.com/a.mp4",
        "http://2852039166/x",
        "http://0xa9.0xfe.0xa9.0xfe/x",
    ] {
        let (s, body) = t.submit_url(&org, "video", url).await;
        assert_eq!(s.as_u16(), 400, "{url} -> {body}");
    }
    // A redirect to a non-http scheme, and a redirect loop.
    let (s, body) = t.submit_url(&org, "video", &r("file:///etc/passwd")).await;
    assert_eq!(
        (s.as_u16(), body["error"].as_str()),
        (400, Some("url_not_allowed")),
        "{body}"
    );
    let mut chain = t.media.url("/media/clip.mp4");
    for _ in 0..7 {
        chain = r(&chain);
    }
    let (s, body) = t.submit_url(&org, "video", &chain).await;
    assert_eq!(
        (s.as_u16(), body["error"].as_str()),
        (422, Some("download_failed")),
        "{body}"
    );
    // An allowed redirect still works, so the refusals above are the guard's doing.
    let (s, body) = t
        .submit_url(&org, "video", &r(&t.media.url("/media/clip.mp4")))
        .await;
    assert_eq!(s.as_u16(), 202, "{body}");
    let (_, list) = t.get(&org, "/scans").await;
    assert_eq!(list["total"], 1);
    t.stop().await;
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
