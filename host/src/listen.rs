//! Cross-process wake-ups over PostgreSQL `LISTEN/NOTIFY`.
//!
//! Every process on a Postgres database holds one extra connection that listens on two
//! channels: `brainscan_jobs` (a job was queued or released: wake the idle workers of this
//! process) and `brainscan_plugins` (a slot changed: reload the plugin set now instead of at
//! the next poll). Notifications are an accelerator only. A lost connection or a missed
//! message costs latency, never correctness, because workers still poll the queue and the
//! plugin set is still re-read on a timer and before every scan. After a reconnect this task
//! wakes and refreshes once, to cover what it may have missed.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::app::App;
use crate::store::{Backend, JOBS_CHANNEL, PLUGINS_CHANNEL};

/// Starts the listener when the database is PostgreSQL; SQLite is single-machine and wakes
/// workers in-process.
pub fn spawn(app: &Arc<App>, cancel: &CancellationToken, tracker: &TaskTracker) {
    if app.db.backend != Backend::Postgres {
        return;
    }
    tracker.spawn(run(app.clone(), cancel.clone()));
}

async fn connect(url: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect(url).await?;
    listener.listen_all([JOBS_CHANNEL, PLUGINS_CHANNEL]).await?;
    Ok(listener)
}

async fn run(app: Arc<App>, cancel: CancellationToken) {
    let mut backoff = Duration::from_millis(250);
    loop {
        let listener = tokio::select! {
            () = cancel.cancelled() => return,
            l = connect(app.db.url()) => l,
        };
        let mut listener = match listener {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "LISTEN connection failed; polling meanwhile");
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        backoff = Duration::from_millis(250);
        tracing::debug!("listening for job and plugin notifications");
        // Anything sent while this process was not listening is covered by one catch-up.
        on_jobs(&app);
        on_plugins(&app).await;
        loop {
            let next = tokio::select! {
                () = cancel.cancelled() => return,
                n = listener.try_recv() => n,
            };
            match next {
                Ok(Some(n)) => {
                    metrics::counter!("brainscan_notifications_total", "channel" => n.channel().to_owned()).increment(1);
                    match n.channel() {
                        JOBS_CHANNEL => on_jobs(&app),
                        PLUGINS_CHANNEL => on_plugins(&app).await,
                        _ => {}
                    }
                }
                // The connection dropped; messages may have been lost. Reconnect, catch up.
                Ok(None) => {
                    tracing::warn!("LISTEN connection lost; reconnecting");
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "LISTEN connection failed; reconnecting");
                    break;
                }
            }
        }
    }
}

fn on_jobs(app: &App) {
    app.wake.notify_waiters();
}

async fn on_plugins(app: &App) {
    if let Some(registry) = &app.plugins
        && let Err(e) = registry.refresh().await
    {
        tracing::warn!("plugin registry refresh failed; keeping the loaded set: {e}");
    }
}
