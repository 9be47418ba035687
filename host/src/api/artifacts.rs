//! `GET /api/v1/artifacts/{key}`: artifacts of the local store, behind signed expiring URLs.
//!
//! No API key: the URL's HMAC is the credential, so a client can hand the link to a browser
//! or an `<img>` tag. An expired or tampered link answers 403 with the usual error body; a
//! service on S3 hands out bucket URLs and refuses every URL here.
//!
//! Single byte ranges (`Range: bytes=a-b`, `bytes=a-`, `bytes=-n`) are answered 206 with
//! `Content-Range`: a browser's `<video>` can only seek in a file served this way. Only the
//! bytes asked for are read from the store, streamed, and at most
//! `BRAINSCAN_ARTIFACT_CONCURRENCY` responses stream at once (503 `busy` past that), at most
//! `BRAINSCAN_ARTIFACT_CONCURRENCY_PER_CLIENT` of them for one client address (429 past
//! that), so one client cannot hold every slot. A response holds its slots until its body is
//! sent, and no longer than its deadline ([`body_deadline`]); a client that stops reading is
//! cut off by the connection's send timeout (`BRAINSCAN_SEND_TIMEOUT_SECS`).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use futures_util::StreamExt;

use super::ApiError;
use super::client_addr::ClientAddress;
use crate::app::App;
use crate::artifacts::{MAX_ARTIFACT_BYTES, UrlError};

#[derive(Debug, Deserialize)]
pub struct SignedQuery {
    expires: i64,
    signature: String,
}

/// The byte range a `Range` header asks of a body of `len` bytes: `None` for the whole body
/// (no header, several ranges, another unit), `Err(())` when it cannot be satisfied.
fn byte_range(header: Option<&str>, len: u64) -> Option<Result<(u64, u64), ()>> {
    let spec = header?.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    let range = match (a.parse::<u64>().ok(), b.parse::<u64>().ok()) {
        (Some(start), Some(end)) if a.len() <= 20 && start <= end => {
            (start, end.min(len.saturating_sub(1)))
        }
        (Some(start), None) if b.is_empty() => (start, len.saturating_sub(1)),
        (None, Some(n)) if a.is_empty() && n > 0 => (len.saturating_sub(n), len.saturating_sub(1)),
        _ => return None,
    };
    Some(if len == 0 || range.0 >= len {
        Err(())
    } else {
        Ok(range)
    })
}

/// The longest an artifact body of `bytes` may take to send: a minute, plus a second for every
/// 64 KiB (a reader below 64 KiB/s on a large file, or a stalled one, is cut off).
#[must_use]
pub fn body_deadline(bytes: u64) -> std::time::Duration {
    std::time::Duration::from_secs(60 + bytes / (64 * 1024))
}

pub async fn get_artifact(
    State(app): State<Arc<App>>,
    ClientAddress(client): ClientAddress,
    Path(key): Path<String>,
    headers: axum::http::HeaderMap,
    query: Result<Query<SignedQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Ok(Query(q)) = query else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "invalid_signature",
            "artifact links need their expires and signature parameters",
        ));
    };
    if key.len() > 512 || q.signature.len() > 128 {
        return Err(ApiError::not_found("artifact"));
    }
    let now = app.clock.now_ms() / 1000;
    app.artifacts
        .verify(&key, q.expires, &q.signature, now)
        .map_err(|e| {
            let code = match e {
                UrlError::Expired => "link_expired",
                UrlError::BadSignature => "invalid_signature",
            };
            ApiError::new(StatusCode::FORBIDDEN, code, e.to_string())
        })?;
    // A bounded number of artifact responses stream at once, a few per client; each holds
    // its permits until its body has been sent, the client has gone, or its deadline passed.
    let Some(client_slot) = app.artifact_clients.try_take(client) else {
        let mut e = ApiError::rate_limited(std::time::Duration::from_secs(1));
        e.message = format!(
            "this address already has {} artifact downloads in progress; finish one first",
            app.config.artifacts.artifact_concurrency_per_client.max(1)
        );
        return Err(e);
    };
    let Ok(permit) = app.artifact_slots.clone().try_acquire_owned() else {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "too many artifact downloads are in progress; retry shortly",
        );
        e.retry_after = Some(1);
        return Err(e);
    };
    let unreadable = |e: anyhow::Error| {
        tracing::warn!(key, error = %e, "signed artifact unreadable");
        ApiError::not_found("artifact")
    };
    let len = app.artifacts.size(&key).await.map_err(unreadable)?;
    if len > MAX_ARTIFACT_BYTES as u64 {
        return Err(unreadable(anyhow::anyhow!(
            "larger than {MAX_ARTIFACT_BYTES} bytes"
        )));
    }
    let content_type = if key.ends_with(".png") {
        "image/png"
    } else if key.ends_with(".mp4") {
        "video/mp4"
    } else {
        "application/octet-stream"
    };
    let common = [
        (header::CONTENT_TYPE, content_type.to_owned()),
        // The link itself expires; caches must not outlive it.
        (header::CACHE_CONTROL, "private, max-age=3600".to_owned()),
        (header::ACCEPT_RANGES, "bytes".to_owned()),
    ];
    let asked = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let (status, start, end) = match byte_range(asked, len) {
        None => (StatusCode::OK, 0, len),
        Some(Ok((start, last))) => (StatusCode::PARTIAL_CONTENT, start, last + 1),
        Some(Err(())) => {
            let mut r = ApiError::new(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "range_not_satisfiable",
                format!("the artifact has {len} bytes"),
            )
            .into_response();
            if let Ok(v) = format!("bytes */{len}").parse() {
                r.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return Ok(r);
        }
    };
    let body = if start == end {
        axum::body::Body::empty()
    } else {
        let stream = app
            .artifacts
            .stream(&key, start..end)
            .await
            .map_err(unreadable)?;
        let mut expiry = Box::pin(tokio::time::sleep(body_deadline(end - start)));
        let held = (permit, client_slot);
        let mut stream = stream;
        // Past the deadline the body ends in an error, which closes the connection and
        // releases the slots (the send timeout covers a reader that reads nothing at all).
        let timed = futures_util::stream::poll_fn(move |cx| {
            let _held = &held;
            if expiry.as_mut().poll(cx).is_ready() {
                return std::task::Poll::Ready(Some(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the artifact response passed its deadline",
                ))));
            }
            stream
                .poll_next_unpin(cx)
                .map(|next| next.map(|chunk| chunk.map_err(std::io::Error::other)))
        });
        axum::body::Body::from_stream(timed)
    };
    let mut r = (status, common, body).into_response();
    if let Ok(v) = (end - start).to_string().parse() {
        r.headers_mut().insert(header::CONTENT_LENGTH, v);
    }
    if status == StatusCode::PARTIAL_CONTENT
        && let Ok(v) = format!("bytes {start}-{}/{len}", end - 1).parse()
    {
        r.headers_mut().insert(header::CONTENT_RANGE, v);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::byte_range;

    #[test]
    fn reads_single_byte_ranges_as_rfc_9110_defines_them() {
        assert_eq!(byte_range(None, 100), None);
        assert_eq!(byte_range(Some("bytes=0-9"), 100), Some(Ok((0, 9))));
        assert_eq!(byte_range(Some("bytes=90-"), 100), Some(Ok((90, 99))));
        assert_eq!(byte_range(Some("bytes=-10"), 100), Some(Ok((90, 99))));
        assert_eq!(byte_range(Some("bytes=50-500"), 100), Some(Ok((50, 99))));
        assert_eq!(byte_range(Some("bytes=100-"), 100), Some(Err(())));
        assert_eq!(byte_range(Some("bytes=0-1,5-6"), 100), None);
        assert_eq!(byte_range(Some("items=0-1"), 100), None);
        assert_eq!(byte_range(Some("bytes=9-3"), 100), None);
    }
}
