//! qualia 2.4's motion energy (issue 15, point 3) against an independent implementation:
//! `pymoten` 0.1.3 (PyPI; Nishimoto et al. 2011's motion-energy pyramid), run from the pinned
//! venv that `scripts/test-tools` installs, on real clips. pymoten reads the same decoded frames
//! but makes its own luminance (PIL Lanczos resize, its CIE L*) and runs its own filters; the
//! bank here is built to pymoten's formulas, so the channels correspond one to one.
//!
//! This can fail for real reasons: a wrong filter formula, direction sign, tap order or causal
//! shift, a grid or luminance that differs too much from pymoten's, or a kernel bug all lower
//! the per-second correlation. pymoten centres its temporal window; ours ends at the current
//! frame, so pymoten's frame `t - centre_shift` is compared with ours at `t`.
//!
//! A second test checks the property the issue names: a coherent pan drives the feature more
//! than counter-phase flicker of equal contrast (a design property of opponent energy, checked
//! here through the whole scan on clips made with ffmpeg).

use std::path::Path;
use std::process::Command;

use brainscan::grounding::pearson;
use brainscan::inference::features::Rect;
use brainscan::inference::motion::{Channel, MotionBank, centre_shift};
use brainscan::inference::run::decode_frames;
use brainscan::inference::v2::{FEATURE_COUNT_V2, feature_index};
use brainscan::media::decode::DecodeSpec;

use crate::support::{analyse, ffmpeg, gpu, real_media};

/// At most this many seconds of each clip are compared: the whole 55 s trailer, the 10 s bikes
/// clip (the other corpus clips are under 6 s or have no picture).
const SECONDS: usize = 60;

fn pymoten_python() -> String {
    std::env::var("BRAINSCAN_PYMOTEN_PYTHON").unwrap_or_else(|_| {
        panic!(
            "BRAINSCAN_PYMOTEN_PYTHON is not set: scripts/test-tools installs pymoten in a pinned venv and sets it (source it, or run scripts/test)"
        )
    })
}

/// pymoten's energies (`frames x filters`) and filter parameters for `frames` RGB24 frames.
fn pymoten(
    dir: &Path,
    frames: &[u8],
    spec: DecodeSpec,
    bank: &MotionBank,
) -> (Vec<Channel>, Vec<f32>) {
    let input = dir.join("frames.rgb");
    std::fs::write(&input, frames).expect("write frames");
    let prefix = dir.join("pymoten");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/qualia/pymoten_reference.py");
    let out = Command::new(pymoten_python())
        .arg(&script)
        .arg(&input)
        .args([
            spec.width.to_string(),
            spec.height.to_string(),
            spec.fps.to_string(),
            bank.rows.to_string(),
            bank.cols.to_string(),
        ])
        .arg(&prefix)
        .output()
        .expect("pymoten runs");
    assert!(
        out.status.success(),
        "pymoten failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(prefix.with_extension("json")).expect("pymoten json"),
    )
    .expect("json");
    assert_eq!(meta["taps"], bank.taps, "pymoten's window is ours");
    let filters = meta["filters"]
        .as_array()
        .expect("filters")
        .iter()
        .map(|f| Channel {
            centre_h: f["centerh"].as_f64().expect("centerh"),
            centre_v: f["centerv"].as_f64().expect("centerv"),
            direction: f["direction"].as_f64().expect("direction"),
            spatial_freq: f["spatial_freq"].as_f64().expect("sf"),
            temporal_freq: f["temporal_freq"].as_f64().expect("tf"),
        })
        .collect();
    let bytes = std::fs::read(prefix.with_extension("f32")).expect("pymoten energies");
    let energies = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    (filters, energies)
}

fn same_filter(a: &Channel, b: &Channel) -> bool {
    (a.centre_h - b.centre_h).abs() < 1e-6
        && (a.centre_v - b.centre_v).abs() < 1e-6
        && (a.direction - b.direction).rem_euclid(360.0).abs() < 1e-6
        && a.spatial_freq == b.spatial_freq
        && a.temporal_freq == b.temporal_freq
}

/// Per-second correlations of each channel with pymoten's, and of the opponent energy
/// summed over channels, for one clip.
async fn compare(clip: &str) -> (Vec<f64>, f64, f64) {
    let spec = DecodeSpec::default();
    let len = (spec.width * spec.height * 3) as usize;
    let path = real_media().join(clip);
    // The first frame twice, then the rest (the visual kernel's layout): drop the repeat.
    let decoded = decode_frames(&path, spec, SECONDS * spec.fps as usize)
        .await
        .expect("decode");
    let frames = &decoded[len..];
    let n = frames.len() / len;
    let rect = Rect::full(spec.width, spec.height);
    let bank = MotionBank::new(rect, spec.fps);
    let mut input = Vec::with_capacity(frames.len() + (bank.taps - 1) * len);
    for _ in 0..bank.taps - 1 {
        input.extend_from_slice(&frames[..len]);
    }
    input.extend_from_slice(frames);
    let (ours, _) = gpu()
        .motion(&input, spec.width, spec.height, rect, &bank)
        .expect("motion kernel");
    let row = 1 + bank.channel_count();
    assert_eq!(ours.len(), n * row);

    let dir = tempfile::tempdir().expect("tempdir");
    let (filters, theirs) = pymoten(dir.path(), frames, spec, &bank);
    assert_eq!(
        filters.len(),
        bank.channel_count(),
        "same number of channels"
    );
    let channels = bank.channels();
    let index: Vec<usize> = channels
        .iter()
        .map(|c| {
            filters
                .iter()
                .position(|f| same_filter(c, f))
                .unwrap_or_else(|| panic!("pymoten has no filter {c:?}"))
        })
        .collect();

    // Whole seconds where both windows lie inside the clip: from second 1 (pymoten zero-pads
    // before the clip, we repeat the first frame) to the last second pymoten's centred window
    // still has frames ahead for.
    let fps = spec.fps as usize;
    let shift = centre_shift(bank.taps);
    let seconds = (n - (bank.taps - shift)) / fps;
    assert!(seconds >= 6, "{clip}: only {seconds} s to compare");
    let ours_at = |t: usize, c: usize| f64::from(ours[t * row + 1 + c]);
    let theirs_at = |t: usize, c: usize| f64::from(theirs[(t - shift) * filters.len() + index[c]]);
    let per_second = |f: &dyn Fn(usize) -> f64| -> Vec<f64> {
        (1..seconds)
            .map(|s| (s * fps..(s + 1) * fps).map(f).sum::<f64>() / fps as f64)
            .collect()
    };
    let rs: Vec<f64> = (0..channels.len())
        .map(|c| {
            pearson(
                &per_second(&|t| ours_at(t, c)),
                &per_second(&|t| theirs_at(t, c)),
            )
        })
        .collect();
    let opponent = |at: &dyn Fn(usize, usize) -> f64, t: usize| -> f64 {
        (0..channels.len())
            .step_by(2)
            .map(|c| (at(t, c) - at(t, c + 1)).abs())
            .sum()
    };
    let r_opponent = pearson(
        &per_second(&|t| opponent(&ours_at, t)),
        &per_second(&|t| opponent(&theirs_at, t)),
    );
    let total = |at: &dyn Fn(usize, usize) -> f64, t: usize| -> f64 {
        (0..channels.len()).map(|c| at(t, c)).sum()
    };
    let r_total = pearson(
        &per_second(&|t| total(&ours_at, t)),
        &per_second(&|t| total(&theirs_at, t)),
    );
    (rs, r_opponent, r_total)
}

#[tokio::test]
async fn the_gabor_bank_matches_pymoten_on_real_clips() {
    for clip in ["trailer_bbb.mp4", "bikes.mp4"] {
        let (mut rs, opponent, total) = compare(clip).await;
        rs.sort_by(f64::total_cmp);
        let median = rs[rs.len() / 2];
        let low = rs[rs.len() / 10];
        eprintln!(
            "{clip}: per-channel r median {median:.3}, 10th percentile {low:.3}, min {:.3}; opponent sum r {opponent:.3}; total energy r {total:.3}",
            rs[0]
        );
        assert!(median >= 0.8, "{clip}: median channel r {median:.3}");
        assert!(opponent >= 0.8, "{clip}: opponent energy r {opponent:.3}");
        assert!(total >= 0.8, "{clip}: total energy r {total:.3}");
    }
}

/// Clip mean of the `motion_energy` feature.
fn motion_mean(out: &brainscan::inference::QualiaOutput) -> f64 {
    let k = feature_index("motion_energy").expect("v2.4 lists motion_energy");
    let rows: Vec<&[f32]> = out.features.chunks_exact(FEATURE_COUNT_V2).collect();
    rows.iter().map(|r| f64::from(r[k])).sum::<f64>() / rows.len() as f64
}

#[tokio::test]
async fn a_pan_drives_motion_energy_more_than_flicker_of_equal_contrast() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // A vertical grating of 4 cycles per picture height at 60 % contrast: drifting right at
    // 3 cycles per second, and the same grating counter-phase flickering at 3 Hz (the sum of
    // two gratings drifting apart: equal contrast, no net direction), and standing still.
    let grating = |name: &str, expr: &str| {
        let path = d.join(name);
        ffmpeg(
            d,
            &[
                "-f",
                "lavfi",
                "-i",
                "color=c=gray:s=320x180:r=30:d=6",
                "-vf",
                &format!("format=gray,geq=lum='{expr}'"),
                "-pix_fmt",
                "yuv420p",
                path.to_str().expect("utf8"),
            ],
        );
        path
    };
    let k = "2*PI*4*X/H";
    let pan = grating("pan.mp4", &format!("128+76*cos({k}-2*PI*3*T)"));
    let flicker = grating("flicker.mp4", &format!("128+76*cos({k})*cos(2*PI*3*T)"));
    let still = grating("still.mp4", &format!("128+76*cos({k})"));
    let pan = motion_mean(&analyse(&pan).await);
    let flicker = motion_mean(&analyse(&flicker).await);
    let still = motion_mean(&analyse(&still).await);
    eprintln!("motion_energy clip mean: pan {pan:.3}, flicker {flicker:.3}, still {still:.3}");
    assert!(pan > 4.0 * flicker, "pan {pan:.3} vs flicker {flicker:.3}");
    assert!(pan > 10.0 * still, "pan {pan:.3} vs still {still:.3}");
}
