//! Limits on repeated failed authentication: per client address for the admin API, and per
//! address and per email for console sign-in (a guesser spread over many addresses still
//! meets the per-email count).
//!
//! - **Counted before the work.** A sign-in attempt is [`Lockout::reserve`]d before its password
//!   is hashed: it counts as a failure at once, and a success clears the count afterwards. So a
//!   burst of parallel guesses sees every earlier guess of the burst, and at most
//!   [`MAX_FAILURES`] are ever checked in a window; the right password inside a burst is
//!   refused like the rest. At most [`MAX_IN_FLIGHT`] attempts per key are being checked at
//!   once.
//! - **Two rules past the count.** [`Past::Lock`] refuses the key until the window has passed
//!   (the admin token and a sign-in's client address). [`Past::GrowingDelay`] lets one attempt
//!   through per delay, doubling from 1 s to [`MAX_DELAY`] with every further failure (a
//!   sign-in's email: a guesser locking an email would lock its owner out too, from every
//!   address; a delay only slows the owner down, and an owner who waits signs in).
//! - **Who a key is.** A client address is [`address_key`]: an IPv6 client by its /64 (one
//!   subscriber's allocation: 2⁶⁴ addresses would otherwise be 2⁶⁴ fresh counts).
//! - **Bounded memory.** At most [`MAX_TRACKED`] keys are remembered; past that, entries whose
//!   window and delay are over go first, then the oldest (by last attempt), so a flood from many
//!   addresses forgets the least recent guesser rather than everyone at once.
//!
//! The admin token is at least 32 characters, beyond guessing; its lockout keeps a guesser from
//! even trying at speed, and from filling the logs. A locked-out guesser learns nothing: the
//! secret is not compared.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const MAX_FAILURES: u32 = 5;
pub const WINDOW: Duration = Duration::from_secs(60);
/// Attempts per key being checked at once.
pub const MAX_IN_FLIGHT: u32 = 2;
/// The longest delay [`Past::GrowingDelay`] reaches.
pub const MAX_DELAY: Duration = Duration::from_secs(300);
const MAX_TRACKED: usize = 10_000;

/// What happens to a key past [`MAX_FAILURES`] failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Past {
    /// Refused until [`WINDOW`] has passed since its first failure.
    Lock,
    /// One attempt per delay: 1 s after the fifth failure, doubling with each further one, up
    /// to [`MAX_DELAY`]; forgotten after a quiet [`WINDOW`] past the delay.
    GrowingDelay,
}

/// The key of a client address: IPv4 (and IPv4-mapped IPv6) as it is, IPv6 by its /64.
#[must_use]
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    /// The first failure of the current window.
    since: Instant,
    /// The last attempt (for delays and eviction).
    last: Instant,
    in_flight: u32,
}

impl Entry {
    fn delay(&self) -> Duration {
        let over = self.failures.saturating_sub(MAX_FAILURES).min(16);
        Duration::from_secs(1u64 << over).min(MAX_DELAY)
    }

    /// Whether the entry's count is over (a new window starts at the next attempt).
    fn expired(&self, now: Instant, past: Past) -> bool {
        match past {
            Past::Lock => now.saturating_duration_since(self.since) >= WINDOW,
            Past::GrowingDelay => {
                let quiet = if self.failures >= MAX_FAILURES {
                    self.delay() + WINDOW
                } else {
                    WINDOW
                };
                now.saturating_duration_since(self.since) >= WINDOW
                    && now.saturating_duration_since(self.last) >= quiet
            }
        }
    }

    /// How long the key must still wait, if it must.
    fn wait(&self, now: Instant, past: Past) -> Option<Duration> {
        if self.failures < MAX_FAILURES || self.expired(now, past) {
            return None;
        }
        let left = match past {
            Past::Lock => WINDOW.checked_sub(now.saturating_duration_since(self.since))?,
            Past::GrowingDelay => self
                .delay()
                .checked_sub(now.saturating_duration_since(self.last))?,
        };
        (!left.is_zero()).then_some(left)
    }
}

/// Failures per key (a client address unless said otherwise).
#[derive(Debug)]
pub struct Lockout<K = IpAddr> {
    failures: Mutex<HashMap<K, Entry>>,
}

impl<K> Default for Lockout<K> {
    fn default() -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
        }
    }
}

/// An attempt counted by [`Lockout::reserve`]: a failure unless [`Self::succeeded`] or
/// [`Self::cancel`] says otherwise. It stops being in flight when dropped.
#[derive(Debug)]
pub struct Reservation<'a, K: Hash + Eq + Clone> {
    lockout: &'a Lockout<K>,
    key: K,
}

impl<K: Hash + Eq + Clone> Reservation<'_, K> {
    /// The attempt succeeded: the key's failures are cleared.
    pub fn succeeded(self) {
        self.lockout.lock().remove(&self.key);
    }

    /// The attempt was never checked (another limit refused it first): it does not count.
    pub fn cancel(self) {
        if let Some(e) = self.lockout.lock().get_mut(&self.key) {
            e.failures = e.failures.saturating_sub(1);
        }
    }
}

impl<K: Hash + Eq + Clone> Drop for Reservation<'_, K> {
    fn drop(&mut self) {
        if let Some(e) = self.lockout.lock().get_mut(&self.key) {
            e.in_flight = e.in_flight.saturating_sub(1);
        }
    }
}

impl<K: Hash + Eq + Clone> Lockout<K> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Entry>> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How long `key` is still locked out under [`Past::Lock`], if it is.
    pub fn locked_out(&self, key: K, now: Instant) -> Option<Duration> {
        self.lock().get(&key)?.wait(now, Past::Lock)
    }

    /// Records a failed attempt by `key` (for checks with nothing to wait for between the
    /// look and the record, such as the admin token's comparison).
    pub fn failed(&self, key: K, now: Instant) {
        let mut map = self.lock();
        let entry = Self::entry(&mut map, key, now, Past::Lock);
        entry.failures += 1;
        entry.last = now;
    }

    /// A successful attempt clears the key's failures.
    pub fn succeeded(&self, key: K) {
        self.lock().remove(&key);
    }

    /// Counts an attempt by `key` as a failure before it is checked, or says how long to wait
    /// when the key is past its count (`rule`) or has [`MAX_IN_FLIGHT`] attempts being checked.
    ///
    /// # Errors
    /// The time to wait before the next attempt.
    pub fn reserve(
        &self,
        key: K,
        now: Instant,
        rule: Past,
    ) -> Result<Reservation<'_, K>, Duration> {
        let mut map = self.lock();
        let entry = Self::entry(&mut map, key.clone(), now, rule);
        if let Some(wait) = entry.wait(now, rule) {
            return Err(wait);
        }
        if entry.in_flight >= MAX_IN_FLIGHT {
            return Err(Duration::from_secs(1));
        }
        entry.failures += 1;
        entry.last = now;
        entry.in_flight += 1;
        drop(map);
        Ok(Reservation { lockout: self, key })
    }

    /// The key's entry, a fresh one when its count is over; the table is kept under
    /// [`MAX_TRACKED`] first.
    fn entry(map: &mut HashMap<K, Entry>, key: K, now: Instant, rule: Past) -> &mut Entry {
        if map.len() >= MAX_TRACKED && !map.contains_key(&key) {
            map.retain(|_, e| e.in_flight > 0 || !e.expired(now, rule));
            if map.len() >= MAX_TRACKED
                && let Some(oldest) = map
                    .iter()
                    .filter(|(_, e)| e.in_flight == 0)
                    .min_by_key(|(_, e)| e.last)
                    .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        let fresh = Entry {
            failures: 0,
            since: now,
            last: now,
            in_flight: 0,
        };
        let entry = map.entry(key).or_insert(fresh);
        if entry.expired(now, rule) {
            *entry = Entry {
                in_flight: entry.in_flight,
                ..fresh
            };
        }
        entry
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
        assert!(lockout.lock().get(&b).is_none());
    }

    /// The burst finding of security round 4: the attempt is counted before it is checked, so
    /// thirty parallel attempts see each other, and at most five are checked.
    #[test]
    fn a_burst_is_counted_before_any_attempt_is_checked() {
        let lockout: Lockout<String> = Lockout::default();
        let t0 = Instant::now();
        let mut held = Vec::new();
        let mut refused = 0;
        for _ in 0..30 {
            match lockout.reserve("ada@example.com".into(), t0, Past::Lock) {
                // Each reservation is released at once (a slow hash would hold it longer).
                Ok(r) => held.push(r),
                Err(_) => refused += 1,
            }
            held.clear();
        }
        assert_eq!(refused, 25);
        // In flight: two at once, a third waits.
        let lockout: Lockout<String> = Lockout::default();
        let one = lockout.reserve("k".into(), t0, Past::Lock).expect("first");
        let _two = lockout.reserve("k".into(), t0, Past::Lock).expect("second");
        assert!(lockout.reserve("k".into(), t0, Past::Lock).is_err());
        drop(one);
        let three = lockout
            .reserve("k".into(), t0, Past::Lock)
            .expect("room again");
        // A success clears; a cancelled attempt does not count.
        three.succeeded();
        assert!(lockout.lock().get("k").is_none());
        let c = lockout.reserve("c".into(), t0, Past::Lock).expect("c");
        c.cancel();
        assert_eq!(lockout.lock().get("c").map(|e| e.failures), Some(0));
    }

    /// Past five failures an email waits a growing delay instead of a lock: its owner, from
    /// another address, signs in after waiting.
    #[test]
    fn an_email_past_its_count_waits_a_doubling_delay() {
        let lockout: Lockout<String> = Lockout::default();
        let t0 = Instant::now();
        for _ in 0..MAX_FAILURES {
            drop(
                lockout
                    .reserve("e".into(), t0, Past::GrowingDelay)
                    .expect("counted"),
            );
        }
        let wait = lockout
            .reserve("e".into(), t0, Past::GrowingDelay)
            .expect_err("inside the delay");
        assert_eq!(wait, Duration::from_secs(1));
        let t1 = t0 + Duration::from_secs(1);
        drop(
            lockout
                .reserve("e".into(), t1, Past::GrowingDelay)
                .expect("after 1 s"),
        );
        assert_eq!(
            lockout
                .reserve("e".into(), t1, Past::GrowingDelay)
                .expect_err("doubled"),
            Duration::from_secs(2)
        );
        let t2 = t1 + Duration::from_secs(2);
        lockout
            .reserve("e".into(), t2, Past::GrowingDelay)
            .expect("after 2 s")
            .succeeded();
        assert!(lockout.reserve("e".into(), t2, Past::GrowingDelay).is_ok());
        // The delay stops at its cap.
        let e = Entry {
            failures: 60,
            since: t0,
            last: t0,
            in_flight: 0,
        };
        assert_eq!(e.delay(), MAX_DELAY);
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().expect("ip");
        let b: IpAddr = "2001:db8:1:2:ffff:ffff:ffff:ffff".parse().expect("ip");
        let c: IpAddr = "2001:db8:1:3::1".parse().expect("ip");
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().expect("ip");
        assert_eq!(
            address_key(mapped),
            "192.0.2.7".parse::<IpAddr>().expect("ip")
        );
    }

    #[test]
    fn the_table_stays_bounded_and_forgets_the_oldest_first() {
        let lockout = Lockout::default();
        let t0 = Instant::now();
        let first = IpAddr::from(0u32.to_be_bytes());
        for _ in 0..MAX_FAILURES {
            lockout.failed(first, t0);
        }
        for i in 1..(MAX_TRACKED as u32 + 10) {
            lockout.failed(
                IpAddr::from(i.to_be_bytes()),
                t0 + Duration::from_millis(u64::from(i)),
            );
        }
        let map = lockout.lock();
        assert!(map.len() <= MAX_TRACKED);
        assert!(!map.contains_key(&first), "the oldest went first");
        assert!(
            map.contains_key(&IpAddr::from((MAX_TRACKED as u32).to_be_bytes())),
            "recent guessers are remembered"
        );
    }
}
