//! The durable queue's contract, run against both engines: exclusive claims under
//! concurrency, lease expiry and takeover, retries, release, ordering, kinds, and (Postgres)
//! the notification that wakes other processes.

use std::collections::HashSet;
use std::sync::Arc;

use brainscan::store::Db;
use brainscan::store::jobs::NewJob;
use tempfile::TempDir;

use crate::pg::FreshPg;

/// Keeps the database alive for the test.
pub enum Guard {
    Sqlite(#[allow(dead_code)] TempDir),
    Postgres(#[allow(dead_code)] FreshPg),
}

pub async fn open_sqlite() -> (Db, Guard) {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("q.db").display());
    (Db::connect(&url).await.expect("sqlite"), Guard::Sqlite(dir))
}

pub async fn open_postgres() -> (Db, Guard) {
    let pg = FreshPg::new().await;
    (
        Db::connect(&pg.url).await.expect("postgres"),
        Guard::Postgres(pg),
    )
}

fn job(i: usize, kind: &str, run_after: i64) -> NewJob {
    NewJob {
        id: format!("job_{i:05}"),
        kind: kind.to_owned(),
        payload: format!("{{\"n\":{i}}}"),
        org_id: None,
        max_attempts: 3,
        run_after,
        created_at: 1_000 + i as i64,
    }
}

on_both_engines!(
    concurrent_claimers_each_get_different_jobs,
    an_expired_lease_is_taken_over_and_the_old_owner_is_locked_out,
    a_retry_waits_for_its_time,
    release_gives_the_job_back_without_spending_an_attempt,
    oldest_due_job_first_and_kinds_stay_apart,
    migrations_are_idempotent,
    an_organisation_at_its_cap_waits_and_the_least_busy_goes_first,
);

/// Per-organisation fairness: organisation A queued a backlog before B's one job. With a cap
/// of 2, once A has a job running B's job goes ahead of A's older backlog (B has none
/// running), A gets its second slot, then nothing is claimable until one of A's finishes; an
/// expired lease no longer counts as running.
async fn an_organisation_at_its_cap_waits_and_the_least_busy_goes_first(db: Db) {
    let of = |i: usize, org: &str| NewJob {
        org_id: Some(org.to_owned()),
        ..job(i, "scan", 0)
    };
    for i in 0..5 {
        db.enqueue(&of(i, "org_a")).await.expect("enqueue");
    }
    db.enqueue(&of(9, "org_b")).await.expect("enqueue");
    let claim = |worker: &'static str, now: i64| {
        let db = &db;
        async move {
            db.claim_job_fair("scan", worker, now, 1_000, 2)
                .await
                .expect("claim")
        }
    };
    let first = claim("w1", 2_000).await.expect("A's oldest");
    assert_eq!(
        first.id, "job_00000",
        "oldest first while nobody runs anything"
    );
    let second = claim("w2", 2_000).await.expect("B's job");
    assert_eq!(
        second.id, "job_00009",
        "B (none running) goes before A's backlog"
    );
    let third = claim("w3", 2_000).await.expect("A's next");
    assert_eq!(third.id, "job_00001");
    assert!(claim("w4", 2_000).await.is_none(), "A is at its cap of 2");
    assert!(
        db.finish_job(&first.id, "w1", None, 2_100)
            .await
            .expect("finish")
    );
    let fourth = claim("w1", 2_200).await.expect("A again, one slot free");
    assert_eq!(fourth.id, "job_00002");
    assert!(claim("w4", 2_200).await.is_none());
    // The leases run out at 3 000 (claimed at 2 000 with 1 000 ms): expired leases do not
    // count against the cap, and their jobs are themselves claimable again.
    assert!(claim("w5", 3_300).await.is_some());
}

/// 200 jobs, 8 claimers racing: every job is claimed exactly once and ends `done`.
async fn concurrent_claimers_each_get_different_jobs(db: Db) {
    for i in 0..200 {
        db.enqueue(&job(i, "scan", 0)).await.expect("enqueue");
    }
    let db = Arc::new(db);
    let mut tasks = Vec::new();
    for w in 0..8 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let worker = format!("w{w}");
            let mut mine = Vec::new();
            while let Some(j) = db
                .claim_job("scan", &worker, 10_000, 60_000)
                .await
                .expect("claim")
            {
                assert_eq!(j.attempts, 1, "{} was claimed before", j.id);
                assert!(
                    db.finish_job(&j.id, &worker, None, 10_001)
                        .await
                        .expect("finish"),
                    "finishing a job this worker holds"
                );
                mine.push(j.id);
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    let unique: HashSet<_> = all.iter().collect();
    assert_eq!(all.len(), 200, "every job claimed");
    assert_eq!(unique.len(), 200, "no job claimed twice");
    let depth = db.queue_depth().await.expect("depth");
    assert!(depth.is_empty(), "nothing queued or running: {depth:?}");
}

async fn an_expired_lease_is_taken_over_and_the_old_owner_is_locked_out(db: Db) {
    db.enqueue(&job(1, "scan", 0)).await.expect("enqueue");
    let a = db
        .claim_job("scan", "a", 1_000, 100)
        .await
        .expect("claim")
        .expect("job");
    assert_eq!(a.attempts, 1);
    // Lease still valid: nobody else gets it.
    assert!(
        db.claim_job("scan", "b", 1_050, 100)
            .await
            .expect("claim")
            .is_none()
    );
    // A heartbeat extends it.
    assert!(db.heartbeat_job(&a.id, "a", 1_090, 100).await.expect("hb"));
    assert!(
        db.claim_job("scan", "b", 1_150, 100)
            .await
            .expect("claim")
            .is_none()
    );
    // Expired (1_190): b takes it over as a second attempt.
    let b = db
        .claim_job("scan", "b", 1_200, 100)
        .await
        .expect("claim")
        .expect("taken over");
    assert_eq!(b.id, a.id);
    assert_eq!(b.attempts, 2);
    assert!(!db.heartbeat_job(&a.id, "a", 1_210, 100).await.expect("hb"));
    assert!(
        !db.finish_job(&a.id, "a", None, 1_210)
            .await
            .expect("finish")
    );
    assert!(
        db.finish_job(&b.id, "b", None, 1_220)
            .await
            .expect("finish")
    );
}

async fn a_retry_waits_for_its_time(db: Db) {
    db.enqueue(&job(1, "scan", 0)).await.expect("enqueue");
    let j = db
        .claim_job("scan", "a", 1_000, 10_000)
        .await
        .expect("claim")
        .expect("job");
    assert!(
        db.retry_job(&j.id, "a", 3_000, "flaky", 1_001)
            .await
            .expect("retry")
    );
    assert!(
        db.claim_job("scan", "a", 2_999, 10_000)
            .await
            .expect("claim")
            .is_none()
    );
    let again = db
        .claim_job("scan", "a", 3_000, 10_000)
        .await
        .expect("claim")
        .expect("due");
    assert_eq!(again.attempts, 2);
}

async fn release_gives_the_job_back_without_spending_an_attempt(db: Db) {
    db.enqueue(&job(1, "scan", 0)).await.expect("enqueue");
    let j = db
        .claim_job("scan", "a", 1_000, 60_000)
        .await
        .expect("claim")
        .expect("job");
    assert!(db.release_job(&j.id, "a", 1_001).await.expect("release"));
    let again = db
        .claim_job("scan", "b", 1_002, 60_000)
        .await
        .expect("claim")
        .expect("released job");
    assert_eq!(again.attempts, 1);
    assert!(
        !db.release_job(&j.id, "a", 1_003).await.expect("release"),
        "a no longer holds it"
    );
}

async fn oldest_due_job_first_and_kinds_stay_apart(db: Db) {
    db.enqueue(&job(1, "scan", 500)).await.expect("enqueue");
    db.enqueue(&job(2, "scan", 100)).await.expect("enqueue");
    db.enqueue(&job(3, "scan", 5_000)).await.expect("enqueue");
    db.enqueue(&job(4, "webhook", 0)).await.expect("enqueue");
    let order: Vec<String> = {
        let mut v = Vec::new();
        while let Some(j) = db
            .claim_job("scan", "a", 1_000, 60_000)
            .await
            .expect("claim")
        {
            v.push(j.id);
        }
        v
    };
    assert_eq!(order, ["job_00002", "job_00001"], "due jobs by run_after");
    let w = db
        .claim_job("webhook", "a", 1_000, 60_000)
        .await
        .expect("claim")
        .expect("webhook job");
    assert_eq!(w.id, "job_00004");
    let later = db
        .claim_job("scan", "a", 5_000, 60_000)
        .await
        .expect("claim")
        .expect("due now");
    assert_eq!(later.id, "job_00003");
}

async fn migrations_are_idempotent(db: Db) {
    db.migrate().await.expect("second run is a no-op");
    db.enqueue(&job(1, "scan", 0)).await.expect("schema usable");
}

/// Enqueueing on Postgres sends `NOTIFY brainscan_jobs`, which other processes listen to.
#[tokio::test]
async fn postgres_enqueue_notifies_listeners() {
    let (db, _guard) = open_postgres().await;
    let pg = match &_guard {
        Guard::Postgres(pg) => pg.url.clone(),
        Guard::Sqlite(_) => unreachable!(),
    };
    let mut listener = sqlx::postgres::PgListener::connect(&pg)
        .await
        .expect("listen");
    listener
        .listen(brainscan::store::JOBS_CHANNEL)
        .await
        .expect("listen");
    db.enqueue(&job(7, "scan", 0)).await.expect("enqueue");
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), listener.recv())
        .await
        .expect("a notification within 10 s")
        .expect("notification");
    assert_eq!(n.channel(), brainscan::store::JOBS_CHANNEL);
    assert_eq!(n.payload(), "scan");
}
