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
        let _ = writeln!(s, "  {}", one_line(m));
    }
    if let Some(buy) = doc["buy_moments"].as_array() {
        let _ = writeln!(s, "\nbuy moments ({}):", buy.len());
        for m in buy {
            let _ = writeln!(s, "  {}", one_line(m));
        }
    }
    if let Some(summary) = doc["summary"].as_str() {
        let _ = writeln!(s, "\nsummary: {summary}");
    }
    if let Some(m) = doc["manipulation"].as_object() {
        let _ = writeln!(s, "\nmanipulation:");
        for (k, v) in m {
            let shown = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            let _ = writeln!(s, "  {k}: {shown}");
        }
    }
    s.trim_end().to_owned()
}

/// A moment object on one line: its fields as `key=value`, text fields unquoted.
fn one_line(m: &serde_json::Value) -> String {
    m.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| {
                    let shown = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    format!("{k}={shown}")
                })
                .collect::<Vec<_>>()
                .join("  ")
        })
        .unwrap_or_default()
}
