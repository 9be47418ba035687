//! The OpenAPI 3.1 document, generated from the handlers' annotations (utoipa) and served at
//! `/api/v1/openapi.json`.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct BearerKey;

/// Every operation that takes an API key can also answer 429 (`rate_limited`, with
/// `Retry-After`): the per-organisation limit applies to all of them, so it is added here once
/// rather than to each path.
struct RateLimited;

impl Modify for RateLimited {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{RefOr, ResponseBuilder};
        let response = ResponseBuilder::new()
            .description("rate_limited: too many requests for this organisation; see Retry-After")
            .content(
                "application/json",
                utoipa::openapi::ContentBuilder::new()
                    .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                        "ErrorBody",
                    ))))
                    .build(),
            )
            .build();
        for item in openapi.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                if op.security.as_ref().is_some_and(|s| !s.is_empty()) {
                    op.responses
                        .responses
                        .insert("429".into(), RefOr::T(response.clone()));
                }
            }
        }
    }
}

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
        super::compare::compare,
        super::lenses::list_lenses,
    ),
    modifiers(&BearerKey, &RateLimited),
    tags((name = "scans"), (name = "wallet"), (name = "intelligence"))
)]
pub struct ApiDoc;

pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
