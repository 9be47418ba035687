//! Secrets shared by every process on one database, created by whichever starts first.

use sqlx::Row;

use super::{Db, StoreResult};

impl Db {
    /// The secret called `name`, generated (43 base-62 characters, 256 bits) the first time it is
    /// asked for. `ON CONFLICT DO NOTHING` makes concurrent first calls agree on one value.
    pub async fn service_secret(&self, name: &str, now_ms: i64) -> StoreResult<String> {
        sqlx::query(
            "INSERT INTO service_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(crate::ids::token(43))
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        let row = sqlx::query("SELECT value FROM service_secrets WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get("value")?)
    }
}
