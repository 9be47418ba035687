// Whisper on the device: layer normalisation of each row (host/whisper-gpu), eps 1e-5 as
// the reference, mean and variance in two passes.

struct Ln {
    rows: u32, n: u32, pad0: u32, pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Ln;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> gamma: array<f32>;
@group(0) @binding(3) var<storage, read> beta: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

var<workgroup> red: array<f32, 256>;

fn reduce_sum(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var w = 128u; w > 0u; w = w / 2u) {
        if (lid < w) {
            red[lid] = red[lid] + red[lid + w];
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(256, 1, 1)
fn layernorm(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = wg.x + wg.y * 65535u;
    if (row >= p.rows) {
        return;
    }
    let base = row * p.n;
    var sum = 0.0;
    for (var j = lid.x; j < p.n; j += 256u) {
        sum = sum + x[base + j];
    }
    let mean = reduce_sum(lid.x, sum) / f32(p.n);
    var sq = 0.0;
    for (var j = lid.x; j < p.n; j += 256u) {
        let d = x[base + j] - mean;
        sq = sq + d * d;
    }
    let inv = inverseSqrt(reduce_sum(lid.x, sq) / f32(p.n) + 1e-5);
    for (var j = lid.x; j < p.n; j += 256u) {
        y[base + j] = (x[base + j] - mean) * inv * gamma[j] + beta[j];
    }
}
