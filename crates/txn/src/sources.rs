//! Read access to the live `sources/` tree for the topic parser ([`SourceFiles`]) and the append
//! planner ([`ArchiveTree`]), through the [`Fs`] seam, refusing symlinks on every component.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use scriptorium_topics_format::catalog::{FileLookup, SourceFiles};
use scriptorium_topics_format::source::{ArchiveTree, PlannedWrite};

use crate::fs::{FileKind, Fs};

/// The live `sources/` of one workspace as the format crate sees it. Paths are
/// workspace-relative (`sources/p/_v2/t.md`); a path with an empty, `.` or `..` component, or
/// with a symlink anywhere along it, is never read.
///
/// The format crate's traits cannot return IO errors, so a failed call (other than "not
/// found") makes the path look unreadable (never missing, so an append cannot mistake an
/// existing archive for a new one) and is remembered: [`LiveSources::take_errors`].
#[derive(Clone, Debug)]
pub struct LiveSources {
    fs: Arc<dyn Fs>,
    root: PathBuf,
    errors: Arc<Mutex<Vec<String>>>,
    /// Planned archive files (path → complete new text) read in place of the live ones.
    overlay: Arc<HashMap<String, Arc<str>>>,
}

impl LiveSources {
    /// The tree under `root` (the memory root).
    pub fn new(fs: Arc<dyn Fs>, root: PathBuf) -> Self {
        LiveSources {
            fs,
            root,
            errors: Arc::new(Mutex::new(Vec::new())),
            overlay: Arc::new(HashMap::new()),
        }
    }

    /// The same tree as the parser would see it after `writes` were appended: each planned
    /// file reads as its complete new text. Only [`SourceFiles::lookup`] (and
    /// [`ArchiveTree::read`]) see the overlay; directory listings stay live, so never plan an
    /// append against an overlaid tree.
    #[must_use]
    pub fn with_overlay(mut self, writes: &[PlannedWrite]) -> Self {
        self.overlay = Arc::new(
            writes.iter().map(|w| (w.rel_path.clone(), Arc::from(w.new_text.as_str()))).collect(),
        );
        self
    }

    /// The IO errors met since the last call (each as `op path: error`).
    pub fn take_errors(&self) -> Vec<String> {
        std::mem::take(&mut *self.errors.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    fn record(&self, op: &str, path: &std::path::Path, err: &std::io::Error) {
        self.errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(format!("{op} {}: {err}", path.display()));
    }

    /// Checks every component of `rel` (which must stay inside the root): `Some(kind)` of the
    /// last one, `None` when missing; a symlink on the way reports `Symlink`.
    fn kind(&self, rel: &str) -> Option<FileKind> {
        let mut path = self.root.clone();
        if rel.is_empty() {
            return Some(FileKind::Dir);
        }
        let parts: Vec<&str> = rel.split('/').collect();
        if parts.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
            return Some(FileKind::Other);
        }
        for (i, part) in parts.iter().enumerate() {
            path.push(part);
            let meta = match self.fs.metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                Err(e) => {
                    self.record("stat", &path, &e);
                    return Some(FileKind::Other);
                }
            };
            if i + 1 < parts.len() && meta.kind != FileKind::Dir {
                return Some(if meta.kind == FileKind::Symlink {
                    FileKind::Symlink
                } else {
                    FileKind::Other
                });
            }
            if i + 1 == parts.len() {
                return Some(meta.kind);
            }
        }
        None
    }
}

impl SourceFiles for LiveSources {
    fn lookup(&self, rel: &str) -> FileLookup {
        if let Some(text) = self.overlay.get(rel) {
            return FileLookup::Text(Arc::clone(text));
        }
        match self.kind(rel) {
            None => FileLookup::Missing,
            Some(FileKind::File) => match self.fs.read(&self.root.join(rel)) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => FileLookup::Text(Arc::from(text)),
                    Err(_) => FileLookup::NotRegularFile,
                },
                Err(e) => {
                    self.record("read", &self.root.join(rel), &e);
                    FileLookup::NotRegularFile
                }
            },
            Some(_) => FileLookup::NotRegularFile,
        }
    }
}

impl ArchiveTree for LiveSources {
    fn read(&self, rel: &str) -> FileLookup {
        self.lookup(rel)
    }

    fn list_dir(&self, rel_dir: &str) -> Option<Vec<String>> {
        if self.kind(rel_dir)? != FileKind::Dir {
            return None;
        }
        let path = self.root.join(rel_dir);
        let entries = match self.fs.read_dir(&path) {
            Ok(entries) => entries,
            Err(e) => {
                self.record("read_dir", &path, &e);
                return None;
            }
        };
        let mut names: Vec<String> =
            entries.into_iter().map(|(name, _)| name.to_string_lossy().into_owned()).collect();
        names.sort();
        Some(names)
    }
}
