//! Page and asset URLs (issue 44): a submitted web page is read for the media it publishes
//! (`host/src/media/page.rs`), under the same guard as media; a page without usable media is
//! refused at submit with `no_media_on_page`.

use std::time::Duration;

use serde_json::json;

use crate::support::TestApp;

/// A landing page with Open Graph tags: the declared video is scanned (the 5 s clip, not the
/// 3 s tone the page also declares, nor the page's own missing player), and the result's
/// provenance names the page, the media and the rule that chose it.
#[tokio::test]
async fn a_page_url_is_scanned_from_the_media_it_publishes() {
    let t = TestApp::start().await;
    let org = t.org("acme", 2_000).await;
    for (page, media, rule, seconds) in [
        ("/media/page_og.html", "/media/clip.mp4", "og:video", 5),
        (
            "/media/page_jsonld.html",
            "/media/tone.wav",
            "json-ld AudioObject",
            3,
        ),
    ] {
        let (s, b) = t
            .post(
                &org,
                "/scans",
                &json!({"input": {"type": "video", "video_url": t.media.url(&format!("{page}?utm=ad"))}}),
            )
            .await;
        assert_eq!(s.as_u16(), 202, "{b}");
        let id = b["scan_id"].as_str().expect("id").to_owned();
        assert_eq!(t.wait_final(&id).await, "complete");
        let (_, scan) = t.get(&org, &format!("/scans/{id}")).await;
        let input = &scan["provenance"]["input"];
        assert_eq!(input["kind"], "page", "{scan}");
        // Recorded without the query, which can carry a token ("?…" marks the cut).
        assert_eq!(
            input["page_url"],
            format!("{}?…", t.media.url(page)),
            "{input}"
        );
        assert_eq!(input["media_url"], t.media.url(media), "{input}");
        assert_eq!(input["found_by"], rule, "{input}");
        assert_eq!(
            scan["timeline"].as_array().expect("timeline").len(),
            seconds,
            "the scan read another file than {media}"
        );
        // The page is fetched once at submit and once by the worker, each time read from
        // its first answer (it was fetched twice each time before security round 4).
        let hits = t.media.state.hits.lock().expect("lock").clone();
        assert_eq!(
            hits.get(&format!("media{}", page.trim_start_matches("/media"))),
            Some(&2),
            "{hits:?}"
        );
    }
    t.stop().await;
}

/// Pages that publish nothing usable are refused at submit, with one code and a message that
/// says why; a candidate at a private address is refused by the address guard, as any media
/// URL would be. Nothing is queued or charged.
#[tokio::test]
async fn pages_without_usable_media_are_refused_at_submit() {
    let t = TestApp::start().await;
    let org = t.org("acme", 2_000).await;
    for (page, status, code, says) in [
        (
            "/media/page.html",
            422,
            "no_media_on_page",
            "publishes no video or audio",
        ),
        (
            "/media/page_chain.html",
            422,
            "no_media_on_page",
            "pages are not followed further",
        ),
        ("/media/page_private.html", 400, "url_not_allowed", ""),
    ] {
        let (s, b) = t
            .post(
                &org,
                "/scans",
                &json!({"input": {"type": "video", "video_url": t.media.url(page)}}),
            )
            .await;
        assert_eq!(
            (s.as_u16(), b["error"].as_str()),
            (status, Some(code)),
            "{page}: {b}"
        );
        assert!(
            b["message"].as_str().unwrap_or("").contains(says),
            "{page}: {b}"
        );
    }
    let (_, list) = t.get(&org, "/scans").await;
    assert_eq!(list["scans"].as_array().map(Vec::len), Some(0), "{list}");
    t.stop().await;
}

/// CPU seconds a process has used so far (user and system), from `/proc/PID/stat`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command name (which may hold spaces) start after its closing ')'.
    let after = stat.rsplit_once(')').expect("comm").1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after the name.
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    let hz: f64 = String::from_utf8(
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .expect("getconf")
            .stdout,
    )
    .expect("utf8")
    .trim()
    .parse()
    .expect("CLK_TCK");
    ticks / hz
}

/// Security round 4, the High finding: N nested players cost N²/2 node visits on the async
/// runtime (11.3 s of a core at 30,000 tags; two 280 KB pages held `/healthz` for 32 s). A
/// 2 MiB page of nested players, submitted to the real binary, is answered with a refusal in
/// under a second of the server's CPU, `/healthz` answers all the while, and each refusal
/// counts against the failed-work budget, so a client cannot repeat it for free.
#[tokio::test]
async fn a_page_of_nested_players_is_refused_in_bounded_work_while_the_service_answers() {
    use crate::support::{funded_key, media_server, serve_with_env};
    let media = media_server().await;
    let page = "<!doctype html><html><body>".to_owned()
        + &"<video><div>".repeat(2 * 1024 * 1024 / 12)
        + "</body></html>";
    assert!(page.len() >= 2 * 1024 * 1024 - 64);
    std::fs::write(media.state.dir.join("nested_players.html"), &page).expect("write page");
    let dir = tempfile::tempdir().expect("tempdir");
    let key = funded_key(dir.path());
    let server = serve_with_env(dir.path(), &[("BRAINSCAN_ORG_FAILED_SCANS_PER_HOUR", "2")]);
    let http = reqwest::Client::new();
    let base = server.base.clone();
    let health = tokio::spawn({
        let (http, base) = (http.clone(), base.clone());
        async move {
            let mut slowest = Duration::ZERO;
            for _ in 0..40 {
                let started = std::time::Instant::now();
                let s = http
                    .get(format!("{base}/healthz"))
                    .send()
                    .await
                    .expect("healthz")
                    .status();
                assert_eq!(s.as_u16(), 200);
                slowest = slowest.max(started.elapsed());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            slowest
        }
    });
    let before = cpu_seconds(server.child.id());
    let submit = |n: u32| {
        let (http, base, key) = (http.clone(), base.clone(), key.clone());
        let url = media.url(&format!("/media/nested_players.html?n={n}"));
        async move {
            let r = http
                .post(format!("{base}/api/v1/scans"))
                .bearer_auth(&key)
                .json(&json!({"input": {"type": "video", "video_url": url}}))
                .send()
                .await
                .expect("submit");
            let status = r.status().as_u16();
            let body: serde_json::Value = r.json().await.expect("json");
            (status, body)
        }
    };
    let (status, body) = submit(1).await;
    let cpu = cpu_seconds(server.child.id()) - before;
    assert_eq!(
        (status, body["error"].as_str()),
        (422, Some("no_media_on_page")),
        "{body}"
    );
    assert!(cpu < 1.0, "the refusal took {cpu:.2} s of the server's CPU");
    let slowest = health.await.expect("health task");
    assert!(
        slowest < Duration::from_secs(1),
        "/healthz took {slowest:?} while the page was read"
    );
    // Refusals are failed work: the second fills the budget of two, the third waits.
    let (status, body) = submit(2).await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = submit(3).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (429, Some("rate_limited")),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .contains("failed in the last hour"),
        "{body}"
    );
    eprintln!(
        "refused a 2 MiB nested page with {cpu:.3} s of server CPU; slowest /healthz {slowest:?}"
    );
}
