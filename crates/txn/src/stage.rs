//! The stage of a transaction: [`Workspace::begin`], the private copy of `topics/` it edits
//! ([`Staged`]), how that copy is made cheaply (the spare tree of the last install, recycled by
//! stat), and what a rejection hands back ([`Rejected`]).

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, PoisonError};

use scriptorium_topics_format::TopicFile;
use scriptorium_topics_format::source::{ArchiveResolver, TrustState};

use crate::begin::{Begin, BeginOptions, CachedBaseline, baseline_of};
use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::fs::{FileKind, Fs};
use crate::ids::{Revision, TxnId};
use crate::live::{self, LiveTree};
use crate::lock::OwnerLock;
use crate::sources::LiveSources;
use crate::state::{Counters, ManifestEntry, revision_of, sources_of, walk};
use crate::validate::{Baseline, Violation};
use crate::workspace::{Workspace, empty_record};

/// The longest name a path component may have (`NAME_MAX` of Linux filesystems).
pub const MAX_NAME_BYTES: usize = 255;
/// The longest workspace-relative path: well under `PATH_MAX` (4 096) once the memory root and
/// a stage (`.scriptorium/txn/<txn id>/old-topics/`) are put in front of it.
pub const MAX_PATH_BYTES: usize = 3_072;

/// The manifest of the spare tree (`.scriptorium/txn/spare`), written by the install that moved
/// it there: what `begin` needs to recycle the spare by stat, without reading it.
pub(crate) const SPARE_MANIFEST: &str = "spare.json";

/// Whether `name` (an entry of `.scriptorium/txn/`) is the spare tree, its manifest or the
/// spare stage directory: caches for the next `begin`, not stages.
pub(crate) fn is_spare(name: &std::ffi::OsStr) -> bool {
    name == "spare" || name == SPARE_MANIFEST || name == "spare-stage"
}

/// Makes the stage directory `dir` and locks it: the empty directory the last install left
/// (`.scriptorium/txn/spare-stage`, renamed; the caller holds the write lock, so nobody else
/// takes it) when it is still an empty 0700 directory whose lock is free, else a new one.
fn make_stage_dir(fs: &dyn Fs, layout: &crate::state::Layout, dir: &Path) -> Result<OwnerLock> {
    if fs.rename(&layout.spare_stage, dir).is_ok() {
        let usable = fs.metadata(dir).is_ok_and(|m| m.kind == FileKind::Dir && m.mode == 0o700)
            && fs.read_dir(dir).is_ok_and(|entries| entries.is_empty());
        if usable && let Ok(owner) = OwnerLock::take(dir) {
            return Ok(owner);
        }
        fs.remove_tree(dir).map_err(Error::io("remove", dir))?;
    }
    fs.create_dir(dir, 0o700).map_err(Error::io("mkdir", dir))?;
    OwnerLock::take(dir)
}

/// A stage directory `.scriptorium/txn/<txn-id>/`, removed when dropped.
pub(crate) struct Stage {
    pub(crate) ws: Workspace,
    pub(crate) txn_id: TxnId,
    pub(crate) dir: PathBuf,
    pub(crate) topics: PathBuf,
    pub(crate) armed: bool,
    _owner: OwnerLock,
    /// Every file and directory of the stage is new: make them durable with one `syncfs`.
    pub(crate) fresh: bool,
    /// Files of the stage written after it was made from the spare (paths relative to its
    /// `topics/`), and the directories whose entries changed: the install fsyncs exactly these.
    pub(crate) written: BTreeSet<String>,
    pub(crate) dirs_changed: BTreeSet<String>,
    /// The stage holds its copy of the live tree. A stage is made empty by `begin` and filled
    /// by the first write (or handed-out path, or an install that needs it), so a transaction
    /// that writes nothing, or only what the files already hold, copies nothing.
    pub(crate) materialized: bool,
}

impl Drop for Stage {
    fn drop(&mut self) {
        if self.armed {
            // Best effort: if this fails, the next open's recovery removes the directory.
            let _ = self.ws.fs().remove_tree(&self.dir);
        }
    }
}

impl Stage {
    /// Records a write of `rel` (relative to the stage's `topics/`).
    pub(crate) fn wrote(&mut self, rel: &str) {
        self.written.insert(rel.to_owned());
        self.dirs_changed.insert(parent(rel).to_owned());
    }
}

/// The parent of a `/`-separated path (`""` at the top).
pub(crate) fn parent(rel: &str) -> &str {
    rel.rfind('/').map_or("", |i| &rel[..i])
}

/// An open transaction: a private copy of `topics/` in `.scriptorium/txn/<txn-id>/topics/`.
///
/// Edits through [`Staged::write_file`] and [`Staged::remove_file`] are tracked, so validation
/// reads, normalizes and checks exactly the files they touched; raw access to the directory
/// ([`Staged::path`], [`Staged::edit`]) makes the next validation compare every staged file.
/// Dropping it removes the stage directory; nothing outside it was written.
#[must_use = "dropping a Staged discards its edits"]
pub struct Staged {
    pub(crate) stage: Stage,
    pub(crate) begin: Arc<Begin>,
    pub(crate) baseline: Arc<Baseline>,
    pub(crate) opts: BeginOptions,
    /// New organizer counters the install writes into `runtime.json`.
    pub(crate) counters: Option<Counters>,
    /// Paths (relative to `topics/`) written or removed through the stage's methods.
    pub(crate) dirty: BTreeSet<String>,
    /// The stage directory was handed out: anything in it may have changed.
    pub(crate) opaque: Cell<bool>,
}

impl fmt::Debug for Staged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Staged")
            .field("txn_id", &self.stage.txn_id)
            .field("path", &self.stage.topics)
            .field("revision", &self.begin.revision)
            .finish()
    }
}

impl Workspace {
    /// Starts a transaction. Under the write lock (`opts.lock_timeout`): walks the live
    /// `topics/` with one `lstat` per entry, taking each file's hash from the revision record
    /// when its stat is unchanged and reading only the others (new files, outside edits),
    /// computes the current revision (`CONCURRENT_UPDATE` when it is not `opts.base_revision`),
    /// takes the baseline (the workspace handle's, with only changed files parsed again, see
    /// `CachedBaseline`), scans `sources/` (stat first, see `SourcesScan`), then makes the stage: the
    /// tree the last install replaced, recycled by stat (files whose recorded hash equals the
    /// live one are kept; the others are written), or a full copy when there is none (never
    /// `sources/`). The lock is released before returning: the caller edits without it.
    ///
    /// Writes only inside `.scriptorium/txn/<txn-id>/`; on error that directory is removed.
    pub fn begin(&self, opts: BeginOptions) -> Result<Staged> {
        let fs = self.fs();
        let layout = self.layout();
        let _lock = self.lock(opts.lock_timeout)?;
        let record = self.record()?.unwrap_or_else(|| Arc::new(empty_record()));
        let trust = live::StatTrust::record_only(fs, &layout.revision);
        let live = live::scan(fs, &layout.topics, &record.files, trust, true)?;
        let sources = sources_of(fs, &layout.sources, &record, trust)?;
        let runtime = self.runtime()?;
        let digest = live.digest_against(&record);
        let revision = revision_of(record.counter, &record.txn_id, &digest, &sources.digest);
        if let Some(base) = opts.base_revision.as_ref().filter(|base| **base != revision) {
            return Err(Error::ConcurrentUpdate { base_revision: base.clone(), revision });
        }
        let sources_view = LiveSources::new(self.inner.fs.clone(), layout.root.clone());
        let pending = if opts.pending_sources.is_empty() {
            Vec::new()
        } else {
            self.plan_archive(&opts.pending_sources)?.writes
        };
        let resolver = ArchiveResolver::new(sources_view.clone());
        let cached = self.cached_baseline();
        let exact = cached.as_ref().is_some_and(|c| {
            c.revision == revision && c.topics == digest && c.sources == sources.digest
        });
        let baseline =
            baseline_of(&self.inner.fs, layout, &live, cached.as_deref(), exact, &resolver)?;
        if !exact {
            self.cache_baseline(CachedBaseline {
                revision: revision.clone(),
                topics: digest,
                sources: sources.digest.clone(),
                baseline: Arc::clone(&baseline),
            });
        }

        let txn_id = TxnId::generate(self.inner.clock.as_ref(), self.inner.ids.as_ref());
        let dir = layout.txn.join(txn_id.as_str());
        let owner = make_stage_dir(fs, layout, &dir)?;
        let stage = Stage {
            ws: self.clone(),
            txn_id,
            topics: dir.join("topics"),
            dir,
            armed: true,
            _owner: owner,
            fresh: false,
            written: BTreeSet::new(),
            dirs_changed: BTreeSet::new(),
            materialized: false,
        };
        // Validation sees the archive as the install will leave it. The baseline above was
        // read from the live archive only: committed blocks cannot cite what is not archived.
        let resolver = if pending.is_empty() {
            resolver
        } else {
            ArchiveResolver::new(sources_view.with_overlay(&pending))
        };
        let begin = Begin { revision, sources, pending, runtime, live, resolver };
        Ok(Staged {
            stage,
            begin: Arc::new(begin),
            baseline,
            opts,
            counters: None,
            dirty: BTreeSet::new(),
            opaque: Cell::new(false),
        })
    }

    /// The cached baseline, if any (see [`CachedBaseline`]).
    pub(crate) fn cached_baseline(&self) -> Option<Arc<CachedBaseline>> {
        self.inner.baseline_cache.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Replaces the cached baseline (the old entry is dropped after the mutex is released).
    pub(crate) fn cache_baseline(&self, entry: CachedBaseline) {
        let old = self
            .inner
            .baseline_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(Arc::new(entry));
        drop(old);
    }

    /// Takes the cached baseline out of the handle (for an in-place update by the install
    /// that owns the only other reference).
    pub(crate) fn take_cached_baseline(&self) -> Option<Arc<CachedBaseline>> {
        self.inner.baseline_cache.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// [`stage_tree`], and the stage counts as filled.
pub(crate) fn fill_stage(ws: &Workspace, stage: &mut Stage, live: &LiveTree) -> Result<()> {
    stage_tree(ws, stage, live)?;
    stage.materialized = true;
    Ok(())
}

/// Fills the new stage with a copy of the live tree.
///
/// Creating a hundred files costs tens of milliseconds on ext4 (inode allocation), so the tree
/// the last install replaced (`.scriptorium/txn/spare`) is recycled when there is one: it is
/// renamed into the stage, then made equal to the live tree, keeping only regular files whose
/// content is known to equal the live file's (by the spare's manifest, checked by stat, or
/// else by reading it), that have mode 0600 and exactly one link (so no other name, inside or
/// outside the workspace, can see an edit of the stage), replacing everything else by fresh
/// files. Without a spare, or when it holds anything unexpected, the stage is written from
/// scratch.
fn stage_tree(ws: &Workspace, stage: &mut Stage, live: &LiveTree) -> Result<()> {
    let fs = ws.fs();
    let layout = ws.layout();
    let spare_manifest = read_spare_manifest(fs, layout);
    if fs.rename(&layout.spare, &stage.topics).is_err() {
        return write_tree(ws, stage, live);
    }
    match recycle_tree(fs, layout, stage, live, &spare_manifest) {
        Ok(true) => Ok(()),
        Ok(false) | Err(_) => {
            let topics = stage.topics.clone();
            match fs.metadata(&topics) {
                Ok(meta) if meta.kind == FileKind::Dir => fs.remove_tree(&topics),
                Ok(_) => fs.remove_file(&topics),
                Err(e) => Err(e),
            }
            .map_err(Error::io("remove", &topics))?;
            stage.written.clear();
            stage.dirs_changed.clear();
            write_tree(ws, stage, live)
        }
    }
}

/// The spare's manifest (`.scriptorium/txn/spare.json`), empty when missing or unreadable.
fn read_spare_manifest(
    fs: &dyn Fs,
    layout: &crate::state::Layout,
) -> HashMap<String, ManifestEntry> {
    let path = layout.txn.join(SPARE_MANIFEST);
    let Ok(bytes) = fs.read(&path) else { return HashMap::new() };
    let entries: Vec<ManifestEntry> = serde_json::from_slice(&bytes).unwrap_or_default();
    entries.into_iter().map(|e| (e.path.clone(), e)).collect()
}

/// Writes the manifest of the tree just moved to the spare. Best effort and not synced: it is a
/// cache whose every entry is checked by stat before it is believed, and without it the next
/// `begin` recycles the spare by reading it.
pub(crate) fn write_spare_manifest(ws: &Workspace, live: &LiveTree) {
    let layout = ws.layout();
    let fs = ws.fs();
    let path = layout.txn.join(SPARE_MANIFEST);
    let Ok(bytes) = serde_json::to_vec(&live.manifest()) else { return };
    // In place: a reader that finds it half written (a prefix of a JSON array never parses)
    // or empty recycles the spare without it.
    if fs.write(&path, &bytes, 0o600).is_err() {
        let _ = fs.remove_file(&path);
    }
}

/// Makes the recycled tree at `stage.topics` equal to `live` (see [`stage_tree`]). `Ok(false)`
/// when it holds something this cannot fix in place (not a directory, a non-UTF-8 name).
fn recycle_tree(
    fs: &dyn Fs,
    layout: &crate::state::Layout,
    stage: &mut Stage,
    live: &LiveTree,
    spare: &HashMap<String, ManifestEntry>,
) -> Result<bool> {
    let topics = stage.topics.clone();
    let meta = fs.metadata(&topics).map_err(Error::io("stat", &topics))?;
    if meta.kind != FileKind::Dir {
        return Ok(false);
    }
    if meta.mode != 0o700 {
        fs.set_mode(&topics, 0o700).map_err(Error::io("chmod", &topics))?;
    }
    let dirs: HashSet<&str> = live.dirs.iter().map(String::as_str).collect();
    let entries = walk(fs, &topics)?;
    if entries.iter().any(|entry| !entry.utf8) {
        return Ok(false);
    }
    let mut kept: HashSet<String> = HashSet::new();
    let mut removed_dirs: Vec<String> = Vec::new();
    for entry in entries {
        // Everything under a removed directory is gone with it.
        if removed_dirs.iter().any(|dir| {
            entry.rel.strip_prefix(dir.as_str()).is_some_and(|rest| rest.starts_with('/'))
        }) {
            continue;
        }
        let path = topics.join(&entry.rel);
        let meta = fs.metadata(&path).map_err(Error::io("stat", &path))?;
        let keep = match meta.kind {
            FileKind::Dir => dirs.contains(entry.rel.as_str()),
            FileKind::File => live.files.get(&entry.rel).is_some_and(|file| {
                let private = meta.nlink == 1 && meta.mode == 0o600 && meta.len == file.meta.len;
                private
                    && same_content(
                        fs,
                        &path,
                        &meta,
                        spare.get(&entry.rel),
                        file,
                        live,
                        layout,
                        &entry.rel,
                    )
            }),
            FileKind::Symlink | FileKind::Other => false,
        };
        if keep {
            if meta.kind == FileKind::Dir && meta.mode != 0o700 {
                fs.set_mode(&path, 0o700).map_err(Error::io("chmod", &path))?;
            }
            kept.insert(entry.rel);
        } else if meta.kind == FileKind::Dir {
            fs.remove_tree(&path).map_err(Error::io("remove", &path))?;
            stage.dirs_changed.insert(parent(&entry.rel).to_owned());
            removed_dirs.push(entry.rel);
        } else {
            fs.remove_file(&path).map_err(Error::io("unlink", &path))?;
            stage.dirs_changed.insert(parent(&entry.rel).to_owned());
        }
    }
    for dir in live.dirs.iter().filter(|dir| !kept.contains(*dir)) {
        let path = topics.join(dir);
        fs.create_dir(&path, 0o700).map_err(Error::io("mkdir", &path))?;
        stage.dirs_changed.insert(parent(dir).to_owned());
        stage.dirs_changed.insert(dir.clone());
    }
    for rel in live.files.keys().filter(|rel| !kept.contains(*rel)) {
        let bytes = live.bytes(fs, &layout.topics, rel)?;
        let path = topics.join(rel);
        fs.write(&path, &bytes, 0o600).map_err(Error::io("write", &path))?;
        stage.wrote(rel);
    }
    write_foreign(fs, &layout.topics, &topics, live)?;
    Ok(true)
}

/// Whether the spare file at `path` (stat `meta`) holds the live file's bytes: by the spare's
/// manifest when its entry still describes the file, else by reading both.
#[expect(clippy::too_many_arguments, reason = "one decision over the facts begin gathered")]
fn same_content(
    fs: &dyn Fs,
    path: &Path,
    meta: &crate::fs::Meta,
    recorded: Option<&ManifestEntry>,
    file: &live::LiveFile,
    live: &LiveTree,
    layout: &crate::state::Layout,
    rel: &str,
) -> bool {
    if let Some(entry) = recorded
        && entry.len == meta.len
        && entry.mtime_ns == meta.mtime_ns
        && entry.ino == meta.ino
    {
        return entry.sha256 == file.hash;
    }
    let Ok(spare) = fs.read(path) else { return false };
    live.bytes(fs, &layout.topics, rel).is_ok_and(|bytes| bytes == spare)
}

/// Writes the live tree's directories and files under the stage's `topics/` (created 0700 /
/// 0600).
fn write_tree(ws: &Workspace, stage: &mut Stage, live: &LiveTree) -> Result<()> {
    let fs = ws.fs();
    let topics = stage.topics.clone();
    fs.create_dir(&topics, 0o700).map_err(Error::io("mkdir", &topics))?;
    for dir in &live.dirs {
        let path = topics.join(dir);
        fs.create_dir(&path, 0o700).map_err(Error::io("mkdir", &path))?;
    }
    for rel in live.files.keys() {
        let bytes = live.bytes(fs, &ws.layout().topics, rel)?;
        let path = topics.join(rel);
        fs.write(&path, &bytes, 0o600).map_err(Error::io("write", &path))?;
    }
    write_foreign(fs, &ws.layout().topics, &topics, live)?;
    stage.fresh = true;
    Ok(())
}

/// Carries the live tree's entries with non-UTF-8 names into the stage unchanged (parents
/// first: the scan lists them in path order, a directory before what it holds).
fn write_foreign(fs: &dyn Fs, live_topics: &Path, topics: &Path, live: &LiveTree) -> Result<()> {
    for foreign in &live.foreign {
        let path = topics.join(&foreign.raw);
        if foreign.kind == FileKind::Dir {
            match fs.create_dir(&path, 0o700) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io("mkdir", &path)(e)),
            }
        } else {
            let source = live_topics.join(&foreign.raw);
            let bytes = fs.read(&source).map_err(Error::io("read", &source))?;
            fs.write(&path, &bytes, 0o600).map_err(Error::io("write", &path))?;
        }
    }
    Ok(())
}

/// Checks a workspace-relative path a caller wants to write (Python's `validate_writable_path`;
/// see `docs/format.md#canonical-derived-and-runtime-files`) and returns it relative to
/// `topics/`.
pub fn writable_path(path: &str) -> Result<String> {
    let p = Path::new(path);
    if p.is_absolute()
        || p.components().any(|c| matches!(c, Component::ParentDir | Component::RootDir))
    {
        return Err(Error::invalid(
            ErrorCode::PathOutsideWorkspace,
            format!("path escapes the workspace: {path}"),
        ));
    }
    let parts: Vec<&str> =
        path.split('/').filter(|part| !part.is_empty() && *part != ".").collect();
    if parts.len() < 2 || parts[0] != "topics" || !path.ends_with(".md") {
        return Err(Error::invalid(
            ErrorCode::ReadOnlyPath,
            format!("only topics/**/*.md is writable: {path}"),
        ));
    }
    // What no filesystem can hold is a bad request, not an IO failure (NUL, ENAMETOOLONG);
    // nor is a name no terminal or editor shows as written.
    if path.chars().any(char::is_control) {
        return Err(Error::invalid(
            ErrorCode::InvalidArgument,
            format!("a path cannot hold a control character (NUL, a line break…): {path:?}"),
        ));
    }
    if let Some(long) = parts.iter().find(|part| part.len() > MAX_NAME_BYTES) {
        return Err(Error::invalid(
            ErrorCode::InvalidArgument,
            format!("a path component is longer than {MAX_NAME_BYTES} bytes: {long}"),
        ));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(Error::invalid(
            ErrorCode::InvalidArgument,
            format!("the path is longer than {MAX_PATH_BYTES} bytes"),
        ));
    }
    Ok(parts[1..].join("/"))
}

impl Staged {
    /// Fills the stage with its copy of the live tree as `begin` read it, unless it holds it
    /// already: under the write lock (the spare tree it recycles is shared by every stage).
    pub(crate) fn materialize(&mut self) -> Result<()> {
        if self.stage.materialized {
            return Ok(());
        }
        let ws = self.stage.ws.clone();
        let _lock = ws.lock(self.opts.lock_timeout)?;
        fill_stage(&ws, &mut self.stage, &self.begin.live)
    }

    /// The transaction ID.
    pub fn txn_id(&self) -> &TxnId {
        &self.stage.txn_id
    }

    /// The staged `topics/` directory (`.scriptorium/txn/<txn-id>/topics`). Handing it out
    /// means anything in it may change: the next validation compares every staged file.
    ///
    /// # Errors
    /// Filling the stage failed (it is filled on first use).
    pub fn path(&mut self) -> Result<&Path> {
        self.materialize()?;
        self.opaque.set(true);
        Ok(&self.stage.topics)
    }

    /// The revision the transaction started from.
    pub fn base_revision(&self) -> &Revision {
        &self.begin.revision
    }

    /// The committed state read at `begin`.
    pub fn baseline(&self) -> &Baseline {
        &self.baseline
    }

    /// The committed topic files read at `begin` (paths relative to `topics/`), in tree order.
    pub fn baseline_files(&self) -> impl Iterator<Item = &TopicFile> + '_ {
        self.baseline.files().map(|state| &state.file)
    }

    /// The staged topic files (paths relative to `topics/`) and their sizes, sorted, without
    /// reading them: the baseline's, with the tracked writes and removals applied. (A stage
    /// whose directory was handed out is listed from the disk.)
    pub fn list_files(&self) -> Result<Vec<(String, u64)>> {
        let fs = self.stage.ws.fs();
        if self.opaque.get() {
            let mut out = Vec::new();
            for entry in walk(fs, &self.stage.topics)? {
                if entry.kind == FileKind::File && entry.utf8 && entry.rel.ends_with(".md") {
                    let path = self.stage.topics.join(&entry.rel);
                    let meta = fs.metadata(&path).map_err(Error::io("stat", &path))?;
                    out.push((entry.rel, meta.len));
                }
            }
            return Ok(out);
        }
        let mut sizes: std::collections::BTreeMap<String, u64> =
            self.baseline.files().map(|f| (f.path().to_owned(), f.bytes())).collect();
        for rel in &self.dirty {
            let path = self.stage.topics.join(rel);
            match fs.metadata(&path) {
                Ok(meta) if meta.kind == FileKind::File => {
                    sizes.insert(rel.clone(), meta.len);
                }
                _ => {
                    sizes.remove(rel);
                }
            }
        }
        Ok(sizes.into_iter().collect())
    }

    /// The trust of `source_ref` as validation will see it (the live archive plus the
    /// transaction's pending sources); `None` when nothing archived vouches for it.
    pub fn source_trust(&self, source_ref: &str) -> Option<TrustState> {
        self.begin.resolver.trust(source_ref)
    }

    /// The organizer counters as committed at `begin`.
    pub fn counters(&self) -> Counters {
        self.begin.runtime.state.counters()
    }

    /// Makes the install write `counters` into `runtime.json`, with the topics (the
    /// counters move exactly when the batch installs). A transaction that changes only
    /// the counters saves them and installs nothing.
    pub fn set_counters(&mut self, counters: Counters) {
        self.counters = Some(counters);
    }

    /// The options the transaction was started with.
    pub fn options(&self) -> &BeginOptions {
        &self.opts
    }

    /// Runs `f` on the staged `topics/` directory: the closure edits files in place (anything
    /// it writes outside `topics/**/*.md` is refused at validation). The next validation
    /// compares every staged file.
    ///
    /// # Errors
    /// Filling the stage failed (it is filled on first use).
    pub fn edit<R>(&mut self, f: impl FnOnce(&Path) -> R) -> Result<R> {
        self.materialize()?;
        self.opaque.set(true);
        Ok(f(&self.stage.topics))
    }

    /// Writes `text` to the staged file at the workspace-relative `path` (`topics/…/x.md`),
    /// creating parent directories. Only `topics/**/*.md` is writable.
    pub fn write_file(&mut self, path: &str, text: &str) -> Result<()> {
        let rel = writable_path(path)?;
        // A write of what the committed file already holds changes nothing: not even the
        // stage needs to exist for it.
        let unchanged = !self.opaque.get()
            && !self.dirty.contains(&rel)
            && self.begin.live.files.get(&rel).is_some_and(|file| {
                u64::try_from(text.len()).is_ok_and(|n| n == file.meta.len)
                    && file.hash == crate::state::sha256_hex(text.as_bytes())
            });
        if unchanged {
            return Ok(());
        }
        self.materialize()?;
        let fs = self.stage.ws.fs();
        let target = self.stage.topics.join(&rel);
        let mut dir = self.stage.topics.clone();
        let parts: Vec<&str> = rel.split('/').collect();
        let mut made = String::new();
        for part in &parts[..parts.len().saturating_sub(1)] {
            dir.push(part);
            let created = !fs.metadata(&dir).is_ok_and(|m| m.kind == FileKind::Dir);
            crate::workspace::ensure_dir(fs, &dir)?;
            if created {
                self.stage.dirs_changed.insert(made.clone());
            }
            if !made.is_empty() {
                made.push('/');
            }
            made.push_str(part);
        }
        if fs.metadata(&target).is_ok_and(|m| m.kind != FileKind::File) {
            return Err(Error::invalid(
                ErrorCode::PathOutsideWorkspace,
                format!("not a regular file: {path}"),
            ));
        }
        fs.write(&target, text.as_bytes(), 0o600).map_err(Error::io("write", &target))?;
        self.stage.wrote(&rel);
        self.dirty.insert(rel);
        Ok(())
    }

    /// Removes the staged file at the workspace-relative `path` (`topics/…/x.md`).
    pub fn remove_file(&mut self, path: &str) -> Result<()> {
        let rel = writable_path(path)?;
        self.materialize()?;
        let target = self.stage.topics.join(&rel);
        self.stage.ws.fs().remove_file(&target).map_err(Error::io("unlink", &target))?;
        self.stage.dirs_changed.insert(parent(&rel).to_owned());
        self.dirty.insert(rel);
        Ok(())
    }

    /// The staged text of a workspace-relative `topics/…/x.md` path (`None` when absent).
    pub fn read_file(&self, path: &str) -> Result<Option<String>> {
        let rel = writable_path(path)?;
        if !self.stage.materialized {
            // Nothing written yet: the stage is the live tree as `begin` read it.
            let Some(file) = self.begin.live.files.get(&rel) else { return Ok(None) };
            let topics = &self.stage.ws.layout().topics;
            let bytes = self.begin.live.bytes(self.stage.ws.fs(), topics, &rel)?;
            if crate::state::sha256_hex(&bytes) != file.hash {
                return Err(Error::io("read", &topics.join(&rel))(std::io::Error::other(
                    "changed since the transaction began; retry",
                )));
            }
            return String::from_utf8(bytes).map(Some).map_err(|_| {
                Error::invalid(ErrorCode::InvalidTopicFormat, format!("not UTF-8: {path}"))
            });
        }
        let target = self.stage.topics.join(&rel);
        match self.stage.ws.fs().read(&target) {
            Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
                Error::invalid(ErrorCode::InvalidTopicFormat, format!("not UTF-8: {path}"))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("read", &target)(e)),
        }
    }

    /// Rolls the stage back to the tree read at `begin` (the writer's repair turn, the tools'
    /// replay). The baseline read at `begin` stays: it describes exactly that tree. The
    /// transaction keeps its base revision.
    pub fn reset(&mut self) -> Result<()> {
        if !self.stage.materialized {
            // Nothing was written.
            self.dirty.clear();
            return Ok(());
        }
        let ws = self.stage.ws.clone();
        let fs = ws.fs();
        if self.opaque.get() {
            match fs.remove_tree(&self.stage.topics) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("remove", &self.stage.topics)(e)),
            }
            self.stage.written.clear();
            self.stage.dirs_changed.clear();
            write_tree(&ws, &mut self.stage, &self.begin.live)?;
            self.opaque.set(false);
            self.dirty.clear();
            return Ok(());
        }
        let live_topics = self.stage.ws.layout().topics.clone();
        for rel in std::mem::take(&mut self.dirty) {
            let path = self.stage.topics.join(&rel);
            if self.begin.live.files.contains_key(&rel) {
                let bytes = self.begin.live.bytes(fs, &live_topics, &rel)?;
                fs.write(&path, &bytes, 0o600).map_err(Error::io("write", &path))?;
                self.stage.wrote(&rel);
            } else {
                match fs.remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io("unlink", &path)(e)),
                }
            }
        }
        Ok(())
    }

    /// Discards the transaction (same as dropping it).
    pub fn abort(self) {}
}

/// A rejected transaction: every violation, and the stage handed back untouched (the writer's
/// repair turn edits it again; the CLI saves the edited text).
#[must_use = "a Rejected holds the stage; drop it to discard the edits"]
pub struct Rejected {
    pub(crate) staged: Box<Staged>,
    pub(crate) violations: Vec<Violation>,
}

impl Rejected {
    /// Every violation found.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The stage, unchanged since the edit.
    pub fn staged(&self) -> &Staged {
        &self.staged
    }

    /// Takes the stage back (to repair and validate again).
    pub fn into_staged(self) -> Staged {
        *self.staged
    }

    /// The stage and the violations.
    pub fn into_parts(self) -> (Staged, Vec<Violation>) {
        (*self.staged, self.violations)
    }
}

impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("txn_id", self.staged.txn_id())
            .field("violations", &self.violations)
            .finish()
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transaction rejected with {} violation(s)", self.violations.len())?;
        for v in &self.violations {
            write!(f, "\n  {v}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Rejected {}

impl From<Rejected> for Error {
    /// Drops the stage and keeps the violations.
    fn from(rejected: Rejected) -> Error {
        Error::Rejected { violations: rejected.violations }
    }
}
