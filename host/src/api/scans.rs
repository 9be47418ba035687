//! `POST /scans`, `GET /scans/{id}`, `GET /scans`.

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::ApiError;
use super::error::ErrorBody;
use super::extract::{ApiBytes, ApiQuery, Authed, ScanIdPath};
use super::views::{self, CreatedScan, ScanList, ScanView};
use crate::app::App;
use crate::auth::Via;
use crate::billing;
use crate::ids;
use crate::jobs::{SCAN_JOB, ScanJob};
use crate::media::fetch::FetchError;
use crate::media::probe::{self, ProbeError};
use crate::scan::{
    self, MAX_DURATION_SECS, PRICE_CENTS, RawInput, RequestError, ScanOptions, ScanRequest,
};
use crate::store::jobs::NewJob;
use crate::store::scans::{CreateOutcome, IdempotencyClaim, NewScan, ScanBilling};

/// Body of `POST /scans`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct CreateScanBody {
    /// What to scan: one of three shapes (see [`input_schema`]).
    #[schema(schema_with = input_schema)]
    pub input: InputBody,
    /// `qualia` (default) or `mary`; every scan runs on qualia.
    #[schema(value_type = Option<ModelName>)]
    pub model: Option<String>,
    /// Any of `attention`, `memory`, `purchase_intent`, `manipulation` (and installed custom
    /// lenses). Unknown values are dropped, duplicates removed; default
    /// `[attention, purchase_intent, manipulation]`, also when no requested value is a lens.
    pub lenses: Option<Vec<String>>,
    /// Only `second`.
    #[schema(value_type = Option<Granularity>)]
    pub granularity: Option<String>,
    pub options: Option<OptionsBody>,
    /// Receives the completed scan by a signed POST; best-effort, retried.
    #[schema(schema_with = webhook_url_schema)]
    pub webhook_url: Option<String>,
}

/// The values `model` accepts (`mary` runs on qualia, spec rule 1).
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum ModelName {
    Qualia,
    Mary,
}

/// The values `granularity` accepts.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum Granularity {
    Second,
}

/// `input` as read: every field optional, so that a wrong body gets a 400 naming its field.
/// Its documented schema is [`input_schema`].
#[derive(Debug, Clone, Deserialize)]
pub struct InputBody {
    /// `video`, `audio` or `url`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub url: Option<String>,
    pub video_url: Option<String>,
    pub audio_url: Option<String>,
    /// Text input is not supported (answers 400 `unsupported_input`).
    pub text: Option<String>,
    /// With type `url`: `video` (default), `audio` or `image` (unsupported).
    pub modality: Option<String>,
}

/// `webhook_url`: null, blank (no webhook, as the server reads it) or a URL as for the input.
/// Addresses the SSRF guard refuses (private, loopback) are still refused with 400
/// `url_not_allowed`: a schema cannot say which hosts resolve where.
#[must_use]
pub fn webhook_url_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .pattern(Some(format!(
            "^[ \\t\\r\\n]*$|{}",
            crate::url_syntax::PATTERN.as_str()
        )))
        .max_length(Some(scan::MAX_URL_LEN))
        .description(Some(
            "Receives the completed scan by a signed POST; best-effort, retried. Blank or \
             null: no webhook.",
        ))
        .into()
}

/// `input.type` fixed to one value: the discriminator of each shape of [`input_schema`].
fn kind_schema(value: &str) -> utoipa::openapi::schema::ObjectBuilder {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some([value]))
}

/// The exact schema of `input`, for clients and schema-driven testers: one of three shapes,
/// each saying which URL field it needs, and what a URL must look like (http or https, a host,
/// no credentials, at most [`scan::MAX_URL_LEN`] characters, as [`scan::check_url`] checks).
///
/// Why by hand: the body is read leniently (`InputBody`, every field optional) so that a wrong
/// body gets our own 400 naming the field; the derived schema of that struct said "an object
/// of optional strings", which accepts bodies the server must refuse (a `video` input without a
/// URL, an empty URL).
#[must_use]
pub fn input_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{
        AllOfBuilder, AnyOfBuilder, ObjectBuilder, OneOfBuilder, SchemaFormat, SchemaType, Type,
    };
    let url = |what: &str| {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
            .format(Some(SchemaFormat::Custom("uri".into())))
            .pattern(Some(crate::url_syntax::PATTERN.as_str()))
            .min_length(Some(8))
            .max_length(Some(scan::MAX_URL_LEN))
            .description(Some(what))
    };
    let text = || {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
            .description(Some("Text input is not supported; ignored next to a URL."))
    };
    // A field that is there and not null (the server reads null as absent).
    let present = |field: &str| {
        ObjectBuilder::new()
            .property(field, ObjectBuilder::new().schema_type(Type::String))
            .required(field)
    };
    // A video or audio input: its own URL field, or `url` as the fallback (at least one).
    let media = |kind: &str, title: &str, description: &str| {
        let named = format!("{kind}_url");
        let shape = ObjectBuilder::new()
            .title(Some(title))
            .property("type", kind_schema(kind))
            .property(named.as_str(), url(&format!("Public {kind} URL.")))
            .property("url", url(&format!("Fallback when {named} is absent.")))
            .property("text", text())
            .required("type")
            .description(Some(description));
        AllOfBuilder::new().item(shape).item(
            AnyOfBuilder::new()
                .item(present(&named))
                .item(present("url")),
        )
    };
    let asset = ObjectBuilder::new()
        .title(Some("UrlInput"))
        .property("type", kind_schema("url"))
        .property("url", url("Public asset URL."))
        .property(
            "modality",
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                .enum_values(Some([
                    serde_json::json!("video"),
                    serde_json::json!("audio"),
                    serde_json::Value::Null,
                ]))
                .description(Some(
                    "Default video. image, which the spec lists as a hint, is refused with \
                     400 unsupported_input, so it is not among the accepted values.",
                )),
        )
        .property("text", text())
        .required("type")
        .description(Some("A URL with a modality hint."));
    let asset = AllOfBuilder::new().item(asset).item(present("url"));
    OneOfBuilder::new()
        .item(media("video", "VideoInput", "A video: video_url, or url."))
        .item(media("audio", "AudioInput", "Audio: audio_url, or url."))
        .item(asset)
        .description(Some(
            "Content to analyse: a video or audio URL (the spec's input.type, input.url, \
             input.video_url, input.audio_url, input.modality).",
        ))
        .into()
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct OptionsBody {
    pub include_reasons: Option<bool>,
    pub include_benchmark: Option<bool>,
    pub include_raw: Option<bool>,
    pub include_fmri: Option<bool>,
}

fn request_error(e: RequestError) -> ApiError {
    match e {
        RequestError::Invalid { field, message } => ApiError::invalid(field, message),
        RequestError::Unsupported(m) => {
            ApiError::new(StatusCode::BAD_REQUEST, "unsupported_input", m).with_field("input")
        }
    }
}

/// Validates and normalises the body.
fn normalise(app: &App, body: CreateScanBody) -> Result<ScanRequest, ApiError> {
    let raw = RawInput {
        kind: body.input.kind,
        url: body.input.url,
        video_url: body.input.video_url,
        audio_url: body.input.audio_url,
        text: body.input.text,
        modality: body.input.modality,
    };
    let input = scan::normalise_input(&raw).map_err(request_error)?;
    let (model, requested_model) =
        scan::normalise_model(body.model.as_deref()).map_err(request_error)?;
    if let Some(g) = body.granularity.as_deref()
        && g != "second"
    {
        return Err(ApiError::invalid(
            "granularity",
            format!("granularity must be \"second\", not {g:?}"),
        ));
    }
    // Unknown names are ignored (the spec), so a long list is capped, not refused: only the
    // first MAX_LENS_NAMES are read (the body limit bounds the list in the first place).
    let requested = body
        .lenses
        .as_deref()
        .map(|l| &l[..l.len().min(scan::MAX_LENS_NAMES)]);
    let lenses = scan::normalise_lenses(requested, &app.available_lenses());
    let o = body.options.unwrap_or_default();
    let d = ScanOptions::default();
    let options = ScanOptions {
        include_reasons: o.include_reasons.unwrap_or(d.include_reasons),
        include_benchmark: o.include_benchmark.unwrap_or(d.include_benchmark),
        include_raw: o.include_raw.unwrap_or(d.include_raw),
        include_fmri: o.include_fmri.unwrap_or(d.include_fmri),
    };
    // Blank is ASCII white space only, as the document's pattern says it.
    let blank = |w: &str| w.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    let webhook_url = match body.webhook_url.as_deref().filter(|w| !blank(w)) {
        None => None,
        Some(w) => {
            let url = scan::check_url("webhook_url", w).map_err(request_error)?;
            app.fetcher.policy().check_url(&url).map_err(|r| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "url_not_allowed",
                    format!("webhook_url is not allowed: {}", r.0),
                )
                .with_field("webhook_url")
            })?;
            Some(url.to_string())
        }
    };
    Ok(ScanRequest {
        input,
        model,
        requested_model,
        lenses,
        options,
        webhook_url,
    })
}

fn fetch_error(field: &str, e: &FetchError) -> ApiError {
    let status = match e {
        FetchError::Refused(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    };
    ApiError::new(status, e.code(), e.to_string()).with_field(field)
}

fn input_field(request: &ScanRequest) -> &'static str {
    match request.input.kind.as_str() {
        "video" => "input.video_url",
        "audio" => "input.audio_url",
        _ => "input.url",
    }
}

/// Reads the start of the clip and checks its duration before anything is queued, within
/// the probe time budget. Over 180 s is refused now (no charge, no GPU time). When the start
/// does not say (an MP4 whose index is at its end), the end of the file is read too, by a
/// `Range` request. A clip whose duration still cannot be known in the budget (a host that
/// ignores ranges, or is too slow) is accepted, and the worker checks the whole file again.
async fn probe_up_front(app: &App, request: &ScanRequest) -> Result<(), ApiError> {
    let budget = app.config.fetch.probe_timeout();
    let started = Instant::now();
    let field = input_field(request);
    let url =
        url::Url::parse(&request.input.url).map_err(|e| ApiError::invalid(field, e.to_string()))?;
    // A page URL is read as a page here too, so a page without media is refused now.
    let head = match crate::media::page::download_media(
        &app.fetcher,
        &url,
        &app.tmp_dir(),
        app.config.fetch.probe_bytes,
        true,
        budget,
    )
    .await
    {
        Ok((head, _)) => head,
        Err(FetchError::Timeout) => {
            tracing::info!("duration probe timed out; the worker will check the clip");
            return Ok(());
        }
        Err(e) => return Err(fetch_error(field, &e)),
    };
    let left = || {
        budget
            .saturating_sub(started.elapsed())
            .max(std::time::Duration::from_secs(1))
    };
    let mut outcome = probe::probe(head.path(), left()).await;
    let knows_duration = matches!(&outcome, Ok(info) if info.duration_sec.is_some());
    if !knows_duration
        && !head.complete
        && let Some(sparse) = head_and_tail(app, &head.url, &head, left()).await
        && let Ok(info) = probe::probe(sparse.path(), left()).await
        && info.duration_sec.is_some()
    {
        outcome = Ok(info);
    }
    match outcome {
        Ok(info) => {
            if let Some(d) = info.duration_sec
                && d > MAX_DURATION_SECS
            {
                return Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "video_too_long",
                    format!("the clip is {d:.1} seconds long; the limit is {MAX_DURATION_SECS:.0} seconds (3 minutes). Nothing was charged."),
                )
                .with_field(field));
            }
            if request.input.modality == "video" && !info.has_video && info.has_audio {
                tracing::info!("a video input has only audio; it will be scanned as audio");
            }
            Ok(())
        }
        Err(ProbeError::NotMedia(m)) if head.complete => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsupported_media",
            format!("the file at the URL is not audio or video that can be decoded: {m}"),
        )
        .with_field(field)),
        Err(ProbeError::Missing) => Err(ApiError::internal("ffprobe is not installed")),
        Err(_) => Ok(()),
    }
}

/// A file of the clip's full size holding only its first and last bytes (the middle is a
/// hole), for a probe of a file whose index is at its end: an MP4 written without
/// `+faststart` keeps its `moov` box, and so its duration, after the media data. `None` when
/// the host did not say the size, the file is larger than a scan may download, or the tail
/// could not be read in `left` (the worker then checks the whole file).
async fn head_and_tail(
    app: &App,
    url: &url::Url,
    head: &crate::media::fetch::Downloaded,
    left: std::time::Duration,
) -> Option<tempfile::NamedTempFile> {
    use std::io::{Seek, SeekFrom, Write};
    let total = head
        .total_bytes
        .filter(|t| *t > head.bytes && *t <= app.config.fetch.fetch_max_bytes)?;
    let tail_len = app.config.fetch.probe_bytes.min(total - head.bytes);
    let start = total - tail_len;
    let tail = app
        .fetcher
        .download_range(url, &app.tmp_dir(), start, tail_len, left)
        .await
        .ok()??;
    // Beside the head, in its job folder: a probe's files never share a folder with others'.
    let sparse = tempfile::Builder::new()
        .prefix("probe-")
        .tempfile_in(head.folder())
        .ok()?;
    let (head_path, tail_path) = (head.path().to_owned(), tail.path().to_owned());
    let target = sparse.reopen().ok()?;
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let mut out = target;
        std::io::copy(&mut std::fs::File::open(head_path)?, &mut out)?;
        out.set_len(total)?;
        out.seek(SeekFrom::Start(start))?;
        std::io::copy(&mut std::fs::File::open(tail_path)?, &mut out)?;
        out.flush()
    })
    .await
    .ok()?
    .ok()?;
    Some(sparse)
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = v
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= 255 && k.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            ApiError::invalid(
                "Idempotency-Key",
                "Idempotency-Key must be 1-255 visible ASCII characters",
            )
        })?;
    Ok(Some(key.to_owned()))
}

/// Hash of the body's meaning: parsed and re-serialised, so whitespace and key order do not
/// make two equal requests differ.
fn body_hash(value: &serde_json::Value) -> String {
    let canonical = serde_json::to_vec(value).unwrap_or_default();
    Sha256::digest(&canonical)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

const IDEMPOTENCY_WINDOW_MS: i64 = 24 * 3600 * 1000;

/// The window of the failed-work budget (`BRAINSCAN_ORG_FAILED_SCANS_PER_HOUR`).
const FAILED_WORK_WINDOW_MS: i64 = 3600 * 1000;

/// Create a scan.
#[utoipa::path(
    post, path = "/api/v1/scans", tag = "scans",
    request_body = CreateScanBody,
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = r"^[!-~]+$", description = "1-255 visible ASCII characters. Replays the first answer for 24 h; a different body with the same key answers 409.")),
    responses(
        (status = 202, description = "Accepted and queued", body = CreatedScan),
        (status = 400, description = "Invalid body, unsupported input (text, image) or a refused URL", body = ErrorBody),
        (status = 401, description = "Missing, invalid or revoked key", body = ErrorBody),
        (status = 402, description = "insufficient_balance", body = ErrorBody),
        (status = 409, description = "Idempotency-Key reused with another body", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "The body is not declared as JSON (Content-Type)", body = ErrorBody),
        (status = 422, description = "video_too_long, unsupported_media, no_media_on_page, download_failed, media_too_large", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn create_scan(
    State(app): State<Arc<App>>,
    Authed(caller): Authed,
    headers: HeaderMap,
    ApiBytes(body): ApiBytes,
) -> Result<Response, ApiError> {
    let content_type_ok = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.trim()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    if !content_type_ok {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON with `Content-Type: application/json`",
        ));
    }
    let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not valid JSON: {e}"),
        )
    })?;
    let parsed: CreateScanBody = serde_json::from_value(value.clone()).map_err(|e| {
        ApiError::invalid(
            "body",
            format!("the body does not match the expected shape: {e}"),
        )
    })?;
    let idem_key = idempotency_key(&headers)?;
    let request = normalise(&app, parsed)?;

    let now = app.clock.now();
    let now_ms = now.timestamp_millis();
    let period = billing::period_of(now);
    let idem = idem_key.map(|key| IdempotencyClaim {
        key,
        body_hash: body_hash(&value),
        not_before: now_ms - IDEMPOTENCY_WINDOW_MS,
    });

    // Cheap checks before spending time on the media host: a replay, and funds.
    if let Some(claim) = &idem
        && let Some(stored) = app.db.idempotent_response(&caller.org_id, claim).await?
    {
        return replay(&stored);
    }
    // Who pays: an API key's scans come from the wallet; a signed-in person's console scans
    // from the plan's monthly allowance, never the wallet.
    let (billing, price_cents) = match &caller.via {
        Via::ApiKey { .. } => (ScanBilling::Wallet, PRICE_CENTS),
        Via::Console { person_id, .. } => {
            let plan = app.db.org_plan(&caller.org_id).await?;
            (
                ScanBilling::Plan {
                    person_id: person_id.clone(),
                    allowance: plan.monthly_scans(),
                    since_ms: crate::people::month_start_ms(now),
                },
                0,
            )
        }
    };
    match &billing {
        // Net of what is already set aside for this organisation's unsettled scans, so a
        // caller who cannot pay never makes the service fetch from a media host (the insert
        // checks again, under the wallet lock).
        ScanBilling::Wallet => {
            let (wallet, reserved) = app.db.wallet_and_reserved(&caller.org_id).await?;
            if !wallet.can_cover(&period, reserved, PRICE_CENTS) {
                return Err(insufficient(wallet.available(&period), reserved));
            }
        }
        ScanBilling::Plan {
            allowance,
            since_ms,
            ..
        } => {
            let used = app.db.console_scans_used(&caller.org_id, *since_ms).await?;
            if used >= *allowance {
                return Err(allowance_used(used, *allowance));
            }
        }
    }
    // The failed-work budget: failed scans are free, so an organisation whose scans keep
    // failing (a host that drips, files that do not decode) waits before it queues more.
    let budget = app.config.queue.org_failed_scans_per_hour;
    if budget > 0 {
        let failed = app
            .db
            .failed_scans_since(&caller.org_id, now_ms - FAILED_WORK_WINDOW_MS)
            .await?;
        if failed >= budget {
            let mut e = ApiError::rate_limited(std::time::Duration::from_secs(60));
            e.message = format!(
                "{failed} of this organisation's scans failed in the last hour (the limit is {budget}); new scans are accepted again as that hour passes. Failed scans are never charged."
            );
            return Err(e);
        }
    }

    match app.probe_slots.try_take(&caller.org_id) {
        Some(_slot) => {
            if let Err(refused) = probe_up_front(&app, &request).await {
                // The URL was read and what it answered refused (422: a page without media,
                // a file that does not decode, a clip too long, a failed download): work done
                // for nothing, counted like a failed scan. Addresses the guard refuses (400)
                // are refused before any connection, at no cost.
                if refused.status == StatusCode::UNPROCESSABLE_ENTITY {
                    app.db
                        .record_refused_submit(
                            &caller.org_id,
                            refused.code,
                            now_ms,
                            now_ms - FAILED_WORK_WINDOW_MS,
                        )
                        .await?;
                }
                return Err(refused);
            }
        }
        None => tracing::info!("every probe slot is taken; accepted unprobed, the worker checks"),
    }

    let scan_id = ids::new_scan_id(&request.model);
    let created = CreatedScan {
        scan_id: scan_id.clone(),
        status: "queued".into(),
        lenses: request.lenses.clone(),
    };
    let response_json = serde_json::to_string(&created).map_err(ApiError::internal)?;
    let new_scan = NewScan {
        id: scan_id.clone(),
        org_id: caller.org_id.clone(),
        model: request.model.clone(),
        input_kind: request.input.kind.clone(),
        input_url: request.input.url.clone(),
        request_json: serde_json::to_string(&request).map_err(ApiError::internal)?,
        price_cents,
        created_at: now_ms,
        billing,
    };
    let job = NewJob {
        id: ids::new_job_id(),
        kind: SCAN_JOB.into(),
        org_id: Some(caller.org_id.clone()),
        payload: serde_json::to_string(&ScanJob {
            scan_id: scan_id.clone(),
        })
        .map_err(ApiError::internal)?,
        max_attempts: app.config.queue.scan_max_attempts,
        run_after: now_ms,
        created_at: now_ms,
    };
    match app
        .db
        .create_scan(&new_scan, &job, idem.as_ref(), &response_json, &period)
        .await?
    {
        CreateOutcome::Created => {
            app.wake.notify_waiters();
            metrics::counter!("brainscan_scans_created_total").increment(1);
            tracing::info!(scan.id = %scan_id, lenses = ?request.lenses, "scan queued");
            Ok((StatusCode::ACCEPTED, Json(created)).into_response())
        }
        CreateOutcome::Replayed(stored) => replay(&stored),
        CreateOutcome::InsufficientFunds {
            available_cents,
            owed_cents,
        } => Err(insufficient(available_cents, owed_cents)),
        CreateOutcome::AllowanceUsed { used, allowance } => Err(allowance_used(used, allowance)),
    }
}

/// 402 `plan_allowance_used`: a console scan past the plan's monthly allowance. Only the
/// console's session routes can meet it; API clients never do.
fn allowance_used(used: i64, allowance: i64) -> ApiError {
    ApiError::new(
        StatusCode::PAYMENT_REQUIRED,
        "plan_allowance_used",
        format!(
            "this organisation's plan includes {allowance} console scan{} a month and {used} {} been started this month; the allowance renews on the 1st (UTC). Scans started with an API key are billed from the wallet instead.",
            if allowance == 1 { "" } else { "s" },
            if used == 1 { "has" } else { "have" },
        ),
    )
}

fn replay(stored: &str) -> Result<Response, ApiError> {
    let created: CreatedScan = serde_json::from_str(stored).map_err(ApiError::internal)?;
    Ok((
        StatusCode::ACCEPTED,
        [("idempotent-replayed", "true")],
        Json(created),
    )
        .into_response())
}

fn insufficient(available_cents: i64, owed_cents: i64) -> ApiError {
    ApiError::new(
        StatusCode::PAYMENT_REQUIRED,
        "insufficient_balance",
        format!(
            "a scan costs ${:.2}; ${:.2} is available and ${:.2} is set aside for scans not yet charged. Top up the deposit and check GET /api/v1/wallet.",
            billing::usd(PRICE_CENTS),
            billing::usd(available_cents),
            billing::usd(owed_cents)
        ),
    )
}

/// Get a scan. The first fetch of a completed scan settles its charge and stores it in the
/// organisation's intelligence memory.
#[utoipa::path(
    get, path = "/api/v1/scans/{id}", tag = "scans",
    params(("id" = String, Path, description = "A scan_id from create")),
    responses(
        (status = 200, description = "In-flight or completed scan", body = ScanView),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such scan in this organisation", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn get_scan(
    State(app): State<Arc<App>>,
    Authed(caller): Authed,
    ScanIdPath(id): ScanIdPath,
    headers: http::HeaderMap,
) -> Result<Response, ApiError> {
    let base = views::public_base(&app, Some(&headers));
    let key = (caller.org_id.clone(), id.clone(), base.clone());
    if let Some(hit) = app.rendered.get(&key).await
        && hit.fresh_at(app.clock.now())
    {
        return Ok(json_body(hit.body));
    }
    let row = app
        .db
        .get_scan(&caller.org_id, &id)
        .await
        .map_err(|e| super::error::scan_lookup(e, "conflict"))?;
    if row.status == "complete" && row.charged_at.is_none() {
        crate::charge::on_release(&app.db, &caller.org_id, &id, app.clock.now(), "get").await?;
    }
    let mut view = views::scan_view(&row).map_err(ApiError::internal)?;
    views::sign_artifact_urls(&app, &mut view, base.as_deref()).await;
    let body = bytes::Bytes::from(serde_json::to_vec(&view).map_err(ApiError::internal)?);
    // Charged above if it was not already: a complete result is immutable from here on.
    if let views::ScanView::Completed(scan) = &view
        && row.status == "complete"
    {
        let signed = scan.fmri_url.as_ref().is_some_and(|u| u.is_some());
        app.rendered
            .insert(
                key,
                crate::body_cache::Rendered {
                    body: body.clone(),
                    signed_at: signed.then(|| app.clock.now()),
                },
            )
            .await;
    }
    Ok(json_body(body))
}

/// A JSON response from an already rendered body.
fn json_body(body: bytes::Bytes) -> Response {
    (
        [(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
pub struct ListParams {
    limit: Option<i64>,
    offset: Option<i64>,
}

/// List scans, newest first.
#[utoipa::path(
    get, path = "/api/v1/scans", tag = "scans",
    params(
        ("limit" = Option<i64>, Query, description = "Default 25, clamped to 1-100"),
        ("offset" = Option<i64>, Query, description = "Scans to skip; default 0"),
    ),
    responses(
        (status = 200, body = ScanList),
        (status = 400, description = "limit or offset is not an integer that fits in 64 bits", body = ErrorBody),
        (status = 401, body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn list_scans(
    State(app): State<Arc<App>>,
    Authed(caller): Authed,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<ScanList>, ApiError> {
    let limit = params.limit.unwrap_or(25).clamp(1, 100);
    let offset = params.offset.unwrap_or(0).max(0);
    let (total, rows) = app.db.list_scans(&caller.org_id, limit, offset).await?;
    let scans = rows
        .iter()
        .map(views::summary_entry)
        .collect::<Result<Vec<_>, _>>()
        .map_err(ApiError::internal)?;
    Ok(Json(ScanList {
        object: "list".into(),
        total,
        limit,
        offset,
        scans,
    }))
}

/// Cancel a queued or processing scan. Cancelled scans are never charged.
#[utoipa::path(
    post, path = "/api/v1/scans/{id}/cancel", tag = "scans",
    params(("id" = String, Path, description = "A scan_id from create")),
    responses(
        (status = 200, description = "The scan, now cancelled", body = ScanView),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "scan_not_cancellable: the scan already ended", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn cancel_scan(
    State(app): State<Arc<App>>,
    Authed(caller): Authed,
    ScanIdPath(id): ScanIdPath,
) -> Result<Json<ScanView>, ApiError> {
    let row = app
        .db
        .cancel_scan(
            &caller.org_id,
            &id,
            "cancelled: cancelled by the client; nothing was charged",
            app.clock.now_ms(),
        )
        .await
        .map_err(|e| super::error::scan_lookup(e, "scan_not_cancellable"))?;
    metrics::counter!("brainscan_scans_cancelled_total").increment(1);
    tracing::info!(scan.id = %id, "scan cancelled");
    Ok(Json(views::scan_view(&row).map_err(ApiError::internal)?))
}

/// A complete scan's result, charged if this is the first time its result leaves (by
/// `route`). For routes that return nothing else; a route that can still fail after reading
/// the result uses [`complete_result`] and [`settle`] once it has succeeded.
///
/// # Errors
/// As [`complete_result`], and the charge's database error.
pub async fn released_result(
    app: &App,
    org_id: &str,
    scan_id: &str,
    route: &'static str,
    not_complete: impl FnOnce(&str) -> String,
) -> Result<crate::result::ScanResult, ApiError> {
    let (result, charged) = complete_result(app, org_id, scan_id, not_complete).await?;
    if !charged {
        settle(app, org_id, scan_id, route).await?;
    }
    Ok(result)
}

/// A complete scan's result, not charged, and whether it has been charged already.
///
/// # Errors
/// 404 for another organisation's or a missing scan, 409 `scan_not_complete`.
pub async fn complete_result(
    app: &App,
    org_id: &str,
    scan_id: &str,
    not_complete: impl FnOnce(&str) -> String,
) -> Result<(crate::result::ScanResult, bool), ApiError> {
    if !ids::looks_like_scan_id(scan_id) {
        return Err(ApiError::not_found("the scan"));
    }
    let row = app
        .db
        .get_scan(org_id, scan_id)
        .await
        .map_err(|e| super::error::scan_lookup(e, "conflict"))?;
    let Some(json) = row
        .result_json
        .as_deref()
        .filter(|_| row.status == "complete")
    else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "scan_not_complete",
            not_complete(&row.status),
        ));
    };
    let result = serde_json::from_str(json).map_err(ApiError::internal)?;
    Ok((result, row.charged_at.is_some()))
}

/// Charges a complete scan whose result is leaving by `route` now (once; see
/// [`crate::charge`]).
///
/// # Errors
/// The charge's database error: the result must not be released then.
pub async fn settle(
    app: &App,
    org_id: &str,
    scan_id: &str,
    route: &'static str,
) -> Result<(), ApiError> {
    crate::charge::on_release(&app.db, org_id, scan_id, app.clock.now(), route).await?;
    Ok(())
}
