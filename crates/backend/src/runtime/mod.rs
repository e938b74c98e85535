//! Runtime services: the idle-session watcher ([`watcher`]), the nightly reorganize
//! ([`nightly`]) and the writer status file ([`status`]).
//!
//! Key decision: every service is a synchronous, testable core (a scan, a schedule, a status
//! update) driven by a thin tokio loop that runs the core on `spawn_blocking` and watches a
//! `tokio::sync::watch::Receiver<bool>` for shutdown. The small state files these services own
//! (`.scriptorium/session-end.json`, `.scriptorium/writer-status.json`) live outside the
//! transaction and are saved atomically with the transaction engine's discipline: a private
//! temporary file in the same directory, fsync, mode 0600, rename, fsync of the directory. A
//! failed save removes its temporary and leaves the old file untouched; temporaries a crash left
//! behind are removed by the next save made under the same lock.
//!
//! # Limitations
//!
//! - A shutdown signal that arrives during a watcher scan takes effect at the next session
//!   boundary, so a model call is never abandoned with its outcome unsaved; one that arrives
//!   during a reorganize returns at once and leaves the reorganize to finish on its blocking
//!   thread (its transaction installs whole or not at all).
//! - The nightly schedule uses one fixed UTC offset, given at start: a daylight-saving change
//!   shifts the run by an hour until the service is restarted.

pub mod nightly;
pub mod status;
pub mod watcher;

pub use nightly::{local_offset, next_run, run_nightly};
pub use status::{LastFailure, Outcome, SessionWrite, StatusError, WriterStatus};
pub use watcher::{
    ScanReport, SessionWriter, Watcher, WatcherConfig, WatcherStateError, run_watcher,
};

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The directory, under a memory root, that holds the runtime state files.
pub(crate) const STATE_DIR: &str = ".scriptorium";

/// A step of an atomic save, for fault injection in tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SaveStep {
    /// The temporary file was written.
    Written,
    /// The temporary file was fsynced and its mode set.
    Synced,
}

/// Distinguishes the temporaries of concurrent saves within one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The prefix of every temporary of `target` (`.<name>.tmp-`).
fn temp_prefix(target: &Path) -> String {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}.tmp-")
}

/// Writes `bytes` to `target` atomically: temporary, fsync, mode 0600, rename, fsync directory.
pub(crate) fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(target, bytes, &mut |_| Ok(()))
}

/// [`write_atomic`] with a hook called after each step; an error from the hook aborts the save
/// as if the step had failed.
pub(crate) fn write_atomic_with(
    target: &Path,
    bytes: &[u8],
    hook: &mut dyn FnMut(SaveStep) -> io::Result<()>,
) -> io::Result<()> {
    let dir = parent_dir(target);
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!("{}{}-{n}", temp_prefix(target), std::process::id()));
    let result = write_and_rename(&tmp, target, bytes, hook);
    if let Err(e) = result {
        // Best effort: the original error is the one worth reporting.
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    File::open(dir)?.sync_all()
}

fn write_and_rename(
    tmp: &Path,
    target: &Path,
    bytes: &[u8],
    hook: &mut dyn FnMut(SaveStep) -> io::Result<()>,
) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(tmp)?;
    file.write_all(bytes)?;
    hook(SaveStep::Written)?;
    file.sync_all()?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    hook(SaveStep::Synced)?;
    std::fs::rename(tmp, target)
}

/// The directory holding `target` (`.` for a bare name).
fn parent_dir(target: &Path) -> &Path {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Removes the temporaries of `target` that an interrupted save left behind. Call it only while
/// holding the lock every saver of `target` holds, so no live save is disturbed. Best effort.
pub(crate) fn remove_stale_temporaries(target: &Path) {
    let prefix = temp_prefix(target);
    let Ok(entries) = std::fs::read_dir(parent_dir(target)) else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Creates `dir` (and its parents) with mode 0700 if it is missing.
pub(crate) fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(test)]
mod tests {
    use scriptorium_testkit::file_names;

    use super::*;

    #[test]
    fn atomic_save_replaces_the_file_with_mode_0600_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("state.json");
        std::fs::write(&target, b"old").unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(file_names(dir.path()), ["state.json"]);
    }

    #[test]
    fn interrupted_save_leaves_the_old_file_and_no_temporary() {
        for failing in [SaveStep::Written, SaveStep::Synced] {
            let dir = tempfile::tempdir().unwrap();
            let target = dir.path().join("state.json");
            std::fs::write(&target, b"old bytes").unwrap();
            let mut hook = |step: SaveStep| {
                if step == failing { Err(io::Error::other("disk gone")) } else { Ok(()) }
            };
            let err = write_atomic_with(&target, b"new bytes", &mut hook).unwrap_err();
            assert_eq!(err.to_string(), "disk gone");
            assert_eq!(std::fs::read(&target).unwrap(), b"old bytes", "at {failing:?}");
            assert_eq!(file_names(dir.path()), ["state.json"], "at {failing:?}");
        }
    }

    #[test]
    fn stale_temporaries_of_a_crashed_save_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("state.json");
        std::fs::write(dir.path().join(".state.json.tmp-999-0"), b"torn").unwrap();
        std::fs::write(dir.path().join(".other.json.tmp-999-0"), b"not ours").unwrap();
        std::fs::write(&target, b"old").unwrap();
        remove_stale_temporaries(&target);
        assert_eq!(file_names(dir.path()), [".other.json.tmp-999-0", "state.json"]);
    }
}
