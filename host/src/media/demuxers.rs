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

/// The most pixels a decoded picture of fetched media may have (`-max_pixels`): 4096 x 4096,
/// room for 4K UHD and DCI 4K. A file that declares more is refused before a frame buffer is
/// made (a 198 KB MP4 declaring 8192 x 8192 made a decode peak at 674 MB without it).
pub const MAX_PIXELS: u64 = 4096 * 4096;

/// Decoder threads per ffmpeg or ffprobe child (`-threads`): a scan's decode is one of
/// several things a worker runs, and each thread is a stack of address space.
pub const DECODE_THREADS: u32 = 2;

/// The address space an ffmpeg or ffprobe child may map ([`limit_address_space`]): 2 GiB,
/// far above a 720p decode (under 80 MB resident, measured on the corpus clips) and the
/// shared libraries it maps, far below what a crafted file could make it ask for.
pub const ADDRESS_SPACE_BYTES: u64 = 2 << 30;

/// The input options that bind ffmpeg or ffprobe to [`ALLOWED`] and [`PROTOCOLS`], and to
/// `demuxer` when the probe has already named it; that cap the picture ([`MAX_PIXELS`]) and the
/// decoder threads ([`DECODE_THREADS`]); and, when the demuxer is `mov`, that keep its external
/// data references closed (`-enable_drefs 0 -use_absolute_path 0`: off by ffmpeg's default
/// only, and a crafted MP4 with an `alis` reference read a file outside its job folder when
/// they were on). They go before `-i` (ffmpeg) or the path (ffprobe).
#[must_use]
pub fn input_args(demuxer: Option<&'static str>) -> Vec<String> {
    let mut args = vec![
        "-protocol_whitelist".to_owned(),
        PROTOCOLS.to_owned(),
        "-format_whitelist".to_owned(),
        ALLOWED.join(","),
        "-threads".to_owned(),
        DECODE_THREADS.to_string(),
        "-max_pixels".to_owned(),
        MAX_PIXELS.to_string(),
    ];
    if demuxer == Some("mov") {
        // Demuxer-private options: ffmpeg refuses them for any other demuxer, so they are
        // given only once the probe has named this one.
        args.extend(
            ["-enable_drefs", "0", "-use_absolute_path", "0"]
                .into_iter()
                .map(str::to_owned),
        );
    }
    if let Some(d) = demuxer {
        args.extend(["-f".to_owned(), d.to_owned()]);
    }
    args
}

/// Limits a child's address space to [`ADDRESS_SPACE_BYTES`] (`RLIMIT_AS`), set in the child
/// between fork and exec: past it, ffmpeg's allocations fail and it exits with an error rather
/// than growing until the machine swaps.
#[allow(unsafe_code)]
pub fn limit_address_space(command: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec. It makes one `setrlimit`
    // system call through rustix (no allocation, no lock, async-signal-safe) and touches no
    // state shared with the parent.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setrlimit(
                rustix::process::Resource::As,
                rustix::process::Rlimit {
                    current: Some(ADDRESS_SPACE_BYTES),
                    maximum: Some(ADDRESS_SPACE_BYTES),
                },
            )
            .map_err(std::io::Error::from)
        });
    }
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
        assert_eq!(&args[4..8], ["-threads", "2", "-max_pixels", "16777216"]);
        assert_eq!(
            &args[8..],
            ["-enable_drefs", "0", "-use_absolute_path", "0", "-f", "mov"]
        );
        // Other demuxers have no such options, and ffmpeg refuses options a demuxer lacks.
        assert_eq!(&input_args(Some("matroska"))[8..], ["-f", "matroska"]);
        assert_eq!(input_args(None).len(), 8);
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

    /// The boxes of an ISO BMFF byte range: (offset, size, type).
    fn boxes(bytes: &[u8], start: usize, end: usize) -> Vec<(usize, usize, [u8; 4])> {
        let mut out = Vec::new();
        let mut at = start;
        while at + 8 <= end {
            let size = u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4")) as usize;
            let kind: [u8; 4] = bytes[at + 4..at + 8].try_into().expect("4");
            if size < 8 || at + size > end {
                break;
            }
            out.push((at, size, kind));
            at += size;
        }
        out
    }

    /// The chain of boxes from the top level down to the first `dref`.
    fn dref_chain(bytes: &[u8], start: usize, end: usize) -> Option<Vec<(usize, usize)>> {
        for (at, size, kind) in boxes(bytes, start, end) {
            if &kind == b"dref" {
                return Some(vec![(at, size)]);
            }
            if [b"moov", b"trak", b"mdia", b"minf", b"dinf"].contains(&&kind)
                && let Some(mut chain) = dref_chain(bytes, at + 8, at + size)
            {
                chain.insert(0, (at, size));
                return Some(chain);
            }
        }
        None
    }

    /// Security round 4's crafted MP4: one PCM audio track whose data reference is a Mac
    /// alias (`alis`, as QuickTime writes for media kept in another file) to `secret.bin`,
    /// one folder up (`nlvl_from` 2), with the path `vol:secret.bin`. Made from an ffmpeg
    /// QuickTime file by replacing its self-contained `url ` entry; its `moov` follows the
    /// `mdat`, so no sample offset moves. Beside the job folder lies `secret.bin`: the same
    /// file with every sample byte 0x11. Returns (job folder, crafted file).
    fn mov_with_an_alias(root: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let job = root.join("job");
        std::fs::create_dir_all(&job).expect("job");
        ffmpeg(
            root,
            &[
                "-f",
                "lavfi",
                "-i",
                "sine=f=440:d=1:sample_rate=16000",
                "-ac",
                "1",
                "-c:a",
                "pcm_s16le",
                "-f",
                "mov",
                "base.mov",
            ],
        );
        let base = std::fs::read(root.join("base.mov")).expect("base");
        let chain = dref_chain(&base, 0, base.len()).expect("a dref box");
        let (dref_at, dref_size) = *chain.last().expect("dref");
        let mut fixed = vec![0u8; 10];
        fixed.push(3);
        fixed.extend(*b"vol");
        fixed.resize(fixed.len() + 24, 0);
        fixed.extend([0u8; 12]);
        fixed.push(10);
        fixed.extend(*b"secret.bin");
        fixed.resize(fixed.len() + 53, 0);
        fixed.extend([0u8; 16]);
        fixed.extend(2u16.to_be_bytes()); // nlvl_from: one folder up
        fixed.extend(1u16.to_be_bytes()); // nlvl_to
        fixed.extend([0u8; 16]);
        assert_eq!(fixed.len(), 150);
        let mut entry = Vec::new();
        entry.extend(*b"alis");
        entry.extend([0u8; 4]);
        entry.extend(fixed);
        entry.extend(2u16.to_be_bytes()); // an absolute path follows
        entry.extend(14u16.to_be_bytes());
        entry.extend(*b"vol:secret.bin");
        entry.extend(0xffffu16.to_be_bytes());
        entry.extend(0u16.to_be_bytes());
        let mut entry_with_size = (u32::try_from(entry.len() + 4).expect("small"))
            .to_be_bytes()
            .to_vec();
        entry_with_size.extend(entry);
        // The one entry after dref's header (size, type, version and flags, count).
        let old = dref_size - 16;
        let grow = entry_with_size.len() - old;
        let mut crafted = base[..dref_at + 16].to_vec();
        crafted.extend(&entry_with_size);
        crafted.extend(&base[dref_at + dref_size..]);
        for (at, size) in chain {
            let grown = u32::try_from(size + grow).expect("small").to_be_bytes();
            crafted[at..at + 4].copy_from_slice(&grown);
        }
        let path = job.join("mov-alis.mp4");
        std::fs::write(&path, crafted).expect("crafted");
        let mut secret = base.clone();
        for (at, size, kind) in boxes(&base, 0, base.len()) {
            if &kind == b"mdat" {
                secret[at + 8..at + size].fill(0x11);
            }
        }
        std::fs::write(root.join("secret.bin"), secret).expect("secret");
        (job, path)
    }

    /// The alias fixture is a real attack: with `-enable_drefs 1`, ffmpeg decodes the bytes of
    /// `../secret.bin` (samples of 0x1111); the probe and decode here, whose `mov` options keep
    /// drefs closed, read nothing of it.
    #[tokio::test]
    async fn an_mp4_alias_reference_reads_nothing_outside_its_job_folder() {
        use super::super::decode::{self, DecodeSpec};
        use super::super::probe;
        let root = tempfile::tempdir().expect("tempdir");
        let (job, crafted) = mov_with_an_alias(root.path());
        let leaked = |bytes: &[u8]| bytes.len() >= 1024 && bytes[..1024].iter().all(|b| *b == 0x11);
        let unguarded = std::process::Command::new("ffmpeg")
            .args([
                "-v",
                "error",
                "-nostdin",
                "-enable_drefs",
                "1",
                "-i",
                "mov-alis.mp4",
                "-f",
                "s16le",
                "-ac",
                "1",
                "pipe:1",
            ])
            .current_dir(&job)
            .output()
            .expect("ffmpeg");
        assert!(
            leaked(&unguarded.stdout),
            "the fixture no longer reads ../secret.bin unguarded: {}",
            String::from_utf8_lossy(&unguarded.stderr)
        );
        let info = probe::probe(&crafted, std::time::Duration::from_secs(30)).await;
        let demuxer = info.as_ref().ok().and_then(|i| i.demuxer);
        assert_eq!(demuxer, Some("mov"), "{info:?}");
        let spec = DecodeSpec {
            timeout: std::time::Duration::from_secs(30),
            demuxer,
            ..DecodeSpec::default()
        };
        let secret = 4369.0 / 32768.0; // 0x1111 as a sample
        match decode::read_audio(&crafted, spec, 16_000 * 2).await {
            Ok(samples) => assert!(
                !samples
                    .windows(256)
                    .any(|w| w.iter().all(|s| (s - secret).abs() < 1e-3)),
                "the secret's samples were decoded"
            ),
            Err(e) => eprintln!("refused: {e:?}"),
        }
    }

    /// Security round 4: a 198 KB MP4 declaring 8192 x 8192 pictures made a decode peak at
    /// 674 MB. Past [`MAX_PIXELS`] the probe refuses it before a frame buffer is made; and every
    /// child runs under the address-space limit.
    #[tokio::test]
    async fn a_picture_past_the_pixel_cap_is_refused_and_children_have_an_address_space_limit() {
        use super::super::probe::{self, ProbeError};
        let dir = tempfile::tempdir().expect("tempdir");
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "color=black:s=8192x8192:d=0.1",
                "-frames:v",
                "1",
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
                "huge.mp4",
            ],
        );
        let probed = probe::probe(
            &dir.path().join("huge.mp4"),
            std::time::Duration::from_secs(60),
        )
        .await;
        assert!(matches!(probed, Err(ProbeError::NotMedia(_))), "{probed:?}");
        let mut shell = tokio::process::Command::new("sh");
        shell.args(["-c", "ulimit -v"]);
        limit_address_space(&mut shell);
        let out = shell.output().await.expect("sh");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            (ADDRESS_SPACE_BYTES / 1024).to_string(),
            "ulimit -v reports KiB"
        );
    }
}
