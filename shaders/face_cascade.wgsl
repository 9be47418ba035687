// The face detector's Haar cascade on the device (host/faces/src/device.rs): one invocation
// decides one window position of one pyramid level of one frame, every stage in order, as
// `Scan::run` does on the CPU.
//
// The host builds each level's integral image and each window's variance normaliser (in f64,
// which WGSL lacks) and applies OpenCV's skip rule afterwards, so every position on the step
// grid is decided here and the host visits the ones the CPU would. The arithmetic is the CPU's,
// in f32 and in the same order: the feature value is the weighted sum of its rectangles' sums,
// times the window's normaliser, against the stump's threshold; the stage sums its leaves.

struct Params {
    levels: u32,
    stages: u32,
    // Invocations across the dispatch (a grid-stride loop covers larger levels).
    across: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// Per stage: threshold (f32 bits), first weak classifier, count, unused.
@group(0) @binding(1) var<storage, read> stages: array<vec4<u32>>;
// Per weak classifier: feature, threshold, left leaf, right leaf (f32 bits for the last three).
@group(0) @binding(2) var<storage, read> weak: array<vec4<u32>>;
// Per feature, four vec4: three rectangles (x, y, w, h in window pixels), then the three weights
// (f32 bits) and the number of rectangles.
@group(0) @binding(3) var<storage, read> features: array<vec4<u32>>;
// Per level, two vec4: integral offset, integral stride, normaliser offset, grid width;
// grid height, step, output offset, unused.
@group(0) @binding(4) var<storage, read> levels: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> sums: array<i32>;
@group(0) @binding(6) var<storage, read> normaliser: array<f32>;
// Per grid position: 0 rejected by a later stage, 1 by the first stage, 2 a face.
@group(0) @binding(7) var<storage, read_write> outcome: array<u32>;

fn rect_sum(base: u32, stride: u32, r: vec4<u32>) -> i32 {
    let top = base + r.y * stride + r.x;
    let bottom = top + r.w * stride;
    return sums[top] - sums[top + r.z] - sums[bottom] + sums[bottom + r.z];
}

fn decide(base: u32, stride: u32, scale: f32) -> u32 {
    for (var s = 0u; s < p.stages; s++) {
        let stage = stages[s];
        var acc = 0.0;
        for (var k = stage.y; k < stage.y + stage.z; k++) {
            let stump = weak[k];
            let f = stump.x * 4u;
            let w = features[f + 3u];
            var value = bitcast<f32>(w.x) * f32(rect_sum(base, stride, features[f]))
                + bitcast<f32>(w.y) * f32(rect_sum(base, stride, features[f + 1u]));
            if (w.w == 3u) {
                value = value + bitcast<f32>(w.z) * f32(rect_sum(base, stride, features[f + 2u]));
            }
            if (value * scale < bitcast<f32>(stump.y)) {
                acc = acc + bitcast<f32>(stump.z);
            } else {
                acc = acc + bitcast<f32>(stump.w);
            }
        }
        if (acc < bitcast<f32>(stage.x)) {
            return select(0u, 1u, s == 0u);
        }
    }
    return 2u;
}

@compute @workgroup_size(64, 1, 1)
fn cascade(@builtin(global_invocation_id) id: vec3<u32>) {
    let level = id.y + id.z * 65535u;
    if (level >= p.levels) {
        return;
    }
    let a = levels[level * 2u];
    let b = levels[level * 2u + 1u];
    let count = a.w * b.x;
    for (var i = id.x; i < count; i += p.across) {
        let gx = i % a.w;
        let gy = i / a.w;
        let base = a.x + gy * b.y * a.y + gx * b.y;
        outcome[b.z + i] = decide(base, a.y, normaliser[a.z + i]);
    }
}
