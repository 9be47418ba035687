// Whisper on the device: the decoder's input, token embedding plus learned position
// (host/whisper-gpu). Row r is token r % n_per of its candidate, at position past + r % n_per.
// The table may be compiled as f16, as the matrix product's weights are.

struct Em {
    rows: u32, d: u32, n_per: u32, past: u32,
}

@group(0) @binding(0) var<uniform> p: Em;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> table: array<f32>;
@group(0) @binding(3) var<storage, read> positions: array<f32>;
@group(0) @binding(4) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(256, 1, 1)
fn embed(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.rows * p.d) {
        return;
    }
    let r = i / p.d;
    let j = i % p.d;
    x[i] = f32(table[tokens[r] * p.d + j]) + positions[(p.past + r % p.n_per) * p.d + j];
}
