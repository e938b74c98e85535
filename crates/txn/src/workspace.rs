//! The workspace: layout, creation and opening (with recovery), the workspace ID, the
//! permission migration and the current revision.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};

use crate::begin::CachedBaseline;
use crate::error::{Error, Result};
use crate::fs::{FileKind, Fs, RealFs};
use crate::ids::{Clock, IdSource, RandomIds, Revision, SystemClock, WorkspaceId};
use crate::lock::{self, LockTimeout, WriteLock};
use crate::observer::InstallObserver;
use crate::state::{
    InstalledBatch, Layout, ManifestEntry, RevisionRecord, RuntimeCache, SourcesScan, parse_record,
    read_record, read_record_bytes, read_runtime, refresh_stats, revision_of, scan_sources,
    sha256_hex, sources_of, walk, write_atomic,
};

/// What [`Workspace::open_with`] injects: the filesystem, the clock, ID randomness, the lock
/// timeout used by `open` itself, and the install observers.
#[derive(Clone)]
pub struct Options {
    /// Every filesystem call of staging, install, recovery and archiving goes through it.
    pub fs: Arc<dyn Fs>,
    /// The clock (transaction IDs embed its milliseconds).
    pub clock: Arc<dyn Clock>,
    /// Randomness for transaction, workspace and temp-file IDs.
    pub ids: Arc<dyn IdSource>,
    /// How long `open`/`init` wait for the write lock (recovery needs it).
    pub lock: LockTimeout,
    /// Told about every successful install, in order (see [`InstallObserver`]).
    pub observers: Vec<Arc<dyn InstallObserver>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fs: Arc::new(RealFs),
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds::default()),
            lock: LockTimeout::DEFAULT,
            observers: Vec::new(),
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("fs", &self.fs)
            .field("clock", &self.clock)
            .field("ids", &self.ids)
            .field("lock", &self.lock)
            .field("observers", &self.observers.len())
            .finish()
    }
}

/// A revision record's bytes and their parse.
pub(crate) type ParsedRecord = (Arc<[u8]>, Arc<RevisionRecord>);

/// The (inode, mtime in ns, size) of the revision record.
pub(crate) type RecordStat = (u64, i64, u64);

pub(crate) struct Inner {
    pub(crate) layout: Layout,
    pub(crate) fs: Arc<dyn Fs>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdSource>,
    pub(crate) observers: Vec<Arc<dyn InstallObserver>>,
    /// Set once an exchange failed with `EINVAL`/`ENOSYS`: later installs go straight to the
    /// two-rename fallback.
    pub(crate) no_exchange: AtomicBool,
    pub(crate) workspace_id: WorkspaceId,
    /// The baseline of the last revision this handle read or installed (see
    /// [`CachedBaseline`]).
    pub(crate) baseline_cache: Mutex<Option<Arc<CachedBaseline>>>,
    /// The last [`Workspace::installed_revision`]: the revision record's (inode, mtime, size)
    /// and the revision it gave.
    pub(crate) installed_cache: Mutex<Option<(RecordStat, Revision)>>,
    /// The last `runtime.json` this handle parsed or wrote.
    pub(crate) runtime_cache: Mutex<Option<RuntimeCache>>,
    /// The last revision record this handle parsed: its bytes and the parse (a 10 000-block
    /// record is ~65 KB of JSON; comparing bytes costs a fraction of parsing them again).
    pub(crate) record_cache: Mutex<Option<ParsedRecord>>,
}

/// An open memory workspace (layout: see `docs/format.md#the-memory-workspace`). Cheap to clone;
/// `Send + Sync`.
#[derive(Clone)]
pub struct Workspace {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Workspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.inner.layout.root)
            .field("workspace_id", &self.inner.workspace_id)
            .finish()
    }
}

/// The revision and what the revision record says about the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevisionState {
    /// The current revision (what `base_revision` must equal).
    pub revision: Revision,
    /// The install/append counter.
    pub counter: u64,
    /// The last installed transaction (empty before the first install).
    pub txn_id: String,
    /// `topics/` differs from what the last install recorded (edited outside a transaction);
    /// the next transaction takes the edited files as its baseline.
    pub topics_edited_outside: bool,
    /// A byte of `sources/` differs from what the last install or append recorded.
    pub sources_changed_outside: bool,
    /// The `topics/` files edited outside a transaction (workspace-relative, `topics/…`):
    /// changed, new, or gone since the last install recorded them.
    pub outside_files: Vec<String>,
    /// Some files' stat changed while their bytes did not (a copy, a checkout, `touch`), so
    /// every scan re-reads them until [`Workspace::refresh_stat_cache`] records the new stat.
    pub stat_cache_stale: bool,
}

/// The facts a revision is computed from.
#[derive(Clone, Debug)]
pub(crate) struct Current {
    pub(crate) record: Arc<RevisionRecord>,
    pub(crate) revision: Revision,
    /// The digest of `topics/` (the `sources/` one is `source_scan.digest`).
    pub(crate) topics: String,
    /// The live `topics/` the digest was taken from (without bytes).
    pub(crate) live: crate::live::LiveTree,
    /// The live `sources/` the digest was taken from.
    pub(crate) source_scan: SourcesScan,
}

impl Workspace {
    /// Creates (or completes) a workspace at `root` and opens it: `root/`, `topics/`,
    /// `sources/`, `.scriptorium/` and `.scriptorium/txn/` (directories 0700), the workspace ID
    /// and the revision record (files 0600). Idempotent; safe to race from several threads and
    /// processes (everything after the directories is created under the write lock).
    pub fn init(root: impl AsRef<Path>) -> Result<Workspace> {
        Workspace::init_with(root, Options::default())
    }

    /// [`Workspace::init`] with injected [`Options`].
    pub fn init_with(root: impl AsRef<Path>, options: Options) -> Result<Workspace> {
        let root = root.as_ref();
        let fs = options.fs.as_ref();
        create_dir_all(fs, root)?;
        let layout = Layout::new(root);
        for dir in [&layout.topics, &layout.sources, &layout.runtime, &layout.txn] {
            ensure_dir(fs, dir)?;
        }
        Workspace::open_with(root, options)
    }

    /// Opens an existing workspace (one with `topics/` or `.scriptorium/`), creating missing
    /// parts of the layout. Under the write lock it first runs [`recovery`](crate#recovery),
    /// which finishes or undoes a half-done install or archive append and removes abandoned
    /// stages, then makes sure the workspace ID (restored from the revision record when its file
    /// is lost; `WORKSPACE_ID_MISSING` when it cannot be) and the revision record exist. Still
    /// under the lock, once per workspace (`.scriptorium/permissions` records it), it migrates
    /// permissions (directories 0700, files 0600; symlinks untouched); later opens only check
    /// the root and its top-level directories. When there is nothing to recover or create (no
    /// intent record, temporary or abandoned stage; the ID, the record and the marker present)
    /// opening takes no lock at all, so it never waits for another process's install.
    pub fn open(root: impl AsRef<Path>) -> Result<Workspace> {
        Workspace::open_with(root, Options::default())
    }

    /// [`Workspace::open`] with injected [`Options`] (tests pass a `FaultFs`, a fixed clock,
    /// seeded IDs).
    pub fn open_with(root: impl AsRef<Path>, options: Options) -> Result<Workspace> {
        let root = root.as_ref().to_path_buf();
        let fs = options.fs.clone();
        let layout = Layout::new(&root);
        let is_dir = |p: &Path| fs.metadata(p).is_ok_and(|m| m.kind == FileKind::Dir);
        if !is_dir(&layout.topics) && !is_dir(&layout.runtime) {
            return Err(Error::NotAWorkspace { root });
        }
        ensure_dir(fs.as_ref(), &layout.runtime)?;
        ensure_dir(fs.as_ref(), &layout.txn)?;
        let id = match settled(fs.as_ref(), &layout)? {
            // Nothing to recover or create: no lock needed, so opening never waits for (or
            // fails because of) another process's install.
            Some(id) => {
                check_top_modes(fs.as_ref(), &layout)?;
                id
            }
            None => Workspace::open_locked(fs.as_ref(), &layout, &options)?,
        };
        Ok(Workspace {
            inner: Arc::new(Inner {
                layout,
                fs,
                clock: options.clock,
                ids: options.ids,
                observers: options.observers,
                no_exchange: AtomicBool::new(false),
                workspace_id: id,
                baseline_cache: Mutex::new(None),
                installed_cache: Mutex::new(None),
                runtime_cache: Mutex::new(None),
                record_cache: Mutex::new(None),
            }),
        })
    }

    /// The part of opening that needs the write lock: recovery, the workspace ID, the revision
    /// record, the permission migration.
    fn open_locked(fs: &dyn Fs, layout: &Layout, options: &Options) -> Result<WorkspaceId> {
        let id = {
            let _lock = lock::acquire(&layout.lock, options.lock)?;
            crate::recover::recover(fs, layout, options.ids.as_ref())?;
            ensure_dir(fs, &layout.topics)?;
            ensure_dir(fs, &layout.sources)?;
            let record = read_record(fs, layout)?;
            let id = ensure_workspace_id(fs, layout, options.ids.as_ref(), record.as_ref())?;
            if record.is_none() {
                let record = record_from_disk(fs, layout, 0, "", &id)?;
                write_atomic(
                    fs,
                    layout,
                    options.ids.as_ref(),
                    &layout.revision,
                    &record.to_bytes(),
                )?;
            }
            // Under the lock: an install renames and removes files while it runs.
            migrate_once(fs, layout, options.ids.as_ref())?;
            id
        };
        Ok(id)
    }

    /// The memory root.
    pub fn root(&self) -> &Path {
        &self.inner.layout.root
    }

    /// The workspace ID (`w-` + 8 hex, `.scriptorium/workspace-id`).
    pub fn workspace_id(&self) -> &WorkspaceId {
        &self.inner.workspace_id
    }

    /// The path of the write lock, `.scriptorium/write.lock`.
    pub fn lock_path(&self) -> &Path {
        &self.inner.layout.lock
    }

    /// The current revision. Reads the revision record, stats `topics/` (re-hashing only files
    /// whose stat differs from the record or is too recent to trust) and stats `sources/`.
    /// Takes no lock; read-only.
    pub fn revision(&self) -> Result<Revision> {
        Ok(self.current()?.revision)
    }

    /// The batches of session records the last installs wrote (oldest first, at most 64; see
    /// [`crate::BeginOptions::batch`]), from the revision record. Read-only, takes no lock.
    pub fn installed_batches(&self) -> Result<Vec<InstalledBatch>> {
        Ok(self.record()?.map(|r| r.batches.clone()).unwrap_or_default())
    }

    /// The revision as of the last install or archive append, from the revision record alone:
    /// one `stat` of `.scriptorium/revision` when it has not changed since the last call (the
    /// record is only ever replaced by a rename, so a new record has a new inode), otherwise one
    /// read of it. It equals [`Workspace::revision`] unless `topics/` or `sources/` were
    /// edited outside a transaction since; it is meant for per-turn readers
    /// (the search index) that must not walk the trees. Compare-and-set uses
    /// [`Workspace::revision`]. Read-only, takes no lock.
    pub fn installed_revision(&self) -> Result<Revision> {
        let layout = &self.inner.layout;
        let meta = self
            .inner
            .fs
            .metadata(&layout.revision)
            .map_err(Error::io("stat", &layout.revision))?;
        let key = (meta.ino, meta.mtime_ns, meta.len);
        let mut cache = self.inner.installed_cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((cached, revision)) = cache.as_ref()
            && *cached == key
        {
            return Ok(revision.clone());
        }
        let record = self
            .record()?
            .ok_or_else(|| Error::corrupt(&layout.revision, "the revision record is missing"))?;
        let revision = record.revision();
        *cache = Some((key, revision.clone()));
        Ok(revision)
    }

    /// The last installed transaction (or archive append), from the revision record alone;
    /// empty before the first. Read-only, takes no lock, walks no tree.
    pub fn installed_txn_id(&self) -> Result<String> {
        Ok(self.record()?.map(|r| r.txn_id.clone()).unwrap_or_default())
    }

    /// The live revision record (`None` when missing), parsed only when its bytes differ
    /// from the ones this handle parsed last.
    pub(crate) fn record(&self) -> Result<Option<Arc<RevisionRecord>>> {
        let Some(bytes) = read_record_bytes(self.fs(), self.layout())? else {
            return Ok(None);
        };
        let mut cache = self.inner.record_cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((cached, record)) = cache.as_ref()
            && **cached == *bytes
        {
            return Ok(Some(record.clone()));
        }
        let record = Arc::new(parse_record(self.layout(), &bytes)?);
        *cache = Some((Arc::from(bytes), record.clone()));
        Ok(Some(record))
    }

    /// The current revision with what the record says about outside edits. Read-only.
    pub fn revision_state(&self) -> Result<RevisionState> {
        let current = self.current()?;
        Ok(RevisionState {
            topics_edited_outside: current.topics != current.record.topics,
            sources_changed_outside: current.source_scan.digest != current.record.sources,
            stat_cache_stale: current.live.restated + current.source_scan.restated > 0,
            outside_files: current.live.outside.iter().map(|rel| format!("topics/{rel}")).collect(),
            counter: current.record.counter,
            txn_id: current.record.txn_id.clone(),
            revision: current.revision,
        })
    }

    /// Runs `f` while holding the workspace write lock (`.scriptorium/write.lock`), for work
    /// that must not race with an install, such as repairing the git history after a crash.
    /// `f` must not start a transaction or archive sources: the lock is not re-entrant, so that
    /// would wait for itself until `timeout` and fail with `BUSY`.
    pub fn with_write_lock<R>(&self, timeout: LockTimeout, f: impl FnOnce() -> R) -> Result<R> {
        let _lock = self.lock(timeout)?;
        Ok(f())
    }

    pub(crate) fn lock(&self, timeout: LockTimeout) -> Result<WriteLock> {
        lock::acquire(&self.inner.layout.lock, timeout)
    }

    pub(crate) fn fs(&self) -> &dyn Fs {
        self.inner.fs.as_ref()
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    /// The creation order of the live `runtime.json` (memory ID → number; empty when missing
    /// or unreadable). This crate is its only writer: every install numbers the IDs it adds.
    pub fn creation_order(&self) -> Result<crate::CreationOrder> {
        Ok(self.runtime()?.state.creation_order.clone())
    }

    /// The organizer counters of the live `runtime.json` (defaults when it is missing or
    /// unreadable; see `docs/format.md#creation-order-and-organizer-counters`).
    pub fn counters(&self) -> Result<crate::Counters> {
        Ok(self.runtime()?.state.counters())
    }

    /// The live `runtime.json`, parsed only when its bytes differ from the cached ones.
    pub(crate) fn runtime(&self) -> Result<RuntimeCache> {
        let bytes = read_runtime(self.fs(), self.layout())?;
        let mut cache = self.inner.runtime_cache.lock().unwrap_or_else(PoisonError::into_inner);
        let runtime = RuntimeCache::state_of(cache.as_ref(), bytes);
        *cache = Some(runtime.clone());
        Ok(runtime)
    }

    /// Keeps `runtime` as the parse of the `runtime.json` an install just wrote.
    pub(crate) fn keep_runtime(&self, runtime: RuntimeCache) {
        *self.inner.runtime_cache.lock().unwrap_or_else(PoisonError::into_inner) = Some(runtime);
    }

    /// The current state, with `topics/` judged by stat against the record's manifest.
    pub(crate) fn current(&self) -> Result<Current> {
        let fs = self.fs();
        let layout = self.layout();
        let record = self.record()?.unwrap_or_else(|| Arc::new(empty_record()));
        let now_ns = self
            .inner
            .clock
            .now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(i64::MIN, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let trust = crate::live::StatTrust::of(fs, &layout.revision, now_ns);
        let live = crate::live::scan(fs, &layout.topics, &record.files, trust, false)?;
        let topics = live.digest_against(&record);
        let source_scan = sources_of(fs, &layout.sources, &record, trust)?;
        let revision = revision_of(record.counter, &record.txn_id, &topics, &source_scan.digest);
        Ok(Current { record, revision, topics, live, source_scan })
    }

    /// Removes the caches that hold copies of earlier topic files: the spare tree the last
    /// install replaced (and its manifest) and the baseline this handle keeps. A forget calls it
    /// after its install, so no copy of what it removed stays in `.scriptorium/`; the next
    /// `begin` writes its stage from the live tree. Under the write lock.
    pub fn discard_caches(&self, lock_timeout: crate::LockTimeout) -> Result<()> {
        let _lock = self.lock(lock_timeout)?;
        let fs = self.fs();
        let layout = self.layout();
        for dir in [&layout.spare, &layout.spare_stage] {
            match fs.remove_tree(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("remove", dir)(e)),
            }
        }
        let manifest = layout.txn.join(crate::stage::SPARE_MANIFEST);
        match fs.remove_file(&manifest) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("unlink", &manifest)(e)),
        }
        self.take_cached_baseline();
        Ok(())
    }

    /// Refreshes the stat cache of the revision record (git's index refresh): when files were
    /// copied, checked out or touched without a byte changing, every scan re-reads them until
    /// the record carries their new stat. Rewrites the record with the new stat of exactly
    /// those files; the revision does not move. Takes the write lock only if it is free (one
    /// attempt) and does nothing while an intent is pending; returns whether it rewrote the
    /// record.
    pub fn refresh_stat_cache(&self) -> Result<bool> {
        let fs = self.fs();
        let layout = self.layout();
        let _lock = match self.lock(LockTimeout::new(std::time::Duration::ZERO)) {
            Ok(lock) => lock,
            Err(Error::Busy { .. }) => return Ok(false),
            Err(error) => return Err(error),
        };
        if fs.metadata(&layout.intent).is_ok() {
            return Ok(false);
        }
        let current = self.current()?;
        if current.live.restated + current.source_scan.restated == 0 {
            return Ok(false);
        }
        // Files re-read only for being written just before the record need no new stat: a
        // record written now, well after them, is what lets the next scans trust them.
        let record = refresh_stats(&current.record, &current.live, &current.source_scan);
        write_atomic(fs, layout, self.inner.ids.as_ref(), &layout.revision, &record.to_bytes())?;
        Ok(true)
    }
}

pub(crate) fn empty_record() -> RevisionRecord {
    RevisionRecord {
        version: 1,
        counter: 0,
        txn_id: String::new(),
        topics: String::new(),
        sources: String::new(),
        runtime: String::new(),
        files: Vec::new(),
        source_files: Vec::new(),
        workspace_id: None,
        batches: Vec::new(),
        unlisted: None,
    }
}

/// The manifest of the tree at `topics` (stat + hash of every regular file).
pub(crate) fn manifest_of(
    fs: &dyn Fs,
    topics: &Path,
    hashes: &HashMap<String, String>,
) -> Result<Vec<ManifestEntry>> {
    let mut out = Vec::new();
    for entry in walk(fs, topics)? {
        if entry.kind != FileKind::File || !entry.utf8 {
            continue;
        }
        let path = topics.join(&entry.rel);
        let meta = fs.metadata(&path).map_err(Error::io("stat", &path))?;
        let sha256 = match hashes.get(&entry.rel) {
            Some(hash) => hash.clone(),
            None => sha256_hex(&fs.read(&path).map_err(Error::io("read", &path))?),
        };
        out.push(ManifestEntry {
            path: entry.rel,
            sha256,
            len: meta.len,
            mtime_ns: meta.mtime_ns,
            ino: meta.ino,
        });
    }
    Ok(out)
}

/// A revision record describing the live disk as it is now.
fn record_from_disk(
    fs: &dyn Fs,
    layout: &Layout,
    counter: u64,
    txn_id: &str,
    workspace_id: &WorkspaceId,
) -> Result<RevisionRecord> {
    let none = crate::live::StatTrust::NONE;
    let live = crate::live::scan(fs, &layout.topics, &[], none, false)?;
    let sources = scan_sources(fs, &layout.sources, &[], None, none)?;
    Ok(RevisionRecord {
        version: 1,
        counter,
        txn_id: txn_id.to_owned(),
        topics: live.digest(),
        sources: sources.content,
        runtime: read_runtime(fs, layout)?.map(|bytes| sha256_hex(&bytes)).unwrap_or_default(),
        files: live.manifest(),
        source_files: sources.files,
        workspace_id: Some(workspace_id.as_str().to_owned()),
        batches: Vec::new(),
        unlisted: Some(live.unlisted()),
    })
}

/// `mkdir -p` with 0700 for every directory it creates.
fn create_dir_all(fs: &dyn Fs, path: &Path) -> Result<()> {
    match fs.metadata(path) {
        Ok(meta) if meta.kind == FileKind::Dir => return Ok(()),
        Ok(_) => {
            return Err(Error::Io {
                op: "mkdir",
                path: path.to_path_buf(),
                source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            });
        }
        Err(_) => {}
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_all(fs, parent)?;
    }
    ensure_dir(fs, path)
}

/// Creates a directory (0700) unless one exists; a symlink or a file there is refused.
pub(crate) fn ensure_dir(fs: &dyn Fs, path: &Path) -> Result<()> {
    match fs.create_dir(path, 0o700) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = fs.metadata(path).map_err(Error::io("stat", path))?;
            if meta.kind == FileKind::Dir {
                Ok(())
            } else {
                Err(Error::invalid(
                    crate::ErrorCode::PathOutsideWorkspace,
                    format!("{} is not a directory (symlinks are refused)", path.display()),
                ))
            }
        }
        Err(e) => Err(Error::io("mkdir", path)(e)),
    }
}

/// Reads the workspace ID (the caller holds the lock). When `.scriptorium/workspace-id` is
/// missing or unreadable it is restored from the revision record; a new ID is minted only for
/// a workspace that has never installed anything. A workspace with installs but no
/// recoverable ID is refused (`WORKSPACE_ID_MISSING`): a new ID would make every turn already
/// written pending again, and the writer would write it twice.
fn ensure_workspace_id(
    fs: &dyn Fs,
    layout: &Layout,
    ids: &dyn IdSource,
    record: Option<&RevisionRecord>,
) -> Result<WorkspaceId> {
    let recorded =
        record.and_then(|r| r.workspace_id.as_deref()).and_then(|id| WorkspaceId::parse(id).ok());
    let found = match fs.read(&layout.workspace_id) {
        Ok(bytes) => std::str::from_utf8(&bytes).ok().and_then(|id| WorkspaceId::parse(id).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io("read", &layout.workspace_id)(e)),
    };
    if let Some(id) = found {
        return Ok(id);
    }
    let id = match recorded {
        Some(id) => id,
        None if record.is_some_and(|r| r.counter > 0) => {
            return Err(Error::WorkspaceIdMissing { path: layout.workspace_id.clone() });
        }
        None => WorkspaceId::parse(&format!("w-{}", ids.hex8()))
            .map_err(|e| Error::corrupt(&layout.workspace_id, e.to_string()))?,
    };
    write_workspace_id(fs, layout, ids, &id)?;
    Ok(id)
}

fn write_workspace_id(
    fs: &dyn Fs,
    layout: &Layout,
    ids: &dyn IdSource,
    id: &WorkspaceId,
) -> Result<()> {
    write_atomic(fs, layout, ids, &layout.workspace_id, format!("{id}\n").as_bytes())
}

/// Sets the workspace ID of the workspace at `root` whose `.scriptorium/workspace-id` is
/// lost (the repair `scriptorium repair --workspace-id` runs): writes `id` and records it in
/// the revision record, under the write lock. Refuses when the workspace already has an ID
/// (`INVALID_ARGUMENT`): an ID in use is never replaced.
pub fn restore_workspace_id(root: impl AsRef<Path>, id: &WorkspaceId) -> Result<()> {
    let fs = RealFs;
    let layout = Layout::new(root.as_ref());
    let ids = RandomIds::default();
    let _lock = lock::acquire(&layout.lock, LockTimeout::DEFAULT)?;
    let current = match fs.read(&layout.workspace_id) {
        Ok(bytes) => std::str::from_utf8(&bytes).ok().and_then(|id| WorkspaceId::parse(id).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io("read", &layout.workspace_id)(e)),
    };
    if let Some(current) = current {
        return Err(Error::invalid(
            crate::ErrorCode::InvalidArgument,
            format!("the workspace already has the ID {current}; it is never replaced"),
        ));
    }
    write_workspace_id(&fs, &layout, &ids, id)?;
    if let Some(mut record) = read_record(&fs, &layout)? {
        record.workspace_id = Some(id.as_str().to_owned());
        write_atomic(&fs, &layout, &ids, &layout.revision, &record.to_bytes())?;
    }
    Ok(())
}

/// The workspace ID, when opening has nothing to recover or create (no intent record, no
/// temporary, no stage without a live owner, the ID, the revision record and the migration
/// marker present, `topics/` and `sources/` directories): then no lock is needed. `None`
/// sends the caller through the locked path, which decides under the lock. A stage whose owner
/// is between creating it and locking it looks abandoned here; that only costs the locked path.
fn settled(fs: &dyn Fs, layout: &Layout) -> Result<Option<WorkspaceId>> {
    let present = |path: &Path, kind: FileKind| match fs.metadata(path) {
        Ok(meta) => Ok(meta.kind == kind),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("stat", path)(e)),
    };
    if present(&layout.intent, FileKind::File)?
        || !present(&layout.revision, FileKind::File)?
        || !present(&layout.runtime.join("permissions"), FileKind::File)?
        || !present(&layout.topics, FileKind::Dir)?
        || !present(&layout.sources, FileKind::Dir)?
    {
        return Ok(None);
    }
    let entries = fs.read_dir(&layout.runtime).map_err(Error::io("read_dir", &layout.runtime))?;
    if entries.iter().any(|(name, _)| name.to_string_lossy().starts_with("tmp-")) {
        return Ok(None);
    }
    let stages = fs.read_dir(&layout.txn).map_err(Error::io("read_dir", &layout.txn))?;
    for (name, kind) in stages {
        let path = layout.txn.join(&name);
        // The spare tree and its manifest are caches for the next `begin`, not stages.
        let cache = crate::stage::is_spare(&name);
        let live = kind == FileKind::Dir && !cache && crate::lock::OwnerLock::is_held(&path);
        if !cache && !live {
            return Ok(None);
        }
    }
    match fs.read(&layout.workspace_id) {
        Ok(bytes) => {
            Ok(std::str::from_utf8(&bytes).ok().and_then(|id| WorkspaceId::parse(id).ok()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", &layout.workspace_id)(e)),
    }
}

/// Directories 0700 at the root and the top level (someone may have widened them).
fn check_top_modes(fs: &dyn Fs, layout: &Layout) -> Result<()> {
    for dir in [&layout.root, &layout.topics, &layout.sources, &layout.runtime] {
        let meta = fs.metadata(dir).map_err(Error::io("stat", dir))?;
        if meta.kind == FileKind::Dir && meta.mode != 0o700 {
            fs.set_mode(dir, 0o700).map_err(Error::io("chmod", dir))?;
        }
    }
    Ok(())
}

/// The permission migration (directories 0700, files 0600 under the memory root), once per
/// workspace: `.scriptorium/permissions` records that it ran, so later opens only check the
/// root and the top-level directories (four `lstat`s). Everything this crate creates has those
/// modes already, and the root's 0700 keeps anything another program writes below it private.
/// The caller holds the write lock (an install renames and removes files while it runs).
fn migrate_once(fs: &dyn Fs, layout: &Layout, ids: &dyn IdSource) -> Result<()> {
    let marker = layout.runtime.join("permissions");
    let migrated = match fs.metadata(&marker) {
        Ok(meta) => meta.kind == FileKind::File,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(Error::io("stat", &marker)(e)),
    };
    if migrated {
        return check_top_modes(fs, layout);
    }
    migrate_permissions(fs, &layout.root)?;
    write_atomic(fs, layout, ids, &marker, b"1\n")
}

/// Every non-symlink path under `root` (and `root` itself): directories 0700, files 0600.
/// Symlinks are never followed or changed.
pub fn migrate_permissions(fs: &dyn Fs, root: &Path) -> Result<()> {
    let fix = |path: &Path, want: u32| -> Result<()> {
        let meta = fs.metadata(path).map_err(Error::io("stat", path))?;
        if meta.mode != want && matches!(meta.kind, FileKind::Dir | FileKind::File) {
            fs.set_mode(path, want).map_err(Error::io("chmod", path))?;
        }
        Ok(())
    };
    fix(root, 0o700)?;
    for entry in walk(fs, root)? {
        let path = root.join(&entry.raw);
        match entry.kind {
            FileKind::Dir => fix(&path, 0o700)?,
            FileKind::File => fix(&path, 0o600)?,
            FileKind::Symlink | FileKind::Other => {}
        }
    }
    Ok(())
}
