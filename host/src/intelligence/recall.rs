//! Semantic recall over an organisation's remembered texts.
//!
//! Texts (moment reasons, summaries, transcript lines) are embedded once, by the worker that
//! completes the scan, and copied into the organisation's memory at the scan's first fetch
//! (`store::recall`). A query is embedded with the same model and compared by cosine
//! similarity with every remembered vector of that model.
//!
//! The model is multilingual-e5-small ([`crate::embed::e5`]), so a query in one language finds
//! a moment said or written in another. Vectors of the English-only all-MiniLM-L6-v2, which
//! recall used before, are re-embedded in the background ([`migrate`]); a vector of one model
//! is never compared with another's.
//!
//! Why an exact scan and not an approximate index: at 100 000 texts × 384 dimensions the
//! scan reads 38 MB, a few milliseconds on one core (measured in
//! `cargo bench -p brainscan --bench recall`), and it needs no index to keep in step with
//! writes. Each process keeps each organisation's vectors in one contiguous array of bytes
//! ([`quantised`]: a quarter of f32's memory and bandwidth) whose error bounds pick the few
//! rows that can be in the top hits; those are rescored with their f32 vectors from the
//! database, so the hits are exactly the f32 scan's. Only rows newer than the last seen are
//! read; the row count is checked on every query so rows committed out of id order
//! (PostgreSQL sequences) trigger a full reload.

pub mod migrate;
pub mod quantised;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use moka::future::Cache;

use super::RecallHit;
use crate::clock::iso8601;
use crate::embed::{self, e5::MultilingualEmbedder};
use crate::result::ScanResult;
use crate::store::Db;
use crate::store::recall::EmbeddedText;
use quantised::QuantisedRows;

/// At most this many hits (spec).
pub const MAX_HITS: usize = super::MAX_RECALL;
/// Hits below this cosine similarity are not relevant enough to show. e5's similarities are
/// compressed towards 1 (all-MiniLM-L6-v2 used 0.1): on the checks of `tests/speech`
/// (moment reasons, summaries, transcript lines, queries, and their French versions)
/// unrelated pairs scored 0.73–0.80 and related ones 0.85–0.92, in one language or across
/// two.
pub const MIN_SCORE: f32 = 0.82;
/// Texts embedded per scan at most, and characters per text.
const MAX_TEXTS_PER_SCAN: usize = 1_000;
const MAX_TEXT_CHARS: usize = 1_000;
/// Rows read per round trip when loading an index.
const LOAD_BATCH: i64 = 10_000;
/// Memory for cached organisation indexes, in bytes.
const CACHE_BYTES: u64 = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum RecallError {
    #[error("the embedding model could not be loaded: {0}")]
    Model(String),
    #[error("embedding failed: {0}")]
    Embed(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

struct Meta {
    /// The row's id in `recall_texts`, to read its f32 vector back for rescoring.
    id: i64,
    scan_id: String,
    kind: String,
    lens: String,
    second: u32,
    text: String,
    created_at: i64,
}

/// One organisation's remembered vectors, quantised, with their texts.
#[derive(Default)]
struct OrgIndex {
    last_id: i64,
    meta: Vec<Meta>,
    vectors: QuantisedRows,
}

impl OrgIndex {
    fn bytes(&self) -> u64 {
        (self.vectors.bytes() + self.meta.iter().map(|m| m.text.len() + 72).sum::<usize>()) as u64
    }
}

/// The process-wide multilingual embedder of the model folder `dir`: recall's.
///
/// # Errors
/// A missing or malformed model file.
pub fn shared_multilingual(dir: &Path) -> Result<Arc<MultilingualEmbedder>, RecallError> {
    embed::shared_multilingual(dir).map_err(|e| RecallError::Model(format!("{e:#}")))
}

pub struct Recall {
    dir: PathBuf,
    embedder: tokio::sync::OnceCell<Arc<MultilingualEmbedder>>,
    indexes: Cache<String, Arc<tokio::sync::Mutex<OrgIndex>>>,
}

impl Recall {
    /// Recall with the multilingual embedding model in `dir`, loaded on first use.
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            embedder: tokio::sync::OnceCell::new(),
            indexes: Cache::builder()
                // Weighed on every insert; `search` re-inserts after a refresh so a grown
                // index is weighed again. A busy index weighs what it did before.
                .weigher(|_k, v: &Arc<tokio::sync::Mutex<OrgIndex>>| {
                    v.try_lock()
                        .map_or(0, |g| u32::try_from(g.bytes()).unwrap_or(u32::MAX))
                })
                .max_capacity(CACHE_BYTES)
                .build(),
        }
    }

    /// Loads the model now (start-up checks), on a blocking thread.
    ///
    /// # Errors
    /// `Model` with the reason.
    pub async fn embedder(&self) -> Result<Arc<MultilingualEmbedder>, RecallError> {
        self.embedder
            .get_or_try_init(|| async {
                let dir = self.dir.clone();
                tokio::task::spawn_blocking(move || shared_multilingual(&dir))
                    .await
                    .map_err(|e| RecallError::Model(e.to_string()))?
            })
            .await
            .cloned()
    }

    /// `texts` embedded, with the model's id.
    ///
    /// # Errors
    /// The model cannot be loaded or embedding fails.
    pub async fn embed(&self, texts: Vec<String>) -> Result<(String, Vec<Vec<f32>>), RecallError> {
        let embedder = self.embedder().await?;
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder
                .embed(&refs)
                .map(|v| (embedder.model_id.clone(), v))
                .map_err(|e| RecallError::Embed(format!("{e:#}")))
        })
        .await
        .map_err(|e| RecallError::Embed(e.to_string()))?
    }

    /// The searchable texts of a result, embedded.
    ///
    /// # Errors
    /// The model cannot be loaded or embedding fails.
    pub async fn embed_result(
        &self,
        result: &ScanResult,
    ) -> Result<Vec<EmbeddedText>, RecallError> {
        let texts = texts_of(result);
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let (model_id, vectors) = self
            .embed(texts.iter().map(|t| t.3.clone()).collect())
            .await?;
        Ok(texts
            .into_iter()
            .zip(vectors)
            .map(|((kind, lens, second, text), vector)| EmbeddedText {
                kind: kind.to_owned(),
                lens,
                second,
                text,
                model_id: model_id.clone(),
                vector,
            })
            .collect())
    }

    /// The organisation's best matches for `query`, at most [`MAX_HITS`], best first.
    ///
    /// # Errors
    /// The model or the store fails.
    pub async fn search(
        &self,
        db: &Db,
        org_id: &str,
        query: &str,
    ) -> Result<Vec<RecallHit>, RecallError> {
        let (model_id, mut v) = self.embed(vec![query.to_owned()]).await?;
        let q = v.pop().unwrap_or_default();
        let key = format!("{org_id}\u{0}{model_id}");
        let index = self
            .indexes
            .get_with(key.clone(), async { Arc::default() })
            .await;
        let mut guard = index.lock().await;
        refresh(db, org_id, &model_id, &mut guard).await?;
        let picked = guard.vectors.candidates(&q, MAX_HITS, MIN_SCORE);
        let ids: Vec<i64> = picked.iter().map(|&r| guard.meta[r].id).collect();
        let exact = db.recall_vectors(org_id, &ids).await?;
        let hits = top_hits(&guard, &q, &picked, &exact);
        drop(guard);
        self.indexes.insert(key, index).await;
        Ok(hits)
    }
}

/// Reads rows newer than the index has; reloads everything when the counts disagree.
async fn refresh(
    db: &Db,
    org_id: &str,
    model_id: &str,
    index: &mut OrgIndex,
) -> Result<(), RecallError> {
    for attempt in 0..2 {
        loop {
            let rows = db
                .recall_rows(org_id, model_id, index.last_id, LOAD_BATCH)
                .await?;
            let n = rows.len();
            for r in rows {
                if r.vector.len() != embed::DIM {
                    continue;
                }
                index.last_id = r.id;
                index.vectors.push(&r.vector);
                index.meta.push(Meta {
                    id: r.id,
                    scan_id: r.scan_id,
                    kind: r.kind,
                    lens: r.lens,
                    second: r.second,
                    text: r.text,
                    created_at: r.created_at,
                });
            }
            if (n as i64) < LOAD_BATCH {
                break;
            }
        }
        let stored = db.recall_count(org_id, model_id).await?;
        if stored == index.meta.len() as i64 || attempt == 1 {
            break;
        }
        *index = OrgIndex::default();
    }
    Ok(())
}

/// The exact best `k` rows of `vectors` (row-major, [`embed::DIM`] wide) by dot product with
/// `q`, at least `min`, best first: one pass, a sorted buffer of `k`.
pub fn exact_top(vectors: &[f32], q: &[f32], k: usize, min: f32) -> Vec<(f32, usize)> {
    exact_top_of(vectors.chunks_exact(embed::DIM).enumerate(), q, k, min)
}

/// [`exact_top`] over `(row number, vector)` pairs in ascending row order (a tie keeps the
/// lower row number, as the full scan does). A non-finite score is never a hit.
pub fn exact_top_of<'a>(
    rows: impl IntoIterator<Item = (usize, &'a [f32])>,
    q: &[f32],
    k: usize,
    min: f32,
) -> Vec<(f32, usize)> {
    let mut best: Vec<(f32, usize)> = Vec::with_capacity(k + 1);
    if q.len() != embed::DIM || k == 0 {
        return best;
    }
    for (i, row) in rows {
        if row.len() != embed::DIM {
            continue;
        }
        let s = embed::dot(q, row);
        if s.partial_cmp(&min).is_none_or(|o| o.is_lt()) || (best.len() == k && s <= best[k - 1].0)
        {
            continue;
        }
        let at = best.partition_point(|(b, _)| *b >= s);
        best.insert(at, (s, i));
        best.truncate(k);
    }
    best
}

/// The exact top [`MAX_HITS`] by cosine similarity, above [`MIN_SCORE`]: the candidate rows
/// (ascending) rescored with their f32 vectors by row id. A candidate whose row is gone (deleted
/// since the index read it) is skipped.
fn top_hits(
    index: &OrgIndex,
    q: &[f32],
    picked: &[usize],
    exact: &HashMap<i64, Vec<f32>>,
) -> Vec<RecallHit> {
    let rows = picked
        .iter()
        .filter_map(|&r| Some((r, exact.get(&index.meta[r].id)?.as_slice())));
    exact_top_of(rows, q, MAX_HITS, MIN_SCORE)
        .into_iter()
        .map(|(s, i)| {
            let m = &index.meta[i];
            RecallHit {
                scan_id: m.scan_id.clone(),
                kind: m.kind.clone(),
                lens: m.lens.clone(),
                second: m.second,
                text: m.text.clone(),
                score: (f64::from(s) * 1000.0).round() / 1000.0,
                created_at: iso8601(m.created_at),
            }
        })
        .collect()
}

/// `(kind, lens, second, text)` of every searchable text of a result: moment reasons,
/// the summary and transcript lines.
pub fn texts_of(result: &ScanResult) -> Vec<(&'static str, String, u32, String)> {
    let clip = |s: &str| s.trim().chars().take(MAX_TEXT_CHARS).collect::<String>();
    let mut out = Vec::new();
    for m in &result.moments {
        if !m.reason.trim().is_empty() {
            out.push(("moment", m.lens.clone(), m.second, clip(&m.reason)));
        }
    }
    if !result.summary.trim().is_empty() {
        out.push(("summary", "overall".to_owned(), 0, clip(&result.summary)));
    }
    for line in &result.transcript {
        if !line.text.trim().is_empty() {
            out.push((
                "transcript",
                "overall".to_owned(),
                line.start_sec.max(0.0).floor() as u32,
                clip(&line.text),
            ));
        }
    }
    out.truncate(MAX_TEXTS_PER_SCAN);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: f32) -> Vec<f32> {
        // A strong shared direction plus a seed-specific one: related, as e5's vectors are
        // (every pair well above the relevance floor), but each closest to itself.
        let v: Vec<f32> = (0..embed::DIM)
            .map(|i| 3.0 * (i as f32 * 0.05).sin() + (i as f32 * seed).sin())
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    #[test]
    fn top_hits_are_exact_ordered_and_capped() {
        let mut index = OrgIndex::default();
        let mut vectors = Vec::new();
        let mut exact = HashMap::new();
        for i in 0..50 {
            let v = unit(0.01 + i as f32 * 0.013);
            index.vectors.push(&v);
            vectors.extend_from_slice(&v);
            exact.insert(1000 + i64::from(i), v);
            index.meta.push(Meta {
                id: 1000 + i64::from(i),
                scan_id: format!("s{i}"),
                kind: "moment".into(),
                lens: "attention".into(),
                second: i,
                text: format!("t{i}"),
                created_at: 0,
            });
        }
        let q = unit(0.01 + 17.0 * 0.013);
        let picked = index.vectors.candidates(&q, MAX_HITS, MIN_SCORE);
        let hits = top_hits(&index, &q, &picked, &exact);
        assert_eq!(hits.len(), MAX_HITS);
        assert_eq!(hits[0].scan_id, "s17");
        assert!((hits[0].score - 1.0).abs() < 1e-3);
        // Exact: the same order as sorting every score.
        let mut all: Vec<(f32, usize)> = vectors
            .chunks_exact(embed::DIM)
            .enumerate()
            .map(|(i, r)| (embed::dot(&q, r), i))
            .filter(|(s, _)| *s >= MIN_SCORE)
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0));
        let expected: Vec<String> = all
            .iter()
            .take(MAX_HITS)
            .map(|(_, i)| format!("s{i}"))
            .collect();
        let got: Vec<String> = hits.iter().map(|h| h.scan_id.clone()).collect();
        assert_eq!(got, expected);
    }
}
