//! How many submit-time probes run at once, in total and per organisation.
//!
//! A probe downloads the start (and maybe the end) of a clip and runs ffprobe on it, within the
//! probe time budget. Without a bound, one organisation submitting in a burst could keep the
//! API busy fetching from a slow host. A submission that finds no free slot is not refused:
//! it is accepted unprobed, as one whose host is too slow to answer in the budget already is,
//! and the worker checks the whole file (funds were checked first either way).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The counters; cheap to share.
#[derive(Debug)]
pub struct ProbeSlots {
    total: usize,
    per_org: usize,
    running: Mutex<(usize, HashMap<String, usize>)>,
}

/// A taken slot; dropping it frees the slot.
#[derive(Debug)]
pub struct ProbeSlot {
    slots: Arc<ProbeSlots>,
    org: String,
}

impl ProbeSlots {
    #[must_use]
    pub fn new(total: usize, per_org: usize) -> Arc<Self> {
        Arc::new(Self {
            total: total.max(1),
            per_org: per_org.max(1),
            running: Mutex::new((0, HashMap::new())),
        })
    }

    /// A slot for `org`, or `None` when the total or the organisation's share is taken.
    #[must_use]
    pub fn try_take(self: &Arc<Self>, org: &str) -> Option<ProbeSlot> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let (total, by_org) = &mut *running;
        let mine = by_org.get(org).copied().unwrap_or(0);
        if *total >= self.total || mine >= self.per_org {
            return None;
        }
        *total += 1;
        by_org.insert(org.to_owned(), mine + 1);
        Some(ProbeSlot {
            slots: self.clone(),
            org: org.to_owned(),
        })
    }
}

impl Drop for ProbeSlot {
    fn drop(&mut self) {
        let mut running = self
            .slots
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (total, by_org) = &mut *running;
        *total = total.saturating_sub(1);
        if let Some(n) = by_org.get_mut(&self.org) {
            *n -= 1;
            if *n == 0 {
                by_org.remove(&self.org);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_in_total_and_per_organisation_and_freed_on_drop() {
        let slots = ProbeSlots::new(3, 2);
        let a1 = slots.try_take("a").expect("a 1");
        let a2 = slots.try_take("a").expect("a 2");
        assert!(slots.try_take("a").is_none(), "a's share is 2");
        let b1 = slots.try_take("b").expect("b 1");
        assert!(slots.try_take("c").is_none(), "3 in total");
        drop(a1);
        let c1 = slots.try_take("c").expect("a freed one");
        drop((a2, b1, c1));
        let running = slots.running.lock().expect("lock");
        assert_eq!((running.0, running.1.len()), (0, 0), "nothing left behind");
    }
}
