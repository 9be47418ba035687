//! Response bodies, in the spec's field names, and how a stored scan becomes one.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::clock::iso8601;
use crate::result::{
    Benchmark, BuyMoment, Manipulation, Moment, NETWORKS, ScanResult, labeled_network,
};
use crate::scan::ScanRequest;
use crate::store::scans::ScanRow;

/// Answer to `POST /scans`.
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
pub struct CreatedScan {
    pub scan_id: String,
    /// Always `queued`.
    pub status: String,
    /// The normalised lens list the scan will score.
    pub lenses: Vec<String>,
}

/// A scan that is not complete: queued, processing, error or cancelled.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InFlightScan {
    pub scan_id: String,
    /// `queued`, `processing`, `error` or `cancelled`.
    pub status: String,
    /// Additive: the pipeline stage (`queued`, `downloading`, `probing`, `decoding`,
    /// `analysing`, `assembling`, `failed`).
    pub stage: String,
    /// Additive: 0-100.
    pub progress: i64,
    /// Why the scan ended, as `code: sentence`; present for `error` and `cancelled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One second of a completed scan's timeline.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TimelineEntry {
    pub second: u32,
    /// Lens name to 0-100 (50 is neutral).
    pub scores: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<BTreeMap<String, Benchmark>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasons: Option<BTreeMap<String, String>>,
    /// The seven network values, keyed by Yeo-7 network name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<BTreeMap<String, f64>>,
    /// The same values keyed by plain labels (Voice, Cognitive, Emotional, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_labeled: Option<BTreeMap<String, f64>>,
}

/// A completed scan. Optional fields follow the options chosen at creation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CompletedScan {
    pub scan_id: String,
    /// `complete`.
    pub status: String,
    pub overall_score: Option<f64>,
    /// Always a string (the spec's type): [`crate::result::UNSCORED_GRADE`] when there is no
    /// overall score, also for results stored before it was set.
    pub grade: String,
    pub duration_sec: f64,
    pub lenses: Vec<String>,
    pub timeline: Vec<TimelineEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moments: Option<Vec<Moment>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Present (possibly null) when include_reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buy_moments: Option<Option<Vec<BuyMoment>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manipulation: Option<Manipulation>,
    /// Present (possibly null) when include_fmri: a signed URL, working for one hour from
    /// this response, to the cortex video: an H.264 MP4 of the HCP surface coloured by the
    /// model's predicted network values, 10 frames a second, with the lens curves and a
    /// playhead. Null when the render could not be stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fmri_url: Option<Option<String>>,
    /// Object key behind `fmri_url`; signed per response by [`sign_artifact_urls`].
    #[serde(skip)]
    #[schema(ignore)]
    pub fmri_key: Option<String>,
    /// Additive, present (possibly null) when include_fmri: a signed one-hour URL to a PNG
    /// still of the video, at the clip's most pronounced predicted response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fmri_poster_url: Option<Option<String>>,
    /// Object key behind `fmri_poster_url`.
    #[serde(skip)]
    #[schema(ignore)]
    pub fmri_poster_key: Option<String>,
    /// Additive: true when nothing in the clip changes (black, silent or constant). The
    /// result then says "nothing to read": no overall score, no moments, a summary that says
    /// why.
    pub low_signal: bool,
    /// Additive: which streams the clip had (absent ones are excluded from the model).
    pub modalities: crate::result::StoredModalities,
    /// Additive: which model and analysis modules produced this result.
    #[schema(value_type = Object)]
    pub provenance: serde_json::Value,
    /// Additive: what was said, with times in seconds (subtitles or speech recognition;
    /// `provenance.transcript` says which). Empty when the clip had no speech.
    pub transcript: Vec<TranscriptEntry>,
}

/// `GET /scans/{id}`: the in-flight or the completed shape.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ScanView {
    Completed(Box<CompletedScan>),
    InFlight(InFlightScan),
}

/// What was scanned.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InputRef {
    /// The input type as submitted: `video`, `audio` or `url`.
    pub kind: String,
    pub value: String,
}

/// One entry of `GET /scans`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScanSummary {
    pub scan_id: String,
    pub input: InputRef,
    pub lenses: Vec<String>,
    /// The written read of a completed scan; for other states a sentence saying where the
    /// scan stands.
    pub summary: String,
    pub created_at: String,
    /// Additive: the scan's state.
    pub status: String,
}

/// `GET /scans`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScanList {
    /// Always `list`.
    pub object: String,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
    pub scans: Vec<ScanSummary>,
}

fn stored_parts(row: &ScanRow) -> Result<(ScanRequest, Option<ScanResult>), serde_json::Error> {
    let request: ScanRequest = serde_json::from_str(&row.request_json)?;
    let result = row
        .result_json
        .as_deref()
        .map(serde_json::from_str::<ScanResult>)
        .transpose()?;
    Ok((request, result))
}

/// Renders a stored scan as the API shows it.
///
/// # Errors
/// When stored JSON is unreadable (an internal error).
pub fn scan_view(row: &ScanRow) -> Result<ScanView, serde_json::Error> {
    let (request, result) = stored_parts(row)?;
    match (row.status.as_str(), result) {
        ("complete", Some(result)) => Ok(ScanView::Completed(Box::new(completed(
            &row.id, &request, result,
        )))),
        _ => Ok(ScanView::InFlight(InFlightScan {
            scan_id: row.id.clone(),
            status: row.status.clone(),
            stage: row.stage.clone(),
            progress: row.progress,
            error: matches!(row.status.as_str(), "error" | "cancelled").then(|| {
                row.error
                    .clone()
                    .unwrap_or_else(|| "unknown: the scan did not complete".into())
            }),
        })),
    }
}

/// Applies the creation options to a stored result.
pub fn completed(scan_id: &str, request: &ScanRequest, result: ScanResult) -> CompletedScan {
    let o = request.options;
    let timeline = result
        .timeline
        .into_iter()
        .map(|s| {
            let raw: Option<BTreeMap<String, f64>> = o.include_raw.then(|| {
                NETWORKS
                    .iter()
                    .zip(s.raw)
                    .map(|(n, v)| ((*n).to_owned(), v))
                    .collect()
            });
            let raw_labeled = raw.as_ref().map(|r| {
                r.iter()
                    .map(|(k, v)| (labeled_network(k).to_owned(), *v))
                    .collect()
            });
            TimelineEntry {
                second: s.second,
                scores: s.scores,
                benchmark: o.include_benchmark.then_some(s.benchmark),
                reasons: o.include_reasons.then_some(s.reasons),
                raw,
                raw_labeled,
            }
        })
        .collect();
    let manipulation_scored = result.lenses.iter().any(|l| l == "manipulation");
    CompletedScan {
        scan_id: scan_id.to_owned(),
        status: "complete".into(),
        overall_score: result.overall_score,
        grade: result
            .grade
            .unwrap_or_else(|| crate::result::UNSCORED_GRADE.to_owned()),
        duration_sec: result.duration_sec,
        lenses: result.lenses,
        timeline,
        moments: o.include_reasons.then_some(result.moments),
        summary: o.include_reasons.then_some(result.summary),
        buy_moments: o.include_reasons.then_some(result.buy_moments),
        manipulation: if manipulation_scored {
            result.manipulation
        } else {
            None
        },
        // Signed per response (the link must outlive the response by an hour, not the scan).
        fmri_url: o.include_fmri.then_some(None),
        fmri_key: result.fmri_key.filter(|_| o.include_fmri),
        fmri_poster_url: o.include_fmri.then_some(None),
        fmri_poster_key: result.fmri_poster_key.filter(|_| o.include_fmri),
        low_signal: result.low_signal,
        modalities: result.modalities,
        provenance: result.provenance,
        transcript: result
            .transcript
            .into_iter()
            .map(|l| TranscriptEntry {
                // Stored as f32; shown to the hundredth, so 0.29 does not read 0.28999999.
                start_sec: (f64::from(l.start_sec) * 100.0).round() / 100.0,
                end_sec: (f64::from(l.end_sec) * 100.0).round() / 100.0,
                text: l.text,
            })
            .collect(),
    }
}

/// One line of the transcript as `GET` shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TranscriptEntry {
    pub start_sec: f64,
    pub end_sec: f64,
    pub text: String,
}

/// Fills `fmri_url` with a fresh signed URL. `base` is this service's public URL (needed by
/// the local store's URLs); without one the URL stays null. A signing failure is logged and
/// leaves the URL null rather than failing the whole response.
pub async fn sign_artifact_urls(app: &crate::app::App, view: &mut ScanView, base: Option<&str>) {
    let ScanView::Completed(scan) = view else {
        return;
    };
    let now = app.clock.now_ms() / 1000;
    let pairs = [
        (scan.fmri_key.as_deref(), scan.fmri_url.as_mut()),
        (
            scan.fmri_poster_key.as_deref(),
            scan.fmri_poster_url.as_mut(),
        ),
    ];
    for (key, url) in pairs {
        let (Some(key), Some(url)) = (key, url) else {
            continue;
        };
        match app
            .artifacts
            .signed_url(key, base.unwrap_or_default(), now)
            .await
        {
            Ok(signed) if base.is_some() || signed.starts_with("http") => *url = Some(signed),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(scan.id = %scan.scan_id, error = %e, "could not sign an fMRI URL")
            }
        }
    }
}

/// This service's public base URL: the configured one, else `http://` + the request's Host.
pub fn public_base(app: &crate::app::App, headers: Option<&http::HeaderMap>) -> Option<String> {
    if let Some(url) = &app.config.artifacts.public_url {
        return Some(url.trim_end_matches('/').to_owned());
    }
    let host = headers?.get(http::header::HOST)?.to_str().ok()?;
    // A Host header is client input: accept only a plausible host[:port].
    let plausible = !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    plausible.then(|| format!("http://{host}"))
}

/// A list entry.
///
/// # Errors
/// When stored JSON is unreadable.
pub fn summary_entry(row: &ScanRow) -> Result<ScanSummary, serde_json::Error> {
    // The list reads the summary column, never the result (see `Db::list_scans`).
    let request: ScanRequest = serde_json::from_str(&row.request_json)?;
    let summary = match (row.status.as_str(), row.summary.clone()) {
        // Until the scan is charged its result has not left the service: the list must not
        // be a free way to read it.
        ("complete", Some(s)) if row.charged_at.is_some() => s,
        ("complete", _) => format!(
            "Complete: fetch GET /api/v1/scans/{} to read the result (the first fetch is charged).",
            row.id
        ),
        ("queued", _) => "Queued: waiting for a worker.".to_owned(),
        ("processing", _) => format!("Processing ({}, {}%).", row.stage, row.progress),
        ("error", _) => format!(
            "Failed — {}",
            row.error.as_deref().unwrap_or("unknown error")
        ),
        ("cancelled", _) => "Cancelled.".to_owned(),
        _ => String::new(),
    };
    Ok(ScanSummary {
        scan_id: row.id.clone(),
        input: InputRef {
            kind: request.input.kind,
            value: request.input.url,
        },
        lenses: request.lenses,
        summary,
        created_at: iso8601(row.created_at),
        status: row.status.clone(),
    })
}
