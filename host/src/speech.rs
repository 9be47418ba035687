//! The clip's transcript: embedded subtitles when the media has a text subtitle stream,
//! otherwise Whisper on the audio, gated by a voice-activity detector.
//!
//! Whisper invents text where nobody speaks ("Thank you.", "(upbeat music)"), so three gates
//! stand between it and the transcript:
//! 1. Silero VAD finds the stretches of speech. Audio without any is not decoded at all, and
//!    windows start at the next stretch of speech, so silence and music cost little.
//! 2. Whisper's own no-speech probability (> 0.6 together with a mean log-probability < −1
//!    marks a window silent, as in the reference implementation).
//! 3. A segment must overlap detected speech for at least a third of its length, and a
//!    segment that is only a sound annotation (`[Music]`, `(applause)`, `♪`) is dropped.
//!
//! Segment times are then tightened to the detected speech they overlap, which keeps them
//! within a frame or two of where the voice starts and stops.

pub mod ct2;
pub mod decoder;
pub mod subtitles;
pub mod vad;
pub mod whisper;

use std::path::{Path, PathBuf};

use crate::plugins::bindings::TranscriptLine;

/// Longest audio transcribed (the longest clip accepted).
pub const MAX_SECONDS: usize = 180;
/// Share of a segment that must overlap detected speech.
const MIN_SPEECH_SHARE: f64 = 1.0 / 3.0;
/// VAD probability that starts speech.
const VAD_THRESHOLD: f32 = 0.5;
/// Windows start this long before detected speech.
const LEAD_IN_SECS: f64 = 0.3;

/// Where the transcript came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Subtitles,
    Speech,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Subtitles => "subtitles",
            Self::Speech => "speech",
        }
    }
}

/// The model folders below the models directory (see `scripts/fetch-models`).
#[derive(Debug, Clone)]
pub struct ModelPaths {
    pub whisper: PathBuf,
    pub vad: PathBuf,
    pub embedder: PathBuf,
}

impl ModelPaths {
    pub fn under(dir: &Path) -> Self {
        Self {
            whisper: dir.join("whisper-tiny.en"),
            vad: dir.join("silero-vad").join("silero_vad_16k.safetensors"),
            embedder: dir.join("all-MiniLM-L6-v2"),
        }
    }
}

pub struct Speech {
    whisper: whisper::WhisperModel,
    vad: vad::SileroVad,
}

impl Speech {
    /// # Errors
    /// A model file missing or malformed; the message names it and `scripts/fetch-models`.
    pub fn load(paths: &ModelPaths) -> anyhow::Result<Self> {
        Ok(Self {
            whisper: whisper::WhisperModel::load(&paths.whisper)?,
            vad: vad::SileroVad::load(&paths.vad).map_err(|e| {
                anyhow::anyhow!("{}: {e} (run scripts/fetch-models)", paths.vad.display())
            })?,
        })
    }

    /// Names the models, for provenance.
    pub fn model_id(&self) -> String {
        format!("{}+silero-vad", self.whisper.id)
    }

    /// Speech regions of 16 kHz mono `pcm`.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn speech_regions(&self, pcm: &[f32]) -> anyhow::Result<Vec<vad::Region>> {
        Ok(vad::regions(&self.vad.probabilities(pcm)?, VAD_THRESHOLD))
    }

    /// Transcribes 16 kHz mono `pcm` (at most [`MAX_SECONDS`]). CPU-bound: call it from a
    /// blocking thread.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn transcribe(&self, pcm: &[f32]) -> anyhow::Result<Vec<TranscriptLine>> {
        let pcm = &pcm[..pcm.len().min(MAX_SECONDS * vad::SAMPLE_RATE)];
        let regions = self.speech_regions(pcm)?;
        self.transcribe_regions(pcm, &regions)
    }

    /// Transcribes `pcm` where `regions` (from [`Speech::speech_regions`] on the same audio)
    /// found speech.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn transcribe_regions(
        &self,
        pcm: &[f32],
        regions: &[vad::Region],
    ) -> anyhow::Result<Vec<TranscriptLine>> {
        let pcm = &pcm[..pcm.len().min(MAX_SECONDS * vad::SAMPLE_RATE)];
        Ok(self
            .transcribe_scored(pcm, regions)?
            .into_iter()
            .map(|(line, _)| line)
            .collect())
    }

    /// [`Speech::transcribe_regions`] with each line's confidence (see [`gate_scored`]), over
    /// all of `pcm`: the caller bounds its length (the service at [`MAX_SECONDS`], the local
    /// commands at their `--max-duration`).
    ///
    /// # Errors
    /// Tensor errors.
    pub fn transcribe_scored(
        &self,
        pcm: &[f32],
        regions: &[vad::Region],
    ) -> anyhow::Result<Vec<(TranscriptLine, f32)>> {
        if regions.is_empty() {
            return Ok(Vec::new());
        }
        let skip_to = |t: f64| {
            regions.iter().find(|r| r.end > t + 0.1).map(|r| {
                if r.start - LEAD_IN_SECS > t {
                    r.start - LEAD_IN_SECS
                } else {
                    t
                }
            })
        };
        let segments = self.whisper.transcribe(pcm, &skip_to)?;
        Ok(gate_scored(&segments, regions))
    }
}

/// The clip's transcript and a provenance note of where it came from: a text subtitle stream
/// when the media has one, else Whisper on the audio (at most [`MAX_SECONDS`]); no audio, no
/// transcript.
///
/// # Errors
/// A sentence: decoding or transcription failed, or `speech` is `None` for a clip that
/// needs it.
pub async fn transcript_of(
    media: &Path,
    probe: &crate::media::probe::ProbeInfo,
    duration_sec: f64,
    speech: Option<std::sync::Arc<Speech>>,
) -> Result<(Vec<TranscriptLine>, serde_json::Value), String> {
    use crate::media::decode::{self, DecodeSpec};
    let max_secs = duration_sec.min(MAX_SECONDS as f64);
    if let Some(lines) = subtitle_lines(media, probe, max_secs).await {
        return Ok((
            lines,
            serde_json::json!({"source": Source::Subtitles.as_str()}),
        ));
    }
    if !probe.has_audio {
        return Ok((Vec::new(), serde_json::json!({"source": "none"})));
    }
    let Some(model) = speech else {
        return Err("transcription: this process has no speech model".into());
    };
    let spec = DecodeSpec::default();
    let max_samples = (max_secs.ceil() as usize) * spec.sample_rate as usize;
    let pcm = decode::read_audio(media, spec, max_samples)
        .await
        .map_err(|e| format!("decoding audio for transcription: {e}"))?;
    let id = model.model_id();
    let lines = tokio::task::spawn_blocking(move || model.transcribe(&pcm))
        .await
        .map_err(|e| format!("transcription: {e}"))?
        .map_err(|e| format!("transcription: {e:#}"))?;
    Ok((
        lines,
        serde_json::json!({"source": Source::Speech.as_str(), "model": id}),
    ))
}

/// The lines of the first text subtitle stream, when the media has one that parses to lines.
async fn subtitle_lines(
    media: &Path,
    probe: &crate::media::probe::ProbeInfo,
    max_secs: f64,
) -> Option<Vec<TranscriptLine>> {
    use crate::media::decode::{self, DecodeSpec};
    if !probe.has_subtitles {
        return None;
    }
    match decode::read_subtitles(media, DecodeSpec::default(), subtitles::MAX_BYTES).await {
        Ok(text) => Some(subtitles::parse_srt(&text, max_secs)).filter(|l| !l.is_empty()),
        // Bitmap subtitles cannot become text: transcribe the audio instead.
        Err(e) => {
            tracing::info!("subtitle stream not usable, transcribing instead: {e}");
            None
        }
    }
}

/// What the clip's sound says: where the voice is and what it said.
#[derive(Debug, Clone, Default)]
pub struct Heard {
    /// Speech regions found by voice-activity detection (empty without audio).
    pub regions: Vec<vad::Region>,
    pub lines: Vec<TranscriptLine>,
    /// One confidence per line, 0..1: Whisper's (see [`gate_scored`]); 1 for subtitle cues,
    /// which a person wrote.
    pub confidence: Vec<f32>,
    /// Where the lines came from, for provenance (as [`transcript_of`] reports it).
    pub source: serde_json::Value,
}

/// Voice activity and the transcript of the first `duration_sec` seconds of a clip, decoding
/// its audio once (the caller bounds `duration_sec`: the service's clips are at most
/// [`MAX_SECONDS`]): subtitle lines when the media has text subtitles, else Whisper on the
/// detected speech. CPU-bound parts run on blocking threads.
///
/// # Errors
/// A sentence: decoding or a model failed.
pub async fn hear(
    media: &Path,
    probe: &crate::media::probe::ProbeInfo,
    duration_sec: f64,
    speech: std::sync::Arc<Speech>,
    normalise_dbfs: Option<f64>,
) -> Result<Heard, String> {
    use crate::media::decode::{self, DecodeSpec};
    let max_secs = duration_sec;
    let subtitles = subtitle_lines(media, probe, max_secs).await;
    if !probe.has_audio {
        return Ok(match subtitles {
            Some(lines) => Heard {
                regions: Vec::new(),
                confidence: vec![1.0; lines.len()],
                lines,
                source: serde_json::json!({"source": Source::Subtitles.as_str()}),
            },
            None => Heard {
                source: serde_json::json!({"source": "none"}),
                ..Heard::default()
            },
        });
    }
    let spec = DecodeSpec::default();
    let max_samples = (max_secs.ceil() as usize) * spec.sample_rate as usize;
    let mut pcm = decode::read_audio(media, spec, max_samples)
        .await
        .map_err(|e| format!("decoding audio for speech: {e}"))?;
    tokio::task::spawn_blocking(move || {
        // The voice gate and Whisper hear the track at the model's level, as the audio kernels
        // do, so playback gain moves neither the speech regions nor the words.
        if let Some(target) = normalise_dbfs {
            crate::media::loudness::normalise(&mut pcm, spec.sample_rate as usize, target);
        }
        let regions = speech
            .speech_regions(&pcm)
            .map_err(|e| format!("voice activity: {e:#}"))?;
        let (scored, source) = match subtitles {
            Some(lines) => (
                lines.into_iter().map(|l| (l, 1.0)).collect(),
                serde_json::json!({"source": Source::Subtitles.as_str()}),
            ),
            None => (
                speech
                    .transcribe_scored(&pcm, &regions)
                    .map_err(|e| format!("transcription: {e:#}"))?,
                serde_json::json!({"source": Source::Speech.as_str(), "model": speech.model_id()}),
            ),
        };
        let (lines, confidence) = scored.into_iter().unzip();
        Ok(Heard {
            regions,
            lines,
            confidence,
            source,
        })
    })
    .await
    .map_err(|e| format!("speech: {e}"))?
}

impl Speech {
    /// Whisper on every window with no voice-activity gate: the segments it would emit
    /// (only sound annotations dropped). For the benchmark's baseline and for comparisons.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn transcribe_ungated(&self, pcm: &[f32]) -> anyhow::Result<Vec<TranscriptLine>> {
        let pcm = &pcm[..pcm.len().min(MAX_SECONDS * vad::SAMPLE_RATE)];
        let segments = self.whisper.transcribe(pcm, &Some)?;
        Ok(segments
            .into_iter()
            .filter(|s| !is_annotation(&s.text))
            .map(|s| TranscriptLine {
                start_sec: round2(s.start),
                end_sec: round2(s.end),
                text: s.text,
            })
            .collect())
    }
}

/// Applies the overlap and annotation gates and tightens times to detected speech.
pub fn gate(segments: &[whisper::Segment], regions: &[vad::Region]) -> Vec<TranscriptLine> {
    gate_scored(segments, regions)
        .into_iter()
        .map(|(line, _)| line)
        .collect()
}

/// [`gate`], keeping each line's confidence: `exp` of its window's mean token log-probability
/// (Whisper's own measure of how sure it is of the text, 0..1).
pub fn gate_scored(
    segments: &[whisper::Segment],
    regions: &[vad::Region],
) -> Vec<(TranscriptLine, f32)> {
    let mut out: Vec<(TranscriptLine, f32)> = Vec::new();
    for s in segments {
        let text = s.text.trim();
        if is_annotation(text) {
            continue;
        }
        let length = (s.end - s.start).max(0.1);
        if vad::overlap(regions, s.start, s.end.max(s.start + 0.1)) / length < MIN_SPEECH_SHARE {
            continue;
        }
        let touching: Vec<&vad::Region> = regions
            .iter()
            .filter(|r| r.end > s.start && r.start < s.end)
            .collect();
        let (mut start, mut end) = (s.start, s.end);
        if let (Some(first), Some(last)) = (touching.first(), touching.last()) {
            start = start.max(first.start);
            end = end.min(last.end).max(start);
        }
        // Whisper can repeat a window's last line at the next window's start.
        if out
            .last()
            .is_some_and(|(l, _)| l.text == text && f64::from(l.end_sec) >= start - 1.0)
        {
            continue;
        }
        out.push((
            TranscriptLine {
                start_sec: round2(start),
                end_sec: round2(end),
                text: text.to_owned(),
            },
            s.avg_logprob.min(0.0).exp() as f32,
        ));
    }
    out
}

fn round2(v: f64) -> f32 {
    ((v * 100.0).round() / 100.0) as f32
}

/// Lines made only of these are dropped: they are what Whisper hears in music, breathing and
/// effects ("You", "Hmm."), and they carry nothing a quote could use.
const FILLERS: [&str; 13] = [
    "hmm", "hm", "mm", "mmm", "mhm", "uh", "um", "ah", "oh", "huh", "eh", "you", "ooh",
];

/// Text that only describes sound (bracketed or parenthesised notes, music symbols,
/// punctuation) or is only filler sounds.
pub fn is_annotation(text: &str) -> bool {
    let mut depth = 0i32;
    let mut words = String::new();
    for c in text.chars() {
        match c {
            '[' | '(' | '*' => depth += 1,
            ']' | ')' => depth -= 1,
            '♪' | '♫' | '♬' | '♩' => {}
            c if depth <= 0 && c.is_alphanumeric() => words.extend(c.to_lowercase()),
            _ if depth <= 0 => words.push(' '),
            _ => {}
        }
    }
    words.split_whitespace().all(|w| FILLERS.contains(&w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use whisper::Segment;

    fn seg(start: f64, end: f64, text: &str) -> Segment {
        Segment {
            start,
            end,
            text: text.into(),
            avg_logprob: -0.2,
            no_speech_prob: 0.01,
        }
    }

    #[test]
    fn annotations_are_recognised() {
        assert!(is_annotation("[Music]"));
        assert!(is_annotation("(upbeat music)"));
        assert!(is_annotation("♪ ♪"));
        assert!(is_annotation(" . . ."));
        assert!(is_annotation("Hmm."));
        assert!(is_annotation("You"));
        assert!(is_annotation("Oh, uh..."));
        assert!(!is_annotation("Thank you."));
        assert!(!is_annotation("Oh no, you did it"));
        assert!(!is_annotation("(laughs) That was great"));
    }

    #[test]
    fn the_gate_drops_text_outside_speech_and_tightens_times() {
        let regions = [vad::Region {
            start: 5.2,
            end: 9.0,
        }];
        let lines = gate(
            &[
                seg(0.0, 4.0, "Thank you."),
                seg(4.8, 9.6, "Hello there."),
                seg(9.6, 12.0, "[Music]"),
            ],
            &regions,
        );
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].text, "Hello there.");
        assert!((lines[0].start_sec - 5.2).abs() < 1e-6);
        assert!((lines[0].end_sec - 9.0).abs() < 1e-6);
    }
}
