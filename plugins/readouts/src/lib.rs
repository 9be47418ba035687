//! The standard readouts: what the default lens and manipulation plugins compute from the
//! seven network series, and the corpus calibration that puts each on the 0-100 scale.
//!
//! Every weight vector comes from the Neurosynth v7 network profiles the qualia v2 prior is
//! built from (`models/qualia/v2/grounding/network-profiles.json`): the log odds of each
//! construct's positive, credible (95 % bootstrap interval above 0) networks, scaled to unit
//! length. The host test `grounding::lens_weights_are_the_committed_profiles` recomputes them
//! from the committed table. Definitions and evidence: `plugins/lens-standard/README.md`.

#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

pub mod calibration;
pub mod table;

use calibration::Calibration;

/// One readout: a weight per network (order: Visual, Somatomotor, Dorsal Attention, Ventral
/// Attention, Limbic, Frontoparietal, Default Mode).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Readout {
    pub name: &'static str,
    pub weights: [f64; 7],
}

impl Readout {
    /// The raw value of one second: the weighted sum of its networks (z units).
    #[must_use]
    pub fn raw(&self, row: &[f32; 7]) -> f64 {
        self.parts(row).iter().sum()
    }

    /// Each network's contribution to [`Readout::raw`].
    #[must_use]
    pub fn parts(&self, row: &[f32; 7]) -> [f64; 7] {
        core::array::from_fn(|i| self.weights[i] * f64::from(row[i]))
    }

    /// This readout's corpus calibration.
    ///
    /// # Panics
    /// The embedded table lacks the readout (a build error, caught by the unit tests).
    #[must_use]
    pub fn calibration(&self) -> Calibration {
        calibration::embedded(self.name)
            .unwrap_or_else(|| panic!("no calibration for {}", self.name))
    }
}

/// Sensory and attentional engagement: the `attention` profile (orienting: Visual, Dorsal
/// Attention) plus the sensory cortices' own profiles (`visual`; `speech_auditory`, whose
/// cortex is in Yeo-7 Somatomotor), each at unit length, summed and rescaled.
pub const ATTENTION: Readout = Readout {
    name: "attention",
    weights: [0.6643, 0.4662, 0.5842, 0.0, 0.0, 0.0, 0.0],
};

/// Encoding-related engagement: the `memory` profile (Limbic, Visual, Default Mode,
/// Frontoparietal).
pub const MEMORY: Readout = Readout {
    name: "memory",
    weights: [0.3244, 0.0, 0.0, 0.0, 0.8892, 0.1361, 0.2926],
};

/// Valuation and approach: the `reward` profile (Limbic, Ventral Attention, Frontoparietal).
pub const PURCHASE_INTENT: Readout = Readout {
    name: "purchase_intent",
    weights: [0.0, 0.0, 0.0, 0.4513, 0.8464, 0.2828, 0.0],
};

/// Persuasion pressure: the `emotion` and `reward` profiles at unit length, summed and
/// rescaled (affect and valuation pulling toward the message).
pub const PRESSURE: Readout = Readout {
    name: "pressure",
    weights: [0.0, 0.0, 0.0, 0.2415, 0.9247, 0.1513, 0.2526],
};

/// Deliberation: the `decision_making` profile (Frontoparietal, Default Mode).
pub const DELIBERATION: Readout = Readout {
    name: "deliberation",
    weights: [0.0, 0.0, 0.0, 0.0, 0.0, 0.8165, 0.5773],
};

/// Persuasion pressure relative to deliberation: [`PRESSURE`] − [`DELIBERATION`], rescaled.
pub const MANIPULATION: Readout = Readout {
    name: "manipulation",
    weights: [0.0, 0.0, 0.0, 0.1998, 0.7649, -0.5503, -0.2686],
};

/// The four default lenses, in the order the lens plugin reports them.
pub const LENSES: [Readout; 4] = [ATTENTION, MEMORY, PURCHASE_INTENT, MANIPULATION];

/// Every calibrated readout.
pub const ALL: [Readout; 6] = [
    ATTENTION,
    MEMORY,
    PURCHASE_INTENT,
    MANIPULATION,
    PRESSURE,
    DELIBERATION,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_have_unit_length_and_every_readout_is_calibrated() {
        for r in ALL {
            let norm: f64 = r.weights.iter().map(|w| w * w).sum::<f64>().sqrt();
            assert!((norm - 1.0).abs() < 1e-3, "{}: |w| = {norm}", r.name);
            let c = r.calibration();
            let (v, p) = c.knots[c.knots.len() / 2];
            assert!((c.percentile(v) - p).abs() < 1e-9, "{}", r.name);
        }
    }

    #[test]
    fn manipulation_is_pressure_minus_deliberation() {
        let diff: [f64; 7] =
            core::array::from_fn(|i| PRESSURE.weights[i] - DELIBERATION.weights[i]);
        let norm: f64 = diff.iter().map(|w| w * w).sum::<f64>().sqrt();
        for (i, (d, w)) in diff.iter().zip(MANIPULATION.weights).enumerate() {
            assert!((d / norm - w).abs() < 1e-3, "network {i}");
        }
    }
}
