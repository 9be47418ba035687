//! Liveness, readiness and metrics endpoints (no API key; keep them on an internal network).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde_json::json;

use super::ApiError;
use crate::app::App;

/// The process is up.
pub async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// The process can serve: start-up checks passed, not shutting down, database reachable.
pub async fn readyz(State(app): State<Arc<App>>) -> Result<impl IntoResponse, ApiError> {
    if !app.ready.load(Ordering::SeqCst) {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "the service is starting or shutting down",
        ));
    }
    if let Err(e) = app.db.ping().await {
        tracing::warn!(error = %e, "readiness: database unreachable");
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "the database is unreachable",
        ));
    }
    Ok(Json(json!({"status": "ready"})))
}

/// Prometheus exposition.
pub async fn metrics(State(app): State<Arc<App>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        crate::metrics::render(&app.db).await,
    )
}
