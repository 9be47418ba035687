//! Where the MCP tools send their requests: the public REST API, always.
//!
//! Every tool is one or more REST calls made with the caller's own key, so billing (a result
//! reaching the agent is a fetch, charged once), organisation scoping, rate limits, validation
//! and error codes are the REST API's by construction, not a second implementation of them.

use axum::body::Body;
use http::{HeaderValue, Method, Request, StatusCode};
use rmcp::ErrorData as McpError;
use serde_json::Value;
use tower::ServiceExt as _;

/// Largest REST body a tool reads (a completed 30-minute scan with every option is a few MiB).
pub const MAX_REPLY_BYTES: usize = 32 << 20;

/// The REST API as the tools see it.
#[derive(Clone)]
pub enum Backend {
    /// Inside `brainscan serve`: requests go through the API routes in process, with the
    /// `Authorization` header of the MCP request that carries the tool call.
    InProcess(axum::Router),
    /// `brainscan mcp --url --key`: a running service over HTTP with one key.
    Remote {
        http: reqwest::Client,
        base: reqwest::Url,
        authorization: HeaderValue,
    },
}

/// One REST answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
}

impl Reply {
    /// The API's error code (`{"error": "not_found", "message": …}`), when the answer is an
    /// error.
    #[must_use]
    pub fn error_code(&self) -> Option<&str> {
        if self.status.is_success() {
            return None;
        }
        self.body
            .get("error")
            .and_then(Value::as_str)
            .or(Some("http_error"))
    }

    /// The API's error message, or the status line.
    #[must_use]
    pub fn error_message(&self) -> String {
        self.body
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(
                || format!("the API answered {}", self.status),
                str::to_owned,
            )
    }
}

impl Backend {
    /// Sends `method path_and_query` (relative to `/api/v1`, e.g. `/scans?limit=5`) with an
    /// optional JSON body. `authorization` is the in-process caller's header; the remote
    /// backend always uses its own key.
    ///
    /// # Errors
    /// The service cannot be reached or answers with something that is not JSON (an MCP
    /// internal error; REST errors are a [`Reply`] with their status).
    pub async fn call(
        &self,
        authorization: Option<&HeaderValue>,
        method: Method,
        path_and_query: &str,
        body: Option<&Value>,
    ) -> Result<Reply, McpError> {
        let path = format!("/api/v1{path_and_query}");
        let (status, bytes) = match self {
            Self::InProcess(router) => {
                let mut request = Request::builder().method(method).uri(&path);
                if let Some(value) = authorization {
                    request = request.header(http::header::AUTHORIZATION, value);
                }
                let request = match body {
                    Some(b) => request
                        .header(http::header::CONTENT_TYPE, "application/json")
                        .body(Body::from(b.to_string())),
                    None => request.body(Body::empty()),
                }
                .map_err(|e| internal(&e))?;
                let response = router
                    .clone()
                    .oneshot(request)
                    .await
                    .map_err(|e| internal(&e))?;
                let status = response.status();
                let bytes = axum::body::to_bytes(response.into_body(), MAX_REPLY_BYTES)
                    .await
                    .map_err(|e| internal(&e))?;
                (status, bytes.to_vec())
            }
            Self::Remote {
                http,
                base,
                authorization,
            } => {
                let url = base
                    .join(path.trim_start_matches('/'))
                    .map_err(|e| internal(&e))?;
                let mut request = http
                    .request(method, url)
                    .header(http::header::AUTHORIZATION, authorization.clone());
                if let Some(b) = body {
                    request = request.json(b);
                }
                let response = request.send().await.map_err(|e| {
                    McpError::internal_error(
                        format!("the brainscan service cannot be reached: {e}"),
                        Some(serde_json::json!({ "code": "service_unreachable" })),
                    )
                })?;
                let status = response.status();
                if response
                    .content_length()
                    .is_some_and(|n| n > MAX_REPLY_BYTES as u64)
                {
                    return Err(internal(&"the API's answer is too large"));
                }
                let bytes = response.bytes().await.map_err(|e| internal(&e))?;
                if bytes.len() > MAX_REPLY_BYTES {
                    return Err(internal(&"the API's answer is too large"));
                }
                (
                    StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY),
                    bytes.to_vec(),
                )
            }
        };
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).map_err(|e| internal(&e))?
        };
        Ok(Reply { status, body })
    }
}

fn internal(e: &dyn std::fmt::Display) -> McpError {
    McpError::internal_error(
        format!("calling the API failed: {e}"),
        Some(serde_json::json!({ "code": "internal_error" })),
    )
}
