//! `cargo bench -p brainscan --bench speech`: seconds of audio transcribed per second of
//! wall time on this machine (the baseline is real time, 1.0), for
//! - `jfk.wav` (11 s of speech) and the same speech four times over 45 s (two windows), each
//!   with its word error rate against the known text (the decoder must not change it);
//! - 60 s of dense speech (espeak-ng reading a passage: the latency bench's speech clip), the
//!   case issue 19 sets at ≥ 10 audio-s/s (≤ 6 s for the minute) on this 2-core machine;
//! - the Big Buck Bunny trailer (music, no speech) with the voice-activity gate, and without
//!   it (Whisper decoding every window, as an ungated transcriber would) in the same run;
//! - the Silero VAD alone;
//! - the log-mel spectrogram of `jfk.wav` and of the dense minute, against candle's in the
//!   same run (the same bits, checked there);
//! - the temperature fallback's five sampled temperatures on one window, decoded one after
//!   another (the baseline: the reference's order) and as the one batch the fallback now
//!   decodes, on the 4 x JFK window (where the repetition sends the decoder through every
//!   temperature) and on the trailer's first window (music);
//! - what the language identification adds (issue 46): identifying the language of `jfk.wav`,
//!   the Japanese clip and the espeak-ng passage with Whisper base on windows of 30, 15, 10 and
//!   6 s (the service reads 10 s: `speech::IDENTIFY_SECS`), `jfk.wav` transcribed by base against tiny.en (the baseline:
//!   why English stays with tiny.en), the 64 s Japanese clip as it is now transcribed (base, in
//!   Japanese) against tiny.en alone (the previous behaviour, which invented English), and the
//!   resident memory base adds;
//! - what reading the meaning of other languages adds (issue 46, part 3): multilingual-e5-small's
//!   resident memory, building its five-language axes (once per process), and the language
//!   features of the Japanese clip's transcript read by e5 against the same lines read by
//!   all-MiniLM-L6-v2 (the baseline, same run).
//!
//! - Whisper on the wgpu device against the CPU (issue 45), both loaded in this run: the
//!   language identified (Whisper base, 30 s) and the transcript, on `jfk.wav` and, on a real
//!   GPU, the dense minute; with the adapter's name. On a CPU adapter (lavapipe) only `jfk.wav`:
//!   the device path is tens of times slower there, which is why the service keeps the CPU.
//!
//! `BENCH_ONLY=device` runs only that last comparison.
//!
//! Needs `scripts/fetch-models`, `scripts/fetch-test-media` and espeak-ng.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use brainscan::media::decode::{DecodeSpec, read_audio};
use brainscan::speech::whisper::WhisperModel;
use brainscan::speech::{ModelPaths, Speech};

#[path = "../../tests/speech/support.rs"]
#[allow(dead_code)]
mod support;

const JFK: &str = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.";

/// What espeak-ng reads for the dense-speech case (the latency bench's passage, six times).
const PASSAGE: &str = "The committee met on Tuesday to discuss the new library. Members agreed that the \
    reading room should open earlier in the morning, and that the children's section needs \
    more light. The treasurer reported that the budget allows two new staff positions. \
    After a short debate, the plan was approved, and work will begin in the spring. ";

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

/// The log-mel spectrogram each transcription computes (its audio plus the 30 s of silence
/// Whisper's windows append), by candle's `pcm_to_mel` (the baseline, same run) and by
/// `brainscan_mel::log_mel`, which returns the same bits. The cost does not depend on the filter
/// bank's values, so a bank of Whisper's shape stands in for the model file's.
fn mel(label: &str, pcm: &[f32]) {
    use candle_transformers::models::whisper as m;
    let mut padded = pcm.to_vec();
    padded.resize(pcm.len() + m::N_SAMPLES, 0.0);
    let filters: Vec<f32> = (0..80 * 201).map(|i| (i % 97) as f32 / 97.0).collect();
    let config: m::Config = serde_json::from_value(serde_json::json!({
        "num_mel_bins": 80, "max_source_positions": 1500, "d_model": 384,
        "encoder_attention_heads": 6, "encoder_layers": 4, "vocab_size": 51864,
        "max_target_positions": 448, "decoder_attention_heads": 6, "decoder_layers": 4
    }))
    .expect("config");
    let t = Instant::now();
    let theirs = m::audio::pcm_to_mel(&config, &padded, &filters);
    let baseline = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let ours = brainscan_mel::log_mel(&padded, &filters, 80);
    let wall = t.elapsed().as_secs_f64();
    let same = ours
        .iter()
        .zip(&theirs)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    println!(
        "{label:<44} log-mel {:>7.1} ms, candle's {:>7.1} ms: {:>5.1}x faster, same bits: {same}",
        wall * 1e3,
        baseline * 1e3,
        baseline / wall
    );
}

/// Times a transcription and prints its word error rate against `reference`.
fn rate_with_wer(label: &str, speech: &Speech, pcm: &[f32], reference: &str) {
    let mut text = String::new();
    rate(label, pcm.len(), || {
        let lines = speech.transcribe(pcm).expect("transcribe");
        text = lines
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        lines.len()
    });
    println!("{:<44} WER {:.3}", "", support::wer(reference, &text));
}

/// 60 s of espeak-ng reading [`PASSAGE`] six times over, at 16 kHz.
async fn dense_speech() -> Vec<f32> {
    let dir = tempfile::tempdir().expect("tmp");
    let wav = dir.path().join("passage.wav");
    let status = Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "160", "-w"])
        .arg(&wav)
        .arg(PASSAGE.repeat(6))
        .status()
        .expect("espeak-ng");
    assert!(status.success(), "espeak-ng failed");
    let mut pcm = pcm(&wav).await;
    pcm.truncate(60 * 16_000);
    pcm
}

/// Times the fallback's sampled temperatures on the first window of `pcm`, one by one and
/// batched, and checks that both give the same candidates.
fn fallback(label: &str, whisper: &WhisperModel, pcm: &[f32]) {
    let c = whisper
        .compare_fallback_batching(pcm)
        .expect("fallback comparison");
    let same = c.one_by_one.iter().zip(&c.batched).all(|(a, b)| a.0 == b.0);
    let tokens: usize = c.one_by_one[1..].iter().map(|(t, _)| t.len()).sum();
    println!(
        "{label:<44} one by one {:>5.2} s, batched {:>5.2} s: ratio {:.2} ({tokens} tokens; same candidates: {same})",
        c.one_by_one_secs,
        c.batched_secs,
        c.batched_secs / c.one_by_one_secs
    );
}

/// The resident set of this process (KiB), from `/proc/self/status`.
fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Seconds `f` takes, and its result.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let out = f();
    (t.elapsed().as_secs_f64(), out)
}

/// Issue 46's costs: language identification, base against tiny.en on English, the Japanese
/// clip now and before, and base's resident memory.
async fn languages(paths: &ModelPaths, speech: &Speech, whisper: &WhisperModel, jfk: &[f32]) {
    let before = resident_kib();
    let base = WhisperModel::load(&paths.whisper_multilingual).expect("whisper base");
    println!(
        "{:<44} {:>6.0} MiB resident",
        "Whisper base loaded (a second copy)",
        (resident_kib().saturating_sub(before)) as f64 / 1024.0
    );
    let japanese = pcm(&media().join("japanese.wav")).await;
    let dense = dense_speech().await;
    mel("60 s dense speech", &dense);
    for (name, audio) in [
        ("jfk.wav", jfk),
        ("japanese.wav", &japanese[..]),
        ("espeak-ng passage", &dense[..]),
    ] {
        let regions = speech.speech_regions(audio).expect("vad");
        let from = regions.first().map_or(0.0, |r| (r.start - 0.3).max(0.0));
        for window in [30.0, 15.0, 10.0, 6.0] {
            let (secs, detected) = timed(|| base.detect_language(audio, from, window));
            let detected = detected.expect("identify").expect("multilingual");
            println!(
                "{:<44} {secs:>6.2} s: {} (p {:.3})",
                format!("language identification, {name}, {window} s"),
                detected.code,
                detected.probability
            );
        }
    }
    reused_window(&base).await;
    let (tiny_secs, tiny) = timed(|| whisper.transcribe_in(jfk, &Some, None).expect("tiny"));
    let (base_secs, base_text) =
        timed(|| base.transcribe_in(jfk, &Some, Some("en")).expect("base"));
    println!(
        "{:<44} tiny.en {tiny_secs:>5.2} s (WER {:.3}), base {base_secs:>5.2} s (WER {:.3}): ratio {:.2}",
        "jfk.wav, English, ungated",
        support::wer(JFK, &joined_segments(&tiny)),
        support::wer(JFK, &joined_segments(&base_text)),
        base_secs / tiny_secs
    );
    let (now_secs, (lines, language)) = timed(|| {
        speech
            .transcribe_with_language(&japanese)
            .expect("transcribe")
    });
    let (before_secs, invented) = timed(|| {
        let regions = speech.speech_regions(&japanese).expect("vad");
        brainscan::speech::gate(
            &whisper.transcribe(&japanese, &Some).expect("tiny"),
            &regions,
        )
    });
    println!(
        "{:<44} now {now_secs:>5.2} s ({} lines, {:?}), tiny.en alone {before_secs:>5.2} s ({} lines: {:?}): ratio {:.2}",
        "japanese.wav, 64 s",
        lines.len(),
        language.map(|l| l.code),
        invented.len(),
        invented.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
        now_secs / before_secs
    );
    meaning(
        paths,
        &speech.speech_regions(&japanese).expect("vad"),
        &lines,
    );
}

/// A short ad in Spanish (speech from its start, under 30 s): identification and transcription
/// by Whisper base with the identification window's encoding used again (the service's path)
/// against encoding it twice (the path before), and whether the two transcripts are the same.
async fn reused_window(base: &WhisperModel) {
    let dir = tempfile::tempdir().expect("tmp");
    let wav = dir.path().join("es.wav");
    let status = Command::new("espeak-ng")
        .args(["-v", "es", "-s", "150", "-w"])
        .arg(&wav)
        .arg("Date prisa, esta oferta termina esta noche. Solo quedan tres en existencia. Llama ahora y paga la mitad. No te lo pierdas.")
        .status()
        .expect("espeak-ng");
    assert!(status.success(), "espeak-ng failed");
    let audio = pcm(&wav).await;
    // One untimed pass first, as a running worker has done.
    base.detect_language(&audio, 0.0, 30.0).expect("identify");
    let mut runs = [Vec::new(), Vec::new()];
    let mut texts = [Vec::new(), Vec::new()];
    for _ in 0..3 {
        for (i, reuse) in [false, true].into_iter().enumerate() {
            let (secs, segments) = timed(|| {
                let (_, heard) = base
                    .detect_language_keeping(&audio, 0.0, 30.0)
                    .expect("identify")
                    .expect("multilingual");
                base.transcribe_from(&audio, &Some, Some("es"), reuse.then_some(heard))
                    .expect("transcribe")
            });
            runs[i].push(secs);
            texts[i] = segments;
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (twice, once) = (median(&mut runs[0]), median(&mut runs[1]));
    println!(
        "{:<44} encoded twice {twice:>5.2} s, once {once:>5.2} s: ratio {:.2} (same segments: {})",
        format!(
            "Spanish ad, {:.1} s, identify + transcribe",
            audio.len() as f64 / 16_000.0
        ),
        once / twice,
        texts[0] == texts[1]
    );
}

/// e5's memory, its axes' one-off cost, and the language features of `lines` by e5 against
/// MiniLM.
fn meaning(
    paths: &ModelPaths,
    regions: &[brainscan::speech::vad::Region],
    lines: &[brainscan::plugins::bindings::TranscriptLine],
) {
    use brainscan::inference::language;
    let english = brainscan::embed::Embedder::load(&paths.embedder).expect("MiniLM");
    let model_axes = language::semantic_axes(&english).expect("axes");
    let before = resident_kib();
    let e5 =
        brainscan::embed::e5::MultilingualEmbedder::load(&paths.multilingual_embedder).expect("e5");
    println!(
        "{:<44} {:>6.0} MiB resident",
        "multilingual-e5-small loaded",
        (resident_kib().saturating_sub(before)) as f64 / 1024.0
    );
    let (axes_secs, axes) = timed(|| {
        brainscan::inference::multilingual::axes(&e5, &english, &model_axes).expect("axes")
    });
    println!(
        "{:<44} {axes_secs:>6.2} s (once per process)",
        "e5's five-language axes built"
    );
    let seconds = 64;
    let (e5_secs, _) =
        timed(|| language::compute(seconds, regions, lines, &[], Some(&e5), &axes).expect("e5"));
    let (minilm_secs, _) = timed(|| {
        language::compute(seconds, regions, lines, &[], Some(&english), &model_axes)
            .expect("MiniLM")
    });
    println!(
        "{:<44} e5 {e5_secs:>5.2} s, MiniLM on the same lines {minilm_secs:>5.2} s (baseline): ratio {:.2}",
        "language features, japanese.wav's lines",
        e5_secs / minilm_secs
    );
}

fn joined_segments(segments: &[brainscan::speech::whisper::Segment]) -> String {
    segments
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let paths = ModelPaths::under(&brainscan::config::default_models_dir_from_env());
    let speech = Speech::load(&paths)?;
    if std::env::var("BENCH_ONLY").is_ok_and(|v| v == "device") {
        let jfk = pcm(&media().join("jfk.wav")).await;
        return on_the_device(&paths, &speech, &jfk).await;
    }
    let whisper = WhisperModel::load(&paths.whisper)?;
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
    mel("jfk.wav (11 s)", &jfk);
    rate_with_wer("jfk.wav (speech)", &speech, &jfk, JFK);
    rate_with_wer(
        "4 x jfk.wav, 45 s (two windows)",
        &speech,
        &long,
        &[JFK; 4].join(" "),
    );
    let dense = dense_speech().await;
    rate("60 s dense speech (espeak-ng passage)", dense.len(), || {
        speech.transcribe(&dense).map_or(0, |l| l.len())
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
    fallback("fallback temperatures, 4 x jfk window", &whisper, &long);
    fallback("fallback temperatures, trailer window", &whisper, &music);
    languages(&paths, &speech, &whisper, &jfk).await;
    on_the_device(&paths, &speech, &jfk).await?;
    Ok(())
}

/// Whisper on the qualia device against the CPU (`speech`), same clips, same run.
async fn on_the_device(paths: &ModelPaths, speech: &Speech, jfk: &[f32]) -> anyhow::Result<()> {
    let gpu = brainscan::inference::gpu::GpuContext::new()?;
    let handle = brainscan::speech::whisper::DeviceHandle {
        device: gpu.device(),
        queue: gpu.queue(),
        adapter: &gpu.adapter_info,
        precision: None,
    };
    let (load, device) = timed(|| Speech::load_with(paths, Some(handle)));
    let device = device?;
    println!(
        "Whisper on {} ({:?}): both models to the device in {load:.2} s",
        gpu.adapter_info.name, gpu.adapter_info.device_type
    );
    let mut clips = vec![("jfk.wav", jfk.to_vec(), JFK.to_owned())];
    if gpu.adapter_info.device_type != wgpu::DeviceType::Cpu {
        clips.push(("60 s dense speech", dense_speech().await, PASSAGE.repeat(6)));
    }
    for (name, audio, reference) in clips {
        let regions = speech.speech_regions(&audio)?;
        let mut row = Vec::new();
        let mut texts = Vec::new();
        for (path, s) in [("cpu", speech), ("device", &device)] {
            // One untimed pass first (kernels, allocations), as a running worker has done.
            s.transcribe(&audio[..16_000 * 3])?;
            let (id_secs, heard) = timed(|| s.identify_language(&audio, &regions));
            let heard = heard?.map_or_else(|| "none".to_owned(), |d| d.code);
            let (secs, lines) = timed(|| s.transcribe(&audio));
            let text = lines?
                .iter()
                .map(|l| l.text.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            row.push((id_secs, secs));
            println!(
                "{:<44} {path:<6} language {heard} in {id_secs:>6.2} s, transcript {secs:>6.2} s (WER {:.3} against the script)",
                format!("{name}, Whisper"),
                support::wer(&reference, &text)
            );
            texts.push(text);
        }
        println!(
            "{:<44} device / cpu: identification {:.2}, transcript {:.2}; the two transcripts differ by WER {:.3}",
            "",
            row[1].0 / row[0].0,
            row[1].1 / row[0].1,
            support::wer(&texts[0], &texts[1])
        );
    }
    Ok(())
}
