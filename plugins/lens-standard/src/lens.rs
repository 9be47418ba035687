//! Each lens is a signed, documented combination of the seven networks (z units), divided by
//! the length of its weight vector so that independent unit-variance networks give a unit-
//! variance lens, then mapped to 0-100 by the normal CDF: `score = 100·Φ(z)`. 50 is neutral,
//! one standard deviation above the corpus reads 84, two read 98. Φ is smooth and monotone and
//! saturates instead of clipping, so ranks survive at the extremes.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use brainscan_sdk::{Clip, Describe, LensPlugin, LensSecond, LensSeries, PluginError};

/// The plain-language name of each network, as `raw_labeled` names it.
use brainscan_sdk::PLAIN_NETWORKS as PLAIN;

/// One lens: weights per network (positive raise it, negative lower it).
pub struct LensDef {
    pub name: &'static str,
    pub weights: [f64; 7],
    /// What the lens means, for reasons.
    pub noun: &'static str,
}

pub const LENSES: [LensDef; 4] = [
    // Attention: the dorsal attention network carries sustained, goal-directed orienting; the
    // ventral network carries stimulus-driven capture (cuts, onsets); visual cortex follows how
    // much there is to look at.
    LensDef {
        name: "attention",
        weights: [0.2, 0.0, 0.5, 0.3, 0.0, 0.0, 0.0],
        noun: "Attention",
    },
    // Memory: encoding that lasts engages the default-mode (hippocampal-cortical) system and
    // emotional tagging (limbic), with frontoparietal control supporting elaboration.
    LensDef {
        name: "memory",
        weights: [0.0, 0.0, 0.0, 0.0, 0.3, 0.2, 0.5],
        noun: "Memory encoding",
    },
    // Purchase intent = reward − hesitation. Reward: limbic (0.6) and default mode as the
    // vmPFC value proxy (0.4). Hesitation: frontoparietal / dlPFC counter-arguing (0.6) and
    // the ventral "alarm" (0.4).
    LensDef {
        name: "purchase_intent",
        weights: [0.0, 0.0, 0.0, -0.4, 0.6, -0.6, 0.4],
        noun: "Buying intent",
    },
    // Manipulation: guard-down exposure = reward − effort − alarm, with reward the mean of
    // limbic and default mode, effort the frontoparietal network and alarm the ventral
    // attention network — the same quantities as the manipulation block's timeline.
    LensDef {
        name: "manipulation",
        weights: [0.0, 0.0, 0.0, -1.0, 0.5, -1.0, 0.5],
        noun: "Persuasive pressure",
    },
];

/// Standard normal CDF.
pub fn phi(z: f64) -> f64 {
    0.5 * (1.0 + brainscan_sdk::libm::erf(z / core::f64::consts::SQRT_2))
}

/// The lens z of one second and each network's contribution to it.
pub fn lens_z(def: &LensDef, row: &[f32; 7]) -> (f64, [f64; 7]) {
    let norm = brainscan_sdk::libm::sqrt(def.weights.iter().map(|w| w * w).sum::<f64>());
    let mut parts = [0.0; 7];
    for i in 0..7 {
        parts[i] = def.weights[i] * f64::from(row[i]) / norm;
    }
    (parts.iter().sum(), parts)
}

/// The score 0-100 for a lens z, rounded to 0.1 so outputs are stable to read and compare.
pub fn score_of(z: f64) -> f64 {
    (phi(z) * 1000.0).round_ties_even_nostd() / 10.0
}

trait RoundNoStd {
    fn round_ties_even_nostd(self) -> f64;
}
impl RoundNoStd for f64 {
    fn round_ties_even_nostd(self) -> f64 {
        brainscan_sdk::libm::rint(self)
    }
}

pub struct StandardLenses;

impl Describe for StandardLenses {
    fn description() -> String {
        "Attention, memory, purchase intent and manipulation as signed network combinations".into()
    }
}

impl LensPlugin for StandardLenses {
    fn provides() -> Vec<String> {
        LENSES.iter().map(|l| l.name.to_string()).collect()
    }

    fn score(clip: &Clip, lenses: &[String]) -> Result<Vec<LensSeries>, PluginError> {
        let rows: Vec<[f32; 7]> = clip.networks.iter().map(|n| n.values()).collect();
        Ok(LENSES
            .iter()
            .enumerate()
            .filter(|(_, def)| lenses.iter().any(|l| l == def.name))
            .map(|(li, def)| LensSeries {
                lens: def.name.to_string(),
                seconds: score_lens(def, li, &rows),
            })
            .collect())
    }
}

/// Scores and reasons for one lens over the clip.
pub fn score_lens(def: &LensDef, lens_index: usize, rows: &[[f32; 7]]) -> Vec<LensSecond> {
    let mut out = Vec::with_capacity(rows.len());
    let mut previous: Option<f64> = None;
    let mut seen = [0usize; SITUATIONS];
    for row in rows {
        let (z, parts) = lens_z(def, row);
        let score = score_of(z);
        let reason = reason(def, lens_index, &mut seen, score, previous, &parts);
        previous = Some(score);
        out.push(LensSecond {
            score: score as f32,
            reason,
        });
    }
    out
}

/// The network that moved this lens most at this second, and whether it pushed up or down.
fn driver(parts: &[f64; 7], towards_up: bool) -> (usize, bool) {
    let mut best = 0;
    let mut best_v = f64::NEG_INFINITY;
    for (i, p) in parts.iter().enumerate() {
        let v = if towards_up { *p } else { -*p };
        if v > best_v {
            best_v = v;
            best = i;
        }
    }
    (best, parts[best] >= 0.0)
}

/// Big rise, rise, big fall, fall, high, low, neutral.
const SITUATIONS: usize = 7;

/// A reason that names the direction, the score and the network behind it. Phrasing depends
/// on the situation (big or small rise or fall, holding high, holding low, neutral) and
/// rotates each time the same situation comes back, so neither consecutive seconds nor a
/// periodic clip read as one repeated template.
fn reason(
    def: &LensDef,
    lens_index: usize,
    seen: &mut [usize; SITUATIONS],
    score: f64,
    previous: Option<f64>,
    parts: &[f64; 7],
) -> String {
    let delta = previous.map_or(0.0, |p| score - p);
    let rising = delta >= 3.0;
    let falling = delta <= -3.0;
    let (net, net_up) = driver(
        parts,
        if rising || falling {
            rising
        } else {
            score >= 50.0
        },
    );
    let network = PLAIN[net];
    let raised = def.weights[net] >= 0.0;
    // Is the driver a network that rose (above its mean) or one that fell?
    let moved = if net_up == raised { "rose" } else { "eased" };
    let noun = def.noun;
    let big = delta.abs() >= 20.0;
    let situation = match (rising, falling) {
        (true, _) if big => 0,
        (true, _) => 1,
        (_, true) if big => 2,
        (_, true) => 3,
        _ if score >= 60.0 => 4,
        _ if score <= 40.0 => 5,
        _ => 6,
    };
    let variant = (seen[situation] + lens_index) % 3;
    seen[situation] += 1;
    match (rising, falling) {
        (true, _) if big => match variant {
            0 => format!("{noun} surged to {score:.0} (+{delta:.0}) as {network} {moved}."),
            1 => format!(
                "A sharp rise in {}: +{delta:.0} to {score:.0}, driven by {network}.",
                lower(noun)
            ),
            _ => format!("{noun} jumped here ({score:.0}, +{delta:.0}): {network} {moved}."),
        },
        (true, _) => match variant {
            0 => format!("{noun} climbed here ({score:.0}, +{delta:.0}): {network} {moved}."),
            1 => format!("{noun} picked up to {score:.0} as {network} {moved}."),
            _ => format!(
                "A lift in {}: {score:.0}, driven by {network}.",
                lower(noun)
            ),
        },
        (_, true) if big => match variant {
            0 => format!("{noun} plunged to {score:.0} ({delta:.0}) as {network} {moved}."),
            1 => format!(
                "A sharp drop in {}: {delta:.0} to {score:.0}, led by {network}.",
                lower(noun)
            ),
            _ => format!("{noun} fell away here ({score:.0}, {delta:.0}): {network} {moved}."),
        },
        (_, true) => match variant {
            0 => format!("{noun} dropped to {score:.0} ({delta:.0}): {network} {moved}."),
            1 => format!("{noun} slipped here ({score:.0}) as {network} {moved}."),
            _ => format!("A dip in {}: {score:.0}, led by {network}.", lower(noun)),
        },
        _ if score >= 60.0 => match variant {
            0 => format!("{noun} holds high at {score:.0}, carried by {network}."),
            1 => format!(
                "Still strong ({score:.0}): {network} keeps {} up.",
                lower(noun)
            ),
            _ => format!("{noun} stays above neutral ({score:.0}); {network} leads."),
        },
        _ if score <= 40.0 => match variant {
            0 => format!("{noun} stays low at {score:.0}; {network} {moved}."),
            1 => format!(
                "Little {} here ({score:.0}): {network} {moved}.",
                lower(noun)
            ),
            _ => format!("{noun} remains below neutral ({score:.0}), mostly {network}."),
        },
        _ => match variant {
            0 => format!("{noun} near neutral ({score:.0}); no network stands out."),
            1 => format!("A steady second for {} ({score:.0}).", lower(noun)),
            _ => format!("{noun} unchanged at {score:.0}; {network} is the largest pull."),
        },
    }
}

fn lower(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    if let Some(c) = chars.next() {
        out.extend(c.to_lowercase());
    }
    out.push_str(chars.as_str());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neutral_networks_score_fifty() {
        for def in &LENSES {
            let (z, _) = lens_z(def, &[0.0; 7]);
            assert_eq!(score_of(z), 50.0);
        }
    }

    #[test]
    fn one_sd_of_the_lens_reads_84() {
        // attention, all three of its networks at +1: z = (0.2+0.5+0.3)/|w| = 1/0.6164 = 1.622
        let (z, _) = lens_z(&LENSES[0], &[1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
        assert!((z - 1.0 / (0.04f64 + 0.25 + 0.09).sqrt()).abs() < 1e-9);
        assert_eq!(score_of(z), 94.8);
        // a unit z reads 84.1
        assert_eq!(score_of(1.0), 84.1);
        assert_eq!(score_of(-1.0), 15.9);
    }

    #[test]
    fn purchase_intent_is_reward_minus_hesitation() {
        let up = lens_z(&LENSES[2], &[0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0]).0;
        let down = lens_z(&LENSES[2], &[0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]).0;
        assert!(up > 0.0 && down < 0.0);
        assert!((up + down).abs() < 1e-12);
    }

    #[test]
    fn reasons_vary_and_name_direction() {
        let rows: Vec<[f32; 7]> = (0..9)
            .map(|i| {
                let v = [0.0, 1.5, -1.5][i % 3];
                [v, 0.0, v, v, 0.0, 0.0, 0.0]
            })
            .collect();
        let out = score_lens(&LENSES[0], 0, &rows);
        // 50 → 99 and 99 → 1 are large moves and say so.
        let up = &out[1].reason;
        assert!(
            up.contains("surged") || up.contains("sharp rise") || up.contains("jumped"),
            "{up}"
        );
        let down = &out[2].reason;
        assert!(
            down.contains("plunged") || down.contains("sharp drop") || down.contains("fell away"),
            "{down}"
        );
        for s in &out {
            assert!(
                s.reason.contains(&format!("{:.0}", s.score)),
                "{}",
                s.reason
            );
        }
        let distinct: std::collections::BTreeSet<_> =
            out.iter().map(|s| s.reason.clone()).collect();
        assert!(distinct.len() >= 6, "{distinct:?}");
    }
}
