//! Evaluating a model against measured brain series: zero-shot correlation, single-feature
//! baselines, the ridge-toward-the-prior fit with nested cross-validation, and the
//! leave-one-subject-out noise ceiling.
//!
//! Two correlations are reported for every predictor. **Whole series**: Pearson r over all
//! rows (the pre-registered measure). **Within block**: the mean over the outer
//! cross-validation blocks of the r inside each block. The fitted readout is a different model
//! in each outer fold, each with its own intercept and gain, so its held-out predictions can
//! only be scored within block (up to 2.5.0 they were concatenated and scored whole, which put
//! the folds' offsets into the score: the prior itself, refitted only in gain, scored 0.2 below
//! its own zero-shot r that way). Within-block r also leaves out the slow drift and the story's
//! onset, so it asks whether a predictor tracks the second-to-second response.
//!
//! Targets may be sampled more coarsely than the model's one-second grid (fMRI volumes): each
//! target row names its start second and duration, and the model's BOLD-time prediction (and
//! the design matrix) is averaged over that span.

use std::path::Path;

use anyhow::{Context, bail, ensure};
use nalgebra::{DMatrix, DVector};
use serde::Serialize;

use crate::grounding::{pearson, zscore};
use crate::inference::model::{Model, NETWORK_COUNT, Presence, TimeBase};
use crate::result::NETWORKS;

/// λ grid for ridge toward the prior (features are z-scored and convolved, so λ is in rows).
/// The last, infinite λ is the prior's pattern with only its gain fitted: the inner
/// cross-validation may decide that fitting does not help.
pub const LAMBDAS: [f64; 12] = [
    1.0,
    3.0,
    10.0,
    30.0,
    100.0,
    300.0,
    1000.0,
    3000.0,
    10_000.0,
    30_000.0,
    100_000.0,
    f64::INFINITY,
];
/// Outer folds of the nested cross-validation: contiguous blocks.
pub const OUTER_FOLDS: usize = 5;
/// Inner folds (within each outer training set) that choose λ.
pub const INNER_FOLDS: usize = 4;
/// Rows dropped on each side of a test block, so the response kernel cannot carry the test
/// block's stimulus into training rows (5 volumes = 10 s at TR 2 s).
pub const GAP_ROWS: usize = 5;
/// Largest targets file accepted.
const MAX_TARGET_BYTES: u64 = 16 << 20;

/// Measured series to predict: one column per target, each tied to a network.
#[derive(Debug, Clone)]
pub struct Targets {
    /// `(label, network index)` per column.
    pub columns: Vec<(String, usize)>,
    /// Per row: start second and duration in seconds.
    pub spans: Vec<(usize, usize)>,
    /// `rows x columns`.
    pub values: Vec<Vec<f64>>,
}

/// Parses a targets CSV: a header `second,duration,<label>@<Network>,…` (a column named just
/// by a network maps to itself; `duration` may be left out for one-second rows), then numbers.
///
/// # Errors
/// Unknown networks, ragged or non-numeric rows, an oversized file.
pub fn read_targets(path: &Path) -> anyhow::Result<Targets> {
    let bytes = crate::grounding::read_bounded(path, MAX_TARGET_BYTES)?;
    let text =
        String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8", path.display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines
        .next()
        .with_context(|| format!("{}: empty", path.display()))?
        .split(',')
        .map(str::trim)
        .collect();
    ensure!(
        header.first() == Some(&"second"),
        "{}: the first column must be `second`",
        path.display()
    );
    let has_duration = header.get(1) == Some(&"duration");
    let first = if has_duration { 2 } else { 1 };
    let mut columns = Vec::new();
    for name in &header[first..] {
        let (label, network) = name.rsplit_once('@').unwrap_or((name, name));
        let n = NETWORKS
            .iter()
            .position(|x| *x == network)
            .with_context(|| {
                format!(
                    "{}: column `{name}` names no network (use LABEL@Network with one of {})",
                    path.display(),
                    NETWORKS.join(", ")
                )
            })?;
        columns.push((label.to_owned(), n));
    }
    ensure!(!columns.is_empty(), "{}: no target columns", path.display());
    let (mut spans, mut values) = (Vec::new(), Vec::new());
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        ensure!(
            cells.len() == header.len(),
            "{} row {}: {} cells, the header has {}",
            path.display(),
            i + 2,
            cells.len(),
            header.len()
        );
        let num = |s: &str| -> anyhow::Result<f64> {
            let v: f64 = s.parse().with_context(|| {
                format!("{} row {}: `{s}` is not a number", path.display(), i + 2)
            })?;
            ensure!(
                v.is_finite(),
                "{} row {}: not finite",
                path.display(),
                i + 2
            );
            Ok(v)
        };
        let second = num(cells[0])?;
        let duration = if has_duration { num(cells[1])? } else { 1.0 };
        ensure!(
            second >= 0.0
                && second.fract() == 0.0
                && (1.0..=60.0).contains(&duration)
                && duration.fract() == 0.0,
            "{} row {}: second and duration must be whole seconds (duration 1-60)",
            path.display(),
            i + 2
        );
        spans.push((second as usize, duration as usize));
        values.push(
            cells[first..]
                .iter()
                .map(|c| num(c))
                .collect::<anyhow::Result<Vec<_>>>()?,
        );
    }
    ensure!(
        values.len() >= 20,
        "{}: at least 20 rows are needed",
        path.display()
    );
    Ok(Targets {
        columns,
        spans,
        values,
    })
}

impl Targets {
    /// One target's series, row by row.
    #[must_use]
    pub fn column(&self, c: usize) -> Vec<f64> {
        self.values.iter().map(|r| r[c]).collect()
    }
}

/// The model's view of a clip, averaged over each target span: the design matrix (z-scored,
/// response-convolved features, BOLD time) and the model's network prediction.
pub struct Design {
    pub x: DMatrix<f64>,
    pub prediction: DMatrix<f64>,
}

/// Builds the [`Design`] from a clip's raw per-second features.
///
/// # Errors
/// A target span reaches past the features.
pub fn design(
    model: &Model,
    raw: &[f32],
    presence: Presence,
    spans: &[(usize, usize)],
) -> anyhow::Result<Design> {
    let f = model.features.len();
    let seconds = raw.len() / f;
    let (_, r, y) = crate::inference::reference::response(raw, model, presence, TimeBase::Bold);
    let mut x = DMatrix::zeros(spans.len(), f);
    let mut p = DMatrix::zeros(spans.len(), NETWORK_COUNT);
    for (row, (start, duration)) in spans.iter().enumerate() {
        ensure!(
            start + duration <= seconds,
            "a target row covers seconds {start}..{}, the features end at {seconds}",
            start + duration
        );
        for s in *start..start + duration {
            for k in 0..f {
                x[(row, k)] += f64::from(r[s * f + k]) / *duration as f64;
            }
            for n in 0..NETWORK_COUNT {
                p[(row, n)] += f64::from(y[s * NETWORK_COUNT + n]) / *duration as f64;
            }
        }
    }
    Ok(Design { x, prediction: p })
}

/// The [`Design`] as CSV, one row per target span: `second,duration`, then every feature as the
/// model reads it (z-scored, response-convolved, BOLD time), then the seven network
/// predictions. Written beside an evaluation so its figures can be recomputed, and other
/// readouts tried, outside the service.
#[must_use]
pub fn design_csv(design: &Design, features: &[&str], spans: &[(usize, usize)]) -> String {
    use std::fmt::Write as _;
    let mut s = String::from("second,duration");
    for name in features {
        let _ = write!(s, ",{name}");
    }
    for network in NETWORKS {
        let _ = write!(s, ",net:{network}");
    }
    s.push('\n');
    for (row, (start, duration)) in spans.iter().enumerate() {
        let _ = write!(s, "{start},{duration}");
        for v in design
            .x
            .row(row)
            .iter()
            .chain(design.prediction.row(row).iter())
        {
            let _ = write!(s, ",{v}");
        }
        s.push('\n');
    }
    s
}

/// Ridge toward `w0` with an unpenalised intercept: minimises ‖y − b − Xw‖² + λ‖w − w0‖².
///
/// # Errors
/// A singular system.
pub fn ridge_to_prior(
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    w0: &DVector<f64>,
    lambda: f64,
) -> anyhow::Result<(DVector<f64>, f64)> {
    let xm = x.row_mean();
    let ym = y.mean();
    if lambda.is_infinite() {
        return Ok((w0.clone(), ym - (&xm * w0)[(0, 0)]));
    }
    let mut xc = x.clone();
    for mut r in xc.row_iter_mut() {
        r -= &xm;
    }
    let yc = y.add_scalar(-ym);
    let mut gram = xc.transpose() * &xc;
    for i in 0..gram.nrows() {
        gram[(i, i)] += lambda;
    }
    let chol = gram
        .cholesky()
        .context("the regression is singular; add data or raise λ")?;
    let w = chol.solve(&(xc.transpose() * &yc + w0 * lambda));
    let b = ym - (xm * &w)[(0, 0)];
    Ok((w, b))
}

/// Contiguous blocks: the fold of each row.
fn blocks(rows: usize, folds: usize) -> Vec<usize> {
    (0..rows).map(|i| i * folds / rows).collect()
}

/// Mean over the outer blocks of the correlation inside each block.
#[must_use]
pub fn within_block_r(prediction: &[f64], truth: &[f64]) -> f64 {
    let fold_of = blocks(truth.len(), OUTER_FOLDS);
    (0..OUTER_FOLDS)
        .map(|fold| {
            let rows: Vec<usize> = (0..truth.len()).filter(|i| fold_of[*i] == fold).collect();
            let p: Vec<f64> = rows.iter().map(|i| prediction[*i]).collect();
            let t: Vec<f64> = rows.iter().map(|i| truth[*i]).collect();
            pearson(&p, &t)
        })
        .sum::<f64>()
        / OUTER_FOLDS as f64
}

/// Training rows for held-out block `fold`: every row of another block, at least `gap` rows away
/// from the test block.
fn train_rows(fold_of: &[usize], fold: usize, gap: usize) -> Vec<usize> {
    let test: Vec<usize> = (0..fold_of.len()).filter(|i| fold_of[*i] == fold).collect();
    let (lo, hi) = (test[0], test[test.len() - 1]);
    (0..fold_of.len())
        .filter(|i| fold_of[*i] != fold && (*i + gap < lo || *i > hi + gap))
        .collect()
}

/// The prior's direction with its gain fitted on the training rows (one least-squares scale,
/// floored at 0): the fit then shrinks toward the prior's *pattern* whatever the target's unit.
fn scaled_prior(x: &DMatrix<f64>, y: &DVector<f64>, w0: &DVector<f64>) -> DVector<f64> {
    let p: Vec<f64> = (x * w0).iter().copied().collect();
    let ys: Vec<f64> = y.iter().copied().collect();
    let n = p.len() as f64;
    let (mp, my) = (p.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let cov: f64 = p.iter().zip(&ys).map(|(a, b)| (a - mp) * (b - my)).sum();
    let var: f64 = p.iter().map(|a| (a - mp).powi(2)).sum();
    let gain = if var > 0.0 { (cov / var).max(0.0) } else { 0.0 };
    w0 * gain
}

/// Chooses λ by contiguous-block cross-validation on `rows` (mean held-out r).
fn choose_lambda(
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    w0: &DVector<f64>,
    rows: &[usize],
    folds: usize,
    gap: usize,
) -> anyhow::Result<f64> {
    let xs = x.select_rows(rows.iter());
    let ys = DVector::from_iterator(rows.len(), rows.iter().map(|i| y[*i]));
    let fold_of = blocks(rows.len(), folds);
    let mut best = (LAMBDAS[LAMBDAS.len() - 1], f64::NEG_INFINITY);
    for &lambda in &LAMBDAS {
        let mut score = 0.0;
        for fold in 0..folds {
            let train = train_rows(&fold_of, fold, gap);
            let test: Vec<usize> = (0..rows.len()).filter(|i| fold_of[*i] == fold).collect();
            let (xt, yt) = (
                xs.select_rows(train.iter()),
                DVector::from_iterator(train.len(), train.iter().map(|i| ys[*i])),
            );
            let prior = scaled_prior(&xt, &yt, w0);
            let (w, b) = ridge_to_prior(&xt, &yt, &prior, lambda)?;
            let pred: Vec<f64> = test.iter().map(|i| (xs.row(*i) * &w)[(0, 0)] + b).collect();
            let truth: Vec<f64> = test.iter().map(|i| ys[*i]).collect();
            score += pearson(&pred, &truth) / folds as f64;
        }
        if score > best.1 {
            best = (lambda, score);
        }
    }
    Ok(best.0)
}

/// Nested cross-validation of ridge toward the prior: held-out predictions for every row (outer
/// contiguous blocks with gaps; λ chosen by inner CV inside each outer training set), and the λ
/// each outer fold chose.
///
/// # Errors
/// Too few rows for the folds, singular systems.
pub fn nested_fit(
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    w0: &DVector<f64>,
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let rows = x.nrows();
    ensure!(
        rows >= OUTER_FOLDS * (INNER_FOLDS + 2 * GAP_ROWS),
        "{rows} rows are too few for {OUTER_FOLDS} x {INNER_FOLDS} nested folds"
    );
    let fold_of = blocks(rows, OUTER_FOLDS);
    let mut pred = vec![0.0; rows];
    let mut lambdas = Vec::new();
    for fold in 0..OUTER_FOLDS {
        let train = train_rows(&fold_of, fold, GAP_ROWS);
        let lambda = choose_lambda(x, y, w0, &train, INNER_FOLDS, GAP_ROWS)?;
        let xt = x.select_rows(train.iter());
        let yt = DVector::from_iterator(train.len(), train.iter().map(|i| y[*i]));
        let prior = scaled_prior(&xt, &yt, w0);
        let (w, b) = ridge_to_prior(&xt, &yt, &prior, lambda)?;
        for i in (0..rows).filter(|i| fold_of[*i] == fold) {
            pred[i] = (x.row(i) * &w)[(0, 0)] + b;
        }
        lambdas.push(lambda);
    }
    Ok((pred, lambdas))
}

/// One target's figures.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    pub target: String,
    pub network: String,
    /// The model as shipped, nothing fitted on these data (whole series).
    pub zero_shot_r: f64,
    /// The same, within block.
    pub zero_shot_block_r: f64,
    /// Ridge toward the prior, nested CV, held-out, within block.
    pub fitted_r: f64,
    /// λ per outer fold (`null` in JSON is the prior with its gain fitted, λ = ∞).
    pub fitted_lambdas: Vec<f64>,
    /// Single-feature baselines (HRF-convolved like the model), by feature name (whole series).
    pub baselines: Vec<(String, f64)>,
    /// The same, within block.
    pub baselines_block: Vec<(String, f64)>,
    /// Leave-one-subject-out ISC, when subject-level targets were given: the ceiling for
    /// predicting **one subject's** series.
    pub ceiling: Option<f64>,
    /// The split-half reliability of the group mean, Spearman–Brown corrected to the whole
    /// group ([`split_half_ceiling`]): the ceiling for predicting the **group-mean** series, which
    /// is what the targets are.
    pub group_ceiling: Option<f64>,
    /// The model and the baselines over the rows after the onset (see [`AfterOnset`]), when
    /// asked for.
    pub after_onset: Option<TargetAfterOnset>,
    /// [`TargetReport::zero_shot_r`]'s interval and null (whole series).
    pub zero_shot_uncertainty: Uncertainty,
    /// The same for each of [`TargetReport::baselines`].
    pub baselines_uncertainty: Vec<(String, Uncertainty)>,
    /// [`TargetReport::zero_shot_block_r`]'s interval and null ([`uncertainty_within_block`]).
    pub zero_shot_block_uncertainty: Uncertainty,
    /// The same for each of [`TargetReport::baselines_block`].
    pub baselines_block_uncertainty: Vec<(String, Uncertainty)>,
}

/// One target scored over the rows that start at or after [`AfterOnset::from_second`].
#[derive(Debug, Clone, Serialize)]
pub struct TargetAfterOnset {
    pub zero_shot_r: f64,
    pub baselines: Vec<(String, f64)>,
}

/// The whole-series measure without the response to the stimulus's onset.
///
/// A stimulus that starts after silence (a story after its padding) raises every regressor that
/// follows the sound at once, and the measured response with them; over a few minutes, those
/// few rows can decide a whole-series r. Scoring the rows from `from_second` on (the first
/// sound plus the response's peak) says how much of a figure is the onset. Added after the
/// Alice first half showed it (EVALUATION-PLAN.md, deviations): a secondary measure.
#[derive(Debug, Clone, Serialize)]
pub struct AfterOnset {
    pub from_second: usize,
    pub rows: usize,
    pub mean_zero_shot_r: f64,
    pub mean_baselines: Vec<(String, f64)>,
    /// [`AfterOnset::mean_zero_shot_r`]'s interval and null, over the same rows.
    pub mean_zero_shot_uncertainty: Uncertainty,
    /// The same for each of [`AfterOnset::mean_baselines`].
    pub mean_baselines_uncertainty: Vec<(String, Uncertainty)>,
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub model: String,
    pub rows: usize,
    pub targets: Vec<TargetReport>,
    pub mean_zero_shot_r: f64,
    pub mean_zero_shot_block_r: f64,
    pub mean_fitted_r: f64,
    pub mean_baselines: Vec<(String, f64)>,
    pub mean_baselines_block: Vec<(String, f64)>,
    pub mean_ceiling: Option<f64>,
    /// Mean of the targets' [`TargetReport::group_ceiling`].
    pub mean_group_ceiling: Option<f64>,
    pub after_onset: Option<AfterOnset>,
    /// Subjects left out of the targets, with why (set by the caller that read them).
    pub excluded_subjects: Vec<String>,
    /// The whole-series [`Report::mean_zero_shot_r`]'s interval and null.
    pub mean_zero_shot_uncertainty: Uncertainty,
    /// The same for each of [`Report::mean_baselines`].
    pub mean_baselines_uncertainty: Vec<(String, Uncertainty)>,
    /// The within-block [`Report::mean_zero_shot_block_r`]'s interval and null
    /// ([`uncertainty_within_block`]).
    pub mean_zero_shot_block_uncertainty: Uncertainty,
    /// The same for each of [`Report::mean_baselines_block`].
    pub mean_baselines_block_uncertainty: Vec<(String, Uncertainty)>,
    /// The dataset authors' own predictors scored against the same targets (set by the caller
    /// that read them; empty for `model eval`).
    pub authors_regressors: Vec<AuthorsRegressor>,
}

/// One of the dataset authors' predictors (Alice: `sNN-rate.txt`, `sNN-sndpwr.txt`), each
/// subject's series z-scored and averaged over the subjects scored, against the group targets:
/// a baseline that does not depend on our stimulus proxy.
#[derive(Debug, Clone, Serialize)]
pub struct AuthorsRegressor {
    pub name: String,
    /// r with each target, in the targets' order (whole series).
    pub r: Vec<f64>,
    pub mean_r: f64,
    pub uncertainty: Uncertainty,
}

/// A target's after-onset scores, in a report built with them.
fn after(r: &TargetReport) -> &TargetAfterOnset {
    r.after_onset
        .as_ref()
        .expect("every target is scored after the onset")
}

/// Features the baselines are built from, when the model has them.
pub const BASELINES: [&str; 2] = ["loudness", "word_rate"];

/// Each subject's series z-scored on its own (a copy).
fn zscored(subjects: &[Vec<f64>]) -> Vec<Vec<f64>> {
    subjects
        .iter()
        .map(|s| {
            let mut v = s.clone();
            zscore(&mut v);
            v
        })
        .collect()
}

/// Leave-one-subject-out ISC of one column: each subject's z-scored series against the mean of
/// the others', averaged over subjects.
#[must_use]
pub fn loso_isc(subjects: &[Vec<f64>]) -> f64 {
    let n = subjects.len();
    if n < 3 {
        return f64::NAN;
    }
    let rows = subjects[0].len();
    let z = zscored(subjects);
    let mut total = 0.0;
    for i in 0..n {
        let others: Vec<f64> = (0..rows)
            .map(|t| (0..n).filter(|j| *j != i).map(|j| z[j][t]).sum::<f64>() / (n - 1) as f64)
            .collect();
        total += pearson(&z[i], &others);
    }
    total / n as f64
}

/// The seed of every resampling in a report ([`uncertainty`], [`split_half_ceiling`]), so reports reproduce.
pub const UNCERTAINTY_SEED: u64 = 20_161_007;

/// Resamples behind [`Uncertainty`]'s interval and null.
pub const RESAMPLES: usize = 1000;
/// Rows per block of the circular block bootstrap: 10 volumes (20 s at the Alice TR), longer than
/// the haemodynamic response's memory, so a block keeps the autocorrelation a smooth regressor
/// and its target share.
pub const BLOCK_ROWS: usize = 10;

/// The uncertainty of a mean correlation over targets.
///
/// Why both: the rows of an fMRI series and of an HRF-convolved regressor are strongly
/// autocorrelated. An interval from resampling single rows would be far too narrow, and a
/// floor such as 0.10 means nothing without knowing how large a mean r arises by chance
/// between smooth series.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Uncertainty {
    /// 95 % percentile interval of a circular block bootstrap over rows ([`BLOCK_ROWS`]), the
    /// same rows for every target so their dependence is kept.
    pub interval: [f64; 2],
    /// Standard deviation of the mean r under a phase-randomised null: each target replaced by
    /// a series with its own amplitude spectrum and random phases (the same phases for every
    /// target), correlated with the same predictions.
    pub null_sd: f64,
    /// One-sided p of the observed mean r under that null, `(1 + #null ≥ observed) / (1 + N)`.
    pub p: f64,
}

/// A prediction and its target, row for row.
type Pair = (Vec<f64>, Vec<f64>);

fn mean_r(pairs: &[Pair], rows: Option<&[usize]>) -> f64 {
    let r = |(a, b): &Pair| match rows {
        Some(rows) => {
            let pick = |v: &[f64]| -> Vec<f64> { rows.iter().map(|&i| v[i]).collect() };
            pearson(&pick(a), &pick(b))
        }
        None => pearson(a, b),
    };
    pairs.iter().map(r).sum::<f64>() / pairs.len().max(1) as f64
}

/// `(cos, sin)` of `2π j / n` for `j < n`: the one table [`dft`] and [`with_phases`] read.
fn unit_circle(n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|j| {
            let a = std::f64::consts::TAU * j as f64 / n as f64;
            (a.cos(), a.sin())
        })
        .collect()
}

/// The discrete Fourier transform of a real series, `(re, im)` per frequency (a plain O(n²)
/// sum over a table of the unit circle: the series here are a few hundred rows).
fn dft(x: &[f64], circle: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let n = x.len();
    (0..n)
        .map(|k| {
            x.iter().enumerate().fold((0.0, 0.0), |(re, im), (t, v)| {
                let (c, s) = circle[k * t % n];
                (re + v * c, im - v * s)
            })
        })
        .collect()
}

/// A real series with the amplitude spectrum of `spectrum` (from [`dft`]) and its phases
/// turned by `phases` (one per frequency 1..n/2, mirrored so the result is real).
fn with_phases(spectrum: &[(f64, f64)], phases: &[f64], circle: &[(f64, f64)]) -> Vec<f64> {
    let n = spectrum.len();
    let mut turned = spectrum.to_vec();
    for k in 1..n.div_ceil(2) {
        let (re, im) = spectrum[k];
        let (s, c) = phases[k].sin_cos();
        turned[k] = (re * c - im * s, re * s + im * c);
        turned[n - k] = (turned[k].0, -turned[k].1);
    }
    (0..n)
        .map(|t| {
            turned.iter().enumerate().fold(0.0, |acc, (k, (re, im))| {
                let (c, s) = circle[k * t % n];
                acc + re * c - im * s
            }) / n as f64
        })
        .collect()
}

/// Which correlation a mean r is: over the whole series, or [`within_block_r`]'s mean of the
/// r inside each outer block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    WholeSeries,
    WithinBlock,
}

/// The [`Uncertainty`] of the mean over `pairs` of `pearson(prediction, target)`, each pair's
/// series of equal length, with a fixed seed so the report reproduces.
#[must_use]
pub fn uncertainty(pairs: &[Pair], seed: u64) -> Uncertainty {
    uncertainty_of(pairs, seed, Measure::WholeSeries)
}

/// The [`Uncertainty`] of the mean over `pairs` of [`within_block_r`].
///
/// The bootstrap resamples circular blocks of [`BLOCK_ROWS`] inside each outer block (about 36
/// rows at the Alice length), so every resample keeps the five blocks and the statistic stays
/// a mean of five within-block r; the null is the whole-series null (each target
/// phase-randomised over the whole series, the same phases for every target) scored within
/// block, so a surrogate keeps the target's spectrum, slow drift included.
#[must_use]
pub fn uncertainty_within_block(pairs: &[Pair], seed: u64) -> Uncertainty {
    uncertainty_of(pairs, seed, Measure::WithinBlock)
}

/// Rows of one bootstrap resample of `lo..hi`: circular blocks of [`BLOCK_ROWS`] (a block that
/// runs past `hi` wraps to `lo`), drawn until `hi - lo` rows are drawn.
///
/// Why circular (Politis & Romano 1992): a plain moving-block bootstrap draws the first and
/// last `BLOCK_ROWS - 1` rows of the span less often than the others. At the Alice length that
/// under-weighted the story's onset, which carries much of every whole-series r, and within a
/// 36-row block it put loudness's own within-block r above its 95 % interval. Wrapping draws
/// every row equally often.
fn circular_blocks(rng: &mut impl rand::Rng, lo: usize, hi: usize) -> Vec<usize> {
    let n = hi - lo;
    let block = BLOCK_ROWS.min(n);
    let mut rows = Vec::with_capacity(n + block);
    while rows.len() < n {
        let start = rng.random_range(0..n);
        rows.extend((0..block).map(|j| lo + (start + j) % n));
    }
    rows.truncate(n);
    rows
}

fn uncertainty_of(pairs: &[Pair], seed: u64, measure: Measure) -> Uncertainty {
    use rand::{Rng, SeedableRng};
    let n = pairs.first().map_or(0, |p| p.0.len().min(p.1.len()));
    let pairs: Vec<Pair> = pairs
        .iter()
        .map(|(a, b)| (a[..n].to_vec(), b[..n].to_vec()))
        .collect();
    // The outer blocks' row ranges, for the within-block measure.
    let fold_of = blocks(n, OUTER_FOLDS);
    let ranges: Vec<(usize, usize)> = (0..OUTER_FOLDS)
        .map(|f| {
            let lo = fold_of.iter().position(|&x| x == f).unwrap_or(n);
            let hi = fold_of.iter().rposition(|&x| x == f).map_or(lo, |i| i + 1);
            (lo, hi)
        })
        .collect();
    let shortest = match measure {
        Measure::WholeSeries => n,
        Measure::WithinBlock => ranges.iter().map(|(lo, hi)| hi - lo).min().unwrap_or(0),
    };
    let score = |pairs: &[Pair], rows: Option<&[usize]>| -> f64 {
        match measure {
            Measure::WholeSeries => mean_r(pairs, rows),
            Measure::WithinBlock => {
                let block_r = |(a, b): &Pair| -> f64 {
                    let rows = rows.map_or_else(|| (0..n).collect(), <[usize]>::to_vec);
                    let pick =
                        |v: &[f64], r: &[usize]| -> Vec<f64> { r.iter().map(|&i| v[i]).collect() };
                    // A resample lists each block's rows in turn, each block as long as the
                    // original, so the k-th block is the k-th range's span of the list.
                    ranges
                        .iter()
                        .map(|&(lo, hi)| pearson(&pick(a, &rows[lo..hi]), &pick(b, &rows[lo..hi])))
                        .sum::<f64>()
                        / OUTER_FOLDS as f64
                };
                pairs.iter().map(block_r).sum::<f64>() / pairs.len().max(1) as f64
            }
        }
    };
    let observed = score(&pairs, None);
    if n < 2 * BLOCK_ROWS || shortest < BLOCK_ROWS {
        return Uncertainty {
            interval: [f64::NAN; 2],
            null_sd: f64::NAN,
            p: f64::NAN,
        };
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut boot: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let rows = match measure {
                Measure::WholeSeries => circular_blocks(&mut rng, 0, n),
                Measure::WithinBlock => ranges
                    .iter()
                    .flat_map(|&(lo, hi)| circular_blocks(&mut rng, lo, hi))
                    .collect(),
            };
            score(&pairs, Some(&rows))
        })
        .collect();
    boot.sort_by(f64::total_cmp);
    let at = |q: f64| boot[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    let circle = unit_circle(n);
    let spectra: Vec<Vec<(f64, f64)>> = pairs.iter().map(|(_, y)| dft(y, &circle)).collect();
    let null: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let phases: Vec<f64> = (0..n)
                .map(|_| rng.random_range(0.0..std::f64::consts::TAU))
                .collect();
            let surrogate: Vec<Pair> = pairs
                .iter()
                .zip(&spectra)
                .map(|((x, _), s)| (x.clone(), with_phases(s, &phases, &circle)))
                .collect();
            score(&surrogate, None)
        })
        .collect();
    let m = null.iter().sum::<f64>() / null.len() as f64;
    let sd = (null.iter().map(|v| (v - m).powi(2)).sum::<f64>() / null.len() as f64).sqrt();
    let above = null.iter().filter(|v| **v >= observed).count();
    Uncertainty {
        interval: [at(0.025), at(0.975)],
        null_sd: sd,
        p: (1 + above) as f64 / (1 + RESAMPLES) as f64,
    }
}

/// Random half-splits [`split_half_ceiling`] averages over.
pub const SPLITS: usize = 200;

/// Split-half reliability of a group-mean series, Spearman–Brown corrected to the whole group:
/// over [`SPLITS`] random splits of the subjects into halves (fixed seed), the correlation
/// `r` between the two halves' mean z-scored series, as `2r / (1 + r)`, averaged. This bounds
/// how well any predictor can correlate with the group mean; [`loso_isc`] bounds one subject.
#[must_use]
pub fn split_half_ceiling(subjects: &[Vec<f64>]) -> f64 {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let n = subjects.len();
    if n < 4 {
        return f64::NAN;
    }
    let z = zscored(subjects);
    let rows = z[0].len();
    let half_mean = |pick: &[usize]| -> Vec<f64> {
        (0..rows)
            .map(|t| pick.iter().map(|j| z[*j][t]).sum::<f64>() / pick.len() as f64)
            .collect()
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(UNCERTAINTY_SEED);
    let mut order: Vec<usize> = (0..n).collect();
    let mut total = 0.0;
    for _ in 0..SPLITS {
        order.shuffle(&mut rng);
        let (a, b) = order.split_at(n / 2);
        let r = pearson(&half_mean(a), &half_mean(b));
        total += 2.0 * r / (1.0 + r);
    }
    total / SPLITS as f64
}

/// Evaluates `model` on one clip's raw features against `targets` (and, for the ceiling,
/// subject-level targets with the same columns and rows).
///
/// # Errors
/// Mismatched inputs, too few rows, singular fits.
pub fn evaluate(
    model: &Model,
    raw: &[f32],
    presence: Presence,
    targets: &Targets,
    subjects: &[Targets],
    after_second: Option<usize>,
) -> anyhow::Result<Report> {
    let d = design(model, raw, presence, &targets.spans)?;
    // Rows scored "after the onset": those starting at or after `after_second`.
    let settled: Option<Vec<usize>> = after_second.map(|from| {
        (0..targets.spans.len())
            .filter(|&i| targets.spans[i].0 >= from)
            .collect()
    });
    if let Some(rows) = &settled {
        ensure!(
            rows.len() >= 20,
            "only {} target rows start at or after second {}; at least 20 are needed",
            rows.len(),
            after_second.unwrap_or_default()
        );
    }
    let pick = |v: &[f64], rows: &[usize]| -> Vec<f64> { rows.iter().map(|&i| v[i]).collect() };
    let f = model.features.len();
    for s in subjects {
        if s.spans != targets.spans || s.columns != targets.columns {
            bail!("subject-level targets must have the group targets' rows and columns");
        }
    }
    let mut reports = Vec::new();
    let mut model_pairs = Vec::new();
    let mut baseline_pairs: Vec<(String, Vec<Pair>)> = BASELINES
        .iter()
        .filter(|name| model.features.iter().any(|x| x == *name))
        .map(|name| ((*name).to_owned(), Vec::new()))
        .collect();
    for (c, (label, network)) in targets.columns.iter().enumerate() {
        let y = targets.column(c);
        let zero: Vec<f64> = d.prediction.column(*network).iter().copied().collect();
        model_pairs.push((zero.clone(), y.clone()));
        for (name, pairs) in &mut baseline_pairs {
            if let Some(k) = model.features.iter().position(|x| x == name) {
                pairs.push((d.x.column(k).iter().copied().collect(), y.clone()));
            }
        }
        let w0 =
            DVector::from_iterator(f, (0..f).map(|k| f64::from(model.weights[network * f + k])));
        let (pred, lambdas) = nested_fit(&d.x, &DVector::from_vec(y.clone()), &w0)?;
        let baseline = |score: &dyn Fn(&[f64], &[f64]) -> f64| -> Vec<(String, f64)> {
            BASELINES
                .iter()
                .filter_map(|name| {
                    let k = model.features.iter().position(|x| x == name)?;
                    let col: Vec<f64> = d.x.column(k).iter().copied().collect();
                    Some(((*name).to_owned(), score(&col, &y)))
                })
                .collect()
        };
        let zero_shot_uncertainty = uncertainty(&[(zero.clone(), y.clone())], UNCERTAINTY_SEED);
        let zero_shot_block_uncertainty =
            uncertainty_within_block(&[(zero.clone(), y.clone())], UNCERTAINTY_SEED);
        let baselines_uncertainty_of = |of: fn(&[Pair], u64) -> Uncertainty| {
            BASELINES
                .iter()
                .filter_map(|name| {
                    let k = model.features.iter().position(|x| x == name)?;
                    let col: Vec<f64> = d.x.column(k).iter().copied().collect();
                    Some((
                        (*name).to_owned(),
                        of(&[(col, y.clone())], UNCERTAINTY_SEED),
                    ))
                })
                .collect::<Vec<(String, Uncertainty)>>()
        };
        let baselines_uncertainty = baselines_uncertainty_of(uncertainty);
        let baselines_block_uncertainty = baselines_uncertainty_of(uncertainty_within_block);
        let columns: Vec<Vec<f64>> = subjects.iter().map(|s| s.column(c)).collect();
        let ceiling = (!subjects.is_empty()).then(|| loso_isc(&columns));
        let group_ceiling = (!subjects.is_empty()).then(|| split_half_ceiling(&columns));
        let after_onset = settled.as_ref().map(|rows| {
            let r_after = |a: &[f64], b: &[f64]| pearson(&pick(a, rows), &pick(b, rows));
            TargetAfterOnset {
                zero_shot_r: r_after(&zero, &y),
                baselines: baseline(&r_after),
            }
        });
        reports.push(TargetReport {
            target: label.clone(),
            network: NETWORKS[*network].to_owned(),
            zero_shot_r: pearson(&zero, &y),
            zero_shot_block_r: within_block_r(&zero, &y),
            fitted_r: within_block_r(&pred, &y),
            fitted_lambdas: lambdas,
            baselines: baseline(&pearson),
            baselines_block: baseline(&within_block_r),
            ceiling,
            group_ceiling,
            after_onset,
            zero_shot_uncertainty,
            baselines_uncertainty,
            zero_shot_block_uncertainty,
            baselines_block_uncertainty,
        });
    }
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mean_of = |pick: fn(&TargetReport) -> &Vec<(String, f64)>| -> Vec<(String, f64)> {
        BASELINES
            .iter()
            .filter(|name| model.features.iter().any(|x| x == *name))
            .map(|name| {
                let v = reports
                    .iter()
                    .filter_map(|r| pick(r).iter().find(|b| b.0 == *name).map(|b| b.1))
                    .collect();
                ((*name).to_owned(), mean(v))
            })
            .collect()
    };
    let mean_baselines = mean_of(|r| &r.baselines);
    let mean_baselines_block = mean_of(|r| &r.baselines_block);
    let on_rows = |pairs: &[Pair], rows: &[usize]| -> Vec<Pair> {
        pairs
            .iter()
            .map(|(a, b)| (pick(a, rows), pick(b, rows)))
            .collect()
    };
    let after_onset = after_second
        .zip(settled.as_ref())
        .map(|(from, rows)| AfterOnset {
            from_second: from,
            rows: rows.len(),
            mean_zero_shot_r: mean(reports.iter().map(|r| after(r).zero_shot_r).collect()),
            mean_baselines: mean_of(|r| &after(r).baselines),
            mean_zero_shot_uncertainty: uncertainty(&on_rows(&model_pairs, rows), UNCERTAINTY_SEED),
            mean_baselines_uncertainty: baseline_pairs
                .iter()
                .map(|(name, pairs)| {
                    (
                        name.clone(),
                        uncertainty(&on_rows(pairs, rows), UNCERTAINTY_SEED),
                    )
                })
                .collect(),
        });
    Ok(Report {
        model: model.id(),
        rows: targets.values.len(),
        mean_zero_shot_r: mean(reports.iter().map(|r| r.zero_shot_r).collect()),
        mean_zero_shot_block_r: mean(reports.iter().map(|r| r.zero_shot_block_r).collect()),
        mean_fitted_r: mean(reports.iter().map(|r| r.fitted_r).collect()),
        mean_ceiling: (!subjects.is_empty())
            .then(|| mean(reports.iter().filter_map(|r| r.ceiling).collect())),
        mean_group_ceiling: (!subjects.is_empty())
            .then(|| mean(reports.iter().filter_map(|r| r.group_ceiling).collect())),
        excluded_subjects: Vec::new(),
        mean_zero_shot_uncertainty: uncertainty(&model_pairs, UNCERTAINTY_SEED),
        mean_baselines_uncertainty: baseline_pairs
            .iter()
            .map(|(name, pairs)| (name.clone(), uncertainty(pairs, UNCERTAINTY_SEED)))
            .collect(),
        mean_zero_shot_block_uncertainty: uncertainty_within_block(&model_pairs, UNCERTAINTY_SEED),
        mean_baselines_block_uncertainty: baseline_pairs
            .iter()
            .map(|(name, pairs)| {
                (
                    name.clone(),
                    uncertainty_within_block(pairs, UNCERTAINTY_SEED),
                )
            })
            .collect(),
        mean_baselines,
        mean_baselines_block,
        authors_regressors: Vec::new(),
        targets: reports,
        after_onset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ridge_to_prior_returns_the_prior_when_lambda_dominates_and_ols_when_it_vanishes() {
        let x = DMatrix::from_fn(50, 2, |i, k| ((i * (k + 3)) % 7) as f64 - 3.0);
        let truth = DVector::from_vec(vec![1.0, -2.0]);
        let y = &x * &truth;
        let w0 = DVector::from_vec(vec![5.0, 5.0]);
        let (w, _) = ridge_to_prior(&x, &y, &w0, 1e9).expect("ridge");
        assert!(
            (w[0] - 5.0).abs() < 1e-3 && (w[1] - 5.0).abs() < 1e-3,
            "{w}"
        );
        let (w, _) = ridge_to_prior(&x, &y, &w0, 1e-9).expect("ridge");
        assert!(
            (w[0] - 1.0).abs() < 1e-6 && (w[1] + 2.0).abs() < 1e-6,
            "{w}"
        );
    }

    #[test]
    fn an_infinite_lambda_is_the_prior_and_the_fit_is_scored_within_block() {
        let x = DMatrix::from_fn(40, 2, |i, k| ((i * (k + 2)) % 5) as f64);
        let y = DVector::from_fn(40, |i, _| x[(i, 0)] + 100.0);
        let w0 = DVector::from_vec(vec![2.0, 0.0]);
        let (w, b) = ridge_to_prior(&x, &y, &w0, f64::INFINITY).expect("ridge");
        assert_eq!(w, w0);
        // The intercept centres the prior's prediction on the target.
        let pred = &x * &w;
        assert!((pred.mean() + b - y.mean()).abs() < 1e-9);
        // Each block offset by its own constant: whole-series r suffers, within-block r not.
        let truth: Vec<f64> = (0..100).map(|i| (f64::from(i) * 0.7).sin()).collect();
        let shifted: Vec<f64> = truth
            .iter()
            .enumerate()
            .map(|(i, t)| t + 10.0 * (i * OUTER_FOLDS / 100) as f64)
            .collect();
        assert!((within_block_r(&shifted, &truth) - 1.0).abs() < 1e-9);
        assert!(pearson(&shifted, &truth) < 0.2);
    }

    #[test]
    fn training_rows_keep_a_gap_around_the_test_block() {
        let fold_of = blocks(100, 5);
        let train = train_rows(&fold_of, 2, 5);
        assert!(train.iter().all(|i| *i < 35 || *i >= 65), "{train:?}");
        assert_eq!(train.len(), 70);
    }

    #[test]
    fn split_half_ceiling_of_identical_subjects_is_one_and_of_noise_is_near_zero() {
        let s: Vec<f64> = (0..60).map(|t| (t as f64 * 0.3).sin()).collect();
        assert!((split_half_ceiling(&vec![s.clone(); 6]) - 1.0).abs() < 1e-9);
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let noise: Vec<Vec<f64>> = (0..8)
            .map(|_| (0..200).map(|_| rng.random_range(-1.0..1.0)).collect())
            .collect();
        assert!(split_half_ceiling(&noise).abs() < 0.4);
        // A shared signal under independent noise: reliable, but below 1.
        let shared: Vec<Vec<f64>> = (0..8)
            .map(|_| {
                (0..200)
                    .map(|t| (f64::from(t) * 0.2).sin() + rng.random_range(-1.0..1.0))
                    .collect()
            })
            .collect();
        let c = split_half_ceiling(&shared);
        assert!(c > 0.6 && c < 0.99, "{c}");
    }

    #[test]
    fn a_smooth_series_has_a_wide_null_and_a_shared_one_a_tight_interval_above_it() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        // Smooth, unrelated series (random walks): chance correlations are large.
        let walk = |rng: &mut rand::rngs::StdRng| -> Vec<f64> {
            let mut v = 0.0;
            (0..180)
                .map(|_| {
                    v += rng.random_range(-1.0..1.0);
                    v
                })
                .collect()
        };
        let unrelated: Vec<(Vec<f64>, Vec<f64>)> =
            (0..3).map(|_| (walk(&mut rng), walk(&mut rng))).collect();
        let smooth = uncertainty(&unrelated, 1);
        let white: Vec<(Vec<f64>, Vec<f64>)> = (0..3)
            .map(|_| {
                let mut noise = || (0..180).map(|_| rng.random_range(-1.0..1.0)).collect();
                (noise(), noise())
            })
            .collect();
        let white = uncertainty(&white, 1);
        // White noise: about 1 / sqrt(180 * 3) = 0.043.
        assert!((0.025..0.065).contains(&white.null_sd), "{white:?}");
        assert!(
            smooth.null_sd > 1.5 * white.null_sd,
            "{smooth:?} vs {white:?}"
        );
        // A prediction that is the target plus a little noise: r near 1, far outside the null.
        let related: Vec<(Vec<f64>, Vec<f64>)> = (0..3)
            .map(|_| {
                let y = walk(&mut rng);
                let x = y.iter().map(|v| v + rng.random_range(-0.5..0.5)).collect();
                (x, y)
            })
            .collect();
        let u = uncertainty(&related, 1);
        assert!(u.interval[0] > 0.9 && u.interval[1] <= 1.0, "{u:?}");
        assert!(u.p < 0.01, "{u:?}");
        // The phase-randomised surrogate keeps the amplitude spectrum: with zero added phase it
        // is the series itself.
        let y = walk(&mut rng);
        let circle = unit_circle(y.len());
        let back = with_phases(&dft(&y, &circle), &vec![0.0; y.len()], &circle);
        assert!(y.iter().zip(&back).all(|(a, b)| (a - b).abs() < 1e-9));
    }

    #[test]
    fn circular_blocks_draw_every_row_equally_often() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let (lo, hi) = (40, 76);
        let mut count = vec![0usize; hi];
        for _ in 0..4000 {
            let rows = circular_blocks(&mut rng, lo, hi);
            assert_eq!(rows.len(), hi - lo);
            for r in rows {
                assert!((lo..hi).contains(&r), "{r}");
                count[r] += 1;
            }
        }
        // 4000 resamples of 36 rows: each row about 4000 times. A moving-block bootstrap draws
        // the first row only from blocks that start on it: about a tenth as often.
        let (first, middle, last) = (count[lo], count[(lo + hi) / 2], count[hi - 1]);
        for c in [first, middle, last] {
            assert!((3600..4400).contains(&c), "{first} {middle} {last}");
        }
    }

    #[test]
    fn the_within_block_interval_scores_inside_blocks_and_holds_its_estimate() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        // Each fifth of the prediction follows its target plus noise, offset by its own
        // constant: whole-series r suffers from the offsets, within-block r does not.
        let pairs: Vec<Pair> = (0..3)
            .map(|_| {
                let mut v = 0.0;
                let y: Vec<f64> = (0..180)
                    .map(|_| {
                        v += rng.random_range(-1.0..1.0);
                        v
                    })
                    .collect();
                let x = y
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        t + rng.random_range(-1.0..1.0) + 40.0 * ((i * 5 / 180) % 2) as f64
                    })
                    .collect();
                (x, y)
            })
            .collect();
        let block = uncertainty_within_block(&pairs, 1);
        let observed = pairs.iter().map(|(x, y)| within_block_r(x, y)).sum::<f64>() / 3.0;
        assert!(
            block.interval[0] <= observed && observed <= block.interval[1],
            "{observed} {block:?}"
        );
        assert!(block.interval[0] > 0.6 && block.p < 0.01, "{block:?}");
        // The same pairs scored whole: the offsets pull r and its interval far down.
        let whole = uncertainty(&pairs, 1);
        assert!(whole.interval[0] < block.interval[0], "{whole:?} {block:?}");
        // Unrelated smooth series: within-block chance is wider than white noise's (about
        // 1 / sqrt(36 rows × 5 blocks × 3 pairs) = 0.043), and nothing is found.
        let unrelated: Vec<Pair> = (0..3)
            .map(|_| {
                let mut walk = || -> Vec<f64> {
                    let mut v = 0.0;
                    (0..180)
                        .map(|_| {
                            v += rng.random_range(-1.0..1.0);
                            v
                        })
                        .collect()
                };
                (walk(), walk())
            })
            .collect();
        let chance = uncertainty_within_block(&unrelated, 1);
        assert!(chance.null_sd > 0.065 && chance.p > 0.01, "{chance:?}");
    }

    #[test]
    fn isc_of_identical_subjects_is_one_and_of_noise_is_near_zero() {
        let s: Vec<f64> = (0..100).map(|i| (f64::from(i) * 0.3).sin()).collect();
        assert!((loso_isc(&[s.clone(), s.clone(), s.clone()]) - 1.0).abs() < 1e-9);
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let noise: Vec<Vec<f64>> = (0..5)
            .map(|_| (0..400).map(|_| rng.random_range(-1.0..1.0)).collect())
            .collect();
        assert!(loso_isc(&noise).abs() < 0.3);
    }
}
