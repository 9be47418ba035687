//! Buy moments: windows where predicted purchase intent stays above the clip's own average.
//!
//! **Only seconds with a purchase-intent reading count** (since moments-standard 1.7.0): the
//! mean, the spread and the windows are taken over them (`crate::reading_mask`), so rest, a
//! silent face or music never makes or breaks a window.
//!
//! The basis is the `purchase_intent` lens series itself (the valuation readout), so buy
//! moments always agree with the scores the client sees; when that lens was not scored there
//! is nothing to read and the answer is `None` (the API's `null`).
//!
//! - A **window** is a run of at least [`MIN_WINDOW_SECONDS`] consecutive seconds whose score
//!   is above the clip mean.
//! - It **clears the bar** when its peak is at least [`MIN_PEAK_SD`] standard deviations
//!   above the mean and at least [`MIN_PEAK_POINTS`] points above it — so a flat clip, whose
//!   "above average" seconds are rounding noise, has none.
//! - Windows are ranked by peak excess over the mean; at most [`MAX_WINDOWS`] are returned,
//!   strongest first. `strength_pct` = 100 · excess / the strongest window's excess.
//! - `trigger` lists the drivers that flagged the peak second, against the clip's own mean of
//!   each network, and only those that pushed the purchase-intent readout up there (the sign of
//!   the readout's weight on the network, `brainscan_readouts::PURCHASE_INTENT`), so the
//!   insight never says a driver lifted buying intent when the lens counts it the other way:
//!   **reward** (Limbic above its mean), **personal relevance** (Default Mode above its mean,
//!   where the readout weighs Default Mode up), **drop in skepticism** (the alarm, Ventral
//!   Attention, below its mean, or Frontoparietal below its mean where the readout weighs
//!   Frontoparietal down). Since lens-standard 2.8.0 purchase intent counts Default Mode as
//!   feeling rather than wanting and Frontoparietal as valuation, so personal relevance and a
//!   Frontoparietal drop no longer flag a buy peak; up to 2.7.0 a peak with Default Mode above
//!   its mean read "the viewer … sees it as theirs". The list can be empty: the readout also
//!   rises on Frontoparietal activity, which no trigger names. Up to qualia 2.7.0 ventral
//!   attention had no input and was 0 everywhere, never above its mean, so every peak read
//!   "drop in skepticism"; since 2.8.0 it follows abrupt events (the `salience` profile) and
//!   the trigger fires only where the alarm is below the clip's own level.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use brainscan_readouts::PURCHASE_INTENT;
use brainscan_sdk::text::{clock, line_at, ordinal};
use brainscan_sdk::{
    BuyMoment, Clip, DEFAULT_MODE, FRONTOPARIETAL, LIMBIC, LensSeries, VENTRAL_ATTENTION, stats,
};

use crate::moments::round_to;

pub const MIN_WINDOW_SECONDS: usize = 3;
pub const MIN_PEAK_SD: f64 = 0.5;
pub const MIN_PEAK_POINTS: f64 = 2.0;
pub const MAX_WINDOWS: usize = 5;

/// A window before it is written up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start: u32,
    pub end: u32,
    pub peak: u32,
    /// Peak score minus the clip mean, in points.
    pub excess: f64,
}

/// The windows that clear the bar, strongest first (module docs for the rule).
pub fn find(scores: &[f64]) -> Vec<Window> {
    find_where_read(scores, &alloc::vec![true; scores.len()])
}

/// [`find`] over the seconds with a reading (`read`): the mean and spread are theirs, and a
/// window is a run of them.
pub fn find_where_read(scores: &[f64], read: &[bool]) -> Vec<Window> {
    let counted = |t: usize| read.get(t).copied().unwrap_or(true);
    let values: Vec<f64> = (0..scores.len())
        .filter(|t| counted(*t))
        .map(|t| scores[t])
        .collect();
    if values.is_empty() {
        return Vec::new();
    }
    let mean = stats::mean(&values);
    let sd = stats::std(&values);
    let mut out = Vec::new();
    let mut t = 0;
    while t < scores.len() {
        if !counted(t) || scores[t] <= mean {
            t += 1;
            continue;
        }
        let start = t;
        while t < scores.len() && counted(t) && scores[t] > mean {
            t += 1;
        }
        let end = t - 1;
        if end + 1 - start < MIN_WINDOW_SECONDS {
            continue;
        }
        // The first maximum, so equal peaks resolve the same way every run.
        let peak = (start..=end).fold(
            start,
            |best, i| {
                if scores[i] > scores[best] { i } else { best }
            },
        );
        let excess = scores[peak] - mean;
        if excess >= MIN_PEAK_POINTS && excess >= MIN_PEAK_SD * sd {
            out.push(Window {
                start: start as u32,
                end: end as u32,
                peak: peak as u32,
                excess,
            });
        }
    }
    out.sort_by(|a, b| b.excess.total_cmp(&a.excess).then(a.start.cmp(&b.start)));
    out.truncate(MAX_WINDOWS);
    out
}

/// What raised the purchase-intent readout at a peak second, from the readout's own parts
/// (each network's weight times its value there), against the clip's own level of each
/// network over the seconds with a reading.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Drivers {
    /// The valuation part (Limbic) is above its clip level.
    valuation: bool,
    /// The weighing-the-offer part (Frontoparietal) is above its clip level.
    weighing: bool,
    /// Which of the two parts is larger at the peak (`true`: valuation).
    valuation_leads: bool,
    /// Feeling (Default Mode, which the readout counts against) is below its clip level.
    less_feeling: bool,
    /// The alarm (Ventral Attention, no term of the readout) is below its clip level.
    alarm_down: bool,
}

fn drivers(clip: &Clip, t: u32, read: &[bool]) -> Drivers {
    let level = |i: usize| -> f64 {
        let xs: Vec<f64> = clip
            .networks
            .iter()
            .enumerate()
            .filter(|(k, _)| read.get(*k).copied().unwrap_or(true))
            .map(|(_, n)| f64::from(n.values()[i]))
            .collect();
        stats::mean(&xs)
    };
    let row = clip.networks[t as usize].values();
    let w = PURCHASE_INTENT
        .weights()
        .expect("purchase intent is a weighted readout");
    let now = |i: usize| f64::from(row[i]);
    Drivers {
        valuation: w[LIMBIC] > 0.0 && now(LIMBIC) > level(LIMBIC),
        weighing: w[FRONTOPARIETAL] > 0.0 && now(FRONTOPARIETAL) > level(FRONTOPARIETAL),
        valuation_leads: w[LIMBIC] * now(LIMBIC) >= w[FRONTOPARIETAL] * now(FRONTOPARIETAL),
        less_feeling: w[DEFAULT_MODE] < 0.0 && now(DEFAULT_MODE) < level(DEFAULT_MODE),
        alarm_down: now(VENTRAL_ATTENTION) < level(VENTRAL_ATTENTION),
    }
}

/// The trigger: the drivers that flagged the peak, in plain words, only those that pushed the
/// readout up there (or removed a brake on it).
fn trigger(d: &Drivers) -> String {
    let mut out: Vec<&str> = Vec::new();
    if d.valuation {
        out.push("reward");
    }
    if d.weighing {
        out.push("weighing the offer");
    }
    if d.less_feeling {
        out.push("less emotion than the clip's norm");
    }
    if d.alarm_down {
        out.push("drop in skepticism");
    }
    out.join(", ")
}

/// Whether a line names a number or a price: a digit or a currency sign, in any script.
fn names_a_number(line: &str) -> bool {
    line.chars()
        .any(|c| c.is_numeric() || matches!(c, '$' | '€' | '£' | '¥' | '₹' | '₩' | '₽' | '%' | '¢'))
}

/// The insight of one window, built from what is present at its peak (since moments-standard
/// 1.7.0): which part of the readout led, whether feeling and the alarm sat below the clip's
/// norm, whether the words there name a number or a price, and the window's rank and height.
/// Up to 1.6.0 the insight followed the trigger alone, and one sentence ("the offer registers
/// as worth having") covered 25 of 31 held-out buy moments, a sonnet and NASA radio among them.
/// Every sentence is the model's prediction, and says so.
fn insight(d: &Drivers, rank: usize, peak_score: f64, excess: f64, line: Option<&str>) -> String {
    let lead = if rank == 0 {
        format!("The model predicts buying intent peaks here, at {peak_score:.0}")
    } else {
        format!(
            "A {} rise in predicted buying intent reaches {peak_score:.0}",
            ordinal(rank + 1)
        )
    };
    let led = match (d.valuation, d.weighing) {
        (true, true) => "with valuation and weighing the offer both above the clip's norm",
        (true, false) => "led by the valuation response",
        (false, true) => "led by weighing the offer",
        (false, false) if d.valuation_leads => {
            "carried by valuation held at the clip's usual level"
        }
        (false, false) => "carried by weighing the offer at the clip's usual level",
    };
    let context = match (d.less_feeling, d.alarm_down) {
        (true, true) => {
            "; feeling and the alarm both sit below the clip's norm, so less competes with it"
        }
        (true, false) => {
            "; feeling runs below the clip's norm, so little of it reads as emotion instead"
        }
        (false, true) => "; the alarm sits below the clip's norm, so little pushes back",
        (false, false) => "",
    };
    let words = match line {
        Some(l) if names_a_number(l) => " The words there name a number or a price.",
        Some(_) => " The words there name no number or price.",
        None => " No words are heard at the peak itself.",
    };
    format!("{lead} ({excess:.0} points above the clip's average), {led}{context}.{words}")
}

/// The buy moments of a clip from its `purchase_intent` series over the seconds with a reading
/// (`read`, see `crate::reading_mask`); `None` when no window clears the bar.
pub fn windows(clip: &Clip, purchase_intent: &LensSeries, read: &[bool]) -> Option<Vec<BuyMoment>> {
    let scores: Vec<f64> = purchase_intent
        .seconds
        .iter()
        .map(|s| round_to(f64::from(s.score), 1))
        .collect();
    let found = find_where_read(&scores, read);
    let strongest = found.first()?.excess;
    Some(
        found
            .iter()
            .enumerate()
            .map(|(rank, w)| {
                let d = drivers(clip, w.peak, read);
                let quote = line_at(clip, w.peak);
                BuyMoment {
                    start_sec: w.start,
                    end_sec: w.end,
                    peak_sec: w.peak,
                    strength: if rank == 0 {
                        "strongest buy moment".into()
                    } else {
                        format!("{} strongest", ordinal(rank + 1))
                    },
                    strength_pct: round_to(100.0 * w.excess / strongest, 1),
                    quote: quote.map(ToString::to_string),
                    insight: format!(
                        "{} The window runs {}–{} and peaks at {}.",
                        insight(&d, rank, scores[w.peak as usize], w.excess, quote),
                        clock(w.start),
                        clock(w.end),
                        clock(w.peak)
                    ),
                    trigger: trigger(&d),
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_drivers() -> Vec<Drivers> {
        (0..32u8)
            .map(|m| Drivers {
                valuation: m & 1 != 0,
                weighing: m & 2 != 0,
                valuation_leads: m & 4 != 0,
                less_feeling: m & 8 != 0,
                alarm_down: m & 16 != 0,
            })
            .collect()
    }

    /// Issue 72: the insight follows what is present at the peak, names only drivers that are
    /// there, reads as the model's prediction, and does not repeat one sentence: the templates
    /// (numbers aside) number in the dozens.
    #[test]
    fn the_insight_follows_its_drivers_and_is_a_prediction() {
        let mut templates = alloc::collections::BTreeSet::new();
        for d in all_drivers() {
            for rank in [0, 2] {
                for line in [None, Some("Only $19 today"), Some("a quiet morning")] {
                    let text = insight(&d, rank, 71.0, 12.0, line);
                    assert!(text.contains("71") && text.contains("12 points"), "{text}");
                    assert!(
                        brainscan_sdk::text::unhedged_claims(&text).is_empty(),
                        "{text}"
                    );
                    assert!(text.contains("predict"), "{text}");
                    let lower = text.to_lowercase();
                    if !d.valuation && !(d.valuation_leads && !d.weighing) {
                        assert!(!lower.contains("valuation"), "{d:?}: {text}");
                    }
                    if !d.alarm_down {
                        assert!(!lower.contains("alarm"), "{d:?}: {text}");
                    }
                    assert_eq!(
                        text.contains("name a number or a price"),
                        line.is_some_and(names_a_number),
                        "{text}"
                    );
                    templates.insert(text.replace(char::is_numeric, "#"));
                }
            }
        }
        assert!(templates.len() >= 40, "{} templates", templates.len());
    }

    /// A clip of `rows` seconds of networks.
    fn clip_of(rows: &[[f32; 7]]) -> Clip {
        Clip {
            duration_sec: rows.len() as f64,
            networks: rows
                .iter()
                .map(|r| brainscan_sdk::NetworkSecond::from_values(*r))
                .collect(),
            modalities: brainscan_sdk::Modalities {
                video: false,
                audio: true,
            },
            transcript: Vec::new(),
        }
    }

    /// A plumbing check of the sign rule: a network is named only where the purchase-intent
    /// readout's weight says it raised the readout (Limbic, Frontoparietal) or removed a brake
    /// (Default Mode below its norm, which the readout counts against; the alarm below its own).
    #[test]
    fn triggers_name_only_what_raised_the_readout() {
        let w = PURCHASE_INTENT.weights().expect("weighted");
        assert!(w[LIMBIC] > 0.0 && w[FRONTOPARIETAL] > 0.0 && w[DEFAULT_MODE] < 0.0);
        // Second 1: Limbic and Default Mode above their means, Frontoparietal and the alarm
        // below theirs.
        let clip = clip_of(&[
            [0.0, 0.0, 0.0, 0.4, 0.1, 0.5, 0.1],
            [0.0, 0.0, 0.0, 0.1, 0.9, 0.1, 0.8],
            [0.0, 0.0, 0.0, 0.4, 0.1, 0.5, 0.1],
        ]);
        let read = [true; 3];
        assert_eq!(
            trigger(&drivers(&clip, 1, &read)),
            "reward, drop in skepticism"
        );
        // Second 1: only Default Mode above its mean, the alarm steady: nothing raised it.
        let clip = clip_of(&[
            [0.0, 0.0, 0.0, 0.2, 0.5, 0.5, 0.1],
            [0.0, 0.0, 0.0, 0.2, 0.5, 0.5, 0.9],
            [0.0, 0.0, 0.0, 0.2, 0.5, 0.5, 0.1],
        ]);
        assert!(trigger(&drivers(&clip, 1, &read)).is_empty());
    }

    /// Issue 72: rest around a window changes nothing: the mean is the read seconds', and a
    /// run of rest is never part of a window.
    #[test]
    fn seconds_without_a_reading_make_no_window() {
        let mut s = vec![50.0; 30];
        let mut read = vec![false; 30];
        for (t, v) in [
            (10, 60.0),
            (11, 70.0),
            (12, 65.0),
            (13, 40.0),
            (14, 42.0),
            (15, 41.0),
        ] {
            s[t] = v;
            read[t] = true;
        }
        let got = find_where_read(&s, &read);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].start, got[0].end, got[0].peak), (10, 12, 11));
        // The read seconds' mean is theirs (53), not pulled towards the rest's 50.
        assert!((got[0].excess - 17.0).abs() < 1e-9, "{got:?}");
        assert!((find(&s)[0].excess - got[0].excess).abs() > 1.0);
    }

    #[test]
    fn windows_above_the_mean_with_hand_computed_ranks() {
        // mean = 52.5 (sum 1050 / 20), σ = 8.84; two plateaus above it: 4..=7 (peak 70 at 5) and
        // 12..=14 (peak 60 at 13); 17..=18 is above the mean but only 2 s long.
        let mut s = [45.0; 20];
        s[4] = 60.0;
        s[5] = 70.0;
        s[6] = 65.0;
        s[7] = 55.0;
        s[12] = 58.0;
        s[13] = 60.0;
        s[14] = 57.0;
        s[17] = 65.0;
        s[18] = 65.0;
        let mean: f64 = s.iter().sum::<f64>() / 20.0;
        assert_eq!(mean, 52.5);
        let got = find(&s);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].start, got[0].end, got[0].peak), (4, 7, 5));
        assert_eq!(got[0].excess, 17.5);
        assert_eq!((got[1].start, got[1].end, got[1].peak), (12, 14, 13));
        assert_eq!(got[1].excess, 7.5);
    }

    #[test]
    fn a_flat_clip_has_no_buy_moment() {
        let s: Vec<f64> = (0..40)
            .map(|i| 50.0 + if i % 7 < 3 { 0.3 } else { 0.0 })
            .collect();
        assert!(find(&s).is_empty());
    }

    #[test]
    fn at_most_five_windows() {
        let s: Vec<f64> = (0..100)
            .map(|i| {
                if i % 10 < 4 {
                    70.0 + i as f64 / 10.0
                } else {
                    40.0
                }
            })
            .collect();
        let got = find(&s);
        assert_eq!(got.len(), MAX_WINDOWS);
        // Strongest first: the later plateaus are a little higher.
        for w in got.windows(2) {
            assert!(w[0].excess >= w[1].excess);
        }
    }

    #[test]
    fn property_windows_are_consistent_on_random_series() {
        let mut r = crate::moments::tests::rng(11);
        for case in 0..500 {
            let len = 1 + (r() * 180.0) as usize;
            let mut v = 50.0;
            let s: Vec<f64> = (0..len)
                .map(|_| {
                    v = (v + (r() - 0.5) * 12.0).clamp(0.0, 100.0);
                    v
                })
                .collect();
            let mean = stats::mean(&s);
            let got = find(&s);
            assert!(got.len() <= MAX_WINDOWS);
            for (k, w) in got.iter().enumerate() {
                let (a, p, b) = (w.start as usize, w.peak as usize, w.end as usize);
                assert!(a <= p && p <= b && b < len, "case {case}");
                assert!(b + 1 - a >= MIN_WINDOW_SECONDS);
                assert!(s[a..=b].iter().all(|x| *x > mean), "case {case}");
                assert!(s[a..=b].iter().all(|x| *x <= s[p]));
                assert!(a == 0 || s[a - 1] <= mean, "windows are maximal");
                assert!(b + 1 == len || s[b + 1] <= mean);
                if k > 0 {
                    assert!(got[k - 1].excess >= w.excess, "strongest first");
                }
            }
        }
    }
}
