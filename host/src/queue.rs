//! The durable job queue's runner: workers that claim jobs with a lease, heartbeat it, retry
//! transient failures with backoff, and give their job back at shutdown.
//!
//! Modelled on crates.io's worker: jobs have a kind and a JSON payload, handlers are
//! idempotent, a panic is a failure like any other. Jobs are rows in the database (see
//! `store::jobs`), so a killed process loses nothing: its leases run out and another worker
//! (or the same process after a restart) takes the jobs over.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::analyzer::StageError;
use crate::app::App;
use crate::jobs::{SCAN_JOB, ScanJob, WEBHOOK_JOB};
use crate::pipeline;
use crate::store::jobs::ClaimedJob;
use crate::webhooks;

/// Starts `count` scan workers and the webhook workers (`webhook_workers`) on `tracker`.
pub fn spawn_workers(
    app: &Arc<App>,
    count: usize,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) {
    let process = crate::ids::token(6);
    for i in 0..count {
        let worker = format!("{process}-scan-{i}");
        tracker.spawn(worker_loop(app.clone(), SCAN_JOB, worker, cancel.clone()));
    }
    if count > 0 {
        for i in 0..app.config.webhook.webhook_workers.max(1) {
            tracker.spawn(worker_loop(
                app.clone(),
                WEBHOOK_JOB,
                format!("{process}-webhook-{i}"),
                cancel.clone(),
            ));
        }
    }
}

async fn worker_loop(app: Arc<App>, kind: &'static str, worker: String, cancel: CancellationToken) {
    let lease_ms = app.config.queue.lease_ms as i64;
    // Per organisation: scans up to the configured cap, one webhook delivery at a time.
    let per_org = if kind == WEBHOOK_JOB {
        1
    } else {
        app.config.queue.org_running_scans
    };
    let poll = Duration::from_millis(app.config.queue.poll_ms);
    tracing::info!(worker, kind, "worker started");
    while !cancel.is_cancelled() {
        let claimed = app
            .db
            .claim_job_fair(kind, &worker, app.clock.now_ms(), lease_ms, per_org)
            .await;
        match claimed {
            Ok(Some(job)) => run_job(&app, &worker, job, &cancel).await,
            Ok(None) => {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = app.wake.notified() => {}
                    () = tokio::time::sleep(poll) => {}
                }
            }
            Err(e) => {
                tracing::error!(worker, error = %e, "claiming a job failed");
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = tokio::time::sleep(poll * 4) => {}
                }
            }
        }
    }
    tracing::info!(worker, kind, "worker stopped");
}

/// Backoff before attempt `attempts + 1`: base · 2^(attempts−1), capped at one hour.
pub fn backoff_ms(base_ms: u64, attempts: i64) -> i64 {
    let exp = attempts.clamp(1, 20) as u32 - 1;
    (base_ms.saturating_mul(1u64 << exp)).min(3_600_000) as i64
}

async fn handle(app: &Arc<App>, job: &ClaimedJob) -> Result<(), StageError> {
    match job.kind.as_str() {
        SCAN_JOB => {
            let payload: ScanJob = serde_json::from_str(&job.payload)
                .map_err(|e| StageError::permanent("internal_error", e.to_string()))?;
            pipeline::run_scan(app, &payload.scan_id).await
        }
        WEBHOOK_JOB => webhooks::deliver(app, job).await,
        other => Err(StageError::permanent(
            "internal_error",
            format!("unknown job kind {other}"),
        )),
    }
}

/// What a job's failure means for what the job was about.
async fn on_final_failure(app: &Arc<App>, job: &ClaimedJob, error: &StageError) {
    if job.kind == SCAN_JOB
        && let Ok(payload) = serde_json::from_str::<ScanJob>(&job.payload)
    {
        pipeline::fail(app, &payload.scan_id, error).await;
        metrics::counter!("brainscan_scans_failed_total", "code" => error.code).increment(1);
    }
}

async fn run_job(app: &Arc<App>, worker: &str, job: ClaimedJob, cancel: &CancellationToken) {
    let span =
        tracing::info_span!("job", job.id = %job.id, job.kind = %job.kind, attempt = job.attempts);
    run_job_in_span(app, worker, job, cancel)
        .instrument(span)
        .await;
}

async fn run_job_in_span(
    app: &Arc<App>,
    worker: &str,
    job: ClaimedJob,
    cancel: &CancellationToken,
) {
    let now = || app.clock.now_ms();
    let lease_ms = app.config.queue.lease_ms as i64;

    if job.attempts > job.max_attempts {
        // Claimed again after its worker vanished too often: stop the crash loop.
        let error = StageError::permanent(
            "worker_lost",
            format!(
                "the job was interrupted {} times without finishing",
                job.attempts - 1
            ),
        );
        let _ = app
            .db
            .finish_job(&job.id, worker, Some(&error.scan_error()), now())
            .await;
        on_final_failure(app, &job, &error).await;
        return;
    }

    let started = Instant::now();
    // A scan job stops early when its scan is cancelled (checked at each heartbeat).
    let cancellable = (job.kind == SCAN_JOB)
        .then(|| {
            serde_json::from_str::<ScanJob>(&job.payload)
                .ok()
                .map(|p| p.scan_id)
        })
        .flatten();
    let work = AssertUnwindSafe(handle(app, &job)).catch_unwind();
    tokio::pin!(work);
    let mut heartbeat = tokio::time::interval(Duration::from_millis(app.config.queue.heartbeat_ms));
    heartbeat.tick().await;
    let grace = Duration::from_secs(app.config.queue.shutdown_grace_secs);
    let mut shutdown_deadline: Option<tokio::time::Instant> = None;

    let outcome = loop {
        let deadline = async {
            match shutdown_deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = &mut work => break Some(result),
            _ = heartbeat.tick() => {
                match app.db.heartbeat_job(&job.id, worker, now(), lease_ms).await {
                    Ok(true) => {
                        if let Some(scan_id) = &cancellable
                            && app.db.get_scan_by_id(scan_id).await.is_ok_and(|row| row.status == "cancelled")
                        {
                            // Dropping `work` stops the download or decoder at once.
                            tracing::info!(scan.id = %scan_id, "scan cancelled; stopping its job");
                            let _ = app.db.finish_job(&job.id, worker, None, now()).await;
                            return;
                        }
                    }
                    Ok(false) => {
                        tracing::warn!("lease lost; abandoning the job to its new owner");
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
                }
            }
            () = cancel.cancelled(), if shutdown_deadline.is_none() => {
                tracing::info!(grace_secs = grace.as_secs(), "shutdown: finishing the current job");
                shutdown_deadline = Some(tokio::time::Instant::now() + grace);
            }
            () = deadline => break None,
        }
    };

    let Some(result) = outcome else {
        // Dropping `work` kills its child processes and deletes its temp files.
        match app.db.release_job(&job.id, worker, now()).await {
            Ok(_) => tracing::info!("shutdown: job released for another worker"),
            Err(e) => {
                tracing::error!(error = %e, "could not release the job; its lease will expire")
            }
        }
        return;
    };
    let result = result.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        tracing::error!(panic = %what, "job panicked");
        Err(StageError {
            code: "internal_error",
            message: "the worker failed unexpectedly".into(),
            transient: true,
        })
    });
    metrics::histogram!("brainscan_job_duration_seconds", "kind" => job.kind.clone())
        .record(started.elapsed().as_secs_f64());
    match result {
        Ok(()) => {
            let _ = app.db.finish_job(&job.id, worker, None, now()).await;
        }
        Err(error) if error.transient && job.attempts < job.max_attempts => {
            let base = if job.kind == WEBHOOK_JOB {
                app.config.webhook.webhook_retry_base_ms
            } else {
                app.config.queue.retry_base_ms
            };
            let delay = backoff_ms(base, job.attempts);
            tracing::warn!(error = %error.scan_error(), retry_in_ms = delay, "job failed; will retry");
            let _ = app
                .db
                .retry_job(&job.id, worker, now() + delay, &error.scan_error(), now())
                .await;
        }
        Err(error) => {
            tracing::warn!(error = %error.scan_error(), "job failed for good");
            let _ = app
                .db
                .finish_job(&job.id, worker, Some(&error.scan_error()), now())
                .await;
            on_final_failure(app, &job, &error).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::backoff_ms;

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff_ms(1000, 1), 1000);
        assert_eq!(backoff_ms(1000, 2), 2000);
        assert_eq!(backoff_ms(1000, 4), 8000);
        assert_eq!(backoff_ms(1000, 40), 3_600_000);
    }
}
