//! A guard on the crate's layering: no two top-level modules may depend on each other, directly
//! or through others.
//!
//! Why a test: a cycle between modules is easy to add (one `use crate::…` in the wrong place)
//! and hard to see in review. Two had grown: `app`, `pipeline`, `queue`, `webhooks` and `api`
//! were one tangle until the job kinds moved to `jobs` and the body cache to `body_cache`; and
//! `inference` read `grounding`'s profile table and shipped figures while `grounding` ran the
//! model, until those moved to `inference::profiles` and `inference::shipped_evaluation`.
//! The graph is read from the source text: every `crate::name` outside comments and before a
//! file's `#[cfg(test)] mod tests` (this crate keeps that module last in a file, so code after
//! it is not read), with `name` a top-level module of this crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module name → the top-level modules its code names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(src).expect("src") {
        let path = entry.expect("entry").path();
        let stem = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        if path.is_dir() || path.extension().is_some_and(|e| e == "rs") {
            modules.insert(stem);
        }
    }
    modules.remove("lib");
    modules.remove("main");
    let crate_path = regex::Regex::new(r"crate::([a-z_0-9]+)").expect("regex");
    let grouped = regex::Regex::new(r"crate::\{([^}]*)\}").expect("regex");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = vec![src.to_path_buf()];
    while let Some(dir) = files.pop() {
        for entry in std::fs::read_dir(&dir).expect("dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                files.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src");
            let first = rel.components().next().expect("component");
            let top = Path::new(first.as_os_str())
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            if !modules.contains(&top) {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source");
            let text = text
                .split("#[cfg(test)]\nmod tests")
                .next()
                .unwrap_or_default();
            let code: String = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n");
            let mut named: Vec<String> = crate_path
                .captures_iter(&code)
                .map(|c| c[1].to_owned())
                .collect();
            for group in grouped.captures_iter(&code) {
                named.extend(
                    group[1]
                        .split(',')
                        .filter_map(|item| item.trim().split("::").next())
                        .map(str::to_owned),
                );
            }
            let deps = graph.entry(top.clone()).or_default();
            deps.extend(
                named
                    .into_iter()
                    .filter(|m| modules.contains(m) && *m != top),
            );
        }
    }
    graph
}

/// The strongly connected components of more than one module (Tarjan), each sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("low");
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("low");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let at = self.stack.iter().rposition(|m| *m == v).expect("on stack");
                let mut component: Vec<String> =
                    self.stack.drain(at..).map(str::to_owned).collect();
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn top_level_modules_form_no_cycle() {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    // The graph must have been read: the job runner names the jobs and the pipeline.
    assert!(graph["queue"].contains("jobs") && graph["queue"].contains("pipeline"));
    let mut report = String::new();
    for cycle in cycles(&graph) {
        report.push_str(&format!("\n{}:", cycle.join(" ↔ ")));
        for m in &cycle {
            let inside: Vec<&String> = graph[m].iter().filter(|d| cycle.contains(d)).collect();
            report.push_str(&format!("\n  {m} uses {inside:?}"));
        }
    }
    assert!(
        report.is_empty(),
        "modules that depend on each other:{report}"
    );
}

#[test]
fn the_cycle_finder_finds_a_cycle_through_three_modules() {
    let edge = |a: &str, b: &[&str]| (a.to_owned(), b.iter().map(|m| (*m).to_owned()).collect());
    let graph: BTreeMap<String, BTreeSet<String>> = [
        edge("app", &["store"]),
        edge("queue", &["app", "pipeline"]),
        edge("pipeline", &["webhooks"]),
        edge("webhooks", &["queue"]),
        edge("store", &[]),
    ]
    .into_iter()
    .collect();
    assert_eq!(cycles(&graph), vec![vec!["pipeline", "queue", "webhooks"]]);
}
