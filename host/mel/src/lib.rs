//! Whisper's log-mel spectrogram, bit for bit what `candle_transformers`' `pcm_to_mel`
//! computes, at a fraction of its cost.
//!
//! Why our own: candle's version (a port of whisper.cpp's) evaluates every sine and cosine
//! inside its FFT on every frame, and a 400-point FFT ends in sixteen naive 25-point DFTs, so
//! a frame costs about 10,000 `sincos` calls. Every spectrogram also covers 30 s of appended
//! silence plus candle's own padding (a 6 s clip is 6,000 frames, 5,400 of them silent), and
//! it spawns two threads per call whatever the compute budget. Profiling a scan of a 6 s
//! spoken clip on two cores put 10 % of all its CPU time in those FFTs.
//!
//! What this module changes, and why the result is the same bits:
//! - the twiddles and the DFT's angles are tabulated once, each computed by the same f32
//!   expression from the same operands, so every table entry equals the value candle
//!   recomputes; the sums then run in candle's order with the same operands;
//! - a frame whose windowed samples are all zero is not transformed: the FFT of zeros is
//!   exactly zero, so its mel energies are `log10(1e-10)` whatever the filters, as candle's
//!   arithmetic gives;
//! - frames run on the calling thread.
//!
//! Its own crate so that debug builds (the test suite) compile it optimised, as candle is: at
//! `opt-level` 0 the host's copy took 1.6 to 4 times candle's time, not a fraction of it.
//!
//! A unit test compares the two on real speech, on silence and at lengths that end mid-frame,
//! and requires equal bits.

use std::sync::OnceLock;

/// Whisper's audio constants (`candle_transformers::models::whisper`'s, checked equal in the
/// tests): the FFT size, the hop, and the chunk length in seconds.
pub const N_FFT: usize = 400;
pub const HOP_LENGTH: usize = 160;
pub const CHUNK_LENGTH: usize = 30;

/// The transform's precomputed angles for one FFT size: for each radix-2 level (sizes `n`,
/// `n/2`, …) the twiddles `cos`, `−sin` of `2π k / n`, and for the odd size the recursion ends
/// in, the DFT's `cos`, `sin` of `2π k j / n`.
struct Plan {
    /// `(n, cos, minus_sin)` per even size, largest first.
    levels: Vec<(usize, Vec<f32>, Vec<f32>)>,
    /// The odd size the halving ends in, and its `cos`/`sin` tables (row-major `k × j`).
    odd: usize,
    dft_cos: Vec<f32>,
    dft_sin: Vec<f32>,
    hann: Vec<f32>,
}

impl Plan {
    fn new(n: usize) -> Self {
        let two_pi = std::f32::consts::PI + std::f32::consts::PI;
        let mut levels = Vec::new();
        let mut size = n;
        while size > 1 && size.is_multiple_of(2) {
            let n_t = size as f32;
            let (cos, minus_sin) = (0..size / 2)
                .map(|k| {
                    let theta = two_pi * k as f32 / n_t;
                    (theta.cos(), -theta.sin())
                })
                .unzip();
            levels.push((size, cos, minus_sin));
            size /= 2;
        }
        let odd = size;
        let n_t = odd as f32;
        let mut dft_cos = Vec::with_capacity(odd * odd);
        let mut dft_sin = Vec::with_capacity(odd * odd);
        for k in 0..odd {
            for j in 0..odd {
                let angle = two_pi * k as f32 * j as f32 / n_t;
                dft_cos.push(angle.cos());
                dft_sin.push(angle.sin());
            }
        }
        let n_t = n as f32;
        let hann = (0..n)
            .map(|i| 0.5 * (1.0 - ((two_pi * i as f32) / n_t).cos()))
            .collect();
        Self {
            levels,
            odd,
            dft_cos,
            dft_sin,
            hann,
        }
    }

    /// The interleaved complex FFT of real `input`, as candle's recursive `fft` computes it.
    fn fft(&self, input: &[f32], level: usize) -> Vec<f32> {
        let n = input.len();
        if n == 1 {
            return vec![input[0], 0.0];
        }
        if n % 2 == 1 {
            return self.dft(input);
        }
        let (size, cos, minus_sin) = &self.levels[level];
        debug_assert_eq!(*size, n);
        let even: Vec<f32> = input.iter().step_by(2).copied().collect();
        let odd: Vec<f32> = input.iter().skip(1).step_by(2).copied().collect();
        let even_fft = self.fft(&even, level + 1);
        let odd_fft = self.fft(&odd, level + 1);
        let mut out = vec![0.0; n * 2];
        for k in 0..n / 2 {
            let (re, im) = (cos[k], minus_sin[k]);
            let (re_odd, im_odd) = (odd_fft[2 * k], odd_fft[2 * k + 1]);
            out[2 * k] = even_fft[2 * k] + re * re_odd - im * im_odd;
            out[2 * k + 1] = even_fft[2 * k + 1] + re * im_odd + im * re_odd;
            out[2 * (k + n / 2)] = even_fft[2 * k] - re * re_odd + im * im_odd;
            out[2 * (k + n / 2) + 1] = even_fft[2 * k + 1] - re * im_odd - im * re_odd;
        }
        out
    }

    fn dft(&self, input: &[f32]) -> Vec<f32> {
        let n = input.len();
        debug_assert_eq!(n, self.odd);
        let mut out = Vec::with_capacity(2 * n);
        for k in 0..n {
            let (mut re, mut im) = (0.0f32, 0.0f32);
            for (j, &x) in input.iter().enumerate() {
                re += x * self.dft_cos[k * n + j];
                im -= x * self.dft_sin[k * n + j];
            }
            out.push(re);
            out.push(im);
        }
        out
    }
}

/// The plan for Whisper's 400-point FFT, built on first use.
fn plan() -> &'static Plan {
    static PLAN: OnceLock<Plan> = OnceLock::new();
    PLAN.get_or_init(|| Plan::new(N_FFT))
}

/// Whisper's normalised log-mel spectrogram of 16 kHz mono `samples`, `(n_mel, frames)`
/// row-major, equal bit for bit to `candle_transformers::models::whisper::audio::pcm_to_mel`
/// with `num_mel_bins = n_mel` (including its padding to whole 15 s chunks plus one more).
/// `filters` is the `(n_mel, 201)` filter bank.
#[must_use]
pub fn log_mel(samples: &[f32], filters: &[f32], n_mel: usize) -> Vec<f32> {
    let (fft_size, step) = (N_FFT, HOP_LENGTH);
    let plan = plan();
    let n_fft = 1 + fft_size / 2;
    let pad = 100 * CHUNK_LENGTH / 2;
    let n_len = samples.len() / step;
    let n_len = if n_len.is_multiple_of(pad) {
        n_len
    } else {
        (n_len / pad + 1) * pad
    } + pad;
    let n_samples = n_len * step;
    let sample = |i: usize| samples.get(i).copied().unwrap_or(0.0);
    // The value of every mel bin of a frame with no energy (candle's floor, then log10).
    let silent = 1e-10f32.log10();
    let mut mel = vec![0.0f32; n_len * n_mel];
    let mut windowed = vec![0.0f32; fft_size];
    let end = (n_samples / step + 1).min(n_len);
    for i in 0..end {
        let offset = i * step;
        let available = fft_size.min(n_samples - offset);
        for (j, w) in windowed.iter_mut().enumerate() {
            *w = if j < available {
                plan.hann[j] * sample(offset + j)
            } else {
                0.0
            };
        }
        if windowed.iter().all(|w| *w == 0.0) {
            for j in 0..n_mel {
                mel[j * n_len + i] = silent;
            }
            continue;
        }
        let mut spectrum = plan.fft(&windowed, 0);
        for j in 0..fft_size {
            spectrum[j] =
                spectrum[2 * j] * spectrum[2 * j] + spectrum[2 * j + 1] * spectrum[2 * j + 1];
        }
        for j in 1..fft_size / 2 {
            let v = spectrum[fft_size - j];
            spectrum[j] += v;
        }
        for j in 0..n_mel {
            let row = &filters[j * n_fft..(j + 1) * n_fft];
            let mut sum = 0.0f32;
            let mut k = 0;
            // The same grouping as candle's unrolled loop, so the rounding is the same.
            while k < n_fft.saturating_sub(3) {
                sum += spectrum[k] * row[k]
                    + spectrum[k + 1] * row[k + 1]
                    + spectrum[k + 2] * row[k + 2]
                    + spectrum[k + 3] * row[k + 3];
                k += 4;
            }
            while k < n_fft {
                sum += spectrum[k] * row[k];
                k += 1;
            }
            mel[j * n_len + i] = sum.max(1e-10).log10();
        }
    }
    let floor = mel
        .iter()
        .max_by(|u, v| u.partial_cmp(v).unwrap_or(std::cmp::Ordering::Greater))
        .copied()
        .unwrap_or(0.0)
        - 8.0;
    for v in &mut mel {
        *v = v.max(floor) / 4.0 + 1.0;
    }
    mel
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_transformers::models::whisper::{self as m, audio};

    /// A filter bank with Whisper's shape whose rows differ (the exactness does not depend on
    /// the real bank's values, and the real one is a model file).
    fn filters(n_mel: usize) -> Vec<f32> {
        (0..n_mel * 201)
            .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
            .collect()
    }

    fn candle(samples: &[f32], filters: &[f32], n_mel: usize) -> Vec<f32> {
        let config: m::Config = serde_json::from_value(serde_json::json!({
            "num_mel_bins": n_mel, "max_source_positions": 1500, "d_model": 384,
            "encoder_attention_heads": 6, "encoder_layers": 4, "vocab_size": 51864,
            "max_target_positions": 448, "decoder_attention_heads": 6, "decoder_layers": 4,
            "suppress_tokens": []
        }))
        .expect("config");
        audio::pcm_to_mel(&config, samples, filters)
    }

    fn assert_same_bits(samples: &[f32], n_mel: usize) {
        let filters = filters(n_mel);
        let ours = log_mel(samples, &filters, n_mel);
        let theirs = candle(samples, &filters, n_mel);
        assert_eq!(ours.len(), theirs.len());
        let differing = ours
            .iter()
            .zip(&theirs)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(differing, 0, "{differing} of {} values differ", ours.len());
    }

    /// Speech-like audio: a vowel-like harmonic stack with a moving pitch, bursts of noise,
    /// then 30 s of the silence the transcriber appends.
    fn speechlike(seconds: f32) -> Vec<f32> {
        let n = (seconds * 16_000.0) as usize;
        let mut state = 12_345u32;
        let mut noise = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let mut pcm: Vec<f32> = (0..n)
            .map(|i| {
                let t = i as f32 / 16_000.0;
                let f0 = 120.0 + 40.0 * (t * 1.3).sin();
                let voiced: f32 = (1..6)
                    .map(|h| (2.0 * std::f32::consts::PI * f0 * h as f32 * t).sin() / h as f32)
                    .sum();
                let burst = if (t * 3.0).fract() < 0.1 {
                    noise()
                } else {
                    0.0
                };
                0.2 * voiced + 0.3 * burst
            })
            .collect();
        pcm.resize(n + m::N_SAMPLES, 0.0);
        pcm
    }

    #[test]
    fn equals_candles_spectrogram_bit_for_bit_on_speech_and_padding() {
        assert_same_bits(&speechlike(6.0), 80);
        // A length that ends mid-hop and mid-frame, with the 128 bins of large-v3.
        assert_same_bits(&speechlike(2.013)[..40_123], 128);
    }

    #[test]
    fn the_constants_are_candles() {
        assert_eq!(
            (N_FFT, HOP_LENGTH, CHUNK_LENGTH),
            (m::N_FFT, m::HOP_LENGTH, m::CHUNK_LENGTH)
        );
    }

    #[test]
    fn equals_candles_spectrogram_on_silence_and_on_nothing() {
        assert_same_bits(&vec![0.0; m::N_SAMPLES], 80);
        assert_same_bits(&[], 80);
        // One nonzero sample: only the frames whose window covers it carry energy.
        let mut one = vec![0.0; 20_000];
        one[10_007] = 0.5;
        assert_same_bits(&one, 80);
    }
}
