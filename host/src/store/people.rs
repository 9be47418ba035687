//! People, their memberships, sessions and sign-in links, and each organisation's plan.

use sqlx::Row;

use super::orgs::Org;
use super::{Db, StoreError, StoreResult};
use crate::people::{Plan, Role};

#[derive(Debug, Clone)]
pub struct Person {
    pub id: String,
    pub email: String,
    /// PHC string; `None` for a person who signs in only with links.
    pub password_hash: Option<String>,
    pub created_at: i64,
}

/// One organisation a person belongs to.
#[derive(Debug, Clone)]
pub struct Membership {
    pub org: Org,
    pub role: Role,
    pub plan: Plan,
}

/// A live session.
#[derive(Debug, Clone)]
pub struct SessionRow {
    pub person_id: String,
    pub csrf_token: String,
    pub expires_at: i64,
}

fn person_from_row(row: &sqlx::any::AnyRow) -> StoreResult<Person> {
    Ok(Person {
        id: row.try_get("id")?,
        email: row.try_get("email")?,
        password_hash: row.try_get("password_hash")?,
        created_at: row.try_get("created_at")?,
    })
}

/// A stored plan or role that this build does not know is a corrupt row, not a default.
fn plan_of(s: &str) -> StoreResult<Plan> {
    Plan::parse(s).ok_or_else(|| StoreError::Conflict(format!("unknown plan {s:?} stored")))
}

fn role_of(s: &str) -> StoreResult<Role> {
    Role::parse(s).ok_or_else(|| StoreError::Conflict(format!("unknown role {s:?} stored")))
}

impl Db {
    /// Creates a person.
    ///
    /// # Errors
    /// `Conflict` when the email has an account.
    pub async fn create_person(&self, person: &Person) -> StoreResult<()> {
        let inserted = sqlx::query(
            "INSERT INTO people (id, email, password_hash, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(&person.id)
        .bind(&person.email)
        .bind(&person.password_hash)
        .bind(person.created_at)
        .execute(&self.pool)
        .await;
        super::conflict_on_unique(inserted, || {
            format!("{} already has an account", person.email)
        })?;
        Ok(())
    }

    /// The person with this (normalised) email.
    pub async fn person_by_email(&self, email: &str) -> StoreResult<Option<Person>> {
        let row =
            sqlx::query("SELECT id, email, password_hash, created_at FROM people WHERE email = $1")
                .bind(email)
                .fetch_optional(&self.pool)
                .await?;
        row.as_ref().map(person_from_row).transpose()
    }

    pub async fn person_by_id(&self, id: &str) -> StoreResult<Option<Person>> {
        let row =
            sqlx::query("SELECT id, email, password_hash, created_at FROM people WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        row.as_ref().map(person_from_row).transpose()
    }

    /// Replaces a person's password and ends their sessions, so a changed password locks out
    /// whoever knew the old one.
    pub async fn set_password(&self, person_id: &str, hash: &str) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query("UPDATE people SET password_hash = $2 WHERE id = $1")
            .bind(person_id)
            .bind(hash)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        sqlx::query("DELETE FROM sessions WHERE person_id = $1")
            .bind(person_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Adds a person to an organisation, or changes their role there.
    pub async fn set_membership(
        &self,
        person_id: &str,
        org_id: &str,
        role: Role,
        now_ms: i64,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        let updated =
            sqlx::query("UPDATE memberships SET role = $3 WHERE person_id = $1 AND org_id = $2")
                .bind(person_id)
                .bind(org_id)
                .bind(role.as_str())
                .execute(&mut *tx)
                .await?;
        if updated.rows_affected() == 0 {
            sqlx::query(
                "INSERT INTO memberships (person_id, org_id, role, created_at) VALUES ($1, $2, $3, $4)",
            )
            .bind(person_id)
            .bind(org_id)
            .bind(role.as_str())
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Removes a person from an organisation. `NotFound` when they were not in it.
    pub async fn remove_membership(&self, person_id: &str, org_id: &str) -> StoreResult<()> {
        let done = sqlx::query("DELETE FROM memberships WHERE person_id = $1 AND org_id = $2")
            .bind(person_id)
            .bind(org_id)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    /// The organisations a person belongs to, by name.
    pub async fn memberships_of(&self, person_id: &str) -> StoreResult<Vec<Membership>> {
        let rows = sqlx::query(
            "SELECT o.id, o.name, o.webhook_secret, o.created_at, o.plan, m.role FROM memberships m JOIN orgs o ON o.id = m.org_id WHERE m.person_id = $1 ORDER BY o.name",
        )
        .bind(person_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Membership {
                    org: Org {
                        id: r.try_get("id")?,
                        name: r.try_get("name")?,
                        webhook_secret: r.try_get("webhook_secret")?,
                        created_at: r.try_get("created_at")?,
                    },
                    role: role_of(&r.try_get::<String, _>("role")?)?,
                    plan: plan_of(&r.try_get::<String, _>("plan")?)?,
                })
            })
            .collect()
    }

    /// A person's role in an organisation, `None` when they do not belong to it.
    pub async fn role_in(&self, person_id: &str, org_id: &str) -> StoreResult<Option<Role>> {
        let row = sqlx::query("SELECT role FROM memberships WHERE person_id = $1 AND org_id = $2")
            .bind(person_id)
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| role_of(&r.try_get::<String, _>("role")?))
            .transpose()
    }

    /// The people of an organisation: (email, role), by email.
    pub async fn members_of(&self, org_id: &str) -> StoreResult<Vec<(String, Role)>> {
        let rows = sqlx::query(
            "SELECT p.email, m.role FROM memberships m JOIN people p ON p.id = m.person_id WHERE m.org_id = $1 ORDER BY p.email",
        )
        .bind(org_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("email")?,
                    role_of(&r.try_get::<String, _>("role")?)?,
                ))
            })
            .collect()
    }

    pub async fn org_plan(&self, org_id: &str) -> StoreResult<Plan> {
        let row = sqlx::query("SELECT plan FROM orgs WHERE id = $1")
            .bind(org_id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        plan_of(&row.try_get::<String, _>("plan")?)
    }

    pub async fn set_org_plan(&self, org_id: &str, plan: Plan) -> StoreResult<()> {
        let done = sqlx::query("UPDATE orgs SET plan = $2 WHERE id = $1")
            .bind(org_id)
            .bind(plan.as_str())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    /// Console scans of an organisation created since `since_ms` that count against its plan:
    /// every one but those that failed, or were cancelled before a worker began them (those
    /// cost nothing). A scan cancelled while processing counts: its work was done.
    pub async fn console_scans_used(&self, org_id: &str, since_ms: i64) -> StoreResult<i64> {
        console_scans_used(&self.pool, org_id, since_ms).await
    }

    /// Starts a session; expired sessions are swept on the way.
    pub async fn create_session(
        &self,
        token_hash: &str,
        person_id: &str,
        csrf_token: &str,
        now_ms: i64,
        expires_at: i64,
    ) -> StoreResult<()> {
        sqlx::query("DELETE FROM sessions WHERE expires_at <= $1")
            .bind(now_ms)
            .execute(&self.pool)
            .await?;
        sqlx::query(
            "INSERT INTO sessions (token_hash, person_id, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(token_hash)
        .bind(person_id)
        .bind(csrf_token)
        .bind(now_ms)
        .bind(expires_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The session with this token hash, if it has not expired.
    pub async fn session(&self, token_hash: &str, now_ms: i64) -> StoreResult<Option<SessionRow>> {
        let row = sqlx::query(
            "SELECT person_id, csrf_token, expires_at FROM sessions WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(SessionRow {
                person_id: r.try_get("person_id")?,
                csrf_token: r.try_get("csrf_token")?,
                expires_at: r.try_get("expires_at")?,
            })
        })
        .transpose()
    }

    pub async fn delete_session(&self, token_hash: &str) -> StoreResult<()> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records a one-time sign-in link.
    pub async fn create_signin_link(
        &self,
        token_hash: &str,
        person_id: &str,
        now_ms: i64,
        expires_at: i64,
    ) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO signin_links (token_hash, person_id, created_at, expires_at, used_at) VALUES ($1, $2, $3, $4, NULL)",
        )
        .bind(token_hash)
        .bind(person_id)
        .bind(now_ms)
        .bind(expires_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The person an unused, unexpired sign-in link would sign in, without using it (the
    /// confirmation page that names the account).
    pub async fn peek_signin_link(
        &self,
        token_hash: &str,
        now_ms: i64,
    ) -> StoreResult<Option<String>> {
        let row = sqlx::query(
            "SELECT person_id FROM signin_links WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| r.try_get("person_id"))
            .transpose()
            .map_err(Into::into)
    }

    /// Uses a sign-in link: the person it signs in, once. Of any number of racing uses exactly
    /// one gets the person; an expired, used or unknown link gets `None`.
    pub async fn consume_signin_link(
        &self,
        token_hash: &str,
        now_ms: i64,
    ) -> StoreResult<Option<String>> {
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query(
            "UPDATE signin_links SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
        if claimed.rows_affected() == 0 {
            return Ok(None);
        }
        let row = sqlx::query("SELECT person_id FROM signin_links WHERE token_hash = $1")
            .bind(token_hash)
            .fetch_one(&mut *tx)
            .await?;
        let person: String = row.try_get("person_id")?;
        tx.commit().await?;
        Ok(Some(person))
    }
}

/// [`Db::console_scans_used`] on any executor, so scan creation can count inside its
/// transaction, under the wallet lock.
pub(super) async fn console_scans_used<'e>(
    executor: impl sqlx::Executor<'e, Database = sqlx::Any>,
    org_id: &str,
    since_ms: i64,
) -> StoreResult<i64> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS n FROM scans WHERE org_id = $1 AND source = 'console' AND created_at >= $2 AND (status NOT IN ('error', 'cancelled') OR (status = 'cancelled' AND cancelled_from = 'processing'))",
    )
    .bind(org_id)
    .bind(since_ms)
    .fetch_one(executor)
    .await?;
    Ok(row.try_get("n")?)
}
