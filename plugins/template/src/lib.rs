//! A template lens plugin. Copy this crate, rename it in `Cargo.toml`, and change `LENS`,
//! `WEIGHTS` and the reasons. Everything the host needs — `describe()`, input checks, the
//! component exports — comes from `brainscan_sdk::export_lens!`.
//!
//! The lens here, `focus`, is a signed combination of the seven networks (z units, 0 = the
//! clip's average viewer at rest): focused attention and deliberate thinking raise it, the
//! default-mode network (mind-wandering) lowers it. The combination is divided by the length
//! of the weight vector so it stays in z units, then mapped to 0-100 with the logistic
//! function: 50 is neutral.

// no_std in the component (the contract grants no WASI); std on the host for `cargo test`.
#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use brainscan_sdk::{
    Clip, Describe, LensPlugin, LensSecond, LensSeries, LimitsRequest, PluginError, stats,
};

/// The lens name clients request. Lowercase letters, digits and `_`; it must not clash with
/// a lens another active plugin provides.
pub const LENS: &str = "focus";

/// Weights in network order: visual, somatomotor, dorsal attention, ventral attention,
/// limbic, frontoparietal, default mode.
pub const WEIGHTS: [f64; 7] = [0.0, 0.0, 0.6, 0.0, 0.0, 0.4, -0.5];

pub struct Focus;

impl Describe for Focus {
    fn description() -> String {
        "focus: focused attention and deliberate thinking up, mind-wandering down".into()
    }

    /// Optional: ask for less than the host's default budget (it grants the smaller of the
    /// request and its ceiling). `None` takes the default.
    fn limits() -> LimitsRequest {
        LimitsRequest {
            fuel_per_second: Some(200_000),
            memory_bytes: Some(8 * 1024 * 1024),
        }
    }
}

/// The lens in z units for one second.
pub fn focus_z(networks: &[f32; 7]) -> f64 {
    // Float math goes through `libm` (re-exported by the SDK): `f64::sqrt` and friends are
    // `std`, which the component does not have.
    let norm = brainscan_sdk::libm::sqrt(WEIGHTS.iter().map(|w| w * w).sum::<f64>());
    WEIGHTS
        .iter()
        .zip(networks)
        .map(|(w, n)| w * f64::from(*n))
        .sum::<f64>()
        / norm
}

/// 0-100, 50 neutral, one decimal.
pub fn score(z: f64) -> f32 {
    let s = 100.0 * stats::logistic(1.7 * z);
    (brainscan_sdk::libm::round(s * 10.0) / 10.0) as f32
}

impl LensPlugin for Focus {
    fn provides() -> Vec<String> {
        vec![LENS.into()]
    }

    fn score(clip: &Clip, _lenses: &[String]) -> Result<Vec<LensSeries>, PluginError> {
        let mut previous: Option<f32> = None;
        let seconds = clip
            .networks
            .iter()
            .map(|n| {
                let s = score(focus_z(&n.values()));
                let reason = match previous {
                    Some(p) if s - p >= 5.0 => format!("Focus rose to {s:.0} (+{:.0}).", s - p),
                    Some(p) if p - s >= 5.0 => format!("Focus fell to {s:.0} ({:.0}).", s - p),
                    _ if s >= 60.0 => format!("Focus holds high ({s:.0})."),
                    _ if s <= 40.0 => format!("The mind wanders here ({s:.0})."),
                    _ => format!("Focus near neutral ({s:.0})."),
                };
                previous = Some(s);
                LensSecond { score: s, reason }
            })
            .collect();
        Ok(vec![LensSeries {
            lens: LENS.into(),
            seconds,
        }])
    }
}

brainscan_sdk::export_lens!(Focus);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neutral_is_fifty_and_attention_raises_focus() {
        assert_eq!(score(focus_z(&[0.0; 7])), 50.0);
        let attentive = score(focus_z(&[0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0]));
        let wandering = score(focus_z(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5]));
        assert!(attentive > 75.0, "{attentive}");
        assert!(wandering < 25.0, "{wandering}");
    }
}
