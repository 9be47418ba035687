//! How many threads the CPU's matrix work may use: candle's Whisper and text encoders split
//! each product over rayon's global pool, sized by `RAYON_NUM_THREADS`.
//!
//! Measured on a 16-core machine (an NVIDIA H100 host, `brainscan bench` on 60 s of dense
//! speech, 2026-11-27): with every core in the pool, the speech stage took 11.0 s (14.9 s in
//! another run); with 12 threads 6.3 s and 7.6 s, with 8 6.5 s, 6 6.6 s, 4 7.4 s, 2 10.5 s.
//! The matrix threads wait for each other at every product, so one preempted by the scan's
//! other work (the ffmpeg decoders, the face detector, the runtime) stalls them all; leaving a
//! quarter of the cores to that work is what made the difference. Machines with four cores or
//! fewer keep them all (there is no quarter to spare: the 2-core test machine is unchanged).
//! An operator's own `RAYON_NUM_THREADS` is kept.

/// The pool size for `cores` cores: all but a quarter above four cores, `None` (rayon's own
/// default, every core) otherwise.
#[must_use]
pub fn pool_size(cores: usize) -> Option<usize> {
    (cores > 4).then(|| cores - cores / 4)
}

/// Sets `RAYON_NUM_THREADS` to [`pool_size`] of this machine's cores, unless it is set.
///
/// Call it first thing in `main`, before the async runtime or any other thread starts.
#[allow(unsafe_code)] // `set_var` is unsafe in edition 2024; see the SAFETY note.
pub fn ensure() {
    if std::env::var_os("RAYON_NUM_THREADS").is_some_and(|v| !v.is_empty()) {
        return;
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if let Some(n) = pool_size(cores) {
        // SAFETY: called from `main` before the runtime starts, so no other thread reads or
        // writes the environment concurrently.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", n.to_string()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quarter_of_the_cores_is_left_free_only_above_four() {
        assert_eq!(pool_size(1), None);
        assert_eq!(pool_size(2), None);
        assert_eq!(pool_size(4), None);
        assert_eq!(pool_size(8), Some(6));
        assert_eq!(pool_size(16), Some(12));
        assert_eq!(pool_size(64), Some(48));
    }
}
