//! Webhook delivery attempts, recorded for operators and tests.

use sqlx::Row;

use super::{Db, StoreResult};

#[derive(Debug, Clone)]
pub struct DeliveryAttempt {
    pub id: String,
    pub scan_id: String,
    pub org_id: String,
    pub message_id: String,
    pub url: String,
    pub attempt: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub created_at: i64,
}

impl Db {
    pub async fn record_delivery(&self, d: &DeliveryAttempt) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO webhook_deliveries (id, scan_id, org_id, message_id, url, attempt, status_code, error, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&d.id)
        .bind(&d.scan_id)
        .bind(&d.org_id)
        .bind(&d.message_id)
        .bind(&d.url)
        .bind(d.attempt)
        .bind(d.status_code)
        .bind(&d.error)
        .bind(d.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn deliveries_for_scan(&self, scan_id: &str) -> StoreResult<Vec<DeliveryAttempt>> {
        let rows = sqlx::query(
            "SELECT id, scan_id, org_id, message_id, url, attempt, status_code, error, created_at FROM webhook_deliveries WHERE scan_id = $1 ORDER BY created_at, attempt",
        )
        .bind(scan_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(DeliveryAttempt {
                    id: r.try_get("id")?,
                    scan_id: r.try_get("scan_id")?,
                    org_id: r.try_get("org_id")?,
                    message_id: r.try_get("message_id")?,
                    url: r.try_get("url")?,
                    attempt: r.try_get("attempt")?,
                    status_code: r.try_get("status_code")?,
                    error: r.try_get("error")?,
                    created_at: r.try_get("created_at")?,
                })
            })
            .collect()
    }
}
