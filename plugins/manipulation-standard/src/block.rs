//! The manipulation block, field by field. Inputs are the seven networks in z units. The
//! pressure, deliberation and manipulation readouts and their corpus calibration come from
//! `brainscan_readouts` (Neurosynth profiles); the alarm and relevance circuits are priors.
//! Every formula is listed in the README. Numbers are directional, network-proxied readings
//! of a population-average model — never a claim about one viewer's brain.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use brainscan_readouts::calibration::Calibration;
use brainscan_readouts::{ALARM, DELIBERATION, MANIPULATION, PRESSURE, RELEVANCE};
use brainscan_sdk::libm::round;
use brainscan_sdk::text::{NOT_ASSESSABLE, clock, has_words, line_at};
use brainscan_sdk::{
    Circuit, Clip, ExposureSecond, Manipulation, Mechanism, PeakMoment, Population, Quadrant,
    Threat, risk_band, stats,
};

use crate::tactics;

use brainscan_sdk::{DEFAULT_MODE, FRONTOPARIETAL, LIMBIC, VENTRAL_ATTENTION as VENTRAL};

/// The conversion risk, band and lens score of a clip whose manipulation is not assessable.
pub const NEUTRAL: f64 = 50.0;

/// Quadrant axes count as "on" from this score (0-100, 50 the corpus median).
pub const QUADRANT_ON: f64 = 55.0;

pub use brainscan_readouts::calibration::phi;

pub use brainscan_sdk::stats::round_to;

/// The calibrations the block reads, parsed once per clip.
pub struct Scales {
    pub pressure: Calibration,
    pub deliberation: Calibration,
    pub manipulation: Calibration,
    pub alarm: Calibration,
    pub relevance: Calibration,
}

impl Scales {
    #[must_use]
    pub fn embedded() -> Self {
        Self {
            pressure: PRESSURE.calibration(),
            deliberation: DELIBERATION.calibration(),
            manipulation: MANIPULATION.calibration(),
            alarm: ALARM.calibration(),
            relevance: RELEVANCE.calibration(),
        }
    }
}

/// One second's guard-down terms, each centred on its corpus median (0 = a typical second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Terms {
    /// Persuasion pressure (the `emotion` profile readout; the spec names the term `reward`).
    pub reward: f64,
    /// Deliberation (the `decision_making` profile readout).
    pub effort: f64,
    /// The gut-instinct alarm: Ventral Attention (a network prior; its inputs are the
    /// `salience` profile's abrupt events, and since qualia 2.9.0 the pressure and product axes (the `fear` and `reward` profiles).
    pub alarm: f64,
}

impl Terms {
    pub fn of(row: &[f32; 7], scales: &Scales) -> Self {
        Self {
            reward: PRESSURE.raw(row) - scales.pressure.value_at(50.0),
            effort: DELIBERATION.raw(row) - scales.deliberation.value_at(50.0),
            alarm: ALARM.raw(row) - scales.alarm.value_at(50.0),
        }
    }
    pub fn exposure(&self) -> f64 {
        self.reward - self.effort - self.alarm
    }
}

/// Mean of column `i` of the networks.
fn column_mean(rows: &[[f32; 7]], f: impl Fn(&[f32; 7]) -> f64) -> f64 {
    let xs: Vec<f64> = rows.iter().map(f).collect();
    stats::mean(&xs)
}

/// `raised` / `lowered` / `steady` from a 0-100 circuit value.
pub fn direction(value: f64) -> &'static str {
    if value >= 55.0 {
        "raised"
    } else if value <= 45.0 {
        "lowered"
    } else {
        "steady"
    }
}

/// `high` / `elevated` / `typical` / `reduced` / `low` from a 0-100 circuit value.
pub fn reading(value: f64) -> &'static str {
    if value >= 70.0 {
        "high"
    } else if value >= 55.0 {
        "elevated"
    } else if value > 45.0 {
        "typical"
    } else if value > 30.0 {
        "reduced"
    } else {
        "low"
    }
}

fn circuit(
    key: &str,
    label: &str,
    plain: &str,
    value: f64,
    up: &str,
    down: &str,
    steady: &str,
) -> Circuit {
    let direction = direction(value);
    Circuit {
        key: key.into(),
        label: label.into(),
        plain: plain.into(),
        value,
        direction: direction.into(),
        reading: reading(value).into(),
        meaning: match direction {
            "raised" => up,
            "lowered" => down,
            _ => steady,
        }
        .into(),
    }
}

/// Mean corpus percentile of a readout over the clip, one decimal.
fn mean_percentile(
    rows: &[[f32; 7]],
    readout: &brainscan_readouts::Readout,
    c: &Calibration,
) -> f64 {
    round_to(column_mean(rows, |r| c.percentile(readout.raw(r))), 1)
}

/// [`mean_percentile`], or `None` when no network the readout reads leaves rest anywhere in
/// the clip ([`brainscan_readouts::Readout::never_driven`]): there is then no reading, and a
/// percentile would rank rest against a corpus of speech ("reward low, 11.6" on a silent test
/// pattern before manipulation-standard 2.5.0).
fn assessed(
    rows: &[[f32; 7]],
    readout: &brainscan_readouts::Readout,
    c: &Calibration,
) -> Option<f64> {
    (!readout.never_driven(rows)).then(|| mean_percentile(rows, readout, c))
}

/// A circuit whose networks never left rest: the neutral 50, `steady`, and why.
fn circuit_not_assessable(key: &str, label: &str, plain: &str, what: &str) -> Circuit {
    Circuit {
        key: key.into(),
        label: label.into(),
        plain: plain.into(),
        value: NEUTRAL,
        direction: "steady".into(),
        reading: "not assessable".into(),
        meaning: format!(
            "Not assessable: {what} did not respond anywhere in the clip, so there is nothing to compare with a typical clip. The 50 is no reading, not a verdict."
        ),
    }
}

/// One circuit's texts: its key, label, plain description, the three meanings (raised,
/// lowered, steady) and what it reads, for the not-assessable sentence.
struct CircuitText {
    key: &'static str,
    label: &'static str,
    plain: &'static str,
    up: &'static str,
    down: &'static str,
    steady: &'static str,
    reads: &'static str,
}

const CIRCUITS: [CircuitText; 4] = [
    CircuitText {
        key: "critical_thinking",
        label: "Critical thinking",
        plain: "The deliberate, fact-checking part of the brain (the decision-making profile: frontoparietal control with default mode).",
        up: "Viewers are weighing the message: scrutiny is up, so claims have to hold up.",
        down: "Scrutiny is down: claims pass with less checking than usual.",
        steady: "Scrutiny sits at its usual level.",
        reads: "the networks it reads (frontoparietal and default mode)",
    },
    CircuitText {
        key: "reward",
        label: "Reward & approval",
        plain: "Emotional pull and approval (the emotion profile: the limbic and default mode networks). Wanting the product itself is the purchase-intent lens.",
        up: "The content stirs feeling: emotional pull and approval are up.",
        down: "Little emotional pull registers: the content stirs less feeling than usual.",
        steady: "Emotional pull sits at its usual level.",
        reads: "the networks it reads (limbic and default mode)",
    },
    CircuitText {
        key: "alarm",
        label: "Gut-instinct alarm",
        plain: "The salience network that flags something as off, risky or surprising (ventral attention, driven by abrupt events, cuts, flashes, sudden sounds and jumps in loudness, and by words of urgency, threat or reward).",
        up: "Abrupt events or charged words (urgency, threat, reward) keep the gut alarm up more than in a typical clip, which guards against persuasion.",
        down: "The gut alarm is quieter than in a typical clip: few abrupt events or charged words break the flow.",
        steady: "The gut alarm sits at its usual level.",
        reads: "the ventral attention network",
    },
    CircuitText {
        key: "relevance",
        label: "Personal relevance",
        plain: "How much the content is related to oneself (default mode network).",
        up: "Viewers relate it to themselves: the message feels personal.",
        down: "The content feels distant from the viewer's own life.",
        steady: "Personal relevance sits at its usual level.",
        reads: "the default mode network",
    },
];

fn circuits(rows: &[[f32; 7]], scales: &Scales) -> Vec<Circuit> {
    let values = [
        assessed(rows, &DELIBERATION, &scales.deliberation),
        assessed(rows, &PRESSURE, &scales.pressure),
        assessed(rows, &ALARM, &scales.alarm),
        assessed(rows, &RELEVANCE, &scales.relevance),
    ];
    CIRCUITS
        .iter()
        .zip(values)
        .map(|(t, value)| match value {
            Some(v) => circuit(t.key, t.label, t.plain, v, t.up, t.down, t.steady),
            None => circuit_not_assessable(t.key, t.label, t.plain, t.reads),
        })
        .collect()
}

/// Shares of social reward (limbic above baseline), motivational rapport (default mode above
/// baseline) and coercive authority (alarm above deliberation), summing to exactly 1.
pub fn mechanisms(rows: &[[f32; 7]]) -> Vec<Mechanism> {
    mechanisms_of(rows, true)
}

/// [`mechanisms`] of a clip without words: coercive authority weighs the alarm against
/// deliberation, which has no input there, so it takes no share. Before manipulation-standard
/// 2.6.0 a silent test pattern (abrupt events move Ventral Attention, nothing moves
/// Frontoparietal) read "Coercive Authority 100 %".
pub fn mechanisms_without_words(rows: &[[f32; 7]]) -> Vec<Mechanism> {
    mechanisms_of(rows, false)
}

fn mechanisms_of(rows: &[[f32; 7]], weigh_alarm: bool) -> Vec<Mechanism> {
    let pos = |v: f64| if v > 0.0 { v } else { 0.0 };
    let sr: f64 = rows.iter().map(|r| pos(f64::from(r[LIMBIC]))).sum();
    let mr: f64 = rows.iter().map(|r| pos(f64::from(r[DEFAULT_MODE]))).sum();
    let ca: f64 = if weigh_alarm {
        rows.iter()
            .map(|r| pos((f64::from(r[VENTRAL]) - f64::from(r[FRONTOPARIETAL])) / 2.0))
            .sum()
    } else {
        0.0
    };
    let total = sr + mr + ca;
    let (a, b) = if total > 1e-9 {
        (round_to(sr / total, 3), round_to(mr / total, 3))
    } else {
        (0.333, 0.333)
    };
    // The last share takes the rounding remainder so the three sum to 1 exactly (to 3 dp).
    let c = round_to(1.0 - a - b, 3);
    vec![
        Mechanism {
            key: "SR".into(),
            label: "Social Reward".into(),
            share: a,
        },
        Mechanism {
            key: "MR".into(),
            label: "Motivational Rapport".into(),
            share: b,
        },
        Mechanism {
            key: "CA".into(),
            label: "Coercive Authority".into(),
            share: c,
        },
    ]
}

/// The quadrant of a clip with words. `conversion_risk` is the clip's pressure relative to
/// deliberation (the manipulation lens's mean): a lowered guard is read as coercion only where
/// its risk band is at least `elevated`, see [`quadrant_of`].
pub fn quadrant(rows: &[[f32; 7]], scales: &Scales, conversion_risk: f64) -> Quadrant {
    quadrant_of(
        assessed(rows, &DELIBERATION, &scales.deliberation).map(|p| round_to(100.0 - p, 1)),
        assessed(rows, &PRESSURE, &scales.pressure),
        "nothing that reads scrutiny responded",
        matches!(risk_band(conversion_risk), "elevated" | "high"),
    )
}

/// The quadrant from its two axes, either of which may not be assessable (`None`: it then
/// reads the neutral 50 and the text says so). `no_guard` says why the guard axis is not
/// assessable.
///
/// `pressure_outruns`: whether the clip's pressure outweighs its deliberation more than a
/// typical clip's. A lowered guard with little emotional pull is `coercive` only then. Up to
/// manipulation-standard 2.10.0 the guard axis alone decided it, and since the axis is scrutiny
/// against the corpus (a lecture, poetry, speeches), calm product facts and a neutral
/// description read "Coercive: pressure rather than appeal" with nothing pressing at all.
fn quadrant_of(
    lowers_guard: Option<f64>,
    wins_over: Option<f64>,
    no_guard: &str,
    pressure_outruns: bool,
) -> Quadrant {
    let on = |v: Option<f64>| v.is_some_and(|v| v >= QUADRANT_ON);
    let (key, label, how): (&str, &str, alloc::string::String) = match (lowers_guard, wins_over) {
        (Some(_), Some(_)) => {
            let (key, label, how) = match (on(lowers_guard), on(wins_over)) {
                (false, false) => (
                    "clean",
                    "Clean",
                    "Neither lowers the viewer's guard nor pulls hard on feeling: any persuasion has to go through scrutiny.",
                ),
                (true, false) if pressure_outruns => (
                    "coercive",
                    "Coercive",
                    "Lowers the guard without much emotional pull: pressure rather than appeal.",
                ),
                (true, false) => (
                    "clean",
                    "Clean",
                    "Scrutiny runs below a typical clip's, but nothing presses: neither feeling nor pressure outweighs deliberate thinking.",
                ),
                (false, true) => (
                    "seductive",
                    "Seductive",
                    "Wins viewers over with feeling and relevance while their guard stays up.",
                ),
                (true, true) => (
                    "total",
                    "Total",
                    "Lowers the guard and wins viewers over at once: the most persuasive, least scrutinised combination.",
                ),
            };
            (key, label, how.into())
        }
        (None, Some(_)) if on(wins_over) => (
            "seductive",
            "Seductive",
            format!(
                "Whether it lowers the guard is not assessable ({no_guard}); feeling and relevance run above a typical clip."
            ),
        ),
        (None, Some(_)) => (
            "clean",
            "Clean",
            format!(
                "Whether it lowers the guard is not assessable ({no_guard}); feeling and relevance do not run above a typical clip."
            ),
        ),
        (Some(_), None) if on(lowers_guard) && pressure_outruns => (
            "coercive",
            "Coercive",
            "It lowers the guard; whether it wins viewers over is not assessable (nothing that reads feeling responded anywhere in the clip).".into(),
        ),
        (Some(_), None) if on(lowers_guard) => (
            "clean",
            "Clean",
            "Scrutiny runs below a typical clip's, but nothing presses; whether it wins viewers over is not assessable (nothing that reads feeling responded anywhere in the clip).".into(),
        ),
        (Some(_), None) => (
            "clean",
            "Clean",
            "It does not lower the guard; whether it wins viewers over is not assessable (nothing that reads feeling responded anywhere in the clip).".into(),
        ),
        (None, None) => (
            "clean",
            "Not assessable",
            format!(
                "Not assessable on either axis ({no_guard}, and nothing that reads feeling responded anywhere in the clip): both sit at the neutral 50, which is no reading."
            ),
        ),
    };
    Quadrant {
        key: key.into(),
        label: label.into(),
        lowers_guard: lowers_guard.unwrap_or(NEUTRAL),
        wins_over: wins_over.unwrap_or(NEUTRAL),
        how,
    }
}

/// The threat: its label, severity and colour from the band of `conversion_risk` (pressure
/// relative to deliberation), and a note written from what the circuits read. Before
/// manipulation-standard 2.7.0 the note came from the band alone, so a narrated clip whose
/// scrutiny read elevated and whose alarm read high was told "scrutiny and alarm stay low".
pub fn threat(conversion_risk: f64, circuits: &[Circuit]) -> Threat {
    let band = risk_band(conversion_risk);
    let (label, severity, color, headline) = match band {
        "high" => (
            "Persuasion outruns scrutiny",
            "critical",
            "#C62828",
            "Persuasion pressure (emotional pull) runs far above deliberate thinking for much of the clip, much more than in a typical clip.",
        ),
        "elevated" => (
            "Strong persuasive pull",
            "high",
            "#EF6C00",
            "Persuasion pressure runs above deliberate thinking more than in a typical clip: expect its claims to meet less scrutiny than their pull would call for.",
        ),
        "moderate" => (
            "Ordinary persuasion",
            "moderate",
            "#F9A825",
            "About as persuasive as typical content: pressure and deliberate thinking roughly balance.",
        ),
        _ => (
            "Little persuasive pressure",
            "nominal",
            "#2E7D32",
            "Deliberate thinking outweighs persuasion pressure: viewers are predicted to keep their guard up.",
        ),
    };
    Threat {
        label: label.into(),
        severity: severity.into(),
        color: color.into(),
        note: format!("{headline}{}", circuit_clause(band, circuits)),
    }
}

/// What scrutiny and the gut alarm read against a typical clip, and, where one of them is
/// raised while the band says the pull wins, that it pushes back: the band compares pressure
/// with deliberation only, so a raised circuit tempers it and is never hidden.
fn circuit_clause(band: &str, circuits: &[Circuit]) -> String {
    let find = |key: &str| circuits.iter().find(|c| c.key == key);
    let read = |c: &Circuit| {
        if c.reading == "not assessable" {
            "not assessable".to_string()
        } else {
            format!("{} ({:.0})", c.reading, c.value)
        }
    };
    let (Some(scrutiny), Some(alarm)) = (find("critical_thinking"), find("alarm")) else {
        return String::new();
    };
    let mut clause = format!(
        " Against a typical clip, scrutiny reads {} and the gut alarm {}.",
        read(scrutiny),
        read(alarm)
    );
    let pull_wins = matches!(band, "high" | "elevated");
    // A circuit that is not assessable reads `steady`, so only a reading can be raised.
    let raised = |c: &Circuit| c.direction == "raised";
    match (pull_wins, raised(scrutiny), raised(alarm)) {
        (true, true, true) => clause.push_str(
            " Both push back, but the pull outweighs the scrutiny.",
        ),
        (true, true, false) => clause.push_str(" Scrutiny is up too, but the pull outweighs it."),
        (true, false, true) => clause.push_str(
            " The raised alarm works against the pull: abrupt events or charged words keep viewers alert.",
        ),
        _ => {}
    }
    clause
}

/// The highest-exposure second and the run around it where exposure stays at least halfway
/// between the clip mean and the peak. `None` when exposure never rises above 0 (the guard is
/// never below baseline) or barely varies (σ < 0.05 z).
pub fn peak_moment(clip: &Clip, terms: &[Terms]) -> Option<PeakMoment> {
    let exposure: Vec<f64> = terms.iter().map(Terms::exposure).collect();
    if stats::std(&exposure) < 0.05 {
        return None;
    }
    let peak = (0..exposure.len()).fold(0, |b, i| if exposure[i] > exposure[b] { i } else { b });
    if exposure[peak] <= 0.0 {
        return None;
    }
    let bar = (stats::mean(&exposure) + exposure[peak]) / 2.0;
    let mut start = peak;
    while start > 0 && exposure[start - 1] >= bar {
        start -= 1;
    }
    let mut end = peak;
    while end + 1 < exposure.len() && exposure[end + 1] >= bar {
        end += 1;
    }
    let quote = line_at(clip, peak as u32)
        .or_else(|| (start..=end).find_map(|t| line_at(clip, t as u32)))
        .unwrap_or("")
        .to_string();
    let t = terms[peak];
    Some(PeakMoment {
        peak_sec: peak as u32,
        start_sec: start as u32,
        end_sec: end as u32,
        quote,
        why: format!(
            "Guard-down exposure peaks at {} ({:+.2}): emotional pull {:+.2}, deliberate thinking {:+.2}, gut alarm {:+.2} (against a typical second of the corpus). {}",
            clock(peak as u32),
            t.exposure(),
            t.reward,
            t.effort,
            t.alarm,
            if t.reward > 0.0 && t.effort < 0.0 {
                "Emotional pull rises while scrutiny drops — the classic opening for persuasion."
            } else if t.reward > 0.0 {
                "Emotional pull outweighs the checks that usually temper it."
            } else {
                "Scrutiny and alarm fall away even without much emotional pull."
            }
        ),
    })
}

/// The clip's highest-pressure quarter of seconds (at least one; ties by time).
fn pressured_seconds(terms: &[Terms]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..terms.len()).collect();
    order.sort_by(|a, b| terms[*b].reward.total_cmp(&terms[*a].reward).then(a.cmp(b)));
    order.truncate(terms.len().div_ceil(4).max(1));
    order
}

/// The block of a clip without words: persuasion pressure can be read, but deliberation has no
/// input, so nothing that weighs one against the other is a reading. The spec's numbers stay
/// numbers: conversion risk and sovereignty sit at the neutral [`NEUTRAL`] (so the band is
/// `moderate`, the band of 50, and never `elevated` or `high`), the threat is `nominal` and
/// labelled "Not assessable", the guard axis and the critical-thinking circuit read 50 and say
/// why, no second counts as more exposed than a typical one, and there is no peak moment.
/// What does not depend on deliberation (reward, alarm, relevance, and the social-reward and
/// rapport mechanisms) is reported as measured, or as not assessable where its networks never
/// left rest; coercive authority, the alarm weighed against deliberation, takes no share.
fn not_assessable(mut m: Manipulation, rows: &[[f32; 7]], scales: &Scales) -> Manipulation {
    m.conversion_risk = NEUTRAL;
    m.risk_band = risk_band(NEUTRAL).into();
    m.sovereignty = NEUTRAL;
    m.cognitive_sovereignty_index = 0.0;
    m.threat = Threat {
        label: "Not assessable".into(),
        severity: "nominal".into(),
        color: "#757575".into(),
        note: NOT_ASSESSABLE.into(),
    };
    m.population = Population {
        per_ten: 0.0,
        per_ten_thousand: 0.0,
        note: "Not assessable: the clip has no words, so no second can be read as more persuasive than a typical one. No audience was measured.".into(),
    };
    m.quadrant = quadrant_of(
        None,
        assessed(rows, &PRESSURE, &scales.pressure),
        "no words to weigh",
        false,
    );
    if let Some(c) = m.circuits.iter_mut().find(|c| c.key == "critical_thinking") {
        c.value = NEUTRAL;
        c.direction = "steady".into();
        c.reading = "not assessable".into();
        c.meaning =
            "Not assessable: the clip has no words, and scrutiny is read from words.".into();
    }
    for t in &mut m.timeline {
        t.effort = 0.0;
        t.exposure = round_to(t.reward - t.alarm, 3);
    }
    m.peak_moment = None;
    m.mechanisms = mechanisms_without_words(rows);
    m
}

pub fn analyze(clip: &Clip) -> Manipulation {
    let m = measured(clip);
    if has_words(clip) {
        m
    } else {
        let rows: Vec<[f32; 7]> = clip.networks.iter().map(|n| n.values()).collect();
        not_assessable(m, &rows, &Scales::embedded())
    }
}

/// The block as the networks read, deliberation included.
fn measured(clip: &Clip) -> Manipulation {
    let scales = Scales::embedded();
    let rows: Vec<[f32; 7]> = clip.networks.iter().map(|n| n.values()).collect();
    let mut terms: Vec<Terms> = rows.iter().map(|r| Terms::of(r, &scales)).collect();
    // A term whose networks never leave rest has no reading: it is 0, a typical second, not
    // rest ranked against a corpus of speech (which put every second of a silent test pattern
    // far below the corpus median on reward).
    let (no_reward, no_effort, no_alarm) = (
        PRESSURE.never_driven(&rows),
        DELIBERATION.never_driven(&rows),
        ALARM.never_driven(&rows),
    );
    for t in &mut terms {
        if no_reward {
            t.reward = 0.0;
        }
        if no_effort {
            t.effort = 0.0;
        }
        if no_alarm {
            t.alarm = 0.0;
        }
    }
    // conversion_risk: the manipulation lens's clip mean (corpus percentiles).
    let per_second: Vec<f64> = rows
        .iter()
        .map(|r| scales.manipulation.percentile(MANIPULATION.raw(r)))
        .collect();
    let conversion_risk = round_to(stats::mean(&per_second), 1);
    // cognitive_sovereignty_index: does deliberation hold up when the pressure is on? The mean
    // deliberation percentile over the clip's highest-pressure quarter, as −1 (at the corpus's
    // lowest) … 0 (its median) … +1 (its highest).
    let held: Vec<f64> = pressured_seconds(&terms)
        .into_iter()
        .map(|i| scales.deliberation.percentile(DELIBERATION.raw(&rows[i])))
        .collect();
    let sovereignty_index = (stats::mean(&held) - 50.0) / 50.0;
    // population: the share of the clip's seconds whose persuasion pressure relative to
    // deliberation is above the corpus median — a share of seconds, not of people.
    let open = per_second.iter().filter(|p| **p > 50.0).count() as f64 / per_second.len() as f64;
    let pbi = column_mean(&rows, |r| {
        f64::from(r[DEFAULT_MODE]) - f64::from(r[FRONTOPARIETAL])
    });
    let circuit_readings = circuits(&rows, &scales);
    Manipulation {
        conversion_risk,
        risk_band: risk_band(conversion_risk).into(),
        cognitive_sovereignty_index: round_to(sovereignty_index, 2),
        sovereignty: round_to(100.0 - conversion_risk, 1),
        pbi: round_to(pbi, 2),
        threat: threat(conversion_risk, &circuit_readings),
        population: Population {
            per_ten: round_to(open * 10.0, 1),
            per_ten_thousand: round(open * 10_000.0),
            note: format!(
                "Directional model estimate about this clip's seconds, not a share of people: in {:.1} of every 10 seconds the model predicts more persuasion pressure relative to deliberation than in a typical second of its benchmark corpus. No audience was measured.",
                open * 10.0
            ),
        },
        quadrant: quadrant(&rows, &scales, conversion_risk),
        circuits: circuit_readings,
        mechanisms: mechanisms(&rows),
        timeline: terms
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let (reward, effort, alarm) = (
                    round_to(t.reward, 3),
                    round_to(t.effort, 3),
                    round_to(t.alarm, 3),
                );
                ExposureSecond {
                    sec: i as u32,
                    // From the rounded terms, so exposure = reward − effort − alarm holds for
                    // the numbers the client reads.
                    exposure: round_to(reward - effort - alarm, 3),
                    reward,
                    effort,
                    alarm,
                }
            })
            .collect(),
        peak_moment: peak_moment(clip, &terms),
        tactics: tactics::find(clip),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brainscan_sdk::{Modalities, NetworkSecond, TranscriptLine};

    pub fn clip_of(rows: &[[f32; 7]], transcript: Vec<TranscriptLine>) -> Clip {
        Clip {
            duration_sec: rows.len() as f64,
            networks: rows
                .iter()
                .map(|r| NetworkSecond::from_values(*r))
                .collect(),
            modalities: Modalities {
                video: true,
                audio: true,
            },
            transcript,
        }
    }

    /// A row with the given Limbic, Frontoparietal and Default Mode values (the networks the
    /// pressure and deliberation readouts read; Ventral Attention at 0).
    fn row(limbic: f32, fp: f32, dm: f32) -> [f32; 7] {
        [0.0, 0.0, 0.0, 0.0, limbic, fp, dm]
    }

    #[test]
    fn conversion_risk_is_the_manipulation_lens_mean_and_terms_are_centred_readouts() {
        let rows = [row(2.0, -1.0, 0.5), row(-1.0, 1.0, 0.0), row(0.0, 0.0, 0.0)];
        let m = measured(&clip_of(&rows, Vec::new()));
        let s = Scales::embedded();
        let lens: Vec<f64> = rows
            .iter()
            .map(|r| s.manipulation.percentile(MANIPULATION.raw(r)))
            .collect();
        assert_eq!(m.conversion_risk, round_to(stats::mean(&lens), 1));
        assert_eq!(m.sovereignty, round_to(100.0 - m.conversion_risk, 1));
        assert_eq!(m.risk_band, risk_band(m.conversion_risk));
        let t = Terms::of(&rows[0], &s);
        assert!((t.reward - (PRESSURE.raw(&rows[0]) - s.pressure.value_at(50.0))).abs() < 1e-12);
        assert!(
            (t.effort - (DELIBERATION.raw(&rows[0]) - s.deliberation.value_at(50.0))).abs() < 1e-12
        );
        // Ventral Attention at rest, against the corpus median of the alarm readout.
        assert!((t.alarm - (0.0 - s.alarm.value_at(50.0))).abs() < 1e-12);
        // pbi = mean(DM − FP) = (1.5 − 1 + 0)/3
        assert_eq!(m.pbi, 0.17);
    }

    #[test]
    fn the_three_former_aliases_now_measure_different_things() {
        // Two clips with the same conversion risk ordering can differ on the other two: one
        // long mild pressure (many seconds just above the corpus median) against one short
        // spike (few seconds far above it).
        let mild: Vec<[f32; 7]> = (0..20).map(|_| row(0.6, -0.2, 0.0)).collect();
        let mut spike: Vec<[f32; 7]> = (0..20).map(|_| row(-0.6, 0.3, 0.0)).collect();
        for r in spike.iter_mut().take(4) {
            *r = row(6.0, -3.0, 0.0);
        }
        let (a, b) = (
            measured(&clip_of(&mild, Vec::new())),
            measured(&clip_of(&spike, Vec::new())),
        );
        // population counts seconds above the corpus median: all of `mild`, a fifth of `spike`.
        assert_eq!(a.population.per_ten, 10.0);
        assert_eq!(b.population.per_ten, 2.0);
        assert_eq!(b.population.per_ten_thousand, 2000.0);
        assert!(a.population.note.contains("not a share of people"));
        // The sovereignty index reads deliberation in each clip's highest-pressure quarter:
        // `spike`'s spike seconds, where deliberation is far below the corpus median.
        assert!(
            b.cognitive_sovereignty_index < 0.0,
            "{}",
            b.cognitive_sovereignty_index
        );
        // Deliberation high under pressure reads as judgment intact.
        let guarded: Vec<[f32; 7]> = (0..10)
            .map(|i| row(f32::from(i as u8) * 0.3, 3.0, 2.0))
            .collect();
        assert!(measured(&clip_of(&guarded, Vec::new())).cognitive_sovereignty_index > 0.0);
    }

    #[test]
    fn the_threat_note_says_what_the_circuits_read() {
        // Pressure far above deliberation (the band is high) while deliberation and the alarm
        // both run above a typical clip: the narrated-clip case where 2.6.0 said "scrutiny and
        // alarm stay low" beside circuits that read them elevated and high. Since 2.8.0
        // deliberation weighs Limbic too (qualia 2.11.0), so the pull is Limbic with
        // Frontoparietal below rest (up to 2.7.0: Limbic 6, Frontoparietal 0.3).
        let rows: Vec<[f32; 7]> = (0..10)
            .map(|_| [0.0, 0.0, 0.0, 3.0, 2.0, -0.5, 0.4])
            .collect();
        let m = measured(&clip_of(&rows, Vec::new()));
        let circuit = |key: &str| {
            m.circuits
                .iter()
                .find(|c| c.key == key)
                .expect("circuit")
                .clone()
        };
        let (scrutiny, alarm) = (circuit("critical_thinking"), circuit("alarm"));
        assert_eq!(m.risk_band, "high", "{}", m.conversion_risk);
        assert_eq!(alarm.direction, "raised", "{}", alarm.value);
        assert_eq!(scrutiny.direction, "raised", "{}", scrutiny.value);
        let note = &m.threat.note;
        assert!(!note.contains("low"), "{note}");
        assert!(
            note.contains(&format!(
                "scrutiny reads {} ({:.0})",
                scrutiny.reading, scrutiny.value
            )),
            "{note}"
        );
        assert!(
            note.contains(&format!(
                "the gut alarm {} ({:.0})",
                alarm.reading, alarm.value
            )),
            "{note}"
        );
        assert!(note.contains("push back"), "{note}");
        assert_eq!(m.threat.label, "Persuasion outruns scrutiny");

        // The low band with a quiet alarm: no pushback clause, the readings still stated.
        let calm: Vec<[f32; 7]> = (0..10)
            .map(|_| [0.0, 0.0, 0.0, -1.0, -1.0, 2.0, 1.0])
            .collect();
        let m = measured(&clip_of(&calm, Vec::new()));
        assert_eq!(m.risk_band, "low", "{}", m.conversion_risk);
        assert!(
            m.threat.note.contains("keep their guard up"),
            "{}",
            m.threat.note
        );
        assert!(
            m.threat
                .note
                .contains("Against a typical clip, scrutiny reads")
        );
        assert!(!m.threat.note.contains("push"), "{}", m.threat.note);
    }

    #[test]
    fn band_edges() {
        assert_eq!(risk_band(39.9), "low");
        assert_eq!(risk_band(40.0), "moderate");
        assert_eq!(risk_band(54.9), "moderate");
        assert_eq!(risk_band(55.0), "elevated");
        assert_eq!(risk_band(69.9), "elevated");
        assert_eq!(risk_band(70.0), "high");
        assert_eq!(threat(39.9, &[]).severity, "nominal");
        assert_eq!(threat(40.0, &[]).severity, "moderate");
        assert_eq!(threat(55.0, &[]).severity, "high");
        assert_eq!(threat(70.0, &[]).severity, "critical");
    }

    #[test]
    fn quadrant_corners() {
        let s = Scales::embedded();
        // Pressure up and deliberation down → total; the reverse → clean.
        assert_eq!(quadrant(&[row(4.0, -4.0, 0.0)], &s, 80.0).key, "total");
        assert_eq!(quadrant(&[row(-4.0, 4.0, 4.0)], &s, 20.0).key, "clean");
        assert_eq!(quadrant(&[row(-4.0, -4.0, -4.0)], &s, 60.0).key, "coercive");
        assert_eq!(quadrant(&[row(6.0, 4.0, 4.0)], &s, 50.0).key, "seductive");
        let q = quadrant(&[row(1.0, -1.0, 0.0)], &s, 50.0);
        assert_eq!(
            q.wins_over,
            round_to(s.pressure.percentile(PRESSURE.raw(&row(1.0, -1.0, 0.0))), 1)
        );
        assert_eq!(
            q.lowers_guard,
            round_to(
                100.0
                    - round_to(
                        s.deliberation
                            .percentile(DELIBERATION.raw(&row(1.0, -1.0, 0.0))),
                        1
                    ),
                1
            )
        );
    }

    #[test]
    fn a_lowered_guard_is_coercion_only_where_pressure_outruns_deliberation() {
        // Calm facts or a neutral description: scrutiny below the corpus's (a lecture, poetry),
        // little feeling, and a low pressure-over-deliberation balance. Nothing presses.
        let s = Scales::embedded();
        let quiet = [row(-4.0, -4.0, -4.0)];
        let q = quadrant(&quiet, &s, 10.7);
        assert!(
            q.lowers_guard >= QUADRANT_ON && q.wins_over < QUADRANT_ON,
            "{q:?}"
        );
        assert_eq!(q.key, "clean", "{q:?}");
        assert!(q.how.contains("nothing presses"), "{}", q.how);
        // The same axes with pressure outrunning deliberation are coercion.
        assert_eq!(quadrant(&quiet, &s, 55.0).key, "coercive");
        // Without a feeling axis to read, a lowered guard that nothing presses is not
        // described as a guard that holds.
        let q = quadrant_of(Some(65.0), None, "", false);
        assert_eq!(q.key, "clean");
        assert!(q.how.starts_with("Scrutiny runs below"), "{}", q.how);
        assert_eq!(quadrant_of(Some(65.0), None, "", true).key, "coercive");
        assert!(
            quadrant_of(Some(30.0), None, "", false)
                .how
                .starts_with("It does not lower the guard")
        );
        // And the block passes the clip's own conversion risk.
        let m = measured(&clip_of(&quiet, Vec::new()));
        assert_eq!(
            m.quadrant.key == "coercive",
            m.conversion_risk >= QUADRANT_ON,
            "{m:?}"
        );
    }

    #[test]
    fn mechanism_shares_sum_to_one() {
        let rows = [
            [0.0, 0.0, 0.0, 0.3, 0.7, -0.1, 0.2],
            [0.0, 0.0, 0.0, -0.2, 0.1, 0.4, 0.9],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ];
        let m = mechanisms(&rows);
        let sum: f64 = m.iter().map(|x| x.share).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        // SR = 0.8, MR = 1.1, CA = 0.2 → 0.381, 0.524, 0.095
        let shares = |m: Vec<Mechanism>| -> Vec<f64> { m.iter().map(|x| x.share).collect() };
        assert_eq!(shares(m), [0.381, 0.524, 0.095]);
        assert_eq!(shares(mechanisms(&[[0.0; 7]])), [0.333, 0.333, 0.334]);
        // Without words, the alarm has no deliberation to be weighed against: an alarm alone
        // is no split (a third each, the contract's value when nothing responded), and beside
        // Limbic it takes no share.
        let alarm_only = [[0.0, 0.0, 0.0, 0.8, 0.0, 0.0, 0.0]; 3];
        assert_eq!(shares(mechanisms(&alarm_only)), [0.0, 0.0, 1.0]);
        assert_eq!(
            shares(mechanisms_without_words(&alarm_only)),
            [0.333, 0.333, 0.334]
        );
        let with_limbic = [[0.0, 0.0, 0.0, 0.8, 0.4, 0.0, 0.1]; 2];
        assert_eq!(
            shares(mechanisms_without_words(&with_limbic)),
            [0.8, 0.2, 0.0]
        );
    }

    #[test]
    fn peak_moment_window_and_quote() {
        let mut rows = vec![[0.0f32; 7]; 10];
        // exposure = reward − effort − alarm; raise limbic (pressure) at 4..=6, most at 5.
        rows[4][LIMBIC] = 1.0;
        rows[5][LIMBIC] = 4.0;
        rows[6][LIMBIC] = 1.2;
        let clip = clip_of(
            &rows,
            vec![TranscriptLine {
                start_sec: 4.8,
                end_sec: 6.5,
                text: " Only today ".into(),
            }],
        );
        let m = analyze(&clip);
        let p = m.peak_moment.expect("a peak");
        // pressure weighs Limbic 0.92: exposure rises by 0.92, 3.70 and 1.11 over the flat
        // seconds; the bar halfway from the mean to the peak (≈ 0.6 + 1.85 over the flat level)
        // leaves 4 and 6 below it.
        assert_eq!((p.peak_sec, p.start_sec, p.end_sec), (5, 5, 5));
        assert_eq!(p.quote, "Only today");
        assert!(p.why.contains("0:05"));
        assert!(
            measured(&clip_of(&[[0.0; 7]; 5], Vec::new()))
                .peak_moment
                .is_none()
        );
    }

    #[test]
    fn every_field_is_consistent() {
        let rows: Vec<[f32; 7]> = (0..40)
            .map(|i| {
                let x = i as f32 * 0.37;
                [
                    (x).sin(),
                    (x * 1.3).cos(),
                    (x * 0.7).sin(),
                    (x * 2.1).cos() * 0.8,
                    (x * 0.5).sin() * 1.5,
                    (x * 1.7).cos(),
                    (x * 0.9).sin() * 1.2,
                ]
            })
            .collect();
        let m = measured(&clip_of(&rows, Vec::new()));
        assert!((0.0..=100.0).contains(&m.conversion_risk));
        assert!((m.sovereignty + m.conversion_risk - 100.0).abs() < 1e-9);
        assert_eq!(m.risk_band, risk_band(m.conversion_risk));
        assert_eq!(m.timeline.len(), 40);
        for (i, s) in m.timeline.iter().enumerate() {
            assert_eq!(s.sec, i as u32);
            assert!((s.exposure - (s.reward - s.effort - s.alarm)).abs() < 1.5e-3);
        }
        assert_eq!(m.circuits.len(), 4);
        for c in &m.circuits {
            assert!((0.0..=100.0).contains(&c.value));
            assert_eq!(c.direction, direction(c.value));
            assert_eq!(c.reading, reading(c.value));
        }
        assert!(m.threat.color.starts_with('#') && m.threat.color.len() == 7);
    }

    #[test]
    fn property_blocks_are_consistent_on_random_networks() {
        let mut x: u64 = 3;
        let mut r = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 10_000) as f32 / 10_000.0
        };
        for case in 0..300 {
            let len = 1 + (r() * 180.0) as usize;
            let scale = r() * 4.0;
            let rows: Vec<[f32; 7]> = (0..len)
                .map(|_| core::array::from_fn(|_| (r() - 0.5) * scale))
                .collect();
            let m = measured(&clip_of(&rows, Vec::new()));
            assert!((0.0..=100.0).contains(&m.conversion_risk), "case {case}");
            assert_eq!(m.risk_band, risk_band(m.conversion_risk));
            let shares: f64 = m.mechanisms.iter().map(|s| s.share).sum();
            assert!((shares - 1.0).abs() < 1e-9, "case {case}: {shares}");
            assert!(m.mechanisms.iter().all(|s| (0.0..=1.0).contains(&s.share)));
            assert!((0.0..=100.0).contains(&m.quadrant.lowers_guard));
            assert!((0.0..=100.0).contains(&m.quadrant.wins_over));
            assert_eq!(m.timeline.len(), len);
            if let Some(p) = &m.peak_moment {
                assert!(p.start_sec <= p.peak_sec && p.peak_sec <= p.end_sec);
                assert!((p.end_sec as usize) < len);
            }
        }
    }

    #[test]
    fn without_words_manipulation_is_not_assessable_and_never_reads_high() {
        // Strong pressure (Limbic) and no deliberation: measured, this is the top band.
        let rows = vec![row(3.0, -1.0, 0.0); 10];
        let measured = measured(&clip_of(&rows, Vec::new()));
        assert_eq!(measured.risk_band, "high");
        let m = analyze(&clip_of(&rows, Vec::new()));
        assert_eq!(m.conversion_risk, NEUTRAL);
        assert_eq!(m.risk_band, "moderate");
        assert_eq!(m.threat.severity, "nominal");
        assert_eq!(m.threat.label, "Not assessable");
        assert!(m.threat.note.contains("no words"), "{}", m.threat.note);
        assert_eq!(m.quadrant.lowers_guard, NEUTRAL);
        assert!(
            m.quadrant.how.contains("not assessable"),
            "{}",
            m.quadrant.how
        );
        let ct = m
            .circuits
            .iter()
            .find(|c| c.key == "critical_thinking")
            .expect("circuit");
        assert_eq!(ct.reading, "not assessable");
        assert!(m.peak_moment.is_none());
        assert_eq!(m.population.per_ten, 0.0);
        for t in &m.timeline {
            assert_eq!(t.effort, 0.0);
            assert!((t.exposure - (t.reward - t.alarm)).abs() < 1e-3);
        }
        // The same networks with a line of speech are read as measured.
        let words = vec![TranscriptLine {
            start_sec: 1.0,
            end_sec: 3.0,
            text: "Buy it now.".into(),
        }];
        let spoken = analyze(&clip_of(&rows, words));
        assert_eq!(spoken.risk_band, "high");
        assert_ne!(spoken.threat.label, "Not assessable");
    }

    /// A silent moving pattern drives only the sensory networks. No circuit, axis or timeline
    /// term may rank the networks at rest against the corpus (manipulation-standard 2.4.0 read
    /// "reward low, 11.6" and "relevance low" for it); what did move (here the alarm) is read.
    #[test]
    fn networks_at_rest_are_not_read_as_low() {
        let silent: Vec<[f32; 7]> = (0..12)
            .map(|i| [1.0 + 0.1 * i as f32, 0.0, 0.6, 0.0, 0.0, 0.0, 0.0])
            .collect();
        let m = analyze(&clip_of(&silent, Vec::new()));
        for c in &m.circuits {
            assert_eq!(c.reading, "not assessable", "{}: {}", c.key, c.meaning);
            assert_eq!((c.value, c.direction.as_str()), (NEUTRAL, "steady"));
            assert!(c.meaning.starts_with("Not assessable"), "{}", c.meaning);
            assert!(
                !c.meaning.contains("nothing this circuit reads"),
                "a double negative: {}",
                c.meaning
            );
        }
        assert_eq!(m.quadrant.label, "Not assessable");
        assert_eq!(
            (m.quadrant.lowers_guard, m.quadrant.wins_over),
            (NEUTRAL, NEUTRAL)
        );
        assert!(
            m.timeline
                .iter()
                .all(|t| t.reward == 0.0 && t.alarm == 0.0 && t.exposure == 0.0)
        );
        assert!(m.peak_moment.is_none());
        // The alarm network moving (cuts in the pattern) is read; the rest still is not.
        let mut cut = silent.clone();
        cut[4][VENTRAL] = 2.0;
        let m = analyze(&clip_of(&cut, Vec::new()));
        let read: Vec<&str> = m.circuits.iter().map(|c| c.reading.as_str()).collect();
        assert_ne!(read[2], "not assessable", "{read:?}");
        assert_eq!(read[1], "not assessable");
        assert_eq!(read[3], "not assessable");
        // With speech the same rule holds per circuit: Limbic moving makes reward assessable
        // and puts a number on both axes of the quadrant (since 2.8.0 deliberation, the guard
        // axis, weighs Limbic too: qualia 2.11.0's decision-making profile); relevance
        // (Default Mode alone) still has nothing to read.
        let mut felt = silent;
        felt[3][LIMBIC] = 1.5;
        let words = vec![TranscriptLine {
            start_sec: 0.0,
            end_sec: 2.0,
            text: "A river.".into(),
        }];
        let m = analyze(&clip_of(&felt, words));
        let reward = m
            .circuits
            .iter()
            .find(|c| c.key == "reward")
            .expect("reward");
        assert_ne!(reward.reading, "not assessable");
        assert_ne!(m.quadrant.wins_over, NEUTRAL);
        let relevance = m
            .circuits
            .iter()
            .find(|c| c.key == "relevance")
            .expect("relevance");
        assert_eq!(relevance.reading, "not assessable");
        assert_ne!(m.quadrant.lowers_guard, NEUTRAL);
        assert!(
            !m.quadrant.how.contains("not assessable"),
            "{}",
            m.quadrant.how
        );
    }
}
