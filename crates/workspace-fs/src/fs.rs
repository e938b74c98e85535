//! The filesystem seam: every filesystem call on a memory workspace goes through [`Fs`], so
//! tests can count or fail any one of them ([`FaultFs`]).
//!
//! Architecture Invariant: no method follows a symlink. [`Fs::metadata`] is `lstat`; reads and
//! writes open with `O_NOFOLLOW`; [`Fs::remove_tree`] unlinks a symlink instead of descending.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{CWD, OFlags, RenameFlags, renameat_with};

/// What a directory entry is (never resolved through a symlink).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// Anything else: a socket, a FIFO, a device.
    Other,
}

/// The `lstat` facts the workspace uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The kind of the entry itself.
    pub kind: FileKind,
    /// Size in bytes.
    pub len: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Inode number.
    pub ino: u64,
    /// Device number.
    pub dev: u64,
    /// Permission bits (`mode & 0o7777`).
    pub mode: u32,
    /// Number of hard links (a recycled stage file must have exactly one name).
    pub nlink: u64,
}

/// The filesystem operations of the workspace. Paths are absolute or relative to the current
/// directory; none of the methods follows a symlink.
pub trait Fs: Send + Sync + fmt::Debug {
    /// `lstat`.
    fn metadata(&self, path: &Path) -> io::Result<Meta>;
    /// The entries of a directory (names and kinds, not sorted).
    fn read_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>>;
    /// The entries of a directory with the [`Fs::metadata`] of each (not sorted): the listing,
    /// then one `lstat` per entry (an entry gone in between is an error, as its `lstat` would
    /// be). The real filesystem asks relative to the open directory, which spares the kernel
    /// walking the whole path again for every entry.
    fn read_dir_meta(&self, path: &Path) -> io::Result<Vec<(OsString, Meta)>> {
        let mut out = Vec::new();
        for (name, _) in self.read_dir(path)? {
            let meta = self.metadata(&path.join(&name))?;
            out.push((name, meta));
        }
        Ok(out)
    }
    /// The whole content of a regular file (`O_NOFOLLOW`).
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// [`Fs::read`] of a file whose stat alone could not be trusted (its mtime is too close to
    /// the revision record's, so its content must be hashed). Whether such a read happens
    /// depends on timestamps, not on the operation, so [`FaultFs`] does not count it: a fault
    /// sweep must see the same sequence of calls in every run.
    fn read_to_verify(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.read(path)
    }
    /// Creates or truncates a regular file (created with `mode`) and writes `bytes`; no fsync.
    fn write(&self, path: &Path, bytes: &[u8], mode: u32) -> io::Result<()>;
    /// `fsync` of a regular file's data and metadata.
    fn sync_file(&self, path: &Path) -> io::Result<()>;
    /// `fsync` of a directory (makes its entries durable).
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// `syncfs(2)` of the filesystem holding `path`: one call that makes every file and
    /// directory written there durable (used for a whole staged tree instead of one `fsync`
    /// per entry).
    fn sync_fs(&self, path: &Path) -> io::Result<()>;
    /// `link(2)`: a new name `to` for the file `from` (never follows a symlink at `from`).
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// `mkdir` with `mode` (fails if it exists).
    fn create_dir(&self, path: &Path, mode: u32) -> io::Result<()>;
    /// `rename(2)`, replacing a file or an empty directory at `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// `renameat2(RENAME_EXCHANGE)`: atomically swaps two existing paths. Fails with `EINVAL`
    /// or `ENOSYS` where the filesystem or kernel lacks it.
    fn exchange(&self, a: &Path, b: &Path) -> io::Result<()>;
    /// `unlink` of a file or symlink.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// `rmdir` of an empty directory.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    /// Removes a directory tree; a symlink inside is unlinked, never followed.
    fn remove_tree(&self, path: &Path) -> io::Result<()>;
    /// `chmod` (`mode & 0o7777`); the caller checks first that `path` is not a symlink.
    fn set_mode(&self, path: &Path, mode: u32) -> io::Result<()>;
}

/// The [`Meta`] of an `lstat`.
fn meta_of(m: &fs::Metadata) -> Meta {
    Meta {
        kind: kind_of(m.file_type()),
        len: m.len(),
        mtime_ns: m.mtime().saturating_mul(1_000_000_000).saturating_add(m.mtime_nsec()),
        ino: m.ino(),
        dev: m.dev(),
        mode: m.mode() & 0o7777,
        nlink: m.nlink(),
    }
}

fn kind_of(file_type: fs::FileType) -> FileKind {
    if file_type.is_symlink() {
        FileKind::Symlink
    } else if file_type.is_dir() {
        FileKind::Dir
    } else if file_type.is_file() {
        FileKind::File
    } else {
        FileKind::Other
    }
}

fn nofollow() -> i32 {
    i32::try_from(OFlags::NOFOLLOW.bits()).unwrap_or(0)
}

/// Opens (creating it 0600 when missing, never truncating, never through a symlink) a file
/// that exists only to carry an `flock`: the lock is on the open file, and the file stays when
/// the lock is released, so taking a lock creates no inode after the first time.
///
/// # Errors
/// The `open` failing (a symlink at `path` is `ELOOP`).
pub fn open_lock_file(path: &Path) -> io::Result<fs::File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nofollow())
        .open(path)
}

/// The real filesystem (`std` plus `rustix` for `renameat2`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

impl Fs for RealFs {
    fn metadata(&self, path: &Path) -> io::Result<Meta> {
        Ok(meta_of(&fs::symlink_metadata(path)?))
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(path)? {
            let entry = entry?;
            out.push((entry.file_name(), kind_of(entry.file_type()?)));
        }
        Ok(out)
    }

    fn read_dir_meta(&self, path: &Path) -> io::Result<Vec<(OsString, Meta)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(path)? {
            let entry = entry?;
            // `DirEntry::metadata` is an `lstat` relative to the open directory (`statx` with
            // its descriptor and `AT_SYMLINK_NOFOLLOW` on Linux).
            out.push((entry.file_name(), meta_of(&entry.metadata()?)));
        }
        Ok(out)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut file = OpenOptions::new().read(true).custom_flags(nofollow()).open(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn write(&self, path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .custom_flags(nofollow())
            .open(path)?;
        file.write_all(bytes)
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        OpenOptions::new().read(true).custom_flags(nofollow()).open(path)?.sync_all()
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    fn sync_fs(&self, path: &Path) -> io::Result<()> {
        rustix::fs::syncfs(File::open(path)?).map_err(io::Error::from)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::hard_link(from, to)
    }

    fn create_dir(&self, path: &Path, mode: u32) -> io::Result<()> {
        fs::DirBuilder::new().mode(mode).create(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn exchange(&self, a: &Path, b: &Path) -> io::Result<()> {
        renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(io::Error::from)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }
    fn remove_tree(&self, path: &Path) -> io::Result<()> {
        // `remove_dir_all` does not follow symlinks (it unlinks them).
        fs::remove_dir_all(path)
    }

    fn set_mode(&self, path: &Path, mode: u32) -> io::Result<()> {
        fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o7777))
    }
}

/// Whether an [`Fs::exchange`] error means "this filesystem cannot exchange" (so the install
/// falls back to two renames) rather than a real failure.
pub fn exchange_unsupported(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(code) if code == rustix::io::Errno::INVAL.raw_os_error()
            || code == rustix::io::Errno::NOSYS.raw_os_error()
            || code == rustix::io::Errno::OPNOTSUPP.raw_os_error()
    )
}

/// The real filesystem without `fsync`/`syncfs` (the calls still count in a [`FaultFs`] over
/// it), for fault sweeps: durability against power loss is not what they can observe, and
/// skipping the flushes keeps hundreds of runs fast. Never for real workspaces.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSync;

impl Fs for NoSync {
    fn metadata(&self, path: &Path) -> io::Result<Meta> {
        RealFs.metadata(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        RealFs.read_dir(path)
    }
    fn read_dir_meta(&self, path: &Path) -> io::Result<Vec<(OsString, Meta)>> {
        RealFs.read_dir_meta(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealFs.read(path)
    }
    fn write(&self, path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
        RealFs.write(path, bytes, mode)
    }
    fn sync_file(&self, _: &Path) -> io::Result<()> {
        Ok(())
    }
    fn sync_dir(&self, _: &Path) -> io::Result<()> {
        Ok(())
    }
    fn sync_fs(&self, _: &Path) -> io::Result<()> {
        Ok(())
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealFs.hard_link(from, to)
    }
    fn create_dir(&self, path: &Path, mode: u32) -> io::Result<()> {
        RealFs.create_dir(path, mode)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealFs.rename(from, to)
    }
    fn exchange(&self, a: &Path, b: &Path) -> io::Result<()> {
        RealFs.exchange(a, b)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        RealFs.remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        RealFs.remove_dir(path)
    }
    fn remove_tree(&self, path: &Path) -> io::Result<()> {
        RealFs.remove_tree(path)
    }
    fn set_mode(&self, path: &Path, mode: u32) -> io::Result<()> {
        RealFs.set_mode(path, mode)
    }
}

/// A fault-injecting [`Fs`] for tests (redb's failing-IO harness): counts every call (but the
/// timing-dependent [`Fs::read_to_verify`], so that the sequence of counted calls of an
/// operation is the same in every run, however loaded the machine) and fails call number
/// `fail_at` (0-based). In *crash* mode every later call fails too, as if the
/// process had died there (no cleanup reaches the disk). It can also pretend that the filesystem
/// lacks `RENAME_EXCHANGE`, which selects the install's two-rename fallback.
#[derive(Debug)]
pub struct FaultFs {
    inner: Arc<dyn Fs>,
    calls: AtomicU64,
    fail_at: Option<u64>,
    crash: bool,
    crashed: AtomicBool,
    no_exchange: bool,
}

impl FaultFs {
    /// Counts calls and never fails (use it to learn N, the number of calls of an operation).
    pub fn counting(inner: Arc<dyn Fs>) -> Self {
        FaultFs {
            inner,
            calls: AtomicU64::new(0),
            fail_at: None,
            crash: false,
            crashed: AtomicBool::new(false),
            no_exchange: false,
        }
    }

    /// Fails only call `k` (0-based); later calls succeed (the error path runs its cleanup).
    pub fn fail_at(inner: Arc<dyn Fs>, k: u64) -> Self {
        FaultFs { fail_at: Some(k), ..FaultFs::counting(inner) }
    }

    /// Fails call `k` and every call after it (a crash at call `k`: nothing more reaches disk).
    pub fn crash_at(inner: Arc<dyn Fs>, k: u64) -> Self {
        FaultFs { fail_at: Some(k), crash: true, ..FaultFs::counting(inner) }
    }

    /// Makes [`Fs::exchange`] fail with `EINVAL`, like a filesystem without `RENAME_EXCHANGE`.
    pub fn without_exchange(mut self) -> Self {
        self.no_exchange = true;
        self
    }

    /// How many calls were made so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Whether the fault has fired.
    pub fn fired(&self) -> bool {
        self.fail_at.is_some_and(|k| self.calls() > k)
    }

    fn tick(&self, what: &str, path: &Path) -> io::Result<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if self.crashed.load(Ordering::SeqCst) {
            return Err(io::Error::other(format!("injected crash: call {n} ({what})")));
        }
        if Some(n) == self.fail_at {
            if self.crash {
                self.crashed.store(true, Ordering::SeqCst);
            }
            return Err(io::Error::other(format!(
                "injected fault: call {n} ({what} {})",
                path.display()
            )));
        }
        Ok(())
    }
}

impl Fs for FaultFs {
    fn metadata(&self, path: &Path) -> io::Result<Meta> {
        self.tick("metadata", path)?;
        self.inner.metadata(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        self.tick("read_dir", path)?;
        self.inner.read_dir(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.tick("read", path)?;
        self.inner.read(path)
    }
    fn read_to_verify(&self, path: &Path) -> io::Result<Vec<u8>> {
        // Not counted (see `Fs::read_to_verify`); it still fails after a crash.
        if self.crashed.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected crash: verify read"));
        }
        self.inner.read_to_verify(path)
    }
    fn write(&self, path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.tick("write", path)?;
        self.inner.write(path, bytes, mode)
    }
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.tick("sync_file", path)?;
        self.inner.sync_file(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.tick("sync_dir", path)?;
        self.inner.sync_dir(path)
    }
    fn sync_fs(&self, path: &Path) -> io::Result<()> {
        self.tick("sync_fs", path)?;
        self.inner.sync_fs(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.tick("hard_link", from)?;
        self.inner.hard_link(from, to)
    }
    fn create_dir(&self, path: &Path, mode: u32) -> io::Result<()> {
        self.tick("create_dir", path)?;
        self.inner.create_dir(path, mode)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.tick("rename", from)?;
        self.inner.rename(from, to)
    }
    fn exchange(&self, a: &Path, b: &Path) -> io::Result<()> {
        self.tick("exchange", a)?;
        if self.no_exchange {
            return Err(io::Error::from_raw_os_error(rustix::io::Errno::INVAL.raw_os_error()));
        }
        self.inner.exchange(a, b)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.tick("remove_file", path)?;
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.tick("remove_dir", path)?;
        self.inner.remove_dir(path)
    }
    fn remove_tree(&self, path: &Path) -> io::Result<()> {
        self.tick("remove_tree", path)?;
        self.inner.remove_tree(path)
    }
    fn set_mode(&self, path: &Path, mode: u32) -> io::Result<()> {
        self.tick("set_mode", path)?;
        self.inner.set_mode(path, mode)
    }
}

/// The running boot's identity (Linux's `/proc/sys/kernel/random/boot_id`); `None` elsewhere or
/// when unreadable. Derived state written without `fsync` records it, so that a later boot
/// (after a power loss or a kernel crash, the only events that lose page-cache writes) knows
/// to check or rebuild that state.
pub fn boot_id() -> Option<String> {
    let bytes = RealFs.read(Path::new("/proc/sys/kernel/random/boot_id")).ok()?;
    let id = String::from_utf8(bytes).ok()?.trim().to_owned();
    (!id.is_empty()).then_some(id)
}
