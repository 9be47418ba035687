//! Recall's in-memory vectors: one signed byte per component, and a filter that finds every
//! row that can be in the exact top k.
//!
//! Why: the exact f32 scan is bound by memory bandwidth, not arithmetic (100 000 × 384 × 4 B
//! = 154 MB read per query, about 20 ms on this 2-core box), and it holds 1.5 GB per million
//! texts in every process. Bytes read and hold a quarter of that. Quantising loses the exact
//! order, so each row carries a bound on its error, and the filter keeps every row whose score
//! could reach the k-th best: rescoring those candidates with their stored f32 vectors (read
//! from the database, a few dozen rows) gives exactly the f32 scan's answer, not an
//! approximation of it.
//!
//! The bound, for a query `q` quantised to `q'` (16 bits) and a row `x` quantised to `x'`:
//! `|q·x − q'·x'| ≤ ‖q‖·‖x − x'‖ + ‖q − q'‖·‖x'‖` (Cauchy–Schwarz on each term), with both
//! row norms computed once when the row is added and both query norms once per query.

use crate::embed::DIM;

/// Added to every bound: the f32 rescoring's own rounding (at most about DIM × 2⁻²⁴ of
/// Σ|qᵢxᵢ| ≤ 1 for unit vectors) and the rounding of the bounds to f32.
const SLACK: f64 = 1e-4;
/// The largest magnitude of a query component after scaling; with 127 for the rows, a sum of
/// DIM products stays inside i32 (384 × 127 × 32 767 < 2³¹).
const QUERY_LEVELS: f64 = 32_767.0;
const ROW_LEVELS: f32 = 127.0;

/// Rows of [`DIM`] components, each stored as `scale × code` with `code` in −127..=127.
#[derive(Default)]
pub struct QuantisedRows {
    codes: Vec<i8>,
    scale: Vec<f32>,
    /// ‖x − x'‖ for each row; NaN for a row with a non-finite component (never a candidate).
    error: Vec<f32>,
    /// ‖x'‖ for each row.
    norm: Vec<f32>,
}

impl QuantisedRows {
    pub fn len(&self) -> usize {
        self.scale.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scale.is_empty()
    }

    /// Memory held, in bytes.
    pub fn bytes(&self) -> usize {
        self.codes.len() + self.scale.len() * 12
    }

    /// Adds a row. A row of another width than [`DIM`] is the caller's error and is stored as
    /// unusable, so row numbers stay aligned with the caller's.
    pub fn push(&mut self, row: &[f32]) {
        let finite = row.len() == DIM && row.iter().all(|x| x.is_finite());
        if !finite {
            self.codes.extend(std::iter::repeat_n(0, DIM));
            self.scale.push(0.0);
            self.error.push(f32::NAN);
            self.norm.push(0.0);
            return;
        }
        let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / ROW_LEVELS } else { 1.0 };
        let (mut err2, mut norm2) = (0f64, 0f64);
        for &x in row {
            let code = (x / scale).round().clamp(-ROW_LEVELS, ROW_LEVELS);
            let kept = f64::from(code) * f64::from(scale);
            err2 += (f64::from(x) - kept).powi(2);
            norm2 += kept * kept;
            self.codes.push(code as i8);
        }
        self.scale.push(scale);
        self.error.push(err2.sqrt() as f32);
        self.norm.push(norm2.sqrt() as f32);
    }

    /// Every row (ascending) whose dot product with `q` can be among the best `k` and at
    /// least `min`; rescoring them exactly gives the exact top `k` of all rows. Empty for a
    /// query of the wrong width or with a non-finite component.
    pub fn candidates(&self, q: &[f32], k: usize, min: f32) -> Vec<usize> {
        if q.len() != DIM || k == 0 || !q.iter().all(|x| x.is_finite()) {
            return Vec::new();
        }
        let max = q.iter().fold(0f32, |m, x| m.max(x.abs()));
        let q_scale = if max > 0.0 {
            f64::from(max) / QUERY_LEVELS
        } else {
            1.0
        };
        let mut q_codes = [0i16; DIM];
        let (mut q_norm2, mut q_err2) = (0f64, 0f64);
        for (code, &x) in q_codes.iter_mut().zip(q) {
            let c = (f64::from(x) / q_scale)
                .round()
                .clamp(-QUERY_LEVELS, QUERY_LEVELS);
            *code = c as i16;
            q_norm2 += f64::from(x).powi(2);
            q_err2 += (f64::from(x) - c * q_scale).powi(2);
        }
        let (q_norm, q_err) = (q_norm2.sqrt(), q_err2.sqrt());

        // One pass: each row's upper bound, and the k largest lower bounds so far.
        let mut upper = Vec::with_capacity(self.len());
        let mut lowest_kept = Vec::<f64>::with_capacity(k + 1);
        for (r, codes) in self.codes.chunks_exact(DIM).enumerate() {
            let approx =
                f64::from(dot_i8_i16(codes, &q_codes)) * f64::from(self.scale[r]) * q_scale;
            let bound = q_norm * f64::from(self.error[r]) + q_err * f64::from(self.norm[r]) + SLACK;
            upper.push((approx + bound) as f32);
            let lower = approx - bound;
            if lower.is_nan() || (lowest_kept.len() == k && lower <= lowest_kept[k - 1]) {
                continue;
            }
            let at = lowest_kept.partition_point(|b| *b >= lower);
            lowest_kept.insert(at, lower);
            lowest_kept.truncate(k);
        }
        // The k-th best row scores at least the k-th largest lower bound; a row whose upper
        // bound is below it (or below `min`) cannot be in the answer.
        let kth = if lowest_kept.len() == k {
            lowest_kept[k - 1]
        } else {
            f64::NEG_INFINITY
        };
        let threshold = kth.max(f64::from(min)) as f32;
        // Rounding the threshold to f32 may raise it by one ulp; the slack covers that.
        upper
            .iter()
            .enumerate()
            .filter(|(_, u)| **u >= threshold)
            .map(|(r, _)| r)
            .collect()
    }
}

/// Σ codeᵢ × qᵢ in i32: written as a plain zip so the compiler turns it into packed
/// 16-bit multiply-adds (`pmaddwd` on x86).
fn dot_i8_i16(codes: &[i8], q: &[i16; DIM]) -> i32 {
    codes
        .iter()
        .zip(q)
        .map(|(&c, &x)| i32::from(c) * i32::from(x))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intelligence::recall::exact_top;
    use rand::{Rng, SeedableRng};

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    /// The filter then exact rescoring, as search does it.
    fn filtered_top(
        rows: &QuantisedRows,
        all: &[f32],
        q: &[f32],
        k: usize,
        min: f32,
    ) -> Vec<(f32, usize)> {
        let picked = rows.candidates(q, k, min);
        crate::intelligence::recall::exact_top_of(
            picked.iter().map(|&r| (r, &all[r * DIM..(r + 1) * DIM])),
            q,
            k,
            min,
        )
    }

    #[test]
    fn the_filter_then_rescoring_is_the_exact_scan() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        // Clustered rows, as real texts are: 40 topics, small spread, and exact duplicates.
        let topics: Vec<Vec<f32>> = (0..40)
            .map(|_| unit((0..DIM).map(|_| rng.random::<f32>() - 0.5).collect()))
            .collect();
        let mut all = Vec::new();
        let mut rows = QuantisedRows::default();
        for i in 0..6_000 {
            let t = &topics[i % topics.len()];
            let v = if i % 97 == 0 {
                t.clone()
            } else {
                unit(
                    t.iter()
                        .map(|x| x + 0.03 * (rng.random::<f32>() - 0.5))
                        .collect(),
                )
            };
            rows.push(&v);
            all.extend(v);
        }
        let mut total = 0;
        for n in 0..60 {
            let q = if n % 3 == 0 {
                topics[n % topics.len()].clone()
            } else {
                unit((0..DIM).map(|_| rng.random::<f32>() - 0.5).collect())
            };
            for (k, min) in [(8, 0.1), (8, -1.0), (1, -1.0), (50, 0.0)] {
                let want = exact_top(&all, &q, k, min);
                let got = filtered_top(&rows, &all, &q, k, min);
                assert_eq!(got, want, "query {n}, k {k}, min {min}");
            }
            total += rows.candidates(&q, 8, 0.1).len();
        }
        // It must also filter: far fewer rows to rescore than the scan reads.
        assert!(total / 60 < 600, "{} candidates per query", total / 60);
    }

    #[test]
    fn rows_that_cannot_be_scored_are_never_candidates() {
        let mut rows = QuantisedRows::default();
        let good = unit((0..DIM).map(|i| (i as f32).sin()).collect());
        let mut bad = good.clone();
        bad[3] = f32::NAN;
        rows.push(&bad);
        rows.push(&good);
        rows.push(&good[..10]);
        rows.push(&vec![0.0; DIM]);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows.candidates(&good, 8, 0.1), vec![1]);
        assert!(rows.candidates(&good[..5], 8, 0.1).is_empty());
        assert!(rows.candidates(&bad, 8, 0.1).is_empty());
        assert_eq!(rows.bytes(), 4 * DIM + 4 * 12);
    }
}
