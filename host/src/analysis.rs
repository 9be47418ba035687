//! The production analysis stage: the `qualia` inference core turns media into the seven
//! network series, then the active plugins turn those into lens scores, moments and the
//! manipulation block, and this module assembles the stored [`ScanResult`].
//!
//! A scan takes one snapshot of the active plugin set before its first plugin call and runs
//! every call on it, so an activation or rollback during the scan never mixes versions; the
//! result's `provenance` names the model and each plugin (name, version, digest) that ran.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::analyzer::{AnalysisInput, Analyzer, StageError};
use crate::benchmark::BenchmarkTable;
use crate::inference::run::{Qualia, QualiaOutput};
use crate::plugins::Registry;
use crate::plugins::bindings::{ClipData, wit};
use crate::plugins::registry::ActiveSet;
use crate::plugins::runtime::{LoadedPlugin, PluginError};
use crate::result::{self, ScanResult, StoredSecond};
use crate::scan::MAX_DURATION_SECS;

/// Networks whose every value stays within this many z of 0 read as "no signal".
const LOW_SIGNAL_Z: f32 = 0.25;

pub struct Analysis {
    pub qualia: Arc<Qualia>,
    pub plugins: Arc<Registry>,
    /// Corpus quantiles for the model in use; `None` when its folder has no table.
    pub benchmarks: Option<Arc<BenchmarkTable>>,
    /// Whisper and the voice-activity gate; `None` only in processes that never analyse.
    pub speech: Option<Arc<crate::speech::Speech>>,
    /// The cortex video maker (`include_fmri`), drawn on qualia's adapter; `None` where no
    /// scan asks for one (the local `analyze` command).
    pub cortex: Option<Arc<crate::render::video::CortexVideo>>,
}

/// The longest a cortex video may take to encode before the scan fails (a 3-minute clip
/// takes a few seconds on a 2-core machine; see `cargo bench --bench render`).
const RENDER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

fn plugin_stage_error(e: &PluginError) -> StageError {
    StageError::permanent("plugin_failed", e.to_string())
}

/// Records a failed call (on `org`'s input) for the crash-loop breaker and turns it into the
/// scan's error.
async fn failed(plugins: &Registry, e: PluginError, org: &str) -> StageError {
    if let Some(change) = plugins.record_failure(&e, org).await {
        tracing::warn!(slot = %change.slot, to = change.to.as_deref().unwrap_or("-"), "crash-loop breaker rolled the slot back");
    }
    plugin_stage_error(&e)
}

fn provenance_entry(p: &LoadedPlugin) -> serde_json::Value {
    serde_json::json!({
        "name": p.manifest.name,
        "version": p.manifest.version,
        "digest": p.manifest.digest,
        "kind": p.manifest.kind.as_str(),
        "wit": p.manifest.wit_version,
    })
}

/// What the plugins produced for one scan.
#[derive(Debug, Default)]
pub struct PluginOutputs {
    pub series: Vec<wit::LensSeries>,
    pub detection: Option<wit::Detection>,
    pub manipulation: Option<wit::Manipulation>,
    /// The plugins that ran, for provenance.
    pub ran: Vec<serde_json::Value>,
    /// Lens name → `name@version` of the plugin that scored it.
    pub scored_by: BTreeMap<String, String>,
}

/// The lens buy moments are read from.
const BUY_BASIS: &str = "purchase_intent";

/// Runs the plugin stage on one snapshot: one call per lens plugin for the lenses it
/// provides, then moments, then manipulation when that lens was requested.
///
/// # Errors
/// The first plugin failure, as `plugin_failed: plugin NAME@VERSION (kind) …`.
pub async fn run_plugins(
    plugins: &Registry,
    active: &ActiveSet,
    clip: &ClipData,
    lenses: &[String],
    org: &str,
) -> Result<PluginOutputs, StageError> {
    let runtime = plugins.runtime();
    let mut out = PluginOutputs::default();
    // Buy moments are read from the purchase-intent series, and the spec gives them whenever
    // reasons are on, not only when that lens was asked for: it is scored for the moments
    // plugin either way, and kept out of the result's lenses and moments when not requested.
    let mut scoring = lenses.to_vec();
    if !lenses.iter().any(|l| l == BUY_BASIS) {
        scoring.push(BUY_BASIS.to_owned());
    }
    // A plugin that ran only for that basis is listed after those that scored the request.
    let mut basis_only = Vec::new();
    for plugin in &active.lens {
        let wanted: Vec<String> = scoring
            .iter()
            .filter(|l| plugin.manifest.provides.contains(l))
            .cloned()
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let (series, _) = match runtime.score(plugin, clip, &wanted).await {
            Ok(v) => v,
            Err(e) => return Err(failed(plugins, e, org).await),
        };
        if wanted.iter().any(|l| lenses.contains(l)) {
            out.ran.push(provenance_entry(plugin));
        } else {
            let mut entry = provenance_entry(plugin);
            entry["for"] = serde_json::json!("buy_moments");
            basis_only.push(entry);
        }
        for s in &series {
            out.scored_by.insert(s.lens.clone(), plugin.manifest.id());
        }
        out.series.extend(series);
    }
    out.ran.extend(basis_only);
    // Keep the request's lens order.
    out.series.sort_by_key(|s| {
        lenses
            .iter()
            .position(|l| *l == s.lens)
            .unwrap_or(usize::MAX)
    });
    if let Some(plugin) = &active.moments {
        // Moments and the summary speak of the requested lenses only. A basis series scored
        // just for buy moments goes to a second call whose buy moments alone are kept, so it
        // never reaches the summary ("buying intent averages …") or its moment count.
        let (requested, basis): (Vec<_>, Vec<_>) = out
            .series
            .iter()
            .cloned()
            .partition(|s| lenses.contains(&s.lens));
        let mut detection = match runtime.detect(plugin, clip, &requested).await {
            Ok((d, _)) => d,
            Err(e) => return Err(failed(plugins, e, org).await),
        };
        if !basis.is_empty() {
            match runtime.detect(plugin, clip, &basis).await {
                Ok((b, _)) => detection.buy_moments = b.buy_moments,
                Err(e) => return Err(failed(plugins, e, org).await),
            }
        }
        out.ran.push(provenance_entry(plugin));
        detection.moments.retain(|m| lenses.contains(&m.lens));
        out.detection = Some(detection);
    }
    out.series.retain(|s| lenses.contains(&s.lens));
    out.scored_by.retain(|lens, _| lenses.contains(lens));
    if lenses.iter().any(|l| l == "manipulation")
        && let Some(plugin) = &active.manipulation
    {
        match runtime.analyze(plugin, clip).await {
            Ok((m, _)) => {
                out.ran.push(provenance_entry(plugin));
                out.manipulation = Some(m);
            }
            Err(e) => return Err(failed(plugins, e, org).await),
        }
    }
    Ok(out)
}

/// What a low-signal result says instead of scores (documented in the README).
pub const NOTHING_TO_READ: &str = "Nothing to read: the clip is black, silent or does not change, so the model has no signal to respond to. The per-second scores, and the manipulation block when it was asked for, sit at the model's baseline and carry no information; there is no overall score (grade E: nothing engages) and no moment.";

/// Makes a low-signal result say "nothing to read": no overall score (grade `E`), no moments or
/// buy moments, the summary says why. The per-second lens values stay (the timeline keeps its
/// shape) but are described as baseline.
pub fn nothing_to_read(result: &mut ScanResult) {
    result.overall_score = None;
    result.grade = Some(crate::result::UNSCORED_GRADE.to_owned());
    result.moments.clear();
    result.buy_moments = None;
    result.summary = NOTHING_TO_READ.to_owned();
}

/// The model's provenance as clients read it: id, version, time base, where its weights come
/// from (`source`), the summary caveat, and which streams the clip had.
pub fn model_provenance(model: &crate::inference::Model, q: &QualiaOutput) -> serde_json::Value {
    let p = &model.manifest.provenance;
    serde_json::json!({
        "id": q.model,
        "name": model.manifest.name,
        "version": model.manifest.version,
        "format": model.format(),
        "source": p.get("source").cloned().unwrap_or(serde_json::Value::Null),
        "summary": p.get("summary").cloned().unwrap_or(serde_json::Value::Null),
        "evaluation": p.get("evaluation").cloned().unwrap_or(serde_json::Value::Null),
        "time_base": q.time_base,
        "modalities": q.modalities,
        "model_card": format!("models/qualia/v{}/README.md", model.format()),
    })
}

/// Flat networks: no second moves any network more than [`LOW_SIGNAL_Z`] from the mean.
pub fn low_signal(networks: &[[f32; 7]]) -> bool {
    networks
        .iter()
        .all(|row| row.iter().all(|v| v.abs() < LOW_SIGNAL_Z))
}

/// The mean of the attention series when attention was scored, otherwise the mean of every
/// scored lens; `None` when nothing was scored.
pub fn overall_score(series: &[wit::LensSeries]) -> Option<f64> {
    let mean = |s: &wit::LensSeries| {
        (!s.seconds.is_empty()).then(|| {
            s.seconds.iter().map(|x| f64::from(x.score)).sum::<f64>() / s.seconds.len() as f64
        })
    };
    if let Some(a) = series.iter().find(|s| s.lens == "attention") {
        return mean(a).map(round1);
    }
    let means: Vec<f64> = series.iter().filter_map(mean).collect();
    (!means.is_empty()).then(|| round1(means.iter().sum::<f64>() / means.len() as f64))
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Builds the stored result from the clip, the plugin outputs and provenance. Benchmarks come
/// from `benchmarks` for the lenses scored by the plugin the table was built with.
pub fn assemble(
    clip: &ClipData,
    outputs: PluginOutputs,
    mut provenance: serde_json::Value,
    benchmarks: Option<&BenchmarkTable>,
) -> ScanResult {
    let lenses: Vec<String> = outputs.series.iter().map(|s| s.lens.clone()).collect();
    let table_for = |lens: &str| {
        benchmarks.filter(|t| {
            outputs
                .scored_by
                .get(lens)
                .is_some_and(|id| t.applies_to(id))
        })
    };
    let benchmarked: Vec<&str> = lenses
        .iter()
        .map(String::as_str)
        .filter(|l| table_for(l).is_some())
        .collect();
    if let (Some(t), false) = (benchmarks, benchmarked.is_empty()) {
        provenance["benchmark"] = serde_json::json!({
            "model": t.model,
            "lens_plugin": t.lens_plugin,
            "corpus_clips": t.clips.len(),
            "corpus_seconds": t.seconds,
            "lenses": benchmarked,
        });
    }
    let timeline = clip
        .networks
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut scores = BTreeMap::new();
            let mut reasons = BTreeMap::new();
            let mut benchmark = BTreeMap::new();
            for s in &outputs.series {
                // One decimal, as the plugin rounded it: f32 → f64 would otherwise print
                // 71.80000305175781.
                let score = round1(f64::from(s.seconds[i].score));
                scores.insert(s.lens.clone(), score);
                reasons.insert(s.lens.clone(), s.seconds[i].reason.clone());
                if let Some(entry) = table_for(&s.lens).and_then(|t| t.entry(&s.lens, score)) {
                    benchmark.insert(s.lens.clone(), entry);
                }
            }
            StoredSecond {
                second: i as u32,
                scores,
                benchmark,
                reasons,
                raw: row.map(f64::from),
            }
        })
        .collect::<Vec<_>>();
    // The spec: duration_sec equals the number of timeline entries. Every second that holds
    // media gets an entry, so the length is rounded up: a 30.03 s clip has 31 entries, the
    // last covering 0.03 s, and reports 31.
    let duration_sec = timeline.len() as f64;
    let overall = overall_score(&outputs.series);
    let (moments, summary, buy_moments) = match outputs.detection {
        Some(d) => (
            d.moments.into_iter().map(result::Moment::from).collect(),
            d.summary,
            d.buy_moments
                .map(|b| b.into_iter().map(result::BuyMoment::from).collect()),
        ),
        None => (Vec::new(), String::new(), None),
    };
    ScanResult {
        overall_score: overall,
        grade: Some(
            overall
                .map_or(result::UNSCORED_GRADE, result::grade_for)
                .to_owned(),
        ),
        duration_sec,
        lenses,
        timeline,
        moments,
        summary,
        buy_moments,
        manipulation: outputs.manipulation.map(result::Manipulation::from),
        fmri_key: None,
        fmri_poster_key: None,
        low_signal: low_signal(&clip.networks),
        provenance,
        modalities: result::StoredModalities {
            video: clip.video,
            audio: clip.audio,
            speech: false,
        },
        transcript: clip.transcript.clone(),
    }
}

pub fn clip_of(q: &QualiaOutput) -> ClipData {
    ClipData {
        duration_sec: q.duration_sec,
        networks: q.networks.clone(),
        video: q.modalities.video,
        audio: q.modalities.audio,
        // What the model heard, so every caller (the scan, `model corpus`, the tests) gives the
        // plugins the words the networks were computed from. Up to qualia 2.8.0 this was empty
        // here, and only the scan path added the transcript: the benchmark table and the test
        // harness scored every speech clip's manipulation as "not assessable".
        transcript: q
            .heard
            .as_ref()
            .map(|h| h.lines.clone())
            .unwrap_or_default(),
    }
}

/// The active set after picking up swaps made by other processes; on a database hiccup, the
/// versions already loaded (a scan should not fail because a refresh did).
async fn fresh_snapshot(plugins: &Registry) -> Arc<ActiveSet> {
    if let Err(e) = plugins.refresh().await {
        tracing::warn!("plugin registry refresh failed; using the loaded versions: {e}");
    }
    plugins.snapshot()
}

/// The plugin half of a scan: refreshes the registry, takes one snapshot, runs the plugins
/// that provide `requested` and assembles the result. `provenance` holds what produced the
/// networks (model, adapter); the plugins that ran are added to it.
///
/// # Errors
/// `plugin_failed` when no active plugin provides a requested lens or a plugin call fails.
pub async fn score_clip(
    plugins: &Registry,
    clip: &ClipData,
    requested: &[String],
    mut provenance: serde_json::Value,
    benchmarks: Option<&BenchmarkTable>,
    org: &str,
) -> Result<ScanResult, StageError> {
    let active = fresh_snapshot(plugins).await;
    let lenses: Vec<String> = requested
        .iter()
        .filter(|l| active.lens_plugin(l).is_some())
        .cloned()
        .collect();
    if lenses.is_empty() {
        return Err(StageError::permanent(
            "plugin_failed",
            "no active lens plugin provides the requested lenses",
        ));
    }
    let mut outputs = run_plugins(plugins, &active, clip, &lenses, org).await?;
    provenance["plugins"] = serde_json::Value::Array(std::mem::take(&mut outputs.ran));
    Ok(assemble(clip, outputs, provenance, benchmarks))
}

/// Re-runs the active manipulation plugin on a stored result's networks (for `POST
/// /analyze`). Returns the block and the provenance entry of the plugin that produced it.
///
/// # Errors
/// `plugin_failed` when no manipulation plugin is active or the call fails.
pub async fn rerun_manipulation(
    plugins: &Registry,
    stored: &ScanResult,
    org: &str,
) -> Result<(result::Manipulation, serde_json::Value), StageError> {
    let active = fresh_snapshot(plugins).await;
    let Some(plugin) = &active.manipulation else {
        return Err(StageError::permanent(
            "plugin_failed",
            "no manipulation plugin is active",
        ));
    };
    match plugins
        .runtime()
        .analyze(plugin, &ClipData::of_result(stored))
        .await
    {
        Ok((m, _)) => Ok((result::Manipulation::from(m), provenance_entry(plugin))),
        Err(e) => Err(failed(plugins, e, org).await),
    }
}

impl Analyzer for Analysis {
    fn lenses(&self) -> Vec<String> {
        self.plugins.snapshot().lenses()
    }

    fn benchmark_bands(
        &self,
    ) -> std::collections::BTreeMap<String, crate::benchmark::BenchmarkBands> {
        let Some(table) = self.benchmarks.as_deref() else {
            return std::collections::BTreeMap::new();
        };
        let active = self.plugins.snapshot();
        active
            .lenses()
            .into_iter()
            .filter(|l| {
                active
                    .lens_plugin(l)
                    .is_some_and(|p| table.applies_to(&p.manifest.id()))
            })
            .filter_map(|l| table.bands(&l).map(|b| (l, b)))
            .collect()
    }

    fn render_fmri<'a>(
        &'a self,
        _scan_id: &'a str,
        result: &'a ScanResult,
        work_dir: &'a std::path::Path,
    ) -> BoxFuture<'a, Result<crate::analyzer::FmriRender, StageError>> {
        Box::pin(async move {
            let cortex = self.cortex.as_ref().ok_or_else(|| {
                StageError::permanent(
                    "internal_error",
                    "this process has no cortex renderer (it does not run scans)",
                )
            })?;
            let video = cortex
                .render(&result.timeline, &result.lenses, work_dir, RENDER_DEADLINE)
                .await
                .map_err(|e| StageError {
                    code: "internal_error",
                    message: format!("rendering the cortex video: {e:#}"),
                    transient: true,
                })?;
            Ok(crate::analyzer::FmriRender {
                main: crate::analyzer::RenderedFile {
                    name: "fmri.mp4",
                    bytes: video.mp4,
                },
                poster: Some(crate::analyzer::RenderedFile {
                    name: "fmri-poster.png",
                    bytes: video.poster_png,
                }),
            })
        })
    }

    fn analyze<'a>(
        &'a self,
        input: AnalysisInput<'a>,
    ) -> BoxFuture<'a, Result<ScanResult, StageError>> {
        Box::pin(async move {
            let stage = std::time::Instant::now();
            let q = self
                .qualia
                .analyse(
                    input.media,
                    input.probe,
                    MAX_DURATION_SECS as u32,
                    input.progress.clone(),
                )
                .await
                .map_err(|e| StageError {
                    code: e.code(),
                    transient: e.code() == "internal_error",
                    message: e.to_string(),
                })?;
            crate::metrics::record_stage("qualia", stage.elapsed());
            let stage = std::time::Instant::now();
            // v2 heard the clip already (its language features need the transcript).
            let (transcript, transcript_source) = match &q.heard {
                Some(h) => (h.lines.clone(), h.source.clone()),
                None => crate::speech::transcript_of(
                    input.media,
                    input.probe,
                    q.duration_sec,
                    self.speech.clone(),
                )
                .await
                .map_err(|e| StageError {
                    code: "internal_error",
                    message: e,
                    transient: true,
                })?,
            };
            if q.heard.is_none() {
                crate::metrics::record_stage("transcript", stage.elapsed());
            }
            let provenance = serde_json::json!({
                "model": model_provenance(&self.qualia.model, &q),
                "adapter": q.adapter,
                "transcript": transcript_source,
            });
            let mut clip = clip_of(&q);
            clip.transcript = transcript;
            let dropped = clip.fit_transcript();
            if dropped > 0 {
                tracing::info!(
                    scan.id = input.scan_id,
                    dropped,
                    "transcript cut to the plugins' budget"
                );
            }
            let stage = std::time::Instant::now();
            let mut result = score_clip(
                &self.plugins,
                &clip,
                &input.request.lenses,
                provenance,
                self.benchmarks.as_deref(),
                input.org_id,
            )
            .await?;
            crate::metrics::record_stage("plugins", stage.elapsed());
            result.low_signal = q.low_signal;
            result.modalities.speech = q.modalities.speech;
            if q.low_signal {
                nothing_to_read(&mut result);
            }
            Ok(result)
        })
    }
}
