//! The text format of the calibration table, shared by the crate and its build script (which
//! includes this file by path, so the two cannot read the table differently).
//!
//! `#` comment lines (provenance), then one line per readout: its name, its spread, and its
//! `value:percentile` points, tab-separated.

use alloc::vec::Vec;

/// Most points stored per readout.
pub const MAX_KNOTS: usize = 41;

/// Whether a line's numbers make a calibration: a finite, positive spread and between 3 and
/// [`MAX_KNOTS`] finite points, strictly increasing in value and percentile, every percentile
/// inside (0, 100). The build script compiles only such lines, so a lookup need not check again.
pub fn valid(spread: f64, knots: &[(f64, f64)]) -> bool {
    spread.is_finite()
        && spread > 0.0
        && knots.len() >= 3
        && knots.len() <= MAX_KNOTS
        && knots
            .iter()
            .all(|(v, p)| v.is_finite() && p.is_finite() && *p > 0.0 && *p < 100.0)
        && knots.windows(2).all(|w| w[1].0 > w[0].0 && w[1].1 > w[0].1)
}

/// One readout's line as written: `(spread, points)`. `None` when the line is missing or a
/// field does not parse; whether the numbers make a valid calibration is checked by the caller.
pub fn parse_line(table: &str, name: &str) -> Option<(f64, Vec<(f64, f64)>)> {
    let line = table
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.split('\t').next() == Some(name))?;
    let mut fields = line.split('\t').skip(1);
    let spread: f64 = fields.next()?.trim().parse().ok()?;
    let mut knots = Vec::new();
    for f in fields {
        let (v, p) = f.split_once(':')?;
        knots.push((v.trim().parse().ok()?, p.trim().parse().ok()?));
    }
    Some((spread, knots))
}

/// The readout names the table has lines for, in table order.
pub fn names(table: &str) -> impl Iterator<Item = &str> {
    table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('\t').next())
}
