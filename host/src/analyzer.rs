//! The contract between the worker's scan pipeline and the analysis behind it: what the
//! analysis stage gets ([`AnalysisInput`]), what it must do ([`Analyzer`]) and how any stage
//! fails ([`StageError`]). Its own module so that the application state, the queue and the
//! webhooks can name these without importing the pipeline that uses them.

use std::path::Path;

use futures_util::future::BoxFuture;

use crate::media::fetch::FetchError;
use crate::media::probe::{ProbeError, ProbeInfo};
use crate::result::ScanResult;
use crate::scan::ScanRequest;

/// A stage failure. `code` is stable and leads the scan's `error` string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageError {
    pub code: &'static str,
    pub message: String,
    /// A later attempt may succeed (network trouble, a 5xx from the media host).
    pub transient: bool,
}

impl StageError {
    pub fn permanent(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            transient: false,
        }
    }

    /// The scan's `error` string: `code: message`.
    pub fn scan_error(&self) -> String {
        format!("{}: {}", self.code, self.message)
    }
}

impl From<FetchError> for StageError {
    fn from(e: FetchError) -> Self {
        Self {
            code: e.code(),
            transient: e.transient(),
            message: e.to_string(),
        }
    }
}

impl From<ProbeError> for StageError {
    fn from(e: ProbeError) -> Self {
        match e {
            ProbeError::Missing => Self {
                code: "internal_error",
                message: "the media prober is not installed on this worker".into(),
                transient: true,
            },
            ProbeError::Timeout(_) => Self {
                code: "decode_failed",
                message: e.to_string(),
                transient: true,
            },
            ProbeError::NotMedia(m) => Self::permanent("decode_failed", m),
        }
    }
}

/// What the analysis stage gets.
pub struct AnalysisInput<'a> {
    pub scan_id: &'a str,
    /// The organisation the scan belongs to (the plugin breaker counts failures by it).
    pub org_id: &'a str,
    pub request: &'a ScanRequest,
    /// The downloaded media file.
    pub media: &'a Path,
    pub probe: &'a ProbeInfo,
    /// Told the seconds of media decoded and inferred so far (the local CLI's bar).
    pub progress: Option<crate::inference::run::Progress>,
}

impl std::fmt::Debug for AnalysisInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnalysisInput")
            .field("scan_id", &self.scan_id)
            .field("org_id", &self.org_id)
            .field("media", &self.media)
            .field("progress", &self.progress.is_some())
            .finish_non_exhaustive()
    }
}

/// A rendered file of the `include_fmri` artifact.
#[derive(Debug, Clone)]
pub struct RenderedFile {
    /// File name under the scan's artifact folder (`fmri.mp4`); its extension sets the
    /// content type it is served with.
    pub name: &'static str,
    pub bytes: Vec<u8>,
}

/// What `include_fmri` stores: the artifact `fmri_url` links, and a still (`fmri_poster_url`).
#[derive(Debug, Clone)]
pub struct FmriRender {
    pub main: RenderedFile,
    pub poster: Option<RenderedFile>,
}

/// Turns downloaded media into a complete result.
pub trait Analyzer: Send + Sync + 'static {
    /// Lens names this analyzer can score, beyond which `POST /scans` drops requested lenses.
    fn lenses(&self) -> Vec<String>;

    /// Each lens's benchmark bands, for the lenses whose active plugin the benchmark table
    /// was built with (others have no benchmark, as in the results). None by default.
    fn benchmark_bands(
        &self,
    ) -> std::collections::BTreeMap<String, crate::benchmark::BenchmarkBands> {
        std::collections::BTreeMap::new()
    }

    fn analyze<'a>(
        &'a self,
        input: AnalysisInput<'a>,
    ) -> BoxFuture<'a, Result<ScanResult, StageError>>;

    /// The `include_fmri` artifact of a finished result. The production analysis renders the
    /// cortex video on its GPU ([`crate::render::video`]); an analyzer without one (the
    /// tests' fixture analyzers) gets this default, the carpet plot of the seven series
    /// ([`crate::render::carpet_png`]), which needs no GPU.
    fn render_fmri<'a>(
        &'a self,
        scan_id: &'a str,
        result: &'a ScanResult,
        _work_dir: &'a Path,
    ) -> BoxFuture<'a, Result<FmriRender, StageError>> {
        Box::pin(async move {
            let png = crate::render::carpet_png(scan_id, &result.timeline)
                .map_err(|e| StageError::permanent("internal_error", format!("rendering: {e}")))?;
            Ok(FmriRender {
                main: RenderedFile {
                    name: "fmri.png",
                    bytes: png,
                },
                poster: None,
            })
        })
    }
}
