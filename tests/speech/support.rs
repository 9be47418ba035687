use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use brainscan::media::probe;
use brainscan::plugins::bindings::TranscriptLine;
use brainscan::speech::{ModelPaths, Speech};

pub fn models() -> ModelPaths {
    ModelPaths::under(&brainscan::config::default_models_dir_from_env())
}

/// The speech models, loaded once for the whole suite.
pub fn speech() -> Arc<Speech> {
    static SPEECH: OnceLock<Arc<Speech>> = OnceLock::new();
    SPEECH
        .get_or_init(|| {
            Arc::new(Speech::load(&models()).expect("speech models (run scripts/fetch-models)"))
        })
        .clone()
}

/// The folder of real clips (`scripts/fetch-test-media`, checksums verified there).
pub fn real_media() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = Command::new(root.join("scripts/fetch-test-media"))
            .output()
            .expect("scripts/fetch-test-media runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
    .clone()
}

pub fn run(cmd: &mut Command) {
    let out = cmd.output().expect("tool runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// espeak-ng speaking `text` into a 16 kHz mono WAV.
pub fn espeak(dir: &Path, name: &str, text: &str) -> PathBuf {
    let raw = dir.join(format!("{name}.raw.wav"));
    run(Command::new("espeak-ng")
        .args(["-s", "150", "-w"])
        .arg(&raw)
        .arg(text));
    let out = dir.join(format!("{name}.wav"));
    run(Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-i"])
        .arg(&raw)
        .args(["-ar", "16000", "-ac", "1"])
        .arg(&out));
    out
}

/// Seconds of a media file, by ffprobe.
pub async fn duration(path: &Path) -> f64 {
    probe::probe(path, std::time::Duration::from_secs(30))
        .await
        .expect("probe")
        .duration_sec
        .expect("duration")
}

/// The transcript the scan pipeline would give `path`, and its source.
pub async fn transcript(path: &Path) -> (Vec<TranscriptLine>, String) {
    let (lines, source) = transcript_with_provenance(path).await;
    (lines, source["source"].as_str().unwrap_or("").to_owned())
}

/// The transcript the scan pipeline would give `path`, and its whole `provenance.transcript`.
pub async fn transcript_with_provenance(path: &Path) -> (Vec<TranscriptLine>, serde_json::Value) {
    let info = probe::probe(path, std::time::Duration::from_secs(30))
        .await
        .expect("probe");
    let d = info.duration_sec.expect("duration");
    brainscan::speech::transcript_of(path, &info, d, Some(speech()))
        .await
        .expect("transcript")
}

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Word error rate: word-level edit distance over the reference length.
pub fn wer(reference: &str, hypothesis: &str) -> f64 {
    let r = words(reference);
    let h = words(hypothesis);
    let mut prev: Vec<usize> = (0..=h.len()).collect();
    for (i, rw) in r.iter().enumerate() {
        let mut cur = vec![i + 1; h.len() + 1];
        for (j, hw) in h.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(rw != hw))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[h.len()] as f64 / r.len().max(1) as f64
}

#[test]
fn wer_counts_substitutions_insertions_and_deletions() {
    assert_eq!(
        wer("ask not what your country", "ask not what your country"),
        0.0
    );
    assert!((wer("a b c d", "a x c") - 0.5).abs() < 1e-9);
    assert!((wer("a b", "a b c d") - 1.0).abs() < 1e-9);
}
