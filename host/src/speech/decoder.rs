//! Whisper's text decoder with key/value caches, so a step costs one token's work.
//!
//! `candle_transformers`' `TextDecoder` caches the cross-attention keys and values but not the
//! self-attention ones: every step feeds the whole token sequence again, so decoding a window
//! of *n* tokens costs O(n²) token passes through the four (tiny) or more layers. This module
//! is the same network, loaded from the same tensors (`model.decoder.*`), with:
//! - **a self-attention cache per layer**: a step feeds only the new tokens and attends to the
//!   cached keys and values of the earlier ones;
//! - **cross-attention keys and values computed once per window** ([`CachedDecoder::attend`]):
//!   the encoder output is the same for every step *and* for every temperature of the fallback,
//!   so a re-decoded window no longer projects 1500 encoder frames again;
//! - **passes over several candidates at once** ([`CachedDecoder::pass`] with a batch): the
//!   temperature fallback decodes its remaining temperatures as one batch, so each step reads
//!   the weights (the 80 MB vocabulary projection above all) once for every candidate instead
//!   of once per candidate. Every candidate attends to the same window, and one that has
//!   ended leaves the batch ([`Pass::retain`]).
//!
//! The arithmetic is the reference's (OpenAI `whisper/model.py`, scale `d_head^-0.25` on both
//! query and key, pre-norm residual blocks, GELU MLP, logits from the tied token embedding);
//! `tests::matches_the_uncached_decoder` checks it against candle's decoder on the real model.

use candle_core::{D, Device, IndexOp, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use candle_transformers::models::whisper::Config;

/// One attention's projections.
#[derive(Debug, Clone)]
struct Attention {
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
}

impl Attention {
    fn load(n_state: usize, vb: &VarBuilder) -> Result<Self> {
        Ok(Self {
            query: candle_nn::linear(n_state, n_state, vb.pp("q_proj"))?,
            key: candle_nn::linear_no_bias(n_state, n_state, vb.pp("k_proj"))?,
            value: candle_nn::linear(n_state, n_state, vb.pp("v_proj"))?,
            out: candle_nn::linear(n_state, n_state, vb.pp("out_proj"))?,
        })
    }
}

#[derive(Debug, Clone)]
struct Block {
    attn: Attention,
    attn_ln: LayerNorm,
    cross: Attention,
    cross_ln: LayerNorm,
    fc1: Linear,
    fc2: Linear,
    mlp_ln: LayerNorm,
}

fn layer_norm(n_state: usize, vb: VarBuilder) -> Result<LayerNorm> {
    candle_nn::layer_norm(n_state, 1e-5, vb)
}

/// The decoder's weights. Shared by every transcription (tensors are reference-counted).
#[derive(Debug, Clone)]
pub struct CachedDecoder {
    token_embedding: Embedding,
    positional_embedding: Tensor,
    blocks: Vec<Block>,
    ln: LayerNorm,
    n_head: usize,
    n_ctx: usize,
}

/// Cross-attention keys and values of one window's encoder output, per layer, already split
/// into heads (`(1, heads, frames, d_head)`; keys pre-transposed and scaled).
pub struct Attended {
    layers: Vec<(Tensor, Tensor)>,
}

/// The self-attention cache of one decoding pass over `batch` candidates.
pub struct Pass<'a> {
    attended: &'a Attended,
    /// Per layer: keys `(batch, heads, d_head, n)` (transposed, scaled) and values
    /// `(batch, heads, n, d_head)` of the tokens fed so far.
    cache: Vec<Option<(Tensor, Tensor)>>,
    len: usize,
    batch: usize,
}

impl Pass<'_> {
    /// Keeps only the candidates at `rows` (indices into the current batch, in the order
    /// given), so candidates that have ended stop costing a row at every step.
    ///
    /// # Errors
    /// Tensor errors, or no row kept, or a row outside the batch.
    pub fn retain(&mut self, rows: &[usize]) -> Result<()> {
        if rows.is_empty() || rows.iter().any(|&r| r >= self.batch) {
            candle_core::bail!("keep rows {rows:?} of a batch of {}", self.batch);
        }
        if rows.len() == self.batch && rows.iter().enumerate().all(|(i, &r)| i == r) {
            return Ok(());
        }
        let ids: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
        for layer in self.cache.iter_mut().flatten() {
            let ids = Tensor::new(ids.as_slice(), layer.0.device())?;
            *layer = (
                layer.0.index_select(&ids, 0)?,
                layer.1.index_select(&ids, 0)?,
            );
        }
        self.batch = rows.len();
        Ok(())
    }
}

impl CachedDecoder {
    /// Loads the decoder from `vb` (the `model.decoder` prefix of a Whisper checkpoint).
    ///
    /// # Errors
    /// A missing or misshapen tensor.
    pub fn load(vb: &VarBuilder, config: &Config) -> Result<Self> {
        let n_state = config.d_model;
        let blocks = (0..config.decoder_layers)
            .map(|i| {
                let vb = vb.pp(format!("layers.{i}"));
                Ok(Block {
                    attn: Attention::load(n_state, &vb.pp("self_attn"))?,
                    attn_ln: layer_norm(n_state, vb.pp("self_attn_layer_norm"))?,
                    cross: Attention::load(n_state, &vb.pp("encoder_attn"))?,
                    cross_ln: layer_norm(n_state, vb.pp("encoder_attn_layer_norm"))?,
                    fc1: candle_nn::linear(n_state, 4 * n_state, vb.pp("fc1"))?,
                    fc2: candle_nn::linear(4 * n_state, n_state, vb.pp("fc2"))?,
                    mlp_ln: layer_norm(n_state, vb.pp("final_layer_norm"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            token_embedding: candle_nn::embedding(
                config.vocab_size,
                n_state,
                vb.pp("embed_tokens"),
            )?,
            positional_embedding: vb.get(
                (config.max_target_positions, n_state),
                "embed_positions.weight",
            )?,
            blocks,
            ln: layer_norm(n_state, vb.pp("layer_norm"))?,
            n_head: config.decoder_attention_heads,
            n_ctx: config.max_target_positions,
        })
    }

    fn scale(&self, n_state: usize) -> f64 {
        ((n_state / self.n_head) as f64).powf(-0.25)
    }

    /// `(1, n, n_state)` → `(1, heads, n, d_head)`.
    fn heads(&self, x: &Tensor) -> Result<Tensor> {
        let (b, n, s) = x.dims3()?;
        x.reshape((b, n, self.n_head, s / self.n_head))?
            .transpose(1, 2)?
            .contiguous()
    }

    /// Projects one window's encoder output (`(1, frames, n_state)`) into every layer's
    /// cross-attention keys and values, once for all the window's steps and temperatures.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn attend(&self, encoded: &Tensor) -> Result<Attended> {
        let n_state = encoded.dim(D::Minus1)?;
        let scale = self.scale(n_state);
        let layers = self
            .blocks
            .iter()
            .map(|b| {
                let k = (self.heads(&b.cross.key.forward(encoded)?)? * scale)?
                    .transpose(2, 3)?
                    .contiguous()?;
                let v = self.heads(&b.cross.value.forward(encoded)?)?;
                Ok((k, v))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Attended { layers })
    }

    /// A new decoding pass of `batch` candidates (at least one) over an attended window.
    #[must_use]
    pub fn pass<'a>(&self, attended: &'a Attended, batch: usize) -> Pass<'a> {
        Pass {
            attended,
            cache: vec![None; self.blocks.len()],
            len: 0,
            batch: batch.max(1),
        }
    }

    /// Feeds `tokens` after those already in `pass`: the same number of new tokens for every
    /// candidate, candidate after candidate. Returns their final hidden states
    /// (`(batch, tokens per candidate, n_state)`, layer-normed, before the vocabulary
    /// projection).
    ///
    /// # Errors
    /// Tensor errors, a token count that is not a multiple of the batch, or more tokens than
    /// the text context holds.
    pub fn feed(&self, pass: &mut Pass<'_>, tokens: &[u32]) -> Result<Tensor> {
        let batch = pass.batch;
        if tokens.is_empty() || !tokens.len().is_multiple_of(batch) {
            candle_core::bail!("{} tokens for {batch} candidates", tokens.len());
        }
        let n = tokens.len() / batch;
        if pass.len + n > self.n_ctx {
            candle_core::bail!(
                "{} tokens exceed the text context ({})",
                pass.len + n,
                self.n_ctx
            );
        }
        let device = self.positional_embedding.device();
        let ids = Tensor::new(tokens, device)?.reshape((batch, n))?;
        let mut x = self
            .token_embedding
            .forward(&ids)?
            .broadcast_add(&self.positional_embedding.narrow(0, pass.len, n)?)?;
        let n_state = x.dim(D::Minus1)?;
        let scale = self.scale(n_state);
        // Causal mask among the new tokens only (every earlier token is visible to all).
        let mask = (n > 1)
            .then(|| causal_mask(pass.len, n, device))
            .transpose()?;
        for (i, b) in self.blocks.iter().enumerate() {
            let h = b.attn_ln.forward(&x)?;
            let q = (self.heads(&b.attn.query.forward(&h)?)? * scale)?;
            let k_new = (self.heads(&b.attn.key.forward(&h)?)? * scale)?
                .transpose(2, 3)?
                .contiguous()?;
            let v_new = self.heads(&b.attn.value.forward(&h)?)?;
            let (k, v) = match &pass.cache[i] {
                Some((k, v)) => (Tensor::cat(&[k, &k_new], 3)?, Tensor::cat(&[v, &v_new], 2)?),
                None => (k_new, v_new),
            };
            let mut qk = q.matmul(&k)?;
            if let Some(mask) = &mask {
                qk = qk.broadcast_add(mask)?;
            }
            let attn = self.merge(&candle_nn::ops::softmax_last_dim(&qk)?.matmul(&v)?)?;
            pass.cache[i] = Some((k, v));
            x = (x + b.attn.out.forward(&attn)?)?;

            // Every candidate attends to the same window: its queries are stacked along the
            // token axis of one batch, so the window's keys and values serve all of them in
            // one product.
            let h = b.cross_ln.forward(&x)?;
            let q = (self.heads(&b.cross.query.forward(&h)?)? * scale)?;
            let (heads, d_head) = (q.dim(1)?, q.dim(3)?);
            let q = q.transpose(0, 1)?.reshape((1, heads, batch * n, d_head))?;
            let (k, v) = &pass.attended.layers[i];
            let attn = candle_nn::ops::softmax_last_dim(&q.matmul(k)?)?
                .matmul(v)?
                .reshape((heads, batch, n, d_head))?
                .transpose(0, 1)?;
            let attn = self.merge(&attn)?;
            x = (x + b.cross.out.forward(&attn)?)?;

            let h = b.mlp_ln.forward(&x)?;
            x = (&x + b.fc2.forward(&b.fc1.forward(&h)?.gelu()?)?)?;
        }
        pass.len += n;
        self.ln.forward(&x)
    }

    /// `(batch, heads, n, d_head)` → `(batch, n, n_state)`.
    fn merge(&self, x: &Tensor) -> Result<Tensor> {
        x.transpose(1, 2)?.flatten_from(2)
    }

    /// Vocabulary logits of one hidden state of the first candidate (`hidden` is
    /// `(batch, n, n_state)`; `row` picks the position), from the tied token embedding.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn logits(&self, hidden: &Tensor, row: usize) -> Result<Vec<f32>> {
        hidden
            .i((0, row..=row))?
            .matmul(&self.token_embedding.embeddings().t()?)?
            .i(0)?
            .to_vec1::<f32>()
    }

    /// Vocabulary logits of every candidate's last hidden state, in one product (one read
    /// of the vocabulary projection for the whole batch).
    ///
    /// # Errors
    /// Tensor errors.
    pub fn last_logits(&self, hidden: &Tensor) -> Result<Vec<Vec<f32>>> {
        let n = hidden.dim(1)?;
        let last = hidden.narrow(1, n - 1, 1)?.squeeze(1)?;
        if last.dim(0)? == 1 {
            return Ok(vec![self.logits(hidden, n - 1)?]);
        }
        // (vocab, n_state) x (n_state, batch): the embedding is the contiguous left operand,
        // which the matrix kernel streams once for all candidates.
        self.token_embedding
            .embeddings()
            .matmul(&last.t()?.contiguous()?)?
            .t()?
            .contiguous()?
            .to_vec2::<f32>()
    }
}

/// `(n, past + n)`: token `i` of the new ones sees every earlier token and the new ones up to
/// itself.
fn causal_mask(past: usize, n: usize, device: &Device) -> Result<Tensor> {
    let mask: Vec<f32> = (0..n)
        .flat_map(|i| {
            (0..past + n).map(move |j| if j > past + i { f32::NEG_INFINITY } else { 0.0 })
        })
        .collect();
    Tensor::from_vec(mask, (n, past + n), device)
}
