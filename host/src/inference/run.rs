//! One clip through qualia: decode (two ffmpeg processes, concurrently: the video, with its
//! keyframes on a second pipe, and the audio) → per-frame and per-hop
//! kernels in batches of ten seconds, overlapped with decoding → per-second pooling → response
//! and readout. At most two batches of decoded media are in memory at a time.

use std::path::Path;
use std::sync::Arc;

use futures_util::FutureExt as _;
use rayon::prelude::*;
use std::time::{Duration, Instant};

use super::faces::{self, FaceDetector};
use super::features::{FRAME_FEATURES, HOP, HOP_FEATURES, LEAD, WINDOW};
use super::gpu::{GpuContext, GpuError, StageTimes};
use super::model::{Model, NETWORK_COUNT, Presence, TimeBase};
use super::motion::{self, MotionBank};
use super::picture::{self, Picture};
use super::{language, v2};
use crate::media::decode::{AudioSamples, DecodeError, DecodeSpec, VideoFrames, split_detail};
use crate::media::probe::ProbeInfo;

/// Seconds of media per GPU batch.
const BATCH_SECONDS: usize = 10;
/// Batches of the model's frames held, before the visual kernels start, while no keyframe has
/// shown anything above the bar level (none read yet, a fade from black, a dark title card):
/// the kernels then start on the first lit keyframe's picture rather than the whole frame,
/// which a letterboxed clip would have to run again. ffmpeg hands over a keyframe only when
/// the next one is decoded, so a clip with a keyframe every 10 s (x264's default at 25 fps)
/// shows its first picture during the second batch. At most 30 s of 160 x 90 frames (13 MB).
const MAX_HELD_BATCHES: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum QualiaError {
    #[error("{0}")]
    Decode(#[from] DecodeError),
    #[error("{0}")]
    Gpu(#[from] GpuError),
    #[error("the clip is {0:.1} s long; at most {1} s can be analysed")]
    TooLong(f64, u32),
    #[error("the file has no decodable video or audio")]
    NoMedia,
    #[error("an analysis task failed: {0}")]
    Task(String),
    #[error("speech analysis failed: {0}")]
    Speech(String),
}

impl QualiaError {
    /// Stable code for the scan's `error` field.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::Decode(DecodeError::Missing) | Self::Gpu(_) | Self::Task(_) | Self::Speech(_) => {
                "internal_error"
            }
            Self::Decode(_) | Self::NoMedia => "decode_failed",
            Self::TooLong(..) => "video_too_long",
        }
    }
}

/// Which inputs the clip had. In v2 a stream counts only when it carries something: audio
/// above the audible floor, a picture that is not a uniform field; `speech` says the speech and
/// language features were computed (the clip has audible sound or subtitles, and the process has
/// the speech models).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Modalities {
    pub video: bool,
    pub audio: bool,
    pub speech: bool,
}

/// What qualia computed for one clip.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QualiaOutput {
    /// `qualia-<version>`.
    pub model: String,
    pub adapter: String,
    pub duration_sec: f64,
    pub seconds: usize,
    pub modalities: Modalities,
    /// The time axis of `networks`.
    pub time_base: TimeBase,
    /// Nothing in the clip changes (black, silent or near-constant): there is nothing to read.
    pub low_signal: bool,
    /// `seconds` rows in the spec's network order, z units.
    pub networks: Vec<[f32; NETWORK_COUNT]>,
    /// `seconds x F` raw per-second features (the model's feature order).
    pub features: Vec<f32>,
    pub frames: usize,
    pub hops: usize,
    pub stage_times: StageTimes,
    /// The clip's active picture (video only; the whole frame for models that do not look).
    #[serde(skip)]
    pub picture: Option<Picture>,
    /// The visual kernels ran twice: the keyframes after the first batch changed the picture
    /// they read (see `picture`). The features are the same either way; this costs time.
    #[serde(skip)]
    pub picture_revised: bool,
    /// Voice activity and transcript, when speech was analysed (v2 with speech models).
    #[serde(skip)]
    pub heard: Option<crate::speech::Heard>,
}

/// Progress of decoding in seconds of media, for progress bars and scan stages.
pub type Progress = Arc<dyn Fn(f64) + Send + Sync>;

/// The speech models v2's language features need: Whisper with the voice-activity gate, the
/// sentence embedder the model's axes were built with (English), and the multilingual reader
/// for speech in other languages.
pub struct Listener {
    pub speech: Arc<crate::speech::Speech>,
    pub embedder: Arc<crate::embed::Embedder>,
    pub multilingual: super::multilingual::MultilingualMeaning,
}

impl Listener {
    /// The listener of the models in `models_dir` around loaded speech models and English
    /// embedder; the multilingual reader loads at its first use.
    #[must_use]
    pub fn new(
        speech: Arc<crate::speech::Speech>,
        embedder: Arc<crate::embed::Embedder>,
        models_dir: &std::path::Path,
    ) -> Self {
        Self {
            speech,
            embedder,
            multilingual: super::multilingual::MultilingualMeaning::new(
                crate::speech::ModelPaths::under(models_dir).multilingual_embedder,
            ),
        }
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("speech", &self.speech.model_id())
            .field("embedder", &self.embedder.model_id)
            .finish()
    }
}

/// The GPU context and the model, shared by all scans of a process.
#[derive(Debug, Clone)]
pub struct Qualia {
    pub gpu: Arc<GpuContext>,
    pub model: Arc<Model>,
    /// Speech models for v2's language features; without them those features are absent.
    pub listener: Option<Arc<Listener>>,
    /// The face detector, for models with face features (v2.2); `None` otherwise.
    pub faces: Option<Arc<FaceDetector>>,
}

struct Stream<T> {
    values: Vec<f32>,
    /// The active picture and its levels (video only).
    picture: Option<Picture>,
    /// v2.4: the per-frame motion-energy feature (empty without it, and for audio).
    motion: Vec<f32>,
    count: usize,
    times: StageTimes,
    /// The visual kernels ran a second time, on the whole clip's picture (see `picture`).
    picture_revised: bool,
    extra: T,
}

impl<T> Stream<T> {
    /// A stream with nothing computed yet, carrying `extra`.
    fn empty(extra: T) -> Self {
        Self {
            values: Vec::new(),
            picture: None,
            motion: Vec::new(),
            count: 0,
            times: StageTimes::default(),
            picture_revised: false,
            extra,
        }
    }
}

impl Qualia {
    #[must_use]
    pub fn decode_spec(&self) -> DecodeSpec {
        let s = &self.model.manifest.sampling;
        DecodeSpec {
            fps: s.fps,
            width: s.width,
            height: s.height,
            sample_rate: s.sample_rate,
            ..DecodeSpec::default()
        }
    }

    /// Runs the whole model on a media file that `probe` describes, in stimulus time.
    ///
    /// # Errors
    /// Decoding, GPU and length errors, typed.
    pub async fn analyse(
        &self,
        path: &Path,
        probe: &ProbeInfo,
        max_seconds: u32,
        progress: Option<Progress>,
    ) -> Result<QualiaOutput, QualiaError> {
        self.analyse_in(path, probe, max_seconds, progress, TimeBase::Stimulus)
            .await
    }

    /// [`Qualia::analyse`] on a chosen time base.
    ///
    /// # Errors
    /// Decoding, GPU, speech and length errors, typed.
    pub async fn analyse_in(
        &self,
        path: &Path,
        probe: &ProbeInfo,
        max_seconds: u32,
        progress: Option<Progress>,
        time_base: TimeBase,
    ) -> Result<QualiaOutput, QualiaError> {
        if let Some(d) = probe.duration_sec
            && d > f64::from(max_seconds) + 0.5
        {
            return Err(QualiaError::TooLong(d, max_seconds));
        }
        if self.model.manifest.sampling.faces.is_some() && self.faces.is_none() {
            return Err(QualiaError::Task(
                "the model reads faces but no face detector was loaded".into(),
            ));
        }
        // Decode with the demuxer the probe checked, so ffmpeg does not guess again.
        let spec = DecodeSpec {
            demuxer: probe.demuxer,
            ..self.decode_spec()
        };
        let limit = (max_seconds as usize + 1) * spec.fps as usize;
        let video = async {
            if !probe.has_video {
                return Ok(None);
            }
            self.video(path, spec, limit, progress.clone())
                .await
                .map(Some)
        };
        // The audio track is decoded once, into memory (at most 11.5 MB for 180 s at 16 kHz),
        // and that one decode feeds the loudness measurement, the audio kernels and the speech
        // stage, which used to decode it once each.
        let seconds = max_seconds as usize + 1;
        let rate = spec.sample_rate as usize;
        let track = async move {
            if !probe.has_audio {
                return None;
            }
            Some(Track::decode(path, spec, seconds * rate).await)
        }
        .shared();
        let audio = {
            let (track, progress) = (track.clone(), progress.clone());
            async move {
                let track = match track.await {
                    None => return Ok(None),
                    Some(t) => t.map_err(QualiaError::from)?,
                };
                // v2 measures the track first and scales it to the model's loudness, so no
                // audio feature depends on the playback gain.
                let started = Instant::now();
                let (source, gain) = match self.model.manifest.sampling.normalise_dbfs {
                    Some(target) => {
                        let l = v2::track_loudness(&track.samples, rate);
                        (Some(l), v2::normalising_gain(l, f64::from(target)))
                    }
                    None => (None, 1.0),
                };
                let prepass = started.elapsed();
                self.audio(&track, spec, progress, gain)
                    .await
                    .map(|mut stream| {
                        stream.times.prepass += prepass;
                        Some((stream, source))
                    })
            }
        };
        let listen = async {
            match (&self.listener, self.model.format() >= 2) {
                (Some(l), true) => {
                    let duration = probe
                        .duration_sec
                        .filter(|d| d.is_finite() && *d > 0.0)
                        .unwrap_or(f64::from(max_seconds))
                        .min(f64::from(max_seconds));
                    // The scan's decode of the track, when it is at the speech models' rate.
                    let started = Instant::now();
                    let decoded = match track.clone().await {
                        Some(Ok(t)) if spec.sample_rate == DecodeSpec::default().sample_rate => {
                            Some(t.samples)
                        }
                        _ => None,
                    };
                    let target = self.model.manifest.sampling.normalise_dbfs.map(f64::from);
                    crate::speech::hear(path, probe, duration, l.speech.clone(), target, decoded)
                        .await
                        .map(|h| Some((h, started.elapsed())))
                        .map_err(QualiaError::Speech)
                }
                _ => Ok(None),
            }
        };
        // A clip that does not decode is a decode error, whatever the speech stage says.
        let (video, audio, heard) = tokio::join!(video, audio, listen);
        let (video, audio) = (video?, audio?);
        let (heard, speech_time) = match heard? {
            Some((mut h, t)) => {
                // It ran beside decoding, so it is part of the `qualia` stage's time too.
                crate::metrics::record_stage("speech", t);
                if self.model.format() >= 2 {
                    super::multilingual::note_unread_axes(&mut h);
                }
                (Some(h), t)
            }
            None => (None, Duration::ZERO),
        };
        let video = video.filter(|v| v.count > 0);
        let (audio, source_dbfs) = match audio {
            Some((a, source)) if a.extra > 0 => (Some(a), source),
            _ => (None, None),
        };
        if video.is_none() && audio.is_none() {
            return Err(QualiaError::NoMedia);
        }
        let fps = f64::from(spec.fps);
        let decoded = video.as_ref().map_or(0.0, |v| v.count as f64 / fps).max(
            audio
                .as_ref()
                .map_or(0.0, |a| a.extra as f64 / f64::from(spec.sample_rate)),
        );
        let duration = probe
            .duration_sec
            .filter(|d| d.is_finite() && *d > 0.0)
            .unwrap_or(decoded);
        if duration > f64::from(max_seconds) + 0.5 {
            return Err(QualiaError::TooLong(duration, max_seconds));
        }
        let seconds = (duration.ceil() as usize).clamp(1, max_seconds as usize);

        let decoded_video = video.is_some();
        let decoded_audio = audio.is_some();
        let mut times = StageTimes::default();
        let (mut fv, mut hv) = (Vec::new(), Vec::new());
        let mut face_seconds = None;
        let mut motion_seconds = None;
        let mut luma_range = 1.0;
        let (mut active_picture, mut picture_revised) = (None, false);
        if let Some(v) = video {
            let sampling = &self.model.manifest.sampling;
            let picture = v.picture.unwrap_or(Picture::full(spec.width, spec.height));
            times.add(&v.times);
            (active_picture, picture_revised) = (Some(picture), v.picture_revised);
            fv = v.values;
            if sampling.levels {
                luma_range = picture.luma_range;
            }
            if sampling.motion_energy {
                motion_seconds = Some(motion::per_second(&v.motion, spec.fps, seconds));
            }
            if let Some(detector) = &self.faces {
                let every = detector.sampling.every as usize;
                let model_size = (spec.width, spec.height);
                let cover: Vec<(usize, f32)> = faces::confirmed(&v.extra, every)
                    .iter()
                    .map(|(i, f)| (*i, detector.coverage(f, picture.rect, model_size)))
                    .collect();
                let mut per_second = faces::per_second(&cover, spec.fps, seconds);
                if sampling.face_area_of_frame {
                    faces::as_share_of_frame(
                        &mut per_second,
                        picture.share_of(spec.width, spec.height),
                    );
                }
                face_seconds = Some(per_second);
            }
        }
        if let Some(a) = audio {
            times.add(&a.times);
            hv = a.values;
        }
        let (frames, hops) = (fv.len() / FRAME_FEATURES, hv.len() / HOP_FEATURES);
        let hop_offset = self.model.manifest.sampling.hop_offset as usize;
        let loudness = v2::loudness_per_second(&hv, seconds, hop_offset);
        let gpu = self.gpu.clone();
        let model = self.model.clone();
        let listener = self.listener.clone();
        let threshold = model.manifest.sampling.onset_threshold;
        let (features, y, modalities, low_signal, pool_t, resp_t, language_t, heard) =
            tokio::task::spawn_blocking(move || {
                let (raw, pool_t) =
                    gpu.pool(&fv, &hv, seconds, spec.fps, threshold, hop_offset as u32)?;
                let detected = heard.as_ref().is_some_and(|h| !h.regions.is_empty());
                let streams = v2::streams(
                    &raw,
                    &loudness,
                    decoded_video,
                    decoded_audio,
                    detected,
                    source_dbfs,
                );
                let language_started = Instant::now();
                let (features, presence) = if model.format() >= 2 {
                    let language = match (&heard, &listener) {
                        (Some(h), Some(l)) if streams.audio || !h.lines.is_empty() => {
                            use crate::speech::MeaningReader;
                            let failed = |e: anyhow::Error| {
                                QualiaError::Speech(format!("language features: {e:#}"))
                            };
                            let multilingual;
                            let (embedder, axes): (Option<&dyn language::Embed>, &_) = match h
                                .meaning_reader()
                            {
                                MeaningReader::English => (Some(l.embedder.as_ref()), &model.axes),
                                MeaningReader::Multilingual => {
                                    multilingual = l
                                        .multilingual
                                        .reader(l.embedder.as_ref(), &model.axes)
                                        .map_err(failed)?;
                                    (Some(multilingual.0.as_ref()), multilingual.1.as_ref())
                                }
                                MeaningReader::None => (None, &model.axes),
                            };
                            Some(
                                language::compute(
                                    seconds,
                                    &h.regions,
                                    &h.lines,
                                    &h.confidence,
                                    embedder,
                                    axes,
                                )
                                .map_err(failed)?,
                            )
                        }
                        _ => None,
                    };
                    let presence = Presence {
                        video: streams.video,
                        audio: streams.audio,
                        speech: language.is_some(),
                    };
                    (
                        v2::derive(
                            &raw,
                            &loudness,
                            &streams,
                            face_seconds.as_deref().filter(|_| streams.video),
                            motion_seconds.as_deref().filter(|_| streams.video),
                            language.as_ref(),
                            luma_range,
                        ),
                        presence,
                    )
                } else {
                    let presence = Presence {
                        video: decoded_video,
                        audio: decoded_audio,
                        speech: false,
                    };
                    (raw, presence)
                };
                let language_t = language_started.elapsed();
                let resp = gpu.response(&features, &model, presence, time_base)?;
                let modalities = Modalities {
                    video: presence.video,
                    audio: presence.audio,
                    speech: presence.speech,
                };
                Ok::<_, QualiaError>((
                    features,
                    resp.y,
                    modalities,
                    streams.low_signal,
                    pool_t,
                    resp.time,
                    language_t,
                    heard,
                ))
            })
            .await
            .map_err(|e| QualiaError::Task(e.to_string()))??;
        times.pool += pool_t;
        times.response += resp_t;
        times.speech += speech_time;
        times.language += language_t;
        let networks = y
            .chunks_exact(NETWORK_COUNT)
            .map(|c| {
                let mut row = [0f32; NETWORK_COUNT];
                row.copy_from_slice(c);
                row
            })
            .collect();
        Ok(QualiaOutput {
            model: self.model.id(),
            adapter: self.gpu.describe(),
            // The analysed span: a container that reports a few milliseconds over the limit
            // (the 180 s lecture cut by stream copy reads 180.013 s) is accepted above but read
            // for `seconds` seconds only, and the plugin contract wants ceil(duration) rows.
            duration_sec: duration.min(seconds as f64),
            seconds,
            modalities,
            time_base,
            low_signal,
            networks,
            features,
            frames,
            hops,
            stage_times: times,
            picture: active_picture,
            picture_revised,
            heard,
        })
    }

    /// The video stream's kernels, faces and active picture, from one decode.
    async fn video(
        &self,
        path: &Path,
        spec: DecodeSpec,
        limit: usize,
        progress: Option<Progress>,
    ) -> Result<Stream<Vec<(usize, Vec<brainscan_faces::Face>)>>, QualiaError> {
        // With face features, each decoded frame carries a larger copy for the detector.
        let detector = self.faces.clone();
        let detail = detector.as_ref().map(|d| d.detail());
        let full = Picture::full(spec.width, spec.height);
        // v2 computes the visual features over the active picture only (see `picture`): its
        // keyframes come from this same decode, on a second pipe.
        let (mut frames, watch) = if self.model.manifest.sampling.active_picture {
            let (frames, keys) =
                VideoFrames::open_with_keyframes(path, spec, detail, picture::MAX_KEYFRAMES)?;
            (frames, Some(picture::Watch::start(keys, spec)))
        } else {
            let frames = match detail {
                Some(d) => VideoFrames::open_with_detail(path, spec, d)?,
                None => VideoFrames::open(path, spec)?,
            };
            (frames, None)
        };
        let len = (spec.width * spec.height * 3) as usize;
        let mut stacked = vec![0u8; frames.frame_len()];
        let batch = BATCH_SECONDS * spec.fps as usize;
        let lead = VisualKernels::lead_for(self.model.manifest.sampling.motion_energy, spec.fps);
        let mut out = Stream::empty(Vec::new());
        // The kernels start on the picture of the keyframes seen by the end of the first batch
        // (or, while none shows a picture, of a later one: `MAX_HELD_BATCHES`). Once a later
        // keyframe changes it, their results are stale: the rest of the clip skips them, and
        // they run again on the final picture after the decode.
        let mut kernels: Option<VisualKernels> = None;
        let mut stale = false;
        // Batches decoded before any keyframe showed a picture.
        let mut held: Vec<(Vec<u8>, usize)> = Vec::new();
        let mut pending_faces: Option<tokio::task::JoinHandle<FaceBatch>> = None;
        loop {
            let mut data = vec![0u8; (batch + lead) * len];
            let mut detail_frames = Vec::new();
            let mut k = 0;
            while k < batch && out.count + k < limit {
                let slot = &mut data[(k + lead) * len..(k + lead + 1) * len];
                let more = match &detector {
                    Some(d) => {
                        let more = frames.next_frame(&mut stacked).await?;
                        if more {
                            let detail = split_detail(&stacked, &spec, d.detail(), slot);
                            if d.samples(out.count + k) {
                                detail_frames.push((out.count + k, detail.to_vec()));
                            }
                        }
                        more
                    }
                    None => frames.next_frame(slot).await?,
                };
                if !more {
                    break;
                }
                k += 1;
            }
            if k == 0 {
                break;
            }
            match kernels.as_mut() {
                Some(running) => {
                    let so_far = watch
                        .as_ref()
                        .and_then(picture::Watch::rect_so_far)
                        .unwrap_or(full.rect);
                    stale |= running.rect != so_far;
                    if !stale {
                        running.push(&mut out, data, k).await?;
                    }
                }
                None => {
                    let lit = watch.as_ref().and_then(picture::Watch::lit_rect_so_far);
                    if watch.is_some() && lit.is_none() && held.len() < MAX_HELD_BATCHES {
                        held.push((data, k));
                    } else {
                        let mut running = VisualKernels::new(self, spec, lit.unwrap_or(full.rect));
                        for (d, n) in held.drain(..) {
                            running.push(&mut out, d, n).await?;
                        }
                        running.push(&mut out, data, k).await?;
                        kernels = Some(running);
                    }
                }
            }
            if let Some(d) = &detector {
                if let Some(h) = pending_faces.take() {
                    collect_faces(&mut out, h).await?;
                }
                let d = d.clone();
                pending_faces = Some(tokio::task::spawn_blocking(move || {
                    let started = Instant::now();
                    // Frames are independent: spread them over the cores (rayon's pool), and
                    // the search over the device's invocations where it runs there.
                    let lumas: Vec<(usize, Vec<u8>)> = detail_frames
                        .par_iter()
                        .map(|(i, rgb)| (*i, faces::luma(rgb)))
                        .collect();
                    (d.faces_of(&lumas), started.elapsed())
                }));
            }
            out.count += k;
            if let Some(p) = &progress {
                p(out.count as f64 / f64::from(spec.fps));
            }
            if out.count >= limit {
                break;
            }
        }
        if let Some(k) = kernels.as_mut() {
            k.finish(&mut out).await?;
        }
        if let Some(h) = pending_faces.take() {
            collect_faces(&mut out, h).await?;
        }
        let ended = frames.finish().await;
        // The decoder has exited, so the keyframe pipe is at its end.
        let started = Instant::now();
        let picture = match watch {
            Some(w) => w.finish().await.unwrap_or(full),
            None => full,
        };
        out.picture = Some(picture);
        // A clip that ended while its batches were held runs them on its whole picture.
        if kernels.is_none() && !held.is_empty() {
            let mut running = VisualKernels::new(self, spec, picture.rect);
            for (d, n) in held.drain(..) {
                running.push(&mut out, d, n).await?;
            }
            running.finish(&mut out).await?;
        }
        match ended {
            Ok(()) => {}
            // A stream that decoded nothing is absent; one that broke midway keeps what decoded
            // only if ffmpeg delivered frames (truncated files), otherwise it is an error.
            Err(DecodeError::NoStream(_)) => out.count = 0,
            Err(e @ DecodeError::Timeout(_)) => return Err(e.into()),
            Err(e) if out.count == 0 => return Err(e.into()),
            Err(e) => {
                tracing::warn!(error = %e, frames = out.count, "video decoder ended with an error; using the frames it delivered")
            }
        }
        // Stale kernels skipped batches, so they run again even where the picture came back
        // to the one they started on (a lit region too small for the grid reads as the whole
        // frame, then a larger one as itself).
        if out.count > 0
            && kernels
                .as_ref()
                .is_some_and(|k| stale || k.rect != picture.rect)
        {
            tracing::info!(
                first = ?kernels.as_ref().map(|k| k.rect),
                clip = ?picture.rect,
                "the clip's picture differs from its first batch's: running the visual kernels again"
            );
            self.revise(&mut out, path, spec, limit, picture.rect)
                .await?;
            out.picture_revised = true;
        }
        out.times.prepass += started.elapsed();
        Ok(out)
    }

    /// Runs the visual and motion kernels again, on `rect`, over a fresh decode of the model's
    /// frames (without the detector's copies: the faces already found stand, since the picture
    /// only enters them afterwards). Replaces what the first pass computed.
    async fn revise<T>(
        &self,
        out: &mut Stream<T>,
        path: &Path,
        spec: DecodeSpec,
        limit: usize,
        rect: super::features::Rect,
    ) -> Result<(), QualiaError> {
        let mut frames = VideoFrames::open(path, spec)?;
        let len = (spec.width * spec.height * 3) as usize;
        let batch = BATCH_SECONDS * spec.fps as usize;
        let mut kernels = VisualKernels::new(self, spec, rect);
        let mut redone = Stream::empty(());
        while redone.count < out.count.min(limit) {
            let mut data = vec![0u8; (batch + kernels.lead) * len];
            let mut k = 0;
            while k < batch && redone.count + k < out.count.min(limit) {
                let slot = &mut data[(k + kernels.lead) * len..(k + kernels.lead + 1) * len];
                if !frames.next_frame(slot).await? {
                    break;
                }
                k += 1;
            }
            if k == 0 {
                break;
            }
            kernels.push(&mut redone, data, k).await?;
            redone.count += k;
        }
        kernels.finish(&mut redone).await?;
        // Stopped at the first pass's count on purpose: the decoder's broken pipe is no error.
        drop(frames);
        if redone.count != out.count {
            return Err(QualiaError::Task(format!(
                "the second decode gave {} frames where the first gave {}",
                redone.count, out.count
            )));
        }
        out.values = redone.values;
        out.motion = redone.motion;
        out.times.visual += redone.times.visual;
        out.times.motion += redone.times.motion;
        Ok(())
    }

    /// The audio kernels over the decoded `track`, scaled by `gain`, batch by batch.
    async fn audio(
        &self,
        track: &Track,
        spec: DecodeSpec,
        progress: Option<Progress>,
        gain: f32,
    ) -> Result<Stream<usize>, QualiaError> {
        let rate = spec.sample_rate as usize;
        let batch_hops = BATCH_SECONDS * rate / HOP;
        let total = track.samples.len();
        let mut out = Stream::empty(0usize);
        match &track.ended {
            None => {}
            Some(DecodeError::NoStream(_)) => return Ok(out),
            Some(e @ DecodeError::Timeout(_)) => return Err(e.clone().into()),
            Some(e) if total == 0 => return Err(e.clone().into()),
            Some(e) => {
                tracing::warn!(error = %e, samples = total, "audio decoder ended with an error; using the samples it delivered")
            }
        }
        // Each batch reads PRE samples before its lead hop: for the first batch, zeros before
        // the clip.
        let sample = |i: usize| {
            i.checked_sub(LEAD)
                .and_then(|i| track.samples.get(i))
                .map_or(0.0, |v| v * gain)
        };
        let mut first_hop = 0usize;
        let mut pending: Option<tokio::task::JoinHandle<AudioBatch>> = None;
        loop {
            let hops = total
                .div_ceil(HOP)
                .saturating_sub(first_hop)
                .min(batch_hops);
            if hops == 0 {
                break;
            }
            // The batch's window: from `first_hop * HOP` into the track with LEAD zeros before
            // it, `hops` hops and one window long, cut where the decoded samples end.
            let start = first_hop * HOP;
            let end = (start + hops * HOP + WINDOW).min(LEAD + total);
            let data: Vec<f32> = (start..end).map(sample).collect();
            let lead_is_self = first_hop == 0;
            if let Some(h) = pending.take() {
                collect_audio(&mut out, h).await?;
            }
            let gpu = self.gpu.clone();
            pending = Some(tokio::task::spawn_blocking(move || {
                gpu.audio(&data, hops + 1, lead_is_self, false)
                    .map(|(_, f, a, b)| (f, a, b))
            }));
            first_hop += hops;
            out.count = first_hop;
            if let Some(p) = &progress {
                p((first_hop * HOP) as f64 / rate as f64);
            }
        }
        if let Some(h) = pending.take() {
            collect_audio(&mut out, h).await?;
        }
        out.extra = total;
        Ok(out)
    }
}

/// A clip's audio track, decoded once for every stage that reads it.
#[derive(Debug, Clone)]
struct Track {
    samples: Arc<Vec<f32>>,
    /// How the decoder ended, when it ended with an error after the samples it delivered.
    ended: Option<DecodeError>,
}

impl Track {
    /// Decodes at most `limit` samples of `path`'s audio at `spec`'s rate.
    async fn decode(path: &Path, spec: DecodeSpec, limit: usize) -> Result<Self, DecodeError> {
        let mut audio = AudioSamples::open(path, spec)?;
        let mut samples = Vec::new();
        let mut block = vec![0f32; 8192];
        loop {
            let n = audio.next_block(&mut block).await?;
            if n == 0 || samples.len() >= limit {
                break;
            }
            samples.extend_from_slice(&block[..n.min(limit - samples.len())]);
        }
        let ended = if samples.len() >= limit {
            // Stopped early on purpose: the decoder's broken pipe is not an error.
            drop(audio);
            None
        } else {
            audio.finish().await.err()
        };
        Ok(Self {
            samples: Arc::new(samples),
            ended,
        })
    }
}

/// One batch's visual kernel outputs and their times.
/// The visual and motion-energy kernels over a clip's frames, batch by batch, on one active
/// picture: each batch's kernels run on a blocking thread while the next batch decodes.
struct VisualKernels {
    gpu: Arc<GpuContext>,
    spec: DecodeSpec,
    rect: super::features::Rect,
    bank: Option<Arc<MotionBank>>,
    /// Frames before each batch that the kernels read: one for the visual kernel's frame
    /// differences, `taps - 1` for the motion-energy window.
    lead: usize,
    /// The last `lead` frames of the batch before.
    prev: Option<Vec<u8>>,
    pending: Option<tokio::task::JoinHandle<VisualBatch>>,
}

impl VisualKernels {
    fn new(q: &Qualia, spec: DecodeSpec, rect: super::features::Rect) -> Self {
        let bank = q
            .model
            .manifest
            .sampling
            .motion_energy
            .then(|| Arc::new(MotionBank::new(rect, spec.fps)));
        let lead = Self::lead_for(bank.is_some(), spec.fps);
        Self {
            gpu: q.gpu.clone(),
            spec,
            rect,
            bank,
            lead,
            prev: None,
            pending: None,
        }
    }

    /// The lead of [`VisualKernels::new`], known before the picture is.
    fn lead_for(motion_energy: bool, fps: u32) -> usize {
        if motion_energy {
            MotionBank::taps_at(fps) - 1
        } else {
            1
        }
    }

    /// Starts the kernels on `data`: `lead` empty slots, then `k` frames (and room for more,
    /// cut off). Collects the batch before into `out`.
    async fn push<T>(
        &mut self,
        out: &mut Stream<T>,
        mut data: Vec<u8>,
        k: usize,
    ) -> Result<(), QualiaError> {
        let (lead, len) = (self.lead, (self.spec.width * self.spec.height * 3) as usize);
        // At the start of a clip the first frame stands for the frames before it, so
        // nothing reads as change there.
        match &self.prev {
            Some(p) => data[..lead * len].copy_from_slice(p),
            None => {
                for i in 0..lead {
                    data.copy_within(lead * len..(lead + 1) * len, i * len);
                }
            }
        }
        self.prev = Some(data[k * len..(k + lead) * len].to_vec());
        data.truncate((k + lead) * len);
        if let Some(h) = self.pending.take() {
            collect_visual(out, h).await?;
        }
        let (gpu, bank, rect) = (self.gpu.clone(), self.bank.clone(), self.rect);
        let (w, h) = (self.spec.width, self.spec.height);
        self.pending = Some(tokio::task::spawn_blocking(move || {
            let (values, visual) = gpu.visual(&data[(lead - 1) * len..], w, h, rect)?;
            let (motion, motion_t) = match &bank {
                Some(b) => {
                    let (rows, t) = gpu.motion(&data, w, h, rect, b)?;
                    (b.features(&rows), t)
                }
                None => (Vec::new(), Duration::ZERO),
            };
            Ok(VisualOut {
                values,
                motion,
                visual,
                motion_t,
            })
        }));
        Ok(())
    }

    /// Collects the last batch into `out`.
    async fn finish<T>(&mut self, out: &mut Stream<T>) -> Result<(), QualiaError> {
        if let Some(h) = self.pending.take() {
            collect_visual(out, h).await?;
        }
        Ok(())
    }
}

struct VisualOut {
    values: Vec<f32>,
    motion: Vec<f32>,
    visual: Duration,
    motion_t: Duration,
}

type VisualBatch = Result<VisualOut, GpuError>;
/// The sampled frames' face coverage `(frame index, share)` and the detector's time.
type FaceBatch = (Vec<(usize, Vec<brainscan_faces::Face>)>, Duration);
type AudioBatch = Result<(Vec<f32>, Duration, Duration), GpuError>;

async fn collect_visual<T>(
    out: &mut Stream<T>,
    h: tokio::task::JoinHandle<VisualBatch>,
) -> Result<(), QualiaError> {
    let v = h.await.map_err(|e| QualiaError::Task(e.to_string()))??;
    out.values.extend(v.values);
    out.motion.extend(v.motion);
    out.times.visual += v.visual;
    out.times.motion += v.motion_t;
    Ok(())
}

async fn collect_faces(
    out: &mut Stream<Vec<(usize, Vec<brainscan_faces::Face>)>>,
    h: tokio::task::JoinHandle<FaceBatch>,
) -> Result<(), QualiaError> {
    let (found, t) = h.await.map_err(|e| QualiaError::Task(e.to_string()))?;
    out.extra.extend(found);
    out.times.faces += t;
    Ok(())
}

async fn collect_audio(
    out: &mut Stream<usize>,
    h: tokio::task::JoinHandle<AudioBatch>,
) -> Result<(), QualiaError> {
    let (v, fft, feats) = h.await.map_err(|e| QualiaError::Task(e.to_string()))??;
    out.values.extend(v);
    out.times.audio_fft += fft;
    out.times.audio_features += feats;
    Ok(())
}

/// The first `max_frames` frames of a clip in one buffer, laid out as the visual kernel reads
/// a clip's first batch: the first frame twice (it is its own predecessor), then the rest.
/// For the CPU reference and the bench; the scan path streams instead.
///
/// # Errors
/// Decoding errors.
pub async fn decode_frames(
    path: &Path,
    spec: DecodeSpec,
    max_frames: usize,
) -> Result<Vec<u8>, DecodeError> {
    let mut v = VideoFrames::open(path, spec)?;
    let len = v.frame_len();
    let mut frames = Vec::new();
    let mut buf = vec![0u8; len];
    let mut n = 0;
    while n < max_frames && v.next_frame(&mut buf).await? {
        if n == 0 {
            frames.extend_from_slice(&buf);
        }
        frames.extend_from_slice(&buf);
        n += 1;
    }
    if n < max_frames {
        v.finish().await?;
    }
    Ok(frames)
}

/// Up to `max_samples` samples of a clip after [`LEAD`] zeros, as the audio kernels read a
/// clip's first batch. For the CPU reference and the bench; the scan path streams instead.
///
/// # Errors
/// Decoding errors.
pub async fn decode_samples(
    path: &Path,
    spec: DecodeSpec,
    max_samples: usize,
) -> Result<Vec<f32>, DecodeError> {
    let mut a = AudioSamples::open(path, spec)?;
    let mut samples = vec![0f32; LEAD];
    let mut block = vec![0f32; 8192];
    while samples.len() < LEAD + max_samples {
        let n = a.next_block(&mut block).await?;
        if n == 0 {
            a.finish().await?;
            break;
        }
        samples.extend_from_slice(&block[..n.min(LEAD + max_samples - samples.len())]);
    }
    Ok(samples)
}

/// How long decoding alone takes (both pipes drained, nothing computed): the bench baseline.
///
/// # Errors
/// Decoding errors.
pub async fn decode_only(
    path: &Path,
    probe: &ProbeInfo,
    spec: DecodeSpec,
) -> Result<(Duration, usize, usize), DecodeError> {
    let start = Instant::now();
    let video = async {
        if !probe.has_video {
            return Ok(0);
        }
        let mut v = VideoFrames::open(path, spec)?;
        let mut frame = vec![0u8; v.frame_len()];
        let mut n = 0;
        while v.next_frame(&mut frame).await? {
            n += 1;
        }
        v.finish().await?;
        Ok::<_, DecodeError>(n)
    };
    let audio = async {
        if !probe.has_audio {
            return Ok(0);
        }
        let mut a = AudioSamples::open(path, spec)?;
        let mut block = vec![0f32; 8192];
        let mut n = 0;
        loop {
            let k = a.next_block(&mut block).await?;
            if k == 0 {
                break;
            }
            n += k;
        }
        a.finish().await?;
        Ok(n)
    };
    let (frames, samples) = tokio::try_join!(video, audio)?;
    Ok((start.elapsed(), frames, samples))
}
