//! Extractors that validate before a handler runs, each failing with our error envelope.

use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::ApiError;
use crate::app::App;
use crate::auth::Caller;

/// The authenticated caller. Missing, malformed, unknown and revoked keys all answer 401
/// `unauthorized` with the same body, so the answer does not tell which.
pub struct Authed(pub Arc<Caller>);

/// A caller the console's session gate has already authenticated (`api::session::gate`). Only
/// that middleware inserts it, and only on `/console/api/v1`: a request cannot carry
/// extensions in from outside, so on `/api/v1` only a key authenticates.
#[derive(Clone)]
pub struct SessionCaller(pub Arc<Caller>);

impl FromRequestParts<Arc<App>> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        if let Some(SessionCaller(caller)) = parts.extensions.get::<SessionCaller>() {
            return Ok(Self(caller.clone()));
        }
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(ApiError::unauthorized)?;
        let (scheme, key) = header
            .trim()
            .split_once(' ')
            .ok_or_else(ApiError::unauthorized)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(ApiError::unauthorized());
        }
        // Per client address, before the key is looked up: made-up keys cost a database read
        // each, and the organisation's limit below applies only once a key resolves. Requests
        // made in process (MCP tools calling the API) carry no peer and were checked on the
        // way in.
        if let Some(limiter) = &app.client_limiter
            && parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .is_some()
        {
            let client = super::client_addr::of_request(parts, &app.config.http.trusted_proxies);
            if let Err(not_until) = limiter.check_key(&client) {
                use governor::clock::Clock;
                let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
                metrics::counter!("brainscan_rate_limited_total").increment(1);
                let mut e = ApiError::rate_limited(wait);
                e.message = format!(
                    "too many requests from this address; retry in {} s",
                    e.retry_after.unwrap_or(1)
                );
                return Err(e);
            }
        }
        let caller = app
            .keys
            .resolve(key.trim())
            .await
            .map_err(ApiError::internal)?
            .ok_or_else(ApiError::unauthorized)?;
        tracing::Span::current().record("org.id", caller.org_id.as_str());
        if let Some(limiter) = &app.limiter
            && let Err(not_until) = limiter.check_key(&caller.org_id)
        {
            use governor::clock::Clock;
            let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
            metrics::counter!("brainscan_rate_limited_total").increment(1);
            return Err(ApiError::rate_limited(wait));
        }
        Ok(Self(caller))
    }
}

/// JSON body whose rejections are our envelope: 415 without a JSON content type, 413 over
/// the body limit, 400 `invalid_json` for syntax, 400 `invalid_request` for wrong types.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Self(v)),
            Err(rejection) => Err(json_rejection(&rejection)),
        }
    }
}

pub fn json_rejection(rejection: &JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON with `Content-Type: application/json`",
        ),
        JsonRejection::JsonSyntaxError(e) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not valid JSON: {}", e.body_text()),
        ),
        JsonRejection::JsonDataError(e) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!(
                "the body does not match the expected shape: {}",
                e.body_text()
            ),
        ),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is larger than this server accepts",
        ),
        other => ApiError::new(other.status(), "invalid_request", other.body_text()),
    }
}

/// Query string with envelope rejections.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(Self(v)),
            Err(rejection) => Err(query_rejection(&rejection)),
        }
    }
}

fn query_rejection(rejection: &QueryRejection) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_request",
        format!("bad query string: {}", rejection.body_text()),
    )
}

/// A path `{id}` that looks like a scan id; anything else is 404 without a database query.
pub struct ScanIdPath(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ScanIdPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Path(id) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|_| ApiError::not_found("the scan"))?;
        if !crate::ids::looks_like_scan_id(&id) {
            return Err(ApiError::not_found("the scan"));
        }
        Ok(Self(id))
    }
}

/// The raw body, under the configured size limit (413 `payload_too_large` past it).
pub struct ApiBytes(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBytes {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        axum::body::Bytes::from_request(req, state)
            .await
            .map(Self)
            .map_err(|r| {
                if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "payload_too_large",
                        "the request body is larger than this server accepts",
                    )
                } else {
                    ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", r.body_text())
                }
            })
    }
}
