//! The default lenses (issue: qualia v2 part 2, point 6).
//!
//! - Their weights are the Neurosynth profiles of their constructs, recomputed here from the
//!   committed table (a plumbing check that the constants were not hand-edited).
//! - Their independence, measured on the 0-100 scores of the real test clips plus generated
//!   probes: attention must no longer mirror purchase intent and manipulation (asserted). The
//!   issue's two requirements (participation ratio >= 2.5, no pair above |r| 0.8, pooled within
//!   clip) were met on qualia 2.8.0's corpus (2.54, 0.79) and NOT on 2.9.0's corpus of real
//!   content (2.36; memory-purchase intent 0.82). On 2.11.0 (foci assigned on the cortical
//!   surface) the participation ratio is met (2.67) and memory-purchase intent is still 0.82.
//!   With lens-standard 2.8.0 (purchase intent: wanting beyond feeling) every pair is under 0.8
//!   (memory-purchase intent 0.44) and the participation ratio was 2.49, not met by 0.01; with
//!   2.9.0 (pressure: the emotion profile alone) it is 2.57, so both requirements are met and
//!   asserted, and the figures pinned so the card cannot go stale. Not met in single clips: a
//!   clip with one drive moves any two readouts of it together.

use std::path::{Path, PathBuf};

use brainscan::grounding::neurosynth::ProfileTable;
use brainscan::grounding::pearson;
use brainscan_readouts::{LENSES, Readout};

use crate::support::{
    NARRATION, analyse_shared, brainscan, corpus_clips, encode, ok, over_still, qualia, speech,
};

/// Unit-length positive credible profile of a construct.
fn profile(table: &ProfileTable, construct: &str) -> [f64; 7] {
    let p = table.get(construct).expect("profile row");
    unit(std::array::from_fn(|n| p.credible(n).max(0.0)))
}

fn unit(v: [f64; 7]) -> [f64; 7] {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.map(|x| x / norm)
}

fn sum(a: [f64; 7], b: [f64; 7]) -> [f64; 7] {
    std::array::from_fn(|i| a[i] + b[i])
}

#[test]
fn lens_weights_are_the_committed_profiles() {
    let t = ProfileTable::load(&ProfileTable::committed_path()).expect("committed table");
    // The reward profile without its Ventral Attention cell, which in the model carries
    // salience, not valuation (plugins/readouts, PURCHASE_INTENT).
    let reward = {
        let mut r = profile(&t, "reward");
        r[3] = 0.0;
        unit(r)
    };
    let emotion = profile(&t, "emotion");
    // Purchase intent reads what of it the emotion profile does not predict (lens-standard
    // 2.8.0): the reward vector minus its projection on the emotion vector, at unit length.
    let along: f64 = reward.iter().zip(&emotion).map(|(r, e)| r * e).sum();
    let wanting = unit(std::array::from_fn(|n| reward[n] - along * emotion[n]));
    // Pressure is the emotion profile alone (lens-standard 2.9.0): the valuation is purchase
    // intent's.
    let pressure = emotion;
    let deliberation = profile(&t, "decision_making");
    let expected: [(&str, [f64; 7]); 5] = [
        (
            "attention",
            unit(sum(
                sum(profile(&t, "attention"), profile(&t, "visual")),
                profile(&t, "speech_auditory"),
            )),
        ),
        ("memory", profile(&t, "memory")),
        ("purchase_intent", wanting),
        ("pressure", pressure),
        ("deliberation", deliberation),
    ];
    for (name, want) in expected {
        let r: Readout = brainscan_readouts::ALL
            .into_iter()
            .find(|r| r.name == name)
            .expect("readout");
        let weights = r.weights().expect("a weighted readout");
        for (n, (got, want)) in weights.iter().zip(want).enumerate() {
            assert!(
                (got - want).abs() < 1e-3,
                "{name} network {n}: {got} vs the table's {want:.4}"
            );
        }
    }
    // Manipulation has no weights of its own: it compares the two terms above on their corpus
    // scales.
    assert_eq!(
        brainscan_readouts::MANIPULATION.form,
        brainscan_readouts::Form::Contrast(
            &brainscan_readouts::PRESSURE,
            &brainscan_readouts::DELIBERATION
        )
    );
}

/// A synthetic two-voice melody: sound with no words.
const MELODY: &str = "aevalsrc='0.25*sin(2*PI*220*pow(2,mod(floor(t*4)*7,12)/12)*t)+0.15*sin(2*PI*110*pow(2,mod(floor(t/2)*5,12)/12)*t)':s=22050";

/// Generated probes (none is a stimulus any weight or calibration was built from).
fn probes(dir: &Path) -> Vec<PathBuf> {
    let narration = speech(dir, "narration.wav", NARRATION);
    let over_still = |name: &str, audio: &[&str]| over_still(dir, name, audio);
    let encode = |name: &str, inputs: &[&str]| encode(dir, name, inputs);
    let silent_video = |name: &str, video: &str| encode(name, &["-f", "lavfi", "-i", video]);
    let narration = narration.to_str().expect("utf8").to_owned();
    vec![
        over_still("speech.mp4", &["-i", &narration]),
        over_still("reversed.mp4", &["-i", &narration, "-af", "areverse"]),
        over_still(
            "noise.mp4",
            &["-f", "lavfi", "-i", "anoisesrc=c=pink:a=0.1:r=22050"],
        ),
        over_still("music.mp4", &["-f", "lavfi", "-i", MELODY]),
        silent_video(
            "pan.mp4",
            "testsrc2=s=1280x180:r=25,crop=320:180:x='mod(t*120,960)':y=0",
        ),
        silent_video(
            "flicker.mp4",
            "testsrc2=s=320x180:r=25,eq=brightness='0.3*(mod(floor(t*8),2)-0.5)':eval=frame",
        ),
    ]
}

/// One clip's four lens series as per-second rows, each lens centred on its clip mean (for
/// correlations pooled within clip).
fn centred_within_clip(series: &[Vec<f64>]) -> Vec<[f64; 4]> {
    let means: Vec<f64> = series
        .iter()
        .map(|s| s.iter().sum::<f64>() / s.len() as f64)
        .collect();
    (0..series[0].len())
        .map(|t| std::array::from_fn(|l| series[l][t] - means[l]))
        .collect()
}

#[tokio::test]
async fn lens_independence_is_measured_and_pinned() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Every real clip of the model's reference corpus, then the generated probes.
    let mut clips: Vec<PathBuf> = corpus_clips(&qualia().model);
    clips.extend(probes(dir.path()));
    let calibrations: Vec<_> = LENSES.iter().map(Readout::calibration).collect();
    // Within-clip: each pair's r over the clips where both lenses move (a lens whose score
    // spans under 1 point has no within-clip correlation to speak of).
    let mut worst = [[0.0f64; 4]; 4];
    let mut pooled: Vec<[f64; 4]> = Vec::new();
    // The same, on the raw readouts (weighted network sums before the percentile scale).
    let mut pooled_raw: Vec<[f64; 4]> = Vec::new();
    for path in &clips {
        let out = analyse_shared(path).await;
        let raw: Vec<Vec<f64>> = LENSES
            .iter()
            .map(|l| out.networks.iter().map(|r| l.raw(r)).collect())
            .collect();
        pooled_raw.extend(centred_within_clip(&raw));
        let scores: Vec<Vec<f64>> = LENSES
            .iter()
            .zip(&calibrations)
            .map(|(l, c)| {
                out.networks
                    .iter()
                    .map(|r| c.percentile(l.raw(r)))
                    .collect()
            })
            .collect();
        let moves: Vec<bool> = scores
            .iter()
            .map(|s| {
                s.iter().copied().fold(f64::MIN, f64::max)
                    - s.iter().copied().fold(f64::MAX, f64::min)
                    >= 1.0
            })
            .collect();
        for a in 0..4 {
            for b in a + 1..4 {
                if moves[a] && moves[b] {
                    let r = pearson(&scores[a], &scores[b]);
                    if r.abs() > worst[a][b].abs() {
                        worst[a][b] = r;
                    }
                }
            }
        }
        pooled.extend(centred_within_clip(&scores));
    }
    let correlation = |rows: &[[f64; 4]]| -> [[f64; 4]; 4] {
        let column = |l: usize| rows.iter().map(|r| r[l]).collect::<Vec<_>>();
        std::array::from_fn(|a| std::array::from_fn(|b| pearson(&column(a), &column(b))))
    };
    let participation = |corr: &[[f64; 4]; 4]| {
        let ev = nalgebra::Matrix4::from_fn(|a, b| corr[a][b]).symmetric_eigenvalues();
        ev.iter().sum::<f64>().powi(2) / ev.iter().map(|x| x * x).sum::<f64>()
    };
    let corr = correlation(&pooled);
    let pr = participation(&corr);
    let corr_raw = correlation(&pooled_raw);
    let pr_raw = participation(&corr_raw);
    println!("worst within-clip r: {worst:.2?}");
    println!("pooled within-clip correlation: {corr:.2?}");
    println!("participation ratio: {pr:.2}");
    println!(
        "raw readouts: pooled within-clip correlation {corr_raw:.2?}, participation ratio {pr_raw:.2}"
    );
    // What the redefinition fixed: attention is no longer the mirror image of purchase intent
    // and manipulation (v1: r = −0.98 within clip).
    assert!(corr[0][2] > -0.5 && corr[0][3] > -0.5, "{corr:?}");
    // The participation-ratio requirement (four lenses carry at least 2.5 dimensions of the
    // clips' within-clip variation; v1 carried 1.3-1.6) and the pairwise one (no two lenses
    // above |r| = 0.8). History: 2.1.0 2.65, 2.2.0 2.18, 2.3.0 2.38, 2.4.0 and 2.5.0 2.31, 2.6.0
    // 1.95 (five corpus clips), 2.7.0 2.51 (nine); lens-standard 2.2.0 on 2.7.0 2.64, 2.3.0
    // 2.61, 2.4.0 on 2.8.0 2.54 (met, on a corpus 57 % hold music); 2.5.0 on 2.9.0's corpus of
    // real content 2.36 (not met), memory-purchase intent 0.82. On 2.11.0 (lens-standard 2.6.0)
    // 2.67, memory-purchase intent still 0.82; lens-standard 2.7.0 (manipulation reads a
    // balance) 2.15, purchase intent-manipulation 0.71. lens-standard 2.8.0 (purchase intent
    // reads the reward profile's part that the emotion profile does not predict): memory-
    // purchase intent falls to 0.44, so for the first time on real content every pair is under
    // 0.8; the participation ratio was 2.49, 0.01 short of 2.5. The remaining coupling was
    // manipulation's (pressure kept the reward profile: purchase intent-manipulation 0.69).
    // lens-standard 2.9.0 (pressure reads the emotion profile alone): 2.57, both requirements
    // met for the first time on real content (purchase intent-manipulation 0.58, memory-
    // manipulation 0.59). Asserted, and the figure pinned so the card cannot go stale.
    assert!(
        (pr - 2.57).abs() < 0.05,
        "participation ratio {pr:.2}: the card says 2.57; update it"
    );
    assert!(
        pr >= 2.5,
        "participation ratio {pr:.2} (requirement >= 2.5)"
    );
    assert!(
        (pr_raw - 2.16).abs() < 0.1,
        "raw-readout participation ratio {pr_raw:.2}: the card says 2.16; update it"
    );
    println!(
        "memory vs purchase intent, pooled within clip: {:.3}",
        corr[1][2]
    );
    for (a, row) in corr.iter().enumerate() {
        for (b, r) in row.iter().enumerate().skip(a + 1) {
            assert!(
                r.abs() < 0.8,
                "lenses {a} and {b} correlate {r:.2} pooled within clip (requirement < 0.8)"
            );
        }
    }
    assert!(
        (corr[1][2] - 0.44).abs() < 0.03 && (corr[2][3] - 0.58).abs() < 0.03,
        "memory vs purchase intent pooled {:.2}, purchase intent vs manipulation {:.2}: the card says 0.44 and 0.58; update it",
        corr[1][2],
        corr[2][3]
    );
    // What no weights can fix in single clips, pinned as the model card states it (README "Lens
    // independence"): a clip with one drive moves any two readouts of it together.
    assert!(
        (worst[1][2] - 0.99).abs() < 0.03 && (worst[0][1] - 0.99).abs() < 0.03,
        "memory vs purchase intent {:.2}, memory vs attention {:.2}: the card says 0.99 and 0.99; update it",
        worst[1][2],
        worst[0][1]
    );
}

/// A clip with nothing to value and nothing to weigh (a synthetic melody over a still frame:
/// no face, no words) leaves Limbic, Ventral Attention, Frontoparietal and Default Mode at
/// rest, the median second of the corpus. It must read as typical, not as persuasion: up to
/// lens-standard 2.1 the mid-rank of the corpus's tie at rest scored it 36 on purchase intent
/// and 62 (2.2.0 before the median rule: 56) on manipulation, and the manipulation block called
/// it "Strong persuasive pull", `coercive`, with every second above a typical one. The scale's
/// rule is a plumbing property; what this checks is the whole local path (model, plugins, block)
/// on a generated clip none of the calibration was built from.
#[test]
fn a_clip_with_nothing_to_persuade_with_reads_as_typical() {
    let dir = tempfile::tempdir().expect("tempdir");
    let melody = over_still(dir.path(), "melody.mp4", &["-f", "lavfi", "-i", MELODY]);
    let out = ok(&brainscan(&[
        "analyze",
        "--json",
        melody.to_str().expect("utf8"),
    ]));
    let r: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let timeline = r["timeline"].as_array().expect("timeline");
    assert!(timeline.len() >= 13, "{}", timeline.len());
    for s in timeline {
        assert_eq!(s["scores"]["purchase_intent"], 50.0, "{s}");
        assert_eq!(s["scores"]["manipulation"], 50.0, "{s}");
    }
    let m = &r["manipulation"];
    assert_eq!(m["conversion_risk"], 50.0, "{m}");
    assert_eq!(m["risk_band"], "moderate", "{m}");
    assert_eq!(m["population"]["per_ten"], 0.0, "{m}");
    assert_eq!(m["quadrant"]["key"], "clean", "{m}");
    assert_eq!(m["cognitive_sovereignty_index"], 0.0, "{m}");
}
