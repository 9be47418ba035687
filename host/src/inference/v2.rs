//! The qualia v2 feature set and how it is derived, per second, from what the GPU kernels
//! compute (the v1 columns of `pool.wgsl` and the per-hop levels of `audio.wgsl`) and from the
//! speech and language evidence of [`super::language`].
//!
//! What v2 changes, and why (the model card has the whole list):
//! - **Gain and level invariance.** Absolute level (`level_db`) and the absolute log-mel bands
//!   move with the playback gain and with loudness normalisation, which say nothing about the
//!   content. v2 reads loudness relative to the clip's own gated loudness and the mel bands as a
//!   spectral shape (each band minus the mean of the bands).
//! - **Loudness as energy.** The dB of the mean energy over the second (as LUFS integrates),
//!   not the mean of per-hop dB, so a pause inside speech is not a 60 dB event.
//! - **Absent modalities.** A silent track is no sound, not −100 dB: audio counts as present
//!   only when its gated loudness is above [`AUDIBLE_DBFS`]. A uniform frame (black, grey) is no
//!   picture. Absent features take the corpus mean (z = 0) and the readout sees presence flags.
//! - **No absolute brightness.** Mean luma moves with a brightness change; v2 keeps only its
//!   change from second to second.

pub use crate::media::loudness::{
    FLOOR_DBFS, MAX_GAIN_DB, NORMALISED_DBFS, gated_loudness, normalising_gain,
};

use super::faces::FACE_FEATURES;
use super::features::{FEATURE_COUNT, HOP_FEATURES, HOPS_PER_SECOND, Modality};
use super::language::{LANGUAGE_FEATURES, LanguageFeatures};

/// A track whose gated loudness is below this is no sound at all (absent audio).
pub const AUDIBLE_DBFS: f64 = -60.0;
/// Relative loudness is clamped to this range (dB relative to the clip's gated loudness).
const RELATIVE_RANGE: (f64, f64) = (-40.0, 12.0);
/// A frame whose RMS contrast never exceeds this, with no motion, is a uniform field.
const UNIFORM_CONTRAST: f32 = 0.01;

/// The v2 per-second features, in the order `model.json` lists them.
pub const FEATURES: [(&str, Modality, &str); 42] = [
    (
        "contrast",
        Modality::Visual,
        "RMS contrast of luma over the clip's luma range (1st-99th percentile spread)",
    ),
    (
        "colourfulness",
        Modality::Visual,
        "Hasler-Süsstrunk colourfulness",
    ),
    (
        "edges",
        Modality::Visual,
        "mean Sobel gradient magnitude of luma over the clip's luma range",
    ),
    (
        "flicker",
        Modality::Visual,
        "mean absolute luma change to the previous frame (temporal change, not motion direction)",
    ),
    (
        "motion_coarse",
        Modality::Visual,
        "mean absolute change of the 32x18 grid of cell means",
    ),
    (
        "motion_energy",
        Modality::Visual,
        "opponent motion energy of a spatio-temporal Gabor bank (pymoten's filters, 3 scales, 8 directions, 2 and 4 Hz), Minkowski-pooled over positions (exponent 4), over the RMS lightness contrast, mean per second",
    ),
    (
        "cut",
        Modality::Visual,
        "shot-change score (luma and hue histogram distance), max per second",
    ),
    (
        "saliency",
        Modality::Visual,
        "centre-surround contrast on the 32x18 grid, peak to mean",
    ),
    (
        "luma_change",
        Modality::Visual,
        "absolute change of mean luma from the previous second",
    ),
    (
        "face_presence",
        Modality::Visual,
        "share of the second's sampled frames (2 per second) with a frontal face at least a fifth of the frame high (OpenCV's Haar cascade)",
    ),
    (
        "face_area",
        Modality::Visual,
        "share of the whole frame (the screen) that those faces cover, mean over the sampled frames",
    ),
    (
        "loudness",
        Modality::Audio,
        "dB of the mean energy over the second relative to the clip's gated loudness (-40..12)",
    ),
    ("centroid_khz", Modality::Audio, "spectral centroid in kHz"),
    (
        "flux",
        Modality::Audio,
        "spectral flux (positive log-mel band change), mean",
    ),
    (
        "onset_strength",
        Modality::Audio,
        "spectral flux, max per second",
    ),
    (
        "speech_ratio",
        Modality::Audio,
        "share of power in 300-3400 Hz",
    ),
    (
        "flatness",
        Modality::Audio,
        "spectral flatness (geometric over arithmetic mean)",
    ),
    ("bass_ratio", Modality::Audio, "share of power below 250 Hz"),
    (
        "mel_shape_0",
        Modality::Audio,
        "log energy of mel band 0 minus the mean of the 8 bands",
    ),
    ("mel_shape_1", Modality::Audio, "mel band 1, relative"),
    ("mel_shape_2", Modality::Audio, "mel band 2, relative"),
    ("mel_shape_3", Modality::Audio, "mel band 3, relative"),
    ("mel_shape_4", Modality::Audio, "mel band 4, relative"),
    ("mel_shape_5", Modality::Audio, "mel band 5, relative"),
    ("mel_shape_6", Modality::Audio, "mel band 6, relative"),
    (
        "mel_shape_7",
        Modality::Audio,
        "mel band 7 (highest), relative",
    ),
    (
        "loudness_change",
        Modality::Audio,
        "absolute change of loudness from the previous second (dB)",
    ),
    (
        "syllabic",
        Modality::Audio,
        "squared modulation depth of the speech-band envelope at 2-8 Hz",
    ),
    (
        "onset_rate",
        Modality::Audio,
        "onsets (upward flux threshold crossings) per second",
    ),
    (
        "speech_presence",
        Modality::Speech,
        "share of the second that voice-activity detection (Silero VAD) marks as speech",
    ),
    (
        "word_rate",
        Modality::Speech,
        "transcript words per second (word onsets spread evenly over each line)",
    ),
    (
        "intelligibility",
        Modality::Speech,
        "words recognised per second of detected voice, over this and the previous second",
    ),
    (
        "semantic_change",
        Modality::Speech,
        "cosine distance (MiniLM) between the transcript of the last 4 s and of the 4 s before",
    ),
    (
        "axis_social",
        Modality::Speech,
        "projection of the last 4 s of transcript on the social/people axis, floored at 0 (as every axis: only evidence for an axis drives it)",
    ),
    (
        "axis_emotion",
        Modality::Speech,
        "projection on the emotion-words axis",
    ),
    (
        "axis_numbers",
        Modality::Speech,
        "projection on the numbers-and-prices axis",
    ),
    (
        "axis_pressure",
        Modality::Speech,
        "projection on the pressure axis (urgency, scarcity, social proof, authority, calls to act now)",
    ),
    (
        "axis_evidence",
        Modality::Speech,
        "projection on the evidence axis (specifics, measurements, comparisons, caveats)",
    ),
    (
        "axis_product",
        Modality::Speech,
        "projection on the product-and-benefit axis",
    ),
    (
        "video_present",
        Modality::Clip,
        "1 when the clip has a picture (not absent, not a uniform field)",
    ),
    (
        "audio_present",
        Modality::Clip,
        "1 when the clip has audible sound",
    ),
    (
        "speech_present",
        Modality::Clip,
        "1 when voice activity was detected anywhere in the clip",
    ),
];

pub const FEATURE_COUNT_V2: usize = FEATURES.len();

/// The value a feature takes when its stream carries nothing: silence, a uniform field, a
/// second without words. `Some` for the features that measure *drive* (how much there is to
/// see, hear or understand), `None` for those that describe the character of a stream that is
/// there (spectral shape, centroid, flatness, bass share) and for the presence flags.
///
/// v2 scales drive features from this value, not from the corpus mean (see [`centres`]), so
/// the networks' zero is rest: no stimulus. A silent second inside a clip, a silent track and
/// a muted clip then read the same, and a present stream can only add drive to the networks its
/// features weigh (every prior weight is ≥ 0). Under corpus-mean centring a muted clip read as
/// typical sound, so muting a clip whose speech was sparser than the corpus's raised memory
/// 36 → 66 (qualia 2.2.0).
#[must_use]
pub fn no_drive(name: &str) -> Option<f32> {
    match name {
        // A uniform field: no contrast, colour, edges, change, structure or faces (the kernels'
        // own output for one; saliency's peak over mean reads 0 there, see visual.wgsl).
        "contrast" | "colourfulness" | "edges" | "flicker" | "motion_coarse" | "motion_energy"
        | "cut" | "saliency" | "luma_change" | "face_presence" | "face_area" => Some(0.0),
        // Silence: relative loudness at the bottom of its range, no change, onsets or
        // speech-band energy.
        "loudness" => Some(RELATIVE_RANGE.0 as f32),
        "flux" | "onset_strength" | "speech_ratio" | "loudness_change" | "syllabic"
        | "onset_rate" => Some(0.0),
        // No words: no voice, no words, no change of topic, no projection on any axis (axes
        // are measured from the neutral reference and floored at 0 in `language::compute`, so only
        // evidence for an axis drives it; a boundary is a change beyond the clip's usual one).
        "speech_presence" | "word_rate" | "intelligibility" | "semantic_change" | "axis_social"
        | "axis_emotion" | "axis_numbers" | "axis_pressure" | "axis_evidence" | "axis_product" => {
            Some(0.0)
        }
        _ => None,
    }
}

/// What v2's z-scores subtract, per feature: the no-drive value of a drive feature
/// ([`no_drive`]), the corpus mean (`corpus_mean`) of the others. An absent stream takes the
/// same value, so it reads z = 0: no drive, the networks' rest.
#[must_use]
pub fn centres(corpus_mean: &[f32]) -> Vec<f32> {
    FEATURES
        .iter()
        .zip(corpus_mean)
        .map(|((name, _, _), mean)| no_drive(name).unwrap_or(*mean))
        .collect()
}

/// Index of a v2 feature by name.
#[must_use]
pub fn feature_index(name: &str) -> Option<usize> {
    FEATURES.iter().position(|(n, _, _)| *n == name)
}

/// The clip-level reading of the kernel outputs that decides presence and `low_signal`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Streams {
    /// A picture that is more than a uniform field.
    pub video: bool,
    /// Sound above [`AUDIBLE_DBFS`].
    pub audio: bool,
    /// Gated loudness of the clip (dBFS of mean energy), `None` without audio.
    pub loudness_dbfs: Option<f64>,
    /// Nothing in the clip changes: no motion, cut or luminance change in the picture and no
    /// onset, flux or level change in the sound (see [`low_signal`]).
    pub low_signal: bool,
}

/// A decoded audio track's gated loudness (dBFS of mean energy, gated as
/// [`gated_loudness`]); `None` when it has no audible second.
#[must_use]
pub fn track_loudness(samples: &[f32], rate: usize) -> Option<f64> {
    let mut meter = crate::media::loudness::Meter::new(rate);
    meter.add(samples);
    gated_loudness(&meter.seconds())
}

/// Per-second loudness (dBFS of the mean energy of the second's hops, floored at
/// [`FLOOR_DBFS`]), pooled on the same hop grid as `pool.wgsl` (moved back by `hop_offset`).
#[must_use]
pub fn loudness_per_second(hop_feats: &[f32], seconds: usize, hop_offset: usize) -> Vec<f64> {
    let hops = hop_feats.len() / HOP_FEATURES;
    (0..seconds)
        .map(|t| {
            let a = (t * HOPS_PER_SECOND).saturating_sub(hop_offset).min(hops);
            let b = ((t + 1) * HOPS_PER_SECOND - hop_offset).min(hops);
            if a >= b {
                return FLOOR_DBFS;
            }
            let energy: f64 = (a..b)
                .map(|i| 10f64.powf(f64::from(hop_feats[i * HOP_FEATURES]) / 10.0))
                .sum::<f64>()
                / (b - a) as f64;
            (10.0 * energy.max(1e-30).log10()).max(FLOOR_DBFS)
        })
        .collect()
}

/// Column of a v1 kernel feature in the raw `seconds x 27` matrix.
fn v1(name: &str) -> usize {
    super::features::feature_index(name).expect("a v1 kernel column named in v2")
}

/// Reads presence and `low_signal` from the kernel outputs. `has_video` / `has_audio` say which
/// streams decoded at all; `source_dbfs` is the audio's gated loudness as decoded, before any
/// normalisation (`None` to read it from `loudness`), which decides whether it is audible.
#[must_use]
pub fn streams(
    raw_v1: &[f32],
    loudness: &[f64],
    has_video: bool,
    has_audio: bool,
    speech_detected: bool,
    source_dbfs: Option<Option<f64>>,
) -> Streams {
    let f = FEATURE_COUNT;
    let rows: Vec<&[f32]> = raw_v1.chunks_exact(f).collect();
    let max = |k: usize| rows.iter().map(|r| r[k]).fold(0f32, f32::max);
    let loudness_dbfs = if has_audio {
        gated_loudness(loudness)
    } else {
        None
    };
    let audible = source_dbfs.unwrap_or(loudness_dbfs);
    let audio = has_audio && audible.is_some_and(|l| l > AUDIBLE_DBFS);
    let moving = max(v1("motion")) > 0.002 || max(v1("cut")) > 0.05;
    let video = has_video && (max(v1("contrast")) > UNIFORM_CONTRAST || moving);
    let picture_changes = video && (moving || max(v1("luma_change")) > 0.01);
    let level_changes = loudness.windows(2).any(|w| (w[1] - w[0]).abs() > 3.0);
    let sound_changes = audio
        && (speech_detected
            || max(v1("onset_rate")) > 0.0
            || max(v1("flux")) > 0.05
            || level_changes);
    Streams {
        video,
        audio,
        loudness_dbfs,
        low_signal: !picture_changes && !sound_changes,
    }
}

/// The v2 feature matrix (`seconds x 40`) from the v1 kernel columns, the per-second loudness,
/// the face features and motion energy (`None` without a picture) and the language features
/// (`None` when speech was not analysed). Absent columns read 0 here and take the model's absent value in the
/// response kernel.
///
/// `luma_range` is the clip's luma range (`picture::Picture::luma_range`, 1 for models before
/// v2.5): `contrast` and `edges`, both linear in luma, are divided by it, so they read as they
/// would on the picture stretched to its black and white points.
#[must_use]
pub fn derive(
    raw_v1: &[f32],
    loudness: &[f64],
    streams: &Streams,
    faces: Option<&[[f32; FACE_FEATURES]]>,
    motion: Option<&[f32]>,
    language: Option<&LanguageFeatures>,
    luma_range: f32,
) -> Vec<f32> {
    let f1 = FEATURE_COUNT;
    let levels = 1.0 / luma_range.max(super::picture::MIN_LUMA_RANGE);
    let seconds = raw_v1.len() / f1;
    let reference = streams.loudness_dbfs.unwrap_or(FLOOR_DBFS);
    let relative = |t: usize| {
        let l = loudness.get(t).copied().unwrap_or(FLOOR_DBFS);
        if l <= FLOOR_DBFS {
            RELATIVE_RANGE.0
        } else {
            (l - reference).clamp(RELATIVE_RANGE.0, RELATIVE_RANGE.1)
        }
    };
    let speech_present = language.is_some_and(|l| l.detected);
    let mut out = Vec::with_capacity(seconds * FEATURE_COUNT_V2);
    for t in 0..seconds {
        let r = &raw_v1[t * f1..(t + 1) * f1];
        let col = |name: &str| r[v1(name)];
        out.push(col("contrast") * levels);
        out.push(col("colourfulness"));
        out.push(col("edges") * levels);
        out.push(col("motion"));
        out.push(col("motion_coarse"));
        out.push(motion.and_then(|m| m.get(t).copied()).unwrap_or(0.0));
        for name in ["cut", "saliency", "luma_change"] {
            out.push(col(name));
        }
        out.extend_from_slice(
            &faces
                .and_then(|f| f.get(t).copied())
                .unwrap_or([0.0; FACE_FEATURES]),
        );
        out.push(relative(t) as f32);
        for name in [
            "centroid_khz",
            "flux",
            "onset_strength",
            "speech_ratio",
            "flatness",
            "bass_ratio",
        ] {
            out.push(col(name));
        }
        let mel0 = v1("mel_0");
        let mels = &r[mel0..mel0 + super::features::MEL_BANDS];
        let mean = mels.iter().sum::<f32>() / mels.len() as f32;
        out.extend(mels.iter().map(|m| m - mean));
        let change = if t == 0 {
            0.0
        } else {
            (relative(t) - relative(t - 1)).abs()
        };
        out.push(change as f32);
        out.push(col("syllabic"));
        out.push(col("onset_rate"));
        match language {
            Some(l) => out.extend_from_slice(
                &l.per_second[t * LANGUAGE_FEATURES..(t + 1) * LANGUAGE_FEATURES],
            ),
            None => out.extend(std::iter::repeat_n(0.0, LANGUAGE_FEATURES)),
        }
        out.push(f32::from(u8::from(streams.video)));
        out.push(f32::from(u8::from(streams.audio)));
        out.push(f32::from(u8::from(speech_present)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_grouped_and_the_language_block_fits() {
        assert_eq!(FEATURE_COUNT_V2, 42);
        assert_eq!(
            feature_index("face_area"),
            feature_index("face_presence").map(|i| i + FACE_FEATURES - 1)
        );
        let first = feature_index("speech_presence").expect("listed");
        assert_eq!(
            feature_index("axis_product"),
            Some(first + LANGUAGE_FEATURES - 1)
        );
        for (name, _, _) in FEATURES {
            assert!(!name.is_empty());
        }
    }

    #[test]
    fn loudness_is_the_energy_mean_so_pauses_are_not_events() {
        // One second of speech at -20 dBFS with a 30 % pause at the floor: the mean of dB
        // would read -20*0.7 + -100*0.3 = -44 dB; the energy mean reads about -21.5 dB.
        let mut hops = vec![0f32; 100 * HOP_FEATURES];
        for h in 0..100 {
            hops[h * HOP_FEATURES] = if h < 70 { -20.0 } else { -100.0 };
        }
        let l = loudness_per_second(&hops, 1, 0);
        assert!(
            (l[0] - (-20.0 + 10.0 * 0.7f64.log10())).abs() < 1e-6,
            "{l:?}"
        );
    }

    #[test]
    fn gating_ignores_silence_and_quiet_tails() {
        assert_eq!(gated_loudness(&[-90.0, -80.0]), None);
        let g = gated_loudness(&[-20.0, -20.0, -45.0, -90.0]).expect("audible");
        assert!((g + 20.0).abs() < 1e-9, "{g}");
    }

    #[test]
    fn relative_loudness_and_mel_shape_do_not_move_with_gain() {
        let mut raw = vec![0f32; 2 * FEATURE_COUNT];
        let mel0 = super::super::features::feature_index("mel_0").expect("v1");
        for t in 0..2 {
            for m in 0..8 {
                raw[t * FEATURE_COUNT + mel0 + m] = m as f32 - 3.0 + t as f32;
            }
        }
        let quiet_raw: Vec<f32> = raw
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let k = i % FEATURE_COUNT;
                if (mel0..mel0 + 8).contains(&k) {
                    v - 4.6 // ln(0.01): -20 dB of power
                } else {
                    *v
                }
            })
            .collect();
        let loud = [-18.0, -24.0];
        let quiet = [-38.0, -44.0];
        let s = |l: &[f64]| streams(&raw, l, false, true, false, None);
        let a = derive(&raw, &loud, &s(&loud), None, None, None, 1.0);
        let b = derive(&quiet_raw, &quiet, &s(&quiet), None, None, None, 1.0);
        for (k, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                (x - y).abs() < 1e-4,
                "feature {} moved: {x} vs {y}",
                FEATURES[k % FEATURE_COUNT_V2].0
            );
        }
    }

    #[test]
    fn a_silent_black_second_inside_a_clip_reads_as_an_absent_stream() {
        // The kernels' output for a black frame and silence (v1's absent values), inside a clip
        // whose streams are present elsewhere: every drive feature takes its no-drive value,
        // so silence within a clip and a missing stream read the same (z = 0, rest).
        let raw = super::super::prior::absent_values();
        let present = Streams {
            video: true,
            audio: true,
            loudness_dbfs: Some(-23.0),
            low_signal: false,
        };
        let words = LanguageFeatures {
            per_second: vec![0.0; LANGUAGE_FEATURES],
            detected: true,
        };
        let row = derive(
            &raw,
            &[FLOOR_DBFS],
            &present,
            Some(&[[0.0; FACE_FEATURES]]),
            Some(&[0.0]),
            Some(&words),
            0.5,
        );
        for (k, (name, _, _)) in FEATURES.iter().enumerate() {
            if let Some(v) = no_drive(name) {
                assert!((row[k] - v).abs() < 1e-6, "{name}: {} vs {v}", row[k]);
            }
        }
    }

    #[test]
    fn every_feature_with_a_prior_weight_has_a_no_drive_value() {
        // A weighted feature centred on the corpus mean could push a network below rest when
        // its stream is there but weak, so removing the stream would raise the network.
        for (name, _, _) in super::super::prior::FEATURE_CONSTRUCTS {
            assert!(no_drive(name).is_some(), "{name} has a prior weight");
        }
        let centre = centres(&[7.0; FEATURE_COUNT_V2]);
        assert_eq!(centre[feature_index("loudness").expect("v2")], -40.0);
        assert_eq!(centre[feature_index("centroid_khz").expect("v2")], 7.0);
    }

    #[test]
    fn silence_and_uniform_frames_are_absent_and_low_signal() {
        let raw = vec![0f32; 5 * FEATURE_COUNT];
        let s = streams(&raw, &[FLOOR_DBFS; 5], true, true, false, None);
        assert!(!s.video && !s.audio && s.low_signal, "{s:?}");
        let mut moving = raw.clone();
        moving[2 * FEATURE_COUNT + v1("motion")] = 0.05;
        moving[2 * FEATURE_COUNT + v1("contrast")] = 0.2;
        let s = streams(&moving, &[FLOOR_DBFS; 5], true, true, false, None);
        assert!(s.video && !s.audio && !s.low_signal, "{s:?}");
    }
}
