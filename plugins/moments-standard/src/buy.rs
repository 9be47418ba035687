//! Buy moments: windows where predicted purchase intent stays above the clip's own average.
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
    let mean = stats::mean(scores);
    let sd = stats::std(scores);
    let mut out = Vec::new();
    let mut t = 0;
    while t < scores.len() {
        if scores[t] <= mean {
            t += 1;
            continue;
        }
        let start = t;
        while t < scores.len() && scores[t] > mean {
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

/// The drivers that flagged second `t`, against each network's clip mean, each only where the
/// purchase-intent readout's weight on its network points the way the driver moves it (module
/// docs).
fn triggers(clip: &Clip, t: u32) -> Vec<&'static str> {
    let column = |i: usize| -> Vec<f64> {
        clip.networks
            .iter()
            .map(|n| f64::from(n.values()[i]))
            .collect()
    };
    let row = clip.networks[t as usize].values();
    let above = |i: usize| f64::from(row[i]) > stats::mean(&column(i));
    let below = |i: usize| f64::from(row[i]) < stats::mean(&column(i));
    let weight = PURCHASE_INTENT
        .weights()
        .expect("purchase intent is a weighted readout");
    let mut out = Vec::new();
    if weight[LIMBIC] > 0.0 && above(LIMBIC) {
        out.push("reward");
    }
    if weight[DEFAULT_MODE] > 0.0 && above(DEFAULT_MODE) {
        out.push("personal relevance");
    }
    // The alarm is no term of the readout: its drop removes a brake rather than adding value.
    // A network at its mean has not dropped (a steady alarm flagged every peak before 1.4.0).
    if below(VENTRAL_ATTENTION) || (weight[FRONTOPARIETAL] < 0.0 && below(FRONTOPARIETAL)) {
        out.push("drop in skepticism");
    }
    out
}

fn insight(drivers: &[&str], peak_score: f64) -> String {
    let has = |d: &str| drivers.contains(&d);
    match (
        has("reward"),
        has("personal relevance"),
        has("drop in skepticism"),
    ) {
        (true, true, true) => format!(
            "Everything lines up here: the pitch feels rewarding and personal while the urge to pick it apart eases, so purchase intent peaks at {peak_score:.0}."
        ),
        (true, true, false) => format!(
            "Reward and personal relevance rise together — the viewer wants it and sees it as theirs — lifting purchase intent to {peak_score:.0} even though scrutiny stays on."
        ),
        (true, false, true) => format!(
            "The pay-off lands while counter-arguing quiets down; wanting without second-guessing takes purchase intent to {peak_score:.0}."
        ),
        (false, true, true) => format!(
            "The message feels personally relevant and meets little resistance; that self-connection carries purchase intent to {peak_score:.0}."
        ),
        (true, false, false) => format!(
            "A burst of reward drives this beat: the offer registers as worth having, and purchase intent reaches {peak_score:.0}."
        ),
        (false, true, false) => format!(
            "Viewers connect it to themselves here; personal relevance alone lifts purchase intent to {peak_score:.0}."
        ),
        (false, false, true) => format!(
            "Skepticism and alarm drop away here, removing the brakes on buying; purchase intent reaches {peak_score:.0}."
        ),
        // No driver above its clip mean: say so, rather than name one the trigger lacks.
        (false, false, false) => format!(
            "No single driver stands above its usual level at the peak; the networks together carry purchase intent to {peak_score:.0}."
        ),
    }
}

/// The buy moments of a clip from its `purchase_intent` series; `None` when no window clears
/// the bar.
pub fn windows(clip: &Clip, purchase_intent: &LensSeries) -> Option<Vec<BuyMoment>> {
    let scores: Vec<f64> = purchase_intent
        .seconds
        .iter()
        .map(|s| round_to(f64::from(s.score), 1))
        .collect();
    let found = find(&scores);
    let strongest = found.first()?.excess;
    Some(
        found
            .iter()
            .enumerate()
            .map(|(rank, w)| {
                let drivers = triggers(clip, w.peak);
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
                    quote: line_at(clip, w.peak).map(ToString::to_string),
                    insight: format!(
                        "{} The window runs {}–{} and peaks at {}.",
                        insight(&drivers, scores[w.peak as usize]),
                        clock(w.start),
                        clock(w.end),
                        clock(w.peak)
                    ),
                    trigger: drivers.join(", "),
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every trigger gets an insight that names only what it lists; an empty trigger gets
    /// one that names no driver.
    #[test]
    fn the_insight_names_only_the_drivers_the_trigger_lists() {
        let all = ["reward", "personal relevance", "drop in skepticism"];
        for mask in 0..8u8 {
            let drivers: Vec<&str> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, d)| *d)
                .collect();
            let text = insight(&drivers, 71.0).to_lowercase();
            assert!(text.contains("71"), "{text}");
            if drivers.is_empty() {
                assert!(text.contains("no single driver"), "{text}");
            }
            if !drivers.contains(&"drop in skepticism") {
                assert!(!text.contains("skepticism"), "{drivers:?}: {text}");
            }
            if !drivers.contains(&"reward") {
                assert!(!text.contains("reward"), "{drivers:?}: {text}");
            }
            // Reward alone is the purchase-intent readout's valuation, not a feeling (since
            // lens-standard 2.8.0 the lens discounts feeling).
            if drivers == ["reward"] {
                assert!(!text.contains("feel"), "{text}");
            }
        }
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
    /// readout's weight says it raised the readout. Since lens-standard 2.8.0 the readout counts
    /// Default Mode down (feeling, not wanting) and Frontoparietal up, so neither a Default Mode
    /// rise nor a Frontoparietal drop flags a buy peak; Limbic above its mean and the alarm below
    /// its own still do.
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
        assert_eq!(triggers(&clip, 1), ["reward", "drop in skepticism"]);
        // Second 1: only Default Mode above its mean, the alarm steady: nothing raised it.
        let clip = clip_of(&[
            [0.0, 0.0, 0.0, 0.2, 0.5, 0.5, 0.1],
            [0.0, 0.0, 0.0, 0.2, 0.5, 0.5, 0.9],
            [0.0, 0.0, 0.0, 0.2, 0.5, 0.5, 0.1],
        ]);
        assert!(triggers(&clip, 1).is_empty(), "{:?}", triggers(&clip, 1));
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
