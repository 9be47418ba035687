//! The qualia feature set and the constant tables the kernels share with the CPU reference.
//!
//! Everything numeric the WGSL kernels read from the host (window, twiddles, mel filters, DFT
//! table, response kernel) is built here once, in f64 and rounded to f32, so the GPU path and
//! [`super::reference`] start from identical numbers and any difference is the kernels' own.

use std::f64::consts::PI;

/// Floats per frame written by `visual.wgsl`.
pub const FRAME_FEATURES: usize = 8;
/// Floats per hop written by `audio.wgsl`.
pub const HOP_FEATURES: usize = 15;
/// 16 kHz samples per 10 ms hop.
pub const HOP: usize = 160;
/// Analysis window (32 ms) and FFT size.
pub const WINDOW: usize = 512;
/// Power-spectrum bins of one window.
pub const BINS: usize = WINDOW / 2 + 1;
pub const HOPS_PER_SECOND: usize = 100;
/// Samples from a window's start to its hop's start (windows are centred on their hop).
pub const PRE: usize = (WINDOW - HOP) / 2;
/// Samples in an audio batch buffer before its first output hop: the lead hop and the pre-roll
/// of the lead hop's window.
pub const LEAD: usize = PRE + HOP;
pub const MEL_BANDS: usize = 8;
pub const SAMPLE_RATE: u32 = 16_000;
/// The frame grid used for coarse motion and saliency: frame sizes must be multiples of it.
pub const GRID: (u32, u32) = (32, 18);

/// The active picture of a decoded frame, `[x0, x1) x [y0, y1)` in pixels: the frame less the
/// letterbox or pillarbox bars (the decoder's padding and bars baked into the source). The
/// visual kernel computes every feature over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Rect {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl Rect {
    /// The whole `width x height` frame.
    #[must_use]
    pub fn full(width: u32, height: u32) -> Self {
        Self {
            x0: 0,
            y0: 0,
            x1: width,
            y1: height,
        }
    }

    #[must_use]
    pub fn width(self) -> u32 {
        self.x1 - self.x0
    }

    #[must_use]
    pub fn height(self) -> u32 {
        self.y1 - self.y0
    }

    /// Fits a `width x height` frame and is large enough for the 32 x 18 grid.
    #[must_use]
    pub fn is_valid_in(self, width: u32, height: u32) -> bool {
        self.x0 < self.x1
            && self.y0 < self.y1
            && self.x1 <= width
            && self.y1 <= height
            && self.width() >= GRID.0
            && self.height() >= GRID.1
    }
}

/// Which input a feature is computed from; an absent modality takes the model's absent value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Modality {
    Visual,
    Audio,
    /// Speech and language (voice activity, the transcript): absent when the clip has no
    /// audible sound or speech was not analysed.
    Speech,
    /// Clip-level flags that are always present (which streams the clip had).
    Clip,
}

impl Modality {
    /// The bit of this modality in the presence mask the response kernel reads.
    #[must_use]
    pub fn bit(self) -> u32 {
        match self {
            Self::Visual => 1,
            Self::Audio => 2,
            Self::Speech => 4,
            Self::Clip => 8,
        }
    }

    /// The code `response.wgsl` reads from the stats table.
    #[must_use]
    pub fn code(self) -> f32 {
        match self {
            Self::Visual => 0.0,
            Self::Audio => 1.0,
            Self::Speech => 2.0,
            Self::Clip => 3.0,
        }
    }
}

/// The per-second features, in the order the kernels write them and the model file lists them.
pub const FEATURES: [(&str, Modality, &str); 27] = [
    ("luma", Modality::Visual, "mean luma (Rec. 601), 0-1"),
    ("contrast", Modality::Visual, "RMS contrast of luma"),
    (
        "colourfulness",
        Modality::Visual,
        "Hasler-Süsstrunk colourfulness",
    ),
    (
        "edges",
        Modality::Visual,
        "mean Sobel gradient magnitude of luma",
    ),
    (
        "motion",
        Modality::Visual,
        "mean absolute luma change to the previous frame",
    ),
    (
        "motion_coarse",
        Modality::Visual,
        "mean absolute change of the 32x18 grid of cell means",
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
        "level_db",
        Modality::Audio,
        "RMS level in dBFS per 10 ms hop (floor -100)",
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
        "mel_0",
        Modality::Audio,
        "log energy of mel band 0 (lowest)",
    ),
    ("mel_1", Modality::Audio, "log energy of mel band 1"),
    ("mel_2", Modality::Audio, "log energy of mel band 2"),
    ("mel_3", Modality::Audio, "log energy of mel band 3"),
    ("mel_4", Modality::Audio, "log energy of mel band 4"),
    ("mel_5", Modality::Audio, "log energy of mel band 5"),
    ("mel_6", Modality::Audio, "log energy of mel band 6"),
    (
        "mel_7",
        Modality::Audio,
        "log energy of mel band 7 (highest)",
    ),
    (
        "level_change",
        Modality::Audio,
        "absolute change of level from the previous second (dB)",
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
];

pub const FEATURE_COUNT: usize = FEATURES.len();

/// Index of a feature by name (for tests and the prior table).
#[must_use]
pub fn feature_index(name: &str) -> Option<usize> {
    FEATURES.iter().position(|(n, _, _)| *n == name)
}

/// Periodic Hann window of [`WINDOW`] points.
#[must_use]
pub fn hann() -> Vec<f32> {
    (0..WINDOW)
        .map(|n| (0.5 - 0.5 * (2.0 * PI * n as f64 / WINDOW as f64).cos()) as f32)
        .collect()
}

/// FFT twiddles `(cos, -sin)(2πk/N)` for k < N/2.
#[must_use]
pub fn twiddles() -> Vec<[f32; 2]> {
    (0..WINDOW / 2)
        .map(|k| {
            let a = 2.0 * PI * k as f64 / WINDOW as f64;
            [a.cos() as f32, (-a.sin()) as f32]
        })
        .collect()
}

fn hz_to_mel(f: f64) -> f64 {
    2595.0 * (1.0 + f / 700.0).log10()
}

fn mel_to_hz(m: f64) -> f64 {
    700.0 * (10f64.powf(m / 2595.0) - 1.0)
}

/// Triangular HTK-mel filters, [`MEL_BANDS`] x [`BINS`], 50 Hz to 8 kHz, peak 1.
#[must_use]
pub fn mel_filters() -> Vec<f32> {
    let (lo, hi) = (hz_to_mel(50.0), hz_to_mel(f64::from(SAMPLE_RATE) / 2.0));
    let edges: Vec<f64> = (0..MEL_BANDS + 2)
        .map(|i| mel_to_hz(lo + (hi - lo) * i as f64 / (MEL_BANDS + 1) as f64))
        .collect();
    let mut out = vec![0f32; MEL_BANDS * BINS];
    for b in 0..MEL_BANDS {
        let (l, c, r) = (edges[b], edges[b + 1], edges[b + 2]);
        for k in 0..BINS {
            let f = k as f64 * f64::from(SAMPLE_RATE) / WINDOW as f64;
            let w = if f > l && f <= c {
                (f - l) / (c - l)
            } else if f > c && f < r {
                (r - f) / (r - c)
            } else {
                0.0
            };
            out[b * BINS + k] = w as f32;
        }
    }
    out
}

/// `(cos, sin)(2πm/100)`: the per-second envelope DFT at whole hertz.
#[must_use]
pub fn dft_table() -> Vec<[f32; 2]> {
    (0..HOPS_PER_SECOND)
        .map(|m| {
            let a = 2.0 * PI * m as f64 / HOPS_PER_SECOND as f64;
            [a.cos() as f32, a.sin() as f32]
        })
        .collect()
}

fn gamma_pdf(t: f64, shape: f64) -> f64 {
    if t <= 0.0 {
        return 0.0;
    }
    // Γ(shape) for the integer shapes the SPM HRF uses.
    let gamma: f64 = (1..shape as u64).map(|k| k as f64).product();
    t.powf(shape - 1.0) * (-t).exp() / gamma
}

/// SPM's canonical double-gamma HRF (peak shape 6, undershoot shape 16, ratio 1/6, dispersion
/// 1 s) sampled at 1 s for `taps` seconds, scaled to unit sum so a sustained z of 1 reads 1.
#[must_use]
pub fn canonical_hrf(taps: usize) -> Vec<f32> {
    let raw: Vec<f64> = (0..taps)
        .map(|t| gamma_pdf(t as f64, 6.0) - gamma_pdf(t as f64, 16.0) / 6.0)
        .collect();
    let sum: f64 = raw.iter().sum();
    raw.iter().map(|v| (v / sum) as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrf_peaks_at_five_seconds_and_undershoots() {
        let h = canonical_hrf(32);
        let peak = h
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i);
        assert_eq!(peak, Some(5));
        assert!(h[15] < 0.0, "undershoot expected at 15 s, got {}", h[15]);
        let sum: f32 = h.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5);
    }

    #[test]
    fn mel_filters_cover_the_band_without_gaps() {
        let m = mel_filters();
        for k in 3..250 {
            let s: f32 = (0..MEL_BANDS).map(|b| m[b * BINS + k]).sum();
            assert!(s > 0.0, "bin {k} has no filter");
        }
        assert_eq!(FEATURE_COUNT, 27);
        assert_eq!(feature_index("syllabic"), Some(25));
    }
}
