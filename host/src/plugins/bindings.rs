//! Host bindings of the WIT contract, and the checks and conversions at its edge: inputs are
//! validated before they enter wasm, outputs after they leave it.

use std::fmt;

use crate::result::{self, NETWORKS};

/// The `lens` world. `types` and `host` are generated here and shared with the other worlds.
pub mod lens {
    wasmtime::component::bindgen!({
        path: "../wit/analysis@1.0.0",
        world: "lens",
        // Tests and the conformance check compare whole outputs.
        additional_derives: [PartialEq],
    });
}

pub mod moments {
    wasmtime::component::bindgen!({
        path: "../wit/analysis@1.0.0",
        world: "moments",
        with: {
            "brainscan:analysis/types": crate::plugins::bindings::lens::brainscan::analysis::types,
            "brainscan:analysis/host": crate::plugins::bindings::lens::brainscan::analysis::host,
        },
    });
}

pub mod manipulation {
    wasmtime::component::bindgen!({
        path: "../wit/analysis@1.0.0",
        world: "manipulation",
        with: {
            "brainscan:analysis/types": crate::plugins::bindings::lens::brainscan::analysis::types,
            "brainscan:analysis/host": crate::plugins::bindings::lens::brainscan::analysis::host,
        },
    });
}

pub use lens::brainscan::analysis::host::Level;
pub use lens::brainscan::analysis::types as wit;

/// Longest reason, summary or quote string accepted from a plugin, in bytes.
pub const MAX_TEXT: usize = 2_000;
/// Transcript text a plugin receives, bytes per second of clip (dense two-line subtitles run
/// at about 40 characters a second), and at least [`MIN_TRANSCRIPT_BYTES`] for short clips. A
/// longer transcript is cut to it before any plugin call ([`ClipData::fit_transcript`]), so
/// one client's 1 MiB of subtitles on a 1 s clip cannot make a plugin fail for everyone.
pub const TRANSCRIPT_BYTES_PER_SECOND: usize = 256;
pub const MIN_TRANSCRIPT_BYTES: usize = 4_096;
/// Most moments a moments plugin may return per clip.
pub const MAX_MOMENTS: usize = 500;

/// Approximate size of an output: string bytes plus 8 bytes per number. Cheap, and what the
/// output cap is measured in.
pub trait OutputSize {
    fn output_size(&self) -> usize;
}

impl OutputSize for String {
    fn output_size(&self) -> usize {
        self.len()
    }
}
impl<T: OutputSize> OutputSize for Vec<T> {
    fn output_size(&self) -> usize {
        8 + self.iter().map(OutputSize::output_size).sum::<usize>()
    }
}
impl<T: OutputSize> OutputSize for Option<T> {
    fn output_size(&self) -> usize {
        self.as_ref().map_or(1, OutputSize::output_size)
    }
}
impl OutputSize for wit::LensSeries {
    fn output_size(&self) -> usize {
        self.lens.len()
            + self
                .seconds
                .iter()
                .map(|s| 8 + s.reason.len())
                .sum::<usize>()
    }
}
impl OutputSize for wit::Moment {
    fn output_size(&self) -> usize {
        48 + self.lens.len()
            + self.reason.len()
            + self.brain_reason.len()
            + self.content_line.output_size()
    }
}
impl OutputSize for wit::BuyMoment {
    fn output_size(&self) -> usize {
        40 + self.strength.len()
            + self.quote.output_size()
            + self.insight.len()
            + self.trigger.len()
    }
}
impl OutputSize for wit::Detection {
    fn output_size(&self) -> usize {
        self.moments.output_size() + self.buy_moments.output_size() + self.summary.len()
    }
}
impl OutputSize for wit::Manipulation {
    fn output_size(&self) -> usize {
        let strings = |v: &[&String]| v.iter().map(|s| s.len()).sum::<usize>();
        40 + strings(&[
            &self.risk_band,
            &self.threat.label,
            &self.threat.severity,
            &self.threat.color,
            &self.threat.note,
            &self.population.note,
            &self.quadrant.key,
            &self.quadrant.label,
            &self.quadrant.how,
        ]) + self
            .circuits
            .iter()
            .map(|c| {
                8 + strings(&[
                    &c.key,
                    &c.label,
                    &c.plain,
                    &c.direction,
                    &c.reading,
                    &c.meaning,
                ])
            })
            .sum::<usize>()
            + self
                .mechanisms
                .iter()
                .map(|m| 8 + m.key.len() + m.label.len())
                .sum::<usize>()
            + self.timeline.len() * 40
            + self
                .peak_moment
                .as_ref()
                .map_or(0, |p| 24 + p.quote.len() + p.why.len())
            + self
                .tactics
                .iter()
                .map(|t| 8 + t.tactic.len() + t.kind.len() + t.quote.len())
                .sum::<usize>()
    }
}

/// One transcript line, host side: a part of the stored result (see [`crate::result`]),
/// re-exported here because plugins receive it.
pub use crate::result::TranscriptLine;

/// The clip as the host holds it; converted to the WIT record per call.
#[derive(Debug, Clone, PartialEq)]
pub struct ClipData {
    pub duration_sec: f64,
    /// One row per started second, [`NETWORKS`] order.
    pub networks: Vec<[f32; 7]>,
    pub video: bool,
    pub audio: bool,
    pub transcript: Vec<TranscriptLine>,
}

impl ClipData {
    pub fn seconds(&self) -> usize {
        self.networks.len()
    }

    /// What plugins read of a stored result (`POST /analyze` re-runs manipulation on it), the
    /// transcript cut to their budget.
    pub fn of_result(r: &result::ScanResult) -> Self {
        let mut clip = Self {
            duration_sec: r.duration_sec,
            #[allow(clippy::cast_possible_truncation)]
            networks: r.timeline.iter().map(|s| s.raw.map(|v| v as f32)).collect(),
            video: r.modalities.video,
            audio: r.modalities.audio,
            transcript: r.transcript.clone(),
        };
        clip.fit_transcript();
        clip
    }

    /// Transcript bytes a plugin may receive for this clip.
    pub fn transcript_budget(&self) -> usize {
        (self.networks.len() * TRANSCRIPT_BYTES_PER_SECOND).max(MIN_TRANSCRIPT_BYTES)
    }

    /// Keeps the transcript within [`Self::transcript_budget`]: lines in order until the next
    /// would pass it. Returns how many lines were left out.
    pub fn fit_transcript(&mut self) -> usize {
        let budget = self.transcript_budget();
        let mut used = 0;
        let keep = self
            .transcript
            .iter()
            .take_while(|l| {
                used += l.text.len();
                used <= budget
            })
            .count();
        let dropped = self.transcript.len() - keep;
        self.transcript.truncate(keep);
        dropped
    }

    /// The host-side input check: what never enters a plugin.
    ///
    /// # Errors
    /// A sentence naming the first problem.
    pub fn validate(&self, max_seconds: usize) -> Result<(), String> {
        if !self.duration_sec.is_finite() || self.duration_sec <= 0.0 {
            return Err(format!(
                "duration {} is not a positive number",
                self.duration_sec
            ));
        }
        let expected = self.duration_sec.ceil() as usize;
        if self.networks.len() != expected {
            return Err(format!(
                "{} network rows for a {:.3} s clip (expected {expected})",
                self.networks.len(),
                self.duration_sec
            ));
        }
        if self.networks.len() > max_seconds {
            return Err(format!(
                "{} seconds is more than {max_seconds}",
                self.networks.len()
            ));
        }
        for (second, row) in self.networks.iter().enumerate() {
            if let Some(i) = row.iter().position(|v| !v.is_finite()) {
                return Err(format!(
                    "network {} at second {second} is not finite",
                    NETWORKS[i]
                ));
            }
        }
        if self.transcript.len() > 10_000 {
            return Err("more than 10000 transcript lines".into());
        }
        let text: usize = self.transcript.iter().map(|l| l.text.len()).sum();
        if text > self.transcript_budget() {
            return Err(format!(
                "{text} bytes of transcript for {} s (at most {})",
                self.networks.len(),
                self.transcript_budget()
            ));
        }
        for line in &self.transcript {
            if !line.start_sec.is_finite()
                || !line.end_sec.is_finite()
                || line.text.len() > MAX_TEXT
            {
                return Err("a transcript line has a non-finite time or is too long".into());
            }
        }
        Ok(())
    }

    pub fn to_wit(&self) -> wit::Clip {
        wit::Clip {
            duration_sec: self.duration_sec,
            networks: self
                .networks
                .iter()
                .map(|r| wit::NetworkSecond {
                    visual: r[0],
                    somatomotor: r[1],
                    dorsal_attention: r[2],
                    ventral_attention: r[3],
                    limbic: r[4],
                    frontoparietal: r[5],
                    default_mode: r[6],
                })
                .collect(),
            modalities: wit::Modalities {
                video: self.video,
                audio: self.audio,
            },
            transcript: self
                .transcript
                .iter()
                .map(|l| wit::TranscriptLine {
                    start_sec: l.start_sec,
                    end_sec: l.end_sec,
                    text: l.text.clone(),
                })
                .collect(),
        }
    }
}

// `what` names the value in an error. It is `Display` rather than `&str` so a caller can pass
// `format_args!`: the label is then formatted only when a check fails, not once per second of
// every clip (720 `format!` calls for a 180 s, four-lens output).

fn text(what: impl fmt::Display, s: &str) -> Result<(), String> {
    if s.len() > MAX_TEXT {
        Err(format!("{what} is {} bytes (at most {MAX_TEXT})", s.len()))
    } else {
        Ok(())
    }
}

fn finite(what: impl fmt::Display, v: f64) -> Result<(), String> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(format!("{what} is not a finite number"))
    }
}

fn in_range(what: impl fmt::Display + Copy, v: f64, lo: f64, hi: f64) -> Result<(), String> {
    finite(what, v)?;
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!("{what} = {v} is outside {lo}-{hi}"))
    }
}

/// Lens output: exactly the requested lenses the plugin provides, once each, one finite score
/// in 0-100 per second, reasons of bounded size.
///
/// # Errors
/// A sentence naming the first problem.
pub fn check_lens_output(
    series: &[wit::LensSeries],
    seconds: usize,
    expected: &[String],
) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for s in series {
        if !expected.contains(&s.lens) {
            return Err(format!(
                "returned lens {:?}, which was not asked of it",
                s.lens
            ));
        }
        if !seen.insert(s.lens.as_str()) {
            return Err(format!("returned lens {:?} twice", s.lens));
        }
        if s.seconds.len() != seconds {
            return Err(format!(
                "lens {} has {} seconds, the clip has {seconds}",
                s.lens,
                s.seconds.len()
            ));
        }
        for (i, x) in s.seconds.iter().enumerate() {
            in_range(
                format_args!("lens {} score at second {i}", s.lens),
                f64::from(x.score),
                0.0,
                100.0,
            )?;
            text("a reason", &x.reason)?;
        }
    }
    if let Some(missing) = expected.iter().find(|l| !seen.contains(l.as_str())) {
        return Err(format!(
            "did not return lens {missing:?}, which it provides"
        ));
    }
    Ok(())
}

/// Moments output: seconds inside the clip, lenses among those scored, consistent numbers.
///
/// # Errors
/// A sentence naming the first problem.
pub fn check_detection(
    d: &wit::Detection,
    seconds: usize,
    lenses: &[String],
) -> Result<(), String> {
    if d.moments.len() > MAX_MOMENTS {
        return Err(format!(
            "{} moments (at most {MAX_MOMENTS})",
            d.moments.len()
        ));
    }
    text("the summary", &d.summary)?;
    if d.summary.trim().is_empty() {
        return Err("the summary is empty".into());
    }
    for m in &d.moments {
        if !lenses.contains(&m.lens) {
            return Err(format!(
                "a moment names lens {:?}, which was not scored",
                m.lens
            ));
        }
        if m.second as usize >= seconds {
            return Err(format!(
                "a moment at second {} of a {seconds} s clip",
                m.second
            ));
        }
        in_range("a moment's from", m.from, 0.0, 100.0)?;
        in_range("a moment's to", m.to, 0.0, 100.0)?;
        finite("a moment's z", m.z)?;
        if (m.to - m.from - m.delta).abs() > 0.051 {
            return Err(format!("a moment's delta {} is not to − from", m.delta));
        }
        for s in [&m.reason, &m.brain_reason] {
            text("a moment's reason", s)?;
        }
        if let Some(c) = &m.content_line {
            text("a moment's content line", c)?;
        }
    }
    if let Some(buys) = &d.buy_moments {
        if buys.len() > seconds {
            return Err("more buy moments than seconds".into());
        }
        for b in buys {
            if !(b.start_sec <= b.peak_sec
                && b.peak_sec <= b.end_sec
                && (b.end_sec as usize) < seconds)
            {
                return Err(format!(
                    "buy moment {}-{} (peak {}) is not inside the clip",
                    b.start_sec, b.end_sec, b.peak_sec
                ));
            }
            in_range("a buy moment's strength_pct", b.strength_pct, 0.0, 100.0)?;
            for s in [&b.strength, &b.insight, &b.trigger] {
                text("a buy moment's text", s)?;
            }
        }
    }
    Ok(())
}

/// Manipulation output: the spec's ranges and sets.
///
/// # Errors
/// A sentence naming the first problem.
pub fn check_manipulation(m: &wit::Manipulation, seconds: usize) -> Result<(), String> {
    in_range("conversion_risk", m.conversion_risk, 0.0, 100.0)?;
    in_range("sovereignty", m.sovereignty, 0.0, 100.0)?;
    finite("cognitive_sovereignty_index", m.cognitive_sovereignty_index)?;
    finite("pbi", m.pbi)?;
    if !["low", "moderate", "elevated", "high"].contains(&m.risk_band.as_str()) {
        return Err(format!(
            "risk_band {:?} is not low/moderate/elevated/high",
            m.risk_band
        ));
    }
    if !["critical", "high", "moderate", "nominal"].contains(&m.threat.severity.as_str()) {
        return Err(format!(
            "threat severity {:?} is not a spec value",
            m.threat.severity
        ));
    }
    let hex = m.threat.color.strip_prefix('#').unwrap_or("");
    if !(hex.len() == 6 || hex.len() == 3) || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "threat color {:?} is not a hex colour",
            m.threat.color
        ));
    }
    if !["clean", "coercive", "seductive", "total"].contains(&m.quadrant.key.as_str()) {
        return Err(format!(
            "quadrant key {:?} is not a spec value",
            m.quadrant.key
        ));
    }
    in_range("quadrant.lowers_guard", m.quadrant.lowers_guard, 0.0, 100.0)?;
    in_range("quadrant.wins_over", m.quadrant.wins_over, 0.0, 100.0)?;
    in_range("population.per_ten", m.population.per_ten, 0.0, 10.0)?;
    in_range(
        "population.per_ten_thousand",
        m.population.per_ten_thousand,
        0.0,
        10_000.0,
    )?;
    if m.circuits.len() != 4 {
        return Err(format!("{} circuits (the spec has four)", m.circuits.len()));
    }
    for c in &m.circuits {
        finite("a circuit value", c.value)?;
    }
    let keys: Vec<&str> = m.mechanisms.iter().map(|x| x.key.as_str()).collect();
    if keys != ["SR", "MR", "CA"] {
        return Err(format!("mechanisms {keys:?} are not SR, MR, CA"));
    }
    let total: f64 = m.mechanisms.iter().map(|x| x.share).sum();
    if m.mechanisms.iter().any(|x| !(0.0..=1.0).contains(&x.share)) || (total - 1.0).abs() > 1e-3 {
        return Err(format!("mechanism shares sum to {total}, not 1"));
    }
    if m.timeline.len() != seconds {
        return Err(format!(
            "timeline has {} seconds, the clip {seconds}",
            m.timeline.len()
        ));
    }
    for (i, t) in m.timeline.iter().enumerate() {
        if t.sec as usize != i {
            return Err(format!("timeline entry {i} says second {}", t.sec));
        }
        for v in [t.exposure, t.reward, t.effort, t.alarm] {
            finite("a timeline value", v)?;
        }
    }
    if let Some(p) = &m.peak_moment
        && !(p.start_sec <= p.peak_sec && p.peak_sec <= p.end_sec && (p.end_sec as usize) < seconds)
    {
        return Err("peak_moment is not inside the clip".into());
    }
    if m.tactics.len() > 1_000 || m.tactics.iter().any(|t| t.at_sec as usize >= seconds) {
        return Err("a tactic is outside the clip (or there are more than 1000)".into());
    }
    Ok(())
}

pub fn moment_kind(k: wit::MomentKind) -> &'static str {
    match k {
        wit::MomentKind::AttentionPeak => "attention_peak",
        wit::MomentKind::AttentionDrop => "attention_drop",
        wit::MomentKind::LensPeak => "lens_peak",
        wit::MomentKind::LensDrop => "lens_drop",
    }
}

impl From<wit::Moment> for result::Moment {
    fn from(m: wit::Moment) -> Self {
        Self {
            kind: moment_kind(m.kind).to_owned(),
            lens: m.lens,
            second: m.second,
            from: m.from,
            to: m.to,
            delta: m.delta,
            z: m.z,
            reason: m.reason,
            brain_reason: m.brain_reason,
            content_line: m.content_line,
        }
    }
}

impl From<wit::BuyMoment> for result::BuyMoment {
    fn from(b: wit::BuyMoment) -> Self {
        Self {
            start_sec: b.start_sec,
            end_sec: b.end_sec,
            peak_sec: b.peak_sec,
            strength: b.strength,
            strength_pct: b.strength_pct,
            quote: b.quote,
            insight: b.insight,
            trigger: b.trigger,
        }
    }
}

impl From<wit::Manipulation> for result::Manipulation {
    fn from(m: wit::Manipulation) -> Self {
        Self {
            conversion_risk: m.conversion_risk,
            risk_band: m.risk_band,
            cognitive_sovereignty_index: m.cognitive_sovereignty_index,
            sovereignty: m.sovereignty,
            pbi: m.pbi,
            threat: result::Threat {
                label: m.threat.label,
                severity: m.threat.severity,
                color: m.threat.color,
                note: m.threat.note,
            },
            population: result::Population {
                per_ten: m.population.per_ten,
                per_ten_thousand: m.population.per_ten_thousand,
                note: m.population.note,
            },
            quadrant: result::Quadrant {
                key: m.quadrant.key,
                label: m.quadrant.label,
                lowers_guard: m.quadrant.lowers_guard,
                wins_over: m.quadrant.wins_over,
                how: m.quadrant.how,
            },
            circuits: m
                .circuits
                .into_iter()
                .map(|c| result::Circuit {
                    key: c.key,
                    label: c.label,
                    plain: c.plain,
                    value: c.value,
                    direction: c.direction,
                    reading: c.reading,
                    meaning: c.meaning,
                })
                .collect(),
            mechanisms: m
                .mechanisms
                .into_iter()
                .map(|x| result::Mechanism {
                    key: x.key,
                    label: x.label,
                    share: x.share,
                })
                .collect(),
            timeline: m
                .timeline
                .into_iter()
                .map(|t| result::ExposureSecond {
                    sec: t.sec,
                    exposure: t.exposure,
                    reward: t.reward,
                    effort: t.effort,
                    alarm: t.alarm,
                })
                .collect(),
            peak_moment: m.peak_moment.map(|p| result::PeakMoment {
                peak_sec: p.peak_sec,
                start_sec: p.start_sec,
                end_sec: p.end_sec,
                quote: p.quote,
                why: p.why,
            }),
            tactics: m
                .tactics
                .into_iter()
                .map(|t| result::Tactic {
                    tactic: t.tactic,
                    kind: t.kind,
                    at_sec: t.at_sec,
                    quote: t.quote,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_transcript_on_a_short_clip_is_cut_to_the_budget_before_plugins() {
        // The abuse case: a 1 s clip with 1 MiB of subtitles.
        let line = TranscriptLine {
            start_sec: 0.0,
            end_sec: 1.0,
            text: "x".repeat(1_000),
        };
        let mut clip = ClipData {
            duration_sec: 1.0,
            networks: vec![[0.0; 7]],
            video: true,
            audio: true,
            transcript: vec![line; 1_049],
        };
        let err = clip.validate(180).expect_err("over the budget");
        assert!(err.contains("bytes of transcript for 1 s"), "{err}");
        assert_eq!(clip.fit_transcript(), 1_045);
        assert_eq!(clip.transcript.len(), 4);
        clip.validate(180).expect("within the budget");
        // A 3-minute clip may carry 256 bytes a second.
        assert_eq!(
            ClipData {
                networks: vec![[0.0; 7]; 180],
                ..clip
            }
            .transcript_budget(),
            46_080
        );
    }
}
