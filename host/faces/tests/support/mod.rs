//! What the detector's tests share: the installed cascade and a clip's frames as the scan's
//! decoder makes them.

use std::path::PathBuf;
use std::process::Command;

use brainscan_faces::Cascade;

pub fn cache(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(
        || {
            let home = std::env::var_os("HOME").expect("HOME");
            PathBuf::from(home).join(".cache").join(default)
        },
        PathBuf::from,
    )
}

pub fn cascade() -> Cascade {
    let path = cache("BRAINSCAN_MODELS_DIR", "brainscan/models")
        .join("opencv-haarcascades/haarcascade_frontalface_default.xml");
    Cascade::load(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-models)", path.display()))
}

pub fn frames(clip: &str) -> Vec<Vec<u8>> {
    // (as `VideoFrames::open_with_detail` scales, in luma)
    let path = cache("BRAINSCAN_TEST_MEDIA", "brainscan-test-media").join(clip);
    assert!(
        path.is_file(),
        "{} missing: run scripts/fetch-test-media",
        path.display()
    );
    let vf = "fps=10,scale=320:180:force_original_aspect_ratio=decrease:flags=area,\
              pad=320:180:(ow-iw)/2:(oh-ih)/2:color=black,format=gray";
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&path)
        .args([
            "-map", "0:V:0", "-vf", vf, "-f", "rawvideo", "-pix_fmt", "gray", "-",
        ])
        .output()
        .expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .chunks_exact(320 * 180)
        .map(<[u8]>::to_vec)
        .collect()
}
