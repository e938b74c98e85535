//! The file-access seam: every read of the workspace and of the index's manifest goes through
//! [`FileAccess`], so a test can count (or fail) them. tantivy's own reads of the index files
//! are memory-mapped and not routed here.

use std::io;
use std::path::{Path, PathBuf};

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
    /// Writes `bytes` to `path` atomically: a temporary file beside it, then a rename.
    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
}

/// The real filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

impl FileAccess for RealFs {
    fn stat(&self, path: &Path) -> io::Result<Option<Stat>> {
        let meta = match std::fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(0));
        Ok(Some(Stat {
            is_file: meta.file_type().is_file(),
            is_dir: meta.file_type().is_dir(),
            size: meta.len(),
            mtime_ns,
            inode: inode(&meta),
        }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::read_dir(path)?.map(|entry| entry.map(|e| e.path())).collect()
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let tmp = path.with_extension("tmp");
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        drop(file);
        std::fs::rename(&tmp, path)
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}
