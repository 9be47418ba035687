//! Organisations and their API keys.

use sqlx::Row;

use super::{Db, StoreError, StoreResult};

#[derive(Debug, Clone)]
pub struct Org {
    pub id: String,
    pub name: String,
    pub webhook_secret: String,
    pub created_at: i64,
}

#[derive(Debug, Clone)]
pub struct ApiKeyRow {
    pub id: String,
    pub org_id: String,
    pub key_hash: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
    /// The label its owner gave it in the console (`None`: made with the CLI).
    pub name: Option<String>,
    /// The person who made it in the console (`None`: the CLI).
    pub created_by: Option<String>,
}

fn org_from_row(row: &sqlx::any::AnyRow) -> StoreResult<Org> {
    Ok(Org {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        webhook_secret: row.try_get("webhook_secret")?,
        created_at: row.try_get("created_at")?,
    })
}

fn key_from_row(r: &sqlx::any::AnyRow) -> StoreResult<ApiKeyRow> {
    Ok(ApiKeyRow {
        id: r.try_get("id")?,
        org_id: r.try_get("org_id")?,
        key_hash: r.try_get("key_hash")?,
        created_at: r.try_get("created_at")?,
        revoked_at: r.try_get("revoked_at")?,
        name: r.try_get("name")?,
        created_by: r.try_get("created_by")?,
    })
}

impl Db {
    /// Creates an organisation with an empty wallet.
    ///
    /// # Errors
    /// `Conflict` when the name is taken.
    pub async fn create_org(&self, org: &Org, free_period: &str) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO orgs (id, name, webhook_secret, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(&org.id)
        .bind(&org.name)
        .bind(&org.webhook_secret)
        .bind(org.created_at)
        .execute(&mut *tx)
        .await;
        super::conflict_on_unique(inserted, || {
            format!("an organisation named {:?} exists", org.name)
        })?;
        sqlx::query("INSERT INTO wallets (org_id, deposit_cents, free_period, free_used_cents) VALUES ($1, 0, $2, 0)")
            .bind(&org.id)
            .bind(free_period)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Finds an organisation by id or by name.
    pub async fn find_org(&self, id_or_name: &str) -> StoreResult<Org> {
        let row = sqlx::query(
            "SELECT id, name, webhook_secret, created_at FROM orgs WHERE id = $1 OR name = $1",
        )
        .bind(id_or_name)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        org_from_row(&row)
    }

    pub async fn list_orgs(&self) -> StoreResult<Vec<Org>> {
        let rows = sqlx::query(
            "SELECT id, name, webhook_secret, created_at FROM orgs ORDER BY created_at, id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(org_from_row).collect()
    }

    pub async fn insert_api_key(&self, key: &ApiKeyRow) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO api_keys (id, org_id, key_hash, created_at, revoked_at, name, created_by) VALUES ($1, $2, $3, $4, NULL, $5, $6)",
        )
        .bind(&key.id)
        .bind(&key.org_id)
        .bind(&key.key_hash)
        .bind(key.created_at)
        .bind(&key.name)
        .bind(&key.created_by)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Looks a key up by its public prefix (its id).
    pub async fn api_key_by_id(&self, id: &str) -> StoreResult<Option<ApiKeyRow>> {
        let row = sqlx::query(
            "SELECT id, org_id, key_hash, created_at, revoked_at, name, created_by FROM api_keys WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(key_from_row).transpose()
    }

    pub async fn list_api_keys(&self, org_id: &str) -> StoreResult<Vec<ApiKeyRow>> {
        let rows = sqlx::query(
            "SELECT id, org_id, key_hash, created_at, revoked_at, name, created_by FROM api_keys WHERE org_id = $1 ORDER BY created_at",
        )
        .bind(org_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(key_from_row).collect()
    }

    /// Revokes one of an organisation's keys (the console). Idempotent; `NotFound` when the
    /// organisation has no such key, whoever else might.
    pub async fn revoke_org_api_key(&self, org_id: &str, id: &str, now_ms: i64) -> StoreResult<()> {
        self.revoke(id, Some(org_id), now_ms).await
    }

    /// Revokes a key (the operator's CLI). Idempotent; `NotFound` when no such key exists.
    pub async fn revoke_api_key(&self, id: &str, now_ms: i64) -> StoreResult<()> {
        self.revoke(id, None, now_ms).await
    }

    async fn revoke(&self, id: &str, org_id: Option<&str>, now_ms: i64) -> StoreResult<()> {
        // `org_id = COALESCE($3, org_id)`: a NULL organisation matches any (CAST: PostgreSQL
        // must know the parameter's type).
        let done = sqlx::query(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 AND org_id = COALESCE(CAST($3 AS TEXT), org_id)",
        )
        .bind(id)
        .bind(now_ms)
        .bind(org_id)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}
