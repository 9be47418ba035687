//! Which of ffmpeg's demuxers may read fetched media, and the options that hold every
//! `ffprobe` and `ffmpeg` call on such a file to them.
//!
//! ffmpeg guesses a file's format from its bytes. Some formats are not containers but
//! *references*: an HLS or DASH playlist, a `concat`/`ffconcat` script, an image-sequence
//! pattern, an SDP description. Given one of those, ffmpeg opens the files or URLs it names,
//! so a client that serves a playlist naming `file:///srv/…` or `../artifacts/…` made the
//! service read local files, another organisation's render included, and return them in its
//! transcript. Denying the known offenders one by one would miss the next one; instead only
//! the single-file container formats listed here may run (`-format_whitelist`), only the
//! `file` protocol may open anything (`-protocol_whitelist`), and a decode after a probe
//! names the probed demuxer (`-f`) so ffmpeg does not guess a second time.

/// The demuxers a fetched file may be read with: containers and raw audio streams that read
/// one file and nothing else. Each name is ffmpeg's (`ffmpeg -demuxers`), matched against
/// any alias of the probed format (`mov` matches `mov,mp4,m4a,3gp,3g2,mj2`).
///
/// Left out on purpose: every playlist or script (`hls`, `dash`, `concat`, `webm_dash_manifest`,
/// `imf`, `sdp`, `rtp`, `rtsp`), every image format and pattern (`image2`, `*_pipe`), devices
/// and generators (`lavfi`, `v4l2`), and standalone text formats (`srt`, `ass`, `tty`, …),
/// which are not audio or video.
pub const ALLOWED: &[&str] = &[
    // Video (and audio) containers.
    "mov", "matroska", "avi", "flv", "mpegts", "mpeg", "asf", "ogg",
    // Audio files and raw audio streams.
    "wav", "w64", "mp3", "flac", "aac", "ac3", "eac3", "aiff", "caf", "amr", "au", "wv",
];

/// The only protocol a probe or decode may open: the local path it was given. Nothing
/// fetched may make ffmpeg open a network URL, a pipe, `data:`, `subfile:` or `concat:`.
pub const PROTOCOLS: &str = "file";

/// The input options that bind ffmpeg or ffprobe to [`ALLOWED`] and [`PROTOCOLS`], and to
/// `demuxer` when the probe has already named it. They go before `-i` (ffmpeg) or the path
/// (ffprobe).
#[must_use]
pub fn input_args(demuxer: Option<&'static str>) -> Vec<String> {
    let mut args = vec![
        "-protocol_whitelist".to_owned(),
        PROTOCOLS.to_owned(),
        "-format_whitelist".to_owned(),
        ALLOWED.join(","),
    ];
    if let Some(d) = demuxer {
        args.extend(["-f".to_owned(), d.to_owned()]);
    }
    args
}

/// The allowed demuxer that ffprobe's `format_name` (a comma-separated alias list, such as
/// `mov,mp4,m4a,3gp,3g2,mj2`) names, for a later `-f`. `None` for any format not allowed.
#[must_use]
pub fn allowed(format_name: &str) -> Option<&'static str> {
    format_name
        .split(',')
        .map(str::trim)
        .find_map(|alias| ALLOWED.iter().copied().find(|a| *a == alias))
}

#[cfg(test)]
mod tests {
    use super::super::decode::tests::ffmpeg;
    use super::*;

    /// Plumbing: the alias lists ffprobe prints map to the demuxer to force, and reference
    /// formats map to nothing.
    #[test]
    fn probed_format_names_map_to_allowed_demuxers_only() {
        assert_eq!(allowed("mov,mp4,m4a,3gp,3g2,mj2"), Some("mov"));
        assert_eq!(allowed("matroska,webm"), Some("matroska"));
        assert_eq!(allowed("wav"), Some("wav"));
        for refused in [
            "hls", "dash", "concat", "image2", "png_pipe", "lavfi", "sdp", "srt", "",
        ] {
            assert_eq!(allowed(refused), None, "{refused}");
        }
        let args = input_args(Some("mov"));
        assert_eq!(&args[..2], ["-protocol_whitelist", "file"]);
        assert!(!args[3].contains("hls") && args[3].contains("matroska"));
        assert_eq!(&args[4..], ["-f", "mov"]);
    }

    /// A secret beside the job: a Matroska file whose subtitle line and audio the crafted
    /// files below name, an image sequence, and one file in the job folder itself.
    struct Crafted {
        _root: tempfile::TempDir,
        job: std::path::PathBuf,
        secret: std::path::PathBuf,
    }

    const SECRET_LINE: &str = "SECRET-LINE-42";

    fn crafted() -> Crafted {
        let root = tempfile::tempdir().expect("tempdir");
        let (job, secret_dir) = (root.path().join("job"), root.path().join("secret"));
        std::fs::create_dir_all(&job).expect("job");
        std::fs::create_dir_all(&secret_dir).expect("secret");
        std::fs::write(
            secret_dir.join("s.srt"),
            format!("1\n00:00:00,000 --> 00:00:04,000\n{SECRET_LINE}\n"),
        )
        .expect("srt");
        let secret = secret_dir.join("secret.mkv");
        ffmpeg(
            &secret_dir,
            &[
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
                "secret.mkv",
            ],
        );
        // A file beside the fetched one (a job folder must never hold one; this proves it
        // would not be read if it did).
        std::fs::copy(&secret, job.join("beside.mkv")).expect("copy");
        ffmpeg(
            &job,
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc=s=32x32:d=1",
                "-frames:v",
                "1",
                "frame001.png",
            ],
        );
        let s = secret.display();
        let playlist = |entry: &str| {
            format!("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\n{entry}\n#EXT-X-ENDLIST\n")
        };
        for (name, text) in [
            ("hls-file-url", playlist(&format!("file://{s}"))),
            ("hls-relative", playlist("../secret/secret.mkv")),
            ("hls-beside", playlist("beside.mkv")),
            (
                "ffconcat",
                "ffconcat version 1.0\nfile 'beside.mkv'\n".to_owned(),
            ),
            ("concat-script", format!("file '{s}'\nfile 'beside.mkv'\n")),
        ] {
            std::fs::write(job.join(name), text).expect("write");
        }
        // An image-sequence pattern: the fetched file's name expands to `frame001.png`.
        std::fs::copy(job.join("frame001.png"), job.join("frame%03d.png")).expect("copy");
        Crafted {
            _root: root,
            job,
            secret,
        }
    }

    /// The crafted files that make an unguarded ffmpeg read a file other than the one given.
    const CRAFTED: [&str; 6] = [
        "hls-file-url",
        "hls-relative",
        "hls-beside",
        "ffconcat",
        "concat-script",
        "frame%03d.png",
    ];

    /// The fixtures are real attacks: without the guard, ffmpeg reads the secret's subtitle
    /// line through each playlist, and the pattern through its neighbour. Without this the
    /// refusal test below could pass on files that never worked.
    #[test]
    fn the_crafted_files_read_other_files_when_unguarded() {
        let c = crafted();
        assert!(c.secret.exists());
        for name in ["hls-file-url", "hls-relative", "hls-beside", "ffconcat"] {
            let out = std::process::Command::new("ffmpeg")
                .args([
                    "-v", "error", "-nostdin", "-i", name, "-map", "0:s:0", "-f", "srt", "pipe:1",
                ])
                .current_dir(&c.job)
                .output()
                .expect("ffmpeg");
            assert!(
                String::from_utf8_lossy(&out.stdout).contains(SECRET_LINE),
                "{name}: the fixture no longer leaks unguarded: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let out = std::process::Command::new("ffprobe")
            .args([
                "-v",
                "error",
                "-show_entries",
                "format=format_name",
                "-of",
                "csv=p=0",
                "frame%03d.png",
            ])
            .current_dir(&c.job)
            .output()
            .expect("ffprobe");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "image2");
    }

    /// Security: no probe and no decode of a crafted file opens another file. Each is refused
    /// as not a container, with one message whatever the files it names (so a scan's failure
    /// tells nothing about which files exist).
    #[tokio::test]
    async fn playlists_scripts_and_patterns_are_refused_by_probe_and_decode() {
        use super::super::decode::{self, DecodeError, DecodeSpec, VideoFrames};
        use super::super::probe::{self, NOT_A_CONTAINER, ProbeError};
        let c = crafted();
        let spec = DecodeSpec {
            timeout: std::time::Duration::from_secs(30),
            ..DecodeSpec::default()
        };
        for name in CRAFTED {
            let path = c.job.join(name);
            let probed = probe::probe(&path, std::time::Duration::from_secs(30)).await;
            // A concat script without its `ffconcat` header is not even recognised; every
            // other file is recognised and refused by name.
            match &probed {
                Err(ProbeError::NotMedia(m)) if name == "concat-script" => {
                    assert!(m.contains("Invalid data"), "{m}");
                }
                other => assert_eq!(
                    other,
                    &Err(ProbeError::NotMedia(NOT_A_CONTAINER.into())),
                    "{name}"
                ),
            }
            let subtitles = decode::read_subtitles(&path, spec, 64 * 1024).await;
            assert!(
                !matches!(&subtitles, Ok(text) if text.contains(SECRET_LINE)),
                "{name}: {subtitles:?}"
            );
            let audio = decode::read_audio(&path, spec, 16_000 * 10).await;
            assert!(
                matches!(audio, Err(DecodeError::Failed(_))),
                "{name}: {audio:?}"
            );
            let video = match VideoFrames::open(&path, spec) {
                Ok(mut v) => {
                    let mut frame = vec![0u8; v.frame_len()];
                    let first = v.next_frame(&mut frame).await;
                    (first, v.finish().await)
                }
                Err(e) => (Err(e.clone()), Err(e)),
            };
            assert!(
                matches!(video, (Ok(false) | Err(_), Err(_))),
                "{name}: a frame was decoded: {video:?}"
            );
        }
        // A decode told which demuxer the probe found cannot be talked into another.
        let forced = DecodeSpec {
            demuxer: Some("matroska"),
            ..spec
        };
        let audio = decode::read_audio(&c.job.join("hls-beside"), forced, 16_000).await;
        assert!(audio.is_err(), "{audio:?}");
        // The same containers still read: the secret itself is a Matroska file.
        let info = probe::probe(&c.secret, std::time::Duration::from_secs(30))
            .await
            .expect("a Matroska file probes");
        assert_eq!(info.demuxer, Some("matroska"));
        let text = decode::read_subtitles(&c.secret, spec, 64 * 1024)
            .await
            .expect("its subtitles read");
        assert!(text.contains(SECRET_LINE));
    }
}
