//! What the benches measure of the cortex video (`cargo bench --bench render` and
//! `brainscan bench --render`): making the frames alone on the CPU and on the device, and whole
//! renders under each frame maker and encoder setting, the settings before frames moved to
//! the device measured first in the same run as the baseline.

use std::path::Path;
use std::time::{Duration, Instant};

use super::video::{CortexVideo, Encoder, FPS, FrameMaker, frames};
use crate::result::StoredSecond;

/// A timeline for timing the render of a clip whose seven network values per second are
/// `networks`: one lens curve, which changes what the strip shows but not the cost.
#[must_use]
pub fn timeline_of(networks: &[[f32; 7]]) -> Vec<StoredSecond> {
    networks
        .iter()
        .enumerate()
        .map(|(s, n)| StoredSecond {
            second: s as u32,
            scores: [("attention".to_owned(), 50.0 + 20.0 * (s as f64 / 9.0).sin())].into(),
            benchmark: Default::default(),
            reasons: Default::default(),
            raw: n.map(f64::from),
        })
        .collect()
}

/// Seconds to make every frame of a clip, without the encoder.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct FramesTiming {
    pub frames: u32,
    /// RGB frames on the CPU, one at a time.
    pub cpu_s: f64,
    /// YUV 4:2:0 frames on the device, batch by batch, read back.
    pub device_s: f64,
}

/// Times the frames of `timeline` on the CPU and on `video`'s device (its kernel compiled
/// already, as in the service).
///
/// # Errors
/// A device error.
pub fn time_frames(
    video: &CortexVideo,
    timeline: &[StoredSecond],
    lenses: &[String],
) -> anyhow::Result<FramesTiming> {
    let count = timeline.len() as u32 * FPS;
    let t = Instant::now();
    let mut bytes = 0usize;
    for f in frames(video.panel(), timeline, lenses) {
        bytes += f.len();
    }
    let cpu_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for batch in video.device_clip(timeline, lenses)?.batches() {
        bytes += batch?.0.len();
    }
    std::hint::black_box(bytes);
    Ok(FramesTiming {
        frames: count,
        cpu_s,
        device_s: t.elapsed().as_secs_f64(),
    })
}

/// One render setting's timing.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RenderTiming {
    pub frames_on: String,
    pub preset: &'static str,
    pub crf: u8,
    /// x264's threads; 0 is x264's own choice.
    pub threads: u16,
    /// "baseline" (before frames moved to the device), "shipped", or empty.
    pub role: &'static str,
    /// Median of the runs.
    pub seconds: f64,
    pub of_baseline: f64,
    pub mp4_bytes: usize,
    pub frames: u32,
}

/// Renders `timeline` `runs` times under each setting: the baseline first (frames on the
/// CPU, x264 on 2 threads, as before), then what ships (`video` as made for its adapter),
/// then the other makers and thread counts, then faster presets.
///
/// # Errors
/// A render failing.
pub async fn time_renders(
    video: &CortexVideo,
    timeline: &[StoredSecond],
    lenses: &[String],
    work_dir: &Path,
    runs: usize,
) -> anyhow::Result<Vec<RenderTiming>> {
    let baseline = (
        FrameMaker::Cpu,
        Encoder {
            threads: 2,
            ..Encoder::SHIPPED
        },
    );
    let shipped = (video.frame_maker(), Encoder::SHIPPED);
    let mut settings = vec![baseline, shipped];
    for maker in [FrameMaker::Cpu, FrameMaker::Device] {
        for threads in [2, 0] {
            let s = (
                maker,
                Encoder {
                    threads,
                    ..Encoder::SHIPPED
                },
            );
            if !settings.contains(&s) {
                settings.push(s);
            }
        }
    }
    for preset in ["superfast", "ultrafast"] {
        settings.push((
            shipped.0,
            Encoder {
                preset,
                ..Encoder::SHIPPED
            },
        ));
    }
    let mut out: Vec<RenderTiming> = Vec::new();
    for (maker, encoder) in settings {
        let video = video.clone().with_frames(maker);
        let mut times = Vec::new();
        let mut made = None;
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            let v = video
                .render_with(
                    timeline,
                    lenses,
                    work_dir,
                    Duration::from_secs(600),
                    encoder,
                )
                .await?;
            times.push(t.elapsed().as_secs_f64());
            made = Some((v.mp4.len(), v.frames));
        }
        times.sort_by(f64::total_cmp);
        let seconds = times[times.len() / 2];
        let (mp4_bytes, frames) = made.unwrap_or_default();
        let base = out.first().map_or(seconds, |b| b.seconds);
        out.push(RenderTiming {
            frames_on: format!("{maker:?}"),
            preset: encoder.preset,
            crf: encoder.crf,
            threads: encoder.threads,
            role: if (maker, encoder) == baseline {
                "baseline"
            } else if (maker, encoder) == shipped {
                "shipped"
            } else {
                ""
            },
            seconds,
            of_baseline: seconds / base,
            mp4_bytes,
            frames,
        });
    }
    Ok(out)
}

impl std::fmt::Display for RenderTiming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let threads = if self.threads == 0 {
            "auto".to_owned()
        } else {
            self.threads.to_string()
        };
        let role = match self.role {
            "" => String::new(),
            r => format!(" ({r})"),
        };
        write!(
            f,
            "frames on {}, x264 {} crf {} threads {threads}{role}: {:.2} s, {} frames, {:.2} MB; {:.2} of the baseline",
            self.frames_on,
            self.preset,
            self.crf,
            self.seconds,
            self.frames,
            self.mp4_bytes as f64 / 1e6,
            self.of_baseline
        )
    }
}
