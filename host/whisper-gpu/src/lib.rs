//! Whisper's encoder and key/value-cached decoder as compute kernels on a wgpu device.
//!
//! Why: on a machine with a GPU the speech stage is most of a scan (issue 45: 8.9 s of a
//! 9.2 s scan of a minute of speech on an H100, all of it Whisper on the CPU), while the
//! qualia kernels on the same device take milliseconds. This crate runs the same network, from
//! the same tensors, as the host's CPU path (`host/src/speech/decoder.rs` and candle's
//! encoder), so the decoding rules, the temperature fallback and the timestamp logic stay in
//! one place and only the arithmetic moves.
//!
//! The arithmetic is the reference's (OpenAI `whisper/model.py`): two kernel-3 convolutions
//! with GELU (the tanh approximation, as candle's), sinusoidal positions, pre-norm residual
//! blocks with eps 1e-5, attention scaled by `d_head^-0.5` (the reference scales query and key
//! by `d_head^-0.25` each), and logits from the tied token embedding. Four kernels do all of
//! it (`shaders/whisper_*.wgsl`): a strided, batched, tiled matrix product with fused
//! epilogues; softmax; layer norm; and the decoder's embedding. The weights of the linear
//! layers, the convolutions and the token embedding are held in f16 where the device has
//! `shader-f16` (half the memory: the fp16 checkpoints the service ships lose nothing), else
//! f32; every sum is f32. Results differ from the CPU's only by the order of additions; the
//! host's parity test states the bound.
//!
//! A decoding [`Pass`] keeps a key/value cache per layer for a fixed set of candidate slots.
//! A candidate that ends keeps its slot (its rows are still computed and never read): on a
//! GPU that costs nothing measurable, and it spares copying caches between slots.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wgpu::util::DeviceExt;

const MATMUL_WGSL: &str = include_str!("../../../shaders/whisper_matmul.wgsl");
const SOFTMAX_WGSL: &str = include_str!("../../../shaders/whisper_softmax.wgsl");
const LAYERNORM_WGSL: &str = include_str!("../../../shaders/whisper_layernorm.wgsl");
const EMBED_WGSL: &str = include_str!("../../../shaders/whisper_embed.wgsl");

/// Every WGSL file this crate compiles, by file name (the shader test checks that each file
/// on disk is built in somewhere, and validates it).
pub const SHADERS: [(&str, &str); 4] = [
    ("whisper_matmul.wgsl", MATMUL_WGSL),
    ("whisper_softmax.wgsl", SOFTMAX_WGSL),
    ("whisper_layernorm.wgsl", LAYERNORM_WGSL),
    ("whisper_embed.wgsl", EMBED_WGSL),
];

/// The sources compiled with f16 weights: the matrix product and the embedding, with their
/// weight arrays declared `array<f16>` behind `enable f16;`.
#[must_use]
pub fn f16_sources() -> [(&'static str, String); 2] {
    [
        (
            "whisper_matmul.wgsl",
            as_half(MATMUL_WGSL, "var<storage, read> b: array<f32>;"),
        ),
        (
            "whisper_embed.wgsl",
            as_half(EMBED_WGSL, "var<storage, read> table: array<f32>;"),
        ),
    ]
}

/// The matrix product's tile (rows and columns per workgroup), as in the WGSL.
const TILE: u32 = 64;
/// The skinny product's row limit and columns per workgroup, as in the WGSL.
const SKINNY_ROWS: u32 = 8;
const SKINNY_COLS: u32 = 32;
/// Rows per workgroup-row of the row kernels' dispatch (the WGSL folds `y` by this).
const ROWS_PER_Y: u32 = 65_535;

const BIAS: u32 = 1;
const GELU: u32 = 2;
const EXTRA: u32 = 4;
const ACCUMULATE: u32 = 8;
const IM2COL: u32 = 16;

/// Bytes of one buffer of dispatch parameters: room for 256 dispatches at the largest
/// offset alignment WebGPU allows (256 bytes), and within every device's uniform limits.
const PARAMS_CHUNK: u64 = 64 * 1024;

/// How a submission's dispatches are recorded.
///
/// A decoding step is 17 dispatches per layer and 3 more (about 105 for base). Recording each
/// with its own parameter buffer and compute pass made the host create that many buffers and
/// passes per token, which a GPU that runs the step in a fraction of a millisecond waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Recording {
    /// One compute pass per submission; every dispatch's parameters in one uniform buffer
    /// (at aligned offsets), written once before the submission. The default.
    #[default]
    OnePass,
    /// Each dispatch with its own uniform buffer and compute pass (before 2026-11-28). Kept
    /// as the bench's same-run baseline; the kernels and their order are the same.
    PerDispatch,
}

/// What went wrong, with the tensor or the step named.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A weight is missing or has another shape than the dimensions say.
    #[error("whisper weights: {0}")]
    Weight(String),
    /// An input the model cannot take (too many frames, tokens past the text context).
    #[error("whisper on the device: {0}")]
    Input(String),
    /// The device refused a buffer or a kernel, or was lost.
    #[error("whisper on the device: {0}")]
    Device(String),
}

/// The shape of a Whisper checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub n_mels: usize,
    pub n_state: usize,
    pub audio_ctx: usize,
    pub audio_heads: usize,
    pub audio_layers: usize,
    pub text_ctx: usize,
    pub text_heads: usize,
    pub text_layers: usize,
    pub vocab: usize,
}

/// How the weights of the linear layers, the convolutions and the token embedding are held on
/// the device. Biases, norms and positions stay f32, and every sum is f32 either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    F32,
    /// Half the memory; needs the device's `shader-f16` feature.
    F16,
}

/// A named tensor in f32, row-major: its shape and values.
pub type Tensor = (Vec<usize>, Vec<f32>);

pub mod synthetic;

struct Kernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

struct Kernels {
    matmul: Kernel,
    /// The same product for at most [`SKINNY_ROWS`] rows (a decoding step).
    matmul_skinny: Kernel,
    /// Both, reading B (the weights) in f16, when the weights are held so.
    half: Option<(Kernel, Kernel)>,
    embed_half: Option<Kernel>,
    softmax: Kernel,
    layernorm: Kernel,
    embed: Kernel,
}

struct Linear {
    weight: wgpu::Buffer,
    bias: Option<wgpu::Buffer>,
    out: u32,
    inp: u32,
}

struct Norm {
    gamma: wgpu::Buffer,
    beta: wgpu::Buffer,
}

struct Attention {
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
}

struct EncoderBlock {
    attn_ln: Norm,
    attn: Attention,
    mlp_ln: Norm,
    fc1: Linear,
    fc2: Linear,
}

struct DecoderBlock {
    attn_ln: Norm,
    attn: Attention,
    cross_ln: Norm,
    cross: Attention,
    mlp_ln: Norm,
    fc1: Linear,
    fc2: Linear,
}

/// A Whisper checkpoint resident on a device.
pub struct DeviceWhisper {
    device: wgpu::Device,
    queue: wgpu::Queue,
    kernels: Kernels,
    dims: Dims,
    conv1: Linear,
    conv2: Linear,
    audio_positions: wgpu::Buffer,
    encoder: Vec<EncoderBlock>,
    encoder_ln: Norm,
    token_embedding: wgpu::Buffer,
    text_positions: wgpu::Buffer,
    decoder: Vec<DecoderBlock>,
    decoder_ln: Norm,
    /// Bound where a kernel takes no such operand (a binding cannot be left empty).
    unused: wgpu::Buffer,
    max_binding: u64,
    /// The device's `min_uniform_buffer_offset_alignment`.
    params_align: usize,
    recording: Recording,
    /// Host time spent recording and submitting work, in nanoseconds, and the submissions.
    host_ns: AtomicU64,
    submissions: AtomicU64,
}

impl std::fmt::Debug for DeviceWhisper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceWhisper")
            .field("dims", &self.dims)
            .finish_non_exhaustive()
    }
}

/// One window's encoder output, on the device (`(frames / 2, n_state)`).
pub struct Encoded {
    buffer: wgpu::Buffer,
    frames: u32,
}

impl Encoded {
    /// Output positions (half the mel frames).
    #[must_use]
    pub fn positions(&self) -> usize {
        self.frames as usize
    }
}

/// Cross-attention keys and values of one window, per decoder layer (`(frames, n_state)`
/// each), computed once for every step and candidate.
pub struct Attended {
    layers: Vec<(wgpu::Buffer, wgpu::Buffer)>,
    frames: u32,
}

/// A decoding pass over one attended window for a fixed number of candidate slots.
pub struct Pass<'a> {
    attended: &'a Attended,
    /// Per layer: keys and values of every slot, `(slots, text_ctx, n_state)`.
    cache: Vec<(wgpu::Buffer, wgpu::Buffer)>,
    slots: u32,
    /// The slots still decoding, in the caller's order.
    live: Vec<u32>,
    len: u32,
}

impl Pass<'_> {
    /// Keeps only the candidates at `rows` (indices into the live candidates, in the order
    /// given), as the CPU pass's `retain`.
    ///
    /// # Errors
    /// No row kept, or a row outside the live candidates.
    pub fn retain(&mut self, rows: &[usize]) -> Result<(), Error> {
        if rows.is_empty() || rows.iter().any(|&r| r >= self.live.len()) {
            return Err(Error::Input(format!(
                "keep rows {rows:?} of {} live candidates",
                self.live.len()
            )));
        }
        self.live = rows.iter().map(|&r| self.live[r]).collect();
        Ok(())
    }

    /// Tokens fed so far per candidate.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether nothing has been fed yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The logits a step returns.
#[derive(Debug, Clone, PartialEq)]
pub struct StepLogits {
    /// The first new position of the first live candidate, when asked for.
    pub first: Option<Vec<f32>>,
    /// The last new position of each live candidate, in the live order.
    pub last: Vec<Vec<f32>>,
}

/// Where an operand's element (row, column) lies: `off + outer·z_outer + inner·z_inner +
/// row·s_row + col·s_col`, with the batch index split as `z = outer·z_div + inner`.
#[derive(Debug, Clone, Copy, Default)]
struct Layout {
    off: u32,
    s_row: u32,
    s_col: u32,
    z_outer: u32,
    z_inner: u32,
}

impl Layout {
    fn rows(off: u32, s_row: u32) -> Self {
        Self {
            off,
            s_row,
            s_col: 1,
            ..Self::default()
        }
    }
}

/// One matrix product: `C(m, n) = alpha · Σ_k A(m, k)·B(n, k)` plus the epilogue `flags`.
struct Product<'b> {
    m: u32,
    n: u32,
    k: u32,
    batches: u32,
    z_div: u32,
    alpha: f32,
    flags: u32,
    a: (&'b wgpu::Buffer, Layout),
    b: (&'b wgpu::Buffer, Layout),
    c: (&'b wgpu::Buffer, Layout),
    bias: Option<&'b wgpu::Buffer>,
    extra: Option<(&'b wgpu::Buffer, Layout)>,
    /// A kernel-3 convolution: (stride, input length).
    conv: Option<(u32, u32)>,
    /// B is a weight, held as the model's weights are (f16 or f32); otherwise f32.
    weight: bool,
}

/// Dispatches recorded for one submission.
struct Recorder<'d> {
    whisper: &'d DeviceWhisper,
    encoder: wgpu::CommandEncoder,
    /// The submission's compute pass, open from its first dispatch to [`DeviceWhisper::finish`]
    /// ([`Recording::OnePass`]). Within a pass wgpu orders each dispatch after the writes of
    /// the dispatches before it, as between passes.
    pass: Option<wgpu::ComputePass<'static>>,
    /// The dispatches' parameters: uniform buffers of [`PARAMS_CHUNK`] bytes and what goes
    /// into each, written before the submission.
    params: Vec<(wgpu::Buffer, Vec<u8>)>,
    started: Instant,
    /// Errors of this submission's calls (error scopes are per thread, so concurrent scans
    /// on one shared device do not see each other's). Popped in reverse order.
    scopes: [wgpu::ErrorScopeGuard; 2],
}

impl Recorder<'_> {
    fn dispatch(
        &mut self,
        kernel: &Kernel,
        params: &[u32],
        buffers: &[&wgpu::Buffer],
        groups: (u32, u32, u32),
    ) {
        let w = self.whisper;
        let bytes: &[u8] = bytemuck::cast_slice(params);
        let separate;
        let uniform = match w.recording {
            Recording::PerDispatch => {
                separate = w
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("whisper params"),
                        contents: bytes,
                        usage: wgpu::BufferUsages::UNIFORM,
                    });
                separate.as_entire_binding()
            }
            Recording::OnePass => {
                let fits = self
                    .params
                    .last()
                    .is_some_and(|(_, data)| (data.len() + bytes.len()) as u64 <= PARAMS_CHUNK);
                if !fits {
                    let buffer = w.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("whisper params"),
                        size: PARAMS_CHUNK,
                        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    });
                    self.params.push((buffer, Vec::new()));
                }
                let (buffer, data) = self.params.last_mut().expect("a parameter buffer");
                let offset = data.len() as u64;
                data.extend_from_slice(bytes);
                data.resize(data.len().next_multiple_of(w.params_align), 0);
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset,
                    size: std::num::NonZeroU64::new(bytes.len() as u64),
                })
            }
        };
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: uniform,
        }];
        entries.extend(
            buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32 + 1,
                    resource: b.as_entire_binding(),
                }),
        );
        let group = w.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &kernel.layout,
            entries: &entries,
        });
        if self.pass.is_none() {
            self.pass = Some(
                self.encoder
                    .begin_compute_pass(&wgpu::ComputePassDescriptor::default())
                    .forget_lifetime(),
            );
        }
        let pass = self.pass.as_mut().expect("an open pass");
        pass.set_pipeline(&kernel.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, groups.2);
        if w.recording == Recording::PerDispatch {
            self.pass = None;
        }
    }

    fn product(&mut self, p: &Product<'_>) {
        if p.m == 0 || p.n == 0 || p.batches == 0 {
            return;
        }
        let (conv_stride, conv_len) = p.conv.unwrap_or((1, 0));
        let mut flags = p.flags;
        if p.bias.is_some() {
            flags |= BIAS;
        }
        if p.extra.is_some() {
            flags |= EXTRA;
        }
        if p.conv.is_some() {
            flags |= IM2COL;
        }
        let (a, al) = p.a;
        let (b, bl) = p.b;
        let (c, cl) = p.c;
        let (e, el) = p.extra.unwrap_or((&self.whisper.unused, Layout::default()));
        let params: [u32; 28] = [
            p.m,
            p.n,
            p.k,
            flags,
            al.off,
            al.s_row,
            al.s_col,
            al.z_outer,
            al.z_inner,
            bl.off,
            bl.s_row,
            bl.s_col,
            bl.z_outer,
            bl.z_inner,
            cl.off,
            cl.s_row,
            cl.z_outer,
            cl.z_inner,
            el.off,
            el.s_row,
            p.z_div.max(1),
            p.alpha.to_bits(),
            conv_stride,
            conv_len,
            el.z_outer,
            el.z_inner,
            0,
            0,
        ];
        let bias = p.bias.unwrap_or(&self.whisper.unused);
        let kernels = &self.whisper.kernels;
        let (tiled, skinny) = match (&kernels.half, p.weight) {
            (Some((tiled, skinny)), true) => (tiled, skinny),
            _ => (&kernels.matmul, &kernels.matmul_skinny),
        };
        let (kernel, groups) = if p.m <= SKINNY_ROWS && p.conv.is_none() {
            (skinny, (p.n.div_ceil(SKINNY_COLS), 1, p.batches))
        } else {
            (tiled, (p.n.div_ceil(TILE), p.m.div_ceil(TILE), p.batches))
        };
        self.dispatch(kernel, &params, &[a, b, bias, e, c], groups);
    }

    fn linear(&mut self, lin: &Linear, x: &wgpu::Buffer, rows: u32, y: &wgpu::Buffer, flags: u32) {
        self.product(&Product {
            m: rows,
            n: lin.out,
            k: lin.inp,
            batches: 1,
            z_div: 1,
            alpha: 1.0,
            flags,
            a: (x, Layout::rows(0, lin.inp)),
            b: (&lin.weight, Layout::rows(0, lin.inp)),
            c: (y, Layout::rows(0, lin.out)),
            bias: lin.bias.as_ref(),
            extra: None,
            conv: None,
            weight: true,
        });
    }

    fn layer_norm(&mut self, norm: &Norm, x: &wgpu::Buffer, rows: u32, n: u32, y: &wgpu::Buffer) {
        let kernel = &self.whisper.kernels.layernorm;
        self.dispatch(
            kernel,
            &[rows, n, 0, 0],
            &[x, &norm.gamma, &norm.beta, y],
            row_groups(rows),
        );
    }

    fn softmax(&mut self, s: &wgpu::Buffer, rows: u32, cols: u32, causal: Option<(u32, u32)>) {
        let (on, past, n_per) = causal.map_or((0, 0, 1), |(past, n)| (1, past, n));
        let kernel = &self.whisper.kernels.softmax;
        self.dispatch(
            kernel,
            &[rows, cols, cols, on, past, n_per, 0, 0],
            &[s],
            row_groups(rows),
        );
    }
}

fn row_groups(rows: u32) -> (u32, u32, u32) {
    (rows.min(ROWS_PER_Y), rows.div_ceil(ROWS_PER_Y), 1)
}

/// The sinusoidal positions of Whisper's encoder, computed as candle computes them (f32).
fn sinusoids(length: usize, channels: usize) -> Vec<f32> {
    let half = channels / 2;
    let increment = 10_000f32.ln() / (half.saturating_sub(1).max(1)) as f32;
    let inv: Vec<f32> = (0..half).map(|i| (i as f32 * -increment).exp()).collect();
    let mut out = vec![0f32; length * channels];
    for t in 0..length {
        for (i, &s) in inv.iter().enumerate() {
            let x = t as f32 * s;
            out[t * channels + i] = x.sin();
            out[t * channels + half + i] = x.cos();
        }
    }
    out
}

impl DeviceWhisper {
    /// Uploads a checkpoint. `weights` returns a tensor by its candle-transformers name
    /// (`model.encoder.conv1.weight`, `model.decoder.layers.0.fc1.bias`, …).
    ///
    /// # Errors
    /// A missing or misshapen weight, or a buffer the device cannot hold.
    pub fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        dims: Dims,
        weights: &dyn Fn(&str) -> Result<Tensor, String>,
    ) -> Result<Self, Error> {
        let precision = if device.features().contains(wgpu::Features::SHADER_F16) {
            Precision::F16
        } else {
            Precision::F32
        };
        Self::with_precision(device, queue, dims, weights, precision)
    }

    /// [`DeviceWhisper::new`] with the weights held in `precision` (f16 needs the device's
    /// `shader-f16`; [`DeviceWhisper::new`] picks f16 wherever the device has it).
    ///
    /// # Errors
    /// As [`DeviceWhisper::new`], or f16 asked of a device without `shader-f16`.
    pub fn with_precision(
        device: wgpu::Device,
        queue: wgpu::Queue,
        dims: Dims,
        weights: &dyn Fn(&str) -> Result<Tensor, String>,
        precision: Precision,
    ) -> Result<Self, Error> {
        let half = precision == Precision::F16;
        if half && !device.features().contains(wgpu::Features::SHADER_F16) {
            return Err(Error::Device(
                "f16 weights need the device's shader-f16 feature".into(),
            ));
        }
        if dims.n_state == 0
            || !dims.n_state.is_multiple_of(dims.audio_heads.max(1))
            || !dims.n_state.is_multiple_of(dims.text_heads.max(1))
            || dims.audio_heads == 0
            || dims.text_heads == 0
        {
            return Err(Error::Weight(format!("inconsistent dimensions {dims:?}")));
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let kernels = Kernels {
            matmul: kernel(&device, MATMUL_WGSL, "matmul", 5)?,
            matmul_skinny: kernel(&device, MATMUL_WGSL, "matmul_skinny", 5)?,
            softmax: kernel(&device, SOFTMAX_WGSL, "softmax", 1)?,
            layernorm: kernel(&device, LAYERNORM_WGSL, "layernorm", 4)?,
            embed: kernel(&device, EMBED_WGSL, "embed", 4)?,
            half: half
                .then(|| {
                    let [(_, src), _] = f16_sources();
                    Ok::<_, Error>((
                        kernel(&device, &src, "matmul", 5)?,
                        kernel(&device, &src, "matmul_skinny", 5)?,
                    ))
                })
                .transpose()?,
            embed_half: half
                .then(|| {
                    let [_, (_, src)] = f16_sources();
                    kernel(&device, &src, "embed", 4)
                })
                .transpose()?,
        };
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Device(format!("the whisper kernels: {e}")));
        }
        let max_binding = device
            .limits()
            .max_storage_buffer_binding_size
            .min(device.limits().max_buffer_size);
        let d = dims.n_state;
        let up = Uploader {
            device: &device,
            weights,
            max_binding,
            half,
        };
        let conv1 = up.conv("model.encoder.conv1", d, dims.n_mels)?;
        let conv2 = up.conv("model.encoder.conv2", d, d)?;
        let audio_positions = up.buffer("audio positions", &sinusoids(dims.audio_ctx, d))?;
        let encoder = (0..dims.audio_layers)
            .map(|i| {
                let p = format!("model.encoder.layers.{i}");
                Ok(EncoderBlock {
                    attn_ln: up.norm(&format!("{p}.self_attn_layer_norm"), d)?,
                    attn: up.attention(&format!("{p}.self_attn"), d)?,
                    mlp_ln: up.norm(&format!("{p}.final_layer_norm"), d)?,
                    fc1: up.linear(&format!("{p}.fc1"), 4 * d, d, true)?,
                    fc2: up.linear(&format!("{p}.fc2"), d, 4 * d, true)?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let encoder_ln = up.norm("model.encoder.layer_norm", d)?;
        let token_embedding = up.weight("model.decoder.embed_tokens.weight", &[dims.vocab, d])?;
        let text_positions =
            up.tensor("model.decoder.embed_positions.weight", &[dims.text_ctx, d])?;
        let decoder = (0..dims.text_layers)
            .map(|i| {
                let p = format!("model.decoder.layers.{i}");
                Ok(DecoderBlock {
                    attn_ln: up.norm(&format!("{p}.self_attn_layer_norm"), d)?,
                    attn: up.attention(&format!("{p}.self_attn"), d)?,
                    cross_ln: up.norm(&format!("{p}.encoder_attn_layer_norm"), d)?,
                    cross: up.attention(&format!("{p}.encoder_attn"), d)?,
                    mlp_ln: up.norm(&format!("{p}.final_layer_norm"), d)?,
                    fc1: up.linear(&format!("{p}.fc1"), 4 * d, d, true)?,
                    fc2: up.linear(&format!("{p}.fc2"), d, 4 * d, true)?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let decoder_ln = up.norm("model.decoder.layer_norm", d)?;
        let unused = up.buffer("unused", &[0.0; 4])?;
        let params_align = (device.limits().min_uniform_buffer_offset_alignment as usize).max(4);
        Ok(Self {
            device,
            queue,
            kernels,
            dims,
            conv1,
            conv2,
            audio_positions,
            encoder,
            encoder_ln,
            token_embedding,
            text_positions,
            decoder,
            decoder_ln,
            unused,
            max_binding,
            params_align,
            recording: Recording::default(),
            host_ns: AtomicU64::new(0),
            submissions: AtomicU64::new(0),
        })
    }

    /// Records submissions as `recording` says (the bench compares the two).
    pub fn set_recording(&mut self, recording: Recording) {
        self.recording = recording;
    }

    /// Host time spent recording and submitting work so far (from the start of a submission's
    /// recording to its submit returning, without the wait for the device or the readback),
    /// and how many submissions that was.
    #[must_use]
    pub fn host_recording(&self) -> (Duration, u64) {
        (
            Duration::from_nanos(self.host_ns.load(Ordering::Relaxed)),
            self.submissions.load(Ordering::Relaxed),
        )
    }

    /// The checkpoint's dimensions.
    #[must_use]
    pub fn dims(&self) -> Dims {
        self.dims
    }

    /// How the weights are held.
    #[must_use]
    pub fn precision(&self) -> Precision {
        if self.kernels.half.is_some() {
            Precision::F16
        } else {
            Precision::F32
        }
    }

    fn scratch(&self, label: &str, floats: usize) -> Result<wgpu::Buffer, Error> {
        let size = (floats.max(1) * 4) as u64;
        if size > self.max_binding {
            return Err(Error::Device(format!(
                "{label} needs {size} bytes; the device binds at most {}",
                self.max_binding
            )));
        }
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        }))
    }

    fn recorder(&self) -> Recorder<'_> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        Recorder {
            whisper: self,
            scopes: [validation, oom],
            pass: None,
            params: Vec::new(),
            started: Instant::now(),
            encoder: self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("whisper"),
                }),
        }
    }

    /// Submits what `rec` recorded, then reads back `reads` (buffer, first float, floats).
    fn finish(
        &self,
        rec: Recorder<'_>,
        reads: &[(&wgpu::Buffer, usize, usize)],
    ) -> Result<Vec<Vec<f32>>, Error> {
        let Recorder {
            encoder: mut enc,
            scopes: [validation, oom],
            pass,
            params,
            started,
            ..
        } = rec;
        // The pass ends before the copies below are recorded on the same encoder.
        drop(pass);
        for (buffer, data) in &params {
            self.queue.write_buffer(buffer, 0, data);
        }
        let staging: Vec<wgpu::Buffer> = reads
            .iter()
            .map(|&(src, first, floats)| {
                let size = (floats.max(1) * 4) as u64;
                let dst = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("whisper readback"),
                    size,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                enc.copy_buffer_to_buffer(src, (first * 4) as u64, &dst, 0, size);
                dst
            })
            .collect();
        self.queue.submit([enc.finish()]);
        self.host_ns.fetch_add(
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.submissions.fetch_add(1, Ordering::Relaxed);
        for scope in [validation, oom] {
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(Error::Device(e.to_string()));
            }
        }
        for s in &staging {
            s.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Device(e.to_string()))?;
        let mut out = Vec::with_capacity(reads.len());
        for (s, &(_, _, floats)) in staging.iter().zip(reads) {
            let view = s
                .slice(..)
                .get_mapped_range()
                .map_err(|e| Error::Device(e.to_string()))?;
            out.push(bytemuck::cast_slice::<u8, f32>(&view)[..floats].to_vec());
            drop(view);
            s.unmap();
        }
        Ok(out)
    }

    /// Runs the encoder on a log-mel window: `mel` is `(n_mels, frames)` row-major, `frames`
    /// even and at most twice the audio context.
    ///
    /// # Errors
    /// A malformed window or a device failure.
    pub fn encode(&self, mel: &[f32], frames: usize) -> Result<Encoded, Error> {
        let dims = self.dims;
        if frames == 0
            || !frames.is_multiple_of(2)
            || frames > 2 * dims.audio_ctx
            || mel.len() != dims.n_mels * frames
        {
            return Err(Error::Input(format!(
                "a mel window of {} values for {frames} frames of {} bins (even, at most {})",
                mel.len(),
                dims.n_mels,
                2 * dims.audio_ctx
            )));
        }
        let d = dims.n_state as u32;
        let t1 = frames as u32;
        let t = t1 / 2;
        let heads = dims.audio_heads as u32;
        let dh = d / heads;
        let input = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("whisper mel"),
                contents: bytemuck::cast_slice(mel),
                usage: wgpu::BufferUsages::STORAGE,
            });
        let conv = self.scratch("whisper conv1", (t1 * d) as usize)?;
        let x = self.scratch("whisper encoder x", (t * d) as usize)?;
        let h = self.scratch("whisper encoder h", (t * d) as usize)?;
        let q = self.scratch("whisper encoder q", (t * d) as usize)?;
        let k = self.scratch("whisper encoder k", (t * d) as usize)?;
        let v = self.scratch("whisper encoder v", (t * d) as usize)?;
        let o = self.scratch("whisper encoder o", (t * d) as usize)?;
        let s = self.scratch("whisper encoder scores", (heads * t * t) as usize)?;
        let f = self.scratch("whisper encoder mlp", (t * 4 * d) as usize)?;
        let out = self.scratch("whisper encoded", (t * d) as usize)?;
        let mut rec = self.recorder();
        let n_mels = dims.n_mels as u32;
        // conv1: (mel bins, t1) → (t1, d), GELU.
        rec.product(&Product {
            m: t1,
            n: d,
            k: n_mels * 3,
            batches: 1,
            z_div: 1,
            alpha: 1.0,
            flags: GELU,
            a: (
                &input,
                Layout {
                    off: 0,
                    s_row: 1,
                    s_col: t1,
                    ..Layout::default()
                },
            ),
            b: (&self.conv1.weight, Layout::rows(0, n_mels * 3)),
            c: (&conv, Layout::rows(0, d)),
            bias: self.conv1.bias.as_ref(),
            extra: None,
            conv: Some((1, t1)),
            weight: true,
        });
        // conv2 (stride 2): (t1, d) → (t, d), GELU, plus the positions.
        rec.product(&Product {
            m: t,
            n: d,
            k: d * 3,
            batches: 1,
            z_div: 1,
            alpha: 1.0,
            flags: GELU,
            a: (
                &conv,
                Layout {
                    off: 0,
                    s_row: d,
                    s_col: 1,
                    ..Layout::default()
                },
            ),
            b: (&self.conv2.weight, Layout::rows(0, d * 3)),
            c: (&x, Layout::rows(0, d)),
            bias: self.conv2.bias.as_ref(),
            extra: Some((&self.audio_positions, Layout::rows(0, d))),
            conv: Some((2, t1)),
            weight: true,
        });
        let alpha = (dh as f32).powf(-0.5);
        for b in &self.encoder {
            rec.layer_norm(&b.attn_ln, &x, t, d, &h);
            rec.linear(&b.attn.query, &h, t, &q, 0);
            rec.linear(&b.attn.key, &h, t, &k, 0);
            rec.linear(&b.attn.value, &h, t, &v, 0);
            self_attention(&mut rec, &q, &k, &v, &s, &o, t, d, heads, alpha);
            rec.linear(&b.attn.out, &o, t, &x, ACCUMULATE);
            rec.layer_norm(&b.mlp_ln, &x, t, d, &h);
            rec.linear(&b.fc1, &h, t, &f, GELU);
            rec.linear(&b.fc2, &f, t, &x, ACCUMULATE);
        }
        rec.layer_norm(&self.encoder_ln, &x, t, d, &out);
        self.finish(rec, &[])?;
        Ok(Encoded {
            buffer: out,
            frames: t,
        })
    }

    /// Reads an encoder output back (`(positions, n_state)` row-major): for parity tests.
    ///
    /// # Errors
    /// A device failure.
    pub fn read_encoded(&self, e: &Encoded) -> Result<Vec<f32>, Error> {
        let n = e.frames as usize * self.dims.n_state;
        let mut v = self.finish(self.recorder(), &[(&e.buffer, 0, n)])?;
        Ok(v.pop().unwrap_or_default())
    }

    /// Projects one window's encoder output into every decoder layer's cross-attention keys
    /// and values.
    ///
    /// # Errors
    /// A device failure.
    pub fn attend(&self, e: &Encoded) -> Result<Attended, Error> {
        let d = self.dims.n_state;
        let mut rec = self.recorder();
        let mut layers = Vec::with_capacity(self.decoder.len());
        for b in &self.decoder {
            let k = self.scratch("whisper cross keys", e.frames as usize * d)?;
            let v = self.scratch("whisper cross values", e.frames as usize * d)?;
            rec.linear(&b.cross.key, &e.buffer, e.frames, &k, 0);
            rec.linear(&b.cross.value, &e.buffer, e.frames, &v, 0);
            layers.push((k, v));
        }
        self.finish(rec, &[])?;
        Ok(Attended {
            layers,
            frames: e.frames,
        })
    }

    /// A new decoding pass of `candidates` (at least one) over an attended window.
    ///
    /// # Errors
    /// A cache the device cannot hold.
    pub fn pass<'a>(&self, attended: &'a Attended, candidates: usize) -> Result<Pass<'a>, Error> {
        let slots = candidates.max(1);
        let floats = slots * self.dims.text_ctx * self.dims.n_state;
        let cache = (0..self.decoder.len())
            .map(|_| {
                Ok((
                    self.scratch("whisper self keys", floats)?,
                    self.scratch("whisper self values", floats)?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Pass {
            attended,
            cache,
            slots: slots as u32,
            live: (0..slots as u32).collect(),
            len: 0,
        })
    }

    /// Feeds `tokens` after those already in `pass`: the same number of new tokens for every
    /// live candidate, candidate after candidate. Returns the vocabulary logits of each live
    /// candidate's last new position, and of the first candidate's first new position when
    /// `first` is set.
    ///
    /// # Errors
    /// A token count that is not a multiple of the live candidates, more tokens than the text
    /// context holds, a token outside the vocabulary, or a device failure.
    pub fn feed(
        &self,
        pass: &mut Pass<'_>,
        tokens: &[u32],
        first: bool,
    ) -> Result<StepLogits, Error> {
        let dims = self.dims;
        let live = pass.live.len();
        if tokens.is_empty() || !tokens.len().is_multiple_of(live) {
            return Err(Error::Input(format!(
                "{} tokens for {live} candidates",
                tokens.len()
            )));
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= dims.vocab) {
            return Err(Error::Input(format!("token {bad} outside the vocabulary")));
        }
        let n = (tokens.len() / live) as u32;
        if (pass.len + n) as usize > dims.text_ctx {
            return Err(Error::Input(format!(
                "{} tokens exceed the text context ({})",
                pass.len + n,
                dims.text_ctx
            )));
        }
        // Every slot is computed; an ended candidate's slot gets a placeholder token.
        let slots = pass.slots;
        let mut all = vec![0u32; (slots * n) as usize];
        for (i, &slot) in pass.live.iter().enumerate() {
            let from = i * n as usize;
            let to = (slot * n) as usize;
            all[to..to + n as usize].copy_from_slice(&tokens[from..from + n as usize]);
        }
        let d = dims.n_state as u32;
        let heads = dims.text_heads as u32;
        let dh = d / heads;
        let rows = slots * n;
        let past = pass.len;
        let len = past + n;
        let frames = pass.attended.frames;
        let ctx = dims.text_ctx as u32;
        let vocab = dims.vocab as u32;
        let ids = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("whisper tokens"),
                contents: bytemuck::cast_slice(&all),
                usage: wgpu::BufferUsages::STORAGE,
            });
        let r = rows as usize;
        let x = self.scratch("whisper decoder x", r * d as usize)?;
        let h = self.scratch("whisper decoder h", r * d as usize)?;
        let q = self.scratch("whisper decoder q", r * d as usize)?;
        let o = self.scratch("whisper decoder o", r * d as usize)?;
        let s = self.scratch(
            "whisper decoder scores",
            (heads * rows * len.max(frames)) as usize,
        )?;
        let f = self.scratch("whisper decoder mlp", r * 4 * d as usize)?;
        let logits_rows = slots + u32::from(first);
        let logits = self.scratch("whisper logits", (logits_rows * vocab) as usize)?;
        let mut rec = self.recorder();
        rec.dispatch(
            self.kernels
                .embed_half
                .as_ref()
                .unwrap_or(&self.kernels.embed),
            &[rows, d, n, past],
            &[&ids, &self.token_embedding, &self.text_positions, &x],
            ((rows * d).div_ceil(256), 1, 1),
        );
        let alpha = (dh as f32).powf(-0.5);
        for (i, (b, (kc, vc))) in self.decoder.iter().zip(&pass.cache).enumerate() {
            // Self-attention: the new keys and values go into each slot's cache at `past`.
            rec.layer_norm(&b.attn_ln, &x, rows, d, &h);
            rec.linear(&b.attn.query, &h, rows, &q, 0);
            for (lin, cache) in [(&b.attn.key, kc), (&b.attn.value, vc)] {
                rec.product(&Product {
                    m: n,
                    n: d,
                    k: d,
                    batches: slots,
                    z_div: 1,
                    alpha: 1.0,
                    flags: 0,
                    a: (
                        &h,
                        Layout {
                            z_outer: n * d,
                            ..Layout::rows(0, d)
                        },
                    ),
                    b: (&lin.weight, Layout::rows(0, d)),
                    c: (
                        cache,
                        Layout {
                            z_outer: ctx * d,
                            ..Layout::rows(past * d, d)
                        },
                    ),
                    bias: lin.bias.as_ref(),
                    extra: None,
                    conv: None,
                    weight: true,
                });
            }
            // Scores (slot, head, new token, position), causal among the new tokens.
            rec.product(&Product {
                m: n,
                n: len,
                k: dh,
                batches: slots * heads,
                z_div: heads,
                alpha,
                flags: 0,
                a: (
                    &q,
                    Layout {
                        z_outer: n * d,
                        z_inner: dh,
                        ..Layout::rows(0, d)
                    },
                ),
                b: (
                    kc,
                    Layout {
                        z_outer: ctx * d,
                        z_inner: dh,
                        ..Layout::rows(0, d)
                    },
                ),
                c: (
                    &s,
                    Layout {
                        z_outer: heads * n * len,
                        z_inner: n * len,
                        ..Layout::rows(0, len)
                    },
                ),
                bias: None,
                extra: None,
                conv: None,
                weight: false,
            });
            rec.softmax(&s, slots * heads * n, len, Some((past, n)));
            rec.product(&Product {
                m: n,
                n: dh,
                k: len,
                batches: slots * heads,
                z_div: heads,
                alpha: 1.0,
                flags: 0,
                a: (
                    &s,
                    Layout {
                        z_outer: heads * n * len,
                        z_inner: n * len,
                        ..Layout::rows(0, len)
                    },
                ),
                b: (
                    vc,
                    Layout {
                        off: 0,
                        s_row: 1,
                        s_col: d,
                        z_outer: ctx * d,
                        z_inner: dh,
                    },
                ),
                c: (
                    &o,
                    Layout {
                        z_outer: n * d,
                        z_inner: dh,
                        ..Layout::rows(0, d)
                    },
                ),
                bias: None,
                extra: None,
                conv: None,
                weight: false,
            });
            rec.linear(&b.attn.out, &o, rows, &x, ACCUMULATE);

            // Cross-attention: every row attends to the window's keys and values.
            let (ck, cv) = &pass.attended.layers[i];
            rec.layer_norm(&b.cross_ln, &x, rows, d, &h);
            rec.linear(&b.cross.query, &h, rows, &q, 0);
            cross_attention(&mut rec, &q, ck, cv, &s, &o, rows, frames, d, heads, alpha);
            rec.linear(&b.cross.out, &o, rows, &x, ACCUMULATE);

            rec.layer_norm(&b.mlp_ln, &x, rows, d, &h);
            rec.linear(&b.fc1, &h, rows, &f, GELU);
            rec.linear(&b.fc2, &f, rows, &x, ACCUMULATE);
        }
        rec.layer_norm(&self.decoder_ln, &x, rows, d, &h);
        // Logits of each slot's last new row, then (when asked) of the first live
        // candidate's first new row.
        let logit = |rec: &mut Recorder<'_>, m: u32, a: Layout, c_off: u32| {
            rec.product(&Product {
                m,
                n: vocab,
                k: d,
                batches: 1,
                z_div: 1,
                alpha: 1.0,
                flags: 0,
                a: (&h, a),
                b: (&self.token_embedding, Layout::rows(0, d)),
                c: (&logits, Layout::rows(c_off, vocab)),
                bias: None,
                extra: None,
                conv: None,
                weight: true,
            });
        };
        logit(&mut rec, slots, Layout::rows((n - 1) * d, n * d), 0);
        if first {
            let slot = pass.live[0];
            logit(&mut rec, 1, Layout::rows(slot * n * d, d), slots * vocab);
        }
        let v = vocab as usize;
        let mut reads: Vec<(&wgpu::Buffer, usize, usize)> = pass
            .live
            .iter()
            .map(|&slot| (&logits, slot as usize * v, v))
            .collect();
        if first {
            reads.push((&logits, slots as usize * v, v));
        }
        let mut out = self.finish(rec, &reads)?;
        pass.len = len;
        let first = if first { out.pop() } else { None };
        Ok(StepLogits { first, last: out })
    }
}

/// Multi-head self-attention over `t` positions: scores `(heads, t, t)` into `s`, softmax,
/// and the heads' outputs side by side into `o` (`(t, d)`).
#[allow(clippy::too_many_arguments)]
fn self_attention(
    rec: &mut Recorder<'_>,
    q: &wgpu::Buffer,
    k: &wgpu::Buffer,
    v: &wgpu::Buffer,
    s: &wgpu::Buffer,
    o: &wgpu::Buffer,
    t: u32,
    d: u32,
    heads: u32,
    alpha: f32,
) {
    cross_attention(rec, q, k, v, s, o, t, t, d, heads, alpha);
}

/// Multi-head attention of `rows` queries over `frames` keys and values (all `(·, d)`).
#[allow(clippy::too_many_arguments)]
fn cross_attention(
    rec: &mut Recorder<'_>,
    q: &wgpu::Buffer,
    k: &wgpu::Buffer,
    v: &wgpu::Buffer,
    s: &wgpu::Buffer,
    o: &wgpu::Buffer,
    rows: u32,
    frames: u32,
    d: u32,
    heads: u32,
    alpha: f32,
) {
    let dh = d / heads;
    let per_head = |s_row: u32| Layout {
        z_inner: dh,
        ..Layout::rows(0, s_row)
    };
    let scores = Layout {
        z_inner: rows * frames,
        ..Layout::rows(0, frames)
    };
    rec.product(&Product {
        m: rows,
        n: frames,
        k: dh,
        batches: heads,
        z_div: heads,
        alpha,
        flags: 0,
        a: (q, per_head(d)),
        b: (k, per_head(d)),
        c: (s, scores),
        bias: None,
        extra: None,
        conv: None,
        weight: false,
    });
    rec.softmax(s, heads * rows, frames, None);
    rec.product(&Product {
        m: rows,
        n: dh,
        k: frames,
        batches: heads,
        z_div: heads,
        alpha: 1.0,
        flags: 0,
        a: (s, scores),
        b: (
            v,
            Layout {
                off: 0,
                s_row: 1,
                s_col: d,
                z_outer: 0,
                z_inner: dh,
            },
        ),
        c: (o, per_head(d)),
        bias: None,
        extra: None,
        conv: None,
        weight: false,
    });
}

struct Uploader<'a> {
    device: &'a wgpu::Device,
    weights: &'a dyn Fn(&str) -> Result<Tensor, String>,
    max_binding: u64,
    /// Weights (not biases, norms or positions) in f16.
    half: bool,
}

impl Uploader<'_> {
    fn buffer(&self, label: &str, values: &[f32]) -> Result<wgpu::Buffer, Error> {
        self.bytes(label, bytemuck::cast_slice(values))
    }

    fn bytes(&self, label: &str, bytes: &[u8]) -> Result<wgpu::Buffer, Error> {
        let size = bytes.len() as u64;
        if size > self.max_binding {
            return Err(Error::Device(format!(
                "{label} needs {size} bytes; the device binds at most {}",
                self.max_binding
            )));
        }
        Ok(self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage: wgpu::BufferUsages::STORAGE,
            }))
    }

    /// A tensor of exactly `shape` (a convolution's `(out, in, 3)` is read as `(out, in·3)`),
    /// finite, in f32.
    fn values(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, Error> {
        let (got, values) = (self.weights)(name).map_err(Error::Weight)?;
        let want: usize = shape.iter().product();
        let have: usize = got.iter().product();
        if want != have || values.len() != want || got.first() != shape.first() {
            return Err(Error::Weight(format!(
                "{name} is {got:?}, expected {shape:?}"
            )));
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(Error::Weight(format!(
                "{name} holds a value that is not finite"
            )));
        }
        Ok(values)
    }

    /// A bias, norm or position table: always f32.
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<wgpu::Buffer, Error> {
        self.buffer(name, &self.values(name, shape)?)
    }

    /// A weight read as a product's B: f16 when the model is held so.
    fn weight(&self, name: &str, shape: &[usize]) -> Result<wgpu::Buffer, Error> {
        let values = self.values(name, shape)?;
        if !self.half {
            return self.buffer(name, &values);
        }
        let mut halves: Vec<u16> = values
            .iter()
            .map(|&v| half::f16::from_f32(v).to_bits())
            .collect();
        // Storage buffers are read in 4-byte words.
        if halves.len() % 2 == 1 {
            halves.push(0);
        }
        self.bytes(name, bytemuck::cast_slice(&halves))
    }

    fn linear(&self, name: &str, out: usize, inp: usize, bias: bool) -> Result<Linear, Error> {
        Ok(Linear {
            weight: self.weight(&format!("{name}.weight"), &[out, inp])?,
            bias: bias
                .then(|| self.tensor(&format!("{name}.bias"), &[out]))
                .transpose()?,
            out: out as u32,
            inp: inp as u32,
        })
    }

    fn conv(&self, name: &str, out: usize, inp: usize) -> Result<Linear, Error> {
        Ok(Linear {
            weight: self.weight(&format!("{name}.weight"), &[out, inp, 3])?,
            bias: Some(self.tensor(&format!("{name}.bias"), &[out])?),
            out: out as u32,
            inp: (inp * 3) as u32,
        })
    }

    fn norm(&self, name: &str, d: usize) -> Result<Norm, Error> {
        Ok(Norm {
            gamma: self.tensor(&format!("{name}.weight"), &[d])?,
            beta: self.tensor(&format!("{name}.bias"), &[d])?,
        })
    }

    fn attention(&self, name: &str, d: usize) -> Result<Attention, Error> {
        Ok(Attention {
            query: self.linear(&format!("{name}.q_proj"), d, d, true)?,
            key: self.linear(&format!("{name}.k_proj"), d, d, false)?,
            value: self.linear(&format!("{name}.v_proj"), d, d, true)?,
            out: self.linear(&format!("{name}.out_proj"), d, d, true)?,
        })
    }
}

/// `src` with the storage array `declaration` holds f16 instead of f32.
fn as_half(src: &str, declaration: &str) -> String {
    format!(
        "enable f16;\n{}",
        src.replace(
            declaration,
            &declaration.replace("array<f32>", "array<f16>")
        )
    )
}

fn kernel(device: &wgpu::Device, src: &str, entry: &str, buffers: usize) -> Result<Kernel, Error> {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(entry),
        source: wgpu::ShaderSource::Wgsl(src.into()),
    });
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
    // The last buffer is the one written; the others are read.
    entries.extend((0..buffers).map(|i| wgpu::BindGroupLayoutEntry {
        binding: i as u32 + 1,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage {
                read_only: i + 1 < buffers,
            },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }));
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
        module: &module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions::default(),
        cache: None,
    });
    Ok(Kernel { pipeline, layout })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn sinusoids_are_sine_then_cosine() {
        let s = sinusoids(3, 4);
        // Position 0: sin 0 = 0, cos 0 = 1.
        assert_eq!(&s[0..4], &[0.0, 0.0, 1.0, 1.0]);
        // Position 2, first channel: sin(2 · 1).
        assert!((s[8] - 2f32.sin()).abs() < 1e-6);
        // Second channel's timescale is 1/10000 when half = 2.
        assert!((s[9] - (2.0f32 / 10_000.0).sin()).abs() < 1e-6);
    }

    const DIMS: Dims = Dims {
        n_mels: 3,
        n_state: 8,
        audio_ctx: 40,
        audio_heads: 2,
        audio_layers: 2,
        text_ctx: 9,
        text_heads: 2,
        text_layers: 2,
        vocab: 70,
    };

    fn weights() -> HashMap<String, Tensor> {
        synthetic::weights(&DIMS, 12_345, 1.0)
    }

    // The reference, written plainly: matrices as Vec<Vec<f32>> rows.
    type M = Vec<Vec<f32>>;

    fn w(ws: &HashMap<String, Tensor>, name: &str) -> Vec<f32> {
        ws[name].1.clone()
    }

    fn linear(ws: &HashMap<String, Tensor>, name: &str, x: &M) -> M {
        let wt = w(ws, &format!("{name}.weight"));
        let bias = ws.get(&format!("{name}.bias")).map(|t| t.1.clone());
        let inp = x[0].len();
        let out = wt.len() / inp;
        x.iter()
            .map(|row| {
                (0..out)
                    .map(|o| {
                        let dot: f32 = (0..inp).map(|k| row[k] * wt[o * inp + k]).sum();
                        dot + bias.as_ref().map_or(0.0, |b| b[o])
                    })
                    .collect()
            })
            .collect()
    }

    fn layer_norm(ws: &HashMap<String, Tensor>, name: &str, x: &M) -> M {
        let (g, b) = (
            w(ws, &format!("{name}.weight")),
            w(ws, &format!("{name}.bias")),
        );
        x.iter()
            .map(|row| {
                let n = row.len() as f32;
                let mean = row.iter().sum::<f32>() / n;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
                row.iter()
                    .enumerate()
                    .map(|(j, v)| (v - mean) / (var + 1e-5).sqrt() * g[j] + b[j])
                    .collect()
            })
            .collect()
    }

    fn gelu(x: f32) -> f32 {
        0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044715 * x * x * x)).tanh())
    }

    /// Attention of `q` rows over `k`/`v` rows; row i sees keys up to `limit(i)`.
    fn attention(q: &M, k: &M, v: &M, heads: usize, limit: &dyn Fn(usize) -> usize) -> M {
        let d = q[0].len();
        let dh = d / heads;
        let mut out = vec![vec![0f32; d]; q.len()];
        for h in 0..heads {
            for (i, qi) in q.iter().enumerate() {
                let n = limit(i);
                let s: Vec<f32> = (0..n)
                    .map(|j| {
                        (0..dh)
                            .map(|c| qi[h * dh + c] * k[j][h * dh + c])
                            .sum::<f32>()
                            / (dh as f32).sqrt()
                    })
                    .collect();
                let top = s.iter().copied().fold(f32::MIN, f32::max);
                let e: Vec<f32> = s.iter().map(|x| (x - top).exp()).collect();
                let z: f32 = e.iter().sum();
                for c in 0..dh {
                    out[i][h * dh + c] = (0..n).map(|j| e[j] / z * v[j][h * dh + c]).sum();
                }
            }
        }
        out
    }

    fn add(x: &mut M, y: &M) {
        for (a, b) in x.iter_mut().zip(y) {
            for (p, q) in a.iter_mut().zip(b) {
                *p += q;
            }
        }
    }

    fn mlp(ws: &HashMap<String, Tensor>, p: &str, x: &mut M) {
        let h = layer_norm(ws, &format!("{p}.final_layer_norm"), x);
        let mut f = linear(ws, &format!("{p}.fc1"), &h);
        f.iter_mut().flatten().for_each(|v| *v = gelu(*v));
        let y = linear(ws, &format!("{p}.fc2"), &f);
        add(x, &y);
    }

    fn encode_reference(ws: &HashMap<String, Tensor>, mel: &[f32], frames: usize) -> M {
        let d = DIMS.n_state;
        let conv = |name: &str,
                    x: &dyn Fn(usize, usize) -> f32,
                    c_in: usize,
                    t_in: usize,
                    stride: usize|
         -> M {
            let wt = w(ws, &format!("{name}.weight"));
            let b = w(ws, &format!("{name}.bias"));
            (0..t_in / stride)
                .map(|t| {
                    (0..d)
                        .map(|o| {
                            let mut acc = b[o];
                            for c in 0..c_in {
                                for k in 0..3 {
                                    let ti = (t * stride + k) as i64 - 1;
                                    if ti >= 0 && (ti as usize) < t_in {
                                        acc += wt[(o * c_in + c) * 3 + k] * x(c, ti as usize);
                                    }
                                }
                            }
                            gelu(acc)
                        })
                        .collect()
                })
                .collect()
        };
        let h1 = conv(
            "model.encoder.conv1",
            &|c, t| mel[c * frames + t],
            DIMS.n_mels,
            frames,
            1,
        );
        let mut x = conv("model.encoder.conv2", &|c, t| h1[t][c], d, frames, 2);
        let pos = sinusoids(DIMS.audio_ctx, d);
        for (t, row) in x.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v += pos[t * d + j];
            }
        }
        for i in 0..DIMS.audio_layers {
            let p = format!("model.encoder.layers.{i}");
            let h = layer_norm(ws, &format!("{p}.self_attn_layer_norm"), &x);
            let q = linear(ws, &format!("{p}.self_attn.q_proj"), &h);
            let k = linear(ws, &format!("{p}.self_attn.k_proj"), &h);
            let v = linear(ws, &format!("{p}.self_attn.v_proj"), &h);
            let n = x.len();
            let a = attention(&q, &k, &v, DIMS.audio_heads, &|_| n);
            let o = linear(ws, &format!("{p}.self_attn.out_proj"), &a);
            add(&mut x, &o);
            mlp(ws, &p, &mut x);
        }
        layer_norm(ws, "model.encoder.layer_norm", &x)
    }

    /// Logits of every position of `tokens`, recomputed from scratch (no cache).
    fn decode_reference(ws: &HashMap<String, Tensor>, enc: &M, tokens: &[u32]) -> M {
        let d = DIMS.n_state;
        let (e, p) = (
            w(ws, "model.decoder.embed_tokens.weight"),
            w(ws, "model.decoder.embed_positions.weight"),
        );
        let mut x: M = tokens
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                (0..d)
                    .map(|j| e[t as usize * d + j] + p[i * d + j])
                    .collect()
            })
            .collect();
        for i in 0..DIMS.text_layers {
            let pre = format!("model.decoder.layers.{i}");
            let h = layer_norm(ws, &format!("{pre}.self_attn_layer_norm"), &x);
            let q = linear(ws, &format!("{pre}.self_attn.q_proj"), &h);
            let k = linear(ws, &format!("{pre}.self_attn.k_proj"), &h);
            let v = linear(ws, &format!("{pre}.self_attn.v_proj"), &h);
            let a = attention(&q, &k, &v, DIMS.text_heads, &|i| i + 1);
            add(
                &mut x,
                &linear(ws, &format!("{pre}.self_attn.out_proj"), &a),
            );
            let h = layer_norm(ws, &format!("{pre}.encoder_attn_layer_norm"), &x);
            let q = linear(ws, &format!("{pre}.encoder_attn.q_proj"), &h);
            let k = linear(ws, &format!("{pre}.encoder_attn.k_proj"), enc);
            let v = linear(ws, &format!("{pre}.encoder_attn.v_proj"), enc);
            let n = enc.len();
            let a = attention(&q, &k, &v, DIMS.text_heads, &|_| n);
            add(
                &mut x,
                &linear(ws, &format!("{pre}.encoder_attn.out_proj"), &a),
            );
            mlp(ws, &pre, &mut x);
        }
        let x = layer_norm(ws, "model.decoder.layer_norm", &x);
        x.iter()
            .map(|row| {
                (0..DIMS.vocab)
                    .map(|t| (0..d).map(|j| row[j] * e[t * d + j]).sum())
                    .collect()
            })
            .collect()
    }

    fn close(a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    fn device(features: wgpu::Features) -> Option<(wgpu::Device, wgpu::Queue)> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
        let adapter =
            pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
                .ok()?;
        let features = features & adapter.features();
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            required_features: features,
            ..Default::default()
        }))
        .ok()
    }

    /// The weights the device holds in f16, rounded through f16, so the plain reference
    /// computes with exactly the values the kernels read.
    fn rounded(ws: &HashMap<String, Tensor>) -> HashMap<String, Tensor> {
        ws.iter()
            .map(|(name, (shape, values))| {
                let is_weight = name.ends_with(".weight")
                    && !name.contains("layer_norm")
                    && !name.contains("embed_positions");
                let values = if is_weight {
                    values
                        .iter()
                        .map(|&v| half::f16::from_f32(v).to_f32())
                        .collect()
                } else {
                    values.clone()
                };
                (name.clone(), (shape.clone(), values))
            })
            .collect()
    }

    /// The kernels against the plain reference above on a small random network: every stride,
    /// head split, causal mask, cache slot and the slot kept after a candidate ends. Random
    /// weights of order 1 keep the values of order 1, so 1e-4 is rounding and a wrong index
    /// is not.
    #[test]
    fn kernels_compute_the_reference_network() {
        let (device, queue) = device(wgpu::Features::empty())
            .expect("no wgpu adapter: install mesa-vulkan-drivers (lavapipe)");
        let ws = weights();
        check(device, queue, &ws, &ws, Precision::F32);
    }

    /// The same with the weights held in f16 (lavapipe has shader-f16), against the reference
    /// on the same rounded weights: the sums are f32 on both sides, so the bound is unchanged.
    #[test]
    fn kernels_with_f16_weights_compute_the_reference_network() {
        let (device, queue) = device(wgpu::Features::SHADER_F16)
            .expect("no wgpu adapter: install mesa-vulkan-drivers (lavapipe)");
        assert!(
            device.features().contains(wgpu::Features::SHADER_F16),
            "the adapter has no shader-f16"
        );
        let ws = weights();
        check(device, queue, &ws, &rounded(&ws), Precision::F16);
    }

    fn check(
        device: wgpu::Device,
        queue: wgpu::Queue,
        uploaded: &HashMap<String, Tensor>,
        ws: &HashMap<String, Tensor>,
        precision: Precision,
    ) {
        let lookup = |name: &str| {
            uploaded
                .get(name)
                .cloned()
                .ok_or_else(|| format!("{name} missing"))
        };
        let whisper = DeviceWhisper::with_precision(device, queue, DIMS, &lookup, precision)
            .expect("uploads");
        assert_eq!(whisper.precision(), precision);
        // 80 frames: 40 positions, more than the skinny product's rows, so both products run.
        let frames = 80;
        let mel: Vec<f32> = (0..DIMS.n_mels * frames)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0)
            .collect();
        let encoded = whisper.encode(&mel, frames).expect("encodes");
        let reference = encode_reference(ws, &mel, frames);
        let on_device = whisper.read_encoded(&encoded).expect("reads");
        let flat: Vec<f32> = reference.iter().flatten().copied().collect();
        assert!(close(&flat, &on_device) < 1e-4, "{flat:?}\n{on_device:?}");

        let attended = whisper.attend(&encoded).expect("attends");
        let mut pass = whisper.pass(&attended, 2).expect("pass");
        // Both candidates share a five-token prompt (ten rows: the tiled product).
        let prompt = [1, 2, 6, 7, 8];
        let fed: Vec<u32> = prompt.iter().chain(&prompt).copied().collect();
        let step = whisper.feed(&mut pass, &fed, true).expect("prompt");
        let want = decode_reference(ws, &reference, &prompt);
        let d0 = close(step.first.as_ref().expect("first"), &want[0]);
        assert!(d0 < 1e-4, "{d0} {:?} {:?}", step.first, want[0]);
        assert_eq!(step.last.len(), 2);
        for last in &step.last {
            assert!(close(last, &want[4]) < 1e-4);
        }
        // Then they part (one row each: the skinny product).
        let step = whisper.feed(&mut pass, &[3, 4], false).expect("step");
        let with = |t: &[u32]| -> Vec<u32> { prompt.iter().chain(t).copied().collect() };
        assert!(
            close(
                &step.last[0],
                &decode_reference(ws, &reference, &with(&[3]))[5]
            ) < 1e-4
        );
        assert!(
            close(
                &step.last[1],
                &decode_reference(ws, &reference, &with(&[4]))[5]
            ) < 1e-4
        );
        // The first ends; the second goes on from its own cache.
        pass.retain(&[1]).expect("retain");
        let step = whisper.feed(&mut pass, &[5], false).expect("step");
        assert_eq!(step.last.len(), 1);
        let want = decode_reference(ws, &reference, &with(&[4, 5]));
        assert!(close(&step.last[0], &want[6]) < 1e-4);
        // Past the text context, and a token outside the vocabulary, are refused.
        assert!(whisper.feed(&mut pass, &[1, 1, 1], false).is_err());
        assert!(whisper.feed(&mut pass, &[999], false).is_err());
    }
}
