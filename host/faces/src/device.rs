//! The cascade's windows decided on a wgpu device (`shaders/face_cascade.wgsl`), for the
//! scan's face features on a GPU machine.
//!
//! Why: on a GPU machine the CPU is what a scan waits for (issue 45), and the cascade is
//! most of a face search: every window of every scale runs at least the first stage's nine
//! stumps, and a face-like one runs up to 25 stages. The windows are independent, so they are a
//! kernel's work.
//!
//! What stays on the CPU, and why:
//! - the pyramid (each scale's bilinear resize and integral image): the same code as the CPU
//!   path, O(pixels) per scale, and exact in integers;
//! - each window's variance normaliser, computed in f64 as OpenCV does (WGSL has no f64; in
//!   f32 the difference of the squared sums cancels). One multiply-add per window;
//! - OpenCV's skip rule (after a window the first stage rejects, the next one along the row is
//!   not visited) and the grouping of hits. The kernel decides every window of the step grid
//!   and the host visits the ones the CPU would, so the two paths find the same raw hits.
//!
//! The kernel's arithmetic is the CPU's, in f32 and in the same order. With OpenCV's
//! frontal-face cascades (integer rectangle weights and integer sums) every feature value is
//! exact in f32, so a driver that fuses the multiply-adds cannot change a decision either. The
//! parity test runs both paths on real frames and asks for the same faces.

use std::time::{Duration, Instant};

use wgpu::util::DeviceExt as _;

use super::cascade::Cascade;
use super::detect::{self, Face, Level, Options, Outcome, Scan};

const WGSL: &str = include_str!("../../../shaders/face_cascade.wgsl");

/// The kernel's source, by file name (the shader test validates it with the others).
pub const SHADER: (&str, &str) = ("face_cascade.wgsl", WGSL);

/// Invocations per workgroup (the shader's `@workgroup_size`).
const WORKGROUP: u32 = 64;
/// Workgroups across one dispatch row; a grid-stride loop covers larger levels.
const MAX_GROUPS_ACROSS: u32 = 1024;
/// Levels per dispatch row (the shader folds `z` by this).
const LEVELS_PER_Z: u32 = 65_535;

/// What went wrong on the device.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The device refused a buffer or the kernel, or was lost.
    #[error("face detector on the device: {0}")]
    Device(String),
    /// A frame is not `width x height` bytes.
    #[error("face detector on the device: {0}")]
    Input(String),
}

/// A cascade uploaded to a device, ready to search frames.
#[derive(Debug)]
pub struct DeviceCascade {
    device: wgpu::Device,
    queue: wgpu::Queue,
    cascade: Cascade,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    stages: wgpu::Buffer,
    weak: wgpu::Buffer,
    features: wgpu::Buffer,
    max_binding: u64,
}

/// Where a device search's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SearchTimes {
    /// On the CPU: the pyramids, the normalisers, the skip rule and the grouping.
    pub host: Duration,
    /// Packing, uploading, the kernel and reading the outcomes back (wall).
    pub device: Duration,
}

/// One frame's pyramid, laid out for the kernel.
struct Pyramid {
    levels: Vec<Level>,
    /// Every level's integral image, one after another.
    sums: Vec<i32>,
    /// Every level's window normalisers on its step grid, one after another.
    normalisers: Vec<f32>,
    /// Per level: where its integral and its grid start, and the integral's stride.
    offsets: Vec<(usize, usize, usize)>,
}

impl DeviceCascade {
    /// Uploads `cascade` and compiles the kernel on `device`.
    ///
    /// # Errors
    /// The device refused the kernel or a buffer.
    pub fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        cascade: &Cascade,
    ) -> Result<Self, DeviceError> {
        let max_binding = device
            .limits()
            .max_storage_buffer_binding_size
            .min(device.limits().max_buffer_size);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut stages = Vec::with_capacity(cascade.stages.len() * 4);
        let mut weak = Vec::new();
        for stage in &cascade.stages {
            stages.extend([
                stage.threshold.to_bits(),
                (weak.len() / 4) as u32,
                stage.weak.len() as u32,
                0,
            ]);
            for w in &stage.weak {
                weak.extend([
                    w.feature as u32,
                    w.threshold.to_bits(),
                    w.left.to_bits(),
                    w.right.to_bits(),
                ]);
            }
        }
        let mut features = Vec::with_capacity(cascade.features.len() * 16);
        for f in &cascade.features {
            let mut rects = [[0u32; 4]; 3];
            let mut weights = [0u32; 3];
            for (k, r) in f.rects.iter().enumerate() {
                rects[k] = [r.x, r.y, r.w, r.h];
                weights[k] = r.weight.to_bits();
            }
            features.extend(rects.iter().flatten());
            features.extend(weights);
            features.push(f.rects.len() as u32);
        }
        let upload = |label: &str, words: &[u32]| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(words),
                usage: wgpu::BufferUsages::STORAGE,
            })
        };
        let stages = upload("face stages", &stages);
        let weak = upload("face stumps", &weak);
        let features = upload("face features", &features);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("face cascade"),
            source: wgpu::ShaderSource::Wgsl(WGSL.into()),
        });
        let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let mut entries = vec![wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }];
        entries.extend((1..=6).map(|b| storage(b, true)));
        entries.push(storage(7, false));
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("face cascade"),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("face cascade"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("face cascade"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("cascade"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(DeviceError::Device(format!("the cascade kernel: {e}")));
        }
        Ok(Self {
            device,
            queue,
            cascade: cascade.clone(),
            pipeline,
            layout,
            stages,
            weak,
            features,
            max_binding,
        })
    }

    /// The faces in each of `frames` (8-bit luma, `width x height`, row-major), as
    /// [`detect::detect`] finds them, with every frame's windows decided in one dispatch.
    ///
    /// # Errors
    /// A frame of another size, a batch larger than the device binds, or a device failure.
    pub fn detect_many(
        &self,
        frames: &[&[u8]],
        width: usize,
        height: usize,
        opts: &Options,
    ) -> Result<Vec<Vec<Face>>, DeviceError> {
        self.detect_timed(frames, width, height, opts)
            .map(|(faces, _)| faces)
    }

    /// [`DeviceCascade::detect_many`], with where its time went.
    ///
    /// # Errors
    /// As [`DeviceCascade::detect_many`].
    pub fn detect_timed(
        &self,
        frames: &[&[u8]],
        width: usize,
        height: usize,
        opts: &Options,
    ) -> Result<(Vec<Vec<Face>>, SearchTimes), DeviceError> {
        let started = Instant::now();
        if let Some(bad) = frames.iter().find(|f| f.len() != width * height) {
            return Err(DeviceError::Input(format!(
                "a frame of {} bytes is not {width} x {height}",
                bad.len()
            )));
        }
        let pyramids: Vec<Pyramid> = frames
            .iter()
            .map(|f| self.pyramid(f, width, height, opts))
            .collect();
        let prepared = started.elapsed();
        let outcomes = self.decide(&pyramids)?;
        let decided = started.elapsed();
        let mut start = 0;
        let faces = pyramids
            .iter()
            .map(|pyramid| {
                let mut hits = Vec::new();
                for (level, &(_, grid_at, _)) in pyramid.levels.iter().zip(&pyramid.offsets) {
                    let (across, _) = level.grid();
                    let table = &outcomes[start + grid_at..];
                    level.walk(
                        |x, y| match table[(y / level.step) * across + x / level.step] {
                            2 => Outcome::Face,
                            1 => Outcome::FirstStage,
                            _ => Outcome::Later,
                        },
                        &mut hits,
                    );
                }
                start += pyramid.normalisers.len();
                detect::faces(&hits, opts)
            })
            .collect();
        let times = SearchTimes {
            host: prepared + (started.elapsed() - decided),
            device: decided - prepared,
        };
        Ok((faces, times))
    }

    /// A frame's levels, their integral images and their windows' normalisers.
    fn pyramid(&self, luma: &[u8], width: usize, height: usize, opts: &Options) -> Pyramid {
        let levels = detect::levels(&self.cascade, width, height, opts);
        let mut scan = Scan::new(&self.cascade);
        let mut scaled = Vec::new();
        let mut out = Pyramid {
            levels: Vec::with_capacity(levels.len()),
            sums: Vec::new(),
            normalisers: Vec::new(),
            offsets: Vec::with_capacity(levels.len()),
        };
        for level in levels {
            detect::resize_bilinear(luma, width, height, &mut scaled, level.width, level.height);
            scan.set_image(&scaled, level.width, level.height);
            out.offsets
                .push((out.sums.len(), out.normalisers.len(), scan.stride()));
            out.sums.extend_from_slice(scan.sums());
            let (across, down) = level.grid();
            for gy in 0..down {
                for gx in 0..across {
                    out.normalisers
                        .push(scan.normaliser(gx * level.step, gy * level.step));
                }
            }
            out.levels.push(level);
        }
        out
    }

    /// Every grid position's outcome, every frame's levels one after another.
    fn decide(&self, pyramids: &[Pyramid]) -> Result<Vec<u32>, DeviceError> {
        let mut sums = Vec::new();
        let mut normalisers = Vec::new();
        let mut table: Vec<u32> = Vec::new();
        for pyramid in pyramids {
            let (sum_base, grid_base) = (sums.len(), normalisers.len());
            for (level, &(sum_at, grid_at, stride)) in pyramid.levels.iter().zip(&pyramid.offsets) {
                let (across, down) = level.grid();
                let word = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
                table.extend([
                    word(sum_base + sum_at),
                    word(stride),
                    word(grid_base + grid_at),
                    word(across),
                    word(down),
                    word(level.step),
                    word(grid_base + grid_at),
                    0,
                ]);
            }
            sums.extend_from_slice(&pyramid.sums);
            normalisers.extend_from_slice(&pyramid.normalisers);
        }
        let positions = normalisers.len();
        let levels = (table.len() / 8) as u32;
        if positions == 0 {
            return Ok(Vec::new());
        }
        for (label, bytes) in [
            ("integral images", sums.len() * 4),
            ("window grid", positions * 4),
        ] {
            if bytes as u64 > self.max_binding {
                return Err(DeviceError::Device(format!(
                    "a batch's {label} need {bytes} bytes; the device binds at most {}",
                    self.max_binding
                )));
            }
        }
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let init = |label: &str, bytes: &[u8], usage: wgpu::BufferUsages| {
            self.device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytes,
                    usage,
                })
        };
        let widest = pyramids
            .iter()
            .flat_map(|p| &p.levels)
            .map(|l| {
                let (a, d) = l.grid();
                a * d
            })
            .max()
            .unwrap_or(1);
        let groups_across = (widest as u32)
            .div_ceil(WORKGROUP)
            .clamp(1, MAX_GROUPS_ACROSS);
        let params = [
            levels,
            self.cascade.stages.len() as u32,
            groups_across * WORKGROUP,
            0,
        ];
        let params = init(
            "face params",
            bytemuck::cast_slice(&params),
            wgpu::BufferUsages::UNIFORM,
        );
        let storage = wgpu::BufferUsages::STORAGE;
        let table = init("face levels", bytemuck::cast_slice(&table), storage);
        let sums = init("face integrals", bytemuck::cast_slice(&sums), storage);
        let normalisers = init(
            "face normalisers",
            bytemuck::cast_slice(&normalisers),
            storage,
        );
        let size = (positions * 4) as u64;
        let outcome = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("face outcomes"),
            size,
            usage: storage | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("face outcomes readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let buffers = [
            &params,
            &self.stages,
            &self.weak,
            &self.features,
            &table,
            &sums,
            &normalisers,
            &outcome,
        ];
        let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let bind = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("face cascade"),
            layout: &self.layout,
            entries: &entries,
        });
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("face cascade"),
            });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("face cascade"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(
                groups_across,
                levels.min(LEVELS_PER_Z),
                levels.div_ceil(LEVELS_PER_Z),
            );
        }
        enc.copy_buffer_to_buffer(&outcome, 0, &readback, 0, size);
        self.queue.submit([enc.finish()]);
        for scope in [validation, oom] {
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(DeviceError::Device(e.to_string()));
            }
        }
        readback.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| DeviceError::Device(e.to_string()))?;
        let view = readback
            .slice(..)
            .get_mapped_range()
            .map_err(|e| DeviceError::Device(e.to_string()))?;
        let out = bytemuck::cast_slice::<u8, u32>(&view).to_vec();
        drop(view);
        readback.unmap();
        Ok(out)
    }
}
