//! People who sign in to the console, the organisations they belong to, and each
//! organisation's dashboard plan (spec: "Authentication", point 2; issue 44).
//!
//! - **Passwords** are hashed with argon2id (RFC 9106) at OWASP's recommended cost (19 MiB,
//!   2 passes, 1 lane), with the `argon2` crate of RustCrypto: a maintained, pure-Rust
//!   implementation that writes the standard PHC string, so the cost can be raised later and
//!   old hashes still verify. Unlike API keys (random 238-bit strings, where a plain SHA-256
//!   is right), passwords are chosen by people and need a slow, memory-hard hash.
//! - **Sessions and sign-in links** are random tokens; only their SHA-256 is stored, as for
//!   API keys, so a copy of the database signs nobody in.
//! - **Plans** meter scans started from the console: a monthly allowance (Free 1, Pro 60,
//!   Studio 150), counted over the calendar month in UTC like the free credit. API scans are
//!   billed from the wallet as before and never count here.

use chrono::{DateTime, Datelike, TimeZone, Utc};

/// The session cookie's name where it is not `Secure` (a loopback or plain-HTTP set-up).
pub const SESSION_COOKIE: &str = "brainscan_session";
/// Its name where it is `Secure`: the `__Host-` prefix makes a browser refuse it unless it is
/// `Secure`, has path `/` and names no domain, so a sibling host cannot plant one.
pub const SECURE_SESSION_COOKIE: &str = "__Host-brainscan_session";

/// How the session cookie is set, decided once from the configuration (never from a request's
/// `Host` header, which a proxy may rewrite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookiePolicy {
    pub name: &'static str,
    pub path: &'static str,
    pub secure: bool,
}

impl CookiePolicy {
    /// From `BRAINSCAN_SECURE_COOKIES`, `BRAINSCAN_PUBLIC_URL` and `BRAINSCAN_LISTEN` (see
    /// [`crate::config::HttpConfig::secure_cookies`]).
    #[must_use]
    pub fn from_config(config: &crate::config::ServeConfig) -> Self {
        use crate::config::SecureCookies;
        let secure = match config.http.secure_cookies {
            SecureCookies::Always => true,
            SecureCookies::Never => false,
            SecureCookies::Auto => match config.artifacts.public_url.as_deref() {
                Some(url) => url.trim().to_ascii_lowercase().starts_with("https://"),
                None => !config.http.listen.ip().is_loopback(),
            },
        };
        if secure {
            Self {
                name: SECURE_SESSION_COOKIE,
                path: "/",
                secure,
            }
        } else {
            Self {
                name: SESSION_COOKIE,
                path: "/console",
                secure,
            }
        }
    }
}
/// The header a state-changing console request carries its session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// The header that picks which of a person's organisations a console API call acts for.
pub const ORG_HEADER: &str = "x-brainscan-org";

/// How long a session lasts from sign-in (absolute; signing in again starts a new one).
pub const SESSION_TTL_MS: i64 = 7 * 24 * 3600 * 1000;
/// How long a sign-in link printed by the CLI stays valid, unless the operator says otherwise.
pub const LINK_TTL_MINUTES: i64 = 15;
/// The longest a sign-in link may be made to last.
pub const LINK_TTL_MAX_MINUTES: i64 = 24 * 60;

/// Password length bounds, in characters. The lower bound is NIST SP 800-63B's advice for
/// passwords chosen by people (at least 8; 12 here); the upper bound keeps a hostile body
/// from making the hash read megabytes.
pub const PASSWORD_MIN_CHARS: usize = 12;
pub const PASSWORD_MAX_CHARS: usize = 256;
/// The longest email address (RFC 5321's path limit).
pub const EMAIL_MAX_BYTES: usize = 254;

/// An organisation's dashboard plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Free,
    Pro,
    Studio,
}

impl Plan {
    pub const ALL: [Self; 3] = [Self::Free, Self::Pro, Self::Studio];

    /// Scans a month that people may start from the console.
    pub fn monthly_scans(self) -> i64 {
        match self {
            Self::Free => 1,
            Self::Pro => 60,
            Self::Studio => 150,
        }
    }

    /// Paid plans may create API keys in the console.
    pub fn is_paid(self) -> bool {
        self != Self::Free
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Free => "free",
            Self::Pro => "pro",
            Self::Studio => "studio",
        }
    }

    /// The plan named `s`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

/// What a person may do in one organisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Manages the organisation's API keys.
    Owner,
    /// Starts and reads scans.
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Member => "member",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "owner" => Some(Self::Owner),
            "member" => Some(Self::Member),
            _ => None,
        }
    }
}

/// An email address as stored: trimmed and lower-cased, so one person has one account
/// whatever case they type.
///
/// # Errors
/// A message for people when it is empty, too long, or not of the form `local@domain`.
pub fn normalise_email(email: &str) -> Result<String, &'static str> {
    let email = email.trim().to_lowercase();
    if email.is_empty() || email.len() > EMAIL_MAX_BYTES {
        return Err("an email address is 1-254 characters");
    }
    let Some((local, domain)) = email.split_once('@') else {
        return Err("an email address has the form name@example.com");
    };
    if local.is_empty()
        || domain.is_empty()
        || domain.contains('@')
        || email.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("an email address has the form name@example.com");
    }
    Ok(email)
}

/// Checks a new password's length.
///
/// # Errors
/// A message for people.
pub fn check_new_password(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if n < PASSWORD_MIN_CHARS {
        return Err(format!(
            "a password is at least {PASSWORD_MIN_CHARS} characters"
        ));
    }
    if n > PASSWORD_MAX_CHARS {
        return Err(format!(
            "a password is at most {PASSWORD_MAX_CHARS} characters"
        ));
    }
    Ok(())
}

fn hasher() -> argon2::Argon2<'static> {
    // OWASP Password Storage Cheat Sheet, argon2id: m = 19 MiB, t = 2, p = 1.
    let params = argon2::Params::new(19 * 1024, 2, 1, None).expect("constant argon2 parameters");
    argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
}

/// The PHC string of `password` with a fresh random salt. Slow on purpose (tens of
/// milliseconds): call it off the async threads.
///
/// # Errors
/// Only on a failure of the hash itself.
pub fn hash_password(password: &str) -> anyhow::Result<String> {
    use argon2::password_hash::{PasswordHasher, SaltString};
    // 16 random bytes from the OS-seeded CSPRNG the rest of the crate uses (`rand::rng`).
    let bytes: [u8; 16] = rand::random();
    let salt =
        SaltString::encode_b64(&bytes).map_err(|e| anyhow::anyhow!("encoding the salt: {e}"))?;
    Ok(hasher()
        .hash_password(password.as_bytes(), &salt)
        .map_err(|e| anyhow::anyhow!("hashing the password: {e}"))?
        .to_string())
}

/// Whether `password` matches `stored`. A person without a password (link sign-in only), an
/// unknown email (`None`) and a malformed stored hash all verify against a fixed hash, so the
/// answer takes as long as a real check and does not tell which emails have accounts.
pub fn verify_password(stored: Option<&str>, password: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let decoy = DECOY
        .get_or_init(|| hash_password(&crate::ids::token(24)).unwrap_or_else(|_| String::new()));
    let (phc, real) = match stored.map(PasswordHash::new) {
        Some(Ok(hash)) => (hash, true),
        _ => match PasswordHash::new(decoy) {
            Ok(hash) => (hash, false),
            Err(_) => return false,
        },
    };
    hasher().verify_password(password.as_bytes(), &phc).is_ok() && real
}

/// How long a sign-in waits for a hashing slot before it is answered 503 `busy` (and not
/// counted): the work an anonymous crowd can queue is bounded by the slots and this wait.
pub const HASH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What stands between the sign-in form and a password guesser: attempts counted before they
/// are checked, per client address (five a minute, then locked for the minute) and per email
/// (five, then one per doubling delay; `crate::lockout`), and a cap on argon2 hashes running
/// at once, each 19 MiB and tens of milliseconds of a core, waited for at most [`HASH_WAIT`].
#[derive(Debug)]
pub struct SignInGuard {
    pub by_address: crate::lockout::Lockout<std::net::IpAddr>,
    pub by_email: crate::lockout::Lockout<String>,
    pub hashing: tokio::sync::Semaphore,
}

impl Default for SignInGuard {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        Self {
            by_address: crate::lockout::Lockout::default(),
            by_email: crate::lockout::Lockout::default(),
            hashing: tokio::sync::Semaphore::new(cores.clamp(1, 8)),
        }
    }
}

/// A new session or sign-in-link token (238 random bits, base 62).
pub fn new_token() -> String {
    crate::ids::token(40)
}

/// A person's id.
pub fn new_person_id() -> String {
    format!("per_{}", crate::ids::token(16))
}

/// The first millisecond of `now`'s calendar month in UTC: the plan allowance counts console
/// scans from here, as the free credit does (`billing::period_of`).
pub fn month_start_ms(now: DateTime<Utc>) -> i64 {
    Utc.with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .single()
        .map_or(0, |t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_have_the_spec_allowances() {
        assert_eq!(Plan::parse("free").map(Plan::monthly_scans), Some(1));
        assert_eq!(Plan::parse("Pro").map(Plan::monthly_scans), Some(60));
        assert_eq!(Plan::parse(" studio ").map(Plan::monthly_scans), Some(150));
        assert_eq!(Plan::parse("enterprise"), None);
        assert!(!Plan::Free.is_paid() && Plan::Pro.is_paid() && Plan::Studio.is_paid());
    }

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(
            normalise_email("  Ada@Example.COM ").as_deref(),
            Ok("ada@example.com")
        );
        for bad in [
            "",
            "ada",
            "@example.com",
            "ada@",
            "a b@example.com",
            "a@b@c",
        ] {
            assert!(normalise_email(bad).is_err(), "{bad:?}");
        }
        assert!(normalise_email(&format!("{}@example.com", "a".repeat(250))).is_err());
    }

    #[test]
    fn passwords_verify_only_against_their_own_hash() {
        let hash = hash_password("correct horse battery").expect("hash");
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(verify_password(Some(&hash), "correct horse battery"));
        assert!(!verify_password(Some(&hash), "correct horse batterY"));
        assert!(!verify_password(None, "correct horse battery"));
        assert!(!verify_password(Some("not a phc string"), "x"));
        assert!(check_new_password("short").is_err());
        assert!(check_new_password(&"x".repeat(257)).is_err());
        assert!(check_new_password("twelve chars").is_ok());
    }

    #[test]
    fn the_month_starts_at_midnight_utc_on_the_first() {
        let now = Utc
            .with_ymd_and_hms(2026, 11, 27, 6, 30, 0)
            .single()
            .expect("time");
        let start = Utc
            .with_ymd_and_hms(2026, 11, 1, 0, 0, 0)
            .single()
            .expect("time");
        assert_eq!(month_start_ms(now), start.timestamp_millis());
    }
}
