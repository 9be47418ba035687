//! SmolLM2-135M's forward pass (the Llama architecture) over one window of tokens, returning
//! every position's log-probabilities.
//!
//! The layout is llama.cpp's, which the GGUF file follows: 30 blocks of pre-norm attention
//! (9 query heads sharing 3 key/value heads, rotary positions on interleaved pairs, as the
//! converter permutes q and k for) and a SwiGLU MLP, then RMS norm and the output head, which
//! here is the token embedding itself (the file has no `output.weight`).

use candle_core::quantized::{GgmlDType, QMatMul, QTensor, gguf_file};
use candle_core::{D, DType, Device, Module as _, Tensor};

pub const VOCAB: usize = 49_152;
const LAYERS: usize = 30;
const WIDTH: usize = 576;
const HEADS: usize = 9;
const KV_HEADS: usize = 3;
const HEAD_DIM: usize = WIDTH / HEADS;
const FFN: usize = 1536;
const ROPE_BASE: f32 = 100_000.0;
const EPS: f64 = 1e-5;

struct Block {
    attn_norm: Tensor,
    q: QMatMul,
    k: QMatMul,
    v: QMatMul,
    o: QMatMul,
    ffn_norm: Tensor,
    gate: QMatMul,
    up: QMatMul,
    down: QMatMul,
}

pub struct Llama {
    /// The token table, Q8_0 blocks as stored: rows are expanded when their token is read, so
    /// the table stays at 8 bits (28 MiB, not 113 MiB of f32).
    embedding: Vec<u8>,
    /// The same table as the output head.
    head: QMatMul,
    blocks: Vec<Block>,
    norm: Tensor,
    device: Device,
}

/// Bytes of one Q8_0 block: an f16 scale and 32 signed bytes.
const Q8_0_BLOCK: usize = 34;
const ROW_BYTES: usize = WIDTH / 32 * Q8_0_BLOCK;

/// Log-probabilities per position, `(positions, VOCAB)`.
pub struct LogProbs {
    values: Vec<f32>,
}

impl std::ops::Index<(usize, usize)> for LogProbs {
    type Output = f32;
    fn index(&self, (row, token): (usize, usize)) -> &f32 {
        &self.values[row * VOCAB + token]
    }
}

impl Llama {
    pub fn load<R: std::io::Read + std::io::Seek>(
        content: &gguf_file::Content,
        reader: &mut R,
    ) -> anyhow::Result<Self> {
        let device = Device::Cpu;
        let number = |key: &str| -> anyhow::Result<u64> {
            let v = content
                .metadata
                .get(key)
                .ok_or_else(|| anyhow::anyhow!("no {key}"))?;
            v.to_u32()
                .map(u64::from)
                .or_else(|_| v.to_u64())
                .map_err(|e| anyhow::anyhow!("{key}: {e}"))
        };
        for (key, want) in [
            ("llama.block_count", LAYERS),
            ("llama.embedding_length", WIDTH),
            ("llama.feed_forward_length", FFN),
            ("llama.attention.head_count", HEADS),
            ("llama.attention.head_count_kv", KV_HEADS),
            ("llama.rope.dimension_count", HEAD_DIM),
        ] {
            let got = number(key)?;
            anyhow::ensure!(got == want as u64, "{key} is {got}, expected {want}");
        }
        let mut tensor = |name: &str, shape: &[usize]| -> anyhow::Result<QTensor> {
            let t = content
                .tensor(reader, name, &device)
                .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            anyhow::ensure!(
                t.shape().dims() == shape,
                "{name}: shape {:?}, expected {shape:?}",
                t.shape().dims()
            );
            Ok(t)
        };
        let vector = |t: QTensor| -> anyhow::Result<Tensor> { Ok(t.dequantize(&Device::Cpu)?) };
        // candle has no SIMD kernel for Q4_1 (its dot product is scalar: 600 words took a minute
        // on two cores); Q8_0 has an AVX2 one. Every Q4_1 value is re-expressed at 8 bits
        // (relative error at most 1/254 of its block's largest), so the model is unchanged to
        // that precision, at 1.06 bytes a weight instead of 0.63.
        let matrix = |t: QTensor| -> anyhow::Result<QMatMul> {
            let t = if t.dtype() == GgmlDType::Q4_1 {
                QTensor::quantize(&t.dequantize(&Device::Cpu)?, GgmlDType::Q8_0)?
            } else {
                t
            };
            Ok(QMatMul::from_qtensor(t)?)
        };
        let table = tensor("token_embd.weight", &[VOCAB, WIDTH])?;
        anyhow::ensure!(
            table.dtype() == GgmlDType::Q8_0,
            "token_embd.weight is {:?}, expected Q8_0",
            table.dtype()
        );
        let embedding = table.data()?.into_owned();
        anyhow::ensure!(
            embedding.len() == VOCAB * ROW_BYTES,
            "token_embd.weight: size"
        );
        let head = matrix(table)?;
        let mut blocks = Vec::with_capacity(LAYERS);
        for i in 0..LAYERS {
            let name = |part: &str| format!("blk.{i}.{part}.weight");
            blocks.push(Block {
                attn_norm: vector(tensor(&name("attn_norm"), &[WIDTH])?)?,
                q: matrix(tensor(&name("attn_q"), &[WIDTH, WIDTH])?)?,
                k: matrix(tensor(&name("attn_k"), &[KV_HEADS * HEAD_DIM, WIDTH])?)?,
                v: matrix(tensor(&name("attn_v"), &[KV_HEADS * HEAD_DIM, WIDTH])?)?,
                o: matrix(tensor(&name("attn_output"), &[WIDTH, WIDTH])?)?,
                ffn_norm: vector(tensor(&name("ffn_norm"), &[WIDTH])?)?,
                gate: matrix(tensor(&name("ffn_gate"), &[FFN, WIDTH])?)?,
                up: matrix(tensor(&name("ffn_up"), &[FFN, WIDTH])?)?,
                down: matrix(tensor(&name("ffn_down"), &[WIDTH, FFN])?)?,
            });
        }
        let norm = vector(tensor("output_norm.weight", &[WIDTH])?)?;
        Ok(Self {
            embedding,
            head,
            blocks,
            norm,
            device,
        })
    }

    /// One token's embedding row, expanded from its Q8_0 blocks.
    fn embed_row(&self, token: u32, out: &mut Vec<f32>) {
        let row = &self.embedding[token as usize * ROW_BYTES..][..ROW_BYTES];
        for block in row.chunks_exact(Q8_0_BLOCK) {
            let scale = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
            out.extend(block[2..].iter().map(|&q| f32::from(q as i8) * scale));
        }
    }

    /// Log-probabilities of the next token at every position of `ids` (at most a few thousand
    /// tokens: attention is quadratic in the window).
    pub fn log_probs(&self, ids: &[u32]) -> anyhow::Result<LogProbs> {
        let n = ids.len();
        anyhow::ensure!(n > 0, "no tokens");
        anyhow::ensure!(
            ids.iter().all(|&t| (t as usize) < VOCAB),
            "a token id outside the vocabulary"
        );
        let mut rows = Vec::with_capacity(n * WIDTH);
        for &t in ids {
            self.embed_row(t, &mut rows);
        }
        let mut x = Tensor::from_vec(rows, (n, WIDTH), &self.device)?;
        let (cos, sin) = self.rotary(n)?;
        let mask = self.causal_mask(n)?;
        for b in &self.blocks {
            let h = candle_nn::ops::rms_norm(&x, &b.attn_norm, EPS as f32)?;
            let heads = |m: &QMatMul, count: usize| -> candle_core::Result<Tensor> {
                m.forward(&h)?
                    .reshape((n, count, HEAD_DIM))?
                    .transpose(0, 1)?
                    .contiguous()?
                    .unsqueeze(0)
            };
            let q = candle_nn::rotary_emb::rope_i(&heads(&b.q, HEADS)?, &cos, &sin)?;
            let k = candle_nn::rotary_emb::rope_i(&heads(&b.k, KV_HEADS)?, &cos, &sin)?;
            let v = heads(&b.v, KV_HEADS)?;
            // Each key/value head serves HEADS / KV_HEADS consecutive query heads.
            let group = |t: Tensor| -> candle_core::Result<Tensor> {
                t.squeeze(0)?
                    .unsqueeze(1)?
                    .expand((KV_HEADS, HEADS / KV_HEADS, n, HEAD_DIM))?
                    .reshape((HEADS, n, HEAD_DIM))
            };
            let (q, k, v) = (q.squeeze(0)?, group(k)?, group(v)?);
            let scores = (q.matmul(&k.t()?)? / (HEAD_DIM as f64).sqrt())?.broadcast_add(&mask)?;
            let attention = candle_nn::ops::softmax_last_dim(&scores)?.matmul(&v)?;
            let attention = attention.transpose(0, 1)?.reshape((n, WIDTH))?;
            x = (x + b.o.forward(&attention)?)?;
            let h = candle_nn::ops::rms_norm(&x, &b.ffn_norm, EPS as f32)?;
            let mlp = (candle_nn::ops::silu(&b.gate.forward(&h)?)? * b.up.forward(&h)?)?;
            x = (x + b.down.forward(&mlp)?)?;
        }
        let x = candle_nn::ops::rms_norm(&x, &self.norm, EPS as f32)?;
        let logits = self.head.forward(&x)?;
        let log_probs = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
        Ok(LogProbs {
            values: log_probs.flatten_all()?.to_vec1::<f32>()?,
        })
    }

    /// cos and sin of the rotary angles, `(n, HEAD_DIM / 2)`.
    fn rotary(&self, n: usize) -> candle_core::Result<(Tensor, Tensor)> {
        let inverse: Vec<f32> = (0..HEAD_DIM / 2)
            .map(|i| 1.0 / ROPE_BASE.powf(2.0 * i as f32 / HEAD_DIM as f32))
            .collect();
        let inverse = Tensor::from_vec(inverse, (1, HEAD_DIM / 2), &self.device)?;
        let positions = Tensor::arange(0u32, n as u32, &self.device)?
            .to_dtype(DType::F32)?
            .reshape((n, 1))?;
        let angles = positions.broadcast_mul(&inverse)?;
        Ok((angles.cos()?, angles.sin()?))
    }

    /// 0 where a position may attend, −∞ above the diagonal.
    fn causal_mask(&self, n: usize) -> candle_core::Result<Tensor> {
        let mask: Vec<f32> = (0..n)
            .flat_map(|i| (0..n).map(move |j| if j > i { f32::NEG_INFINITY } else { 0.0 }))
            .collect();
        Tensor::from_vec(mask, (n, n), &self.device)
    }
}
