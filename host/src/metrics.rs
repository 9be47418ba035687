//! Prometheus metrics. Counters and histograms are recorded where things happen; gauges of
//! scans by state and queue depth are read from the database at scrape time, so every
//! process reports the truth of the shared store.

use std::sync::OnceLock;

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

/// Renders the exposition text after refreshing the database-backed gauges.
pub async fn render(db: &Db) -> String {
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
        for kind in [crate::queue::SCAN_JOB, crate::queue::WEBHOOK_JOB] {
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
    handle().render()
}
