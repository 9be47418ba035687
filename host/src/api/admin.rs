//! `/admin/v1/plugins…`: the operator's plugin API — the same operations as
//! `brainscan plugin …`, for operators who manage a fleet over HTTP.
//!
//! Guarded by the admin token from configuration (`BRAINSCAN_ADMIN_TOKEN`), never by an
//! organisation's API key. With no token configured the whole surface answers 404, so a
//! default install exposes nothing. Tokens are compared in constant time.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Query};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::ApiError;
use crate::app::App;
use crate::plugins::registry::{Listing, RegistryError, SlotChange};
use crate::plugins::{Manifest, Registry, manifest};

/// Proof that the request carried the admin token; holds the registry it may act on.
pub struct Admin(Arc<Registry>);

impl FromRequestParts<Arc<App>> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        let (Some(expected), Some(registry)) = (&app.config.plugins.admin_token, &app.plugins)
        else {
            return Err(ApiError::not_found("this endpoint"));
        };
        let presented = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|h| h.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|t| !t.is_empty());
        // A request with no token guesses nothing: it is refused without counting, so that
        // nobody can lock the operator out by sending empty requests.
        let Some(presented) = presented else {
            return Err(unauthorized());
        };
        // The client's address, read through trusted proxies only: behind a proxy every
        // peer is the proxy, and one guesser would lock out everyone.
        let peer = crate::lockout::address_key(super::client_addr::of_request(
            parts,
            &app.config.http.trusted_proxies,
        ));
        let now = std::time::Instant::now();
        if let Some(wait) = app.admin_lockout.locked_out(peer, now) {
            let mut e = ApiError::rate_limited(wait);
            e.message = format!(
                "too many failed admin authentications from this address; retry in {} s",
                e.retry_after.unwrap_or(1)
            );
            return Err(e);
        }
        if !bool::from(presented.as_bytes().ct_eq(expected.trim().as_bytes())) {
            app.admin_lockout.failed(peer, now);
            tracing::warn!(%peer, "failed admin authentication");
            return Err(unauthorized());
        }
        app.admin_lockout.succeeded(peer);
        Ok(Self(registry.clone()))
    }
}

fn unauthorized() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "the admin API needs `Authorization: Bearer <BRAINSCAN_ADMIN_TOKEN>`",
    )
}

fn registry_error(e: RegistryError) -> ApiError {
    let code = e.code();
    let status = match code {
        "not_found" => StatusCode::NOT_FOUND,
        "conflict" => StatusCode::CONFLICT,
        "invalid_request" => StatusCode::BAD_REQUEST,
        "payload_too_large" => StatusCode::PAYLOAD_TOO_LARGE,
        "internal_error" => return ApiError::internal(e),
        // not_a_component, invalid_wasm, unsupported_world, forbidden_import,
        // invalid_manifest, plugin_failed, conformance_failed: the upload itself is at fault.
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    };
    ApiError::new(status, code, e.to_string())
}

#[derive(Debug, Serialize)]
pub struct PluginList {
    pub object: &'static str,
    pub data: Vec<Listing>,
}

/// `GET /admin/v1/plugins`: every installed version, with the slot it is active in.
pub async fn list(Admin(registry): Admin) -> Result<Json<PluginList>, ApiError> {
    let data = registry.list().await.map_err(registry_error)?;
    Ok(Json(PluginList {
        object: "list",
        data,
    }))
}

#[derive(Debug, Deserialize)]
pub struct InstallQuery {
    /// Activate the version in its slot once it is installed.
    #[serde(default)]
    pub activate: bool,
}

#[derive(Debug, Serialize)]
pub struct InstallResponse {
    pub plugin: Manifest,
    /// False when these exact bytes were already installed under this name and version.
    pub new: bool,
    /// The conformance report (fuel, memory, output, time per check).
    pub conformance: Option<crate::plugins::conformance::Report>,
    /// The slot change, when `?activate=true`.
    pub activated: Option<SlotChange>,
}

/// `POST /admin/v1/plugins[?activate=true]` with the component as the raw body
/// (`Content-Type: application/wasm`). Validated and conformance-checked before it is stored.
pub async fn install(
    Admin(registry): Admin,
    Query(q): Query<InstallQuery>,
    body: Bytes,
) -> Result<(StatusCode, Json<InstallResponse>), ApiError> {
    if body.is_empty() {
        return Err(ApiError::invalid(
            "body",
            "send the plugin's .wasm component as the request body",
        ));
    }
    let installed = registry
        .install(&body, "upload", true)
        .await
        .map_err(registry_error)?;
    let activated = if q.activate {
        Some(
            registry
                .activate(&installed.manifest.name, &installed.manifest.version)
                .await
                .map_err(registry_error)?,
        )
    } else {
        None
    };
    let status = if installed.new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(InstallResponse {
            plugin: installed.manifest,
            new: installed.new,
            conformance: installed.report,
            activated,
        }),
    ))
}

fn plugin_id(id: &str) -> Result<(&str, &str), ApiError> {
    manifest::parse_id(id).ok_or_else(|| {
        ApiError::invalid(
            "id",
            format!("{id:?} is not NAME@VERSION (e.g. lens-standard@1.0.0)"),
        )
    })
}

/// `POST /admin/v1/plugins/{name@version}/activate`.
pub async fn activate(
    Admin(registry): Admin,
    Path(id): Path<String>,
) -> Result<Json<SlotChange>, ApiError> {
    let (name, version) = plugin_id(&id)?;
    registry
        .activate(name, version)
        .await
        .map(Json)
        .map_err(registry_error)
}

/// `DELETE /admin/v1/plugins/{name@version}`: refused while the version is active.
pub async fn remove(
    Admin(registry): Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (name, version) = plugin_id(&id)?;
    registry
        .remove(name, version)
        .await
        .map_err(registry_error)?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotRequest {
    /// `lens`, `moments`, `manipulation`, `lens:<name>` or a plugin name.
    pub slot: String,
}

/// `POST /admin/v1/plugins/rollback` `{"slot": "moments"}`: back to the previous version.
pub async fn rollback(
    Admin(registry): Admin,
    Json(req): Json<SlotRequest>,
) -> Result<Json<SlotChange>, ApiError> {
    registry
        .rollback(&req.slot)
        .await
        .map(Json)
        .map_err(registry_error)
}

/// `POST /admin/v1/plugins/deactivate` `{"slot": "lens:calm"}`: empty the slot.
pub async fn deactivate(
    Admin(registry): Admin,
    Json(req): Json<SlotRequest>,
) -> Result<Json<SlotChange>, ApiError> {
    registry
        .deactivate(&req.slot)
        .await
        .map(Json)
        .map_err(registry_error)
}

#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct EventList {
    pub object: &'static str,
    pub data: Vec<crate::store::plugins::PluginEvent>,
}

/// `GET /admin/v1/plugins/events[?limit=N]`: activations, rollbacks and breaker trips,
/// newest first.
pub async fn events(
    Admin(registry): Admin,
    Query(q): Query<EventsQuery>,
) -> Result<Json<EventList>, ApiError> {
    let data = registry
        .events(q.limit.unwrap_or(50).clamp(1, 1000))
        .await
        .map_err(registry_error)?;
    Ok(Json(EventList {
        object: "list",
        data,
    }))
}
