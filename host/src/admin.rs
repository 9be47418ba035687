//! `brainscan admin …`: operator commands that act on the database directly.

use crate::auth;
use crate::billing::{self, usd};
use crate::cli::{AdminCommand, KeyCommand, OrgCommand, WalletCommand, WebhookCommand};
use crate::clock::{Clock, SystemClock, iso8601};
use crate::ids;
use crate::store::orgs::Org;
use crate::store::{Db, StoreError};

fn org_missing(org: &str) -> anyhow::Error {
    anyhow::anyhow!("no organisation with id or name {org:?} (see `brainscan admin org list`)")
}

async fn find_org(db: &Db, org: &str) -> anyhow::Result<Org> {
    db.find_org(org).await.map_err(|e| match e {
        StoreError::NotFound => org_missing(org),
        other => other.into(),
    })
}

/// Runs one admin command, printing plain-language output.
///
/// # Errors
/// Unknown organisations or keys, invalid amounts, database errors.
pub async fn run(db: &Db, command: AdminCommand) -> anyhow::Result<()> {
    let clock = SystemClock;
    match command {
        AdminCommand::Org { command } => match command {
            OrgCommand::Create { name } => {
                let name = name.trim().to_owned();
                anyhow::ensure!(
                    !name.is_empty() && name.len() <= 200,
                    "the name must be 1-200 characters"
                );
                let org = Org {
                    id: ids::new_org_id(),
                    name,
                    webhook_secret: crate::webhooks::new_secret(),
                    created_at: clock.now_ms(),
                };
                db.create_org(&org, &billing::period_of(clock.now()))
                    .await?;
                println!("organisation created");
                println!("  id:             {}", org.id);
                println!("  name:           {}", org.name);
                println!("  webhook secret: {}", org.webhook_secret);
                println!("next: brainscan admin key create --org {}", org.id);
            }
            OrgCommand::List => {
                for org in db.list_orgs().await? {
                    println!("{}\t{}\t{}", org.id, org.name, iso8601(org.created_at));
                }
            }
            OrgCommand::Show { org } => {
                let org = find_org(db, &org).await?;
                let w = db.wallet(&org.id).await?;
                let period = billing::period_of(clock.now());
                println!("id:             {}", org.id);
                println!("name:           {}", org.name);
                println!("created:        {}", iso8601(org.created_at));
                println!("webhook secret: {}", org.webhook_secret);
                println!("deposit:        ${:.2}", usd(w.deposit_cents));
                println!(
                    "free credit:    ${:.2} left this month",
                    usd(w.free_remaining(&period))
                );
            }
        },
        AdminCommand::Key { command } => match command {
            KeyCommand::Create { org } => {
                let org = find_org(db, &org).await?;
                let key = auth::generate(&org.id, clock.now_ms());
                db.insert_api_key(&key.row).await?;
                println!("{}", key.secret);
                eprintln!(
                    "API key {} created for {}. It is shown once: store it now.",
                    key.row.id, org.name
                );
            }
            KeyCommand::List { org } => {
                let org = find_org(db, &org).await?;
                for k in db.list_api_keys(&org.id).await? {
                    let state = k.revoked_at.map_or_else(
                        || "active".to_owned(),
                        |t| format!("revoked {}", iso8601(t)),
                    );
                    println!("{}\tcreated {}\t{}", k.id, iso8601(k.created_at), state);
                }
            }
            KeyCommand::Revoke { key } => {
                let id = if key.starts_with(auth::KEY_PREFIX) {
                    auth::key_id(&key)
                        .ok_or_else(|| anyhow::anyhow!("that is not a well-formed API key"))?
                } else {
                    key
                };
                db.revoke_api_key(&id, clock.now_ms())
                    .await
                    .map_err(|e| match e {
                        StoreError::NotFound => anyhow::anyhow!("no API key {id:?}"),
                        other => other.into(),
                    })?;
                println!(
                    "revoked {id}; running servers stop accepting it within their key cache time (5 s by default)"
                );
            }
        },
        AdminCommand::Wallet { command } => match command {
            WalletCommand::Credit { org, usd: amount } => {
                let org = find_org(db, &org).await?;
                let cents = billing::parse_usd(&amount).map_err(|e| anyhow::anyhow!(e))?;
                anyhow::ensure!(cents > 0, "the amount must be positive");
                let w = db
                    .credit_wallet(&org.id, cents, "admin credit", clock.now_ms())
                    .await?;
                println!(
                    "credited ${:.2} to {}; deposit is now ${:.2}",
                    usd(cents),
                    org.name,
                    usd(w.deposit_cents)
                );
            }
            WalletCommand::Show { org } => {
                let org = find_org(db, &org).await?;
                let w = db.wallet(&org.id).await?;
                let period = billing::period_of(clock.now());
                println!(
                    "deposit ${:.2}, free credit ${:.2} left this month, ${:.2} available",
                    usd(w.deposit_cents),
                    usd(w.free_remaining(&period)),
                    usd(w.available(&period))
                );
            }
        },
        AdminCommand::Webhook {
            command: WebhookCommand::Deliveries { scan },
        } => {
            let attempts = db.deliveries_for_scan(&scan).await?;
            if attempts.is_empty() {
                println!("no webhook deliveries recorded for {scan}");
            }
            for d in attempts {
                let outcome = match (d.status_code, d.error) {
                    (Some(code), _) => format!("HTTP {code}"),
                    (None, Some(e)) => e,
                    (None, None) => "no answer".into(),
                };
                println!(
                    "{}\tattempt {}\t{}\t{}\t{}",
                    iso8601(d.created_at),
                    d.attempt,
                    d.message_id,
                    d.url,
                    outcome
                );
            }
        }
    }
    Ok(())
}
