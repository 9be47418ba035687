//! `POST /analyze`: the manipulation block of a completed scan, inline.
//!
//! Shape (the spec leaves it open): body `{"scan_id": "…"}`; answer
//! `{"scan_id": "…", "result": {"manipulation": {…}}, "plugin": {name, version, digest, …}}`.
//! The active manipulation plugin is re-run on the networks the scan stored, so after an
//! operator swaps that plugin a client can re-read old scans with the new version — whether
//! or not the scan was created with the `manipulation` lens. The stored scan is not changed.
//! The block is part of the result, so a scan not yet charged is charged here, once, as by
//! its first `GET` (see [`crate::charge`]); re-reads are free. A scan that is not complete answers 409
//! `scan_not_complete`; a failed plugin call 500 `plugin_failed`. A deployment without a
//! plugin registry (only some test set-ups) returns the stored block, or 422
//! `manipulation_not_scored` when there is none.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ApiError;
use super::error::ErrorBody;
use super::extract::{ApiJson, Authed};
use crate::app::App;
use crate::result::Manipulation;

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AnalyzeBody {
    pub scan_id: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AnalyzeResult {
    pub manipulation: Manipulation,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AnalyzeResponse {
    pub scan_id: String,
    pub result: AnalyzeResult,
    /// Additive: the plugin that produced the block (name, version, digest, kind, wit);
    /// absent when the stored block was returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub plugin: Option<serde_json::Value>,
}

/// The manipulation block of a completed scan.
#[utoipa::path(
    post, path = "/api/v1/analyze", tag = "scans",
    request_body = AnalyzeBody,
    responses(
        (status = 200, body = AnalyzeResponse),
        (status = 400, description = "The body is not valid JSON or lacks scan_id", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "scan_not_complete", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "The body is not declared as JSON (Content-Type)", body = ErrorBody),
        (status = 422, description = "manipulation_not_scored", body = ErrorBody),
        (status = 500, description = "plugin_failed", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn analyze(
    State(app): State<Arc<App>>,
    Authed(caller): Authed,
    ApiJson(body): ApiJson<AnalyzeBody>,
) -> Result<Json<AnalyzeResponse>, ApiError> {
    // The block is part of the result: reading it is a release like a GET (charged once),
    // settled only once the block has been computed, so a failing plugin charges nothing.
    let (result, charged) =
        super::scans::complete_result(&app, &caller.org_id, &body.scan_id, |status| {
            format!("the scan is {status}; analyze needs a complete scan")
        })
        .await?;
    let (manipulation, plugin) = match &app.plugins {
        Some(registry) => {
            let (m, plugin) =
                crate::analysis::rerun_manipulation(registry, &result, &caller.org_id)
                    .await
                    .map_err(|e| {
                        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.code, e.message)
                    })?;
            (m, Some(plugin))
        }
        None => (
            result.manipulation.ok_or_else(|| {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "manipulation_not_scored",
                    "the scan was created without the manipulation lens",
                )
            })?,
            None,
        ),
    };
    if !charged {
        super::scans::settle(&app, &caller.org_id, &body.scan_id, "analyze").await?;
    }
    Ok(Json(AnalyzeResponse {
        scan_id: body.scan_id,
        result: AnalyzeResult { manipulation },
        plugin,
    }))
}
