// The cortex video's frames, coloured, composited and converted to YUV 4:2:0 on the device
// (`host/src/render/gpu_frames.rs`), so that only what the encoder reads comes back: 1.5
// bytes a pixel instead of RGB's 3, and ffmpeg converts nothing.
//
// Each invocation makes one 8 x 2 block of one frame: 16 luma bytes (four words) and the four
// chroma samples of each plane (one word each), BT.601 limited range, chroma the mean of each
// 2 x 2. Every value is integer arithmetic, so the CPU reference (`video::yuv420`) matches it
// byte for byte.

struct Params {
    width: u32,
    height: u32,
    frames: u32,
    // Rows [panel_h, height) are the strip: never coloured by a network.
    panel_h: u32,
    // The playhead runs down rows [playhead_y0, playhead_y1).
    playhead_y0: u32,
    playhead_y1: u32,
    // The clock's top row (8 rows high).
    clock_y: u32,
    _pad: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
// Per pixel: bits 0-7 the diffuse shade, 8-15 the colour slot (0-6 a network, 7 unlabelled
// cortex, 8 the backdrop), bit 16 set where the pixel is fixed (the strip, a view's label).
@group(0) @binding(1) var<storage, read> pixels: array<u32>;
// Per pixel: the fixed RGB (0xRRGGBB) shown where bit 16 above is set.
@group(0) @binding(2) var<storage, read> base: array<u32>;
// Per frame, 16 words: 0-8 the nine slot colours (0xRRGGBB), 9 the playhead's column,
// 10 the clock's first column, 11 its length in characters, 12-15 its characters (four a
// word, the first in the lowest byte).
@group(0) @binding(3) var<storage, read> frame_params: array<u32>;
// The 8 x 8 font: two words per character code (rows 0-3, 4-7; bit `col` of a row's byte is
// the pixel at column `col`).
@group(0) @binding(4) var<storage, read> font: array<u32>;
// Per frame: the Y plane, then U, then V (each a quarter of Y).
@group(0) @binding(5) var<storage, read_write> yuv: array<u32>;

const WHITE: u32 = 0xffffffu;
const INK: u32 = 0xdcdcdcu;

fn channel(c: u32, k: u32) -> u32 {
    return (c >> (16u - 8u * k)) & 0xffu;
}

// Rounds c * shade / 255 to the nearest integer (no value falls on a half).
fn scaled(c: u32, shade: u32) -> u32 {
    let r = (channel(c, 0u) * shade * 2u + 255u) / 510u;
    let g = (channel(c, 1u) * shade * 2u + 255u) / 510u;
    let b = (channel(c, 2u) * shade * 2u + 255u) / 510u;
    return (r << 16u) | (g << 8u) | b;
}

fn clock_bit(f: u32, x: u32, y: u32) -> bool {
    let fp = f * 16u;
    let x0 = frame_params[fp + 10u];
    let len = frame_params[fp + 11u];
    if y < p.clock_y || y >= p.clock_y + 8u || x < x0 || x >= x0 + len * 8u {
        return false;
    }
    let i = (x - x0) / 8u;
    let code = (frame_params[fp + 12u + i / 4u] >> (8u * (i % 4u))) & 0x7fu;
    let row = y - p.clock_y;
    let bits = (font[code * 2u + row / 4u] >> (8u * (row % 4u))) & 0xffu;
    return ((bits >> ((x - x0) % 8u)) & 1u) == 1u;
}

fn rgb(f: u32, x: u32, y: u32) -> u32 {
    let i = y * p.width + x;
    let px = pixels[i];
    var c: u32;
    if ((px >> 16u) & 1u) == 1u {
        c = base[i];
    } else {
        let slot = (px >> 8u) & 0xffu;
        let colour = frame_params[f * 16u + slot];
        if slot == 8u {
            c = colour;
        } else {
            c = scaled(colour, px & 0xffu);
        }
    }
    if x == frame_params[f * 16u + 9u] && y >= p.playhead_y0 && y < p.playhead_y1 {
        c = WHITE;
    }
    if clock_bit(f, x, y) {
        c = INK;
    }
    return c;
}

fn luma(c: vec3<i32>) -> u32 {
    return u32(((66 * c.x + 129 * c.y + 25 * c.z + 128) >> 8u) + 16);
}

fn rgb3(c: u32) -> vec3<i32> {
    return vec3<i32>(i32(channel(c, 0u)), i32(channel(c, 1u)), i32(channel(c, 2u)));
}

@compute @workgroup_size(64)
fn frames(@builtin(global_invocation_id) gid: vec3<u32>) {
    let f = gid.y;
    let blocks_x = p.width / 8u;
    let b = gid.x;
    if f >= p.frames || b >= blocks_x * (p.height / 2u) {
        return;
    }
    let x0 = (b % blocks_x) * 8u;
    let y0 = (b / blocks_x) * 2u;
    let plane = p.width * p.height;
    let frame_words = plane * 3u / 8u;
    let out = f * frame_words;
    var chroma_u = 0u;
    var chroma_v = 0u;
    var ys: array<u32, 4>;
    for (var pair = 0u; pair < 4u; pair++) {
        let x = x0 + pair * 2u;
        let a = rgb3(rgb(f, x, y0));
        let b2 = rgb3(rgb(f, x + 1u, y0));
        let c = rgb3(rgb(f, x, y0 + 1u));
        let d = rgb3(rgb(f, x + 1u, y0 + 1u));
        let shift_top = 8u * ((pair * 2u) % 4u);
        let word = pair / 2u;
        ys[word] |= (luma(a) << shift_top) | (luma(b2) << (shift_top + 8u));
        ys[2u + word] |= (luma(c) << shift_top) | (luma(d) << (shift_top + 8u));
        let m = (a + b2 + c + d + vec3<i32>(2)) / 4;
        let u = u32(((-38 * m.x - 74 * m.y + 112 * m.z + 128) >> 8u) + 128);
        let v = u32(((112 * m.x - 94 * m.y - 18 * m.z + 128) >> 8u) + 128);
        chroma_u |= u << (8u * pair);
        chroma_v |= v << (8u * pair);
    }
    let top = out + (y0 * p.width + x0) / 4u;
    let bottom = out + ((y0 + 1u) * p.width + x0) / 4u;
    yuv[top] = ys[0];
    yuv[top + 1u] = ys[1];
    yuv[bottom] = ys[2];
    yuv[bottom + 1u] = ys[3];
    let chroma = (y0 / 2u) * (p.width / 2u) + x0 / 2u;
    yuv[out + (plane + chroma) / 4u] = chroma_u;
    yuv[out + (plane + plane / 4u + chroma) / 4u] = chroma_v;
}
