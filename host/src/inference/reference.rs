//! A plain-Rust reference of every qualia kernel, written for clarity and computed in f64.
//!
//! It is not used at scan time. The parity tests run each WGSL kernel and this code on the same
//! inputs and require agreement within 1e-4 (relative where values are large), so a kernel bug
//! cannot hide behind "the GPU says so". The spectrum is a direct DFT, independent of the
//! kernel's FFT algorithm.

use super::features::{
    BINS, FRAME_FEATURES, GRID, HOP, HOP_FEATURES, HOPS_PER_SECOND, MEL_BANDS, PRE, Rect, WINDOW,
};

const SPEECH: std::ops::RangeInclusive<usize> = 10..=108;
const BASS_HI: usize = 7;
const SILENT_POWER: f64 = 1e-6;

fn rgb(frame: &[u8], w: usize, x: usize, y: usize) -> [u32; 3] {
    let i = (y * w + x) * 3;
    [
        u32::from(frame[i]),
        u32::from(frame[i + 1]),
        u32::from(frame[i + 2]),
    ]
}

fn luma_of(c: [u32; 3]) -> f64 {
    (0.299 * f64::from(c[0]) + 0.587 * f64::from(c[1]) + 0.114 * f64::from(c[2])) / 255.0
}

fn luma_bin(c: [u32; 3]) -> usize {
    ((299 * c[0] + 587 * c[1] + 114 * c[2]) * 16 / 255_001) as usize
}

fn hue_bin(c: [u32; 3]) -> usize {
    let (r, g, b) = (c[0] as i32, c[1] as i32, c[2] as i32);
    let mx = r.max(g).max(b);
    let mn = r.min(g).min(b);
    let d = mx - mn;
    if d <= 25 {
        return 16;
    }
    let num = if mx == r {
        let n = g - b;
        if n < 0 { n + 6 * d } else { n }
    } else if mx == g {
        b - r + 2 * d
    } else {
        r - g + 4 * d
    };
    (((16 * num) / (6 * d)) as usize).min(15)
}

fn grid_means(frame: &[u8], w: usize, rect: Rect) -> Vec<f64> {
    let (gx, gy) = (GRID.0 as usize, GRID.1 as usize);
    let (x0, y0) = (rect.x0 as usize, rect.y0 as usize);
    let (rw, rh) = (rect.width() as usize, rect.height() as usize);
    let mut out = vec![0.0; gx * gy];
    for cy in 0..gy {
        for cx in 0..gx {
            let xs = x0 + cx * rw / gx;
            let xe = (x0 + (cx + 1) * rw / gx).max(xs + 1);
            let ys = y0 + cy * rh / gy;
            let ye = (y0 + (cy + 1) * rh / gy).max(ys + 1);
            let mut s = 0.0;
            for y in ys..ye {
                for x in xs..xe {
                    s += luma_of(rgb(frame, w, x, y));
                }
            }
            out[cy * gx + cx] = s / ((xe - xs) * (ye - ys)) as f64;
        }
    }
    out
}

/// Features of `cur` given the frame before it (see `visual.wgsl`).
#[must_use]
pub fn frame_features(prev: &[u8], cur: &[u8], w: usize, rect: Rect) -> [f32; FRAME_FEATURES] {
    let n = f64::from(rect.width() * rect.height());
    let (x0, y0, x1, y1) = (
        i64::from(rect.x0),
        i64::from(rect.y0),
        i64::from(rect.x1),
        i64::from(rect.y1),
    );
    let l = |x: i64, y: i64| {
        let x = x.clamp(x0, x1 - 1) as usize;
        let y = y.clamp(y0, y1 - 1) as usize;
        luma_of(rgb(cur, w, x, y))
    };
    let mut s = [0f64; 8];
    let mut hist = [[0i64; 33]; 2];
    for y in rect.y0 as usize..rect.y1 as usize {
        for x in rect.x0 as usize..rect.x1 as usize {
            let c = rgb(cur, w, x, y);
            let cp = rgb(prev, w, x, y);
            let (r, g, b) = (
                f64::from(c[0]) / 255.0,
                f64::from(c[1]) / 255.0,
                f64::from(c[2]) / 255.0,
            );
            let yl = luma_of(c);
            let rg = r - g;
            let yb = 0.5 * (r + g) - b;
            let (xi, yi) = (x as i64, y as i64);
            let gx = (l(xi + 1, yi - 1) + 2.0 * l(xi + 1, yi) + l(xi + 1, yi + 1))
                - (l(xi - 1, yi - 1) + 2.0 * l(xi - 1, yi) + l(xi - 1, yi + 1));
            let gy = (l(xi - 1, yi + 1) + 2.0 * l(xi, yi + 1) + l(xi + 1, yi + 1))
                - (l(xi - 1, yi - 1) + 2.0 * l(xi, yi - 1) + l(xi + 1, yi - 1));
            s[0] += yl;
            s[1] += yl * yl;
            s[2] += rg;
            s[3] += rg * rg;
            s[4] += yb;
            s[5] += yb * yb;
            s[6] += (gx * gx + gy * gy).sqrt();
            s[7] += (yl - luma_of(cp)).abs();
            hist[0][luma_bin(c)] += 1;
            hist[0][16 + hue_bin(c)] += 1;
            hist[1][luma_bin(cp)] += 1;
            hist[1][16 + hue_bin(cp)] += 1;
        }
    }
    let mean_y = s[0] / n;
    let var_y = (s[1] / n - mean_y * mean_y).max(0.0);
    let (mrg, myb) = (s[2] / n, s[4] / n);
    let var_rg = (s[3] / n - mrg * mrg).max(0.0);
    let var_yb = (s[5] / n - myb * myb).max(0.0);
    let colour = (var_rg + var_yb).sqrt() + 0.3 * (mrg * mrg + myb * myb).sqrt();
    let dist: i64 = (0..33).map(|k| (hist[0][k] - hist[1][k]).abs()).sum();
    let cut = 0.25 * dist as f64 / n;

    let gc = grid_means(cur, w, rect);
    let gp = grid_means(prev, w, rect);
    let (gx, gy) = (GRID.0 as i64, GRID.1 as i64);
    let (mut sal_sum, mut sal_max, mut coarse) = (0.0f64, 0.0f64, 0.0f64);
    for cy in 0..gy {
        for cx in 0..gx {
            let (mut sum, mut cnt) = (0.0, 0.0);
            for dy in -2..=2 {
                for dx in -2..=2 {
                    let (xx, yy) = (cx + dx, cy + dy);
                    if (0..gx).contains(&xx) && (0..gy).contains(&yy) {
                        sum += gc[(yy * gx + xx) as usize];
                        cnt += 1.0;
                    }
                }
            }
            let i = (cy * gx + cx) as usize;
            let d = (gc[i] - sum / cnt).abs();
            sal_sum += d;
            sal_max = sal_max.max(d);
            coarse += (gc[i] - gp[i]).abs();
        }
    }
    let cells = (gx * gy) as f64;
    [
        mean_y as f32,
        var_y.sqrt() as f32,
        colour as f32,
        (s[6] / n) as f32,
        (s[7] / n) as f32,
        (coarse / cells) as f32,
        cut as f32,
        (sal_max / (sal_sum / cells + 0.01)) as f32,
    ]
}

/// `frames` holds `n + 1` frames (the one before, then the batch); returns `n` rows computed
/// over `rect` (see `visual.wgsl`).
#[must_use]
pub fn visual(frames: &[u8], w: usize, h: usize, rect: Rect) -> Vec<f32> {
    let len = w * h * 3;
    let n = frames.len() / len - 1;
    (0..n)
        .flat_map(|k| {
            frame_features(
                &frames[k * len..(k + 1) * len],
                &frames[(k + 1) * len..(k + 2) * len],
                w,
                rect,
            )
        })
        .collect()
}

/// Power spectrum of the window starting at `start`, by a direct DFT.
#[must_use]
pub fn power_spectrum(samples: &[f32], start: usize, window: &[f32]) -> Vec<f64> {
    let x: Vec<f64> = (0..WINDOW)
        .map(|n| f64::from(samples.get(start + n).copied().unwrap_or(0.0)) * f64::from(window[n]))
        .collect();
    (0..BINS)
        .map(|k| {
            let (mut re, mut im) = (0.0, 0.0);
            for (n, v) in x.iter().enumerate() {
                let a = 2.0 * std::f64::consts::PI * (k * n % WINDOW) as f64 / WINDOW as f64;
                re += v * a.cos();
                im -= v * a.sin();
            }
            re * re + im * im
        })
        .collect()
}

/// Mirrors `audio.wgsl`: `samples` starts `PRE` samples before the lead hop; returns (power of every local hop,
/// features of hops 1..n_hops).
#[must_use]
pub fn audio(
    samples: &[f32],
    n_hops: usize,
    lead_is_self: bool,
    window: &[f32],
    mel: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let spectra: Vec<Vec<f64>> = (0..n_hops)
        .map(|j| power_spectrum(samples, j * HOP, window))
        .collect();
    let mut feats = Vec::with_capacity(n_hops.saturating_sub(1) * HOP_FEATURES);
    for j in 1..n_hops {
        let prev = if j == 1 && lead_is_self { j } else { j - 1 };
        let (p, pp) = (&spectra[j], &spectra[prev]);
        let hop: Vec<f64> = (j * HOP + PRE..(j + 1) * HOP + PRE)
            .filter_map(|i| samples.get(i).map(|v| f64::from(*v)))
            .collect();
        let rms = if hop.is_empty() {
            0.0
        } else {
            (hop.iter().map(|v| v * v).sum::<f64>() / hop.len() as f64).sqrt()
        };
        let level = 20.0 * rms.max(1e-5).log10();
        let total: f64 = p[1..].iter().sum();
        let weighted: f64 = (1..BINS).map(|k| k as f64 * 31.25 * p[k]).sum();
        let speech: f64 = p[SPEECH].iter().sum();
        let bass: f64 = p[1..=BASS_HI].iter().sum();
        let log_sum: f64 = p[1..].iter().map(|v| (v + 1e-8).ln()).sum();
        let mut row = [0f64; HOP_FEATURES];
        row[0] = level;
        if total >= SILENT_POWER {
            row[1] = weighted / total / 1000.0;
            row[3] = speech / total;
            row[4] = (log_sum / 256.0).exp() / (total / 256.0 + 1e-8);
            row[5] = bass / total;
        }
        row[6] = speech.sqrt() / 256.0;
        let mut flux = 0.0;
        for m in 0..MEL_BANDS {
            let band = |s: &[f64]| {
                (0..BINS)
                    .map(|k| f64::from(mel[m * BINS + k]) * s[k])
                    .sum::<f64>()
            };
            let le = (band(p) + 1e-6).ln();
            row[7 + m] = le;
            flux += (le - (band(pp) + 1e-6).ln()).max(0.0);
        }
        row[2] = flux / MEL_BANDS as f64;
        feats.extend(row.iter().map(|v| *v as f32));
    }
    (spectra.iter().flatten().map(|v| *v as f32).collect(), feats)
}

/// Mirrors `pool.wgsl`.
#[must_use]
pub fn pool(
    frame_feats: &[f32],
    hop_feats: &[f32],
    seconds: usize,
    fps: usize,
    onset_threshold: f32,
    hop_offset: usize,
    dft: &[[f32; 2]],
) -> Vec<f32> {
    const F: usize = super::features::FEATURE_COUNT;
    let nf = frame_feats.len() / FRAME_FEATURES;
    let nh = hop_feats.len() / HOP_FEATURES;
    let fv = |i: usize, k: usize| f64::from(frame_feats[i * FRAME_FEATURES + k]);
    let hv = |i: usize, k: usize| f64::from(hop_feats[i * HOP_FEATURES + k]);
    let frange = |t: usize| ((t * fps).min(nf), ((t + 1) * fps).min(nf));
    let hrange = |t: usize| {
        (
            (t * HOPS_PER_SECOND).saturating_sub(hop_offset).min(nh),
            ((t + 1) * HOPS_PER_SECOND - hop_offset).min(nh),
        )
    };
    let mean_frame = |t: usize, k: usize| {
        let (a, b) = frange(t);
        if a == b {
            if nf == 0 { 0.0 } else { fv(nf - 1, k) }
        } else {
            (a..b).map(|i| fv(i, k)).sum::<f64>() / (b - a) as f64
        }
    };
    let mean_hop = |t: usize, k: usize, silent: f64| {
        let (a, b) = hrange(t);
        if a == b {
            silent
        } else {
            (a..b).map(|i| hv(i, k)).sum::<f64>() / (b - a) as f64
        }
    };
    let silent_mel = (1e-6f64).ln();
    let thr = f64::from(onset_threshold);
    let mut out = vec![0f32; seconds * F];
    for t in 0..seconds {
        let mut row = [0f64; F];
        let (fa, fb) = frange(t);
        for (k, v) in row.iter_mut().enumerate().take(8) {
            *v = mean_frame(t, k);
        }
        if fa == fb {
            row[4] = 0.0;
            row[5] = 0.0;
            row[6] = 0.0;
        } else {
            row[6] = (fa..fb).map(|i| fv(i, 6)).fold(0.0, f64::max);
        }
        row[8] = if t == 0 {
            0.0
        } else {
            (row[0] - mean_frame(t - 1, 0)).abs()
        };
        let (ha, hb) = hrange(t);
        row[9] = mean_hop(t, 0, -100.0);
        row[10] = mean_hop(t, 1, 0.0);
        row[11] = mean_hop(t, 2, 0.0);
        row[12] = (ha..hb).map(|i| hv(i, 2)).fold(0.0, f64::max);
        row[13] = mean_hop(t, 3, 0.0);
        row[14] = mean_hop(t, 4, 0.0);
        row[15] = mean_hop(t, 5, 0.0);
        for m in 0..MEL_BANDS {
            row[16 + m] = mean_hop(t, 7 + m, silent_mel);
        }
        row[24] = if t == 0 {
            0.0
        } else {
            (row[9] - mean_hop(t - 1, 0, -100.0)).abs()
        };
        let n = hb - ha;
        if n >= 2 {
            let mean_env = mean_hop(t, 6, 0.0);
            let mut band = 0.0;
            for f in 2..=8usize {
                let (mut cr, mut ci) = (0.0, 0.0);
                for i in 0..n {
                    let e = hv(ha + i, 6) - mean_env;
                    let w = dft[(f * i) % HOPS_PER_SECOND];
                    cr += e * f64::from(w[0]);
                    ci -= e * f64::from(w[1]);
                }
                band += cr * cr + ci * ci;
            }
            row[25] = 4.0 * band / ((n * n) as f64 * mean_env * mean_env + 1e-12);
        }
        row[26] = (ha..hb)
            .filter(|&i| i > 0 && hv(i, 2) > thr && hv(i - 1, 2) <= thr)
            .count() as f64;
        for (k, v) in row.iter().enumerate() {
            out[t * F + k] = *v as f32;
        }
    }
    out
}

/// Mirrors `response.wgsl`: returns (z, r, y).
#[must_use]
pub fn response(
    raw: &[f32],
    model: &super::model::Model,
    present: super::model::Presence,
    time_base: super::model::TimeBase,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let f = model.features.len();
    let t_len = raw.len() / f;
    let nets = super::model::NETWORK_COUNT;
    let z: Vec<f64> = raw
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let k = i % f;
            let x = if present.has(model.modality[k]) {
                f64::from(*x)
            } else {
                f64::from(model.absent[k])
            };
            ((x - f64::from(model.mean[k])) / f64::from(model.std[k])).clamp(-10.0, 10.0)
        })
        .collect();
    let r = convolve(&z, t_len, f, &model.hrf, model.kernel(time_base));
    let mut y = vec![0f64; t_len * nets];
    for t in 0..t_len {
        for n in 0..nets {
            let mut acc = f64::from(model.bias[n]);
            for k in 0..f {
                acc += f64::from(model.weights[n * f + k]) * r[t * f + k];
            }
            y[t * nets + n] = acc;
        }
    }
    let cast = |v: &[f64]| v.iter().map(|x| *x as f32).collect::<Vec<f32>>();
    (cast(&z), cast(&r), cast(&y))
}

/// The response kernel on a `seconds x features` matrix (also used by fitting, so a fitted model
/// sees features exactly as the scan path transforms them).
#[must_use]
pub fn convolve(
    z: &[f64],
    seconds: usize,
    features: usize,
    hrf: &[f32],
    kernel: super::model::Kernel,
) -> Vec<f64> {
    let mut r = vec![0f64; seconds * features];
    for t in 0..seconds {
        for k in 0..features {
            let (mut acc, mut norm) = (0.0, 0.0);
            for (tap, h) in hrf
                .iter()
                .enumerate()
                .take(kernel.end_tap)
                .skip(kernel.first_tap)
            {
                let s = t as i64 + kernel.shift as i64 - tap as i64;
                if s >= 0 && (s as usize) < seconds {
                    acc += f64::from(*h) * z[s as usize * features + k];
                    norm += f64::from(*h);
                }
            }
            r[t * features + k] = if norm > 1e-9 { acc / norm } else { 0.0 };
        }
    }
    r
}
