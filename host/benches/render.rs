//! `cargo bench -p brainscan --bench render`: the cortex video of a 180 s clip on this
//! machine's adapter (lavapipe where there is no GPU), against the 12 s the issue allows, and
//! the share of the scan it adds: the qualia analysis of the same clip (a generated 720p clip
//! with sound, 180 s) is measured in the same run as the baseline.
//!
//! Needs `scripts/fetch-models` (the surfaces and the speech models) and ffmpeg.

use std::process::Command;
use std::time::{Duration, Instant};

use brainscan::local::ModelArgs;
use brainscan::render::video::{CortexVideo, Encoder};

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
    let timeline: Vec<brainscan::result::StoredSecond> = (0..out.duration_sec.floor() as usize)
        .map(|s| brainscan::result::StoredSecond {
            second: s as u32,
            scores: [("attention".to_owned(), 50.0 + 20.0 * (s as f64 / 9.0).sin())].into(),
            benchmark: Default::default(),
            reasons: Default::default(),
            raw: out.networks[s].map(f64::from),
        })
        .collect();

    let t = Instant::now();
    let video = CortexVideo::new(&q.gpu, &args.models_dir)?;
    let startup = t.elapsed().as_secs_f64();
    let lenses = ["attention".to_owned()];
    println!(
        "adapter: {} ({:?})",
        q.gpu.adapter_info.name, q.gpu.adapter_info.backend
    );
    println!("surface load and draw, once per worker: {startup:.2} s");
    println!("qualia analysis of the same clip (baseline, this run): {analysis:.2} s");
    // The shipped encoder settings first, then faster presets for comparison.
    let candidates = [
        Encoder::SHIPPED,
        Encoder {
            preset: "superfast",
            crf: 23,
        },
        Encoder {
            preset: "ultrafast",
            crf: 23,
        },
    ];
    for encoder in candidates {
        let mut runs = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let v = video
                .render_with(
                    &timeline,
                    &lenses,
                    dir.path(),
                    Duration::from_secs(300),
                    encoder,
                )
                .await?;
            runs.push((t.elapsed().as_secs_f64(), v.mp4.len(), v.frames));
        }
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (render, bytes, frames) = runs[1];
        println!(
            "cortex video, {} s clip, x264 {} crf {}{}: {render:.2} s (median of 3), {frames} frames, {:.1} MB; goal <= 12 s: {}; adds {:.0} % to the analysis",
            timeline.len(),
            encoder.preset,
            encoder.crf,
            if encoder == Encoder::SHIPPED {
                " (shipped)"
            } else {
                ""
            },
            bytes as f64 / 1e6,
            if render <= 12.0 { "met" } else { "NOT met" },
            100.0 * render / analysis,
        );
    }
    Ok(())
}
