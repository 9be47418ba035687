//! The `Host` check: a defence against DNS rebinding.
//!
//! A web page can point its own name at this service's address (loopback, an intranet
//! address) and then read `/metrics`, `/readyz` or anything else the browser can reach, since
//! to the browser it is the page's own origin. Such a request names the attacker's host in its
//! `Host` header. Requests are therefore answered only for hosts the service knows: any IP
//! literal (rebinding needs a name), `localhost`, the host of `BRAINSCAN_PUBLIC_URL`, and
//! `BRAINSCAN_ALLOWED_HOSTS`. `/healthz` says nothing and stays open to every probe.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;
use crate::app::App;

/// The host part of a `Host` header or URI authority (`name`, `name:port`, `[v6]:port`),
/// lower-cased; `None` when it is not readable.
fn host_part(authority: &str) -> Option<String> {
    let authority = authority.trim();
    let host = if let Some(rest) = authority.strip_prefix('[') {
        rest.split_once(']')?.0
    } else {
        match authority.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => authority,
        }
    };
    (!host.is_empty()).then(|| host.trim_end_matches('.').to_ascii_lowercase())
}

/// Whether `host` (as [`host_part`] gives it) may be served.
#[must_use]
pub fn allowed(host: &str, public_host: Option<&str>, extra: &[String]) -> bool {
    host.parse::<IpAddr>().is_ok()
        || host == "localhost"
        || public_host.is_some_and(|p| p.eq_ignore_ascii_case(host))
        || extra
            .iter()
            .any(|e| e.trim() == "*" || e.trim().trim_end_matches('.').eq_ignore_ascii_case(host))
}

/// The host names a listener answers for besides IP literals and `localhost`, resolved once
/// when the router is built (the public URL is not parsed per request).
#[derive(Clone, Debug)]
pub struct HostPolicy {
    public_host: Option<String>,
    extra: Vec<String>,
}

impl HostPolicy {
    #[must_use]
    pub fn of(app: &App) -> Self {
        let public_host = app
            .config
            .artifacts
            .public_url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
        Self {
            public_host,
            extra: app.config.http.allowed_hosts.clone(),
        }
    }
}

/// The middleware: 421 `host_not_allowed` for a request that names a host the service does
/// not answer for.
pub async fn gate(State(policy): State<Arc<HostPolicy>>, request: Request, next: Next) -> Response {
    if request.uri().path() == "/healthz" {
        return next.run(request).await;
    }
    // HTTP/1.1 sends `Host`; HTTP/2 the URI's authority.
    let named = request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()));
    let Some(named) = named else {
        // HTTP/1.0 without a Host: not a browser on a rebound name.
        return next.run(request).await;
    };
    let ok = host_part(&named)
        .is_some_and(|h| allowed(&h, policy.public_host.as_deref(), &policy.extra));
    if ok {
        next.run(request).await
    } else {
        ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "host_not_allowed",
            "this service does not answer for that host name (set BRAINSCAN_PUBLIC_URL or BRAINSCAN_ALLOWED_HOSTS)",
        )
        .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_literals_localhost_and_configured_names_pass_others_do_not() {
        let parse = |s: &str| host_part(s).expect("host");
        assert_eq!(parse("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(parse("[::1]:8080"), "::1");
        assert_eq!(parse("Scan.Example.COM."), "scan.example.com");
        let extra = vec!["api.internal".to_owned()];
        for ok in [
            "127.0.0.1",
            "10.1.2.3",
            "::1",
            "localhost",
            "scan.example.com",
            "api.internal",
        ] {
            assert!(allowed(ok, Some("scan.example.com"), &extra), "{ok}");
        }
        for refused in [
            "attacker.example",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
        ] {
            assert!(
                !allowed(refused, Some("scan.example.com"), &extra),
                "{refused}"
            );
        }
        assert!(allowed("anything.example", None, &["*".to_owned()]));
    }
}
