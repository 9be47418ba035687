//! The plugin registry's tables: content-addressed blobs, installed versions, slots and the
//! audit trail of every activation, rollback and breaker trip.

use sqlx::Row;

use super::{Db, StoreError, StoreResult};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRow {
    pub slot: String,
    pub kind: String,
    pub name: String,
    pub version: String,
    /// Earlier `name@version` ids, most recent last.
    pub history: Vec<String>,
    pub auto: bool,
    pub updated_at: i64,
}

#[derive(Debug, Clone)]
pub struct PluginRow {
    pub name: String,
    pub version: String,
    pub kind: String,
    pub digest: String,
    pub manifest: String,
    pub conformance: Option<String>,
    pub installed_at: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PluginEvent {
    pub slot: String,
    pub action: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub reason: String,
    pub at: i64,
}

fn plugin_row(r: &sqlx::any::AnyRow) -> StoreResult<PluginRow> {
    Ok(PluginRow {
        name: r.try_get("name")?,
        version: r.try_get("version")?,
        kind: r.try_get("kind")?,
        digest: r.try_get("digest")?,
        manifest: r.try_get("manifest")?,
        conformance: r.try_get("conformance")?,
        installed_at: r.try_get("installed_at")?,
    })
}

fn slot_row(r: &sqlx::any::AnyRow) -> StoreResult<SlotRow> {
    let history: String = r.try_get("history")?;
    Ok(SlotRow {
        slot: r.try_get("slot")?,
        kind: r.try_get("kind")?,
        name: r.try_get("name")?,
        version: r.try_get("version")?,
        history: serde_json::from_str(&history)?,
        auto: r.try_get::<i64, _>("auto")? != 0,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Takes the plugin tables' write lock as the transaction's first statement: SQLite then
/// holds its write lock from the start (a read that later upgrades can fail with
/// `SQLITE_BUSY_SNAPSHOT`, which no busy timeout retries), and PostgreSQL serialises plugin
/// writers on this one row, so the expect-guard of [`Db::write_slot`] cannot lose an update.
async fn lock_plugin_tables(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> StoreResult<()> {
    sqlx::query("UPDATE plugin_generation SET generation = generation WHERE id = 1")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Db {
    /// Stores a version (and its bytes, once per digest). `Conflict` when `name@version` is
    /// already installed with other bytes; a re-upload of the same bytes is a no-op.
    pub async fn insert_plugin(&self, row: &PluginRow, bytes: &[u8]) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        lock_plugin_tables(&mut tx).await?;
        let existing: Option<(String,)> =
            sqlx::query_as("SELECT digest FROM plugins WHERE name = $1 AND version = $2")
                .bind(&row.name)
                .bind(&row.version)
                .fetch_optional(&mut *tx)
                .await?;
        if let Some((digest,)) = existing {
            return if digest == row.digest {
                Ok(false)
            } else {
                Err(StoreError::Conflict(format!(
                    "{}@{} is already installed with different code ({digest}); publish a new version",
                    row.name, row.version
                )))
            };
        }
        let have: Option<(String,)> =
            sqlx::query_as("SELECT digest FROM plugin_blobs WHERE digest = $1")
                .bind(&row.digest)
                .fetch_optional(&mut *tx)
                .await?;
        if have.is_none() {
            sqlx::query("INSERT INTO plugin_blobs (digest, bytes, created_at) VALUES ($1, $2, $3)")
                .bind(&row.digest)
                .bind(bytes.to_vec())
                .bind(row.installed_at)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "INSERT INTO plugins (name, version, kind, digest, manifest, conformance, installed_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&row.name)
        .bind(&row.version)
        .bind(&row.kind)
        .bind(&row.digest)
        .bind(&row.manifest)
        .bind(&row.conformance)
        .bind(row.installed_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    pub async fn get_plugin(&self, name: &str, version: &str) -> StoreResult<PluginRow> {
        let r = sqlx::query("SELECT * FROM plugins WHERE name = $1 AND version = $2")
            .bind(name)
            .bind(version)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        plugin_row(&r)
    }

    pub async fn list_plugins(&self) -> StoreResult<Vec<PluginRow>> {
        let rows = sqlx::query("SELECT * FROM plugins ORDER BY kind, name, installed_at")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(plugin_row).collect()
    }

    pub async fn plugin_bytes(&self, digest: &str) -> StoreResult<Vec<u8>> {
        let r = sqlx::query("SELECT bytes FROM plugin_blobs WHERE digest = $1")
            .bind(digest)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        Ok(r.try_get("bytes")?)
    }

    /// Deletes a version that no slot uses (active or in history), and its bytes when no other
    /// version shares them.
    pub async fn delete_plugin(&self, name: &str, version: &str) -> StoreResult<()> {
        let id = format!("{name}@{version}");
        let mut tx = self.pool.begin().await?;
        lock_plugin_tables(&mut tx).await?;
        let row = sqlx::query("SELECT digest FROM plugins WHERE name = $1 AND version = $2")
            .bind(name)
            .bind(version)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        let digest: String = row.try_get("digest")?;
        let slots = sqlx::query("SELECT * FROM plugin_slots")
            .fetch_all(&mut *tx)
            .await?;
        for r in &slots {
            let s = slot_row(r)?;
            if s.name == name && s.version == version {
                return Err(StoreError::Conflict(format!(
                    "{id} is active in slot {}; activate another version first",
                    s.slot
                )));
            }
            if s.history.contains(&id) {
                return Err(StoreError::Conflict(format!(
                    "{id} is the rollback target of slot {}; it stays until the slot moves on",
                    s.slot
                )));
            }
        }
        sqlx::query("DELETE FROM plugins WHERE name = $1 AND version = $2")
            .bind(name)
            .bind(version)
            .execute(&mut *tx)
            .await?;
        let others: Option<(String,)> =
            sqlx::query_as("SELECT name FROM plugins WHERE digest = $1")
                .bind(&digest)
                .fetch_optional(&mut *tx)
                .await?;
        if others.is_none() {
            sqlx::query("DELETE FROM plugin_blobs WHERE digest = $1")
                .bind(&digest)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn list_slots(&self) -> StoreResult<Vec<SlotRow>> {
        let rows = sqlx::query("SELECT * FROM plugin_slots ORDER BY slot")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(slot_row).collect()
    }

    pub async fn plugin_generation(&self) -> StoreResult<i64> {
        let (g,): (i64,) = sqlx::query_as("SELECT generation FROM plugin_generation WHERE id = 1")
            .fetch_one(&self.pool)
            .await?;
        Ok(g)
    }

    /// Writes a slot (or removes it when `new` is `None`), bumps the generation and records
    /// the event, in one transaction. `expect` guards against a concurrent change: the write
    /// only happens when the slot still holds that id (`None`: the slot must be empty).
    pub async fn write_slot(
        &self,
        slot: &str,
        expect: Option<&str>,
        new: Option<&SlotRow>,
        event: &PluginEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        lock_plugin_tables(&mut tx).await?;
        let current = sqlx::query("SELECT * FROM plugin_slots WHERE slot = $1")
            .bind(slot)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| slot_row(&r))
            .transpose()?;
        let current_id = current
            .as_ref()
            .map(|s| format!("{}@{}", s.name, s.version));
        if current_id.as_deref() != expect {
            return Err(StoreError::Conflict(format!(
                "slot {slot} changed meanwhile (now {}); retry",
                current_id.as_deref().unwrap_or("empty")
            )));
        }
        sqlx::query("DELETE FROM plugin_slots WHERE slot = $1")
            .bind(slot)
            .execute(&mut *tx)
            .await?;
        if let Some(s) = new {
            sqlx::query(
                "INSERT INTO plugin_slots (slot, kind, name, version, history, auto, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&s.slot)
            .bind(&s.kind)
            .bind(&s.name)
            .bind(&s.version)
            .bind(serde_json::to_string(&s.history)?)
            .bind(i64::from(s.auto))
            .bind(s.updated_at)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query("UPDATE plugin_generation SET generation = generation + 1 WHERE id = 1")
            .execute(&mut *tx)
            .await?;
        // Every process LISTENing (Postgres) reloads its plugin set when this commits.
        super::db::notify(self.backend, &mut tx, super::PLUGINS_CHANNEL, slot).await?;
        sqlx::query(
            "INSERT INTO plugin_events (id, slot, action, from_id, to_id, reason, at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(crate::ids::token(20))
        .bind(&event.slot)
        .bind(&event.action)
        .bind(&event.from)
        .bind(&event.to)
        .bind(&event.reason)
        .bind(event.at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn plugin_events(&self, limit: i64) -> StoreResult<Vec<PluginEvent>> {
        let rows = sqlx::query(
            "SELECT slot, action, from_id, to_id, reason, at FROM plugin_events ORDER BY at DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(PluginEvent {
                    slot: r.try_get("slot")?,
                    action: r.try_get("action")?,
                    from: r.try_get("from_id")?,
                    to: r.try_get("to_id")?,
                    reason: r.try_get("reason")?,
                    at: r.try_get("at")?,
                })
            })
            .collect()
    }
}
