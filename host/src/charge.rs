//! When a scan is charged: at the first moment its completed result leaves the service, by
//! any route — `GET /scans/{id}`, a webhook delivery the receiver accepted (2xx), `GET /compare`
//! or `POST /analyze` once it has succeeded. Each route calls
//! [`on_release`] as the result goes out (a webhook once the receiver has accepted it, the
//! analysis block once it has been computed); `Db::settle_scan` claims the scan, so of any
//! number of racing routes exactly one charges. The list shows a completed scan's summary only
//! once it is charged, so no route reads a result for free.

use chrono::{DateTime, Utc};

use crate::store::{Db, StoreResult};

/// Charges `scan_id` if it is complete and not yet charged; `true` when this call charged it.
///
/// # Errors
/// Database errors: the caller must not release the result then (it was not charged).
pub async fn on_release(
    db: &Db,
    org_id: &str,
    scan_id: &str,
    now: DateTime<Utc>,
    route: &'static str,
) -> StoreResult<bool> {
    let charged = db
        .settle_scan(
            org_id,
            scan_id,
            &crate::billing::period_of(now),
            now.timestamp_millis(),
        )
        .await?;
    if charged {
        metrics::counter!("brainscan_scans_charged_total", "route" => route).increment(1);
        tracing::info!(scan.id = %scan_id, route, "charge settled");
    }
    Ok(charged)
}
