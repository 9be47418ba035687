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
//!
//! **Which recogniser.** An English-only model cannot say that it hears another language: on
//! 64 s of Japanese conversation Whisper tiny.en wrote two English lines nobody said ("working
//! as she takes the", "premium kernel."). So the multilingual Whisper base first identifies the
//! language on the first window of detected speech (its language token, one decoder step);
//! English is then transcribed by tiny.en (as before, and about twice as fast as base), any
//! other language by base in that language. A transcript is never in a language other than the
//! one heard.

pub mod ct2;
pub mod decoder;
pub mod memory;
pub mod script;
pub mod subtitles;
pub mod text_language;
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
/// Seconds of audio the language identifier reads, from just before the first speech:
/// Whisper's full window, the one it was trained on. Until 2026-11-27 it read 10 s (the
/// encoder reading only those frames, 3.4 times cheaper; on the speech bench's three clips
/// the same answers). On the language battery's 48 synthetic non-English voices 10 s misheard
/// 11 (8 as Latin) and 30 s 6, and no clip heard right at 10 s went wrong at 30 s. The cost is
/// one 30 s encoder pass per clip with speech: 2.1 s against 0.7 s for Whisper base on the
/// 2-core CI machine.
pub const IDENTIFY_SECS: f64 = 30.0;
/// Chooses where Whisper runs, once at start-up, from `BRAINSCAN_WHISPER_ON` (`device`,
/// `cpu` or `auto`; see [`crate::placement`]). On a CPU adapter `auto` keeps Whisper on the
/// CPU: the device bench measures the kernels 30 to 49 times slower there
/// (docs/transcripts.md).
///
/// # Errors
/// A setting other than `device`, `cpu` or `auto`.
pub fn whisper_on_device(adapter: &wgpu::AdapterInfo) -> anyhow::Result<bool> {
    crate::placement::from_env("BRAINSCAN_WHISPER_ON", adapter)
}

/// Windows start this long before detected speech.
const LEAD_IN_SECS: f64 = 0.3;

/// Transcript lines, each with its confidence (see [`gate_scored`]).
pub type ScoredLines = Vec<(TranscriptLine, f32)>;

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
    /// The English recogniser (Whisper tiny.en).
    pub whisper: PathBuf,
    /// The multilingual recogniser and language identifier (Whisper base).
    pub whisper_multilingual: PathBuf,
    pub vad: PathBuf,
    /// The English sentence embedder (all-MiniLM-L6-v2).
    pub embedder: PathBuf,
    /// The multilingual sentence embedder (multilingual-e5-small, 4-bit).
    pub multilingual_embedder: PathBuf,
}

impl ModelPaths {
    pub fn under(dir: &Path) -> Self {
        Self {
            whisper: dir.join("whisper-tiny.en"),
            whisper_multilingual: dir.join("whisper-base"),
            vad: dir.join("silero-vad").join("silero_vad_16k.safetensors"),
            embedder: dir.join("all-MiniLM-L6-v2"),
            multilingual_embedder: dir.join("multilingual-e5-small"),
        }
    }
}

pub struct Speech {
    /// Transcribes English.
    whisper: whisper::WhisperModel,
    /// Identifies the language, and transcribes every language but English.
    multilingual: whisper::WhisperModel,
    vad: vad::SileroVad,
    /// The last transcripts made, by the audio they were made from ([`memory`]).
    memory: memory::Memory,
}

/// The language a clip's speech was heard in, for provenance and for what may read its words.
#[derive(Debug, Clone, PartialEq)]
pub struct Language {
    /// Whisper's language code (`en`, `ja`, …).
    pub code: String,
    /// Its probability among the languages the identifier knows, on the first window of
    /// detected speech (Whisper); for subtitles, whatlang's confidence in the text's language.
    pub probability: f32,
    /// The model that transcribed it, or [`text_language::SUBTITLES`].
    pub transcribed_by: String,
    /// Lines the recogniser wrote and the speech stage dropped because they held letters of a
    /// script the language is not written in ([`script::foreign_letters`]).
    pub foreign_script_lines: usize,
}

impl Language {
    /// Whether the clip's words are English, the one language the semantic model reads.
    pub fn is_english(&self) -> bool {
        self.code == "en"
    }

    /// Which sentence model reads the meaning of speech in this language.
    #[must_use]
    pub fn meaning_reader(&self) -> MeaningReader {
        if self.is_english() {
            MeaningReader::English
        } else if crate::embed::e5::reads(&self.code) {
            MeaningReader::Multilingual
        } else {
            MeaningReader::None
        }
    }
}

/// The sentence model that reads the meaning of a transcript for the semantic features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeaningReader {
    /// all-MiniLM-L6-v2, the model's own: English words, and subtitles whose language is not
    /// identified, taken as written.
    English,
    /// multilingual-e5-small on axes anchored in five languages (`inference::multilingual`).
    Multilingual,
    /// Neither reads this language: the semantic features stay 0.
    None,
}

impl Speech {
    /// # Errors
    /// A model file missing or malformed; the message names it and `scripts/fetch-models`.
    pub fn load(paths: &ModelPaths) -> anyhow::Result<Self> {
        Self::load_with(paths, None)
    }

    /// [`Speech::load`] with both Whisper models exactly where told: on `device`, or on the
    /// CPU for `None`. Workers decide with [`whisper_on_device`] first; the benches load both
    /// to compare them in one run.
    ///
    /// # Errors
    /// As [`Speech::load`], or the device refusing the weights.
    pub fn load_with(
        paths: &ModelPaths,
        device: Option<whisper::DeviceHandle<'_>>,
    ) -> anyhow::Result<Self> {
        let multilingual = whisper::WhisperModel::load_on(&paths.whisper_multilingual, device)?;
        anyhow::ensure!(
            multilingual.is_multilingual(),
            "{} is an English-only model; the language identifier must be multilingual",
            paths.whisper_multilingual.display()
        );
        Ok(Self {
            whisper: whisper::WhisperModel::load_on(&paths.whisper, device)?,
            multilingual,
            vad: vad::SileroVad::load(&paths.vad).map_err(|e| {
                anyhow::anyhow!("{}: {e} (run scripts/fetch-models)", paths.vad.display())
            })?,
            memory: memory::Memory::new(memory::DEFAULT_ENTRIES),
        })
    }

    /// These models remembering at most `entries` transcripts by their audio (0: none), for
    /// [`hear`] to reuse ([`memory`]).
    #[must_use]
    pub fn remembering(mut self, entries: u64) -> Self {
        self.memory = memory::Memory::new(entries);
        self
    }

    /// How many scans reused a remembered transcript ([`memory::Memory::reused`]).
    #[must_use]
    pub fn transcripts_reused(&self) -> u64 {
        self.memory.reused()
    }

    /// [`Speech::transcribe_scored`], remembered by the audio and regions it reads: a track
    /// heard before (another cut of the same ad) is not transcribed again.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn transcribe_remembered(
        &self,
        pcm: &[f32],
        regions: &[vad::Region],
    ) -> anyhow::Result<memory::Transcript> {
        self.memory
            .recall_or(pcm, regions, || self.transcribe_scored(pcm, regions))
    }

    /// Where Whisper runs: the adapter's name, or `cpu`.
    #[must_use]
    pub fn computed_on(&self) -> String {
        self.whisper.device_name().unwrap_or("cpu").to_owned()
    }

    /// Names the models, for provenance.
    pub fn model_id(&self) -> String {
        format!("{}+{}+silero-vad", self.whisper.id, self.multilingual.id)
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
        Ok(self.transcribe_with_language(pcm)?.0)
    }

    /// [`Speech::transcribe`], with the language the speech was heard in (`None` without
    /// speech).
    ///
    /// # Errors
    /// Tensor errors.
    pub fn transcribe_with_language(
        &self,
        pcm: &[f32],
    ) -> anyhow::Result<(Vec<TranscriptLine>, Option<Language>)> {
        let pcm = &pcm[..pcm.len().min(MAX_SECONDS * vad::SAMPLE_RATE)];
        let regions = self.speech_regions(pcm)?;
        let (scored, language) = self.transcribe_scored(pcm, &regions)?;
        Ok((scored.into_iter().map(|(l, _)| l).collect(), language))
    }

    /// The transcript's provenance when it came from speech: the models, and the language
    /// heard (absent when no speech was detected) with its probability, the model that
    /// transcribed it, and whether the semantic model read the words' meaning.
    pub fn provenance(&self, language: Option<&Language>) -> serde_json::Value {
        let mut out = serde_json::json!({
            "source": Source::Speech.as_str(),
            "model": self.model_id(),
            "computed_on": self.computed_on(),
        });
        if let Some(l) = language {
            describe_language(
                &mut out,
                l,
                "The speech is transcribed in the language heard",
            );
        }
        out
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
            .0
            .into_iter()
            .map(|(line, _)| line)
            .collect())
    }

    /// The language of the speech in `pcm`, identified by the multilingual model on the
    /// [`IDENTIFY_SECS`] that start just before the first detected speech; `None` without
    /// speech.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn identify_language(
        &self,
        pcm: &[f32],
        regions: &[vad::Region],
    ) -> anyhow::Result<Option<whisper::Detected>> {
        Ok(self
            .identify_language_keeping(pcm, regions)?
            .map(|(detected, _)| detected))
    }

    /// [`Speech::identify_language`], and the encoded window, for the multilingual model's
    /// transcription to use again ([`whisper::HeardWindow`]).
    fn identify_language_keeping(
        &self,
        pcm: &[f32],
        regions: &[vad::Region],
    ) -> anyhow::Result<Option<(whisper::Detected, whisper::HeardWindow)>> {
        let Some(first) = regions.first() else {
            return Ok(None);
        };
        self.multilingual.detect_language_keeping(
            pcm,
            (first.start - LEAD_IN_SECS).max(0.0),
            IDENTIFY_SECS,
        )
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
    ) -> anyhow::Result<(ScoredLines, Option<Language>)> {
        let Some((detected, heard)) = self.identify_language_keeping(pcm, regions)? else {
            return Ok((Vec::new(), None));
        };
        // English goes to tiny.en (faster, and the recogniser the English tests measure);
        // every other language to the multilingual model, in that language.
        let (model, code) = if detected.code == "en" {
            (&self.whisper, None)
        } else {
            (&self.multilingual, Some(detected.code.as_str()))
        };
        let skip_to = |t: f64| {
            regions.iter().find(|r| r.end > t + 0.1).map(|r| {
                if r.start - LEAD_IN_SECS > t {
                    r.start - LEAD_IN_SECS
                } else {
                    t
                }
            })
        };
        // The multilingual model's own encoding of the identification window serves again as
        // its first transcription window where the two are the same audio.
        let heard = code.is_some().then_some(heard);
        let segments = model.transcribe_from(pcm, &skip_to, code, heard)?;
        let (lines, foreign): (Vec<_>, Vec<_>) = gate_scored(&segments, regions)
            .into_iter()
            .partition(|(line, _)| !script::foreign_letters(&line.text, &detected.code));
        let language = Language {
            code: detected.code.clone(),
            probability: detected.probability,
            transcribed_by: model.id.clone(),
            foreign_script_lines: foreign.len(),
        };
        Ok((lines, Some(language)))
    }
}

/// The language, how sure its identification is, what produced the lines, and which sentence
/// model reads their meaning, into a provenance object. `origin` starts the note's sentence.
fn describe_language(out: &mut serde_json::Value, l: &Language, origin: &str) {
    out["language"] = l.code.clone().into();
    out["language_probability"] =
        serde_json::json!((f64::from(l.probability) * 1000.0).round() / 1000.0);
    out["transcribed_by"] = l.transcribed_by.clone().into();
    if l.foreign_script_lines > 0 {
        out["foreign_script_lines_dropped"] = l.foreign_script_lines.into();
    }
    let reader = l.meaning_reader();
    out["meaning_read"] = (reader != MeaningReader::None).into();
    match reader {
        MeaningReader::English => {
            out["meaning_read_by"] = crate::embed::MODEL_ID.into();
        }
        MeaningReader::Multilingual => {
            out["meaning_read_by"] = crate::embed::e5::MODEL_ID.into();
            out["note"] = format!(
                "{origin} ({}). Its meaning is read by a multilingual sentence model (multilingual-e5-small) on semantic axes anchored in English, French, German, Spanish and Japanese, put on the English model's scale by equating the two models' readings of those sentences.",
                l.code
            )
            .into();
        }
        MeaningReader::None => {
            out["note"] = format!(
                "{origin} ({}). Its meaning is not read: neither sentence model was trained on this language, so the lenses follow the voice, not what it says.",
                l.code
            )
            .into();
        }
    }
    if l.foreign_script_lines > 0 {
        let before = out["note"].as_str().unwrap_or_default();
        out["note"] = format!(
            "{before} {} line(s) the recogniser wrote were dropped: they held letters of a script {} is not written in, which is not something said.",
            l.foreign_script_lines, l.code
        )
        .trim_start()
        .into();
    }
}

/// Subtitle lines, the language they are in and their provenance: the language their text
/// is in when it tells, else the one the stream's `tag` names (the probe's
/// `subtitle_language`), else none.
fn subtitled(
    lines: Vec<TranscriptLine>,
    tag: Option<&str>,
) -> (Vec<TranscriptLine>, Option<Language>, serde_json::Value) {
    let mut source = serde_json::json!({"source": Source::Subtitles.as_str()});
    let language = match text_language::identify(&lines) {
        Some(l) => {
            describe_language(
                &mut source,
                &l,
                "The subtitles are written in a language identified from their text",
            );
            Some(l)
        }
        None => match tag.and_then(text_language::from_tag) {
            Some(l) => {
                describe_language(
                    &mut source,
                    &l,
                    "The subtitles are in the language their stream's tag names (their text is too short to identify it)",
                );
                // A tag is a declaration: no probability was measured.
                if let Some(o) = source.as_object_mut() {
                    o.remove("language_probability");
                }
                Some(l)
            }
            None => {
                source["meaning_read_by"] = crate::embed::MODEL_ID.into();
                source["note"] = "The subtitles' language could not be identified from their text (too little of it) and their stream names none; they are read as written by the English sentence model.".into();
                None
            }
        },
    };
    (lines, language, source)
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
        let (lines, _, source) = subtitled(lines, probe.subtitle_language.as_deref());
        return Ok((lines, source));
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
    tokio::task::spawn_blocking(move || {
        let (lines, language) = model
            .transcribe_with_language(&pcm)
            .map_err(|e| format!("transcription: {e:#}"))?;
        Ok((lines, model.provenance(language.as_ref())))
    })
    .await
    .map_err(|e| format!("transcription: {e}"))?
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
    /// The language the speech was heard in (Whisper), or subtitles are written in (their
    /// text, [`text_language`]); `None` without words, or for subtitles whose language the
    /// text does not tell.
    pub language: Option<Language>,
}

impl Heard {
    /// Which sentence model reads the lines' meaning: the English model for English speech or
    /// subtitles (and subtitles of an unidentified language, taken as written), the
    /// multilingual one for words in a language it was trained on, none otherwise.
    #[must_use]
    pub fn meaning_reader(&self) -> MeaningReader {
        self.language
            .as_ref()
            .map_or(MeaningReader::English, Language::meaning_reader)
    }
}

/// Voice activity and the transcript of the first `duration_sec` seconds of a clip (the caller
/// bounds `duration_sec`: the service's clips are at most [`MAX_SECONDS`]): subtitle lines
/// when the media has text subtitles, else Whisper on the detected speech. `decoded` is the
/// clip's audio track already decoded at 16 kHz, as the qualia scan decodes it once for every
/// stage; without it the track is decoded here. CPU-bound parts run on blocking threads.
///
/// # Errors
/// A sentence: decoding or a model failed.
pub async fn hear(
    media: &Path,
    probe: &crate::media::probe::ProbeInfo,
    duration_sec: f64,
    speech: std::sync::Arc<Speech>,
    normalise_dbfs: Option<f64>,
    decoded: Option<std::sync::Arc<Vec<f32>>>,
) -> Result<Heard, String> {
    use crate::media::decode::{self, DecodeSpec};
    let max_secs = duration_sec;
    let subtitles = subtitle_lines(media, probe, max_secs).await;
    if !probe.has_audio {
        return Ok(match subtitles {
            Some(lines) => {
                let (lines, language, source) =
                    subtitled(lines, probe.subtitle_language.as_deref());
                Heard {
                    regions: Vec::new(),
                    confidence: vec![1.0; lines.len()],
                    lines,
                    source,
                    language,
                }
            }
            None => Heard {
                source: serde_json::json!({"source": "none"}),
                ..Heard::default()
            },
        });
    }
    let spec = DecodeSpec::default();
    let max_samples = (max_secs.ceil() as usize) * spec.sample_rate as usize;
    let mut pcm = match decoded {
        Some(track) => track[..track.len().min(max_samples)].to_vec(),
        None => decode::read_audio(media, spec, max_samples)
            .await
            .map_err(|e| format!("decoding audio for speech: {e}"))?,
    };
    let subtitle_tag = probe.subtitle_language.clone();
    tokio::task::spawn_blocking(move || {
        // The voice gate and Whisper hear the track at the model's level, as the audio kernels
        // do, so playback gain moves neither the speech regions nor the words.
        if let Some(target) = normalise_dbfs {
            crate::media::loudness::normalise(&mut pcm, spec.sample_rate as usize, target);
        }
        let regions = speech
            .speech_regions(&pcm)
            .map_err(|e| format!("voice activity: {e:#}"))?;
        let (scored, source, language) = match subtitles {
            Some(lines) => {
                let (lines, language, source) = subtitled(lines, subtitle_tag.as_deref());
                (
                    lines.into_iter().map(|l| (l, 1.0)).collect(),
                    source,
                    language,
                )
            }
            None => {
                let (scored, language) = speech
                    .transcribe_remembered(&pcm, &regions)
                    .map_err(|e| format!("transcription: {e:#}"))?
                    .as_ref()
                    .clone();
                let source = speech.provenance(language.as_ref());
                (scored, source, language)
            }
        };
        let (lines, confidence) = scored.into_iter().unzip();
        Ok(Heard {
            regions,
            lines,
            confidence,
            source,
            language,
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
