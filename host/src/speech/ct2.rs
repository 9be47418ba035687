//! Reads a CTranslate2 `model.bin` and renames a Whisper spec's variables to the names
//! candle-transformers' Whisper loads.
//!
//! Why: the only Whisper weights reachable from a package registry here are CTranslate2
//! conversions. The format is simple (version 6: a header, then named little-endian arrays,
//! then aliases), but CTranslate2 fuses attention projections: encoder and decoder
//! self-attention keep Q, K and V in one `linear_0` (3·d rows), cross-attention keeps K and V
//! in one `linear_1` (2·d rows). Whisper's K projection has no bias; CTranslate2 stores zeros
//! there, which we drop.
//!
//! The file is untrusted: every count, rank, name and byte length is bounded and checked
//! against the file's size before anything is allocated.

use std::collections::HashMap;
use std::ops::Range;

use candle_core::{DType, Device, Tensor};

/// The largest file read (Whisper large-v3 in fp16 is about 3.1 GB).
pub const MAX_FILE_BYTES: u64 = 4 << 30;
const MAX_VARIABLES: u32 = 20_000;
const MAX_NAME_BYTES: usize = 1024;
const MAX_RANK: u8 = 8;

#[derive(Debug, thiserror::Error)]
pub enum Ct2Error {
    #[error("model.bin: {0}")]
    Format(String),
    #[error("model.bin: {0}")]
    Unsupported(String),
    #[error("model.bin: tensor {name}: {source}")]
    Tensor {
        name: String,
        source: candle_core::Error,
    },
}

fn format(msg: impl Into<String>) -> Ct2Error {
    Ct2Error::Format(msg.into())
}

/// CTranslate2's `DataType` enum, as stored in files of binary version ≥ 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ct2Dtype {
    F32,
    I8,
    I16,
    I32,
    F16,
    Bf16,
}

impl Ct2Dtype {
    fn from_code(code: u8) -> Result<Self, Ct2Error> {
        Ok(match code {
            0 => Self::F32,
            1 => Self::I8,
            2 => Self::I16,
            3 => Self::I32,
            4 => Self::F16,
            5 => Self::Bf16,
            other => return Err(format(format!("unknown data type code {other}"))),
        })
    }

    fn size(self) -> usize {
        match self {
            Self::I8 => 1,
            Self::I16 | Self::F16 | Self::Bf16 => 2,
            Self::F32 | Self::I32 => 4,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Variable {
    pub shape: Vec<usize>,
    pub dtype: Ct2Dtype,
    bytes: Range<usize>,
}

/// A parsed `model.bin`: the variables index into the file's bytes.
pub struct Ct2Model {
    pub spec: String,
    pub revision: u32,
    data: Vec<u8>,
    pub variables: HashMap<String, Variable>,
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Ct2Error> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| format(format!("truncated at byte {}", self.at)))?;
        let out = &self.data[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, Ct2Error> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, Ct2Error> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, Ct2Error> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// A u16 length (counting a trailing NUL) and the bytes.
    fn string(&mut self) -> Result<String, Ct2Error> {
        let n = usize::from(self.u16()?);
        if n == 0 || n > MAX_NAME_BYTES {
            return Err(format(format!("a name of {n} bytes")));
        }
        let b = self.take(n)?;
        let b = b.strip_suffix(&[0]).unwrap_or(b);
        String::from_utf8(b.to_vec()).map_err(|_| format("a name is not UTF-8"))
    }
}

impl Ct2Model {
    /// Parses the whole file held in `data`.
    ///
    /// # Errors
    /// `Format` for anything malformed or truncated, `Unsupported` for binary versions
    /// before 4 (no per-variable data type).
    pub fn parse(data: Vec<u8>) -> Result<Self, Ct2Error> {
        if data.len() as u64 > MAX_FILE_BYTES {
            return Err(format("larger than 4 GiB"));
        }
        let mut r = Reader { data: &data, at: 0 };
        let version = r.u32()?;
        if !(4..=6).contains(&version) {
            return Err(Ct2Error::Unsupported(format!(
                "binary version {version} (this reader knows 4 to 6)"
            )));
        }
        let spec = r.string()?;
        let revision = r.u32()?;
        let count = r.u32()?;
        if count > MAX_VARIABLES {
            return Err(format(format!("{count} variables")));
        }
        let mut variables = HashMap::new();
        for _ in 0..count {
            let name = r.string()?;
            let rank = r.u8()?;
            if rank > MAX_RANK {
                return Err(format(format!("{name}: rank {rank}")));
            }
            let shape = (0..rank)
                .map(|_| r.u32().map(|d| d as usize))
                .collect::<Result<Vec<_>, _>>()?;
            let dtype = Ct2Dtype::from_code(r.u8()?)?;
            let len = r.u32()? as usize;
            let elements = shape
                .iter()
                .try_fold(1usize, |a, &d| a.checked_mul(d))
                .ok_or_else(|| format(format!("{name}: shape overflows")))?;
            if elements.checked_mul(dtype.size()) != Some(len) {
                return Err(format(format!(
                    "{name}: {len} bytes for shape {shape:?} of {dtype:?}"
                )));
            }
            let start = r.at;
            r.take(len)?;
            variables.insert(
                name,
                Variable {
                    shape,
                    dtype,
                    bytes: start..start + len,
                },
            );
        }
        if version >= 3 {
            let aliases = r.u32()?;
            if aliases > MAX_VARIABLES {
                return Err(format(format!("{aliases} aliases")));
            }
            for _ in 0..aliases {
                let alias = r.string()?;
                let target = r.string()?;
                let var = variables
                    .get(&target)
                    .cloned()
                    .ok_or_else(|| format(format!("alias {alias} → missing {target}")))?;
                variables.insert(alias, var);
            }
        }
        Ok(Self {
            spec,
            revision,
            data,
            variables,
        })
    }

    fn var(&self, name: &str) -> Result<&Variable, Ct2Error> {
        self.variables
            .get(name)
            .ok_or_else(|| format(format!("missing variable {name}")))
    }

    /// An integer scalar (CTranslate2 keeps head counts as int16 or int32 scalars).
    pub fn scalar_int(&self, name: &str) -> Result<i64, Ct2Error> {
        let v = self.var(name)?;
        let b = &self.data[v.bytes.clone()];
        Ok(match (v.dtype, b.len()) {
            (Ct2Dtype::I8, 1) => i64::from(b[0] as i8),
            (Ct2Dtype::I16, 2) => i64::from(i16::from_le_bytes([b[0], b[1]])),
            (Ct2Dtype::I32, 4) => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            _ => return Err(format(format!("{name} is not an integer scalar"))),
        })
    }

    /// The variable as an f32 tensor on `device`.
    ///
    /// # Errors
    /// Missing, an integer (quantised) type, or a tensor error.
    pub fn tensor(&self, name: &str, device: &Device) -> Result<Tensor, Ct2Error> {
        let v = self.var(name)?;
        let dtype = match v.dtype {
            Ct2Dtype::F32 => DType::F32,
            Ct2Dtype::F16 => DType::F16,
            Ct2Dtype::Bf16 => DType::BF16,
            other => {
                return Err(Ct2Error::Unsupported(format!(
                    "{name} is {other:?}; quantised models are not supported (convert with --quantization float16)"
                )));
            }
        };
        let wrap = |source| Ct2Error::Tensor {
            name: name.to_owned(),
            source,
        };
        Tensor::from_raw_buffer(&self.data[v.bytes.clone()], dtype, &v.shape, device)
            .and_then(|t| t.to_dtype(DType::F32))
            .map_err(wrap)
    }

    /// The shape of a variable.
    pub fn shape(&self, name: &str) -> Result<&[usize], Ct2Error> {
        Ok(&self.var(name)?.shape)
    }

    /// How many `PREFIX/layer_N/…` blocks there are.
    pub fn layer_count(&self, prefix: &str) -> usize {
        (0..)
            .take_while(|i| {
                self.variables
                    .contains_key(&format!("{prefix}/layer_{i}/ffn/linear_0/weight"))
            })
            .count()
    }
}

/// The shape facts of a Whisper spec, read from the file (not trusted from a side file).
#[derive(Debug, Clone, PartialEq)]
pub struct WhisperShape {
    pub n_mels: usize,
    pub d_model: usize,
    pub vocab: usize,
    pub encoder_layers: usize,
    pub decoder_layers: usize,
    pub encoder_heads: usize,
    pub decoder_heads: usize,
    pub audio_ctx: usize,
    pub text_ctx: usize,
}

fn dim(m: &Ct2Model, name: &str, axis: usize) -> Result<usize, Ct2Error> {
    m.shape(name)?
        .get(axis)
        .copied()
        .ok_or_else(|| format(format!("{name} has no axis {axis}")))
}

fn positive(name: &str, v: i64) -> Result<usize, Ct2Error> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| format(format!("{name} = {v}")))
}

/// Checks the spec is Whisper and reads its dimensions.
///
/// # Errors
/// Another spec, missing variables, inconsistent shapes.
pub fn whisper_shape(m: &Ct2Model) -> Result<WhisperShape, Ct2Error> {
    if m.spec != "WhisperSpec" {
        return Err(Ct2Error::Unsupported(format!(
            "spec {} (expected WhisperSpec)",
            m.spec
        )));
    }
    let shape = WhisperShape {
        n_mels: dim(m, "encoder/conv1/weight", 1)?,
        d_model: dim(m, "decoder/embeddings/weight", 1)?,
        vocab: dim(m, "decoder/embeddings/weight", 0)?,
        encoder_layers: m.layer_count("encoder"),
        decoder_layers: m.layer_count("decoder"),
        encoder_heads: positive("encoder/num_heads", m.scalar_int("encoder/num_heads")?)?,
        decoder_heads: positive("decoder/num_heads", m.scalar_int("decoder/num_heads")?)?,
        audio_ctx: dim(m, "encoder/position_encodings/encodings", 0)?,
        text_ctx: dim(m, "decoder/position_encodings/encodings", 0)?,
    };
    if shape.encoder_layers == 0
        || shape.decoder_layers == 0
        || !shape.d_model.is_multiple_of(shape.encoder_heads)
        || !shape.d_model.is_multiple_of(shape.decoder_heads)
    {
        return Err(format(format!("inconsistent Whisper shape {shape:?}")));
    }
    Ok(shape)
}

/// Every tensor of a Whisper spec under the names of `candle_transformers`' Whisper
/// (`model.encoder.…`, `model.decoder.…`), in f32.
///
/// # Errors
/// A missing or malformed variable.
pub fn whisper_tensors(
    m: &Ct2Model,
    shape: &WhisperShape,
    device: &Device,
) -> Result<HashMap<String, Tensor>, Ct2Error> {
    let d = shape.d_model;
    let mut out = HashMap::new();
    let mut put = |to: String, t: Tensor| {
        out.insert(to, t);
    };
    let get = |name: &str| m.tensor(name, device);
    let split = |t: &Tensor, name: &str, parts: usize| -> Result<Vec<Tensor>, Ct2Error> {
        let rows = t.dim(0).map_err(|source| Ct2Error::Tensor {
            name: name.to_owned(),
            source,
        })?;
        if rows != parts * d {
            return Err(format(format!("{name}: {rows} rows, expected {parts}×{d}")));
        }
        t.chunk(parts, 0).map_err(|source| Ct2Error::Tensor {
            name: name.to_owned(),
            source,
        })
    };
    let layer_norm = |from: &str, to: &str, put: &mut dyn FnMut(String, Tensor)| {
        put(format!("{to}.weight"), get(&format!("{from}/gamma"))?);
        put(format!("{to}.bias"), get(&format!("{from}/beta"))?);
        Ok::<_, Ct2Error>(())
    };
    let linear = |from: &str, to: &str, put: &mut dyn FnMut(String, Tensor)| {
        put(format!("{to}.weight"), get(&format!("{from}/weight"))?);
        put(format!("{to}.bias"), get(&format!("{from}/bias"))?);
        Ok::<_, Ct2Error>(())
    };
    // Fused Q,K,V → q_proj, k_proj (no bias), v_proj.
    let fused_qkv = |from: &str, to: &str, put: &mut dyn FnMut(String, Tensor)| {
        let w = split(&get(&format!("{from}/weight"))?, from, 3)?;
        let b = split(&get(&format!("{from}/bias"))?, from, 3)?;
        for (i, proj) in ["q_proj", "k_proj", "v_proj"].iter().enumerate() {
            put(format!("{to}.{proj}.weight"), w[i].clone());
            if *proj != "k_proj" {
                put(format!("{to}.{proj}.bias"), b[i].clone());
            }
        }
        Ok::<_, Ct2Error>(())
    };
    // Fused K,V of cross-attention.
    let fused_kv = |from: &str, to: &str, put: &mut dyn FnMut(String, Tensor)| {
        let w = split(&get(&format!("{from}/weight"))?, from, 2)?;
        let b = split(&get(&format!("{from}/bias"))?, from, 2)?;
        put(format!("{to}.k_proj.weight"), w[0].clone());
        put(format!("{to}.v_proj.weight"), w[1].clone());
        put(format!("{to}.v_proj.bias"), b[1].clone());
        Ok::<_, Ct2Error>(())
    };

    for conv in ["conv1", "conv2"] {
        linear(
            &format!("encoder/{conv}"),
            &format!("model.encoder.{conv}"),
            &mut put,
        )?;
    }
    // Self-attention and feed-forward blocks are named alike on both sides.
    for (side, layers) in [
        ("encoder", shape.encoder_layers),
        ("decoder", shape.decoder_layers),
    ] {
        for i in 0..layers {
            let from = format!("{side}/layer_{i}");
            let to = format!("model.{side}.layers.{i}");
            layer_norm(
                &format!("{from}/self_attention/layer_norm"),
                &format!("{to}.self_attn_layer_norm"),
                &mut put,
            )?;
            fused_qkv(
                &format!("{from}/self_attention/linear_0"),
                &format!("{to}.self_attn"),
                &mut put,
            )?;
            linear(
                &format!("{from}/self_attention/linear_1"),
                &format!("{to}.self_attn.out_proj"),
                &mut put,
            )?;
            layer_norm(
                &format!("{from}/ffn/layer_norm"),
                &format!("{to}.final_layer_norm"),
                &mut put,
            )?;
            linear(
                &format!("{from}/ffn/linear_0"),
                &format!("{to}.fc1"),
                &mut put,
            )?;
            linear(
                &format!("{from}/ffn/linear_1"),
                &format!("{to}.fc2"),
                &mut put,
            )?;
        }
        layer_norm(
            &format!("{side}/layer_norm"),
            &format!("model.{side}.layer_norm"),
            &mut put,
        )?;
    }
    put(
        "model.decoder.embed_tokens.weight".into(),
        get("decoder/embeddings/weight")?,
    );
    put(
        "model.decoder.embed_positions.weight".into(),
        get("decoder/position_encodings/encodings")?,
    );
    // Cross-attention exists only in the decoder.
    for i in 0..shape.decoder_layers {
        let from = format!("decoder/layer_{i}/attention");
        let to = format!("model.decoder.layers.{i}");
        layer_norm(
            &format!("{from}/layer_norm"),
            &format!("{to}.encoder_attn_layer_norm"),
            &mut put,
        )?;
        linear(
            &format!("{from}/linear_0"),
            &format!("{to}.encoder_attn.q_proj"),
            &mut put,
        )?;
        fused_kv(
            &format!("{from}/linear_1"),
            &format!("{to}.encoder_attn"),
            &mut put,
        )?;
        linear(
            &format!("{from}/linear_2"),
            &format!("{to}.encoder_attn.out_proj"),
            &mut put,
        )?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version-6 file with the given variables `(name, shape, dtype code, bytes)`.
    fn file(vars: &[(&str, &[u32], u8, Vec<u8>)], aliases: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        let string = |b: &mut Vec<u8>, s: &str| {
            b.extend_from_slice(&((s.len() + 1) as u16).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
            b.push(0);
        };
        b.extend_from_slice(&6u32.to_le_bytes());
        string(&mut b, "WhisperSpec");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&(vars.len() as u32).to_le_bytes());
        for (name, shape, dtype, data) in vars {
            string(&mut b, name);
            b.push(shape.len() as u8);
            for d in *shape {
                b.extend_from_slice(&d.to_le_bytes());
            }
            b.push(*dtype);
            b.extend_from_slice(&(data.len() as u32).to_le_bytes());
            b.extend_from_slice(data);
        }
        b.extend_from_slice(&(aliases.len() as u32).to_le_bytes());
        for (a, t) in aliases {
            string(&mut b, a);
            string(&mut b, t);
        }
        b
    }

    fn f16_bytes(values: &[f32]) -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
            .collect()
    }

    #[test]
    fn reads_fp16_tensors_scalars_and_aliases() {
        let data = file(
            &[
                ("w", &[2, 2], 4, f16_bytes(&[1.0, -2.5, 0.125, 3.0])),
                ("heads", &[], 2, 6i16.to_le_bytes().to_vec()),
            ],
            &[("alias", "w")],
        );
        let m = Ct2Model::parse(data).expect("parse");
        assert_eq!(m.spec, "WhisperSpec");
        assert_eq!(m.scalar_int("heads").expect("heads"), 6);
        let t = m.tensor("alias", &Device::Cpu).expect("tensor");
        assert_eq!(
            t.to_vec2::<f32>().expect("vec"),
            vec![vec![1.0, -2.5], vec![0.125, 3.0]]
        );
    }

    #[test]
    fn refuses_lies_about_sizes_and_truncation() {
        let bad_len = file(&[("w", &[4], 4, vec![0; 6])], &[]);
        assert!(
            matches!(Ct2Model::parse(bad_len), Err(Ct2Error::Format(m)) if m.contains("6 bytes"))
        );
        let mut truncated = file(&[("w", &[4], 4, vec![0; 8])], &[]);
        truncated.truncate(truncated.len() - 10);
        assert!(matches!(
            Ct2Model::parse(truncated),
            Err(Ct2Error::Format(_))
        ));
        let huge = file(&[("w", &[u32::MAX, u32::MAX, u32::MAX], 4, vec![])], &[]);
        assert!(Ct2Model::parse(huge).is_err());
        let int8 = file(&[("w", &[2], 1, vec![1, 2])], &[]);
        let m = Ct2Model::parse(int8).expect("parse");
        assert!(matches!(
            m.tensor("w", &Device::Cpu),
            Err(Ct2Error::Unsupported(_))
        ));
    }

    #[test]
    fn splits_fused_attention_in_order() {
        // d = 2: fused QKV weight rows are q0 q1 k0 k1 v0 v1.
        let rows: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let m = Ct2Model::parse(file(
            &[
                ("a/weight", &[6, 2], 4, f16_bytes(&rows)),
                (
                    "a/bias",
                    &[6],
                    4,
                    f16_bytes(&[1.0, 2.0, 0.0, 0.0, 5.0, 6.0]),
                ),
            ],
            &[],
        ))
        .expect("parse");
        let w = m.tensor("a/weight", &Device::Cpu).expect("w");
        let parts = w.chunk(3, 0).expect("chunk");
        assert_eq!(
            parts[1].to_vec2::<f32>().expect("k"),
            vec![vec![4.0, 5.0], vec![6.0, 7.0]]
        );
        assert_eq!(
            parts[2].to_vec2::<f32>().expect("v"),
            vec![vec![8.0, 9.0], vec![10.0, 11.0]]
        );
    }
}
