//! `brainscan model fit`: cross-validated ridge regression from per-second features to the
//! seven network series, producing a model folder in the same format as v1.
//!
//! Features go through exactly the scan path's transform (z-score with the new model's
//! statistics, then the response kernel with its lag) before the regression, so the fitted
//! readout is what a scan applies. Folds: leave-one-run-out when several runs are given (at
//! most 10 groups), otherwise 5 contiguous blocks — never shuffled rows, which would leak
//! through the autocorrelation of BOLD-like series. Held-out r is reported at the chosen λ; λ
//! is chosen on the same folds, so treat r as slightly optimistic for small datasets.

use std::collections::BTreeMap;
use std::path::Path;

use nalgebra::{DMatrix, DVector};

use super::model::{Model, NETWORK_COUNT, Presence, TimeBase};
use super::prior;
use super::reference::convolve;
use crate::result::NETWORKS;
use crate::stats::pearson;

pub const LAMBDAS: [f64; 8] = [1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3, 1e4];
const MAX_ROWS: usize = 1_000_000;

#[derive(Debug, thiserror::Error)]
pub enum FitError {
    #[error("cannot read {0}: {1}")]
    Io(String, std::io::Error),
    #[error("{file}, line {line}: {message}")]
    Csv {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{0}")]
    Data(String),
}

/// One recording: per-second raw features and the measured network series, same length.
#[derive(Debug, Clone)]
pub struct Run {
    pub name: String,
    pub features: Vec<f32>,
    pub targets: Vec<f32>,
}

impl Run {
    #[must_use]
    pub fn seconds(&self) -> usize {
        self.targets.len() / NETWORK_COUNT
    }
}

/// Reads a CSV whose header names `columns` (in any order; other columns such as `second` are
/// ignored). Returns `rows x columns.len()`.
///
/// # Errors
/// Missing columns, non-numeric or non-finite cells, too many rows.
pub fn read_csv(path: &Path, columns: &[&str]) -> Result<Vec<f32>, FitError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| FitError::Io(file.clone(), e))?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(FitError::Csv {
            file,
            line: 1,
            message: "the file is empty".into(),
        });
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut idx = Vec::with_capacity(columns.len());
    for c in columns {
        let Some(i) = names.iter().position(|n| n == c) else {
            return Err(FitError::Csv {
                file,
                line: 1,
                message: format!("no column `{c}` in the header"),
            });
        };
        idx.push(i);
    }
    let mut out = Vec::new();
    for (n, line) in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != names.len() {
            return Err(FitError::Csv {
                file,
                line: n + 1,
                message: format!("{} cells, the header has {}", cells.len(), names.len()),
            });
        }
        for &i in &idx {
            let v: f32 = cells[i].parse().map_err(|_| FitError::Csv {
                file: file.clone(),
                line: n + 1,
                message: format!("`{}` is not a number", cells[i]),
            })?;
            if !v.is_finite() {
                return Err(FitError::Csv {
                    file,
                    line: n + 1,
                    message: format!("`{}` is not finite", cells[i]),
                });
            }
            out.push(v);
        }
        if out.len() / columns.len() > MAX_ROWS {
            return Err(FitError::Data(format!(
                "{file} has more than {MAX_ROWS} rows"
            )));
        }
    }
    Ok(out)
}

/// Loads a run from a features CSV (as `brainscan features --csv` writes) and a targets CSV
/// with one column per network, named as in the spec. `names` are the model's features.
///
/// # Errors
/// See [`read_csv`]; different lengths.
pub fn load_run(features: &Path, targets: &Path, names: &[&str]) -> Result<Run, FitError> {
    let x = read_csv(features, names)?;
    let y = read_csv(targets, &NETWORKS)?;
    if x.len() / names.len() != y.len() / NETWORK_COUNT {
        return Err(FitError::Data(format!(
            "{} has {} seconds but {} has {}",
            features.display(),
            x.len() / names.len(),
            targets.display(),
            y.len() / NETWORK_COUNT
        )));
    }
    Ok(Run {
        name: features.display().to_string(),
        features: x,
        targets: y,
    })
}

fn corpus(runs: &[Run]) -> Vec<prior::CorpusClip> {
    runs.iter()
        .map(|r| prior::CorpusClip {
            features: r.features.clone(),
            presence: Presence {
                video: true,
                audio: true,
                speech: true,
            },
        })
        .collect()
}

/// The statistics of `runs` for `base`'s feature list.
fn stats(runs: &[Run], base: &Model) -> (Vec<f32>, Vec<f32>) {
    let (mean, std) = prior::corpus_stats(&corpus(runs), &base.feature_list(), &base.absent);
    if base.manifest.format >= 2 {
        (super::v2::centres(&mean), std)
    } else {
        (mean, std)
    }
}

/// What the fit found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FitReport {
    pub lambda: f64,
    pub rows: usize,
    pub runs: usize,
    pub folds: usize,
    /// Held-out Pearson r per network, in the spec's network order.
    pub heldout_r: Vec<(String, f64)>,
    /// Mean held-out r for every λ tried (CV over all folds, which picks the final λ).
    pub lambda_scores: Vec<(f64, f64)>,
    /// The λ each outer fold's inner CV chose (nested CV).
    pub outer_lambdas: Vec<f64>,
}

/// Ridge toward prior weights `w0` (`F x 7`) with an unpenalised intercept: minimises
/// ‖Y − 1b − XW‖² + λ‖W − W0‖² and returns (W `F x 7`, b `7`). With `w0 = 0` this is plain
/// ridge; as λ grows the fit returns the prior, so little data moves the weights little.
fn ridge(
    x: &DMatrix<f64>,
    y: &DMatrix<f64>,
    w0: &DMatrix<f64>,
    lambda: f64,
) -> Result<(DMatrix<f64>, DVector<f64>), FitError> {
    let xm = x.row_mean();
    let ym = y.row_mean();
    let mut xc = x.clone();
    for mut r in xc.row_iter_mut() {
        r -= &xm;
    }
    let mut yc = y.clone();
    for mut r in yc.row_iter_mut() {
        r -= &ym;
    }
    let mut gram = xc.transpose() * &xc;
    for i in 0..gram.nrows() {
        gram[(i, i)] += lambda;
    }
    let chol = gram
        .cholesky()
        .ok_or_else(|| FitError::Data("the regression is singular; add data or raise λ".into()))?;
    let w = chol.solve(&(xc.transpose() * &yc + w0 * lambda));
    let b = ym.transpose() - (xm * &w).transpose();
    Ok((w, b))
}

/// Mean held-out r for each λ over the folds in `folds` (each fold held out in turn, trained on
/// the others in `folds`); returns the best λ and every λ's score.
fn choose_lambda(
    x: &DMatrix<f64>,
    y: &DMatrix<f64>,
    w0: &DMatrix<f64>,
    group: &[usize],
    folds: &[usize],
) -> Result<(f64, Vec<(f64, f64)>), FitError> {
    let mut best: Option<(f64, f64)> = None;
    let mut scores = Vec::new();
    let rows: Vec<usize> = (0..group.len())
        .filter(|i| folds.contains(&group[*i]))
        .collect();
    for &lambda in &LAMBDAS {
        let mut pred = DMatrix::<f64>::zeros(rows.len(), NETWORK_COUNT);
        for g in folds {
            let train: Vec<usize> = rows.iter().copied().filter(|i| group[*i] != *g).collect();
            if train.len() < 2 {
                continue;
            }
            let (w, b) = ridge(
                &x.select_rows(train.iter()),
                &y.select_rows(train.iter()),
                w0,
                lambda,
            )?;
            for (j, i) in rows.iter().enumerate().filter(|(_, i)| group[**i] == *g) {
                pred.set_row(j, &(x.row(*i) * &w + b.transpose()));
            }
        }
        let truth = y.select_rows(rows.iter());
        let mean_r = (0..NETWORK_COUNT)
            .map(|n| pearson(pred.column(n).as_slice(), truth.column(n).as_slice()))
            .sum::<f64>()
            / NETWORK_COUNT as f64;
        scores.push((lambda, mean_r));
        if best.is_none_or(|b| mean_r > b.1) {
            best = Some((lambda, mean_r));
        }
    }
    let (lambda, _) = best.ok_or_else(|| FitError::Data("no λ could be evaluated".into()))?;
    Ok((lambda, scores))
}

/// Fits a model on `runs`, starting from `base` for everything that is not fitted (sampling,
/// response kernel, absent values).
///
/// # Errors
/// Too little or degenerate data.
pub fn fit(runs: &[Run], base: &Model, version: &str) -> Result<(Model, FitReport), FitError> {
    let f = base.features.len();
    let rows: usize = runs.iter().map(Run::seconds).sum();
    if rows < 2 * f {
        return Err(FitError::Data(format!(
            "{rows} seconds of data; at least {} are needed for {f} features",
            2 * f
        )));
    }
    let (mean, std) = stats(runs, base);
    // Transform each run separately (the response kernel must not cross run boundaries).
    let mut xs = Vec::with_capacity(rows * f);
    let mut ys = Vec::with_capacity(rows * NETWORK_COUNT);
    let mut group = Vec::with_capacity(rows);
    let folds = if runs.len() >= 2 {
        runs.len().min(10)
    } else {
        5
    };
    for (ri, run) in runs.iter().enumerate() {
        let t = run.seconds();
        let z: Vec<f64> = run
            .features
            .iter()
            .enumerate()
            .map(|(i, v)| {
                ((f64::from(*v) - f64::from(mean[i % f])) / f64::from(std[i % f]))
                    .clamp(-10.0, 10.0)
            })
            .collect();
        xs.extend(convolve(&z, t, f, &base.hrf, base.kernel(TimeBase::Bold)));
        ys.extend(run.targets.iter().map(|v| f64::from(*v)));
        for s in 0..t {
            group.push(if runs.len() >= 2 {
                ri % folds
            } else {
                s * folds / t
            });
        }
    }
    let x = DMatrix::from_row_slice(rows, f, &xs);
    let y = DMatrix::from_row_slice(rows, NETWORK_COUNT, &ys);

    let w0 = DMatrix::from_fn(f, NETWORK_COUNT, |k, n| f64::from(base.weights[n * f + k]));
    // Nested cross-validation: each outer fold's λ is chosen by CV on the other folds only, so
    // the held-out r measures the whole procedure, λ choice included.
    let mut pred = DMatrix::<f64>::zeros(rows, NETWORK_COUNT);
    let mut chosen = Vec::with_capacity(folds);
    for g in 0..folds {
        let train: Vec<usize> = (0..folds).filter(|h| *h != g).collect();
        if train.len() < 2 {
            continue;
        }
        let (lambda, _) = choose_lambda(&x, &y, &w0, &group, &train)?;
        let idx: Vec<usize> = (0..rows).filter(|i| group[*i] != g).collect();
        let (w, b) = ridge(
            &x.select_rows(idx.iter()),
            &y.select_rows(idx.iter()),
            &w0,
            lambda,
        )?;
        for i in (0..rows).filter(|i| group[*i] == g) {
            pred.set_row(i, &(x.row(i) * &w + b.transpose()));
        }
        chosen.push(lambda);
    }
    let r: Vec<f64> = (0..NETWORK_COUNT)
        .map(|n| pearson(pred.column(n).as_slice(), y.column(n).as_slice()))
        .collect();
    let all: Vec<usize> = (0..folds).collect();
    let (lambda, scores) = choose_lambda(&x, &y, &w0, &group, &all)?;
    let (w, b) = ridge(&x, &y, &w0, lambda)?;

    let mut model = base.clone();
    model.mean = mean;
    model.std = std;
    model.weights = (0..NETWORK_COUNT)
        .flat_map(|n| (0..f).map(move |k| (n, k)))
        .map(|(n, k)| w[(k, n)] as f32)
        .collect();
    model.bias = b.iter().map(|v| *v as f32).collect();
    let report = FitReport {
        lambda,
        rows,
        runs: runs.len(),
        folds,
        heldout_r: NETWORKS.iter().map(|s| (*s).to_owned()).zip(r).collect(),
        lambda_scores: scores,
        outer_lambdas: chosen,
    };
    let mut provenance = BTreeMap::new();
    provenance.insert(
        "source".into(),
        serde_json::json!(if base.weights.iter().any(|w| *w != 0.0) {
            "prior+fitted"
        } else {
            "fitted"
        }),
    );
    provenance.insert(
        "summary".into(),
        serde_json::json!("Weights fitted by ridge regression toward the base model's prior weights (λ by nested cross-validation) with `brainscan model fit`; statistics from the training features."),
    );
    provenance.insert(
        "fit".into(),
        serde_json::to_value(&report).unwrap_or_default(),
    );
    provenance.insert(
        "runs".into(),
        serde_json::json!(
            runs.iter()
                .map(|r| serde_json::json!({"name": r.name, "seconds": r.seconds()}))
                .collect::<Vec<_>>()
        ),
    );
    provenance.insert("base_model".into(), serde_json::json!(base.id()));
    model.manifest.version = version.into();
    model.manifest.provenance = provenance;
    model.manifest.weights.clear();
    Ok((model, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn ridge_recovers_known_weights_through_the_scan_transform() {
        let base = Model::embedded().expect("embedded model");
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let f = base.features.len();
        let mut true_w = vec![0f64; NETWORK_COUNT * f];
        for (i, w) in true_w.iter_mut().enumerate() {
            if i % 3 == 0 {
                *w = rng.random_range(-1.0..1.0);
            }
        }
        let true_b: Vec<f64> = (0..NETWORK_COUNT).map(|n| n as f64 * 0.1 - 0.3).collect();
        let mut runs = Vec::new();
        for r in 0..4 {
            let t = 300;
            let scale: Vec<f64> = (0..f).map(|k| 0.5 + k as f64 * 0.1).collect();
            // Around each feature's centre (its no-drive value for v2's drive features, e.g.
            // -40 dB for loudness), as real features are: values far from it make a column
            // that is nearly constant after z-scoring, which no fit can separate from the
            // intercept at the runs' edges.
            let x: Vec<f32> = (0..t * f)
                .map(|i| {
                    let k = i % f;
                    (f64::from(base.absent[k]) + rng.random_range(-2.0..2.0) * scale[k] + 3.0)
                        as f32
                })
                .collect();
            runs.push(Run {
                name: format!("run{r}"),
                features: x,
                targets: Vec::new(),
            });
        }
        // Targets from the same transform the fit uses (statistics over all runs).
        let (mean, std) = stats(&runs, &base);
        for run in &mut runs {
            let t = run.features.len() / f;
            let z: Vec<f64> = run
                .features
                .iter()
                .enumerate()
                .map(|(i, v)| (f64::from(*v) - f64::from(mean[i % f])) / f64::from(std[i % f]))
                .collect();
            let rr = convolve(&z, t, f, &base.hrf, base.kernel(TimeBase::Bold));
            for s in 0..t {
                for n in 0..NETWORK_COUNT {
                    let y: f64 = true_b[n]
                        + (0..f)
                            .map(|k| true_w[n * f + k] * rr[s * f + k])
                            .sum::<f64>()
                        + rng.random_range(-0.02..0.02);
                    run.targets.push(y as f32);
                }
            }
        }
        let (model, report) = fit(&runs, &base, "test").expect("fit");
        let max_err = model
            .weights
            .iter()
            .zip(&true_w)
            .map(|(a, b)| (f64::from(*a) - b).abs())
            .fold(0.0, f64::max);
        assert!(max_err < 0.05, "weights recovered within {max_err}");
        for (n, b) in model.bias.iter().enumerate() {
            assert!(
                (f64::from(*b) - true_b[n]).abs() < 0.05,
                "bias {n}: {b} vs {}",
                true_b[n]
            );
        }
        for (name, r) in &report.heldout_r {
            assert!(*r > 0.95, "held-out r of {name} is {r}");
        }
        assert_eq!(report.folds, 4);
        // The written folder loads back with its checksum.
        let dir = tempfile::tempdir().expect("tempdir");
        model.write(dir.path()).expect("write");
        let back = Model::load(dir.path()).expect("load");
        assert_eq!(back.weights, model.weights);
        assert_eq!(back.manifest.version, "test");
    }

    #[test]
    fn noise_targets_give_low_heldout_r() {
        let base = Model::embedded().expect("embedded model");
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let t = 400;
        let f = base.features.len();
        let run = Run {
            name: "noise".into(),
            features: (0..t * f).map(|_| rng.random_range(0.0..1.0)).collect(),
            targets: (0..t * NETWORK_COUNT)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect(),
        };
        let (_, report) = fit(&[run], &base, "noise").expect("fit");
        for (name, r) in &report.heldout_r {
            assert!(r.abs() < 0.3, "{name}: r = {r} on pure noise");
        }
        assert_eq!(report.folds, 5);
    }
}
