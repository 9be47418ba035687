//! The docs stay true to the code: every relative link in `README.md` and `docs/` resolves,
//! every `brainscan …` command line in them parses (each subcommand exists and its `--help`
//! names every flag the line uses), and the `BRAINSCAN_*` settings they name are the ones the
//! configuration reads, and the other way round. A stale line fails here, not in a reader's
//! shell.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::BIN;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `README.md` and every Markdown file in `docs/`, with their text.
fn documents() -> Vec<(PathBuf, String)> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read");
            (p, text)
        })
        .collect()
}

/// The code in a Markdown text: fenced blocks line by line, and inline code spans.
fn code(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            out.push(line.to_owned());
        } else {
            out.extend(
                line.split('`')
                    .enumerate()
                    .filter(|(i, _)| i % 2 == 1)
                    .map(|(_, s)| s.to_owned()),
            );
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").expect("regex");
    let mut broken = Vec::new();
    let mut checked = 0;
    for (path, text) in documents() {
        let dir = path.parent().expect("parent");
        for c in link.captures_iter(&text) {
            let target = &c[1];
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
                || target.starts_with('#')
            {
                continue;
            }
            let file = target.split('#').next().unwrap_or_default();
            checked += 1;
            if !dir.join(file).exists() {
                broken.push(format!("{}: {target}", path.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} relative links found");
    assert!(
        broken.is_empty(),
        "links that resolve to nothing: {broken:#?}"
    );
}

/// `brainscan WORDS --help`, cached; `None` when WORDS is not a subcommand path.
fn help(cache: &mut BTreeMap<Vec<String>, Option<String>>, words: &[String]) -> Option<String> {
    cache
        .entry(words.to_vec())
        .or_insert_with(|| {
            let out = Command::new(BIN)
                .args(words)
                .arg("--help")
                .env_remove("BRAINSCAN_MODEL_DIR")
                .output()
                .expect("brainscan runs");
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .clone()
}

#[test]
fn every_command_line_in_the_docs_parses() {
    let word = regex::Regex::new(r"^[a-z][a-z0-9-]*$").expect("regex");
    let mut cache = BTreeMap::new();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (path, text) in documents() {
        for snippet in code(&text) {
            // One command per line; a `|` separates alternatives and a `#` starts a comment.
            for line in snippet.lines() {
                let line = line.trim().trim_start_matches("$ ");
                let Some(rest) = line.strip_prefix("brainscan ") else {
                    continue;
                };
                let command = rest.split(['|', '#']).next().unwrap_or_default();
                let tokens: Vec<&str> = command.split_whitespace().collect();
                // The subcommand path: each word that extends it to a command `--help`
                // accepts. Other tokens are flags, their values and positional arguments
                // (`admin --data-dir data org create my-team`).
                let mut words: Vec<String> = Vec::new();
                let mut usage = String::new();
                for t in &tokens {
                    if !word.is_match(t) {
                        continue;
                    }
                    let mut next = words.clone();
                    next.push((*t).to_owned());
                    if let Some(text) = help(&mut cache, &next) {
                        usage.push_str(&text);
                        words = next;
                    }
                }
                if words.is_empty() {
                    problems.push(format!("{}: `{line}`: no subcommand", path.display()));
                    continue;
                }
                checked += 1;
                for t in tokens {
                    if let Some(flag) = t.strip_prefix("--") {
                        let flag = flag
                            .split('=')
                            .next()
                            .unwrap_or_default()
                            .trim_end_matches([']', ')', ',', '.', '`']);
                        if flag.is_empty() || flag == "help" {
                            continue;
                        }
                        if !usage.contains(&format!("--{flag}")) {
                            problems.push(format!(
                                "{}: `{line}`: no --{flag} in `brainscan {} --help` or its parents",
                                path.display(),
                                words.join(" ")
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} command lines found");
    assert!(problems.is_empty(), "{problems:#?}");
}

/// `BRAINSCAN_*` names in a text.
fn names(text: &str) -> BTreeSet<String> {
    regex::Regex::new(r"BRAINSCAN_[A-Z0-9_]*[A-Z0-9]")
        .expect("regex")
        .find_iter(text)
        .map(|m| m.as_str().to_owned())
        .collect()
}

/// Every file under `dir` (recursively) with one of `extensions`.
fn sources(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(sources(&path, extensions));
        } else if path
            .extension()
            .is_some_and(|e| extensions.iter().any(|x| e == *x))
            || extensions.is_empty()
        {
            out.push(path);
        }
    }
    out
}

#[test]
fn the_settings_in_the_docs_are_the_settings_the_code_reads() {
    // What the service's configuration reads: every `env = "BRAINSCAN_…"` of its flags.
    let setting = regex::Regex::new(r#"env = "(BRAINSCAN_[A-Z0-9_]+)""#).expect("regex");
    let mut configured = BTreeSet::new();
    for file in sources(&root().join("host/src"), &["rs"]) {
        let text = std::fs::read_to_string(&file).expect("read");
        configured.extend(setting.captures_iter(&text).map(|c| c[1].to_owned()));
    }
    assert!(configured.len() > 40, "{configured:?}");
    // Everything the code, the build, the scripts and the tests read, for the other direction.
    let mut read = configured.clone();
    for (dir, ext) in [
        ("host", &["rs"][..]),
        ("scripts", &[][..]),
        ("tests", &["rs", "py", "sh"][..]),
        ("plugins", &["rs"][..]),
    ] {
        for file in sources(&root().join(dir), ext) {
            if let Ok(text) = std::fs::read_to_string(&file) {
                read.extend(names(&text));
            }
        }
    }
    let mut documented = BTreeSet::new();
    for (_, text) in documents() {
        documented.extend(names(&text));
    }
    let unknown: Vec<_> = documented.difference(&read).collect();
    assert!(
        unknown.is_empty(),
        "the docs name settings nothing reads: {unknown:?}"
    );
    let undocumented: Vec<_> = configured.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "settings the service reads that no doc names: {undocumented:?}"
    );
}
