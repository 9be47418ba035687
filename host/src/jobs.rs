//! The durable queue's job kinds and their payloads: what a job *is*, apart from who runs it.
//!
//! A leaf module on purpose. The API enqueues scan jobs, the pipeline enqueues webhook jobs,
//! `/metrics` counts both kinds and the queue runner dispatches on them; with the kinds kept in
//! the runner (`queue`), each of those modules depended on the runner and the runner on them,
//! a cycle through `app`, `pipeline`, `queue`, `webhooks` and `api`. Here they depend on this
//! module alone, and `queue` is the only module that knows the handlers.

use serde::{Deserialize, Serialize};

/// The kind of a job that analyses one scan ([`ScanJob`]).
pub const SCAN_JOB: &str = "scan";
/// The kind of a job that delivers one completed scan to its `webhook_url` ([`WebhookJob`]).
pub const WEBHOOK_JOB: &str = "webhook";

/// Payload of a scan job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScanJob {
    pub scan_id: String,
}

/// Payload of a webhook job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WebhookJob {
    pub scan_id: String,
    pub org_id: String,
    pub url: String,
    /// Stable across retries of one delivery: the `webhook-id` header, for de-duplication.
    pub message_id: String,
}
