//! Evidence from data independent of the weights (issue: qualia v2 part 2).
//!
//! - The Neurosynth profile tool reproduces the committed table from its inputs.
//! - The shipped v2 weights are the ones the committed table implies.
//! - The pre-registered Alice check (`models/qualia/v2/EVALUATION-PLAN.md`): the floor was
//!   stated and committed before any prediction was compared with the fMRI.

use brainscan::grounding::neurosynth::ProfileTable;
use brainscan::inference::Model;

#[test]
fn shipped_v2_weights_are_the_committed_profiles() {
    let table = ProfileTable::load(&ProfileTable::committed_path()).expect("committed");
    let (weights, notes) = brainscan::inference::prior::grounded_weights(&table);
    let model = Model::embedded().expect("embedded");
    assert_eq!(model.weights, weights, "rerun scripts/build-qualia-prior");
    assert_eq!(model.manifest.weights, notes);
    assert_eq!(model.manifest.provenance["source"], "prior");
    // The figures and words a client reads are the shipped evaluation's (rebuild the model
    // with scripts/build-qualia-prior when it changes).
    assert_eq!(
        model.manifest.provenance["evaluation"],
        serde_json::json!(brainscan::grounding::alice::SHIPPED_EVALUATION)
    );
    assert_eq!(
        model.manifest.provenance["summary"],
        brainscan::inference::prior::v2_summary()
    );
    for note in &model.manifest.weights {
        assert!(note.reason.contains("Neurosynth profile"), "{note:?}");
    }
}

/// Tests that read the reference data (Neurosynth v7, the Alice first half) in place.
mod needs_shared_data {
    use brainscan::grounding::neurosynth::ProfileTable;

    use crate::support::{brainscan, ok};

    /// The reference data, read in place; a test that calls this is in `needs_shared_data`, which
    /// `scripts/test` leaves out, saying so, where the shared folder is absent.
    pub(crate) fn reference_data() -> std::path::PathBuf {
        brainscan::grounding::reference_data_dir().unwrap_or_else(|| {
        panic!(
            "the reference data (neurosynth-v7/, alice-brennan2016/) was not found: set BRAINSCAN_REFERENCE_DATA or put the shared folder beside the clone (../shared/data)"
        )
    })
    }

    #[test]
    fn profile_tool_reproduces_the_committed_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("profiles.json");
        let data = reference_data();
        ok(&brainscan(&[
            "model",
            "profiles",
            "--data",
            data.to_str().expect("utf8"),
            "--out",
            out.to_str().expect("utf8"),
        ]));
        let built = ProfileTable::load(&out).expect("built table");
        let committed = ProfileTable::load(&ProfileTable::committed_path()).expect("committed");
        assert_eq!(built, committed, "rerun scripts/build-qualia-prior");
        // Sanity of the method on constructs whose cortical home is textbook: these can fail if the
        // mapping of foci to networks or the statistic is wrong.
        let net = |name: &str| {
            brainscan::result::NETWORKS
                .iter()
                .position(|n| *n == name)
                .expect("network")
        };
        let top = |construct: &str| {
            let p = built.get(construct).expect("row");
            (0..7)
                .max_by(|a, b| p.log_odds[*a].total_cmp(&p.log_odds[*b]))
                .expect("max")
        };
        assert_eq!(
            top("motion"),
            net("Visual"),
            "motion studies peak in visual cortex"
        );
        assert_eq!(
            top("speech_auditory"),
            net("Somatomotor"),
            "auditory cortex is in Yeo-7 somatomotor"
        );
        assert_eq!(
            top("social"),
            net("Default Mode"),
            "mentalising is default mode"
        );
    }

    /// A named baseline's r in a report's `[[name, r], ...]` list.
    fn baseline(list: &serde_json::Value, name: &str) -> f64 {
        list.as_array()
            .and_then(|b| b.iter().find(|x| x[0] == name))
            .and_then(|x| x[1].as_f64())
            .unwrap_or_else(|| panic!("no {name} baseline in {list}"))
    }

    #[test]
    fn alice_first_half_meets_the_preregistered_floor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = reference_data();
        ok(&brainscan(&[
            "model",
            "alice",
            "--data",
            data.to_str().expect("utf8"),
            "--out",
            dir.path().to_str().expect("utf8"),
        ]));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).expect("report"))
                .expect("json");
        // The design matrix the report scored is written beside it, a row per volume, so every
        // figure can be recomputed outside the service.
        let design = std::fs::read_to_string(dir.path().join("design.csv")).expect("design.csv");
        assert_eq!(design.lines().count(), 1 + 181);
        assert!(
            design
                .lines()
                .next()
                .is_some_and(|h| h.starts_with("second,duration,contrast,")
                    && h.ends_with(",net:Default Mode")),
            "{}",
            design.lines().next().unwrap_or_default()
        );
        let mean = report["mean_zero_shot_r"].as_f64().expect("mean r");
        let loudness = baseline(&report["mean_baselines"], "loudness");
        println!("{}", serde_json::to_string_pretty(&report).expect("json"));
        // The floor registered in EVALUATION-PLAN.md before the first run: (1) mean r >= 0.10 and
        // (2) above the loudness-only baseline. (1) has always been met; (2) failed up to 2.8.0
        // (0.292 against 0.303) and is met since 2.9.0 by a margin far inside both intervals
        // (2.9.0 0.316, 2.11.0 0.310, against 0.303). Word rate alone is still above the model, and that is pinned too,
        // so a model that passes it fails here until the card and this test are updated.
        assert!(
            mean >= 0.10,
            "zero-shot mean r {mean:.3} is under the floor 0.10"
        );
        assert!(
            mean > loudness,
            "zero-shot mean r {mean:.3} no longer beats loudness only ({loudness:.3}): update the model card (README, Alice table) and this test"
        );
        let word_rate = baseline(&report["mean_baselines"], "word_rate");
        assert!(
            mean < word_rate,
            "zero-shot mean r {mean:.3} now beats word rate only ({word_rate:.3}): update the model card, the summary and this test"
        );
        // The figures the card reports, to three decimals.
        assert!(
            (mean - 0.310).abs() < 0.0015,
            "zero-shot mean r is {mean:.3}; the card says 0.310"
        );
        assert!(
            (loudness - 0.303).abs() < 0.0015,
            "loudness-only r is {loudness:.3}; the card says 0.303"
        );
        let shipped = brainscan::grounding::alice::SHIPPED_EVALUATION;
        let close = |key: &str, want: f64| {
            let got = report[key].as_f64().unwrap_or(f64::NAN);
            assert!(
                (got - want).abs() < 0.0015,
                "{key}: {got:.3}, provenance says {want}"
            );
        };
        close(
            "mean_fitted_r",
            shipped.nested_cv_fitted_within_block_mean_r,
        );
        // Two ceilings for two targets, and the subject without signal left out (deviations 13-14).
        close("mean_ceiling", shipped.ceiling_loso_isc);
        close("mean_group_ceiling", shipped.ceiling_group_split_half);
        // Every mean r has an interval and a null (deviation 16): the null SD of a six-ROI mean of
        // smooth series is near 0.1, so the 0.10 floor sits at about one SD of chance.
        let u = &report["mean_zero_shot_uncertainty"];
        let (lo, hi, null_sd) = (
            u["interval"][0].as_f64().expect("low"),
            u["interval"][1].as_f64().expect("high"),
            u["null_sd"].as_f64().expect("null SD"),
        );
        assert!(lo < mean && mean < hi, "{u}");
        assert!((0.05..0.15).contains(&null_sd), "{u}");
        assert_eq!(
            report["mean_baselines_uncertainty"]
                .as_array()
                .map(Vec::len),
            Some(2),
            "{report}"
        );
        let excluded = report["excluded_subjects"]
            .as_array()
            .expect("excluded subjects");
        assert_eq!(excluded.len(), 1, "{excluded:?}");
        assert!(
            excluded[0]
                .as_str()
                .is_some_and(|x| x.starts_with("s33-timecourses.txt")),
            "{excluded:?}"
        );
        // The dataset authors' own predictors, from the real audio (issue 42's correction): their
        // word rate matches ours from the proxy (0.362 against 0.359), and their sound power is
        // below our loudness (0.212 against 0.303), so the proxy's loudness, not the model, carries
        // part of loudness's whole-series level. Pinned as the card states them.
        let authors = report["authors_regressors"]
            .as_array()
            .expect("authors' regressors");
        let authors_r = |name: &str| -> f64 {
            authors
                .iter()
                .find(|a| a["name"] == name)
                .and_then(|a| a["mean_r"].as_f64())
                .unwrap_or_else(|| panic!("{name} in {authors:?}"))
        };
        assert!(
            (authors_r("authors' rate") - 0.362).abs() < 0.0015
                && (authors_r("authors' sndpwr") - 0.212).abs() < 0.0015,
            "{authors:?}: the card says 0.362 and 0.212"
        );
        assert!(
            authors
                .iter()
                .all(|a| a["r"].as_array().map(Vec::len) == Some(6))
        );
        // Every r has an interval and a null (issue 42's correction): each target's, whole series,
        // and the after-onset means. Each interval holds its own estimate.
        let holds = |r: f64, u: &serde_json::Value| -> bool {
            let (lo, hi) = (
                u["interval"][0].as_f64().unwrap_or(f64::NAN),
                u["interval"][1].as_f64().unwrap_or(f64::NAN),
            );
            lo <= r && r <= hi && u["null_sd"].as_f64().is_some_and(|sd| sd > 0.0)
        };
        for t in report["targets"].as_array().expect("targets") {
            let r = t["zero_shot_r"].as_f64().expect("r");
            assert!(holds(r, &t["zero_shot_uncertainty"]), "{t}");
            assert_eq!(
                t["baselines_uncertainty"].as_array().map(Vec::len),
                Some(2),
                "{t}"
            );
        }
        // Within block too (issue 42's correction, since 2.9.0's second card): the bootstrap draws
        // its blocks inside each of the five blocks. The model's mean is above chance there, and
        // loudness's is not clearly so.
        for t in report["targets"].as_array().expect("targets") {
            let r = t["zero_shot_block_r"].as_f64().expect("r");
            assert!(holds(r, &t["zero_shot_block_uncertainty"]), "{t}");
        }
        let block_u = &report["mean_zero_shot_block_uncertainty"];
        assert!(
            holds(
                report["mean_zero_shot_block_r"].as_f64().expect("r"),
                block_u
            ),
            "{block_u}"
        );
        assert!(block_u["p"].as_f64().is_some_and(|p| p < 0.01), "{block_u}");
        let block_baselines = report["mean_baselines_block_uncertainty"]
            .as_array()
            .expect("within-block baselines' uncertainty");
        assert_eq!(block_baselines.len(), 2, "{block_baselines:?}");
        for b in block_baselines {
            let name = b[0].as_str().expect("name");
            let r = baseline(&report["mean_baselines_block"], name);
            assert!(holds(r, &b[1]), "{name}: {b}");
        }
        let after_onset = &report["after_onset"];
        assert!(
            holds(
                after_onset["mean_zero_shot_r"].as_f64().expect("r"),
                &after_onset["mean_zero_shot_uncertainty"]
            ),
            "{after_onset}"
        );
        close(
            "mean_zero_shot_block_r",
            shipped.zero_shot_within_block_mean_r,
        );
        let block = |name: &str| baseline(&report["mean_baselines_block"], name);
        assert!((block("loudness") - shipped.loudness_only_within_block_mean_r).abs() < 0.0015);
        assert!((block("word_rate") - shipped.word_rate_only_within_block_mean_r).abs() < 0.0015);
        // Secondary (within block, added after seeing the data; EVALUATION-PLAN.md deviation 7):
        // the model tracks the second-to-second response better than loudness does.
        assert!(report["mean_zero_shot_block_r"].as_f64().expect("block r") > block("loudness"));
        // Secondary (after the onset, added after seeing the data; EVALUATION-PLAN.md deviation
        // 10): the volumes from 6 s after the first word. Loudness's whole-series lead is the
        // story's onset: without it the model is well above loudness, and still below word rate.
        let after = &report["after_onset"];
        assert_eq!(
            after["from_second"].as_u64(),
            Some(shipped.after_onset_from_second as u64),
            "{after}"
        );
        assert_eq!(after["rows"].as_u64(), Some(178), "{after}");
        let after_r = after["mean_zero_shot_r"].as_f64().expect("after-onset r");
        let after_baseline = |name: &str| baseline(&after["mean_baselines"], name);
        assert!(
            (after_r - shipped.zero_shot_after_onset_mean_r).abs() < 0.0015,
            "{after}"
        );
        assert!(
            (after_baseline("loudness") - shipped.loudness_only_after_onset_mean_r).abs() < 0.0015,
            "{after}"
        );
        assert!(
            (after_baseline("word_rate") - shipped.word_rate_only_after_onset_mean_r).abs()
                < 0.0015,
            "{after}"
        );
        assert!(after_r > after_baseline("loudness"), "{after}");
        close("mean_ceiling", shipped.ceiling_loso_isc);
        // `model eval` on the files `model alice` wrote scores the same: the generic command is
        // the one the card tells readers to use on their own data.
        let file = |name: &str| dir.path().join(name).to_str().expect("utf8").to_owned();
        let (features, targets) = (file("features.csv"), file("targets.csv"));
        let eval_after = |second: &str| {
            brainscan(&[
                "model",
                "eval",
                "--features",
                &features,
                "--targets",
                &targets,
                "--after-second",
                second,
                "--json",
            ])
        };
        let eval: serde_json::Value =
            serde_json::from_str(&ok(&eval_after("26"))).expect("eval json");
        for key in ["mean_zero_shot_r", "mean_zero_shot_block_r"] {
            assert_eq!(eval[key], report[key], "{key}");
        }
        assert_eq!(eval["after_onset"], report["after_onset"]);
        // Too few rows after the cut is refused with the count, not scored on a handful of rows.
        let refused = eval_after("370");
        assert!(!refused.status.success());
        assert!(
            String::from_utf8_lossy(&refused.stderr)
                .contains("only 6 target rows start at or after second 370"),
            "{}",
            String::from_utf8_lossy(&refused.stderr)
        );
        assert!((mean - shipped.zero_shot_mean_r).abs() < 0.0015);
        assert!((loudness - shipped.loudness_only_mean_r).abs() < 0.0015);
        // The ceiling is a real bound on a group-average target: every ROI's is positive.
        for t in report["targets"].as_array().expect("targets") {
            assert!(t["ceiling"].as_f64().expect("ceiling") > 0.0, "{t}");
        }
    }

    /// The reference data read in place is the one the shipped tables were derived from: every
    /// file in `models/qualia/v2/grounding/reference-inputs.sha256` exists there with that sha256,
    /// and no data file is missing from the list. A plumbing check on the inputs every grounding
    /// figure comes from.
    #[test]
    fn the_reference_data_matches_the_recorded_input_checksums() {
        let root = reference_data();
        let sums = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../models/qualia/v2/grounding/reference-inputs.sha256"),
        )
        .expect("reference-inputs.sha256");
        let mut listed = std::collections::BTreeSet::new();
        for line in sums.lines() {
            let (sum, name) = line.split_once("  ").expect("sha256sum format");
            let bytes = std::fs::read(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                brainscan::inference::model::checksum(&bytes),
                format!("sha256:{sum}"),
                "{name} differs from its recorded sha256"
            );
            listed.insert(name.to_owned());
        }
        for dir in brainscan::grounding::REFERENCE_FOLDERS {
            for entry in walk(&root.join(dir)) {
                let name = entry
                    .strip_prefix(&root)
                    .expect("inside")
                    .to_string_lossy()
                    .into_owned();
                assert!(
                    listed.contains(&name),
                    "{name} is not in reference-inputs.sha256"
                );
            }
        }
        assert!(listed.len() >= 90, "{} files listed", listed.len());
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
