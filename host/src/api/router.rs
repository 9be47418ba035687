//! Every route, in one place.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::trace::TraceLayer;

use super::{
    ApiError, admin, analyze, artifacts, compare, console, health, intelligence, lenses, openapi,
    scans, session, wallet,
};
use crate::app::App;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

#[derive(Clone, Copy)]
struct RandomRequestId;

impl MakeRequestId for RandomRequestId {
    fn make_request_id<B>(&mut self, _request: &http::Request<B>) -> Option<RequestId> {
        HeaderValue::from_str(&format!("req_{}", crate::ids::token(16)))
            .ok()
            .map(RequestId::new)
    }
}

async fn not_found() -> ApiError {
    ApiError::not_found("this endpoint")
}

async fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed()
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal_error",
        "something went wrong on our side; the request can be retried",
    )
    .into_response()
}

/// The method as a metrics label, from a fixed set: a client can send any token as a method,
/// and every distinct label value is a new time series kept for the life of the process.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

async fn record_metrics(State(_app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("brainscan_http_requests_total", "method" => method, "route" => route.clone(), "status" => status).increment(1);
    metrics::histogram!("brainscan_http_request_duration_seconds", "method" => method, "route" => route)
        .record(started.elapsed().as_secs_f64());
    response
}

/// `X-Content-Type-Options: nosniff` on every response: a browser must take an artifact, a
/// JSON body or an error for the type it is served as, never guess HTML or script from it.
async fn no_sniffing(mut response: axum::response::Response) -> axum::response::Response {
    response
        .headers_mut()
        .entry(http::header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(http::HeaderValue::from_static("nosniff"));
    response
}

/// `Cache-Control: no-store` on every answer under `/console/session` (who is signed in, CSRF
/// tokens, keys): a shared or browser cache must never keep them.
async fn no_store(mut response: axum::response::Response) -> axum::response::Response {
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    response
}

/// How long `/mcp` may take: its longest wait (`get_scan`'s `wait_seconds`) and a margin for
/// the read that follows. Every other route has `BRAINSCAN_REQUEST_TIMEOUT_SECS`.
const MCP_DEADLINE: Duration = Duration::from_secs(crate::mcp::MAX_WAIT_SECONDS + 15);

#[derive(Clone, Copy)]
struct Deadlines {
    rest: Duration,
    mcp: Duration,
}

/// Answers 503 `timeout` when a request's handler has not answered within its deadline: the
/// request timeout for the API, [`MCP_DEADLINE`] for `/mcp`, whose `get_scan` may wait up to
/// [`crate::mcp::MAX_WAIT_SECONDS`] as its tool description promises.
async fn deadline(State(limits): State<Deadlines>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let limit = if path == "/mcp" || path.starts_with("/mcp/") {
        limits.mcp.max(limits.rest)
    } else {
        limits.rest
    };
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            "the request took too long; retry later",
        )
        .into_response(),
    }
}

/// Which routes one listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// Everything on one address: the public API and `/metrics` (the default), and
    /// `/admin/v1` only with `BRAINSCAN_ADMIN_ON_PUBLIC_LISTENER`.
    All,
    /// The public API only (with `/healthz` and `/readyz`), when `BRAINSCAN_OPS_LISTEN` moves
    /// the operator routes to their own address.
    Public,
    /// `/admin/v1`, `/metrics`, `/healthz` and `/readyz`, on the operations address.
    Operations,
}

/// The whole HTTP surface, used by `serve` and by the tests. A worker-role process serves only
/// the operations routes (health, readiness, metrics); the public and admin APIs answer 404
/// there, so a load balancer can never send clients to a worker by mistake.
pub fn router(app: Arc<App>) -> Router {
    router_for(app, Surface::All)
}

/// The routes of one [`Surface`]. With a separate operations address, `/metrics` and
/// `/admin/v1` are not on the public one at all (404), so they can be firewalled apart.
/// The public API's routes (mounted at `/api/v1`).
fn api_routes() -> Router<Arc<App>> {
    Router::new()
        // Scans
        .route("/scans", post(scans::create_scan).get(scans::list_scans))
        .route("/scans/{id}", get(scans::get_scan))
        .route("/scans/{id}/cancel", post(scans::cancel_scan))
        .route("/analyze", post(analyze::analyze))
        .route("/compare", get(compare::compare))
        .route("/lenses", get(lenses::list_lenses))
        // Money
        .route("/wallet", get(wallet::get_wallet))
        // Memory
        .route("/intelligence", get(intelligence::get_intelligence))
        // Artifacts of the local store (signed links; no API key)
        .route("/artifacts/{*key}", get(artifacts::get_artifact))
        // Contract
        .route("/openapi.json", get(openapi::openapi_json))
}

/// `/mcp` answers only requests with a valid key (401 `unauthorized` as the REST API, and the
/// same per-organisation rate limit); the tools then call the REST routes with that key.
async fn mcp_gate(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    use axum::extract::FromRequestParts as _;
    let (mut parts, body) = request.into_parts();
    if let Err(e) = super::extract::Authed::from_request_parts(&mut parts, &app).await {
        return e.into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}

pub fn router_for(app: Arc<App>, surface: Surface) -> Router {
    let api = api_routes();

    // Operators upload plugin components here; their size cap is the plugin file limit, not
    // the JSON body limit of the public API.
    let plugin_max = usize::try_from(app.config.plugins.plugin_max_bytes).unwrap_or(usize::MAX);
    let admin = Router::new()
        .route("/plugins", get(admin::list).post(admin::install))
        .route("/plugins/events", get(admin::events))
        .route("/plugins/rollback", post(admin::rollback))
        .route("/plugins/deactivate", post(admin::deactivate))
        .route("/plugins/{id}", delete(admin::remove))
        .route("/plugins/{id}/activate", post(admin::activate))
        .layer(axum::extract::DefaultBodyLimit::max(plugin_max));

    let timeout = Duration::from_secs(app.config.http.request_timeout_secs);
    let max_body = app.config.http.max_body_bytes;
    let serves_api = app.config.role.serves_api();
    let mut routes = Router::new();
    if serves_api && surface != Surface::Operations {
        routes = routes
            .nest("/api/v1", api)
            .route("/console", get(console::index))
            .route("/console/", get(console::index))
            .route("/console/{file}", get(console::asset))
            // People in the console: sign-in, their organisations, keys in account settings.
            // Every answer under /console/session is personal: never stored by a cache.
            .nest(
                "/console/session",
                Router::new()
                    .route("/sign-in", post(session::sign_in))
                    .route(
                        "/link",
                        get(session::confirm_link).post(session::sign_in_with_link),
                    )
                    .merge(
                        Router::new()
                            .route("/sign-out", post(session::sign_out))
                            .route("/me", get(session::me))
                            .route(
                                "/orgs/{org}/keys",
                                get(session::list_keys).post(session::create_key),
                            )
                            .route("/orgs/{org}/keys/{id}", delete(session::revoke_key))
                            .layer(middleware::from_fn_with_state(
                                app.clone(),
                                session::csrf_guard,
                            )),
                    )
                    .layer(middleware::map_response(no_store)),
            )
            // The public API's own handlers, authorised by a session instead of a key.
            .nest(
                "/console/api/v1",
                api_routes().layer(middleware::from_fn_with_state(app.clone(), session::gate)),
            );
        // The MCP tools call these same API routes in process (their own copy of the
        // routes, so the service does not hold a reference to itself).
        let rest = Router::new()
            .nest("/api/v1", api_routes())
            .layer(axum::extract::DefaultBodyLimit::max(max_body))
            .with_state(app.clone());
        let mcp = Router::new()
            .nest_service("/mcp", crate::mcp::http_service(rest, max_body))
            .layer(middleware::from_fn_with_state(app.clone(), mcp_gate));
        routes = routes.merge(mcp);
    }
    // With an admin token set, the admin API stays off the public address unless the
    // operator asks for it there explicitly: anyone who can reach it can try tokens.
    let admin_here = match surface {
        Surface::Operations => true,
        Surface::Public => false,
        Surface::All => {
            app.config.plugins.admin_token.is_none() || app.config.http.admin_on_public_listener
        }
    };
    if serves_api && admin_here {
        routes = routes.nest("/admin/v1", admin);
    }
    if surface != Surface::Public {
        routes = routes.route("/metrics", get(health::metrics));
    }
    routes
        // Probes answer on every address.
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(app.clone(), record_metrics))
        .layer(middleware::map_response(no_sniffing))
        .layer(middleware::from_fn_with_state(
            Arc::new(super::host_check::HostPolicy::of(&app)),
            super::host_check::gate,
        ))
        .layer(
            ServiceBuilder::new()
                .layer(SetSensitiveRequestHeadersLayer::new([http::header::AUTHORIZATION]))
                .layer(SetRequestIdLayer::new(REQUEST_ID, RandomRequestId))
                .layer(
                    TraceLayer::new_for_http().make_span_with(|req: &Request| {
                        let id = req.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("-");
                        tracing::info_span!("request", request.id = %id, method = %req.method(), path = %req.uri().path(), org.id = tracing::field::Empty)
                    }),
                )
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(CatchPanicLayer::custom(panic_response))
                .layer(middleware::from_fn_with_state(Deadlines { rest: timeout, mcp: MCP_DEADLINE }, deadline))
                .layer(axum::extract::DefaultBodyLimit::max(max_body)),
        )
        .with_state(app)
}
