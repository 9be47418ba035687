//! The four default lenses. Each reads the seven networks (z units) with the weights of its
//! construct's Neurosynth network profile (`brainscan_readouts`), and its 0-100 score is the
//! percentile of that raw value among the seconds of the benchmark corpus: 50 is the corpus
//! median, and the same score is the same rarity on every lens. Definitions and evidence:
//! `README.md` beside this crate.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use brainscan_readouts::Readout;
use brainscan_sdk::text::{NOT_ASSESSABLE, has_words};
use brainscan_sdk::{Clip, Describe, LensPlugin, LensSecond, LensSeries, PluginError};

/// The plain-language name of each network, as `raw_labeled` names it.
use brainscan_sdk::PLAIN_NETWORKS as PLAIN;

/// One lens: its readout and what it means, for reasons.
pub struct LensDef {
    pub readout: Readout,
    /// What the lens means, for reasons.
    pub noun: &'static str,
    /// [`LensDef::noun`] inside a sentence.
    pub noun_lower: &'static str,
    /// What each network stands for in this lens's reasons: the plain names, except where the
    /// lens reads a network as part of another construct than the plain name says.
    pub network_names: [&'static str; 7],
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
        noun_lower: "attention",
        network_names: PLAIN,
    },
    LensDef {
        readout: brainscan_readouts::MEMORY,
        noun: "Memory encoding",
        noun_lower: "memory encoding",
        network_names: PLAIN,
    },
    LensDef {
        readout: brainscan_readouts::PURCHASE_INTENT,
        noun: "Buying intent",
        noun_lower: "buying intent",
        network_names: PURCHASE_INTENT_NETWORKS,
    },
    LensDef {
        readout: brainscan_readouts::MANIPULATION,
        noun: "Persuasive pressure",
        noun_lower: "persuasive pressure",
        network_names: PLAIN,
    },
];

/// The networks as purchase intent reads them (lens-standard 2.9.0). Its Limbic and
/// Frontoparietal weights are the `reward` profile's valuation foci (orbitofrontal and ventral
/// striatal value, goal-directed choice), not emotion or deliberation: up to 2.8.0 a hard sell
/// read "Buying intent holds high at 86, carried by deliberate thinking", which says the
/// opposite of what the lens measured.
const PURCHASE_INTENT_NETWORKS: [&str; 7] = [
    PLAIN[0],
    PLAIN[1],
    PLAIN[2],
    PLAIN[3],
    "valuation",
    "weighing the offer",
    PLAIN[6],
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
                seconds: if def.name() == "manipulation" && !has_words(clip) {
                    not_assessable(rows.len(), NOT_ASSESSABLE)
                } else if never_driven(def, &rows) {
                    not_assessable(rows.len(), &nothing_to_read(def))
                } else {
                    score_lens(def, li, &rows)
                },
            })
            .collect())
    }
}

/// A lens with nothing to read: every second sits at the neutral 50 and says why.
///
/// The manipulation lens of a clip without words: pressure relative to deliberation has no
/// second term (deliberation is read from words), so it is not read as a verdict. A weighted
/// lens whose networks never leave rest ([`never_driven`]): nothing it reads is in the clip.
fn not_assessable(seconds: usize, reason: &str) -> Vec<LensSecond> {
    (0..seconds)
        .map(|_| LensSecond {
            score: 50.0,
            reason: reason.to_string(),
        })
        .collect()
}

/// Whether none of the networks a lens reads leaves rest in any second of the clip
/// ([`brainscan_readouts::Readout::never_driven`]).
///
/// Ranked on a corpus whose median second has speech, such a clip read as the corpus's least:
/// a silent test pattern scored purchase intent 11.6 (qualia 2.9.0, the known-groups battery's
/// S2 row), a verdict about content the clip does not have. Since lens-standard 2.5.0 it is
/// "not assessable" instead, as manipulation is without words.
#[must_use]
pub fn never_driven(def: &LensDef, rows: &[[f32; 7]]) -> bool {
    def.readout.never_driven(rows)
}

/// The reason a weighted lens gives when [`never_driven`].
fn nothing_to_read(def: &LensDef) -> String {
    format!(
        "{} is not assessable: nothing this lens reads responded anywhere in the clip, so there is nothing to rank. Its scores sit at the neutral 50, which is no reading, not a verdict.",
        def.noun
    )
}

/// Scores and reasons for one lens over the clip.
pub fn score_lens(def: &LensDef, lens_index: usize, rows: &[[f32; 7]]) -> Vec<LensSecond> {
    let mut out = Vec::with_capacity(rows.len());
    let mut previous: Option<f64> = None;
    let mut seen = [0usize; SITUATIONS];
    let calibration = def.readout.calibration();
    for row in rows {
        let effect = def.readout.effect(row);
        let parts: [f64; 7] = core::array::from_fn(|i| effect[i] * f64::from(row[i]));
        let score = round_score(calibration.percentile(def.readout.raw(row)));
        let reason = reason(def, lens_index, &mut seen, score, previous, &parts, &effect);
        previous = Some(score);
        out.push(LensSecond {
            score: score as f32,
            reason,
        });
    }
    out
}

/// The network that moved this lens most at this second, and whether it pushed up or down;
/// `None` when no network pushes it that way (every part is zero or points the other way), so
/// that a reason never names a network for a movement it did not cause.
fn driver(parts: &[f64; 7], towards_up: bool) -> Option<(usize, bool)> {
    let mut best = 0;
    let mut best_v = f64::NEG_INFINITY;
    for (i, p) in parts.iter().enumerate() {
        let v = if towards_up { *p } else { -*p };
        if v > best_v {
            best_v = v;
            best = i;
        }
    }
    (best_v > 0.0).then_some((best, parts[best] >= 0.0))
}

/// Big rise, rise, big fall, fall, high, low, neutral.
const SITUATIONS: usize = 7;

/// A reason's phrasing: text and the values between it, so a reason is built by copying
/// strings, not by `format!`, whose machinery (a dynamic writer, padding, float formatting)
/// was most of this plugin's time in wasm. Each template's sentence is in the comment above it.
#[derive(Clone, Copy)]
enum Piece {
    Text(&'static str),
    /// The lens's noun, as a sentence starts.
    Noun,
    /// The noun inside a sentence.
    Lower,
    Score,
    /// The change from the previous second, signed.
    Delta,
    /// The plain name of the network that moved the lens most.
    Network,
    /// "rose" or "eased".
    Moved,
}

use Piece::{Delta, Lower, Moved, Network, Noun, Score, Text};

/// Three phrasings per situation (see `reason`).
const TEMPLATES: [[&[Piece]; 3]; SITUATIONS] = [
    // a big rise (20 points or more)
    [
        // {noun} surged to {score} (+{delta}) as {network} {moved}.
        &[
            Noun,
            Text(" surged to "),
            Score,
            Text(" (+"),
            Delta,
            Text(") as "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
        // A sharp rise in {lower}: +{delta} to {score}, driven by {network}.
        &[
            Text("A sharp rise in "),
            Lower,
            Text(": +"),
            Delta,
            Text(" to "),
            Score,
            Text(", driven by "),
            Network,
            Text("."),
        ],
        // {noun} jumped here ({score}, +{delta}): {network} {moved}.
        &[
            Noun,
            Text(" jumped here ("),
            Score,
            Text(", +"),
            Delta,
            Text("): "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
    ],
    // a rise (3 points or more)
    [
        // {noun} climbed here ({score}, +{delta}): {network} {moved}.
        &[
            Noun,
            Text(" climbed here ("),
            Score,
            Text(", +"),
            Delta,
            Text("): "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
        // {noun} picked up to {score} as {network} {moved}.
        &[
            Noun,
            Text(" picked up to "),
            Score,
            Text(" as "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
        // A lift in {lower}: {score}, driven by {network}.
        &[
            Text("A lift in "),
            Lower,
            Text(": "),
            Score,
            Text(", driven by "),
            Network,
            Text("."),
        ],
    ],
    // a big fall (20 points or more)
    [
        // {noun} plunged to {score} ({delta}) as {network} {moved}.
        &[
            Noun,
            Text(" plunged to "),
            Score,
            Text(" ("),
            Delta,
            Text(") as "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
        // A sharp drop in {lower}: {delta} to {score}, led by {network}.
        &[
            Text("A sharp drop in "),
            Lower,
            Text(": "),
            Delta,
            Text(" to "),
            Score,
            Text(", led by "),
            Network,
            Text("."),
        ],
        // {noun} fell away here ({score}, {delta}): {network} {moved}.
        &[
            Noun,
            Text(" fell away here ("),
            Score,
            Text(", "),
            Delta,
            Text("): "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
    ],
    // a fall (3 points or more)
    [
        // {noun} dropped to {score} ({delta}): {network} {moved}.
        &[
            Noun,
            Text(" dropped to "),
            Score,
            Text(" ("),
            Delta,
            Text("): "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
        // {noun} slipped here ({score}) as {network} {moved}.
        &[
            Noun,
            Text(" slipped here ("),
            Score,
            Text(") as "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
        // A dip in {lower}: {score}, led by {network}.
        &[
            Text("A dip in "),
            Lower,
            Text(": "),
            Score,
            Text(", led by "),
            Network,
            Text("."),
        ],
    ],
    // holding high (60 or more)
    [
        // {noun} holds high at {score}, carried by {network}.
        &[
            Noun,
            Text(" holds high at "),
            Score,
            Text(", carried by "),
            Network,
            Text("."),
        ],
        // Still strong ({score}): {network} keeps {lower} up.
        &[
            Text("Still strong ("),
            Score,
            Text("): "),
            Network,
            Text(" keeps "),
            Lower,
            Text(" up."),
        ],
        // {noun} stays above neutral ({score}); {network} leads.
        &[
            Noun,
            Text(" stays above neutral ("),
            Score,
            Text("); "),
            Network,
            Text(" leads."),
        ],
    ],
    // holding low (40 or less)
    [
        // {noun} stays low at {score}; {network} {moved}.
        &[
            Noun,
            Text(" stays low at "),
            Score,
            Text("; "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
        // Little {lower} here ({score}): {network} {moved}.
        &[
            Text("Little "),
            Lower,
            Text(" here ("),
            Score,
            Text("): "),
            Network,
            Text(" "),
            Moved,
            Text("."),
        ],
        // {noun} remains below neutral ({score}), mostly {network}.
        &[
            Noun,
            Text(" remains below neutral ("),
            Score,
            Text("), mostly "),
            Network,
            Text("."),
        ],
    ],
    // near neutral
    [
        // {noun} near neutral ({score}); no network stands out.
        &[
            Noun,
            Text(" near neutral ("),
            Score,
            Text("); no network stands out."),
        ],
        // A steady second for {lower} ({score}).
        &[
            Text("A steady second for "),
            Lower,
            Text(" ("),
            Score,
            Text(")."),
        ],
        // {noun} unchanged at {score}; {network} is the largest pull.
        &[
            Noun,
            Text(" unchanged at "),
            Score,
            Text("; "),
            Network,
            Text(" is the largest pull."),
        ],
    ],
];

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
    effect: &[f64; 7],
) -> String {
    let delta = previous.map_or(0.0, |p| score - p);
    let rising = delta >= 3.0;
    let falling = delta <= -3.0;
    let Some((net, net_up)) = driver(
        parts,
        if rising || falling {
            rising
        } else {
            score >= 50.0
        },
    ) else {
        return undriven(def, score, parts);
    };
    let network = def.network_names[net];
    let raised = effect[net] >= 0.0;
    // Is the driver a network that rose (above its mean) or one that fell?
    let moved = if net_up == raised { "rose" } else { "eased" };
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
    let template = TEMPLATES[situation][variant];
    let mut out = String::with_capacity(128);
    for piece in template {
        match *piece {
            Text(text) => out.push_str(text),
            Noun => out.push_str(def.noun),
            Lower => out.push_str(def.noun_lower),
            Score => push_whole(&mut out, score),
            Delta => push_whole(&mut out, delta),
            Network => out.push_str(network),
            Moved => out.push_str(moved),
        }
    }
    out
}

/// The reason for a second no network pushes in the direction the lens went or sits: at rest
/// (every network this lens reads is at its no-stimulus value, e.g. a music track on purchase
/// intent) or held where it is by the scale rather than by a network.
fn undriven(def: &LensDef, score: f64, parts: &[f64; 7]) -> String {
    let mut out = String::with_capacity(96);
    out.push_str(def.noun);
    out.push_str(" at ");
    push_whole(&mut out, score);
    if parts.iter().all(|p| *p == 0.0) {
        out.push_str(": the networks it reads are at rest.");
    } else {
        out.push_str("; no network pushes it further.");
    }
    out
}

/// Appends `v` as `{:.0}` writes it: rounded to the nearest whole number, halves to even, with
/// the sign of a negative value kept (`-0`), without core's float formatting (Grisu with a
/// big-number fallback, slow in wasm). A unit test checks it against `{:.0}` on every score
/// and every score difference the lens can produce.
fn push_whole(out: &mut String, v: f64) {
    // Whole numbers this large do not occur (scores are 0-100); leave them to core.
    if !v.is_finite() || v.abs() >= 1e15 {
        out.push_str(&format!("{v:.0}"));
        return;
    }
    if v.is_sign_negative() {
        out.push('-');
    }
    // `rint` rounds halves to even, as `{:.0}` does; below 1e15 the cast is exact.
    let mut n = brainscan_sdk::libm::rint(v.abs()) as u64;
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // ASCII digits, so this cannot fail.
    out.push_str(core::str::from_utf8(&digits[i..]).unwrap_or_default());
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
    fn a_lens_whose_networks_never_leave_rest_is_not_assessable() {
        // A silent pattern: Visual and Dorsal Attention move, Limbic and Frontoparietal do not.
        let rows = [
            [0.8, 0.0, 0.4, 0.1, 0.0, 0.0, 0.0],
            [1.2, 0.0, 0.6, 0.0, 0.0, 0.0, 0.0],
        ];
        let (attention, purchase) = (&LENSES[0], &LENSES[2]);
        assert!(!never_driven(attention, &rows));
        assert!(never_driven(purchase, &rows));
        // One second of Limbic drive anywhere makes it assessable again.
        let mut driven = rows;
        driven[1][4] = 0.3;
        assert!(!never_driven(purchase, &driven));
        // A contrast reads nothing only when neither term's networks move (manipulation is
        // first judged by its own rule, words).
        assert!(never_driven(&LENSES[3], &[[0.0; 7]]));
        assert!(!never_driven(&LENSES[3], &driven));
        let reason = nothing_to_read(purchase);
        assert!(
            reason.starts_with("Buying intent is not assessable"),
            "{reason}"
        );
    }

    #[test]
    fn lenses_read_their_profile_networks() {
        // attention reads the sensory and orienting networks only; memory and purchase intent
        // read Limbic, and purchase intent counts Default Mode, where the emotion profile
        // differs from the reward profile, as feeling (lens-standard 2.8.0); manipulation is the
        // balance of pressure over deliberation.
        let w = |i: usize| LENSES[i].readout.weights().expect("a weighted lens");
        assert!(w(0)[4] == 0.0 && w(0)[5] == 0.0 && w(0)[6] == 0.0 && w(0)[0] > 0.0);
        assert!(w(1)[4] > 0.0 && w(2)[4] > 0.0 && w(2)[5] > 0.0 && w(2)[6] < 0.0);
        assert_eq!(
            LENSES[3].readout.form,
            brainscan_readouts::Form::Contrast(
                &brainscan_readouts::PRESSURE,
                &brainscan_readouts::DELIBERATION
            )
        );
    }

    #[test]
    fn buying_intent_names_its_networks_as_valuation_not_as_emotion_or_deliberation() {
        // A plumbing check of the names (the weights' meaning is the README's): a second led by
        // Frontoparietal drive, then one led by Limbic drive, on the purchase-intent lens.
        let rows = [
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.1, 1.5, 0.0],
            [0.0, 0.0, 0.0, 0.0, 3.0, 0.1, 0.0],
        ];
        let seconds = score_lens(&LENSES[2], 2, &rows);
        let said: Vec<&str> = seconds.iter().map(|s| s.reason.as_str()).collect();
        assert!(said[1].contains("weighing the offer"), "{said:?}");
        assert!(said[2].contains("valuation"), "{said:?}");
        assert!(
            said.iter()
                .all(|r| !r.contains("deliberate thinking") && !r.contains("emotion")),
            "{said:?}"
        );
        // Manipulation still calls Frontoparietal deliberate thinking: it is deliberation there.
        assert_eq!(LENSES[3].network_names[5], "deliberate thinking");
    }

    #[test]
    fn push_whole_writes_what_float_formatting_writes() {
        let same = |v: f64| {
            let mut s = String::new();
            push_whole(&mut s, v);
            assert_eq!(s, format!("{v:.0}"), "{v:?}");
        };
        // Every score the lens can produce (0.1 steps), and every difference of two of them,
        // computed as `reason` computes it: halves (12.5) and near-halves (2.4999…) included.
        let scores: Vec<f64> = (0..=1000)
            .map(|k| round_score(f64::from(k) / 10.0))
            .collect();
        for &a in &scores {
            same(a);
            for &b in &scores {
                same(a - b);
            }
        }
        for v in [
            -0.0,
            -0.4,
            -0.5,
            -1.5,
            0.5,
            1.5,
            2.5,
            1e15,
            -3e16,
            f64::NAN,
            f64::INFINITY,
        ] {
            same(v);
        }
    }

    #[test]
    fn a_second_at_rest_names_no_network() {
        let rows = vec![[0.0f32; 7]; 4];
        for (i, def) in LENSES.iter().enumerate() {
            for s in score_lens(def, i, &rows) {
                assert!(
                    s.reason.ends_with(": the networks it reads are at rest."),
                    "{}",
                    s.reason
                );
                assert!(PLAIN.iter().all(|n| !s.reason.contains(n)), "{}", s.reason);
            }
        }
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
