//! The console's people: sign-in (password or one-time link), sign-out, who is signed in,
//! the organisation's API keys in account settings, and the gate that lets a session use the
//! public API's handlers under `/console/api/v1`.
//!
//! - **The cookie** (`brainscan_session`) is `HttpOnly`, `SameSite=Strict`, scoped to
//!   `/console`, and `Secure` unless the request came to a loopback host name. Its path keeps
//!   it off `/api/v1` altogether, and the key extractor there reads only `Authorization`: a
//!   session is never an API key, and an API key is never a session.
//! - **CSRF**: every state-changing request with a session carries the session's own random
//!   token in `X-CSRF-Token`, compared in constant time; `SameSite=Strict` is the second line.
//! - **Which organisation**: a person may belong to several; console API calls name one in
//!   `X-Brainscan-Org` (the only one is taken when there is one) and the membership is checked
//!   on every call.
//! - These routes are the console's, not the public API: they are not in the OpenAPI
//!   document, and API clients never see them.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::ApiError;
use super::extract::{ApiJson, ApiQuery, SessionCaller};
use crate::app::App;
use crate::auth::{self, Caller, Via, hash_hex};
use crate::clock::iso8601;
use crate::people::{self, CSRF_HEADER, ORG_HEADER, Plan, Role, SESSION_COOKIE};
use crate::store::people::{Membership, Person, SessionRow};

/// Active API keys an organisation may hold; creating more answers 409.
pub const MAX_ACTIVE_KEYS: usize = 100;
/// Longest key label, in characters.
pub const KEY_NAME_MAX_CHARS: usize = 100;

/// A request's signed-in person and session.
struct SignedIn {
    person: Person,
    session: SessionRow,
    token_hash: String,
}

fn signed_out() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "sign in to the console first (your session may have ended)",
    )
}

fn forbidden(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, code, message)
}

/// The session token in the request's `Cookie` header, if any.
fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == SESSION_COOKIE)
        .map(|c| c.value().to_owned())
        .filter(|v| !v.is_empty() && v.len() <= 64)
}

/// Whether the request was addressed to this machine's loopback (`localhost`, 127.0.0.0/8,
/// `[::1]`): the only case where the cookie may go without `Secure`, since a browser on plain
/// HTTP drops a `Secure` cookie and loopback traffic never leaves the machine.
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn session_cookie(token: &str, headers: &HeaderMap, max_age_secs: i64) -> HeaderValue {
    let c = cookie::Cookie::build((SESSION_COOKIE, token.to_owned()))
        .path("/console")
        .http_only(true)
        .same_site(cookie::SameSite::Strict)
        .secure(!loopback_host(headers))
        .max_age(cookie::time::Duration::seconds(max_age_secs))
        .build();
    HeaderValue::from_str(&c.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

async fn signed_in(app: &App, headers: &HeaderMap) -> Result<SignedIn, ApiError> {
    let token = cookie_token(headers).ok_or_else(signed_out)?;
    let token_hash = hash_hex(&token);
    let session = app
        .db
        .session(&token_hash, app.clock.now_ms())
        .await?
        .ok_or_else(signed_out)?;
    let person = app
        .db
        .person_by_id(&session.person_id)
        .await?
        .ok_or_else(signed_out)?;
    Ok(SignedIn {
        person,
        session,
        token_hash,
    })
}

/// 403 `csrf_failed` unless the request carries the session's CSRF token.
fn check_csrf(headers: &HeaderMap, session: &SessionRow) -> Result<(), ApiError> {
    let presented = headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let ok: bool = presented
        .as_bytes()
        .ct_eq(session.csrf_token.as_bytes())
        .into();
    if ok && !presented.is_empty() {
        Ok(())
    } else {
        Err(forbidden(
            "csrf_failed",
            "this request did not carry the session's CSRF token (X-CSRF-Token); reload the console and try again",
        ))
    }
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The membership a console call acts in: the organisation named in `X-Brainscan-Org`, or
/// the person's only one.
async fn acting_membership(
    app: &App,
    headers: &HeaderMap,
    person: &Person,
) -> Result<Membership, ApiError> {
    let memberships = app.db.memberships_of(&person.id).await?;
    let named = headers.get(ORG_HEADER).and_then(|v| v.to_str().ok());
    match named {
        Some(org) => memberships
            .into_iter()
            .find(|m| m.org.id == org)
            .ok_or_else(|| forbidden("forbidden", "you are not a member of this organisation")),
        None if memberships.len() == 1 => Ok(memberships.into_iter().next().expect("one")),
        None if memberships.is_empty() => Err(forbidden(
            "forbidden",
            "your account belongs to no organisation yet; ask the operator to add you",
        )),
        None => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "you belong to several organisations: name one in the X-Brainscan-Org header",
        )),
    }
}

/// Middleware of `/console/api/v1`: a signed-in session (and its CSRF token on writes) in
/// place of an API key, acting in one of the person's organisations. The organisation's rate
/// limit applies as it does to its keys.
pub async fn gate(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    match authorise(&app, &parts).await {
        Ok(caller) => {
            // Only the session speaks here: a key sent along is ignored, never combined.
            parts.headers.remove(header::AUTHORIZATION);
            parts.extensions.insert(SessionCaller(caller));
            next.run(Request::from_parts(parts, body)).await
        }
        Err(e) => e.into_response(),
    }
}

/// Middleware of the session routes that change state (sign-out, keys): the session's CSRF
/// token is checked before the body is even read, so a forged request learns nothing from a
/// validation error either.
pub async fn csrf_guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    if changes_state(request.method()) {
        let checked = match signed_in(&app, request.headers()).await {
            Ok(who) => check_csrf(request.headers(), &who.session),
            Err(e) => Err(e),
        };
        if let Err(e) = checked {
            return e.into_response();
        }
    }
    next.run(request).await
}

async fn authorise(app: &App, parts: &Parts) -> Result<Arc<Caller>, ApiError> {
    let who = signed_in(app, &parts.headers).await?;
    if changes_state(&parts.method) {
        check_csrf(&parts.headers, &who.session)?;
    }
    let membership = acting_membership(app, &parts.headers, &who.person).await?;
    tracing::Span::current().record("org.id", membership.org.id.as_str());
    if let Some(limiter) = &app.limiter
        && let Err(not_until) = limiter.check_key(&membership.org.id)
    {
        use governor::clock::Clock;
        let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
        return Err(ApiError::rate_limited(wait));
    }
    Ok(Arc::new(Caller {
        org_id: membership.org.id,
        via: Via::Console {
            person_id: who.person.id,
            role: membership.role,
        },
    }))
}

// ---------- sign-in and sign-out ----------

/// The client's address, read through trusted proxies only (as the admin lockout reads it).
pub struct ClientAddress(IpAddr);

impl axum::extract::FromRequestParts<Arc<App>> for ClientAddress {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        Ok(Self(super::client_addr::of_request(
            parts,
            &app.config.http.trusted_proxies,
        )))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignInBody {
    email: String,
    password: String,
}

/// One organisation as the console shows it, with this month's plan use.
#[derive(Serialize)]
pub struct OrgView {
    id: String,
    name: String,
    role: &'static str,
    plan: &'static str,
    /// Console scans a month on this plan.
    monthly_scans: i64,
    /// Console scans started this calendar month (UTC) that count against it.
    used_this_month: i64,
    /// The month they count over, `YYYY-MM`.
    month: String,
    /// Whether this plan may create API keys in the console.
    can_create_keys: bool,
}

/// `GET /console/session/me` and the sign-in answer.
#[derive(Serialize)]
pub struct Me {
    email: String,
    /// Send it back in `X-CSRF-Token` on every state-changing request.
    csrf_token: String,
    session_expires_at: String,
    orgs: Vec<OrgView>,
}

async fn me_view(app: &App, person: &Person, session: &SessionRow) -> Result<Me, ApiError> {
    let now = app.clock.now();
    let since = people::month_start_ms(now);
    let mut orgs = Vec::new();
    for m in app.db.memberships_of(&person.id).await? {
        orgs.push(OrgView {
            used_this_month: app.db.console_scans_used(&m.org.id, since).await?,
            monthly_scans: m.plan.monthly_scans(),
            month: crate::billing::period_of(now),
            can_create_keys: m.plan.is_paid(),
            plan: m.plan.as_str(),
            role: m.role.as_str(),
            id: m.org.id,
            name: m.org.name,
        });
    }
    Ok(Me {
        email: person.email.clone(),
        csrf_token: session.csrf_token.clone(),
        session_expires_at: iso8601(session.expires_at),
        orgs,
    })
}

/// Starts a session for `person`: the `Set-Cookie` value and the session.
async fn start_session(
    app: &App,
    headers: &HeaderMap,
    person: &Person,
) -> Result<(HeaderValue, SessionRow), ApiError> {
    let token = people::new_token();
    let now = app.clock.now_ms();
    let session = SessionRow {
        person_id: person.id.clone(),
        csrf_token: people::new_token(),
        expires_at: now + people::SESSION_TTL_MS,
    };
    app.db
        .create_session(
            &hash_hex(&token),
            &person.id,
            &session.csrf_token,
            now,
            session.expires_at,
        )
        .await?;
    let cookie = session_cookie(&token, headers, people::SESSION_TTL_MS / 1000);
    Ok((cookie, session))
}

fn locked_out(wait: std::time::Duration) -> ApiError {
    let mut e = ApiError::rate_limited(wait);
    e.message = format!(
        "too many failed sign-ins; wait {} s and try again",
        e.retry_after.unwrap_or(1)
    );
    e
}

/// `POST /console/session/sign-in` `{email, password}`: 200 with [`Me`] and the session
/// cookie; 401 `invalid_credentials` for an unknown email or a wrong password alike; 429
/// after five failures a minute from one address or for one email.
pub async fn sign_in(
    State(app): State<Arc<App>>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    ApiJson(body): ApiJson<SignInBody>,
) -> Result<Response, ApiError> {
    let now = Instant::now();
    let email = people::normalise_email(&body.email).map_err(|m| ApiError::invalid("email", m))?;
    if body.password.is_empty() || body.password.chars().count() > people::PASSWORD_MAX_CHARS {
        return Err(ApiError::invalid(
            "password",
            format!("a password is 1-{} characters", people::PASSWORD_MAX_CHARS),
        ));
    }
    let guard = &app.signin;
    if let Some(wait) = guard
        .by_address
        .locked_out(address, now)
        .max(guard.by_email.locked_out(email.clone(), now))
    {
        return Err(locked_out(wait));
    }
    let person = app.db.person_by_email(&email).await?;
    let stored = person.as_ref().and_then(|p| p.password_hash.clone());
    let verified = {
        let _slot = guard.hashing.acquire().await.map_err(ApiError::internal)?;
        let password = body.password;
        tokio::task::spawn_blocking(move || people::verify_password(stored.as_deref(), &password))
            .await
            .map_err(ApiError::internal)?
    };
    let Some(person) = person.filter(|_| verified) else {
        guard.by_address.failed(address, now);
        guard.by_email.failed(email, now);
        tracing::warn!(%address, "failed console sign-in");
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_credentials",
            "that email and password do not match an account",
        ));
    };
    guard.by_address.succeeded(address);
    guard.by_email.succeeded(email);
    let (cookie, session) = start_session(&app, &headers, &person).await?;
    tracing::info!(person.id = %person.id, "console sign-in");
    let me = me_view(&app, &person, &session).await?;
    Ok(([(header::SET_COOKIE, cookie)], Json(me)).into_response())
}

/// `GET /console/session/link?token=…`: a one-time sign-in link from
/// `brainscan admin person link`. It signs in and sends the browser to the console; a used,
/// expired or unknown link goes to the sign-in page with a note. Failures count against the
/// address as wrong passwords do.
pub async fn sign_in_with_link(
    State(app): State<Arc<App>>,
    ApiQuery(link): ApiQuery<LinkQuery>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let now = Instant::now();
    if let Some(wait) = app.signin.by_address.locked_out(address, now) {
        return Err(locked_out(wait));
    }
    // In the query, not the path: request logs record paths, and this is a credential.
    let token = link.token.unwrap_or_default();
    let well_formed = token.len() == 40 && token.bytes().all(|b| b.is_ascii_alphanumeric());
    let person_id = if well_formed {
        app.db
            .consume_signin_link(&hash_hex(&token), app.clock.now_ms())
            .await?
    } else {
        None
    };
    let person = match person_id {
        Some(id) => app.db.person_by_id(&id).await?,
        None => None,
    };
    let Some(person) = person else {
        app.signin.by_address.failed(address, now);
        return Ok(see_other("/console/#/signin/link-expired", None));
    };
    let (cookie, _) = start_session(&app, &headers, &person).await?;
    tracing::info!(person.id = %person.id, "console sign-in by link");
    Ok(see_other("/console/#/scans", Some(cookie)))
}

#[derive(Deserialize)]
pub struct LinkQuery {
    token: Option<String>,
}

fn see_other(to: &'static str, cookie: Option<HeaderValue>) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    r.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static(to));
    // The link's token must not travel on in a Referer.
    r.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(c) = cookie {
        r.headers_mut().insert(header::SET_COOKIE, c);
    }
    r
}

/// `POST /console/session/sign-out`: ends the session (204) and clears the cookie. (CSRF:
/// [`csrf_guard`].)
pub async fn sign_out(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let who = signed_in(&app, &headers).await?;
    app.db.delete_session(&who.token_hash).await?;
    let cookie = session_cookie("", &headers, 0);
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response())
}

/// `GET /console/session/me`: the signed-in person, their CSRF token and organisations.
pub async fn me(State(app): State<Arc<App>>, headers: HeaderMap) -> Result<Json<Me>, ApiError> {
    let who = signed_in(&app, &headers).await?;
    Ok(Json(me_view(&app, &who.person, &who.session).await?))
}

// ---------- API keys in account settings ----------

#[derive(Serialize)]
pub struct KeyView {
    id: String,
    name: Option<String>,
    created_at: String,
    revoked_at: Option<String>,
    /// `console` when a person made it here, `cli` when the operator did.
    made_in: &'static str,
}

#[derive(Serialize)]
pub struct KeyList {
    plan: &'static str,
    can_create_keys: bool,
    keys: Vec<KeyView>,
}

/// A created key: `key` is the full secret, shown this once and never again.
#[derive(Serialize)]
pub struct CreatedKey {
    key: String,
    id: String,
    name: String,
    created_at: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyBody {
    name: String,
}

/// The signed-in owner's membership of `org` (403 for a member, or anyone else).
async fn owner_of(app: &App, headers: &HeaderMap, org: &str) -> Result<(SignedIn, Plan), ApiError> {
    let who = signed_in(app, headers).await?;
    let membership = app
        .db
        .memberships_of(&who.person.id)
        .await?
        .into_iter()
        .find(|m| m.org.id == org)
        .ok_or_else(|| forbidden("forbidden", "you are not a member of this organisation"))?;
    if membership.role != Role::Owner {
        return Err(forbidden(
            "owner_only",
            "only an owner of this organisation manages its API keys",
        ));
    }
    Ok((who, membership.plan))
}

fn plan_required() -> ApiError {
    forbidden(
        "plan_required",
        "API keys are part of the paid plans (Pro and Studio); this organisation is on the Free plan. Ask the operator to change the plan.",
    )
}

/// `GET /console/session/orgs/{org}/keys`: the organisation's keys (owners only).
pub async fn list_keys(
    State(app): State<Arc<App>>,
    Path(org): Path<String>,
    headers: HeaderMap,
) -> Result<Json<KeyList>, ApiError> {
    let (_, plan) = owner_of(&app, &headers, &org).await?;
    let keys = app
        .db
        .list_api_keys(&org)
        .await?
        .into_iter()
        .map(|k| KeyView {
            made_in: if k.created_by.is_some() {
                "console"
            } else {
                "cli"
            },
            id: k.id,
            name: k.name,
            created_at: iso8601(k.created_at),
            revoked_at: k.revoked_at.map(iso8601),
        })
        .collect();
    Ok(Json(KeyList {
        plan: plan.as_str(),
        can_create_keys: plan.is_paid(),
        keys,
    }))
}

/// `POST /console/session/orgs/{org}/keys` `{name}`: 201 with the full key, shown once.
/// 403 `plan_required` on the Free plan, `owner_only` for members.
pub async fn create_key(
    State(app): State<Arc<App>>,
    Path(org): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateKeyBody>,
) -> Result<Response, ApiError> {
    let (who, plan) = owner_of(&app, &headers, &org).await?;
    if !plan.is_paid() {
        return Err(plan_required());
    }
    let name = body.name.trim().to_owned();
    if name.is_empty()
        || name.chars().count() > KEY_NAME_MAX_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(ApiError::invalid(
            "name",
            format!("a key's name is 1-{KEY_NAME_MAX_CHARS} printable characters"),
        ));
    }
    let active = app
        .db
        .list_api_keys(&org)
        .await?
        .iter()
        .filter(|k| k.revoked_at.is_none())
        .count();
    if active >= MAX_ACTIVE_KEYS {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "too_many_keys",
            format!(
                "an organisation holds at most {MAX_ACTIVE_KEYS} active keys; revoke one first"
            ),
        ));
    }
    let mut key = auth::generate(&org, app.clock.now_ms());
    key.row.name = Some(name.clone());
    key.row.created_by = Some(who.person.id.clone());
    app.db.insert_api_key(&key.row).await?;
    tracing::info!(key.id = %key.row.id, person.id = %who.person.id, "API key created in the console");
    let created = CreatedKey {
        key: key.secret,
        id: key.row.id,
        name,
        created_at: iso8601(key.row.created_at),
    };
    let mut r = (StatusCode::CREATED, Json(created)).into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(r)
}

/// `DELETE /console/session/orgs/{org}/keys/{id}`: revokes one of the organisation's keys
/// (204). Servers stop accepting it within their key cache time.
pub async fn revoke_key(
    State(app): State<Arc<App>>,
    Path((org, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let (who, _) = owner_of(&app, &headers, &org).await?;
    app.db
        .revoke_org_api_key(&org, &id, app.clock.now_ms())
        .await
        .map_err(|e| match e {
            crate::store::StoreError::NotFound => ApiError::not_found("this key"),
            other => other.into(),
        })?;
    tracing::info!(key.id = %id, person.id = %who.person.id, "API key revoked in the console");
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(name: &'static str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, value.parse().expect("header"));
        h
    }

    #[test]
    fn the_cookie_is_secure_except_on_loopback() {
        for (host, secure) in [
            ("127.0.0.1:8080", false),
            ("localhost:8080", false),
            ("[::1]:8080", false),
            ("brainscan.example.com", true),
            ("10.0.0.5:8080", true),
        ] {
            let c = session_cookie("t", &with("host", host), 60);
            let c = c.to_str().expect("ascii");
            assert!(
                c.contains("HttpOnly") && c.contains("SameSite=Strict"),
                "{c}"
            );
            assert!(c.contains("Path=/console"), "{c}");
            assert_eq!(c.contains("Secure"), secure, "{host}: {c}");
        }
    }

    #[test]
    fn the_session_token_is_read_from_among_other_cookies() {
        let h = with("cookie", "theme=dark; brainscan_session=abc123; other=1");
        assert_eq!(cookie_token(&h).as_deref(), Some("abc123"));
        assert_eq!(cookie_token(&with("cookie", "theme=dark")), None);
        assert_eq!(
            cookie_token(&with(
                "cookie",
                &format!("brainscan_session={}", "x".repeat(65))
            )),
            None
        );
    }
}
