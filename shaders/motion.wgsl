// Motion energy of the qualia model (v2.4): a spatio-temporal Gabor bank (quadrature pairs,
// 4 orientations x 2 directions, 3 spatial and 2 temporal frequencies, tiled over the picture),
// pymoten's filters on a causal window. The host builds the bank (host/src/inference/motion.rs,
// which also holds the f64 CPU reference of this file) and uploads it as one table:
//   [pairs x 2 x cells] spatial sine, cosine weights over the grid,
//   [pairs]             the sum of each pair's Gaussian envelope,
//   [nt x 2 x taps]     temporal sine, cosine taps, tap 0 the current frame,
//   [pairs x 4]         each pair's cell bounds x0, x1, y0, y1 (weights outside are 0).
//
// `project`: one workgroup per frame slot. The active picture [x0, x1) x [y0, y1) is averaged
// into a cols x rows grid (integer cell boundaries), each cell converted to CIE L*; the row
// written is [sin_0, cos_0, ..., sin_{P-1}, cos_{P-1}, rms contrast of the grid].
// `energy`: one workgroup per output frame k, reading slots k .. k + taps - 1 (the frame itself
// is slot k + taps - 1). One thread per (pair, temporal frequency) writes the forward and
// backward energies; the row is [sigma, channels...], sigma being the frame's RMS contrast
// floored at SIGMA_FLOOR. The host pools the channels into the feature (MotionBank::feature:
// Minkowski pooling over positions of the opponent energy, over sigma). Reductions run in a
// fixed order.

struct Params {
    width: u32,
    height: u32,
    slots: u32,
    outputs: u32,
    x0: u32,
    y0: u32,
    x1: u32,
    y1: u32,
    cols: u32,
    rows: u32,
    pairs: u32,
    nt: u32,
    taps: u32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
}

const WG: u32 = 256u;
const MAX_CELLS: u32 = 2304u; // 64 x 36
const SIGMA_FLOOR: f32 = 2.0; // motion::SIGMA_FLOOR

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> frames: array<u32>;
@group(0) @binding(2) var<storage, read> bank: array<f32>;
@group(0) @binding(3) var<storage, read_write> proj: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> grid: array<f32, 2304>;
var<workgroup> part: array<f32, 256>;

fn byte_at(i: u32) -> u32 {
    return (frames[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn linear(c: f32) -> f32 {
    if (c < 0.04045) {
        return c / 12.92;
    }
    return pow((c + 0.055) / 1.055, 2.4);
}

// CIE L* as pymoten's rgb2lab.
fn lightness(c: vec3<f32>) -> f32 {
    let y = 0.212671 * linear(c.x) + 0.715160 * linear(c.y) + 0.072169 * linear(c.z);
    var f: f32;
    if (y < 0.008856) {
        f = 7.787 * y + 4.0 / 29.0;
    } else {
        f = pow(y, 1.0 / 3.0);
    }
    return 116.0 * f - 16.0;
}

// Sum of `part` into part[0], in a fixed tree order. Called by the whole workgroup.
fn reduce(lid: u32) {
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            part[lid] = part[lid] + part[lid + s];
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn project(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let slot = wid.x;
    let cells = p.cols * p.rows;
    let w = p.x1 - p.x0;
    let h = p.y1 - p.y0;
    for (var c = lid; c < cells; c = c + WG) {
        let cx = c % p.cols;
        let cy = c / p.cols;
        let xa = p.x0 + cx * w / p.cols;
        let xb = p.x0 + (cx + 1u) * w / p.cols;
        let ya = p.y0 + cy * h / p.rows;
        let yb = p.y0 + (cy + 1u) * h / p.rows;
        var sum = vec3<u32>(0u);
        for (var y = ya; y < yb; y = y + 1u) {
            for (var x = xa; x < xb; x = x + 1u) {
                let i = ((slot * p.height + y) * p.width + x) * 3u;
                sum = sum + vec3<u32>(byte_at(i), byte_at(i + 1u), byte_at(i + 2u));
            }
        }
        let n = f32((xb - xa) * (yb - ya)) * 255.0;
        grid[c] = lightness(vec3<f32>(sum) / n);
    }
    workgroupBarrier();

    // RMS contrast of the grid, two passes (mean, then squared deviations).
    var s = 0.0;
    for (var c = lid; c < cells; c = c + WG) {
        s = s + grid[c];
    }
    part[lid] = s;
    workgroupBarrier();
    reduce(lid);
    let mean = part[0] / f32(cells);
    workgroupBarrier();
    var d = 0.0;
    for (var c = lid; c < cells; c = c + WG) {
        let e = grid[c] - mean;
        d = d + e * e;
    }
    part[lid] = d;
    workgroupBarrier();
    reduce(lid);
    let sigma = sqrt(part[0] / f32(cells));

    let row = 2u * p.pairs + 1u;
    let bounds = 2u * p.pairs * cells + p.pairs + 2u * p.nt * p.taps;
    for (var k = lid; k < 2u * p.pairs; k = k + WG) {
        let base = k * cells;
        let b = bounds + 4u * (k / 2u);
        let x0 = u32(bank[b]);
        let x1 = u32(bank[b + 1u]);
        let y0 = u32(bank[b + 2u]);
        let y1 = u32(bank[b + 3u]);
        var acc = 0.0;
        for (var y = y0; y < y1; y = y + 1u) {
            for (var x = x0; x < x1; x = x + 1u) {
                let c = y * p.cols + x;
                acc = acc + bank[base + c] * grid[c];
            }
        }
        proj[slot * row + k] = acc;
    }
    if (lid == 0u) {
        proj[slot * row + 2u * p.pairs] = sigma;
    }
}

@compute @workgroup_size(256)
fn energy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let frame = wid.x;
    let current = frame + p.taps - 1u;
    let cells = p.cols * p.rows;
    let row = 2u * p.pairs + 1u;
    let norms = 2u * p.pairs * cells;
    let temporal = norms + p.pairs;
    let orow = 1u + 2u * p.pairs * p.nt;
    if (lid < p.pairs * p.nt) {
        let pair = lid / p.nt;
        let j = lid % p.nt;
        var a = 0.0;
        var b = 0.0;
        var c = 0.0;
        var d = 0.0;
        for (var k = 0u; k < p.taps; k = k + 1u) {
            let at = (current - k) * row + 2u * pair;
            let s_sin = proj[at];
            let s_cos = proj[at + 1u];
            let ts = bank[temporal + (2u * j) * p.taps + k];
            let tc = bank[temporal + (2u * j + 1u) * p.taps + k];
            a = a + s_sin * tc;
            b = b + s_cos * ts;
            c = c + s_sin * ts;
            d = d + s_cos * tc;
        }
        let forward = sqrt((a + b) * (a + b) + (d - c) * (d - c));
        let backward = sqrt((b - a) * (b - a) + (d + c) * (d + c));
        out[frame * orow + 1u + 2u * lid] = forward;
        out[frame * orow + 2u + 2u * lid] = backward;
    }
    if (lid == 0u) {
        out[frame * orow] = max(proj[current * row + 2u * p.pairs], SIGMA_FLOOR);
    }
}
