//! Rendered artifacts in an object store (the `object_store` crate): a local folder by
//! default, S3-compatible storage when several machines must see the same files.
//!
//! Clients only ever get signed URLs that stop working after [`URL_LIFETIME`] (the spec's one
//! hour). S3 URLs are standard SigV4 presigned GETs, served by the bucket itself. The local
//! store has no such server, so the API serves `GET /api/v1/artifacts/{key}` itself and
//! accepts only URLs carrying a valid HMAC-SHA256 of the key and expiry time. The HMAC key is
//! a service secret kept in the database, so every API process on one database accepts the
//! URLs of every other (with a shared artifact folder).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::signer::Signer;
use object_store::{ObjectStore, PutPayload};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::config::ArtifactConfig;
use crate::store::Db;

/// How long a signed artifact URL works.
pub const URL_LIFETIME: Duration = Duration::from_secs(3600);

/// Largest artifact served or stored, bytes (a 180 s carpet plot is well under 100 KiB).
pub const MAX_ARTIFACT_BYTES: usize = 16 * 1024 * 1024;

/// Name of the service secret that signs local artifact URLs.
const SIGNING_SECRET: &str = "artifact_url_hmac";

enum Backend {
    Local { key: Vec<u8> },
    S3(Arc<AmazonS3>),
}

pub struct Artifacts {
    store: Arc<dyn ObjectStore>,
    backend: Backend,
    /// Key prefix inside the store (the `PREFIX` of `s3://BUCKET/PREFIX`; empty for folders).
    prefix: String,
    /// Where the store lives, for logs (`s3://bucket/prefix` or the folder).
    pub location: String,
}

/// Why a local artifact URL was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("the link has expired; fetch the scan again for a fresh one")]
    Expired,
    #[error("the link's signature does not match")]
    BadSignature,
}

impl Artifacts {
    /// Opens the configured store: `s3://…`, or a folder (default `DATA_DIR/artifacts`).
    ///
    /// # Errors
    /// A folder that cannot be created, an S3 URL or credentials that do not parse, or a
    /// database that cannot provide the signing secret.
    pub async fn open(
        config: &ArtifactConfig,
        data_dir: &Path,
        db: &Db,
        now_ms: i64,
    ) -> anyhow::Result<Self> {
        match config.artifacts_url.as_deref() {
            Some(url) if url.starts_with("s3://") => {
                // The builder takes the bucket from the URL and ignores any path after it.
                let rest = &url["s3://".len()..];
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                anyhow::ensure!(!bucket.is_empty(), "artifact store {url}: no bucket named");
                let s3 = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .build()
                    .with_context(|| format!("artifact store {url}"))?;
                let s3 = Arc::new(s3);
                Ok(Self {
                    store: s3.clone(),
                    backend: Backend::S3(s3),
                    prefix: prefix.trim_matches('/').to_owned(),
                    location: url.to_owned(),
                })
            }
            other => {
                let folder = match other {
                    Some(u) => Path::new(u.strip_prefix("file://").unwrap_or(u)).to_path_buf(),
                    None => data_dir.join("artifacts"),
                };
                std::fs::create_dir_all(&folder)
                    .with_context(|| format!("artifact folder {}", folder.display()))?;
                let store = LocalFileSystem::new_with_prefix(&folder)
                    .with_context(|| format!("artifact folder {}", folder.display()))?;
                let key = db.service_secret(SIGNING_SECRET, now_ms).await?;
                Ok(Self {
                    store: Arc::new(store),
                    backend: Backend::Local {
                        key: key.into_bytes(),
                    },
                    prefix: String::new(),
                    location: folder.display().to_string(),
                })
            }
        }
    }

    /// The object path of `key`: the prefix, then the key. Parsing refuses `..` and empty
    /// segments, so a key can never leave the prefix.
    fn path(&self, key: &str) -> anyhow::Result<ObjectPath> {
        let full = if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}/{key}", self.prefix)
        };
        Ok(ObjectPath::parse(full)?)
    }

    /// Stores `bytes` under `key`.
    ///
    /// # Errors
    /// The store's error (disk full, bucket unreachable, …).
    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> anyhow::Result<()> {
        let path = self.path(key)?;
        self.store
            .put(&path, PutPayload::from(Bytes::from(bytes)))
            .await
            .with_context(|| format!("storing artifact {key}"))?;
        Ok(())
    }

    /// The size of `key` in bytes, from the store's metadata (nothing is read).
    ///
    /// # Errors
    /// A missing object, or the store's error.
    pub async fn size(&self, key: &str) -> anyhow::Result<u64> {
        let path = self.path(key)?;
        Ok(self.store.head(&path).await?.size)
    }

    /// Streams bytes `range` (inclusive start, exclusive end) of `key` from the store: a
    /// 1-byte request reads one byte, not the whole object (a ranged get, on S3 a `Range`
    /// request).
    ///
    /// # Errors
    /// A missing object, or the store's error.
    pub async fn stream(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> anyhow::Result<futures_util::stream::BoxStream<'static, object_store::Result<Bytes>>> {
        let path = self.path(key)?;
        let options = object_store::GetOptions {
            range: Some(object_store::GetRange::Bounded(range)),
            ..Default::default()
        };
        Ok(self.store.get_opts(&path, options).await?.into_stream())
    }

    /// Reads `key` whole, refusing anything over [`MAX_ARTIFACT_BYTES`].
    ///
    /// # Errors
    /// A missing or oversized object, or the store's error.
    pub async fn get(&self, key: &str) -> anyhow::Result<Bytes> {
        let path = self.path(key)?;
        let object = self.store.get(&path).await?;
        if object.meta.size > MAX_ARTIFACT_BYTES as u64 {
            anyhow::bail!("artifact {key} is larger than {MAX_ARTIFACT_BYTES} bytes");
        }
        Ok(object.bytes().await?)
    }

    /// A URL for `key` that works for [`URL_LIFETIME`] from `now_secs`. `base` is this
    /// service's public URL (local store only).
    ///
    /// # Errors
    /// S3 signing failures (bad credentials configuration).
    pub async fn signed_url(&self, key: &str, base: &str, now_secs: i64) -> anyhow::Result<String> {
        match &self.backend {
            Backend::S3(s3) => {
                let url = s3
                    .signed_url(http::Method::GET, &self.path(key)?, URL_LIFETIME)
                    .await?;
                Ok(url.to_string())
            }
            Backend::Local { key: secret } => {
                let expires = now_secs + URL_LIFETIME.as_secs() as i64;
                let signature = sign(secret, key, expires);
                Ok(format!(
                    "{}/api/v1/artifacts/{key}?expires={expires}&signature={signature}",
                    base.trim_end_matches('/')
                ))
            }
        }
    }

    /// Checks a local URL's expiry and signature (constant-time).
    ///
    /// # Errors
    /// [`UrlError`]; S3 URLs never reach this route, so an S3-backed service refuses all.
    pub fn verify(
        &self,
        key: &str,
        expires: i64,
        signature: &str,
        now_secs: i64,
    ) -> Result<(), UrlError> {
        let Backend::Local { key: secret } = &self.backend else {
            return Err(UrlError::BadSignature);
        };
        let expected = sign(secret, key, expires);
        if expected.as_bytes().ct_eq(signature.as_bytes()).unwrap_u8() != 1 {
            return Err(UrlError::BadSignature);
        }
        if now_secs > expires {
            return Err(UrlError::Expired);
        }
        Ok(())
    }
}

/// Object key of a scan's fMRI render named `name` (`fmri.mp4`, `fmri-poster.png`, or
/// `fmri.png` for the carpet plot of an analyzer without a cortex renderer).
pub fn fmri_key(scan_id: &str, name: &str) -> String {
    format!("scans/{scan_id}/{name}")
}

fn sign(secret: &[u8], key: &str, expires: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(key.as_bytes());
    mac.update(b"\n");
    mac.update(expires.to_string().as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
