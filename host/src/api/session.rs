//! The console's people: sign-in (password or one-time link), sign-out, who is signed in,
//! the organisation's API keys in account settings, and the gate that lets a session use the
//! public API's handlers under `/console/api/v1`.
//!
//! - **The cookie** is `HttpOnly` and `SameSite=Strict`. Whether it is `Secure` is decided by
//!   the configuration ([`people::CookiePolicy`]), never by a request's `Host` header: when it
//!   is, it is `__Host-brainscan_session` with path `/` (the prefix makes browsers enforce
//!   both); when it is not (loopback, plain HTTP), `brainscan_session` with path `/console`.
//!   The key extractor on `/api/v1` reads only `Authorization`: a session is never an API
//!   key, and an API key is never a session.
//! - **Sign-in links** open a confirmation page that names the account and posts the token
//!   back; only that POST, from this origin, uses the link. A link scanner's GET uses nothing,
//!   and another site cannot sign a browser in to the account of its choice.
//! - **CSRF**: every state-changing request with a session carries the session's own random
//!   token in `X-CSRF-Token`, compared in constant time; `SameSite=Strict` is the second line.
//! - **Which organisation**: a person may belong to several; console API calls name one in
//!   `X-Brainscan-Org` (the only one is taken when there is one) and the membership is checked
//!   on every call.
//! - These routes are the console's, not the public API: they are not in the OpenAPI
//!   document, and API clients never see them.

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
use super::client_addr::ClientAddress;
use super::extract::{ApiJson, ApiQuery, SessionCaller};
use crate::app::App;
use crate::auth::{self, Caller, Via, hash_hex};
use crate::clock::iso8601;
use crate::people::{self, CSRF_HEADER, ORG_HEADER, Plan, Role};
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

/// The session token in the request's `Cookie` header, if any (the cookie named by `policy`).
fn cookie_token(headers: &HeaderMap, policy: &people::CookiePolicy) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == policy.name)
        .map(|c| c.value().to_owned())
        .filter(|v| !v.is_empty() && v.len() <= 64)
}

fn session_cookie(token: &str, policy: &people::CookiePolicy, max_age_secs: i64) -> HeaderValue {
    let c = cookie::Cookie::build((policy.name, token.to_owned()))
        .path(policy.path)
        .http_only(true)
        .same_site(cookie::SameSite::Strict)
        .secure(policy.secure)
        .max_age(cookie::time::Duration::seconds(max_age_secs))
        .build();
    HeaderValue::from_str(&c.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

async fn signed_in(app: &App, headers: &HeaderMap) -> Result<SignedIn, ApiError> {
    let token = cookie_token(headers, &app.cookie_policy).ok_or_else(signed_out)?;
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
async fn start_session(app: &App, person: &Person) -> Result<(HeaderValue, SessionRow), ApiError> {
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
    let cookie = session_cookie(&token, &app.cookie_policy, people::SESSION_TTL_MS / 1000);
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
/// cookie; 401 `invalid_credentials` for an unknown email or a wrong password alike; 429 past
/// five attempts a minute from one address (locked for the minute), or past five for one
/// email (then one attempt per growing delay, from any address: `crate::lockout`). Every
/// attempt is counted before its password is hashed, so a burst is limited as a sequence is;
/// 503 `busy` when every hashing slot stays taken for [`people::HASH_WAIT`].
pub async fn sign_in(
    State(app): State<Arc<App>>,
    ClientAddress(address): ClientAddress,
    ApiJson(body): ApiJson<SignInBody>,
) -> Result<Response, ApiError> {
    use crate::lockout::{Past, address_key};
    let now = Instant::now();
    let email = people::normalise_email(&body.email).map_err(|m| ApiError::invalid("email", m))?;
    if body.password.is_empty() || body.password.chars().count() > people::PASSWORD_MAX_CHARS {
        return Err(ApiError::invalid(
            "password",
            format!("a password is 1-{} characters", people::PASSWORD_MAX_CHARS),
        ));
    }
    let guard = &app.signin;
    let by_address = guard
        .by_address
        .reserve(address_key(address), now, Past::Lock)
        .map_err(locked_out)?;
    let by_email = match guard
        .by_email
        .reserve(email.clone(), now, Past::GrowingDelay)
    {
        Ok(r) => r,
        Err(wait) => {
            by_address.cancel();
            return Err(locked_out(wait));
        }
    };
    let person = app.db.person_by_email(&email).await?;
    let stored = person.as_ref().and_then(|p| p.password_hash.clone());
    let Ok(slot) = tokio::time::timeout(people::HASH_WAIT, guard.hashing.acquire()).await else {
        // Not checked: the attempt does not count against the client.
        by_address.cancel();
        by_email.cancel();
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "too many sign-ins are being checked; retry shortly",
        );
        e.retry_after = Some(1);
        return Err(e);
    };
    let verified = {
        let _slot = slot.map_err(ApiError::internal)?;
        let password = body.password;
        tokio::task::spawn_blocking(move || people::verify_password(stored.as_deref(), &password))
            .await
            .map_err(ApiError::internal)?
    };
    let Some(person) = person.filter(|_| verified) else {
        // Already counted by the reservations.
        tracing::warn!(%address, "failed console sign-in");
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_credentials",
            "that email and password do not match an account",
        ));
    };
    by_address.succeeded();
    by_email.succeeded();
    let (cookie, session) = start_session(&app, &person).await?;
    tracing::info!(person.id = %person.id, "console sign-in");
    let me = me_view(&app, &person, &session).await?;
    Ok(([(header::SET_COOKIE, cookie)], Json(me)).into_response())
}

/// A sign-in link's token as the CLI prints it (40 base-62 characters), or `None`.
fn link_token(token: Option<&str>) -> Option<&str> {
    token.filter(|t| t.len() == 40 && t.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// `GET /console/session/link?token=…`: a one-time sign-in link from
/// `brainscan admin person link`. It uses nothing: it answers a page that names the account
/// and asks to sign in, whose button posts the token back ([`sign_in_with_link`]). A used,
/// expired or unknown link goes to the sign-in page with a note. Links carry 238 random bits:
/// there is nothing to guess, so they are not rate-limited as passwords are.
pub async fn confirm_link(
    State(app): State<Arc<App>>,
    ApiQuery(link): ApiQuery<LinkQuery>,
) -> Result<Response, ApiError> {
    // In the query, not the path: request logs record paths, and this is a credential.
    let Some(token) = link_token(link.token.as_deref()) else {
        return Ok(see_other("/console/#/signin/link-expired", None));
    };
    let person = match app
        .db
        .peek_signin_link(&hash_hex(token), app.clock.now_ms())
        .await?
    {
        Some(id) => app.db.person_by_id(&id).await?,
        None => None,
    };
    let Some(person) = person else {
        return Ok(see_other("/console/#/signin/link-expired", None));
    };
    let email = html_escape(&person.email);
    let page = format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin"><title>Sign in to brainscan</title>
<link rel="stylesheet" href="/console/app.css"></head>
<body><main class="signin"><h1>Sign in to brainscan</h1>
<p>This link signs you in as <strong id="link-email">{email}</strong>. If you did not ask for it, close this page: nothing happens until you press the button.</p>
<form method="post" action="/console/session/link"><input type="hidden" name="token" value="{token}">
<button type="submit" id="link-confirm">Sign in as {email}</button></form></main></body></html>
"#
    );
    let mut r = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page,
    )
        .into_response();
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The address holds the token: no other site may see it in a Referer. (Not
    // `no-referrer`: a browser then sends `Origin: null` with the form, which reads as
    // another site.)
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    // Not in another site's frame: the button must be pressed here, knowingly.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    Ok(r)
}

/// Text for HTML: `&`, `<`, `>`, `"` and `'` escaped.
fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Whether a browser says the request came from another site. `Sec-Fetch-Site` decides when
/// present (anything but `same-origin` or `none`, a typed navigation, is another site);
/// otherwise an `Origin` that is not this request's own `Host` (`null` included: a sandboxed
/// frame) is. Clients that are not browsers send neither, and cannot be made to sign anyone
/// in.
fn cross_site(headers: &HeaderMap) -> bool {
    if let Some(site) = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
    {
        return !(site.eq_ignore_ascii_case("same-origin") || site.eq_ignore_ascii_case("none"));
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return false;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| url::Url::parse(o).ok())
        .and_then(|u| {
            let host = u.host_str()?.to_owned();
            Some(match u.port() {
                Some(p) => format!("{host}:{p}"),
                None => host,
            })
        });
    match (origin_host, host) {
        (Some(o), Some(h)) => !o.eq_ignore_ascii_case(h.trim()),
        _ => true,
    }
}

#[derive(Deserialize)]
pub struct LinkForm {
    token: Option<String>,
}

/// `POST /console/session/link` (form `token=…`, from [`confirm_link`]'s page): uses the link,
/// once, signs in and sends the browser to the console. A used, expired or unknown link goes
/// to the sign-in page with a note; a post from another site is refused (403
/// `csrf_failed`).
pub async fn sign_in_with_link(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    form: Result<axum::Form<LinkForm>, axum::extract::rejection::FormRejection>,
) -> Result<Response, ApiError> {
    if cross_site(&headers) {
        return Err(forbidden(
            "csrf_failed",
            "a sign-in link is used from its own confirmation page, not from another site",
        ));
    }
    let token = form.ok().and_then(|axum::Form(f)| f.token);
    let person_id = match link_token(token.as_deref()) {
        Some(token) => {
            app.db
                .consume_signin_link(&hash_hex(token), app.clock.now_ms())
                .await?
        }
        None => None,
    };
    let person = match person_id {
        Some(id) => app.db.person_by_id(&id).await?,
        None => None,
    };
    let Some(person) = person else {
        return Ok(see_other("/console/#/signin/link-expired", None));
    };
    let (cookie, _) = start_session(&app, &person).await?;
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
    let cookie = session_cookie("", &app.cookie_policy, 0);
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
    use crate::config::{SecureCookies, ServeConfig};

    fn with(name: &'static str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, value.parse().expect("header"));
        h
    }

    fn policy(listen: &str, public_url: Option<&str>, rule: SecureCookies) -> people::CookiePolicy {
        let mut c = ServeConfig::with_data_dir("/nonexistent".into());
        c.http.listen = listen.parse().expect("listen");
        c.artifacts.public_url = public_url.map(str::to_owned);
        c.http.secure_cookies = rule;
        people::CookiePolicy::from_config(&c)
    }

    /// Security round 4: `Secure` came from the request's `Host`, so a proxy that forwards its
    /// upstream address dropped it. It comes from the configuration now, whatever `Host` says.
    #[test]
    fn the_cookie_is_secure_as_the_configuration_says() {
        for (listen, public, rule, secure) in [
            ("127.0.0.1:8080", None, SecureCookies::Auto, false),
            ("[::1]:8080", None, SecureCookies::Auto, false),
            ("0.0.0.0:8080", None, SecureCookies::Auto, true),
            (
                "127.0.0.1:8080",
                Some("https://scan.example.com"),
                SecureCookies::Auto,
                true,
            ),
            (
                "0.0.0.0:8080",
                Some("http://10.0.0.5:8080"),
                SecureCookies::Auto,
                false,
            ),
            ("0.0.0.0:8080", None, SecureCookies::Never, false),
            ("127.0.0.1:8080", None, SecureCookies::Always, true),
        ] {
            let p = policy(listen, public, rule);
            let c = session_cookie("t", &p, 60);
            let c = c.to_str().expect("ascii");
            assert!(
                c.contains("HttpOnly") && c.contains("SameSite=Strict"),
                "{c}"
            );
            assert_eq!(c.contains("Secure"), secure, "{listen} {public:?}: {c}");
            if secure {
                assert!(c.starts_with("__Host-brainscan_session=t;"), "{c}");
                assert!(c.contains("Path=/;") || c.ends_with("Path=/"), "{c}");
                assert!(!c.contains("Domain"), "{c}");
            } else {
                assert!(c.starts_with("brainscan_session=t;"), "{c}");
                assert!(c.contains("Path=/console"), "{c}");
            }
        }
    }

    #[test]
    fn the_session_token_is_read_from_among_other_cookies() {
        let plain = policy("127.0.0.1:8080", None, SecureCookies::Auto);
        let secure = policy("0.0.0.0:8080", None, SecureCookies::Auto);
        let h = with("cookie", "theme=dark; brainscan_session=abc123; other=1");
        assert_eq!(cookie_token(&h, &plain).as_deref(), Some("abc123"));
        assert_eq!(
            cookie_token(&h, &secure),
            None,
            "the plain name is not the secure one"
        );
        let h = with("cookie", "__Host-brainscan_session=def456");
        assert_eq!(cookie_token(&h, &secure).as_deref(), Some("def456"));
        assert_eq!(cookie_token(&with("cookie", "theme=dark"), &plain), None);
        assert_eq!(
            cookie_token(
                &with("cookie", &format!("brainscan_session={}", "x".repeat(65))),
                &plain
            ),
            None
        );
    }

    #[test]
    fn a_link_post_from_another_site_is_told_apart() {
        let mut h = with("host", "scan.example.com");
        assert!(
            !cross_site(&h),
            "no Origin: not a browser's cross-site post"
        );
        h.insert(
            header::ORIGIN,
            "https://scan.example.com".parse().expect("v"),
        );
        assert!(!cross_site(&h));
        h.insert(header::ORIGIN, "https://evil.example".parse().expect("v"));
        assert!(cross_site(&h));
        let mut h = with("host", "127.0.0.1:8080");
        h.insert(header::ORIGIN, "http://127.0.0.1:8080".parse().expect("v"));
        assert!(!cross_site(&h));
        h.insert("sec-fetch-site", "cross-site".parse().expect("v"));
        assert!(cross_site(&h));
        h.insert("sec-fetch-site", "same-origin".parse().expect("v"));
        assert!(!cross_site(&h), "the browser's own word decides");
        let mut h = with("host", "127.0.0.1:8080");
        h.insert(header::ORIGIN, "null".parse().expect("v"));
        assert!(cross_site(&h), "a sandboxed frame's null origin");
        assert_eq!(
            html_escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
