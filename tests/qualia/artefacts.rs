//! No artefacts in what a client reads (qualia 2.8.0): every number and sentence follows a live
//! signal. Each test here failed on qualia 2.7.0 for the reason its name gives:
//! - Ventral Attention had no input and was 0 in every second of every clip;
//! - stimulus time kept the HRF's undershoot, so a sound that stopped read as a dip below rest;
//! - the face cascade fired on test patterns (6 of 20 seconds of `testsrc2`);
//! - a clip without words read manipulation as a verdict (92.8, `high`, `critical`);
//! - the speech stage read the raw track, so playback gain moved the transcript.
//!
//! These are design and plumbing checks on generated probes and the corpus, not evidence that
//! the model is right: they show that no client-facing number follows an artefact of the
//! machinery. The evidence for the weights is the Neurosynth profiles and the Alice first half
//! (`grounding.rs`); the face detector's precision and recall are in `faces.rs`.

use brainscan::inference::QualiaOutput;
use brainscan::inference::v2::{FEATURE_COUNT_V2, feature_index};
use brainscan::result::NETWORKS;

use crate::support::{
    FACELESS_PATTERNS, analyse, analyse_shared, builtin, corpus_clips, ffmpeg, lens_series,
    pattern_clip, qualia, real_media, speech,
};

fn std(v: &[f64]) -> f64 {
    let m = v.iter().sum::<f64>() / v.len().max(1) as f64;
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len().max(1) as f64).sqrt()
}

/// Per-second `face_presence`.
fn face_presence(out: &QualiaOutput) -> Vec<f32> {
    let k = feature_index("face_presence").expect("v2 lists faces");
    out.features
        .chunks_exact(FEATURE_COUNT_V2)
        .map(|r| r[k])
        .collect()
}

/// Every network moves on the reference corpus, and every text that reads Ventral Attention
/// can go both ways. A network that never moves cannot carry a sentence: 2.7.0's Ventral
/// Attention (std 0) left the alarm at its usual level and put "drop in skepticism" in every
/// buy trigger. Over the corpus and two probes (a spoken pitch, a narrated still picture), the
/// alarm circuit must read both raised and lowered, coercive authority must take a share, and
/// buy triggers must both name and not name a drop in skepticism. A plumbing check: it fails
/// when a network has no input or its inputs never vary, not when a weight is wrong.
#[tokio::test]
async fn every_network_moves_and_its_texts_go_both_ways() {
    let model = qualia().model.clone();
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    speech(
        d,
        "pitch.wav",
        "I love this so much, it makes me happy every single day. Buy it now, you deserve it. \
         Think about what it costs and whether you need it. Compare the numbers first.",
    );
    let mut clips = corpus_clips(&model);
    clips.push(d.join("pitch.wav"));
    let mut columns: Vec<Vec<f64>> = vec![Vec::new(); 7];
    let mut alarm = std::collections::BTreeSet::new();
    let (mut coercive, mut skeptic, mut not_skeptic) = (false, false, false);
    for clip in &clips {
        let out = analyse_shared(clip).await;
        if clip.starts_with(real_media()) {
            for row in &out.networks {
                for (n, v) in row.iter().enumerate() {
                    columns[n].push(f64::from(*v));
                }
            }
        }
        let (runtime, data, lenses) = lens_series(&out).await;
        let plugin = builtin("manipulation_standard.wasm");
        let (block, _) = runtime.analyze(&plugin, &data).await.expect("manipulation");
        for c in &block.circuits {
            if c.key == "alarm" {
                alarm.insert(c.direction.clone());
            }
        }
        coercive |= block
            .mechanisms
            .iter()
            .any(|m| m.key == "CA" && m.share > 0.0);
        let moments = builtin("moments_standard.wasm");
        let (detection, _) = runtime
            .detect(&moments, &data, &lenses)
            .await
            .expect("moments");
        for b in detection.buy_moments.unwrap_or_default() {
            if b.trigger.contains("drop in skepticism") {
                skeptic = true;
            } else {
                not_skeptic = true;
            }
        }
    }
    let spread: Vec<f64> = columns.iter().map(|c| std(c)).collect();
    eprintln!(
        "network std over the corpus: {:?}; alarm read {alarm:?}; coercive authority {coercive}; triggers with skepticism {skeptic}, without {not_skeptic}",
        NETWORKS.iter().zip(&spread).collect::<Vec<_>>()
    );
    for (name, s) in NETWORKS.iter().zip(&spread) {
        assert!(*s > 0.01, "{name} does not move on the corpus (std {s:.4})");
    }
    assert!(
        alarm.contains("raised") && alarm.contains("lowered"),
        "the alarm circuit read only {alarm:?}"
    );
    assert!(coercive, "coercive authority never took a share");
    assert!(
        skeptic && not_skeptic,
        "buy triggers: with a drop in skepticism {skeptic}, without {not_skeptic}"
    );
}

/// A phrase followed by silence: once the sound stops, the response decays to rest and stays
/// there. With the undershoot in stimulus time, every network the speech drove fell below rest
/// for about ten seconds (purchase intent read 96 while the words were spoken, then 18: "below
/// neutral" because the sound had stopped). A design check of the response kernel: it fails for
/// any kernel or weight that lets the end of a stimulus read as negative drive.
#[tokio::test]
async fn the_sound_stopping_is_not_a_dip_below_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    speech(
        d,
        "phrase.wav",
        "I love this so much, it makes me happy every single day. Buy it now, you deserve it.",
    );
    ffmpeg(
        d,
        &[
            "-i",
            "phrase.wav",
            "-af",
            "apad=whole_dur=22",
            "-ar",
            "16000",
            "ended.wav",
        ],
    );
    let out = analyse(&d.join("ended.wav")).await;
    let rest = &qualia().model.bias;
    let mut drove = [false; 7];
    for (t, row) in out.networks.iter().enumerate() {
        for (n, v) in row.iter().enumerate() {
            assert!(
                *v >= rest[n] - 1e-4,
                "{} at second {t} is {v:.3}, below rest ({:.3})",
                NETWORKS[n],
                rest[n]
            );
            drove[n] |= *v > rest[n] + 0.05;
        }
    }
    // The speech did drive the networks it should (not a vacuous pass).
    assert!(drove[1], "speech did not drive Somatomotor");
    // The last seconds are silence long past the response: every network is back at rest.
    for row in &out.networks[out.networks.len() - 3..] {
        for (n, v) in row.iter().enumerate() {
            assert!(
                (v - rest[n]).abs() < 1e-3,
                "{} at the end: {v}",
                NETWORKS[n]
            );
        }
    }
}

/// Synthetic pictures without a face: the detector must find none in any second. 2.7.0's
/// cascade found a "face" in 6 of 20 seconds of `testsrc2`; the cross-frame verification
/// (`faces::confirmed`) keeps only detections a neighbouring sampled frame repeats.
#[tokio::test]
async fn test_patterns_show_no_face() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mut seen = Vec::new();
    for (name, source) in FACELESS_PATTERNS {
        let out = analyse(&pattern_clip(d, name, source)).await;
        let with_face = face_presence(&out).iter().filter(|p| **p > 0.0).count();
        if with_face > 0 {
            seen.push(format!(
                "{name}: a face in {with_face} of {} s",
                out.seconds
            ));
        }
    }
    assert!(seen.is_empty(), "faces in test patterns: {seen:?}");
    // The same verification keeps the real face: the talking head still shows one.
    let head = analyse(&real_media().join("carphone_pristine.mp4")).await;
    let p = face_presence(&head);
    let share = p.iter().map(|v| f64::from(*v)).sum::<f64>() / p.len() as f64;
    assert!(share >= 0.35, "talking head: face in {share:.2} of seconds");
}

/// A silent moving test pattern: no words, so manipulation is not assessable, and nothing in
/// the lens series, the manipulation block or the summary reads it as a verdict. 2.7.0 gave
/// manipulation 92.8, band `high`, severity `critical`; manipulation-standard 2.4.0 still read
/// the networks the pattern leaves at rest as "reward low" and "relevance low".
#[tokio::test]
async fn a_silent_pattern_reads_not_assessable_not_critical() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    ffmpeg(
        d,
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=640x360:r=25:d=20",
            "-pix_fmt",
            "yuv420p",
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "pattern.mp4",
        ],
    );
    let out = analyse(&d.join("pattern.mp4")).await;
    assert!(out.modalities.video && !out.modalities.audio);
    let (runtime, clip, lenses) = lens_series(&out).await;
    let manipulation = lenses
        .iter()
        .find(|s| s.lens == "manipulation")
        .expect("manipulation lens");
    for s in &manipulation.seconds {
        assert_eq!(s.score, 50.0);
        assert!(s.reason.contains("not assessable"), "{}", s.reason);
    }
    let plugin = builtin("manipulation_standard.wasm");
    let (block, _) = runtime.analyze(&plugin, &clip).await.expect("manipulation");
    assert_eq!(block.conversion_risk, 50.0);
    assert_ne!(block.risk_band, "high");
    assert_ne!(block.risk_band, "elevated");
    assert_eq!(block.threat.severity, "nominal");
    assert_eq!(block.threat.label, "Not assessable");
    // Coercive authority weighs the alarm against deliberation, which has no input without
    // words: abrupt events alone are not coercion (manipulation-standard 2.5.0 read this
    // pattern as "Coercive Authority 100 %").
    // Limbic and Default Mode rest too, so nothing reads a mechanism: the contract's no-split
    // value, a third each.
    let shares: Vec<f64> = block.mechanisms.iter().map(|m| m.share).collect();
    assert_eq!(shares, [0.333, 0.333, 0.334], "{:?}", block.mechanisms);
    // No circuit or quadrant axis ranks networks at rest against the corpus: one whose
    // networks never moved reads "not assessable" at 50 (manipulation-standard 2.4.0 read
    // "reward low, 11.6" and "relevance low" here), and one whose networks moved is read.
    let at_rest = |networks: &[usize]| {
        out.networks
            .iter()
            .all(|row| networks.iter().all(|n| row[*n].abs() < 1e-6))
    };
    let reads = [
        ("critical_thinking", vec![5, 6]),
        ("reward", vec![4, 5, 6]),
        ("alarm", vec![3]),
        ("relevance", vec![6]),
    ];
    let mut not_assessed = 0;
    for (key, networks) in &reads {
        let c = block
            .circuits
            .iter()
            .find(|c| c.key == *key)
            .expect("circuit");
        if *key == "critical_thinking" || at_rest(networks) {
            assert_eq!(
                (c.value, c.reading.as_str()),
                (50.0, "not assessable"),
                "{key}: {}",
                c.meaning
            );
            not_assessed += 1;
        } else {
            assert_ne!(c.reading, "not assessable", "{key} moved: {}", c.meaning);
        }
    }
    // The pattern has no sound and no words: Limbic, Frontoparietal and Default Mode rest.
    assert!(at_rest(&[4, 5, 6]), "a silent pattern drove Limbic/FP/DM");
    assert!(not_assessed >= 3, "{:?}", block.circuits);
    assert_eq!(block.quadrant.wins_over, 50.0, "{}", block.quadrant.how);
    assert!(
        block.quadrant.how.to_lowercase().contains("not assessable"),
        "{}",
        block.quadrant.how
    );
    let moments = builtin("moments_standard.wasm");
    let (detection, _) = runtime
        .detect(&moments, &clip, &lenses)
        .await
        .expect("moments");
    assert!(
        detection.summary.contains("not assessable"),
        "{}",
        detection.summary
    );
    assert!(
        !detection.summary.contains("Persuasive pressure averages"),
        "{}",
        detection.summary
    );
}

/// The speech stage hears the loudness-normalised track: 20 dB less playback gain gives the
/// same speech regions and the same words.
#[tokio::test]
async fn playback_gain_does_not_change_the_transcript() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let src = real_media().join("jfk.wav");
    ffmpeg(
        d,
        &[
            "-i",
            src.to_str().expect("utf8"),
            "-af",
            "volume=-20dB",
            "quiet.wav",
        ],
    );
    let (a, b) = (analyse(&src).await, analyse(&d.join("quiet.wav")).await);
    let words = |o: &QualiaOutput| -> Vec<String> {
        o.heard
            .as_ref()
            .expect("speech analysed")
            .lines
            .iter()
            .map(|l| l.text.clone())
            .collect()
    };
    assert!(!words(&a).is_empty());
    assert_eq!(words(&a), words(&b));
    let regions = |o: &QualiaOutput| o.heard.as_ref().expect("heard").regions.len();
    assert_eq!(regions(&a), regions(&b));
}
