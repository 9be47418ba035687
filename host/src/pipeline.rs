//! The worker's path for one scan: download → probe → analyse → assemble, as typed stages.
//!
//! Analysis (decoding, the `qualia` inference core and the analysis plugins) sits behind the
//! [`Analyzer`] trait (in [`crate::analyzer`]); production wires
//! [`crate::analysis::Analysis`], tests their own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analyzer::{AnalysisInput, StageError};
use crate::app::App;
use crate::media::probe;
use crate::scan::{MAX_DURATION_SECS, ScanRequest, ScanStatus, Stage};
use crate::webhooks;

async fn enter(app: &App, scan_id: &str, stage: Stage) -> Result<bool, StageError> {
    app.db
        .mark_scan_stage(
            scan_id,
            stage.as_str(),
            stage.progress(),
            app.clock.now_ms(),
        )
        .await
        .map_err(|e| StageError {
            code: "internal_error",
            message: e.to_string(),
            transient: true,
        })
}

/// Runs one scan to `complete`. Returns `Ok` also when the scan had already reached a final
/// state (a retried or duplicated job must be harmless) or is cancelled while it runs: every
/// stage starts by re-checking the state, and a cancelled scan can never be completed.
///
/// # Errors
/// The failing stage's error; the caller decides between retry and `error`.
pub async fn run_scan(app: &Arc<App>, scan_id: &str) -> Result<(), StageError> {
    let internal = |e: crate::store::StoreError| StageError {
        code: "internal_error",
        message: e.to_string(),
        transient: true,
    };
    let row = app.db.get_scan_by_id(scan_id).await.map_err(internal)?;
    if !matches!(row.status.as_str(), "queued" | "processing") {
        return Ok(());
    }
    let request: ScanRequest = serde_json::from_str(&row.request_json).map_err(|e| {
        StageError::permanent("internal_error", format!("stored request unreadable: {e}"))
    })?;
    let started = Instant::now();

    if !enter(app, scan_id, Stage::Downloading).await? {
        return Ok(());
    }
    let url = url::Url::parse(&request.input.url)
        .map_err(|e| StageError::permanent("invalid_request", e.to_string()))?;
    let stage = Instant::now();
    let (media, from_page) = crate::media::page::download_media(
        &app.fetcher,
        &url,
        &app.tmp_dir(),
        app.config.fetch.fetch_max_bytes,
        false,
        app.config.fetch.timeout(),
    )
    .await?;
    tracing::info!(scan.id = scan_id, bytes = media.bytes, "downloaded");
    crate::metrics::record_stage("download", stage.elapsed());

    if !enter(app, scan_id, Stage::Probing).await? {
        return Ok(()); // cancelled meanwhile
    }
    let stage = Instant::now();
    let info = probe::probe(media.path(), Duration::from_secs(30)).await?;
    crate::metrics::record_stage("probe", stage.elapsed());
    if let Some(d) = info.duration_sec
        && d > MAX_DURATION_SECS
    {
        return Err(StageError::permanent(
            "video_too_long",
            format!("the clip is {d:.1} s long; the limit is {MAX_DURATION_SECS:.0} s"),
        ));
    }

    if !enter(app, scan_id, Stage::Analysing).await? {
        return Ok(()); // cancelled meanwhile
    }
    let stage = Instant::now();
    let result = app
        .analyzer
        .analyze(AnalysisInput {
            scan_id,
            org_id: &row.org_id,
            request: &request,
            media: media.path(),
            probe: &info,
            progress: None,
        })
        .await?;
    crate::metrics::record_stage("analysis", stage.elapsed());
    drop(media);
    let mut result = result;
    if let Some(from) = from_page
        && let Some(provenance) = result.provenance.as_object_mut()
    {
        provenance.insert(
            "input".into(),
            serde_json::json!({"kind": "page", "page_url": from.page_url, "media_url": from.media_url, "found_by": from.found_by}),
        );
    }

    if !enter(app, scan_id, Stage::Assembling).await? {
        return Ok(()); // cancelled meanwhile
    }
    if request.options.include_fmri {
        let stage = Instant::now();
        let render = app
            .analyzer
            .render_fmri(scan_id, &result, &app.tmp_dir())
            .await?;
        // An unreachable store is worth a retry; the scan is not complete without its render.
        let store = |file: crate::analyzer::RenderedFile| async move {
            let key = crate::artifacts::fmri_key(scan_id, file.name);
            app.artifacts
                .put(&key, file.bytes)
                .await
                .map_err(|e| StageError {
                    code: "artifact_store_failed",
                    message: e.to_string(),
                    transient: true,
                })?;
            Ok::<_, StageError>(key)
        };
        result.fmri_key = Some(store(render.main).await?);
        if let Some(poster) = render.poster {
            result.fmri_poster_key = Some(store(poster).await?);
        }
        crate::metrics::record_stage("render", stage.elapsed());
    }
    // Embedded now, by the worker, so the first fetch only copies rows into memory.
    let stage = Instant::now();
    let texts = app
        .recall
        .embed_result(&result)
        .await
        .map_err(|e| StageError {
            code: "internal_error",
            message: format!("embedding the scan's texts: {e}"),
            transient: true,
        })?;
    crate::metrics::record_stage("embedding", stage.elapsed());
    let stage = Instant::now();
    let json = serde_json::to_string(&result)
        .map_err(|e| StageError::permanent("internal_error", e.to_string()))?;
    let completed = app
        .db
        .complete_scan(scan_id, &json, &result.summary, &texts, app.clock.now_ms())
        .await
        .map_err(internal)?;
    crate::metrics::record_stage("commit", stage.elapsed());
    metrics::histogram!("brainscan_scan_duration_seconds").record(started.elapsed().as_secs_f64());
    if completed {
        tracing::info!(
            scan.id = scan_id,
            secs = started.elapsed().as_secs_f64(),
            "scan complete"
        );
    }
    if completed && let Some(hook) = &request.webhook_url {
        webhooks::enqueue(app, scan_id, &row.org_id, hook)
            .await
            .map_err(internal)?;
    }
    Ok(())
}

/// Ends a scan whose job failed for good. Nothing is charged: only `complete` scans are.
pub async fn fail(app: &App, scan_id: &str, error: &StageError) {
    if let Err(e) = app
        .db
        .fail_scan(
            scan_id,
            ScanStatus::Error,
            &error.scan_error(),
            app.clock.now_ms(),
        )
        .await
    {
        tracing::error!(scan.id = scan_id, error = %e, "could not record scan failure");
    }
}
