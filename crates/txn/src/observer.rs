//! What the rest of the system hears about an install: [`InstallObserver`]s (derived views, the
//! search index and git history plug in here; this crate knows none of them), told exactly
//! which files changed, and whose reports travel back in [`Installed`](crate::Installed).

use std::any::Any;
use std::path::Path;
use std::sync::Arc;

use crate::ids::Revision;
use crate::install::Installed;
use crate::state::CreationOrder;
use crate::validate::{Baseline, FileState};

/// One file an install changed, as observers see it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ChangedFile {
    /// The path relative to `topics/`.
    pub path: String,
    /// The file in the tree the transaction began from (`None`: created).
    pub before: Option<Arc<FileState>>,
    /// The file as installed (`None`: deleted).
    pub after: Option<Arc<FileState>>,
    /// The file was edited outside any transaction before this one began (the install adopts
    /// the edit): `before` is the edited file, not the one the previous install wrote.
    pub outside: bool,
}

/// What an observer is told about an install.
#[derive(Debug)]
#[non_exhaustive]
pub struct InstallEvent<'a> {
    /// The memory root.
    pub root: &'a Path,
    /// The install's outcome (its `observed` is still empty).
    pub installed: &'a Installed,
    /// The files the install changed, in tree order.
    pub changes: &'a [ChangedFile],
    /// The installed tree, file by file.
    pub tree: &'a Baseline,
    /// The creation order after the install (`runtime.json`'s, every installed ID numbered).
    pub creation_order: &'a CreationOrder,
}

/// What an observer is told when an install is about to make itself durable
/// ([`InstallObserver::installing`]): the install passed its compare-and-set under the write
/// lock, and what it will install is final; only its durable steps (which can still fail on
/// I/O) remain.
#[derive(Debug)]
#[non_exhaustive]
pub struct InstallingEvent<'a> {
    /// The memory root.
    pub root: &'a Path,
    /// The revision the transaction started from.
    pub base_revision: &'a Revision,
    /// Workspace paths whose bytes the install changes (as [`Installed::changed_files`] will
    /// list them; appended archives are already written).
    pub changed_files: &'a [String],
    /// Files edited outside any transaction that the install adopts (as
    /// [`Installed::adopted`]).
    pub adopted: &'a [String],
    /// The files the install changes, in tree order (`after` holds each file's new text).
    pub changes: &'a [ChangedFile],
    /// The staged `topics/` directory that becomes the live one: a changed file is at
    /// `staged_topics/<path>` until the install returns, with the inode it keeps once live.
    pub staged_topics: &'a Path,
}

/// An observer's account of one install: its report (for the caller to read back through
/// [`Installed::report`](crate::Installed::report)) and, when something failed, what.
#[derive(Clone, Default)]
pub struct Observation {
    /// What the observer did, of a type its caller knows.
    pub report: Option<Arc<dyn Any + Send + Sync>>,
    /// Its failure, rendered (the install stands regardless).
    pub failure: Option<String>,
}

impl std::fmt::Debug for Observation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observation")
            .field("report", &self.report.is_some())
            .field("failure", &self.failure)
            .finish()
    }
}

impl PartialEq for Observation {
    fn eq(&self, other: &Self) -> bool {
        self.failure == other.failure
            && match (&self.report, &other.report) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}

impl Eq for Observation {}

/// Told about every successful install. Runs after the install finished, still under the
/// write lock, in registration order. A failure is reported in its [`Observation`] and never
/// un-installs.
pub trait InstallObserver: Send + Sync {
    /// A short name for failure reports.
    fn name(&self) -> &str;

    /// Called once per install that changed something (a transaction that changes nothing is
    /// not observed).
    fn installed(&self, event: &InstallEvent<'_>) -> Observation;

    /// Called under the write lock once an install that changes something is certain of what it
    /// installs, before its durable steps (the staged files' fsyncs, the intent record, the
    /// swap, the revision record): an observer may start work here that
    /// [`installed`](Self::installed) finishes, so that it runs beside those steps. Whatever it
    /// starts must not become visible before `installed` is called: the install may still fail,
    /// and then [`abandoned`](Self::abandoned) is called instead.
    fn installing(&self, _event: &InstallingEvent<'_>) {}

    /// Called, still under the write lock, when an install that [`installing`](Self::installing)
    /// announced failed (nothing was installed, or the install is unfinished and the next
    /// `open` completes it): the observer drops what it started.
    fn abandoned(&self) {}

    /// Called once per archive append that wrote something
    /// ([`Workspace::archive_sources`](crate::Workspace::archive_sources)), still under the
    /// write lock. The files also show up in no install's changed files, so an observer that
    /// follows the tree (an index, git) learns about them here. Failures are the observer's own
    /// business (logged, never undoing the append).
    fn archived(&self, _event: &ArchiveEvent<'_>) {}
}

/// An observer's failure after an install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObserverFailure {
    /// The observer's [`InstallObserver::name`].
    pub observer: String,
    /// Its error, rendered.
    pub message: String,
}

/// What [`InstallObserver::archived`] hears.
#[derive(Debug)]
#[non_exhaustive]
pub struct ArchiveEvent<'a> {
    /// The memory root.
    pub root: &'a Path,
    /// The archive files written (workspace-relative).
    pub changed_files: &'a [String],
    /// The revision before the append.
    pub previous_revision: &'a Revision,
    /// The revision after the append.
    pub revision: &'a Revision,
}
