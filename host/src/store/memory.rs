//! The organisation's long-term memory of completed, fetched scans, and the per-second lens
//! scores and drop moments copied out of each remembered result so that `GET /intelligence`
//! aggregates in SQL instead of loading every result (migration 0007).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use sqlx::{Any, Row, Transaction};

use super::{Db, StoreResult};

/// Rows per multi-row insert (5 binds each: well under SQLite's bind limit).
const INSERT_CHUNK: usize = 200;

/// The parts of a stored result the rollup reads.
#[derive(Deserialize)]
struct RollupSource {
    lenses: Vec<String>,
    timeline: Vec<SecondScores>,
    #[serde(default)]
    moments: Vec<MomentRef>,
}

#[derive(Deserialize)]
struct SecondScores {
    second: i64,
    scores: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
struct MomentRef {
    #[serde(rename = "type")]
    kind: String,
    lens: String,
    second: i64,
}

/// Copies a result's per-second scores of its lenses and its drop moments (once per lens and
/// second) into the memory rollup tables, inside the transaction that remembers the scan.
///
/// # Errors
/// An unreadable result or a database error (the transaction then rolls back).
pub(super) async fn remember_rollup(
    tx: &mut Transaction<'_, Any>,
    scan_id: &str,
    org_id: &str,
    result_json: &str,
) -> StoreResult<()> {
    let source: RollupSource = serde_json::from_str(result_json)?;
    let scores: Vec<(&str, i64, f64)> = source
        .lenses
        .iter()
        .flat_map(|lens| {
            source
                .timeline
                .iter()
                .filter_map(move |s| s.scores.get(lens).map(|v| (lens.as_str(), s.second, *v)))
        })
        .collect();
    for chunk in scores.chunks(INSERT_CHUNK) {
        let values = placeholders(chunk.len(), 5);
        let sql = format!(
            "INSERT INTO memory_lens_seconds (org_id, scan_id, lens, second, score) VALUES {values}"
        );
        // Audited: the statement is fixed text and `$n` placeholders only; every value is bound.
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()));
        for (lens, second, score) in chunk {
            q = q
                .bind(org_id)
                .bind(scan_id)
                .bind(*lens)
                .bind(*second)
                .bind(*score);
        }
        q.execute(&mut **tx).await?;
    }
    let drops: BTreeSet<(&str, i64)> = source
        .moments
        .iter()
        .filter(|m| m.kind.ends_with("_drop"))
        .map(|m| (m.lens.as_str(), m.second))
        .collect();
    let drops: Vec<(&str, i64)> = drops.into_iter().collect();
    for chunk in drops.chunks(INSERT_CHUNK) {
        let values = placeholders(chunk.len(), 4);
        let sql =
            format!("INSERT INTO memory_drops (org_id, scan_id, lens, second) VALUES {values}");
        // Audited: the statement is fixed text and `$n` placeholders only; every value is bound.
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()));
        for (lens, second) in chunk {
            q = q.bind(org_id).bind(scan_id).bind(*lens).bind(*second);
        }
        q.execute(&mut **tx).await?;
    }
    Ok(())
}

/// `($1, $2, …), (…)` for `rows` rows of `width` binds.
pub(super) fn placeholders(rows: usize, width: usize) -> String {
    (0..rows)
        .map(|r| {
            let cols: Vec<String> = (1..=width).map(|c| format!("${}", r * width + c)).collect();
            format!("({})", cols.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An organisation's memory, aggregated by the database.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemoryRollup {
    pub scan_count: i64,
    /// Per lens, the mean over scans of each scan's mean score.
    pub lens_means: Vec<(String, f64)>,
    /// Per lens and second, the mean over the scans that reach that second; by lens, second.
    pub curves: Vec<(String, i64, f64)>,
    /// `(second, lens, scans with a drop there)`, most scans first, then by second and lens.
    pub drops: Vec<(i64, String, i64)>,
}

impl Db {
    /// The organisation's rollup: averages, curves and the `max_drops` most recurring drop
    /// seconds, computed in SQL over the rows [`remember_rollup`] wrote.
    pub async fn memory_rollup(&self, org_id: &str, max_drops: i64) -> StoreResult<MemoryRollup> {
        let scan_count: i64 =
            sqlx::query("SELECT COUNT(*) AS n FROM memory_scans WHERE org_id = $1")
                .bind(org_id)
                .fetch_one(&self.pool)
                .await?
                .try_get("n")?;
        let lens_means = sqlx::query(
            "SELECT lens, AVG(m) AS mean FROM (SELECT lens, AVG(score) AS m FROM memory_lens_seconds WHERE org_id = $1 GROUP BY scan_id, lens) per_scan GROUP BY lens ORDER BY lens",
        )
        .bind(org_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| Ok((r.try_get("lens")?, r.try_get("mean")?)))
        .collect::<Result<_, sqlx::Error>>()?;
        let curves = sqlx::query(
            "SELECT lens, second, AVG(score) AS mean FROM memory_lens_seconds WHERE org_id = $1 GROUP BY lens, second ORDER BY lens, second",
        )
        .bind(org_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| Ok((r.try_get("lens")?, r.try_get("second")?, r.try_get("mean")?)))
        .collect::<Result<_, sqlx::Error>>()?;
        let drops = sqlx::query(
            "SELECT second, lens, COUNT(*) AS n FROM memory_drops WHERE org_id = $1 GROUP BY second, lens ORDER BY n DESC, second, lens LIMIT $2",
        )
        .bind(org_id)
        .bind(max_drops)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| Ok((r.try_get("second")?, r.try_get("lens")?, r.try_get("n")?)))
        .collect::<Result<_, sqlx::Error>>()?;
        Ok(MemoryRollup {
            scan_count,
            lens_means,
            curves,
            drops,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::{SQLITE_MIGRATIONS, apply};

    /// A stored result as the worker writes it: three seconds of two lenses and a drop.
    fn result(attention: [f64; 3], memory: [f64; 3], drop_at: u32) -> String {
        let timeline: Vec<serde_json::Value> = (0..3)
            .map(|t| {
                serde_json::json!({
                    "second": t,
                    "scores": {"attention": attention[t], "memory": memory[t]},
                    "raw": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
                })
            })
            .collect();
        serde_json::json!({
            "lenses": ["attention", "memory"],
            "timeline": timeline,
            "moments": [
                {"type": "attention_drop", "lens": "attention", "second": drop_at},
                {"type": "attention_peak", "lens": "attention", "second": 0}
            ]
        })
        .to_string()
    }

    #[tokio::test]
    async fn the_migration_fills_the_rollup_from_scans_remembered_before_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("m.db").display());
        let db = Db::open(&url).await.expect("open");
        let mut conn = db.pool.acquire().await.expect("conn");
        apply(&mut conn, &SQLITE_MIGRATIONS[..6])
            .await
            .expect("up to 0006");
        sqlx::query(
            "INSERT INTO orgs (id, name, webhook_secret, created_at) VALUES ('org_a', 'a', 's', 0)",
        )
        .execute(&mut *conn)
        .await
        .expect("org");
        for (id, json) in [
            ("scan_1", result([40.0, 41.0, 20.0], [50.0, 51.0, 30.0], 2)),
            ("scan_2", result([60.0, 61.0, 40.0], [10.0, 11.0, 12.0], 2)),
        ] {
            sqlx::query("INSERT INTO memory_scans (scan_id, org_id, result_json, created_at) VALUES ($1, 'org_a', $2, 0)")
                .bind(id)
                .bind(json)
                .execute(&mut *conn)
                .await
                .expect("remembered");
        }
        apply(&mut conn, SQLITE_MIGRATIONS).await.expect("0007");
        drop(conn);
        let r = db.memory_rollup("org_a", 50).await.expect("rollup");
        assert_eq!(r.scan_count, 2);
        let means: BTreeMap<String, f64> = r.lens_means.into_iter().collect();
        assert!((means["attention"] - (101.0 / 3.0 + 161.0 / 3.0) / 2.0).abs() < 1e-9);
        assert!((means["memory"] - (131.0 / 3.0 + 11.0) / 2.0).abs() < 1e-9);
        let attention: Vec<f64> = r
            .curves
            .iter()
            .filter(|c| c.0 == "attention")
            .map(|c| c.2)
            .collect();
        assert_eq!(attention, vec![50.0, 51.0, 30.0]);
        assert_eq!(r.drops, vec![(2, "attention".to_owned(), 2)]);
        assert_eq!(
            db.memory_rollup("org_b", 50).await.expect("empty"),
            MemoryRollup::default()
        );
    }
}
