//! `GET /lenses`: which lens names this service scores.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::ApiError;
use super::error::ErrorBody;
use super::extract::Authed;
use crate::app::App;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LensList {
    /// `list`.
    pub object: String,
    /// Every lens name `POST /scans` accepts; others are dropped from requests.
    pub lenses: Vec<String>,
    /// The lenses used when a request names none.
    pub default: Vec<String>,
    /// Additive: where each lens's benchmark labels change, in score units (the corpus's
    /// 20th, 40th, 70th and 90th percentiles), for lenses that have a benchmark.
    pub benchmark_bands: std::collections::BTreeMap<String, crate::benchmark::BenchmarkBands>,
}

/// List the lenses that can be requested.
#[utoipa::path(
    get, path = "/api/v1/lenses", tag = "scans",
    responses((status = 200, body = LensList), (status = 401, body = ErrorBody)),
    security(("api_key" = []))
)]
pub async fn list_lenses(
    State(app): State<Arc<App>>,
    Authed(_caller): Authed,
) -> Result<Json<LensList>, ApiError> {
    Ok(Json(LensList {
        object: "list".into(),
        lenses: app.available_lenses(),
        default: crate::scan::DEFAULT_LENSES
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
        benchmark_bands: app.analyzer.benchmark_bands(),
    }))
}
