//! Embedded subtitle streams as the transcript. ffmpeg converts any text subtitle codec
//! (mov_text, SubRip, WebVTT, ASS) to SubRip, which is parsed here; styling tags are removed.

use crate::plugins::bindings::TranscriptLine;

/// Subtitle text read at most.
pub const MAX_BYTES: usize = 1 << 20;
/// Lines kept at most (the plugin input check allows 10 000).
const MAX_LINES: usize = 5_000;
/// Characters per line at most.
const MAX_CHARS: usize = 500;

/// `HH:MM:SS,mmm` (or with a dot) in seconds.
fn timestamp(s: &str) -> Option<f64> {
    let s = s.trim();
    let (hms, ms) = s.split_once([',', '.'])?;
    let mut parts = hms.split(':').map(|p| p.trim().parse::<u32>().ok());
    let (h, m, sec) = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() || m > 59 || sec > 59 {
        return None;
    }
    let ms: u32 = ms.trim().get(..3.min(ms.trim().len()))?.parse().ok()?;
    Some(f64::from(h) * 3600.0 + f64::from(m) * 60.0 + f64::from(sec) + f64::from(ms) / 1000.0)
}

/// `secs` as SubRip's `HH:MM:SS,mmm`, to the nearest millisecond (for subtitle tracks the
/// project writes: the Alice story's words, test clips).
#[must_use]
pub fn srt_timestamp(secs: f64) -> String {
    let ms = (secs * 1000.0).round() as u64;
    format!(
        "{:02}:{:02}:{:02},{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// Removes `<i>`-style tags and `{\an8}`-style overrides.
fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut skip: Option<char> = None;
    for c in s.chars() {
        match (skip, c) {
            (None, '<') => skip = Some('>'),
            (None, '{') => skip = Some('}'),
            (Some(end), c) if c == end => skip = None,
            (Some(_), _) => {}
            (None, c) => out.push(c),
        }
    }
    out
}

/// Parses SubRip text into lines within `[0, max_secs]`, in time order.
pub fn parse_srt(text: &str, max_secs: f64) -> Vec<TranscriptLine> {
    let mut lines = Vec::new();
    let text = text.replace("\r\n", "\n");
    for block in text.split("\n\n") {
        let mut rows = block.lines().map(str::trim).filter(|l| !l.is_empty());
        let Some(mut first) = rows.next() else {
            continue;
        };
        if !first.contains("-->") {
            // The cue number.
            let Some(next) = rows.next() else { continue };
            first = next;
        }
        let Some((a, b)) = first.split_once("-->") else {
            continue;
        };
        // WebVTT-style settings may follow the end time.
        let b = b.split_whitespace().next().unwrap_or("");
        let (Some(start), Some(end)) = (timestamp(a), timestamp(b)) else {
            continue;
        };
        if start >= max_secs || end < start {
            continue;
        }
        let words: Vec<String> = rows.map(strip_tags).collect();
        let joined = words
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if joined.is_empty() {
            continue;
        }
        lines.push(TranscriptLine {
            start_sec: start as f32,
            end_sec: end.min(max_secs) as f32,
            text: joined.chars().take(MAX_CHARS).collect(),
        });
        if lines.len() == MAX_LINES {
            break;
        }
    }
    lines.sort_by(|a, b| a.start_sec.total_cmp(&b.start_sec));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cues_tags_and_bad_blocks() {
        let srt = "1\r\n00:00:01,500 --> 00:00:03,000\r\n<i>Hello</i> {\\an8}there\r\nfriend\r\n\r\n2\n00:00:04,000 --> 00:00:02,000\nbackwards\n\n3\nnonsense\n\n4\n00:03:10,000 --> 00:03:12,000\ntoo late\n\n5\n00:00:05.250 --> 00:00:06.000 align:start\nvtt style\n";
        let lines = parse_srt(srt, 180.0);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0].text, "Hello there friend");
        assert!((lines[0].start_sec - 1.5).abs() < 1e-6 && (lines[0].end_sec - 3.0).abs() < 1e-6);
        assert_eq!(lines[1].text, "vtt style");
        assert!((lines[1].start_sec - 5.25).abs() < 1e-6);
    }

    #[test]
    fn timestamps_reject_out_of_range_fields() {
        assert_eq!(timestamp("01:02:03,004"), Some(3723.004));
        assert_eq!(srt_timestamp(3723.004), "01:02:03,004");
        assert_eq!(timestamp(&srt_timestamp(59.9996)), Some(60.0));
        assert_eq!(timestamp("00:61:00,000"), None);
        assert_eq!(timestamp("garbage"), None);
    }
}

/// Property tests (security round 4, point 7): any subtitle text gives a bounded list of lines
/// in time order, inside the clip, with bounded text.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn srt_like() -> impl Strategy<Value = String> {
        let cue = (
            proptest::option::of(0u32..10_000),
            "[0-9]{1,3}:[0-9]{1,2}:[0-9]{1,2}[,.][0-9]{0,4}",
            "[0-9]{1,3}:[0-9]{1,2}:[0-9]{1,2}[,.][0-9]{0,4}",
            "( [a-z:%0-9]{0,12})?",
            "\\PC{0,40}",
        )
            .prop_map(|(n, a, b, settings, text)| {
                let n = n.map(|n| format!("{n}\n")).unwrap_or_default();
                format!("{n}{a} --> {b}{settings}\n{text}\n\n")
            });
        prop::collection::vec(cue, 0..60).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn any_subtitle_text_gives_ordered_bounded_lines(
            text in prop_oneof![srt_like(), "\\PC{0,3000}", "[0-9:,.\\-> \\r\\n]{0,3000}"],
            max_secs in 0.0f64..400.0,
        ) {
            let started = std::time::Instant::now();
            let lines = parse_srt(&text, max_secs);
            prop_assert!(started.elapsed() < std::time::Duration::from_secs(2));
            prop_assert!(lines.len() <= MAX_LINES);
            for w in lines.windows(2) {
                prop_assert!(w[0].start_sec <= w[1].start_sec);
            }
            for l in &lines {
                prop_assert!(l.start_sec.is_finite() && l.end_sec.is_finite());
                prop_assert!(0.0 <= l.start_sec && l.start_sec <= l.end_sec);
                prop_assert!(f64::from(l.end_sec) <= max_secs + 1e-3);
                prop_assert!(!l.text.is_empty() && l.text.chars().count() <= MAX_CHARS);
                prop_assert!(!l.text.contains('\n'));
            }
        }

        #[test]
        fn timestamps_round_trip(ms in 0u64..360_000_000) {
            let secs = ms as f64 / 1000.0;
            prop_assert_eq!(timestamp(&srt_timestamp(secs)), Some(secs));
        }
    }
}
