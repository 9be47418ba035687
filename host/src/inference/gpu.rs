//! The wgpu side of qualia: one [`GpuContext`] (adapter, device, pipelines, layouts) built once
//! per process, and one blocking method per kernel stage.
//!
//! Methods block on the device (`poll` with wait), so async callers run them on
//! `spawn_blocking`. Validation errors and device loss are captured and returned as
//! [`GpuError`] instead of wgpu's default panic, so a driver problem fails a scan, not the
//! service.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wgpu::util::DeviceExt;

use super::features::{self, BINS, FRAME_FEATURES, HOP_FEATURES};
use super::model::{Model, NETWORK_COUNT, Presence, TimeBase};
use super::motion::{self, MotionBank};

const VISUAL_WGSL: &str = include_str!("../../../shaders/visual.wgsl");
/// Words per frame slot in `visual.wgsl`'s `stats`: 33 histogram counts and 576 cell means.
const VISUAL_SLOT_STATS: usize = 33 + 576;
const AUDIO_WGSL: &str = include_str!("../../../shaders/audio.wgsl");
const POOL_WGSL: &str = include_str!("../../../shaders/pool.wgsl");
const RESPONSE_WGSL: &str = include_str!("../../../shaders/response.wgsl");
const MOTION_WGSL: &str = include_str!("../../../shaders/motion.wgsl");

/// Every shader of the core, by file name (the naga validation test walks these).
pub const SHADERS: [(&str, &str); 5] = [
    ("visual.wgsl", VISUAL_WGSL),
    ("motion.wgsl", MOTION_WGSL),
    ("audio.wgsl", AUDIO_WGSL),
    ("pool.wgsl", POOL_WGSL),
    ("response.wgsl", RESPONSE_WGSL),
];

#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    #[error(
        "no GPU adapter found ({0}). On a machine without a GPU install Mesa's Vulkan drivers (Debian package `mesa-vulkan-drivers`), which provide the lavapipe CPU adapter"
    )]
    NoAdapter(String),
    #[error("the GPU device could not be opened: {0}")]
    Device(String),
    #[error("a GPU kernel failed: {0}")]
    Kernel(String),
    #[error("the input is too large for one GPU dispatch: {0}")]
    TooLarge(String),
}

/// What the response stage returns: z-scored features, their HRF-filtered versions (both
/// `seconds x F`) and the network series `seconds x 7`.
#[derive(Debug, Clone)]
pub struct Response {
    pub z: Vec<f32>,
    pub r: Vec<f32>,
    pub y: Vec<f32>,
    pub time: Duration,
}

/// Time spent per stage (submit to results back on the host), summed over batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct StageTimes {
    pub visual: Duration,
    /// v2.4: the motion-energy bank (`motion.wgsl`).
    pub motion: Duration,
    pub audio_fft: Duration,
    pub audio_features: Duration,
    pub pool: Duration,
    pub response: Duration,
    /// v2, on the CPU beside the GPU stages: the loudness pre-pass, and what finding the
    /// active picture adds after the decode (joining the keyframe reader, and the second run
    /// of the visual kernels when a later keyframe changed the picture; the keyframes
    /// themselves come from the scan's one decode).
    pub prepass: Duration,
    pub speech: Duration,
    pub language: Duration,
    /// v2.2, on the CPU beside the visual kernel: the face detector (wall time of its
    /// batches, each spread over the cores, summed).
    pub faces: Duration,
}

impl StageTimes {
    pub fn add(&mut self, o: &Self) {
        self.visual += o.visual;
        self.motion += o.motion;
        self.audio_fft += o.audio_fft;
        self.audio_features += o.audio_features;
        self.pool += o.pool;
        self.response += o.response;
        self.prepass += o.prepass;
        self.speech += o.speech;
        self.language += o.language;
        self.faces += o.faces;
    }
}

#[derive(Clone, Copy)]
enum Bind {
    Uniform,
    Read,
    ReadWrite,
}

struct Kernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

/// Adapter, device, queue, and every pipeline, built once.
pub struct GpuContext {
    pub adapter_info: wgpu::AdapterInfo,
    device: wgpu::Device,
    queue: wgpu::Queue,
    errors: Arc<Mutex<Vec<String>>>,
    visual_stats: Kernel,
    visual: Kernel,
    motion_project: Kernel,
    motion_energy: Kernel,
    spectrum: Kernel,
    hop_features: Kernel,
    pool: Kernel,
    standardise: Kernel,
    convolve: Kernel,
    readout: Kernel,
    window: wgpu::Buffer,
    twiddles: wgpu::Buffer,
    mel: wgpu::Buffer,
    dft: wgpu::Buffer,
    max_binding: u64,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.adapter_info.name)
            .field("backend", &self.adapter_info.backend)
            .finish_non_exhaustive()
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params4([u32; 4]);

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params8([u32; 8]);

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params16([u32; 16]);

impl GpuContext {
    /// Opens the best adapter wgpu finds (a real GPU, else lavapipe, else GL llvmpipe).
    /// `WGPU_BACKEND` and `WGPU_ADAPTER_NAME` select one explicitly.
    ///
    /// # Errors
    /// [`GpuError::NoAdapter`] names the package to install.
    pub fn new() -> Result<Self, GpuError> {
        pollster::block_on(Self::open())
    }

    async fn open() -> Result<Self, GpuError> {
        // Native APIs first (a real GPU or lavapipe); GL only when none is found, so machines
        // without a display stack are not asked to initialise EGL needlessly.
        let explicit = std::env::var("WGPU_BACKEND").is_ok_and(|v| !v.is_empty());
        let mut tried = Vec::new();
        let mut found = None;
        for backends in [wgpu::Backends::PRIMARY, wgpu::Backends::GL] {
            let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
            desc.backends = backends;
            let desc = desc.with_env();
            if explicit && backends == wgpu::Backends::GL {
                break;
            }
            let instance = wgpu::Instance::new(desc);
            let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
                Ok(name) if !name.is_empty() => {
                    wgpu::util::initialize_adapter_from_env(&instance, None)
                        .await
                        .map_err(|e| format!("no adapter named {name}: {e}"))
                }
                _ => instance
                    .request_adapter(&wgpu::RequestAdapterOptions {
                        power_preference: wgpu::PowerPreference::HighPerformance,
                        force_fallback_adapter: false,
                        compatible_surface: None,
                        ..Default::default()
                    })
                    .await
                    .map_err(|e| e.to_string()),
            };
            match adapter {
                Ok(a) => {
                    found = Some(a);
                    break;
                }
                Err(e) => tried.push(e),
            }
        }
        let adapter = found.ok_or_else(|| GpuError::NoAdapter(tried.join("; ")))?;
        let adapter_info = adapter.get_info();
        let limits = adapter.limits();
        if adapter
            .get_downlevel_capabilities()
            .flags
            .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
        {
            // fine
        } else {
            return Err(GpuError::NoAdapter(format!(
                "adapter {} cannot run compute shaders",
                adapter_info.name
            )));
        }
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("qualia"),
                // f16 storage where the adapter has it: Whisper on this device holds its
                // weights in f16 then (host/whisper-gpu); the qualia kernels do not use it.
                required_features: adapter.features() & wgpu::Features::SHADER_F16,
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::Device(e.to_string()))?;
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut v) = sink.lock() {
                v.push(e.to_string());
            }
        }));
        let lost = errors.clone();
        device.set_device_lost_callback(move |reason, msg| {
            if let Ok(mut v) = lost.lock() {
                v.push(format!("device lost ({reason:?}): {msg}"));
            }
        });

        use Bind::{Read, ReadWrite, Uniform};
        let module = |label: &str, src: &str| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(src.into()),
            })
        };
        let visual_m = module("visual", VISUAL_WGSL);
        let audio_m = module("audio", AUDIO_WGSL);
        let pool_m = module("pool", POOL_WGSL);
        let response_m = module("response", RESPONSE_WGSL);
        let motion_m = module("motion", MOTION_WGSL);
        let kernel = |m: &wgpu::ShaderModule, entry: &str, binds: &[Bind]| {
            let entries: Vec<wgpu::BindGroupLayoutEntry> = binds
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupLayoutEntry {
                    binding: i as u32,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: match b {
                            Uniform => wgpu::BufferBindingType::Uniform,
                            Read => wgpu::BufferBindingType::Storage { read_only: true },
                            ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
                        },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                })
                .collect();
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(entry),
                entries: &entries,
            });
            let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(entry),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&pl),
                module: m,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            });
            Kernel { pipeline, layout }
        };
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let visual_binds = [Uniform, Read, ReadWrite, ReadWrite, ReadWrite];
        let visual_stats = kernel(&visual_m, "slot_stats", &visual_binds);
        let ctx_kernels = (
            kernel(
                &visual_m,
                "frame_features",
                &[Uniform, Read, ReadWrite, ReadWrite, ReadWrite],
            ),
            kernel(
                &motion_m,
                "project",
                &[Uniform, Read, Read, ReadWrite, ReadWrite],
            ),
            kernel(
                &motion_m,
                "energy",
                &[Uniform, Read, Read, ReadWrite, ReadWrite],
            ),
            kernel(
                &audio_m,
                "spectrum",
                &[Uniform, Read, Read, Read, Read, ReadWrite, ReadWrite],
            ),
            kernel(
                &audio_m,
                "hop_features",
                &[Uniform, Read, Read, Read, Read, ReadWrite, ReadWrite],
            ),
            kernel(
                &pool_m,
                "pool_seconds",
                &[Uniform, Read, Read, Read, ReadWrite],
            ),
            kernel(
                &response_m,
                "standardise",
                &[
                    Uniform, Read, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
                ],
            ),
            kernel(
                &response_m,
                "convolve",
                &[
                    Uniform, Read, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
                ],
            ),
            kernel(
                &response_m,
                "readout",
                &[
                    Uniform, Read, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
                ],
            ),
        );
        if let Some(e) = scope.pop().await {
            return Err(GpuError::Device(format!("pipelines failed to build: {e}")));
        }
        let init = |label: &str, bytes: &[u8]| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage: wgpu::BufferUsages::STORAGE,
            })
        };
        let window = init("hann", bytemuck::cast_slice(&features::hann()));
        let twiddles = init("twiddles", bytemuck::cast_slice(&features::twiddles()));
        let mel = init("mel", bytemuck::cast_slice(&features::mel_filters()));
        let dft = init("dft", bytemuck::cast_slice(&features::dft_table()));
        let max_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        Ok(Self {
            adapter_info,
            visual_stats,
            visual: ctx_kernels.0,
            motion_project: ctx_kernels.1,
            motion_energy: ctx_kernels.2,
            spectrum: ctx_kernels.3,
            hop_features: ctx_kernels.4,
            pool: ctx_kernels.5,
            standardise: ctx_kernels.6,
            convolve: ctx_kernels.7,
            readout: ctx_kernels.8,
            device,
            queue,
            errors,
            window,
            twiddles,
            mel,
            dft,
            max_binding,
        })
    }

    /// `"llvmpipe (LLVM 15.0.6, 256 bits) / Vulkan / Cpu"`.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "{} / {:?} / {:?}",
            self.adapter_info.name, self.adapter_info.backend, self.adapter_info.device_type
        )
    }

    /// The device, for other GPU work on the same adapter (the cortex render).
    #[must_use]
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The device's queue.
    #[must_use]
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Errors the device reported since the last check (validation, lost device), as one.
    ///
    /// # Errors
    /// [`GpuError::Kernel`] with the messages.
    pub fn check_errors(&self) -> Result<(), GpuError> {
        let mut v = self
            .errors
            .lock()
            .map_err(|_| GpuError::Kernel("error sink poisoned".into()))?;
        if v.is_empty() {
            Ok(())
        } else {
            Err(GpuError::Kernel(v.drain(..).collect::<Vec<_>>().join("; ")))
        }
    }

    fn storage(&self, label: &str, bytes: &[u8]) -> Result<wgpu::Buffer, GpuError> {
        if bytes.len() as u64 > self.max_binding {
            return Err(GpuError::TooLarge(format!(
                "{label} needs {} bytes, the adapter binds at most {}",
                bytes.len(),
                self.max_binding
            )));
        }
        // Zero-length bindings are invalid; bind one word instead (kernels never read it).
        let bytes: &[u8] = if bytes.is_empty() { &[0; 4] } else { bytes };
        Ok(self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            }))
    }

    fn output(&self, label: &str, floats: usize) -> Result<wgpu::Buffer, GpuError> {
        let size = (floats.max(1) * 4) as u64;
        if size > self.max_binding {
            return Err(GpuError::TooLarge(format!("{label} needs {size} bytes")));
        }
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        }))
    }

    fn uniform<T: bytemuck::Pod>(&self, v: &T) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: bytemuck::bytes_of(v),
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    fn bind(&self, k: &Kernel, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &k.layout,
            entries: &entries,
        })
    }

    /// Runs dispatches in one submission, then copies `reads` back. Returns them as f32.
    fn run(
        &self,
        passes: &[(&Kernel, &wgpu::BindGroup, u32)],
        reads: &[(&wgpu::Buffer, usize)],
    ) -> Result<Vec<Vec<f32>>, GpuError> {
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            for (k, bg, groups) in passes {
                if *groups == 0 {
                    continue;
                }
                pass.set_pipeline(&k.pipeline);
                pass.set_bind_group(0, *bg, &[]);
                pass.dispatch_workgroups(*groups, 1, 1);
            }
        }
        let staging: Vec<wgpu::Buffer> = reads
            .iter()
            .map(|(src, floats)| {
                let size = (floats.max(&1) * 4) as u64;
                let dst = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("readback"),
                    size,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                enc.copy_buffer_to_buffer(src, 0, &dst, 0, size);
                dst
            })
            .collect();
        self.queue.submit([enc.finish()]);
        for s in &staging {
            s.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Kernel(e.to_string()))?;
        self.check_errors()?;
        let mut out = Vec::with_capacity(reads.len());
        for (s, (_, floats)) in staging.iter().zip(reads) {
            let view = s
                .slice(..)
                .get_mapped_range()
                .map_err(|e| GpuError::Kernel(e.to_string()))?;
            let v: Vec<f32> = bytemuck::cast_slice::<u8, f32>(&view)[..*floats].to_vec();
            drop(view);
            s.unmap();
            out.push(v);
        }
        Ok(out)
    }

    /// Per-frame features. `frames` holds `n + 1` RGB24 frames of `width x height` (the frame
    /// before the batch first); returns `n x 8`.
    ///
    /// # Errors
    /// Bad sizes or a kernel failure.
    pub fn visual(
        &self,
        frames: &[u8],
        width: u32,
        height: u32,
        rect: features::Rect,
    ) -> Result<(Vec<f32>, Duration), GpuError> {
        let len = (width * height * 3) as usize;
        if len == 0
            || !frames.len().is_multiple_of(len)
            || frames.len() < 2 * len
            || !len.is_multiple_of(4)
            || !rect.is_valid_in(width, height)
        {
            return Err(GpuError::TooLarge(format!(
                "frame buffer of {} bytes is not n+1 frames of {width}x{height} with picture {rect:?}",
                frames.len()
            )));
        }
        let n = frames.len() / len - 1;
        let start = Instant::now();
        let params = self.uniform(&Params8([
            width, height, n as u32, 0, rect.x0, rect.y0, rect.x1, rect.y1,
        ]));
        let input = self.storage("frames", frames)?;
        // The luma plane and the per-slot histograms and cell means (`slot_stats`), read by
        // `frame_features`; neither leaves the adapter.
        let lumas = self.output("luma planes", (n + 1) * (width * height) as usize)?;
        let stats = self.output("slot stats", (n + 1) * VISUAL_SLOT_STATS)?;
        let out = self.output("frame features", n * FRAME_FEATURES)?;
        let bufs = [&params, &input, &lumas, &stats, &out];
        let bg_stats = self.bind(&self.visual_stats, &bufs);
        let bg = self.bind(&self.visual, &bufs);
        let mut r = self.run(
            &[
                (&self.visual_stats, &bg_stats, (n + 1) as u32),
                (&self.visual, &bg, n as u32),
            ],
            &[(&out, n * FRAME_FEATURES)],
        )?;
        Ok((r.remove(0), start.elapsed()))
    }

    /// Motion energy (`motion.wgsl`). `frames` holds `taps - 1 + n` RGB24 frames of
    /// `width x height` (the `taps - 1` before the batch first); returns `n` rows of
    /// `1 + bank.channel_count()` floats, the feature first (see [`super::motion`]).
    ///
    /// # Errors
    /// Bad sizes or a kernel failure.
    pub fn motion(
        &self,
        frames: &[u8],
        width: u32,
        height: u32,
        rect: features::Rect,
        bank: &MotionBank,
    ) -> Result<(Vec<f32>, Duration), GpuError> {
        let len = (width * height * 3) as usize;
        let lead = bank.taps - 1;
        if len == 0
            || !frames.len().is_multiple_of(len)
            || frames.len() <= lead * len
            || !len.is_multiple_of(4)
            || !rect.is_valid_in(width, height)
            || bank.pairs.len() > motion::MAX_PAIRS
            || bank.cells() > (motion::MAX_GRID_COLS * motion::GRID_ROWS) as usize
        {
            return Err(GpuError::TooLarge(format!(
                "frame buffer of {} bytes is not {lead}+n frames of {width}x{height} with picture {rect:?}",
                frames.len()
            )));
        }
        let slots = frames.len() / len;
        let n = slots - lead;
        let start = Instant::now();
        let params = self.uniform(&Params16([
            width,
            height,
            slots as u32,
            n as u32,
            rect.x0,
            rect.y0,
            rect.x1,
            rect.y1,
            bank.cols,
            bank.rows,
            bank.pairs.len() as u32,
            motion::TEMPORAL_FREQS.len() as u32,
            bank.taps as u32,
            0,
            0,
            0,
        ]));
        let input = self.storage("frames", frames)?;
        let table = self.storage("motion bank", bytemuck::cast_slice(bank.table()))?;
        let proj = self.output("projections", slots * (2 * bank.pairs.len() + 1))?;
        let row = 1 + bank.channel_count();
        let out = self.output("motion energy", n * row)?;
        let bufs = [&params, &input, &table, &proj, &out];
        let bg_p = self.bind(&self.motion_project, &bufs);
        let bg_e = self.bind(&self.motion_energy, &bufs);
        let mut r = self.run(
            &[
                (&self.motion_project, &bg_p, slots as u32),
                (&self.motion_energy, &bg_e, n as u32),
            ],
            &[(&out, n * row)],
        )?;
        Ok((r.remove(0), start.elapsed()))
    }

    /// Spectra and per-hop features. `samples` starts `PRE` samples before the lead hop (see
    /// `audio.wgsl`); returns (`n_hops x 257` power — empty unless `want_power`, the scan path
    /// does not read it — `(n_hops - 1) x 15` features, fft time, features time).
    ///
    /// # Errors
    /// Bad sizes or a kernel failure.
    pub fn audio(
        &self,
        samples: &[f32],
        n_hops: usize,
        lead_is_self: bool,
        want_power: bool,
    ) -> Result<(Vec<f32>, Vec<f32>, Duration, Duration), GpuError> {
        if n_hops < 2 {
            return Err(GpuError::TooLarge(
                "an audio batch needs a lead hop and one more".into(),
            ));
        }
        let start = Instant::now();
        let params = self.uniform(&Params4([
            n_hops as u32,
            samples.len() as u32,
            u32::from(lead_is_self),
            0,
        ]));
        let input = self.storage("samples", bytemuck::cast_slice(samples))?;
        let power = self.output("power", n_hops * BINS)?;
        let out = self.output("hop features", (n_hops - 1) * HOP_FEATURES)?;
        let bufs = [
            &params,
            &input,
            &self.window,
            &self.twiddles,
            &self.mel,
            &power,
            &out,
        ];
        let bg_s = self.bind(&self.spectrum, &bufs);
        let bg_f = self.bind(&self.hop_features, &bufs);
        let reads: &[(&wgpu::Buffer, usize)] = if want_power {
            &[(&power, n_hops * BINS)]
        } else {
            &[]
        };
        let p = self.run(&[(&self.spectrum, &bg_s, n_hops as u32)], reads)?;
        // Back to hop-major for callers.
        let mut power_rows = Vec::new();
        if let Some(bin_major) = p.first() {
            power_rows = vec![0f32; n_hops * BINS];
            for (k, row) in bin_major.chunks_exact(n_hops).enumerate() {
                for (j, v) in row.iter().enumerate() {
                    power_rows[j * BINS + k] = *v;
                }
            }
        }
        let fft = start.elapsed();
        let start = Instant::now();
        let groups = (n_hops - 1).div_ceil(64) as u32;
        let mut f = self.run(
            &[(&self.hop_features, &bg_f, groups)],
            &[(&out, (n_hops - 1) * HOP_FEATURES)],
        )?;
        Ok((power_rows, f.remove(0), fft, start.elapsed()))
    }

    /// Per-second pooling: returns `seconds x 27` raw features.
    ///
    /// # Errors
    /// A kernel failure.
    pub fn pool(
        &self,
        frame_feats: &[f32],
        hop_feats: &[f32],
        seconds: usize,
        fps: u32,
        onset_threshold: f32,
        hop_offset: u32,
    ) -> Result<(Vec<f32>, Duration), GpuError> {
        let start = Instant::now();
        let f = features::FEATURE_COUNT;
        let params = self.uniform(&Params8([
            seconds as u32,
            (frame_feats.len() / FRAME_FEATURES) as u32,
            (hop_feats.len() / HOP_FEATURES) as u32,
            fps,
            onset_threshold.to_bits(),
            hop_offset,
            0,
            0,
        ]));
        let fb = self.storage("frame features", bytemuck::cast_slice(frame_feats))?;
        let hb = self.storage("hop features", bytemuck::cast_slice(hop_feats))?;
        let out = self.output("seconds", seconds * f)?;
        let bg = self.bind(&self.pool, &[&params, &fb, &hb, &self.dft, &out]);
        let mut r = self.run(
            &[(&self.pool, &bg, seconds.div_ceil(64) as u32)],
            &[(&out, seconds * f)],
        )?;
        Ok((r.remove(0), start.elapsed()))
    }

    /// Standardise, response kernel and readout.
    ///
    /// # Errors
    /// A kernel failure.
    pub fn response(
        &self,
        raw: &[f32],
        model: &Model,
        present: Presence,
        time_base: TimeBase,
    ) -> Result<Response, GpuError> {
        let start = Instant::now();
        let f = model.features.len();
        let seconds = raw.len() / f;
        let kernel = model.kernel(time_base);
        let params = self.uniform(&Params8([
            seconds as u32,
            f as u32,
            model.hrf.len() as u32,
            kernel.shift as u32,
            present.mask(),
            kernel.first_tap as u32,
            NETWORK_COUNT as u32,
            kernel.end_tap as u32,
        ]));
        let modality: Vec<f32> = model.modality.iter().map(|m| m.code()).collect();
        let stats: Vec<f32> = [&model.mean[..], &model.std, &model.absent, &modality].concat();
        let wb: Vec<f32> = [&model.weights[..], &model.bias].concat();
        let raw_b = self.storage("raw", bytemuck::cast_slice(raw))?;
        let stats_b = self.storage("stats", bytemuck::cast_slice(&stats))?;
        let hrf_b = self.storage("hrf", bytemuck::cast_slice(&model.hrf))?;
        let w_b = self.storage("weights", bytemuck::cast_slice(&wb))?;
        let z = self.output("z", seconds * f)?;
        let r = self.output("r", seconds * f)?;
        let y = self.output("y", seconds * NETWORK_COUNT)?;
        let bufs = [&params, &raw_b, &stats_b, &hrf_b, &w_b, &z, &r, &y];
        let bg1 = self.bind(&self.standardise, &bufs);
        let bg2 = self.bind(&self.convolve, &bufs);
        let bg3 = self.bind(&self.readout, &bufs);
        let g = (seconds * f).div_ceil(64) as u32;
        let gy = (seconds * NETWORK_COUNT).div_ceil(64) as u32;
        let mut out = self.run(
            &[
                (&self.standardise, &bg1, g),
                (&self.convolve, &bg2, g),
                (&self.readout, &bg3, gy),
            ],
            &[
                (&z, seconds * f),
                (&r, seconds * f),
                (&y, seconds * NETWORK_COUNT),
            ],
        )?;
        let y = out.remove(2);
        let r = out.remove(1);
        let z = out.remove(0);
        Ok(Response {
            z,
            r,
            y,
            time: start.elapsed(),
        })
    }
}
