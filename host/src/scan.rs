//! What a scan is asked to do: the normalised request, its states and stages.
//!
//! Validation and normalisation live here rather than in the HTTP layer so the CLI and the
//! worker agree with the API on what a valid request is.

use serde::{Deserialize, Serialize};
use url::Url;

/// The four built-in lenses, in their canonical order.
pub const BUILTIN_LENSES: [&str; 4] = ["attention", "memory", "purchase_intent", "manipulation"];

/// Lenses scored when a request names none.
pub const DEFAULT_LENSES: [&str; 3] = ["attention", "purchase_intent", "manipulation"];

/// The only model that runs. `mary` is accepted by name and runs on `qualia` (spec rule 1).
pub const MODEL: &str = "qualia";

/// Price of one completed `qualia` scan, in US cents.
pub const PRICE_CENTS: i64 = 250;

/// Longest clip accepted, in seconds (spec: 3 minutes).
pub const MAX_DURATION_SECS: f64 = 180.0;

/// How many lens names of a request are read; later ones are ignored like unknown names.
pub const MAX_LENS_NAMES: usize = 64;

/// What the client asked for, after defaults and normalisation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanRequest {
    pub input: InputSpec,
    pub model: String,
    pub requested_model: String,
    pub lenses: Vec<String>,
    pub options: ScanOptions,
    pub webhook_url: Option<String>,
}

/// The content to analyse: always one asset URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputSpec {
    /// `video`, `audio` or `url`, as submitted.
    pub kind: String,
    /// The asset URL the service downloads.
    pub url: String,
    /// The media the client expects: `video` or `audio` (from the type or the url modality).
    pub modality: String,
}

/// Output options; they decide which optional fields GET shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanOptions {
    pub include_reasons: bool,
    pub include_benchmark: bool,
    pub include_raw: bool,
    pub include_fmri: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        Self {
            include_reasons: true,
            include_benchmark: true,
            include_raw: false,
            include_fmri: false,
        }
    }
}

/// Why a submission is refused before anything is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("{message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    #[error("{0}")]
    Unsupported(String),
}

fn invalid(field: &'static str, message: impl Into<String>) -> RequestError {
    RequestError::Invalid {
        field,
        message: message.into(),
    }
}

/// Raw input fields as they arrive; the API layer deserialises into this.
#[derive(Debug, Clone, Default)]
pub struct RawInput {
    pub kind: Option<String>,
    pub url: Option<String>,
    pub video_url: Option<String>,
    pub audio_url: Option<String>,
    pub text: Option<String>,
    pub modality: Option<String>,
}

/// Longest URL accepted anywhere in a request.
pub const MAX_URL_LEN: usize = 2048;

/// Checks that a URL is in the grammar the OpenAPI document states ([`crate::url_syntax`]):
/// absolute http(s) with an ASCII host and no credentials. Address-level checks (private
/// ranges, metadata hosts) happen when it is resolved, in `media::guard`.
///
/// # Errors
/// `Invalid` naming `field` for anything else.
pub fn check_url(field: &'static str, raw: &str) -> Result<Url, RequestError> {
    if raw.len() > MAX_URL_LEN {
        return Err(invalid(
            field,
            format!("{field} is longer than {MAX_URL_LEN} characters"),
        ));
    }
    if !crate::url_syntax::matches(raw) {
        return Err(invalid(
            field,
            format!(
                "{field} is not a URL this API accepts: http or https, a host name in ASCII \
                 (the xn-- form of an international name is not accepted; use its address), an \
                 IPv4 or [IPv6] address, an optional port, no credentials, and no spaces or \
                 non-ASCII characters (percent-encode them)"
            ),
        ));
    }
    let url =
        Url::parse(raw).map_err(|e| invalid(field, format!("{field} is not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(
            field,
            format!("{field} must use http or https, not {}", url.scheme()),
        ));
    }
    if url.host().is_none() {
        return Err(invalid(field, format!("{field} has no host")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            field,
            format!("{field} must not carry credentials"),
        ));
    }
    Ok(url)
}

/// Picks the asset URL for an input per the spec's rules.
///
/// # Errors
/// `Unsupported` for text-only or image input; `Invalid` for a missing or bad URL.
pub fn normalise_input(raw: &RawInput) -> Result<InputSpec, RequestError> {
    let kind = raw
        .kind
        .as_deref()
        .ok_or_else(|| invalid("input.type", "input.type is required (video, audio or url)"))?;
    // Every URL field the input's shape names is checked when present, the one not used
    // included: the OpenAPI document says what each may hold, and a request it calls invalid
    // is refused rather than half-read. Null is absent.
    let checked = |field: &'static str, v: &Option<String>| -> Result<Option<Url>, RequestError> {
        v.as_deref().map(|u| check_url(field, u)).transpose()
    };
    let (field, url, modality) = match kind {
        "video" | "audio" => {
            let (named_field, named) = if kind == "video" {
                ("input.video_url", &raw.video_url)
            } else {
                ("input.audio_url", &raw.audio_url)
            };
            let named = checked(named_field, named)?;
            let fallback = checked("input.url", &raw.url)?;
            let (field, url) = match (named, fallback) {
                (Some(u), _) => (named_field, Some(u)),
                (None, Some(u)) => ("input.url", Some(u)),
                (None, None) => (named_field, None),
            };
            (field, url, kind.to_owned())
        }
        "url" => {
            let modality = raw.modality.clone().unwrap_or_else(|| "video".to_owned());
            match modality.as_str() {
                "video" | "audio" => {}
                "image" => {
                    return Err(RequestError::Unsupported(
                        "image input is not supported: the qualia model reads video and audio only"
                            .into(),
                    ));
                }
                other => {
                    return Err(invalid(
                        "input.modality",
                        format!("input.modality must be video, audio or image, not {other:?}"),
                    ));
                }
            }
            ("input.url", checked("input.url", &raw.url)?, modality)
        }
        "text" => {
            return Err(RequestError::Unsupported(
                "text input is not supported: the qualia model reads video and audio only".into(),
            ));
        }
        other => {
            return Err(invalid(
                "input.type",
                format!("input.type must be video, audio or url, not {other:?}"),
            ));
        }
    };
    let Some(url) = url else {
        if raw.text.as_deref().is_some_and(|t| !t.trim().is_empty()) {
            return Err(RequestError::Unsupported(
                "text input is not supported: supply a video or audio URL".into(),
            ));
        }
        return Err(invalid(
            field,
            format!("{field} is required for input.type {kind:?}"),
        ));
    };
    Ok(InputSpec {
        kind: kind.to_owned(),
        url: url.to_string(),
        modality,
    })
}

/// De-duplicates and filters the requested lenses, keeping first-seen order; applies the
/// default three when none were given, and when nothing of what was given is a lens (an empty
/// list, or only unknown names): the spec ignores unknown values, so such a request is the
/// same as one that names no lens. `available` is every lens name the service can score.
pub fn normalise_lenses(requested: Option<&[String]>, available: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for lens in requested.unwrap_or_default() {
        let lens = lens.trim();
        if available.iter().any(|a| a == lens) && !out.iter().any(|o| o == lens) {
            out.push(lens.to_owned());
        }
    }
    if out.is_empty() {
        return DEFAULT_LENSES.iter().map(|s| (*s).to_owned()).collect();
    }
    out
}

/// Maps the requested model name to the model that runs.
///
/// # Errors
/// `Invalid` for a name that is neither `qualia` nor `mary`.
pub fn normalise_model(requested: Option<&str>) -> Result<(String, String), RequestError> {
    match requested.unwrap_or(MODEL) {
        m @ ("qualia" | "mary") => Ok((MODEL.to_owned(), m.to_owned())),
        other => Err(invalid(
            "model",
            format!("model must be qualia or mary, not {other:?}"),
        )),
    }
}

/// Scan lifecycle states (the spec's five).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScanStatus {
    Queued,
    Processing,
    Complete,
    Error,
    Cancelled,
}

impl ScanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Processing => "processing",
            Self::Complete => "complete",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => Self::Queued,
            "processing" => Self::Processing,
            "complete" => Self::Complete,
            "error" => Self::Error,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    pub const ALL: [Self; 5] = [
        Self::Queued,
        Self::Processing,
        Self::Complete,
        Self::Error,
        Self::Cancelled,
    ];
}

/// Pipeline stages, shown in the in-flight response as `stage` with a `progress` percentage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Queued,
    Downloading,
    Probing,
    Decoding,
    Analysing,
    Assembling,
    Done,
    Failed,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Downloading => "downloading",
            Self::Probing => "probing",
            Self::Decoding => "decoding",
            Self::Analysing => "analysing",
            Self::Assembling => "assembling",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }

    /// Progress at the start of the stage, so clients see a monotone bar.
    pub fn progress(self) -> i64 {
        match self {
            Self::Queued => 0,
            Self::Downloading => 5,
            Self::Probing => 30,
            Self::Decoding => 35,
            Self::Analysing => 60,
            Self::Assembling => 90,
            Self::Done | Self::Failed => 100,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn lenses_are_deduplicated_filtered_and_defaulted() {
        let available = s(&BUILTIN_LENSES);
        assert_eq!(
            normalise_lenses(None, &available),
            s(&["attention", "purchase_intent", "manipulation"])
        );
        assert_eq!(
            normalise_lenses(
                Some(&s(&["memory", "emotion", "memory", "attention", "bogus"])),
                &available
            ),
            s(&["memory", "attention"])
        );
        for ignored in [s(&["emotion"]), Vec::new(), s(&["bogus", " "])] {
            assert_eq!(
                normalise_lenses(Some(&ignored), &available),
                s(&DEFAULT_LENSES),
                "{ignored:?}"
            );
        }
    }

    #[test]
    fn input_rules() {
        let video = RawInput {
            kind: Some("video".into()),
            url: Some("https://cdn.example.com/a.mp4".into()),
            ..Default::default()
        };
        assert_eq!(
            normalise_input(&video).map(|i| i.url),
            Ok("https://cdn.example.com/a.mp4".into())
        );
        let text = RawInput {
            kind: Some("text".into()),
            text: Some("hello".into()),
            ..Default::default()
        };
        assert!(matches!(
            normalise_input(&text),
            Err(RequestError::Unsupported(_))
        ));
        let text_only_video = RawInput {
            kind: Some("video".into()),
            text: Some("hello".into()),
            ..Default::default()
        };
        assert!(matches!(
            normalise_input(&text_only_video),
            Err(RequestError::Unsupported(_))
        ));
        let ftp = RawInput {
            kind: Some("audio".into()),
            audio_url: Some("ftp://x/y.mp3".into()),
            ..Default::default()
        };
        assert!(matches!(
            normalise_input(&ftp),
            Err(RequestError::Invalid {
                field: "input.audio_url",
                ..
            })
        ));
        let image = RawInput {
            kind: Some("url".into()),
            url: Some("https://x/y.png".into()),
            modality: Some("image".into()),
            ..Default::default()
        };
        assert!(matches!(
            normalise_input(&image),
            Err(RequestError::Unsupported(_))
        ));
    }

    #[test]
    fn models() {
        assert_eq!(normalise_model(None).map(|m| m.0), Ok("qualia".into()));
        assert_eq!(
            normalise_model(Some("mary")).map(|m| m.0),
            Ok("qualia".into())
        );
        assert!(normalise_model(Some("gpt")).is_err());
    }
}

/// Property tests (security round 4, point 7): a URL the API accepts is an http(s) address with
/// a host and no credentials, within the length limit, whatever was submitted.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn an_accepted_url_is_http_with_a_host_and_no_credentials(
            raw in prop_oneof![
                "\\PC{0,300}",
                "(https?|HTTP|ftp|file|javascript|data)://[a-zA-Z0-9.@:\\[\\]%/?#=&_~+-]{0,120}",
                "https?://[a-z0-9.-]{1,30}(:[0-9]{1,6})?(/[\\PC]{0,40})?",
            ]
        ) {
            let started = std::time::Instant::now();
            let checked = check_url("input.url", &raw);
            prop_assert!(started.elapsed() < std::time::Duration::from_secs(1));
            if let Ok(url) = checked {
                prop_assert!(raw.len() <= MAX_URL_LEN);
                prop_assert!(matches!(url.scheme(), "http" | "https"));
                prop_assert!(url.host().is_some());
                prop_assert!(url.username().is_empty() && url.password().is_none());
                prop_assert!(crate::url_syntax::matches(&raw));
            }
        }
    }
}
