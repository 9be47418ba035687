//! `/console`: the web console, served by the binary itself. Its three files (`host/console`)
//! are embedded at build time, so there is no front-end build step and nothing to deploy
//! beside the binary; the page talks only to this service's public and admin API.
//!
//! The content security policy keeps the page to this origin: scripts and API calls only
//! from here, no inline script, no frames. Images and video may also come from the artifact
//! store's own origin (an S3 bucket's presigned links), which is why media allows http(s).

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::ApiError;

const INDEX: &str = include_str!("../../console/index.html");
const APP_JS: &str = include_str!("../../console/app.js");
const APP_CSS: &str = include_str!("../../console/app.css");

const POLICY: &str = "default-src 'self'; script-src 'self'; connect-src 'self'; \
    style-src 'self' 'unsafe-inline'; img-src 'self' data: http: https:; \
    media-src 'self' http: https:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

fn page(body: &'static str, content_type: &'static str) -> Response {
    let mut r = (StatusCode::OK, body).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // The files change only with the binary; revalidate so an upgrade is seen at once.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// `GET /console`: the page.
pub async fn index() -> Response {
    page(INDEX, "text/html; charset=utf-8")
}

/// `GET /console/{file}`: its script and style sheet.
///
/// # Errors
/// 404 for any other name.
pub async fn asset(Path(file): Path<String>) -> Result<Response, ApiError> {
    match file.as_str() {
        "app.js" => Ok(page(APP_JS, "text/javascript; charset=utf-8")),
        "app.css" => Ok(page(APP_CSS, "text/css; charset=utf-8")),
        "" | "index.html" => Ok(page(INDEX, "text/html; charset=utf-8")),
        _ => Err(ApiError::not_found("this file")),
    }
}
