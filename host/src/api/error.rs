//! The one error type at the HTTP edge. Every error body is
//! `{"error": "<code>", "message": "<sentence>"}`, plus `field` when one input field is at
//! fault. A 500 never shows internal text; the cause is logged once, in the request's span.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The error envelope.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable snake_case code, e.g. `unauthorized`, `insufficient_balance`, `video_too_long`.
    pub error: String,
    /// A sentence for people.
    pub message: String,
    /// The request field at fault, when there is one (e.g. `input.video_url`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            field: None,
            retry_after: None,
        }
    }

    pub fn rate_limited(wait: std::time::Duration) -> Self {
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many requests for this organisation; retry in {secs} s"),
        );
        e.retry_after = Some(secs.max(1));
        e
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid API key is required: send the header `Authorization: Bearer sk_live_…`",
        )
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} was not found"),
        )
    }

    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message).with_field(field)
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this method is not allowed on this endpoint",
        )
    }

    /// Logs `cause` and answers a bare 500.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "something went wrong on our side; the request can be retried",
        )
    }
}

/// A store error from looking up a scan: `NotFound` names the scan (and reads the same for
/// another organisation's scan), `Conflict` becomes `conflict_code`.
pub fn scan_lookup(e: crate::store::StoreError, conflict_code: &'static str) -> ApiError {
    match e {
        crate::store::StoreError::NotFound => ApiError::not_found("the scan"),
        crate::store::StoreError::Conflict(m) => {
            ApiError::new(StatusCode::CONFLICT, conflict_code, m)
        }
        other => other.into(),
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            crate::store::StoreError::NotFound => Self::not_found("the resource"),
            crate::store::StoreError::Conflict(m) => Self::new(StatusCode::CONFLICT, "conflict", m),
            other => Self::internal(other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.code.to_owned(),
            message: self.message,
            field: self.field,
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}
