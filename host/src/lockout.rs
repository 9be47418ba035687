//! Lockout after repeated failed authentication: per client address for the admin API, and
//! per address and per email for console sign-in (a guesser spread over many addresses still
//! meets the per-email count).
//!
//! The admin token is at least 32 characters, beyond guessing; the lockout keeps a guesser
//! from even trying at speed, and from filling the logs. After [`MAX_FAILURES`] failures
//! within [`WINDOW`], attempts from that address are refused (429) *without* the token being
//! compared until the window has passed, so a locked-out guesser learns nothing. A correct
//! token from another address is unaffected. Memory is bounded: at most [`MAX_TRACKED`]
//! addresses are remembered; past that, expired entries go first, then everything (a flood
//! from many addresses resets the table rather than growing it).

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const MAX_FAILURES: u32 = 5;
pub const WINDOW: Duration = Duration::from_secs(60);
const MAX_TRACKED: usize = 10_000;

/// Failures per key (a client address unless said otherwise): (count, start of the window).
#[derive(Debug)]
pub struct Lockout<K = IpAddr> {
    failures: Mutex<HashMap<K, (u32, Instant)>>,
}

impl<K> Default for Lockout<K> {
    fn default() -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq> Lockout<K> {
    /// How long `key` is still locked out, if it is.
    pub fn locked_out(&self, key: K, now: Instant) -> Option<Duration> {
        let map = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (count, since) = *map.get(&key)?;
        let left = WINDOW.checked_sub(now.saturating_duration_since(since))?;
        (count >= MAX_FAILURES && !left.is_zero()).then_some(left)
    }

    /// Records a failed attempt by `key`.
    pub fn failed(&self, key: K, now: Instant) {
        let mut map = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.len() >= MAX_TRACKED && !map.contains_key(&key) {
            map.retain(|_, (_, since)| now.saturating_duration_since(*since) < WINDOW);
            if map.len() >= MAX_TRACKED {
                map.clear();
            }
        }
        let entry = map.entry(key).or_insert((0, now));
        if now.saturating_duration_since(entry.1) >= WINDOW {
            *entry = (0, now);
        }
        entry.0 += 1;
    }

    /// A successful attempt clears the key's failures.
    pub fn succeeded(&self, key: K) {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_lock_an_address_out_for_the_window_only() {
        let lockout = Lockout::default();
        let (a, b): (IpAddr, IpAddr) = (
            "192.0.2.1".parse().expect("ip"),
            "192.0.2.2".parse().expect("ip"),
        );
        let t0 = Instant::now();
        for _ in 0..MAX_FAILURES - 1 {
            lockout.failed(a, t0);
        }
        assert_eq!(lockout.locked_out(a, t0), None, "four failures are allowed");
        lockout.failed(a, t0);
        assert!(lockout.locked_out(a, t0 + Duration::from_secs(1)).is_some());
        assert_eq!(
            lockout.locked_out(b, t0),
            None,
            "other addresses are unaffected"
        );
        assert_eq!(
            lockout.locked_out(a, t0 + WINDOW),
            None,
            "the window passes"
        );
        // A success clears the count.
        lockout.failed(b, t0);
        lockout.succeeded(b);
        assert!(lockout.failures.lock().expect("lock").get(&b).is_none());
    }

    #[test]
    fn the_table_stays_bounded() {
        let lockout = Lockout::default();
        let t0 = Instant::now();
        for i in 0..(MAX_TRACKED as u32 + 10) {
            lockout.failed(IpAddr::from(i.to_be_bytes()), t0);
        }
        assert!(lockout.failures.lock().expect("lock").len() <= MAX_TRACKED);
    }
}
