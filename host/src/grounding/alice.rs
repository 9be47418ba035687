//! The Brennan et al. (2016) "Alice" fMRI set: the stimulus proxy, the targets and the ROI →
//! network mapping. The plan these follow was registered before any result was seen:
//! `models/qualia/v2/EVALUATION-PLAN.md`.
//!
//! The story's audio is not distributed, so the proxy is built from the word alignment: each
//! word spoken by espeak-ng at its aligned onset (cut at the next word's onset), and the words
//! as a subtitle stream, muxed into one Matroska file that the normal scan path analyses.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail, ensure};

use super::evaluate::Targets;
use crate::result::NETWORKS;
use crate::speech::subtitles::srt_timestamp;

pub const TEXTGRID: &str = "alice-brennan2016/DownTheRabbitHoleFinal_exp120_pad_1.TextGrid";
pub const TIMECOURSES: &str = "alice-brennan2016/10mm";
/// Seconds of silence before the story; the ten discarded volumes cover exactly this.
pub const PAD_SECONDS: usize = 20;
pub const TR_SECONDS: usize = 2;
/// Volumes released (the first half); the second half is held out by others.
pub const VOLUMES: usize = 181;
/// The proxy covers the released volumes.
pub const PROXY_SECONDS: usize = PAD_SECONDS + TR_SECONDS * VOLUMES;
const RATE: u32 = 22_050;
const MAX_TEXTGRID_BYTES: u64 = 4 << 20;
const MAX_TIMECOURSE_BYTES: u64 = 1 << 20;
const MAX_WORDS: usize = 20_000;

/// ROI, its centre (MNI, from its anatomical label) and the network the plan assigned it by
/// the nearest Schaefer-400 centroid (checked against the centroid table by a test).
pub const ROIS: [(&str, [f64; 3], &str); 6] = [
    ("LATL", [-48.0, 14.0, -28.0], "Limbic"),
    ("RATL", [48.0, 14.0, -28.0], "Default Mode"),
    ("LPTL", [-54.0, -40.0, 4.0], "Default Mode"),
    ("LIPL", [-46.0, -62.0, 32.0], "Default Mode"),
    ("LPreM", [-50.0, -4.0, 44.0], "Somatomotor"),
    ("LIFG", [-48.0, 22.0, 12.0], "Default Mode"),
];

/// The shipped model's figures on the Alice first half. They are a fact about the shipped model
/// (its card and `provenance.model.evaluation` carry them), so they live with it; the Alice test
/// recomputes them from the data here and fails if they drift.
pub use crate::inference::shipped_evaluation::{SHIPPED_EVALUATION, ShippedEvaluation};

/// One aligned word.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub start: f64,
    pub end: f64,
    pub text: String,
}

/// The words of a Praat TextGrid's interval tier (silences `sp`/`sil` and empty intervals are
/// skipped).
///
/// # Errors
/// A malformed interval.
pub fn parse_textgrid(text: &str) -> anyhow::Result<Vec<Word>> {
    let mut words = Vec::new();
    let (mut xmin, mut xmax): (Option<f64>, Option<f64>) = (None, None);
    let mut in_interval = false;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with("intervals [") {
            in_interval = true;
            (xmin, xmax) = (None, None);
        } else if in_interval && let Some(v) = l.strip_prefix("xmin = ") {
            xmin = Some(
                v.parse()
                    .with_context(|| format!("TextGrid line {}", i + 1))?,
            );
        } else if in_interval && let Some(v) = l.strip_prefix("xmax = ") {
            xmax = Some(
                v.parse()
                    .with_context(|| format!("TextGrid line {}", i + 1))?,
            );
        } else if in_interval && let Some(v) = l.strip_prefix("text = ") {
            let (Some(start), Some(end)) = (xmin, xmax) else {
                bail!("TextGrid line {}: text before xmin/xmax", i + 1);
            };
            ensure!(
                end >= start && start >= 0.0,
                "TextGrid line {}: bad interval",
                i + 1
            );
            let word = v.trim_matches('"').trim();
            if !word.is_empty() && word != "sp" && word != "sil" {
                words.push(Word {
                    start,
                    end,
                    text: word.to_owned(),
                });
                ensure!(
                    words.len() <= MAX_WORDS,
                    "TextGrid: more than {MAX_WORDS} words"
                );
            }
            in_interval = false;
        }
    }
    ensure!(!words.is_empty(), "TextGrid: no words");
    Ok(words)
}

/// 16-bit mono PCM samples of one word spoken by espeak-ng.
fn speak(word: &str, dir: &Path) -> anyhow::Result<Vec<i16>> {
    let wav = dir.join("word.wav");
    let status = Command::new("espeak-ng")
        .arg("-w")
        .arg(&wav)
        .arg("--")
        .arg(word)
        .status()
        .context("running espeak-ng (scripts/setup installs it)")?;
    ensure!(status.success(), "espeak-ng failed on `{word}`");
    let bytes = std::fs::read(&wav)?;
    // espeak-ng writes a canonical 44-byte header, 22050 Hz mono 16-bit.
    ensure!(
        bytes.len() >= 44 && &bytes[..4] == b"RIFF",
        "espeak-ng wrote no WAV"
    );
    let rate = u32::from_le_bytes([bytes[24], bytes[25], bytes[26], bytes[27]]);
    ensure!(rate == RATE, "espeak-ng wrote {rate} Hz, expected {RATE}");
    Ok(bytes[44..]
        .chunks_exact(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]))
        .collect())
}

fn wav_bytes(samples: &[i16]) -> Vec<u8> {
    let data = (samples.len() * 2) as u32;
    let mut out = Vec::with_capacity(44 + samples.len() * 2);
    out.extend(b"RIFF");
    out.extend((36 + data).to_le_bytes());
    out.extend(b"WAVEfmt ");
    out.extend(16u32.to_le_bytes());
    out.extend(1u16.to_le_bytes()); // PCM
    out.extend(1u16.to_le_bytes()); // mono
    out.extend(RATE.to_le_bytes());
    out.extend((RATE * 2).to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(16u16.to_le_bytes());
    out.extend(b"data");
    out.extend(data.to_le_bytes());
    for s in samples {
        out.extend(s.to_le_bytes());
    }
    out
}

/// The story's aligned words, read from the reference data (bounded).
pub fn story_words(data: &Path) -> anyhow::Result<Vec<Word>> {
    let grid = crate::grounding::read_bounded(&data.join(TEXTGRID), MAX_TEXTGRID_BYTES)?;
    parse_textgrid(std::str::from_utf8(&grid).context(TEXTGRID)?)
}

/// Seconds from a sound's start to the peak of the model's response kernel (SPM's canonical
/// double gamma peaks at 6 s).
pub const RESPONSE_PEAK_SECONDS: usize = 6;

/// The first second scored "after the onset" (secondary measure, see
/// [`crate::grounding::evaluate::AfterOnset`]): the second in which the story's first word
/// starts, plus the response's peak. Volumes starting earlier carry the rise from the 20 s of
/// silence to the story.
///
/// # Errors
/// The word alignment is missing, too large or malformed, or has no words.
pub fn after_onset_second(data: &Path) -> anyhow::Result<usize> {
    let words = story_words(data)?;
    let first = words
        .iter()
        .map(|w| w.start)
        .reduce(f64::min)
        .context("the word alignment has no words")?;
    Ok(first.floor() as usize + RESPONSE_PEAK_SECONDS)
}

/// Builds the stimulus proxy for the first `seconds` of the story timeline into `dir` and
/// returns the Matroska file (espeak-ng audio + one subtitle cue per word).
///
/// # Errors
/// Missing tools (espeak-ng, ffmpeg), unreadable inputs.
pub fn build_proxy(data: &Path, dir: &Path, seconds: usize) -> anyhow::Result<PathBuf> {
    let words = story_words(data)?;
    let words: Vec<&Word> = words.iter().filter(|w| w.start < seconds as f64).collect();
    let mut spoken: BTreeMap<&str, Vec<i16>> = BTreeMap::new();
    for w in &words {
        if !spoken.contains_key(w.text.as_str()) {
            spoken.insert(&w.text, speak(&w.text, dir)?);
        }
    }
    let total = seconds * RATE as usize;
    let mut audio = vec![0i16; total];
    let mut srt = String::new();
    for (i, w) in words.iter().enumerate() {
        let start = (w.start * f64::from(RATE)) as usize;
        let next = words
            .get(i + 1)
            .map_or(total, |n| (n.start * f64::from(RATE)) as usize)
            .min(total);
        for (k, s) in spoken[w.text.as_str()].iter().enumerate() {
            if start + k >= next {
                break;
            }
            audio[start + k] = *s;
        }
        let _ = write!(
            srt,
            "{}\n{} --> {}\n{}\n\n",
            i + 1,
            srt_timestamp(w.start),
            srt_timestamp(w.end.min(seconds as f64)),
            w.text
        );
    }
    let wav = dir.join("proxy.wav");
    std::fs::write(&wav, wav_bytes(&audio))?;
    let subs = dir.join("proxy.srt");
    std::fs::write(&subs, srt)?;
    let out = dir.join("alice-proxy.mkv");
    let status = Command::new("ffmpeg")
        .args(["-y", "-loglevel", "error", "-i"])
        .arg(&wav)
        .arg("-i")
        .arg(&subs)
        .args(["-map", "0:a", "-map", "1:s", "-c:a", "flac", "-c:s", "srt"])
        .arg(&out)
        .status()
        .context("running ffmpeg")?;
    ensure!(status.success(), "ffmpeg could not mux the proxy");
    Ok(out)
}

/// One subject's ROI series (first half), `VOLUMES x 6`, each column z-scored.
fn subject_series(path: &Path) -> anyhow::Result<Vec<Vec<f64>>> {
    let bytes = crate::grounding::read_bounded(path, MAX_TIMECOURSE_BYTES)?;
    let text = String::from_utf8(bytes).with_context(|| path.display().to_string())?;
    let mut columns = vec![Vec::new(); ROIS.len()];
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let v: Vec<f64> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .with_context(|| format!("{} line {}", path.display(), i + 1))?;
        ensure!(
            v.len() == ROIS.len(),
            "{} line {}: 6 ROIs expected",
            path.display(),
            i + 1
        );
        for (c, x) in v.into_iter().enumerate() {
            ensure!(
                x.is_finite(),
                "{} line {}: not finite",
                path.display(),
                i + 1
            );
            columns[c].push(x);
        }
    }
    ensure!(
        columns[0].len() == VOLUMES,
        "{}: {} volumes, expected the first half ({VOLUMES})",
        path.display(),
        columns[0].len()
    );
    for c in &mut columns {
        crate::grounding::zscore(c);
    }
    Ok(columns)
}

fn targets_of(columns: &[Vec<f64>]) -> Targets {
    Targets {
        columns: ROIS
            .iter()
            .map(|(name, _, network)| {
                let n = NETWORKS.iter().position(|x| x == network).unwrap_or(0);
                ((*name).to_owned(), n)
            })
            .collect(),
        spans: (0..VOLUMES)
            .map(|i| (PAD_SECONDS + TR_SECONDS * i, TR_SECONDS))
            .collect(),
        values: (0..VOLUMES)
            .map(|t| columns.iter().map(|c| c[t]).collect())
            .collect(),
    }
}

/// The group-average targets (mean of the subjects' z-scored series), each subject's, and the
/// subjects left out with why. A subject whose time courses are constant in every ROI carries
/// no signal and is left out (in the released set, `s33-timecourses.txt` is all zeros: counted,
/// it pulled the leave-one-out ceiling down by a twenty-eighth).
///
/// # Errors
/// Missing or malformed time courses.
pub fn targets(data: &Path) -> anyhow::Result<(Targets, Vec<Targets>, Vec<String>)> {
    let dir = data.join(TIMECOURSES);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("-timecourses.txt"))
        .collect();
    files.sort();
    ensure!(files.len() >= 3, "{}: fewer than 3 subjects", dir.display());
    let mut subjects: Vec<Vec<Vec<f64>>> = Vec::new();
    let mut excluded = Vec::new();
    for path in &files {
        let series = subject_series(path)?;
        // z-scoring leaves a constant column all zeros.
        if series.iter().all(|c| c.iter().all(|x| *x == 0.0)) {
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            excluded.push(format!("{name}: constant in every ROI (no signal)"));
        } else {
            subjects.push(series);
        }
    }
    ensure!(
        subjects.len() >= 3,
        "{}: fewer than 3 subjects with signal",
        dir.display()
    );
    let group: Vec<Vec<f64>> = (0..ROIS.len())
        .map(|c| {
            (0..VOLUMES)
                .map(|t| subjects.iter().map(|s| s[c][t]).sum::<f64>() / subjects.len() as f64)
                .collect()
        })
        .collect();
    Ok((
        targets_of(&group),
        subjects.iter().map(|s| targets_of(s)).collect(),
        excluded,
    ))
}

/// The authors' own predictors, `sNN-rate.txt` (word rate) and `sNN-sndpwr.txt` (sound power),
/// scored against the group targets: each subject's series z-scored, averaged over the subjects
/// the targets hold (those not in `excluded`, whose entries start with the time-course file
/// name), and correlated with each ROI, with the same interval and null as the model's mean.
///
/// Why: our word rate and loudness are computed from a stimulus proxy built from the word
/// alignment; the authors computed theirs from the real audio. Their figures say how much of a
/// baseline's r is the proxy's.
///
/// # Errors
/// Missing or malformed predictor files.
pub fn authors_regressors(
    data: &Path,
    group: &Targets,
    excluded: &[String],
) -> anyhow::Result<Vec<super::evaluate::AuthorsRegressor>> {
    let dir = data.join(TIMECOURSES);
    let mut ids: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix("-timecourses.txt")?.to_owned();
            (!excluded.iter().any(|x| x.starts_with(&name))).then_some(id)
        })
        .collect();
    ids.sort();
    let alice = data.join("alice-brennan2016");
    let mut out = Vec::new();
    for name in ["rate", "sndpwr"] {
        let mut mean = vec![0f64; VOLUMES];
        for id in &ids {
            let path = alice.join(format!("{id}-{name}.txt"));
            let bytes = crate::grounding::read_bounded(&path, MAX_TIMECOURSE_BYTES)?;
            let text = String::from_utf8(bytes).with_context(|| path.display().to_string())?;
            let mut v: Vec<f64> = text
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .with_context(|| path.display().to_string())?;
            ensure!(
                v.len() == VOLUMES && v.iter().all(|x| x.is_finite()),
                "{}: {} finite values expected, found {}",
                path.display(),
                VOLUMES,
                v.len()
            );
            crate::grounding::zscore(&mut v);
            for (m, x) in mean.iter_mut().zip(&v) {
                *m += x / ids.len() as f64;
            }
        }
        let pairs: Vec<(Vec<f64>, Vec<f64>)> = (0..group.columns.len())
            .map(|c| (mean.clone(), group.column(c)))
            .collect();
        let r: Vec<f64> = pairs
            .iter()
            .map(|(a, b)| crate::grounding::pearson(a, b))
            .collect();
        out.push(super::evaluate::AuthorsRegressor {
            name: format!("authors' {name}"),
            mean_r: r.iter().sum::<f64>() / r.len().max(1) as f64,
            r,
            uncertainty: super::evaluate::uncertainty(&pairs, super::evaluate::UNCERTAINTY_SEED),
        });
    }
    Ok(out)
}

/// Writes targets as the CSV `brainscan model eval` reads.
///
/// # Errors
/// I/O.
pub fn write_targets(path: &Path, t: &Targets) -> anyhow::Result<()> {
    let mut s = String::from("second,duration");
    for (label, n) in &t.columns {
        let _ = write!(s, ",{label}@{}", NETWORKS[*n]);
    }
    s.push('\n');
    for ((start, duration), row) in t.spans.iter().zip(&t.values) {
        let _ = write!(s, "{start},{duration}");
        for v in row {
            let _ = write!(s, ",{v}");
        }
        s.push('\n');
    }
    std::fs::write(path, s).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textgrid_words_skip_silences() {
        let grid = "item [1]:\n intervals [1]:\n xmin = 0\n xmax = 20.0\n text = \"sp\"\n intervals [2]:\n xmin = 20.0\n xmax = 20.5\n text = \"Alice\"\n";
        let w = parse_textgrid(grid).expect("parse");
        assert_eq!(
            w,
            vec![Word {
                start: 20.0,
                end: 20.5,
                text: "Alice".into()
            }]
        );
        assert!(parse_textgrid("intervals [1]:\n text = \"x\"\n").is_err());
    }

    /// Tests that read the reference data in place; `scripts/test` leaves out every
    /// `needs_shared_data::` test, with one line saying so, where the shared folder is absent.
    mod needs_shared_data {
        use super::super::{NETWORKS, ROIS};
        use crate::grounding::neurosynth;

        #[test]
        fn roi_networks_are_the_nearest_schaefer_centroids() {
            let data = crate::grounding::reference_data_dir().expect(
                "reference data not found: set BRAINSCAN_REFERENCE_DATA or put the shared folder beside the clone",
            );
            let table =
                std::fs::read_to_string(data.join(neurosynth::CENTROIDS)).expect("centroid table");
            let parcels = neurosynth::centroids(&table).expect("centroids");
            for (name, c, network) in ROIS {
                let (_, idx) = neurosynth::nearest_network(&parcels, c);
                assert_eq!(NETWORKS[idx], network, "{name}");
            }
        }
    }
}
