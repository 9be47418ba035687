//! The outbound address policy (SSRF guard).
//!
//! Every fetch the service makes on a client's behalf — media downloads and webhooks — may only
//! reach public unicast addresses. Checked per hop: the URL's literal IP, or every address its
//! name resolves to (a name with any refused address is refused whole), and the connection goes
//! only to the addresses checked (see [`GuardedResolver`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use url::{Host, Url};

/// Host names that resolve to cloud metadata services inside cloud networks.
const METADATA_NAMES: [&str; 4] = [
    "metadata.google.internal",
    "metadata",
    "metadata.azure.internal",
    "instance-data",
];

/// Who may be reached.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    /// Development only: loopback addresses are allowed.
    pub allow_loopback: bool,
    /// Exact socket addresses allowed although their range is refused (an internal media
    /// host): the address on that port only.
    pub allow_addrs: Vec<SocketAddr>,
}

/// Why an address or URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl AddressPolicy {
    /// Checks an address about to be connected to on `port`: an allowed socket address
    /// passes, anything else goes by its range ([`Self::check_ip`]).
    ///
    /// # Errors
    /// `Refused` naming the range.
    pub fn check_addr(&self, ip: IpAddr, port: u16) -> Result<(), Refused> {
        if self.allow_addrs.contains(&SocketAddr::new(ip, port)) {
            return Ok(());
        }
        self.check_ip(ip)
    }

    /// The addresses allowed on `port` although their range is refused.
    #[must_use]
    pub fn exempt_on(&self, port: u16) -> Vec<IpAddr> {
        self.allow_addrs
            .iter()
            .filter(|a| a.port() == port)
            .map(SocketAddr::ip)
            .collect()
    }

    /// The ports [`Self::allow_addrs`] name, each once.
    #[must_use]
    pub fn exempt_ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self.allow_addrs.iter().map(SocketAddr::port).collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// Checks one address by its range alone (no exemption).
    ///
    /// # Errors
    /// `Refused` naming the range.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Refused> {
        match classify(ip) {
            None => Ok(()),
            Some("loopback") if self.allow_loopback => Ok(()),
            Some(range) => Err(Refused(format!(
                "address {ip} is {range}; only public addresses may be fetched"
            ))),
        }
    }

    /// Checks a URL before any connection: scheme, credentials, literal IPs, metadata names.
    /// Names are checked again, address by address, when they are resolved.
    ///
    /// # Errors
    /// `Refused` with the reason.
    pub fn check_url(&self, url: &Url) -> Result<(), Refused> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refused(format!(
                "scheme {:?} is not allowed; use http or https",
                url.scheme()
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refused("URLs with credentials are not allowed".into()));
        }
        let port = url.port_or_known_default().unwrap_or(0);
        match url.host() {
            None => Err(Refused("the URL has no host".into())),
            Some(Host::Ipv4(ip)) => self.check_addr(IpAddr::V4(ip), port),
            Some(Host::Ipv6(ip)) => self.check_addr(IpAddr::V6(ip), port),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if METADATA_NAMES.contains(&name.as_str()) {
                    return Err(Refused(format!("{name} is a cloud metadata host")));
                }
                if (name == "localhost" || name.ends_with(".localhost")) && !self.allow_loopback {
                    return Err(Refused(format!("{name} is a loopback name")));
                }
                Ok(())
            }
        }
    }
}

/// The refused range an address falls in, or `None` for a public unicast address.
pub fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "unspecified (0.0.0.0/8)",
        (127, _, _) => "loopback",
        (10, _, _) => "private (10.0.0.0/8)",
        (172, 16..=31, _) => "private (172.16.0.0/12)",
        (192, 168, _) => "private (192.168.0.0/16)",
        (169, 254, _) => "link-local or cloud metadata (169.254.0.0/16)",
        (100, 64..=127, _) => "carrier-grade NAT (100.64.0.0/10)",
        (192, 0, 0) => "IETF protocol assignments (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking (198.18.0.0/15)",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved or broadcast",
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified (::)");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // Addresses that embed an IPv4 address are judged by it: mapped ::ffff:a.b.c.d,
    // deprecated compatible ::a.b.c.d, and NAT64 64:ff9b::/96.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let s = ip.segments();
    // IPv4-translated ::ffff:0:a.b.c.d (SIIT, RFC 6145): a translator's address, never a
    // public destination of its own.
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return Some("IPv4-translated (::ffff:0:0/96)");
    }
    // Local-use NAT64 64:ff9b:1::/48 (RFC 8215) is a network's own translator: it may embed
    // the IPv4 address at any of RFC 6052's positions (/48 to /96), so no fixed 32 bits say
    // where it leads, and it leads into that network. Refused whole.
    if s[..3] == [0x64, 0xff9b, 0x0001] {
        return Some("local-use NAT64 (64:ff9b:1::/48)");
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        return classify_v4(Ipv4Addr::from(((s[6] as u32) << 16) | s[7] as u32))
            .or(Some("IPv4-compatible"));
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return classify_v4(Ipv4Addr::from(((s[6] as u32) << 16) | s[7] as u32));
    }
    Some(match s[0] {
        x if x & 0xfe00 == 0xfc00 => "unique-local (fc00::/7)",
        x if x & 0xffc0 == 0xfe80 => "link-local (fe80::/10)",
        x if x & 0xffc0 == 0xfec0 => "site-local (fec0::/10)",
        x if x & 0xff00 == 0xff00 => "multicast",
        0x2001 if s[1] == 0x0db8 => "documentation (2001:db8::/32)",
        0x2001 if s[1] == 0 => "Teredo tunnel (2001::/32)",
        0x2002 => "6to4 tunnel (2002::/16)",
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only (100::/64)",
        _ => return None,
    })
}

/// The resolver's one refusal, after the host name: for names that do not resolve and names
/// that resolve to a refused address alike.
pub const NOT_PUBLIC: &str = "does not resolve to a public address";

/// A DNS resolver for reqwest that refuses a name if any of its addresses is refused, and
/// hands reqwest only the addresses it checked — so what was checked is what is connected to
/// (no second lookup an attacker's DNS could answer differently).
///
/// reqwest does not tell a resolver the port, so a resolver is made per port: `exempt` holds
/// the allowed addresses of the one port its client is used for (see `Fetcher`), and is empty
/// in the client for every other port.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    pub policy: Arc<AddressPolicy>,
    pub exempt: Vec<IpAddr>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let exempt = self.exempt.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            // One message whether the name does not resolve or resolves to a refused
            // address: a client must not learn which internal names exist (or where they
            // point) from how a fetch fails. The reason goes to the operator's log only.
            let refused = || format!("{host} {NOT_PUBLIC}").into();
            let addrs: Vec<SocketAddr> = match tokio::net::lookup_host((host.as_str(), 0)).await {
                Ok(addrs) => addrs.collect(),
                Err(e) => {
                    tracing::debug!(host, error = %e, "name did not resolve");
                    return Err(refused());
                }
            };
            if addrs.is_empty() {
                tracing::debug!(host, "name resolved to no address");
                return Err(refused());
            }
            for addr in &addrs {
                if exempt.contains(&addr.ip()) || policy.check_ip(addr.ip()).is_ok() {
                    continue;
                }
                let range = classify(addr.ip()).unwrap_or("refused");
                tracing::debug!(host, range, "name resolves to a refused address");
                return Err(refused());
            }
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses_pass_and_every_special_range_is_refused() {
        let policy = AddressPolicy::default();
        for ok in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700:4700::1111",
            "172.32.0.1",
            "100.128.0.1",
        ] {
            let ip: IpAddr = ok.parse().expect("ip");
            assert_eq!(policy.check_ip(ip), Ok(()), "{ok}");
        }
        for bad in [
            "127.0.0.1",
            "127.1.2.3",
            "10.1.1.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            // IPv4-translated, and local-use NAT64 embedding a refused address.
            "::ffff:0:808:808",
            "::ffff:0:a00:1",
            "64:ff9b:1::a9fe:a9fe",
            "64:ff9b:1::7f00:1",
            "64:ff9b:1::a00:1",
            // Local-use NAT64 whatever it embeds, at /48 (10.0.0.1 in bits 48-87) or /96.
            "64:ff9b:1::808:808",
            "64:ff9b:1:a00:1::",
            "::127.0.0.1",
            "2001:db8::1",
            "fd00:ec2::254",
            "fec0::1",
        ] {
            let ip: IpAddr = bad.parse().expect("ip");
            assert!(policy.check_ip(ip).is_err(), "{bad} must be refused");
        }
    }

    #[test]
    fn loopback_only_with_the_development_flag() {
        let dev = AddressPolicy {
            allow_loopback: true,
            allow_addrs: vec![],
        };
        assert_eq!(dev.check_ip("127.0.0.1".parse().expect("ip")), Ok(()));
        assert_eq!(dev.check_ip("::1".parse().expect("ip")), Ok(()));
        assert!(dev.check_ip("10.0.0.1".parse().expect("ip")).is_err());
        assert!(
            dev.check_ip("169.254.169.254".parse().expect("ip"))
                .is_err()
        );
    }

    #[test]
    fn an_allowed_address_is_allowed_on_its_port_only() {
        let policy = AddressPolicy {
            allow_loopback: false,
            allow_addrs: vec!["10.0.0.7:8080".parse().expect("addr")],
        };
        let url = |s: &str| Url::parse(s).expect("url");
        assert_eq!(policy.check_url(&url("http://10.0.0.7:8080/a.mp4")), Ok(()));
        for refused in [
            "http://10.0.0.7/a.mp4",
            "https://10.0.0.7/a.mp4",
            "http://10.0.0.7:8081/a.mp4",
            "http://10.0.0.8:8080/a.mp4",
        ] {
            assert!(policy.check_url(&url(refused)).is_err(), "{refused}");
        }
        assert_eq!(policy.exempt_ports(), vec![8080]);
        assert_eq!(
            policy.exempt_on(8080),
            vec!["10.0.0.7".parse::<IpAddr>().expect("ip")]
        );
        assert!(policy.exempt_on(80).is_empty());
    }

    #[tokio::test]
    async fn a_refused_name_does_not_say_which_address_it_resolved_to() {
        use reqwest::dns::Resolve;
        let resolver = GuardedResolver {
            policy: Arc::new(AddressPolicy::default()),
            exempt: vec![],
        };
        let name: reqwest::dns::Name = "localhost".parse().expect("name");
        let Err(e) = resolver.resolve(name).await else {
            panic!("localhost resolved although loopback is refused");
        };
        let text = e.to_string();
        assert_eq!(text, format!("localhost {NOT_PUBLIC}"));
        // A name that does not resolve at all reads the same: no map of internal names.
        let name: reqwest::dns::Name = "no-such-host.invalid".parse().expect("name");
        let Err(e) = resolver.resolve(name).await else {
            panic!("an .invalid name resolved");
        };
        assert_eq!(e.to_string(), format!("no-such-host.invalid {NOT_PUBLIC}"));
        // The same name resolves in the client for the port its address is allowed on.
        let allowed = GuardedResolver {
            policy: Arc::new(AddressPolicy::default()),
            exempt: vec!["127.0.0.1".parse().expect("ip"), "::1".parse().expect("ip")],
        };
        let name: reqwest::dns::Name = "localhost".parse().expect("name");
        assert!(allowed.resolve(name).await.is_ok());
    }

    #[test]
    fn urls_are_checked_before_connecting() {
        let p = AddressPolicy::default();
        let refused = |u: &str| p.check_url(&Url::parse(u).expect("url")).is_err();
        assert!(refused("file:///etc/passwd"));
        assert!(refused("gopher://example.com/"));
        assert!(refused("http://user:pw@example.com/"));
        assert!(refused("http://2130706433/"));
        assert!(refused("http://0x7f.1/"));
        assert!(refused(
            "http://metadata.google.internal/computeMetadata/v1/"
        ));
        assert!(refused("http://localhost./"));
        assert!(!refused("https://cdn.example.com/clip.mp4"));
    }
}
