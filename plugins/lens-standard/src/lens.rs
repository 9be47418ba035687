//! The four default lenses. Each reads the seven networks (z units) with the weights of its
//! construct's Neurosynth network profile (`brainscan_readouts`), and its 0-100 score is the
//! percentile of that raw value among the seconds of the benchmark corpus: 50 is the corpus
//! median, and the same score is the same rarity on every lens. Definitions and evidence:
//! `README.md` beside this crate.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use brainscan_readouts::Readout;
use brainscan_sdk::{Clip, Describe, LensPlugin, LensSecond, LensSeries, PluginError};

/// The plain-language name of each network, as `raw_labeled` names it.
use brainscan_sdk::PLAIN_NETWORKS as PLAIN;

/// One lens: its readout and what it means, for reasons.
pub struct LensDef {
    pub readout: Readout,
    /// What the lens means, for reasons.
    pub noun: &'static str,
}

impl LensDef {
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.readout.name
    }
}

pub const LENSES: [LensDef; 4] = [
    LensDef {
        readout: brainscan_readouts::ATTENTION,
        noun: "Attention",
    },
    LensDef {
        readout: brainscan_readouts::MEMORY,
        noun: "Memory encoding",
    },
    LensDef {
        readout: brainscan_readouts::PURCHASE_INTENT,
        noun: "Buying intent",
    },
    LensDef {
        readout: brainscan_readouts::MANIPULATION,
        noun: "Persuasive pressure",
    },
];

/// A 0-100 score rounded to 0.1 so outputs are stable to read and compare.
pub fn round_score(percentile: f64) -> f64 {
    brainscan_sdk::libm::rint(percentile * 10.0) / 10.0
}

pub struct StandardLenses;

impl Describe for StandardLenses {
    fn description() -> String {
        "Attention, memory, purchase intent and manipulation read from the networks by their Neurosynth profiles, scored as corpus percentiles".into()
    }
}

impl LensPlugin for StandardLenses {
    fn provides() -> Vec<String> {
        LENSES.iter().map(|l| l.name().to_string()).collect()
    }

    fn score(clip: &Clip, lenses: &[String]) -> Result<Vec<LensSeries>, PluginError> {
        let rows: Vec<[f32; 7]> = clip.networks.iter().map(|n| n.values()).collect();
        Ok(LENSES
            .iter()
            .enumerate()
            .filter(|(_, def)| lenses.iter().any(|l| l == def.name()))
            .map(|(li, def)| LensSeries {
                lens: def.name().to_string(),
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
    let calibration = def.readout.calibration();
    for row in rows {
        let parts = def.readout.parts(row);
        let score = round_score(calibration.percentile(parts.iter().sum()));
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
    let raised = def.readout.weights[net] >= 0.0;
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
    fn the_corpus_median_of_each_lens_scores_near_fifty_and_scores_rise_with_the_readout() {
        for def in &LENSES {
            let c = def.readout.calibration();
            let mid = c
                .knots
                .iter()
                .min_by(|a, b| (a.1 - 50.0).abs().total_cmp(&(b.1 - 50.0).abs()))
                .expect("knots");
            // The knot nearest the median scores its own percentile.
            assert_eq!(round_score(c.percentile(mid.0)), round_score(mid.1));
            let lo = round_score(c.percentile(c.knots[0].0 - 1.0));
            let hi = round_score(c.percentile(c.knots[c.knots.len() - 1].0 + 1.0));
            assert!(
                lo < mid.1 && mid.1 < hi,
                "{}: {lo} {} {hi}",
                def.name(),
                mid.1
            );
        }
    }

    #[test]
    fn lenses_read_their_profile_networks() {
        // attention reads the sensory and orienting networks only; memory, purchase intent and
        // manipulation read Limbic; manipulation is lowered by Frontoparietal deliberation.
        let w = |i: usize| LENSES[i].readout.weights;
        assert!(w(0)[4] == 0.0 && w(0)[5] == 0.0 && w(0)[6] == 0.0 && w(0)[0] > 0.0);
        assert!(w(1)[4] > 0.0 && w(2)[4] > 0.0 && w(3)[4] > 0.0);
        assert!(w(3)[5] < 0.0 && w(2)[5] > 0.0);
    }

    #[test]
    fn reasons_vary_and_name_direction() {
        // Rows that swing attention's networks from far below to far above the corpus.
        let rows: Vec<[f32; 7]> = (0..9)
            .map(|i| {
                let v = [0.0, 4.0, -4.0][i % 3];
                [v, v, v, 0.0, 0.0, 0.0, 0.0]
            })
            .collect();
        let out = score_lens(&LENSES[0], 0, &rows);
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
