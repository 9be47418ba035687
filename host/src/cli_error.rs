//! How the binary reports a failed command: one line on stderr, with a stable code first and
//! the hint that the error itself carries (a missing driver names its Debian package, a missing
//! model names `scripts/fetch-models`).
//!
//! Why not `main` returning the error: Rust then prints the `Debug` form, the cause chain on
//! separate lines and, with `RUST_BACKTRACE` set (common in containers and CI), a stack trace of
//! 30 frames. A person reading a terminal or a script reading stderr wants the one line.

use crate::inference::gpu::GpuError;
use crate::inference::model::ModelError;
use crate::inference::run::QualiaError;
use crate::media::decode::DecodeError;
use crate::media::fetch::FetchError;

/// A stable code for the first error in the chain whose kind is known, `failed` otherwise.
#[must_use]
pub fn code(error: &anyhow::Error) -> &'static str {
    for cause in error.chain() {
        if let Some(e) = cause.downcast_ref::<FetchError>() {
            return e.code();
        }
        if let Some(e) = cause.downcast_ref::<QualiaError>() {
            return match e {
                QualiaError::Gpu(g) => gpu_code(g),
                QualiaError::Decode(d) => decode_code(d),
                other => other.code(),
            };
        }
        if let Some(g) = cause.downcast_ref::<GpuError>() {
            return gpu_code(g);
        }
        if let Some(d) = cause.downcast_ref::<DecodeError>() {
            return decode_code(d);
        }
        if cause.downcast_ref::<ModelError>().is_some() {
            return "model_invalid";
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::NotFound => "not_found",
                std::io::ErrorKind::PermissionDenied => "permission_denied",
                _ => "io_error",
            };
        }
    }
    "failed"
}

fn gpu_code(e: &GpuError) -> &'static str {
    match e {
        GpuError::NoAdapter(_) => "no_gpu_adapter",
        _ => "gpu_error",
    }
}

fn decode_code(e: &DecodeError) -> &'static str {
    match e {
        DecodeError::Missing => "ffmpeg_missing",
        _ => "decode_failed",
    }
}

/// The error as one line: `error[code]: outer: inner: …`, each cause once (a context that
/// already quotes its cause is not followed by it again), newlines folded.
#[must_use]
pub fn one_line(error: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in error.chain() {
        let text = cause
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if text.is_empty() || parts.last().is_some_and(|p| p.contains(&text)) {
            continue;
        }
        parts.push(text);
    }
    format!("error[{}]: {}", code(error), parts.join(": "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn the_line_has_the_code_every_cause_once_and_no_newlines() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let e = Err::<(), _>(io)
            .context("/models/whisper/model.bin (run scripts/fetch-models)")
            .context("qualia v2 needs the speech models in /models")
            .expect_err("error");
        assert_eq!(
            one_line(&e),
            "error[not_found]: qualia v2 needs the speech models in /models: \
             /models/whisper/model.bin (run scripts/fetch-models): No such file or directory"
        );
        let gpu = anyhow::Error::new(QualiaError::Gpu(GpuError::NoAdapter("none".into())));
        let line = one_line(&gpu);
        assert!(line.starts_with("error[no_gpu_adapter]: "), "{line}");
        assert!(line.contains("mesa-vulkan-drivers"), "{line}");
        // A context that repeats its cause, and a multi-line message.
        let inner = anyhow::anyhow!("the clip is 200.0 s long;\nat most 180 s");
        let e = inner.context("the clip is 200.0 s long; at most 180 s can be analysed");
        assert_eq!(
            one_line(&e),
            "error[failed]: the clip is 200.0 s long; at most 180 s can be analysed"
        );
        let too_long = anyhow::Error::new(QualiaError::TooLong(200.0, 180));
        assert!(one_line(&too_long).starts_with("error[video_too_long]: the clip is 200.0 s"));
    }
}
