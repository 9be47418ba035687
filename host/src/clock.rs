//! Time as a dependency, so billing periods and leases can be tested across month ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Utc};

/// The source of "now" for everything that stores or compares times.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;

    /// Unix milliseconds, the unit every stored timestamp uses.
    fn now_ms(&self) -> i64 {
        self.now().timestamp_millis()
    }
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The wall clock shifted by an adjustable offset. Tests move it across month boundaries;
/// leases and timeouts keep working because time still advances.
#[derive(Debug, Default)]
pub struct ShiftedClock {
    offset_ms: AtomicI64,
}

impl ShiftedClock {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Makes `now()` return `target` (plus the real time that passes afterwards).
    pub fn set(&self, target: DateTime<Utc>) {
        let offset = target.timestamp_millis() - Utc::now().timestamp_millis();
        self.offset_ms.store(offset, Ordering::SeqCst);
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + chrono::Duration::milliseconds(self.offset_ms.load(Ordering::SeqCst))
    }
}

/// Converts stored Unix milliseconds to an RFC 3339 timestamp (UTC, millisecond precision).
pub fn iso8601(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
