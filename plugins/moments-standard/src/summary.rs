//! The written summary: a short paragraph built only from the clip's own numbers — lens
//! averages and peaks, the sharpest moment, the strongest buy window, the manipulation level —
//! ending with the caveat that it is a directional model read, not a measurement.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use brainscan_sdk::text::{NOT_ASSESSABLE, clip_to, clock};
use brainscan_sdk::{BuyMoment, LensSeries, Moment, risk_band, stats};

use crate::moments::lens_title;

pub const CAVEAT: &str = "This is a directional read from a model of an average viewer's brain response, not a measurement of any real audience.";

struct LensStats {
    lens: String,
    mean: f64,
    sd: f64,
    peak: f64,
    peak_at: u32,
}

fn lens_stats(s: &LensSeries) -> LensStats {
    let xs: Vec<f64> = s.seconds.iter().map(|x| f64::from(x.score)).collect();
    let (mut peak, mut peak_at) = (f64::NEG_INFINITY, 0);
    for (i, v) in xs.iter().enumerate() {
        if *v > peak {
            peak = *v;
            peak_at = i as u32;
        }
    }
    LensStats {
        lens: s.lens.clone(),
        mean: stats::mean(&xs),
        sd: stats::std(&xs),
        peak,
        peak_at,
    }
}

/// `seconds`: the seconds scored, which is the result's `duration_sec` (a 30.03 s clip has 31
/// scored seconds and reads "31-second"; up to 1.1.2 it rounded the media length to 30).
fn opening(seconds: usize, first: &LensStats) -> String {
    let secs = seconds;
    let title = lens_title(&first.lens).to_lowercase();
    let verdict = if first.lens == "attention" {
        if first.mean >= 60.0 {
            "holds attention well"
        } else if first.mean >= 45.0 {
            "holds attention at about the corpus norm"
        } else {
            "struggles to hold attention"
        }
    } else if first.mean >= 60.0 {
        "reads strong"
    } else if first.mean >= 45.0 {
        "reads close to neutral"
    } else {
        "reads weak"
    };
    format!(
        "This {secs}-second clip {verdict}: {title} averages {:.0}, peaking at {:.0} around {}.",
        first.mean,
        first.peak,
        clock(first.peak_at)
    )
}

/// The averages of the lenses after the first (which the opening covers), as one sentence:
/// "Across the clip, buying intent averages 89." or "…, memory encoding averages 48 and
/// buying intent 45." `None` when there are none. (Up to 1.1.1 it read "Across the clip,
/// buying intent 89 on average.", which has no verb.)
fn other_averages(others: &[(String, f64)]) -> Option<String> {
    let ((first, mean), rest) = others.split_first()?;
    let mut sentence = format!("Across the clip, {first} averages {mean:.0}");
    for (i, (title, mean)) in rest.iter().enumerate() {
        let joint = if i + 1 == rest.len() { " and" } else { "," };
        sentence.push_str(&format!("{joint} {title} {mean:.0}"));
    }
    sentence.push('.');
    Some(sentence)
}

/// The paragraph (module docs).
///
/// `has_words`: whether the clip has a transcript with text. Without words manipulation is not
/// assessable (`brainscan_sdk::text::NOT_ASSESSABLE`), and the paragraph says so instead of
/// reading its neutral 50 as a level.
pub fn write(
    lenses: &[LensSeries],
    moments: &[Moment],
    buy: Option<&[BuyMoment]>,
    has_words: bool,
) -> String {
    let all: Vec<LensStats> = lenses.iter().map(lens_stats).collect();
    let mut parts: Vec<String> = Vec::new();
    let Some(first) = all.first() else {
        return format!("No lens was scored, so there is nothing to summarise. {CAVEAT}");
    };
    let seconds = lenses.first().map_or(0, |s| s.seconds.len());
    let manipulation_assessable = has_words;
    if first.lens == "manipulation" && !manipulation_assessable {
        parts.push(format!("This {seconds}-second clip has no words."));
    } else {
        parts.push(opening(seconds, first));
    }
    let others: Vec<(String, f64)> = all
        .iter()
        .skip(1)
        .filter(|s| s.lens != "manipulation")
        .map(|s| (lens_title(&s.lens).to_lowercase(), s.mean))
        .collect();
    if let Some(sentence) = other_averages(&others) {
        parts.push(sentence);
    }

    let sharpest = moments.iter().max_by(|a, b| {
        a.z.abs()
            .total_cmp(&b.z.abs())
            .then(b.second.cmp(&a.second))
    });
    match sharpest {
        Some(m) => {
            let line = m
                .content_line
                .as_deref()
                .map(|l| format!(", on {}", crate::moments::quoted(&clip_to(l, 80))))
                .unwrap_or_default();
            parts.push(format!(
                "The sharpest shift is {} {} {:.0} points at {}{line}{}.",
                lens_title(&m.lens).to_lowercase(),
                if m.delta > 0.0 { "jumping" } else { "dropping" },
                m.delta.abs(),
                clock(m.second),
                if moments.len() > 1 {
                    format!(
                        ", one of {} moments that stand out from the clip's rhythm",
                        moments.len()
                    )
                } else {
                    String::new()
                }
            ));
        }
        None => parts.push(
            "No single second stands out from the clip's own rhythm; the response moves smoothly."
                .into(),
        ),
    }

    let pi_scored = lenses.iter().any(|s| s.lens == "purchase_intent");
    match buy.and_then(|b| b.first()) {
        Some(b) => parts.push(strongest_buy(b)),
        None if pi_scored => parts
            .push("No stretch of buying intent rises clearly above the clip's own average.".into()),
        None => {}
    }

    if all.iter().any(|s| s.lens == "manipulation") && !manipulation_assessable {
        parts.push(NOT_ASSESSABLE.into());
    } else if let Some(m) = all.iter().find(|s| s.lens == "manipulation") {
        let risk = crate::moments::round_to(m.mean, 1);
        // The lens is a corpus percentile, so the band says where the clip sits among the
        // benchmark corpus's seconds, not an absolute amount of "guard-down exposure": a clip
        // at rest (nothing to value, nothing to weigh) sits at the corpus median.
        let relative = match risk_band(risk) {
            "low" => "less than a typical second of the benchmark corpus",
            "moderate" => "about what a typical second of the benchmark corpus carries",
            "elevated" => "more than most seconds of the benchmark corpus",
            _ => "among the highest of the benchmark corpus",
        };
        parts.push(format!(
            "Persuasive pressure averages {risk:.0}: {relative}."
        ));
    }

    if all
        .iter()
        .all(|s| s.sd < 1.0 && (45.0..=55.0).contains(&s.mean))
    {
        parts.push(
            "The predicted response is nearly flat, so these scores sit near neutral and are not a verdict on the content."
                .into(),
        );
    }
    parts.push(CAVEAT.into());
    parts.join(" ")
}

/// The summary's sentence on the strongest buy moment. An empty trigger (no named driver raised
/// the readout there) gets no parentheses: up to 1.4.0 such a peak read "peaking at 0:06 ()".
fn strongest_buy(b: &BuyMoment) -> String {
    let quote = b
        .quote
        .as_deref()
        .map(|q| format!(" on {}", crate::moments::quoted(&clip_to(q, 80))))
        .unwrap_or_default();
    let drivers = if b.trigger.is_empty() {
        String::new()
    } else {
        format!(" ({})", b.trigger)
    };
    format!(
        "Buying intent is strongest from {} to {}, peaking at {}{quote}{drivers}.",
        clock(b.start_sec),
        clock(b.end_sec),
        clock(b.peak_sec),
    )
}

#[cfg(test)]
mod tests {
    use alloc::borrow::ToOwned;

    use super::{BuyMoment, other_averages, strongest_buy};

    #[test]
    fn the_other_lenses_averages_read_as_one_sentence_with_a_verb() {
        let lens = |t: &str, m: f64| (t.to_owned(), m);
        assert_eq!(other_averages(&[]), None);
        assert_eq!(
            other_averages(&[lens("buying intent", 88.6)]).as_deref(),
            Some("Across the clip, buying intent averages 89.")
        );
        assert_eq!(
            other_averages(&[lens("memory encoding", 48.2), lens("buying intent", 45.0)])
                .as_deref(),
            Some("Across the clip, memory encoding averages 48 and buying intent 45.")
        );
        assert_eq!(
            other_averages(&[lens("a", 1.0), lens("b", 2.0), lens("c", 3.0)]).as_deref(),
            Some("Across the clip, a averages 1, b 2 and c 3.")
        );
    }

    #[test]
    fn the_strongest_buy_moment_names_its_drivers_only_when_it_has_some() {
        let mut b = BuyMoment {
            start_sec: 5,
            end_sec: 7,
            peak_sec: 6,
            strength: "strongest buy moment".to_owned(),
            strength_pct: 100.0,
            quote: None,
            insight: "x".to_owned(),
            trigger: "reward".to_owned(),
        };
        assert_eq!(
            strongest_buy(&b),
            "Buying intent is strongest from 0:05 to 0:07, peaking at 0:06 (reward)."
        );
        b.trigger.clear();
        assert_eq!(
            strongest_buy(&b),
            "Buying intent is strongest from 0:05 to 0:07, peaking at 0:06."
        );
    }
}
