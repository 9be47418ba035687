//! Speech and language features of qualia v2, per second, built from what the service already
//! computes for the transcript: Silero VAD's speech regions, the transcript lines (Whisper
//! segments or subtitle cues) and MiniLM sentence embeddings.
//!
//! - `speech_presence`: the share of the second inside a VAD speech region.
//! - `word_rate`: recognised word onsets in the second. A line (segment or cue) carries no word
//!   times, so its words are spread evenly over it, as the issue asks for subtitle cues. Each
//!   word counts by its line's confidence: Whisper's `exp(mean token log-probability)`, 1 for a
//!   subtitle cue, and a word repeated within its line counts once. Whisper writes words even
//!   for reversed speech, but it is unsure of them and loops on phrases.
//! - `intelligibility`: recognised words per second of detected voice over this and the
//!   previous second. Reversed or foreign-sounding speech is voice Whisper cannot turn into
//!   confident (English) words, so it reads low here while `speech_presence` stays high.
//! - `semantic_change`: an event boundary, a change of topic larger than the clip's ongoing
//!   rate of change. The cosine distance between the embedding of the words of the last 4 s
//!   and of the 4 s before, minus the median of that distance over the clip's earlier seconds
//!   (at most [`BOUNDARY_HISTORY`] of them, at least [`BOUNDARY_MIN_HISTORY`]), floored at 0.
//!   Connected speech changes its words every window, so the raw distance is high wherever
//!   anyone talks (2.5.0 used it, and any narration drove the memory profile; the validity
//!   battery found it). Event segmentation reads a boundary where the change exceeds what the
//!   ongoing stream predicts (Zacks et al. 2007), which is what this keeps.
//! - four semantic axes: the embedding of the last 4 s of words projected on a fixed direction,
//!   the normalised mean embedding of a few anchor sentences minus that of neutral sentences,
//!   measured **from the midpoint between the two centroids' projections** (the axis origin,
//!   the boundary of a nearest-centroid classifier) and floored at 0: a window reads on an axis
//!   only when it is closer to the anchors than to the neutral reference, so an axis measures
//!   evidence for its kind of content, not that there are words (2.5.0 measured from 0, where
//!   ordinary narration already sits well above the neutral sentences). The anchors are
//!   listed in [`AXES`] and [`NEUTRAL`] and stored with the model; the directions and origins
//!   are a documented construction, not fitted to anything.
//!
//! The z unit of these content features comes from the same construction, not from the
//! reference corpus (which held 11 s of speech and almost no topic change up to qualia 2.6.0,
//! so its spread sat at the floor and any narration read as several z; [`content_units`]).
//!
//! Every window ends at the end of its second, so nothing here reads the future.

use crate::embed::{DIM, dot};
use crate::plugins::bindings::TranscriptLine;
use crate::speech::vad::{self, Region};

/// Language features per second.
pub const LANGUAGE_FEATURES: usize = 4 + AXES.len();
/// Seconds of transcript in one semantic window.
const WINDOW_SECS: usize = 4;
/// Voice below this much (seconds, over two seconds) gives no intelligibility reading.
const MIN_VOICED: f64 = 0.2;
/// Highest plausible speaking rate (words per second); more is a transcript artefact.
const MAX_WORDS_PER_SEC: f64 = 8.0;
/// Characters of one window's text passed to the embedder.
const MAX_WINDOW_CHARS: usize = 1000;
/// Earlier seconds of semantic distance an event boundary is measured against (one minute).
pub const BOUNDARY_HISTORY: usize = 60;
/// Earlier seconds of semantic distance needed before a boundary can be read: with less, the
/// clip's ongoing rate of change is unknown and `semantic_change` reads 0.
pub const BOUNDARY_MIN_HISTORY: usize = 3;

/// The semantic axes of a model: unit directions and the origin each projection is measured
/// from (the midpoint between the neutral and the anchor centroids' projections).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SemanticAxes {
    /// `AXES x DIM`, each row unit length.
    pub directions: Vec<f32>,
    /// One per axis: the midpoint between the neutral and the anchor centroids' projections,
    /// which reads 0.
    pub origins: Vec<f32>,
    /// Factors that put another embedder's readings on the model's scale: `semantic_change`
    /// first, then one per axis (see `inference::multilingual`). Empty for the model's own
    /// embedder, whose readings are the scale.
    pub scale: Vec<f32>,
}

impl SemanticAxes {
    /// A format 1 model has none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.directions.is_empty()
    }
}

/// A semantic axis: its feature name, what it stands for, and its anchor sentences.
pub struct Axis {
    pub name: &'static str,
    pub meaning: &'static str,
    pub anchors: &'static [&'static str],
}

/// The six axes, in feature order (`axis_social`, …).
pub const AXES: [Axis; 6] = [
    Axis {
        name: "social",
        meaning: "people, relationships and social interaction",
        anchors: &[
            "my friends and my family",
            "she told him that she loved him",
            "people talking and laughing together",
            "we met our new neighbours",
            "a mother hugs her child",
            "the team celebrated together with everyone",
        ],
    },
    Axis {
        name: "emotion",
        meaning: "emotion words and affective language",
        anchors: &[
            "I am so happy",
            "this is absolutely terrifying",
            "she was heartbroken and cried",
            "I love it so much",
            "he was furious and upset",
            "what a wonderful, joyful surprise",
        ],
    },
    Axis {
        name: "numbers",
        meaning: "numbers, prices and quantities",
        anchors: &[
            "only nineteen ninety nine",
            "save fifty percent today",
            "three for the price of two",
            "it costs ten dollars",
            "prices start at two hundred and ninety nine",
            "twenty five percent off everything",
        ],
    },
    // Since qualia 2.9.0 the one "imperative" axis is three, because a call to action, the
    // evidence for a product and the product itself are different constructs with different
    // profiles: 2.8.0 read "buy now" on the `decision_making` profile (deliberation), so a hard
    // sell raised deliberation more than pressure and read less manipulative than calm facts.
    Axis {
        name: "pressure",
        meaning: "urgency, scarcity, social proof, authority and calls to act now",
        anchors: &[
            "hurry, the sale ends at midnight",
            "only a few are left, get yours before they are gone",
            "everyone is buying it, do not be left out",
            "experts swear by it, so should you",
            "don't wait, call right now",
            "limited time offer, act now",
        ],
    },
    Axis {
        name: "evidence",
        meaning: "specifics, measurements, comparisons, test results and caveats",
        anchors: &[
            "the case is aluminium and the cable is one metre long",
            "in independent tests it lasted longer than the older version",
            "compared with the other model it is slower but quieter",
            "it does not work with older devices",
            "the frame measures thirty centimetres across",
            "results vary, and it may not suit everyone",
        ],
    },
    Axis {
        name: "product",
        meaning: "a product and the benefit of having it",
        anchors: &[
            "this phone takes beautiful photos",
            "our new coffee maker makes your mornings easier",
            "a comfortable sofa the whole family will enjoy",
            "this cream leaves your skin soft and smooth",
            "the car is quiet, safe and fun to drive",
            "enjoy fresh, delicious meals in minutes",
        ],
    },
];

/// Neutral, descriptive sentences every axis is measured against.
pub const NEUTRAL: [&str; 6] = [
    "the table is in the room",
    "the report describes the process",
    "it is located on the second floor",
    "the system uses a standard format",
    "the river flows through the valley",
    "the meeting is on the calendar",
];

/// One clip's language features (`seconds x` [`LANGUAGE_FEATURES`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LanguageFeatures {
    pub per_second: Vec<f32>,
    /// Voice activity was detected somewhere in the clip.
    pub detected: bool,
}

/// Sentence embeddings: one unit vector of [`DIM`] floats per text.
pub trait Embed {
    /// # Errors
    /// The embedder's own errors.
    fn embed(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>>;
}

impl Embed for crate::embed::Embedder {
    fn embed(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        crate::embed::Embedder::embed(self, texts)
    }
}

/// The axis directions (`AXES.len() x DIM`, each unit length) and their origins (the midpoint
/// of the neutral and anchor centroids' projections).
///
/// # Errors
/// Embedder errors.
pub fn semantic_axes(embedder: &dyn Embed) -> anyhow::Result<SemanticAxes> {
    let anchors: Vec<Vec<&str>> = AXES.iter().map(|a| a.anchors.to_vec()).collect();
    axes_from(embedder, &NEUTRAL, &anchors)
}

/// The construction of [`semantic_axes`] on any sentences: for each axis, the unit direction
/// from the centroid of `neutral` to the centroid of its `anchors`, and the midpoint of the two
/// centroids' projections as its origin.
///
/// # Errors
/// Embedder errors.
pub fn axes_from(
    embedder: &dyn Embed,
    neutral: &[&str],
    anchors: &[Vec<&str>],
) -> anyhow::Result<SemanticAxes> {
    let neutral = centroid(embedder, neutral)?;
    let mut directions = Vec::with_capacity(AXES.len() * DIM);
    let mut origins = Vec::with_capacity(AXES.len());
    for texts in anchors {
        let pos = centroid(embedder, texts)?;
        let d: Vec<f64> = pos.iter().zip(&neutral).map(|(p, n)| p - n).collect();
        let norm = d.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
        let unit: Vec<f64> = d.iter().map(|x| x / norm).collect();
        let project = |c: &[f64]| unit.iter().zip(c).map(|(u, x)| u * x).sum::<f64>();
        let (low, high) = (project(&neutral), project(&pos));
        origins.push(f64::midpoint(low, high) as f32);
        directions.extend(unit.iter().map(|x| *x as f32));
    }
    Ok(SemanticAxes {
        directions,
        origins,
        scale: Vec::new(),
    })
}

/// The mean embedding of `texts`.
fn centroid(embedder: &dyn Embed, texts: &[&str]) -> anyhow::Result<Vec<f64>> {
    let v = embedder.embed(texts)?;
    let mut m = vec![0f64; DIM];
    for e in &v {
        anyhow::ensure!(e.len() == DIM, "embedding of {} floats", e.len());
        for (a, b) in m.iter_mut().zip(e) {
            *a += f64::from(*b) / v.len() as f64;
        }
    }
    Ok(m)
}

/// The z unit of the content features, from the axes' own construction: an axis reads 1 z for
/// a window whose projection is that of its anchors' centroid, and `semantic_change`
/// reads 1 z for a boundary as large as the median distance between two unrelated neutral
/// sentences (a full change of topic). The prior raises these features' corpus spread to at
/// least this unit.
///
/// # Errors
/// Embedder errors.
pub fn content_units(
    embedder: &dyn Embed,
    axes: &SemanticAxes,
) -> anyhow::Result<Vec<(String, f32)>> {
    let anchors: Vec<Vec<&str>> = AXES.iter().map(|a| a.anchors.to_vec()).collect();
    units_from(embedder, axes, &[&NEUTRAL], &anchors)
}

/// [`content_units`] on any sentences: each axis's unit is its anchors' mean projection above
/// the origin; `semantic_change`'s is the median distance between two different sentences of
/// the same group of `neutral` sentences (a group is one language, so a sentence and its
/// translation are never paired).
///
/// # Errors
/// Embedder errors.
pub fn units_from(
    embedder: &dyn Embed,
    axes: &SemanticAxes,
    neutral: &[&[&str]],
    anchors: &[Vec<&str>],
) -> anyhow::Result<Vec<(String, f32)>> {
    let mut out = Vec::new();
    for (((axis, texts), direction), origin) in AXES
        .iter()
        .zip(anchors)
        .zip(axes.directions.chunks_exact(DIM))
        .zip(&axes.origins)
    {
        let anchors = embedder.embed(texts)?;
        let centroid =
            anchors.iter().map(|e| dot(e, direction)).sum::<f32>() / anchors.len() as f32;
        out.push((format!("axis_{}", axis.name), centroid - origin));
    }
    let mut distances: Vec<f32> = Vec::new();
    for group in neutral {
        let v = embedder.embed(group)?;
        for (i, a) in v.iter().enumerate() {
            for b in &v[i + 1..] {
                distances.push(1.0 - dot(a, b));
            }
        }
    }
    distances.sort_by(f32::total_cmp);
    let boundary = distances.get(distances.len() / 2).copied().unwrap_or(1.0);
    out.push(("semantic_change".to_owned(), boundary));
    Ok(out)
}

/// One transcript word: its onset (seconds), the word, and how much it counts as recognised.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub onset: f64,
    pub text: String,
    /// The confidence of its line, or 0 when the word already occurred in the same line.
    pub confidence: f32,
}

/// Whether `c` belongs to a script written without spaces between words: Han, Hiragana,
/// Katakana (half-width too), Thai, Lao, Khmer and Myanmar.
fn unspaced(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'
            | '\u{31F0}'..='\u{31FF}'
            | '\u{3400}'..='\u{4DBF}'
            | '\u{4E00}'..='\u{9FFF}'
            | '\u{F900}'..='\u{FAFF}'
            | '\u{FF66}'..='\u{FF9F}'
            | '\u{0E00}'..='\u{0EFF}'
            | '\u{1000}'..='\u{109F}'
            | '\u{1780}'..='\u{17FF}'
            | '\u{20000}'..='\u{2FA1F}')
}

/// The words of a line. Spaces separate them, except in scripts written without spaces, where
/// a whole sentence is one space-delimited token: there ICU4X's word segmenter (Unicode's own
/// implementation of UAX #29 with its dictionaries for Chinese and Japanese and its LSTM models
/// for Thai, Lao, Khmer and Myanmar) finds them. Before, a Japanese line counted as one word,
/// so `word_rate` read a Japanese clip as a few words a minute. A token without such characters
/// is kept as it is, so languages written with spaces count exactly as before. Each word keeps
/// the punctuation that follows it, so a token's words put together are the token.
///
/// These are what the rates count. The text the sentence models read is not rebuilt from them
/// ([`tokens_of`]): the first attempt did, and the multilingual embedder then read Japanese
/// product facts below a hard sell on evidence.
#[must_use]
pub fn words_of(text: &str) -> Vec<&str> {
    // One segmenter per thread: ICU4X 1.5's holds reference-counted data (`Rc`), so it is not
    // `Sync`; built from compiled data, it costs little.
    thread_local! {
        static SEGMENTER: icu_segmenter::WordSegmenter = icu_segmenter::WordSegmenter::new_auto();
    }
    let mut out = Vec::new();
    for token in tokens_of(text) {
        let mut starts = Vec::new();
        if token.chars().any(unspaced) {
            SEGMENTER.with(|segmenter| {
                // A segment with a letter or digit is a word. ICU4X 1.5's `is_word_like` is
                // not used: it reads `None` for some dictionary words ("新しい", "電気", "ね").
                let mut last = 0;
                for at in segmenter.segment_str(token) {
                    if at > last && token[last..at].chars().any(char::is_alphanumeric) {
                        starts.push(last);
                    }
                    last = at;
                }
            });
        }
        // What precedes the first word belongs to it; a token the segmenter finds no word in
        // is one word, as a spaced token is.
        match starts.first_mut() {
            Some(first) => *first = 0,
            None => starts.push(0),
        }
        for (i, &start) in starts.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(token.len());
            out.push(&token[start..end]);
        }
    }
    out
}

/// The space-delimited tokens of a line that hold a letter or digit: the units of the window
/// text the sentence models read, as the line was written (a Japanese clause stays whole).
fn tokens_of(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
        .filter(|t| t.chars().any(char::is_alphanumeric))
}

/// The written tokens of the transcript with their onsets, spread evenly over each line: the
/// window text. In spaced languages these are the words of [`word_onsets`].
fn token_onsets(lines: &[TranscriptLine]) -> Vec<(f64, &str)> {
    let mut out = Vec::new();
    for line in lines {
        let tokens: Vec<&str> = tokens_of(&line.text).collect();
        let (start, end) = (f64::from(line.start_sec), f64::from(line.end_sec));
        let span = (end - start).max(0.0);
        for (i, t) in tokens.iter().enumerate() {
            out.push((start + span * i as f64 / tokens.len() as f64, *t));
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// Words of the transcript with their onsets, spread evenly over each line. `confidence` holds
/// one value per line (missing ones read 1). A word that repeats an earlier word of its line
/// counts 0: looping on a phrase ("you're not going to lose your food, you're not going to …")
/// is Whisper's commonest hallucination on audio it cannot read, reversed speech included.
#[must_use]
pub fn word_onsets(lines: &[TranscriptLine], confidence: &[f32]) -> Vec<Word> {
    let mut out = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let c = confidence.get(n).copied().unwrap_or(1.0).clamp(0.0, 1.0);
        let words = words_of(&line.text);
        let (start, end) = (f64::from(line.start_sec), f64::from(line.end_sec));
        let span = (end - start).max(0.0);
        let mut seen = std::collections::HashSet::new();
        for (i, w) in words.iter().enumerate() {
            let key: String = w
                .chars()
                .filter(|ch| ch.is_alphanumeric() || *ch == '\'')
                .flat_map(char::to_lowercase)
                .collect();
            out.push(Word {
                onset: start + span * i as f64 / words.len() as f64,
                text: (*w).to_owned(),
                confidence: if seen.insert(key) { c } else { 0.0 },
            });
        }
    }
    out.sort_by(|a, b| a.onset.total_cmp(&b.onset));
    out
}

/// The language features of a clip of `seconds` seconds. `embedder` is `None` when the lines'
/// meaning cannot be read (speech in a language other than the embedder's English): the
/// voice and the word counts are read, and the semantic features (boundaries, axes) stay 0,
/// as for speech without words, rather than reading an English model's guess at them.
///
/// # Errors
/// Embedder errors, or axes of the wrong size.
pub fn compute(
    seconds: usize,
    regions: &[Region],
    lines: &[TranscriptLine],
    confidence: &[f32],
    embedder: Option<&dyn Embed>,
    axes: &SemanticAxes,
) -> anyhow::Result<LanguageFeatures> {
    anyhow::ensure!(
        axes.directions.len() == AXES.len() * DIM && axes.origins.len() == AXES.len(),
        "the model's semantic axes hold {} floats and {} origins, expected {} and {}",
        axes.directions.len(),
        axes.origins.len(),
        AXES.len() * DIM,
        AXES.len()
    );
    anyhow::ensure!(
        axes.scale.is_empty() || axes.scale.len() == 1 + AXES.len(),
        "{} scale factors for {} content features",
        axes.scale.len(),
        1 + AXES.len()
    );
    let words = word_onsets(lines, confidence);
    let in_range = |a: f64, b: f64| -> Vec<&Word> {
        words
            .iter()
            .filter(|w| w.onset >= a && w.onset < b)
            .collect()
    };
    // Words Whisper is sure of count fully; guessed ones (reversed or foreign speech, noise)
    // count by their confidence.
    let recognised =
        |a: f64, b: f64| -> f64 { in_range(a, b).iter().map(|w| f64::from(w.confidence)).sum() };
    let tokens = token_onsets(lines);
    let text_of = |a: f64, b: f64| -> String {
        let mut s = tokens
            .iter()
            .filter(|(onset, _)| *onset >= a && *onset < b)
            .map(|(_, t)| *t)
            .collect::<Vec<_>>()
            .join(" ");
        if s.len() > MAX_WINDOW_CHARS {
            let cut = (0..=MAX_WINDOW_CHARS)
                .rev()
                .find(|i| s.is_char_boundary(*i))
                .unwrap_or(0);
            s.truncate(cut);
        }
        s
    };
    // The window ending at second t (exclusive end t+1) and the one before it.
    let window = |t: usize| {
        let end = (t + 1) as f64;
        let start = end - WINDOW_SECS as f64;
        text_of(start.max(0.0), end)
    };
    let texts: Vec<String> = (0..seconds).map(window).collect();
    let previous: Vec<String> = (0..seconds)
        .map(|t| {
            if t + 1 > WINDOW_SECS {
                window(t - WINDOW_SECS)
            } else {
                String::new()
            }
        })
        .collect();
    // Embed each distinct non-empty text once.
    let mut distinct: Vec<&str> = texts
        .iter()
        .chain(&previous)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    let vectors = match embedder {
        Some(e) => e.embed(&distinct)?,
        None => Vec::new(),
    };
    let vector = |s: &str| -> Option<&Vec<f32>> {
        distinct.binary_search(&s).ok().and_then(|i| vectors.get(i))
    };
    // Another embedder's readings, put on the model's scale (1 for the model's own).
    let scale = |k: usize| axes.scale.get(k).copied().unwrap_or(1.0);
    let mut out = vec![0f32; seconds * LANGUAGE_FEATURES];
    // Semantic distances of the earlier seconds, for the boundary baseline.
    let mut history: std::collections::VecDeque<f32> = std::collections::VecDeque::new();
    for t in 0..seconds {
        let (a, b) = (t as f64, (t + 1) as f64);
        let row = &mut out[t * LANGUAGE_FEATURES..(t + 1) * LANGUAGE_FEATURES];
        row[0] = vad::overlap(regions, a, b).clamp(0.0, 1.0) as f32;
        row[1] = recognised(a, b).min(MAX_WORDS_PER_SEC) as f32;
        let lo = (a - 1.0).max(0.0);
        let voiced = vad::overlap(regions, lo, b);
        if voiced >= MIN_VOICED {
            row[2] = (recognised(lo, b) / voiced).min(MAX_WORDS_PER_SEC) as f32;
        }
        if let (Some(now), Some(before)) = (vector(&texts[t]), vector(&previous[t])) {
            let distance = (1.0 - dot(now, before)).max(0.0);
            if history.len() >= BOUNDARY_MIN_HISTORY {
                row[3] = (distance - median(&history)).max(0.0) * scale(0);
            }
            if history.len() == BOUNDARY_HISTORY {
                history.pop_front();
            }
            history.push_back(distance);
        }
        if let Some(now) = vector(&texts[t]) {
            for (k, (axis, origin)) in axes
                .directions
                .chunks_exact(DIM)
                .zip(&axes.origins)
                .enumerate()
            {
                // Only evidence for an axis drives it: text as neutral as the reference, or
                // about something else, reads as no words on that axis, not as its opposite.
                row[4 + k] = (dot(now, axis) - origin).max(0.0) * scale(1 + k);
            }
        }
    }
    Ok(LanguageFeatures {
        per_second: out,
        detected: !regions.is_empty(),
    })
}

/// The median of a non-empty window.
fn median(values: &std::collections::VecDeque<f32>) -> f32 {
    let mut v: Vec<f32> = values.iter().copied().collect();
    v.sort_by(f32::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        f32::midpoint(v[m - 1], v[m])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bag-of-letters embedder: deterministic, unit vectors, similar texts similar.
    struct Letters;
    impl Embed for Letters {
        fn embed(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = vec![0f32; DIM];
                    for c in t.chars().filter(char::is_ascii_lowercase) {
                        v[(c as usize - 'a' as usize) * 7 % DIM] += 1.0;
                    }
                    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                    v.iter().map(|x| x / n).collect()
                })
                .collect())
        }
    }

    fn line(a: f32, b: f32, text: &str) -> TranscriptLine {
        TranscriptLine {
            start_sec: a,
            end_sec: b,
            text: text.into(),
        }
    }

    #[test]
    fn words_are_found_in_scripts_written_without_spaces() {
        // Spaced languages count as before: whitespace tokens with a letter or digit.
        assert_eq!(
            words_of("Order yours today — only £20!"),
            ["Order", "yours", "today", "only", "£20!"]
        );
        // Japanese: one space-free sentence is several words (before: one).
        let ja = words_of("今日はとても良い天気ですね。");
        assert!((4..=10).contains(&ja.len()), "{ja:?}");
        // The pieces keep the sentence's punctuation: put together they are the sentence.
        assert_eq!(ja.concat(), "今日はとても良い天気ですね。");
        assert!(ja.last().is_some_and(|w| w.ends_with("ね。")), "{ja:?}");
        // Chinese and Thai likewise.
        let zh = words_of("我们今天去公园散步。");
        assert!((3..=8).contains(&zh.len()), "{zh:?}");
        let th = words_of("วันนี้อากาศดีมาก");
        assert!((3..=6).contains(&th.len()), "{th:?}");
        // Mixed: a Latin brand inside Japanese keeps its own word, and the dictionary word
        // before it is one too (ICU4X's own word-like flag misses it).
        let mixed = words_of("新しいiPhoneを買いました");
        assert!(mixed.contains(&"iPhone"), "{mixed:?}");
        assert_eq!(mixed.first(), Some(&"新しい"), "{mixed:?}");
    }

    #[test]
    fn window_text_reads_as_the_lines_were_written() {
        // Counting words in a space-free script must not change the text the embedder reads:
        // the first attempt rebuilt it from the segmented words, and e5 then read Japanese
        // product facts below a hard sell on evidence.
        let lines = [
            TranscriptLine {
                start_sec: 0.0,
                end_sec: 3.0,
                text: "この電気ケトルは約三分で一リットルのお湯を沸かします。".into(),
            },
            TranscriptLine {
                start_sec: 3.0,
                end_sec: 5.0,
                text: "Order  yours today — only £20!".into(),
            },
        ];
        let tokens: Vec<&str> = token_onsets(&lines).into_iter().map(|(_, t)| t).collect();
        assert_eq!(
            tokens.join(" "),
            "この電気ケトルは約三分で一リットルのお湯を沸かします。 Order yours today only £20!"
        );
        // The counts see the Japanese line's words, spread over it; English counts as before.
        let words = word_onsets(&lines, &[]);
        let japanese = words.iter().filter(|w| w.onset < 3.0).count();
        assert!(japanese > 8, "{words:?}");
        assert!(words.iter().any(|w| w.onset > 2.0 && w.onset < 3.0));
        assert_eq!(words.len() - japanese, 5);
    }

    #[test]
    fn words_spread_over_their_line() {
        let w = word_onsets(
            &[line(2.0, 4.0, "one two three four"), line(5.0, 5.5, "— ok")],
            &[0.5],
        );
        let t: Vec<f64> = w.iter().map(|x| x.onset).collect();
        assert_eq!(t, vec![2.0, 2.5, 3.0, 3.5, 5.0]);
        assert_eq!(w[0].confidence, 0.5);
        assert_eq!(
            w[4].confidence, 1.0,
            "a line without a confidence counts fully"
        );
        let looped = word_onsets(&[line(0.0, 3.0, "Go on, go on, GO ON now")], &[1.0]);
        let counted: f32 = looped.iter().map(|w| w.confidence).sum();
        assert_eq!(counted, 3.0, "go, on, now");
    }

    #[test]
    fn rates_follow_the_words_and_the_voice() {
        let axes = semantic_axes(&Letters).expect("axes");
        let regions = [Region {
            start: 1.0,
            end: 3.0,
        }];
        let f = compute(
            6,
            &regions,
            &[line(1.0, 3.0, "alpha beta gamma delta epsilon zeta")],
            &[1.0],
            Some(&Letters),
            &axes,
        )
        .expect("features");
        let at = |t: usize, k: usize| f.per_second[t * LANGUAGE_FEATURES + k];
        assert_eq!(at(0, 0), 0.0);
        assert_eq!(at(1, 0), 1.0);
        assert_eq!(at(1, 1), 3.0);
        assert_eq!(at(2, 1), 3.0);
        assert_eq!(at(4, 1), 0.0);
        // Second 2: 6 words over 2 voiced seconds.
        assert!((at(2, 2) - 3.0).abs() < 1e-6);
        // Voice with no words (reversed speech): presence without intelligibility.
        let g = compute(4, &regions, &[], &[], Some(&Letters), &axes).expect("features");
        // Unsure words count by their confidence: 6 words at 0.25 over 2 voiced seconds.
        let h = compute(
            4,
            &regions,
            &[line(1.0, 3.0, "alpha beta gamma delta epsilon zeta")],
            &[0.25],
            Some(&Letters),
            &axes,
        )
        .expect("features");
        assert!((h.per_second[2 * LANGUAGE_FEATURES + 2] - 0.75).abs() < 1e-6);
        assert_eq!(g.per_second[2 * LANGUAGE_FEATURES], 1.0);
        assert_eq!(g.per_second[2 * LANGUAGE_FEATURES + 2], 0.0);
        assert!(g.detected);
    }

    #[test]
    fn speech_whose_meaning_cannot_be_read_gives_no_semantic_features() {
        // Speech in a language the embedder does not read: the voice and the word counts are
        // read as with an embedder, every semantic feature is 0, and nothing is embedded.
        struct Refuses;
        impl Embed for Refuses {
            fn embed(&self, _: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
                anyhow::bail!("embedded a text it cannot read")
            }
        }
        let axes = semantic_axes(&Letters).expect("axes");
        let regions = [Region {
            start: 0.0,
            end: 12.0,
        }];
        let lines: Vec<TranscriptLine> = (0..12)
            .map(|t| line(t as f32, t as f32 + 1.0, AXES[0].anchors[t % 2]))
            .collect();
        let read = compute(12, &regions, &lines, &[], Some(&Letters), &axes).expect("read");
        let unread = compute(12, &regions, &lines, &[], None, &axes).expect("unread");
        for t in 0..12 {
            let row = |f: &LanguageFeatures| {
                f.per_second[t * LANGUAGE_FEATURES..(t + 1) * LANGUAGE_FEATURES].to_vec()
            };
            assert_eq!(row(&read)[..3], row(&unread)[..3], "second {t}");
            assert!(row(&unread)[3..].iter().all(|v| *v == 0.0), "second {t}");
        }
        assert!(
            read.per_second
                .chunks(LANGUAGE_FEATURES)
                .any(|r| r[4..].iter().any(|v| *v > 0.0)),
            "the read clip must move an axis, or this test checks nothing"
        );
        assert!(compute(12, &regions, &lines, &[], Some(&Refuses), &axes).is_err());
    }

    #[test]
    fn semantic_change_needs_two_windows_of_words_and_reads_only_the_past() {
        let axes = semantic_axes(&Letters).expect("axes");
        // One topic for 12 s, then another.
        let lines = [
            line(0.0, 4.0, "aaa aaa aaa"),
            line(4.0, 8.0, "aaa aaa aaa"),
            line(8.0, 12.0, "aaa aaa aaa"),
            line(12.0, 16.0, "zzz zzz zzz"),
        ];
        let f = compute(18, &[], &lines, &[], Some(&Letters), &axes).expect("features");
        let change = |t: usize| f.per_second[t * LANGUAGE_FEATURES + 3];
        assert_eq!(change(3), 0.0, "no earlier window yet");
        for t in 4..12 {
            assert!(change(t) < 0.05, "second {t}: {}", change(t));
        }
        assert!(change(15) > 0.9, "the change of topic: {}", change(15));
        // A clip cut after second 15 gives the same values up to second 15.
        let g = compute(16, &[], &lines, &[], Some(&Letters), &axes).expect("features");
        assert_eq!(&f.per_second[..16 * LANGUAGE_FEATURES], &g.per_second[..]);
    }

    #[test]
    fn speech_that_changes_as_it_always_does_is_no_boundary() {
        let axes = semantic_axes(&Letters).expect("axes");
        // Every 4 s window holds different words: the raw distance is high everywhere.
        let topics = [
            "aaa bbb", "ccc ddd", "eee fff", "ggg hhh", "iii jjj", "kkk lll",
        ];
        let lines: Vec<TranscriptLine> = topics
            .iter()
            .enumerate()
            .map(|(i, t)| line(4.0 * i as f32, 4.0 * (i + 1) as f32, t))
            .collect();
        let f = compute(24, &[], &lines, &[], Some(&Letters), &axes).expect("features");
        let change = |t: usize| f.per_second[t * LANGUAGE_FEATURES + 3];
        let late: Vec<f32> = (12..24).map(change).collect();
        assert!(
            late.iter().all(|c| *c < 0.3),
            "steady change is no boundary: {late:?}"
        );
    }

    #[test]
    fn neutral_text_reads_zero_on_every_axis() {
        let axes = semantic_axes(&Letters).expect("axes");
        let lines = [line(0.0, 4.0, &NEUTRAL.join(" "))];
        let f = compute(4, &[], &lines, &[], Some(&Letters), &axes).expect("features");
        let row = &f.per_second[3 * LANGUAGE_FEATURES..4 * LANGUAGE_FEATURES];
        assert!(row[4..].iter().all(|v| *v < 0.05), "{row:?}");
        let social = [line(0.0, 4.0, &AXES[0].anchors.join(" "))];
        let g = compute(4, &[], &social, &[], Some(&Letters), &axes).expect("features");
        assert!(g.per_second[3 * LANGUAGE_FEATURES + 4] > 0.1);
    }
}
