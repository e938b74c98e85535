//! The cross-process write lock, `.scriptorium/write.lock` (see `docs/format.md#runtime-files`
//! and `ARCHITECTURE.md#concurrency`).
//!
//! An exclusive `flock` (std's `File::try_lock`, which interoperates with fs4 and Python's
//! `fcntl.flock`), polled until the caller's deadline. A killed holder releases it at once.
//! `flock` belongs to the open file description, so two threads of one process exclude each
//! other exactly like two processes do.
//!
//! Not re-entrant: the guard is private to this crate and every public operation takes and
//! releases it within one call, so no caller can hold it while asking for it again.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How long to wait for the lock and how often to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockTimeout {
    /// Give up after this long (`Duration::ZERO`: one attempt).
    pub timeout: Duration,
    /// Sleep between attempts.
    pub poll: Duration,
}

impl LockTimeout {
    /// The default: 10 s, polled every 50 ms.
    pub const DEFAULT: LockTimeout =
        LockTimeout { timeout: Duration::from_secs(10), poll: Duration::from_millis(50) };

    /// `timeout`, polled every 50 ms (the background writer uses 1 s).
    pub fn new(timeout: Duration) -> Self {
        LockTimeout { timeout, poll: Duration::from_millis(50) }
    }
}

impl Default for LockTimeout {
    fn default() -> Self {
        LockTimeout::DEFAULT
    }
}

/// The held lock; released when dropped (closing the file releases the `flock`).
#[derive(Debug)]
pub(crate) struct WriteLock {
    _file: File,
}

/// Takes the lock at `path` (created 0600), polling until `timeout` → [`Error::Busy`].
#[expect(
    clippy::disallowed_methods,
    reason = "a flock is taken on an open File; the lock file holds no data"
)]
pub(crate) fn acquire(path: &Path, timeout: LockTimeout) -> Result<WriteLock> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or(0))
        .open(path)
        .map_err(Error::io("open lock", path))?;
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(WriteLock { _file: file }),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(source)) => {
                return Err(Error::Io { op: "flock", path: path.to_path_buf(), source });
            }
        }
        let waited = start.elapsed();
        if waited >= timeout.timeout {
            return Err(Error::Busy { lock: PathBuf::from(path), waited });
        }
        thread::sleep(timeout.poll.min(timeout.timeout - waited).max(Duration::from_millis(1)));
    }
}

/// An exclusive `flock` held on a stage directory itself for as long as the value lives: marks
/// the stage as owned by a live process (recovery removes only stages whose lock it can take).
/// Locking the directory rather than a file in it spares every transaction a new inode.
#[derive(Debug)]
pub(crate) struct OwnerLock {
    _dir: File,
}

/// The owner lock file of stages made by earlier versions (see [`OwnerLock::is_held`]).
const LEGACY_OWNER_LOCK: &str = "owner.lock";

impl OwnerLock {
    /// Locks the stage directory `dir`; fails if someone else holds it.
    pub(crate) fn take(dir: &Path) -> Result<OwnerLock> {
        let file = open_dir(dir).map_err(Error::io("open stage", dir))?;
        file.try_lock().map_err(|e| Error::Io {
            op: "flock owner",
            path: dir.to_path_buf(),
            source: match e {
                TryLockError::Error(source) => source,
                TryLockError::WouldBlock => std::io::Error::other("owner lock held"),
            },
        })?;
        Ok(OwnerLock { _dir: file })
    }

    /// Whether a live owner holds the stage directory `dir` now: its own lock, or the
    /// `owner.lock` file in it that earlier versions locked instead (a process of such a version
    /// may still be running during an upgrade). A missing directory has no owner.
    #[expect(
        clippy::disallowed_methods,
        reason = "a flock is taken on an open file or directory; nothing is read or written"
    )]
    pub(crate) fn is_held(dir: &Path) -> bool {
        let held = |file: File| matches!(file.try_lock(), Err(TryLockError::WouldBlock));
        if open_dir(dir).is_ok_and(held) {
            return true;
        }
        OpenOptions::new().read(true).write(true).open(dir.join(LEGACY_OWNER_LOCK)).is_ok_and(held)
    }
}

/// Opens the directory `dir` (not a symlink to one) for its lock.
#[expect(clippy::disallowed_methods, reason = "only opened to be locked")]
fn open_dir(dir: &Path) -> std::io::Result<File> {
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::DIRECTORY;
    OpenOptions::new().read(true).custom_flags(i32::try_from(flags.bits()).unwrap_or(0)).open(dir)
}
