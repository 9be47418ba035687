//! Silero VAD (v5/v6, 16 kHz) in candle: where in the audio someone is speaking.
//!
//! Why a neural VAD and not an energy gate: the gate must keep Whisper away from music, and
//! music is loud. Silero's weights ship in the `silero-vad` PyPI package as safetensors;
//! the network is small (STFT as a strided convolution, four 1-D convolutions, one LSTM cell,
//! a 1×1 convolution and a sigmoid), so writing it here costs less than an ONNX runtime.
//!
//! Each 512-sample chunk (32 ms) is scored with the 64 samples before it as context and the
//! LSTM state carried from the previous chunk, as the reference implementation does.

use std::path::Path;

use candle_core::{D, DType, Device, Module, Tensor};
use candle_nn::{Conv1d, Conv1dConfig, VarBuilder};

pub const SAMPLE_RATE: usize = 16_000;
/// Samples per scored chunk.
pub const CHUNK: usize = 512;
const CONTEXT: usize = 64;
const HIDDEN: usize = 128;
/// Seconds per chunk.
pub const CHUNK_SECS: f64 = CHUNK as f64 / SAMPLE_RATE as f64;

/// Chunks (32 ms each) the encoder runs on at once: about 33 s of audio.
const ENCODER_BATCH: usize = 1024;

pub struct SileroVad {
    stft: Tensor,
    convs: [(Conv1d, usize); 4],
    w_ih: Tensor,
    w_hh: Tensor,
    bias: Tensor,
    out: Conv1d,
}

fn conv(
    vb: &VarBuilder,
    name: &str,
    inp: usize,
    out: usize,
    k: usize,
    stride: usize,
) -> candle_core::Result<Conv1d> {
    let w = vb.get((out, inp, k), &format!("{name}.weight"))?;
    let b = vb.get(out, &format!("{name}.bias"))?;
    Ok(Conv1d::new(
        w,
        Some(b),
        Conv1dConfig {
            padding: k / 2,
            stride,
            dilation: 1,
            groups: 1,
            cudnn_fwd_algo: None,
        },
    ))
}

impl SileroVad {
    /// Loads `silero_vad_16k.safetensors`.
    ///
    /// # Errors
    /// A missing file or a tensor with an unexpected shape.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let device = Device::Cpu;
        let tensors = candle_core::safetensors::load(path, &device)?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let convs = [
            (conv(&vb, "conv1", 129, 128, 3, 1)?, 1),
            (conv(&vb, "conv2", 128, 64, 3, 2)?, 2),
            (conv(&vb, "conv3", 64, 64, 3, 2)?, 2),
            (conv(&vb, "conv4", 64, 128, 3, 1)?, 1),
        ];
        let bias = (vb.get(4 * HIDDEN, "lstm_cell.bias_ih")?
            + vb.get(4 * HIDDEN, "lstm_cell.bias_hh")?)?;
        Ok(Self {
            stft: vb.get((258, 1, 256), "stft_conv.weight")?,
            convs,
            w_ih: vb
                .get((4 * HIDDEN, HIDDEN), "lstm_cell.weight_ih")?
                .t()?
                .contiguous()?,
            w_hh: vb
                .get((4 * HIDDEN, HIDDEN), "lstm_cell.weight_hh")?
                .t()?
                .contiguous()?,
            bias,
            out: {
                let w = vb.get((1, HIDDEN, 1), "final_conv.weight")?;
                let b = vb.get(1, "final_conv.bias")?;
                Conv1d::new(w, Some(b), Conv1dConfig::default())
            },
        })
    }

    /// Speech probability per 512-sample chunk of 16 kHz mono `pcm` (a short last chunk is
    /// zero-padded).
    ///
    /// # Errors
    /// Tensor errors only (the shapes are fixed).
    pub fn probabilities(&self, pcm: &[f32]) -> candle_core::Result<Vec<f32>> {
        let chunks = pcm.len().div_ceil(CHUNK);
        let w_hh = self.w_hh.to_vec2::<f32>()?; // (128, 512)
        let out_w = self.out.weight().flatten_all()?.to_vec1::<f32>()?;
        let out_b = self
            .out
            .bias()
            .map(|b| b.to_vec1::<f32>())
            .transpose()?
            .and_then(|b| b.first().copied())
            .unwrap_or(0.0);
        // The LSTM state runs through the whole clip; the stateless encoder runs on batches of
        // chunks, so memory stays bounded however long the clip is.
        let mut hidden = vec![0f32; HIDDEN];
        let mut cell = vec![0f32; HIDDEN];
        let mut outputs = Vec::with_capacity(chunks);
        let sigmoid = |v: f32| 1.0 / (1.0 + (-v).exp());
        for first in (0..chunks).step_by(ENCODER_BATCH) {
            let count = ENCODER_BATCH.min(chunks - first);
            for g_in in self.encode(pcm, first, count)? {
                let mut gates = g_in;
                for (j, hj) in hidden.iter().enumerate() {
                    if *hj != 0.0 {
                        for (g, w) in gates.iter_mut().zip(&w_hh[j]) {
                            *g += hj * w;
                        }
                    }
                }
                // PyTorch order: input, forget, cell, output.
                for u in 0..HIDDEN {
                    let i = sigmoid(gates[u]);
                    let f = sigmoid(gates[HIDDEN + u]);
                    let g = gates[2 * HIDDEN + u].tanh();
                    let o = sigmoid(gates[3 * HIDDEN + u]);
                    cell[u] = f * cell[u] + i * g;
                    hidden[u] = o * cell[u].tanh();
                }
                let logit: f32 = hidden
                    .iter()
                    .zip(&out_w)
                    .map(|(h, w)| h.max(0.0) * w)
                    .sum::<f32>()
                    + out_b;
                outputs.push(sigmoid(logit));
            }
        }
        Ok(outputs)
    }

    /// The LSTM input gates of chunks `first..first + count`: the stateless encoder run on all
    /// of them at once (batch = count), each chunk with its 64 samples of left context and 64
    /// reflected samples on the right.
    fn encode(
        &self,
        pcm: &[f32],
        first: usize,
        count: usize,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let device = Device::Cpu;
        let mut frames = Vec::with_capacity(count * (CONTEXT + CHUNK + CONTEXT));
        for c in first..first + count {
            let start = c * CHUNK;
            let sample = |i: isize| -> f32 {
                usize::try_from(i)
                    .ok()
                    .and_then(|i| pcm.get(i))
                    .copied()
                    .unwrap_or(0.0)
            };
            let base = start as isize - CONTEXT as isize;
            let mut window: Vec<f32> = (0..(CONTEXT + CHUNK) as isize)
                .map(|i| sample(base + i))
                .collect();
            // Reflect padding of 64 on the right (torch's F.pad mode="reflect").
            let n = window.len();
            for k in 1..=CONTEXT {
                window.push(window[n - 1 - k]);
            }
            frames.extend_from_slice(&window);
        }
        let x = Tensor::from_vec(frames, (count, 1, CONTEXT + CHUNK + CONTEXT), &device)?;
        let spec = x.conv1d(&self.stft, 0, 128, 1, 1)?; // (B, 258, 4)
        let real = spec.narrow(1, 0, 129)?;
        let imag = spec.narrow(1, 129, 129)?;
        let mut h = (real.sqr()? + imag.sqr()?)?.sqrt()?;
        for (c, _) in &self.convs {
            h = c.forward(&h)?.relu()?;
        }
        let features = h.squeeze(D::Minus1)?; // (B, 128)
        let gates_in = features.matmul(&self.w_ih)?.broadcast_add(&self.bias)?; // (B, 512)
        gates_in.to_vec2::<f32>()
    }
}

/// A stretch of speech, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Region {
    pub start: f64,
    pub end: f64,
}

/// Speech regions from chunk probabilities, with the reference implementation's hysteresis:
/// speech starts above `threshold`, ends after `min_silence` below `threshold - 0.15`,
/// regions shorter than `min_speech` are dropped and each side is padded by `pad`.
pub fn regions(probs: &[f32], threshold: f32) -> Vec<Region> {
    const MIN_SPEECH: f64 = 0.25;
    const MIN_SILENCE: f64 = 0.1;
    const PAD: f64 = 0.03;
    let off = threshold - 0.15;
    let total = probs.len() as f64 * CHUNK_SECS;
    let mut out: Vec<Region> = Vec::new();
    let mut start: Option<f64> = None;
    let mut silence_since: Option<f64> = None;
    for (i, &p) in probs.iter().enumerate() {
        let t = i as f64 * CHUNK_SECS;
        match start {
            None if p >= threshold => {
                start = Some(t);
                silence_since = None;
            }
            Some(s) => {
                if p >= threshold {
                    silence_since = None;
                } else if p < off {
                    let since = *silence_since.get_or_insert(t);
                    if t + CHUNK_SECS - since >= MIN_SILENCE {
                        if since - s >= MIN_SPEECH {
                            out.push(Region {
                                start: s,
                                end: since,
                            });
                        }
                        start = None;
                        silence_since = None;
                    }
                }
            }
            None => {}
        }
    }
    if let Some(s) = start {
        let end = silence_since.unwrap_or(total);
        if end - s >= MIN_SPEECH {
            out.push(Region { start: s, end });
        }
    }
    for r in &mut out {
        r.start = (r.start - PAD).max(0.0);
        r.end = (r.end + PAD).min(total);
    }
    // Padding can make neighbours touch: merge them.
    let mut merged: Vec<Region> = Vec::with_capacity(out.len());
    for r in out {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// Seconds of `[start, end)` covered by `regions`.
pub fn overlap(regions: &[Region], start: f64, end: f64) -> f64 {
    regions
        .iter()
        .map(|r| (r.end.min(end) - r.start.max(start)).max(0.0))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probs_for(pattern: &[(f64, f32)]) -> Vec<f32> {
        pattern
            .iter()
            .flat_map(|&(secs, p)| std::iter::repeat_n(p, (secs / CHUNK_SECS).round() as usize))
            .collect()
    }

    #[test]
    fn hysteresis_keeps_short_dips_and_drops_blips() {
        // 1 s silence, 2 s speech with a 64 ms dip, 1 s silence, a 96 ms blip, silence.
        let p = probs_for(&[
            (1.0, 0.05),
            (1.0, 0.9),
            (0.064, 0.4),
            (1.0, 0.9),
            (1.0, 0.02),
            (0.096, 0.9),
            (1.0, 0.0),
        ]);
        let r = regions(&p, 0.5);
        assert_eq!(r.len(), 1, "{r:?}");
        assert!((r[0].start - (1.0 - 0.03)).abs() < 0.04, "{r:?}");
        assert!((r[0].end - (3.064 + 0.03)).abs() < 0.05, "{r:?}");
        assert!((overlap(&r, 0.0, 2.0) - 1.03).abs() < 0.05);
    }

    #[test]
    fn speech_to_the_end_is_closed() {
        let p = probs_for(&[(0.5, 0.0), (1.0, 0.8)]);
        let r = regions(&p, 0.5);
        assert_eq!(r.len(), 1);
        assert!((r[0].end - p.len() as f64 * CHUNK_SECS).abs() < 1e-9);
    }
}
