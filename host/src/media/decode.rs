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
        Self::spawn_with(path, &[], args, spec, kind, None)
    }

    /// [`Pipe::spawn`] with input options (`before` goes before `-i`) and, optionally, a second
    /// output: `second` becomes the child's fd 0, which ffmpeg writes as `pipe:0`. ffmpeg runs
    /// with `-nostdin`, so it never reads that descriptor; giving it the write end of a pipe
    /// as fd 0 is how a second stream leaves one process without a named FIFO on disk or an
    /// `unsafe` descriptor dance before `exec`.
    fn spawn_with(
        path: &Path,
        before: &[&str],
        args: &[&str],
        spec: &DecodeSpec,
        kind: &'static str,
        second: Option<std::io::PipeWriter>,
    ) -> Result<Self, DecodeError> {
        let (path, dir) = located(path);
        let stdin = second.map_or_else(Stdio::null, Stdio::from);
        let mut command = Command::new("ffmpeg");
        command
            .args(["-v", "error", "-nostdin"])
            .args(super::demuxers::input_args(spec.demuxer))
            .args(before)
            .arg("-i")
            .arg(&path)
            .current_dir(dir)
            .args(args)
            .arg("pipe:1")
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        super::demuxers::limit_address_space(&mut command);
        let mut child = command.spawn().map_err(|e| {
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
        Self::spawn_filtered(path, spec, &Self::main_filter(&spec, None), None)
    }

    /// The filter chain of the frames the model reads: `fps` frames per second in the model's
    /// geometry, each with its `detail` copy stacked below it when there is one (see
    /// [`VideoFrames::open_with_detail`]).
    fn main_filter(spec: &DecodeSpec, detail: Option<(u32, u32)>) -> String {
        match detail {
            None => format!("fps={},{}", spec.fps, Self::geometry(spec)),
            Some((dw, dh)) => {
                let detail_spec = DecodeSpec {
                    width: dw,
                    height: dh,
                    ..*spec
                };
                format!(
                    "fps={},split=2[m][d];[m]{},pad={dw}:{}:0:0:color=black[top];[d]{}[bottom];[top][bottom]vstack=inputs=2",
                    spec.fps,
                    Self::geometry(spec),
                    spec.height,
                    Self::geometry(&detail_spec),
                )
            }
        }
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
        Self::check_detail(&spec, detail)?;
        let filter = Self::main_filter(&spec, Some(detail));
        Self::spawn_filtered(path, spec, &filter, Some(detail))
    }

    fn check_detail(spec: &DecodeSpec, (dw, dh): (u32, u32)) -> Result<(), DecodeError> {
        if dw < spec.width || dh < spec.height {
            return Err(DecodeError::Failed(format!(
                "detail frames {dw}x{dh} are smaller than the {}x{} frame",
                spec.width, spec.height
            )));
        }
        Ok(())
    }

    /// The frames of [`VideoFrames::open`] (or, with `detail`, of
    /// [`VideoFrames::open_with_detail`]) and, from the same decode, the clip's first
    /// `max_keyframes` keyframes as [`VideoFrames::open_keyframes`] gives them: the same
    /// frames, byte for byte (a test holds the two to that), without a second ffmpeg.
    ///
    /// The keyframes are split off the decoded stream before the frame-rate conversion, so a
    /// keyframe the `fps` filter drops is still seen. They come out on a second pipe, which the
    /// caller must drain while it reads the frames (on a blocking thread: see [`Keyframes`]);
    /// a full pipe stalls the decoder. ffmpeg (5.1, measured) releases a keyframe on that pipe
    /// only when the next keyframe passes its filters, or at the end: what the caller has read
    /// lags the frames by one keyframe.
    ///
    /// # Errors
    /// As [`VideoFrames::open_with_detail`]; `Failed` when the pipe cannot be made.
    pub fn open_with_keyframes(
        path: &Path,
        spec: DecodeSpec,
        detail: Option<(u32, u32)>,
        max_keyframes: usize,
    ) -> Result<(Self, Keyframes), DecodeError> {
        if let Some(d) = detail {
            Self::check_detail(&spec, d)?;
        }
        let graph = format!(
            "[0:V:0]split=2[all][keys];[keys]select='eq(key\\,1)*lt(selected_n\\,{max_keyframes})',{}[k];[all]{}[v]",
            Self::geometry(&spec),
            Self::main_filter(&spec, detail),
        );
        let (reader, writer) = std::io::pipe().map_err(|e| DecodeError::Failed(e.to_string()))?;
        let pipe = Pipe::spawn_with(
            path,
            &[],
            &[
                "-filter_complex",
                &graph,
                // The keyframes first, on fd 0 (see `Pipe::spawn_with`); then the frames,
                // which `spawn_with` sends to stdout.
                "-map",
                "[k]",
                "-fps_mode",
                "passthrough",
                // Each keyframe is written whole as soon as ffmpeg emits it, not 32 KiB at a
                // time as its output buffer fills.
                "-flush_packets",
                "1",
                "-f",
                "rawvideo",
                "-pix_fmt",
                "rgb24",
                "pipe:0",
                "-map",
                "[v]",
                "-f",
                "rawvideo",
                "-pix_fmt",
                "rgb24",
            ],
            &spec,
            "video",
            Some(writer),
        )?;
        let keyframes = Keyframes {
            reader,
            frame_len: (spec.width * spec.height * 3) as usize,
        };
        Ok((Self { pipe, spec, detail }, keyframes))
    }

    /// Only the clip's keyframes (intra frames; no frame-rate conversion), in the same frame
    /// geometry as [`VideoFrames::open`], from a decode of their own (`-skip_frame nokey`).
    /// The scan no longer runs this (see [`VideoFrames::open_with_keyframes`]); it stays as the
    /// reference the tests and `brainscan bench` compare with. ffmpeg's VP9 decoder ignores
    /// `-skip_frame`, so for VP9 it gives every frame.
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
            None,
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

/// The keyframe stream of [`VideoFrames::open_with_keyframes`]. Its reads block, so it is
/// read on a blocking thread; it ends when the decoder exits or is killed (when its
/// [`VideoFrames`] is dropped or runs past its deadline), so a reader never outlives the decode.
pub struct Keyframes {
    reader: std::io::PipeReader,
    frame_len: usize,
}

impl Keyframes {
    /// Bytes of one keyframe (`width x height` RGB24).
    #[must_use]
    pub fn frame_len(&self) -> usize {
        self.frame_len
    }

    /// Reads the next keyframe into `frame` (`frame_len()` bytes); a partial frame at the end
    /// is padded with black, as [`VideoFrames::next_frame`] pads one. `Ok(false)` at the end.
    ///
    /// # Errors
    /// A broken pipe.
    pub fn next_frame(&mut self, frame: &mut [u8]) -> std::io::Result<bool> {
        use std::io::Read;
        let mut filled = 0;
        while filled < frame.len() {
            match self.reader.read(&mut frame[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if filled == 0 {
            return Ok(false);
        }
        frame[filled..].fill(0);
        Ok(true)
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

    /// Every frame of a [`VideoFrames`] stream.
    async fn all_frames(mut v: VideoFrames) -> Vec<Vec<u8>> {
        let mut frame = vec![0u8; v.frame_len()];
        let mut out = Vec::new();
        while v.next_frame(&mut frame).await.expect("reads") {
            out.push(frame.clone());
        }
        v.finish().await.expect("decodes");
        out
    }

    /// The single decode's two streams, drained together (a full keyframe pipe stalls ffmpeg).
    async fn single_pass(
        path: &Path,
        detail: Option<(u32, u32)>,
        max_keyframes: usize,
    ) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let (frames, mut keys) =
            VideoFrames::open_with_keyframes(path, DecodeSpec::default(), detail, max_keyframes)
                .expect("opens");
        let reader = tokio::task::spawn_blocking(move || {
            let mut frame = vec![0u8; keys.frame_len()];
            let mut out = Vec::new();
            while keys.next_frame(&mut frame).expect("reads") {
                out.push(frame.clone());
            }
            out
        });
        let frames = all_frames(frames).await;
        (frames, reader.await.expect("joins"))
    }

    /// Frames with the key flag, as ffprobe reads them.
    fn key_flags(path: &Path) -> usize {
        let out = std::process::Command::new("ffprobe")
            .args(["-v", "error", "-select_streams", "v:0", "-show_entries"])
            .args(["frame=key_frame", "-of", "csv=p=0"])
            .arg(path)
            .output()
            .expect("ffprobe runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.trim() == "1")
            .count()
    }

    /// The single decode gives the frames of the plain decode and the keyframes of the old
    /// keyframe-only decode, byte for byte, as a set (the extent and the levels do not depend
    /// on order; with an open GOP ffmpeg emits two keyframes the other way round). Codecs:
    /// H.264 with B-frames and an open GOP, HEVC, and MJPEG (every frame a keyframe, so the
    /// cap applies). A picture that changes halfway and sits in bars, so keyframes differ.
    #[tokio::test]
    async fn one_decode_gives_the_frames_and_keyframes_of_two() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clips: [(&str, &[&str]); 3] = [
            (
                "open_gop.mp4",
                &[
                    "-c:v",
                    "libx264",
                    "-x264-params",
                    "open-gop=1:keyint=15",
                    "-bf",
                    "3",
                ],
            ),
            (
                "hevc.mp4",
                &[
                    "-c:v",
                    "libx265",
                    "-x265-params",
                    "keyint=12:log-level=error",
                ],
            ),
            ("all_intra.avi", &["-c:v", "mjpeg", "-q:v", "5"]),
        ];
        for (name, codec) in clips {
            let mut args = vec![
                "-f",
                "lavfi",
                "-i",
                "testsrc2=s=240x180:r=25:d=3",
                "-f",
                "lavfi",
                "-i",
                "mandelbrot=s=240x180:r=25",
                "-filter_complex",
                "[0][1]blend=all_expr='if(gt(T,1.5),B,A)',pad=320:180:40:0:black",
                "-t",
                "3",
            ];
            args.extend_from_slice(codec);
            args.push(name);
            ffmpeg(dir.path(), &args);
            let path = dir.path().join(name);
            let spec = DecodeSpec::default();
            let plain = all_frames(VideoFrames::open(&path, spec).expect("opens")).await;
            let mut old_keys =
                all_frames(VideoFrames::open_keyframes(&path, spec).expect("opens")).await;
            // The cap: MJPEG's 75 keyframes are cut to the first 40, as the old pass stopped.
            let cap = 40;
            old_keys.truncate(cap);
            let (frames, mut keys) = single_pass(&path, None, cap).await;
            assert_eq!(frames.len(), 30, "{name}: 10 frames a second");
            assert!(frames == plain, "{name}: the frames are the plain decode's");
            assert!(old_keys.len() >= 3, "{name}: {} keyframes", old_keys.len());
            old_keys.sort();
            keys.sort();
            assert!(
                keys == old_keys,
                "{name}: {} keyframes against {}",
                keys.len(),
                old_keys.len()
            );
        }
        // With the detector's copies: the stacked frames are those of `open_with_detail`.
        let path = dir.path().join("open_gop.mp4");
        let detail = (320, 180);
        let stacked = all_frames(
            VideoFrames::open_with_detail(&path, DecodeSpec::default(), detail).expect("opens"),
        )
        .await;
        let (frames, keys) = single_pass(&path, Some(detail), 400).await;
        assert!(
            frames == stacked,
            "the stacked frames are open_with_detail's"
        );
        let (_, plain_keys) = single_pass(&path, None, 400).await;
        assert!(
            keys == plain_keys,
            "the keyframes do not depend on the detail copies"
        );
    }

    /// ffmpeg's VP9 decoder ignores `-skip_frame`, so a keyframe-only decode of a VP9 clip
    /// reads every frame; the single decode reads the frames flagged key, as for every other
    /// codec (the reason for qualia 2.11.1, `EVALUATION-PLAN.md` deviation 31).
    #[tokio::test]
    async fn vp9_keyframes_are_the_key_frames_not_every_frame() {
        let dir = tempfile::tempdir().expect("tempdir");
        ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc2=s=240x180:r=25:d=4",
                "-c:v",
                "libvpx-vp9",
                "-g",
                "25",
                "-deadline",
                "realtime",
                "clip.webm",
            ],
        );
        let path = dir.path().join("clip.webm");
        let old =
            all_frames(VideoFrames::open_keyframes(&path, DecodeSpec::default()).expect("opens"))
                .await;
        assert_eq!(
            old.len(),
            100,
            "the VP9 decoder gave every frame to the old pass"
        );
        let (_, keys) = single_pass(&path, None, 400).await;
        let flagged = key_flags(&path);
        assert!(
            (2..=5).contains(&flagged),
            "{flagged} keyframes in 4 s at one per 25 frames"
        );
        assert_eq!(keys.len(), flagged);
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
