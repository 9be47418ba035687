//! Webhooks: the completed scan POSTed to the client's `webhook_url`, signed per the Standard
//! Webhooks scheme, delivered by durable jobs with retries and backoff.
//!
//! Headers: `webhook-id` (stable across retries of one delivery, for de-duplication),
//! `webhook-timestamp` (Unix seconds), `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "{id}.{timestamp}.{body}">` keyed with the organisation's secret (`whsec_<base64 key>`,
//! shown by `brainscan admin org show`). Any 2xx answer is a delivery; anything else is retried
//! up to the configured attempts. Delivery never touches billing.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::analyzer::StageError;
use crate::app::App;
use crate::ids;
use crate::jobs::{WEBHOOK_JOB, WebhookJob};
use crate::store::StoreResult;
use crate::store::jobs::{ClaimedJob, NewJob};
use crate::store::webhooks::DeliveryAttempt;

/// A new organisation webhook secret: `whsec_` + base64 of 32 random bytes.
pub fn new_secret() -> String {
    let key: [u8; 32] = rand::random();
    format!("whsec_{}", B64.encode(key))
}

/// The `webhook-signature` value for one message.
///
/// # Errors
/// When the secret is not of the `whsec_<base64>` form.
pub fn sign(secret: &str, message_id: &str, timestamp: i64, body: &[u8]) -> Result<String, String> {
    let key = B64
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .map_err(|e| format!("bad webhook secret: {e}"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|e| e.to_string())?;
    mac.update(message_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!("v1,{}", B64.encode(mac.finalize().into_bytes())))
}

/// Queues the delivery of a completed scan.
pub async fn enqueue(app: &App, scan_id: &str, org_id: &str, url: &str) -> StoreResult<()> {
    let now = app.clock.now_ms();
    let payload = WebhookJob {
        scan_id: scan_id.to_owned(),
        org_id: org_id.to_owned(),
        url: url.to_owned(),
        message_id: ids::new_message_id(),
    };
    app.db
        .enqueue(&NewJob {
            id: ids::new_job_id(),
            kind: WEBHOOK_JOB.to_owned(),
            org_id: Some(org_id.to_owned()),
            payload: serde_json::to_string(&payload)?,
            max_attempts: app.config.webhook.webhook_max_attempts,
            run_after: now,
            created_at: now,
        })
        .await?;
    app.wake.notify_waiters();
    Ok(())
}

/// One delivery attempt (the job runner retries transient failures).
///
/// # Errors
/// A transient error for any answer other than 2xx, permanent when the URL is refused.
pub async fn deliver(app: &Arc<App>, job: &ClaimedJob) -> Result<(), StageError> {
    let internal = |m: String| StageError {
        code: "internal_error",
        message: m,
        transient: true,
    };
    let payload: WebhookJob = serde_json::from_str(&job.payload)
        .map_err(|e| StageError::permanent("internal_error", e.to_string()))?;
    let org = app
        .db
        .find_org(&payload.org_id)
        .await
        .map_err(|e| internal(e.to_string()))?;
    let row = app
        .db
        .get_scan(&payload.org_id, &payload.scan_id)
        .await
        .map_err(|e| internal(e.to_string()))?;
    let mut view = crate::api::views::scan_view(&row).map_err(|e| internal(e.to_string()))?;
    // No request here: the link needs the configured public URL (or S3), else it is null.
    let base = crate::api::views::public_base(app, None);
    crate::api::views::sign_artifact_urls(app, &mut view, base.as_deref()).await;
    let body = serde_json::to_vec(&view).map_err(|e| internal(e.to_string()))?;
    let timestamp = app.clock.now().timestamp();
    let signature =
        sign(&org.webhook_secret, &payload.message_id, timestamp, &body).map_err(internal)?;
    let url = url::Url::parse(&payload.url)
        .map_err(|e| StageError::permanent("webhook_refused", e.to_string()))?;
    let headers = [
        ("webhook-id", payload.message_id.clone()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signature),
    ];
    let outcome = app
        .fetcher
        .post_json(
            &url,
            &headers,
            body,
            Duration::from_secs(app.config.webhook.webhook_timeout_secs),
        )
        .await;
    let (status_code, error) = match &outcome {
        Ok(code) => (Some(i64::from(*code)), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let record = DeliveryAttempt {
        id: format!("whd_{}", ids::token(20)),
        scan_id: payload.scan_id.clone(),
        org_id: payload.org_id.clone(),
        message_id: payload.message_id.clone(),
        // The record (read by operators, printed by the CLI) keeps no query: it can hold the
        // receiver's token. The job keeps the whole URL to deliver to.
        url: url::Url::parse(&payload.url).map_or_else(
            |_| payload.url.clone(),
            |u| crate::media::fetch::without_query(&u),
        ),
        attempt: job.attempts,
        status_code,
        error,
        created_at: app.clock.now_ms(),
    };
    if let Err(e) = app.db.record_delivery(&record).await {
        tracing::warn!(error = %e, "could not record a webhook delivery attempt");
    }
    match outcome {
        Ok(code) if (200..300).contains(&code) => {
            metrics::counter!("brainscan_webhook_deliveries_total", "outcome" => "delivered")
                .increment(1);
            // The body is the whole result, and the receiver has accepted it: an unfetched
            // scan is charged now (once, whichever route releases it first; see
            // crate::charge). Attempts that were refused or failed charged nothing. If the
            // charge cannot be written, the delivery is retried under the same webhook-id,
            // which receivers de-duplicate.
            if row.status == "complete" && row.charged_at.is_none() {
                crate::charge::on_release(
                    &app.db,
                    &payload.org_id,
                    &payload.scan_id,
                    app.clock.now(),
                    "webhook",
                )
                .await
                .map_err(|e| internal(e.to_string()))?;
            }
            Ok(())
        }
        Ok(code) => {
            metrics::counter!("brainscan_webhook_deliveries_total", "outcome" => "rejected")
                .increment(1);
            Err(StageError {
                code: "webhook_rejected",
                message: format!("the receiver answered HTTP {code}"),
                transient: true,
            })
        }
        Err(e) => {
            metrics::counter!("brainscan_webhook_deliveries_total", "outcome" => "failed")
                .increment(1);
            Err(StageError {
                code: if e.code() == "url_not_allowed" {
                    "webhook_refused"
                } else {
                    "webhook_failed"
                },
                transient: e.code() != "url_not_allowed",
                message: e.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_standard_webhooks_reference() {
        // Test vector from the Standard Webhooks specification's reference libraries.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let sig = sign(
            secret,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        )
        .expect("valid secret");
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
