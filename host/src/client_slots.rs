//! Slots held per client address: a cap on how many of a shared resource's permits one client
//! may hold at once (artifact downloads), so one client cannot take every slot of the service.
//!
//! The table holds only clients with a slot held, so it is bounded by the resource's own
//! permits. Addresses are keyed as [`crate::lockout::address_key`] keys them (IPv6 by /64).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Per-client counts of held slots, with a cap.
#[derive(Debug)]
pub struct ClientSlots {
    per_client: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

/// One held slot; released when dropped.
#[derive(Debug)]
pub struct ClientSlot {
    slots: Arc<ClientSlots>,
    key: IpAddr,
}

impl ClientSlots {
    #[must_use]
    pub fn new(per_client: usize) -> Arc<Self> {
        Arc::new(Self {
            per_client: per_client.max(1),
            held: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for `client`, or `None` when it already holds its cap.
    #[must_use]
    pub fn try_take(self: &Arc<Self>, client: IpAddr) -> Option<ClientSlot> {
        let key = crate::lockout::address_key(client);
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = held.entry(key).or_insert(0);
        if *n >= self.per_client {
            return None;
        }
        *n += 1;
        Some(ClientSlot {
            slots: self.clone(),
            key,
        })
    }

    /// Slots `client` holds now.
    #[must_use]
    pub fn held_by(&self, client: IpAddr) -> usize {
        let key = crate::lockout::address_key(client);
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut held = self
            .slots
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = held.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_holds_at_most_its_cap_and_the_table_empties() {
        let slots = ClientSlots::new(2);
        let a: IpAddr = "2001:db8::1".parse().expect("ip");
        let a_sibling: IpAddr = "2001:db8::ffff".parse().expect("ip");
        let b: IpAddr = "192.0.2.9".parse().expect("ip");
        let one = slots.try_take(a).expect("one");
        let two = slots.try_take(a_sibling).expect("two: the same /64");
        assert!(slots.try_take(a).is_none(), "the /64 holds its cap");
        assert!(slots.try_take(b).is_some(), "another client is unaffected");
        drop(one);
        assert_eq!(slots.held_by(a), 1);
        drop(two);
        assert!(slots.held.lock().expect("lock").is_empty());
    }
}
