//! `GET /intelligence`.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;

use super::ApiError;
use super::error::ErrorBody;
use super::extract::{ApiQuery, Authed};
use crate::app::App;
use crate::intelligence::{self, Rollup};

#[derive(Debug, Deserialize)]
pub struct IntelligenceParams {
    q: Option<String>,
}

/// Longest query accepted.
const MAX_QUERY_CHARS: usize = 500;

/// Cross-scan rollup of the caller's organisation; with `q`, also recall hits.
#[utoipa::path(
    get, path = "/api/v1/intelligence", tag = "intelligence",
    params(("q" = Option<String>, Query, description = "Natural-language query; adds query and recall (at most 8 hits)")),
    responses((status = 200, body = Rollup), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("api_key" = []))
)]
pub async fn get_intelligence(
    State(app): State<Arc<App>>,
    Authed(caller): Authed,
    ApiQuery(params): ApiQuery<IntelligenceParams>,
) -> Result<Json<Rollup>, ApiError> {
    if params
        .q
        .as_ref()
        .is_some_and(|q| q.chars().count() > MAX_QUERY_CHARS)
    {
        return Err(ApiError::invalid(
            "q",
            format!("q is longer than {MAX_QUERY_CHARS} characters"),
        ));
    }
    let memory = app
        .db
        .memory_rollup(&caller.org_id, intelligence::MAX_DROP_SECONDS as i64)
        .await?;
    let mut rollup = intelligence::rollup(memory);
    if let Some(q) = params.q.filter(|q| !q.trim().is_empty()) {
        let hits = app
            .recall
            .search(&app.db, &caller.org_id, &q)
            .await
            .map_err(|e| match e {
                intelligence::recall::RecallError::Store(e) => ApiError::from(e),
                other => ApiError::internal(other),
            })?;
        rollup.recall = Some(hits);
        rollup.query = Some(q);
    }
    Ok(Json(rollup))
}
