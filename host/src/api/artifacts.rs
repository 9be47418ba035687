//! `GET /api/v1/artifacts/{key}`: artifacts of the local store, behind signed expiring URLs.
//!
//! No API key: the URL's HMAC is the credential, so a client can hand the link to a browser
//! or an `<img>` tag. An expired or tampered link answers 403 with the usual error body; a
//! service on S3 hands out bucket URLs and refuses every URL here.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::ApiError;
use crate::app::App;
use crate::artifacts::UrlError;

#[derive(Debug, Deserialize)]
pub struct SignedQuery {
    expires: i64,
    signature: String,
}

pub async fn get_artifact(
    State(app): State<Arc<App>>,
    Path(key): Path<String>,
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
    let bytes = app.artifacts.get(&key).await.map_err(|e| {
        tracing::warn!(key, error = %e, "signed artifact unreadable");
        ApiError::not_found("artifact")
    })?;
    let content_type = if key.ends_with(".png") {
        "image/png"
    } else if key.ends_with(".mp4") {
        "video/mp4"
    } else {
        "application/octet-stream"
    };
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            // The link itself expires; caches must not outlive it.
            (header::CACHE_CONTROL, "private, max-age=3600"),
        ],
        bytes,
    )
        .into_response())
}
