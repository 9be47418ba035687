//! `cargo bench -p brainscan --bench speech`: seconds of audio transcribed per second of
//! wall time on this machine (the baseline is real time, 1.0), for
//! - `jfk.wav` (11 s of speech) and the same speech four times over 45 s (two windows);
//! - the Big Buck Bunny trailer (music, no speech) with the voice-activity gate, and without
//!   it (Whisper decoding every window, as an ungated transcriber would) in the same run;
//! - the Silero VAD alone.
//!
//! Needs `scripts/fetch-models` and `scripts/fetch-test-media`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use brainscan::media::decode::{DecodeSpec, read_audio};
use brainscan::speech::{ModelPaths, Speech};

fn media() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(root.join("scripts/fetch-test-media"))
        .output()
        .expect("scripts/fetch-test-media");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

async fn pcm(path: &Path) -> Vec<f32> {
    read_audio(path, DecodeSpec::default(), 180 * 16_000)
        .await
        .expect("decode")
}

fn rate(label: &str, samples: usize, f: impl FnOnce() -> usize) {
    let secs = samples as f64 / 16_000.0;
    let t = Instant::now();
    let lines = f();
    let wall = t.elapsed().as_secs_f64();
    println!(
        "{label:<44} {secs:>6.1} s audio in {wall:>6.2} s: {:>6.1} audio-s/s ({lines} lines)",
        secs / wall
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let speech = Speech::load(&ModelPaths::under(
        &brainscan::config::default_models_dir_from_env(),
    ))?;
    let dir = media();
    let jfk = pcm(&dir.join("jfk.wav")).await;
    let mut long = Vec::new();
    for _ in 0..4 {
        long.extend_from_slice(&jfk);
        long.extend(std::iter::repeat_n(0.0, 16_000));
    }
    let music = pcm(&dir.join("trailer_bbb.mp4")).await;
    // Warm-up (allocations, page faults).
    speech.transcribe(&jfk[..16_000 * 3])?;
    rate("jfk.wav (speech)", jfk.len(), || {
        speech.transcribe(&jfk).map_or(0, |l| l.len())
    });
    rate("4 x jfk.wav, 45 s (two windows)", long.len(), || {
        speech.transcribe(&long).map_or(0, |l| l.len())
    });
    rate("trailer_bbb.mp4 (music), gated", music.len(), || {
        speech.transcribe(&music).map_or(0, |l| l.len())
    });
    rate(
        "trailer_bbb.mp4 (music), ungated baseline",
        music.len(),
        || speech.transcribe_ungated(&music).map_or(0, |l| l.len()),
    );
    rate("Silero VAD alone on the trailer", music.len(), || {
        speech.speech_regions(&music).map_or(0, |r| r.len())
    });
    Ok(())
}
