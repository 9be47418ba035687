// Whisper on the device: one tiled matrix product for every linear layer, both convolutions
// and the attention products (host/whisper-gpu). C(m, n) = alpha * sum_k A(m, k) * B(n, k),
// then optional bias, GELU, an added matrix, and accumulation into C. Every operand is read
// through strides, so the same kernel reads a weight in PyTorch's (out, in) layout, a head's
// slice of a projection, a transposed value matrix or, for a convolution, the input's
// im2col view without building it. Products are batched along z: z = outer * z_div + inner,
// each with its own offset stride (a candidate, a head).
//
// The tile is 64 x 64 with a depth of 16; each of the 256 invocations computes 4 x 4 outputs.
// Summation runs over k in ascending tiles, so results differ from the CPU's only by the
// order of additions (the parity tests state the bound).
//
// Weights may be held in f16 (where the device has shader-f16): the host then compiles this
// source with `b` declared `array<f16>` behind `enable f16;`, and every
// read of `b` widens to f32, so the sums stay in f32.

struct Mm {
    m: u32, n: u32, k: u32, flags: u32,
    a_off: u32, a_sm: u32, a_sk: u32, a_zo: u32,
    a_zi: u32, b_off: u32, b_sn: u32, b_sk: u32,
    b_zo: u32, b_zi: u32, c_off: u32, c_sm: u32,
    c_zo: u32, c_zi: u32, e_off: u32, e_sm: u32,
    z_div: u32, alpha: f32, conv_stride: u32, conv_len: u32,
    e_zo: u32, e_zi: u32, pad0: u32, pad1: u32,
}

const BIAS: u32 = 1u;
const GELU: u32 = 2u;
const EXTRA: u32 = 4u;
const ACCUMULATE: u32 = 8u;
// A is a kernel-3 convolution's input: A(m, k) = x(channel k / 3, time m * stride + k % 3 - 1),
// zero outside the input (padding 1). a_sk is the channel stride, a_sm the time stride.
const IM2COL: u32 = 16u;

@group(0) @binding(0) var<uniform> p: Mm;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> extra: array<f32>;
@group(0) @binding(5) var<storage, read_write> c: array<f32>;

const TS: u32 = 64u;
const BK: u32 = 16u;
var<workgroup> tile_a: array<f32, 1024>;
var<workgroup> tile_b: array<f32, 1024>;

fn load_a(base: u32, m: u32, k: u32) -> f32 {
    if (m >= p.m || k >= p.k) {
        return 0.0;
    }
    if ((p.flags & IM2COL) != 0u) {
        let t = i32(m * p.conv_stride + k % 3u) - 1;
        if (t < 0 || u32(t) >= p.conv_len) {
            return 0.0;
        }
        return a[base + (k / 3u) * p.a_sk + u32(t) * p.a_sm];
    }
    return a[base + m * p.a_sm + k * p.a_sk];
}

fn load_b(base: u32, n: u32, k: u32) -> f32 {
    if (n >= p.n || k >= p.k) {
        return 0.0;
    }
    return f32(b[base + n * p.b_sn + k * p.b_sk]);
}

// The tanh approximation, as candle's `gelu` (which the CPU path runs).
fn gelu(x: f32) -> f32 {
    let inner = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1.0 + tanh(clamp(inner, -20.0, 20.0)));
}

@compute @workgroup_size(16, 16, 1)
fn matmul(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let zo = wg.z / p.z_div;
    let zi = wg.z % p.z_div;
    let a_base = p.a_off + zo * p.a_zo + zi * p.a_zi;
    let b_base = p.b_off + zo * p.b_zo + zi * p.b_zi;
    let m0 = wg.y * TS;
    let n0 = wg.x * TS;
    let tid = lid.y * 16u + lid.x;
    var acc: array<f32, 16>;
    for (var i = 0u; i < 16u; i++) {
        acc[i] = 0.0;
    }
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        // Consecutive invocations load consecutive k: contiguous for row-major operands.
        for (var i = 0u; i < 4u; i++) {
            let e = tid + i * 256u;
            let kk = e % BK;
            let row = e / BK;
            tile_a[kk * TS + row] = load_a(a_base, m0 + row, k0 + kk);
            tile_b[kk * TS + row] = load_b(b_base, n0 + row, k0 + kk);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            var av: array<f32, 4>;
            var bv: array<f32, 4>;
            for (var i = 0u; i < 4u; i++) {
                av[i] = tile_a[kk * TS + lid.y * 4u + i];
                bv[i] = tile_b[kk * TS + lid.x * 4u + i];
            }
            for (var i = 0u; i < 4u; i++) {
                for (var j = 0u; j < 4u; j++) {
                    acc[i * 4u + j] = acc[i * 4u + j] + av[i] * bv[j];
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let m = m0 + lid.y * 4u + i;
        for (var j = 0u; j < 4u; j++) {
            let n = n0 + lid.x * 4u + j;
            if (m < p.m && n < p.n) {
                store(zo, zi, m, n, acc[i * 4u + j]);
            }
        }
    }
}

// The epilogue: scale, bias, GELU, the added matrix, accumulation.
fn store(zo: u32, zi: u32, m: u32, n: u32, sum: f32) {
    var v = sum * p.alpha;
    if ((p.flags & BIAS) != 0u) {
        v = v + bias[n];
    }
    if ((p.flags & GELU) != 0u) {
        v = gelu(v);
    }
    if ((p.flags & EXTRA) != 0u) {
        v = v + extra[p.e_off + zo * p.e_zo + zi * p.e_zi + m * p.e_sm + n];
    }
    let at = p.c_off + zo * p.c_zo + zi * p.c_zi + m * p.c_sm + n;
    if ((p.flags & ACCUMULATE) != 0u) {
        v = v + c[at];
    }
    c[at] = v;
}

// Products of at most SKINNY_ROWS rows (a decoding step: one token per candidate). The tile
// above would compute 64 rows to keep one; here each workgroup takes 32 columns, eight
// invocations share a column's k and add their partial sums at the end.
const SKINNY_ROWS: u32 = 8u;
const SKINNY_COLS: u32 = 32u;
const SKINNY_LANES: u32 = 8u;
var<workgroup> partial: array<f32, 2048>;

@compute @workgroup_size(256, 1, 1)
fn matmul_skinny(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let zo = wg.z / p.z_div;
    let zi = wg.z % p.z_div;
    let a_base = p.a_off + zo * p.a_zo + zi * p.a_zi;
    let b_base = p.b_off + zo * p.b_zo + zi * p.b_zi;
    let col = lid.x / SKINNY_LANES;
    let lane = lid.x % SKINNY_LANES;
    let n = wg.x * SKINNY_COLS + col;
    var acc: array<f32, 8>;
    for (var i = 0u; i < SKINNY_ROWS; i++) {
        acc[i] = 0.0;
    }
    if (n < p.n && p.m == 1u) {
        // One row (greedy decoding): a scalar sum stays in a register.
        var sum = 0.0;
        for (var k = lane; k < p.k; k += SKINNY_LANES) {
            sum = sum + load_a(a_base, 0u, k) * f32(b[b_base + n * p.b_sn + k * p.b_sk]);
        }
        acc[0] = sum;
    } else if (n < p.n) {
        for (var k = lane; k < p.k; k += SKINNY_LANES) {
            let bv = f32(b[b_base + n * p.b_sn + k * p.b_sk]);
            for (var m = 0u; m < p.m; m++) {
                acc[m] = acc[m] + load_a(a_base, m, k) * bv;
            }
        }
    }
    for (var i = 0u; i < SKINNY_ROWS; i++) {
        partial[lid.x * SKINNY_ROWS + i] = acc[i];
    }
    workgroupBarrier();
    if (lane == 0u && n < p.n) {
        for (var m = 0u; m < p.m; m++) {
            var v = 0.0;
            for (var l = 0u; l < SKINNY_LANES; l++) {
                v = v + partial[(lid.x + l) * SKINNY_ROWS + m];
            }
            store(zo, zi, m, n, v);
        }
    }
}
