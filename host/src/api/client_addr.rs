//! The address a request comes from, for limits keyed on the client (the admin lockout).
//!
//! Behind a reverse proxy every request's peer is the proxy, so a lockout keyed on the peer
//! lets anyone lock out everyone. `X-Forwarded-For` names the client, but any client can send
//! one, so it is read only from a configured proxy (`BRAINSCAN_TRUSTED_PROXIES`), and from
//! the right: each trusted hop appends the address it received from, so the first entry from
//! the right that is not itself a trusted proxy is the client. Entries left of it were written
//! by the client and are never believed.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::config::TrustedProxy;

/// The client address of a request whose connection came from `peer`.
#[must_use]
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[TrustedProxy]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|t| t.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let mut client = peer;
    // Every X-Forwarded-For header, in order, as one list read from its right end.
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect();
    for hop in hops.iter().rev() {
        let Some(ip) = parse_hop(hop) else {
            // An entry we cannot read: stop at the last hop we could.
            break;
        };
        client = ip;
        if !is_trusted(ip) {
            break;
        }
    }
    client
}

/// One `X-Forwarded-For` entry: an address, optionally bracketed or with a port.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .or_else(|| {
            hop.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .and_then(|h| h.parse().ok())
        })
        .map(|ip: IpAddr| ip.to_canonical())
}

/// The client's address as an extractor, read through trusted proxies only (see
/// [`client_ip`]).
pub struct ClientAddress(pub IpAddr);

impl axum::extract::FromRequestParts<std::sync::Arc<crate::app::App>> for ClientAddress {
    type Rejection = super::ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        app: &std::sync::Arc<crate::app::App>,
    ) -> Result<Self, super::ApiError> {
        Ok(Self(of_request(parts, &app.config.http.trusted_proxies)))
    }
}

/// The client address of a request's `parts`: its connection's peer (unspecified for a
/// router driven directly, as unit tests do), read through [`client_ip`].
#[must_use]
pub fn of_request(parts: &Parts, trusted: &[TrustedProxy]) -> IpAddr {
    let peer = parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip().to_canonical());
    client_ip(peer, &parts.headers, trusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", v.parse().expect("header"));
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn forwarded_for_is_read_only_from_trusted_proxies_and_from_the_right() {
        let trusted: Vec<TrustedProxy> = ["10.0.0.0/8", "127.0.0.1"]
            .iter()
            .map(|s| s.parse().expect("proxy"))
            .collect();
        // A client talking directly cannot choose its address.
        assert_eq!(
            client_ip(ip("203.0.113.9"), &headers(&["198.51.100.1"]), &trusted),
            ip("203.0.113.9")
        );
        // Through one proxy: the address the proxy appended.
        assert_eq!(
            client_ip(ip("127.0.0.1"), &headers(&["198.51.100.1"]), &trusted),
            ip("198.51.100.1")
        );
        // A forged entry on the left is not believed: the proxy's own entry is the client.
        assert_eq!(
            client_ip(
                ip("127.0.0.1"),
                &headers(&["6.6.6.6, 198.51.100.1"]),
                &trusted
            ),
            ip("198.51.100.1")
        );
        // Through two trusted hops, across two headers, with a port.
        assert_eq!(
            client_ip(
                ip("10.1.1.1"),
                &headers(&["198.51.100.7:5555", "10.2.2.2"]),
                &trusted
            ),
            ip("198.51.100.7")
        );
        // Garbage stops the walk at the last readable hop; no header means the peer.
        assert_eq!(
            client_ip(ip("127.0.0.1"), &headers(&["nonsense"]), &trusted),
            ip("127.0.0.1")
        );
        assert_eq!(
            client_ip(ip("127.0.0.1"), &headers(&[]), &trusted),
            ip("127.0.0.1")
        );
        // No trusted proxies: never read.
        assert_eq!(
            client_ip(ip("127.0.0.1"), &headers(&["198.51.100.1"]), &[]),
            ip("127.0.0.1")
        );
        assert!("not-an-ip".parse::<TrustedProxy>().is_err());
    }
}
