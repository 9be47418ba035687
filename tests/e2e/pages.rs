//! Page and asset URLs (issue 44): a submitted web page is read for the media it publishes
//! (`host/src/media/page.rs`), under the same guard as media; a page without usable media is
//! refused at submit with `no_media_on_page`.

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
