//! The one grammar for a URL a client may send (an asset URL or a `webhook_url`), shared by
//! the server's check ([`crate::scan::check_url`]) and the OpenAPI document's `pattern`.
//!
//! Why a grammar of our own, and not "whatever the WHATWG parser accepts": the document must
//! say *exactly* what the server accepts, and a schema can only say it with a regex. The WHATWG
//! parser's language is not one a portable regex can state: a host goes through IDNA (`xn--`
//! labels must decode; non-ASCII must map), a host whose last label looks like a number must be
//! a valid IPv4 address, and IPv6 literals have their own parser. So the grammar is a strict
//! subset that the WHATWG parser always accepts unchanged, and the server refuses what is
//! outside it. What it leaves out, and what a client does instead:
//! - internationalised host names, in Unicode or in their `xn--` (punycode) form: whether an
//!   `xn--` label decodes is not a regular property. Such a host is reached by its address, or
//!   through an ASCII name (a CDN's own host name);
//! - characters RFC 3986 does not allow unencoded (spaces, non-ASCII, `{ } | ^ \\ < > "`) and
//!   a `%` not followed by two hex digits: percent-encode them (`%20`, `%25`);
//! - octal or hexadecimal IPv4 forms (`0x7f.1`), an empty port (`host:`), IPv6 zone ids.
//!
//! The pattern uses only syntax that ECMA-262, Python's `re` and Rust's `regex` read alike:
//! ASCII classes, groups, alternation and counted repetition (no look-around, no `\d`, `\s`).

use std::sync::LazyLock;

/// One DNS label the IDNA step leaves as it is: ASCII letters, digits and hyphens, not
/// starting `xn--` (any case), which IDNA would try to decode as punycode.
const LABEL: &str = "(?:[A-Za-z0-9-]{1,3}\
|[A-WYZa-wyz0-9-][A-Za-z0-9-]{3,}\
|[Xx][A-Ma-mO-Zo-z0-9-][A-Za-z0-9-]{2,}\
|[Xx][Nn][A-Za-z0-9][A-Za-z0-9-]+\
|[Xx][Nn]-[A-Za-z0-9][A-Za-z0-9-]*)";

/// The last label of a name: as [`LABEL`] but starting with a letter. A last label that is
/// all digits (or `0x…`) makes the WHATWG parser read the whole host as an IPv4 address.
const LAST_LABEL: &str = "(?:[A-Za-z][A-Za-z0-9-]{0,2}\
|[A-WYZa-wyz][A-Za-z0-9-]{3,}\
|[Xx][A-Ma-mO-Zo-z0-9-][A-Za-z0-9-]{2,}\
|[Xx][Nn][A-Za-z0-9][A-Za-z0-9-]+\
|[Xx][Nn]-[A-Za-z0-9][A-Za-z0-9-]*)";

/// A decimal octet, 0–255, without leading zeros (which WHATWG reads as octal).
const OCTET: &str = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";

/// A port, 0–65535, as WHATWG accepts it (at most four digits may have leading zeros).
const PORT: &str =
    "(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?";

/// An IPv6 address as RFC 3986 writes it (`IPv6address`), without a zone id.
fn ipv6() -> String {
    let h16 = "[0-9A-Fa-f]{1,4}";
    let ipv4 = format!("{OCTET}(?:\\.{OCTET}){{3}}");
    let ls32 = format!("(?:{h16}:{h16}|{ipv4})");
    // `n` groups of "h16:" before the "::" at most, and `after` groups of "h16:" after it.
    let before = |n: usize| {
        if n == 0 {
            String::new()
        } else {
            format!("(?:(?:{h16}:){{0,{}}}{h16})?", n - 1)
        }
    };
    let after = |n: usize| format!("(?:{h16}:){{{n}}}");
    let forms = [
        format!("{}{ls32}", after(6)),
        format!("::{}{ls32}", after(5)),
        format!("{}::{}{ls32}", before(1), after(4)),
        format!("{}::{}{ls32}", before(2), after(3)),
        format!("{}::{}{ls32}", before(3), after(2)),
        format!("{}::{h16}:{ls32}", before(4)),
        format!("{}::{ls32}", before(5)),
        format!("{}::{h16}", before(6)),
        format!("{}::", before(7)),
    ];
    format!("(?:{})", forms.join("|"))
}

/// One character of a path segment, query or fragment as RFC 3986 allows it unencoded
/// (`pchar`), or a percent-encoded octet. The OpenAPI document also says `format: uri`, and
/// RFC 3986 is what that format means: `{`, `|`, a space or a stray `%` must be encoded.
const PCHAR: &str = "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";

/// The pattern of an acceptable URL: `http` or `https` (any case), `://`, a host (a name, a
/// dotted-decimal IPv4 address or a bracketed IPv6 address), an optional port, then an
/// RFC 3986 path, query and fragment. No credentials: `@` cannot appear before the path.
pub static PATTERN: LazyLock<String> = LazyLock::new(|| {
    let ipv4 = format!("{OCTET}(?:\\.{OCTET}){{3}}");
    let name = format!("(?:{LABEL}\\.)*{LAST_LABEL}\\.?");
    let path = format!("(?:/{PCHAR}*)*");
    let query = format!("(?:\\?(?:{PCHAR}|[/?])*)?");
    let fragment = format!("(?:#(?:{PCHAR}|[/?])*)?");
    format!(
        "^[Hh][Tt][Tt][Pp][Ss]?://(?:{name}|{ipv4}|\\[{}\\]){PORT}{path}{query}{fragment}$",
        ipv6()
    )
});

static COMPILED: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::RegexBuilder::new(&PATTERN)
        .size_limit(1 << 24)
        .build()
        .expect("the URL grammar compiles")
});

/// Whether `raw` is in the grammar, read as JSON Schema tools read a `pattern`.
///
/// One detail is Python's, on purpose: the validators clients and schema-driven testers use
/// (Python `re.search`) let `$` match before one final newline, so one trailing `\n` is
/// allowed here too. The WHATWG parser drops newlines, so the URL is the same.
#[must_use]
pub fn matches(raw: &str) -> bool {
    COMPILED.is_match(raw.strip_suffix('\n').unwrap_or(raw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn accepts_ordinary_urls_and_refuses_what_the_parser_would_change_or_refuse() {
        for ok in [
            "https://cdn.example.com/a.mp4",
            "HTTP://Example.COM",
            "http://a",
            "http://localhost:8080/x?y=1#z",
            "http://127.0.0.1:65535/",
            "http://[::1]/a.mp4",
            "http://[2001:db8::7]:443/",
            "http://[::ffff:192.0.2.1]/",
            "http://[1:2:3:4:5:6:7:8]/",
            "http://xn-a.example/",
            "https://example.com./a%20b.mp4",
            "https://s3.example.com/b/k.mp4?X-Amz-Signature=ab%2Fc&x=1:2@3#t=5,10",
            "https://example.com/a.mp4\n",
        ] {
            assert!(matches(ok), "refused {ok}");
        }
        for bad in [
            "",
            " https://example.com/",
            "https://example.com/ a",
            "http://239.1.2.3:10274#%mN{",
            "https://example.com/a|b",
            "https://example.com/a%2",
            "ftp://example.com/",
            "https://user:pw@example.com/",
            "https://@example.com/",
            "httpS://\u{9d}",
            "https://münchen.de/",
            "https://xn--mnchen-3ya.de/",
            "https://XN--abc.de/",
            "http://1.2.3.256/",
            "http://a.123/",
            "http://0x7f.1/",
            "http://01.2.3.4/",
            "http://example.com:/",
            "http://example.com:65536/",
            "http://[1:2:3:4:5:6:7:8:9]/",
            "http://[fe80::1%25eth0]/",
            "https:/example.com/",
            "https://example.com/a.mp4\n\n",
        ] {
            assert!(!matches(bad), "accepted {bad:?}");
        }
    }

    /// The grammar's promise, tested on what a generator makes of the pattern itself: every
    /// string it matches is a URL the WHATWG parser accepts, with an http(s) scheme, a host
    /// and no credentials.
    #[test]
    fn every_string_of_the_grammar_parses_as_an_http_url_with_a_host() {
        let mut parser = regex_syntax::ParserBuilder::new().unicode(false).build();
        // The generator does not take anchors; the pattern has one at each end only.
        let unanchored = PATTERN
            .strip_prefix('^')
            .and_then(|p| p.strip_suffix('$'))
            .expect("anchored at both ends");
        let hir = parser.parse(unanchored).expect("pattern parses");
        let generator = rand_regex::Regex::with_hir(hir, 12).expect("generator");
        let mut rng = rand::rngs::StdRng::seed_from_u64(20_261_124);
        let mut ipv6 = 0;
        for _ in 0..20_000 {
            let s: String = rand::Rng::sample(&mut rng, &generator);
            assert!(matches(&s), "the generator left the grammar: {s:?}");
            let url = url::Url::parse(&s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert!(matches!(url.scheme(), "http" | "https"), "{s:?}");
            assert!(url.host().is_some(), "{s:?}");
            assert!(
                url.username().is_empty() && url.password().is_none(),
                "{s:?}"
            );
            ipv6 += usize::from(matches!(url.host(), Some(url::Host::Ipv6(_))));
        }
        assert!(ipv6 > 100, "the IPv6 branch was barely generated ({ipv6})");
    }
}
