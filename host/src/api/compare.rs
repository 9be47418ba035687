//! `GET /compare?a=ID&b=ID`: two completed scans of the caller's organisation side by side,
//! lens by lens: both per-second curves, the mean of each and their difference, and the
//! seconds where they diverge most. For the console's compare page and agents' A/B reviews.
//!
//! - **Org-scoped** like `GET /scans/{id}`: a scan of another organisation answers 404
//!   exactly as a scan that does not exist.
//! - **Free**, but not a way around billing: the curves are the result, so a scan not yet
//!   charged is charged here, once, as its first `GET` would be (see [`crate::charge`]).
//! - Lenses compared are those both scans scored, in `a`'s order; seconds compared are the
//!   shorter clip's (second `s` of `a` against second `s` of `b`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ApiError;
use super::error::ErrorBody;
use super::extract::{ApiQuery, Authed};
use crate::app::App;
use crate::result::ScanResult;

/// How many of the most divergent seconds each lens lists.
pub const DIVERGENT_SECONDS: usize = 5;

#[derive(Debug, Deserialize)]
pub struct CompareParams {
    a: Option<String>,
    b: Option<String>,
}

/// One scan's identity in a comparison.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ComparedScan {
    pub scan_id: String,
    pub duration_sec: f64,
    pub lenses: Vec<String>,
    pub overall_score: Option<f64>,
}

/// One second where the two curves are far apart.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Divergence {
    pub second: u32,
    pub a: f64,
    pub b: f64,
    /// `b - a`.
    pub difference: f64,
}

/// One lens in both scans.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LensComparison {
    pub lens: String,
    /// Per-second scores over the compared seconds.
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub mean_a: f64,
    pub mean_b: f64,
    /// `mean_b - mean_a`.
    pub mean_difference: f64,
    /// The seconds with the largest |b - a|, largest first (at most five).
    pub most_divergent: Vec<Divergence>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Comparison {
    /// Always `comparison`.
    pub object: String,
    pub a: ComparedScan,
    pub b: ComparedScan,
    /// Seconds compared: the shorter clip's length.
    pub seconds: usize,
    /// The lenses both scans scored, in `a`'s order.
    pub lenses: Vec<LensComparison>,
}

/// Compares two completed scans.
#[utoipa::path(
    get, path = "/api/v1/compare", tag = "scans",
    params(
        ("a" = String, Query, min_length = 1, description = "A scan_id of your organisation"),
        ("b" = String, Query, min_length = 1, description = "Another (or the same) scan_id of your organisation"),
    ),
    responses(
        (status = 200, body = Comparison),
        (status = 400, description = "a or b is missing or empty", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such scan in your organisation", body = ErrorBody),
        (status = 409, description = "scan_not_complete", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub async fn compare(
    State(app): State<Arc<App>>,
    Authed(caller): Authed,
    ApiQuery(params): ApiQuery<CompareParams>,
) -> Result<Json<Comparison>, ApiError> {
    let id = |v: Option<String>, field: &'static str| {
        v.filter(|s| !s.is_empty())
            .ok_or_else(|| ApiError::invalid(field, format!("{field} (a scan_id) is required")))
    };
    let (a_id, b_id) = (id(params.a, "a")?, id(params.b, "b")?);
    // Both are looked up before either is charged: a missing or unfinished `b` must not
    // leave `a` charged for an answer the client never gets.
    let (a, a_charged) = completed(&app, &caller.org_id, &a_id).await?;
    let (b, b_charged) = completed(&app, &caller.org_id, &b_id).await?;
    for (id, charged) in [(&a_id, a_charged), (&b_id, b_charged)] {
        if !charged {
            super::scans::settle(&app, &caller.org_id, id, "compare").await?;
        }
    }
    Ok(Json(comparison(&a_id, &a, &b_id, &b)))
}

/// A complete scan of `org_id`, not charged yet, and whether it was charged before.
async fn completed(app: &App, org_id: &str, scan_id: &str) -> Result<(ScanResult, bool), ApiError> {
    super::scans::complete_result(app, org_id, scan_id, |status| {
        format!("scan {scan_id} is {status}; compare needs complete scans")
    })
    .await
}

/// The comparison of two results (pure: the handler's arithmetic, tested on its own).
#[must_use]
pub fn comparison(a_id: &str, a: &ScanResult, b_id: &str, b: &ScanResult) -> Comparison {
    let seconds = a.timeline.len().min(b.timeline.len());
    let lenses = a
        .lenses
        .iter()
        .filter(|l| b.lenses.contains(l))
        .map(|lens| {
            let curve = |r: &ScanResult| -> Vec<f64> {
                r.timeline[..seconds]
                    .iter()
                    .map(|s| s.scores.get(lens).copied().unwrap_or(f64::NAN))
                    .collect()
            };
            let (ca, cb) = (curve(a), curve(b));
            let mean = |v: &[f64]| {
                let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
                if finite.is_empty() {
                    0.0
                } else {
                    finite.iter().sum::<f64>() / finite.len() as f64
                }
            };
            let (mean_a, mean_b) = (mean(&ca), mean(&cb));
            let mut most_divergent: Vec<Divergence> = ca
                .iter()
                .zip(&cb)
                .enumerate()
                .filter(|(_, (x, y))| x.is_finite() && y.is_finite())
                .map(|(s, (x, y))| Divergence {
                    second: s as u32,
                    a: *x,
                    b: *y,
                    difference: round1(y - x),
                })
                .collect();
            // Largest gap first; the earlier second on ties, so the answer is stable.
            most_divergent.sort_by(|p, q| {
                q.difference
                    .abs()
                    .total_cmp(&p.difference.abs())
                    .then(p.second.cmp(&q.second))
            });
            most_divergent.truncate(DIVERGENT_SECONDS);
            LensComparison {
                lens: lens.clone(),
                a: ca,
                b: cb,
                mean_a: round1(mean_a),
                mean_b: round1(mean_b),
                mean_difference: round1(mean_b - mean_a),
                most_divergent,
            }
        })
        .collect();
    let scan = |id: &str, r: &ScanResult| ComparedScan {
        scan_id: id.to_owned(),
        duration_sec: r.duration_sec,
        lenses: r.lenses.clone(),
        overall_score: r.overall_score,
    };
    Comparison {
        object: "comparison".into(),
        a: scan(a_id, a),
        b: scan(b_id, b),
        seconds,
        lenses,
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::result::StoredSecond;

    fn result(lenses: &[&str], curves: &[&[f64]]) -> ScanResult {
        let n = curves[0].len();
        let timeline = (0..n)
            .map(|s| StoredSecond {
                second: s as u32,
                scores: lenses
                    .iter()
                    .zip(curves)
                    .map(|(l, c)| ((*l).to_owned(), c[s]))
                    .collect(),
                benchmark: BTreeMap::new(),
                reasons: BTreeMap::new(),
                raw: [0.0; 7],
            })
            .collect();
        let mut r: ScanResult = serde_json::from_value(serde_json::json!({
            "duration_sec": n as f64, "lenses": [], "timeline": [], "moments": [],
            "summary": "", "buy_moments": null, "manipulation": null, "fmri_key": null,
            "overall_score": 50.0, "grade": "C"
        }))
        .expect("a minimal result");
        r.lenses = lenses.iter().map(|l| (*l).to_owned()).collect();
        r.timeline = timeline;
        r
    }

    #[test]
    fn compares_common_lenses_over_the_shorter_clip() {
        let a = result(
            &["attention", "memory"],
            &[&[10.0, 20.0, 30.0, 40.0], &[50.0; 4]],
        );
        let b = result(
            &["manipulation", "attention"],
            &[&[0.0; 3], &[10.0, 60.0, 25.0]],
        );
        let c = comparison("a", &a, "b", &b);
        assert_eq!(c.seconds, 3);
        assert_eq!(c.lenses.len(), 1, "only attention is in both");
        let l = &c.lenses[0];
        assert_eq!(l.a, vec![10.0, 20.0, 30.0]);
        assert_eq!(l.b, vec![10.0, 60.0, 25.0]);
        assert_eq!((l.mean_a, l.mean_b, l.mean_difference), (20.0, 31.7, 11.7));
        let order: Vec<u32> = l.most_divergent.iter().map(|d| d.second).collect();
        assert_eq!(order, vec![1, 2, 0]);
        assert_eq!(l.most_divergent[0].difference, 40.0);
    }
}
