//! Deterministic stand-in weights of any Whisper shape, for the kernels' unit test and the
//! device bench: the arithmetic's cost does not depend on the values, and the bench can then
//! run where the real checkpoints are not (a lent GPU machine receives little).

use std::collections::HashMap;

use crate::{Dims, Tensor};

/// Every tensor a checkpoint of `dims` holds, under candle-transformers' names, filled from a
/// linear congruential sequence seeded by `seed`, uniform in `[-scale/2, scale/2)`.
#[must_use]
pub fn weights(dims: &Dims, seed: u64, scale: f32) -> HashMap<String, Tensor> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5) * scale
    };
    let mut out = HashMap::new();
    let mut put = |name: String, shape: Vec<usize>| {
        let n = shape.iter().product();
        out.insert(name, (shape, (0..n).map(|_| next()).collect()));
    };
    let d = dims.n_state;
    put("model.encoder.conv1.weight".into(), vec![d, dims.n_mels, 3]);
    put("model.encoder.conv1.bias".into(), vec![d]);
    put("model.encoder.conv2.weight".into(), vec![d, d, 3]);
    put("model.encoder.conv2.bias".into(), vec![d]);
    let blocks = (0..dims.audio_layers)
        .map(|i| (format!("model.encoder.layers.{i}"), false))
        .chain((0..dims.text_layers).map(|i| (format!("model.decoder.layers.{i}"), true)));
    for (p, cross) in blocks {
        let attentions: &[(&str, &str)] = if cross {
            &[
                ("self_attn", "self_attn_layer_norm"),
                ("encoder_attn", "encoder_attn_layer_norm"),
            ]
        } else {
            &[("self_attn", "self_attn_layer_norm")]
        };
        for (a, ln) in attentions {
            for proj in ["q_proj", "k_proj", "v_proj", "out_proj"] {
                put(format!("{p}.{a}.{proj}.weight"), vec![d, d]);
                if proj != "k_proj" {
                    put(format!("{p}.{a}.{proj}.bias"), vec![d]);
                }
            }
            put(format!("{p}.{ln}.weight"), vec![d]);
            put(format!("{p}.{ln}.bias"), vec![d]);
        }
        put(format!("{p}.final_layer_norm.weight"), vec![d]);
        put(format!("{p}.final_layer_norm.bias"), vec![d]);
        put(format!("{p}.fc1.weight"), vec![4 * d, d]);
        put(format!("{p}.fc1.bias"), vec![4 * d]);
        put(format!("{p}.fc2.weight"), vec![d, 4 * d]);
        put(format!("{p}.fc2.bias"), vec![d]);
    }
    for side in ["encoder", "decoder"] {
        put(format!("model.{side}.layer_norm.weight"), vec![d]);
        put(format!("model.{side}.layer_norm.bias"), vec![d]);
    }
    put(
        "model.decoder.embed_tokens.weight".into(),
        vec![dims.vocab, d],
    );
    put(
        "model.decoder.embed_positions.weight".into(),
        vec![dims.text_ctx, d],
    );
    out
}
