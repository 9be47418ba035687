//! The OpenAPI 3.1 document, generated from the handlers' annotations (utoipa) and served at
//! `/api/v1/openapi.json`.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct BearerKey;

impl Modify for BearerKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("sk_live_<secret>")
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "brainscan", description = "Brain-response scan API: per-second predicted brain-network response and lens scores for video and audio."),
    paths(
        super::scans::create_scan,
        super::scans::get_scan,
        super::scans::list_scans,
        super::scans::cancel_scan,
        super::wallet::get_wallet,
        super::intelligence::get_intelligence,
        super::analyze::analyze,
        super::lenses::list_lenses,
    ),
    modifiers(&BearerKey),
    tags((name = "scans"), (name = "wallet"), (name = "intelligence"))
)]
pub struct ApiDoc;

pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
