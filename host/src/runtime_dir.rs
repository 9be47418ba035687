//! A private runtime folder for Mesa and wgpu when the environment has none.
//!
//! Mesa's software rasteriser (lavapipe) and its window-system loaders look for
//! `XDG_RUNTIME_DIR` and print "XDG_RUNTIME_DIR is invalid or not set" to stderr when it is
//! missing or not a private folder. A login session sets it; a container, a cron job or
//! `ssh host brainscan scan clip.mp4` often does not, and a command whose output is the result
//! should print nothing else. The binary therefore points it at a folder of its own, readable
//! only by the user, before any thread starts (the variable is process-wide state).

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Whether `dir` is what the XDG base-directory spec asks of a runtime folder: a folder owned
/// by this user with no access for group or others.
fn is_private(dir: &Path, uid: u32) -> bool {
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o077 == 0)
}

/// This process's user id, read from `/proc/self` (no `libc` call needed).
fn current_uid() -> Option<u32> {
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

/// The private folder to use under `tmp` for user `uid`: created with mode 0700 when missing,
/// `None` when it exists but is not private (someone else made it), so it is never trusted.
fn private_folder(tmp: &Path, uid: u32) -> Option<PathBuf> {
    let dir = tmp.join(format!("brainscan-runtime-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    is_private(&dir, uid).then_some(dir)
}

/// Sets `XDG_RUNTIME_DIR` to a private folder when it is unset or not a private folder of this
/// user. Leaves a valid one alone, and leaves the environment as it is when no private folder
/// can be made (Mesa then warns, as it would have).
///
/// Call it first thing in `main`, before the async runtime or any other thread starts.
#[allow(unsafe_code)] // `set_var` is unsafe in edition 2024; see the SAFETY note.
pub fn ensure() {
    let Some(uid) = current_uid() else { return };
    let valid = std::env::var_os("XDG_RUNTIME_DIR")
        .is_some_and(|d| !d.is_empty() && is_private(Path::new(&d), uid));
    if valid {
        return;
    }
    if let Some(dir) = private_folder(&std::env::temp_dir(), uid) {
        // SAFETY: called from `main` before the runtime starts, so no other thread reads or
        // writes the environment concurrently.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", dir) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_folder_is_made_once_and_a_shared_one_is_refused() {
        let uid = current_uid().expect("/proc/self");
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = private_folder(tmp.path(), uid).expect("made");
        assert_eq!(
            std::fs::metadata(&dir)
                .expect("exists")
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        assert_eq!(private_folder(tmp.path(), uid), Some(dir.clone()));
        // Someone opened it to the group: not private any more, never used.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).expect("chmod");
        assert!(!is_private(&dir, uid));
        assert_eq!(private_folder(tmp.path(), uid), None);
        assert!(!is_private(&tmp.path().join("missing"), uid));
    }
}
