//! The rendered bodies of completed scans, cached in process (`GET /scans/{id}`).
//!
//! A completed, charged result never changes, so its JSON is rendered once and served from
//! memory until the cache evicts it (bounded by bytes, [`crate::config::HttpConfig`]'s
//! `result_cache_mib`). The key holds everything the body depends on: the organisation, the
//! scan, and the public base its artifact links are built from. A body that carries a signed
//! artifact URL is served for [`SIGNED_BODY_TTL`] after it was signed, by the service's clock
//! (the one that signs and checks links), so a link a client receives from the cache still
//! works for almost the whole of its lifetime; the cache also drops it after that long.
//!
//! Only bodies rendered after the charge go in (the first `GET` charges, then fills), so a
//! cached body never skips a charge.
//!
//! The cache lives in [`crate::app::App`], which every layer shares, so it sits outside the
//! HTTP edge (`api`): kept there, it made `app` depend on `api` and `api` on `app`.

use std::time::{Duration, Instant};

use bytes::Bytes;
use moka::Expiry;
use moka::future::Cache;

/// How long a body with a signed artifact URL is served from the cache.
pub const SIGNED_BODY_TTL: Duration = Duration::from_secs(60);

/// (organisation, scan, public base).
pub type Key = (String, String, Option<String>);

/// A rendered body, and when the signed URL it embeds was signed (`None`: it has none).
#[derive(Clone)]
pub struct Rendered {
    pub body: Bytes,
    pub signed_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Rendered {
    /// Whether the body may still be served at `now` (service clock): always without a
    /// signed URL, otherwise within [`SIGNED_BODY_TTL`] of its signing.
    #[must_use]
    pub fn fresh_at(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        // A negative age (the clock stepped back) is fresh: the link expires later still.
        self.signed_at.is_none_or(|at| {
            (now - at)
                .to_std()
                .map_or(true, |age| age <= SIGNED_BODY_TTL)
        })
    }
}

struct SignedExpiry;

impl Expiry<Key, Rendered> for SignedExpiry {
    fn expire_after_create(&self, _: &Key, value: &Rendered, _: Instant) -> Option<Duration> {
        value.signed_at.map(|_| SIGNED_BODY_TTL)
    }
}

/// The cache, shared by every request of the process.
#[derive(Clone)]
pub struct RenderedScans {
    cache: Cache<Key, Rendered>,
}

impl RenderedScans {
    /// A cache holding at most `max_bytes` of bodies (0 disables it).
    #[must_use]
    pub fn new(max_bytes: u64) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|k: &Key, v: &Rendered| {
                    let bytes =
                        v.body.len() + k.0.len() + k.1.len() + k.2.as_ref().map_or(0, String::len);
                    u32::try_from(bytes).unwrap_or(u32::MAX)
                })
                .expire_after(SignedExpiry)
                .build(),
        }
    }

    pub async fn get(&self, key: &Key) -> Option<Rendered> {
        self.cache.get(key).await
    }

    pub async fn insert(&self, key: Key, value: Rendered) {
        self.cache.insert(key, value).await;
    }

    /// Bodies held now (after pending evictions run): for tests and metrics.
    pub async fn entries(&self) -> u64 {
        self.cache.run_pending_tasks().await;
        self.cache.entry_count()
    }
}

impl std::fmt::Debug for RenderedScans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderedScans")
            .field("entries", &self.cache.entry_count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(scan: &str) -> Key {
        ("org_1".into(), scan.into(), None)
    }

    #[tokio::test]
    async fn bodies_are_bounded_by_bytes_and_a_hit_returns_the_same_bytes() {
        let cache = RenderedScans::new(64 * 1024);
        let body = Bytes::from(vec![b'x'; 10 * 1024]);
        cache
            .insert(
                key("scan_a"),
                Rendered {
                    body: body.clone(),
                    signed_at: None,
                },
            )
            .await;
        assert_eq!(cache.get(&key("scan_a")).await.map(|r| r.body), Some(body));
        for i in 0..20 {
            cache
                .insert(
                    key(&format!("scan_{i}")),
                    Rendered {
                        body: Bytes::from(vec![b'y'; 10 * 1024]),
                        signed_at: None,
                    },
                )
                .await;
        }
        assert!(
            cache.entries().await <= 6,
            "{} bodies of 10 KiB in 64 KiB",
            cache.entries().await
        );
        let off = RenderedScans::new(0);
        off.insert(
            key("scan_a"),
            Rendered {
                body: Bytes::from_static(b"{}"),
                signed_at: None,
            },
        )
        .await;
        assert_eq!(off.entries().await, 0, "a zero budget caches nothing");
    }

    #[test]
    fn only_bodies_with_a_signed_url_expire() {
        let now = Instant::now();
        let e = SignedExpiry;
        let plain = Rendered {
            body: Bytes::new(),
            signed_at: None,
        };
        let at = chrono::Utc::now();
        let signed = Rendered {
            body: Bytes::new(),
            signed_at: Some(at),
        };
        assert_eq!(e.expire_after_create(&key("a"), &plain, now), None);
        assert_eq!(
            e.expire_after_create(&key("a"), &signed, now),
            Some(SIGNED_BODY_TTL)
        );
        assert!(signed.fresh_at(at + chrono::Duration::seconds(59)));
        assert!(!signed.fresh_at(at + chrono::Duration::seconds(61)));
        assert!(plain.fresh_at(at + chrono::Duration::days(400)));
    }
}
