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
//! The markup is read by html5ever's tokenizer (Servo's implementation of the HTML5
//! tokenization algorithm browsers use), not by patterns over the text, so comments, attribute
//! quoting, entity escapes, and the text of `<script>`, `<style>`, `<textarea>` and their kind
//! are read as a browser would. **One pass, in document order, with nothing built**: no tree
//! and no selector walks, so the cost is linear in the page (a tree builder checks the stack
//! of open elements at many start tags, and selecting `source` under every player visited
//! each nested player's descendants again: N nested players cost N²/2). A `<source>` belongs
//! to the innermost open `<video>`/`<audio>`. The pass is bounded three ways, and a page past
//! a bound is read up to it, as a page past [`MAX_PAGE_BYTES`] is: at most [`MAX_ELEMENTS`]
//! start tags, players nested at most [`MAX_PLAYER_DEPTH`] deep, and at most
//! [`PARSE_BUDGET`] of time (the tokenizer is fed a kilobyte at a time and the clock read
//! between feeds, so the one quadratic step left in it, duplicate-attribute checks within one
//! tag, cannot outrun the budget by more than a feed). It runs on a blocking thread, never on
//! the async runtime.

use std::cell::RefCell;
use std::path::Path;
use std::time::{Duration, Instant};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use url::Url;

use super::fetch::{Downloaded, FetchError, Fetcher};

/// The most of a page that is read (bytes). The tags that name media sit in the `<head>`
/// or early in the body; a page is truncated, not refused, past this.
pub const MAX_PAGE_BYTES: u64 = 2 * 1024 * 1024;

/// Candidates kept per rule at most (a page of a thousand `<video>` tags costs no more).
const MAX_CANDIDATES: usize = 64;

/// Start tags read at most; the rest of a page is not read.
pub const MAX_ELEMENTS: usize = 50_000;

/// Players (`<video>`, `<audio>`) nested deeper than this are not players of `<source>`s.
pub const MAX_PLAYER_DEPTH: usize = 16;

/// The most of one JSON-LD script that is kept (bytes); a longer one is not read.
const MAX_JSON_LD_BYTES: usize = 256 * 1024;

/// The time one page's markup may take to read; the rest is not read.
pub const PARSE_BUDGET: Duration = Duration::from_millis(250);

/// Bytes fed to the tokenizer between two looks at the clock.
const FEED_BYTES: usize = 1024;

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
/// same guard, and all of them together within `timeout`. The page is fetched once (its first
/// answer is the page that is read), and read on a blocking thread within [`PARSE_BUDGET`].
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
    let first = fetcher
        .download_media_or_page(url, dir, max_bytes, partial, timeout)
        .await?;
    if !is_page(first.content_type.as_deref(), &first_bytes(first.path())) {
        return Ok((first, None));
    }
    let page_url = first.url.clone();
    let found = {
        let page_url = page_url.clone();
        tokio::task::spawn_blocking(move || {
            let page = first;
            let html = read_page_file(page.path());
            let read = read_page(&html, &page_url, PARSE_BUDGET);
            if let Some(why) = read.stopped {
                tracing::info!(
                    page = %super::fetch::without_query(&page_url),
                    why,
                    "page read up to a bound"
                );
            }
            read.candidates
        })
        .await
        .map_err(|e| FetchError::Io(format!("reading the page: {e}")))?
    };
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

/// A downloaded page's text: at most [`MAX_PAGE_BYTES`] of it, invalid UTF-8 replaced (an
/// unreadable file reads as an empty page, which publishes nothing).
fn read_page_file(path: &Path) -> String {
    use std::io::Read;
    let mut bytes = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(MAX_PAGE_BYTES).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
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
    read_page(html, page_url, PARSE_BUDGET).candidates
}

/// What one pass over a page found, and where it stopped early (if it did).
#[derive(Debug)]
pub struct PageRead {
    pub candidates: Vec<Candidate>,
    /// Why the pass stopped before the end of the markup: too many elements, or the time
    /// budget. `None` when it read the whole page.
    pub stopped: Option<&'static str>,
}

/// Reads a page's markup in one pass, within `budget` (see the module documentation).
#[must_use]
pub fn read_page(html: &str, page_url: &Url, budget: Duration) -> PageRead {
    let tokenizer = Tokenizer::new(Pass::default(), TokenizerOpts::default());
    let queue = BufferQueue::default();
    let started = Instant::now();
    let mut rest = html;
    let mut stopped = None;
    while !rest.is_empty() {
        let cut = rest.floor_char_boundary(FEED_BYTES.min(rest.len()));
        // A kilobyte always holds a whole character; a cut at 0 cannot happen but must not
        // loop.
        let cut = if cut == 0 { rest.len() } else { cut };
        queue.push_back(StrTendril::from_slice(&rest[..cut]));
        rest = &rest[cut..];
        let _ = tokenizer.feed(&queue);
        if tokenizer.sink.state.borrow().elements > MAX_ELEMENTS {
            stopped = Some("more than 50000 elements");
            break;
        }
        if started.elapsed() > budget {
            stopped = Some("the time budget");
            break;
        }
    }
    if stopped.is_none() {
        tokenizer.end();
    }
    let state = tokenizer.sink.state.into_inner();
    PageRead {
        candidates: state.resolve(page_url),
        stopped,
    }
}

/// A candidate as the markup gives it, before it is resolved against the base.
#[derive(Debug)]
struct Raw {
    address: String,
    kind: Kind,
    rule: &'static str,
    rank: usize,
}

/// The meta properties of rules 1 and 2, in the rule order of the module documentation (a
/// meta's rank is its index here).
const META: [(&str, Kind); 7] = [
    ("og:video:secure_url", Kind::Video),
    ("og:video:url", Kind::Video),
    ("og:video", Kind::Video),
    ("og:audio:secure_url", Kind::Audio),
    ("og:audio:url", Kind::Audio),
    ("og:audio", Kind::Audio),
    ("twitter:player:stream", Kind::Video),
];
const JSON_LD_RANK: usize = META.len();
const PLAYER_RANK: usize = META.len() + 1;

/// The one pass's state: what it found, and the little it must remember of the markup.
#[derive(Debug, Default)]
struct PassState {
    /// The first `<base href>`.
    base: Option<String>,
    /// Candidates in document order.
    found: Vec<Raw>,
    /// How many were kept per rank (each capped at [`MAX_CANDIDATES`]).
    per_rank: [usize; PLAYER_RANK + 1],
    /// The open players, innermost last (at most [`MAX_PLAYER_DEPTH`]).
    players: Vec<Kind>,
    /// Players opened past [`MAX_PLAYER_DEPTH`], whose end tags come first.
    players_beyond: usize,
    /// The text of the JSON-LD script being read, if one is open (`None` inside it once it
    /// is over [`MAX_JSON_LD_BYTES`]).
    json_ld: Option<String>,
    in_json_ld: bool,
    /// Start tags seen.
    elements: usize,
}

#[derive(Debug, Default)]
struct Pass {
    state: RefCell<PassState>,
}

fn attr<'a>(tag: &'a Tag, name: &str) -> Option<&'a str> {
    tag.attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| &*a.value)
}

impl PassState {
    fn push(&mut self, address: &str, kind: Kind, rule: &'static str, rank: usize) {
        if self.per_rank[rank] >= MAX_CANDIDATES {
            return;
        }
        self.per_rank[rank] += 1;
        self.found.push(Raw {
            address: address.to_owned(),
            kind,
            rule,
            rank,
        });
    }

    fn player_rule(kind: Kind) -> &'static str {
        match kind {
            Kind::Video => "video",
            Kind::Audio => "audio",
        }
    }

    fn start_tag(&mut self, tag: &Tag) -> TokenSinkResult<()> {
        self.elements += 1;
        match &*tag.name {
            "base" => {
                if self.base.is_none()
                    && let Some(href) = attr(tag, "href")
                {
                    self.base = Some(href.to_owned());
                }
            }
            "meta" => {
                let key = attr(tag, "property")
                    .or_else(|| attr(tag, "name"))
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                if let Some((rank, (rule, kind))) =
                    META.iter().enumerate().find(|(_, (k, _))| *k == key)
                    && let Some(content) = attr(tag, "content")
                {
                    self.push(content, *kind, rule, rank);
                }
            }
            "script" => {
                let ld = attr(tag, "type")
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"));
                self.in_json_ld = ld;
                self.json_ld = ld.then(String::new);
                return TokenSinkResult::RawData(RawKind::ScriptData);
            }
            "video" | "audio" => {
                let kind = if &*tag.name == "video" {
                    Kind::Video
                } else {
                    Kind::Audio
                };
                if let Some(src) = attr(tag, "src") {
                    self.push(src, kind, Self::player_rule(kind), PLAYER_RANK);
                }
                if self.players.len() < MAX_PLAYER_DEPTH {
                    self.players.push(kind);
                } else {
                    self.players_beyond += 1;
                }
            }
            "source" => {
                if self.players_beyond == 0
                    && let Some(&kind) = self.players.last()
                    && let Some(src) = attr(tag, "src")
                {
                    self.push(src, kind, Self::player_rule(kind), PLAYER_RANK);
                }
            }
            // The elements whose text the tokenizer reads as text, as the tree builder
            // switches it (so `<textarea><video src=…>` is not a player).
            "title" | "textarea" => return TokenSinkResult::RawData(RawKind::Rcdata),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                return TokenSinkResult::RawData(RawKind::Rawtext);
            }
            "plaintext" => return TokenSinkResult::Plaintext,
            _ => {}
        }
        TokenSinkResult::Continue
    }

    fn end_tag(&mut self, tag: &Tag) {
        match &*tag.name {
            "script" => self.close_json_ld(),
            "video" | "audio" => {
                if self.players_beyond > 0 {
                    self.players_beyond -= 1;
                } else {
                    self.players.pop();
                }
            }
            _ => {}
        }
    }

    fn close_json_ld(&mut self) {
        let was = std::mem::take(&mut self.in_json_ld);
        let Some(text) = self.json_ld.take().filter(|_| was) else {
            return;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            return;
        };
        let mut media = Vec::new();
        json_ld_media(&value, 0, &mut media);
        for (address, kind) in media {
            let rule = match kind {
                Kind::Video => "json-ld VideoObject",
                Kind::Audio => "json-ld AudioObject",
            };
            self.push(&address, kind, rule, JSON_LD_RANK);
        }
    }

    fn text(&mut self, text: &str) {
        if let Some(json) = &mut self.json_ld {
            if json.len() + text.len() > MAX_JSON_LD_BYTES {
                self.json_ld = None;
            } else {
                json.push_str(text);
            }
        }
    }

    /// The candidates resolved against the base (the page's address after redirects, or its
    /// first `<base href>`), best first.
    fn resolve(self, page_url: &Url) -> Vec<Candidate> {
        let base = self
            .base
            .as_deref()
            .and_then(|href| page_url.join(href.trim()).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .unwrap_or_else(|| page_url.clone());
        let mut out: Vec<Candidate> =
            self.found
                .into_iter()
                .enumerate()
                .filter_map(|(order, raw)| {
                    let url = base.join(raw.address.trim()).ok()?;
                    (matches!(url.scheme(), "http" | "https") && url.host_str().is_some())
                        .then_some(Candidate {
                            url,
                            kind: raw.kind,
                            rule: raw.rule,
                            rank: raw.rank,
                            order,
                        })
                })
                .collect();
        out.sort_by_key(|c| (c.kind, c.rank, c.order));
        out.dedup_by(|a, b| a.url == b.url);
        out
    }
}

impl TokenSink for Pass {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut state = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) if tag.kind == TagKind::StartTag => return state.start_tag(&tag),
            Token::TagToken(tag) => state.end_tag(&tag),
            Token::CharacterTokens(text) => state.text(&text),
            // A script left open at the end of the page ends with it, as in a browser.
            Token::EOFToken => state.close_json_ld(),
            _ => {}
        }
        TokenSinkResult::Continue
    }
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
    fn a_source_belongs_to_its_innermost_player_and_text_elements_hold_no_players() {
        let html = r#"<audio><video><source src="inner.webm"></video><source src="outer.ogg"></audio>
            <textarea><video src="typed.mp4"></textarea>
            <style>video { background: url(x) } <video src="styled.mp4"></style>
            <title><video src="titled.mp4"></title>
            <noscript><video src="fallback.mp4"></noscript>"#;
        let found = urls(html);
        assert_eq!(
            found,
            vec![
                (
                    "https://shop.example/products/inner.webm".into(),
                    Kind::Video,
                    "video"
                ),
                (
                    "https://shop.example/products/outer.ogg".into(),
                    Kind::Audio,
                    "audio"
                ),
            ]
        );
        // A script left open at the end of the page is read to the end, as a browser does.
        let open =
            r#"<script type="application/ld+json">{"@type":"AudioObject","contentUrl":"/a.mp3"}"#;
        assert_eq!(urls(open)[0].0, "https://shop.example/a.mp3");
    }

    /// The finding of security round 4: N nested players cost N²/2 node visits, and a 2 MiB
    /// page would hold a core for minutes. One pass reads it in bounded work: the element cap
    /// stops it, and the players nested past the depth cap are not players.
    #[test]
    fn two_mebibytes_of_nested_players_are_read_in_one_bounded_pass() {
        let unit = r#"<video><source src="s.mp4">"#;
        let html = unit.repeat(MAX_PAGE_BYTES as usize / unit.len());
        assert!(html.len() > 2_000_000);
        let started = std::time::Instant::now();
        let read = read_page(&html, &page(), Duration::from_secs(60));
        let took = started.elapsed();
        assert_eq!(read.stopped, Some("more than 50000 elements"));
        // Every source under the first MAX_PLAYER_DEPTH players names the same address.
        assert_eq!(read.candidates.len(), 1);
        eprintln!("2 MiB of nested players in {took:?}");
        let deep = format!(
            "{}{}",
            "<video>".repeat(MAX_PLAYER_DEPTH),
            r#"<audio><source src="deep.ogg">"#
        );
        assert!(urls(&deep).is_empty(), "past the depth cap");
    }

    /// Duplicate-attribute checks within one tag are the tokenizer's one quadratic step: a
    /// tag of a hundred thousand attributes is cut off by the time budget between feeds.
    #[test]
    fn a_tag_of_countless_attributes_is_cut_off_by_the_budget() {
        let mut html = String::from("<meta property=\"og:video\" content=\"/v.mp4\"><video ");
        for i in 0..200_000 {
            html.push_str(&format!("a{i} "));
        }
        html.push('>');
        let read = read_page(&html, &page(), Duration::from_millis(50));
        assert_eq!(read.stopped, Some("the time budget"));
        assert_eq!(
            read.candidates[0].url.path(),
            "/v.mp4",
            "what came before it stands"
        );
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

/// Property tests (security round 4, point 7): any input, markup-shaped or not, is read in
/// bounded time into a bounded list of http(s) candidates, the same each time.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn page() -> Url {
        Url::parse("https://shop.example/products/blender?ref=ad").expect("url")
    }

    /// Markup made of the pieces the reader acts on (players, sources, metas, JSON-LD, base,
    /// text elements, comments) and arbitrary text between them.
    fn markup() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("<video>".to_owned()),
            Just("</video>".to_owned()),
            Just("<audio>".to_owned()),
            Just("</audio>".to_owned()),
            "[a-z0-9./:?=&%-]{0,24}".prop_map(|u| format!("<source src=\"{u}\">")),
            "[a-zA-Z0-9./:?=&%-]{0,24}".prop_map(|u| format!("<video src='{u}'>")),
            "(og|twitter):[a-z:_]{0,20}".prop_map(|k| format!("<meta property=\"{k}\" content=\"/m.mp4\">")),
            Just(r#"<script type="application/ld+json">{"@type":"VideoObject","contentUrl":"/v.webm"}"#.to_owned()),
            Just("</script>".to_owned()),
            Just("<textarea>".to_owned()),
            Just("</textarea>".to_owned()),
            Just("<style>".to_owned()),
            "[a-z0-9./:-]{0,30}".prop_map(|u| format!("<base href=\"{u}\">")),
            Just("<!--".to_owned()),
            Just("-->".to_owned()),
            "\\PC{0,16}",
        ];
        prop::collection::vec(piece, 0..300).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn any_page_is_read_in_bounded_time_into_bounded_candidates(
            html in prop_oneof![markup(), "\\PC{0,4000}", "[<>/=\"' a-z]{0,4000}"]
        ) {
            let started = Instant::now();
            let read = read_page(&html, &page(), PARSE_BUDGET);
            prop_assert!(started.elapsed() < PARSE_BUDGET + Duration::from_secs(1));
            prop_assert!(read.candidates.len() <= MAX_CANDIDATES * (PLAYER_RANK + 1));
            for c in &read.candidates {
                prop_assert!(matches!(c.url.scheme(), "http" | "https"), "{}", c.url);
                prop_assert!(c.url.host_str().is_some());
                // Percent-encoding at most triples a byte; nothing else grows an address.
                prop_assert!(c.url.as_str().len() <= 3 * html.len() + 64 + page().as_str().len());
            }
            let again = read_page(&html, &page(), PARSE_BUDGET);
            if read.stopped.is_none() && again.stopped.is_none() {
                prop_assert_eq!(read.candidates, again.candidates);
            }
        }
    }
}
