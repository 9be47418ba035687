//! Security: fetched media that names other files (an HLS playlist, an `ffconcat` script, an
//! image-sequence pattern) is refused, at submit and in the worker, and never makes ffprobe
//! or ffmpeg open a local file: not one by absolute `file:` URL, not one beside the job's
//! folder, not another organisation's file in the data folder. The crafted files are served
//! over loopback as `application/octet-stream`, as an attacker would serve them.

use std::path::Path;

use reqwest::StatusCode;

use crate::support::{TestApp, ffmpeg_in, fixtures};

/// Writes a Matroska file with one audio stream and a subtitle whose line is `line`.
fn secret_mkv(path: &Path, line: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("s.srt"),
        format!("1\n00:00:00,000 --> 00:00:04,000\n{line}\n"),
    )
    .expect("srt");
    let path = path.to_str().expect("utf8");
    let args = [
        "-f",
        "lavfi",
        "-i",
        "sine=d=4",
        "-i",
        "s.srt",
        "-c:a",
        "pcm_s16le",
        "-c:s",
        "srt",
        path,
    ];
    ffmpeg_in(dir.path(), &args);
}

fn playlist(entry: &str) -> String {
    format!("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\n{entry}\n#EXT-X-ENDLIST\n")
}

/// Serves `text` from the media server's folder under a name unique to this test; its URL
/// on `route` (`media`, or `slow` to outlast the submit-time probe's budget). Padded to
/// 40 KiB, which `slow` sends in 2 s: `#` comment lines for the text formats, zeros after a
/// PNG's end (readers ignore both).
fn serve(t: &TestApp, route: &str, name: &str, text: &[u8]) -> String {
    let file = format!("crafted-{}-{route}-{name}", std::process::id());
    let mut body = text.to_vec();
    let png = body.starts_with(b"\x89PNG");
    while body.len() < 40 * 1024 {
        body.extend_from_slice(if png {
            &[0u8; 64]
        } else {
            b"# padding padding padding padding padding padding padding\n"
        });
    }
    std::fs::write(fixtures().dir.join(&file), body).expect("write");
    t.media
        .url(&format!("/{route}/{}", file.replace('%', "%25")))
}

/// The crafted files of one test: (label, URL). The secrets they name exist, except the one
/// `missing` names, so that the two answers can be compared.
fn crafted(t: &TestApp, route: &str) -> Vec<(&'static str, String)> {
    let outside = tempfile::Builder::new()
        .prefix("secret-")
        .tempdir()
        .expect("tempdir")
        .keep();
    let absolute = outside.join("secret.mkv");
    secret_mkv(&absolute, "ABSOLUTE-SECRET");
    // Beside every job folder: in this process's scratch folder.
    secret_mkv(&t.app.tmp_dir().join("beside.mkv"), "SCRATCH-SECRET");
    // In the data folder, where renders of other organisations are: reached from a job
    // folder through the scratch folder's parent.
    let data = t.dir.path();
    secret_mkv(&data.join("render.mkv"), "DATA-SECRET");
    let data_name = data.file_name().expect("name").to_string_lossy();
    let png = std::fs::read(png_frame()).expect("png");
    vec![
        (
            "hls file:",
            serve(
                t,
                route,
                "abs.m3u8",
                playlist(&format!("file://{}", absolute.display())).as_bytes(),
            ),
        ),
        (
            "hls missing",
            serve(
                t,
                route,
                "missing.m3u8",
                playlist(&format!("file://{}/none.mkv", outside.display())).as_bytes(),
            ),
        ),
        (
            "hls ../",
            serve(t, route, "rel.m3u8", playlist("../beside.mkv").as_bytes()),
        ),
        (
            "hls ../../data",
            serve(
                t,
                route,
                "data.m3u8",
                playlist(&format!("../../{data_name}/render.mkv")).as_bytes(),
            ),
        ),
        (
            "ffconcat",
            serve(
                t,
                route,
                "ffconcat",
                b"ffconcat version 1.0\nfile 'media'\nfile 'media'\n",
            ),
        ),
        (
            "concat",
            serve(
                t,
                route,
                "concat.txt",
                format!("file '{}'\n", absolute.display()).as_bytes(),
            ),
        ),
        ("image pattern", serve(t, route, "frame%d.png", &png)),
    ]
}

/// One PNG frame made with ffmpeg.
fn png_frame() -> std::path::PathBuf {
    let path = fixtures()
        .dir
        .join(format!("crafted-{}-frame.png", std::process::id()));
    if !path.exists() {
        let out = path.to_str().expect("utf8");
        let args = [
            "-f",
            "lavfi",
            "-i",
            "testsrc=s=32x32:d=1",
            "-frames:v",
            "1",
            out,
        ];
        ffmpeg_in(&fixtures().dir, &args);
    }
    path
}

#[tokio::test]
async fn playlists_scripts_and_images_are_refused_at_submit_with_one_message() {
    let t = TestApp::start().await;
    let org = t.org("attacker", 10_000).await;
    let before = t.wallet(&org).await;
    let mut messages = Vec::new();
    for (label, url) in crafted(&t, "media") {
        let (s, body) = t.submit_url(&org, "video", &url).await;
        assert_eq!(
            (s, body["error"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("unsupported_media")),
            "{label}: {body}"
        );
        let message = body["message"].as_str().expect("message").to_owned();
        for secret in ["SECRET", "secret.mkv", "render.mkv", "No such file"] {
            assert!(!message.contains(secret), "{label}: {message}");
        }
        messages.push((label, message));
    }
    // Whether the named file exists changes nothing a client can see.
    assert_eq!(messages[0].1, messages[1].1, "{messages:?}");
    assert_eq!(t.wallet(&org).await, before, "nothing is charged");
    t.stop().await;
}

/// When the submit-time probe cannot run (its budget spent), the worker's probe and decode
/// refuse the same files: the scan fails as `decode_failed`, uncharged, with one message.
#[tokio::test]
async fn the_worker_refuses_them_too_when_the_submit_probe_was_skipped() {
    let t = TestApp::start_with(
        |c| c.fetch.probe_timeout_secs = 1,
        std::sync::Arc::new(crate::support::FixtureAnalyzer),
    )
    .await;
    let org = t.org("attacker", 10_000).await;
    let before = t.wallet(&org).await;
    let mut errors = Vec::new();
    for (label, url) in crafted(&t, "slow") {
        let (s, body) = t.submit_url(&org, "video", &url).await;
        assert_eq!(
            s,
            StatusCode::ACCEPTED,
            "{label}: the probe was to be skipped: {body}"
        );
        let id = body["scan_id"].as_str().expect("id").to_owned();
        assert_eq!(t.wait_final(&id).await, "error", "{label}");
        let (_, scan) = t.get(&org, &format!("/scans/{id}")).await;
        let error = scan["error"].as_str().expect("error").to_owned();
        assert!(error.starts_with("decode_failed"), "{label}: {scan}");
        assert!(
            !error.contains("SECRET") && !error.contains(".mkv"),
            "{label}: {error}"
        );
        errors.push(error);
    }
    assert_eq!(
        errors[0], errors[1],
        "existing and missing files read the same"
    );
    assert_eq!(
        t.wallet(&org).await,
        before,
        "failed scans are never charged"
    );
    t.stop().await;
}
