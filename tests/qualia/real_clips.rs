//! The real-clip battery (issue 72), registered in `models/qualia/v2/REAL-CLIPS-PLAN.md` before
//! its first run. Real recordings (registry packages and the shared folder, read in place),
//! music, outdoor sound, silent faces and one synthetic pattern, with silence-, music- and
//! noise-padded variants made at test time, each through the service's whole local path
//! (`brainscan analyze --json --raw`). Rows that pass are asserted; rows that fail are pinned at
//! their measured values, and the model card reports both.

/// The whole battery reads two clips of the shared folder.
mod needs_shared_data {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    use crate::support::{brainscan, ffmpeg, ok, real_media};

    const LENSES: [&str; 4] = ["attention", "memory", "purchase_intent", "manipulation"];
    /// The lens weights of `plugins/readouts` (Visual … Default Mode), for the test's own rest
    /// rule, independent of the plugin's: a network below 0.01 z in the result's raw values.
    const WEIGHTS: [[f64; 7]; 3] = [
        [0.694, 0.4612, 0.5528, 0.0, 0.0, 0.0, 0.0],
        [0.3251, 0.0, 0.0, 0.0, 0.7541, 0.1306, 0.5556],
        [0.0, 0.0, 0.0, 0.0, 0.4468, 0.6465, -0.6183],
    ];
    const NETWORKS: [&str; 7] = [
        "Visual",
        "Somatomotor",
        "Dorsal Attention",
        "Ventral Attention",
        "Limbic",
        "Frontoparietal",
        "Default Mode",
    ];
    /// Manipulation's terms read Limbic, Frontoparietal and Default Mode.
    const MANIPULATION_READS: [usize; 3] = [4, 5, 6];

    fn shared_media() -> PathBuf {
        brainscan::grounding::shared_data_dir()
            .expect("the shared folder is not beside this clone (../shared/data)")
            .join("media")
    }

    /// One clip's completed result.
    struct Scanned {
        name: String,
        doc: Value,
    }

    impl Scanned {
        fn timeline(&self) -> &Vec<Value> {
            self.doc["timeline"].as_array().expect("timeline")
        }

        fn raw(&self, t: usize) -> [f64; 7] {
            let raw = &self.timeline()[t]["raw"];
            NETWORKS.map(|n| raw[n].as_f64().expect("raw value"))
        }

        fn score(&self, lens: &str, t: usize) -> f64 {
            self.timeline()[t]["scores"][lens].as_f64().expect("score")
        }

        /// Whether a transcript line lies within 11 s before or during second `t`.
        fn words_near(&self, t: usize) -> bool {
            self.doc["transcript"]
                .as_array()
                .expect("transcript")
                .iter()
                .any(|l| {
                    let (a, b) = (
                        l["start_sec"].as_f64().expect("start"),
                        l["end_sec"].as_f64().expect("end"),
                    );
                    a < t as f64 + 1.0 && b >= t as f64 - 11.0
                })
        }

        /// The test's own rest rule (the plan's "at rest for the test").
        fn at_rest(&self, lens: &str, t: usize) -> bool {
            let raw = self.raw(t);
            let quiet = match lens {
                "manipulation" => MANIPULATION_READS.iter().all(|i| raw[*i].abs() < 0.01),
                _ => {
                    let w = WEIGHTS[LENSES.iter().position(|l| *l == lens).expect("lens")];
                    (0..7).all(|i| w[i] == 0.0 || raw[i].abs() < 0.01)
                }
            };
            quiet || (matches!(lens, "purchase_intent" | "manipulation") && !self.words_near(t))
        }

        /// Whether second `t` has a reading on `lens`: the result gives it a benchmark.
        fn read(&self, lens: &str, t: usize) -> bool {
            self.timeline()[t]["benchmark"].get(lens).is_some()
        }

        /// The lens mean over the seconds with a reading (50 when none has one).
        fn mean(&self, lens: &str) -> f64 {
            let v: Vec<f64> = (0..self.timeline().len())
                .filter(|t| self.read(lens, *t))
                .map(|t| self.score(lens, t))
                .collect();
            if v.is_empty() {
                50.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        }

        fn band(&self) -> &str {
            self.doc["manipulation"]["risk_band"]
                .as_str()
                .expect("band")
        }

        fn overall(&self) -> f64 {
            self.doc["overall_score"].as_f64().expect("overall score")
        }
    }

    /// Runs `brainscan analyze` on every clip, two at a time (one test process holds both
    /// cores otherwise idle while a clip decodes).
    fn scan_all(clips: &[(String, PathBuf)]) -> BTreeMap<String, Scanned> {
        let mut out = BTreeMap::new();
        for pair in clips.chunks(2) {
            let handles: Vec<_> = pair
                .iter()
                .cloned()
                .map(|(name, path)| {
                    std::thread::spawn(move || {
                        let json = ok(&brainscan(&[
                            "analyze",
                            "--json",
                            "--raw",
                            "--lenses",
                            "attention,memory,purchase_intent,manipulation",
                            path.to_str().expect("utf8"),
                        ]));
                        let doc: Value = serde_json::from_str(&json).expect("json");
                        Scanned { name, doc }
                    })
                })
                .collect();
            for h in handles {
                let s = h.join().expect("scan thread");
                out.insert(s.name.clone(), s);
            }
        }
        out
    }

    /// The clips of the plan, made or found.
    fn clips(dir: &Path) -> Vec<(String, PathBuf)> {
        let media = real_media();
        let shared = shared_media();
        let m = |f: &str| media.join(f);
        ffmpeg(
            dir,
            &[
                "-ss",
                "0",
                "-t",
                "60",
                "-i",
                m("lecture.webm").to_str().expect("utf8"),
                "-c",
                "copy",
                "lecture60.webm",
            ],
        );
        ffmpeg(
            dir,
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc2=s=320x180:r=25",
                "-t",
                "6",
                "-pix_fmt",
                "yuv420p",
                "testsrc2.mp4",
            ],
        );
        ffmpeg(
            dir,
            &[
                "-f",
                "lavfi",
                "-i",
                "anullsrc=r=16000:cl=mono",
                "-t",
                "20",
                "silence.wav",
            ],
        );
        ffmpeg(
            dir,
            &[
                "-ss",
                "10",
                "-t",
                "20",
                "-i",
                m("music_morning_coffee.wav").to_str().expect("utf8"),
                "-ar",
                "16000",
                "-ac",
                "1",
                "music.wav",
            ],
        );
        let mut out: Vec<(String, PathBuf)> = vec![
            ("R1".into(), m("jfk.wav")),
            ("R2".into(), m("sonnet_1.mp3")),
            ("R3".into(), m("ivr_demo_congrats.wav")),
            ("R4".into(), m("ivr_demo_instruct.wav")),
            ("R5".into(), dir.join("lecture60.webm")),
            ("R6".into(), shared.join("auto-editor-example.mp4")),
            ("R7".into(), shared.join("multilingual/fleurs-en-000.ogg")),
            ("R8".into(), m("japanese.wav")),
            ("N1".into(), m("music_morning_coffee.wav")),
            ("N2".into(), m("squirrel.mp4")),
            ("N3".into(), m("face_closeup.mp4")),
            ("N4".into(), m("carphone_pristine.mp4")),
            ("N5".into(), dir.join("testsrc2.mp4")),
        ];
        let originals: Vec<(String, PathBuf)> = out
            .iter()
            .filter(|(n, _)| ["R1", "R2", "R3", "R7"].contains(&n.as_str()))
            .cloned()
            .collect();
        for (name, path) in originals {
            let mono = dir.join(format!("{name}.wav"));
            ffmpeg(
                dir,
                &[
                    "-i",
                    path.to_str().expect("utf8"),
                    "-ar",
                    "16000",
                    "-ac",
                    "1",
                    mono.to_str().expect("utf8"),
                ],
            );
            for (pad, file) in [("S", "silence.wav"), ("M", "music.wav")] {
                let padded = format!("{name}-{pad}.wav");
                ffmpeg(
                    dir,
                    &[
                        "-i",
                        file,
                        "-i",
                        mono.to_str().expect("utf8"),
                        "-i",
                        file,
                        "-filter_complex",
                        "[0][1][2]concat=n=3:v=0:a=1",
                        &padded,
                    ],
                );
                out.push((format!("{name}-{pad}"), dir.join(padded)));
            }
        }
        ffmpeg(
            dir,
            &[
                "-i",
                "R1.wav",
                "-f",
                "lavfi",
                "-i",
                "anoisesrc=color=pink:amplitude=0.06:r=16000:seed=72",
                "-filter_complex",
                "[0][1]amix=inputs=2:duration=first:normalize=0",
                "R1-noise.wav",
            ],
        );
        out.push(("R1-noise".into(), dir.join("R1-noise.wav")));
        out
    }

    /// The insight with its numbers and clock times taken out: the sentence it repeats.
    fn template(insight: &str) -> String {
        insight.replace(|c: char| c.is_ascii_digit(), "#")
    }

    #[test]
    fn real_clips_read_rest_as_rest_and_say_what_their_drivers_say() {
        let dir = tempfile::tempdir().expect("tempdir");
        let made = clips(dir.path());
        let scanned = scan_all(&made);
        let s = |n: &str| scanned.get(n).unwrap_or_else(|| panic!("no scan of {n}"));
        let mut report = String::new();
        for (name, c) in &scanned {
            report.push_str(&format!(
                "{name}: overall {:?} grade {} band {} means {}\n",
                c.doc["overall_score"],
                c.doc["grade"],
                c.band(),
                LENSES
                    .iter()
                    .map(|l| format!("{l} {:.1}", c.mean(l)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        eprintln!("{report}");

        // E1: every second at rest (the test's rule) reads within 45-55 on every lens, and has
        // no reading. Measured, then held at the first run's figure below.
        let mut e1: Vec<(String, &str, usize, f64)> = Vec::new();
        for (name, c) in &scanned {
            for lens in LENSES {
                for t in 0..c.timeline().len() {
                    if c.at_rest(lens, t) {
                        let v = c.score(lens, t);
                        if !(45.0..=55.0).contains(&v) || c.read(lens, t) {
                            e1.push((name.clone(), lens, t, v));
                        }
                    }
                }
            }
        }
        eprintln!("E1: {} seconds at rest with a reading: {e1:?}", e1.len());

        // E2 and E3: padding. Measured deltas, asserted where the plan's floor holds.
        let mut e2 = Vec::new();
        let mut e3 = Vec::new();
        for name in ["R1", "R2", "R3", "R7"] {
            let base = s(name);
            for (pad, lenses, out) in [
                ("S", &LENSES[..], &mut e2),
                (
                    "M",
                    &["memory", "purchase_intent", "manipulation"][..],
                    &mut e3,
                ),
            ] {
                let padded = s(&format!("{name}-{pad}"));
                let worst = lenses
                    .iter()
                    .map(|l| (padded.mean(l) - base.mean(l)).abs())
                    .fold(0.0, f64::max);
                let same_band = padded.band() == base.band();
                out.push((
                    format!("{name}-{pad}"),
                    worst,
                    same_band,
                    base.band().to_owned(),
                    padded.band().to_owned(),
                ));
            }
        }
        eprintln!("E2 silence padding (clip, worst lens delta, same band, bands): {e2:?}");
        eprintln!("E3 music padding: {e3:?}");

        // E4: purchase intent needs an offer.
        let pi = |n: &str| s(n).mean("purchase_intent");
        for n in ["N3", "N4"] {
            let c = s(n);
            for t in 0..c.timeline().len() {
                assert_eq!(c.score("purchase_intent", t), 50.0, "E4: {n} at {t}");
            }
        }
        let pitch_leads: Vec<(&str, bool)> = ["R1", "R2", "R5", "R7"]
            .iter()
            .map(|n| (*n, pi("R3") > pi(n)))
            .collect();
        eprintln!(
            "E4: R3 {:.1} against R1 {:.1}, R2 {:.1}, R5 {:.1}, R7 {:.1}: {pitch_leads:?}",
            pi("R3"),
            pi("R1"),
            pi("R2"),
            pi("R5"),
            pi("R7")
        );

        // E5: the headline.
        let spoken = ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8"];
        let below: usize = spoken
            .iter()
            .filter(|n| s("N5").overall() < s(n).overall())
            .count();
        let audio_above_e = ["R1", "R2", "R3", "R4", "R7", "R8"]
            .iter()
            .any(|n| s(n).doc["grade"] != "E");
        eprintln!(
            "E5: the pattern {:.1} is below {below} of 8 spoken clips; an audio-only clip above E: {audio_above_e}",
            s("N5").overall()
        );

        // E6: text variety and predictions, over this set and the reference corpus.
        // The corpus clips this set already holds (the same files) are counted once, from
        // their scan above.
        let corpus_dir = real_media();
        let in_set: BTreeSet<&PathBuf> = made.iter().map(|(_, p)| p).collect();
        let corpus: Vec<(String, PathBuf)> =
            crate::support::corpus_clips(&brainscan::inference::Model::embedded().expect("model"))
                .into_iter()
                .filter(|p| p.starts_with(&corpus_dir) && !in_set.contains(p))
                .map(|p| {
                    let name = p.file_name().expect("name").to_string_lossy().into_owned();
                    // The lecture is 180.0 s and a hair, past what a scan takes: its first
                    // 179 s.
                    if name == "lecture.webm" {
                        ffmpeg(
                            dir.path(),
                            &[
                                "-t",
                                "179",
                                "-i",
                                p.to_str().expect("utf8"),
                                "-c",
                                "copy",
                                "lecture179.webm",
                            ],
                        );
                        return (name, dir.path().join("lecture179.webm"));
                    }
                    (name, p)
                })
                .collect();
        let corpus = scan_all(&corpus);
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        let mut total = 0;
        for c in scanned.values().chain(corpus.values()) {
            for b in c.doc["buy_moments"].as_array().into_iter().flatten() {
                *counts
                    .entry(template(b["insight"].as_str().expect("insight")))
                    .or_default() += 1;
                total += 1;
            }
            let mut texts: Vec<String> = vec![c.doc["summary"].as_str().unwrap_or("").to_owned()];
            for key in ["moments", "buy_moments"] {
                for m in c.doc[key].as_array().into_iter().flatten() {
                    for f in ["reason", "insight"] {
                        if let Some(t) = m[f].as_str() {
                            texts.push(t.to_owned());
                        }
                    }
                }
            }
            let block = &c.doc["manipulation"];
            texts.push(block["threat"]["note"].as_str().unwrap_or("").to_owned());
            texts.push(block["quadrant"]["how"].as_str().unwrap_or("").to_owned());
            for circuit in block["circuits"].as_array().into_iter().flatten() {
                texts.push(circuit["meaning"].as_str().unwrap_or("").to_owned());
            }
            for t in &texts {
                let claims = unhedged(t);
                assert!(claims.is_empty(), "E6: {}: {claims:?} in {t}", c.name);
            }
        }
        let (top, most) = counts
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(t, n)| (t.clone(), *n))
            .unwrap_or_default();
        eprintln!("E6: {most} of {total} buy moments share the most common insight: {top}");
        report.push_str(&format!(
            "E1 {e1:?}\nE2 {e2:?}\nE3 {e3:?}\nE4 {pitch_leads:?}\nE5 below {below} audio above E {audio_above_e}\nE6 {most} of {total}: {top}\n"
        ));
        // The figures for the model card, beside the test's other scratch files.
        std::fs::write(
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-clips-report.txt"),
            &report,
        )
        .expect("write the report");
        assert!(
            total > 0 && most * 3 <= total,
            "E6: {most} of {total}: {top}"
        );
        // The rows pinned at the first run's figures (model card, "Real clips"): E2 and E3
        // within 3 points of the measured worst delta and with the measured band outcome.
        for (name, worst, same_band, _, _) in e2.iter().chain(&e3) {
            let pinned = pinned_padding(name.as_str());
            assert!(
                (*worst - pinned.0).abs() <= 3.0 && *same_band == pinned.1,
                "{name}: worst delta {worst:.1}, same band {same_band} (pinned {pinned:?})"
            );
        }
        assert_eq!(pitch_leads, PINNED_PITCH_LEADS, "E4");
        assert_eq!((below, audio_above_e), PINNED_HEADLINE, "E5");
        assert!(
            e1.len().abs_diff(PINNED_REST_READ) <= 3,
            "E1: {} seconds at rest with a reading (pinned {PINNED_REST_READ})",
            e1.len()
        );

        // E7: music and outdoor sound have no words; noise invents no tactic.
        for n in ["N1", "N2"] {
            let c = s(n);
            assert_eq!(
                c.doc["transcript"].as_array().map(Vec::len),
                Some(0),
                "E7: {n}"
            );
            assert!(
                c.doc["provenance"]["transcript"]["language"].is_null(),
                "E7: {n}"
            );
        }
        let clean: BTreeSet<String> = s("R1").doc["transcript"]
            .as_array()
            .expect("transcript")
            .iter()
            .map(|l| l["text"].as_str().expect("text").to_lowercase())
            .collect();
        for tactic in s("R1-noise").doc["manipulation"]["tactics"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let quote = tactic["quote"].as_str().expect("quote").to_lowercase();
            assert!(
                clean
                    .iter()
                    .any(|l| l.contains(&quote) || quote.contains(l.as_str())),
                "E7: a tactic quotes {quote:?}, which R1 does not say"
            );
        }
    }

    /// The plan's sentences about viewers that are not predictions, as the plugins' own check
    /// finds them (`brainscan_sdk::text::unhedged_claims`, restated here so that the battery
    /// does not trust the code it checks).
    fn unhedged(text: &str) -> Vec<String> {
        const VIEWER: [&str; 8] = [
            "viewer", "audience", "scrutiny", "guard", "skeptic", "feel", "wants", "relate",
        ];
        const HEDGE: [&str; 5] = [
            "predict",
            "the model",
            "model's",
            "no audience was measured",
            "not a measurement",
        ];
        let own: String = {
            let mut quoted = false;
            text.chars()
                .filter(|c| {
                    match c {
                        '\u{ab}' => quoted = true,
                        '\u{bb}' => {
                            quoted = false;
                            return false;
                        }
                        _ => {}
                    }
                    !quoted
                })
                .collect()
        };
        own.split(['.', '!', '?'])
            .map(str::trim)
            .filter(|s| {
                let l = s.to_lowercase();
                VIEWER.iter().any(|w| l.contains(w)) && !HEDGE.iter().any(|h| l.contains(h))
            })
            .map(str::to_owned)
            .collect()
    }

    /// E2/E3 as the first run measured them: (the worst lens delta, whether the band held).
    fn pinned_padding(name: &str) -> (f64, bool) {
        PINNED_PADDING
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, d, b)| (*d, *b))
            .unwrap_or_else(|| panic!("no pinned padding for {name}"))
    }

    /// The first run's figures (model card, "Real clips"), qualia 2.11.1 with lens-standard
    /// 2.11.0, moments-standard 1.7.0 and manipulation-standard 2.13.0. Only E4's silent faces,
    /// E5's audio-only grade, E6 and E7 pass; the rest fail as below.
    const PINNED_PADDING: [(&str, f64, bool); 8] = [
        ("R1-S", 18.3, true),
        ("R1-M", 15.9, false),
        ("R2-S", 3.6, true),
        ("R2-M", 3.3, true),
        ("R3-S", 12.4, true),
        ("R3-M", 11.1, true),
        ("R7-S", 11.3, false),
        ("R7-M", 25.2, false),
    ];
    /// E4: the telephone product description reads below every one of them.
    const PINNED_PITCH_LEADS: [(&str, bool); 4] =
        [("R1", false), ("R2", false), ("R5", false), ("R7", false)];
    /// E5: the silent pattern is below none of the spoken clips; an audio-only clip reads D.
    const PINNED_HEADLINE: (usize, bool) = (0, true);
    /// E1: seconds at rest by the test's rule (every network below 0.01 z) that have a reading:
    /// the last hundredths of the response kernel's decay after speech ends, which the
    /// plugins' rule (a readout's summed drive below 0.01) still reads, at extremes.
    const PINNED_REST_READ: usize = 14;
}
