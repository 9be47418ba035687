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

/// `(u − v) / (|u| + |v|)`: which of two terms on one scale leads, as a share of their joint
/// size; 0 when both are at rest ([`Form::Contrast`]).
#[must_use]
pub fn balance(u: f64, v: f64) -> f64 {
    let s = u.abs() + v.abs();
    if s < AT_REST { 0.0 } else { (u - v) / s }
}

/// How a readout is computed from one second's networks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Form {
    /// The weighted sum of the networks (z units), a weight per network (order: Visual,
    /// Somatomotor, Dorsal Attention, Ventral Attention, Limbic, Frontoparietal, Default Mode).
    Weighted([f64; 7]),
    /// Which of two readouts leads, and by how much of their joint size: with each term over its
    /// corpus spread (`u = a / spread_a`, `v = b / spread_b`), `(u − v) / (|u| + |v|)`, from −1
    /// (only the second) through 0 (balanced, or both at rest) to 1 (only the first).
    ///
    /// The spreads put both terms on one scale, so neither wins by its networks varying more in z
    /// units; the ratio does not change when both terms scale together, so a weaker or decaying
    /// response (fewer words heard, the end of a clip) reads the same balance. Up to
    /// lens-standard 2.6.0 this was the difference of the terms' corpus percentiles, which both
    /// terms' common level moved: within a clip, that manipulation rose as the level fell
    /// (pooled r −0.52, model card, "Manipulation follows the response's level").
    ///
    /// Where both terms are positive, this is `tan(φ − 45°)` with `φ = atan2(u, v)`, a monotone
    /// function of the angle of the exploratory run (model card), and the lens scores on corpus percentiles, so it ranks seconds exactly as
    /// the angle of the exploratory run did; unlike an angle it stays continuous where a term
    /// falls below rest (the HRF's undershoot), with no wrap-around.
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
    /// [`Form::Contrast`] its balance, with the terms' spreads from the embedded calibration.
    ///
    /// # Panics
    /// A contrast's term has no valid line in the embedded table (a build error, caught by the
    /// unit tests).
    #[must_use]
    pub fn raw(&self, row: &[f32; 7]) -> f64 {
        self.raw_with(row, &|term: &Readout| term.embedded_scale().1)
    }

    /// [`Readout::raw`] with the terms' corpus spreads from `spread` (the calibration tool reads
    /// a contrast on the spreads it has just built, not on the embedded ones).
    #[must_use]
    pub fn raw_with(&self, row: &[f32; 7], spread: &dyn Fn(&Readout) -> f64) -> f64 {
        match self.form {
            Form::Weighted(w) => (0..7).map(|i| w[i] * f64::from(row[i])).sum(),
            Form::Contrast(a, b) => {
                let u = a.raw_with(row, spread) / spread(a);
                let v = b.raw_with(row, spread) / spread(b);
                balance(u, v)
            }
        }
    }

    /// How much this readout moves per z unit of each network at this second: the weights of a
    /// weighted readout; for a contrast, the gradient of its balance (each term's weights over
    /// its spread, times the balance's slope in that term).
    ///
    /// A contrast does not change when every network scales together, so its parts
    /// ([`Readout::parts`]) sum to 0: the first term's networks push it up and the second's down,
    /// and a reason names whichever pushed hardest.
    #[must_use]
    pub fn effect(&self, row: &[f32; 7]) -> [f64; 7] {
        match self.form {
            Form::Weighted(w) => w,
            Form::Contrast(a, b) => {
                let (sa, sb) = (a.embedded_scale().1, b.embedded_scale().1);
                let (u, v) = (a.raw(row) / sa, b.raw(row) / sb);
                let s = u.abs() + v.abs();
                if s < AT_REST {
                    return [0.0; 7];
                }
                // d/du and d/dv of (u − v) / (|u| + |v|).
                let du = (s - (u - v) * u.signum()) / (s * s);
                let dv = (-s - (u - v) * v.signum()) / (s * s);
                let (ea, eb) = (a.effect(row), b.effect(row));
                core::array::from_fn(|i| du * ea[i] / sa + dv * eb[i] / sb)
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

    /// This readout's embedded calibration points and spread, without copying them.
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

/// Wanting beyond feeling: the part of the `reward` profile (without its Ventral Attention cell)
/// that the `emotion` profile does not predict, at unit length (lens-standard 2.8.0).
///
/// Why the part and not the profile: at Yeo-7 the `reward` profile (Limbic .896,
/// Frontoparietal .445) points mostly where the `emotion` profile does (cosine 0.73), so up to
/// 2.7.0 any feeling read as buying intent: a grief story scored 72.5 against a hard sell's 84.1,
/// and the lens moved with memory (pooled within clip r 0.82), whose profile is emotion's
/// (cosine 0.94). The reward vector minus its projection on the emotion vector keeps what is
/// evidence for valuation rather than affect: Limbic .447 and Frontoparietal .647 up, Default
/// Mode −.618 down, since Default Mode is where the two profiles differ most (emotion .586,
/// reward 0). So a second whose Limbic drive comes with Default Mode (emotional, social or
/// narrative speech) reads as feeling, and its lower half means that, not the haemodynamic
/// undershoot (no network is below rest since qualia 2.8.0). The test
/// `lenses::lens_weights_are_the_committed_profiles` recomputes the weights from the table.
///
/// Why without the Ventral Attention cell (lens-standard 2.4.0, qualia 2.8.0): the profile's
/// Ventral Attention foci are the anterior insula in reward anticipation, but the model's
/// Ventral Attention carries the `salience` profile's abrupt events (cuts, onsets, loudness
/// jumps), its only inputs. Read as valuation, every drum hit raised purchase intent: a melody
/// over a still frame scored 68.
pub const PURCHASE_INTENT: Readout = Readout {
    name: "purchase_intent",
    form: Form::Weighted([0.0, 0.0, 0.0, 0.0, 0.4468, 0.6465, -0.6183]),
};

/// Persuasion pressure: the `emotion` profile at unit length (lens-standard 2.9.0): the
/// affective pull (urgency, fear of missing out, excitement) that a hard sell adds over the
/// facts.
///
/// Why not the `reward` profile too (lens-standard 2.0.0-2.8.0 summed both): wanting a product
/// is not pressure, and since 2.8.0 the purchase-intent lens reads the valuation on its own.
/// With both in pressure, manipulation kept reading what purchase intent reads (pooled within
/// clip r 0.69) and the four lenses carried 2.49 dimensions against the 2.5 asked for.
pub const PRESSURE: Readout = Readout {
    name: "pressure",
    form: Form::Weighted([0.0, 0.0, 0.0, 0.0, 0.8105, 0.0, 0.5857]),
};

/// Deliberation: the `decision_making` profile (Frontoparietal, Default Mode, and since qualia
/// 2.11.0 Limbic: the orbitofrontal valuation foci that the surface assigns to Limbic).
pub const DELIBERATION: Readout = Readout {
    name: "deliberation",
    form: Form::Weighted([0.0, 0.0, 0.0, 0.0, 0.4332, 0.711, 0.5538]),
};

/// Persuasion pressure relative to deliberation: the balance of [`PRESSURE`] over
/// [`DELIBERATION`], each over its corpus spread ([`Form::Contrast`]), itself scored on the
/// corpus.
///
/// Up to version 2.1 this was the weighted difference of the two profiles' network weights. A
/// difference in z units lets whichever term's networks vary more in the corpus set the
/// comparison, and the larger term was pressure's Limbic, which purchase intent reads too:
/// the two lenses then moved together (pooled r 0.86 within clip). From 2.2 to 2.6 it was the
/// difference of the two terms' corpus percentiles, which read both on one scale but moved
/// with their common level; since lens-standard 2.7.0 it is their balance, which does not.
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

    /// A row with Limbic `x` and the other networks set so pressure and deliberation cross.
    fn crossing_row(x: f64) -> [f32; 7] {
        [
            0.3,
            -0.2,
            0.1,
            x as f32 * 0.4,
            x as f32,
            (1.0 - x) as f32,
            -0.5 * x as f32,
        ]
    }

    #[test]
    fn manipulation_is_the_balance_of_pressure_over_deliberation_each_over_its_spread() {
        let (sp, sd) = (
            PRESSURE.calibration().spread,
            DELIBERATION.calibration().spread,
        );
        let mut seen_both_ways = [false; 2];
        for i in 0..200 {
            let row = crossing_row(f64::from(i) / 40.0 - 2.0);
            let (u, v) = (PRESSURE.raw(&row) / sp, DELIBERATION.raw(&row) / sd);
            let expected = (u - v) / (u.abs() + v.abs());
            assert!((MANIPULATION.raw(&row) - expected).abs() < 1e-12, "{row:?}");
            assert!(expected.abs() <= 1.0);
            seen_both_ways[usize::from(expected > 0.0)] = true;
        }
        assert!(seen_both_ways[0] && seen_both_ways[1]);
        assert_eq!(MANIPULATION.raw(&[0.0; 7]), 0.0, "at rest it is balanced");
        assert!(MANIPULATION.weights().is_none());
        // More Limbic raises pressure's raw value almost twice as much as deliberation's (both
        // weigh it since qualia 2.11.0), and Frontoparietal only deliberation's (since
        // lens-standard 2.9.0). What that does on real clips is the known-groups battery's.
        let (w_p, w_d) = (
            PRESSURE.weights().expect("weighted"),
            DELIBERATION.weights().expect("weighted"),
        );
        assert!(w_p[4] > 1.8 * w_d[4], "{w_p:?} {w_d:?}");
        assert!(w_p[5] == 0.0 && w_d[5] > 0.5, "{w_p:?} {w_d:?}");
    }

    #[test]
    fn manipulation_does_not_move_when_the_whole_response_scales() {
        // The artefact of lens-standard 2.6.0: a weaker or decaying response (both terms scaled
        // by one factor) moved the percentile difference. The balance does not move.
        for i in 0..80 {
            let row = crossing_row(f64::from(i) / 20.0 - 2.0);
            let m = MANIPULATION.raw(&row);
            for k in [0.05f32, 0.3, 0.7, 1.5, 4.0] {
                let scaled = row.map(|v| v * k);
                assert!(
                    (MANIPULATION.raw(&scaled) - m).abs() < 1e-6,
                    "{row:?} × {k}"
                );
            }
        }
    }

    #[test]
    fn a_contrasts_effect_is_the_gradient_of_its_raw_value() {
        for i in 0..80 {
            let row = crossing_row(f64::from(i) / 20.0 - 2.0);
            // The balance has a kink where a term is 0 (|u| has no derivative there): a central
            // difference straddling it measures neither side. Since lens-standard 2.9.0
            // pressure reads no Frontoparietal, so this family of rows puts it at 0 at x = 0.
            if PRESSURE.raw(&row).abs() < 1e-2 || DELIBERATION.raw(&row).abs() < 1e-2 {
                continue;
            }
            let effect = MANIPULATION.effect(&row);
            for n in 0..7 {
                let h = 1e-3f32;
                let (mut up, mut down) = (row, row);
                up[n] += h;
                down[n] -= h;
                let numeric =
                    (MANIPULATION.raw(&up) - MANIPULATION.raw(&down)) / f64::from(2.0 * h);
                assert!(
                    (numeric - effect[n]).abs() < 1e-3 * (1.0 + effect[n].abs()),
                    "{row:?} network {n}: {numeric} against {}",
                    effect[n]
                );
            }
            // Scaling every network together does not move it, so its parts cancel.
            let sum: f64 = MANIPULATION.parts(&row).iter().sum();
            assert!(sum.abs() < 1e-9, "{row:?}: {sum}");
        }
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
