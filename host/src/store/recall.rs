//! Embedded texts for semantic recall: `scan_texts` (written with a scan's result) and
//! `recall_texts` (the organisation's memory, copied at the scan's first fetch).

use std::collections::HashMap;

use sqlx::{Any, Row, Transaction};

use super::{Db, StoreResult};

/// One searchable text of a scan and its embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedText {
    /// `moment`, `summary` or `transcript`.
    pub kind: String,
    pub lens: String,
    pub second: u32,
    pub text: String,
    pub model_id: String,
    /// L2-normalised.
    pub vector: Vec<f32>,
}

/// Where a stored text lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredAt {
    /// A row of an organisation's memory (`recall_texts`).
    Remembered { id: i64 },
    /// A text of a scan not yet remembered (`scan_texts`).
    Pending { scan_id: String, ord: i64 },
}

/// A stored text whose vector is of another model than the one asked for.
#[derive(Debug, Clone)]
pub struct StaleText {
    pub at: StoredAt,
    pub text: String,
    /// The model its vector is of now.
    pub model_id: String,
}

/// A row of an organisation's memory, as the in-memory index loads it.
#[derive(Debug, Clone)]
pub struct RecallRow {
    pub id: i64,
    pub scan_id: String,
    pub kind: String,
    pub lens: String,
    pub second: u32,
    pub text: String,
    pub vector: Vec<f32>,
    pub created_at: i64,
}

pub fn vector_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn vector_from(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Replaces a scan's texts (a retried job writes them again).
pub(super) async fn put_scan_texts(
    tx: &mut Transaction<'_, Any>,
    scan_id: &str,
    texts: &[EmbeddedText],
) -> StoreResult<()> {
    sqlx::query("DELETE FROM scan_texts WHERE scan_id = $1")
        .bind(scan_id)
        .execute(&mut **tx)
        .await?;
    for (ord, t) in texts.iter().enumerate() {
        sqlx::query("INSERT INTO scan_texts (scan_id, ord, kind, lens, second, text, model_id, vector) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
            .bind(scan_id)
            .bind(ord as i64)
            .bind(&t.kind)
            .bind(&t.lens)
            .bind(i64::from(t.second))
            .bind(&t.text)
            .bind(&t.model_id)
            .bind(vector_bytes(&t.vector))
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// Copies a scan's texts into its organisation's memory (inside the first-fetch transaction).
pub(super) async fn remember_texts(
    tx: &mut Transaction<'_, Any>,
    scan_id: &str,
    org_id: &str,
    created_at: i64,
) -> StoreResult<()> {
    sqlx::query("INSERT INTO recall_texts (org_id, scan_id, kind, lens, second, text, model_id, vector, created_at) SELECT $1, scan_id, kind, lens, second, text, model_id, vector, $2 FROM scan_texts WHERE scan_id = $3 ORDER BY ord")
        .bind(org_id)
        .bind(created_at)
        .bind(scan_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Db {
    /// The organisation's remembered texts of `model_id` with `id > after`, in id order, at
    /// most `limit`.
    pub async fn recall_rows(
        &self,
        org_id: &str,
        model_id: &str,
        after: i64,
        limit: i64,
    ) -> StoreResult<Vec<RecallRow>> {
        let rows = sqlx::query("SELECT id, scan_id, kind, lens, second, text, vector, created_at FROM recall_texts WHERE org_id = $1 AND model_id = $2 AND id > $3 ORDER BY id LIMIT $4")
            .bind(org_id)
            .bind(model_id)
            .bind(after)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                let bytes: Vec<u8> = r.try_get("vector")?;
                let second: i64 = r.try_get("second")?;
                Ok(RecallRow {
                    id: r.try_get("id")?,
                    scan_id: r.try_get("scan_id")?,
                    kind: r.try_get("kind")?,
                    lens: r.try_get("lens")?,
                    second: u32::try_from(second).unwrap_or(0),
                    text: r.try_get("text")?,
                    vector: vector_from(&bytes),
                    created_at: r.try_get("created_at")?,
                })
            })
            .collect()
    }

    /// The f32 vectors of an organisation's rows `ids` (recall rescores its candidates with
    /// them); ids that are not the organisation's, or no longer stored, are absent.
    pub async fn recall_vectors(
        &self,
        org_id: &str,
        ids: &[i64],
    ) -> StoreResult<HashMap<i64, Vec<f32>>> {
        /// Ids per statement: far under SQLite's and PostgreSQL's bound-parameter limits.
        const PER_QUERY: usize = 500;
        let mut out = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(PER_QUERY) {
            // Audited: fixed text and `$n` placeholders only (`($1), ($2), …`, then the
            // organisation); every value is bound.
            let sql = format!(
                "SELECT id, vector FROM recall_texts WHERE id IN ({}) AND org_id = ${}",
                super::memory::placeholders(chunk.len(), 1),
                chunk.len() + 1
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()));
            for id in chunk {
                query = query.bind(*id);
            }
            query = query.bind(org_id);
            for r in query.fetch_all(&self.pool).await? {
                let bytes: Vec<u8> = r.try_get("vector")?;
                out.insert(r.try_get("id")?, vector_from(&bytes));
            }
        }
        Ok(out)
    }

    /// How many remembered texts of `model_id` the organisation has.
    pub async fn recall_count(&self, org_id: &str, model_id: &str) -> StoreResult<i64> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM recall_texts WHERE org_id = $1 AND model_id = $2",
        )
        .bind(org_id)
        .bind(model_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("n")?)
    }

    /// Adds texts straight to an organisation's memory (bulk loads and benchmarks; scans go
    /// through `scan_texts` and the first fetch).
    pub async fn insert_recall_texts(
        &self,
        org_id: &str,
        scan_id: &str,
        created_at: i64,
        texts: &[EmbeddedText],
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        for t in texts {
            sqlx::query("INSERT INTO recall_texts (org_id, scan_id, kind, lens, second, text, model_id, vector, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)")
                .bind(org_id)
                .bind(scan_id)
                .bind(&t.kind)
                .bind(&t.lens)
                .bind(i64::from(t.second))
                .bind(&t.text)
                .bind(&t.model_id)
                .bind(vector_bytes(&t.vector))
                .bind(created_at)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Up to `limit` stored texts whose vector is not of `model_id`: remembered texts first,
    /// oldest first, then texts of scans not yet remembered. They are re-embedded by
    /// `intelligence::recall::migrate`.
    pub async fn texts_of_other_models(
        &self,
        model_id: &str,
        limit: i64,
    ) -> StoreResult<Vec<StaleText>> {
        let mut out: Vec<StaleText> = sqlx::query(
            "SELECT id, text, model_id FROM recall_texts WHERE model_id <> $1 ORDER BY id LIMIT $2",
        )
        .bind(model_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(StaleText {
                at: StoredAt::Remembered {
                    id: r.try_get("id")?,
                },
                text: r.try_get("text")?,
                model_id: r.try_get("model_id")?,
            })
        })
        .collect::<StoreResult<_>>()?;
        let room = limit - out.len() as i64;
        if room > 0 {
            let rows = sqlx::query(
                "SELECT scan_id, ord, text, model_id FROM scan_texts WHERE model_id <> $1 ORDER BY scan_id, ord LIMIT $2",
            )
            .bind(model_id)
            .bind(room)
            .fetch_all(&self.pool)
            .await?;
            for r in &rows {
                out.push(StaleText {
                    at: StoredAt::Pending {
                        scan_id: r.try_get("scan_id")?,
                        ord: r.try_get("ord")?,
                    },
                    text: r.try_get("text")?,
                    model_id: r.try_get("model_id")?,
                });
            }
        }
        Ok(out)
    }

    /// Gives each text its new vector of `model_id`, in one transaction. A row whose model is no
    /// longer the one it was read with (another process re-embedded it first) is left alone.
    /// Returns the rows replaced.
    pub async fn replace_vectors(
        &self,
        model_id: &str,
        rows: &[(&StaleText, &[f32])],
    ) -> StoreResult<u64> {
        let mut tx = self.pool.begin().await?;
        let mut replaced = 0;
        for (stale, vector) in rows {
            let query = match &stale.at {
                StoredAt::Remembered { id } => sqlx::query(
                    "UPDATE recall_texts SET model_id = $1, vector = $2 WHERE model_id = $3 AND id = $4",
                )
                .bind(model_id)
                .bind(vector_bytes(vector))
                .bind(&stale.model_id)
                .bind(*id),
                StoredAt::Pending { scan_id, ord } => sqlx::query(
                    "UPDATE scan_texts SET model_id = $1, vector = $2 WHERE model_id = $3 AND scan_id = $4 AND ord = $5",
                )
                .bind(model_id)
                .bind(vector_bytes(vector))
                .bind(&stale.model_id)
                .bind(scan_id)
                .bind(*ord),
            };
            replaced += query.execute(&mut *tx).await?.rows_affected();
        }
        tx.commit().await?;
        Ok(replaced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(model: &str, words: &str) -> EmbeddedText {
        EmbeddedText {
            kind: "moment".into(),
            lens: "attention".into(),
            second: 1,
            text: words.into(),
            model_id: model.into(),
            vector: vec![0.5; 4],
        }
    }

    /// The re-embedding's store side: texts of another model are found in both tables
    /// (remembered first, then those of scans not yet fetched), each update lands once, and a
    /// row another process already moved to the new model is left alone.
    #[tokio::test]
    async fn texts_of_another_model_are_found_in_both_tables_and_replaced_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("r.db").display());
        let db = Db::connect(&url).await.expect("db");
        db.insert_recall_texts(
            "org_a",
            "scan_1",
            0,
            &[text("old", "remembered one"), text("new", "already new")],
        )
        .await
        .expect("remembered");
        let mut tx = db.pool.begin().await.expect("tx");
        put_scan_texts(&mut tx, "scan_2", &[text("old", "pending one")])
            .await
            .expect("pending");
        tx.commit().await.expect("commit");

        let stale = db.texts_of_other_models("new", 10).await.expect("stale");
        let found: Vec<(&StoredAt, &str)> =
            stale.iter().map(|t| (&t.at, t.text.as_str())).collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(matches!(found[0].0, StoredAt::Remembered { .. }));
        assert_eq!(found[0].1, "remembered one");
        assert_eq!(
            found[1].0,
            &StoredAt::Pending {
                scan_id: "scan_2".into(),
                ord: 0
            }
        );
        assert!(stale.iter().all(|t| t.model_id == "old"));
        // A limit of one reads the remembered text only.
        assert_eq!(
            db.texts_of_other_models("new", 1).await.expect("one").len(),
            1
        );

        let vector = [1.0f32, 0.0, 0.0, 0.0];
        let updates: Vec<(&StaleText, &[f32])> =
            stale.iter().map(|t| (t, vector.as_slice())).collect();
        assert_eq!(
            db.replace_vectors("new", &updates).await.expect("replace"),
            2
        );
        assert!(
            db.texts_of_other_models("new", 10)
                .await
                .expect("none")
                .is_empty()
        );
        // Read before another process's update: nothing is replaced twice.
        assert_eq!(db.replace_vectors("new", &updates).await.expect("again"), 0);
        let rows = db.recall_rows("org_a", "new", 0, 10).await.expect("rows");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].vector, vector);
    }
}
