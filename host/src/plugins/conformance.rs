//! The checks a plugin passes before it can go live, run on upload and by
//! `brainscan plugin test`. All on fixed, synthetic fixture clips so results are comparable
//! across machines:
//! - **determinism**: the canonical 30 s clip twice; outputs must be identical;
//! - **budgets**: the longest clip the service accepts ([`MAX_DURATION_SECS`]), within fuel,
//!   memory, time and output limits;
//! - **robustness**: NaN networks, an empty clip and a clip whose rows disagree with its
//!   duration go straight into the plugin (bypassing the host's own input check); it must
//!   decline them with a typed error or answer validly — never trap or hit a limit.

use std::sync::Arc;
use std::time::Instant;

use super::bindings::{ClipData, TranscriptLine, wit};
use super::manifest::Kind;
use super::runtime::{CallFailure, CallStats, LoadedPlugin, PluginError, PluginRuntime};
use crate::scan::MAX_DURATION_SECS;

/// One row of the report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CheckRow {
    pub check: String,
    pub passed: bool,
    pub detail: String,
    pub stats: Option<CallStats>,
    pub wall_ms: f64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub plugin: String,
    pub kind: Kind,
    pub rows: Vec<CheckRow>,
    /// The limits the plugin ran under.
    pub limits: super::runtime::Granted,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.passed)
    }

    /// The first failing check, for error messages.
    pub fn first_failure(&self) -> Option<&CheckRow> {
        self.rows.iter().find(|r| !r.passed)
    }

    /// A plain-text table for people.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<28} {:<6} {:>14} {:>14} {:>12} {:>10}  detail",
            "check", "result", "fuel used", "fuel budget", "peak memory", "time ms"
        );
        for r in &self.rows {
            let (fuel, budget, mem) = r.stats.map_or(("-".into(), "-".into(), "-".into()), |st| {
                (
                    st.fuel_used.to_string(),
                    st.fuel_budget.to_string(),
                    format!("{:.1} MiB", st.peak_memory_bytes as f64 / 1048576.0),
                )
            });
            let _ = writeln!(
                s,
                "{:<28} {:<6} {:>14} {:>14} {:>12} {:>10.2}  {}",
                r.check,
                if r.passed { "pass" } else { "FAIL" },
                fuel,
                budget,
                mem,
                r.wall_ms,
                r.detail
            );
        }
        let _ = writeln!(
            s,
            "limits: fuel {} + {}/s, memory {:.0} MiB, deadline {} ms, output {:.1} MiB",
            self.limits.fuel_base,
            self.limits.fuel_per_second,
            self.limits.memory_bytes as f64 / 1048576.0,
            self.limits.timeout_ms,
            self.limits.output_bytes as f64 / 1048576.0
        );
        s
    }
}

/// A deterministic synthetic clip: slow drifts, a few sharp events and speech lines with
/// persuasion phrases, so every plugin path (moments, buy windows, tactics) has work to do.
pub fn fixture_clip(seconds: usize) -> ClipData {
    let networks = (0..seconds)
        .map(|t| {
            let mut row = [0f32; 7];
            for (k, v) in row.iter_mut().enumerate() {
                let phase = k as f64 * 0.9;
                let slow = (t as f64 * 0.21 + phase).sin() * 0.8;
                let fast = (t as f64 * 1.3 + 2.0 * phase).sin() * 0.3;
                let spike = if (t + 3 * k) % 17 == 0 { 2.2 } else { 0.0 };
                *v = (slow + fast + spike) as f32;
            }
            row
        })
        .collect();
    let lines = [
        "Meet the new everyday bottle.",
        "Limited time offer, only this week.",
        "Join thousands of happy customers.",
        "Doctors recommend it.",
        "Don't miss out, buy now.",
        "You deserve the best.",
    ];
    let transcript = (0..seconds / 5)
        .map(|i| TranscriptLine {
            start_sec: (i * 5) as f32 + 0.5,
            end_sec: (i * 5) as f32 + 3.5,
            text: lines[i % lines.len()].to_owned(),
        })
        .collect();
    ClipData {
        duration_sec: seconds as f64 - 0.25,
        networks,
        video: true,
        audio: true,
        transcript,
    }
}

/// Lens series for a moments plugin's fixtures: what a lens plugin could have produced.
pub fn fixture_series(clip: &ClipData, lenses: &[&str]) -> Vec<wit::LensSeries> {
    lenses
        .iter()
        .enumerate()
        .map(|(li, lens)| wit::LensSeries {
            lens: (*lens).to_owned(),
            seconds: clip
                .networks
                .iter()
                .map(|row| {
                    let z = f64::from(row[(li * 2) % 7] + row[(li * 2 + 3) % 7]) / 2.0;
                    wit::LensSecond {
                        score: (50.0 + 25.0 * z.tanh()) as f32,
                        reason: format!("{lens} moved with the fixture"),
                    }
                })
                .collect(),
        })
        .collect()
}

const FIXTURE_LENSES: [&str; 4] = ["attention", "memory", "purchase_intent", "manipulation"];

/// One call on a given clip, for whichever world the plugin is; the output rendered as text
/// (`Debug` prints floats exactly) so determinism is an exact comparison.
async fn call(
    runtime: &PluginRuntime,
    plugin: &Arc<LoadedPlugin>,
    clip: wit::Clip,
    series: Vec<wit::LensSeries>,
) -> Result<(String, CallStats), PluginError> {
    match plugin.manifest.kind {
        Kind::Lens => {
            let lenses = plugin.manifest.provides.clone();
            runtime
                .score_unchecked(plugin, clip, &lenses)
                .await
                .map(|(v, s)| (format!("{v:?}"), s))
        }
        Kind::Moments => runtime
            .detect_unchecked(plugin, clip, series)
            .await
            .map(|(v, s)| (format!("{v:?}"), s)),
        Kind::Manipulation => runtime
            .analyze_unchecked(plugin, clip)
            .await
            .map(|(v, s)| (format!("{v:?}"), s)),
    }
}

/// Runs every check and returns the report (never fails: failures are rows).
pub async fn run(runtime: &PluginRuntime, plugin: &Arc<LoadedPlugin>) -> Report {
    let mut rows = Vec::new();
    let canonical = fixture_clip(30);
    let canonical_series = fixture_series(&canonical, &FIXTURE_LENSES);

    // Determinism.
    let t = Instant::now();
    let a = call(
        runtime,
        plugin,
        canonical.to_wit(),
        canonical_series.clone(),
    )
    .await;
    let b = call(
        runtime,
        plugin,
        canonical.to_wit(),
        canonical_series.clone(),
    )
    .await;
    let wall_ms = t.elapsed().as_secs_f64() * 500.0;
    rows.push(match (a, b) {
        (Ok((x, stats)), Ok((y, _))) if x == y => CheckRow {
            check: "determinism (30 s, twice)".into(),
            passed: true,
            detail: "identical outputs".into(),
            stats: Some(stats),
            wall_ms,
        },
        (Ok((_, stats)), Ok(_)) => CheckRow {
            check: "determinism (30 s, twice)".into(),
            passed: false,
            detail: "two runs on the same clip gave different outputs".into(),
            stats: Some(stats),
            wall_ms,
        },
        (Err(e), _) | (_, Err(e)) => CheckRow {
            check: "determinism (30 s, twice)".into(),
            passed: false,
            detail: e.to_string(),
            stats: None,
            wall_ms,
        },
    });

    // Budgets at the longest clip.
    let longest = fixture_clip(MAX_DURATION_SECS as usize);
    let series = fixture_series(&longest, &FIXTURE_LENSES);
    let t = Instant::now();
    let r = call(runtime, plugin, longest.to_wit(), series).await;
    let wall_ms = t.elapsed().as_secs_f64() * 1000.0;
    let check = format!("budgets ({MAX_DURATION_SECS} s clip)");
    rows.push(match r {
        Ok((out, stats)) => CheckRow {
            check,
            passed: true,
            detail: format!(
                "{} bytes of output",
                stats.output_bytes.max(out.len() as u64 / 4)
            ),
            stats: Some(stats),
            wall_ms,
        },
        Err(e) => CheckRow {
            check,
            passed: false,
            detail: e.to_string(),
            stats: None,
            wall_ms,
        },
    });

    // Robustness: bad input must be declined (or answered validly), never trap.
    let mut nan = canonical.to_wit();
    nan.networks[3].limbic = f32::NAN;
    nan.networks[7].visual = f32::INFINITY;
    let mut nan_series = canonical_series.clone();
    if let Some(s) = nan_series.first_mut() {
        s.seconds[2].score = f32::NAN;
    }
    let empty = wit::Clip {
        duration_sec: 0.0,
        networks: Vec::new(),
        modalities: wit::Modalities {
            video: false,
            audio: false,
        },
        transcript: Vec::new(),
    };
    let empty_series: Vec<wit::LensSeries> = FIXTURE_LENSES
        .iter()
        .map(|l| wit::LensSeries {
            lens: (*l).to_owned(),
            seconds: Vec::new(),
        })
        .collect();
    let mut mismatch = canonical.to_wit();
    mismatch.networks.truncate(10);
    for (name, clip, series) in [
        ("robustness: NaN input", nan, nan_series),
        ("robustness: empty clip", empty, empty_series),
        (
            "robustness: length mismatch",
            mismatch,
            canonical_series.clone(),
        ),
    ] {
        let t = Instant::now();
        let r = call(runtime, plugin, clip, series).await;
        let wall_ms = t.elapsed().as_secs_f64() * 1000.0;
        rows.push(match r {
            Ok((_, stats)) => CheckRow {
                check: name.into(),
                passed: true,
                detail: "answered with valid output".into(),
                stats: Some(stats),
                wall_ms,
            },
            Err(PluginError {
                failure: CallFailure::Declined { code, .. },
                ..
            }) => CheckRow {
                check: name.into(),
                passed: true,
                detail: format!("declined with a typed error ({code})"),
                stats: None,
                wall_ms,
            },
            Err(e) => CheckRow {
                check: name.into(),
                passed: false,
                detail: e.to_string(),
                stats: None,
                wall_ms,
            },
        });
    }

    Report {
        plugin: plugin.manifest.id(),
        kind: plugin.manifest.kind,
        rows,
        limits: plugin.granted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures_are_valid_input() {
        for n in [1, 30, MAX_DURATION_SECS as usize] {
            let clip = fixture_clip(n);
            clip.validate(MAX_DURATION_SECS as usize)
                .expect("fixture is valid");
            assert_eq!(clip.networks.len(), n);
        }
        let clip = fixture_clip(30);
        let s = fixture_series(&clip, &FIXTURE_LENSES);
        assert!(
            s.iter()
                .all(|x| x.seconds.iter().all(|v| (0.0..=100.0).contains(&v.score)))
        );
    }
}
