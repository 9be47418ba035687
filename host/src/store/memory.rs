//! The organisation's long-term memory of completed, fetched scans.

use sqlx::Row;

use super::{Db, StoreResult};

#[derive(Debug, Clone)]
pub struct MemoryScan {
    pub scan_id: String,
    pub result_json: String,
    pub created_at: i64,
}

impl Db {
    /// Every remembered scan of one organisation, oldest first.
    pub async fn memory_scans(&self, org_id: &str) -> StoreResult<Vec<MemoryScan>> {
        let rows = sqlx::query("SELECT scan_id, result_json, created_at FROM memory_scans WHERE org_id = $1 ORDER BY created_at, scan_id")
            .bind(org_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(MemoryScan {
                    scan_id: r.try_get("scan_id")?,
                    result_json: r.try_get("result_json")?,
                    created_at: r.try_get("created_at")?,
                })
            })
            .collect()
    }
}
