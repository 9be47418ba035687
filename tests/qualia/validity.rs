//! The validity battery (issue: qualia v2 part 2, point 5): generated contrasts against the
//! literature's network profiles.
//!
//! Each contrast is a pair of clips that differ in one construct and are matched on the rest
//! (the same frames, the same sound envelope, the same contrast). The model's 7-network contrast
//! profile (mean of clip A minus mean of clip B, stimulus time, z units) must correlate with the
//! Neurosynth v7 profile of that construct. The target is the construct's **whole signed
//! log-odds row**, all seven networks, while the prior's weights keep only the cells whose
//! interval is above 0: the battery can fail when a probe reaches networks through features it
//! should not move (a face probe that changes edge energy, speech that the model hears as noise,
//! reversed speech that the recogniser turns into words), or when the construct's
//! under-reported networks are where the model puts the response.
//!
//! What it cannot show: that the profiles are right about brains (the Alice check on real fMRI
//! is that evidence), and it shares the profile table with the prior, so it tests the path from
//! stimulus to features to networks, not the weights' source.
//!
//! Registered before the first run (this file's first commit): **r ≥ 0.5 for every contrast**,
//! and no contrast's own construct may rank below third of the twelve profile rows.
//!
//! Results (model card, "Validity battery"):
//! - qualia 2.5.0, the first run: faces 0.94, motion 0.95 passed; speech vs signal-correlated
//!   noise −0.14, intelligible vs reversed −0.36, speech vs music −0.39 failed. Every speech
//!   contrast looked like the `emotion` row (Limbic and Default Mode): the semantic features'
//!   z unit came from a corpus with 11 s of speech, so any narration read 5–8 z on them.
//! - qualia 2.6.0 (the fix: axes from the nearest-centroid midpoint, event boundaries relative
//!   to the clip's ongoing change, and a z unit from their construction): four of five pass.
//!   **Speech vs music still fails** (r 0.08 with `language`; the contrast is led by
//!   Somatomotor, the voice, and reads as `speech_auditory`, r 0.84). It is pinned below as a
//!   known failure, so the test fails, and the card must change, if it starts to pass or the
//!   others stop.
//! - qualia 2.9.0 (profiles at 10 mm, three new semantic axes): **intelligible vs reversed
//!   speech fails** (r 0.43 with `language`, rank 3; best `social` 0.64), and is pinned beside
//!   speech vs music. The contrast is Default Mode, Frontoparietal and Somatomotor with Limbic
//!   at 0, and the `language` row is led by Limbic −0.69, which positive-only weights cannot
//!   produce.
//! - qualia 2.11.0 (foci assigned on the cortical surface; the `language` row's Limbic cell is
//!   −0.52): **intelligible vs reversed speech passes**, by a hair (r 0.51 with `language`,
//!   floor 0.5, rank 2). Speech vs music still fails.
//!
//! Stimuli: all generated here (espeak-ng, ffmpeg's test sources) except the faces pair, which
//! is the `carphone` talking-head sequence upright against the same frames flipped upside down
//! (an inverted face has the same contrast, edges, colour and motion energy, and face-selective
//! responses drop for it; Yovel & Kanwisher 2005). No weight was fitted on any stimulus: the
//! weights are the Neurosynth prior, and `carphone` only enters the z scale of the corpus.

use std::path::{Path, PathBuf};

use brainscan::grounding::neurosynth::ProfileTable;
use brainscan::grounding::pearson;

use crate::support::{H264, NARRATION, analyse, ffmpeg, over_still, real_media, speech};

/// The registered floor on every contrast's r with its construct's profile.
const FLOOR: f64 = 0.5;
/// The registered worst rank of a contrast's own construct among the profile rows (1 = best).
const WORST_RANK: usize = 3;
/// Contrasts that fail the registered floor with the shipped model, as the model card says.
const KNOWN_FAILURES: [&str; 1] = ["speech vs music"];

/// One contrast: the clip with the construct, the matched clip without it, and the profile row.
struct Contrast {
    name: &'static str,
    construct: &'static str,
    with: PathBuf,
    without: PathBuf,
}

fn contrasts(dir: &Path) -> Vec<Contrast> {
    let narration = speech(dir, "narration.wav", NARRATION);
    let narration = narration.to_str().expect("utf8").to_owned();
    let speech_clip = over_still(dir, "speech.mp4", &["-i", &narration]);
    let carphone = real_media().join("carphone_pristine.mp4");
    let carphone = carphone.to_str().expect("utf8").to_owned();
    let video_only = |name: &str, args: &[&str]| {
        let tail = [&H264[..], &["-t", "14", name]].concat();
        ffmpeg(dir, &[args, &tail[..]].concat());
        dir.join(name)
    };
    vec![
        Contrast {
            name: "faces upright vs the same frames inverted",
            construct: "faces",
            with: video_only("upright.mp4", &["-i", &carphone]),
            without: video_only("inverted.mp4", &["-i", &carphone, "-vf", "vflip"]),
        },
        Contrast {
            // Signal-correlated noise (Schroeder 1968; the control of Rodd et al. 2005): every
            // sample's sign flipped at random, so the envelope and the level are the speech's.
            name: "speech vs signal-correlated noise at the same level",
            construct: "speech_auditory",
            with: speech_clip.clone(),
            without: over_still(
                dir,
                "scn.mp4",
                &[
                    "-i",
                    &narration,
                    "-af",
                    "aeval='val(0)*(2*gt(random(0),0.5)-1)':c=same",
                ],
            ),
        },
        Contrast {
            name: "intelligible vs reversed speech",
            construct: "language",
            with: speech_clip.clone(),
            without: over_still(dir, "reversed.mp4", &["-i", &narration, "-af", "areverse"]),
        },
        Contrast {
            name: "coherent motion vs counter-phase flicker at equal contrast",
            construct: "motion",
            with: video_only(
                "pan.mp4",
                &[
                    "-f",
                    "lavfi",
                    "-i",
                    "testsrc2=s=1280x180:r=25,crop=320:180:x='mod(t*120,960)':y=0",
                ],
            ),
            without: video_only(
                "flicker.mp4",
                &[
                    "-f",
                    "lavfi",
                    "-i",
                    "testsrc2=s=320x180:r=25,eq=brightness='0.3*(mod(floor(t*8),2)-0.5)':eval=frame",
                ],
            ),
        },
        Contrast {
            name: "speech vs music",
            construct: "language",
            with: speech_clip,
            without: over_still(
                dir,
                "music.mp4",
                &[
                    "-f",
                    "lavfi",
                    "-i",
                    "aevalsrc='0.25*sin(2*PI*220*pow(2,mod(floor(t*4)*7,12)/12)*t)+0.15*sin(2*PI*110*pow(2,mod(floor(t/2)*5,12)/12)*t)':s=22050",
                ],
            ),
        },
    ]
}

/// Mean network response over a clip (stimulus time, z units).
async fn mean_profile(path: &Path) -> [f64; 7] {
    let out = analyse(path).await;
    assert!(!out.low_signal, "{} read as low signal", path.display());
    let n = out.networks.len() as f64;
    std::array::from_fn(|k| out.networks.iter().map(|r| f64::from(r[k])).sum::<f64>() / n)
}

#[tokio::test]
async fn generated_contrasts_follow_their_constructs_network_profiles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = ProfileTable::load(&ProfileTable::committed_path()).expect("committed table");
    let mut failures = Vec::new();
    for c in contrasts(dir.path()) {
        let (a, b) = (mean_profile(&c.with).await, mean_profile(&c.without).await);
        let contrast: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
        let mut ranked: Vec<(f64, &str)> = table
            .profiles
            .iter()
            .map(|p| (pearson(&contrast, &p.log_odds), p.construct.as_str()))
            .collect();
        ranked.sort_by(|x, y| y.0.total_cmp(&x.0));
        let rank = 1 + ranked
            .iter()
            .position(|x| x.1 == c.construct)
            .expect("construct row");
        let r = ranked[rank - 1].0;
        println!(
            "{}: contrast {:.2?}; r with `{}` {r:.2} (rank {rank} of {}; best `{}` {:.2})",
            c.name,
            contrast,
            c.construct,
            ranked.len(),
            ranked[0].1,
            ranked[0].0
        );
        let passed = r >= FLOOR && rank <= WORST_RANK;
        if passed == KNOWN_FAILURES.contains(&c.name) {
            failures.push(format!(
                "{}: r {r:.2} with `{}` (floor {FLOOR}), rank {rank} (at worst {WORST_RANK}): {}",
                c.name,
                c.construct,
                if passed {
                    "now passes; the card lists it as failing: update both"
                } else {
                    "fails the registered floor"
                }
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
