//! The guarded HTTP client for everything fetched on a client's behalf.
//!
//! reqwest streams the body to a temporary file under a byte cap; redirects are followed by
//! hand so every hop is checked by the [`AddressPolicy`] before a connection is made, and the
//! [`GuardedResolver`] pins connections to the addresses it checked. No proxies are used (a
//! proxy would connect on our behalf to addresses we never checked).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION, RANGE};
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;
use url::Url;

use super::guard::{AddressPolicy, GuardedResolver};
use crate::config::{FetchConfig, MinRate};

/// Why a fetch failed. `code()` is the stable error code shown to clients.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("the URL is not allowed: {0}")]
    Refused(String),
    #[error("the media host answered HTTP {0}")]
    Status(u16),
    #[error("the file is larger than the {0}-byte limit")]
    TooLarge(u64),
    #[error("the URL does not point to a media file (content type {0})")]
    NotMedia(String),
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
    #[error("the media host did not answer in time")]
    Timeout,
    /// The body arrived slower than the configured minimum rate (a drip-feeding host).
    #[error("the media host sent {0} bytes/s on average, below the minimum transfer rate")]
    TooSlow(u64),
    #[error("could not reach the media host: {0}")]
    Network(String),
    #[error("could not store the download: {0}")]
    Io(String),
    /// A range request answered with other bytes than asked for (the host ignores ranges).
    #[error("the media host does not serve byte ranges")]
    RangeIgnored,
    /// The URL is a web page, and it publishes no media that answers as media (see
    /// [`super::page`]).
    #[error("{0}")]
    NoMediaOnPage(String),
}

impl FetchError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Refused(_) => "url_not_allowed",
            Self::TooLarge(_) => "media_too_large",
            Self::NotMedia(_) => "unsupported_media",
            Self::NoMediaOnPage(_) => "no_media_on_page",
            _ => "download_failed",
        }
    }

    /// Worth retrying later: timeouts, network errors, 5xx, 408 and 429.
    pub fn transient(&self) -> bool {
        match self {
            Self::Timeout | Self::Network(_) | Self::Io(_) => true,
            Self::Status(s) => *s >= 500 || *s == 408 || *s == 429,
            _ => false,
        }
    }
}

/// A finished (or deliberately partial) download: one file, `media`, alone in a job folder of
/// its own (mode 0700), removed with the folder on drop. ffprobe and ffmpeg run in that
/// folder, so no relative name inside the file leads to another job's media or the data
/// folder (see [`super::demuxers`] for why the file may not open others at all).
#[derive(Debug)]
pub struct Downloaded {
    folder: TempDir,
    path: std::path::PathBuf,
    pub bytes: u64,
    pub content_type: Option<String>,
    /// False when a partial (probe) fetch stopped before the end of the file.
    pub complete: bool,
    /// The whole file's size when the host said it (`Content-Range` of a 206, or the
    /// `Content-Length` of a 200).
    pub total_bytes: Option<u64>,
    /// The address the body came from, after redirects (a page's relative links resolve
    /// against it).
    pub url: Url,
}

impl Downloaded {
    /// The downloaded file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The job folder the file sits alone in, for files made from it (a probe's sparse copy).
    #[must_use]
    pub fn folder(&self) -> &Path {
        self.folder.path()
    }
}

/// What a download accepts: media (pages and documents are refused by their content type),
/// or either media or a web page (a page is read up to [`super::page::MAX_PAGE_BYTES`], so a
/// submitted page URL is fetched once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Media,
    MediaOrPage,
}

/// The total size in a `Content-Range: bytes a-b/TOTAL` header, and the first byte `a`.
fn content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let start = span.split_once('-')?.0.trim().parse().ok()?;
    Some((start, total.trim().parse().ok()))
}

/// The guarded client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Fetcher {
    /// For every port no allowed address names: only public addresses resolve.
    client: reqwest::Client,
    /// One client per port that `FETCH_ALLOW_ADDRS` names, whose resolver also passes the
    /// addresses allowed on that port. The URL's port is the port connected to (no proxy), so
    /// an allowed internal host is reachable on its port and nowhere else.
    by_port: Arc<Vec<(u16, reqwest::Client)>>,
    policy: Arc<AddressPolicy>,
    max_redirects: usize,
    /// Bodies slower than this are aborted (`None`: only the whole-call timeout applies).
    min_rate: Option<MinRate>,
}

/// A whole-download deadline that passed. With bytes flowing, the host is dripping the file
/// just above the minimum rate: `TooSlow`, which is permanent, since a retry would hold a
/// worker for the whole deadline again (three retries came to about 15 minutes a scan).
/// With nothing received it is `Timeout`, worth a retry.
fn timed_out(received: &std::sync::atomic::AtomicU64, started: tokio::time::Instant) -> FetchError {
    match received.load(std::sync::atomic::Ordering::Relaxed) {
        0 => FetchError::Timeout,
        bytes => too_slow(bytes, started.elapsed()),
    }
}

fn too_slow(bytes: u64, elapsed: Duration) -> FetchError {
    FetchError::TooSlow((bytes as f64 / elapsed.as_secs_f64().max(1e-3)) as u64)
}

fn classify(e: &reqwest::Error) -> FetchError {
    if e.is_timeout() {
        return FetchError::Timeout;
    }
    // reqwest's message names the URL, query included: a presigned media URL or a webhook
    // token would land in the stored error, which the client reads, and in the logs.
    let mut text = match e.url() {
        Some(url) => e.to_string().replace(url.as_str(), &without_query(url)),
        None => e.to_string(),
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let part = s.to_string();
        // The resolver's refusal surfaces as a connect error whose chain carries it.
        if part.contains(super::guard::NOT_PUBLIC) {
            return FetchError::Refused(part);
        }
        text = format!("{text}: {part}");
        source = s.source();
    }
    FetchError::Network(text)
}

/// `url` without its query and fragment, for messages and logs (they can carry signatures and
/// tokens).
#[must_use]
pub fn without_query(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    if url.query().is_some() {
        format!("{shown}?…")
    } else {
        shown.to_string()
    }
}

/// Content types that are certainly not audio or video.
fn is_not_media(content_type: &str) -> bool {
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    ct.starts_with("text/")
        || ct.starts_with("image/")
        || ct.starts_with("font/")
        || matches!(
            ct.as_str(),
            "application/json"
                | "application/xml"
                | "application/xhtml+xml"
                | "application/javascript"
                | "application/pdf"
                | "application/zip"
        )
}

impl Fetcher {
    /// # Errors
    /// Fails only if the TLS stack cannot be initialised.
    pub fn new(config: &FetchConfig) -> anyhow::Result<Self> {
        let policy = Arc::new(AddressPolicy {
            allow_loopback: config.allow_loopback_fetch,
            allow_addrs: config.fetch_allow_addrs.clone(),
        });
        let build = |exempt: Vec<std::net::IpAddr>| {
            reqwest::Client::builder()
                .dns_resolver(Arc::new(GuardedResolver {
                    policy: policy.clone(),
                    exempt,
                }))
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .connect_timeout(config.connect_timeout())
                .user_agent(concat!("brainscan/", env!("CARGO_PKG_VERSION")))
                .build()
        };
        let client = build(Vec::new())?;
        let by_port = policy
            .exempt_ports()
            .into_iter()
            .map(|port| Ok((port, build(policy.exempt_on(port))?)))
            .collect::<Result<Vec<_>, reqwest::Error>>()?;
        Ok(Self {
            client,
            by_port: Arc::new(by_port),
            policy,
            max_redirects: config.fetch_max_redirects,
            min_rate: config.min_rate(),
        })
    }

    /// The client whose resolver fits `url`'s port.
    fn client_for(&self, url: &Url) -> &reqwest::Client {
        let port = url.port_or_known_default();
        self.by_port
            .iter()
            .find(|(p, _)| Some(*p) == port)
            .map_or(&self.client, |(_, c)| c)
    }

    pub fn policy(&self) -> &AddressPolicy {
        &self.policy
    }

    /// Downloads `url` into a job folder of its own made in `dir`.
    ///
    /// With `partial`, at most `max_bytes` are read (a `Range` request is made; servers that
    /// ignore it are cut off) and the result says whether the whole file fit. Without it, a
    /// file over `max_bytes` fails with `TooLarge`.
    ///
    /// # Errors
    /// See [`FetchError`]; the whole call is bounded by `timeout`.
    pub async fn download(
        &self,
        url: &Url,
        dir: &Path,
        max_bytes: u64,
        partial: bool,
        timeout: Duration,
    ) -> Result<Downloaded, FetchError> {
        let from = partial.then_some(0);
        let received = std::sync::atomic::AtomicU64::new(0);
        let started = tokio::time::Instant::now();
        tokio::time::timeout(
            timeout,
            self.download_inner(url, dir, max_bytes, from, &received, Want::Media),
        )
        .await
        .map_err(|_| {
            // A partial fetch (the submit-time probe) runs on a budget, not a download
            // deadline: running out of it says nothing against the host.
            if partial {
                FetchError::Timeout
            } else {
                timed_out(&received, started)
            }
        })?
    }

    /// Downloads `url` as [`Self::download`] does, except that a response declared as a web page
    /// (`text/html`, `application/xhtml+xml`) is read as a page: at most
    /// [`super::page::MAX_PAGE_BYTES`], truncated past that, through the same guard, redirect,
    /// rate and time limits, instead of being refused. The caller tells a page by its
    /// `content_type` (or its first bytes). One request for what may be either.
    ///
    /// # Errors
    /// See [`FetchError`]; the whole call is bounded by `timeout`.
    pub async fn download_media_or_page(
        &self,
        url: &Url,
        dir: &Path,
        max_bytes: u64,
        partial: bool,
        timeout: Duration,
    ) -> Result<Downloaded, FetchError> {
        let from = partial.then_some(0);
        let received = std::sync::atomic::AtomicU64::new(0);
        let started = tokio::time::Instant::now();
        tokio::time::timeout(
            timeout,
            self.download_inner(url, dir, max_bytes, from, &received, Want::MediaOrPage),
        )
        .await
        .map_err(|_| {
            if partial {
                FetchError::Timeout
            } else {
                timed_out(&received, started)
            }
        })?
    }

    /// Downloads at most `max_bytes` from byte `start` on (a `Range` request), e.g. the end
    /// of an MP4 whose index is there. `Ok(None)` when the host ignores the range (it would
    /// send the file from its start).
    ///
    /// # Errors
    /// See [`FetchError`]; bounded by `timeout`.
    pub async fn download_range(
        &self,
        url: &Url,
        dir: &Path,
        start: u64,
        max_bytes: u64,
        timeout: Duration,
    ) -> Result<Option<Downloaded>, FetchError> {
        let received = std::sync::atomic::AtomicU64::new(0);
        match tokio::time::timeout(
            timeout,
            self.download_inner(url, dir, max_bytes, Some(start), &received, Want::Media),
        )
        .await
        .map_err(|_| FetchError::Timeout)?
        {
            Err(FetchError::RangeIgnored) => Ok(None),
            other => other.map(Some),
        }
    }

    /// `from`: `None` for the whole file, `Some(start)` for at most `max_bytes` from `start`
    /// (from 0: the head of the file, for the submit-time probe).
    async fn download_inner(
        &self,
        url: &Url,
        dir: &Path,
        max_bytes: u64,
        from: Option<u64>,
        received: &std::sync::atomic::AtomicU64,
        want: Want,
    ) -> Result<Downloaded, FetchError> {
        let mut partial = from.is_some();
        let mut max_bytes = max_bytes;
        let mut current = url.clone();
        let mut hops = 0;
        let response = loop {
            self.policy
                .check_url(&current)
                .map_err(|r| FetchError::Refused(r.0))?;
            let mut request = self.client_for(&current).get(current.clone());
            if let Some(start) = from {
                let end = start.saturating_add(max_bytes.saturating_sub(1));
                request = request.header(RANGE, format!("bytes={start}-{end}"));
            }
            let response = request.send().await.map_err(|e| classify(&e))?;
            if response.status().is_redirection() {
                hops += 1;
                if hops > self.max_redirects {
                    return Err(FetchError::TooManyRedirects(self.max_redirects));
                }
                let location = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or(FetchError::Status(response.status().as_u16()))?;
                current = current
                    .join(location)
                    .map_err(|e| FetchError::Refused(format!("bad redirect target: {e}")))?;
                continue;
            }
            break response;
        };
        let status = response.status();
        if !(status.is_success()) || status == StatusCode::NO_CONTENT {
            return Err(FetchError::Status(status.as_u16()));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let declared_page = content_type
            .as_deref()
            .is_some_and(|ct| super::page::is_page(Some(ct), b""));
        match (want, &content_type) {
            (Want::MediaOrPage, Some(_)) if declared_page => {
                // Read as a page: truncated at the page limit, never refused for its size.
                partial = true;
                max_bytes = super::page::MAX_PAGE_BYTES;
            }
            (Want::Media | Want::MediaOrPage, Some(ct)) if is_not_media(ct) => {
                return Err(FetchError::NotMedia(ct.clone()));
            }
            _ => {}
        }
        if !partial
            && let Some(len) = response.content_length()
            && len > max_bytes
        {
            return Err(FetchError::TooLarge(max_bytes));
        }
        let ranged = status == StatusCode::PARTIAL_CONTENT;
        let range = response
            .headers()
            .get(reqwest::header::CONTENT_RANGE)
            .and_then(|v| v.to_str().ok())
            .and_then(content_range);
        let start = from.unwrap_or(0);
        if start > 0 && (!ranged || range.is_none_or(|(first, _)| first != start)) {
            // Not the bytes asked for: the caller must not read them as the file's tail.
            return Err(FetchError::RangeIgnored);
        }
        let total_bytes = if ranged {
            range.and_then(|(_, total)| total)
        } else {
            response.content_length()
        };
        let folder = tempfile::Builder::new()
            .prefix("job-")
            .tempdir_in(dir)
            .map_err(|e| FetchError::Io(e.to_string()))?;
        let path = folder.path().join("media");
        let file = tokio::fs::File::create_new(&path)
            .await
            .map_err(|e| FetchError::Io(e.to_string()))?;
        let mut out = tokio::io::BufWriter::new(file);
        let mut stream = response.bytes_stream();
        let mut bytes: u64 = 0;
        let mut complete = true;
        let started = tokio::time::Instant::now();
        loop {
            // The next chunk must come before the average rate falls below the minimum.
            let next = match self.min_rate {
                Some(rate) => {
                    match tokio::time::timeout_at(started + rate.allowed(bytes), stream.next())
                        .await
                    {
                        Ok(next) => next,
                        Err(_) => return Err(too_slow(bytes, started.elapsed())),
                    }
                }
                None => stream.next().await,
            };
            let Some(chunk) = next else { break };
            let chunk = chunk.map_err(|e| classify(&e))?;
            let room = max_bytes - bytes;
            if chunk.len() as u64 > room {
                if !partial {
                    return Err(FetchError::TooLarge(max_bytes));
                }
                out.write_all(&chunk[..room as usize])
                    .await
                    .map_err(|e| FetchError::Io(e.to_string()))?;
                bytes += room;
                complete = false;
                break;
            }
            out.write_all(&chunk)
                .await
                .map_err(|e| FetchError::Io(e.to_string()))?;
            bytes += chunk.len() as u64;
            received.store(bytes, std::sync::atomic::Ordering::Relaxed);
            if let Some(rate) = self.min_rate
                && started.elapsed() > rate.allowed(bytes)
            {
                return Err(too_slow(bytes, started.elapsed()));
            }
        }
        out.flush()
            .await
            .map_err(|e| FetchError::Io(e.to_string()))?;
        if ranged && bytes >= max_bytes {
            // A 206 for exactly the bytes asked for: there may be more.
            complete = false;
        }
        if bytes == 0 {
            return Err(FetchError::NotMedia("an empty body".into()));
        }
        Ok(Downloaded {
            folder,
            path,
            bytes,
            total_bytes,
            content_type,
            complete,
            url: current,
        })
    }

    /// POSTs a JSON body (a webhook). Redirects are not followed: a receiver that answers 3xx
    /// has not accepted the delivery.
    ///
    /// # Errors
    /// `Refused` by the policy, or the transport error. Any HTTP status is `Ok`.
    pub async fn post_json(
        &self,
        url: &Url,
        headers: &[(&str, String)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<u16, FetchError> {
        self.policy
            .check_url(url)
            .map_err(|r| FetchError::Refused(r.0))?;
        let mut request = self
            .client_for(url)
            .post(url.clone())
            .timeout(timeout)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.map_err(|e| classify(&e))?;
        Ok(response.status().as_u16())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport error's message names the URL: without its query, which can hold a
    /// presigned signature.
    #[tokio::test]
    async fn errors_do_not_carry_the_query_string() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = crate::config::ServeConfig::with_data_dir(dir.path().into()).fetch;
        config.allow_loopback_fetch = true;
        let fetcher = Fetcher::new(&config).expect("fetcher");
        // Nothing listens on port 1: the connection is refused.
        let url =
            Url::parse("http://127.0.0.1:1/ad.mp4?X-Amz-Signature=topsecret#t=3").expect("url");
        let e = fetcher
            .download(&url, dir.path(), 1024, false, Duration::from_secs(10))
            .await
            .expect_err("nothing listens");
        let text = e.to_string();
        assert!(!text.contains("topsecret"), "{text}");
        assert!(text.contains("127.0.0.1:1/ad.mp4?…"), "{text}");
        let post = fetcher
            .post_json(&url, &[], b"{}".to_vec(), Duration::from_secs(10))
            .await
            .expect_err("nothing listens");
        assert!(!post.to_string().contains("topsecret"), "{post}");
        assert_eq!(
            without_query(&Url::parse("https://a.example/x").expect("url")),
            "https://a.example/x"
        );
    }

    /// A loopback host that announces `len` bytes of video and sends `chunk` bytes every
    /// `every`; returns its URL.
    async fn drip_host(len: usize, chunk: usize, every: Duration) -> Url {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = sock.read(&mut buf).await;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: video/mp4\r\ncontent-length: {len}\r\n\r\n"
                    );
                    if sock.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let mut sent = 0;
                    while sent < len {
                        let n = chunk.min(len - sent);
                        if sock.write_all(&vec![0u8; n]).await.is_err() {
                            return;
                        }
                        sent += n;
                        tokio::time::sleep(every).await;
                    }
                });
            }
        });
        Url::parse(&format!("http://{addr}/drip.mp4")).expect("url")
    }

    #[tokio::test]
    async fn a_drip_feeding_host_is_cut_off_at_the_minimum_rate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = crate::config::ServeConfig::with_data_dir(dir.path().into()).fetch;
        config.allow_loopback_fetch = true;
        config.fetch_min_rate_kib = 64;
        config.fetch_min_rate_grace_secs = 1;
        let fetcher = Fetcher::new(&config).expect("fetcher");
        // 8 KiB every 250 ms is 32 KiB/s: half the minimum. Without the check the download
        // would run for the whole 60 s timeout (it announces 4 MiB).
        let url = drip_host(4 << 20, 8 << 10, Duration::from_millis(250)).await;
        let started = std::time::Instant::now();
        let e = fetcher
            .download(&url, dir.path(), 8 << 20, false, Duration::from_secs(60))
            .await
            .expect_err("too slow");
        let took = started.elapsed();
        assert!(
            matches!(e, FetchError::TooSlow(r) if r < 64 * 1024),
            "{e:?}"
        );
        assert_eq!(e.code(), "download_failed");
        assert!(!e.transient(), "a drip feed is not retried");
        assert!(took < Duration::from_secs(5), "cut off after {took:?}");
        // A host at twice the minimum finishes.
        let url = drip_host(256 << 10, 32 << 10, Duration::from_millis(250)).await;
        let ok = fetcher
            .download(&url, dir.path(), 8 << 20, false, Duration::from_secs(60))
            .await
            .expect("128 KiB/s is fast enough");
        assert_eq!(ok.bytes, 256 << 10);
    }
}
