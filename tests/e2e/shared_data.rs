//! The shared data stays in the shared folder. Its terms (`../shared/data/README.md`) allow the
//! reference data (Neurosynth v7, the Alice fMRI set) and the real media to be used in place,
//! never committed here, whole or cut; what is derived from them may ship, with the inputs'
//! checksums. These tests fail when a tracked file is a copy of a shared file, or holds a run of
//! a shared transcript's words.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every file git tracks in this clone, as a path relative to the root.
fn tracked_files() -> Vec<PathBuf> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git ls-files (the test needs the clone's git)");
    assert!(out.status.success(), "git ls-files failed");
    out.stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .filter(|p| root().join(p).is_file())
        .collect()
}

/// Every file under `dir`, recursively.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    brainscan::inference::model::checksum(bytes)
        .trim_start_matches("sha256:")
        .to_owned()
}

/// No tracked file has the sha256 of a reference input (the committed list, so this holds in a
/// clone without the shared folder too) or of any file in the shared folder when it is beside
/// the clone; and nothing is tracked under `models/reference/`, where the old copy lived.
#[test]
fn no_tracked_file_is_a_copy_of_shared_data() {
    let list =
        std::fs::read_to_string(root().join("models/qualia/v2/grounding/reference-inputs.sha256"))
            .expect("reference-inputs.sha256");
    let mut shared: BTreeSet<(String, String)> = list
        .lines()
        .map(|l| {
            let (sum, name) = l.split_once("  ").expect("sha256sum format");
            (sum.to_owned(), name.to_owned())
        })
        .collect();
    assert!(shared.len() >= 90, "{} inputs listed", shared.len());
    let present = brainscan::grounding::shared_data_dir();
    if let Some(dir) = &present {
        for file in walk(dir) {
            let name = file
                .strip_prefix(dir)
                .expect("inside")
                .display()
                .to_string();
            shared.insert((sha256_hex(&std::fs::read(&file).expect("read")), name));
        }
    }
    let mut copies = Vec::new();
    for path in tracked_files() {
        assert!(
            !path.starts_with("models/reference"),
            "{} is under models/reference: the reference data is read in place",
            path.display()
        );
        let sum = sha256_hex(&std::fs::read(root().join(&path)).expect("read"));
        for (_, name) in shared.iter().filter(|(s, _)| *s == sum) {
            copies.push(format!("{} is a copy of shared {name}", path.display()));
        }
    }
    assert!(copies.is_empty(), "{copies:#?}");
    eprintln!(
        "checked against {} shared files ({})",
        shared.len(),
        if present.is_some() {
            "the committed input list and the shared folder"
        } else {
            "the committed input list; the shared folder is not beside this clone"
        }
    );
}

/// How many consecutive words make a "run" of a transcript: long enough that common phrases do
/// not match by chance, short enough that one copied FLEURS sentence does.
const RUN_WORDS: usize = 10;

/// Lower-case words (letters and digits) of a text, so punctuation, quoting and line breaks
/// do not hide a copy.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// No tracked text file holds [`RUN_WORDS`] consecutive words of a shared transcript: the
/// multilingual reference transcripts and the Alice word alignment. Needs the shared folder
/// (the transcripts are its text).
mod needs_shared_data {
    use super::*;

    #[test]
    fn no_tracked_file_holds_a_run_of_a_shared_transcript() {
        let dir = brainscan::grounding::shared_data_dir()
            .expect("the shared folder is not beside this clone (../shared/data)");
        let mut transcripts: Vec<(String, Vec<String>)> = Vec::new();
        let media = dir.join("media/multilingual");
        for file in walk(&media) {
            if file.extension().is_some_and(|e| e == "txt") {
                let text = std::fs::read_to_string(&file).expect("transcript");
                transcripts.push((file.display().to_string(), words(&text)));
            }
        }
        let alice = brainscan::grounding::alice::story_words(&dir).expect("TextGrid");
        let alice: String = alice
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        transcripts.push(("the Alice word alignment".into(), words(&alice)));
        assert!(transcripts.len() >= 50, "{} transcripts", transcripts.len());

        let mut runs: HashSet<String> = HashSet::new();
        for path in tracked_files() {
            let Ok(text) = std::fs::read_to_string(root().join(&path)) else {
                continue; // not text
            };
            let w = words(&text);
            for run in w.windows(RUN_WORDS) {
                runs.insert(run.join(" "));
            }
        }
        let mut found = Vec::new();
        for (name, w) in &transcripts {
            if let Some(run) = w
                .windows(RUN_WORDS)
                .map(|r| r.join(" "))
                .find(|r| runs.contains(r))
            {
                found.push(format!("{name}: \"{run}\""));
            }
        }
        assert!(
            found.is_empty(),
            "tracked files hold runs of shared transcripts: {found:#?}"
        );
    }
}
