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
use super::surface::NO_NETWORK;
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
const INK: [u8; 3] = [220, 220, 220];
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
fn values_at(timeline: &[StoredSecond], t: f64) -> [f64; 7] {
    let last = timeline.len().saturating_sub(1);
    let i = (t.floor().max(0.0) as usize).min(last);
    let j = (i + 1).min(last);
    let f = (t - i as f64).clamp(0.0, 1.0);
    std::array::from_fn(|k| timeline[i].raw[k] * (1.0 - f) + timeline[j].raw[k] * f)
}

/// Writes `text` in the 8 x 8 font with its top-left corner at (x, y); clipped to the frame.
fn text(frame: &mut [u8], x: u32, y: u32, s: &str, ink: [u8; 3]) {
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
const PLOT: (u32, u32, u32, u32) = (8, WIDTH - 16, PANEL_H + 30, STRIP_H - 36);

/// Everything that does not change from frame to frame: the strip's curves, legend and
/// caption, drawn once per clip.
fn strip_base(timeline: &[StoredSecond], lenses: &[String]) -> Vec<u8> {
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

/// Frame `index` (time `index / FPS`): the panel coloured by that moment's values over the
/// strip, with the playhead and the time.
fn frame(panel: &Panel, timeline: &[StoredSecond], base: &[u8], index: u32) -> Vec<u8> {
    let t = f64::from(index) / f64::from(FPS);
    let values = values_at(timeline, t);
    // A table per frame: for each of 7 networks, unlabelled cortex and the backdrop, the
    // colour at each of 256 shades. Each pixel is then a lookup.
    let mut lut = vec![0u8; 9 * 256 * 3];
    for slot in 0..9usize {
        let base_colour: [f64; 3] = match slot {
            0..7 => colour(values[slot]).map(f64::from),
            7 => UNLABELLED,
            _ => BACKDROP.map(f64::from),
        };
        for shade in 0..256usize {
            let s = if slot == 8 { 1.0 } else { shade as f64 / 255.0 };
            for k in 0..3 {
                lut[(slot * 256 + shade) * 3 + k] = (base_colour[k] * s).round() as u8;
            }
        }
    }
    let mut out = base.to_vec();
    for (i, (&net, &shade)) in panel.network.iter().zip(&panel.shade).enumerate() {
        let slot = match net {
            BACKGROUND => 8,
            n if n == NO_NETWORK => 7,
            n => usize::from(n.min(6)),
        };
        let l = (slot * 256 + usize::from(shade)) * 3;
        out[i * 3..i * 3 + 3].copy_from_slice(&lut[l..l + 3]);
    }
    for (k, label) in VIEW_LABELS.iter().enumerate() {
        let (col, row) = (k as u32 % 2, k as u32 / 2);
        text(
            &mut out,
            col * PANEL_W / 2 + 6,
            row * PANEL_H / 2 + 6,
            label,
            [150, 150, 160],
        );
    }
    let (x0, w, top, h) = PLOT;
    let n = timeline.len().max(1) as f64;
    let x = x0 + ((t / n) * f64::from(w)).round().min(f64::from(w - 1)) as u32;
    for y in top - 2..top + h + 2 {
        put(&mut out, x, y, [255, 255, 255]);
    }
    let clock = format!("t = {t:5.1} s");
    text(
        &mut out,
        WIDTH - 8 - clock.len() as u32 * 8,
        PANEL_H + 4,
        &clock,
        INK,
    );
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
}

impl Encoder {
    /// What the service uses (see `cargo bench --bench render` for the choice).
    pub const SHIPPED: Self = Self {
        preset: "veryfast",
        crf: 23,
    };
}

/// Encodes the cortex video of `timeline` with ffmpeg (`ffmpeg` on PATH), working in
/// `work_dir`, within `deadline`.
///
/// # Errors
/// An empty timeline, ffmpeg missing or failing (with its last stderr lines), or the
/// deadline passing.
pub async fn encode(
    panel: Arc<Panel>,
    timeline: Arc<Vec<StoredSecond>>,
    lenses: Arc<Vec<String>>,
    work_dir: &Path,
    deadline: Duration,
    encoder: Encoder,
) -> anyhow::Result<Video> {
    ensure!(!timeline.is_empty(), "no seconds to render");
    let crf = encoder.crf.to_string();
    let out = tempfile::Builder::new()
        .prefix("cortex-")
        .suffix(".mp4")
        .tempfile_in(work_dir)
        .context("creating the video file")?;
    let size = format!("{WIDTH}x{HEIGHT}");
    let rate = FPS.to_string();
    let mut child = tokio::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-nostdin", "-loglevel", "error", "-y"])
        .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", &size])
        .args(["-framerate", &rate, "-i", "pipe:0"])
        .args(["-c:v", "libx264", "-preset", encoder.preset, "-crf", &crf])
        .args([
            "-threads",
            "2",
            "-pix_fmt",
            "yuv420p",
            "-movflags",
            "+faststart",
        ])
        .args(["-f", "mp4"])
        .arg(out.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting ffmpeg (Debian package `ffmpeg`)")?;
    let stderr = child.stderr.take().map(crate::media::decode::drain_stderr);
    let mut stdin = child.stdin.take().context("ffmpeg's stdin")?;

    // Frames are made on a blocking thread, a few ahead of the encoder at most.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    let (p, tl, ls) = (panel.clone(), timeline.clone(), lenses.clone());
    let producer = tokio::task::spawn_blocking(move || {
        for f in frames(&p, &tl, &ls) {
            if tx.blocking_send(f).is_err() {
                break; // the encoder stopped; its error is reported there
            }
        }
    });
    let work = async {
        let mut count = 0u32;
        while let Some(f) = rx.recv().await {
            stdin
                .write_all(&f)
                .await
                .context("writing a frame to ffmpeg")?;
            count += 1;
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
    let poster = frame(&panel, &timeline, &base, second as u32 * FPS);
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
/// change), then any number of clips coloured and encoded.
#[derive(Debug, Clone)]
pub struct CortexVideo {
    panel: Arc<Panel>,
}

impl CortexVideo {
    /// Loads the surfaces from the models folder and draws them on `gpu`.
    ///
    /// # Errors
    /// Missing or malformed surface files, or a GPU error.
    pub fn new(gpu: &crate::inference::gpu::GpuContext, models_dir: &Path) -> anyhow::Result<Self> {
        let cortex = super::surface::Cortex::load(&super::surface::Cortex::dir_in(models_dir))?;
        Ok(Self {
            panel: Arc::new(super::cortex::draw(gpu, &cortex)?),
        })
    }

    /// The drawn surface.
    #[must_use]
    pub fn panel(&self) -> &Panel {
        &self.panel
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
            self.panel.clone(),
            Arc::new(timeline.to_vec()),
            Arc::new(lenses.to_vec()),
            work_dir,
            deadline,
            encoder,
        )
        .await
    }
}
