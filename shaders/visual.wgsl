// Per-frame visual features of the qualia model (QUALIA-MODEL.md, "Visual features").
//
// Two passes. `frames` holds n_frames + 1 packed RGB24 frames: slot 0 is the frame before the
// batch (the host repeats the first frame at the start of a clip, so motion and cut read 0
// there), slot k the k-th output frame.
// - `slot_stats`, one workgroup per slot: each pixel's luma (unpacked from RGB once, into
//   `lumas`), the slot's luma and hue histograms and its 32 x 18 grid of cell means (`stats`).
//   Every frame is a "current" frame once and a "previous" frame once; computing these per
//   slot, not per output frame, does each once.
// - `frame_features`, one workgroup per output frame: the Sobel reads the luma plane (nine
//   float loads, not nine RGB unpacks), motion reads the previous slot's luma, and the cut and
//   grid features read both slots' stats.
// Every reduction runs in a fixed order (and the same order as the single-pass kernel this
// replaced), so the same input gives the same bits on the same adapter.
//
// Output row (8 floats): luma mean, RMS contrast, colourfulness (Hasler–Süsstrunk), Sobel edge
// energy, motion energy, coarse motion energy, shot-change score, centre-surround saliency.
//
// Every feature is computed over the active picture [x0, x1) x [y0, y1) only: letterbox and
// pillarbox bars (the decoder's own padding and bars baked into the source) are not picture.
// The Sobel reads clamp to that rectangle, and the 32 x 18 grid divides it (cells of at least
// one pixel). With the rectangle the whole frame, this is v1's kernel bit for bit.

struct Params {
    width: u32,
    height: u32,
    n_frames: u32,
    _pad: u32,
    x0: u32,
    y0: u32,
    x1: u32,
    y1: u32,
}

const WG: u32 = 256u;
const GX: u32 = 32u;
const GY: u32 = 18u;
const CELLS: u32 = 576u; // GX * GY
const LUMA_BINS: u32 = 16u;
const HUE_BINS: u32 = 17u; // 16 hue sectors + achromatic
const CHROMA_MIN: i32 = 25;

// Per slot in `stats`: the 33 histogram counts (luma 16, hue 17), then the 576 cell means
// (f32 bits).
const HIST: u32 = 33u;
const STATS: u32 = 609u; // HIST + CELLS

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> frames: array<u32>;
@group(0) @binding(2) var<storage, read_write> lumas: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> sums: array<array<f32, 256>, 8>;
var<workgroup> hist: array<atomic<u32>, 33>; // [luma 16, hue 17] of one slot
var<workgroup> totals: array<f32, 8>;

fn byte_at(i: u32) -> u32 {
    return (frames[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn rgb_u(slot: u32, x: u32, y: u32) -> vec3<u32> {
    let i = ((slot * p.height + y) * p.width + x) * 3u;
    return vec3<u32>(byte_at(i), byte_at(i + 1u), byte_at(i + 2u));
}

fn luma_of(c: vec3<u32>) -> f32 {
    let f = vec3<f32>(c) / 255.0;
    return 0.299 * f.x + 0.587 * f.y + 0.114 * f.z;
}

// The luma plane written by `slot_stats`, read clamped to the active picture.
fn luma(slot: u32, x: i32, y: i32) -> f32 {
    let cx = u32(clamp(x, i32(p.x0), i32(p.x1) - 1));
    let cy = u32(clamp(y, i32(p.y0), i32(p.y1) - 1));
    return lumas[(slot * p.height + cy) * p.width + cx];
}

fn grid(slot: u32, cell: u32) -> f32 {
    return bitcast<f32>(stats[slot * STATS + HIST + cell]);
}

// Integer binning so that the CPU reference and every adapter agree exactly.
fn luma_bin(c: vec3<u32>) -> u32 {
    let yi = 299u * c.x + 587u * c.y + 114u * c.z;
    return (yi * LUMA_BINS) / 255001u;
}

fn hue_bin(c: vec3<u32>) -> u32 {
    let r = i32(c.x);
    let g = i32(c.y);
    let b = i32(c.z);
    let mx = max(r, max(g, b));
    let mn = min(r, min(g, b));
    let d = mx - mn;
    if (d <= CHROMA_MIN) {
        return 16u;
    }
    var num: i32;
    if (mx == r) {
        num = g - b;
        if (num < 0) {
            num = num + 6 * d;
        }
    } else if (mx == g) {
        num = b - r + 2 * d;
    } else {
        num = r - g + 4 * d;
    }
    return min(u32((16 * num) / (6 * d)), 15u);
}

// Cell `cell` of the grid over the active rectangle: columns [xs, xe), rows [ys, ye).
fn cell_span(cell: u32) -> vec4<u32> {
    let rw = p.x1 - p.x0;
    let rh = p.y1 - p.y0;
    let cx = cell % GX;
    let cy = cell / GX;
    let xs = p.x0 + cx * rw / GX;
    let ys = p.y0 + cy * rh / GY;
    return vec4<u32>(xs, max(p.x0 + (cx + 1u) * rw / GX, xs + 1u), ys, max(p.y0 + (cy + 1u) * rh / GY, ys + 1u));
}

fn cell_mean(slot: u32, cell: u32) -> f32 {
    let c = cell_span(cell);
    var s = 0.0;
    for (var yy = c.z; yy < c.w; yy = yy + 1u) {
        for (var xx = c.x; xx < c.y; xx = xx + 1u) {
            s = s + luma_of(rgb_u(slot, xx, yy));
        }
    }
    return s / f32((c.y - c.x) * (c.w - c.z));
}

fn reduce_sums(lid: u32, count: u32) {
    for (var stride = WG / 2u; stride > 0u; stride = stride >> 1u) {
        if (lid < stride) {
            for (var k = 0u; k < count; k = k + 1u) {
                sums[k][lid] = sums[k][lid] + sums[k][lid + stride];
            }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn slot_stats(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let slot = wid.x;
    let rw = p.x1 - p.x0;
    let n = rw * (p.y1 - p.y0);
    if (lid < HIST) {
        atomicStore(&hist[lid], 0u);
    }
    workgroupBarrier();
    for (var i = lid; i < n; i = i + WG) {
        let x = p.x0 + i % rw;
        let y = p.y0 + i / rw;
        let c = rgb_u(slot, x, y);
        lumas[(slot * p.height + y) * p.width + x] = luma_of(c);
        atomicAdd(&hist[luma_bin(c)], 1u);
        atomicAdd(&hist[LUMA_BINS + hue_bin(c)], 1u);
    }
    for (var cell = lid; cell < CELLS; cell = cell + WG) {
        stats[slot * STATS + HIST + cell] = bitcast<u32>(cell_mean(slot, cell));
    }
    workgroupBarrier();
    if (lid < HIST) {
        stats[slot * STATS + lid] = atomicLoad(&hist[lid]);
    }
}

@compute @workgroup_size(256)
fn frame_features(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let frame = wid.x;
    let cur = frame + 1u;
    let prev = frame;
    let rw = p.x1 - p.x0;
    let n = rw * (p.y1 - p.y0);

    var acc: array<f32, 8>;
    for (var k = 0u; k < 8u; k = k + 1u) {
        acc[k] = 0.0;
    }
    for (var i = lid; i < n; i = i + WG) {
        let x = i32(p.x0 + i % rw);
        let y = i32(p.y0 + i / rw);
        let f = vec3<f32>(rgb_u(cur, u32(x), u32(y))) / 255.0;
        let yl = luma(cur, x, y);
        let rg = f.x - f.y;
        let yb = 0.5 * (f.x + f.y) - f.z;
        let gx = (luma(cur, x + 1, y - 1) + 2.0 * luma(cur, x + 1, y) + luma(cur, x + 1, y + 1))
            - (luma(cur, x - 1, y - 1) + 2.0 * luma(cur, x - 1, y) + luma(cur, x - 1, y + 1));
        let gy = (luma(cur, x - 1, y + 1) + 2.0 * luma(cur, x, y + 1) + luma(cur, x + 1, y + 1))
            - (luma(cur, x - 1, y - 1) + 2.0 * luma(cur, x, y - 1) + luma(cur, x + 1, y - 1));
        acc[0] = acc[0] + yl;
        acc[1] = acc[1] + yl * yl;
        acc[2] = acc[2] + rg;
        acc[3] = acc[3] + rg * rg;
        acc[4] = acc[4] + yb;
        acc[5] = acc[5] + yb * yb;
        acc[6] = acc[6] + sqrt(gx * gx + gy * gy);
        acc[7] = acc[7] + abs(yl - luma(prev, x, y));
    }
    for (var k = 0u; k < 8u; k = k + 1u) {
        sums[k][lid] = acc[k];
    }
    workgroupBarrier();
    reduce_sums(lid, 8u);
    if (lid < 8u) {
        totals[lid] = sums[lid][0];
    }
    workgroupBarrier();

    // Centre-surround saliency and coarse motion on the 32 x 18 grid of cell means.
    var sal_sum = 0.0;
    var sal_max = 0.0;
    var coarse = 0.0;
    for (var cell = lid; cell < CELLS; cell = cell + WG) {
        let cx = i32(cell % GX);
        let cy = i32(cell / GX);
        var s = 0.0;
        var cnt = 0.0;
        for (var dy = -2; dy <= 2; dy = dy + 1) {
            for (var dx = -2; dx <= 2; dx = dx + 1) {
                let xx = cx + dx;
                let yy = cy + dy;
                if (xx >= 0 && xx < i32(GX) && yy >= 0 && yy < i32(GY)) {
                    s = s + grid(cur, u32(yy) * GX + u32(xx));
                    cnt = cnt + 1.0;
                }
            }
        }
        let g = grid(cur, cell);
        let d = abs(g - s / cnt);
        sal_sum = sal_sum + d;
        sal_max = max(sal_max, d);
        coarse = coarse + abs(g - grid(prev, cell));
    }
    sums[0][lid] = sal_sum;
    sums[1][lid] = coarse;
    sums[2][lid] = sal_max;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride >> 1u) {
        if (lid < stride) {
            sums[0][lid] = sums[0][lid] + sums[0][lid + stride];
            sums[1][lid] = sums[1][lid] + sums[1][lid + stride];
            sums[2][lid] = max(sums[2][lid], sums[2][lid + stride]);
        }
        workgroupBarrier();
    }

    if (lid == 0u) {
        let nf = f32(n);
        let mean_y = totals[0] / nf;
        let var_y = max(totals[1] / nf - mean_y * mean_y, 0.0);
        let mean_rg = totals[2] / nf;
        let mean_yb = totals[4] / nf;
        let var_rg = max(totals[3] / nf - mean_rg * mean_rg, 0.0);
        let var_yb = max(totals[5] / nf - mean_yb * mean_yb, 0.0);
        let colour = sqrt(var_rg + var_yb) + 0.3 * sqrt(mean_rg * mean_rg + mean_yb * mean_yb);
        var dl = 0u;
        for (var b = 0u; b < LUMA_BINS; b = b + 1u) {
            let a = stats[cur * STATS + b];
            let q = stats[prev * STATS + b];
            dl = dl + max(a, q) - min(a, q);
        }
        var dh = 0u;
        for (var b = 0u; b < HUE_BINS; b = b + 1u) {
            let a = stats[cur * STATS + LUMA_BINS + b];
            let q = stats[prev * STATS + LUMA_BINS + b];
            dh = dh + max(a, q) - min(a, q);
        }
        let cut = 0.25 * (f32(dl) + f32(dh)) / nf;
        let sal_mean = sums[0][0] / f32(CELLS);
        let base = frame * 8u;
        out[base + 0u] = mean_y;
        out[base + 1u] = sqrt(var_y);
        out[base + 2u] = colour;
        out[base + 3u] = totals[6] / nf;
        out[base + 4u] = totals[7] / nf;
        out[base + 5u] = sums[1][0] / f32(CELLS);
        out[base + 6u] = cut;
        out[base + 7u] = sums[2][0] / (sal_mean + 0.01);
    }
}
