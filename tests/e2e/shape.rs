//! Real clips through the real binary (qualia on lavapipe or a GPU, the default plugins, the
//! embedded benchmark table): every completed scan validates, field by field, against the
//! spec's completed shape — written out below as a JSON Schema straight from the spec's
//! tables — and the values agree with each other (delta = to − from, shares sum to 1, …).

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{call, fixtures, funded_key, media_server, real_clips, serve};

/// The spec's completed scan, field by field. `additionalProperties` stays open: fields are
/// additive (low_signal, provenance).
fn completed_schema() -> Value {
    let num = json!({"type": "number"});
    let score = json!({"type": "number", "minimum": 0, "maximum": 100});
    let string = json!({"type": "string"});
    let networks = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["Visual", "Somatomotor", "Dorsal Attention", "Ventral Attention", "Limbic", "Frontoparietal", "Default Mode"],
        "properties": {
            "Visual": num, "Somatomotor": num, "Dorsal Attention": num, "Ventral Attention": num,
            "Limbic": num, "Frontoparietal": num, "Default Mode": num
        }
    });
    let labeled = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["Visual", "Voice", "Cognitive", "Emotional", "Memory", "Attention", "Salience"],
        "properties": {
            "Visual": num, "Voice": num, "Cognitive": num, "Emotional": num, "Memory": num,
            "Attention": num, "Salience": num
        }
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["scan_id", "status", "overall_score", "grade", "duration_sec", "lenses", "timeline"],
        "properties": {
            "scan_id": string,
            "status": {"const": "complete"},
            "overall_score": {"type": ["number", "null"], "minimum": 0, "maximum": 100},
            "grade": {"enum": ["A", "B", "C", "D", "E"]},
            "duration_sec": num,
            "lenses": {"type": "array", "items": string},
            "timeline": {"type": "array", "items": {
                "type": "object",
                "required": ["second", "scores"],
                "properties": {
                    "second": {"type": "integer", "minimum": 0},
                    "scores": {"type": "object", "additionalProperties": score},
                    "benchmark": {"type": "object", "additionalProperties": {
                        "type": "object", "required": ["percentile", "label"],
                        "properties": {
                            "percentile": score,
                            "label": {"enum": ["well above average", "above average", "average", "below average", "well below average"]}
                        }
                    }},
                    "reasons": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}},
                    "raw": networks,
                    "raw_labeled": labeled
                }
            }},
            "moments": {"type": "array", "items": {
                "type": "object",
                "required": ["type", "lens", "second", "from", "to", "delta", "z", "reason", "brainReason", "contentLine"],
                "properties": {
                    "type": {"enum": ["attention_drop", "attention_peak", "lens_drop", "lens_peak"]},
                    "lens": string, "second": {"type": "integer", "minimum": 0},
                    "from": score, "to": score, "delta": num, "z": num,
                    "reason": {"type": "string", "minLength": 1},
                    "brainReason": {"type": "string", "minLength": 1},
                    "contentLine": {"type": ["string", "null"]}
                }
            }},
            "summary": {"type": "string", "minLength": 1},
            "buy_moments": {"type": ["array", "null"], "items": {
                "type": "object",
                "required": ["start_sec", "end_sec", "peak_sec", "strength", "strength_pct", "quote", "insight", "trigger"],
                "properties": {
                    "start_sec": {"type": "integer", "minimum": 0},
                    "end_sec": {"type": "integer", "minimum": 0},
                    "peak_sec": {"type": "integer", "minimum": 0},
                    "strength": {"type": "string", "minLength": 1},
                    "strength_pct": score,
                    "quote": {"type": ["string", "null"]},
                    "insight": {"type": "string", "minLength": 1},
                    "trigger": {"type": "string", "minLength": 1}
                }
            }},
            "manipulation": {
                "type": "object",
                "required": ["conversion_risk", "risk_band", "cognitive_sovereignty_index", "sovereignty", "pbi", "threat", "population", "quadrant", "circuits", "mechanisms", "timeline", "peak_moment", "tactics"],
                "properties": {
                    "conversion_risk": score,
                    "risk_band": {"enum": ["low", "moderate", "elevated", "high"]},
                    "cognitive_sovereignty_index": num,
                    "sovereignty": score,
                    "pbi": num,
                    "threat": {"type": "object", "required": ["label", "severity", "color", "note"], "properties": {
                        "label": string, "severity": {"enum": ["critical", "high", "moderate", "nominal"]},
                        "color": {"type": "string", "pattern": "^#[0-9A-Fa-f]{6}$"}, "note": string
                    }},
                    "population": {"type": "object", "required": ["per_ten", "per_ten_thousand", "note"], "properties": {
                        "per_ten": {"type": "number", "minimum": 0, "maximum": 10},
                        "per_ten_thousand": {"type": "number", "minimum": 0, "maximum": 10000},
                        "note": string
                    }},
                    "quadrant": {"type": "object", "required": ["key", "label", "lowers_guard", "wins_over", "how"], "properties": {
                        "key": {"enum": ["clean", "coercive", "seductive", "total"]},
                        "label": string, "lowers_guard": score, "wins_over": score, "how": string
                    }},
                    "circuits": {"type": "array", "minItems": 4, "maxItems": 4, "items": {
                        "type": "object",
                        "required": ["key", "label", "plain", "value", "direction", "reading", "meaning"],
                        "properties": {"key": string, "label": string, "plain": string, "value": num, "direction": string, "reading": string, "meaning": string}
                    }},
                    "mechanisms": {"type": "array", "minItems": 3, "maxItems": 3, "items": {
                        "type": "object", "required": ["key", "label", "share"],
                        "properties": {"key": {"enum": ["SR", "MR", "CA"]}, "label": string, "share": {"type": "number", "minimum": 0, "maximum": 1}}
                    }},
                    "timeline": {"type": "array", "items": {
                        "type": "object", "required": ["sec", "exposure", "reward", "effort", "alarm"],
                        "properties": {"sec": {"type": "integer", "minimum": 0}, "exposure": num, "reward": num, "effort": num, "alarm": num}
                    }},
                    "peak_moment": {"type": ["object", "null"], "required": ["peak_sec", "start_sec", "end_sec", "quote", "why"], "properties": {
                        "peak_sec": {"type": "integer"}, "start_sec": {"type": "integer"}, "end_sec": {"type": "integer"},
                        "quote": string, "why": string
                    }},
                    "tactics": {"type": "array", "items": {
                        "type": "object", "required": ["tactic", "kind", "at_sec", "quote"],
                        "properties": {"tactic": string, "kind": string, "at_sec": {"type": "integer"}, "quote": string}
                    }}
                }
            },
            "fmri_url": {"type": ["string", "null"]}
        }
    })
}

fn assert_schema(body: &Value) {
    let schema = completed_schema();
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// The cross-field rules the schema cannot say.
fn assert_consistent(scan: &Value, lenses: &[&str]) {
    let timeline = scan["timeline"].as_array().expect("timeline");
    let duration = scan["duration_sec"].as_f64().expect("duration");
    // The spec: duration_sec equals the number of timeline entries.
    assert_eq!(timeline.len() as f64, duration, "one entry per second");
    assert_eq!(
        scan["lenses"],
        json!(lenses),
        "lenses scored, in the request's order"
    );
    for (i, e) in timeline.iter().enumerate() {
        assert_eq!(e["second"], i);
        for l in lenses {
            assert!(e["scores"][l].is_number(), "{l} at {i}");
            assert!(e["reasons"][l].is_string(), "reason {l} at {i}");
            let b = &e["benchmark"][l];
            assert!(b["percentile"].is_number(), "benchmark {l} at {i}: {e}");
        }
    }
    let mean_attention = timeline
        .iter()
        .map(|e| e["scores"]["attention"].as_f64().expect("attention"))
        .sum::<f64>()
        / timeline.len() as f64;
    let overall = scan["overall_score"].as_f64().expect("overall");
    assert!(
        (overall - mean_attention).abs() <= 0.051,
        "overall_score is the mean attention"
    );
    let grade = match overall {
        s if s >= 75.0 => "B",
        s if s >= 60.0 => "C",
        s if s >= 45.0 => "D",
        _ => "E",
    };
    assert_eq!(scan["grade"], grade);
    for m in scan["moments"].as_array().expect("moments") {
        let (from, to, delta) = (
            m["from"].as_f64().expect("from"),
            m["to"].as_f64().expect("to"),
            m["delta"].as_f64().expect("delta"),
        );
        assert!((delta - (to - from)).abs() < 1e-6, "{m}");
        let second = m["second"].as_u64().expect("second") as usize;
        assert!(second >= 1 && second < timeline.len());
        let lens = m["lens"].as_str().expect("lens");
        assert_eq!(timeline[second]["scores"][lens].as_f64(), Some(to), "{m}");
        assert_eq!(timeline[second - 1]["scores"][lens].as_f64(), Some(from));
        assert!(m["z"].as_f64().expect("z").abs() >= 1.75);
        assert_eq!(
            m["type"].as_str().expect("type").ends_with("peak"),
            delta > 0.0
        );
    }
    if let Some(buy) = scan["buy_moments"].as_array() {
        assert!(
            !buy.is_empty(),
            "null, not [], when no window clears the bar"
        );
        assert_eq!(buy[0]["strength_pct"], 100.0);
        assert_eq!(buy[0]["strength"], "strongest buy moment");
        for b in buy {
            let (s, p, e) = (
                b["start_sec"].as_u64().expect("s"),
                b["peak_sec"].as_u64().expect("p"),
                b["end_sec"].as_u64().expect("e"),
            );
            assert!(s <= p && p <= e && (e as usize) < timeline.len(), "{b}");
            assert!(e - s + 1 >= 3, "windows last at least 3 s");
        }
    }
    let m = &scan["manipulation"];
    let shares: f64 = m["mechanisms"]
        .as_array()
        .expect("mechanisms")
        .iter()
        .map(|x| x["share"].as_f64().expect("share"))
        .sum();
    assert!((shares - 1.0).abs() < 1e-9, "shares sum to 1: {shares}");
    let risk = m["conversion_risk"].as_f64().expect("risk");
    assert!((m["sovereignty"].as_f64().expect("sov") + risk - 100.0).abs() < 1e-9);
    assert_eq!(m["timeline"].as_array().expect("t").len(), timeline.len());
    for s in m["timeline"].as_array().expect("t") {
        let f = |k: &str| s[k].as_f64().expect(k);
        assert!((f("exposure") - (f("reward") - f("effort") - f("alarm"))).abs() < 1.5e-3);
    }
    // conversion_risk is the clip mean of the manipulation lens.
    let lens_mean = timeline
        .iter()
        .map(|e| e["scores"]["manipulation"].as_f64().expect("manipulation"))
        .sum::<f64>()
        / timeline.len() as f64;
    assert!((risk - lens_mean).abs() < 0.1, "{risk} vs {lens_mean}");
    let summary = scan["summary"].as_str().expect("summary");
    assert!(
        summary.ends_with("not a measurement of any real audience."),
        "{summary}"
    );
    assert!(
        scan["provenance"]["plugins"]
            .as_array()
            .expect("plugins")
            .len()
            == 3,
        "lens, moments and manipulation plugins ran: {}",
        scan["provenance"]
    );
    assert_eq!(
        scan["provenance"]["benchmark"]["lens_plugin"],
        brainscan::plugins::defaults::LENS_STANDARD
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_clips_complete_in_the_spec_shape_with_consistent_values() {
    let clips = real_clips();
    for f in ["trailer_bbb.mp4", "jfk.wav"] {
        std::fs::copy(clips.join(f), fixtures().dir.join(f)).expect("copy clip");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let key = funded_key(dir.path());
    let media = media_server().await;
    let server = serve(dir.path());
    let http = reqwest::Client::new();
    let all = ["attention", "memory", "purchase_intent", "manipulation"];
    let submit = |body: Value| {
        let (http, key) = (http.clone(), key.clone());
        let url = format!("{}/api/v1/scans", server.base);
        async move {
            let r = call(&http, url, &key, Some(&body)).await;
            r["scan_id"]
                .as_str()
                .unwrap_or_else(|| panic!("{r}"))
                .to_owned()
        }
    };
    let video = submit(json!({
        "input": {"type": "video", "video_url": media.url("/media/trailer_bbb.mp4")},
        "lenses": all,
        "options": {"include_raw": true}
    }))
    .await;
    let audio = submit(json!({
        "input": {"type": "audio", "audio_url": media.url("/media/jfk.wav")},
        "lenses": all
    }))
    .await;
    for (id, raw) in [(&video, true), (&audio, false)] {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
        let scan = loop {
            let s = call(
                &http,
                format!("{}/api/v1/scans/{id}", server.base),
                &key,
                None,
            )
            .await;
            if s["status"] != "queued" && s["status"] != "processing" {
                break s;
            }
            assert!(tokio::time::Instant::now() < deadline, "timed out: {s}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(scan["status"], "complete", "{scan}");
        assert_schema(&scan);
        assert_consistent(&scan, &all);
        let first = &scan["timeline"][0];
        assert_eq!(first.get("raw").is_some(), raw);
        assert_eq!(first.get("raw_labeled").is_some(), raw);
        if raw {
            assert_eq!(first["raw"]["Limbic"], first["raw_labeled"]["Emotional"]);
        }
        assert_eq!(scan["low_signal"], false, "real clips move the networks");

        // POST /analyze re-runs the active manipulation plugin on the stored networks: the
        // same version on the same numbers gives the same block, and it costs nothing.
        let wallet = format!("{}/api/v1/wallet", server.base);
        let before = call(&http, wallet.clone(), &key, None).await;
        let analyze = format!("{}/api/v1/analyze", server.base);
        let r = call(&http, analyze, &key, Some(&json!({"scan_id": id}))).await;
        assert_eq!(r["result"]["manipulation"], scan["manipulation"], "{r}");
        assert_eq!(r["plugin"]["name"], "manipulation-standard");
        let after = call(&http, wallet, &key, None).await;
        assert_eq!(before, after, "analyze is never charged");
    }
}
