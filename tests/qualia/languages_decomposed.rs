//! Where the language battery's failure comes from: its 60 clips scored again with their words
//! given as a subtitle stream, so that no recogniser is involved. An analysis beside the
//! registered battery (`LANGUAGE-BATTERY-PLAN.md`, deviation 10), not a run of it: the plan's
//! clips, scripts, floors and rules are unchanged, and so is its verdict.
//!
//! Two conditions, each of the 60 espeak-ng clips muxed with one SubRip stream (the service
//! reads subtitles instead of Whisper, and reads their language from the text):
//! - **Written**: each clip's own script. What the battery would read with a recogniser that
//!   makes no mistakes: what remains of L1 and L2 is the meaning reader's (multilingual-e5-small
//!   on the equated axes outside English, MiniLM in English) and the voices'.
//! - **English words**: the English script over every language's voice. The words and their
//!   reader are English's; only the voice, its rhythm and its length differ. What remains is the
//!   acoustic path's.
//!
//! It can fail for a scientific reason: if the multilingual reader did not order the scripts'
//! meaning in a language, or if the same words read differently over another voice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use brainscan::speech::subtitles::srt_timestamp;
use futures_util::StreamExt as _;

use crate::languages::{Agreement, LANGUAGES, ORDERINGS, ordering, script, spoken};
use crate::support::{
    DEFAULT_LENSES, analyse_shared, default_lens_means, lens_series, scored_in_order,
};

/// The length of a PCM WAV file as espeak-ng writes it (a 44-byte header whose bytes 28-31 are
/// the byte rate).
fn wav_seconds(wav: &Path) -> f64 {
    let bytes = std::fs::read(wav).expect("the voice's WAV");
    let rate = u32::from_le_bytes(bytes[28..32].try_into().expect("a WAV header"));
    (bytes.len() - 44) as f64 / f64::from(rate)
}

/// ISO 639-2 codes of [`LANGUAGES`], as a container tags a subtitle stream.
const TAGS: [&str; 5] = ["eng", "spa", "fra", "deu", "ita"];

/// `wav` with `text` as a SubRip stream tagged `tag`: one cue per sentence, the clip's length
/// shared among them by their characters (espeak-ng speaks from the first sample to the last).
/// The tag names the language where the text is too short for the service to tell it (Spanish
/// hard sell 1), as a recogniser that made no mistakes would.
fn subtitled(dir: &Path, wav: &Path, name: &str, text: &str, tag: &str) -> PathBuf {
    let seconds = wav_seconds(wav);
    let sentences: Vec<&str> = text
        .split_inclusive(['.', '!', '?'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let characters: usize = sentences.iter().map(|s| s.chars().count()).sum();
    let mut srt = String::new();
    let mut start = 0.0;
    for (i, sentence) in sentences.iter().enumerate() {
        let end = start + seconds * sentence.chars().count() as f64 / characters as f64;
        srt += &format!(
            "{}\n{} --> {}\n{sentence}\n\n",
            i + 1,
            srt_timestamp(start),
            srt_timestamp(end)
        );
        start = end;
    }
    let srt_path = dir.join(format!("{name}.srt"));
    std::fs::write(&srt_path, srt).expect("write the cues");
    let out = dir.join(format!("{name}.mkv"));
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-y", "-i"])
        .arg(wav)
        .arg("-i")
        .arg(&srt_path)
        .args(["-c:a", "pcm_s16le", "-c:s", "srt", "-metadata:s:s:0"])
        .arg(format!("language={tag}"))
        .arg(&out)
        .status()
        .expect("ffmpeg runs");
    assert!(status.success(), "ffmpeg muxes {name}");
    out
}

/// The four lens means of clip (`language`, `index`) with `words` as its subtitles, and the
/// language the service read them in.
async fn score(dir: &Path, language: usize, index: usize, words: &str) -> ([f64; 4], String) {
    let code = LANGUAGES[language].0;
    let wav = spoken(dir, language, index);
    let english = words == script(0, index);
    let tag = if english { TAGS[0] } else { TAGS[language] };
    let clip = subtitled(dir, &wav, &format!("{code}-{index}-{english}"), words, tag);
    let out = analyse_shared(&clip).await;
    let (_, _, series) = lens_series(&out).await;
    let language = out.heard.and_then(|h| h.language);
    if language
        .as_ref()
        .is_some_and(|l| l.transcribed_by == brainscan::speech::text_language::SUBTITLES_TAGGED)
    {
        println!("{code} {index} (English words: {english}): the language from the tag");
    }
    let read_as = language.map_or_else(String::new, |l| l.code);
    (default_lens_means(&series), read_as)
}

/// Each clip's lens means by (language, script), with `words(language, script)` as subtitles.
async fn scored(
    dir: &Path,
    words: fn(usize, usize) -> &'static str,
) -> BTreeMap<(usize, usize), [f64; 4]> {
    let keys: Vec<(usize, usize)> = (0..LANGUAGES.len())
        .flat_map(|language| (0..12).map(move |index| (language, index)))
        .collect();
    let mut scores = scored_in_order(keys.iter().map(|&(l, i)| score(dir, l, i, words(l, i))));
    let mut means = BTreeMap::new();
    for &(language, index) in &keys {
        let (m, read_as) = scores.next().await.expect("one score per clip");
        let expected = if words(language, index) == script(0, index) {
            "en"
        } else {
            LANGUAGES[language].0
        };
        assert_eq!(
            read_as, expected,
            "{} {index}: the subtitles' language is read from their text",
            LANGUAGES[language].0
        );
        println!(
            "{} {index}: attention {:.1}, memory {:.1}, purchase intent {:.1}, manipulation {:.1}",
            LANGUAGES[language].0, m[0], m[1], m[2], m[3]
        );
        means.insert((language, index), m);
    }
    means
}

/// L1's cells: (language, lens) -> largest |difference from English| over the 12 scripts.
fn l1(
    condition: &str,
    means: &BTreeMap<(usize, usize), [f64; 4]>,
) -> BTreeMap<(usize, usize), f64> {
    let mut cells = BTreeMap::new();
    for (language, (code, _)) in LANGUAGES.iter().enumerate().skip(1) {
        for (lens, name) in DEFAULT_LENSES.iter().enumerate() {
            let cell = Agreement::of(means, language, lens);
            println!(
                "{condition} L1 {code} {name}: largest |d| {:.1}, mean |d| {:.1}, mean d {:+.1}: {}",
                cell.largest(),
                cell.mean_absolute(),
                cell.bias(),
                if cell.passes() { "PASS" } else { "FAIL" }
            );
            cells.insert((language, lens), cell.largest());
        }
    }
    cells
}

/// A figure near the bar passes or fails with the CPU's arithmetic (e5's matrix work follows
/// its SIMD path), so only figures this far from it have their verdicts pinned.
const NEAR_THE_BAR: f64 = 2.0;
/// How far a figure may move from the model card's across CPUs. No recogniser is involved, so
/// the spread is the sentence model's and the voice detector's, not the transcripts'.
const FIGURE_SPREAD: f64 = 4.0;

/// Asserts L1's cells against the model card's figures (largest |difference|, in the order of
/// [`LANGUAGES`] after English, then [`DEFAULT_LENSES`]).
fn assert_l1(condition: &str, cells: &BTreeMap<(usize, usize), f64>, card: [[f64; 4]; 4]) {
    for ((language, lens), largest) in cells {
        let pinned = card[language - 1][*lens];
        let cell = (LANGUAGES[*language].0, DEFAULT_LENSES[*lens]);
        assert!(
            (largest - pinned).abs() < FIGURE_SPREAD,
            "{condition} L1 {cell:?}: largest {largest:.1}; the model card says {pinned:.1}: update it"
        );
        if (pinned - 10.0).abs() >= NEAR_THE_BAR {
            assert_eq!(
                *largest <= 10.0,
                pinned <= 10.0,
                "{condition} L1 {cell:?}: largest {largest:.1}, the model card's verdict is for {pinned:.1}"
            );
        }
    }
}

#[tokio::test]
async fn the_battery_with_its_words_given_reads_what_the_recogniser_costs() {
    let dir = tempfile::tempdir().expect("tempdir");

    // Written: each clip's own script.
    let written = scored(dir.path(), script).await;
    let cells = l1("written", &written);
    // Every ordering holds in every language once the words are right: the multilingual
    // reader orders the scripts' meaning in each language (the registered battery's L2 fails in
    // French and German, whose transcripts Whisper base invents or mishears).
    for (language, (code, _)) in LANGUAGES.iter().enumerate() {
        for row in ORDERINGS {
            let (mean, in_order, passes) = ordering(&written, language, row);
            println!(
                "written L2 {code} {}: mean difference {mean:+.1}, {in_order} of 4 in order",
                row.0
            );
            assert!(
                passes,
                "written L2 {code} {}: {mean:+.1}, {in_order} of 4",
                row.0
            );
        }
    }
    // Clip by clip the languages still disagree on purchase intent and manipulation, on the
    // calm-facts scripts (7 of 16 cells pass: attention's four, and memory's within 0.3 of the
    // bar in three languages): with the words right, what is left is the meaning reader's. The
    // model card, "Where the battery's failure comes from".
    assert_l1(
        "written",
        &cells,
        [
            [3.4, 9.7, 36.7, 17.7],
            [4.3, 12.2, 32.7, 13.6],
            [4.6, 9.9, 28.1, 16.3],
            [4.7, 9.9, 37.5, 11.4],
        ],
    );

    // English words over every voice: the acoustic path carries over. Every lens stays within
    // 10 points of English on every script but purchase intent in French and German, where a
    // calm-facts script (near rest, where percentiles are steep) moves with the voice's length.
    let english = scored(dir.path(), |_, index| script(0, index)).await;
    let cells = l1("English words", &english);
    assert_l1(
        "English words",
        &cells,
        [
            [3.2, 5.2, 3.2, 7.6],
            [4.3, 8.2, 19.4, 3.8],
            [4.6, 8.4, 12.2, 8.0],
            [4.8, 8.3, 8.8, 7.7],
        ],
    );
}
