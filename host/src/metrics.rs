//! Prometheus metrics. Counters and histograms are recorded where things happen; gauges of
//! scans by state and queue depth are read from the database at scrape time, so every
//! process reports the truth of the shared store. Those reads are grouped counts over whole
//! tables, so they run at most once per [`GAUGE_REFRESH`] however often `/metrics` is
//! scraped (a scrape in between shows the last values).

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::store::Db;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide recorder once and returns its handle.
pub fn handle() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder was installed first (an embedding program);
            // then our metrics go there and this handle renders nothing.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// How often the database-backed gauges are re-read.
pub const GAUGE_REFRESH: Duration = Duration::from_secs(5);

/// When the gauges were last read; one scrape at a time claims a refresh.
static LAST_REFRESH: Mutex<Option<Instant>> = Mutex::new(None);

/// Whether a scrape at `now` should re-read the gauges, claiming the refresh if so: the first
/// scrape, and then one per `every`.
fn claim_refresh(last: &Mutex<Option<Instant>>, now: Instant, every: Duration) -> bool {
    let mut last = last
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if last.is_some_and(|t| now.saturating_duration_since(t) < every) {
        return false;
    }
    *last = Some(now);
    true
}

/// Renders the exposition text, refreshing the database-backed gauges when they are due.
pub async fn render(db: &Db) -> String {
    if claim_refresh(&LAST_REFRESH, Instant::now(), GAUGE_REFRESH) {
        refresh_gauges(db).await;
    }
    handle().render()
}

async fn refresh_gauges(db: &Db) {
    if let Ok(counts) = db.scan_counts().await {
        for status in crate::scan::ScanStatus::ALL {
            let n = counts
                .iter()
                .find(|(s, _)| s == status.as_str())
                .map_or(0, |c| c.1);
            metrics::gauge!("brainscan_scans", "status" => status.as_str()).set(n as f64);
        }
    }
    if let Ok(depth) = db.queue_depth().await {
        for kind in [crate::jobs::SCAN_JOB, crate::jobs::WEBHOOK_JOB] {
            for state in ["queued", "running"] {
                let n = depth
                    .iter()
                    .find(|(k, s, _)| k == kind && s == state)
                    .map_or(0, |d| d.2);
                metrics::gauge!("brainscan_queue_jobs", "kind" => kind, "state" => state)
                    .set(n as f64);
            }
        }
    }
}

/// Records how long one stage of a scan took (`brainscan_scan_stage_seconds{stage}`), so an
/// operator can see where a scan's time goes: `download`, `probe`, `analysis` (and inside it
/// `qualia`: decoding, features and for v2 the speech pass, which runs beside decoding and
/// is also shown alone as `speech`; `transcript` when it is a separate pass; `plugins`),
/// `render`, `embedding`, `commit`.
pub fn record_stage(stage: &'static str, elapsed: std::time::Duration) {
    metrics::histogram!("brainscan_scan_stage_seconds", "stage" => stage)
        .record(elapsed.as_secs_f64());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_are_reread_at_most_once_per_interval() {
        let last = Mutex::new(None);
        let t0 = Instant::now();
        let every = Duration::from_secs(5);
        assert!(claim_refresh(&last, t0, every), "the first scrape reads");
        for ms in [0, 10, 4_999] {
            assert!(!claim_refresh(&last, t0 + Duration::from_millis(ms), every));
        }
        assert!(claim_refresh(&last, t0 + every, every));
        assert!(!claim_refresh(&last, t0 + every, every));
    }
}
