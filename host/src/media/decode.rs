//! Decoding with `ffmpeg` child processes into what the inference core reads: small RGB frames
//! at a fixed rate (aspect kept by padding) and 16 kHz mono f32 PCM.
//!
//! Both are streamed over pipes, a frame or a block at a time, so a 180 s clip never sits in
//! memory decoded. Each stream is its own child (`kill_on_drop`), bounded by a deadline; a
//! decoder that crashes or hangs takes down a child, never the service.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::Instant;

/// How clips are sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeSpec {
    pub fps: u32,
    pub width: u32,
    pub height: u32,
    pub sample_rate: u32,
    /// Wall-clock bound for a whole stream.
    pub timeout: Duration,
    /// The demuxer the probe found (`-f`), so ffmpeg reads the file as what was checked;
    /// `None` lets it guess among [`super::demuxers::ALLOWED`] only.
    pub demuxer: Option<&'static str>,
}

impl Default for DecodeSpec {
    fn default() -> Self {
        Self {
            fps: 10,
            width: 160,
            height: 90,
            sample_rate: 16_000,
            timeout: Duration::from_secs(300),
            demuxer: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("ffmpeg is not installed (install the Debian package `ffmpeg`)")]
    Missing,
    #[error("the clip has no {0} stream")]
    NoStream(&'static str),
    #[error("decoding took longer than {0:?}")]
    Timeout(Duration),
    #[error("the decoder failed: {0}")]
    Failed(String),
}

/// `path` made absolute, and the folder a decoder of it runs in: the file's own (a job's
/// folder holds only its file), so no relative name a file could carry points anywhere else.
pub(crate) fn located(path: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = absolute
        .parent()
        .map_or_else(|| std::path::PathBuf::from("/"), Path::to_path_buf);
    (absolute, dir)
}

/// A running `ffmpeg` whose stdout is a raw stream.
struct Pipe {
    child: Child,
    stdout: ChildStdout,
    /// What ffmpeg wrote to stderr, read as it comes (see [`drain_stderr`]).
    stderr: Option<tokio::task::JoinHandle<String>>,
    deadline: Instant,
    timeout: Duration,
    kind: &'static str,
}

/// How much of ffmpeg's stderr is kept: its first lines (where "matches no streams" and the
/// input errors are) and its last (where the error that ended it is).
const STDERR_HEAD: usize = 4 * 1024;
const STDERR_TAIL: usize = 16 * 1024;

/// Reads ffmpeg's stderr while it decodes, keeping only [`STDERR_HEAD`] and [`STDERR_TAIL`]
/// bytes. Read only at the end, a pipe fills at 64 KiB: a corrupt file that makes ffmpeg write
/// more errors than that blocks it on the write, so the decode stalled until its deadline.
pub(crate) fn drain_stderr(
    mut err: tokio::process::ChildStderr,
) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        let (mut head, mut tail) = (Vec::new(), Vec::new());
        let mut skipped = false;
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = err.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut chunk = &buf[..n];
            if head.len() < STDERR_HEAD {
                let take = chunk.len().min(STDERR_HEAD - head.len());
                head.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
            }
            tail.extend_from_slice(chunk);
            if tail.len() > 2 * STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
                skipped = true;
            }
        }
        let mut text = String::from_utf8_lossy(&head).into_owned();
        if skipped {
            text.push_str("\n[...]\n");
        }
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    })
}

impl Pipe {
    fn spawn(
        path: &Path,
        args: &[&str],
        spec: &DecodeSpec,
        kind: &'static str,
    ) -> Result<Self, DecodeError> {
        Self::spawn_with(path, &[], args, spec, kind)
    }

    /// [`Pipe::spawn`] with input options (`before` goes before `-i`).
    fn spawn_with(
        path: &Path,
        before: &[&str],
        args: &[&str],
        spec: &DecodeSpec,
        kind: &'static str,
    ) -> Result<Self, DecodeError> {
        let (path, dir) = located(path);
        let mut child = Command::new("ffmpeg")
            .args(["-v", "error", "-nostdin"])
            .args(super::demuxers::input_args(spec.demuxer))
            .args(before)
            .arg("-i")
            .arg(&path)
            .current_dir(dir)
            .args(args)
            .arg("pipe:1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    DecodeError::Missing
                } else {
                    DecodeError::Failed(e.to_string())
                }
            })?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| DecodeError::Failed("no stdout pipe".into()))?;
        let stderr = child.stderr.take().map(drain_stderr);
        Ok(Self {
            child,
            stdout,
            stderr,
            deadline: Instant::now() + spec.timeout,
            timeout: spec.timeout,
            kind,
        })
    }

    /// Reads until `buf` is full or the stream ends; returns the bytes read.
    async fn fill(&mut self, buf: &mut [u8]) -> Result<usize, DecodeError> {
        let mut filled = 0;
        while filled < buf.len() {
            let n = tokio::time::timeout_at(self.deadline, self.stdout.read(&mut buf[filled..]))
                .await
                .map_err(|_| DecodeError::Timeout(self.timeout))?
                .map_err(|e| DecodeError::Failed(e.to_string()))?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        Ok(filled)
    }

    /// Fills `buf` completely. `Ok(false)` at a clean end of stream (nothing read).
    async fn read_full(&mut self, buf: &mut [u8]) -> Result<bool, DecodeError> {
        let filled = self.fill(buf).await?;
        if filled == 0 {
            return Ok(false);
        }
        // A partial frame at the end: pad with zeros (black) rather than drop it.
        buf[filled..].fill(0);
        Ok(true)
    }

    /// Waits for the exit status; a failed decoder reports the last line it printed.
    async fn finish(mut self) -> Result<(), DecodeError> {
        let status = tokio::time::timeout_at(self.deadline, self.child.wait())
            .await
            .map_err(|_| DecodeError::Timeout(self.timeout))?
            .map_err(|e| DecodeError::Failed(e.to_string()))?;
        // The child has exited, so its stderr is at end of file and the drain ends.
        let stderr = match self.stderr.take() {
            Some(task) => tokio::time::timeout_at(self.deadline, task)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        };
        if status.success() {
            return Ok(());
        }
        if stderr.contains("matches no streams") {
            return Err(DecodeError::NoStream(self.kind));
        }
        if stderr.contains("not on whitelist") {
            return Err(DecodeError::Failed(
                super::probe::NOT_A_CONTAINER.to_owned(),
            ));
        }
        let line = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("unknown error");
        // ffmpeg prefixes the input path; clients should not see our temp paths.
        let line = line.rsplit(": ").next().unwrap_or(line);
        Err(DecodeError::Failed(line.chars().take(200).collect()))
    }
}

/// Frames of the first real video stream (cover art is not video), `width x height` RGB24,
/// `fps` per second, letterboxed in black to keep the aspect ratio.
pub struct VideoFrames {
    pipe: Pipe,
    pub spec: DecodeSpec,
    /// The geometry of the larger copy of each frame that [`VideoFrames::open_with_detail`]
    /// stacks below it.
    detail: Option<(u32, u32)>,
}

impl VideoFrames {
    /// # Errors
    /// `Missing` when ffmpeg is absent; stream errors surface on read or [`Self::finish`].
    pub fn open(path: &Path, spec: DecodeSpec) -> Result<Self, DecodeError> {
        let filter = format!("fps={},{}", spec.fps, Self::geometry(&spec));
        Self::spawn_filtered(path, spec, &filter, None)
    }

    /// The first video stream through `filter`, as raw RGB24 frames.
    fn spawn_filtered(
        path: &Path,
        spec: DecodeSpec,
        filter: &str,
        detail: Option<(u32, u32)>,
    ) -> Result<Self, DecodeError> {
        let pipe = Pipe::spawn(
            path,
            &[
                "-map", "0:V:0", "-vf", filter, "-f", "rawvideo", "-pix_fmt", "rgb24",
            ],
            &spec,
            "video",
        )?;
        Ok(Self { pipe, spec, detail })
    }

    /// Like [`VideoFrames::open`], with a second copy of every frame at `detail` size (at
    /// least the frame's), scaled and padded the same way, from the same decode: a frame is
    /// then the model frame (padded on the right to the detail width) stacked on the detail
    /// copy. Decoding once matters: the decode, not the scaling, is most of the cost.
    /// [`split_detail`] takes a frame apart.
    ///
    /// # Errors
    /// As [`VideoFrames::open`]; `Failed` when `detail` is smaller than the frame.
    pub fn open_with_detail(
        path: &Path,
        spec: DecodeSpec,
        detail: (u32, u32),
    ) -> Result<Self, DecodeError> {
        let (dw, dh) = detail;
        if dw < spec.width || dh < spec.height {
            return Err(DecodeError::Failed(format!(
                "detail frames {dw}x{dh} are smaller than the {}x{} frame",
                spec.width, spec.height
            )));
        }
        let detail_spec = DecodeSpec {
            width: dw,
            height: dh,
            ..spec
        };
        let filter = format!(
            "fps={},split=2[m][d];[m]{},pad={dw}:{}:0:0:color=black[top];[d]{}[bottom];[top][bottom]vstack=inputs=2",
            spec.fps,
            Self::geometry(&spec),
            spec.height,
            Self::geometry(&detail_spec),
        );
        Self::spawn_filtered(path, spec, &filter, Some(detail))
    }

    /// Only the clip's keyframes (intra frames; no frame-rate conversion), in the same frame
    /// geometry as [`VideoFrames::open`]: a cheap look at the whole clip, since decoding
    /// keyframes skips every predicted frame.
    ///
    /// # Errors
    /// As [`VideoFrames::open`].
    pub fn open_keyframes(path: &Path, spec: DecodeSpec) -> Result<Self, DecodeError> {
        let filter = Self::geometry(&spec);
        let pipe = Pipe::spawn_with(
            path,
            &["-skip_frame", "nokey"],
            &[
                "-map",
                "0:V:0",
                "-vf",
                &filter,
                "-fps_mode",
                "passthrough",
                "-f",
                "rawvideo",
                "-pix_fmt",
                "rgb24",
            ],
            &spec,
            "video",
        )?;
        Ok(Self {
            pipe,
            spec,
            detail: None,
        })
    }

    /// Scale to fit the frame with the aspect kept, centred on black padding.
    fn geometry(spec: &DecodeSpec) -> String {
        let (w, h) = (spec.width, spec.height);
        format!(
            "scale={w}:{h}:force_original_aspect_ratio=decrease:flags=area,pad={w}:{h}:(ow-iw)/2:(oh-ih)/2:color=black,format=rgb24"
        )
    }

    /// Bytes of one frame (with its detail copy, when there is one).
    pub fn frame_len(&self) -> usize {
        match self.detail {
            Some((dw, dh)) => (dw * (self.spec.height + dh) * 3) as usize,
            None => (self.spec.width * self.spec.height * 3) as usize,
        }
    }

    /// Reads the next frame into `frame` (`frame_len()` bytes). `Ok(false)` at the end.
    ///
    /// # Errors
    /// Timeout or a broken pipe.
    pub async fn next_frame(&mut self, frame: &mut [u8]) -> Result<bool, DecodeError> {
        self.pipe.read_full(frame).await
    }

    /// Checks how the decoder ended; call after the last frame.
    ///
    /// # Errors
    /// `NoStream("video")`, `Failed` with ffmpeg's message, `Timeout`.
    pub async fn finish(self) -> Result<(), DecodeError> {
        self.pipe.finish().await
    }
}

/// Takes a frame of [`VideoFrames::open_with_detail`] apart: writes the `spec` frame into
/// `frame` (`width x height x 3` bytes) and returns the detail copy (`detail.0 x detail.1`
/// RGB24).
#[must_use]
pub fn split_detail<'a>(
    stacked: &'a [u8],
    spec: &DecodeSpec,
    detail: (u32, u32),
    frame: &mut [u8],
) -> &'a [u8] {
    let (w, h, dw) = (
        spec.width as usize * 3,
        spec.height as usize,
        detail.0 as usize * 3,
    );
    for (row, out) in frame.chunks_exact_mut(w).take(h).enumerate() {
        out.copy_from_slice(&stacked[row * dw..row * dw + w]);
    }
    &stacked[h * dw..]
}

/// The first audio stream, downmixed to mono f32 at `sample_rate`.
pub struct AudioSamples {
    pipe: Pipe,
    pub spec: DecodeSpec,
    bytes: Vec<u8>,
}

impl AudioSamples {
    /// # Errors
    /// `Missing` when ffmpeg is absent; stream errors surface on read or [`Self::finish`].
    pub fn open(path: &Path, spec: DecodeSpec) -> Result<Self, DecodeError> {
        let rate = spec.sample_rate.to_string();
        let pipe = Pipe::spawn(
            path,
            &[
                "-map",
                "0:a:0",
                "-ac",
                "1",
                "-ar",
                &rate,
                "-f",
                "f32le",
                "-acodec",
                "pcm_f32le",
            ],
            &spec,
            "audio",
        )?;
        Ok(Self {
            pipe,
            spec,
            bytes: Vec::new(),
        })
    }

    /// Reads up to `out.len()` samples; returns how many (0 at the end). Only the last block
    /// may be short. Non-finite samples are replaced by 0.
    ///
    /// # Errors
    /// Timeout or a broken pipe.
    pub async fn next_block(&mut self, out: &mut [f32]) -> Result<usize, DecodeError> {
        self.bytes.resize(out.len() * 4, 0);
        let filled = self.pipe.fill(&mut self.bytes).await?;
        let samples = filled / 4;
        for (o, b) in out
            .iter_mut()
            .zip(self.bytes[..samples * 4].chunks_exact(4))
        {
            let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            *o = if v.is_finite() { v } else { 0.0 };
        }
        Ok(samples)
    }

    /// # Errors
    /// `NoStream("audio")`, `Failed` with ffmpeg's message, `Timeout`.
    pub async fn finish(self) -> Result<(), DecodeError> {
        self.pipe.finish().await
    }
}

/// The first audio stream as 16 kHz (per `spec`) mono samples, at most `max_samples` of
/// them (the rest is not decoded).
///
/// # Errors
/// As [`AudioSamples`].
pub async fn read_audio(
    path: &Path,
    spec: DecodeSpec,
    max_samples: usize,
) -> Result<Vec<f32>, DecodeError> {
    let mut audio = AudioSamples::open(path, spec)?;
    let mut out = Vec::new();
    let mut block = vec![0f32; spec.sample_rate as usize];
    while out.len() < max_samples {
        let n = audio.next_block(&mut block).await?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&block[..n.min(max_samples - out.len())]);
    }
    if out.len() >= max_samples {
        // Stopped early on purpose: the decoder's broken pipe is not an error.
        drop(audio);
        return Ok(out);
    }
    audio.finish().await?;
    Ok(out)
}

/// The first subtitle stream converted to SubRip text, at most `max_bytes` of it. Bitmap
/// subtitles (DVD, PGS) cannot be converted and fail with `Failed`.
///
/// # Errors
/// `NoStream("subtitle")`, `Failed`, `Timeout`, or `Failed` when the text is too long.
pub async fn read_subtitles(
    path: &Path,
    spec: DecodeSpec,
    max_bytes: usize,
) -> Result<String, DecodeError> {
    let mut pipe = Pipe::spawn(path, &["-map", "0:s:0", "-f", "srt"], &spec, "subtitle")?;
    let mut buf = vec![0u8; max_bytes + 1];
    let n = pipe.fill(&mut buf).await?;
    if n > max_bytes {
        return Err(DecodeError::Failed(format!(
            "the subtitle stream is longer than {max_bytes} bytes"
        )));
    }
    pipe.finish().await?;
    buf.truncate(n);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Runs ffmpeg in `dir` (fixtures for the media tests); panics when it fails.
    pub(crate) fn ffmpeg(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("ffmpeg")
            .args(["-loglevel", "error", "-y"])
            .args(args)
            .current_dir(dir)
            .status()
            .expect("ffmpeg must be installed (scripts/setup installs it)");
        assert!(ok.success(), "{args:?}");
    }

    async fn count_frames(path: &Path, spec: DecodeSpec) -> Result<(usize, Vec<u8>), DecodeError> {
        let mut v = VideoFrames::open(path, spec)?;
        let mut frame = vec![0u8; v.frame_len()];
        let mut n = 0;
        let mut first = Vec::new();
        while v.next_frame(&mut frame).await? {
            if n == 0 {
                first = frame.clone();
            }
            n += 1;
        }
        v.finish().await?;
        Ok((n, first))
    }

    async fn count_samples(path: &Path, spec: DecodeSpec) -> Result<(usize, f32), DecodeError> {
        let mut a = AudioSamples::open(path, spec)?;
        let mut block = vec![0f32; 4096];
        let (mut n, mut peak) = (0, 0f32);
        loop {
            let got = a.next_block(&mut block).await?;
            if got == 0 {
                break;
            }
            peak = block[..got].iter().fold(peak, |p, s| p.max(s.abs()));
            n += got;
        }
        a.finish().await?;
        Ok((n, peak))
    }

    /// A corrupt MPEG-TS that makes ffmpeg write over 200 KB of errors (more than a pipe
    /// holds) while it decodes: the decode must still run to its end, not stall on a full
    /// stderr pipe until the deadline.
    #[tokio::test]
    async fn a_decoder_that_writes_many_errors_does_not_stall() {
        let dir = tempfile::tempdir().expect("tempdir");
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc2=s=320x240:r=25:d=30",
                "-c:v",
                "mpeg2video",
                "-q:v",
                "4",
                "-f",
                "mpegts",
                "clean.ts",
            ],
        );
        // Flip 8 payload bytes of every 188-byte packet (headers kept, so the demuxer goes on
        // and the decoder complains about every slice).
        let mut ts = std::fs::read(dir.path().join("clean.ts")).expect("ts");
        let mut x: u32 = 12_345;
        for p in (0..ts.len().saturating_sub(188)).step_by(188) {
            for _ in 0..8 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345) & 0x7fff_ffff;
                ts[p + 4 + (x % 180) as usize] ^= (x >> 8) as u8;
            }
        }
        let path = dir.path().join("corrupt.ts");
        std::fs::write(&path, &ts).expect("write");
        let written = std::process::Command::new("ffmpeg")
            .args(["-v", "error", "-nostdin", "-i"])
            .arg(&path)
            .args([
                "-vf",
                "fps=10,scale=160:90",
                "-f",
                "rawvideo",
                "-pix_fmt",
                "rgb24",
            ])
            .args(["-y", "/dev/null"])
            .output()
            .expect("ffmpeg");
        assert!(
            written.stderr.len() >= 200_000,
            "the fixture must make ffmpeg write at least 200 KB of errors, it wrote {}",
            written.stderr.len()
        );
        let spec = DecodeSpec {
            timeout: Duration::from_secs(60),
            ..DecodeSpec::default()
        };
        let started = std::time::Instant::now();
        let outcome = count_frames(&path, spec).await;
        assert!(
            !matches!(outcome, Err(DecodeError::Timeout(_))),
            "stalled: {outcome:?}"
        );
        let (frames, _) = outcome.expect("ffmpeg decodes what it can and exits 0");
        assert!(frames >= 250, "{frames} frames of 300");
        assert!(started.elapsed() < spec.timeout);
    }

    #[tokio::test]
    async fn video_with_stereo_48k_audio_gives_exact_frames_and_16k_mono() {
        let dir = tempfile::tempdir().expect("tempdir");
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc=size=320x180:rate=25",
                "-f",
                "lavfi",
                "-i",
                "sine=frequency=440:sample_rate=48000",
                "-t",
                "3",
                "-ac",
                "2",
                "-c:v",
                "mpeg4",
                "-c:a",
                "pcm_s16le",
                "clip.mkv",
            ],
        );
        let path = dir.path().join("clip.mkv");
        let spec = DecodeSpec::default();
        let (frames, _) = count_frames(&path, spec).await.expect("frames");
        assert_eq!(frames, 30, "3 s at 10 fps");
        let (samples, peak) = count_samples(&path, spec).await.expect("audio");
        assert!(
            (samples as i64 - 48_000).abs() <= 160,
            "{samples} samples for 3 s at 16 kHz"
        );
        assert!(peak > 0.05 && peak <= 1.0, "a sine is audible: {peak}");
    }

    #[tokio::test]
    async fn aspect_is_kept_by_black_padding() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 4:3 white into a 16:9 frame: black bars left and right.
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "color=c=white:s=120x90:r=10",
                "-t",
                "1",
                "-c:v",
                "mpeg4",
                "-q:v",
                "2",
                "square.mp4",
            ],
        );
        let (_, first) = count_frames(&dir.path().join("square.mp4"), DecodeSpec::default())
            .await
            .expect("frames");
        let px = |x: usize, y: usize| first[(y * 160 + x) * 3] as i32;
        assert!(px(2, 45) < 20, "left bar is black: {}", px(2, 45));
        assert!(px(157, 45) < 20, "right bar is black");
        assert!(px(80, 45) > 230, "picture stays white: {}", px(80, 45));
    }

    #[tokio::test]
    async fn the_detail_copy_leaves_the_model_frame_bit_identical() {
        let dir = tempfile::tempdir().expect("tempdir");
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc2=s=176x144:r=25",
                "-t",
                "1",
                "-c:v",
                "mpeg4",
                "-q:v",
                "3",
                "clip.mp4",
            ],
        );
        let path = dir.path().join("clip.mp4");
        let spec = DecodeSpec::default();
        let mut plain = VideoFrames::open(&path, spec).expect("opens");
        let mut stacked = VideoFrames::open_with_detail(&path, spec, (320, 180)).expect("opens");
        assert_eq!(stacked.frame_len(), 320 * 270 * 3);
        let (mut a, mut b, mut frame) = (
            vec![0u8; plain.frame_len()],
            vec![0u8; stacked.frame_len()],
            vec![0u8; plain.frame_len()],
        );
        let mut n = 0;
        while plain.next_frame(&mut a).await.expect("reads") {
            assert!(
                stacked.next_frame(&mut b).await.expect("reads"),
                "same frame count"
            );
            let detail = split_detail(&b, &spec, (320, 180), &mut frame);
            assert!(frame == a, "frame {n} differs from the plain decode");
            assert_eq!(detail.len(), 320 * 180 * 3);
            // The detail copy is the same picture: 176x144 fits as 220x180 at x 50..270.
            let luma = |f: &[u8], w: usize, x: usize, y: usize| f[(y * w + x) * 3];
            assert!(luma(detail, 320, 10, 90) < 20 && luma(detail, 320, 310, 90) < 20);
            let mean = |f: &[u8]| f.iter().map(|v| f64::from(*v)).sum::<f64>() / f.len() as f64;
            let (m, d) = (mean(&a), mean(detail));
            assert!((m - d).abs() < 0.03 * m, "same picture: mean {m} vs {d}");
            n += 1;
        }
        assert!(!stacked.next_frame(&mut b).await.expect("reads"));
        assert_eq!(n, 10);
        plain.finish().await.expect("clean end");
        stacked.finish().await.expect("clean end");
        assert!(VideoFrames::open_with_detail(&path, spec, (80, 45)).is_err());
    }

    #[tokio::test]
    async fn audio_only_and_cover_art_have_no_video_and_silent_video_has_no_audio() {
        let dir = tempfile::tempdir().expect("tempdir");
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "sine=frequency=300:sample_rate=8000",
                "-t",
                "2",
                "tone.wav",
            ],
        );
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "color=c=red:s=64x64",
                "-frames:v",
                "1",
                "cover.png",
            ],
        );
        ffmpeg(
            dir.path(),
            &[
                "-i",
                "tone.wav",
                "-i",
                "cover.png",
                "-map",
                "0",
                "-map",
                "1",
                "-c:a",
                "libmp3lame",
                "-c:v",
                "png",
                "-disposition:v",
                "attached_pic",
                "song.mp3",
            ],
        );
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc=size=64x36:rate=5",
                "-t",
                "1",
                "-c:v",
                "mpeg4",
                "mute.mp4",
            ],
        );
        let spec = DecodeSpec::default();
        for file in ["tone.wav", "song.mp3"] {
            let path = dir.path().join(file);
            assert_eq!(
                count_frames(&path, spec).await.err(),
                Some(DecodeError::NoStream("video")),
                "{file}"
            );
            let (samples, _) = count_samples(&path, spec).await.expect("audio");
            assert!(
                (samples as i64 - 32_000).abs() <= 1_200,
                "{file}: {samples}"
            );
        }
        let mute = dir.path().join("mute.mp4");
        assert_eq!(
            count_samples(&mute, spec).await.err(),
            Some(DecodeError::NoStream("audio"))
        );
        assert_eq!(count_frames(&mute, spec).await.expect("frames").0, 10);
    }

    #[tokio::test]
    async fn corrupt_and_non_media_files_are_typed_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let html = dir.path().join("page.html");
        std::fs::write(&html, "<html><body>hello</body></html>").expect("write");
        let junk = dir.path().join("junk.mp4");
        std::fs::write(
            &junk,
            (0..50_000u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
                .collect::<Vec<_>>(),
        )
        .expect("write");
        let empty = dir.path().join("empty.mp4");
        std::fs::write(&empty, b"").expect("write");
        for path in [html, junk, empty] {
            match count_frames(&path, DecodeSpec::default()).await {
                Err(DecodeError::Failed(m)) => assert!(
                    !m.contains(dir.path().to_str().expect("utf8")),
                    "no temp paths leak: {m}"
                ),
                other => panic!("{}: {other:?}", path.display()),
            }
        }
    }

    #[tokio::test]
    async fn a_truncated_file_yields_what_decodes() {
        let dir = tempfile::tempdir().expect("tempdir");
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc=size=160x90:rate=10",
                "-t",
                "4",
                "-c:v",
                "mpeg4",
                "-f",
                "mpegts",
                "full.ts",
            ],
        );
        let full = std::fs::read(dir.path().join("full.ts")).expect("read");
        let cut = dir.path().join("cut.ts");
        std::fs::write(&cut, &full[..full.len() / 2]).expect("write");
        let (frames, _) = count_frames(&cut, DecodeSpec::default())
            .await
            .expect("a cut stream decodes up to the cut");
        assert!((5..40).contains(&frames), "{frames}");
    }
}
