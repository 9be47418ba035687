//! The default moments plugin. Definitions and thresholds: `README.md` beside this file.

// no_std in the component; std on the host, where the unit tests run.
#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

pub mod buy;
pub mod moments;
pub mod summary;

use alloc::string::String;
use alloc::vec::Vec;

use brainscan_sdk::{
    Clip, Describe, Detection, HeardClip, LensSeries, MomentsPlugin, PluginError, ReadSeries,
};

/// Which seconds of lens `lens` have a reading. For the four default lenses, the rule their
/// plugin scores by ([`brainscan_readouts::Readout::assessable`]: not at rest, and for purchase
/// intent and manipulation a word in reach): a second without one scores the neutral 50, and
/// no moment, buy window or average may be built on it (since moments-standard 1.7.0; a step
/// into or out of rest read as the clip's "sharpest shift"). Any other lens is a custom
/// plugin's, whose rule this plugin cannot know: every second of it counts.
#[must_use]
pub fn reading_mask(clip: &Clip, lens: &str) -> Vec<bool> {
    let Some(readout) = brainscan_readouts::LENSES.iter().find(|r| r.name == lens) else {
        return alloc::vec![true; clip.networks.len()];
    };
    let words = brainscan_sdk::text::words_in_reach_by_second(clip);
    clip.networks
        .iter()
        .zip(&words)
        .map(|(n, w)| readout.assessable(&n.values(), *w))
        .collect()
}

pub struct StandardMoments;

impl Describe for StandardMoments {
    fn description() -> String {
        "Sharp lens shifts (|z| ≥ 1.75 against the clip's own swings), buy windows and an analyst-style summary".into()
    }
}

impl MomentsPlugin for StandardMoments {
    /// Without how the clip was heard (a 1.0.0 host): the default lenses' own rule says which
    /// seconds have a reading ([`reading_mask`]).
    fn detect(clip: &Clip, lenses: &[LensSeries]) -> Result<Detection, PluginError> {
        let masks: Vec<Vec<bool>> = lenses.iter().map(|s| reading_mask(clip, &s.lens)).collect();
        Ok(detect_where_read(clip, lenses, &masks))
    }

    /// With how the clip was heard: a second has a reading where its lens plugin said so (for
    /// purchase intent that includes the offer gate, which [`reading_mask`] cannot see) and
    /// where the default lenses' rule agrees; lines the recogniser was not sure of
    /// ([`brainscan_sdk::text::trusted_lines`]) are neither quoted nor read as words.
    fn detect_heard(
        clip: &Clip,
        heard: &HeardClip,
        lenses: &[ReadSeries],
    ) -> Result<Detection, PluginError> {
        let clip = brainscan_sdk::text::with_trusted_lines(clip, heard);
        let series: Vec<LensSeries> = lenses.iter().map(|s| s.series.clone()).collect();
        let masks: Vec<Vec<bool>> = lenses
            .iter()
            .map(|s| {
                reading_mask(&clip, &s.series.lens)
                    .into_iter()
                    .zip(&s.read)
                    .map(|(rule, said)| rule && *said)
                    .collect()
            })
            .collect();
        Ok(detect_where_read(&clip, &series, &masks))
    }
}

/// Moments, buy moments and the summary over the seconds with a reading (`masks`, one per
/// lens).
fn detect_where_read(clip: &Clip, lenses: &[LensSeries], masks: &[Vec<bool>]) -> Detection {
    let moments: Vec<_> = lenses
        .iter()
        .zip(masks)
        .enumerate()
        .flat_map(|(i, (s, mask))| moments::detect(clip, s, i, mask))
        .collect();
    let moments = moments::in_time_order(moments);
    let buy = lenses
        .iter()
        .zip(masks)
        .find(|(s, _)| s.lens == "purchase_intent")
        .and_then(|(pi, mask)| buy::windows(clip, pi, mask));
    let summary = summary::write(
        lenses,
        masks,
        &moments,
        buy.as_deref(),
        brainscan_sdk::text::has_words(clip),
    );
    Detection {
        moments,
        buy_moments: buy,
        summary,
    }
}

brainscan_sdk::export_moments!(StandardMoments);

#[cfg(test)]
mod tests {
    use alloc::string::ToString;
    use alloc::vec;
    use alloc::vec::Vec;

    use brainscan_sdk::{
        Clip, LensPlugin, LensSeries, Modalities, MomentsPlugin, NetworkSecond, TranscriptLine,
    };

    use super::StandardMoments;

    fn lenses() -> Vec<alloc::string::String> {
        ["attention", "memory", "purchase_intent", "manipulation"]
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// A spoken passage of `spoken` varied seconds, with `rest` seconds of silence before and
    /// after it.
    fn padded(spoken: usize, rest: usize, seed: u64) -> Clip {
        let mut x = seed;
        let mut r = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 10_000) as f32 / 10_000.0
        };
        let mut rows = vec![[0.0f32; 7]; rest];
        for _ in 0..spoken {
            rows.push(core::array::from_fn(|_| r() * 2.0));
        }
        rows.extend(vec![[0.0f32; 7]; rest]);
        Clip {
            duration_sec: rows.len() as f64,
            networks: rows.into_iter().map(NetworkSecond::from_values).collect(),
            modalities: Modalities {
                video: false,
                audio: true,
            },
            transcript: vec![TranscriptLine {
                start_sec: rest as f32,
                end_sec: (rest + spoken) as f32,
                text: "Only 19 dollars today, and it lasts for years.".into(),
            }],
        }
    }

    fn detect(clip: &Clip) -> brainscan_sdk::Detection {
        let series: Vec<LensSeries> =
            lens_standard::lens::StandardLenses::score(clip, &lenses()).expect("scored");
        StandardMoments::detect(clip, &series).expect("detected")
    }

    /// Issue 72: no moment fires on a step into or out of rest, no buy window touches rest, and
    /// every sentence about viewers in the moments, the buy moments and the summary is a
    /// prediction.
    #[test]
    fn rest_makes_no_moment_and_every_claim_is_a_prediction() {
        for seed in 1..40 {
            let clip = padded(25, 20, seed);
            let d = detect(&clip);
            for m in &d.moments {
                assert!(
                    (20..45).contains(&m.second),
                    "seed {seed}: a moment at {} ({})",
                    m.second,
                    m.reason
                );
            }
            for b in d.buy_moments.iter().flatten() {
                assert!(
                    b.start_sec >= 20 && b.end_sec < 45 + 11,
                    "seed {seed}: {b:?}"
                );
                assert!(
                    brainscan_sdk::text::unhedged_claims(&b.insight).is_empty(),
                    "{}",
                    b.insight
                );
            }
            let mut texts: Vec<&str> = d.moments.iter().map(|m| m.reason.as_str()).collect();
            texts.push(&d.summary);
            for t in texts {
                let claims = brainscan_sdk::text::unhedged_claims(t);
                assert!(claims.is_empty(), "seed {seed}: {claims:?} in {t}");
            }
        }
    }

    /// Issue 72, with how the clip was heard: purchase intent has no reading where the words
    /// make no offer (the lens plugin's gate, which the moments plugin only learns from the
    /// read flags), so no purchase-intent moment fires on the step from those seconds into the
    /// offer, no buy window starts before it, and the summary's buying-intent average is the
    /// offer's seconds' own. On a 1.0.0 host (no flags) the same clip makes that step a moment.
    #[test]
    fn the_offer_gate_makes_no_moment_or_window_outside_the_offer() {
        use brainscan_sdk::{HeardClip, HeardSecond};
        let mut hits_without_flags = 0;
        for seed in 1..40 {
            let mut clip = padded(40, 0, seed);
            clip.transcript[0].text = "A story about a walk by the sea, and a cheap offer.".into();
            // The first 20 s make no offer, the last 20 s do.
            let heard = HeardClip {
                seconds: (0..40)
                    .map(|t| HeardSecond {
                        voice: 1.0,
                        offer: if t < 20 { -0.1 } else { 0.2 },
                    })
                    .collect(),
                line_confidence: vec![1.0],
            };
            let series = lens_standard::lens::StandardLenses::score_heard(&clip, &heard, &lenses())
                .expect("scored");
            let pi = series
                .iter()
                .find(|s| s.series.lens == "purchase_intent")
                .expect("purchase intent");
            assert!(pi.read[..20].iter().all(|r| !r) && pi.read[20..].iter().any(|r| *r));
            let d = StandardMoments::detect_heard(&clip, &heard, &series).expect("detected");
            for m in d.moments.iter().filter(|m| m.lens == "purchase_intent") {
                assert!(m.second > 20, "seed {seed}: a moment at {}", m.second);
            }
            for b in d.buy_moments.iter().flatten() {
                assert!(b.start_sec >= 20, "seed {seed}: {b:?}");
            }
            let plain: Vec<LensSeries> = series.iter().map(|s| s.series.clone()).collect();
            let old = StandardMoments::detect(&clip, &plain).expect("detected");
            hits_without_flags += old
                .moments
                .iter()
                .filter(|m| m.lens == "purchase_intent" && m.second == 20)
                .count();
        }
        assert!(
            hits_without_flags > 0,
            "without the flags the step into the offer never made a moment: this test checks nothing"
        );
    }

    /// A line the recogniser was not sure of is neither quoted nor read as words.
    #[test]
    fn an_untrusted_line_is_not_quoted() {
        use brainscan_sdk::{HeardClip, HeardSecond};
        let clip = padded(25, 5, 3);
        let heard = HeardClip {
            seconds: vec![
                HeardSecond {
                    voice: 1.0,
                    offer: 0.3
                };
                clip.networks.len()
            ],
            line_confidence: vec![0.2],
        };
        let series = lens_standard::lens::StandardLenses::score_heard(&clip, &heard, &lenses())
            .expect("scored");
        let d = StandardMoments::detect_heard(&clip, &heard, &series).expect("detected");
        let said = alloc::format!("{d:?}");
        assert!(!said.contains("19 dollars"), "{said}");
        let trusted = HeardClip {
            line_confidence: vec![0.9],
            ..heard
        };
        let d = StandardMoments::detect_heard(&clip, &trusted, &series).expect("detected");
        assert!(
            alloc::format!("{d:?}").contains("19 dollars"),
            "the trusted line is quoted"
        );
    }
}
