//! The cortex video: the drawn surface ([`super::cortex::Panel`]) coloured by each second's
//! seven predicted network values, ten frames a second (linear between seconds), above a strip
//! with the lens curves and a playhead, encoded by ffmpeg to H.264 MP4, plus a poster PNG.
//!
//! - **One colour scale for every clip**: z from −[`Z_MAX`] (blue) through 0 (light grey) to
//!   +[`Z_MAX`] (red), so the same colour means the same predicted value in any two videos. A
//!   per-clip scale would make a quiet clip look as lively as a loud one.
//! - **The caption says what the colours are**: model predictions, not measured activity.
//! - **Bounded memory and time**: frames are made one at a time on a blocking thread and
//!   streamed to ffmpeg through a channel of a few frames; ffmpeg's stderr is drained into a
//!   bounded buffer; the whole render has a deadline, after which ffmpeg is killed.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use tokio::io::AsyncWriteExt as _;

use super::cortex::{BACKGROUND, PANEL_H, PANEL_W, Panel};
use super::gpu_frames::{ClipFrames, FrameKernel};
use super::surface::NO_NETWORK;
use crate::inference::gpu::GpuContext;
use crate::result::StoredSecond;

/// Frames per second of the video (the issue asks at least 10).
pub const FPS: u32 = 10;
/// Where the colour scale saturates, in the networks' z units.
pub const Z_MAX: f64 = 3.0;
/// Frame size: the 2 x 2 views, then the strip.
pub const WIDTH: u32 = PANEL_W;
pub const STRIP_H: u32 = 120;
pub const HEIGHT: u32 = PANEL_H + STRIP_H;
/// What the caption says, on every frame.
pub const CAPTION: &str = "Colours: qualia MODEL PREDICTIONS (z), not measured activity";
/// Each view's label, in the panel's 2 x 2 order.
const VIEW_LABELS: [&str; 4] = [
    "left lateral",
    "right lateral",
    "left medial",
    "right medial",
];

const NEUTRAL: [f64; 3] = [232.0, 232.0, 232.0];
const LOW: [f64; 3] = [33.0, 102.0, 172.0];
const HIGH: [f64; 3] = [178.0, 24.0, 43.0];
const UNLABELLED: [f64; 3] = [110.0, 110.0, 110.0];
const BACKDROP: [u8; 3] = [18, 18, 22];
pub(super) const INK: [u8; 3] = [220, 220, 220];
const LENS_COLOURS: [[u8; 3]; 6] = [
    [255, 196, 61],
    [86, 204, 242],
    [111, 207, 151],
    [255, 121, 198],
    [187, 134, 252],
    [255, 145, 77],
];

/// The colour of a predicted value on the fixed diverging scale.
#[must_use]
pub fn colour(z: f64) -> [u8; 3] {
    let z = if z.is_finite() { z } else { 0.0 };
    let t = (z.abs() / Z_MAX).min(1.0);
    let end = if z >= 0.0 { HIGH } else { LOW };
    std::array::from_fn(|k| (NEUTRAL[k] + (end[k] - NEUTRAL[k]) * t).round() as u8)
}

/// The seven values at time `t` seconds: linear between the values of whole seconds.
pub(super) fn values_at(timeline: &[StoredSecond], t: f64) -> [f64; 7] {
    let last = timeline.len().saturating_sub(1);
    let i = (t.floor().max(0.0) as usize).min(last);
    let j = (i + 1).min(last);
    let f = (t - i as f64).clamp(0.0, 1.0);
    std::array::from_fn(|k| timeline[i].raw[k] * (1.0 - f) + timeline[j].raw[k] * f)
}

/// Writes `text` in the 8 x 8 font with its top-left corner at (x, y); clipped to the frame.
pub(super) fn text(frame: &mut [u8], x: u32, y: u32, s: &str, ink: [u8; 3]) {
    for (i, ch) in s.chars().enumerate() {
        let glyph = font8x8::legacy::BASIC_LEGACY
            .get(ch as usize)
            .copied()
            .unwrap_or([0; 8]);
        for (row, bits) in glyph.iter().enumerate() {
            for col in 0..8u32 {
                if bits & (1 << col) != 0 {
                    put(frame, x + i as u32 * 8 + col, y + row as u32, ink);
                }
            }
        }
    }
}

fn put(frame: &mut [u8], x: u32, y: u32, c: [u8; 3]) {
    if x < WIDTH && y < HEIGHT {
        let i = ((y * WIDTH + x) * 3) as usize;
        frame[i..i + 3].copy_from_slice(&c);
    }
}

/// The plot area of the lens strip: x0, width, y top, height.
pub(super) const PLOT: (u32, u32, u32, u32) = (8, WIDTH - 16, PANEL_H + 30, STRIP_H - 36);

/// Everything that does not change from frame to frame: the strip's curves, legend and
/// caption, drawn once per clip.
pub(super) fn strip_base(timeline: &[StoredSecond], lenses: &[String]) -> Vec<u8> {
    let mut strip = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    for px in strip.chunks_exact_mut(3) {
        px.copy_from_slice(&BACKDROP);
    }
    text(&mut strip, 8, PANEL_H + 4, CAPTION, INK);
    // The colour bar, right of the legend: −3 … +3.
    let bar_x = WIDTH - 8 - 16 - 4 - 120;
    for i in 0..120u32 {
        let z = (f64::from(i) / 119.0 * 2.0 - 1.0) * Z_MAX;
        for y in PANEL_H + 17..PANEL_H + 25 {
            put(&mut strip, bar_x + i, y, colour(z));
        }
    }
    text(&mut strip, bar_x - 20, PANEL_H + 17, "-3", INK);
    text(&mut strip, bar_x + 124, PANEL_H + 17, "+3", INK);
    let mut x = 8;
    for (k, lens) in lenses.iter().enumerate() {
        let c = LENS_COLOURS[k % LENS_COLOURS.len()];
        text(&mut strip, x, PANEL_H + 17, lens, c);
        x += (lens.len() as u32 + 2) * 8;
    }
    let (x0, w, top, h) = PLOT;
    // Grid: 0, 50 and 100.
    for score in [0.0, 50.0, 100.0] {
        let y = top + h - 1 - ((score / 100.0) * f64::from(h - 1)).round() as u32;
        for x in x0..x0 + w {
            put(&mut strip, x, y, [60, 60, 66]);
        }
    }
    let n = timeline.len().max(1);
    for (k, lens) in lenses.iter().enumerate() {
        let c = LENS_COLOURS[k % LENS_COLOURS.len()];
        let y_of = |s: &StoredSecond| {
            s.scores.get(lens).map(|v| {
                top + h - 1 - ((v.clamp(0.0, 100.0) / 100.0) * f64::from(h - 1)).round() as u32
            })
        };
        let mut prev: Option<u32> = None;
        for px in 0..w {
            let t = f64::from(px) / f64::from(w) * n as f64;
            let s = &timeline[(t as usize).min(n - 1)];
            let Some(y) = y_of(s) else {
                prev = None;
                continue;
            };
            // A vertical run joins this column to the last, so steep changes stay continuous.
            let (a, b) = prev.map_or((y, y), |p| (p.min(y), p.max(y)));
            for yy in a..=b {
                put(&mut strip, x0 + px, yy, c);
            }
            prev = Some(y);
        }
    }
    strip
}

/// What changes from one frame to the next: the nine slot colours (seven networks, then
/// unlabelled cortex and the backdrop), the playhead's column and the clock's text. The CPU
/// frames and the device frames ([`super::gpu_frames`]) both read it, so they cannot drift.
pub(super) struct FrameState {
    pub colours: [[u8; 3]; 9],
    pub playhead_x: u32,
    pub clock: String,
}

/// The rows the playhead covers, and the clock's top-left corner given its length.
pub(super) const PLAYHEAD_ROWS: (u32, u32) = (PLOT.2 - 2, PLOT.2 + PLOT.3 + 2);
pub(super) const CLOCK_Y: u32 = PANEL_H + 4;

pub(super) fn clock_x(clock: &str) -> u32 {
    WIDTH - 8 - clock.len() as u32 * 8
}

/// The colour of slot 7 (cortex without a network) and slot 8 (the backdrop).
pub(super) const UNLABELLED_SLOT: usize = 7;
pub(super) const BACKDROP_SLOT: usize = 8;

/// Frame `index`'s [`FrameState`].
pub(super) fn frame_state(timeline: &[StoredSecond], index: u32) -> FrameState {
    let t = f64::from(index) / f64::from(FPS);
    let values = values_at(timeline, t);
    let colours = std::array::from_fn(|slot| match slot {
        0..7 => colour(values[slot]),
        UNLABELLED_SLOT => UNLABELLED.map(|c| c as u8),
        _ => BACKDROP,
    });
    let (x0, w, _, _) = PLOT;
    let n = timeline.len().max(1) as f64;
    let playhead_x = x0 + ((t / n) * f64::from(w)).round().min(f64::from(w - 1)) as u32;
    FrameState {
        colours,
        playhead_x,
        clock: format!("t = {t:5.1} s"),
    }
}

/// The slot of a panel pixel (see [`FrameState::colours`]).
pub(super) fn slot_of(network: u8) -> usize {
    match network {
        BACKGROUND => BACKDROP_SLOT,
        n if n == NO_NETWORK => UNLABELLED_SLOT,
        n => usize::from(n.min(6)),
    }
}

/// Writes each view's label onto `frame`.
pub(super) fn view_labels(frame: &mut [u8]) {
    for (k, label) in VIEW_LABELS.iter().enumerate() {
        let (col, row) = (k as u32 % 2, k as u32 / 2);
        text(
            frame,
            col * PANEL_W / 2 + 6,
            row * PANEL_H / 2 + 6,
            label,
            VIEW_LABEL_INK,
        );
    }
}

const VIEW_LABEL_INK: [u8; 3] = [150, 150, 160];
pub(super) const PLAYHEAD: [u8; 3] = [255, 255, 255];

/// Frame `index` (time `index / FPS`): the panel coloured by that moment's values over the
/// strip, with the playhead and the time.
fn frame(panel: &Panel, timeline: &[StoredSecond], base: &[u8], index: u32) -> Vec<u8> {
    let state = frame_state(timeline, index);
    // A table per frame: for each of the nine slots, the colour at each of 256 shades. Each
    // pixel is then a lookup.
    let mut lut = vec![0u8; 9 * 256 * 3];
    for (slot, base_colour) in state.colours.iter().enumerate() {
        for shade in 0..256usize {
            let s = if slot == BACKDROP_SLOT {
                1.0
            } else {
                shade as f64 / 255.0
            };
            for k in 0..3 {
                lut[(slot * 256 + shade) * 3 + k] = (f64::from(base_colour[k]) * s).round() as u8;
            }
        }
    }
    let mut out = base.to_vec();
    for (i, (&net, &shade)) in panel.network.iter().zip(&panel.shade).enumerate() {
        let l = (slot_of(net) * 256 + usize::from(shade)) * 3;
        out[i * 3..i * 3 + 3].copy_from_slice(&lut[l..l + 3]);
    }
    view_labels(&mut out);
    for y in PLAYHEAD_ROWS.0..PLAYHEAD_ROWS.1 {
        put(&mut out, state.playhead_x, y, PLAYHEAD);
    }
    text(&mut out, clock_x(&state.clock), CLOCK_Y, &state.clock, INK);
    out
}

/// A frame's RGB24 as YUV 4:2:0 (BT.601, limited range; each chroma sample the mean of its
/// 2 x 2 pixels), in integer arithmetic: what the device's frames are, byte for byte (the
/// parity test compares them). `width` and `height` even.
#[must_use]
pub fn yuv420(rgb: &[u8], width: usize, height: usize) -> Vec<u8> {
    let plane = width * height;
    let mut out = vec![0u8; plane * 3 / 2];
    let px = |x: usize, y: usize| {
        let i = (y * width + x) * 3;
        [
            i32::from(rgb[i]),
            i32::from(rgb[i + 1]),
            i32::from(rgb[i + 2]),
        ]
    };
    for y in 0..height {
        for x in 0..width {
            let [r, g, b] = px(x, y);
            out[y * width + x] = (((66 * r + 129 * g + 25 * b + 128) >> 8) + 16) as u8;
        }
    }
    for cy in 0..height / 2 {
        for cx in 0..width / 2 {
            let mut m = [2i32; 3];
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let p = px(cx * 2 + dx, cy * 2 + dy);
                for k in 0..3 {
                    m[k] += p[k];
                }
            }
            let [r, g, b] = m.map(|v| v / 4);
            let i = cy * (width / 2) + cx;
            out[plane + i] = (((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128) as u8;
            out[plane + plane / 4 + i] = (((112 * r - 94 * g - 18 * b + 128) >> 8) + 128) as u8;
        }
    }
    out
}

/// The second shown on the poster: the one with the largest mean |z| over the seven
/// networks (the clip's most pronounced predicted response), the first on ties.
fn poster_second(timeline: &[StoredSecond]) -> usize {
    let strength = |s: &StoredSecond| s.raw.iter().map(|v| v.abs()).sum::<f64>();
    let mut best = 0;
    for (i, s) in timeline.iter().enumerate() {
        if strength(s) > strength(&timeline[best]) {
            best = i;
        }
    }
    best
}

/// An encoded video and its poster.
#[derive(Debug, Clone)]
pub struct Video {
    pub mp4: Vec<u8>,
    pub poster_png: Vec<u8>,
    pub frames: u32,
}

/// All frames of a clip, in order, as raw RGB24 (for tests and the encoder).
pub fn frames(
    panel: &Panel,
    timeline: &[StoredSecond],
    lenses: &[String],
) -> impl Iterator<Item = Vec<u8>> {
    let base = strip_base(timeline, lenses);
    let count = timeline.len() as u32 * FPS;
    (0..count).map(move |i| frame(panel, timeline, &base, i))
}

/// libx264's speed/size trade-off for the cortex video.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoder {
    /// An x264 preset (`ultrafast` … `veryslow`).
    pub preset: &'static str,
    /// Constant rate factor: lower is larger and closer to the frames.
    pub crf: u8,
    /// x264's threads; 0 lets x264 choose (1.5 per core).
    pub threads: u16,
}

impl Encoder {
    /// What the service uses (see `cargo bench --bench render` for the choice).
    pub const SHIPPED: Self = Self {
        preset: "veryfast",
        crf: 23,
        threads: 0,
    };
}

/// Where a clip's frames are made: on the qualia device, as YUV 4:2:0
/// ([`super::gpu_frames`]), or on the CPU, as RGB that ffmpeg converts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameMaker {
    Device,
    Cpu,
}

impl FrameMaker {
    /// The device on a real GPU; the CPU on a CPU adapter (lavapipe), where the kernel would
    /// run on the same cores as the encoder (`cargo bench --bench render` measures both).
    #[must_use]
    pub fn for_adapter(info: &wgpu::AdapterInfo) -> Self {
        if info.device_type == wgpu::DeviceType::Cpu {
            Self::Cpu
        } else {
            Self::Device
        }
    }
}

/// What [`encode`] reads frames from: the drawn panel, the device it was drawn on with the
/// frame kernel compiled there, and which of the two makes the frames.
#[derive(Debug, Clone)]
pub struct FrameSource {
    pub panel: Arc<Panel>,
    pub gpu: Arc<GpuContext>,
    pub kernel: Arc<FrameKernel>,
    pub maker: FrameMaker,
}

impl FrameSource {
    /// `timeline`'s frames on the device, its fixed layer uploaded.
    ///
    /// # Errors
    /// As [`ClipFrames::new`].
    pub fn device_clip<'a>(
        &'a self,
        timeline: &'a [StoredSecond],
        lenses: &[String],
    ) -> anyhow::Result<ClipFrames<'a>> {
        ClipFrames::new(&self.gpu, &self.kernel, &self.panel, timeline, lenses)
    }
}

/// Encodes the cortex video of `timeline` with ffmpeg (`ffmpeg` on PATH), working in
/// `work_dir`, within `deadline`.
///
/// # Errors
/// An empty timeline, ffmpeg missing or failing (with its last stderr lines), a device
/// error, or the deadline passing.
pub async fn encode(
    source: FrameSource,
    timeline: Arc<Vec<StoredSecond>>,
    lenses: Arc<Vec<String>>,
    work_dir: &Path,
    deadline: Duration,
    encoder: Encoder,
) -> anyhow::Result<Video> {
    ensure!(!timeline.is_empty(), "no seconds to render");
    let on_device = source.maker == FrameMaker::Device;
    let crf = encoder.crf.to_string();
    let threads = encoder.threads.to_string();
    let out = tempfile::Builder::new()
        .prefix("cortex-")
        .suffix(".mp4")
        .tempfile_in(work_dir)
        .context("creating the video file")?;
    let size = format!("{WIDTH}x{HEIGHT}");
    let rate = FPS.to_string();
    let input_format = if on_device { "yuv420p" } else { "rgb24" };
    let mut child = tokio::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-nostdin", "-loglevel", "error", "-y"])
        .args(["-f", "rawvideo", "-pix_fmt", input_format, "-s", &size])
        .args(["-framerate", &rate, "-i", "pipe:0"])
        .args(["-c:v", "libx264", "-preset", encoder.preset, "-crf", &crf])
        .args(["-threads", &threads, "-pix_fmt", "yuv420p"])
        // Both makers give BT.601 limited range (ffmpeg's own conversion of RGB, and
        // `yuv420`'s); say so, so that players do not guess.
        .args(["-colorspace", "smpte170m", "-color_primaries", "smpte170m"])
        .args(["-color_trc", "smpte170m", "-color_range", "tv"])
        .args(["-movflags", "+faststart", "-f", "mp4"])
        .arg(out.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting ffmpeg (Debian package `ffmpeg`)")?;
    let stderr = child.stderr.take().map(crate::media::decode::drain_stderr);
    let mut stdin = child.stdin.take().context("ffmpeg's stdin")?;

    // Frames are made on a blocking thread, a little ahead of the encoder at most: four CPU
    // frames, or two device batches. Each message is some frames' bytes and their number.
    let (tx, mut rx) =
        tokio::sync::mpsc::channel::<anyhow::Result<(Vec<u8>, u32)>>(if on_device { 2 } else { 4 });
    let (src, tl, ls) = (source.clone(), timeline.clone(), lenses.clone());
    let producer = tokio::task::spawn_blocking(move || {
        if on_device {
            let clip = match src.device_clip(&tl, &ls) {
                Ok(c) => c,
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            };
            for batch in clip.batches() {
                let failed = batch.is_err();
                if tx.blocking_send(batch).is_err() || failed {
                    break; // the encoder stopped (its error is reported there), or we did
                }
            }
        } else {
            for f in frames(&src.panel, &tl, &ls) {
                if tx.blocking_send(Ok((f, 1))).is_err() {
                    break;
                }
            }
        }
    });
    let work = async {
        let mut count = 0u32;
        while let Some(made) = rx.recv().await {
            let (bytes, n) = made?;
            stdin
                .write_all(&bytes)
                .await
                .context("writing frames to ffmpeg")?;
            count += n;
        }
        drop(stdin);
        let status = child.wait().await.context("waiting for ffmpeg")?;
        anyhow::Ok((status, count))
    };
    let outcome = tokio::time::timeout(deadline, work).await;
    producer.abort();
    let stderr_text = match stderr {
        Some(h) => h.await.unwrap_or_default(),
        None => String::new(),
    };
    let (status, count) = match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => bail!("{e:#}: {}", stderr_text.trim()),
        Err(_) => bail!("the cortex video took longer than {deadline:?}"),
    };
    ensure!(
        status.success(),
        "ffmpeg failed ({status}): {}",
        stderr_text.trim()
    );
    let mp4 = tokio::fs::read(out.path())
        .await
        .context("reading the video back")?;
    let second = poster_second(&timeline);
    let base = strip_base(&timeline, &lenses);
    let poster = frame(&source.panel, &timeline, &base, second as u32 * FPS);
    let poster_png = png_of(&poster)?;
    Ok(Video {
        mp4,
        poster_png,
        frames: count,
    })
}

fn png_of(rgb: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    {
        let mut e = png::Encoder::new(&mut buf, WIDTH, HEIGHT);
        e.set_color(png::ColorType::Rgb);
        e.set_depth(png::BitDepth::Eight);
        e.add_text_chunk("Description".into(), CAPTION.into())?;
        let mut w = e.write_header()?;
        w.write_image_data(rgb)?;
    }
    Ok(buf)
}

/// The cortex video maker of one process: the surface drawn once on the GPU (the views never
/// change), the frame kernel compiled once, then any number of clips coloured and encoded.
#[derive(Debug, Clone)]
pub struct CortexVideo {
    source: FrameSource,
}

impl CortexVideo {
    /// Loads the surfaces from the models folder and draws them on `gpu`; frames are made
    /// where [`FrameMaker::for_adapter`] says.
    ///
    /// # Errors
    /// Missing or malformed surface files, or a GPU error.
    pub fn new(gpu: &Arc<GpuContext>, models_dir: &Path) -> anyhow::Result<Self> {
        let cortex = super::surface::Cortex::load(&super::surface::Cortex::dir_in(models_dir))?;
        let panel = Arc::new(super::cortex::draw(gpu, &cortex)?);
        let kernel = Arc::new(FrameKernel::new(gpu)?);
        Ok(Self {
            source: FrameSource {
                panel,
                gpu: gpu.clone(),
                kernel,
                maker: FrameMaker::for_adapter(&gpu.adapter_info),
            },
        })
    }

    /// The same surface, with frames made by `maker` (the bench and the parity test compare
    /// them).
    #[must_use]
    pub fn with_frames(mut self, maker: FrameMaker) -> Self {
        self.source.maker = maker;
        self
    }

    /// Where this maker's frames are made.
    #[must_use]
    pub fn frame_maker(&self) -> FrameMaker {
        self.source.maker
    }

    /// The drawn surface.
    #[must_use]
    pub fn panel(&self) -> &Panel {
        &self.source.panel
    }

    /// `timeline`'s frames on this maker's device (see [`FrameSource::device_clip`]).
    ///
    /// # Errors
    /// As [`ClipFrames::new`].
    pub fn device_clip<'a>(
        &'a self,
        timeline: &'a [StoredSecond],
        lenses: &[String],
    ) -> anyhow::Result<ClipFrames<'a>> {
        self.source.device_clip(timeline, lenses)
    }

    /// Frames `first..first + n` of `timeline`'s video made on the device, as YUV 4:2:0 (for
    /// the parity test; [`encode`] streams them).
    ///
    /// # Errors
    /// As [`ClipFrames::batch`].
    pub fn device_frames(
        &self,
        timeline: &[StoredSecond],
        lenses: &[String],
        first: u32,
        n: u32,
    ) -> anyhow::Result<Vec<u8>> {
        self.device_clip(timeline, lenses)?.batch(first, n)
    }

    /// The video of one clip (see [`encode`]), with the shipped encoder settings.
    ///
    /// # Errors
    /// As [`encode`].
    pub async fn render(
        &self,
        timeline: &[StoredSecond],
        lenses: &[String],
        work_dir: &Path,
        deadline: Duration,
    ) -> anyhow::Result<Video> {
        self.render_with(timeline, lenses, work_dir, deadline, Encoder::SHIPPED)
            .await
    }

    /// [`CortexVideo::render`] with other encoder settings (the bench compares them).
    ///
    /// # Errors
    /// As [`encode`].
    pub async fn render_with(
        &self,
        timeline: &[StoredSecond],
        lenses: &[String],
        work_dir: &Path,
        deadline: Duration,
        encoder: Encoder,
    ) -> anyhow::Result<Video> {
        encode(
            self.source.clone(),
            Arc::new(timeline.to_vec()),
            Arc::new(lenses.to_vec()),
            work_dir,
            deadline,
            encoder,
        )
        .await
    }
}
