//! Page and asset URLs: a client may submit the address of a web page (a landing page, an
//! article) instead of a media file. The page is read once, with the same guard as media
//! (every address checked, redirects, bytes, time and rate bounded), and the media it
//! publishes is found in its markup:
//!
//! 1. Open Graph: `og:video:secure_url`, `og:video:url`, `og:video`, then `og:audio:secure_url`,
//!    `og:audio:url`, `og:audio`;
//! 2. Twitter's player card: `twitter:player:stream`;
//! 3. JSON-LD: a `VideoObject` or `AudioObject` (also inside `@graph` or a list) with a
//!    `contentUrl`;
//! 4. the page's own players: `<video src>`, `<video><source src>`, `<audio src>`,
//!    `<audio><source src>`.
//!
//! **The choice is predictable**: a candidate declared as video comes before one declared as
//! audio; among the same kind, the rule above that found it first wins, and within one rule
//! the first in document order. Relative addresses are resolved against the page's own
//! address after redirects and its `<base href>`. Extraction follows no page-to-page chains:
//! the chosen address must answer with media, or the scan is refused (`no_media_on_page`).
//!
//! The markup is parsed by `scraper` (Servo's html5ever and selectors: the HTML5 parsing
//! algorithm browsers use), not by patterns over the text, so comments, attribute quoting,
//! entity escapes and malformed markup are read as a browser would.

use std::path::Path;
use std::time::Duration;

use scraper::{Html, Selector};
use url::Url;

use super::fetch::{Downloaded, FetchError, Fetcher};

/// The most of a page that is read (bytes). The tags that name media sit in the `<head>`
/// or early in the body; a page is truncated, not refused, past this.
pub const MAX_PAGE_BYTES: u64 = 2 * 1024 * 1024;

/// Candidates kept per page at most (a page of a thousand `<video>` tags costs no more).
const MAX_CANDIDATES: usize = 64;

/// What a candidate is declared as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Video,
    Audio,
}

/// One media address a page publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub url: Url,
    pub kind: Kind,
    /// The rule that found it (`og:video`, `json-ld VideoObject`, `video`, …), for
    /// provenance.
    pub rule: &'static str,
    /// The rule's rank in the module's list (lower first).
    rank: usize,
    /// Its position in the page's markup, within its rule.
    order: usize,
}

/// Whether a response is a page: by its declared content type, or, when it declares none
/// or a generic one, by its first bytes (the WHATWG sniffing signatures for HTML).
#[must_use]
pub fn is_page(content_type: Option<&str>, head: &[u8]) -> bool {
    let declared = content_type.map(|ct| {
        ct.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    match declared.as_deref() {
        Some("text/html" | "application/xhtml+xml") => true,
        None | Some("" | "application/octet-stream" | "text/plain") => sniffs_as_html(head),
        Some(_) => false,
    }
}

/// The WHATWG MIME-sniffing rule for HTML: after leading whitespace, one of the HTML
/// signatures (case-insensitive) followed by a space or `>`.
fn sniffs_as_html(head: &[u8]) -> bool {
    let start = head
        .iter()
        .position(|b| !matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' '));
    let Some(start) = start else {
        return false;
    };
    let rest = &head[start..];
    const SIGNATURES: [&[u8]; 17] = [
        b"<!doctype html",
        b"<html",
        b"<head",
        b"<script",
        b"<iframe",
        b"<h1",
        b"<div",
        b"<font",
        b"<table",
        b"<a",
        b"<style",
        b"<title",
        b"<b",
        b"<body",
        b"<br",
        b"<p",
        b"<!--",
    ];
    SIGNATURES.iter().any(|sig| {
        rest.len() > sig.len()
            && rest[..sig.len()].eq_ignore_ascii_case(sig)
            && matches!(rest[sig.len()], b' ' | b'>')
    })
}

/// Where a scan's media came from when the client submitted a page: recorded in the result's
/// `provenance.input`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FromPage {
    /// The page as read, after redirects.
    pub page_url: String,
    /// The media address chosen on it.
    pub media_url: String,
    /// The rule that found it (`og:video`, `json-ld VideoObject`, `video`, …).
    pub found_by: &'static str,
}

/// Downloads the media a submitted URL stands for, as [`Fetcher::download`] does, except that a
/// URL that answers with a web page is read as a page: the media it publishes (the first
/// [`candidates`]) is downloaded instead, and [`FromPage`] says so. Every step runs under the
/// same guard, and all of them together within `timeout`.
///
/// # Errors
/// The download's errors; `NoMediaOnPage` when a page publishes no candidate, or its chosen
/// candidate answers with a page or a document rather than media (pages are not followed
/// further).
pub async fn download_media(
    fetcher: &Fetcher,
    url: &Url,
    dir: &Path,
    max_bytes: u64,
    partial: bool,
    timeout: Duration,
) -> Result<(Downloaded, Option<FromPage>), FetchError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
    match fetcher
        .download(url, dir, max_bytes, partial, timeout)
        .await
    {
        Err(FetchError::NotMedia(ct)) if is_page(Some(&ct), b"<html>") => {}
        Ok(d) if is_page(d.content_type.as_deref(), &first_bytes(d.path())) => {}
        other => return other.map(|d| (d, None)),
    }
    let page = fetcher.download_page(url, dir, left()).await?;
    let html =
        String::from_utf8_lossy(&std::fs::read(page.path()).unwrap_or_default()).into_owned();
    let page_url = page.url.clone();
    drop(page);
    let found = candidates(&html, &page_url);
    let Some(chosen) = found.into_iter().next() else {
        return Err(FetchError::NoMediaOnPage(format!(
            "the URL is a web page that publishes no video or audio (looked for og:video, og:audio, twitter:player:stream, JSON-LD VideoObject/AudioObject contentUrl, <video> and <audio> on {})",
            super::fetch::without_query(&page_url)
        )));
    };
    let not_media = |what: &str| {
        FetchError::NoMediaOnPage(format!(
            "the page's {} address answers with {what}, not audio or video; pages are not followed further",
            chosen.rule
        ))
    };
    let media = match fetcher
        .download(&chosen.url, dir, max_bytes, partial, left())
        .await
    {
        Err(FetchError::NotMedia(ct)) => return Err(not_media(&ct)),
        Ok(d) if is_page(d.content_type.as_deref(), &first_bytes(d.path())) => {
            return Err(not_media("a web page"));
        }
        other => other?,
    };
    let from = FromPage {
        page_url: super::fetch::without_query(&page_url),
        media_url: super::fetch::without_query(&chosen.url),
        found_by: chosen.rule,
    };
    Ok((media, Some(from)))
}

/// The first bytes of a downloaded file, for sniffing.
fn first_bytes(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut head = Vec::with_capacity(512);
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(512).read_to_end(&mut head);
    }
    head
}

/// The media candidates of a page at `page_url`, best first (see the module documentation
/// for the order). Only `http` and `https` addresses are kept.
#[must_use]
pub fn candidates(html: &str, page_url: &Url) -> Vec<Candidate> {
    let doc = Html::parse_document(html);
    let base = select(&doc, "base[href]")
        .next()
        .and_then(|b| b.value().attr("href"))
        .and_then(|href| page_url.join(href.trim()).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .unwrap_or_else(|| page_url.clone());
    let mut out: Vec<Candidate> = Vec::new();
    let push =
        |raw: &str, kind: Kind, rule: &'static str, rank: usize, out: &mut Vec<Candidate>| {
            if out.len() >= MAX_CANDIDATES {
                return;
            }
            let Ok(url) = base.join(raw.trim()) else {
                return;
            };
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return;
            }
            let order = out.len();
            out.push(Candidate {
                url,
                kind,
                rule,
                rank,
                order,
            });
        };
    // 1 and 2: meta properties, in the rule order of the module documentation.
    const META: [(&str, Kind, &str); 7] = [
        ("og:video:secure_url", Kind::Video, "og:video:secure_url"),
        ("og:video:url", Kind::Video, "og:video:url"),
        ("og:video", Kind::Video, "og:video"),
        ("og:audio:secure_url", Kind::Audio, "og:audio:secure_url"),
        ("og:audio:url", Kind::Audio, "og:audio:url"),
        ("og:audio", Kind::Audio, "og:audio"),
        (
            "twitter:player:stream",
            Kind::Video,
            "twitter:player:stream",
        ),
    ];
    for meta in select(&doc, "meta[content]") {
        let key = meta
            .value()
            .attr("property")
            .or_else(|| meta.value().attr("name"))
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if let Some((rank, (_, kind, rule))) =
            META.iter().enumerate().find(|(_, (k, _, _))| *k == key)
            && let Some(content) = meta.value().attr("content")
        {
            push(content, *kind, rule, rank, &mut out);
        }
    }
    // 3: JSON-LD objects.
    for script in select(&doc, "script[type]") {
        let ty = script.value().attr("type").unwrap_or("").trim();
        if !ty.eq_ignore_ascii_case("application/ld+json") {
            continue;
        }
        let text: String = script.text().collect();
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let mut found = Vec::new();
        json_ld_media(&value, 0, &mut found);
        for (url, kind) in found {
            let rule = match kind {
                Kind::Video => "json-ld VideoObject",
                Kind::Audio => "json-ld AudioObject",
            };
            push(&url, kind, rule, META.len(), &mut out);
        }
    }
    // 4: the page's own players.
    for (tag, kind) in [("video", Kind::Video), ("audio", Kind::Audio)] {
        for player in select(&doc, tag) {
            if let Some(src) = player.value().attr("src") {
                push(src, kind, tag, META.len() + 1, &mut out);
            }
            for source in player.select(&selector("source[src]")) {
                if let Some(src) = source.value().attr("src") {
                    push(src, kind, tag, META.len() + 1, &mut out);
                }
            }
        }
    }
    out.sort_by_key(|c| (c.kind, c.rank, c.order));
    out.dedup_by(|a, b| a.url == b.url);
    out
}

/// `VideoObject` / `AudioObject` `contentUrl`s anywhere in a JSON-LD value (objects, lists,
/// `@graph`), to a bounded depth.
fn json_ld_media(value: &serde_json::Value, depth: usize, out: &mut Vec<(String, Kind)>) {
    if depth > 8 || out.len() >= MAX_CANDIDATES {
        return;
    }
    match value {
        serde_json::Value::Array(items) => {
            for item in items {
                json_ld_media(item, depth + 1, out);
            }
        }
        serde_json::Value::Object(map) => {
            let types: Vec<&str> = match map.get("@type") {
                Some(serde_json::Value::String(t)) => vec![t.as_str()],
                Some(serde_json::Value::Array(ts)) => {
                    ts.iter().filter_map(serde_json::Value::as_str).collect()
                }
                _ => Vec::new(),
            };
            let kind = if types.iter().any(|t| t.ends_with("VideoObject")) {
                Some(Kind::Video)
            } else if types.iter().any(|t| t.ends_with("AudioObject")) {
                Some(Kind::Audio)
            } else {
                None
            };
            if let (Some(kind), Some(serde_json::Value::String(url))) =
                (kind, map.get("contentUrl"))
            {
                out.push((url.clone(), kind));
            }
            for (key, child) in map {
                if key != "contentUrl" {
                    json_ld_media(child, depth + 1, out);
                }
            }
        }
        _ => {}
    }
}

/// A compiled selector. The selectors here are constants; a typo is caught by the tests.
fn selector(css: &str) -> Selector {
    Selector::parse(css).unwrap_or_else(|e| panic!("selector {css:?}: {e}"))
}

fn select<'a>(doc: &'a Html, css: &str) -> impl Iterator<Item = scraper::ElementRef<'a>> + 'a {
    // The selector is owned by the iterator chain through `collect`: `Html::select` borrows it.
    let sel = selector(css);
    doc.select(&sel).collect::<Vec<_>>().into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Url {
        Url::parse("https://shop.example/products/blender?ref=ad").expect("url")
    }

    fn urls(html: &str) -> Vec<(String, Kind, &'static str)> {
        candidates(html, &page())
            .into_iter()
            .map(|c| (c.url.to_string(), c.kind, c.rule))
            .collect()
    }

    #[test]
    fn open_graph_video_wins_over_audio_and_players_in_the_documented_order() {
        let html = r#"<!doctype html><html><head>
            <meta property="og:audio" content="/a/voice.mp3">
            <meta property="og:video" content="https://cdn.example/v/plain.mp4">
            <meta property="og:video:secure_url" content="https://cdn.example/v/secure.mp4">
            </head><body><video src="player.mp4"></video>
            <audio><source src="/a/player.ogg"></audio></body></html>"#;
        let found = urls(html);
        assert_eq!(
            found,
            vec![
                (
                    "https://cdn.example/v/secure.mp4".into(),
                    Kind::Video,
                    "og:video:secure_url"
                ),
                (
                    "https://cdn.example/v/plain.mp4".into(),
                    Kind::Video,
                    "og:video"
                ),
                (
                    "https://shop.example/products/player.mp4".into(),
                    Kind::Video,
                    "video"
                ),
                (
                    "https://shop.example/a/voice.mp3".into(),
                    Kind::Audio,
                    "og:audio"
                ),
                (
                    "https://shop.example/a/player.ogg".into(),
                    Kind::Audio,
                    "audio"
                ),
            ]
        );
    }

    #[test]
    fn json_ld_in_a_graph_and_the_base_element_are_read() {
        let html = r#"<html><head><base href="https://media.example/root/">
            <script type="application/ld+json">
            {"@context":"https://schema.org","@graph":[
              {"@type":"Product","name":"Blender"},
              {"@type":["VideoObject"],"contentUrl":"clips/ad.webm","name":"Ad"}]}
            </script>
            <script type="application/ld+json">not json at all</script>
            </head><body><video><source src="second.mp4"></video></body></html>"#;
        let found = urls(html);
        assert_eq!(found[0].0, "https://media.example/root/clips/ad.webm");
        assert_eq!(found[0].2, "json-ld VideoObject");
        assert_eq!(found[1].0, "https://media.example/root/second.mp4");
    }

    #[test]
    fn twitter_player_stream_and_the_first_player_in_document_order() {
        let html = r#"<meta name="twitter:player:stream" content="https://x.example/s.mp4">
            <video src="one.mp4"></video><video src="two.mp4"></video>"#;
        let found = urls(html);
        assert_eq!(found[0].2, "twitter:player:stream");
        assert_eq!(found[1].0, "https://shop.example/products/one.mp4");
        assert_eq!(found[2].0, "https://shop.example/products/two.mp4");
    }

    #[test]
    fn markup_is_parsed_not_matched() {
        // Commented-out tags, other schemes and script text are not candidates; entities
        // in attributes are decoded as a browser would.
        let html = r#"<!-- <meta property="og:video" content="https://evil.example/x.mp4"> -->
            <script>var s = '<video src="fake.mp4">';</script>
            <video src="javascript:alert(1)"></video>
            <video src="file:///etc/passwd"></video>
            <video src="data:video/mp4;base64,AAAA"></video>
            <audio src="/a.mp3?x=1&amp;y=2"></audio>"#;
        let found = urls(html);
        assert_eq!(
            found,
            vec![(
                "https://shop.example/a.mp3?x=1&y=2".into(),
                Kind::Audio,
                "audio"
            )]
        );
    }

    #[test]
    fn a_page_without_media_has_no_candidates_and_a_flood_is_bounded() {
        assert!(urls("<html><body><p>Hello</p><img src=a.png></body></html>").is_empty());
        let flood = "<video src=v.mp4></video>".repeat(5000);
        let many: String = (0..5000)
            .map(|i| format!("<video src=v{i}.mp4></video>"))
            .collect();
        assert_eq!(candidates(&flood, &page()).len(), 1);
        assert!(candidates(&many, &page()).len() <= MAX_CANDIDATES);
    }

    #[test]
    fn pages_are_told_by_type_or_by_their_first_bytes() {
        assert!(is_page(Some("text/html; charset=utf-8"), b""));
        assert!(is_page(Some("application/xhtml+xml"), b""));
        assert!(is_page(None, b"\n  <!DOCTYPE html>\n<html>"));
        assert!(is_page(Some("application/octet-stream"), b"<html lang=en>"));
        assert!(!is_page(Some("video/mp4"), b"<html>"));
        assert!(!is_page(None, b"\x00\x00\x00\x20ftypisom"));
        assert!(!is_page(None, b"<htmlx"));
        assert!(!is_page(None, b"   "));
    }
}
