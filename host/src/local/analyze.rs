//! `brainscan analyze FILE|URL`: the service's whole analysis of one clip on this machine.
//!
//! It runs the worker's own analysis path ([`crate::analysis::Analysis`]: decode, transcript,
//! qualia, the plugin stage, benchmarks) and renders the result with the API's own view
//! ([`crate::api::views::completed`]), so `--json` is the structure `GET /scans/{id}` returns
//! for a scan created with default options, `scan_id` aside. No server and no database are
//! needed: the plugin registry keeps its state in a private SQLite file in a temporary folder
//! that is removed on exit. `--plugin` components are installed there after the conformance
//! checks an operator's install runs, under the same limits as the service.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use crate::analyzer::{AnalysisInput, Analyzer};
use crate::config::{FetchConfig, PluginConfig};
use crate::scan::{InputSpec, ScanOptions, ScanRequest};

use super::{ModelArgs, probe_file, qualia, resolve};

/// The id a local result carries where the service puts the scan's id.
pub const LOCAL_SCAN_ID: &str = "local";

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// A media file, or an http(s) URL to download (with the service's fetch guards).
    pub input: String,
    /// Lenses to score, comma-separated. As in the API, unknown names are ignored and none
    /// (or only unknown ones) means the default lenses.
    #[arg(long, value_delimiter = ',')]
    pub lenses: Vec<String>,
    /// A lens plugin component (`.wasm`) to run beside the built-in ones, after the
    /// conformance checks an operator's install runs. Repeatable.
    #[arg(long = "plugin", value_name = "FILE")]
    pub plugins: Vec<PathBuf>,
    /// Print the completed result as JSON, the structure `GET /scans/{id}` returns.
    #[arg(long, conflicts_with = "table")]
    pub json: bool,
    /// Print a readable summary (the default): per-second scores, moments with their reasons,
    /// the summary and the manipulation read.
    #[arg(long)]
    pub table: bool,
    /// Add the seven network series (`raw`, `raw_labeled`) to every second, as the API's
    /// `include_raw` does.
    #[arg(long)]
    pub raw: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub fetch: FetchConfig,
    #[command(flatten)]
    pub plugin_limits: PluginConfig,
}

/// The model's benchmark table, dropped when it was built for another model (as `serve`
/// does: percentiles against another model's scores would mislead).
fn benchmarks(
    args: &ModelArgs,
    model_id: &str,
) -> anyhow::Result<Option<Arc<crate::benchmark::BenchmarkTable>>> {
    let table = match &args.model {
        Some(dir) => crate::benchmark::BenchmarkTable::load_dir(dir)?,
        None => Some(crate::benchmark::BenchmarkTable::embedded()?),
    };
    Ok(table.filter(|t| t.model == model_id).map(Arc::new))
}

/// Runs the analysis and returns the completed result as the API renders it.
///
/// # Errors
/// Unreadable media, missing models, a plugin that fails its checks, or the analysis's own
/// errors (`CODE: message`, with the service's error codes).
pub async fn completed_json(args: &AnalyzeArgs) -> anyhow::Result<serde_json::Value> {
    let input = resolve(&args.input, &args.fetch).await?;
    let probe = probe_file(&input.path).await?;
    // The service's limit, checked as the service checks it (over 180.0 s, not 180.5): a
    // 180.3 s clip is `video_too_long` here too, before any model is loaded.
    if let Some(d) = probe.duration_sec
        && d > crate::scan::MAX_DURATION_SECS
    {
        return Err(crate::inference::QualiaError::TooLong(
            d,
            crate::scan::MAX_DURATION_SECS as u32,
        )
        .into());
    }
    let q = qualia(&args.model)?;
    let benchmarks = benchmarks(&args.model, &q.model.id())?;
    let state = tempfile::tempdir().context("creating a temporary folder")?;
    let db = crate::store::Db::connect(&format!(
        "sqlite://{}?mode=rwc",
        state.path().join("plugins.db").display()
    ))
    .await?;
    let runtime = crate::plugins::PluginRuntime::new(
        args.plugin_limits.clone(),
        Some(args.plugin_limits.cache_dir(state.path())),
    )?;
    let clock: Arc<dyn crate::clock::Clock> = Arc::new(crate::clock::SystemClock);
    let registry = crate::plugins::Registry::open(runtime, db, clock)
        .await
        .map_err(|e| anyhow::anyhow!("plugin registry: {e}"))?;
    for path in &args.plugins {
        let bytes = read_plugin(path, args.plugin_limits.plugin_max_bytes)?;
        let installed = registry
            .install(&bytes, "local", true)
            .await
            .map_err(|e| anyhow::anyhow!("{}: {} ({e})", path.display(), e.code()))?;
        let m = &installed.manifest;
        registry
            .activate(&m.name, &m.version)
            .await
            .map_err(|e| anyhow::anyhow!("{}: {} ({e})", path.display(), e.code()))?;
    }
    let speech = q.listener.as_ref().map(|l| l.speech.clone());
    let analysis = crate::analysis::Analysis {
        qualia: Arc::new(q),
        plugins: registry,
        benchmarks,
        speech,
        // `analyze` prints the result; it renders no artifact.
        cortex: None,
    };
    let (model, requested_model) = crate::scan::normalise_model(None)?;
    let modality = if probe.has_video { "video" } else { "audio" };
    let request = ScanRequest {
        input: InputSpec {
            kind: modality.into(),
            url: args.input.clone(),
            modality: modality.into(),
        },
        model,
        requested_model,
        lenses: crate::scan::normalise_lenses(Some(&args.lenses), &analysis.lenses()),
        options: ScanOptions {
            include_raw: args.raw,
            ..ScanOptions::default()
        },
        webhook_url: None,
    };
    // On a terminal: seconds decoded and inferred, then the lens stage (stderr only).
    let (bar, seconds_done) = super::progress_bar(probe.duration_sec, false);
    let lens_stage = bar.clone();
    let total = probe.duration_sec.unwrap_or(f64::INFINITY);
    let progress: crate::inference::run::Progress = std::sync::Arc::new(move |secs: f64| {
        seconds_done(secs);
        if secs + 0.5 >= total {
            lens_stage.set_message("transcript, lenses, moments and benchmarks");
        }
    });
    let result = analysis
        .analyze(AnalysisInput {
            scan_id: LOCAL_SCAN_ID,
            org_id: LOCAL_SCAN_ID,
            request: &request,
            media: &input.path,
            probe: &probe,
            progress: Some(progress),
        })
        .await;
    bar.finish_and_clear();
    let result = result.map_err(|e| anyhow::anyhow!("{}: {}", e.code, e.message))?;
    let view = crate::api::views::completed(LOCAL_SCAN_ID, &request, result);
    Ok(serde_json::to_value(&view)?)
}

/// A plugin file, refused before it is read when it is larger than the service accepts.
fn read_plugin(path: &std::path::Path, max: u64) -> anyhow::Result<Vec<u8>> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("{}: cannot read the plugin", path.display()))?
        .len();
    anyhow::ensure!(
        len <= max,
        "{}: the plugin is {len} bytes, over the {max}-byte limit (BRAINSCAN_PLUGIN_MAX_BYTES)",
        path.display()
    );
    Ok(std::fs::read(path)?)
}

/// `brainscan analyze`.
///
/// # Errors
/// As [`completed_json`].
pub async fn analyze(args: AnalyzeArgs) -> anyhow::Result<()> {
    let doc = completed_json(&args).await?;
    let text = if args.json {
        serde_json::to_string_pretty(&doc)?
    } else {
        table(&doc)
    };
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, text.as_bytes())?;
    std::io::Write::write_all(&mut out, b"\n")?;
    Ok(())
}

/// The readable summary of a completed result.
#[must_use]
pub fn table(doc: &serde_json::Value) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let lenses: Vec<&str> = doc["lenses"]
        .as_array()
        .map(|a| a.iter().filter_map(|l| l.as_str()).collect())
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "overall {} (grade {}), {} s, lenses: {}",
        doc["overall_score"]
            .as_f64()
            .map_or("-".into(), |v| format!("{v:.0}")),
        doc["grade"].as_str().unwrap_or("-"),
        doc["duration_sec"],
        lenses.join(", ")
    );
    let _ = write!(s, "\nsecond");
    for l in &lenses {
        let _ = write!(s, " {l:>15}");
    }
    s.push('\n');
    for entry in doc["timeline"].as_array().into_iter().flatten() {
        let _ = write!(s, "{:>6}", entry["second"]);
        for l in &lenses {
            let v = entry["scores"][*l].as_f64();
            let _ = write!(s, " {:>15}", v.map_or("-".into(), |v| format!("{v:.0}")));
        }
        s.push('\n');
    }
    let moments = doc["moments"].as_array().cloned().unwrap_or_default();
    let _ = writeln!(s, "\nmoments ({}):", moments.len());
    for m in &moments {
        let _ = writeln!(s, "  {}", moment_line(m));
    }
    if let Some(buy) = doc["buy_moments"].as_array() {
        let _ = writeln!(s, "\nbuy moments ({}):", buy.len());
        for m in buy {
            let _ = writeln!(s, "  {}", buy_moment_line(m));
        }
    }
    if let Some(summary) = doc["summary"].as_str() {
        let _ = writeln!(s, "\nsummary: {summary}");
    }
    if doc["manipulation"].is_object() {
        let _ = writeln!(s, "\n{}", manipulation_lines(&doc["manipulation"]));
    }
    s.trim_end().to_owned()
}

/// Seconds as `m:ss`, as the moments' own sentences write them.
fn clock(seconds: &serde_json::Value) -> String {
    seconds.as_f64().map_or_else(
        || "-".to_owned(),
        |t| {
            let t = t.max(0.0) as u64;
            format!("{}:{:02}", t / 60, t % 60)
        },
    )
}

/// A text field, or `-` when the result lacks it.
fn text(v: &serde_json::Value) -> &str {
    v.as_str().unwrap_or("-")
}

/// A number with `places` decimals, or `-`.
fn number(v: &serde_json::Value, places: usize) -> String {
    v.as_f64()
        .map_or_else(|| "-".to_owned(), |x| format!("{x:.places$}"))
}

/// A moment as one line: when, which lens and how far, then its sentence (which already names
/// the networks and the transcript line; `brainReason` and `contentLine` are parts of it).
fn moment_line(m: &serde_json::Value) -> String {
    format!(
        "{:>5}  {} {} → {}  {}",
        clock(&m["second"]),
        text(&m["lens"]),
        number(&m["from"], 1),
        number(&m["to"], 1),
        text(&m["reason"])
    )
}

/// A buy moment: its window, rank and drivers on one line, and its insight (and quote) below.
fn buy_moment_line(m: &serde_json::Value) -> String {
    let mut line = format!(
        "{}–{} (peak {})  {}  drivers: {}\n    {}",
        clock(&m["start_sec"]),
        clock(&m["end_sec"]),
        clock(&m["peak_sec"]),
        text(&m["strength"]),
        text(&m["trigger"]),
        text(&m["insight"])
    );
    if let Some(quote) = m["quote"].as_str().filter(|q| !q.is_empty()) {
        line.push_str(&format!("\n    \"{quote}\""));
    }
    line
}

/// The manipulation block in sentences and short lists. The per-second `timeline` is left to
/// `--json`: a row of four numbers per second is not something to read in a terminal.
fn manipulation_lines(m: &serde_json::Value) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "manipulation: conversion risk {} ({}): {}. {}",
        number(&m["conversion_risk"], 1),
        text(&m["risk_band"]),
        text(&m["threat"]["label"]),
        text(&m["threat"]["note"])
    );
    let q = &m["quadrant"];
    let _ = writeln!(
        s,
        "  quadrant: {} (wins over {}, lowers guard {}): {}",
        text(&q["label"]),
        number(&q["wins_over"], 0),
        number(&q["lowers_guard"], 0),
        text(&q["how"])
    );
    let list = |key: &str, item: &dyn Fn(&serde_json::Value) -> String| {
        m[key]
            .as_array()
            .map(|a| a.iter().map(item).collect::<Vec<_>>().join(", "))
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| "none".to_owned())
    };
    let circuits = list("circuits", &|c| {
        format!(
            "{} {} ({})",
            text(&c["label"]),
            number(&c["value"], 0),
            text(&c["reading"])
        )
    });
    let _ = writeln!(s, "  circuits: {circuits}");
    let mechanisms = list("mechanisms", &|x| {
        format!(
            "{} {}",
            text(&x["label"]),
            x["share"]
                .as_f64()
                .map_or_else(|| "-".to_owned(), |v| format!("{:.0} %", 100.0 * v))
        )
    });
    // A third each is the contract's value when nothing a mechanism reads responded
    // (manipulation-standard's README): no split, so it is not printed as one.
    let shares: Vec<f64> = m["mechanisms"]
        .as_array()
        .map(|v| v.iter().filter_map(|x| x["share"].as_f64()).collect())
        .unwrap_or_default();
    let mechanisms = if shares == [0.333, 0.333, 0.334] {
        "no split (nothing that reads a mechanism responded)".to_owned()
    } else {
        mechanisms
    };
    let _ = writeln!(s, "  mechanisms: {mechanisms}");
    let _ = writeln!(
        s,
        "  sovereignty {}, cognitive sovereignty index {}, prefrontal balance {}",
        number(&m["sovereignty"], 1),
        number(&m["cognitive_sovereignty_index"], 2),
        number(&m["pbi"], 2)
    );
    if m["peak_moment"].is_object() {
        let _ = writeln!(s, "  peak: {}", text(&m["peak_moment"]["why"]));
    }
    let tactics = list("tactics", &|t| {
        format!(
            "{} at {} (\"{}\")",
            text(&t["tactic"]),
            clock(&t["at_sec"]),
            text(&t["quote"])
        )
    });
    let _ = writeln!(s, "  tactics: {tactics}");
    let _ = write!(s, "  population: {}", text(&m["population"]["note"]));
    s
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::table;

    /// A result as the service returns it, cut to what the table reads.
    fn result() -> serde_json::Value {
        json!({
            "overall_score": 58.2, "grade": "D", "duration_sec": 11.0,
            "lenses": ["attention", "manipulation"],
            "timeline": [{"second": 0, "scores": {"attention": 63.0, "manipulation": 41.2}}],
            "moments": [{
                "type": "lens_drop", "lens": "manipulation", "second": 68, "from": 74.1,
                "to": 44.3, "delta": -29.8, "z": -2.21,
                "brainReason": "At 1:08 persuasive pressure lost 29.8 points.",
                "contentLine": "ask what you can do",
                "reason": "At 1:08 persuasive pressure lost 29.8 points. On screen/audio: \"ask what you can do\""
            }],
            "buy_moments": [{
                "start_sec": 0, "end_sec": 3, "peak_sec": 1, "strength": "strongest buy moment",
                "strength_pct": 100.0, "trigger": "reward, personal relevance",
                "insight": "Everything lines up here.", "quote": "And so my fellow Americans"
            }],
            "summary": "An 11-second clip.",
            "manipulation": {
                "conversion_risk": 47.7, "risk_band": "moderate", "sovereignty": 52.3,
                "cognitive_sovereignty_index": 0.97, "pbi": 0.29,
                "threat": {"label": "Ordinary persuasion", "severity": "moderate",
                           "color": "#F9A825", "note": "About as persuasive as typical content."},
                "quadrant": {"key": "seductive", "label": "Seductive", "lowers_guard": 8.6,
                             "wins_over": 89.7, "how": "Wins viewers over."},
                "circuits": [{"key": "reward", "label": "Reward & approval", "value": 89.7,
                              "reading": "high"}],
                "mechanisms": [{"key": "SR", "label": "Social Reward", "share": 0.177},
                               {"key": "MR", "label": "Motivational Rapport", "share": 0.823}],
                "timeline": [{"sec": 0, "exposure": -0.24, "reward": 0.456, "effort": 0.696, "alarm": 0.0}],
                "peak_moment": null, "tactics": [],
                "population": {"per_ten": 4.5, "per_ten_thousand": 4545.0,
                               "note": "Directional model estimate, not a share of people."}
            }
        })
    }

    #[test]
    fn the_table_reads_as_sentences_and_short_lists() {
        let text = table(&result());
        let expected = "\
moments (1):
   1:08  manipulation 74.1 → 44.3  At 1:08 persuasive pressure lost 29.8 points. On screen/audio: \"ask what you can do\"

buy moments (1):
  0:00–0:03 (peak 0:01)  strongest buy moment  drivers: reward, personal relevance
    Everything lines up here.
    \"And so my fellow Americans\"

summary: An 11-second clip.

manipulation: conversion risk 47.7 (moderate): Ordinary persuasion. About as persuasive as typical content.
  quadrant: Seductive (wins over 90, lowers guard 9): Wins viewers over.
  circuits: Reward & approval 90 (high)
  mechanisms: Social Reward 18 %, Motivational Rapport 82 %
  sovereignty 52.3, cognitive sovereignty index 0.97, prefrontal balance 0.29
  tactics: none
  population: Directional model estimate, not a share of people.";
        assert!(text.ends_with(expected), "{text}");
        assert!(
            text.starts_with("overall 58 (grade D), 11.0 s, lenses: attention, manipulation"),
            "{text}"
        );
        // The per-second guard-down series is left to --json, and no field is printed twice.
        assert!(!text.contains("exposure"), "{text}");
        assert_eq!(text.matches("lost 29.8 points").count(), 1, "{text}");
    }

    #[test]
    fn a_result_missing_fields_prints_dashes_not_a_panic() {
        let text = table(&json!({"moments": [{}], "manipulation": {}}));
        assert!(text.contains("\n      -  - - → -  -"), "{text}");
        assert!(
            text.contains("manipulation: conversion risk - (-): -. -"),
            "{text}"
        );
        assert!(text.contains("  circuits: none"), "{text}");
    }
}
