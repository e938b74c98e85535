//! Reading workspace files into blobs, with git's stat cache so unchanged files are not rehashed.
//!
//! Invariant: a file's content is hashed only when it is named as changed, or when its stat data
//! (mtime, ctime, size, inode, device, uid, gid) differs from the entry of the previous
//! `.git/index`, or when that entry is *racy* (modified in the same second the index was
//! written) — the same rule git uses, so the cache is exactly as trustworthy as `git status`.
//! Symlinks are never followed and never recorded; neither are sockets, FIFOs or devices.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice, ByteVec};
use gix::hash::ObjectId;
use gix::index::entry::{Mode, Stat, stat};
use gix::index::fs::Metadata;
use gix::object::tree::EntryKind;

use crate::Error;
use scriptorium_workspace_fs::{FileKind, Fs as _, RealFs};

use crate::paths::{is_git_reserved_name, is_internal_bytes};

/// What a workspace path is, seen without following symlinks.
pub(crate) enum Found {
    /// Nothing to record: missing, a symlink (or below one), or a special file.
    Nothing,
    /// A regular file.
    File,
    /// A real directory.
    Dir,
}

/// Reads files for one commit and remembers the stat data of everything it recorded, so the new
/// index can carry it.
pub(crate) struct Scanner<'r> {
    repo: &'r gix::Repository,
    root: &'r Path,
    old_index: Option<gix::worktree::Index>,
    options: stat::Options,
    /// Stat data of every file recorded by this scan, by path, with the id it was recorded as.
    pub(crate) recorded: HashMap<BString, (ObjectId, Stat)>,
    /// How many files were actually read and hashed (the rest came from the stat cache).
    pub(crate) hashed: usize,
}

impl<'r> Scanner<'r> {
    pub(crate) fn new(repo: &'r gix::Repository, root: &'r Path) -> Self {
        // The index is only a cache here: an unreadable one means "hash everything".
        let old_index = repo.try_index().ok().flatten();
        Scanner {
            repo,
            root,
            old_index,
            options: stat::Options::default(),
            recorded: HashMap::new(),
            hashed: 0,
        }
    }

    /// The previous index, if one could be read.
    pub(crate) fn old_index(&self) -> Option<&gix::index::File> {
        self.old_index.as_deref().map(|snapshot| &**snapshot)
    }

    fn full_path(&self, rel: &BStr) -> Result<PathBuf, Error> {
        let mut path = self.root.to_path_buf();
        for component in rel.split(|b| *b == b'/') {
            let component =
                gix::path::from_bstr(component.as_bstr()).map_err(|_| Error::Workspace {
                    op: "stat",
                    path: path.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "path not representable on this system",
                    ),
                })?;
            path.push(component);
        }
        Ok(path)
    }

    /// Classify `rel` without following any symlink on the way: every ancestor must be a real
    /// directory.
    pub(crate) fn find(&self, rel: &str) -> Result<Found, Error> {
        let mut path = self.root.to_path_buf();
        let components: Vec<&str> = rel.split('/').collect();
        for (i, component) in components.iter().enumerate() {
            path.push(component);
            let meta = match Metadata::from_path_no_follow(&path) {
                Ok(meta) => meta,
                Err(err) if is_absent(&err) => return Ok(Found::Nothing),
                Err(source) => return Err(Error::Workspace { op: "stat", path, source }),
            };
            let last = i + 1 == components.len();
            if meta.is_dir() && !meta.is_symlink() {
                if last {
                    return Ok(Found::Dir);
                }
            } else if last && meta.is_file() {
                return Ok(Found::File);
            } else {
                return Ok(Found::Nothing);
            }
        }
        Ok(Found::Nothing)
    }

    /// Read and hash the file `rel` (known to be a regular file), writing its blob.
    pub(crate) fn hash_file(&mut self, rel: &BStr) -> Result<Option<(EntryKind, ObjectId)>, Error> {
        let path = self.full_path(rel)?;
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(err) if is_absent(&err) => return Ok(None),
            Err(source) => return Err(Error::Workspace { op: "open file", path, source }),
        };
        // Stat before reading: if the file changes in between, the recorded stat is older than
        // the content and the next scan rehashes it, never the other way round.
        let meta = Metadata::from_file(&file).map_err(|source| Error::Workspace {
            op: "stat",
            path: path.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Ok(None);
        }
        let data = read_all(file).map_err(|source| Error::Workspace {
            op: "read file",
            path: path.clone(),
            source,
        })?;
        let id = self
            .repo
            .write_blob(&data)
            .map_err(|source| Error::write("write blob", rel.to_str().ok(), source))?
            .detach();
        self.hashed += 1;
        let kind = kind_of(&meta);
        if let Ok(stat) = Stat::from_fs(&meta) {
            self.recorded.insert(rel.to_owned(), (id, stat));
        }
        Ok(Some((kind, id)))
    }

    /// The id of the file `rel` from the stat cache if it is provably unchanged, else by hashing.
    fn cached_or_hash(
        &mut self,
        rel: &BStr,
        meta: &Metadata,
    ) -> Result<Option<(EntryKind, ObjectId)>, Error> {
        let kind = kind_of(meta);
        if let Ok(stat) = Stat::from_fs(meta)
            && let Some(id) = self.cached(rel, kind, &stat)
        {
            self.recorded.insert(rel.to_owned(), (id, stat));
            return Ok(Some((kind, id)));
        }
        self.hash_file(rel)
    }

    fn cached(&self, rel: &BStr, kind: EntryKind, stat: &Stat) -> Option<ObjectId> {
        let index = self.old_index()?;
        let entry = index.entry_by_path(rel)?;
        let mode =
            if kind == EntryKind::BlobExecutable { Mode::FILE_EXECUTABLE } else { Mode::FILE };
        let usable = entry.mode == mode
            && entry.stat != Stat::default()
            && entry.stat.matches(stat, self.options)
            && !entry.stat.is_racy(index.timestamp(), self.options)
            && self.repo.has_object(entry.id);
        usable.then_some(entry.id)
    }

    /// Every recordable file below the directory `rel` (the workspace root when empty), as
    /// (path, kind, id). Internal paths and git-reserved names are skipped.
    pub(crate) fn walk(
        &mut self,
        rel: &BStr,
        out: &mut Vec<(BString, EntryKind, ObjectId)>,
    ) -> Result<(), Error> {
        let dir = self.full_path(rel)?;
        let mut entries = match RealFs.read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if is_absent(&err) => return Ok(()),
            Err(source) => {
                return Err(Error::Workspace { op: "read directory", path: dir, source });
            }
        };
        entries.sort();
        for (name, kind) in entries {
            // Never followed, never recorded; a FIFO, socket or device is not a file either.
            if !matches!(kind, FileKind::File | FileKind::Dir) {
                continue;
            }
            let name_bytes = gix::path::os_str_into_bstr(&name).map_err(|_| Error::Workspace {
                op: "read directory",
                path: dir.join(&name),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, "file name not UTF-8"),
            })?;
            if is_git_reserved_name(name_bytes) {
                continue;
            }
            let mut child: BString = rel.to_owned();
            if !child.is_empty() {
                child.push_byte(b'/');
            }
            child.push_str(name_bytes);
            if rel.is_empty() && is_internal_bytes(&child) {
                continue;
            }
            let path = dir.join(&name);
            let meta = match Metadata::from_path_no_follow(&path) {
                Ok(meta) => meta,
                Err(err) if is_absent(&err) => continue,
                Err(source) => return Err(Error::Workspace { op: "stat", path, source }),
            };
            if meta.is_symlink() {
                continue;
            }
            if meta.is_dir() {
                self.walk(child.as_bstr(), out)?;
            } else if meta.is_file()
                && let Some((kind, id)) = self.cached_or_hash(child.as_bstr(), &meta)?
            {
                out.push((child, kind, id));
            }
        }
        Ok(())
    }
}

fn kind_of(meta: &Metadata) -> EntryKind {
    if meta.is_executable() { EntryKind::BlobExecutable } else { EntryKind::Blob }
}

fn read_all(mut file: std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut data = Vec::new();
    file.read_to_end(&mut data)?;
    Ok(data)
}

fn is_absent(err: &std::io::Error) -> bool {
    // ENOTDIR: a component that was a directory is now a file; for history that path is gone.
    matches!(err.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory)
}
