// Per-hop audio features of the qualia model (QUALIA-MODEL.md, "Audio features").
//
// 16 kHz mono samples; a hop is 160 samples (10 ms) and its analysis window the 512 samples
// (32 ms) centred on the hop, Hann-weighted, zero outside the clip. `samples` starts PRE
// samples before the batch's lead hop: local hop 0 is the hop before the batch (only its
// spectrum is used, for spectral flux), local hops 1..n_hops-1 are output. At the start of a clip there is no
// hop before, so `lead_is_self` makes hop 1 its own predecessor (flux 0).
//
// `spectrum`: one workgroup per local hop, an in-place radix-2 FFT of 512 points in workgroup
// memory with twiddles from the host, writing the power spectrum (257 bins).
// `hop_features`: one invocation per output hop, 15 floats: level (dBFS), spectral centroid
// (kHz), spectral flux (positive log-mel change), speech-band (300–3400 Hz) ratio, spectral flatness, bass (< 250 Hz)
// ratio, speech-band amplitude envelope, 8 log-mel band energies.

struct Params {
    n_hops: u32,
    n_samples: u32,
    lead_is_self: u32,
    _pad: u32,
}

const N: u32 = 512u;
const BINS: u32 = 257u;
const HOP: u32 = 160u;
const FEATS: u32 = 15u;
const MELS: u32 = 8u;
const PRE: u32 = 176u;        // (N - HOP) / 2: window start to hop start
const SPEECH_LO: u32 = 10u;  // 312.5 Hz
const SPEECH_HI: u32 = 108u; // 3375 Hz
const BASS_HI: u32 = 7u;     // 218.75 Hz
const SILENT_POWER: f32 = 1e-6;
// Floors near the noise of 16-bit audio (per bin and per mel band), so that values below what
// any real recording carries do not decide a feature.
const BIN_FLOOR: f32 = 1e-8;
const MEL_FLOOR: f32 = 1e-6;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> samples: array<f32>;
@group(0) @binding(2) var<storage, read> window: array<f32>;     // 512 Hann weights
@group(0) @binding(3) var<storage, read> twiddles: array<vec2<f32>>; // 256 x (cos, -sin)
@group(0) @binding(4) var<storage, read> mel: array<f32>;        // 8 x 257 triangular filters
@group(0) @binding(5) var<storage, read_write> power: array<f32>; // 257 x n_hops (bin-major)
@group(0) @binding(6) var<storage, read_write> out: array<f32>;   // (n_hops - 1) x 15

var<workgroup> re: array<f32, 512>;
var<workgroup> im: array<f32, 512>;

fn sample_at(i: u32) -> f32 {
    if (i < p.n_samples) {
        return samples[i];
    }
    return 0.0;
}

@compute @workgroup_size(256)
fn spectrum(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let hop = wid.x;
    let start = hop * HOP;
    for (var k = 0u; k < 2u; k = k + 1u) {
        let n = lid + k * 256u;
        let r = reverseBits(n) >> 23u;
        re[r] = sample_at(start + n) * window[n];
        im[r] = 0.0;
    }
    workgroupBarrier();
    for (var span = 1u; span < N; span = span << 1u) {
        let pos = lid % span;
        let i = (lid / span) * 2u * span + pos;
        let j = i + span;
        let tw = twiddles[pos * (N / (2u * span))];
        let tr = tw.x * re[j] - tw.y * im[j];
        let ti = tw.x * im[j] + tw.y * re[j];
        let ar = re[i];
        let ai = im[i];
        re[j] = ar - tr;
        im[j] = ai - ti;
        re[i] = ar + tr;
        im[i] = ai + ti;
        workgroupBarrier();
    }
    // Bin-major (power[k * n_hops + hop]): neighbouring invocations of `hop_features` read
    // neighbouring addresses, which CPU adapters turn into vector loads instead of gathers.
    power[lid * p.n_hops + hop] = re[lid] * re[lid] + im[lid] * im[lid];
    if (lid == 0u) {
        power[256u * p.n_hops + hop] = re[256] * re[256] + im[256] * im[256];
    }
}

@compute @workgroup_size(64)
fn hop_features(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x + 1u;
    if (j >= p.n_hops) {
        return;
    }
    var prev = j - 1u;
    if (j == 1u && p.lead_is_self != 0u) {
        prev = j;
    }

    // Level over the hop's own 160 samples (what exists of them).
    let start = j * HOP + PRE;
    var ss = 0.0;
    var cnt = 0u;
    for (var i = 0u; i < HOP; i = i + 1u) {
        if (start + i < p.n_samples) {
            let s = samples[start + i];
            ss = ss + s * s;
            cnt = cnt + 1u;
        }
    }
    var rms = 0.0;
    if (cnt > 0u) {
        rms = sqrt(ss / f32(cnt));
    }
    let level = 20.0 * log(max(rms, 1e-5)) / log(10.0);

    var total = 0.0;
    var weighted = 0.0;
    var speech = 0.0;
    var bass = 0.0;
    var log_sum = 0.0;
    for (var k = 1u; k < BINS; k = k + 1u) {
        let pk = power[k * p.n_hops + j];
        total = total + pk;
        weighted = weighted + f32(k) * 31.25 * pk;
        if (k >= SPEECH_LO && k <= SPEECH_HI) {
            speech = speech + pk;
        }
        if (k <= BASS_HI) {
            bass = bass + pk;
        }
        log_sum = log_sum + log(pk + BIN_FLOOR);
    }
    let o = (j - 1u) * FEATS;
    out[o + 0u] = level;
    if (total < SILENT_POWER) {
        out[o + 1u] = 0.0;
        out[o + 3u] = 0.0;
        out[o + 4u] = 0.0;
        out[o + 5u] = 0.0;
    } else {
        out[o + 1u] = weighted / total / 1000.0;
        out[o + 3u] = speech / total;
        out[o + 4u] = exp(log_sum / 256.0) / (total / 256.0 + BIN_FLOOR);
        out[o + 5u] = bass / total;
    }
    out[o + 6u] = sqrt(speech) / 256.0;
    // Spectral flux on log-mel bands: wide bands average out the bin-to-bin fluctuation of
    // stationary noise, so sustained sound reads low and onsets read high.
    var flux = 0.0;
    for (var m = 0u; m < MELS; m = m + 1u) {
        var e = 0.0;
        var ep = 0.0;
        for (var k = 0u; k < BINS; k = k + 1u) {
            e = e + mel[m * BINS + k] * power[k * p.n_hops + j];
            ep = ep + mel[m * BINS + k] * power[k * p.n_hops + prev];
        }
        let le = log(e + MEL_FLOOR);
        out[o + 7u + m] = le;
        flux = flux + max(0.0, le - log(ep + MEL_FLOOR));
    }
    out[o + 2u] = flux / f32(MELS);
}
