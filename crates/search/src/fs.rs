//! The file-access seam: every read of the workspace and of the index's manifest goes through
//! [`FileAccess`], so a test can count (or fail) them. tantivy's own reads of the index files
//! are memory-mapped and not routed here.

use std::io;
use std::path::{Path, PathBuf};

use scriptorium_workspace_fs::{
    Durability, FileKind, Fs as _, RealFs as WorkspaceFs, write_exchanging,
};

/// What [`FileAccess::stat`] reports about a path (without following symlinks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// A regular file (not a symlink, not a directory).
    pub is_file: bool,
    /// A directory (not a symlink).
    pub is_dir: bool,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch (0 when unknown).
    pub mtime_ns: i128,
    /// Inode number (0 where the platform has none).
    pub inode: u64,
}

/// File access as the index needs it. Implementations must not follow symlinks in `stat`.
pub trait FileAccess: Send + Sync {
    /// Metadata of `path` itself (like `symlink_metadata`); `Ok(None)` when nothing is there.
    fn stat(&self, path: &Path) -> io::Result<Option<Stat>>;
    /// The whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// The entries of a directory (full paths), in any order.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
    /// Writes `bytes` to `path` atomically: a temporary file beside it, then a rename; fsynced
    /// unless `synced` is false (see [`FileAccess::boot_id`]).
    fn write_atomic(&self, path: &Path, bytes: &[u8], synced: bool) -> io::Result<()>;
    /// The identity of the running boot of the machine, when the platform tells it: while it
    /// is known, the index writes without fsync and checks itself after a reboot (see the
    /// crate docs, *Durability*). `None` (the default) keeps every write synced.
    fn boot_id(&self) -> Option<String> {
        None
    }
}

/// The real filesystem, through `scriptorium-workspace-fs` (no symlink followed: `stat` is
/// `lstat`, reads open with `O_NOFOLLOW`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

impl FileAccess for RealFs {
    fn stat(&self, path: &Path) -> io::Result<Option<Stat>> {
        let meta = match WorkspaceFs.metadata(path) {
            Ok(meta) => meta,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        Ok(Some(Stat {
            is_file: meta.kind == FileKind::File,
            is_dir: meta.kind == FileKind::Dir,
            size: meta.len,
            mtime_ns: i128::from(meta.mtime_ns),
            inode: meta.ino,
        }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        WorkspaceFs.read(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(WorkspaceFs.read_dir(path)?.into_iter().map(|(name, _)| path.join(name)).collect())
    }

    /// A file beside `path` (`*.tmp`) written, then exchanged with it (it keeps the old bytes
    /// for the next write: no inode made per write; only the index's writer reads these files,
    /// see `scriptorium_workspace_fs::write_exchanging`): fsynced when `synced`, the directory
    /// never (the manifest is a cache checked when read: see
    /// `scriptorium_workspace_fs::Durability`).
    fn write_atomic(&self, path: &Path, bytes: &[u8], synced: bool) -> io::Result<()> {
        let tmp = path.with_extension("tmp");
        let durability = if synced { Durability::Cache } else { Durability::Unsynced };
        write_exchanging(&WorkspaceFs, &tmp, path, bytes, 0o600, durability).map_err(|e| e.source)
    }

    /// Linux's `/proc/sys/kernel/random/boot_id`; `None` elsewhere or when unreadable.
    fn boot_id(&self) -> Option<String> {
        scriptorium_workspace_fs::boot_id()
    }
}
