//! API keys: `sk_live_<40 base-62 characters>`.
//!
//! The first 12 characters after `sk_live_` are the key's public id (its lookup prefix); the
//! database stores only the SHA-256 of the whole key. A plain hash is the right tool here:
//! the keys are 238-bit random strings, so there is nothing for a slow password hash to
//! protect against, and authentication stays a microsecond-scale operation. Hashes are compared
//! in constant time. Lookups are cached (moka) for a few seconds, so a revoked key stops
//! working within `key_cache_secs`.

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::store::Db;
use crate::store::orgs::ApiKeyRow;

pub const KEY_PREFIX: &str = "sk_live_";
const SECRET_LEN: usize = 40;
const ID_LEN: usize = 12;

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub org_id: String,
    pub via: Via,
}

/// How a caller proved who they are, which decides who pays for the scans they start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// An API key (`Authorization: Bearer`): scans are billed from the wallet.
    ApiKey { key_id: String },
    /// A signed-in person's console session: scans count against the organisation's plan.
    Console {
        person_id: String,
        role: crate::people::Role,
    },
}

/// A freshly generated key: the full secret (shown once) and the row to store.
pub struct NewKey {
    pub secret: String,
    pub row: ApiKeyRow,
}

/// Lower-case hex SHA-256: how keys, session tokens and sign-in links are stored.
pub fn hash_hex(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Generates a key for an organisation.
pub fn generate(org_id: &str, now_ms: i64) -> NewKey {
    let body = crate::ids::token(SECRET_LEN);
    let secret = format!("{KEY_PREFIX}{body}");
    NewKey {
        row: ApiKeyRow {
            id: format!("key_{}", &body[..ID_LEN]),
            org_id: org_id.to_owned(),
            key_hash: hash_hex(&secret),
            created_at: now_ms,
            revoked_at: None,
            name: None,
            created_by: None,
        },
        secret,
    }
}

/// The key id of a well-formed key, or `None` for anything malformed.
pub fn key_id(key: &str) -> Option<String> {
    let body = key.strip_prefix(KEY_PREFIX)?;
    (body.len() == SECRET_LEN && body.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| format!("key_{}", &body[..ID_LEN]))
}

/// Resolves bearer keys to callers, with a short-lived cache of both hits and misses.
#[derive(Clone)]
pub struct KeyResolver {
    db: Db,
    cache: Cache<String, Option<Arc<Caller>>>,
}

impl KeyResolver {
    pub fn new(db: Db, ttl: Duration) -> Self {
        Self {
            db,
            cache: Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ttl)
                .build(),
        }
    }

    /// The caller a key belongs to, or `None` when it is malformed, unknown or revoked.
    ///
    /// # Errors
    /// Database errors (the caller answers 500, not 401).
    pub async fn resolve(
        &self,
        key: &str,
    ) -> Result<Option<Arc<Caller>>, crate::store::StoreError> {
        let Some(id) = key_id(key) else {
            return Ok(None);
        };
        // Cached by hash so no plaintext key sits in memory longer than the request.
        let hash = hash_hex(key);
        if let Some(hit) = self.cache.get(&hash).await {
            return Ok(hit);
        }
        let row = self.db.api_key_by_id(&id).await?;
        let caller = row.and_then(|row| {
            let matches: bool = row.key_hash.as_bytes().ct_eq(hash.as_bytes()).into();
            (matches && row.revoked_at.is_none()).then(|| {
                Arc::new(Caller {
                    org_id: row.org_id,
                    via: Via::ApiKey { key_id: row.id },
                })
            })
        });
        self.cache.insert(hash, caller.clone()).await;
        Ok(caller)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_parse_and_hash_stably() {
        let k = generate("org_x", 0);
        assert!(k.secret.starts_with("sk_live_"));
        assert_eq!(k.secret.len(), KEY_PREFIX.len() + SECRET_LEN);
        assert_eq!(key_id(&k.secret).as_deref(), Some(k.row.id.as_str()));
        assert_eq!(hash_hex(&k.secret), k.row.key_hash);
        assert!(!k.row.key_hash.contains(&k.secret[8..]));
        assert_eq!(key_id("sk_live_short"), None);
        assert_eq!(
            key_id("sk_test_0123456789012345678901234567890123456789"),
            None
        );
        assert_eq!(key_id(&format!("{}!", &k.secret[..47])), None);
    }
}
