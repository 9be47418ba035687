//! Wallet reads, deposits, and the exactly-once settlement of a scan's charge.

use sqlx::Row;

use super::scans::lock_wallet;
use super::{Db, StoreError, StoreResult};
use crate::billing::WalletState;
use crate::ids;

impl Db {
    pub async fn wallet(&self, org_id: &str) -> StoreResult<WalletState> {
        let row = sqlx::query(
            "SELECT deposit_cents, free_period, free_used_cents FROM wallets WHERE org_id = $1",
        )
        .bind(org_id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        Ok(WalletState {
            deposit_cents: row.try_get("deposit_cents")?,
            free_period: row.try_get("free_period")?,
            free_used_cents: row.try_get("free_used_cents")?,
        })
    }

    /// The wallet and the cost of the scans set aside against it (queued, processing, and
    /// complete but not yet charged), read in one transaction so the two agree.
    pub async fn wallet_and_reserved(&self, org_id: &str) -> StoreResult<(WalletState, i64)> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(
            "SELECT deposit_cents, free_period, free_used_cents FROM wallets WHERE org_id = $1",
        )
        .bind(org_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        let wallet = WalletState {
            deposit_cents: row.try_get("deposit_cents")?,
            free_period: row.try_get("free_period")?,
            free_used_cents: row.try_get("free_used_cents")?,
        };
        let reserved = super::scans::owed_cents(&mut tx, org_id).await?;
        tx.commit().await?;
        Ok((wallet, reserved))
    }

    /// Adds a prepaid deposit and records it in the ledger.
    pub async fn credit_wallet(
        &self,
        org_id: &str,
        cents: i64,
        note: &str,
        now_ms: i64,
    ) -> StoreResult<WalletState> {
        let mut tx = self.pool.begin().await?;
        lock_wallet(&mut tx, org_id).await?;
        sqlx::query("UPDATE wallets SET deposit_cents = deposit_cents + $2 WHERE org_id = $1")
            .bind(org_id)
            .bind(cents)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO ledger (id, org_id, scan_id, kind, free_cents, deposit_cents, note, created_at) VALUES ($1, $2, NULL, 'deposit', 0, $3, $4, $5)",
        )
        .bind(ids::new_ledger_id())
        .bind(org_id)
        .bind(cents)
        .bind(note)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.wallet(org_id).await
    }

    /// Settles a completed scan's charge and records it in the organisation's memory, once.
    ///
    /// The first statement claims the scan (`charged_at IS NULL`), so of any number of
    /// concurrent first fetches exactly one proceeds; the rest see zero rows and return
    /// `false`. Everything — claim, wallet debit, ledger row, memory row — commits together.
    pub async fn settle_scan(
        &self,
        org_id: &str,
        scan_id: &str,
        period: &str,
        now_ms: i64,
    ) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query(
            "UPDATE scans SET charged_at = $3 WHERE id = $1 AND org_id = $2 AND status = 'complete' AND charged_at IS NULL",
        )
        .bind(scan_id)
        .bind(org_id)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
        if claimed.rows_affected() == 0 {
            return Ok(false);
        }
        let row =
            sqlx::query("SELECT price_cents, result_json, created_at FROM scans WHERE id = $1")
                .bind(scan_id)
                .fetch_one(&mut *tx)
                .await?;
        let price: i64 = row.try_get("price_cents")?;
        let result_json: Option<String> = row.try_get("result_json")?;
        let created_at: i64 = row.try_get("created_at")?;

        // A console scan (price 0, the plan's) is settled into memory like any other and
        // leaves the wallet and the ledger untouched.
        if price > 0 {
            charge_wallet(&mut tx, org_id, scan_id, period, price, now_ms).await?;
        }
        if let Some(result_json) = result_json {
            sqlx::query("INSERT INTO memory_scans (scan_id, org_id, result_json, created_at) VALUES ($1, $2, $3, $4)")
                .bind(scan_id)
                .bind(org_id)
                .bind(&result_json)
                .bind(created_at)
                .execute(&mut *tx)
                .await?;
            super::memory::remember_rollup(&mut tx, scan_id, org_id, &result_json).await?;
            super::recall::remember_texts(&mut tx, scan_id, org_id, created_at).await?;
        }
        tx.commit().await?;
        Ok(true)
    }
    /// Number of scan charges recorded for a scan (0 or 1); used by tests and audits.
    pub async fn charge_count(&self, scan_id: &str) -> StoreResult<i64> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM ledger WHERE scan_id = $1 AND kind = 'scan_charge'",
        )
        .bind(scan_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("n")?)
    }
}

/// Takes a settled API scan's price from the wallet (free credit first) and records it in the
/// ledger, under the wallet lock.
async fn charge_wallet(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    org_id: &str,
    scan_id: &str,
    period: &str,
    price: i64,
    now_ms: i64,
) -> StoreResult<()> {
    let wallet = lock_wallet(tx, org_id).await?;
    let (next, free_part, deposit_part) = wallet.charge(period, price);
    sqlx::query("UPDATE wallets SET deposit_cents = $2, free_period = $3, free_used_cents = $4 WHERE org_id = $1")
        .bind(org_id)
        .bind(next.deposit_cents)
        .bind(&next.free_period)
        .bind(next.free_used_cents)
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "INSERT INTO ledger (id, org_id, scan_id, kind, free_cents, deposit_cents, note, created_at) VALUES ($1, $2, $3, 'scan_charge', $4, $5, NULL, $6)",
    )
    .bind(ids::new_ledger_id())
    .bind(org_id)
    .bind(scan_id)
    .bind(-free_part)
    .bind(-deposit_part)
    .bind(now_ms)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
