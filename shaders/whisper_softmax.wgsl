// Whisper on the device: softmax over each row of attention scores, in place
// (host/whisper-gpu). With `causal`, row r (the (r % n_per)-th new token) sees only the
// first past + (r % n_per) + 1 columns; the rest become 0.

struct Sm {
    rows: u32, cols: u32, stride: u32, causal: u32,
    past: u32, n_per: u32, pad0: u32, pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Sm;
@group(0) @binding(1) var<storage, read_write> s: array<f32>;

var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256, 1, 1)
fn softmax(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = wg.x + wg.y * 65535u;
    if (row >= p.rows) {
        return;
    }
    var limit = p.cols;
    if (p.causal != 0u) {
        limit = min(p.cols, p.past + row % p.n_per + 1u);
    }
    let base = row * p.stride;
    var mx = -3.4e38;
    for (var j = lid.x; j < limit; j += 256u) {
        mx = max(mx, s[base + j]);
    }
    red[lid.x] = mx;
    workgroupBarrier();
    for (var w = 128u; w > 0u; w = w / 2u) {
        if (lid.x < w) {
            red[lid.x] = max(red[lid.x], red[lid.x + w]);
        }
        workgroupBarrier();
    }
    let top = red[0];
    workgroupBarrier();
    var sum = 0.0;
    for (var j = lid.x; j < limit; j += 256u) {
        let e = exp(s[base + j] - top);
        s[base + j] = e;
        sum = sum + e;
    }
    red[lid.x] = sum;
    workgroupBarrier();
    for (var w = 128u; w > 0u; w = w / 2u) {
        if (lid.x < w) {
            red[lid.x] = red[lid.x] + red[lid.x + w];
        }
        workgroupBarrier();
    }
    let inv = 1.0 / red[0];
    for (var j = lid.x; j < p.cols; j += 256u) {
        if (j < limit) {
            s[base + j] = s[base + j] * inv;
        } else {
            s[base + j] = 0.0;
        }
    }
}
