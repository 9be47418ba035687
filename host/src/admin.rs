//! `brainscan admin …`: operator commands that act on the database directly.

use crate::auth;
use crate::billing::{self, usd};
use crate::cli::{
    AdminCommand, KeyCommand, OrgCommand, PersonCommand, WalletCommand, WebhookCommand,
};
use crate::clock::{Clock, SystemClock, iso8601};
use crate::ids;
use crate::people::{self, Plan, Role};
use crate::store::orgs::Org;
use crate::store::people::Person;
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

async fn find_person(db: &Db, email: &str) -> anyhow::Result<Person> {
    let email = people::normalise_email(email).map_err(|m| anyhow::anyhow!(m))?;
    db.person_by_email(&email).await?.ok_or_else(|| {
        anyhow::anyhow!("no account for {email} (add one with `brainscan admin person add`)")
    })
}

/// One line of standard input, without its line ending, checked as a new password.
fn password_from_stdin() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let password = line.trim_end_matches(['\r', '\n']).to_owned();
    people::check_new_password(&password).map_err(|m| anyhow::anyhow!(m))?;
    Ok(password)
}

async fn hash(password: String) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || people::hash_password(&password)).await?
}

async fn person_command(
    db: &Db,
    clock: &SystemClock,
    command: PersonCommand,
) -> anyhow::Result<()> {
    match command {
        PersonCommand::Add {
            email,
            org,
            role,
            password_stdin,
        } => {
            let org = find_org(db, &org).await?;
            let role = Role::parse(&role)
                .ok_or_else(|| anyhow::anyhow!("the role is `owner` or `member`"))?;
            let email = people::normalise_email(&email).map_err(|m| anyhow::anyhow!(m))?;
            let person = match db.person_by_email(&email).await? {
                Some(p) => {
                    anyhow::ensure!(
                        !password_stdin,
                        "{email} already has an account; set a password with `brainscan admin person password`"
                    );
                    p
                }
                None => {
                    let password_hash = if password_stdin {
                        Some(hash(password_from_stdin()?).await?)
                    } else {
                        None
                    };
                    let p = Person {
                        id: people::new_person_id(),
                        email: email.clone(),
                        password_hash,
                        created_at: clock.now_ms(),
                    };
                    db.create_person(&p).await?;
                    println!("account created for {email}");
                    p
                }
            };
            db.set_membership(&person.id, &org.id, role, clock.now_ms())
                .await?;
            println!(
                "{email} is {} of {}",
                match role {
                    Role::Owner => "an owner",
                    Role::Member => "a member",
                },
                org.name
            );
            if person.password_hash.is_none() {
                println!("next: brainscan admin person link {email}");
            }
        }
        PersonCommand::Password { email } => {
            let person = find_person(db, &email).await?;
            let password_hash = hash(password_from_stdin()?).await?;
            db.set_password(&person.id, &password_hash).await?;
            println!(
                "password set for {}; their sessions have ended",
                person.email
            );
        }
        PersonCommand::Link {
            email,
            minutes,
            base_url,
        } => {
            anyhow::ensure!(
                (1..=people::LINK_TTL_MAX_MINUTES).contains(&minutes),
                "a link lasts 1-{} minutes",
                people::LINK_TTL_MAX_MINUTES
            );
            let base = url::Url::parse(base_url.trim())
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "the base URL must be an http(s) URL, e.g. https://scan.example.com"
                    )
                })?;
            let person = find_person(db, &email).await?;
            let token = people::new_token();
            let now = clock.now_ms();
            db.create_signin_link(
                &auth::hash_hex(&token),
                &person.id,
                now,
                now + minutes * 60_000,
            )
            .await?;
            let mut link = base
                .join("console/session/link")
                .map_err(|e| anyhow::anyhow!("building the link: {e}"))?;
            link.set_query(Some(&format!("token={token}")));
            println!("{link}");
            eprintln!(
                "a one-time sign-in link for {}, valid for {minutes} minutes. Send it to them privately.",
                person.email
            );
        }
        PersonCommand::List { org } => {
            let org = find_org(db, &org).await?;
            for (email, role) in db.members_of(&org.id).await? {
                println!("{email}\t{}", role.as_str());
            }
        }
        PersonCommand::Remove { email, org } => {
            let org = find_org(db, &org).await?;
            let person = find_person(db, &email).await?;
            db.remove_membership(&person.id, &org.id)
                .await
                .map_err(|e| match e {
                    StoreError::NotFound => {
                        anyhow::anyhow!("{} is not in {}", person.email, org.name)
                    }
                    other => other.into(),
                })?;
            println!("{} removed from {}", person.email, org.name);
        }
    }
    Ok(())
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
                let plan = db.org_plan(&org.id).await?;
                let used = db
                    .console_scans_used(&org.id, people::month_start_ms(clock.now()))
                    .await?;
                println!(
                    "plan:           {} ({used} of {} console scans used this month)",
                    plan.as_str(),
                    plan.monthly_scans()
                );
            }
            OrgCommand::Plan { org, plan } => {
                let org = find_org(db, &org).await?;
                let plan = Plan::parse(&plan)
                    .ok_or_else(|| anyhow::anyhow!("the plan is free, pro or studio"))?;
                db.set_org_plan(&org.id, plan).await?;
                println!(
                    "{} is on the {} plan: {} console scans a month{}",
                    org.name,
                    plan.as_str(),
                    plan.monthly_scans(),
                    if plan.is_paid() {
                        "; owners can create API keys in the console"
                    } else {
                        ""
                    }
                );
            }
        },
        AdminCommand::Person { command } => person_command(db, &clock, command).await?,
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
