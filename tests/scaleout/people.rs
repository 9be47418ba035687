//! People, plans and sessions in the store, on both engines: the plan's allowance holds when
//! console scans race (it is checked under the wallet lock), a console scan settles into
//! memory without touching the wallet or the ledger, a failed one gives its allowance back,
//! and a sign-in link is used at most once however many uses race.

use std::sync::Arc;

use brainscan::people::{Plan, Role};
use brainscan::store::Db;
use brainscan::store::jobs::NewJob;
use brainscan::store::orgs::Org;
use brainscan::store::people::Person;
use brainscan::store::scans::{CreateOutcome, NewScan, ScanBilling};

use crate::queue::{open_postgres, open_sqlite};

const PERIOD: &str = "2026-11";

async fn org(db: &Db, name: &str) -> Org {
    let org = Org {
        id: format!("org_{name}"),
        name: name.into(),
        webhook_secret: "whsec".into(),
        created_at: 0,
    };
    db.create_org(&org, PERIOD).await.expect("org");
    org
}

fn console_scan(i: usize, org: &Org, allowance: i64) -> (NewScan, NewJob) {
    let id = format!("qualia_run_people_{i:04}");
    (
        NewScan {
            id: id.clone(),
            org_id: org.id.clone(),
            model: "qualia".into(),
            input_kind: "audio".into(),
            input_url: "https://media.example/tone.wav".into(),
            request_json: "{}".into(),
            price_cents: 0,
            created_at: 10_000 + i as i64,
            billing: ScanBilling::Plan {
                person_id: "per_ada".into(),
                allowance,
                since_ms: 10_000,
            },
        },
        NewJob {
            id: format!("job_people_{i:04}"),
            kind: "scan".into(),
            payload: format!("{{\"scan_id\":\"{id}\"}}"),
            org_id: Some(org.id.clone()),
            max_attempts: 3,
            run_after: 0,
            created_at: 10_000 + i as i64,
        },
    )
}

async fn the_allowance_holds_when_console_scans_race(db: Db) {
    let acme = org(&db, "acme").await;
    let db = Arc::new(db);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let db = db.clone();
            let (scan, job) = console_scan(i, &acme, 3);
            tokio::spawn(async move {
                db.create_scan(&scan, &job, None, "{}", PERIOD)
                    .await
                    .expect("create")
            })
        })
        .collect();
    let mut created = 0;
    let mut refused = 0;
    for t in tasks {
        match t.await.expect("join") {
            CreateOutcome::Created => created += 1,
            CreateOutcome::AllowanceUsed { allowance, .. } => {
                assert_eq!(allowance, 3);
                refused += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((created, refused), (3, 5));
    assert_eq!(
        db.console_scans_used(&acme.id, 10_000).await.expect("used"),
        3
    );
    assert_eq!(
        db.console_scans_used(&acme.id, 20_000).await.expect("used"),
        0,
        "scans before the month's start do not count"
    );

    // One completes and is settled: remembered, with no charge and the wallet as it was.
    let wallet_before = db.wallet(&acme.id).await.expect("wallet");
    let (rows_total, rows) = db.list_scans(&acme.id, 10, 0).await.expect("list");
    assert_eq!(rows_total, 3);
    let done = rows[0].id.clone();
    assert!(
        db.complete_scan(&done, "{\"lenses\":[],\"timeline\":[]}", "s", &[], 20_000)
            .await
            .expect("complete")
    );
    assert!(
        db.settle_scan(&acme.id, &done, PERIOD, 20_001)
            .await
            .expect("settle")
    );
    assert_eq!(db.charge_count(&done).await.expect("count"), 0);
    assert_eq!(db.wallet(&acme.id).await.expect("wallet"), wallet_before);
    assert!(
        db.get_scan(&acme.id, &done)
            .await
            .expect("scan")
            .charged_at
            .is_some()
    );

    // A failed console scan gives its place back.
    let failed = rows[1].id.clone();
    db.fail_scan(
        &failed,
        brainscan::scan::ScanStatus::Error,
        "{\"error\":\"download_failed\"}",
        20_002,
    )
    .await
    .expect("fail");
    assert_eq!(
        db.console_scans_used(&acme.id, 10_000).await.expect("used"),
        2
    );
    let (scan, job) = console_scan(100, &acme, 3);
    assert!(matches!(
        db.create_scan(&scan, &job, None, "{}", PERIOD)
            .await
            .expect("create"),
        CreateOutcome::Created
    ));
}

async fn people_memberships_sessions_and_links(db: Db) {
    let acme = org(&db, "acme").await;
    let rival = org(&db, "rival").await;
    db.set_org_plan(&acme.id, Plan::Studio).await.expect("plan");
    let ada = Person {
        id: "per_ada".into(),
        email: "ada@example.com".into(),
        password_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into()),
        created_at: 0,
    };
    db.create_person(&ada).await.expect("person");
    let again = Person {
        id: "per_other".into(),
        ..ada.clone()
    };
    assert!(matches!(
        db.create_person(&again).await,
        Err(brainscan::store::StoreError::Conflict(_))
    ));
    db.set_membership(&ada.id, &acme.id, Role::Member, 1)
        .await
        .expect("member");
    db.set_membership(&ada.id, &acme.id, Role::Owner, 2)
        .await
        .expect("promote");
    db.set_membership(&ada.id, &rival.id, Role::Member, 3)
        .await
        .expect("member");
    let mine = db.memberships_of(&ada.id).await.expect("memberships");
    let summary: Vec<_> = mine
        .iter()
        .map(|m| (m.org.name.as_str(), m.role, m.plan))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("acme", Role::Owner, Plan::Studio),
            ("rival", Role::Member, Plan::Free)
        ]
    );
    db.remove_membership(&ada.id, &rival.id)
        .await
        .expect("remove");
    assert_eq!(db.role_in(&ada.id, &rival.id).await.expect("role"), None);

    // A key is revoked in its own organisation only; the CLI revokes any.
    let k1 = brainscan::auth::generate(&acme.id, 5);
    let k2 = brainscan::auth::generate(&acme.id, 6);
    db.insert_api_key(&k1.row).await.expect("key");
    db.insert_api_key(&k2.row).await.expect("key");
    assert!(matches!(
        db.revoke_org_api_key(&rival.id, &k1.row.id, 7).await,
        Err(brainscan::store::StoreError::NotFound)
    ));
    db.revoke_org_api_key(&acme.id, &k1.row.id, 8)
        .await
        .expect("revoke");
    db.revoke_api_key(&k2.row.id, 9).await.expect("revoke");
    let revoked: Vec<_> = db
        .list_api_keys(&acme.id)
        .await
        .expect("keys")
        .into_iter()
        .map(|k| k.revoked_at)
        .collect();
    assert_eq!(revoked, vec![Some(8), Some(9)]);

    // Sessions expire, and a new password ends them.
    db.create_session("h1", &ada.id, "csrf", 100, 200)
        .await
        .expect("session");
    assert_eq!(
        db.session("h1", 150)
            .await
            .expect("read")
            .map(|s| s.csrf_token),
        Some("csrf".to_owned())
    );
    assert!(db.session("h1", 200).await.expect("read").is_none());
    db.create_session("h2", &ada.id, "csrf2", 100, 10_000)
        .await
        .expect("session");
    db.set_password(&ada.id, "$argon2id$new")
        .await
        .expect("password");
    assert!(db.session("h2", 150).await.expect("read").is_none());

    // A link is used once, however many uses race; an expired one never.
    db.create_signin_link("link", &ada.id, 0, 1_000)
        .await
        .expect("link");
    db.create_signin_link("old", &ada.id, 0, 10)
        .await
        .expect("link");
    let db = Arc::new(db);
    let uses: Vec<_> = (0..6)
        .map(|_| {
            let db = db.clone();
            tokio::spawn(async move { db.consume_signin_link("link", 500).await.expect("use") })
        })
        .collect();
    let mut signed_in = Vec::new();
    for u in uses {
        signed_in.extend(u.await.expect("join"));
    }
    assert_eq!(signed_in, vec![ada.id.clone()]);
    assert_eq!(db.consume_signin_link("old", 500).await.expect("use"), None);
}

on_both_engines!(
    the_allowance_holds_when_console_scans_race,
    people_memberships_sessions_and_links,
);
