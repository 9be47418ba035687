//! `include_fmri` on the real binary: `fmri_url` is a signed link to the cortex video (H.264
//! MP4, the clip's length, 10 frames a second) and `fmri_poster_url` to its still.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::{create_scan, funded_key, media_server, serve, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_fmri_links_the_cortex_video_and_its_poster() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = funded_key(dir.path());
    let media = media_server().await;
    let http = reqwest::Client::new();
    let server = serve(dir.path());
    let body = json!({
        "input": {"type": "video", "video_url": media.url("/media/clip.mp4")},
        "options": {"include_fmri": true}
    });
    let id = create_scan(&http, &server.base, &key, &body).await;
    let scan = wait_for(&http, &server.base, &key, &id, |s| {
        s["status"] == "complete" || s["status"] == "error"
    })
    .await;
    assert_eq!(scan["status"], "complete", "{scan}");
    let url = scan["fmri_url"].as_str().expect("fmri_url");
    assert!(
        url.contains(&format!("/scans/{id}/fmri.mp4?expires=")),
        "{url}"
    );
    let r = http.get(url).send().await.expect("video");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "video/mp4");
    let video = dir.path().join("fmri.mp4");
    std::fs::write(&video, r.bytes().await.expect("bytes")).expect("write");
    let probe = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_streams",
            "-show_format",
            "-of",
            "json",
        ])
        .arg(&video)
        .output()
        .expect("ffprobe");
    let probe: Value = serde_json::from_slice(&probe.stdout).expect("ffprobe json");
    assert_eq!(probe["streams"][0]["codec_name"], "h264", "{probe}");
    assert_eq!(probe["streams"][0]["r_frame_rate"], "10/1");
    let duration: f64 = probe["format"]["duration"]
        .as_str()
        .and_then(|d| d.parse().ok())
        .expect("duration");
    let clip = scan["duration_sec"].as_f64().expect("duration_sec");
    assert!(
        (duration - clip).abs() < 0.05,
        "video {duration} s, clip {clip} s"
    );

    // A browser seeks with byte ranges: the store answers them.
    let whole = std::fs::metadata(&video).expect("size").len();
    let r = http
        .get(url)
        .header("Range", "bytes=0-99")
        .send()
        .await
        .expect("range");
    assert_eq!(r.status(), 206);
    assert_eq!(r.headers()["accept-ranges"], "bytes");
    assert_eq!(
        r.headers()["content-range"].to_str().expect("ascii"),
        format!("bytes 0-99/{whole}")
    );
    assert_eq!(r.bytes().await.expect("bytes").len(), 100);

    let poster = scan["fmri_poster_url"].as_str().expect("fmri_poster_url");
    let r = http.get(poster).send().await.expect("poster");
    assert_eq!(r.headers()["content-type"], "image/png");
    let png = r.bytes().await.expect("bytes");
    let info = png::Decoder::new(std::io::Cursor::new(png.to_vec()))
        .read_info()
        .expect("a PNG");
    assert_eq!(info.info().width, brainscan::render::video::WIDTH);

    // Where the scan's time went, per stage, for operators (/metrics).
    let metrics = http
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    for stage in [
        "download",
        "probe",
        "analysis",
        "qualia",
        "speech",
        "plugins",
        "render",
        "embedding",
        "commit",
    ] {
        let count = metrics
            .lines()
            .find(|l| {
                l.starts_with("brainscan_scan_stage_seconds_count")
                    && l.contains(&format!("stage=\"{stage}\""))
            })
            .unwrap_or_else(|| panic!("no {stage} stage in /metrics:\n{metrics}"));
        assert!(count.ends_with(" 1"), "{count}");
    }
}
