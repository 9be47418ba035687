//! This process's scratch folder: downloads in progress (one job folder each, see
//! [`crate::media::fetch::Downloaded`]) and renders being encoded.
//!
//! It lives in the system's temporary folder (`TMPDIR`), not in the data folder: a file that
//! ffmpeg reads must have no relative path into the database, the artifacts or the plugin
//! cache. Each process makes its own (mode 0700) and holds an exclusive lock on a file in it
//! while it runs. Processes may share a machine and a data folder, so start-up never wipes a
//! shared folder: it removes only the scratch folders whose lock nobody holds, left by a
//! process that died without cleaning up.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;

/// The prefix of every process's scratch folder name.
const PREFIX: &str = "brainscan-scratch-";
/// The lock file each live process holds inside its folder.
const LOCK: &str = ".lock";
/// A folder without a lock file is being made right now, or was left by a process that died
/// between making it and locking it: only the latter is this old.
const UNLOCKED_GRACE: Duration = Duration::from_secs(600);

/// A process's scratch folder, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    folder: TempDir,
    /// Held (locked) for the life of the process; released by the kernel if it dies.
    _lock: File,
}

impl Scratch {
    /// Removes the scratch folders that dead processes left in `parent`, then makes and locks
    /// this process's own.
    ///
    /// # Errors
    /// When the folder or its lock file cannot be made.
    pub fn create_in(parent: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(parent)?;
        let removed = remove_orphans(parent);
        if removed > 0 {
            tracing::info!(
                removed,
                "removed scratch folders left by processes that stopped"
            );
        }
        let folder = tempfile::Builder::new().prefix(PREFIX).tempdir_in(parent)?;
        let lock = File::create_new(folder.path().join(LOCK))?;
        lock.lock()?;
        Ok(Self {
            folder,
            _lock: lock,
        })
    }

    /// In the system's temporary folder (`TMPDIR`, else `/tmp`).
    ///
    /// # Errors
    /// As [`Scratch::create_in`].
    pub fn create() -> std::io::Result<Self> {
        Self::create_in(&std::env::temp_dir())
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        self.folder.path()
    }
}

/// Removes each scratch folder in `parent` that no live process holds; returns how many.
fn remove_orphans(parent: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
        // Never follow a link planted under the prefix.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|dir| is_orphaned(dir))
        .filter(|dir| std::fs::remove_dir_all(dir).is_ok())
        .count()
}

/// Whether nobody holds `dir`'s lock: the lock can be taken, or there is no lock file and
/// the folder is older than [`UNLOCKED_GRACE`].
fn is_orphaned(dir: &Path) -> bool {
    match File::open(dir.join(LOCK)) {
        Ok(file) => match file.try_lock() {
            Ok(()) => true,
            Err(TryLockError::WouldBlock) => false,
            Err(TryLockError::Error(_)) => false,
        },
        Err(_) => std::fs::metadata(dir)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > UNLOCKED_GRACE),
    }
}

/// The scratch folders in `parent` (for tests and operators' checks).
#[must_use]
pub fn folders_in(parent: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(parent)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live process's folder survives another's start; a dead one's (its lock released, as
    /// the kernel does when a process dies) is removed.
    #[test]
    fn start_up_removes_only_the_folders_of_stopped_processes() {
        let parent = tempfile::tempdir().expect("tempdir");
        let live = Scratch::create_in(parent.path()).expect("live");
        std::fs::write(live.path().join("download"), b"x").expect("write");
        let dead = Scratch::create_in(parent.path()).expect("dead");
        let dead_path = dead.path().to_path_buf();
        // Dropping the lock without the folder: a process that died.
        let Scratch { folder, _lock } = dead;
        let kept = folder.keep();
        drop(_lock);
        assert_eq!(kept, dead_path);
        // A folder made by hand with no lock and a fresh time: being made, so kept.
        let young = parent.path().join(format!("{PREFIX}young"));
        std::fs::create_dir(&young).expect("mkdir");
        // Not a scratch folder at all: never touched.
        let other = parent.path().join("someone-else");
        std::fs::create_dir(&other).expect("mkdir");

        let third = Scratch::create_in(parent.path()).expect("third");
        assert!(
            !dead_path.exists(),
            "the stopped process's folder is removed"
        );
        assert!(
            live.path().join("download").exists(),
            "a live folder is kept"
        );
        assert!(young.exists() && other.exists());
        assert_eq!(folders_in(parent.path()).len(), 3, "live, young, third");
        drop(third);
        drop(live);
    }
}
