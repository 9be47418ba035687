//! `ffprobe` as a bounded child process: what streams a file has and how long it is.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::process::Command;

/// What the container says about a file.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeInfo {
    /// Seconds; `None` when the container does not say (e.g. a partial download).
    pub duration_sec: Option<f64>,
    pub has_video: bool,
    pub has_audio: bool,
    pub has_subtitles: bool,
    /// The first subtitle stream's `language` tag as the container gives it (ISO 639-2 in
    /// Matroska and MP4, sometimes ISO 639-1 or BCP 47): at most [`MAX_TAG`] ASCII letters,
    /// hyphens and underscores, and never `und`; `None` otherwise. A declaration, not a
    /// measurement: [`crate::speech::text_language`] decides what it is worth.
    pub subtitle_language: Option<String>,
    pub format_name: String,
    /// The allowed demuxer that read it (see [`super::demuxers`]), for decodes to force.
    pub demuxer: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("ffprobe is not installed (install the Debian package `ffmpeg`)")]
    Missing,
    #[error("ffprobe took longer than {0:?}")]
    Timeout(Duration),
    #[error("not a readable media file: {0}")]
    NotMedia(String),
}

/// What a client reads when the file is a playlist, a script, an image or another format that
/// is not a single-file audio or video container.
pub const NOT_A_CONTAINER: &str =
    "the file is not an audio or video container (playlists, scripts and images are not accepted)";

#[derive(Deserialize)]
struct Output {
    #[serde(default)]
    streams: Vec<Stream>,
    format: Option<Format>,
}

#[derive(Deserialize)]
struct Stream {
    codec_type: Option<String>,
    #[serde(default)]
    disposition: Disposition,
    duration: Option<String>,
    #[serde(default)]
    tags: Tags,
}

#[derive(Deserialize, Default)]
struct Tags {
    language: Option<String>,
}

/// The longest language tag kept (`zh-Hant-TW` is 10).
pub const MAX_TAG: usize = 16;

/// A container's language tag, kept when it is short, made of letters, hyphens and
/// underscores, and says something (`und` is ISO 639-2's "undetermined").
fn language_tag(tag: Option<&str>) -> Option<String> {
    let tag = tag?.trim();
    let plausible = !tag.is_empty()
        && tag.len() <= MAX_TAG
        && tag
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == '-' || c == '_');
    (plausible && !tag.eq_ignore_ascii_case("und")).then(|| tag.to_ascii_lowercase())
}

#[derive(Deserialize, Default)]
struct Disposition {
    #[serde(default)]
    attached_pic: i64,
}

#[derive(Deserialize)]
struct Format {
    duration: Option<String>,
    format_name: Option<String>,
}

/// Runs `ffprobe` on `path`, killed if it outlives `timeout`. Only the single-file container
/// formats of [`super::demuxers::ALLOWED`] are read: a playlist, a script or an image pattern
/// is not media, whatever files it names.
///
/// # Errors
/// `Missing` when ffprobe is absent, `Timeout`, or `NotMedia` when it cannot read the file,
/// its format is not allowed, or it finds neither audio nor video.
pub async fn probe(path: &Path, timeout: Duration) -> Result<ProbeInfo, ProbeError> {
    let (path, dir) = super::decode::located(path);
    let mut command = Command::new("ffprobe");
    command
        .args(["-v", "error", "-show_entries", "format=duration,format_name:stream=codec_type,duration:stream_disposition=attached_pic:stream_tags=language", "-of", "json"])
        .args(super::demuxers::input_args(None))
        .arg(&path)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    super::demuxers::limit_address_space(&mut command);
    let child = command.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ProbeError::Missing
        } else {
            ProbeError::NotMedia(e.to_string())
        }
    })?;
    let output = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| ProbeError::Timeout(timeout))?
        .map_err(|e| ProbeError::NotMedia(e.to_string()))?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        let line = err.lines().last().unwrap_or("ffprobe failed").trim();
        // ffprobe prefixes the file path; clients should not see our temp paths.
        let line = line.rsplit(": ").next().unwrap_or(line);
        // A refused format says so in one message, the same whether or not the files it names
        // exist: nothing about the machine's files reaches the client.
        if err.contains("not on whitelist") {
            return Err(ProbeError::NotMedia(NOT_A_CONTAINER.into()));
        }
        return Err(ProbeError::NotMedia(line.chars().take(200).collect()));
    }
    let parsed: Output =
        serde_json::from_slice(&output.stdout).map_err(|e| ProbeError::NotMedia(e.to_string()))?;
    let mut info = ProbeInfo {
        duration_sec: None,
        has_video: false,
        has_audio: false,
        has_subtitles: false,
        subtitle_language: None,
        format_name: String::new(),
        demuxer: None,
    };
    let mut stream_max: Option<f64> = None;
    for s in &parsed.streams {
        match s.codec_type.as_deref() {
            // A still picture attached to an audio file (cover art) is not video.
            Some("video") if s.disposition.attached_pic == 0 => info.has_video = true,
            Some("audio") => info.has_audio = true,
            Some("subtitle") if !info.has_subtitles => {
                // The stream the transcript is read from (`-map 0:s:0`).
                info.has_subtitles = true;
                info.subtitle_language = language_tag(s.tags.language.as_deref());
            }
            _ => {}
        }
        if let Some(d) = s
            .duration
            .as_deref()
            .and_then(|d| d.parse::<f64>().ok())
            .filter(|d| d.is_finite() && *d > 0.0)
        {
            stream_max = Some(stream_max.map_or(d, |m: f64| m.max(d)));
        }
    }
    if let Some(format) = &parsed.format {
        info.format_name = format.format_name.clone().unwrap_or_default();
        info.demuxer = super::demuxers::allowed(&info.format_name);
        info.duration_sec = format
            .duration
            .as_deref()
            .and_then(|d| d.parse::<f64>().ok())
            .filter(|d| d.is_finite() && *d > 0.0)
            .or(stream_max);
    }
    if info.demuxer.is_none() {
        return Err(ProbeError::NotMedia(NOT_A_CONTAINER.into()));
    }
    if !info.has_video && !info.has_audio {
        return Err(ProbeError::NotMedia(
            "the file has neither an audio nor a video stream".into(),
        ));
    }
    Ok(info)
}

/// Whether `ffprobe` can be run at all (for start-up and readiness checks).
pub async fn ffprobe_available() -> bool {
    Command::new("ffprobe")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::language_tag;

    #[test]
    fn a_language_tag_is_kept_only_when_it_can_name_a_language() {
        assert_eq!(language_tag(Some("spa")).as_deref(), Some("spa"));
        assert_eq!(language_tag(Some(" pt-BR ")).as_deref(), Some("pt-br"));
        for refused in ["", "und", "UND", "a b", "fr;rm", "ç", &"x".repeat(17)] {
            assert_eq!(language_tag(Some(refused)), None, "{refused:?}");
        }
        assert_eq!(language_tag(None), None);
    }
}

/// Property tests (security round 4, point 7): a container's language tag is kept only in its
/// bounded form, and naming a language from any tag never fails.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn a_kept_language_tag_is_short_plain_and_says_something(
            tag in prop_oneof!["\\PC{0,40}", "[a-zA-Z_-]{0,20}", " *(und|UND|und-x) *"]
        ) {
            if let Some(kept) = language_tag(Some(&tag)) {
                prop_assert!(!kept.is_empty() && kept.len() <= MAX_TAG);
                prop_assert!(kept.chars().all(|c| c.is_ascii_lowercase() || c == '-' || c == '_'));
                prop_assert_ne!(kept.as_str(), "und");
                let _ = crate::speech::text_language::from_tag(&kept);
            }
            let _ = crate::speech::text_language::from_tag(&tag);
        }
    }
}
