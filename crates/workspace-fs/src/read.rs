//! The one reader that refuses symlinks, and how a parse gets `topics/` and `sources/`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use scriptorium_topics_format::TopicFile;
use scriptorium_topics_format::catalog::{FileLookup, SourceFiles};

use crate::{Error, FileKind, Fs, Meta, RealFs, walk};

/// Why [`read_in`] did not return a file's bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Nothing is at the path (or at one of its parents).
    #[error("{}: no such file", path.display())]
    NotFound {
        /// The full path.
        path: PathBuf,
    },
    /// The path, or a directory on the way, is a symlink: never followed.
    #[error("{}: a symlink (never followed)", path.display())]
    Symlink {
        /// The component that is a link.
        path: PathBuf,
    },
    /// The path is a directory, a FIFO, a socket or a device.
    #[error("{}: not a regular file", path.display())]
    NotAFile {
        /// The full path.
        path: PathBuf,
    },
    /// `rel` is not a plain relative path (absolute, empty, `.`/`..` components).
    #[error("{rel:?}: not a workspace-relative path")]
    BadPath {
        /// The path given.
        rel: String,
    },
    /// A filesystem call failed.
    #[error(transparent)]
    Io(#[from] Error),
}

/// What [`resolve_in`] found at a workspace-relative path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// `root/rel`.
    pub path: PathBuf,
    /// The entry itself (never a symlink); `None` when nothing is there.
    pub meta: Option<Meta>,
}

/// `root/rel` after checking that no component from `root` on is a symlink (each is
/// `lstat`ed; the walk stops at the first missing one), with what is there.
///
/// # Errors
/// [`ReadError::BadPath`] for a path that is not plainly relative, [`ReadError::Symlink`] for a
/// link on the way, [`ReadError::Io`] when an `lstat` fails for another reason than absence.
pub fn resolve_in(fs: &dyn Fs, root: &Path, rel: &str) -> Result<Resolved, ReadError> {
    let parts: Vec<&str> = rel.split('/').collect();
    if rel.is_empty() || rel.starts_with('/') || parts.iter().any(|p| matches!(*p, "" | "." | ".."))
    {
        return Err(ReadError::BadPath { rel: rel.to_owned() });
    }
    let mut path = root.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        path.push(part);
        let meta = match fs.metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Resolved { path: root.join(rel), meta: None });
            }
            Err(e) => return Err(Error::at("lstat", &path)(e).into()),
        };
        match meta.kind {
            FileKind::Symlink => return Err(ReadError::Symlink { path }),
            _ if i + 1 == parts.len() => return Ok(Resolved { path, meta: Some(meta) }),
            FileKind::Dir => {}
            // A file or a FIFO where a directory should be: nothing can be below it.
            _ => return Ok(Resolved { path: root.join(rel), meta: None }),
        }
    }
    Ok(Resolved { path, meta: None })
}

/// The bytes of `root/rel`, refusing a symlink anywhere on the way from `root` (see
/// [`resolve_in`]; the file itself is opened with `O_NOFOLLOW`).
///
/// # Errors
/// See [`ReadError`].
pub fn read_in(fs: &dyn Fs, root: &Path, rel: &str) -> Result<Vec<u8>, ReadError> {
    Ok(read_with_meta(fs, root, rel)?.0)
}

/// [`read_in`], with the file's `lstat`.
///
/// # Errors
/// See [`ReadError`].
pub fn read_with_meta(fs: &dyn Fs, root: &Path, rel: &str) -> Result<(Vec<u8>, Meta), ReadError> {
    let Resolved { path, meta } = resolve_in(fs, root, rel)?;
    let Some(meta) = meta else { return Err(ReadError::NotFound { path }) };
    if meta.kind != FileKind::File {
        return Err(ReadError::NotAFile { path });
    }
    let bytes = fs.read(&path).map_err(Error::at("read", &path))?;
    Ok((bytes, meta))
}

/// `sources/` read from disk for a topic parse. Symlinks are refused (reported as
/// [`FileLookup::NotRegularFile`]), anywhere on the path; so are non-UTF-8 files and paths
/// outside `sources/`.
#[derive(Clone, Debug)]
pub struct FsSources {
    root: PathBuf,
    fs: Arc<dyn Fs>,
}

impl FsSources {
    /// Sources under `memory_root/sources/`, on the real filesystem.
    pub fn new(memory_root: impl Into<PathBuf>) -> Self {
        FsSources::with_fs(memory_root, Arc::new(RealFs))
    }

    /// Sources under `memory_root/sources/`, through `fs`.
    pub fn with_fs(memory_root: impl Into<PathBuf>, fs: Arc<dyn Fs>) -> Self {
        FsSources { root: memory_root.into(), fs }
    }
}

impl SourceFiles for FsSources {
    fn lookup(&self, rel: &str) -> FileLookup {
        if !rel.starts_with("sources/") {
            return FileLookup::NotRegularFile;
        }
        match read_in(self.fs.as_ref(), &self.root, rel).map(String::from_utf8) {
            Ok(Ok(text)) => FileLookup::Text(Arc::from(text)),
            Ok(Err(_)) => FileLookup::NotRegularFile,
            Err(ReadError::NotFound { .. } | ReadError::Io(_)) => FileLookup::Missing,
            Err(_) => FileLookup::NotRegularFile,
        }
    }
}

/// Why [`read_topics`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopicsError {
    /// A filesystem call failed.
    #[error(transparent)]
    Io(#[from] Error),
    /// A topic file is not UTF-8.
    #[error("{}: topic file is not UTF-8", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
}

/// Every regular `*.md` file under `memory_root/topics/` with a UTF-8 path (symlinks skipped,
/// never followed), paths relative to `topics/`, sorted directory by directory.
///
/// # Errors
/// A directory that cannot be listed, a file that cannot be read or is not UTF-8.
pub fn read_topics(memory_root: &Path) -> Result<Vec<TopicFile>, TopicsError> {
    read_topics_with(&RealFs, memory_root)
}

/// [`read_topics`] through `fs`.
///
/// # Errors
/// See [`read_topics`].
pub fn read_topics_with(fs: &dyn Fs, memory_root: &Path) -> Result<Vec<TopicFile>, TopicsError> {
    let topics = memory_root.join("topics");
    match fs.metadata(&topics) {
        Ok(meta) if meta.kind == FileKind::Dir => {}
        _ => return Ok(Vec::new()),
    }
    let mut files = Vec::new();
    for entry in walk(fs, &topics)? {
        if entry.kind != FileKind::File || !entry.utf8 || !entry.rel.ends_with(".md") {
            continue;
        }
        let path = topics.join(&entry.raw);
        let bytes = fs.read(&path).map_err(Error::at("read", &path))?;
        let text = String::from_utf8(bytes).map_err(|_| TopicsError::NotUtf8 { path })?;
        files.push(TopicFile::new(entry.rel, text));
    }
    // Directory by directory, each in name order (as a recursive listing reads them): `a/b.md`
    // before `a.md`.
    files.sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_anywhere_on_the_way_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("memory");
        let fs = RealFs;
        fs.create_dir(&root, 0o700).expect("mkdir");
        fs.create_dir(&root.join("sources"), 0o700).expect("mkdir");
        fs.write(&root.join("sources/a.md"), b"archive", 0o600).expect("write");
        std::os::unix::fs::symlink(root.join("sources"), root.join("linked")).expect("symlink");
        std::os::unix::fs::symlink(root.join("sources/a.md"), root.join("sources/b.md"))
            .expect("symlink");
        assert_eq!(read_in(&fs, &root, "sources/a.md").expect("reads"), b"archive");
        assert!(matches!(read_in(&fs, &root, "linked/a.md"), Err(ReadError::Symlink { .. })));
        assert!(matches!(read_in(&fs, &root, "sources/b.md"), Err(ReadError::Symlink { .. })));
        assert!(matches!(read_in(&fs, &root, "sources"), Err(ReadError::NotAFile { .. })));
        assert!(matches!(read_in(&fs, &root, "sources/c.md"), Err(ReadError::NotFound { .. })));
        assert!(matches!(read_in(&fs, &root, "../x"), Err(ReadError::BadPath { .. })));
        let sources = FsSources::new(&root);
        assert!(matches!(sources.lookup("sources/a.md"), FileLookup::Text(_)));
        assert!(matches!(sources.lookup("sources/b.md"), FileLookup::NotRegularFile));
        assert!(matches!(sources.lookup("topics/a.md"), FileLookup::NotRegularFile));
        assert!(matches!(sources.lookup("sources/c.md"), FileLookup::Missing));
    }
}
