//! Scans: creation (with the funds check, idempotency and the job, in one transaction),
//! state changes by the worker, reads by the API.

use sqlx::{Any, Row, Transaction};

use super::jobs::NewJob;
use super::{Db, StoreError, StoreResult};
use crate::billing::WalletState;
use crate::scan::ScanStatus;

#[derive(Debug, Clone)]
pub struct ScanRow {
    pub id: String,
    pub org_id: String,
    pub status: String,
    pub stage: String,
    pub progress: i64,
    pub model: String,
    pub input_kind: String,
    pub input_url: String,
    pub request_json: String,
    /// `None` in rows read by [`Db::list_scans`], which does not load results.
    pub result_json: Option<String>,
    /// The result's summary, kept in its own column for the list.
    pub summary: Option<String>,
    pub error: Option<String>,
    pub price_cents: i64,
    pub charged_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub completed_at: Option<i64>,
}

const SCAN_COLUMNS: &str = "id, org_id, status, stage, progress, model, input_kind, input_url, request_json, result_json, summary, error, price_cents, charged_at, created_at, updated_at, completed_at";

/// [`SCAN_COLUMNS`] without the result, for the list.
const LIST_COLUMNS: &str = "id, org_id, status, stage, progress, model, input_kind, input_url, request_json, NULL AS result_json, summary, error, price_cents, charged_at, created_at, updated_at, completed_at";

fn scan_from_row(r: &sqlx::any::AnyRow) -> StoreResult<ScanRow> {
    Ok(ScanRow {
        id: r.try_get("id")?,
        org_id: r.try_get("org_id")?,
        status: r.try_get("status")?,
        stage: r.try_get("stage")?,
        progress: r.try_get("progress")?,
        model: r.try_get("model")?,
        input_kind: r.try_get("input_kind")?,
        input_url: r.try_get("input_url")?,
        request_json: r.try_get("request_json")?,
        result_json: r.try_get("result_json")?,
        summary: r.try_get("summary")?,
        error: r.try_get("error")?,
        price_cents: r.try_get("price_cents")?,
        charged_at: r.try_get("charged_at")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        completed_at: r.try_get("completed_at")?,
    })
}

/// A scan to insert.
#[derive(Debug, Clone)]
pub struct NewScan {
    pub id: String,
    pub org_id: String,
    pub model: String,
    pub input_kind: String,
    pub input_url: String,
    pub request_json: String,
    pub price_cents: i64,
    pub created_at: i64,
    pub billing: ScanBilling,
}

/// Who pays for a scan.
#[derive(Debug, Clone)]
pub enum ScanBilling {
    /// An API scan: the wallet must cover `price_cents`, charged when the result first leaves.
    Wallet,
    /// A scan a signed-in person started in the console: one of the plan's monthly scans,
    /// never charged to the wallet (`price_cents` is 0).
    Plan {
        person_id: String,
        /// Scans a month on the organisation's plan.
        allowance: i64,
        /// The first millisecond of the month the allowance counts over.
        since_ms: i64,
    },
}

/// An `Idempotency-Key` to record with the scan.
#[derive(Debug, Clone)]
pub struct IdempotencyClaim {
    pub key: String,
    pub body_hash: String,
    /// Entries older than this (ms) are expired and replaced.
    pub not_before: i64,
}

/// What `create_scan` did.
#[derive(Debug)]
pub enum CreateOutcome {
    Created,
    /// The same idempotency key and body were seen within the window: the stored response.
    Replayed(String),
    InsufficientFunds {
        available_cents: i64,
        owed_cents: i64,
    },
    /// A console scan past the plan's monthly allowance.
    AllowanceUsed {
        used: i64,
        allowance: i64,
    },
}

/// Takes the organisation's wallet lock for the rest of the transaction. As the first write it
/// makes SQLite take its write lock at once (no read-then-upgrade deadlock) and PostgreSQL
/// lock the wallet row, so funds checks and charges of one organisation serialise.
pub(super) async fn lock_wallet(
    tx: &mut Transaction<'_, Any>,
    org_id: &str,
) -> StoreResult<WalletState> {
    let locked =
        sqlx::query("UPDATE wallets SET lock_version = lock_version + 1 WHERE org_id = $1")
            .bind(org_id)
            .execute(&mut **tx)
            .await?;
    if locked.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    let row = sqlx::query(
        "SELECT deposit_cents, free_period, free_used_cents FROM wallets WHERE org_id = $1",
    )
    .bind(org_id)
    .fetch_one(&mut **tx)
    .await?;
    Ok(WalletState {
        deposit_cents: row.try_get("deposit_cents")?,
        free_period: row.try_get("free_period")?,
        free_used_cents: row.try_get("free_used_cents")?,
    })
}

/// Cost of the organisation's scans that may still be charged: queued, processing, and
/// complete but not yet fetched.
pub(super) async fn owed_cents(tx: &mut Transaction<'_, Any>, org_id: &str) -> StoreResult<i64> {
    let row = sqlx::query(
        "SELECT CAST(COALESCE(SUM(price_cents), 0) AS BIGINT) AS owed FROM scans WHERE org_id = $1 AND charged_at IS NULL AND status IN ('queued', 'processing', 'complete')",
    )
    .bind(org_id)
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.try_get("owed")?)
}

impl Db {
    /// Inserts a scan and its job if the organisation can pay for it, honouring an
    /// idempotency key, all in one transaction.
    ///
    /// `response` is the create response to store for replays.
    ///
    /// # Errors
    /// `Conflict` when the idempotency key was used with a different body.
    pub async fn create_scan(
        &self,
        scan: &NewScan,
        job: &NewJob,
        idempotency: Option<&IdempotencyClaim>,
        response: &str,
        period: &str,
    ) -> StoreResult<CreateOutcome> {
        let mut tx = self.pool.begin().await?;
        let wallet = lock_wallet(&mut tx, &scan.org_id).await?;

        if let Some(idem) = idempotency {
            let existing = sqlx::query(
                "SELECT body_hash, response, created_at FROM idempotency_keys WHERE org_id = $1 AND idem_key = $2",
            )
            .bind(&scan.org_id)
            .bind(&idem.key)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = existing {
                let created_at: i64 = row.try_get("created_at")?;
                if created_at >= idem.not_before {
                    let hash: String = row.try_get("body_hash")?;
                    if hash != idem.body_hash {
                        return Err(StoreError::Conflict(
                            "this Idempotency-Key was used with a different request body".into(),
                        ));
                    }
                    return Ok(CreateOutcome::Replayed(row.try_get("response")?));
                }
                sqlx::query("DELETE FROM idempotency_keys WHERE org_id = $1 AND idem_key = $2")
                    .bind(&scan.org_id)
                    .bind(&idem.key)
                    .execute(&mut *tx)
                    .await?;
            }
        }

        // Both checks run under the wallet lock, so racing submissions cannot overspend the
        // wallet or the plan.
        let (source, person_id) = match &scan.billing {
            ScanBilling::Wallet => {
                let owed = owed_cents(&mut tx, &scan.org_id).await?;
                if !wallet.can_cover(period, owed, scan.price_cents) {
                    return Ok(CreateOutcome::InsufficientFunds {
                        available_cents: wallet.available(period),
                        owed_cents: owed,
                    });
                }
                ("api", None)
            }
            ScanBilling::Plan {
                person_id,
                allowance,
                since_ms,
            } => {
                let used =
                    super::people::console_scans_used(&mut *tx, &scan.org_id, *since_ms).await?;
                if used >= *allowance {
                    return Ok(CreateOutcome::AllowanceUsed {
                        used,
                        allowance: *allowance,
                    });
                }
                ("console", Some(person_id.as_str()))
            }
        };

        sqlx::query(
            "INSERT INTO scans (id, org_id, status, stage, progress, model, input_kind, input_url, request_json, price_cents, created_at, updated_at, source, person_id) VALUES ($1, $2, 'queued', 'queued', 0, $3, $4, $5, $6, $7, $8, $8, $9, $10)",
        )
        .bind(&scan.id)
        .bind(&scan.org_id)
        .bind(&scan.model)
        .bind(&scan.input_kind)
        .bind(&scan.input_url)
        .bind(&scan.request_json)
        .bind(scan.price_cents)
        .bind(scan.created_at)
        .bind(source)
        .bind(person_id)
        .execute(&mut *tx)
        .await?;
        super::jobs::insert_job(self.backend, &mut tx, job).await?;
        if let Some(idem) = idempotency {
            sqlx::query(
                "INSERT INTO idempotency_keys (org_id, idem_key, body_hash, scan_id, response, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&scan.org_id)
            .bind(&idem.key)
            .bind(&idem.body_hash)
            .bind(&scan.id)
            .bind(response)
            .bind(scan.created_at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(CreateOutcome::Created)
    }

    /// Reads a scan of one organisation. Another organisation's scan is `NotFound`, exactly as
    /// a missing one.
    pub async fn get_scan(&self, org_id: &str, id: &str) -> StoreResult<ScanRow> {
        let sql = format!("SELECT {SCAN_COLUMNS} FROM scans WHERE id = $1 AND org_id = $2");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        scan_from_row(&row)
    }

    /// Reads a scan by id alone, for the worker.
    pub async fn get_scan_by_id(&self, id: &str) -> StoreResult<ScanRow> {
        let sql = format!("SELECT {SCAN_COLUMNS} FROM scans WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        scan_from_row(&row)
    }

    /// A page of the organisation's scans, newest first, and the total count.
    pub async fn list_scans(
        &self,
        org_id: &str,
        limit: i64,
        offset: i64,
    ) -> StoreResult<(i64, Vec<ScanRow>)> {
        let total: i64 = sqlx::query("SELECT COUNT(*) AS n FROM scans WHERE org_id = $1")
            .bind(org_id)
            .fetch_one(&self.pool)
            .await?
            .try_get("n")?;
        let sql = format!(
            "SELECT {LIST_COLUMNS} FROM scans WHERE org_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(org_id)
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await?;
        let scans = rows
            .iter()
            .map(scan_from_row)
            .collect::<StoreResult<Vec<_>>>()?;
        Ok((total, scans))
    }

    /// Moves a queued or processing scan to `processing` at `stage`. Returns false when the
    /// scan already reached a final state (a retried job must not resurrect it).
    pub async fn mark_scan_stage(
        &self,
        id: &str,
        stage: &str,
        progress: i64,
        now_ms: i64,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE scans SET status = 'processing', stage = $2, progress = $3, updated_at = $4 WHERE id = $1 AND status IN ('queued', 'processing')",
        )
        .bind(id)
        .bind(stage)
        .bind(progress)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Stores the result and marks the scan complete. Idempotent per scan.
    /// Stores the result and the scan's embedded texts together: a scan is never complete
    /// without the texts recall will need once it is remembered.
    pub async fn complete_scan(
        &self,
        id: &str,
        result_json: &str,
        summary: &str,
        texts: &[super::recall::EmbeddedText],
        now_ms: i64,
    ) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query(
            "UPDATE scans SET status = 'complete', stage = 'done', progress = 100, result_json = $2, summary = $4, updated_at = $3, completed_at = $3 WHERE id = $1 AND status IN ('queued', 'processing')",
        )
        .bind(id)
        .bind(result_json)
        .bind(now_ms)
        .bind(summary)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        super::recall::put_scan_texts(&mut tx, id, texts).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Ends a scan in `error` (or `cancelled`) with a reason. Never charged.
    pub async fn fail_scan(
        &self,
        id: &str,
        status: ScanStatus,
        error: &str,
        now_ms: i64,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE scans SET status = $2, stage = 'failed', error = $3, updated_at = $4 WHERE id = $1 AND status IN ('queued', 'processing')",
        )
        .bind(id)
        .bind(status.as_str())
        .bind(error)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The failed work of `org_id` since `since_ms` (the failed-work budget): scans that
    /// ended in `error`, scans cancelled while processing, and submissions refused after their
    /// URL was read ([`Self::record_refused_submit`]).
    ///
    /// # Errors
    /// Database errors.
    pub async fn failed_scans_since(&self, org_id: &str, since_ms: i64) -> StoreResult<i64> {
        let row = sqlx::query(
            "SELECT (SELECT COUNT(*) FROM scans WHERE org_id = $1 AND updated_at >= $2 AND (status = 'error' OR (status = 'cancelled' AND cancelled_from = 'processing'))) + (SELECT COUNT(*) FROM refused_submits WHERE org_id = $1 AND created_at >= $2) AS n",
        )
        .bind(org_id)
        .bind(since_ms)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("n")?)
    }

    /// Records a submission refused after its URL was read (`code`: the error code answered),
    /// for the failed-work budget; this organisation's rows older than `forget_before_ms` go.
    pub async fn record_refused_submit(
        &self,
        org_id: &str,
        code: &str,
        now_ms: i64,
        forget_before_ms: i64,
    ) -> StoreResult<()> {
        sqlx::query("DELETE FROM refused_submits WHERE org_id = $1 AND created_at < $2")
            .bind(org_id)
            .bind(forget_before_ms)
            .execute(&self.pool)
            .await?;
        sqlx::query("INSERT INTO refused_submits (org_id, code, created_at) VALUES ($1, $2, $3)")
            .bind(org_id)
            .bind(code)
            .bind(now_ms)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Scan counts by status, for metrics.
    pub async fn scan_counts(&self) -> StoreResult<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT status, COUNT(*) AS n FROM scans GROUP BY status")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("status")?, r.try_get("n")?)))
            .collect()
    }
}

impl Db {
    /// The stored answer for an idempotency key still inside its window, if any.
    ///
    /// # Errors
    /// `Conflict` when the key was used with a different body.
    pub async fn idempotent_response(
        &self,
        org_id: &str,
        claim: &IdempotencyClaim,
    ) -> StoreResult<Option<String>> {
        let row = sqlx::query(
            "SELECT body_hash, response FROM idempotency_keys WHERE org_id = $1 AND idem_key = $2 AND created_at >= $3",
        )
        .bind(org_id)
        .bind(&claim.key)
        .bind(claim.not_before)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let hash: String = row.try_get("body_hash")?;
        if hash != claim.body_hash {
            return Err(StoreError::Conflict(
                "this Idempotency-Key was used with a different request body".into(),
            ));
        }
        Ok(Some(row.try_get("response")?))
    }
}

impl Db {
    /// Cancels a queued or processing scan of one organisation. A worker holding its job
    /// notices at its next stage (and can never complete it): see `pipeline::run_scan`. The
    /// status it was cancelled from is kept: a scan cancelled while processing had work done,
    /// and counts against the failed-work budget and the plan allowance.
    ///
    /// # Errors
    /// `NotFound` for a missing or foreign scan; `Conflict` when it already ended.
    pub async fn cancel_scan(
        &self,
        org_id: &str,
        id: &str,
        reason: &str,
        now_ms: i64,
    ) -> StoreResult<ScanRow> {
        let done = sqlx::query(
            "UPDATE scans SET status = 'cancelled', cancelled_from = status, stage = 'failed', error = $3, updated_at = $4 WHERE id = $1 AND org_id = $2 AND status IN ('queued', 'processing')",
        )
        .bind(id)
        .bind(org_id)
        .bind(reason)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        let row = self.get_scan(org_id, id).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!(
                "the scan is {}; only queued or processing scans can be cancelled",
                row.status
            )));
        }
        Ok(row)
    }
}
