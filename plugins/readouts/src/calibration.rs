//! The 0-100 scale, calibrated on the benchmark corpus.
//!
//! A readout's raw value (a weighted sum of network z values) has no natural unit: its centre
//! and spread depend on the weights and on how the networks covary. So the scale is set by
//! data: a second's score is the percentile of its raw value among the per-second raw values
//! of the benchmark corpus (mid-rank, so a value many corpus seconds share scores the middle
//! of its run). 50 is the corpus median, and the same score means the same rarity on every
//! lens, which a fixed z → Φ(z) mapping cannot promise. A tie across the median gets the two
//! refinements below.
//!
//! One exception to mid-rank: a value shared by a run of corpus seconds that straddles the
//! median **is** the corpus median, and scores exactly 50. Most corpus seconds have no drive
//! on the networks purchase intent and manipulation read, so their raw values tie at rest
//! across the middle of the corpus (purchase intent's tie runs from the 3rd to the 68th
//! percentile). Mid-rank scored that tie 36 on purchase intent and 56 on manipulation: a
//! music track with nothing to value scored "below typical" on one and, through the
//! manipulation block's bands, "strong persuasive pull" on the other, its `population` said
//! all of its seconds were above a typical second, and its `quadrant` read `coercive`. The
//! median second of the corpus now scores the median.
//!
//! **Each side of such a tie ranks among its own seconds** (since lens-standard 2.3.0). A
//! second above the tie scores `50 + 50 × (its rank among the corpus seconds above the tie)`,
//! a second below it `50 × (its rank among those below)`. Plain percentiles put the first
//! value above purchase intent's tie at 68 and manipulation's at 90: on speech, whose every
//! second has some drive, manipulation then flipped between about 20 and 90 whenever its
//! pressure and deliberation terms crossed, and those flips were most of a speech clip's
//! "moments", with reasons that said the networks had barely moved. Where no tie straddles
//! the median (attention, memory) the two rules are the same: a second at percentile `p`
//! above the median outranks `2p − 100` % of the upper half, and `50 + (2p − 100) / 2 = p`.
//! In words: 50 is the corpus median on every lens, and a score `50 + d` means a second
//! outranks `2d` % of the corpus seconds above the median on that lens (`50 − d`: is outranked
//! by `2d` % of those below), the same rarity on every lens.
//!
//! A table stores, per readout, up to [`MAX_KNOTS`] points (raw value, percentile) of the
//! corpus's empirical distribution; between them the percentile is interpolated linearly.
//! Beyond the outermost points the tails are normal, with the corpus's robust spread, so the
//! scale keeps ranking extreme seconds instead of clipping them. The curve is continuous and
//! strictly increasing everywhere.

use alloc::vec::Vec;

pub use crate::table::MAX_KNOTS;

/// Raw values closer than this are one value: the networks are `f32`, so smaller differences
/// are rounding, and the table stores six decimals.
pub const TIE: f64 = 1e-5;

/// Fewest corpus seconds a calibration is built from.
pub const MIN_SECONDS: usize = 40;

/// One readout's calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// Strictly increasing raw values and their strictly increasing corpus percentiles.
    pub knots: Vec<(f64, f64)>,
    /// The corpus's robust spread (95 % range / 3.92, or the SD when that range is empty),
    /// the scale of the normal tails.
    pub spread: f64,
}

/// Standard normal CDF.
#[must_use]
pub fn phi(z: f64) -> f64 {
    0.5 * (1.0 + brainscan_sdk::libm::erf(z / core::f64::consts::SQRT_2))
}

/// The table built from the benchmark corpus by `brainscan model corpus --calibration`
/// (`scripts/build-qualia-prior`), in the format of [`crate::table`].
pub const EMBEDDED: &str = include_str!("../calibration.tsv");

/// One compiled line: `(name, spread, points)`.
type CompiledLine = (&'static str, f64, &'static [(f64, f64)]);

/// [`EMBEDDED`] as the build script compiled it, one entry per parsed line.
const COMPILED: &[CompiledLine] = include!(concat!(env!("OUT_DIR"), "/calibration_table.rs"));

/// The calibration of readout `name` in [`EMBEDDED`], or `None` when the table has no valid
/// line for it. The same as `parse(EMBEDDED, name)`, without parsing text at run time.
#[must_use]
pub fn embedded(name: &str) -> Option<Calibration> {
    let (knots, spread) = embedded_scale(name)?;
    Some(Calibration {
        knots: knots.to_vec(),
        spread,
    })
}

/// The calibration of readout `name` in a table in the [`EMBEDDED`] format; `None` when the
/// line is missing or invalid (too few or too many points, not increasing, not finite).
#[must_use]
pub fn parse(table: &str, name: &str) -> Option<Calibration> {
    let (spread, knots) = crate::table::parse_line(table, name)?;
    let c = Calibration { knots, spread };
    c.is_valid().then_some(c)
}

impl Calibration {
    /// Builds a calibration from a corpus's per-second raw values.
    ///
    /// # Errors
    /// Fewer than [`MIN_SECONDS`] values, a non-finite value, or a readout that takes fewer
    /// than 3 distinct values over the corpus (nothing to rank against).
    pub fn from_corpus(values: &[f64]) -> Result<Self, &'static str> {
        if values.len() < MIN_SECONDS {
            return Err("the corpus has fewer than 40 seconds");
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err("the corpus has a non-finite value");
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        // Distinct values with their mid-rank percentiles.
        let mut points: Vec<(f64, f64)> = Vec::new();
        // The run of tied seconds that straddles the median, as (below, through) percentiles.
        let mut median_tie: Option<(f64, f64)> = None;
        let mut i = 0;
        while i < sorted.len() {
            let mut j = i;
            while j + 1 < sorted.len() && sorted[j + 1] - sorted[i] <= TIE {
                j += 1;
            }
            let count = (j - i + 1) as f64;
            // A tie whose run straddles the median is the median (module comment).
            let (below, through) = (100.0 * i as f64 / n, 100.0 * (j + 1) as f64 / n);
            let percentile = if j > i && below < 50.0 && through > 50.0 {
                median_tie = Some((below, through));
                50.0
            } else {
                100.0 * (i as f64 + 0.5 * count) / n
            };
            points.push((sorted[i], percentile));
            i = j + 1;
        }
        // Each side of a median tie ranks among its own seconds (module comment), so the scale
        // leaves 50 continuously instead of jumping over the tie's run.
        if let Some((below, through)) = median_tie {
            for point in &mut points {
                if point.1 > 50.0 {
                    point.1 = 50.0 + 50.0 * (point.1 - through) / (100.0 - through);
                } else if point.1 < 50.0 {
                    point.1 = 50.0 * point.1 / below;
                }
            }
        }
        if points.len() < 3 {
            return Err("the readout takes fewer than 3 distinct values over the corpus");
        }
        // Thin to at most MAX_KNOTS points, evenly spaced in percentile, ends kept.
        let knots = if points.len() <= MAX_KNOTS {
            points
        } else {
            let mut out: Vec<(f64, f64)> = Vec::new();
            for k in 0..MAX_KNOTS {
                let target = points[0].1
                    + (points[points.len() - 1].1 - points[0].1) * k as f64
                        / (MAX_KNOTS - 1) as f64;
                let nearest = points
                    .iter()
                    .min_by(|a, b| (a.1 - target).abs().total_cmp(&(b.1 - target).abs()))
                    .copied()
                    .unwrap_or(points[0]);
                if out.last().is_none_or(|l| nearest.0 > l.0 + TIE) {
                    out.push(nearest);
                }
            }
            // A median tie stays a knot, so it scores exactly 50 after thinning too; when the
            // table is full it replaces the knot nearest to it (never an end).
            if let Some(tie) = median_tie.and_then(|_| points.iter().find(|p| p.1 == 50.0))
                && !out.contains(tie)
            {
                if out.len() >= MAX_KNOTS {
                    let last = out.len() - 1;
                    if let Some(i) = (1..last).min_by(|a, b| {
                        (out[*a].1 - 50.0)
                            .abs()
                            .total_cmp(&(out[*b].1 - 50.0).abs())
                    }) {
                        out.remove(i);
                    }
                }
                let at = out.partition_point(|k| k.0 < tie.0);
                out.insert(at, *tie);
            }
            out
        };
        let range = quantile(&sorted, 0.975) - quantile(&sorted, 0.025);
        let spread = if range > 1e-9 {
            range / 3.92
        } else {
            brainscan_sdk::stats::std(&sorted)
        };
        let c = Self { knots, spread };
        if c.is_valid() {
            Ok(c)
        } else {
            Err("the corpus gives no valid calibration")
        }
    }

    fn is_valid(&self) -> bool {
        crate::table::valid(self.spread, &self.knots)
    }

    /// The score 0-100 (unrounded) of a raw value: its corpus percentile.
    #[must_use]
    pub fn percentile(&self, raw: f64) -> f64 {
        percentile_in(&self.knots, self.spread, raw)
    }

    /// The raw value at corpus percentile `p` (the inverse of [`Calibration::percentile`]
    /// inside the stored points; clamped to the outermost points beyond them).
    #[must_use]
    pub fn value_at(&self, p: f64) -> f64 {
        let k = &self.knots;
        if p <= k[0].1 {
            return k[0].0;
        }
        if p >= k[k.len() - 1].1 {
            return k[k.len() - 1].0;
        }
        interpolate(k, p, |x| (x.1, x.0))
    }

    /// The line this calibration takes in a table, without a newline.
    #[must_use]
    pub fn line(&self, name: &str) -> alloc::string::String {
        let mut s = alloc::format!("{name}\t{:.6}", self.spread);
        for (v, p) in &self.knots {
            s.push_str(&alloc::format!("\t{v:.6}:{p:.4}"));
        }
        s
    }
}

/// The corpus percentile of `raw` on the scale given by `knots` and `spread` (see
/// [`Calibration::percentile`]): linear between the stored points, normal tails beyond them.
#[must_use]
pub fn percentile_in(knots: &[(f64, f64)], spread: f64, raw: f64) -> f64 {
    let k = knots;
    let (first, last) = (k[0], k[k.len() - 1]);
    if raw <= first.0 {
        return first.1 * 2.0 * phi((raw - first.0) / spread);
    }
    if raw >= last.0 {
        return 100.0 - (100.0 - last.1) * 2.0 * phi(-(raw - last.0) / spread);
    }
    interpolate(k, raw, |x| x)
}

/// Linear interpolation through `points` (increasing in both coordinates) at `x`, read on the
/// coordinate `axes` puts first and answered on the other; `x` lies inside the points. The
/// segment is found by binary search: the plugins look several readouts up every second, and a
/// table holds up to 41 points.
fn interpolate(points: &[(f64, f64)], x: f64, axes: impl Fn((f64, f64)) -> (f64, f64)) -> f64 {
    let i = points
        .partition_point(|p| axes(*p).0 <= x)
        .saturating_sub(1)
        .min(points.len() - 2);
    let (a, b) = (axes(points[i]), axes(points[i + 1]));
    let t = (x - a.0) / (b.0 - a.0);
    a.1 + t * (b.1 - a.1)
}

/// The embedded calibration of readout `name` as borrowed constants, without copying its points
/// (a plugin looks terms up for every second). `None` when the table has no valid line for it.
/// The build script compiles only valid lines, so nothing is checked again per lookup: with
/// 37-41 points a line, re-validating every lookup was most of the manipulation lens's fuel.
#[must_use]
pub fn embedded_scale(name: &str) -> Option<(&'static [(f64, f64)], f64)> {
    let (_, spread, knots) = COMPILED.iter().find(|(n, _, _)| *n == name)?;
    Some((*knots, *spread))
}

/// Linear-interpolated quantile (type 7, as R and numpy default) of sorted values.
#[must_use]
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let lo = brainscan_sdk::libm::floor(h) as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_values_score_their_mid_rank() {
        let values: Vec<f64> = (0..100).map(f64::from).collect();
        let c = Calibration::from_corpus(&values).expect("calibration");
        assert!(c.knots.len() <= MAX_KNOTS);
        // 49.5 sits between ranks 49 and 50 of 100: the 50th percentile.
        assert!((c.percentile(49.5) - 50.0).abs() < 1e-9);
        assert!((c.percentile(10.0) - 10.5).abs() < 0.3);
        // The 95 % range 2.475..96.525 over 3.92.
        assert!((c.spread - 94.05 / 3.92).abs() < 1e-9);
    }

    #[test]
    fn a_value_shared_by_much_of_the_corpus_scores_the_middle_of_its_run() {
        // The tie runs over the lowest 40 % of the corpus: its mid-rank, 20.
        let mut values = vec![0.0; 40];
        values.extend((1..=60).map(f64::from));
        let c = Calibration::from_corpus(&values).expect("calibration");
        assert!((c.percentile(0.0) - 20.0).abs() < 1e-9);
        assert!(c.percentile(30.0) > 65.0 && c.percentile(30.0) < 75.0);
    }

    #[test]
    fn a_tie_across_the_median_is_the_median() {
        // 10 values below, 60 tied at rest (percentiles 10-70), 30 above: mid-rank would say
        // 40, but the median second of this corpus is one of the tied ones.
        let mut values: Vec<f64> = (1..=10).map(|i| -f64::from(i)).collect();
        values.extend(core::iter::repeat_n(0.0, 60));
        values.extend((1..=30).map(f64::from));
        let c = Calibration::from_corpus(&values).expect("calibration");
        assert!((c.percentile(0.0) - 50.0).abs() < 1e-9);
        // Still strictly increasing through the tie, and values off it keep their ranks.
        assert!(c.percentile(-0.5) < 50.0 && c.percentile(0.5) > 50.0);
        // Each side ranks among its own seconds: the lowest value outranks none of the 10
        // below the tie (mid-rank 0.5 of 10: 2.5), the highest all 30 above it but half of
        // itself (29.5 of 30: 50 + 50 × 29.5 / 30).
        assert!((c.percentile(-10.0) - 2.5).abs() < 1e-9);
        assert!((c.percentile(30.0) - (50.0 + 50.0 * 29.5 / 30.0)).abs() < 1e-9);
        // The first value off the tie is next to 50, not at the tie's far end (70).
        assert!((c.percentile(1.0) - (50.0 + 50.0 * 0.5 / 30.0)).abs() < 1e-9);
        assert!((c.percentile(-1.0) - (50.0 - 50.0 * 0.5 / 10.0)).abs() < 1e-9);
        // A tie that ends exactly at the median keeps its mid-rank.
        let mut values = vec![0.0; 50];
        values.extend((1..=50).map(f64::from));
        let c = Calibration::from_corpus(&values).expect("calibration");
        assert!((c.percentile(0.0) - 25.0).abs() < 1e-9);
    }

    #[test]
    fn a_median_tie_survives_thinning() {
        // 300 distinct values below, 9000 tied at rest (the 1.6th to the 50.8th percentile),
        // 9000 above: far more points than MAX_KNOTS, and the thinning target nearest 50
        // (50.04) lies nearer to a value above the tie (50.036) than to the tie.
        let mut values: Vec<f64> = (1..=300).map(|i| -f64::from(i) * 0.01).collect();
        values.extend(core::iter::repeat_n(0.0, 9000));
        values.extend((1..=9000).map(|i| f64::from(i) * 0.0013));
        let c = Calibration::from_corpus(&values).expect("calibration");
        assert!(c.knots.len() <= MAX_KNOTS, "{}", c.knots.len());
        assert!(c.knots.contains(&(0.0, 50.0)), "{:?}", c.knots);
        assert!((c.percentile(0.0) - 50.0).abs() < 1e-12);
        assert!(
            c.knots
                .windows(2)
                .all(|w| w[1].0 > w[0].0 && w[1].1 > w[0].1)
        );
    }

    #[test]
    fn tails_are_continuous_and_strictly_increasing() {
        let values: Vec<f64> = (0..200).map(|i| f64::from(i % 37) * 0.1).collect();
        let c = Calibration::from_corpus(&values).expect("calibration");
        let mut last = -1.0;
        for i in 0..=1000 {
            let x = -5.0 + f64::from(i) * 0.014;
            let p = c.percentile(x);
            assert!(p > last && (0.0..=100.0).contains(&p), "{x}: {p}");
            last = p;
        }
        let (v0, p0) = c.knots[0];
        assert!((c.percentile(v0) - p0).abs() < 1e-9);
        for p in [20.0, 50.0, 77.7] {
            assert!((c.percentile(c.value_at(p)) - p).abs() < 1e-9, "{p}");
        }
    }

    #[test]
    fn refusals_and_the_table_round_trip() {
        let values: Vec<f64> = (0..100).map(|i| f64::from(i) / 7.0).collect();
        assert!(Calibration::from_corpus(&values[..39]).is_err());
        assert!(Calibration::from_corpus(&[1.0; 60]).is_err());
        let mut two = vec![0.0; 30];
        two.extend([1.0; 30]);
        assert!(Calibration::from_corpus(&two).is_err());
        let mut bad = values.clone();
        bad[3] = f64::NAN;
        assert!(Calibration::from_corpus(&bad).is_err());
        let c = Calibration::from_corpus(&values).expect("calibration");
        let table = alloc::format!("# corpus\n{}\n", c.line("x"));
        let back = parse(&table, "x").expect("parses");
        assert_eq!(back.knots.len(), c.knots.len());
        assert!((back.percentile(5.0) - c.percentile(5.0)).abs() < 1e-3);
        assert!(parse(&table, "y").is_none());
        assert!(parse("x\t1\t0:10\t1:20\n", "x").is_none(), "too few points");
        assert!(
            parse("x\t1\t0:10\t1:5\t2:30\n", "x").is_none(),
            "not increasing"
        );
        assert!(
            parse("x\t0\t0:10\t1:20\t2:30\n", "x").is_none(),
            "no spread"
        );
    }

    #[test]
    fn the_compiled_table_is_the_text_parsed() {
        let names: Vec<&str> = crate::table::names(EMBEDDED).collect();
        assert_eq!(names.len(), COMPILED.len(), "{names:?}");
        assert!(names.len() >= crate::ALL.len());
        for name in names {
            let text = parse(EMBEDDED, name).expect(name);
            let compiled = embedded(name).expect(name);
            // Bit for bit, so the plugins score exactly as when they parsed the text.
            assert_eq!(text.spread.to_bits(), compiled.spread.to_bits(), "{name}");
            let bits = |c: &Calibration| -> Vec<(u64, u64)> {
                c.knots
                    .iter()
                    .map(|(v, p)| (v.to_bits(), p.to_bits()))
                    .collect()
            };
            assert_eq!(bits(&text), bits(&compiled), "{name}");
        }
        assert!(embedded("no-such-readout").is_none());
    }
}
