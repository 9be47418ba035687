// Standardisation, response kernel and readout of the qualia model (QUALIA-MODEL.md).
//
// `standardise`: per (second, feature), an absent modality takes the model's "absent" value,
// then z = (x - mean) / std with the model's fixed population statistics, clamped to ±10.
// `convolve`: the canonical double-gamma HRF (sampled at 1 s, unit sum) applied causally and
// shifted back by the model's lag, so second t describes the response to second t. At the
// clip's edges only the kernel taps that fall inside the clip are used, renormalised.
// `readout`: y[t, n] = b[n] + sum_f W[n, f] * r[t, f].

struct Params {
    seconds: u32,
    features: u32,
    taps: u32,
    lag: u32,
    has_video: u32,
    has_audio: u32,
    networks: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> raw: array<f32>;       // seconds x features
@group(0) @binding(2) var<storage, read> stats: array<f32>;     // 4 x features: mean, std, absent, modality (0 visual, 1 audio)
@group(0) @binding(3) var<storage, read> hrf: array<f32>;       // taps
@group(0) @binding(4) var<storage, read> weights: array<f32>;   // networks x features, then networks biases
@group(0) @binding(5) var<storage, read_write> z: array<f32>;   // seconds x features
@group(0) @binding(6) var<storage, read_write> r: array<f32>;   // seconds x features
@group(0) @binding(7) var<storage, read_write> y: array<f32>;   // seconds x networks

@compute @workgroup_size(64)
fn standardise(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.seconds * p.features) {
        return;
    }
    let f = i % p.features;
    var x = raw[i];
    let modality = stats[3u * p.features + f];
    if ((modality < 0.5 && p.has_video == 0u) || (modality >= 0.5 && p.has_audio == 0u)) {
        x = stats[2u * p.features + f];
    }
    z[i] = clamp((x - stats[f]) / stats[p.features + f], -10.0, 10.0);
}

@compute @workgroup_size(64)
fn convolve(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.seconds * p.features) {
        return;
    }
    let f = i % p.features;
    let t = i32(i / p.features);
    var acc = 0.0;
    var norm = 0.0;
    for (var k = 0; k < i32(p.taps); k = k + 1) {
        let s = t + i32(p.lag) - k;
        if (s >= 0 && s < i32(p.seconds)) {
            acc = acc + hrf[k] * z[u32(s) * p.features + f];
            norm = norm + hrf[k];
        }
    }
    r[i] = acc / norm;
}

@compute @workgroup_size(64)
fn readout(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.seconds * p.networks) {
        return;
    }
    let n = i % p.networks;
    let t = i / p.networks;
    var acc = weights[p.networks * p.features + n];
    for (var f = 0u; f < p.features; f = f + 1u) {
        acc = acc + weights[n * p.features + f] * r[t * p.features + f];
    }
    y[i] = acc;
}
