//! Commands that run qualia on this machine without a server or database:
//! `brainscan analyze` ([`analyze`]), `brainscan scan`, `brainscan features`,
//! `brainscan model prior|fit|show` and `brainscan bench`.

pub mod analyze;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use crate::config::FetchConfig;
use crate::inference::run::{Listener, Modalities, Progress, decode_only};
use crate::inference::{
    GpuContext, Model, Presence, Qualia, QualiaOutput, TimeBase, fit, prior, v2,
};
use crate::media::fetch::Fetcher;
use crate::media::probe::{self, ProbeInfo};
use crate::result::NETWORKS;
use crate::scan::MAX_DURATION_SECS;

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
const MAX_SECONDS: u32 = MAX_DURATION_SECS as u32;
/// Longest clip the local commands take with `--max-duration` (the service keeps 3 minutes).
pub const MAX_LOCAL_SECONDS: u32 = 1800;

/// Where the model comes from.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// A model folder (`model.json` + `model.safetensors`); defaults to the built-in qualia v2.
    /// `models/qualia/v1` loads v1 for comparison.
    #[arg(long, env = "BRAINSCAN_MODEL_DIR")]
    pub model: Option<PathBuf>,
    /// Folder of the speech and text models (Whisper, Silero VAD, all-MiniLM-L6-v2) that v2's
    /// speech and language features need; `scripts/fetch-models` fills it.
    #[arg(long, env = "BRAINSCAN_MODELS_DIR", default_value_os_t = crate::config::default_models_dir())]
    pub models_dir: PathBuf,
}

impl ModelArgs {
    /// # Errors
    /// An unreadable or unverifiable model.
    pub fn load(&self) -> anyhow::Result<Model> {
        match &self.model {
            Some(dir) => {
                Model::load(dir).with_context(|| format!("loading the model in {}", dir.display()))
            }
            None => Ok(Model::embedded()?),
        }
    }
}

/// The clip a local command reads, and how.
#[derive(Debug, Args)]
pub struct ClipArgs {
    /// A media file, or an http(s) URL to download (with the service's fetch guards).
    pub input: String,
    /// Print JSON instead of a table (scan) or CSV (features).
    #[arg(long)]
    pub json: bool,
    /// Longest clip to analyse, in seconds: up to 1800 (30 minutes) locally; the service keeps
    /// its 3-minute limit. Media is streamed, so memory grows only with the per-second tables
    /// (and, for speech, the 16 kHz audio the transcriber reads: 115 MB at 30 minutes).
    #[arg(long, default_value_t = MAX_SECONDS, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LOCAL_SECONDS)))]
    pub max_duration: u32,
    /// Report the networks in BOLD time (the haemodynamic response applied forward, peaking
    /// about 5 s after its cause, for comparison with fMRI) instead of stimulus time.
    #[arg(long)]
    pub bold: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub fetch: FetchConfig,
}

/// How `model profiles` gives a Neurosynth focus a network
/// ([`crate::grounding::neurosynth::Assignment`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AssignRule {
    Centroids,
    Surface,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Fit a model by cross-validated ridge regression: per-second features (CSV from
    /// `brainscan features`) to measured network series (CSV with one column per network).
    Fit {
        /// Features CSV of one run; repeat with `--targets` in the same order.
        #[arg(long = "features", required = true)]
        features: Vec<PathBuf>,
        /// Targets CSV of one run (columns named as the spec's networks).
        #[arg(long = "targets", required = true)]
        targets: Vec<PathBuf>,
        /// Output model folder.
        #[arg(long)]
        out: PathBuf,
        /// Version written into the new model.
        #[arg(long, default_value = "fit-1")]
        version: String,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Build the prior model (literature weights) with feature statistics from a corpus of
    /// feature CSVs (as `brainscan features` writes them for a model of the same format).
    /// Without `--corpus` the statistics are the neutral mean 0 and the floored std: such a
    /// model computes features exactly like the real one (features never use statistics), which
    /// `scripts/build-qualia-prior` uses to extract the corpus features for a new feature set.
    Prior {
        #[arg(long = "corpus")]
        corpus: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// The version the model folder is labelled with. Required: a default went stale (it
        /// said 2.8.0 while the shipped model was 2.11.0), and a mislabelled model is worse
        /// than an error.
        #[arg(long)]
        version: String,
        /// Model format: 2 (v2 features, the default) or 1 (v1 features).
        #[arg(long, default_value_t = 2)]
        format: u32,
        /// Where the sentence embedder is (v2 builds its semantic axes with it).
        #[arg(long, env = "BRAINSCAN_MODELS_DIR", default_value_os_t = crate::config::default_models_dir())]
        models_dir: PathBuf,
        /// The Neurosynth network-profile table v2's weights come from (`model profiles`).
        #[arg(long, default_value_os_t = crate::grounding::neurosynth::ProfileTable::committed_path())]
        profiles: PathBuf,
    },
    /// Build the benchmark table (`benchmark.json`): run the model and the built-in lens
    /// plugin on every media file in DIR and store quantiles of each lens's per-second scores.
    /// Files that are not media are skipped and listed.
    Corpus {
        /// Folder of clips (not recursive).
        dir: PathBuf,
        /// Where to write the table, e.g. `models/qualia/v2/benchmark.json`.
        #[arg(long)]
        out: PathBuf,
        /// A sentence about the corpus, stored in the table.
        #[arg(long, default_value = "")]
        note: String,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Build the lens calibration (`plugins/readouts/calibration.tsv`): run the model on every
    /// media file in DIR and store, per standard readout, the corpus distribution of its
    /// per-second raw values. The default lens and manipulation plugins embed it: their 0-100
    /// scores are percentiles of this corpus. Rebuild the plugins, then `model corpus`.
    Calibrate {
        /// Folder of clips (not recursive).
        dir: PathBuf,
        /// Where to write the table, e.g. `plugins/readouts/calibration.tsv`.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Derive each stimulus construct's network profile from the Neurosynth v7 database (log
    /// odds per network with a study-bootstrap interval) and write the table the v2 prior is
    /// built from (`models/qualia/v2/grounding/network-profiles.json`).
    Profiles {
        /// The reference data folder (holds `neurosynth-v7/`).
        #[arg(long, env = "BRAINSCAN_REFERENCE_DATA")]
        data: Option<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// How a focus is given a network: `surface` (the nearest vertex of the HCP
        /// midthickness surface, from the models folder that `scripts/fetch-models` fills; the
        /// shipped table's rule since qualia 2.11.0) or `centroids` (the nearest Schaefer-400
        /// parcel centre, 2.9.0's rule, for comparison).
        #[arg(long, value_enum, default_value = "surface")]
        assign: AssignRule,
    },
    /// Evaluate a model against measured brain series: zero-shot r per target, ridge toward the
    /// prior with nested cross-validation (held-out r), loudness-only and word-rate-only
    /// baselines, and a leave-one-subject-out noise ceiling when subject targets are given.
    Eval {
        /// Raw per-second features of the stimulus (`brainscan features` CSV).
        #[arg(long)]
        features: PathBuf,
        /// Group targets: `second,duration,LABEL@Network,...` (duration may be left out).
        #[arg(long)]
        targets: PathBuf,
        /// Subject-level targets with the same rows and columns (repeat), for the ceiling.
        #[arg(long = "subject")]
        subjects: Vec<PathBuf>,
        /// Also score the rows that start at or after this second, e.g. the first sound plus the
        /// response's peak, to leave out the response to a stimulus that starts after silence.
        #[arg(long)]
        after_second: Option<usize>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// The pre-registered Alice check (models/qualia/v2/EVALUATION-PLAN.md): build the stimulus
    /// proxy from the word alignment, analyse it, and evaluate against the first half of the
    /// group-average ROI series. Writes the proxy, features, targets, `report.json` and the design
    /// matrix the report scored (`design.csv`) to OUT.
    Alice {
        #[arg(long, env = "BRAINSCAN_REFERENCE_DATA")]
        data: Option<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Show a model: id, checksum, provenance, weights.
    Show {
        #[command(flatten)]
        model: ModelArgs,
    },
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Clip to measure.
    pub input: PathBuf,
    /// Repetitions of each measurement (the median is reported).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also time the cortex video of the clip: frames on the CPU and on the device, and each
    /// frame maker and encoder setting against the settings before frames moved to the device.
    #[arg(long)]
    pub render: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// A local file, or a URL downloaded into a temporary file that lives as long as this value.
struct Input {
    path: PathBuf,
    /// The download's job folder, removed when the input is dropped.
    _temp: Option<crate::media::fetch::Downloaded>,
}

async fn resolve(input: &str, fetch: &FetchConfig) -> anyhow::Result<Input> {
    if input.starts_with("http://") || input.starts_with("https://") {
        let url = url::Url::parse(input).context("the URL is not valid")?;
        let fetcher = Fetcher::new(fetch)?;
        let d = fetcher
            .download(
                &url,
                &std::env::temp_dir(),
                fetch.fetch_max_bytes,
                false,
                Duration::from_secs(fetch.fetch_timeout_secs),
            )
            .await
            .with_context(|| format!("downloading {url}"))?;
        return Ok(Input {
            path: d.path().to_path_buf(),
            _temp: Some(d),
        });
    }
    let path = PathBuf::from(input);
    if !path.is_file() {
        // An io::Error, so the one-line report says `not_found` (see `cli_error`).
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{input}: no such file"),
        )
        .into());
    }
    Ok(Input { path, _temp: None })
}

/// The production qualia (the model, its GPU context, and for v2 the listener and face
/// detector), as `serve` builds it.
///
/// # Errors
/// A missing model or adapter, with its hint.
pub fn qualia(args: &ModelArgs) -> anyhow::Result<Qualia> {
    let model = args.load()?;
    let gpu = GpuContext::new()?;
    // v2 reads speech and language: it needs Whisper, the VAD and the embedder.
    let listener = if model.format() >= 2 {
        let paths = crate::speech::ModelPaths::under(&args.models_dir);
        // Where Whisper runs is decided first, so a bad BRAINSCAN_WHISPER_ON reads as itself and
        // not as missing models.
        let on = crate::speech::whisper_on_device(&gpu.adapter_info)?.then(|| {
            crate::speech::whisper::DeviceHandle {
                device: gpu.device(),
                queue: gpu.queue(),
                adapter: &gpu.adapter_info,
                precision: None,
            }
        });
        let speech = crate::speech::Speech::load_with(&paths, on).with_context(|| {
            format!(
                "qualia v2 needs the speech models in {} (run scripts/fetch-models, or pass --models-dir)",
                args.models_dir.display()
            )
        })?;
        let embedder = crate::embed::shared_english(&paths.embedder)?;
        Some(Arc::new(Listener::new(
            Arc::new(speech),
            embedder,
            &args.models_dir,
        )))
    } else {
        None
    };
    let on_device = crate::inference::faces::faces_on_device(&gpu.adapter_info)?;
    let faces = crate::inference::faces::load_for(
        &model.manifest.sampling,
        &args.models_dir,
        on_device.then_some(&gpu),
    )?;
    Ok(Qualia {
        gpu: Arc::new(gpu),
        model: Arc::new(model),
        listener,
        faces,
    })
}

async fn probe_file(path: &Path) -> anyhow::Result<ProbeInfo> {
    Ok(probe::probe(path, Duration::from_secs(30)).await?)
}

/// A bar counting the steps of a longer command (clips of a corpus, runs of a bench) on
/// stderr, hidden when stderr is not a terminal so pipes and logs stay clean.
fn step_bar(steps: usize, what: &str) -> indicatif::ProgressBar {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(steps as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {what} {{bar:30}} {{pos}}/{{len}} {{msg}}"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Prints a line above a step bar (or plainly when the bar is hidden).
fn say(bar: &indicatif::ProgressBar, line: String) {
    if bar.is_hidden() {
        println!("{line}");
    } else {
        bar.println(line);
    }
}

fn progress_bar(total: Option<f64>, quiet: bool) -> (indicatif::ProgressBar, Progress) {
    let bar = if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new((total.unwrap_or(0.0) * 10.0).ceil() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} analysing {bar:30} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    };
    let best = Arc::new(AtomicU64::new(0));
    let b = bar.clone();
    let cb: Progress = Arc::new(move |secs: f64| {
        let tenths = (secs * 10.0) as u64;
        let prev = best.fetch_max(tenths, Ordering::Relaxed);
        if tenths > prev {
            b.set_position(tenths);
            b.set_message(format!("{:.0} s decoded", secs));
        }
    });
    (bar, cb)
}

async fn analyse(
    q: &Qualia,
    path: &Path,
    quiet: bool,
    time_base: TimeBase,
    max_seconds: u32,
) -> anyhow::Result<QualiaOutput> {
    let info = probe_file(path).await?;
    let (bar, cb) = progress_bar(info.duration_sec, quiet);
    let out = q
        .analyse_in(path, &info, max_seconds, Some(cb), time_base)
        .await;
    bar.finish_and_clear();
    match out {
        Err(e @ crate::inference::QualiaError::TooLong(..)) if max_seconds < MAX_LOCAL_SECONDS => {
            Err(anyhow::anyhow!(
                "{e}; pass --max-duration SECONDS (up to {MAX_LOCAL_SECONDS}) for longer clips"
            ))
        }
        other => Ok(other?),
    }
}

/// `brainscan scan`.
///
/// # Errors
/// Input, model, GPU and decoding errors, with context.
pub async fn scan(args: ClipArgs) -> anyhow::Result<()> {
    let input = resolve(&args.input, &args.fetch).await?;
    let q = qualia(&args.model)?;
    let time_base = if args.bold {
        TimeBase::Bold
    } else {
        TimeBase::Stimulus
    };
    let out = analyse(&q, &input.path, args.json, time_base, args.max_duration).await?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let rows: Vec<serde_json::Value> = out
            .networks
            .iter()
            .enumerate()
            .map(|(t, row)| {
                let mut m = serde_json::Map::new();
                m.insert("second".into(), serde_json::json!(t));
                for (n, v) in NETWORKS.iter().zip(row) {
                    m.insert((*n).into(), serde_json::json!(v));
                }
                serde_json::Value::Object(m)
            })
            .collect();
        let doc = serde_json::json!({
            "model": out.model,
            "adapter": out.adapter,
            "duration_sec": out.duration_sec,
            "seconds": out.seconds,
            "modalities": out.modalities,
            "time_base": out.time_base,
            "low_signal": out.low_signal,
            "transcript": out.heard.as_ref().map(|h| serde_json::json!({
                "source": h.source,
                "lines": h.lines.iter().zip(&h.confidence).map(|(l, c)| serde_json::json!({
                    "start_sec": l.start_sec,
                    "end_sec": l.end_sec,
                    "text": l.text,
                    "confidence": (f64::from(*c) * 1000.0).round() / 1000.0,
                })).collect::<Vec<_>>(),
            })),
            "units": "z (relative to the model's reference corpus)",
            "networks": rows,
            "stage_times_ms": stage_ms(&out),
        });
        serde_json::to_writer_pretty(&mut stdout, &doc)?;
        writeln!(stdout)?;
        return Ok(());
    }
    writeln!(
        stdout,
        "{} on {} — {:.1} s, video {}, audio {}, speech {}; {} time; values in z units of the reference corpus",
        out.model,
        out.adapter,
        out.duration_sec,
        yes_no(out.modalities.video),
        yes_no(out.modalities.audio),
        yes_no(out.modalities.speech),
        match out.time_base {
            TimeBase::Stimulus => "stimulus",
            TimeBase::Bold => "BOLD",
        }
    )?;
    if out.low_signal {
        writeln!(
            stdout,
            "low signal: nothing in this clip changes (black, silent or constant), so there is nothing to read"
        )?;
    }
    write!(stdout, "{:>4}", "s")?;
    for n in [
        "Visual", "SomMot", "DorsAttn", "VentAttn", "Limbic", "Cont", "Default",
    ] {
        write!(stdout, " {n:>8}")?;
    }
    writeln!(stdout)?;
    for (t, row) in out.networks.iter().enumerate() {
        write!(stdout, "{t:>4}")?;
        for v in row {
            write!(stdout, " {v:>8.3}")?;
        }
        writeln!(stdout)?;
    }
    Ok(())
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn stage_ms(out: &QualiaOutput) -> serde_json::Value {
    let t = &out.stage_times;
    let ms = |d: Duration| (d.as_secs_f64() * 1e4).round() / 10.0;
    serde_json::json!({
        "visual": ms(t.visual),
        "motion_energy": ms(t.motion),
        "audio_fft": ms(t.audio_fft),
        "audio_features": ms(t.audio_features),
        "pool": ms(t.pool),
        "response_readout": ms(t.response),
        "prepass": ms(t.prepass),
        "speech": ms(t.speech),
        "language": ms(t.language),
        "faces": ms(t.faces),
    })
}

/// `brainscan features`: the per-second raw feature matrix as CSV (header `second,<features>`).
///
/// # Errors
/// As [`scan`].
pub async fn features(args: ClipArgs) -> anyhow::Result<()> {
    let input = resolve(&args.input, &args.fetch).await?;
    let q = qualia(&args.model)?;
    let out = analyse(&q, &input.path, true, TimeBase::Stimulus, args.max_duration).await?;
    let mut stdout = std::io::stdout().lock();
    let names: Vec<&str> = q.model.features.iter().map(String::as_str).collect();
    if args.json {
        let doc = serde_json::json!({
            "model": out.model,
            "modalities": out.modalities,
            "low_signal": out.low_signal,
            "features": names,
            "descriptions": q.model.manifest.features.iter().map(|f| &f.description).collect::<Vec<_>>(),
            "rows": out.features.chunks_exact(names.len()).map(<[f32]>::to_vec).collect::<Vec<_>>(),
        });
        serde_json::to_writer(&mut stdout, &doc)?;
        writeln!(stdout)?;
        return Ok(());
    }
    write_features_csv(&mut stdout, &names, &out.features, out.modalities)?;
    Ok(())
}

/// Writes `second,<feature names>,has_video,has_audio,has_speech` and one row per second.
/// The presence columns let `model prior` leave absent streams out of the statistics.
///
/// # Errors
/// I/O.
pub fn write_features_csv(
    w: &mut impl Write,
    names: &[&str],
    features: &[f32],
    m: Modalities,
) -> std::io::Result<()> {
    write!(w, "second")?;
    for name in names {
        write!(w, ",{name}")?;
    }
    writeln!(w, ",has_video,has_audio,has_speech")?;
    for (t, row) in features.chunks_exact(names.len()).enumerate() {
        write!(w, "{t}")?;
        for v in row {
            write!(w, ",{v}")?;
        }
        writeln!(
            w,
            ",{},{},{}",
            u8::from(m.video),
            u8::from(m.audio),
            u8::from(m.speech)
        )?;
    }
    Ok(())
}

/// `brainscan model …`.
///
/// # Errors
/// Bad inputs, fitting failures, I/O.
pub async fn model(cmd: ModelCommand) -> anyhow::Result<()> {
    match cmd {
        ModelCommand::Corpus {
            dir,
            out,
            note,
            model,
        } => corpus(&dir, &out, note, &model).await,
        ModelCommand::Calibrate { dir, out, model } => calibrate(&dir, &out, &model).await,
        ModelCommand::Fit {
            features,
            targets,
            out,
            version,
            model,
        } => {
            if features.len() != targets.len() {
                bail!(
                    "give one --targets file per --features file ({} vs {})",
                    features.len(),
                    targets.len()
                );
            }
            let base = model.load()?;
            let names: Vec<&str> = base.features.iter().map(String::as_str).collect();
            let runs = features
                .iter()
                .zip(&targets)
                .map(|(f, t)| fit::load_run(f, t, &names))
                .collect::<Result<Vec<_>, _>>()?;
            let (fitted, report) = fit::fit(&runs, &base, &version)?;
            fitted.write(&out)?;
            println!(
                "fitted {} on {} seconds in {} runs, {} folds, λ = {}",
                fitted.id(),
                report.rows,
                report.runs,
                report.folds,
                report.lambda
            );
            println!("held-out Pearson r per network:");
            for (n, r) in &report.heldout_r {
                println!("  {n:<18} {r:>7.3}");
            }
            println!("wrote {}", out.display());
            Ok(())
        }
        ModelCommand::Prior {
            corpus,
            out,
            version,
            format,
            models_dir,
            profiles,
        } => {
            let list = match format {
                1 => prior::v1_list(),
                2 => prior::v2_list(),
                other => bail!("--format {other}: this build writes formats 1 and 2"),
            };
            let names: Vec<&str> = list.iter().map(|f| f.0).collect();
            let mut clips = Vec::new();
            let mut listed = Vec::new();
            for path in &corpus {
                let m = fit::read_csv(path, &names)?;
                let flags = if format >= 2 {
                    fit::read_csv(path, &["has_video", "has_audio", "has_speech"])?
                } else {
                    fit::read_csv(path, &["has_video", "has_audio"])?
                };
                // The first row's flags (they are the same on every row).
                let presence = Presence {
                    video: flags.first() == Some(&1.0),
                    audio: flags.get(1) == Some(&1.0),
                    speech: format >= 2 && flags.get(2) == Some(&1.0),
                };
                listed.push(serde_json::json!({
                    "file": path.file_name().map(|n| n.to_string_lossy().into_owned()),
                    "seconds": m.len() / names.len(),
                    "video": presence.video,
                    "audio": presence.audio,
                    "speech": presence.speech,
                }));
                clips.push(prior::CorpusClip {
                    features: m,
                    presence,
                });
            }
            let model = if format >= 2 {
                let (mean, std) = prior::corpus_stats(&clips, &list, &vec![0.0; list.len()]);
                let embedder = crate::embed::Embedder::load(
                    &crate::speech::ModelPaths::under(&models_dir).embedder,
                )?;
                let axes = crate::inference::language::semantic_axes(&embedder)?;
                // The content features' unit comes from their construction, not the corpus's
                // few seconds of speech: their spread is at least that unit.
                let mut std = std;
                let units = crate::inference::language::content_units(&embedder, &axes)?;
                prior::raise_to_units(&mut std, &list, &units);
                prior::build_v2(
                    &version,
                    &mean,
                    std,
                    axes,
                    &embedder.model_id,
                    serde_json::json!(listed),
                    &crate::grounding::neurosynth::ProfileTable::load(&profiles)?,
                )
            } else {
                let (mean, std) = prior::corpus_stats(&clips, &list, &prior::absent_values());
                prior::build(&version, mean, std, serde_json::json!(listed))
            };
            model.write(&out)?;
            println!(
                "wrote {} to {} ({} corpus files)",
                model.id(),
                out.display(),
                corpus.len()
            );
            Ok(())
        }
        ModelCommand::Profiles { data, out, assign } => {
            use crate::grounding::neurosynth::{self, Assignment, SurfaceIndex};
            let data = reference_data(data)?;
            let assignment = match assign {
                AssignRule::Centroids => Assignment::Centroids,
                AssignRule::Surface => Assignment::Surface(SurfaceIndex::load(
                    &crate::config::default_models_dir_from_env(),
                )?),
            };
            let table = neurosynth::build(&data, &assignment)?;
            let mut text = serde_json::to_string_pretty(&table)?;
            text.push('\n');
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&out, text).with_context(|| format!("writing {}", out.display()))?;
            print_profiles(&table);
            println!("wrote {}", out.display());
            Ok(())
        }
        ModelCommand::Eval {
            features,
            targets,
            subjects,
            after_second,
            json,
            model,
        } => {
            let m = model.load()?;
            let names: Vec<&str> = m.features.iter().map(String::as_str).collect();
            let raw = fit::read_csv(&features, &names)?;
            let flags = fit::read_csv(&features, &["has_video", "has_audio", "has_speech"])?;
            let presence = Presence {
                video: flags.first() == Some(&1.0),
                audio: flags.get(1) == Some(&1.0),
                speech: flags.get(2) == Some(&1.0),
            };
            let t = crate::grounding::evaluate::read_targets(&targets)?;
            let subs = subjects
                .iter()
                .map(|p| crate::grounding::evaluate::read_targets(p))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let report =
                crate::grounding::evaluate::evaluate(&m, &raw, presence, &t, &subs, after_second)?;
            print_report(&report, json)
        }
        ModelCommand::Alice {
            data,
            out,
            json,
            model,
        } => {
            use crate::grounding::alice;
            let data = reference_data(data)?;
            std::fs::create_dir_all(&out)?;
            let proxy = alice::build_proxy(&data, &out, alice::PROXY_SECONDS)?;
            let q = qualia(&model)?;
            let analysed = analyse(
                &q,
                &proxy,
                true,
                TimeBase::Bold,
                alice::PROXY_SECONDS as u32 + 1,
            )
            .await?;
            let names: Vec<&str> = q.model.features.iter().map(String::as_str).collect();
            let mut csv = Vec::new();
            write_features_csv(&mut csv, &names, &analysed.features, analysed.modalities)?;
            std::fs::write(out.join("features.csv"), csv)?;
            let (group, subjects, excluded) = alice::targets(&data)?;
            alice::write_targets(&out.join("targets.csv"), &group)?;
            let presence = Presence {
                video: analysed.modalities.video,
                audio: analysed.modalities.audio,
                speech: analysed.modalities.speech,
            };
            let report = crate::grounding::evaluate::evaluate(
                &q.model,
                &analysed.features,
                presence,
                &group,
                &subjects,
                Some(alice::after_onset_second(&data)?),
            )?;
            let report = crate::grounding::evaluate::Report {
                authors_regressors: alice::authors_regressors(&data, &group, &excluded)?,
                excluded_subjects: excluded,
                ..report
            };
            std::fs::write(
                out.join("report.json"),
                serde_json::to_string_pretty(&report)?,
            )?;
            let design = crate::grounding::evaluate::design(
                &q.model,
                &analysed.features,
                presence,
                &group.spans,
            )?;
            std::fs::write(
                out.join("design.csv"),
                crate::grounding::evaluate::design_csv(&design, &names, &group.spans),
            )?;
            print_report(&report, json)
        }
        ModelCommand::Show { model } => {
            let m = model.load()?;
            println!("{}  {}", m.id(), m.manifest.checksum);
            println!(
                "provenance: {}",
                serde_json::to_string_pretty(&m.manifest.provenance)?
            );
            for note in &m.manifest.weights {
                println!(
                    "  {:<18} {:<15} {:>6.2}  {}",
                    note.network, note.feature, note.weight, note.reason
                );
            }
            Ok(())
        }
    }
}

/// The reference data folder: the flag or `$BRAINSCAN_REFERENCE_DATA`, else the shared data
/// folder beside the clone (`../shared/data`).
fn reference_data(flag: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    flag.or_else(crate::grounding::reference_data_dir).context(
        "no reference data: pass --data DIR or set BRAINSCAN_REFERENCE_DATA to the folder holding neurosynth-v7/ and alice-brennan2016/ (it is read in place, never copied into the repository; the default is ../shared/data beside the clone)",
    )
}

fn print_profiles(t: &crate::grounding::neurosynth::ProfileTable) {
    println!(
        "{:<16} {:>7} {:>7}  log odds per network ({}); * = 95% interval excludes 0",
        "construct",
        "studies",
        "foci",
        t.networks.join(", ")
    );
    for p in &t.profiles {
        let cells: Vec<String> = (0..p.log_odds.len())
            .map(|n| {
                let star = if p.credible(n) != 0.0 { "*" } else { " " };
                format!("{:>6.2}{star}", p.log_odds[n])
            })
            .collect();
        println!(
            "{:<16} {:>7} {:>7}  {}",
            p.construct,
            p.studies,
            p.foci,
            cells.join(" ")
        );
    }
}

fn print_report(r: &crate::grounding::evaluate::Report, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
        return Ok(());
    }
    println!("{} on {} rows (Pearson r)", r.model, r.rows);
    let names: Vec<&str> = r.mean_baselines.iter().map(|b| b.0.as_str()).collect();
    let cell = |v: f64, block: f64| format!("{v:.3}/{block:.3}");
    print!(
        "{:<10} {:<18} {:>13} {:>9}",
        "target", "network", "zero-shot", "fitted"
    );
    for n in &names {
        print!(" {:>15}", format!("{n} only"));
    }
    println!(" {:>8} {:>8}", "1 subj", "group");
    let ceiling = |c: Option<f64>| c.map_or("-".to_owned(), |c| format!("{c:.3}"));
    for t in &r.targets {
        print!(
            "{:<10} {:<18} {:>13} {:>9.3}",
            t.target,
            t.network,
            cell(t.zero_shot_r, t.zero_shot_block_r),
            t.fitted_r
        );
        for (b, bb) in t.baselines.iter().zip(&t.baselines_block) {
            print!(" {:>15}", cell(b.1, bb.1));
        }
        println!(" {:>8} {:>8}", ceiling(t.ceiling), ceiling(t.group_ceiling));
    }
    print!(
        "{:<10} {:<18} {:>13} {:>9.3}",
        "mean",
        "",
        cell(r.mean_zero_shot_r, r.mean_zero_shot_block_r),
        r.mean_fitted_r
    );
    for (b, bb) in r.mean_baselines.iter().zip(&r.mean_baselines_block) {
        print!(" {:>15}", cell(b.1, bb.1));
    }
    println!(
        " {:>8} {:>8}",
        ceiling(r.mean_ceiling),
        ceiling(r.mean_group_ceiling)
    );
    println!(
        "ceilings: '1 subj' is the leave-one-subject-out ISC, which bounds predicting one subject; 'group' is the split-half reliability of the group mean (Spearman-Brown), which bounds predicting the group-mean targets scored here"
    );
    for x in &r.excluded_subjects {
        println!("left out: {x}");
    }
    let uncertain = |name: &str, u: &crate::grounding::evaluate::Uncertainty| {
        println!(
            "  {name:<14} 95% interval [{:.3}, {:.3}], null SD {:.3}, p {:.3}",
            u.interval[0], u.interval[1], u.null_sd, u.p
        );
    };
    println!(
        "mean whole-series r: circular block bootstrap interval ({} rows a block) and phase-randomised null ({} resamples each):",
        crate::grounding::evaluate::BLOCK_ROWS,
        crate::grounding::evaluate::RESAMPLES
    );
    uncertain("zero-shot", &r.mean_zero_shot_uncertainty);
    for (name, u) in &r.mean_baselines_uncertainty {
        uncertain(&format!("{name} only"), u);
    }
    println!(
        "mean within-block r: the bootstrap draws its blocks inside each of the {} blocks, the null is the same phase-randomised series scored within block:",
        crate::grounding::evaluate::OUTER_FOLDS
    );
    uncertain("zero-shot", &r.mean_zero_shot_block_uncertainty);
    for (name, u) in &r.mean_baselines_block_uncertainty {
        uncertain(&format!("{name} only"), u);
    }
    if !r.authors_regressors.is_empty() {
        println!(
            "the dataset authors' own predictors (from the real audio; each subject's z-scored, averaged), whole series:"
        );
        for a in &r.authors_regressors {
            let per: Vec<String> = a.r.iter().map(|x| format!("{x:.3}")).collect();
            println!(
                "  {:<16} mean r {:.3} (per ROI {})",
                a.name,
                a.mean_r,
                per.join(" ")
            );
            uncertain(&a.name, &a.uncertainty);
        }
    }
    println!(
        "a/b: whole series (pre-registered) / within each of the {} contiguous blocks (mean r)",
        crate::grounding::evaluate::OUTER_FOLDS
    );
    println!(
        "zero-shot: the model as shipped; fitted: ridge toward the prior, nested contiguous-block CV, held-out, within block"
    );
    if let Some(a) = &r.after_onset {
        print!(
            "after the onset (rows from second {}, {} rows; secondary): zero-shot {:.3}",
            a.from_second, a.rows, a.mean_zero_shot_r
        );
        for (name, v) in &a.mean_baselines {
            print!(", {name} only {v:.3}");
        }
        println!();
        uncertain("zero-shot", &a.mean_zero_shot_uncertainty);
        for (name, u) in &a.mean_baselines_uncertainty {
            uncertain(&format!("{name} only"), u);
        }
    }
    type Scores<'a> = (
        f64,
        &'a crate::grounding::evaluate::Uncertainty,
        &'a [(String, f64)],
        &'a [(String, crate::grounding::evaluate::Uncertainty)],
    );
    let per_target =
        |title: &str, of: &dyn Fn(&crate::grounding::evaluate::TargetReport) -> Scores<'_>| {
            println!("per target, {title}: r, 95% interval and null SD");
            for t in &r.targets {
                let (r, u, baselines, uncertainties) = of(t);
                print!(
                    "  {:<10} zero-shot {:.3} [{:.3}, {:.3}] ({:.3})",
                    t.target, r, u.interval[0], u.interval[1], u.null_sd
                );
                for ((name, v), (_, u)) in baselines.iter().zip(uncertainties) {
                    print!(
                        "; {name} {v:.3} [{:.3}, {:.3}] ({:.3})",
                        u.interval[0], u.interval[1], u.null_sd
                    );
                }
                println!();
            }
        };
    per_target("whole series", &|t| {
        (
            t.zero_shot_r,
            &t.zero_shot_uncertainty,
            &t.baselines,
            &t.baselines_uncertainty,
        )
    });
    per_target("within block", &|t| {
        (
            t.zero_shot_block_r,
            &t.zero_shot_block_uncertainty,
            &t.baselines_block,
            &t.baselines_block_uncertainty,
        )
    });
    Ok(())
}

/// `brainscan model corpus`.
/// The files of `dir` (not recursive), sorted by name.
fn files_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// One corpus clip's file name and analysis (stimulus time), or `None`, said on stderr, for a
/// file that is not media or cannot be analysed: a corpus folder may hold other files.
async fn analyse_corpus_clip(q: &Qualia, path: &Path) -> Option<(String, QualiaOutput)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match analyse(q, path, true, TimeBase::Stimulus, MAX_SECONDS).await {
        Ok(a) => Some((name, a)),
        Err(e) => {
            eprintln!("skipped {name}: {e:#}");
            None
        }
    }
}

/// `brainscan model calibrate`: the corpus distribution of every standard readout.
async fn calibrate(dir: &Path, out: &Path, model: &ModelArgs) -> anyhow::Result<()> {
    use brainscan_readouts::calibration::Calibration;
    let q = qualia(model)?;
    let mut rows: Vec<[f32; 7]> = Vec::new();
    let mut header = vec![
        "# The standard readouts' corpus calibration: per readout, its name, the corpus's robust"
            .to_owned(),
        "# spread, and value:percentile points of the per-second raw values (mid-rank).".to_owned(),
        "# Built by `brainscan model calibrate` (scripts/build-qualia-prior); do not edit."
            .to_owned(),
        format!("# model: {}", q.model.id()),
    ];
    let files = files_in(dir)?;
    let bar = step_bar(files.len(), "calibrating");
    for path in files {
        bar.set_message(
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        let analysed = analyse_corpus_clip(&q, &path).await;
        bar.inc(1);
        let Some((name, analysed)) = analysed else {
            continue;
        };
        let bytes = std::fs::read(&path)?;
        header.push(format!(
            "# clip: {name} {} {} s",
            crate::inference::model::checksum(&bytes),
            analysed.networks.len()
        ));
        say(&bar, format!("{name}: {} s", analysed.networks.len()));
        rows.extend(analysed.networks.iter().copied());
    }
    bar.finish_and_clear();
    header.push(format!("# seconds: {}", rows.len()));
    let mut text = header.join("\n");
    text.push('\n');
    // A contrast reads its terms over the spreads built here, not over the embedded (older)
    // ones, so weighted readouts are calibrated first.
    let mut built: Vec<(&str, Calibration)> = Vec::new();
    let mut order = brainscan_readouts::ALL.to_vec();
    order.sort_by_key(|r| matches!(r.form, brainscan_readouts::Form::Contrast(..)));
    for readout in order {
        let term = |t: &brainscan_readouts::Readout| -> f64 {
            built
                .iter()
                .find(|(n, _)| *n == t.name)
                .map_or(f64::NAN, |(_, c)| c.spread)
        };
        let raw: Vec<f64> = rows.iter().map(|r| readout.raw_with(r, &term)).collect();
        let c = Calibration::from_corpus(&raw)
            .map_err(|e| anyhow::anyhow!("readout {}: {e}", readout.name))?;
        println!(
            "  {:<16} {} points, median {:+.3}, spread {:.3}",
            readout.name,
            c.knots.len(),
            c.value_at(50.0),
            c.spread
        );
        text.push_str(&c.line(readout.name));
        text.push('\n');
        built.push((readout.name, c));
    }
    std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}", out.display());
    Ok(())
}

async fn corpus(dir: &Path, out: &Path, note: String, model: &ModelArgs) -> anyhow::Result<()> {
    use crate::plugins::{PluginRuntime, defaults::DEFAULTS};
    let q = qualia(model)?;
    let runtime = PluginRuntime::new(crate::config::PluginConfig::defaults(), None)?;
    let (_, bytes) = DEFAULTS
        .iter()
        .find(|(f, _)| *f == "lens_standard.wasm")
        .context("the built-in lens plugin is missing from this build")?;
    let plugin = Arc::new(runtime.load(bytes, "builtin")?);
    let lenses = plugin.manifest.provides.clone();
    let files = files_in(dir)?;
    let mut clips = Vec::new();
    let mut scores: std::collections::BTreeMap<String, Vec<f64>> =
        lenses.iter().map(|l| (l.clone(), Vec::new())).collect();
    let bar = step_bar(files.len(), "scoring the corpus");
    for path in &files {
        bar.set_message(
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        let analysed = analyse_corpus_clip(&q, path).await;
        bar.inc(1);
        let Some((name, analysed)) = analysed else {
            continue;
        };
        let clip = crate::analysis::clip_of(&analysed);
        let (series, _) = runtime
            .score(&plugin, &clip, &lenses)
            .await
            .map_err(|e| anyhow::anyhow!("scoring {name}: {e}"))?;
        for s in series {
            let v = scores.entry(s.lens).or_default();
            v.extend(
                s.seconds
                    .iter()
                    .map(|x| (f64::from(x.score) * 10.0).round() / 10.0),
            );
        }
        let bytes = std::fs::read(path)?;
        say(&bar, format!("{name}: {} s", clip.networks.len()));
        clips.push(crate::benchmark::CorpusClip {
            file: name,
            sha256: crate::inference::model::checksum(&bytes),
            seconds: clip.networks.len(),
            video: analysed.modalities.video,
            audio: analysed.modalities.audio,
        });
    }
    bar.finish_and_clear();
    if clips.is_empty() {
        bail!("no clip in {} could be analysed", dir.display());
    }
    let table = crate::benchmark::BenchmarkTable::build(
        q.model.id(),
        plugin.manifest.id(),
        plugin.manifest.digest.clone(),
        clips,
        scores,
        note,
    )?;
    let mut json = serde_json::to_string_pretty(&table)?;
    json.push('\n');
    std::fs::write(out, json).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "wrote {} ({} clips, {} s; {} scored by {})",
        out.display(),
        table.clips.len(),
        table.seconds,
        table.model,
        table.lens_plugin
    );
    for (lens, q) in &table.quantiles {
        println!(
            "  {lens:<16} p10 {:>5.1}  p50 {:>5.1}  p90 {:>5.1}",
            q[10], q[50], q[90]
        );
    }
    Ok(())
}

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

fn reset_peak_rss() {
    // Linux: writing 5 resets VmHWM to the current RSS.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times each kernel stage alone on the clip's first 10 s (median of `runs`), so per-stage
/// figures are not blurred by the two media streams sharing the device during a scan.
async fn isolated_kernels(
    q: &Qualia,
    path: &Path,
    info: &ProbeInfo,
    runs: usize,
) -> anyhow::Result<serde_json::Value> {
    use crate::inference::features::{HOP, LEAD};
    use crate::inference::run::{decode_frames, decode_samples};
    let spec = q.decode_spec();
    let frames = if info.has_video {
        decode_frames(path, spec, 10 * spec.fps as usize).await?
    } else {
        Vec::new()
    };
    let samples = if info.has_audio {
        decode_samples(path, spec, 10 * spec.sample_rate as usize).await?
    } else {
        vec![0f32; LEAD]
    };
    let gpu = q.gpu.clone();
    let model = q.model.clone();
    tokio::task::spawn_blocking(move || -> anyhow::Result<serde_json::Value> {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let (mut vis, mut mot, mut fft, mut feat, mut pool, mut resp) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        let frame_len = (spec.width * spec.height * 3) as usize;
        let rect = crate::inference::features::Rect::full(spec.width, spec.height);
        // The motion kernel reads `taps - 1` frames before the first: the first, repeated.
        let bank = model
            .manifest
            .sampling
            .motion_energy
            .then(|| crate::inference::motion::MotionBank::new(rect, spec.fps));
        let motion_frames: Vec<u8> = match &bank {
            Some(b) if frames.len() > 2 * frame_len => {
                let mut v = Vec::with_capacity(frames.len() + (b.taps - 2) * frame_len);
                for _ in 0..b.taps - 2 {
                    v.extend_from_slice(&frames[..frame_len]);
                }
                v.extend_from_slice(&frames);
                v
            }
            _ => Vec::new(),
        };
        let mut motion_per_second = None;
        let hops = (samples.len() - LEAD) / HOP;
        let mut frame_feats = Vec::new();
        let mut hop_feats = Vec::new();
        for _ in 0..runs {
            if frames.len() > 2 * frame_len {
                let (f, t) = gpu.visual(&frames, spec.width, spec.height, rect)?;
                vis.push(ms(t));
                frame_feats = f;
            }
            if let Some(b) = bank.as_ref().filter(|_| !motion_frames.is_empty()) {
                let (rows, t) = gpu.motion(&motion_frames, spec.width, spec.height, rect, b)?;
                mot.push(ms(t));
                let per_frame = b.features(&rows);
                motion_per_second =
                    Some(crate::inference::motion::per_second(&per_frame, spec.fps, 10));
            }
            if hops > 1 {
                let (_, f, a, b) = gpu.audio(&samples, hops + 1, true, false)?;
                fft.push(ms(a));
                feat.push(ms(b));
                hop_feats = f;
            }
            let (raw, t) = gpu.pool(
                &frame_feats,
                &hop_feats,
                10,
                spec.fps,
                model.manifest.sampling.onset_threshold,
                model.manifest.sampling.hop_offset,
            )?;
            pool.push(ms(t));
            let presence = Presence {
                video: !frame_feats.is_empty(),
                audio: !hop_feats.is_empty(),
                speech: false,
            };
            let raw = if model.format() >= 2 {
                let offset = model.manifest.sampling.hop_offset as usize;
                let loudness = v2::loudness_per_second(&hop_feats, 10, offset);
                let streams =
                    v2::streams(&raw, &loudness, presence.video, presence.audio, false, None);
                v2::derive(
                    &raw,
                    &loudness,
                    &streams,
                    None,
                    motion_per_second.as_deref(),
                    None,
                    1.0,
                )
            } else {
                raw
            };
            resp.push(ms(gpu
                .response(&raw, &model, presence, TimeBase::Stimulus)?
                .time));
        }
        let med = |v: Vec<f64>| {
            if v.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::json!((median(v) * 10.0).round() / 10.0)
            }
        };
        Ok(serde_json::json!({
            "visual": med(vis), "motion_energy": med(mot), "audio_fft": med(fft), "audio_features": med(feat),
            "pool": med(pool), "response_readout": med(resp),
        }))
    })
    .await?
}

/// `brainscan bench`: decode-only baseline vs the full local scan on the same clip, in one run.
///
/// # Errors
/// As [`scan`].
pub async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let runs = args.runs.max(1);
    let info = probe_file(&args.input).await?;
    let start = Instant::now();
    let q = qualia(&args.model)?;
    let init = start.elapsed();
    let spec = q.decode_spec();
    let mut decode_s = Vec::new();
    let mut scan_s = Vec::new();
    let mut last = None;
    let mut decode_peak = 0;
    let mut scan_peak = 0;
    // Decode and scan per run, the v1 baseline per run (v2 only), then the isolated kernels.
    let v1_runs = if q.model.format() >= 2 { runs } else { 0 };
    let bar = step_bar(2 * runs + v1_runs + 1, "measuring");
    for _ in 0..runs {
        reset_peak_rss();
        bar.set_message("decode only");
        let (d, _, _) = decode_only(&args.input, &info, spec).await?;
        bar.inc(1);
        bar.set_message("full scan");
        decode_s.push(d.as_secs_f64());
        decode_peak = decode_peak.max(peak_rss_kib().unwrap_or(0));
        reset_peak_rss();
        let t = Instant::now();
        let out = q.analyse(&args.input, &info, MAX_SECONDS, None).await?;
        scan_s.push(t.elapsed().as_secs_f64());
        scan_peak = scan_peak.max(peak_rss_kib().unwrap_or(0));
        bar.inc(1);
        last = Some(out);
    }
    let out = last.context("no run")?;
    let (d, s) = (median(decode_s), median(scan_s));
    // The v1 baseline in the same run, on the same adapter: what v2's features cost on top.
    let v1 = if q.model.format() >= 2 {
        let q1 = Qualia {
            gpu: q.gpu.clone(),
            model: Arc::new(Model::embedded_v1()?),
            listener: None,
            faces: None,
        };
        let mut v1_s = Vec::new();
        bar.set_message("v1 baseline");
        for _ in 0..runs {
            let t = Instant::now();
            q1.analyse(&args.input, &info, MAX_SECONDS, None).await?;
            v1_s.push(t.elapsed().as_secs_f64());
            bar.inc(1);
        }
        Some(median(v1_s))
    } else {
        None
    };
    // What the scan's one decode saves: the keyframe-only decode that ran before it as a
    // second ffmpeg (issue 45), timed alone on the same clip.
    let keyframe_pass = if info.has_video && q.model.manifest.sampling.active_picture {
        bar.set_message("keyframe pass");
        let mut k_s = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            crate::inference::picture::active_picture(&args.input, spec).await?;
            k_s.push(t.elapsed().as_secs_f64());
        }
        Some(median(k_s))
    } else {
        None
    };
    bar.set_message("kernels alone");
    let kernels = isolated_kernels(&q, &args.input, &info, runs.max(3)).await?;
    bar.finish_and_clear();
    let render = if args.render {
        Some(bench_render(&q, &args.model, &out, runs).await?)
    } else {
        None
    };
    // Where Whisper ran in these scans (the speech pass's share of the stage times).
    let whisper_on = q.listener.as_ref().map(|l| l.speech.computed_on());
    let faces_on = q.faces.as_ref().map(|f| f.computed_on().to_owned());
    let doc = serde_json::json!({
        "clip": args.input.display().to_string(),
        "duration_sec": out.duration_sec,
        "adapter": out.adapter,
        "whisper_on": whisper_on,
        "faces_on": faces_on,
        "model": out.model,
        "runs": runs,
        "gpu_init_ms": (init.as_secs_f64() * 1000.0).round(),
        "decode_only_s": d,
        "scan_s": s,
        "ratio_scan_over_decode": s / d,
        "v1_scan_s": v1,
        "ratio_scan_over_v1_scan": v1.map(|v| s / v),
        "v2_extra_s_per_10s_of_media": v1.map(|v| (s - v) * 10.0 / out.duration_sec),
        "realtime_factor": out.duration_sec / s,
        "keyframe_pass_alone_s": keyframe_pass,
        "picture_revised": out.picture_revised,
        "stage_times_ms_in_scan": stage_ms(&out),
        "kernel_ms_per_10s_isolated": kernels,
        "peak_rss_mib": { "decode_only": decode_peak / 1024, "scan": scan_peak / 1024 },
        "render": render,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "clip            {} ({:.1} s)",
            args.input.display(),
            out.duration_sec
        );
        println!("adapter         {}", out.adapter);
        if let Some(w) = &whisper_on {
            println!("whisper on      {w}");
        }
        if let Some(f) = &faces_on {
            println!("faces on        {f}");
        }
        println!(
            "decode only     {d:.2} s   (ffmpeg to {}x{} @ {} fps RGB + 16 kHz PCM)",
            spec.width, spec.height, spec.fps
        );
        println!("full scan       {s:.2} s   (decode + qualia kernels)");
        println!("ratio           {:.2}", s / d);
        if let Some(v) = v1 {
            println!(
                "v1 full scan    {v:.2} s   (same run, same adapter; v2/v1 ratio {:.2}, v2 adds {:.2} s per 10 s of media)",
                s / v,
                (s - v) * 10.0 / out.duration_sec
            );
        }
        println!(
            "stages in scan  {} (ms, wall; video and audio batches share the device)",
            stage_ms(&out)
        );
        if let Some(k) = keyframe_pass {
            println!(
                "keyframes       read in the scan's one decode; a separate keyframe-only decode (the pre-pass before issue 45) takes {k:.2} s alone{}",
                if out.picture_revised {
                    "; this clip's picture changed after the first batch, so the visual kernels ran twice"
                } else {
                    ""
                }
            );
        }
        println!("kernels alone   {kernels} (ms per 10 s of media, median)");
        println!(
            "peak RSS (MiB)  brainscan decode-only {}, scan {} (ffmpeg children are separate processes)",
            decode_peak / 1024,
            scan_peak / 1024
        );
        if let Some(r) = &render {
            println!(
                "render          {}",
                r["frames"].as_str().unwrap_or_default()
            );
            for line in r["settings"].as_array().into_iter().flatten() {
                println!(
                    "                {}",
                    line["line"].as_str().unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}

/// `bench --render`: the cortex video of the scanned clip (see [`crate::render::timing`]).
async fn bench_render(
    q: &Qualia,
    model: &ModelArgs,
    out: &QualiaOutput,
    runs: usize,
) -> anyhow::Result<serde_json::Value> {
    use crate::render::timing;
    let gpu = q.gpu.clone();
    let dir = model.models_dir.clone();
    let video =
        tokio::task::spawn_blocking(move || crate::render::video::CortexVideo::new(&gpu, &dir))
            .await??;
    let seconds = (out.duration_sec.floor() as usize).min(out.networks.len());
    let timeline = timing::timeline_of(&out.networks[..seconds]);
    let lenses = vec!["attention".to_owned()];
    let (v, tl, ls) = (video.clone(), timeline.clone(), lenses.clone());
    let frames = tokio::task::spawn_blocking(move || timing::time_frames(&v, &tl, &ls)).await??;
    let work = tempfile::tempdir()?;
    let settings = timing::time_renders(&video, &timeline, &lenses, work.path(), runs).await?;
    Ok(serde_json::json!({
        "frames": format!(
            "{} frames alone: CPU {:.2} s, device {:.2} s (device/CPU {:.2})",
            frames.frames, frames.cpu_s, frames.device_s, frames.device_s / frames.cpu_s
        ),
        "frames_s": frames,
        "settings": settings
            .iter()
            .map(|r| serde_json::json!({ "line": r.to_string(), "timing": r }))
            .collect::<Vec<_>>(),
    }))
}
