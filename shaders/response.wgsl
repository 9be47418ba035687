// Standardisation, response kernel and readout of the qualia model (QUALIA-MODEL.md).
//
// `standardise`: per (second, feature), a feature whose modality is absent (its bit is clear in
// `present`) takes the model's "absent" value, then z = (x - mean) / std with the model's fixed
// population statistics, clamped to ±10.
// `convolve`: r[t] = sum over taps k in [first_tap, end_tap) of hrf[k] * z[t + shift - k]. Both
// time bases keep shift <= first_tap, so second t only ever reads seconds <= t (causal):
//   stimulus time: shift = first_tap = the HRF's peak lag, i.e. the HRF from its peak onwards,
//                  starting at the second of the cause (the default for lenses and moments);
//                  since qualia 2.8.0 end_tap is the first zero crossing after the peak, so the
//                  undershoot (a property of blood flow) never reads as a dip below rest;
//   BOLD time:     shift = first_tap = 0, the whole HRF applied forward (peak 5 s later), for
//                  comparison with fMRI.
// At the clip's start only the taps that fall inside the clip are used, renormalised (0 when
// their weights sum to nothing).
// `readout`: y[t, n] = b[n] + sum_f W[n, f] * r[t, f].

struct Params {
    seconds: u32,
    features: u32,
    taps: u32,
    shift: u32,
    present: u32,   // bit 0 video, 1 audio, 2 speech, 3 clip flags (always set)
    first_tap: u32,
    networks: u32,
    end_tap: u32,   // one past the last tap read
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> raw: array<f32>;       // seconds x features
@group(0) @binding(2) var<storage, read> stats: array<f32>;     // 4 x features: mean, std, absent, modality (0 visual, 1 audio, 2 speech, 3 clip)
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
    let modality = u32(stats[3u * p.features + f] + 0.5);
    if ((p.present & (1u << modality)) == 0u) {
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
    for (var k = i32(p.first_tap); k < i32(min(p.end_tap, p.taps)); k = k + 1) {
        let s = t + i32(p.shift) - k;
        if (s >= 0 && s < i32(p.seconds)) {
            acc = acc + hrf[k] * z[u32(s) * p.features + f];
            norm = norm + hrf[k];
        }
    }
    // BOLD time at the clip's first second: the HRF's first tap is 0, so nothing has arrived.
    r[i] = select(0.0, acc / norm, norm > 1e-9);
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
