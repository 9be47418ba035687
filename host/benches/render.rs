//! `cargo bench -p brainscan --bench render`: the cortex video of a 180 s clip on this
//! machine's adapter (lavapipe where there is no GPU), against the 12 s the issue allows, and
//! the share of the scan it adds: the qualia analysis of the same clip (a generated 720p clip
//! with sound, 180 s) is measured in the same run as the baseline.
//!
//! It compares, in the same run, frames made on the CPU and on the device, x264's threads at 2
//! (before) and automatic, and faster presets; the first line measured is the baseline.
//!
//! Needs `scripts/fetch-models` (the surfaces and the speech models) and ffmpeg.

use std::process::Command;
use std::time::{Duration, Instant};

use brainscan::local::ModelArgs;
use brainscan::render::timing;
use brainscan::render::video::CortexVideo;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let clip = dir.path().join("clip180.mp4");
    let made = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=1280x720:rate=25:duration=180",
        ])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:duration=180"])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-c:a",
            "aac",
            "-shortest",
            "-y",
        ])
        .arg(&clip)
        .status()?;
    anyhow::ensure!(made.success(), "ffmpeg could not make the clip");

    let args = ModelArgs {
        model: None,
        models_dir: brainscan::config::default_models_dir_from_env(),
    };
    let q = brainscan::local::qualia(&args)?;
    let probe = brainscan::media::probe::probe(&clip, Duration::from_secs(30)).await?;
    let t = Instant::now();
    let out = q.analyse(&clip, &probe, 180, None).await?;
    let analysis = t.elapsed().as_secs_f64();
    let timeline =
        brainscan::render::timing::timeline_of(&out.networks[..out.duration_sec.floor() as usize]);

    let t = Instant::now();
    let video = CortexVideo::new(&q.gpu, &args.models_dir)?;
    let startup = t.elapsed().as_secs_f64();
    let lenses = ["attention".to_owned()];
    println!(
        "adapter: {} ({:?}, {:?}); frames made on: {:?} (shipped for this adapter); cores: {}",
        q.gpu.adapter_info.name,
        q.gpu.adapter_info.backend,
        q.gpu.adapter_info.device_type,
        video.frame_maker(),
        std::thread::available_parallelism().map_or(1, usize::from),
    );
    println!("surface load, draw and frame kernel, once per worker: {startup:.2} s");
    println!("qualia analysis of the same clip (baseline, this run): {analysis:.2} s");
    let f = timing::time_frames(&video, &timeline, &lenses)?;
    println!(
        "frames only, {} frames: CPU (RGB) {:.2} s, device (YUV 4:2:0, read back) {:.2} s; device/CPU {:.2}",
        f.frames,
        f.cpu_s,
        f.device_s,
        f.device_s / f.cpu_s
    );
    for r in timing::time_renders(&video, &timeline, &lenses, dir.path(), 3).await? {
        println!(
            "cortex video, {} s clip, {r} (median of 3); goal <= 12 s: {}; adds {:.0} % to the analysis",
            timeline.len(),
            if r.seconds <= 12.0 { "met" } else { "NOT met" },
            100.0 * r.seconds / analysis,
        );
    }
    Ok(())
}
