//! The cortex video (`include_fmri`): the HCP surface drawn on the qualia adapter, coloured by
//! the predicted network values on a fixed scale, encoded to H.264 MP4.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use brainscan::render::cortex::{BACKGROUND, PANEL_W, VIEW_H, VIEW_W};
use brainscan::render::gpu_frames::{BATCH_FRAMES, YUV_FRAME_BYTES};
use brainscan::render::video::{
    CortexVideo, FPS, FrameMaker, HEIGHT, WIDTH, colour, frames, yuv420,
};
use brainscan::result::StoredSecond;

use crate::support::gpu;

fn video() -> &'static CortexVideo {
    static V: OnceLock<CortexVideo> = OnceLock::new();
    V.get_or_init(|| {
        CortexVideo::new(&gpu(), &brainscan::config::default_models_dir_from_env())
            .expect("the cortex surfaces (scripts/fetch-models)")
    })
}

/// `seconds` seconds, every network at 0 except `network` at `z` during `second`.
fn timeline(seconds: u32, network: usize, second: u32, z: f64) -> Vec<StoredSecond> {
    (0..seconds)
        .map(|s| {
            let mut raw = [0.0; 7];
            if s == second {
                raw[network] = z;
            }
            StoredSecond {
                second: s,
                scores: BTreeMap::from([
                    ("attention".to_owned(), 40.0 + f64::from(s)),
                    ("manipulation".to_owned(), 60.0 - f64::from(s)),
                ]),
                benchmark: BTreeMap::new(),
                reasons: BTreeMap::new(),
                raw,
            }
        })
        .collect()
}

/// Mean x (column) of a network's pixels inside one view of the panel.
fn mean_column(network: u8, col: u32, row: u32) -> f64 {
    let p = video().panel();
    let mut xs = Vec::new();
    for y in row * VIEW_H..(row + 1) * VIEW_H {
        for x in col * VIEW_W..(col + 1) * VIEW_W {
            if p.network[(y * PANEL_W + x) as usize] == network {
                xs.push(f64::from(x - col * VIEW_W));
            }
        }
    }
    assert!(
        xs.len() > 500,
        "network {network} barely visible in view ({col}, {row})"
    );
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[test]
fn four_views_show_the_surface_with_visual_cortex_at_the_back() {
    let p = video().panel();
    for (col, row) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
        let mut surface = 0;
        for y in row * VIEW_H..(row + 1) * VIEW_H {
            for x in col * VIEW_W..(col + 1) * VIEW_W {
                surface += usize::from(p.network[(y * PANEL_W + x) as usize] != BACKGROUND);
            }
        }
        let share = surface as f64 / f64::from(VIEW_W * VIEW_H);
        assert!(share > 0.35, "view ({col}, {row}) is {share:.2} surface");
    }
    // Visual (0) is occipital, Default Mode (6) reaches the frontal pole: the front of the
    // brain is on the left of the left-lateral and right-medial views and on the right of
    // the others (radiological figures' layout).
    assert!(mean_column(0, 0, 0) > mean_column(6, 0, 0) + 40.0);
    assert!(mean_column(0, 1, 0) < mean_column(6, 1, 0) - 40.0);
    assert!(mean_column(0, 0, 1) < mean_column(6, 0, 1) - 40.0);
    assert!(mean_column(0, 1, 1) > mean_column(6, 1, 1) + 40.0);
    // Somatomotor (1) is seen from the side: above the middle of the lateral views.
    let p = video().panel();
    let mut ys = Vec::new();
    for y in 0..VIEW_H {
        for x in 0..VIEW_W {
            if p.network[(y * PANEL_W + x) as usize] == 1 {
                ys.push(f64::from(y));
            }
        }
    }
    let mean_y = ys.iter().sum::<f64>() / ys.len() as f64;
    assert!(
        mean_y < f64::from(VIEW_H) / 2.0,
        "somatomotor at row {mean_y}"
    );
}

fn ffprobe(path: &std::path::Path) -> serde_json::Value {
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-count_frames",
            "-show_streams",
            "-show_format",
        ])
        .args(["-of", "json"])
        .arg(path)
        .output()
        .expect("ffprobe");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

/// Frame `n` of the MP4, decoded to RGB24.
fn decoded_frame(path: &std::path::Path, n: u32) -> Vec<u8> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-vf", &format!("select=eq(n\\,{n})"), "-vframes", "1"])
        .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"])
        .output()
        .expect("ffmpeg");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout.len(), (WIDTH * HEIGHT * 3) as usize);
    out.stdout
}

/// Mean RGB of the lit pixels of one network in a decoded frame.
fn network_colour(frame: &[u8], network: u8) -> [f64; 3] {
    let p = video().panel();
    let mut sum = [0.0; 3];
    let mut n = 0.0;
    for (i, (&k, &shade)) in p.network.iter().zip(&p.shade).enumerate() {
        if k == network && shade > 200 {
            for c in 0..3 {
                sum[c] += f64::from(frame[i * 3 + c]);
            }
            n += 1.0;
        }
    }
    assert!(n > 200.0, "{n} lit pixels of network {network}");
    sum.map(|s| s / n)
}

/// The frames made on the device are the CPU's frames converted by `yuv420`, byte for byte,
/// across batch boundaries and a short last batch: every slot colour, the shading, the labels,
/// the playhead and the clock. Runs on lavapipe in CI.
#[test]
fn device_frames_are_the_cpu_frames_in_yuv_byte_for_byte() {
    let mut t = timeline(7, 0, 0, 0.0);
    for (s, second) in t.iter_mut().enumerate() {
        for (k, v) in second.raw.iter_mut().enumerate() {
            *v = ((s * 7 + k) as f64 * 0.77).sin() * 3.5;
        }
    }
    t[4].raw[2] = f64::NAN;
    let lenses = ["attention".to_owned(), "manipulation".to_owned()];
    let cpu: Vec<Vec<u8>> = frames(video().panel(), &t, &lenses).collect();
    let count = cpu.len() as u32;
    assert_eq!(count, 70);
    let (w, h) = (WIDTH as usize, HEIGHT as usize);
    let mut distinct = std::collections::HashSet::new();
    let mut first = 0;
    while first < count {
        let n = BATCH_FRAMES.min(count - first);
        let device = video()
            .device_frames(&t, &lenses, first, n)
            .expect("device frames");
        assert_eq!(device.len(), n as usize * YUV_FRAME_BYTES);
        for k in 0..n as usize {
            let expected = yuv420(&cpu[first as usize + k], w, h);
            let got = &device[k * YUV_FRAME_BYTES..(k + 1) * YUV_FRAME_BYTES];
            let differing = expected.iter().zip(got).filter(|(a, b)| a != b).count();
            assert_eq!(
                differing,
                0,
                "frame {}: {differing} bytes differ, the first at {:?}",
                first as usize + k,
                expected.iter().zip(got).position(|(a, b)| a != b)
            );
            distinct.insert(got.to_vec());
        }
        first += n;
    }
    assert_eq!(distinct.len(), 70, "every frame differs from the others");
    // A batch outside the clip is an error, not a read past the end.
    assert!(video().device_frames(&t, &lenses, 60, 20).is_err());
}

#[tokio::test]
async fn a_high_visual_second_lights_occipital_cortex_in_the_high_colour() {
    for maker in [FrameMaker::Cpu, FrameMaker::Device] {
        a_high_visual_second_lights_occipital_cortex_with(video().clone().with_frames(maker)).await;
    }
}

async fn a_high_visual_second_lights_occipital_cortex_with(video: CortexVideo) {
    let dir = tempfile::tempdir().expect("tempdir");
    let seconds = 10;
    let t = timeline(seconds, 0, 5, 3.0);
    let lenses = ["attention".to_owned(), "manipulation".to_owned()];
    let v = video
        .render(&t, &lenses, dir.path(), Duration::from_secs(60))
        .await
        .expect("renders");
    assert_eq!(v.frames, seconds * FPS);
    let mp4 = dir.path().join("v.mp4");
    std::fs::write(&mp4, &v.mp4).expect("write");
    let probe = ffprobe(&mp4);
    let stream = &probe["streams"][0];
    assert_eq!(stream["codec_name"], "h264", "{probe}");
    assert_eq!(stream["pix_fmt"], "yuv420p");
    assert_eq!(stream["color_space"], "smpte170m", "{probe}");
    assert_eq!(stream["color_range"], "tv");
    assert_eq!(stream["r_frame_rate"], "10/1");
    assert_eq!(stream["nb_read_frames"], "100");
    assert_eq!(
        (stream["width"].as_u64(), stream["height"].as_u64()),
        (Some(u64::from(WIDTH)), Some(u64::from(HEIGHT)))
    );
    let duration: f64 = probe["format"]["duration"]
        .as_str()
        .and_then(|d| d.parse().ok())
        .expect("duration");
    assert!((duration - f64::from(seconds)).abs() < 0.05, "{duration} s");

    // Second 5: Visual at +3 is the scale's high end; Default Mode stays neutral. Second 0:
    // both neutral. Lit pixels keep most of their colour, and H.264 moves it a little.
    let high = colour(3.0).map(f64::from);
    let neutral = colour(0.0).map(f64::from);
    let near = |a: [f64; 3], b: [f64; 3], tol: f64| (0..3).all(|c| (a[c] - b[c]).abs() < tol);
    let at5 = decoded_frame(&mp4, 5 * FPS);
    let visual = network_colour(&at5, 0);
    let lit = |c: [f64; 3]| c.map(|v| v * 0.93);
    assert!(
        visual[0] > visual[1] + 80.0 && visual[0] > visual[2] + 60.0,
        "{visual:?}"
    );
    assert!(near(visual, lit(high), 45.0), "{visual:?} vs {high:?}");
    let default_mode = network_colour(&at5, 6);
    assert!(near(default_mode, lit(neutral), 30.0), "{default_mode:?}");
    let at0 = decoded_frame(&mp4, 0);
    assert!(near(network_colour(&at0, 0), lit(neutral), 30.0));
    // Half a second later the value is halfway back: interpolated, not held.
    let halfway = network_colour(&decoded_frame(&mp4, 5 * FPS + 5), 0);
    assert!(
        halfway[1] > visual[1] + 30.0 && halfway[1] < network_colour(&at0, 0)[1] - 30.0,
        "{halfway:?}"
    );

    // The poster is the most active second, as a PNG of the frame's size.
    let poster = png::Decoder::new(std::io::Cursor::new(&v.poster_png))
        .read_info()
        .expect("poster png");
    assert_eq!((poster.info().width, poster.info().height), (WIDTH, HEIGHT));
}

#[tokio::test]
async fn the_render_is_deterministic() {
    let t = timeline(4, 3, 2, -2.5);
    let lenses = ["attention".to_owned()];
    let a: Vec<Vec<u8>> = frames(video().panel(), &t, &lenses).collect();
    let b: Vec<Vec<u8>> = frames(video().panel(), &t, &lenses).collect();
    assert_eq!(a.len(), 40);
    assert!(a == b, "frames differ between runs");
    let again = CortexVideo::new(&gpu(), &brainscan::config::default_models_dir_from_env())
        .expect("second draw");
    assert!(
        again.panel() == video().panel(),
        "the surface drew differently"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    for maker in [FrameMaker::Cpu, FrameMaker::Device] {
        let video = video().clone().with_frames(maker);
        let x = video
            .render(&t, &lenses, dir.path(), Duration::from_secs(60))
            .await
            .expect("x");
        let y = video
            .render(&t, &lenses, dir.path(), Duration::from_secs(60))
            .await
            .expect("y");
        assert!(
            x.mp4 == y.mp4,
            "{maker:?}: the MP4 bytes differ between runs"
        );
        assert!(x.poster_png == y.poster_png);
    }
}
