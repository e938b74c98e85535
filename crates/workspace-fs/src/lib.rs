//! The one way to the bytes of a memory workspace.
//!
//! Every crate that reads or writes under `memory/` does it through this crate:
//!
//! - [`fs`]: the [`Fs`] seam (`lstat`, `O_NOFOLLOW` reads and writes, fsyncs, `renameat2`) with
//!   the real filesystem ([`RealFs`]), one without flushes for fault sweeps ([`NoSync`]) and a
//!   fault-injecting one ([`FaultFs`]);
//! - [`walk()`] and [`walk_where`]: the one tree walk (sorted, never through a symlink);
//! - [`read`]: the one reader of a workspace-relative path that refuses a symlink anywhere on
//!   the way, and [`read::FsSources`] / [`read::read_topics`], how a parse gets `sources/` and
//!   `topics/`;
//! - [`write_atomic`]: the one temporary-then-rename write;
//! - [`layout`]: where everything lives ([`Layout`]) and which paths are internal
//!   ([`is_internal_path`], see `docs/format.md#internal-paths`).
//!
//! **Architecture Invariant:** nothing here follows a symlink. A caller that needs to read a
//! file a person may have replaced by a link gets a refusal, never the link's target.
//!
//! # Example
//!
//! ```
//! use scriptorium_workspace_fs::read::{ReadError, read_in};
//! use scriptorium_workspace_fs::{
//!     Durability, FileKind, Layout, RealFs, create_dir_all, walk, write_atomic,
//! };
//!
//! let dir = tempfile::tempdir()?;
//! let layout = Layout::new(dir.path());
//! create_dir_all(&RealFs, &layout.topics, 0o755)?;
//! let (temp, target) = (layout.topics.join(".garden.md.tmp"), layout.topics.join("garden.md"));
//! write_atomic(&RealFs, &temp, &target, b"# Garden\n", 0o644, Durability::Durable)?;
//! assert_eq!(read_in(&RealFs, dir.path(), "topics/garden.md")?, b"# Garden\n");
//!
//! // A symlink anywhere on the way is refused, never followed; the walk reports it as one.
//! std::os::unix::fs::symlink(&layout.topics, dir.path().join("elsewhere"))?;
//! let refused = read_in(&RealFs, dir.path(), "elsewhere/garden.md").unwrap_err();
//! assert!(matches!(refused, ReadError::Symlink { .. }), "{refused}");
//! let kinds: Vec<(String, FileKind)> =
//!     walk(&RealFs, dir.path())?.into_iter().map(|e| (e.rel, e.kind)).collect();
//! assert_eq!(kinds, [
//!     ("elsewhere".to_owned(), FileKind::Symlink),
//!     ("topics".to_owned(), FileKind::Dir),
//!     ("topics/garden.md".to_owned(), FileKind::File),
//! ]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod fs;
pub mod layout;
pub mod read;
pub mod walk;

mod atomic;

pub use atomic::{Durability, write_atomic, write_exchanging};
pub use fs::{
    FaultFs, FileKind, Fs, Meta, NoSync, RealFs, boot_id, exchange_unsupported, open_lock_file,
};
pub use layout::{Layout, is_internal_path, is_runtime_name};
pub use walk::{Entry, walk, walk_meta, walk_where};

use std::io;
use std::path::{Path, PathBuf};

/// A filesystem call that failed: which call, on which path, and why.
#[derive(Debug, thiserror::Error)]
#[error("{op} {}: {source}", path.display())]
pub struct Error {
    /// The call (`read_dir`, `write`, `fsync`, `rename`, …).
    pub op: &'static str,
    /// The path it was about.
    pub path: PathBuf,
    /// The underlying error.
    #[source]
    pub source: io::Error,
}

/// Creates `dir` and its missing parents with `mode` (never through a symlink: a link on the
/// way is an error, as `mkdir` under it would follow it). No fsync.
///
/// # Errors
/// The first `mkdir` that fails for another reason than the directory existing, or a path
/// component that is not a directory.
pub fn create_dir_all(fs: &dyn Fs, dir: &Path, mode: u32) -> Result<(), Error> {
    match fs.metadata(dir) {
        Ok(meta) if meta.kind == FileKind::Dir => return Ok(()),
        Ok(_) => {
            let source = io::Error::new(io::ErrorKind::NotADirectory, "not a directory");
            return Err(Error { op: "mkdir", path: dir.to_path_buf(), source });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::at("lstat", dir)(e)),
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_all(fs, parent, mode)?;
    }
    match fs.create_dir(dir, mode) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(Error::at("mkdir", dir)(e)),
        _ => Ok(()),
    }
}

impl Error {
    /// A closure turning an `io::Error` of call `op` on `path` into an [`Error`].
    pub fn at<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
        move |source| Error { op, path: path.to_path_buf(), source }
    }
}
