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

/// A network within this distance of 0 (z units) is at rest: the prior's float sums of zero
/// drives stay far below it, and any real input moves a network far above it.
pub const AT_REST: f64 = 1e-6;

/// How a readout is computed from one second's networks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Form {
    /// The weighted sum of the networks (z units), a weight per network (order: Visual,
    /// Somatomotor, Dorsal Attention, Ventral Attention, Limbic, Frontoparietal, Default Mode).
    Weighted([f64; 7]),
    /// How far the first readout's corpus percentile lies above the second's, in percentile
    /// points (−100 … 100). Each term is read on its own rarity scale, so the comparison does not
    /// depend on how widely either term's networks vary in z units.
    Contrast(&'static Readout, &'static Readout),
}

/// One readout of the seven networks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Readout {
    pub name: &'static str,
    pub form: Form,
}

impl Readout {
    /// The raw value of one second: the weighted sum of its networks (z units), or for a
    /// [`Form::Contrast`] the difference of its terms' percentiles on the embedded calibration.
    ///
    /// # Panics
    /// A contrast's term has no valid line in the embedded table (a build error, caught by the
    /// unit tests).
    #[must_use]
    pub fn raw(&self, row: &[f32; 7]) -> f64 {
        self.raw_with(row, &|term: &Readout, raw: f64| {
            term.embedded_percentile(raw)
        })
    }

    /// [`Readout::raw`] with the terms' percentiles from `percentile` (the calibration tool
    /// reads a contrast on the calibrations it has just built, not on the embedded ones).
    #[must_use]
    pub fn raw_with(&self, row: &[f32; 7], percentile: &dyn Fn(&Readout, f64) -> f64) -> f64 {
        match self.form {
            Form::Weighted(w) => (0..7).map(|i| w[i] * f64::from(row[i])).sum(),
            Form::Contrast(a, b) => {
                percentile(a, a.raw_with(row, percentile))
                    - percentile(b, b.raw_with(row, percentile))
            }
        }
    }

    /// How much this readout moves per z unit of each network at this second: the weights of a
    /// weighted readout; for a contrast, each term's weights times the local slope of its
    /// percentile scale (percentile points per raw unit), the first term's counted up and the
    /// second's down.
    #[must_use]
    pub fn effect(&self, row: &[f32; 7]) -> [f64; 7] {
        match self.form {
            Form::Weighted(w) => w,
            Form::Contrast(a, b) => {
                let (ea, eb) = (a.effect(row), b.effect(row));
                let sa = a.embedded_slope(a.raw(row));
                let sb = b.embedded_slope(b.raw(row));
                core::array::from_fn(|i| ea[i] * sa - eb[i] * sb)
            }
        }
    }

    /// Each network's part in moving this readout at this second ([`Readout::effect`] times the
    /// network's value), for naming what drove it. For a weighted readout the parts sum to
    /// [`Readout::raw`].
    #[must_use]
    pub fn parts(&self, row: &[f32; 7]) -> [f64; 7] {
        let e = self.effect(row);
        core::array::from_fn(|i| e[i] * f64::from(row[i]))
    }

    /// Whether no network this readout reads leaves rest in any second of `rows` (a contrast:
    /// neither term's networks).
    ///
    /// Every prior weight is a drive from rest, so a network is exactly 0 when nothing it reads
    /// is in the clip. Such a readout has no reading: ranked on a corpus whose median second has
    /// speech it would sit at the corpus's bottom, a verdict about content the clip does not
    /// have (a silent test pattern read "reward low, 11.6" before manipulation-standard 2.5.0).
    #[must_use]
    pub fn never_driven(&self, rows: &[[f32; 7]]) -> bool {
        match self.form {
            Form::Weighted(w) => rows.iter().all(|row| {
                w.iter()
                    .zip(row)
                    .all(|(w, v)| *w == 0.0 || f64::from(v.abs()) < AT_REST)
            }),
            Form::Contrast(a, b) => a.never_driven(rows) && b.never_driven(rows),
        }
    }

    /// The linear weights of a [`Form::Weighted`] readout; `None` for a contrast.
    #[must_use]
    pub fn weights(&self) -> Option<[f64; 7]> {
        match self.form {
            Form::Weighted(w) => Some(w),
            Form::Contrast(..) => None,
        }
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

    /// The percentile of `raw` on this readout's embedded calibration, without copying it.
    fn embedded_percentile(&self, raw: f64) -> f64 {
        let (knots, spread) = self.embedded_scale();
        calibration::percentile_in(knots, spread, raw)
    }

    /// The slope of the embedded percentile scale at `raw` (points per raw unit): a central
    /// difference over a ten-thousandth of the readout's corpus spread.
    fn embedded_slope(&self, raw: f64) -> f64 {
        let (knots, spread) = self.embedded_scale();
        let h = spread * 1e-4;
        (calibration::percentile_in(knots, spread, raw + h)
            - calibration::percentile_in(knots, spread, raw - h))
            / (2.0 * h)
    }

    fn embedded_scale(&self) -> (&'static [(f64, f64)], f64) {
        calibration::embedded_scale(self.name)
            .unwrap_or_else(|| panic!("no calibration for {}", self.name))
    }
}

/// Sensory and attentional engagement: the `attention` profile (orienting: Visual, Dorsal
/// Attention) plus the sensory cortices' own profiles (`visual`; `speech_auditory`, whose
/// cortex is in Yeo-7 Somatomotor), each at unit length, summed and rescaled.
pub const ATTENTION: Readout = Readout {
    name: "attention",
    form: Form::Weighted([0.694, 0.4612, 0.5528, 0.0, 0.0, 0.0, 0.0]),
};

/// Encoding-related engagement: the `memory` profile (Limbic, Default Mode, Visual,
/// Frontoparietal; since qualia 2.11.0 without hippocampal foci, so Default Mode weighs more).
pub const MEMORY: Readout = Readout {
    name: "memory",
    form: Form::Weighted([0.3251, 0.0, 0.0, 0.0, 0.7541, 0.1306, 0.5556]),
};

/// Valuation and approach: the `reward` profile (Limbic, Frontoparietal) without its Ventral
/// Attention cell.
///
/// Why without it (lens-standard 2.4.0, qualia 2.8.0): the profile's Ventral Attention foci are
/// the anterior insula in reward anticipation, but the model's Ventral Attention carries the
/// `salience` profile's abrupt events (cuts, onsets, loudness jumps), its only inputs. Read as
/// valuation, every drum hit raised purchase intent: a melody over a still frame scored 68.
pub const PURCHASE_INTENT: Readout = Readout {
    name: "purchase_intent",
    form: Form::Weighted([0.0, 0.0, 0.0, 0.0, 0.8957, 0.4446, 0.0]),
};

/// Persuasion pressure: the `emotion` profile and the reward readout above, each at unit
/// length, summed and rescaled (affect and valuation pulling toward the message).
pub const PRESSURE: Readout = Readout {
    name: "pressure",
    form: Form::Weighted([0.0, 0.0, 0.0, 0.0, 0.9183, 0.2393, 0.3152]),
};

/// Deliberation: the `decision_making` profile (Frontoparietal, Default Mode, and since qualia
/// 2.11.0 Limbic: the orbitofrontal valuation foci that the surface assigns to Limbic).
pub const DELIBERATION: Readout = Readout {
    name: "deliberation",
    form: Form::Weighted([0.0, 0.0, 0.0, 0.0, 0.4332, 0.711, 0.5538]),
};

/// Persuasion pressure relative to deliberation: how far [`PRESSURE`]'s corpus percentile lies
/// above [`DELIBERATION`]'s at the same second (percentile points), itself scored on the corpus.
///
/// Up to version 2.1 this was the weighted difference of the two profiles' network weights. A
/// difference in z units lets whichever term's networks vary more in the corpus set the
/// comparison, and the larger term was pressure's Limbic, which purchase intent reads too:
/// the two lenses then moved together (pooled r 0.86 within clip). Comparing the two terms'
/// rarities reads "relative to" on one scale for both, and is the pair the manipulation block's
/// quadrant already uses (`wins_over`, `lowers_guard`).
pub const MANIPULATION: Readout = Readout {
    name: "manipulation",
    form: Form::Contrast(&PRESSURE, &DELIBERATION),
};

/// The gut-instinct alarm of the manipulation block: Ventral Attention alone. A network prior,
/// not a profile readout: no construct's profile is "alarm". Since qualia 2.8.0 Ventral
/// Attention has inputs (the `salience` profile: cuts, brightness jumps, acoustic onsets and
/// loudness jumps); it is scored on the corpus like the readouts above, so "quieter than usual"
/// is reachable (the network's 0 is rest, and a raw z could only read "at or above rest").
pub const ALARM: Readout = Readout {
    name: "alarm",
    form: Form::Weighted([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
};

/// Personal relevance of the manipulation block: Default Mode alone, a network prior scored on
/// the corpus (as [`ALARM`]).
pub const RELEVANCE: Readout = Readout {
    name: "relevance",
    form: Form::Weighted([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
};

/// The four default lenses, in the order the lens plugin reports them.
pub const LENSES: [Readout; 4] = [ATTENTION, MEMORY, PURCHASE_INTENT, MANIPULATION];

/// Every calibrated readout.
pub const ALL: [Readout; 8] = [
    ATTENTION,
    MEMORY,
    PURCHASE_INTENT,
    MANIPULATION,
    PRESSURE,
    DELIBERATION,
    ALARM,
    RELEVANCE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_have_unit_length_and_every_readout_is_calibrated() {
        for r in ALL {
            if let Some(w) = r.weights() {
                let norm: f64 = w.iter().map(|w| w * w).sum::<f64>().sqrt();
                assert!((norm - 1.0).abs() < 1e-3, "{}: |w| = {norm}", r.name);
            }
            let c = r.calibration();
            let (v, p) = c.knots[c.knots.len() / 2];
            assert!((c.percentile(v) - p).abs() < 1e-9, "{}", r.name);
        }
    }

    #[test]
    fn manipulation_is_the_pressure_percentile_above_the_deliberation_percentile() {
        let (p, d) = (PRESSURE.calibration(), DELIBERATION.calibration());
        let mut seen_both_ways = [false; 2];
        for i in 0..200 {
            let x = f64::from(i) / 40.0 - 2.0;
            let row = [
                0.3,
                -0.2,
                0.1,
                x as f32 * 0.4,
                x as f32,
                (1.0 - x) as f32,
                -0.5 * x as f32,
            ];
            let expected = p.percentile(PRESSURE.raw(&row)) - d.percentile(DELIBERATION.raw(&row));
            assert!((MANIPULATION.raw(&row) - expected).abs() < 1e-12, "{x}");
            seen_both_ways[usize::from(expected > 0.0)] = true;
        }
        assert!(seen_both_ways[0] && seen_both_ways[1]);
        // More Limbic raises pressure's raw value more than deliberation's. Since qualia 2.11.0
        // both terms weigh Limbic (the decision-making profile's orbitofrontal valuation foci
        // reach Limbic on the cortical surface), so on the percentile scale more Limbic lowers
        // manipulation wherever deliberation's corpus scale is the steeper of the two; up to
        // 2.9.0 it never could. What that does on real clips is the known-groups battery's.
        let (w_p, w_d) = (
            PRESSURE.weights().expect("weighted"),
            DELIBERATION.weights().expect("weighted"),
        );
        assert!(w_p[4] > 2.0 * w_d[4], "{w_p:?} {w_d:?}");
        assert!(MANIPULATION.weights().is_none());
    }

    #[test]
    fn a_contrast_attributes_its_movement_to_the_networks_of_both_terms() {
        // Limbic raises pressure more than deliberation; Frontoparietal raises deliberation more
        // than pressure.
        let row = [0.0, 0.0, 0.0, 0.0, 0.6, 0.5, 0.0];
        let parts = MANIPULATION.parts(&row);
        assert!(parts[4] > 0.0, "{parts:?}");
        assert!(parts[5] < 0.0, "{parts:?}");
        assert!(parts[..4].iter().all(|p| *p == 0.0), "{parts:?}");
        // A weighted readout's parts still sum to its raw value.
        let w = PURCHASE_INTENT.parts(&row).iter().sum::<f64>();
        assert!((w - PURCHASE_INTENT.raw(&row)).abs() < 1e-12);
    }
}
