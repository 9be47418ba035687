// Per-second pooling of the qualia features (QUALIA-MODEL.md, "Per-second pooling").
//
// One invocation per second t. Frames [t*fps, (t+1)*fps) and hops [t*100, (t+1)*100) (moved
// back by the model's hop offset) that exist are pooled: means for sustained features, max for transients (shot change, onset
// strength), the absolute change from the previous second for the level features, and two
// per-second audio features: syllabic modulation (squared modulation depth of the speech-band
// envelope at 2–8 Hz) and onset rate (upward crossings of the flux threshold).
// A second past the end of the video holds the last frame (no motion, no cut); a second past
// the end of the audio reads as silence.

struct Params {
    seconds: u32,
    n_frames: u32,
    n_hops: u32,
    fps: u32,
    onset_threshold: f32,
    hop_offset: u32,
    _pad1: u32,
    _pad2: u32,
}

const VF: u32 = 8u;   // per-frame features
const AF: u32 = 15u;  // per-hop features
const F: u32 = 27u;   // per-second features
const HPS: u32 = 100u; // hops per second
const SILENT_DB: f32 = -100.0;
const SILENT_MEL: f32 = -13.815511; // ln(1e-6), the mel floor of audio.wgsl

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> frame_feats: array<f32>;
@group(0) @binding(2) var<storage, read> hop_feats: array<f32>;
@group(0) @binding(3) var<storage, read> dft: array<vec2<f32>>; // 100 x (cos, sin) of 2*pi*m/100
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // seconds x 27

fn frame_range(t: u32) -> vec2<u32> {
    let a = min(t * p.fps, p.n_frames);
    let b = min((t + 1u) * p.fps, p.n_frames);
    return vec2<u32>(a, b);
}

// Second t pools hops [t*100 - hop_offset, (t+1)*100 - hop_offset): with an offset of 3 the
// last hop's centred 32 ms window ends inside second t, so no sound after the second leaks in.
fn hop_range(t: u32) -> vec2<u32> {
    let a = min(max(t * HPS, p.hop_offset) - p.hop_offset, p.n_hops);
    let b = min((t + 1u) * HPS - p.hop_offset, p.n_hops);
    return vec2<u32>(a, b);
}

fn mean_frame_feature(t: u32, k: u32) -> f32 {
    let r = frame_range(t);
    if (r.x == r.y) {
        if (p.n_frames == 0u) {
            return 0.0;
        }
        return frame_feats[(p.n_frames - 1u) * VF + k];
    }
    var s = 0.0;
    for (var i = r.x; i < r.y; i = i + 1u) {
        s = s + frame_feats[i * VF + k];
    }
    return s / f32(r.y - r.x);
}

fn mean_hop_feature(t: u32, k: u32, silent: f32) -> f32 {
    let r = hop_range(t);
    if (r.x == r.y) {
        return silent;
    }
    var s = 0.0;
    for (var i = r.x; i < r.y; i = i + 1u) {
        s = s + hop_feats[i * AF + k];
    }
    return s / f32(r.y - r.x);
}

@compute @workgroup_size(64)
fn pool_seconds(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x;
    if (t >= p.seconds) {
        return;
    }
    let o = t * F;
    let fr = frame_range(t);
    let held = fr.x == fr.y;

    // Visual: 0 luma, 1 contrast, 2 colourfulness, 3 edges, 4 motion, 5 coarse motion,
    // 6 cut (max), 7 saliency, 8 luma change.
    for (var k = 0u; k < 8u; k = k + 1u) {
        out[o + k] = mean_frame_feature(t, k);
    }
    if (held) {
        out[o + 4u] = 0.0;
        out[o + 5u] = 0.0;
        out[o + 6u] = 0.0;
    } else {
        var m = 0.0;
        for (var i = fr.x; i < fr.y; i = i + 1u) {
            m = max(m, frame_feats[i * VF + 6u]);
        }
        out[o + 6u] = m;
    }
    if (t == 0u) {
        out[o + 8u] = 0.0;
    } else {
        out[o + 8u] = abs(out[o + 0u] - mean_frame_feature(t - 1u, 0u));
    }

    // Audio: 9 level, 10 centroid, 11 flux, 12 onset strength (max flux), 13 speech ratio,
    // 14 flatness, 15 bass ratio, 16..23 log-mel, 24 level change, 25 syllabic, 26 onset rate.
    let hr = hop_range(t);
    out[o + 9u] = mean_hop_feature(t, 0u, SILENT_DB);
    out[o + 10u] = mean_hop_feature(t, 1u, 0.0);
    out[o + 11u] = mean_hop_feature(t, 2u, 0.0);
    var peak = 0.0;
    var onsets = 0.0;
    for (var i = hr.x; i < hr.y; i = i + 1u) {
        let fl = hop_feats[i * AF + 2u];
        peak = max(peak, fl);
        if (i > 0u && fl > p.onset_threshold && hop_feats[(i - 1u) * AF + 2u] <= p.onset_threshold) {
            onsets = onsets + 1.0;
        }
    }
    out[o + 12u] = peak;
    out[o + 13u] = mean_hop_feature(t, 3u, 0.0);
    out[o + 14u] = mean_hop_feature(t, 4u, 0.0);
    out[o + 15u] = mean_hop_feature(t, 5u, 0.0);
    for (var m = 0u; m < 8u; m = m + 1u) {
        out[o + 16u + m] = mean_hop_feature(t, 7u + m, SILENT_MEL);
    }
    if (t == 0u) {
        out[o + 24u] = 0.0;
    } else {
        out[o + 24u] = abs(out[o + 9u] - mean_hop_feature(t - 1u, 0u, SILENT_DB));
    }

    // Syllabic modulation: DFT of the mean-removed envelope at 2..8 Hz over the second's hops,
    // as squared modulation depth relative to the mean envelope (e = E(1 + m cos) gives m^2),
    // so steady sound and silence read 0 and speech reads high.
    let n = hr.y - hr.x;
    var syllabic = 0.0;
    if (n >= 2u) {
        let mean_env = mean_hop_feature(t, 6u, 0.0);
        var band = 0.0;
        for (var f = 2u; f <= 8u; f = f + 1u) {
            var cr = 0.0;
            var ci = 0.0;
            for (var i = 0u; i < n; i = i + 1u) {
                let e = hop_feats[(hr.x + i) * AF + 6u] - mean_env;
                let w = dft[(f * i) % HPS];
                cr = cr + e * w.x;
                ci = ci - e * w.y;
            }
            band = band + cr * cr + ci * ci;
        }
        syllabic = 4.0 * band / (f32(n * n) * mean_env * mean_env + 1e-12);
    }
    out[o + 25u] = syllabic;
    out[o + 26u] = onsets;
}
