//! The cortex video's frames made on the device (`shaders/cortex_frames.wgsl`): the panel
//! coloured by each moment's values, the strip, labels, playhead and clock composited, and the
//! result converted to the YUV 4:2:0 the encoder reads.
//!
//! Why on the device: on a GPU machine the CPU is what a scan waits for (issue 45), and a
//! frame is 384,000 independent pixels. Why YUV there: only encoder-ready bytes come back (half
//! of RGB's), and ffmpeg converts nothing. The frames are byte-identical to the CPU's frames
//! converted by [`super::video::yuv420`] (integer arithmetic on both sides; the parity test in
//! `tests/qualia/cortex_video.rs` compares them on lavapipe).
//!
//! Bounded: a clip's frames are made [`BATCH_FRAMES`] at a time into buffers allocated once
//! per clip (about 11.5 MB of output and as much for the readback).

use anyhow::{Context as _, ensure};
use wgpu::util::DeviceExt as _;

use super::cortex::{PANEL_H, Panel};
use super::video::{self, CLOCK_Y, FPS, HEIGHT, PLAYHEAD_ROWS, WIDTH, clock_x, frame_state};
use crate::inference::gpu::GpuContext;
use crate::result::StoredSecond;

/// The kernel's source (the naga validation test walks it with the core's shaders).
pub const SHADER: (&str, &str) = (
    "cortex_frames.wgsl",
    include_str!("../../../shaders/cortex_frames.wgsl"),
);

/// Frames made per dispatch and handed to the encoder together (two seconds of video).
pub const BATCH_FRAMES: u32 = 20;
/// Bytes of one YUV 4:2:0 frame.
pub const YUV_FRAME_BYTES: usize = (WIDTH * HEIGHT * 3 / 2) as usize;
/// Words of per-frame parameters (see the shader's `frame_params`).
const FRAME_WORDS: usize = 16;
/// The longest clock the kernel draws, in characters (`t = 9999.9 s` is 13).
const CLOCK_CHARS: usize = 16;
/// Invocations per workgroup (the shader's `@workgroup_size`).
const WORKGROUP: u32 = 64;

/// The compiled kernel, built once per process beside the panel.
#[derive(Debug)]
pub struct FrameKernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

impl FrameKernel {
    /// Compiles the kernel on `gpu`'s device.
    ///
    /// # Errors
    /// A shader or pipeline error reported by the device.
    pub fn new(gpu: &GpuContext) -> anyhow::Result<Self> {
        let device = gpu.device();
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("cortex frames"),
            source: wgpu::ShaderSource::Wgsl(SHADER.1.into()),
        });
        let entry = |binding: u32, ty: wgpu::BufferBindingType| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let read = wgpu::BufferBindingType::Storage { read_only: true };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("cortex frames"),
            entries: &[
                entry(0, wgpu::BufferBindingType::Uniform),
                entry(1, read),
                entry(2, read),
                entry(3, read),
                entry(4, read),
                entry(5, wgpu::BufferBindingType::Storage { read_only: false }),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("cortex frames"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("cortex frames"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("frames"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        gpu.check_errors()
            .context("compiling the cortex frame kernel")?;
        Ok(Self { pipeline, layout })
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    width: u32,
    height: u32,
    frames: u32,
    panel_h: u32,
    playhead_y0: u32,
    playhead_y1: u32,
    clock_y: u32,
    pad: u32,
}

/// One clip's frames on the device: the fixed layer uploaded once, then any batch of frames.
pub struct ClipFrames<'a> {
    gpu: &'a GpuContext,
    kernel: &'a FrameKernel,
    timeline: &'a [StoredSecond],
    params: wgpu::Buffer,
    frame_params: wgpu::Buffer,
    output: wgpu::Buffer,
    readback: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    /// Frames in the clip.
    pub count: u32,
}

/// Per pixel, the slot and shade word the kernel reads (bit 16: fixed), and the fixed layer's
/// colour: the strip and the views' labels.
fn fixed_layer(
    panel: &Panel,
    timeline: &[StoredSecond],
    lenses: &[String],
) -> (Vec<u32>, Vec<u32>) {
    let mut base = video::strip_base(timeline, lenses);
    // Where a label is written over the panel, the pixel is fixed: mark the label's pixels on
    // a blank frame to find them.
    let mut labels = vec![0u8; base.len()];
    video::view_labels(&mut labels);
    video::view_labels(&mut base);
    let pixels = (0..(WIDTH * HEIGHT) as usize)
        .map(|i| {
            let labelled = labels[i * 3..i * 3 + 3].iter().any(|&c| c != 0);
            if i < panel.network.len() && !labelled {
                let slot = video::slot_of(panel.network[i]) as u32;
                (slot << 8) | u32::from(panel.shade[i])
            } else {
                1 << 16
            }
        })
        .collect();
    let colours = base
        .chunks_exact(3)
        .map(|c| packed([c[0], c[1], c[2]]))
        .collect();
    (pixels, colours)
}

fn packed(c: [u8; 3]) -> u32 {
    (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2])
}

/// The font's glyphs as the kernel reads them: two words per character code 0-127.
fn font_words() -> Vec<u32> {
    font8x8::legacy::BASIC_LEGACY
        .iter()
        .flat_map(|g| {
            [
                u32::from_le_bytes([g[0], g[1], g[2], g[3]]),
                u32::from_le_bytes([g[4], g[5], g[6], g[7]]),
            ]
        })
        .collect()
}

impl<'a> ClipFrames<'a> {
    /// Uploads the fixed layer of `timeline`'s video.
    ///
    /// # Errors
    /// An empty timeline, or buffers larger than the adapter binds.
    pub fn new(
        gpu: &'a GpuContext,
        kernel: &'a FrameKernel,
        panel: &Panel,
        timeline: &'a [StoredSecond],
        lenses: &[String],
    ) -> anyhow::Result<Self> {
        ensure!(!timeline.is_empty(), "no seconds to render");
        let device = gpu.device();
        let out_bytes = BATCH_FRAMES as u64 * YUV_FRAME_BYTES as u64;
        let limit = device.limits().max_storage_buffer_binding_size;
        ensure!(
            out_bytes <= limit,
            "the adapter binds {limit} bytes, a batch of frames needs {out_bytes}"
        );
        let (pixels, base) = fixed_layer(panel, timeline, lenses);
        let init = |label: &str, contents: &[u8], usage: wgpu::BufferUsages| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let storage = wgpu::BufferUsages::STORAGE;
        let pixels = init("panel slots", bytemuck::cast_slice(&pixels), storage);
        let base = init("fixed layer", bytemuck::cast_slice(&base), storage);
        let font = init("font", bytemuck::cast_slice(&font_words()), storage);
        let params = init(
            "frame geometry",
            bytemuck::bytes_of(&Params {
                width: WIDTH,
                height: HEIGHT,
                frames: 0,
                panel_h: PANEL_H,
                playhead_y0: PLAYHEAD_ROWS.0,
                playhead_y1: PLAYHEAD_ROWS.1,
                clock_y: CLOCK_Y,
                pad: 0,
            }),
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let frame_params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("frame parameters"),
            size: (BATCH_FRAMES as usize * FRAME_WORDS * 4) as u64,
            usage: storage | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let output = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("yuv frames"),
            size: out_bytes,
            usage: storage | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("yuv readback"),
            size: out_bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("cortex frames"),
            layout: &kernel.layout,
            entries: &[&params, &pixels, &base, &frame_params, &font, &output]
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: b.as_entire_binding(),
                })
                .collect::<Vec<_>>(),
        });
        gpu.check_errors()
            .context("uploading the cortex video's fixed layer")?;
        Ok(Self {
            gpu,
            kernel,
            timeline,
            params,
            frame_params,
            output,
            readback,
            bind_group,
            count: timeline.len() as u32 * FPS,
        })
    }

    /// Every frame of the clip in order, [`BATCH_FRAMES`] at a time: each batch's bytes (as
    /// [`ClipFrames::batch`]) and its number of frames.
    pub fn batches(&self) -> impl Iterator<Item = anyhow::Result<(Vec<u8>, u32)>> + '_ {
        (0..self.count).step_by(BATCH_FRAMES as usize).map(|first| {
            let n = BATCH_FRAMES.min(self.count - first);
            self.batch(first, n).map(|b| (b, n))
        })
    }

    /// Frames `first..first + n` (`n` at most [`BATCH_FRAMES`], within the clip), each
    /// [`YUV_FRAME_BYTES`] of Y, U and V planes, one after the other.
    ///
    /// # Errors
    /// A batch outside the clip, or a device error.
    pub fn batch(&self, first: u32, n: u32) -> anyhow::Result<Vec<u8>> {
        ensure!(
            n > 0 && n <= BATCH_FRAMES && first + n <= self.count,
            "frames {first}..{} are not a batch of this clip's {}",
            first + n,
            self.count
        );
        let mut words = vec![0u32; n as usize * FRAME_WORDS];
        for (k, w) in words.chunks_exact_mut(FRAME_WORDS).enumerate() {
            let state = frame_state(self.timeline, first + k as u32);
            for (slot, c) in state.colours.iter().enumerate() {
                w[slot] = packed(*c);
            }
            let clock = &state.clock.as_bytes()[..state.clock.len().min(CLOCK_CHARS)];
            w[9] = state.playhead_x;
            w[10] = clock_x(&state.clock);
            w[11] = clock.len() as u32;
            for (i, &ch) in clock.iter().enumerate() {
                w[12 + i / 4] |= u32::from(ch & 0x7f) << (8 * (i % 4));
            }
        }
        let queue = self.gpu.queue();
        queue.write_buffer(&self.frame_params, 0, bytemuck::cast_slice(&words));
        // The frame count is the third word of the geometry.
        queue.write_buffer(&self.params, 8, bytemuck::bytes_of(&n));
        let bytes = n as u64 * YUV_FRAME_BYTES as u64;
        let mut enc = self
            .gpu
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("cortex frames"),
            });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(&self.kernel.pipeline);
            pass.set_bind_group(0, &self.bind_group, &[]);
            let blocks = (WIDTH / 8) * (HEIGHT / 2);
            pass.dispatch_workgroups(blocks.div_ceil(WORKGROUP), n, 1);
        }
        enc.copy_buffer_to_buffer(&self.output, 0, &self.readback, 0, bytes);
        queue.submit([enc.finish()]);
        let slice = self.readback.slice(..bytes);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        self.gpu
            .device()
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| anyhow::anyhow!("waiting for the cortex frames: {e}"))?;
        self.gpu
            .check_errors()
            .context("making the cortex frames")?;
        let frames = slice
            .get_mapped_range()
            .map_err(|e| anyhow::anyhow!("reading the cortex frames back: {e}"))?
            .to_vec();
        self.readback.unmap();
        Ok(frames)
    }
}
