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
use tempfile::NamedTempFile;
use tokio::io::AsyncWriteExt;
use url::Url;

use super::guard::{AddressPolicy, GuardedResolver};
use crate::config::FetchConfig;

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
    #[error("could not reach the media host: {0}")]
    Network(String),
    #[error("could not store the download: {0}")]
    Io(String),
}

impl FetchError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Refused(_) => "url_not_allowed",
            Self::TooLarge(_) => "media_too_large",
            Self::NotMedia(_) => "unsupported_media",
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

/// A finished (or deliberately partial) download. The temporary file is deleted on drop.
#[derive(Debug)]
pub struct Downloaded {
    pub file: NamedTempFile,
    pub bytes: u64,
    pub content_type: Option<String>,
    /// False when a partial (probe) fetch stopped before the end of the file.
    pub complete: bool,
}

/// The guarded client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    policy: Arc<AddressPolicy>,
    max_redirects: usize,
}

fn classify(e: &reqwest::Error) -> FetchError {
    if e.is_timeout() {
        return FetchError::Timeout;
    }
    // The resolver's refusal surfaces as a connect error whose chain names it.
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    if text.contains("refused address") {
        return FetchError::Refused(
            text.rsplit("refused address: ")
                .next()
                .unwrap_or(&text)
                .to_owned(),
        );
    }
    FetchError::Network(text)
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
            allow_ips: config.fetch_allow_addrs.iter().map(|a| a.ip()).collect(),
        });
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver {
                policy: policy.clone(),
            }))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(config.connect_timeout())
            .user_agent(concat!("brainscan/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            client,
            policy,
            max_redirects: config.fetch_max_redirects,
        })
    }

    pub fn policy(&self) -> &AddressPolicy {
        &self.policy
    }

    /// Downloads `url` into a temporary file in `dir`.
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
        tokio::time::timeout(timeout, self.download_inner(url, dir, max_bytes, partial))
            .await
            .map_err(|_| FetchError::Timeout)?
    }

    async fn download_inner(
        &self,
        url: &Url,
        dir: &Path,
        max_bytes: u64,
        partial: bool,
    ) -> Result<Downloaded, FetchError> {
        let mut current = url.clone();
        let mut hops = 0;
        let response = loop {
            self.policy
                .check_url(&current)
                .map_err(|r| FetchError::Refused(r.0))?;
            let mut request = self.client.get(current.clone());
            if partial {
                request = request.header(RANGE, format!("bytes=0-{}", max_bytes.saturating_sub(1)));
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
        if let Some(ct) = &content_type
            && is_not_media(ct)
        {
            return Err(FetchError::NotMedia(ct.clone()));
        }
        if !partial
            && let Some(len) = response.content_length()
            && len > max_bytes
        {
            return Err(FetchError::TooLarge(max_bytes));
        }
        let ranged = status == StatusCode::PARTIAL_CONTENT;
        let file = tempfile::Builder::new()
            .prefix("download-")
            .tempfile_in(dir)
            .map_err(|e| FetchError::Io(e.to_string()))?;
        let std_file = file.reopen().map_err(|e| FetchError::Io(e.to_string()))?;
        let mut out = tokio::io::BufWriter::new(tokio::fs::File::from_std(std_file));
        let mut stream = response.bytes_stream();
        let mut bytes: u64 = 0;
        let mut complete = true;
        while let Some(chunk) = stream.next().await {
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
            file,
            bytes,
            content_type,
            complete,
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
            .client
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
