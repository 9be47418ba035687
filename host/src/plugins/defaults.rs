//! The default plugins, built from `plugins/` for `wasm32-wasip2` by the build script and
//! embedded in the binary, so a fresh install scores scans with no plugin set-up. They are
//! installed into the registry at start (as `source = builtin`) and activated in empty slots.

/// Where the build script put every component of the `plugins/` workspace, the test kit's
/// included. Tests and `plugin test` examples read from here; the service never does.
pub const WASM_DIR: &str = env!("BRAINSCAN_PLUGIN_WASM_DIR");

macro_rules! component {
    ($file:literal) => {
        (
            $file,
            include_bytes!(concat!(env!("BRAINSCAN_PLUGIN_WASM_DIR"), "/", $file)).as_slice(),
        )
    };
}

/// The built-in lens plugin's version, from its `Cargo.toml` (the build script reads it).
pub const LENS_STANDARD_VERSION: &str = env!("BRAINSCAN_LENS_STANDARD_VERSION");
/// The built-in moments plugin's version.
pub const MOMENTS_STANDARD_VERSION: &str = env!("BRAINSCAN_MOMENTS_STANDARD_VERSION");
/// The built-in manipulation plugin's version.
pub const MANIPULATION_STANDARD_VERSION: &str = env!("BRAINSCAN_MANIPULATION_STANDARD_VERSION");
/// `lens-standard@version`, as results and the registry name it.
pub const LENS_STANDARD: &str = concat!("lens-standard@", env!("BRAINSCAN_LENS_STANDARD_VERSION"));
/// `moments-standard@version`.
pub const MOMENTS_STANDARD: &str = concat!(
    "moments-standard@",
    env!("BRAINSCAN_MOMENTS_STANDARD_VERSION")
);
/// `manipulation-standard@version`.
pub const MANIPULATION_STANDARD: &str = concat!(
    "manipulation-standard@",
    env!("BRAINSCAN_MANIPULATION_STANDARD_VERSION")
);

/// `(file name, bytes)` of each default plugin: one per slot kind.
pub const DEFAULTS: &[(&str, &[u8])] = &[
    component!("lens_standard.wasm"),
    component!("moments_standard.wasm"),
    component!("manipulation_standard.wasm"),
];

#[cfg(test)]
mod tests {
    //! A built-in's `name@version` names one build for good: the registry stores it once,
    //! results record its digest, and a deployment that already holds the version keeps its
    //! stored bytes. So a change to what a built-in is built from must come with a new version,
    //! or upgraded deployments would silently keep running the old code. This is a plumbing
    //! guard on the release process, not a test of what the plugins compute.

    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use sha2::{Digest, Sha256};

    /// Each built-in's crate folder under `plugins/`, and the shared folders it is built from.
    const BUILTINS: &[(&str, &[&str])] = &[
        ("lens-standard", &["plugins/sdk", "plugins/readouts", "wit"]),
        (
            "moments-standard",
            &["plugins/sdk", "plugins/readouts", "wit"],
        ),
        (
            "manipulation-standard",
            &["plugins/sdk", "plugins/readouts", "wit"],
        ),
    ];

    /// `name<TAB>version<TAB>sha256` for every version ever released (append only).
    const PINS: &str = "plugins/builtin-versions.tsv";

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("repo root")
            .to_path_buf()
    }

    fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                files_under(&path, out);
            } else if path.extension().is_none_or(|x| x != "md") {
                out.push(path);
            }
        }
    }

    /// The sha256 of the folders' files (paths and contents, READMEs left out) with whole-line
    /// comments and blank lines dropped, so a comment edit does not demand a release.
    fn inputs_digest(folders: &[String]) -> String {
        let root = repo();
        let mut files = Vec::new();
        for folder in folders {
            files_under(&root.join(folder), &mut files);
        }
        let mut hash = Sha256::new();
        for file in files {
            let rel = file.strip_prefix(&root).expect("under the repo");
            hash.update(rel.to_string_lossy().replace('\\', "/").as_bytes());
            hash.update([0]);
            let bytes = std::fs::read(&file).expect("read");
            match std::str::from_utf8(&bytes) {
                Ok(text) => {
                    for line in text.lines() {
                        let trimmed = line.trim();
                        if trimmed.is_empty() || trimmed.starts_with("//") {
                            continue;
                        }
                        hash.update(trimmed.as_bytes());
                        hash.update([b'\n']);
                    }
                }
                Err(_) => hash.update(&bytes),
            }
            hash.update([0]);
        }
        format!("{:x}", hash.finalize())
    }

    fn crate_version(folder: &Path) -> String {
        let manifest = std::fs::read_to_string(folder.join("Cargo.toml")).expect("Cargo.toml");
        manifest
            .lines()
            .find_map(|l| {
                let (key, value) = l.split_once('=')?;
                (key.trim() == "version").then(|| value.trim().trim_matches('"').to_owned())
            })
            .expect("a version in [package]")
    }

    #[test]
    fn builtin_versions_follow_their_inputs() {
        let pins_text = std::fs::read_to_string(repo().join(PINS)).expect(PINS);
        let mut pins: BTreeMap<(String, String), String> = BTreeMap::new();
        for line in pins_text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 3, "{PINS}: {line:?}");
            let key = (cols[0].to_owned(), cols[1].to_owned());
            assert!(
                pins.insert(key, cols[2].to_owned()).is_none(),
                "{PINS}: {}@{} pinned twice; a version names one build",
                cols[0],
                cols[1]
            );
        }
        for (name, shared) in BUILTINS {
            let folder = format!("plugins/{name}");
            let version = crate_version(&repo().join(&folder));
            let mut folders = vec![folder.clone()];
            folders.extend(shared.iter().map(|s| (*s).to_owned()));
            let digest = inputs_digest(&folders);
            match pins.get(&((*name).to_owned(), version.clone())) {
                Some(pinned) => assert_eq!(
                    pinned, &digest,
                    "{name}@{version} is built from other inputs than when it was pinned. Give it \
                     a new version in {folder}/Cargo.toml, then add to {PINS}:\n{name}\t<new \
                     version>\t<the digest this test prints then>"
                ),
                None => panic!(
                    "{name}@{version} is not pinned: after checking it is a new version, add to \
                     {PINS}:\n{name}\t{version}\t{digest}"
                ),
            }
        }
    }
}
