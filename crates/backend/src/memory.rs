//! A memory workspace opened with its derived views and git history wired in as the install
//! observer.
//!
//! Order after every install (still under the write lock): the derived views are rebuilt from
//! the installed units (`core.md`, `timeline/`, `recent_events.jsonl`, `relations.json`), then
//! one git commit records the transaction's files and the views it rewrote, with the
//! transaction's `Txn-Id`. A failure of either is reported in [`AfterInstall`] and in the
//! install's observer failures; it never turns into a rollback: the memory is committed once
//! the install returned.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock, TryLockError};
use std::time::{Duration, Instant};

use scriptorium_history::{CommitRequest, History, Time};
use scriptorium_search::{Ahead, Changes, FileAccess as _, Hit, Index, Overlay, Query, Snapshot};
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_txn::{
    ArchiveEvent, InstallEvent, InstallObserver, InstallingEvent, LockTimeout, Observation,
    Options, Workspace,
};
use scriptorium_views::{render_core, write_views};
use scriptorium_workspace_fs::read::{FsSources, read_in};
use scriptorium_workspace_fs::{Durability, Fs as _, RealFs, write_atomic};

/// Recent events kept in `recent_events.jsonl` (the Python implementation's default).
pub const RECENT_LIMIT: usize = 50;
/// The core render budget in o200k_base tokens.
pub const CORE_BUDGET: usize = 2_000;
/// The master of the core view, relative to `topics/`.
const CORE_MASTER: &str = "core.md";

/// Errors of opening a memory workspace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// There is no workspace at the path and creating one was not asked for.
    #[error("no memory workspace at {}", root.display())]
    NotFound {
        /// The memory root looked at.
        root: PathBuf,
    },
    /// The transaction engine refused to open the workspace.
    #[error("opening the memory workspace at {}: {source}", root.display())]
    Txn {
        /// The memory root.
        root: PathBuf,
        /// The engine's error.
        #[source]
        source: scriptorium_txn::Error,
    },
}

impl Error {
    /// Whether retrying later can succeed (the workspace lock was busy).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Txn { source, .. } if source.is_retryable())
    }
}

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// Reading the workspace revision failed.
    #[error(transparent)]
    Txn(scriptorium_txn::Error),
    /// The index refused the query or could not be read.
    #[error(transparent)]
    Search(scriptorium_search::Error),
}

impl SearchError {
    /// The stable code of the underlying error.
    pub fn code(&self) -> &'static str {
        self.wire_code().as_str()
    }

    /// [`SearchError::code`] as a wire code.
    pub fn wire_code(&self) -> crate::wire::Code {
        match self {
            SearchError::Txn(e) => e.code().into(),
            SearchError::Search(e) => e.code().into(),
        }
    }
}

/// The wall clock of the backend and its runtime services: the one place this crate reads it
/// (git commit times, writer status, the watcher's idle rule, the nightly schedule).
#[expect(clippy::disallowed_methods, reason = "the backend's one read of the wall clock")]
pub fn wall_clock() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}

/// The wall-clock time for git commits (UTC).
pub fn now() -> Time {
    Time::utc(wall_clock().unix_timestamp())
}

/// What the observer did after the last install.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AfterInstall {
    /// Derived files the views rebuild wrote or removed (workspace-relative).
    pub views_changed: Vec<String>,
    /// The views rebuild's error, if it failed.
    pub views_error: Option<String>,
    /// The git commit (hex) that records the install, if one was made.
    pub git_commit: Option<String>,
    /// The git error, if the commit failed (the memory is committed regardless).
    pub git_error: Option<String>,
    /// The search index error, if its update failed (the next search catches up).
    pub index_error: Option<String>,
}

/// The search index of a workspace, opened on first use and shared by the observer and
/// searches, with the snapshot of its last commit: a search at the revision the snapshot
/// reflects, or one that comes while an install is updating the index, reads the snapshot and
/// never waits for the index's lock.
#[derive(Default)]
struct IndexSlot {
    index: Mutex<Option<Index>>,
    snapshot: RwLock<Option<Snapshot>>,
}

type SharedIndex = Arc<IndexSlot>;

impl IndexSlot {
    /// The snapshot of the last commit, if the index was opened.
    fn snapshot(&self) -> Option<Snapshot> {
        self.snapshot.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Runs `f` on the index held by `guard` (opening it first), then publishes the snapshot
    /// of what it committed.
    fn run<T>(
        &self,
        root: &Path,
        guard: &mut MutexGuard<'_, Option<Index>>,
        f: impl FnOnce(&mut Index) -> scriptorium_search::Result<T>,
    ) -> scriptorium_search::Result<T> {
        let index = match guard.take() {
            Some(index) => guard.insert(index),
            None => guard.insert(Index::open(root)?),
        };
        let result = f(index);
        *self.snapshot.write().unwrap_or_else(PoisonError::into_inner) = Some(index.snapshot());
        result
    }
}

/// The commit subject of an install: its own message, unless it is the change API's default
/// (`Update memory`, which says nothing in `git log`): then what it changed, by topic file
/// (`memory: update topics/people/dana.md and 2 more`).
fn commit_message(installed: &scriptorium_txn::Installed) -> String {
    let message = installed.message.trim();
    if !message.is_empty() && message != scriptorium_txn::change::DEFAULT_MESSAGE {
        return installed.message.clone();
    }
    let topics: Vec<&str> = installed
        .changed_files
        .iter()
        .map(String::as_str)
        .filter(|p| p.starts_with("topics/"))
        .collect();
    let files = if topics.is_empty() {
        installed.changed_files.iter().map(String::as_str).collect()
    } else {
        topics
    };
    match files.as_slice() {
        [] => "memory: update".to_owned(),
        [one] => format!("memory: update {one}"),
        [first, rest @ ..] => format!("memory: update {first} and {} more", rest.len()),
    }
}

/// Runs `f` on the index in `slot` (waiting for its lock, opening it if it is not open yet).
fn with_index<T>(
    root: &Path,
    slot: &SharedIndex,
    f: impl FnOnce(&mut Index) -> scriptorium_search::Result<T>,
) -> scriptorium_search::Result<T> {
    let mut guard = slot.index.lock().unwrap_or_else(PoisonError::into_inner);
    slot.run(root, &mut guard, f)
}

/// Which derived state an install keeps up to date (all of it by default; benchmarks and tools
/// that measure one part turn the others off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wiring {
    /// Rebuild `core.md`, `timeline/`, `recent_events.jsonl`, `relations.json`.
    pub views: bool,
    /// Update the search index.
    pub index: bool,
}

impl Default for Wiring {
    fn default() -> Self {
        Wiring { views: true, index: true }
    }
}

/// The install observer: derived views, one git commit, then the search index.
pub struct Derived {
    /// Set once, right after the workspace opened (the history needs the installed
    /// transaction): nothing installs before.
    history: OnceLock<History>,
    index: SharedIndex,
    wiring: Wiring,
    /// Archive files appended since the last install (committed with the next one).
    archived: Mutex<Vec<String>>,
    /// The index update the coming install started ([`InstallObserver::installing`]).
    ahead: Mutex<Option<IndexAhead>>,
    /// A sync's merge waiting for its install (see [`PendingMerge`]).
    merge: Mutex<Option<PendingMerge>>,
}

/// What a sync's install commits besides an ordinary install's: the remote commit it merged
/// (the commit's second parent, or where the branch fast-forwards to), and the derived views
/// taken verbatim from it when this clone simply takes the remote's history. Matched to its
/// install by the transaction's message, which names the remote commit.
#[derive(Clone, Debug)]
pub(crate) struct PendingMerge {
    /// The install's commit message.
    pub(crate) message: String,
    /// The remote commit (hex).
    pub(crate) theirs: String,
    /// View files to write as the remote has them (`None`: removed there).
    pub(crate) views: Vec<(String, Option<Vec<u8>>)>,
}

/// Writes view files as another clone has them (workspace-relative; `None` removes); returns
/// the paths. Views are derived and never fail an install: a file that cannot be written is
/// logged and the commit shows the local version.
pub(crate) fn write_taken_views(root: &Path, views: &[(String, Option<Vec<u8>>)]) -> Vec<String> {
    let mut written = Vec::new();
    for (path, bytes) in views {
        let target = root.join(path);
        let outcome = match bytes {
            Some(bytes) => {
                if let Some(parent) = target.parent() {
                    let _ = scriptorium_workspace_fs::create_dir_all(&RealFs, parent, 0o700);
                }
                let temp = root.join(".scriptorium").join(format!(
                    "tmp-sync-view-{}",
                    REFUSED_SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                ));
                write_atomic(&RealFs, &temp, &target, bytes, 0o600, Durability::Cache)
                    .map_err(|e| e.to_string())
            }
            None => match RealFs.remove_file(&target) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.to_string()),
                _ => Ok(()),
            },
        };
        match outcome {
            Ok(()) => written.push(path.clone()),
            Err(error) => tracing::warn!(%error, path, "taking a view file from the remote failed"),
        }
    }
    written
}

/// An index update prepared beside an install's durable steps, waiting for its outcome.
struct IndexAhead {
    /// Takes the installed revision; dropped unsent, the install failed.
    go: std::sync::mpsc::Sender<String>,
    job: std::thread::JoinHandle<scriptorium_search::Result<Ahead>>,
}

impl IndexAhead {
    /// Tells the update the install's outcome (`None`: failed) and waits for it.
    fn finish(
        self,
        revision: Option<&str>,
    ) -> std::thread::Result<scriptorium_search::Result<Ahead>> {
        self.start(revision).join()
    }

    /// Tells the update the install's outcome (`None`: failed); it goes on on its own thread,
    /// whose handle this returns.
    fn start(
        self,
        revision: Option<&str>,
    ) -> std::thread::JoinHandle<scriptorium_search::Result<Ahead>> {
        if let Some(revision) = revision {
            // A send fails only when the job ended already (with an error it returns).
            let _ = self.go.send(revision.to_owned());
        }
        drop(self.go);
        self.job
    }
}

/// The engine's creation order, as the views read it.
struct Numbers<'a>(&'a scriptorium_txn::CreationOrder);

impl scriptorium_views::Numbering for Numbers<'_> {
    fn number(&self, id: &str) -> Option<u64> {
        self.0.get(id)
    }
    fn next_number(&self) -> u64 {
        self.0.next()
    }
}

impl Derived {
    /// An observer committing to `history` (none: no git), keeping what `wiring` asks for.
    pub fn new(history: Option<History>, wiring: Wiring) -> Derived {
        let cell = OnceLock::new();
        if let Some(history) = history {
            let _ = cell.set(history);
        }
        Derived {
            history: cell,
            index: Arc::default(),
            wiring,
            archived: Mutex::default(),
            ahead: Mutex::default(),
            merge: Mutex::default(),
        }
    }

    /// Renders the views the install changed and writes them; returns the files written or
    /// removed. Only the timeline dates and the relations the changed files touch are rendered
    /// again (and the core when its master changed or archives were appended); a full rebuild
    /// runs when the install adopted edits made outside any transaction (what the views last
    /// showed of those files is unknown).
    fn rebuild_views(event: &InstallEvent<'_>, archived: bool) -> Result<Vec<String>, String> {
        let root = event.root;
        let order = &Numbers(event.creation_order);
        let tree = event.tree;
        let master = tree.file(CORE_MASTER).map(|f| f.file.text.as_str());
        let core_changed = archived || event.changes.iter().any(|c| c.path == CORE_MASTER);
        // The root `core.md` goes with its master (see `docs/format.md#core-view`, step 1); a
        // legacy root file without a master is left alone.
        let master_removed = master.is_none()
            && event.changes.iter().any(|c| c.path == CORE_MASTER && c.after.is_none());
        let render = || {
            let resolver = ArchiveResolver::new(FsSources::new(root));
            render_core(master, &resolver, CORE_BUDGET)
        };
        let written = if event.changes.iter().any(|c| c.outside) {
            let views = scriptorium_views::rebuild(tree.units(), order, RECENT_LIMIT);
            write_views(root, &views, &render(), master_removed)
        } else {
            let before = event.changes.iter().filter_map(|c| c.before.as_ref());
            let after = event.changes.iter().filter_map(|c| c.after.as_ref());
            let affected = scriptorium_views::affected(
                before.flat_map(|f| f.units.iter()),
                after.flat_map(|f| f.units.iter()),
            );
            let update = scriptorium_views::update(tree.units(), order, RECENT_LIMIT, &affected);
            let core = core_changed.then(render);
            scriptorium_views::write_update(root, &update, core.as_ref(), master_removed)
        }
        .map_err(|e| e.to_string())?;
        Ok(written.changed_files.into_iter().chain(written.removed_files).collect())
    }

    /// Rebuilds the views (adding the files they rewrote to `changed`) and makes the git
    /// commit of `changed`.
    fn views_and_commit(
        &self,
        event: &InstallEvent<'_>,
        archived: bool,
        changed: &mut Vec<String>,
        after: &mut AfterInstall,
    ) {
        if self.wiring.views {
            match Derived::rebuild_views(event, archived) {
                Ok(files) => {
                    changed.extend(files.iter().cloned());
                    after.views_changed = files;
                }
                Err(err) => after.views_error = Some(err),
            }
        }
        let merge = {
            let mut pending = self.merge.lock().unwrap_or_else(PoisonError::into_inner);
            match pending.as_ref() {
                Some(p) if p.message == event.installed.message => pending.take(),
                _ => None,
            }
        };
        if let Some(merge) = &merge {
            changed.extend(write_taken_views(event.root, &merge.views));
        }
        changed.sort();
        changed.dedup();
        if let Some(history) = self.history.get() {
            let message = commit_message(event.installed);
            let request = CommitRequest {
                txn_id: event.installed.txn_id.as_str(),
                message: &message,
                // A failed views rebuild may have left files the list does not name: scan all.
                // A forget's (or a redact's) commit also holds the ledger (`forgotten.jsonl`, outside the
                // trees a transaction installs): its tree is taken from every file.
                changed: (after.views_error.is_none()
                    && !event.installed.message.contains(crate::forget::TRAILER)
                    && !event.installed.message.contains(crate::redact::TRAILER))
                .then_some(changed.as_slice()),
                time: now(),
                merge: merge.as_ref().map(|m| m.theirs.as_str()),
            };
            match history.commit(request) {
                Ok(outcome) => after.git_commit = Some(outcome.commit),
                Err(err) => after.git_error = Some(err.to_string()),
            }
        }
    }
}

impl InstallObserver for Derived {
    fn name(&self) -> &str {
        "views+git"
    }

    /// Indexes the appended archives now (their records become searchable) and remembers
    /// them for the next install's git commit.
    fn archived(&self, event: &ArchiveEvent<'_>) {
        self.archived
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(event.changed_files.iter().cloned());
        if self.wiring.index {
            let hint = Changes {
                since: event.previous_revision.as_str().to_owned(),
                paths: event.changed_files.to_vec(),
            };
            let revision = event.revision.as_str();
            if let Err(error) =
                with_index(event.root, &self.index, |index| index.sync(revision, Some(&hint)))
            {
                tracing::warn!(%error, "indexing appended sources failed; the next install retries");
            }
        }
    }

    /// Starts the index update beside the install's durable steps: the changed files are
    /// taken from the stage (their text, and the `stat` they keep once live); the update
    /// prepares the new segment and waits for [`installed`](Self::installed) to commit it, or
    /// for [`abandoned`](Self::abandoned) to drop it.
    fn installing(&self, event: &InstallingEvent<'_>) {
        if !self.wiring.index {
            return;
        }
        let mut paths = event.changed_files.to_vec();
        paths.extend(event.adopted.iter().cloned());
        paths.extend(self.archived.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned());
        let hint = Changes { since: event.base_revision.as_str().to_owned(), paths };
        let mut overlay = Overlay::default();
        for change in event.changes {
            let file = match &change.after {
                Some(after) => {
                    let staged = event.staged_topics.join(&change.path);
                    // Without its stat the file cannot be stamped: the sync after the install
                    // reads it instead.
                    let Ok(Some(stat)) = scriptorium_search::RealFs.stat(&staged) else {
                        return;
                    };
                    Some((stat, after.file.text.as_bytes().to_vec()))
                }
                None => None,
            };
            overlay.insert(format!("topics/{}", change.path), file);
        }
        let (go, outcome) = std::sync::mpsc::channel::<String>();
        let root = event.root.to_path_buf();
        let slot = Arc::clone(&self.index);
        let job = std::thread::Builder::new().name("index-ahead".to_owned()).spawn(move || {
            with_index(&root, &slot, |index| {
                index.sync_ahead(&hint, &overlay, || outcome.recv().ok())
            })
        });
        match job {
            Ok(job) => {
                *self.ahead.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(IndexAhead { go, job });
            }
            Err(error) => {
                tracing::debug!(%error, "no thread for the index update; it follows the install");
            }
        }
    }

    fn abandoned(&self) {
        if let Some(ahead) = self.ahead.lock().unwrap_or_else(PoisonError::into_inner).take()
            && let Ok(Err(error)) = ahead.finish(None)
        {
            tracing::warn!(%error, "dropping the index update of a failed install failed");
        }
    }

    fn installed(&self, event: &InstallEvent<'_>) -> Observation {
        let mut after = AfterInstall::default();
        let mut changed = event.installed.changed_files.clone();
        changed.extend(event.installed.adopted.iter().cloned());
        // Archives appended since the last install (a writer archives first) are committed and
        // indexed with this transaction.
        let archived =
            std::mem::take(&mut *self.archived.lock().unwrap_or_else(PoisonError::into_inner));
        let appended = !archived.is_empty() || changed.iter().any(|p| p.starts_with("sources/"));
        changed.extend(archived);
        // The index follows the transaction's files (views are not indexed), so its update
        // runs beside the views rebuild and the git commit, which need each other.
        let hint = Changes {
            since: event.installed.base_revision.as_str().to_owned(),
            paths: changed.clone(),
        };
        let revision = event.installed.revision.as_str();
        let sync = || {
            with_index(event.root, &self.index, |index| index.sync(revision, Some(&hint)))
                .map(|_| ())
                .map_err(|err| err.to_string())
        };
        // The update prepared beside the install commits now on its own thread; one that could
        // not prepare (the index was behind) gives way to a sync after the views and the commit.
        // Without a prepared update the sync runs on a thread of its own beside them.
        let ahead = self.ahead.lock().unwrap_or_else(PoisonError::into_inner).take();
        let indexed = match ahead.filter(|_| self.wiring.index) {
            Some(ahead) => {
                let job = ahead.start(Some(revision));
                self.views_and_commit(event, appended, &mut changed, &mut after);
                Some(match job.join() {
                    Ok(Ok(Ahead::Committed(_))) => Ok(()),
                    Ok(Err(err)) => Err(err.to_string()),
                    Err(_) => Err("the index update panicked".to_owned()),
                    Ok(Ok(Ahead::Behind | Ahead::Abandoned)) => sync(),
                })
            }
            None => std::thread::scope(|scope| {
                let index_job = self.wiring.index.then(|| scope.spawn(sync));
                self.views_and_commit(event, appended, &mut changed, &mut after);
                index_job.map(|job| {
                    job.join().unwrap_or_else(|_| Err("the index update panicked".into()))
                })
            }),
        };
        if let Some(Err(err)) = indexed {
            after.index_error = Some(err);
        }
        let failure = match (&after.views_error, &after.git_error) {
            (None, None) => None,
            (views, git) => Some(format!(
                "{}{}",
                views.as_ref().map(|e| format!("views: {e}; ")).unwrap_or_default(),
                git.as_ref().map(|e| format!("git: {e}")).unwrap_or_default()
            )),
        };
        Observation { report: Some(Arc::new(after)), failure }
    }
}

/// What the views, git and index did after `installed` (the observer's report; the default
/// for an install nothing observed, such as one that changed nothing).
pub fn after(installed: &scriptorium_txn::Installed) -> AfterInstall {
    installed.report::<AfterInstall>().cloned().unwrap_or_default()
}

/// An open memory workspace with its history and the views+git observer.
pub struct MemoryWorkspace {
    workspace: Workspace,
    /// Why the history could not be opened (set at most once, see `ensure_history`).
    history_error: OnceLock<String>,
    derived: Arc<Derived>,
    /// When [`MemoryWorkspace::search`] last looked for outside edits, and how often it looks.
    outside_check: Mutex<Option<OutsideCheck>>,
    outside_interval: Duration,
    /// `relations.json`'s backlinks as last read, keyed by the file's stat (the views replace
    /// it by a rename, so a new file has a new inode): a topic page reads them once per install.
    backlinks_cache: Mutex<Option<(RelationsKey, Arc<Backlinks>)>>,
    /// The doors' redactor (the home's `[privacy]`, set by whoever opened the workspace with
    /// the configuration; the built-in rules otherwise).
    redactor: OnceLock<scriptorium_redact::Redactor>,
}

/// What identifies one `relations.json` (inode, modification time, length).
type RelationsKey = (u64, i64, u64);

/// The `backlinks` map of `relations.json`: target ID → the IDs of the blocks linking to it.
type Backlinks = HashMap<String, Vec<String>>;

/// The part of `relations.json` a topic page reads (`docs/format.md#relations`); the rest of
/// the file is skipped, not built.
#[derive(serde::Deserialize)]
struct Relations {
    #[serde(default)]
    backlinks: Backlinks,
}

/// The last look for outside edits.
struct OutsideCheck {
    at: Instant,
    /// Outside edits that stayed (the installed revision then, the live one).
    live: Option<(scriptorium_txn::Revision, scriptorium_txn::Revision)>,
}

/// What [`MemoryWorkspace::adopt_outside_edits`] found and did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Adoption {
    /// `topics/` and `sources/` are as the last install or append recorded them.
    Nothing,
    /// The files edited outside a transaction (in `topics/`, and archives in `sources/` another
    /// program wrote) validated and were installed as one transaction; the views, the index
    /// and git followed it like any install.
    Installed {
        /// The adopted files (`topics/…`).
        files: Vec<String>,
        /// The install.
        installed: Box<scriptorium_txn::Installed>,
    },
    /// The edits do not validate, so nothing was installed and nothing changed (`scriptorium
    /// check` lists the problems). The same edits are not validated again.
    Refused {
        /// The edited files (`topics/…`; `sources/` when archives changed too).
        files: Vec<String>,
        /// How many violations validation found; `None` when these very edits were refused
        /// before and were not validated again.
        violations: Option<usize>,
    },
    /// Another process holds the write lock or installed meanwhile; the next call retries.
    Busy,
}

impl Adoption {
    /// What a face reports about it, as JSON (`outside_edits` in the CLI's `search --json`,
    /// the REST search and the MCP search): `None` when there is nothing to say (`Nothing`,
    /// `Busy`: the next search retries).
    pub fn report(&self) -> Option<serde_json::Value> {
        match self {
            Adoption::Installed { files, installed } => Some(serde_json::json!({
                "adopted": true,
                "files": files,
                "revision": installed.revision.as_str(),
                "git_commit": after(installed).git_commit,
            })),
            Adoption::Refused { files, violations } => Some(serde_json::json!({
                "adopted": false,
                "files": files,
                // `null`: these very edits were refused before and were not validated again.
                "violations": violations,
                "reason": "the edits do not validate (run `scriptorium check`); searched as they are",
            })),
            Adoption::Nothing | Adoption::Busy => None,
        }
    }

    /// The same, as one line for a person (or a model reading a tool result).
    pub fn note(&self) -> Option<String> {
        match self {
            Adoption::Installed { files, installed } => {
                let commit = after(installed)
                    .git_commit
                    .map(|c| format!(", git commit {}", &c[..c.len().min(12)]))
                    .unwrap_or_default();
                Some(format!(
                    "note: took in edits made outside a transaction: {} (revision {}{commit})",
                    files.join(", "),
                    installed.revision
                ))
            }
            Adoption::Refused { files, .. } => Some(format!(
                "note: edits made outside a transaction do not validate: {} (run `scriptorium \
                 check`); searched as they are",
                files.join(", ")
            )),
            Adoption::Nothing | Adoption::Busy => None,
        }
    }
}

/// The file (in `.scriptorium/`) naming the live revision whose outside edits were refused,
/// so that a search does not validate the same invalid edit again.
const REFUSED_FILE: &str = "outside-refused";

/// Distinguishes the temporaries of concurrent saves of [`REFUSED_FILE`] within one process.
static REFUSED_SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Why [`open_history`] returned no history.
enum HistoryOpen {
    /// The repair needs the write lock, and another process holds it.
    Busy,
    /// The history cannot be opened or repaired.
    Failed(String),
}

/// Opens (or creates) the history and brings it up to the installed transaction. Runs under
/// the workspace write lock, the only place commits are made from, so lock files a killed
/// committer left in `.git` are stale and removed first. When `HEAD` does not name the
/// installed transaction, the process that installed it died before its commit, so possibly
/// while it rewrote the views: they are rebuilt from the installed tree before the catch-up
/// commit records them. So are views written without fsync in an earlier boot
/// (`scriptorium_views::views_written_in_another_boot`: a power loss may have emptied them).
fn open_history(workspace: &Workspace, lock: LockTimeout) -> Result<History, HistoryOpen> {
    let failed = |e: &dyn std::fmt::Display| HistoryOpen::Failed(e.to_string());
    let root = workspace.root();
    // Nothing to repair: no lock needed (opening never waits for another process's install).
    let installed = workspace.installed_txn_id().map_err(|e| failed(&e))?;
    // Views written without fsync in an earlier boot may have been lost with its page cache.
    let views_lost = scriptorium_views::views_written_in_another_boot(root);
    if !views_lost && let Some(history) = History::settled(root, &installed) {
        return Ok(history);
    }
    let repair = || -> Result<History, String> {
        let history = History::open_or_init(root, now()).map_err(|e| e.to_string())?;
        history.remove_stale_locks().map_err(|e| e.to_string())?;
        let installed = workspace.installed_txn_id().map_err(|e| e.to_string())?;
        let behind = !installed.is_empty()
            && history.last_txn_id().map_err(|e| e.to_string())?.as_deref()
                != Some(installed.as_str());
        if behind || scriptorium_views::views_written_in_another_boot(root) {
            let options = scriptorium_views::RebuildOptions {
                creation_order: workspace
                    .creation_order()
                    .map(|order| order.to_map())
                    .unwrap_or_default(),
                ..scriptorium_views::RebuildOptions::default()
            };
            if let Err(error) = scriptorium_views::rebuild_workspace(root, &options) {
                tracing::warn!(%error, "rebuilding the views after a crash failed");
            }
        }
        if !installed.is_empty() {
            history.catch_up(&installed, now()).map_err(|e| e.to_string())?;
        }
        Ok(history)
    };
    match workspace.with_write_lock(lock, repair) {
        Ok(opened) => opened.map_err(HistoryOpen::Failed),
        Err(scriptorium_txn::Error::Busy { .. }) => Err(HistoryOpen::Busy),
        Err(error) => Err(failed(&error)),
    }
}

impl MemoryWorkspace {
    /// Opens the workspace at `root` (with `create`, initializes it first), which runs the
    /// engine's recovery, then opens (or creates) its git history and commits what an earlier
    /// crash left uncommitted (catch-up to the installed transaction). A history that cannot be
    /// opened is reported by [`MemoryWorkspace::history_error`], not as an error: memory works
    /// without git.
    ///
    /// Disk effects: those of `Workspace::init`/`open` (recovery, layout, permissions) and of
    /// `History::open_or_init`/`catch_up` (a repository and at most two commits).
    pub fn open(root: impl AsRef<Path>, create: bool) -> Result<MemoryWorkspace, Error> {
        MemoryWorkspace::open_wired(root, create, Wiring::default())
    }

    /// [`MemoryWorkspace::open`] keeping only the derived state `wiring` asks for (git is
    /// always kept when the history opens).
    pub fn open_wired(
        root: impl AsRef<Path>,
        create: bool,
        wiring: Wiring,
    ) -> Result<MemoryWorkspace, Error> {
        let memory = MemoryWorkspace::open_without_history(root, create, wiring)?;
        if !memory.ensure_history(LockTimeout::DEFAULT) {
            let _ = memory.history_error.set(format!(
                "the git history needs a repair and the workspace lock stayed busy for {:?}",
                LockTimeout::DEFAULT.timeout
            ));
        }
        Ok(memory)
    }

    /// [`MemoryWorkspace::open`] for a process that may only read: the git history is opened
    /// (and caught up) only before the first install this handle makes, or by
    /// [`MemoryWorkspace::finish`] after the reading is done, so a search answers before it
    /// reads `.git`. [`MemoryWorkspace::history`] is `None` until then.
    pub fn open_for_reading(root: impl AsRef<Path>) -> Result<MemoryWorkspace, Error> {
        MemoryWorkspace::open_without_history(root, false, Wiring::default())
    }

    /// Whether a memory workspace is at `root` (what [`MemoryWorkspace::open`] without
    /// `create` requires; two `stat`s, nothing opened).
    pub fn exists(root: &Path) -> bool {
        root.join("topics").is_dir() || root.join(".scriptorium").is_dir()
    }

    fn open_without_history(
        root: impl AsRef<Path>,
        create: bool,
        wiring: Wiring,
    ) -> Result<MemoryWorkspace, Error> {
        let root = root.as_ref().to_path_buf();
        if !create && !MemoryWorkspace::exists(&root) {
            return Err(Error::NotFound { root });
        }
        let txn_err = |source| Error::Txn { root: root.clone(), source };
        // Recovery first (it never installs anything new, so the observer hears nothing);
        // the history, which needs to know the installed transaction, comes after.
        let derived = Arc::new(Derived::new(None, wiring));
        let observers: Vec<Arc<dyn InstallObserver>> = vec![derived.clone()];
        let options = Options { observers, ..Options::default() };
        let workspace = if create {
            Workspace::init_with(&root, options)
        } else {
            Workspace::open_with(&root, options)
        }
        .map_err(txn_err)?;
        Ok(MemoryWorkspace {
            workspace,
            history_error: OnceLock::new(),
            derived,
            outside_check: Mutex::new(None),
            outside_interval: Duration::ZERO,
            backlinks_cache: Mutex::new(None),
            redactor: OnceLock::new(),
        })
    }

    /// Opens the history (once) and brings it up to the installed transaction, so the
    /// observer can commit the next install, waiting at most `lock` for the write lock a
    /// repair needs. Returns `false` only when that lock was busy (nothing is recorded then:
    /// the next call tries again); a history that cannot be opened is recorded in
    /// [`MemoryWorkspace::history_error`] and memory works without git.
    fn ensure_history(&self, lock: LockTimeout) -> bool {
        if self.derived.history.get().is_some() || self.history_error.get().is_some() {
            return true;
        }
        match open_history(&self.workspace, lock) {
            Ok(history) => {
                let _ = self.derived.history.set(history);
            }
            Err(HistoryOpen::Busy) => return false,
            Err(HistoryOpen::Failed(error)) => {
                let _ = self.history_error.set(error);
            }
        }
        true
    }

    /// How often [`MemoryWorkspace::search`] looks for outside edits (one `lstat` per file of
    /// `topics/` and `sources/`): by default on every search; a long-lived process answering
    /// every turn sets an interval.
    pub fn set_outside_check_interval(&mut self, interval: Duration) {
        self.outside_interval = interval;
    }

    /// Takes in what another program (an editor, the Python implementation, `git pull`) wrote
    /// into `topics/` or `sources/`: when the live trees differ from what the last install
    /// recorded, runs
    /// one transaction that changes nothing itself, so it installs exactly the outside edits
    /// (validated like any change; IDs minted for new records) and the views, the index and
    /// git catch up with those files. Never waits for the write lock (`Busy`), never commits
    /// nothing. Also refreshes the stat cache when a copy or checkout touched files without
    /// changing them.
    pub fn adopt_outside_edits(&self) -> Result<Adoption, scriptorium_txn::Error> {
        Ok(self.adopt_outside_edits_at()?.0)
    }

    /// [`MemoryWorkspace::adopt_outside_edits`], with the live revision it found before doing
    /// anything (the installed one when there was nothing to take in).
    fn adopt_outside_edits_at(
        &self,
    ) -> Result<(Adoption, scriptorium_txn::Revision), scriptorium_txn::Error> {
        let ws = &self.workspace;
        let state = ws.revision_state()?;
        let live = state.revision.clone();
        if state.stat_cache_stale
            && let Err(error) = ws.refresh_stat_cache()
        {
            // A cache: failing to refresh it costs the next scan some reads, nothing else.
            tracing::warn!(%error, "refreshing the revision record's stat cache failed");
        }
        if !state.topics_edited_outside && !state.sources_changed_outside {
            return Ok((Adoption::Nothing, live));
        }
        let mut files = state.outside_files.clone();
        if state.sources_changed_outside {
            files.push("sources/".to_owned());
        }
        let refused = ws.root().join(".scriptorium").join(REFUSED_FILE);
        let refused_before = read_in(&RealFs, ws.root(), &format!(".scriptorium/{REFUSED_FILE}"))
            .is_ok_and(|r| r.trim_ascii() == state.revision.as_str().as_bytes());
        if refused_before {
            return Ok((Adoption::Refused { files, violations: None }, live));
        }
        // The install below commits: the history must be open and caught up first, and a
        // repair of it must not make the search wait for the lock either.
        if !self.ensure_history(LockTimeout::new(Duration::ZERO)) {
            return Ok((Adoption::Busy, live));
        }
        let shown = files.iter().take(3).map(String::as_str).collect::<Vec<_>>().join(", ");
        let more = files.len().saturating_sub(3);
        let message = if more == 0 {
            format!("memory: adopt outside edits to {shown}")
        } else {
            format!("memory: adopt outside edits to {shown} and {more} more")
        };
        let opts = scriptorium_txn::BeginOptions {
            base_revision: Some(state.revision.clone()),
            lock_timeout: LockTimeout::new(Duration::ZERO),
            message,
            ..scriptorium_txn::BeginOptions::default()
        };
        let busy = |error: &scriptorium_txn::Error| {
            matches!(
                error,
                scriptorium_txn::Error::Busy { .. }
                    | scriptorium_txn::Error::ConcurrentUpdate { .. }
            )
        };
        let mut staged = match ws.begin(opts) {
            Ok(staged) => staged,
            Err(error) if busy(&error) => return Ok((Adoption::Busy, live)),
            Err(error) => return Err(error),
        };
        // An editor is a door too: what the edited files hold that memory never keeps (a
        // pasted key, a `<private>` span) is redacted before the install commits it.
        let mut redacted = scriptorium_redact::Counts::default();
        // The stage is filled on first use, under the write lock again: another process
        // holding it now is a busy workspace (the next search adopts), never an error.
        for path in files.iter().filter(|p| p.starts_with("topics/") && p.ends_with(".md")) {
            let text = match staged.read_file(path) {
                Ok(text) => text,
                Err(error) if busy(&error) => return Ok((Adoption::Busy, live)),
                Err(error) => return Err(error),
            };
            if let Some(text) = text {
                let redaction = self.redactor().redact(&text);
                if !redaction.counts.is_empty() {
                    redacted.add(&redaction.counts);
                    match staged.write_file(path, &redaction.text) {
                        Ok(()) => {}
                        Err(error) if busy(&error) => return Ok((Adoption::Busy, live)),
                        Err(error) => return Err(error),
                    }
                }
            }
        }
        crate::privacy::record(ws.root(), &redacted);
        match staged.validate() {
            Ok(validated) => match validated.install() {
                Ok(installed) => Ok((
                    Adoption::Installed {
                        files: installed.adopted.clone(),
                        installed: Box::new(installed),
                    },
                    live,
                )),
                Err(error) if busy(&error) => Ok((Adoption::Busy, live)),
                Err(error) => Err(error),
            },
            // Filling the stage found the write lock held (validation reports that as a
            // violation of the whole tree): busy, not a refusal to remember.
            Err(rejected)
                if !rejected.violations().is_empty()
                    && rejected.violations().iter().all(|v| {
                        v.path.is_none()
                            && matches!(
                                v.code,
                                scriptorium_txn::ErrorCode::Busy
                                    | scriptorium_txn::ErrorCode::ConcurrentUpdate
                            )
                    }) =>
            {
                Ok((Adoption::Busy, live))
            }
            Err(rejected) => {
                let violations = rejected.violations().len();
                tracing::warn!(
                    files = %files.join(", "),
                    violations,
                    "edits made outside a transaction do not validate; run `scriptorium check`"
                );
                let marker = format!("{}\n", state.revision);
                // A save killed halfway leaves a `tmp-*` temporary, which the next recovery
                // removes; a save that loses a race only validates the same edits once more.
                let temp = ws.root().join(".scriptorium").join(format!(
                    "tmp-refused-{}-{}",
                    std::process::id(),
                    REFUSED_SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                ));
                let saved = write_atomic(
                    &RealFs,
                    &temp,
                    &refused,
                    marker.as_bytes(),
                    0o600,
                    Durability::Durable,
                );
                if let Err(error) = saved {
                    // Only costs validating the same edits again on the next search.
                    tracing::warn!(%error, "remembering the refused outside edits failed");
                }
                Ok((Adoption::Refused { files, violations: Some(violations) }, live))
            }
        }
    }

    /// Registers a sync's merge for the install whose message is `merge.message` (replacing
    /// any earlier one that never installed); `None` withdraws it.
    pub(crate) fn set_pending_merge(&self, merge: Option<PendingMerge>) {
        *self.derived.merge.lock().unwrap_or_else(PoisonError::into_inner) = merge;
    }

    /// Sets the redactor of the doors this workspace owns (notes, change requests, edits),
    /// usually `Config::redactor`; the first one set stays.
    pub fn set_redactor(&self, redactor: scriptorium_redact::Redactor) {
        let _ = self.redactor.set(redactor);
    }

    /// The redactor of the doors this workspace owns (see [`MemoryWorkspace::set_redactor`]).
    pub fn redactor(&self) -> &scriptorium_redact::Redactor {
        self.redactor.get_or_init(scriptorium_redact::Redactor::builtin)
    }

    /// The transaction engine's workspace (with the observer registered).
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The git history, when it could be opened.
    pub fn history(&self) -> Option<&History> {
        self.derived.history.get()
    }

    /// Why the git history could not be opened.
    pub fn history_error(&self) -> Option<&str> {
        self.history_error.get().map(String::as_str)
    }

    /// The history, or why there is none (for a face's `GIT_UNAVAILABLE` answer).
    pub fn history_or_why(&self) -> Result<&History, String> {
        self.history().ok_or_else(|| {
            format!("git history unavailable: {}", self.history_error().unwrap_or("unknown error"))
        })
    }

    /// Recalls blocks and source records for `query`. First takes in edits made outside any
    /// transaction ([`MemoryWorkspace::adopt_outside_edits`]; at most once per
    /// [`MemoryWorkspace::set_outside_check_interval`]), then searches the index at the
    /// installed revision, which catches up with the changed files first if the revision
    /// moved. Outside edits that could not be installed (invalid, or the lock busy) are
    /// searched as they are: the index catches up with the live files by stat.
    pub fn search(&self, query: &Query) -> Result<Vec<Hit>, SearchError> {
        Ok(self.search_reporting(query)?.0)
    }

    /// [`inspect::get`](crate::inspect::get) in this workspace; a record read by its anchor also
    /// lists the blocks citing it (at most [`MAX_CITING`](crate::inspect::MAX_CITING), from the
    /// search index: when the index cannot answer, none, and the failure is logged; a read never
    /// fails for it).
    pub fn get(
        &self,
        path: &str,
        heading: Option<&str>,
        block_id: Option<&str>,
        window: crate::inspect::Window,
    ) -> Result<crate::inspect::Excerpt, crate::inspect::InspectError> {
        let mut excerpt =
            crate::inspect::get(self.workspace.root(), path, heading, block_id, window)?;
        self.add_citing(&mut excerpt);
        Ok(excerpt)
    }

    /// Fills in the blocks citing the record `excerpt` read, if it read one (see
    /// [`MemoryWorkspace::get`]).
    pub fn add_citing(&self, excerpt: &mut crate::inspect::Excerpt) {
        if let Some(record) = excerpt.record.as_mut() {
            match self.cited_by(&record.source_id, crate::inspect::MAX_CITING) {
                Ok(hits) => record.cited_by = crate::inspect::Citing::from_hits(&hits),
                Err(error) => {
                    tracing::warn!(%error, "the blocks citing a record could not be listed");
                }
            }
        }
    }

    /// The blocks citing the source record `source_id` (at most `limit`, in file and line
    /// order), from the search index brought to the installed revision.
    pub fn cited_by(&self, source_id: &str, limit: usize) -> Result<Vec<Hit>, SearchError> {
        let revision = self.workspace.installed_revision().map_err(SearchError::Txn)?;
        let slot = &self.derived.index;
        if let Some(snapshot) = slot.snapshot().filter(|s| s.revision() == Some(revision.as_str()))
        {
            return snapshot.citing(source_id, limit).map_err(SearchError::Search);
        }
        with_index(self.workspace.root(), slot, |index| {
            index.sync(revision.as_str(), None)?;
            index.citing(source_id, limit)
        })
        .map_err(SearchError::Search)
    }

    /// The blocks linking to the blocks of the topic whose text is `content`, from
    /// `relations.json` (a derived view: missing or unreadable means none, logged), each
    /// linking block looked up in the search index brought to the installed revision; in
    /// target order, then file and line; at most [`MAX_BACKLINKS`](crate::inspect::MAX_BACKLINKS).
    pub fn backlinks(&self, content: &str) -> Result<Vec<crate::inspect::Backlink>, SearchError> {
        use crate::inspect::{Backlink, Citing, MAX_BACKLINKS};
        let root = self.workspace.root();
        let relations = self.relations_backlinks();
        let mut links: Vec<(String, String)> = Vec::new();
        for target in scriptorium_topics_format::topic::line_end_ids(content) {
            for source in relations.get(&target).into_iter().flatten() {
                links.push((target.clone(), source.clone()));
            }
        }
        links.truncate(MAX_BACKLINKS);
        if links.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = links.iter().map(|(_, source)| source.as_str()).collect();
        let revision = self.workspace.installed_revision().map_err(SearchError::Txn)?;
        let slot = &self.derived.index;
        let hits = match slot.snapshot().filter(|s| s.revision() == Some(revision.as_str())) {
            Some(snapshot) => snapshot.blocks(&ids),
            None => with_index(root, slot, |index| {
                index.sync(revision.as_str(), None)?;
                index.blocks(&ids)
            }),
        }
        .map_err(SearchError::Search)?;
        let found = Citing::from_hits(&hits);
        Ok(links
            .into_iter()
            .flat_map(|(target, source)| {
                let mut from: Vec<Citing> =
                    found.iter().filter(|c| c.block_id == source).cloned().collect();
                if from.is_empty() {
                    from.push(Citing {
                        path: String::new(),
                        block_id: source,
                        snippet: String::new(),
                    });
                }
                from.into_iter().map(move |from| Backlink { target: target.clone(), from })
            })
            .collect())
    }

    /// The backlinks of `relations.json`, read again only when the file was replaced; empty
    /// when it is missing or unreadable (derived: `scriptorium rebuild` writes it again).
    fn relations_backlinks(&self) -> Arc<Backlinks> {
        let root = self.workspace.root();
        let Ok(meta) = RealFs.metadata(&root.join("relations.json")) else {
            return Arc::default();
        };
        let key = (meta.ino, meta.mtime_ns, meta.len);
        let mut cache = self.backlinks_cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((cached, backlinks)) = cache.as_ref()
            && *cached == key
        {
            return Arc::clone(backlinks);
        }
        let backlinks = match read_in(&RealFs, root, "relations.json") {
            Ok(bytes) => match serde_json::from_slice::<Relations>(&bytes) {
                Ok(relations) => Arc::new(relations.backlinks),
                Err(error) => {
                    tracing::warn!(%error, "relations.json is not valid; run `scriptorium rebuild`");
                    return Arc::default();
                }
            },
            Err(_) => return Arc::default(),
        };
        *cache = Some((key, Arc::clone(&backlinks)));
        backlinks
    }

    /// [`MemoryWorkspace::search`], also saying what it did about outside edits (`None` when
    /// it did not look: the check interval had not passed).
    pub fn search_reporting(
        &self,
        query: &Query,
    ) -> Result<(Vec<Hit>, Option<Adoption>), SearchError> {
        let (revision, adoption) = self.search_revision().map_err(SearchError::Txn)?;
        let slot = &self.derived.index;
        let snapshot = slot.snapshot();
        // The last commit already reflects this revision: no lock at all.
        if let Some(snapshot) =
            snapshot.as_ref().filter(|s| s.revision() == Some(revision.as_str()))
        {
            return Ok((snapshot.search(query).map_err(SearchError::Search)?, adoption));
        }
        let search = |index: &mut Index| index.search(revision.as_str(), query);
        let root = self.workspace.root();
        let hits = match slot.index.try_lock() {
            Ok(mut guard) => slot.run(root, &mut guard, search),
            Err(TryLockError::Poisoned(poisoned)) => {
                slot.run(root, &mut poisoned.into_inner(), search)
            }
            // An install is updating the index: what it last committed answers now (one
            // install behind at most) rather than waiting for the update.
            Err(TryLockError::WouldBlock) => match snapshot {
                Some(snapshot) => snapshot.search(query),
                None => with_index(root, slot, search),
            },
        };
        let hits = match hits {
            // Another process holds the index's writer (its install is committing the update
            // this revision needs): a read-only search answers from the last commit rather
            // than fail, so a turn never goes without recall because memory is being written.
            Err(error) if error.code() == scriptorium_search::ErrorCode::Busy => {
                match slot.snapshot() {
                    Some(snapshot) => snapshot.search(query),
                    None => Err(error),
                }
            }
            other => other,
        }
        .map_err(SearchError::Search)?;
        Ok((hits, adoption))
    }

    /// The revision a search must see: the installed one after taking in outside edits, or
    /// the live one when some remain.
    fn search_revision(
        &self,
    ) -> Result<(scriptorium_txn::Revision, Option<Adoption>), scriptorium_txn::Error> {
        let mut last = self.outside_check.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(check) = last.as_ref()
            && check.at.elapsed() < self.outside_interval
        {
            // Not due: the live revision seen last time still stands while nothing installed.
            let installed = self.workspace.installed_revision()?;
            let revision = match &check.live {
                Some((over, live)) if *over == installed => live.clone(),
                _ => installed,
            };
            return Ok((revision, None));
        }
        // A running outside-edit watch (`scriptorium_search::watch`) that saw nothing happen in
        // either tree since a scan found them as the record lists them spares this search the
        // scan (a `lstat` per file of both trees); without a watch, or when it saw a change,
        // the search scans, and tells the watch when the scan found nothing outside.
        let root = self.workspace.root();
        let watched = scriptorium_search::watch::ask(root);
        if watched.is_some_and(|w| w.clean) {
            *last = Some(OutsideCheck { at: Instant::now(), live: None });
            return Ok((self.workspace.installed_revision()?, Some(Adoption::Nothing)));
        }
        let (adoption, live) = self.adopt_outside_edits_at()?;
        if let (Some(watched), Adoption::Nothing) = (watched, &adoption) {
            scriptorium_search::watch::mark_clean(root, watched.sequence);
        }
        let (revision, remembered) = match &adoption {
            // Nothing was edited outside: the live revision is the installed one.
            Adoption::Nothing => (live, None),
            Adoption::Installed { installed, .. } => (installed.revision.clone(), None),
            // Outside edits stay: search them as they are (the index catches up by stat).
            Adoption::Refused { .. } | Adoption::Busy => {
                let installed = self.workspace.installed_revision()?;
                (live.clone(), Some((installed, live)))
            }
        };
        *last = Some(OutsideCheck { at: Instant::now(), live: remembered });
        Ok((revision, Some(adoption)))
    }

    /// For a process about to exit: brings a history opened lazily up to date (see
    /// [`MemoryWorkspace::open_for_reading`]) and lets the search index finish the segment
    /// merges its last updates started (see `Index::finish_merges`). A failure only leaves more
    /// segments to merge next time, so it is logged, not returned.
    pub fn finish(&self) {
        // A handle opened for reading has not looked at git yet: a process killed after its
        // install but before its commit left the history behind, and the catch-up belongs to
        // the next process that opens the workspace, this one included (never waiting for
        // the lock: a busy lock means another process is installing, and so committing).
        self.ensure_history(LockTimeout::new(Duration::ZERO));
        let slot = &self.derived.index;
        let mut guard = slot.index.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = guard.as_mut() {
            if let Err(error) = index.finish_merges() {
                tracing::warn!(%error, "finishing the search index merges failed");
            }
            *slot.snapshot.write().unwrap_or_else(PoisonError::into_inner) = Some(index.snapshot());
        }
    }

    /// Rebuilds the search index from scratch (deletes `.scriptorium/index/` and re-indexes
    /// every file); returns the number of indexed documents.
    pub fn rebuild_index(&self) -> Result<u64, SearchError> {
        let revision = self.workspace.installed_revision().map_err(SearchError::Txn)?;
        let root = self.workspace.root();
        let slot = &self.derived.index;
        let mut guard = slot.index.lock().unwrap_or_else(PoisonError::into_inner);
        *guard = None;
        *slot.snapshot.write().unwrap_or_else(PoisonError::into_inner) = None;
        let dir = root.join(".scriptorium/index");
        if RealFs.metadata(&dir).is_ok() {
            RealFs.remove_tree(&dir).map_err(|source| {
                SearchError::Search(scriptorium_search::Error::Io { path: dir.clone(), source })
            })?;
        }
        let mut index = Index::open(root).map_err(SearchError::Search)?;
        index.sync(revision.as_str(), None).map_err(SearchError::Search)?;
        let docs = index.num_docs();
        *slot.snapshot.write().unwrap_or_else(PoisonError::into_inner) = Some(index.snapshot());
        *guard = Some(index);
        Ok(docs)
    }
}

#[cfg(test)]
mod tests {
    use scriptorium_search::{HitKind, Query};
    use scriptorium_topics_format::source::ArchiveRecord;
    use scriptorium_txn::{BeginOptions, LockTimeout, Workspace};

    use super::MemoryWorkspace;

    fn record(message: &str, content: &str) -> ArchiveRecord {
        let mut record = ArchiveRecord::new("openprogram", "s1", message, 1, "user", content);
        record.timestamp = Some("2024-04-02T09:14:00+02:00".into());
        record
    }

    /// A new workspace at `root` with `u1` ("Dana keeps bees.") archived and cited by a block.
    fn keeping_bees(root: &std::path::Path) -> MemoryWorkspace {
        let memory = MemoryWorkspace::open(root, true).expect("open");
        memory
            .workspace()
            .archive_sources(&[record("u1", "Dana keeps bees.")], LockTimeout::DEFAULT)
            .expect("archive");
        install(&memory, "Dana keeps bees.", "u1");
        memory
    }

    /// Appends a paragraph citing `openprogram/s1/<message>` to `topics/people/dana.md`.
    fn install(memory: &MemoryWorkspace, text: &str, message: &str) {
        let path = memory.workspace().root().join("topics/people/dana.md");
        let base = std::fs::read_to_string(path).unwrap_or_else(|_| "# Dana\n".to_owned());
        let mut staged = memory.workspace().begin(BeginOptions::default()).expect("begin");
        staged
            .write_file(
                "topics/people/dana.md",
                &format!(
                    "{base}\n{text}[^{message}]\n\n\
                     [^{message}]: Time: `2024-04-02`; Sources: [turn](openprogram/s1/{message})\n"
                ),
            )
            .expect("write");
        staged.validate().expect("valid").install().expect("install");
    }

    /// An install's index update is prepared beside the install (`installing`) and published
    /// only once it happened: an install failing at any of its filesystem calls leaves the index
    /// at a revision the workspace had, and the next search finds what is installed.
    #[test]
    fn an_install_failing_at_any_step_never_publishes_its_index_update() {
        use std::sync::Arc;

        use scriptorium_txn::{FaultFs, Fs, InstallObserver, Options, RealFs};

        use super::{Derived, Wiring};

        let edit = |fs: Arc<dyn Fs>, root: &std::path::Path| -> bool {
            let observer = Arc::new(Derived::new(None, Wiring { views: false, index: true }));
            let observers: Vec<Arc<dyn InstallObserver>> = vec![observer];
            let Ok(ws) =
                Workspace::open_with(root, Options { fs, observers, ..Options::default() })
            else {
                return false;
            };
            let path = root.join("topics/people/dana.md");
            let base = std::fs::read_to_string(path).expect("the topic");
            let Ok(mut staged) = ws.begin(BeginOptions::default()) else { return false };
            let text = base.replace("Dana keeps bees.", "Dana keeps bees and a tortoise.");
            staged.write_file("topics/people/dana.md", &text).is_ok()
                && staged.validate().is_ok_and(|v| v.install().is_ok())
        };
        let counting = Arc::new(FaultFs::counting(Arc::new(RealFs)));
        let reference = tempfile::tempdir().expect("tempdir");
        drop(keeping_bees(reference.path()));
        assert!(edit(counting.clone(), reference.path()), "the uninterrupted edit installs");
        let calls = counting.calls();
        let mut failed = 0;
        for k in 0..calls {
            let dir = tempfile::tempdir().expect("tempdir");
            drop(keeping_bees(dir.path()));
            let before = Workspace::open(dir.path()).expect("open").revision().expect("revision");
            if edit(Arc::new(FaultFs::fail_at(Arc::new(RealFs), k)), dir.path()) {
                continue;
            }
            failed += 1;
            let after = Workspace::open(dir.path()).expect("open").revision().expect("revision");
            let index = scriptorium_search::Index::open(dir.path()).expect("index");
            let indexed = index.revision().map(str::to_owned);
            assert!(
                indexed.as_deref() == Some(before.as_str())
                    || indexed.as_deref() == Some(after.as_str()),
                "call {k}: the index is at {indexed:?}, the workspace went {before} -> {after}"
            );
            drop(index);
            let memory = MemoryWorkspace::open(dir.path(), false).expect("open");
            let hits = memory.search(&Query::new("tortoise")).expect("search");
            assert_eq!(
                hits.iter().any(|h| h.kind == HitKind::Block),
                after != before,
                "call {k}: the search finds exactly what is installed"
            );
        }
        assert!(failed > 5, "faults inside the install were injected ({failed} of {calls})");
    }

    /// Regression: a write killed after archiving its batch but before indexing the archive
    /// left it out of the search index for good. The next install's hint named only that
    /// install's files, and the index, stamped with the new revision, never looked again: the
    /// archived records and the blocks citing them were never recalled.
    #[test]
    fn an_archive_the_index_missed_is_indexed_by_the_next_install() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memory = keeping_bees(dir.path());
        drop(memory);
        // The append of a process that died before telling the index (no observer).
        Workspace::open(dir.path())
            .expect("open")
            .archive_sources(
                &[record("u2", "Dana sells honey at the market.")],
                LockTimeout::DEFAULT,
            )
            .expect("archive");

        let memory = MemoryWorkspace::open(dir.path(), false).expect("open");
        install(&memory, "Dana sells honey at the market.", "u2");
        let hits = memory.search(&Query::new("honey market")).expect("search");
        // One hit per fact: the block, with the record it cites as its evidence.
        let block = hits.iter().find(|h| h.kind == HitKind::Block).expect("the block");
        assert_eq!(block.collapsed, ["openprogram/s1/u2"], "the record: {hits:?}");
    }

    /// Regression: a process killed while it wrote a view left its temporary file in
    /// `.scriptorium/` for good. The views' temporaries are the engine's `tmp-*` files now,
    /// which the next open's recovery removes.
    #[test]
    fn a_views_temporary_a_killed_process_left_is_removed_on_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(MemoryWorkspace::open(dir.path(), true).expect("open"));
        let left = dir
            .path()
            .join(".scriptorium")
            .join(format!("{}4242-0.tmp", scriptorium_views::TEMP_PREFIX));
        std::fs::write(&left, "half a view").expect("write");
        drop(MemoryWorkspace::open(dir.path(), false).expect("reopen"));
        assert!(!left.exists(), "the leftover temporary is gone");
    }

    /// Views are written without fsync where the platform names the boot: a power loss may
    /// leave one empty. The boot they were written in is recorded, and opening the history in
    /// another boot rebuilds them (here the power loss is played: the record names another boot
    /// and a view lost its bytes).
    #[test]
    fn views_written_in_another_boot_are_rebuilt_on_open() {
        let Some(boot) = scriptorium_workspace_fs::boot_id() else { return };
        let dir = tempfile::tempdir().expect("tempdir");
        drop(keeping_bees(dir.path()));
        let marker = dir.path().join(scriptorium_views::VIEWS_BOOT);
        assert_eq!(std::fs::read_to_string(&marker).expect("the boot is recorded"), boot);
        let relations = dir.path().join("relations.json");
        let whole = std::fs::read(&relations).expect("relations");
        assert!(!whole.is_empty());

        // The same boot: an emptied view is an outside edit of derived state, left alone.
        std::fs::write(&relations, "").expect("empty");
        drop(MemoryWorkspace::open(dir.path(), false).expect("reopen"));
        assert!(std::fs::read(&relations).expect("relations").is_empty());

        // After a power loss: another boot on record.
        std::fs::write(&marker, "0b5e55ed-0000-4000-8000-000000000000").expect("marker");
        drop(MemoryWorkspace::open(dir.path(), false).expect("reopen"));
        assert_eq!(std::fs::read(&relations).expect("relations"), whole, "rebuilt");
        assert_eq!(std::fs::read_to_string(&marker).expect("marker"), boot, "checked in this boot");
    }

    /// Frames another program appended to an archive (the Python implementation archives
    /// outside our transactions) are taken in by the next search: recalled, recorded in the
    /// revision record (no "sources changed outside" afterwards) and committed to git.
    #[test]
    fn archives_another_program_wrote_are_taken_in_by_the_next_search() {
        use std::collections::BTreeMap;

        use scriptorium_topics_format::source::plan_append;

        let dir = tempfile::tempdir().expect("tempdir");
        let memory = keeping_bees(dir.path());
        // The other program: the same archive file with one frame more, written in place.
        let rel = "sources/openprogram/_v2/s1.md";
        let path = dir.path().join(rel);
        let text = std::fs::read_to_string(&path).expect("the archive");
        let tree = BTreeMap::from([(rel.to_owned(), text)]);
        let mut honey = record("u2", "Dana sells honey at the market.");
        honey.ordinal = 2;
        let plan = plan_append(&[honey], &tree).expect("plan");
        assert_eq!(plan.writes.len(), 1);
        std::fs::write(&path, &plan.writes[0].new_text).expect("write in place");
        assert!(memory.workspace().revision_state().expect("state").sources_changed_outside);

        let (hits, adoption) =
            memory.search_reporting(&Query::new("honey market")).expect("search");
        assert!(hits.iter().any(|h| h.id == "openprogram/s1/u2"), "recalled: {hits:?}");
        match adoption {
            Some(super::Adoption::Installed { files, .. }) => assert_eq!(files, [rel]),
            other => panic!("taken in by one install: {other:?}"),
        }
        assert!(!memory.workspace().revision_state().expect("state").sources_changed_outside);
        let history = memory.history().expect("history");
        assert_eq!(
            history.last_txn_id().expect("HEAD").as_deref(),
            Some(memory.workspace().installed_txn_id().expect("txn").as_str()),
            "git holds the install that took the frame in"
        );
    }

    /// A per-turn search never waits for an install's index update: while the index is held
    /// (here by this very thread, so waiting would never end) a search at the revision the
    /// last commit reflects reads that commit, and a search at a newer revision gets what the
    /// index last committed; once the index is free, the next search catches up.
    #[test]
    fn a_search_never_waits_for_the_index_update() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memory = MemoryWorkspace::open(dir.path(), true).expect("open");
        memory
            .workspace()
            .archive_sources(
                &[record("u1", "Dana keeps bees."), record("u2", "Dana sells honey.")],
                LockTimeout::DEFAULT,
            )
            .expect("archive");
        install(&memory, "Dana keeps bees.", "u1");
        let bees = Query::new("bees");
        assert_eq!(memory.search(&bees).expect("search").len(), 2, "the block and the record");

        let held = memory.derived.index.index.lock().expect("the index lock");
        assert_eq!(memory.search(&bees).expect("search").len(), 2, "the snapshot answers");
        drop(held);

        // An install whose index update has not run yet: the index is behind its revision.
        let plain = Workspace::open(dir.path()).expect("open without observers");
        let base = std::fs::read_to_string(dir.path().join("topics/people/dana.md")).expect("read");
        let mut staged = plain.begin(BeginOptions::default()).expect("begin");
        staged
            .write_file(
                "topics/people/dana.md",
                &format!(
                    "{base}\nDana sells honey.[^u2]\n\n\
                     [^u2]: Time: `2024-04-02`; Sources: [turn](openprogram/s1/u2)\n"
                ),
            )
            .expect("write");
        staged.validate().expect("valid").install().expect("install");
        let honey = Query::new("honey");
        let held = memory.derived.index.index.lock().expect("the index lock");
        let stale = memory.search(&honey).expect("search");
        assert!(
            stale.iter().all(|h| h.kind != HitKind::Block),
            "the last commit holds no honey block yet: {stale:?}"
        );
        drop(held);
        let fresh = memory.search(&honey).expect("search");
        assert!(fresh.iter().any(|h| h.kind == HitKind::Block), "caught up: {fresh:?}");
    }
}
