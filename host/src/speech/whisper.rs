//! Whisper decoding: 30-second windows over the log-mel spectrogram, timestamp tokens,
//! temperature fallback, and the seek rule that makes consecutive windows overlap.
//!
//! The network is `candle_transformers`' Whisper; the weights come from a CTranslate2 file
//! through [`super::ct2`]. The decoding follows OpenAI's reference `transcribe()`:
//! - every window is 3000 mel frames (the audio is padded with 30 s of silence first);
//! - the timestamp rules keep timestamps paired and increasing and let the first one be at
//!   most 1 s into the window;
//! - when a window ends inside a segment, the next window starts at the last complete
//!   segment's end, so no words are cut at a window edge (this is the overlap handling);
//! - a window is re-decoded at a higher temperature when its text is repetitive
//!   (compression ratio > 2.4) or unlikely (mean log-probability < −1), and is silence when
//!   the no-speech probability is > 0.6 and the text is unlikely.

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::whisper::{self as m, Config};
use rand::SeedableRng;
use rand::distr::Distribution;
use tokenizers::Tokenizer;

use super::ct2::{self, Ct2Model};
use super::decoder::{Attended, CachedDecoder, Pass};
use brainscan_whisper_gpu as gpu;

/// Mel frames per window and seconds per frame.
const N_FRAMES: usize = m::N_FRAMES;
const FRAME_SECS: f64 = m::HOP_LENGTH as f64 / m::SAMPLE_RATE as f64;
/// Seconds per timestamp token (two mel frames).
const TIMESTAMP_SECS: f64 = 0.02;
/// Text tokens decoded per window at most (half the text context, as the reference).
const MAX_TOKENS: usize = 224;
const TEMPERATURES: [f64; 6] = m::TEMPERATURES;

/// One decoded stretch of speech, in seconds from the start of the audio.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub start: f64,
    pub end: f64,
    pub text: String,
    /// Mean log-probability of the window's tokens.
    pub avg_logprob: f64,
    /// The window's probability of "no speech" at its first token.
    pub no_speech_prob: f64,
}

struct SpecialTokens {
    sot: u32,
    eot: u32,
    no_timestamps: u32,
    no_speech: u32,
    timestamp_begin: u32,
    /// `<|transcribe|>` for multilingual models; `None` for `.en` models, whose prompt is
    /// `<|startoftranscript|>` alone.
    transcribe: Option<u32>,
    /// The language tokens of a multilingual model, by code (`en`, `ja`, …), from the
    /// config's `lang_ids`; empty for `.en` models.
    languages: Vec<(String, u32)>,
}

/// A loaded model. Cheap to clone per transcription: tensors are shared.
pub struct WhisperModel {
    /// Candle's Whisper: its encoder runs each window; its decoder (which re-reads the whole
    /// token sequence at every step) is kept only as the reference the cached one is tested
    /// against. The two share their tensors.
    config: Config,
    /// The network on the CPU; `None` when the model runs on a device, so its weights are
    /// held once (on the device), not twice.
    cpu: Option<Cpu>,
    tokenizer: Tokenizer,
    filters: Vec<f32>,
    tokens: SpecialTokens,
    /// Never sampled: the config's suppress list plus the special tokens that are not
    /// timestamps or end-of-text.
    suppress: Vec<u32>,
    /// Suppressed at the first text token: a space and end-of-text.
    suppress_begin: Vec<u32>,
    pub id: String,
    /// The same checkpoint on a wgpu device, when the speech stage runs there: it then encodes
    /// and decodes every window, and the CPU network serves only the parity hooks.
    device: Option<OnDevice>,
    /// Encoder passes run so far (the speech stage's largest cost), for the bench and the
    /// test that a reused window is not encoded twice.
    encodes: AtomicU64,
}

/// The window a language was identified on, encoded, kept for [`WhisperModel::transcribe_from`].
///
/// Why: identifying the language costs one encoder pass over Whisper's 30 s window, as much
/// as transcribing that window. Where the identification window is the transcription's first
/// window, bit for bit (speech from the start of a clip of at most 30 s: most ads), the
/// transcription uses this encoding instead of computing it again. The mel values are
/// compared, not assumed, so the transcript is the same as without it.
pub struct HeardWindow {
    /// The model that encoded it (its address): another model's encoding is never used.
    model: usize,
    /// The `(1, n_mels, frames)` log-mel window's values.
    mel: Vec<f32>,
    window: Window,
}

struct Cpu {
    model: m::model::Whisper,
    decoder: CachedDecoder,
}

struct OnDevice {
    whisper: gpu::DeviceWhisper,
    /// The adapter's name, for provenance.
    adapter: String,
}

/// A device for Whisper: the qualia core's, shared.
#[derive(Clone, Copy)]
pub struct DeviceHandle<'a> {
    pub device: &'a wgpu::Device,
    pub queue: &'a wgpu::Queue,
    pub adapter: &'a wgpu::AdapterInfo,
    /// How the weights are held; `None` takes f16 where the device has `shader-f16`.
    pub precision: Option<gpu::Precision>,
}

/// One window's encoder output, projected for every layer's cross-attention, where the model
/// runs.
enum Window {
    Cpu(Attended),
    Device(gpu::Attended),
}

/// A decoding pass over a [`Window`].
enum Decoding<'a> {
    Cpu(Pass<'a>),
    Device(gpu::Pass<'a>),
}

#[derive(serde::Deserialize)]
struct SideConfig {
    #[serde(default)]
    suppress_ids: Vec<u32>,
    #[serde(default)]
    suppress_ids_begin: Vec<u32>,
    /// The language tokens of a multilingual model (CTranslate2's `config.json`).
    #[serde(default)]
    lang_ids: Vec<u32>,
}

/// The language a window was heard in: Whisper's language token with the highest probability
/// one decoder step after `<|startoftranscript|>` (the reference's `detect_language`).
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    /// The language code of the token (`en`, `ja`, …).
    pub code: String,
    /// Its probability among the model's language tokens.
    pub probability: f32,
}

fn token(t: &Tokenizer, s: &str) -> anyhow::Result<u32> {
    t.token_to_id(s)
        .with_context(|| format!("tokenizer.json has no {s} token"))
}

impl WhisperModel {
    /// Loads `model.bin` (CTranslate2), `tokenizer.json`, `config.json` (suppress lists) and
    /// `mel_{n}.npy` (the filter bank) from `dir`.
    ///
    /// # Errors
    /// A missing or malformed file, with its name.
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        Self::load_on(dir, None)
    }

    /// [`WhisperModel::load`], and with `on` a copy of the weights on that wgpu device, where
    /// every window is then encoded and decoded.
    ///
    /// # Errors
    /// As [`WhisperModel::load`], or the device refusing the weights or the kernels.
    pub fn load_on(dir: &Path, on: Option<DeviceHandle<'_>>) -> anyhow::Result<Self> {
        let device = Device::Cpu;
        let bin = dir.join("model.bin");
        let size = std::fs::metadata(&bin)
            .with_context(|| format!("{} (run scripts/fetch-models)", bin.display()))?
            .len();
        if size > ct2::MAX_FILE_BYTES {
            anyhow::bail!("{} is larger than 4 GiB", bin.display());
        }
        let parsed = Ct2Model::parse(std::fs::read(&bin)?)?;
        let shape = ct2::whisper_shape(&parsed)?;
        let tensors = ct2::whisper_tensors(&parsed, &shape, &device)?;
        drop(parsed);
        let side: SideConfig = serde_json::from_slice(
            &std::fs::read(dir.join("config.json")).context("whisper config.json")?,
        )
        .context("whisper config.json")?;
        let config = Config {
            num_mel_bins: shape.n_mels,
            max_source_positions: shape.audio_ctx,
            d_model: shape.d_model,
            encoder_attention_heads: shape.encoder_heads,
            encoder_layers: shape.encoder_layers,
            vocab_size: shape.vocab,
            max_target_positions: shape.text_ctx,
            decoder_attention_heads: shape.decoder_heads,
            decoder_layers: shape.decoder_layers,
            suppress_tokens: side.suppress_ids.clone(),
        };
        let on_device = match on {
            Some(h) => {
                let dims = gpu::Dims {
                    n_mels: shape.n_mels,
                    n_state: shape.d_model,
                    audio_ctx: shape.audio_ctx,
                    audio_heads: shape.encoder_heads,
                    audio_layers: shape.encoder_layers,
                    text_ctx: shape.text_ctx,
                    text_heads: shape.decoder_heads,
                    text_layers: shape.decoder_layers,
                    vocab: shape.vocab,
                };
                let weights = |name: &str| -> Result<gpu::Tensor, String> {
                    let t = tensors
                        .get(name)
                        .ok_or_else(|| format!("{name} is missing"))?;
                    let values = t
                        .flatten_all()
                        .and_then(|f| f.to_dtype(candle_core::DType::F32))
                        .and_then(|f| f.to_vec1::<f32>())
                        .map_err(|e| format!("{name}: {e}"))?;
                    Ok((t.dims().to_vec(), values))
                };
                let whisper = match h.precision {
                    Some(p) => gpu::DeviceWhisper::with_precision(
                        h.device.clone(),
                        h.queue.clone(),
                        dims,
                        &weights,
                        p,
                    )?,
                    None => {
                        gpu::DeviceWhisper::new(h.device.clone(), h.queue.clone(), dims, &weights)?
                    }
                };
                let precision = match whisper.precision() {
                    gpu::Precision::F16 => "f16",
                    gpu::Precision::F32 => "f32",
                };
                Some(OnDevice {
                    whisper,
                    adapter: format!("{} ({precision} weights)", h.adapter.name),
                })
            }
            None => None,
        };
        let vb = VarBuilder::from_tensors(tensors, m::DTYPE, &device);
        let cpu = if on_device.is_none() {
            Some(Cpu {
                decoder: CachedDecoder::load(&vb.pp("model.decoder"), &config)?,
                model: m::model::Whisper::load(&vb, config.clone())?,
            })
        } else {
            None
        };
        drop(vb);
        let tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| anyhow::anyhow!("whisper tokenizer.json: {e}"))?;
        let filters = mel_filters(dir, shape.n_mels)?;
        let multilingual = shape.vocab >= 51865;
        let sot = token(&tokenizer, m::SOT_TOKEN)?;
        let no_timestamps = token(&tokenizer, m::NO_TIMESTAMPS_TOKEN)?;
        let tokens = SpecialTokens {
            sot,
            eot: token(&tokenizer, m::EOT_TOKEN)?,
            no_timestamps,
            no_speech: m::NO_SPEECH_TOKENS
                .iter()
                .find_map(|s| tokenizer.token_to_id(s))
                .context("tokenizer.json has no no-speech token")?,
            timestamp_begin: no_timestamps + 1,
            transcribe: if multilingual {
                Some(token(&tokenizer, m::TRANSCRIBE_TOKEN)?)
            } else {
                None
            },
            languages: if multilingual {
                languages(&tokenizer, &side.lang_ids)?
            } else {
                Vec::new()
            },
        };
        if tokens.timestamp_begin as usize >= shape.vocab {
            anyhow::bail!("the vocabulary has no timestamp tokens");
        }
        let mut suppress = side.suppress_ids;
        suppress.extend(sot..tokens.timestamp_begin);
        suppress.retain(|&t| t != tokens.eot && (t as usize) < shape.vocab);
        let suppress_begin = if side.suppress_ids_begin.is_empty() {
            vec![220, tokens.eot]
        } else {
            side.suppress_ids_begin
        };
        let id = format!(
            "whisper-{}x{}{}",
            shape.decoder_layers,
            shape.d_model,
            if multilingual { "" } else { ".en" }
        );
        Ok(Self {
            config,
            cpu,
            tokenizer,
            filters,
            tokens,
            suppress,
            suppress_begin,
            id,
            device: on_device,
            encodes: AtomicU64::new(0),
        })
    }

    /// The adapter that runs this model and how it holds the weights (`NVIDIA H100 80GB HBM3
    /// (f16 weights)`), or `None` on the CPU.
    #[must_use]
    pub fn device_name(&self) -> Option<&str> {
        self.device.as_ref().map(|d| d.adapter.as_str())
    }

    fn cpu(&self) -> anyhow::Result<&Cpu> {
        self.cpu
            .as_ref()
            .with_context(|| format!("{} runs on the device, not on the CPU", self.id))
    }

    /// Encodes a `(1, n_mels, frames)` mel window and projects it for cross-attention.
    fn window(&self, mel: &Tensor) -> anyhow::Result<Window> {
        self.encodes.fetch_add(1, Ordering::Relaxed);
        match &self.device {
            Some(d) => {
                let frames = mel.dim(2)?;
                let values = mel.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
                let encoded = d.whisper.encode(&values, frames)?;
                Ok(Window::Device(d.whisper.attend(&encoded)?))
            }
            None => {
                let cpu = self.cpu()?;
                let mut encoder = cpu.model.encoder.clone();
                Ok(Window::Cpu(
                    cpu.decoder.attend(&encoder.forward(mel, true)?)?,
                ))
            }
        }
    }

    fn start<'a>(&self, window: &'a Window, candidates: usize) -> anyhow::Result<Decoding<'a>> {
        Ok(match (window, &self.device) {
            (Window::Cpu(a), _) => Decoding::Cpu(self.cpu()?.decoder.pass(a, candidates)),
            (Window::Device(a), Some(d)) => Decoding::Device(d.whisper.pass(a, candidates)?),
            (Window::Device(_), None) => anyhow::bail!("a device window without a device"),
        })
    }

    /// Feeds `fed` (the same count for every live candidate) and returns the logits of the
    /// first candidate's first new position when `first` is set, and of every live
    /// candidate's last new position.
    fn step(
        &self,
        decoding: &mut Decoding<'_>,
        fed: &[u32],
        first: bool,
    ) -> anyhow::Result<gpu::StepLogits> {
        match (decoding, &self.device) {
            (Decoding::Cpu(pass), _) => {
                let decoder = &self.cpu()?.decoder;
                let hidden = decoder.feed(pass, fed)?;
                Ok(gpu::StepLogits {
                    first: first.then(|| decoder.logits(&hidden, 0)).transpose()?,
                    last: decoder.last_logits(&hidden)?,
                })
            }
            (Decoding::Device(pass), Some(d)) => Ok(d.whisper.feed(pass, fed, first)?),
            (Decoding::Device(_), None) => anyhow::bail!("a device pass without a device"),
        }
    }

    fn retain(decoding: &mut Decoding<'_>, rows: &[usize]) -> anyhow::Result<()> {
        match decoding {
            Decoding::Cpu(pass) => pass.retain(rows)?,
            Decoding::Device(pass) => pass.retain(rows)?,
        }
        Ok(())
    }

    /// Whether the model reads many languages (and so can tell which one it hears).
    pub fn is_multilingual(&self) -> bool {
        self.tokens.transcribe.is_some()
    }

    /// The codes of the languages the model can transcribe (empty for `.en` models).
    pub fn language_codes(&self) -> impl Iterator<Item = &str> {
        self.tokens.languages.iter().map(|(c, _)| c.as_str())
    }

    /// The decoder prompt: `<|startoftranscript|>`, then for a multilingual model the
    /// language's token (English when `None`) and `<|transcribe|>`.
    fn prompt(&self, language: Option<&str>) -> anyhow::Result<Vec<u32>> {
        let mut prompt = vec![self.tokens.sot];
        if let Some(transcribe) = self.tokens.transcribe {
            let code = language.unwrap_or("en");
            let (_, id) = self
                .tokens
                .languages
                .iter()
                .find(|(c, _)| c == code)
                .with_context(|| format!("the model has no language {code:?}"))?;
            prompt.extend([*id, transcribe]);
        } else if let Some(code) = language.filter(|c| *c != "en") {
            anyhow::bail!("{} reads English only, not {code:?}", self.id);
        }
        Ok(prompt)
    }

    /// The language heard in the `window_secs` (1 to 30) that start at `from_sec` of `pcm`, or
    /// `None` for an English-only model (it has no language tokens). One encoder pass over that
    /// window and one decoder step. A window shorter than Whisper's 30 s costs less (the encoder
    /// reads only its frames, as whisper.cpp's `audio_ctx` does); what that does to the answer is
    /// measured by the speech bench.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn detect_language(
        &self,
        pcm: &[f32],
        from_sec: f64,
        window_secs: f64,
    ) -> anyhow::Result<Option<Detected>> {
        Ok(self
            .detect_language_keeping(pcm, from_sec, window_secs)?
            .map(|(detected, _)| detected))
    }

    /// [`WhisperModel::detect_language`], and the encoded window, which
    /// [`WhisperModel::transcribe_from`] uses again where it is the first window transcribed.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn detect_language_keeping(
        &self,
        pcm: &[f32],
        from_sec: f64,
        window_secs: f64,
    ) -> anyhow::Result<Option<(Detected, HeardWindow)>> {
        if self.tokens.languages.is_empty() {
            return Ok(None);
        }
        let start = ((from_sec.max(0.0) * m::SAMPLE_RATE as f64) as usize).min(pcm.len());
        let end = pcm.len().min(start + m::N_SAMPLES);
        let (mel, _) = self.mel(&pcm[start..end])?;
        // An even number of frames: the encoder's second convolution has stride 2.
        let frames = ((window_secs.clamp(1.0, 30.0) / FRAME_SECS) as usize / 2 * 2).min(N_FRAMES);
        let window = mel.narrow(1, 0, frames)?.unsqueeze(0)?;
        let attended = self.window(&window)?;
        let mut pass = self.start(&attended, 1)?;
        let logits = self
            .step(&mut pass, &[self.tokens.sot], false)?
            .last
            .pop()
            .context("no logits")?;
        drop(pass);
        let scores: Vec<f32> = self
            .tokens
            .languages
            .iter()
            .map(|(_, id)| logits[*id as usize])
            .collect();
        let best = argmax(&scores) as usize;
        let probability = (scores[best] - log_sum_exp(&scores)).exp();
        let heard = HeardWindow {
            model: self.address(),
            mel: window.flatten_all()?.to_vec1::<f32>()?,
            window: attended,
        };
        Ok(Some((
            Detected {
                code: self.tokens.languages[best].0.clone(),
                probability,
            },
            heard,
        )))
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// How many encoder passes this model has run.
    #[must_use]
    pub fn encoder_passes(&self) -> u64 {
        self.encodes.load(Ordering::Relaxed)
    }

    /// Log-mel spectrogram of 16 kHz mono `pcm` followed by 30 s of silence, as
    /// `(n_mels, frames)` plus the number of frames that hold real audio.
    fn mel(&self, pcm: &[f32]) -> candle_core::Result<(Tensor, usize)> {
        let n_mels = self.config.num_mel_bins;
        let mut padded = Vec::with_capacity(pcm.len() + m::N_SAMPLES);
        padded.extend_from_slice(pcm);
        padded.resize(pcm.len() + m::N_SAMPLES, 0.0);
        let mel = brainscan_mel::log_mel(&padded, &self.filters, n_mels);
        let frames = mel.len() / n_mels;
        let content = pcm.len() / m::HOP_LENGTH;
        Ok((
            Tensor::from_vec(mel, (n_mels, frames), &Device::Cpu)?,
            content,
        ))
    }

    /// Transcribes `pcm`. `skip_to(t)` is asked at each window start for the next second at
    /// or after `t` worth decoding (the voice-activity gate); `None` ends the transcription.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn transcribe(
        &self,
        pcm: &[f32],
        skip_to: &dyn Fn(f64) -> Option<f64>,
    ) -> anyhow::Result<Vec<Segment>> {
        self.transcribe_in(pcm, skip_to, None)
    }

    /// [`WhisperModel::transcribe`] in `language` (a code the model has; `None` is English).
    ///
    /// # Errors
    /// Tensor errors, or a language the model does not read.
    pub fn transcribe_in(
        &self,
        pcm: &[f32],
        skip_to: &dyn Fn(f64) -> Option<f64>,
        language: Option<&str>,
    ) -> anyhow::Result<Vec<Segment>> {
        self.transcribe_from(pcm, skip_to, language, None)
    }

    /// [`WhisperModel::transcribe_in`], using `heard` (this model's encoding of the window the
    /// language was identified on) for the first window where that window's mel values are
    /// the same; otherwise it is dropped unused.
    ///
    /// # Errors
    /// Tensor errors, or a language the model does not read.
    pub fn transcribe_from(
        &self,
        pcm: &[f32],
        skip_to: &dyn Fn(f64) -> Option<f64>,
        language: Option<&str>,
        mut heard: Option<HeardWindow>,
    ) -> anyhow::Result<Vec<Segment>> {
        let prompt = self.prompt(language)?;
        let (mel, content_frames) = self.mel(pcm)?;
        let mut seek = 0usize;
        let mut segments = Vec::new();
        while seek < content_frames {
            // Jump over stretches without speech; start a little before the speech so the
            // first timestamp (at most 1 s in) can land on it.
            let Some(next) = skip_to(seek as f64 * FRAME_SECS) else {
                break;
            };
            let next_frame = ((next / FRAME_SECS).floor() as usize).max(seek);
            if next_frame >= content_frames {
                break;
            }
            seek = next_frame;
            let window_frames = N_FRAMES.min(content_frames - seek);
            let window = mel.narrow(1, seek, N_FRAMES)?.unsqueeze(0)?;
            let offset = seek as f64 * FRAME_SECS;
            let attended = match heard.take() {
                Some(h)
                    if h.model == self.address()
                        && h.mel == window.flatten_all()?.to_vec1::<f32>()? =>
                {
                    h.window
                }
                _ => self.window(&window)?,
            };
            let decoded = self.decode_with_fallback(&attended, &prompt, seek as u64)?;
            let silent = decoded.no_speech_prob > m::NO_SPEECH_THRESHOLD
                && decoded.avg_logprob < m::LOGPROB_THRESHOLD;
            let (found, advance) = self.segments(&decoded, offset, window_frames);
            if !silent {
                segments.extend(found.into_iter().map(|mut s| {
                    let limit = content_frames as f64 * FRAME_SECS;
                    s.end = s.end.min(limit);
                    s.start = s.start.min(s.end);
                    s
                }));
            }
            seek += advance.max(1);
        }
        Ok(segments)
    }

    /// The largest difference between the cached decoder's logits and candle's uncached
    /// reference decoder's, over every position of `tokens` fed one at a time after the
    /// prompt, on the first window of `pcm`. A test hook: the speech tests assert it is at
    /// rounding level on the real model.
    ///
    /// # Errors
    /// Tensor errors.
    #[doc(hidden)]
    pub fn decoder_disagreement(&self, pcm: &[f32], tokens: &[u32]) -> anyhow::Result<f32> {
        let cpu = self.cpu()?;
        let mut model = cpu.model.clone();
        let (mel, _) = self.mel(pcm)?;
        let window = mel.narrow(1, 0, N_FRAMES)?.unsqueeze(0)?;
        let features = model.encoder.forward(&window, true)?;
        let attended = cpu.decoder.attend(&features)?;
        let mut pass = cpu.decoder.pass(&attended, 1);
        let mut sequence = self.prompt(None)?;
        let mut worst = 0f32;
        let mut fed = sequence.clone();
        for (i, &next) in std::iter::once(&0).chain(tokens).enumerate() {
            if i > 0 {
                sequence.push(next);
                fed = vec![next];
            }
            let ours = cpu.decoder.feed(&mut pass, &fed)?;
            let ours = cpu.decoder.logits(&ours, fed.len() - 1)?;
            let input = Tensor::new(sequence.as_slice(), &Device::Cpu)?.unsqueeze(0)?;
            let hidden = model.decoder.forward(&input, &features, i == 0)?;
            let theirs = model
                .decoder
                .final_linear(&hidden.narrow(1, sequence.len() - 1, 1)?)?
                .flatten_all()?
                .to_vec1::<f32>()?;
            for (a, b) in ours.iter().zip(&theirs) {
                worst = worst.max((a - b).abs());
            }
        }
        Ok(worst)
    }

    /// How far this model on its device is from `on_cpu` (the same checkpoint on the CPU) on
    /// the first window of `pcm`: the encoder output, then the logits at every position of
    /// `tokens` fed one at a time after the prompt (both paths cached, as in decoding). A test
    /// hook for the device parity test.
    ///
    /// # Errors
    /// This model is not on a device or `on_cpu` not on the CPU, or a tensor or device error.
    #[doc(hidden)]
    pub fn device_disagreement(
        &self,
        on_cpu: &WhisperModel,
        pcm: &[f32],
        tokens: &[u32],
    ) -> anyhow::Result<DeviceParity> {
        let d = self
            .device
            .as_ref()
            .context("the model is not on a device")?;
        let cpu = on_cpu.cpu()?;
        let (mel, _) = self.mel(pcm)?;
        let window = mel.narrow(1, 0, N_FRAMES)?.unsqueeze(0)?;
        let mut encoder = cpu.model.encoder.clone();
        let features = encoder.forward(&window, true)?;
        let values = window.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        let encoded = d.whisper.encode(&values, N_FRAMES)?;
        let device_out = d.whisper.read_encoded(&encoded)?;
        let cpu_out = features.flatten_all()?.to_vec1::<f32>()?;
        let mut parity = DeviceParity::default();
        for (a, b) in cpu_out.iter().zip(&device_out) {
            parity.encoder_max_diff = parity.encoder_max_diff.max((a - b).abs());
            parity.encoder_max_abs = parity.encoder_max_abs.max(a.abs());
        }
        let cpu_window = Window::Cpu(cpu.decoder.attend(&features)?);
        let device_window = Window::Device(d.whisper.attend(&encoded)?);
        let mut cpu = on_cpu.start(&cpu_window, 1)?;
        let mut device = self.start(&device_window, 1)?;
        let prompt = self.prompt(None)?;
        let steps = std::iter::once(prompt).chain(tokens.iter().map(|&t| vec![t]));
        for fed in steps {
            let theirs = on_cpu.step(&mut cpu, &fed, false)?.last;
            let ours = self.step(&mut device, &fed, false)?.last;
            let (theirs, ours) = (&theirs[0], &ours[0]);
            for (a, b) in theirs.iter().zip(ours) {
                parity.logits_max_diff = parity.logits_max_diff.max((a - b).abs());
                parity.logits_max_abs = parity.logits_max_abs.max(a.abs());
            }
            parity.positions += 1;
            if argmax(theirs) == argmax(ours) {
                parity.same_argmax += 1;
            }
        }
        Ok(parity)
    }

    /// The first window of `pcm` decoded at every temperature of the fallback, one candidate at
    /// a time and then as the fallback does it (temperature 0 alone, the rest in one batch),
    /// with the seconds each way spent on the batched temperatures. A hook for the speech
    /// test (batching must change nothing) and the speech bench (what it saves).
    ///
    /// # Errors
    /// Tensor errors.
    #[doc(hidden)]
    pub fn compare_fallback_batching(&self, pcm: &[f32]) -> anyhow::Result<FallbackComparison> {
        let (mel, _) = self.mel(pcm)?;
        let window = mel.narrow(1, 0, N_FRAMES)?.unsqueeze(0)?;
        let attended = self.window(&window)?;
        let candidates: Vec<(f64, u64)> = TEMPERATURES
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i as u64))
            .collect();
        let summary = |d: Decoded| (d.tokens, d.avg_logprob);
        let prompt = self.prompt(None)?;
        let greedy = self.decode(&attended, &prompt, &candidates[..1])?;
        let started = std::time::Instant::now();
        let mut one_by_one: Vec<_> = greedy.into_iter().map(summary).collect();
        for c in &candidates[1..] {
            one_by_one.extend(
                self.decode(&attended, &prompt, std::slice::from_ref(c))?
                    .into_iter()
                    .map(summary),
            );
        }
        let one_by_one_secs = started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let rest = self.decode(&attended, &prompt, &candidates[1..])?;
        let batched_secs = started.elapsed().as_secs_f64();
        let mut batched = vec![one_by_one[0].clone()];
        batched.extend(rest.into_iter().map(summary));
        Ok(FallbackComparison {
            one_by_one,
            batched,
            one_by_one_secs,
            batched_secs,
        })
    }

    /// Splits a window's tokens at timestamp pairs; returns the segments and how many mel
    /// frames to advance (to the last complete segment when the window ends mid-segment).
    fn segments(&self, d: &Decoded, offset: f64, window_frames: usize) -> (Vec<Segment>, usize) {
        let tb = self.tokens.timestamp_begin;
        let toks = &d.tokens;
        let is_ts = |t: u32| t >= tb;
        let time = |t: u32| offset + f64::from(t - tb) * TIMESTAMP_SECS;
        let single_ending =
            toks.len() >= 2 && !is_ts(toks[toks.len() - 2]) && is_ts(toks[toks.len() - 1]);
        let consecutive: Vec<usize> = (1..toks.len())
            .filter(|&i| is_ts(toks[i]) && is_ts(toks[i - 1]))
            .collect();
        let make = |slice: &[u32], start: f64, end: f64| Segment {
            start,
            end,
            text: self.text(slice),
            avg_logprob: d.avg_logprob,
            no_speech_prob: d.no_speech_prob,
        };
        let mut out = Vec::new();
        if consecutive.is_empty() {
            let mut end = offset + window_frames as f64 * FRAME_SECS;
            if let Some(&last) = toks.iter().rev().find(|&&t| is_ts(t))
                && last != tb
            {
                end = time(last);
            }
            let start = toks
                .first()
                .filter(|&&t| is_ts(t))
                .map_or(offset, |&t| time(t));
            out.push(make(toks, start, end));
            return (out, window_frames);
        }
        let mut slices = consecutive;
        if single_ending {
            slices.push(toks.len());
        }
        let mut last = 0;
        for &cut in &slices {
            let slice = &toks[last..cut];
            if let (Some(&a), Some(&b)) = (slice.first(), slice.last())
                && is_ts(a)
                && is_ts(b)
            {
                out.push(make(slice, time(a), time(b)));
            }
            last = cut;
        }
        let advance = if single_ending {
            window_frames
        } else {
            // Resume at the last complete segment's end timestamp (2 frames per step).
            (toks[last - 1].saturating_sub(tb) as usize * 2).min(window_frames)
        };
        (out, advance)
    }

    fn text(&self, tokens: &[u32]) -> String {
        let text: Vec<u32> = tokens
            .iter()
            .copied()
            .filter(|&t| t < self.tokens.eot)
            .collect();
        self.tokenizer
            .decode(&text, true)
            .unwrap_or_default()
            .trim()
            .to_owned()
    }

    /// The reference's temperature fallback: the first decoding, in temperature order, that is
    /// silence or neither repetitive nor unlikely; else the last. Temperature 0 is decoded
    /// alone (most windows stop there); when it fails, the other temperatures are decoded as
    /// one batch and tried in order, which gives the same choice as decoding them one by one
    /// (each keeps its own seed) at the cost of one pass instead of up to five.
    fn decode_with_fallback(
        &self,
        attended: &Window,
        prompt: &[u32],
        seed: u64,
    ) -> anyhow::Result<Decoded> {
        let accept = |d: &Decoded| {
            let silent =
                d.no_speech_prob > m::NO_SPEECH_THRESHOLD && d.avg_logprob < m::LOGPROB_THRESHOLD;
            let bad = compression_ratio(&self.text(&d.tokens)) > m::COMPRESSION_RATIO_THRESHOLD
                || d.avg_logprob < m::LOGPROB_THRESHOLD;
            silent || !bad
        };
        let candidates: Vec<(f64, u64)> = TEMPERATURES
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, seed.wrapping_add(i as u64)))
            .collect();
        let (first, rest) = candidates.split_first().context("no temperatures")?;
        let greedy = self
            .decode(attended, prompt, std::slice::from_ref(first))?
            .pop()
            .context("no decoding")?;
        if accept(&greedy) || rest.is_empty() {
            return Ok(greedy);
        }
        let mut fallbacks = self.decode(attended, prompt, rest)?;
        let chosen = fallbacks
            .iter()
            .position(accept)
            .unwrap_or(fallbacks.len() - 1);
        Ok(fallbacks.swap_remove(chosen))
    }

    /// One decoding pass over a window's attended encoder output for each `(temperature,
    /// seed)` candidate, all in one batch: the prompt is fed once, then one token per step
    /// per candidate against the pass's key/value cache. A candidate that has ended leaves
    /// the batch.
    fn decode(
        &self,
        attended: &Window,
        prompt: &[u32],
        candidates: &[(f64, u64)],
    ) -> anyhow::Result<Vec<Decoded>> {
        let tk = &self.tokens;
        let prefix = prompt.len();
        let mut rows: Vec<Candidate> = candidates
            .iter()
            .map(|&(temperature, seed)| Candidate {
                temperature,
                rng: rand::rngs::StdRng::seed_from_u64(seed),
                tokens: prompt.to_vec(),
                sum_logprob: 0.0,
                no_speech_prob: 0.0,
                done: false,
            })
            .collect();
        let mut pass = self.start(attended, rows.len())?;
        for i in 0..MAX_TOKENS {
            let live: Vec<usize> = (0..rows.len()).filter(|&r| !rows[r].done).collect();
            if live.is_empty() {
                break;
            }
            let fed: Vec<u32> = if i == 0 {
                rows.iter().flat_map(|_| prompt.iter().copied()).collect()
            } else {
                live.iter()
                    .map(|&r| rows[r].tokens[rows[r].tokens.len() - 1])
                    .collect()
            };
            let gpu::StepLogits { first, last } = self.step(&mut pass, &fed, i == 0)?;
            if let Some(first) = first {
                // The no-speech probability is read at the start-of-transcript position (the
                // same for every candidate: they share the prompt).
                let p = f64::from(log_softmax(&first)[tk.no_speech as usize].exp());
                for r in &mut rows {
                    r.no_speech_prob = p;
                }
            }
            for (&row, mut logits) in live.iter().zip(last) {
                let r = &mut rows[row];
                self.apply_rules(&mut logits, &r.tokens[prefix..]);
                let next = r.sample(&logits);
                r.sum_logprob += f64::from(log_softmax(&logits)[next as usize]);
                r.tokens.push(next);
                r.done = next == tk.eot;
            }
            // The rows still decoding, by their place in this step's batch.
            let kept: Vec<usize> = (0..live.len()).filter(|&b| !rows[live[b]].done).collect();
            if kept.is_empty() {
                break;
            }
            Self::retain(&mut pass, &kept)?;
        }
        Ok(rows
            .into_iter()
            .map(|r| {
                let generated: Vec<u32> = r.tokens[prefix..]
                    .iter()
                    .copied()
                    .filter(|&t| t != tk.eot)
                    .collect();
                let n = (r.tokens.len() - prefix).max(1);
                Decoded {
                    avg_logprob: r.sum_logprob / n as f64,
                    tokens: generated,
                    no_speech_prob: r.no_speech_prob,
                }
            })
            .collect())
    }

    /// Suppression and OpenAI's timestamp rules, on the logits of the next token given the
    /// tokens `sampled` so far in this window.
    fn apply_rules(&self, logits: &mut [f32], sampled: &[u32]) {
        let tk = &self.tokens;
        let tb = tk.timestamp_begin as usize;
        let ninf = f32::NEG_INFINITY;
        for &t in &self.suppress {
            logits[t as usize] = ninf;
        }
        logits[tk.no_timestamps as usize] = ninf;
        if sampled.is_empty() {
            for &t in &self.suppress_begin {
                if let Some(l) = logits.get_mut(t as usize) {
                    *l = ninf;
                }
            }
        }
        let is_ts = |t: u32| t as usize >= tb;
        let last_ts = sampled.last().is_some_and(|&t| is_ts(t));
        let penultimate_ts = sampled.len() < 2 || is_ts(sampled[sampled.len() - 2]);
        if last_ts {
            if penultimate_ts {
                logits[tb..].fill(ninf);
            } else {
                logits[..tk.eot as usize].fill(ninf);
            }
        }
        if let Some(&last) = sampled.iter().rev().find(|&&t| is_ts(t)) {
            let floor = if last_ts && !penultimate_ts {
                last
            } else {
                last + 1
            } as usize;
            let end = floor.min(logits.len());
            logits[tb..end].fill(ninf);
        }
        if sampled.is_empty() {
            logits[..tb].fill(ninf);
            // The first timestamp is at most 1 s into the window.
            let max_initial = tb + (1.0 / TIMESTAMP_SECS).round() as usize + 1;
            if max_initial < logits.len() {
                logits[max_initial..].fill(ninf);
            }
        }
        // When timestamps together are likelier than any text token, take a timestamp.
        let logprobs = log_softmax(logits);
        let ts_logprob = log_sum_exp(&logprobs[tb..]);
        let max_text = logprobs[..tb]
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        if ts_logprob > max_text {
            logits[..tb].fill(ninf);
        }
    }
}

struct Decoded {
    /// Generated tokens without the prompt and end-of-text.
    tokens: Vec<u32>,
    avg_logprob: f64,
    no_speech_prob: f64,
}

/// What [`WhisperModel::device_disagreement`] measured.
#[doc(hidden)]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceParity {
    /// Largest absolute difference in the encoder output, and the largest absolute value.
    pub encoder_max_diff: f32,
    pub encoder_max_abs: f32,
    /// Largest absolute difference in any logit at any position, and the largest logit.
    pub logits_max_diff: f32,
    pub logits_max_abs: f32,
    /// Positions compared, and those where both paths pick the same most likely token.
    pub positions: usize,
    pub same_argmax: usize,
}

/// What [`WhisperModel::compare_fallback_batching`] found: each temperature's `(tokens, mean
/// log-probability)` decoded alone and in the fallback's batch, and the seconds the
/// temperatures after 0 took each way.
#[doc(hidden)]
#[derive(Debug)]
pub struct FallbackComparison {
    pub one_by_one: Vec<(Vec<u32>, f64)>,
    pub batched: Vec<(Vec<u32>, f64)>,
    pub one_by_one_secs: f64,
    pub batched_secs: f64,
}

/// One candidate of a batched decoding pass.
struct Candidate {
    temperature: f64,
    rng: rand::rngs::StdRng,
    /// The prompt and every token sampled so far.
    tokens: Vec<u32>,
    sum_logprob: f64,
    no_speech_prob: f64,
    done: bool,
}

impl Candidate {
    /// The next token: the most likely at temperature 0, else a draw from the tempered
    /// distribution (suppressed tokens have weight 0).
    fn sample(&mut self, logits: &[f32]) -> u32 {
        if self.temperature <= 0.0 {
            return argmax(logits);
        }
        let weights: Vec<f64> = logits
            .iter()
            .map(|&l| {
                if l.is_finite() {
                    (f64::from(l) / self.temperature).exp()
                } else {
                    0.0
                }
            })
            .collect();
        let max = weights.iter().copied().fold(0.0, f64::max);
        let weights: Vec<f64> = weights
            .iter()
            .map(|w| w / max.max(f64::MIN_POSITIVE))
            .collect();
        rand::distr::weighted::WeightedIndex::new(&weights)
            .map(|d| d.sample(&mut self.rng) as u32)
            .unwrap_or_else(|_| argmax(logits))
    }
}

fn argmax(v: &[f32]) -> u32 {
    v.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i as u32)
}

fn log_sum_exp(v: &[f32]) -> f32 {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return max;
    }
    max + v.iter().map(|x| (x - max).exp()).sum::<f32>().ln()
}

fn log_softmax(v: &[f32]) -> Vec<f32> {
    let lse = log_sum_exp(v);
    v.iter().map(|x| x - lse).collect()
}

/// zlib compression ratio of the text: repetitive hallucinations compress well.
pub fn compression_ratio(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    if enc.write_all(text.as_bytes()).is_err() {
        return 0.0;
    }
    enc.finish()
        .map_or(0.0, |z| text.len() as f64 / z.len().max(1) as f64)
}

/// The mel filter bank `mel_{n}.npy` (from Whisper's `mel_filters.npz`), `(n_mels, 201)`.
/// The language tokens `ids` (a multilingual config's `lang_ids`) by their codes: `<|ja|>` is
/// `ja`.
fn languages(tokenizer: &Tokenizer, ids: &[u32]) -> anyhow::Result<Vec<(String, u32)>> {
    anyhow::ensure!(
        !ids.is_empty(),
        "a multilingual whisper config.json must list its lang_ids"
    );
    ids.iter()
        .map(|&id| {
            let token = tokenizer
                .id_to_token(id)
                .with_context(|| format!("tokenizer.json has no token {id} (a lang_id)"))?;
            let code = token
                .strip_prefix("<|")
                .and_then(|t| t.strip_suffix("|>"))
                .filter(|c| !c.is_empty() && c.len() <= 8)
                .with_context(|| format!("lang_id {id} is {token:?}, not a language token"))?;
            Ok((code.to_owned(), id))
        })
        .collect()
}

fn mel_filters(dir: &Path, n_mels: usize) -> anyhow::Result<Vec<f32>> {
    let path = dir.join(format!("mel_{n_mels}.npy"));
    let t = Tensor::read_npy(&path)
        .with_context(|| format!("{} (run scripts/fetch-models)", path.display()))?;
    let dims = t.dims().to_vec();
    if dims != [n_mels, m::N_FFT / 2 + 1] {
        anyhow::bail!("{} has shape {dims:?}", path.display());
    }
    Ok(t.to_dtype(candle_core::DType::F32)?
        .flatten_all()?
        .to_vec1()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetition_compresses() {
        assert!(compression_ratio(&"thank you ".repeat(30)) > 2.4);
        assert!(
            compression_ratio(
                "And so my fellow Americans, ask not what your country can do for you"
            ) < 2.0
        );
    }

    #[test]
    fn log_softmax_sums_to_one() {
        let p: f32 = log_softmax(&[1.0, 2.0, f32::NEG_INFINITY, 0.5])
            .iter()
            .map(|l| l.exp())
            .sum();
        assert!((p - 1.0).abs() < 1e-6);
    }
}
