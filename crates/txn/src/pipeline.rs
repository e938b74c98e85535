//! The typestate pipeline: [`Workspace::begin`] → [`Staged`] (edit) → [`Staged::validate`] →
//! [`Validated`] → [`Validated::install`] → [`Installed`].

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, PoisonError};

use scriptorium_topics_format::source::{ArchiveRecord, ArchiveResolver, PlannedWrite, TrustState};
use scriptorium_topics_format::topic::{
    CITE_HINT, EvidenceAssignment, excerpt, normalize, rewrite_links,
};
use scriptorium_topics_format::{Code, TopicFile, Unit, parse_tree};

use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::fs::{FileKind, Fs};
use crate::ids::{Revision, TxnId};
use crate::lock::{LockTimeout, OwnerLock};
use crate::sources::LiveSources;
use crate::state::{
    Batch, Counters, RuntimeState, read_record, read_runtime, revision_of, sha256_hex,
    sources_fingerprint, walk,
};
use crate::validate::{self, Baseline, Limits, Required, Rules, Violation};
use crate::workspace::{Snapshot, Workspace, empty_record};

/// The resolver every step of one transaction shares: each cited archive is read and scanned
/// once per transaction (the `sources/` fingerprint check guarantees it did not change).
pub type Resolver = ArchiveResolver<LiveSources>;

/// How a transaction starts.
#[derive(Clone, Debug, Default)]
pub struct BeginOptions {
    /// Compare-and-set: the revision the caller read. A different revision at `begin` or at
    /// install is `CONCURRENT_UPDATE`.
    pub base_revision: Option<Revision>,
    /// The transaction's own evidence: when `Some`, every ref no committed block cited must be
    /// in it (writers: the batch's refs; the organizer: the empty set).
    pub allowed_new_sources: Option<BTreeSet<String>>,
    /// How long `begin` and `install` wait for the write lock.
    pub lock_timeout: LockTimeout,
    /// Which committed block IDs must survive.
    pub required: Required,
    /// The commit message (for the history crate; one line).
    pub message: String,
    /// Size limits.
    pub limits: Limits,
    /// Sources the transaction archives as it installs (the change API's declared `sources`).
    /// `begin` plans their append against the live archive (refusing what cannot be archived)
    /// and validation resolves refs against the live archive with the planned frames
    /// appended; the install appends them under the write lock right before the swap. A
    /// transaction that is rejected, aborted or refused by the compare-and-set therefore
    /// archives nothing.
    pub pending_sources: Vec<ArchiveRecord>,
    /// The batch of session records this transaction writes (the writer's): the install
    /// records it in the revision record with the topics ([`Workspace::installed_batches`]).
    pub batch: Option<Batch>,
}

/// The baseline of one revision, kept by the [`Workspace`] handle between transactions so
/// that `begin` does not parse an unchanged tree again.
///
/// `begin` still reads and hashes every byte of `topics/` and stats `sources/`; it takes the
/// cached baseline only when the revision, the SHA-256 digest of those bytes and the `sources/`
/// fingerprint all equal the ones the baseline was read from. Any outside edit of `topics/`
/// changes the digest, any install or archive append (by any process) changes the revision, so
/// a stale baseline can never be used. A rejected or aborted transaction changes nothing on
/// disk and leaves the entry valid.
pub(crate) struct CachedBaseline {
    pub(crate) revision: Revision,
    /// The digest of `topics/` (see [`Snapshot::digest`]).
    pub(crate) topics: String,
    /// The `sources/` fingerprint.
    pub(crate) sources: String,
    pub(crate) baseline: Arc<Baseline>,
}

/// What begin read, shared by the stages of one transaction.
struct Begin {
    revision: Revision,
    sources: String,
    /// The append of [`BeginOptions::pending_sources`] planned at `begin`.
    pending: Vec<PlannedWrite>,
    runtime: Option<Vec<u8>>,
    snapshot: Snapshot,
    files: Vec<TopicFile>,
    resolver: Resolver,
}

/// A stage directory `.scriptorium/txn/<txn-id>/`, removed when dropped.
struct Stage {
    ws: Workspace,
    txn_id: TxnId,
    dir: PathBuf,
    topics: PathBuf,
    armed: bool,
    _owner: Option<OwnerLock>,
}

impl Drop for Stage {
    fn drop(&mut self) {
        if self.armed {
            // Best effort: if this fails, the next open's recovery removes the directory.
            let _ = self.ws.fs().remove_tree(&self.dir);
        }
    }
}

/// An open transaction: a private copy of `topics/` in `.scriptorium/txn/<txn-id>/topics/`.
///
/// Dropping it removes the stage directory; nothing outside it was written.
#[must_use = "dropping a Staged discards its edits"]
pub struct Staged {
    stage: Stage,
    begin: Arc<Begin>,
    baseline: Arc<Baseline>,
    opts: BeginOptions,
    /// New organizer counters the install writes into `runtime.json`.
    counters: Option<Counters>,
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
    /// Starts a transaction. Under the write lock (`opts.lock_timeout`): reads every byte of
    /// the live `topics/` and computes the current revision (`CONCURRENT_UPDATE` when it is not
    /// `opts.base_revision`), reads the baseline from those bytes (before anything touches the
    /// stage; the baseline of an unchanged revision is reused, see the crate docs'
    /// *Limitations*), records the `sources/` stat fingerprint, then copies `topics/` (never
    /// `sources/`) into a new stage directory, recycling the tree the last install replaced.
    /// The lock is released before returning: the caller edits without it.
    ///
    /// Writes only inside `.scriptorium/txn/<txn-id>/`; on error that directory is removed.
    pub fn begin(&self, opts: BeginOptions) -> Result<Staged> {
        let fs = self.fs();
        let layout = self.layout();
        let _lock = self.lock(opts.lock_timeout)?;
        let snapshot = self.snapshot()?;
        let record = read_record(fs, layout)?.unwrap_or_else(empty_record);
        let sources = sources_fingerprint(fs, &layout.sources)?;
        let (_, runtime) = read_runtime(fs, layout)?;
        let digest = snapshot.digest();
        let revision = revision_of(record.counter, &record.txn_id, &digest, &sources);
        if let Some(base) = opts.base_revision.as_ref().filter(|base| **base != revision) {
            return Err(Error::ConcurrentUpdate { base_revision: base.clone(), revision });
        }
        let files: Vec<TopicFile> = snapshot
            .files
            .iter()
            .filter(|(rel, _, _)| rel.ends_with(".md"))
            .filter_map(|(rel, bytes, _)| {
                std::str::from_utf8(bytes).ok().map(|text| TopicFile::new(rel.clone(), text))
            })
            .collect();
        let live = LiveSources::new(self.inner.fs.clone(), layout.root.clone());
        let pending = if opts.pending_sources.is_empty() {
            Vec::new()
        } else {
            self.plan_archive(&opts.pending_sources)?.writes
        };
        let resolver = ArchiveResolver::new(live.clone());
        let cached = self.cached_baseline().filter(|cached| {
            cached.revision == revision && cached.topics == digest && cached.sources == sources
        });
        let baseline = match cached {
            Some(cached) => Arc::clone(&cached.baseline),
            None => {
                let baseline = Arc::new(Baseline::read(&files, &resolver));
                if let Some(error) = resolver.files().take_errors().into_iter().next() {
                    return Err(Error::Io {
                        op: "read sources",
                        path: layout.sources.clone(),
                        source: std::io::Error::other(error),
                    });
                }
                self.cache_baseline(CachedBaseline {
                    revision: revision.clone(),
                    topics: digest,
                    sources: sources.clone(),
                    baseline: Arc::clone(&baseline),
                });
                baseline
            }
        };

        let txn_id = TxnId::generate(self.inner.clock.as_ref(), self.inner.ids.as_ref());
        let dir = layout.txn.join(txn_id.as_str());
        fs.create_dir(&dir, 0o700).map_err(Error::io("mkdir", &dir))?;
        let mut stage = Stage {
            ws: self.clone(),
            txn_id,
            topics: dir.join("topics"),
            dir,
            armed: true,
            _owner: None,
        };
        stage._owner = Some(OwnerLock::create(&stage.dir.join("owner.lock"))?);
        stage_tree(self, &stage.topics, &snapshot)?;
        // Validation sees the archive as the install will leave it. The baseline above was
        // read from the live archive only: committed blocks cannot cite what is not archived.
        let resolver = if pending.is_empty() {
            resolver
        } else {
            ArchiveResolver::new(live.with_overlay(&pending))
        };
        let begin = Begin { revision, sources, pending, runtime, snapshot, files, resolver };
        Ok(Staged { stage, begin: Arc::new(begin), baseline, opts, counters: None })
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
}

/// Fills the new stage directory `topics` with a copy of the snapshot.
///
/// Creating a hundred files costs tens of milliseconds on ext4 (inode allocation), so the tree
/// the last install replaced (`.scriptorium/txn/spare`, see [`crate#install`]) is recycled
/// when there is one: it is renamed into the stage, then made equal to the snapshot, keeping
/// only regular files whose bytes equal the snapshot's, that have mode 0600 and exactly one
/// link (so no other name, inside or outside the workspace, can see an edit of the stage),
/// replacing everything else by fresh files. Without a spare, or when it holds anything
/// unexpected, the stage is written from scratch.
fn stage_tree(ws: &Workspace, topics: &Path, snapshot: &Snapshot) -> Result<()> {
    let fs = ws.fs();
    if fs.rename(&ws.layout().spare, topics).is_err() {
        return write_tree(ws, topics, snapshot);
    }
    match recycle_tree(fs, topics, snapshot) {
        Ok(true) => Ok(()),
        Ok(false) | Err(_) => {
            match fs.metadata(topics) {
                Ok(meta) if meta.kind == FileKind::Dir => fs.remove_tree(topics),
                Ok(_) => fs.remove_file(topics),
                Err(e) => Err(e),
            }
            .map_err(Error::io("remove", topics))?;
            write_tree(ws, topics, snapshot)
        }
    }
}

/// Makes the recycled tree at `topics` equal to `snapshot` (see [`stage_tree`]). `Ok(false)`
/// when it holds something this cannot fix in place (not a directory, a non-UTF-8 name).
fn recycle_tree(fs: &dyn Fs, topics: &Path, snapshot: &Snapshot) -> Result<bool> {
    let meta = fs.metadata(topics).map_err(Error::io("stat", topics))?;
    if meta.kind != FileKind::Dir {
        return Ok(false);
    }
    if meta.mode != 0o700 {
        fs.set_mode(topics, 0o700).map_err(Error::io("chmod", topics))?;
    }
    let dirs: HashSet<&str> = snapshot.dirs.iter().map(String::as_str).collect();
    let files: HashMap<&str, &[u8]> =
        snapshot.files.iter().map(|(rel, bytes, _)| (rel.as_str(), bytes.as_slice())).collect();
    let entries = walk(fs, topics)?;
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
            FileKind::File => files.get(entry.rel.as_str()).is_some_and(|bytes| {
                meta.nlink == 1
                    && meta.mode == 0o600
                    && usize::try_from(meta.len).is_ok_and(|len| len == bytes.len())
                    && fs.read(&path).is_ok_and(|on_disk| on_disk == *bytes)
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
            removed_dirs.push(entry.rel);
        } else {
            fs.remove_file(&path).map_err(Error::io("unlink", &path))?;
        }
    }
    for dir in snapshot.dirs.iter().filter(|dir| !kept.contains(*dir)) {
        let path = topics.join(dir);
        fs.create_dir(&path, 0o700).map_err(Error::io("mkdir", &path))?;
    }
    for (rel, bytes, _) in snapshot.files.iter().filter(|(rel, _, _)| !kept.contains(rel)) {
        let path = topics.join(rel);
        fs.write(&path, bytes, 0o600).map_err(Error::io("write", &path))?;
    }
    Ok(true)
}

/// Removes every directory under `topics` that holds no file (deepest first): a transaction
/// that drops the last file of a directory does not install the empty directory.
fn prune_empty_dirs(fs: &dyn Fs, topics: &Path) -> Result<()> {
    let mut dirs: Vec<String> =
        walk(fs, topics)?.into_iter().filter(|e| e.kind == FileKind::Dir).map(|e| e.rel).collect();
    // Sorted by path, so every directory comes after its parent: reversed, children first.
    dirs.reverse();
    for rel in dirs {
        let path = topics.join(&rel);
        if fs.read_dir(&path).map_err(Error::io("read_dir", &path))?.is_empty() {
            fs.remove_tree(&path).map_err(Error::io("rmdir", &path))?;
        }
    }
    Ok(())
}

/// Writes the snapshot's directories and files under `topics` (created 0700 / 0600).
fn write_tree(ws: &Workspace, topics: &Path, snapshot: &Snapshot) -> Result<()> {
    let fs = ws.fs();
    fs.create_dir(topics, 0o700).map_err(Error::io("mkdir", topics))?;
    for dir in &snapshot.dirs {
        let path = topics.join(dir);
        fs.create_dir(&path, 0o700).map_err(Error::io("mkdir", &path))?;
    }
    for (rel, bytes, _) in &snapshot.files {
        let path = topics.join(rel);
        fs.write(&path, bytes, 0o600).map_err(Error::io("write", &path))?;
    }
    Ok(())
}

/// Checks a workspace-relative path a caller wants to write (reference §1.2
/// `validate_writable_path`) and returns it relative to `topics/`.
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
    Ok(parts[1..].join("/"))
}

impl Staged {
    /// The transaction ID.
    pub fn txn_id(&self) -> &TxnId {
        &self.stage.txn_id
    }

    /// The staged `topics/` directory (`.scriptorium/txn/<txn-id>/topics`).
    pub fn path(&self) -> &Path {
        &self.stage.topics
    }

    /// The revision the transaction started from.
    pub fn base_revision(&self) -> &Revision {
        &self.begin.revision
    }

    /// The committed state read at `begin`.
    pub fn baseline(&self) -> &Baseline {
        &self.baseline
    }

    /// The committed topic files read at `begin` (paths relative to `topics/`).
    pub fn baseline_files(&self) -> &[TopicFile] {
        &self.begin.files
    }

    /// The trust of `source_ref` as validation will see it (the live archive plus the
    /// transaction's pending sources); `None` when nothing archived vouches for it.
    pub fn source_trust(&self, source_ref: &str) -> Option<TrustState> {
        self.begin.resolver.trust(source_ref)
    }

    /// The organizer counters as committed at `begin`.
    pub fn counters(&self) -> Counters {
        RuntimeState::parse(self.begin.runtime.as_deref()).counters()
    }

    /// Makes the install write `counters` into `runtime.json`, with the topics (reference §5.4:
    /// the counters move exactly when the batch installs). A transaction that changes only
    /// the counters installs too.
    pub fn set_counters(&mut self, counters: Counters) {
        self.counters = Some(counters);
    }

    /// The options the transaction was started with.
    pub fn options(&self) -> &BeginOptions {
        &self.opts
    }

    /// Runs `f` on the staged `topics/` directory: the closure edits files in place (anything
    /// it writes outside `topics/**/*.md` is refused at validation). The structured change API
    /// builds on this seam (and on [`Staged::write_file`] / [`Staged::remove_file`]).
    pub fn edit<R>(&mut self, f: impl FnOnce(&Path) -> R) -> R {
        f(&self.stage.topics)
    }

    /// Writes `text` to the staged file at the workspace-relative `path` (`topics/…/x.md`),
    /// creating parent directories. Only `topics/**/*.md` is writable.
    pub fn write_file(&mut self, path: &str, text: &str) -> Result<()> {
        let rel = writable_path(path)?;
        let fs = self.stage.ws.fs();
        let target = self.stage.topics.join(&rel);
        let mut dir = self.stage.topics.clone();
        let parts: Vec<&str> = rel.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            dir.push(part);
            crate::workspace::ensure_dir(fs, &dir)?;
        }
        if fs.metadata(&target).is_ok_and(|m| m.kind != FileKind::File) {
            return Err(Error::invalid(
                ErrorCode::PathOutsideWorkspace,
                format!("not a regular file: {path}"),
            ));
        }
        fs.write(&target, text.as_bytes(), 0o600).map_err(Error::io("write", &target))
    }

    /// Removes the staged file at the workspace-relative `path` (`topics/…/x.md`).
    pub fn remove_file(&mut self, path: &str) -> Result<()> {
        let rel = writable_path(path)?;
        let target = self.stage.topics.join(&rel);
        self.stage.ws.fs().remove_file(&target).map_err(Error::io("unlink", &target))
    }

    /// The staged text of a workspace-relative `topics/…/x.md` path (`None` when absent).
    pub fn read_file(&self, path: &str) -> Result<Option<String>> {
        let rel = writable_path(path)?;
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
        let fs = self.stage.ws.fs();
        match fs.remove_tree(&self.stage.topics) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("remove", &self.stage.topics)(e)),
        }
        write_tree(&self.stage.ws, &self.stage.topics, &self.begin.snapshot)
    }

    /// Discards the transaction (same as dropping it).
    pub fn abort(self) {}

    /// Checks the stage and prepares the install: the IO checks (only regular `*.md` files
    /// under `topics/`, `sources/` unchanged since `begin`), normalization with the committed
    /// IDs, [`validate::validate`], creation-order seeding and the link rewrite. Every
    /// violation is collected; on rejection the untouched stage is handed back in
    /// [`Rejected`]. On success the normalized files are written into the stage (nothing
    /// outside it is written).
    pub fn validate(self) -> std::result::Result<Validated, Rejected> {
        match self.prepare() {
            Ok(Ok(prepared)) => {
                Ok(Validated { stage: self.stage, begin: self.begin, opts: self.opts, prepared })
            }
            Ok(Err(violations)) => Err(Rejected { staged: Box::new(self), violations }),
            Err(error) => {
                let violations = vec![Violation::tree(error.code(), error.to_string())];
                Err(Rejected { staged: Box::new(self), violations })
            }
        }
    }

    fn prepare(&self) -> Result<std::result::Result<Prepared, Vec<Violation>>> {
        let fs = self.stage.ws.fs();
        let layout = self.stage.ws.layout();
        let begin = &self.begin;
        let mut violations = Vec::new();

        // IO checks: what the stage holds.
        let mut files = Vec::new();
        let mut on_disk: HashMap<String, String> = HashMap::new();
        for entry in walk(fs, &self.stage.topics)? {
            let shown = format!("topics/{}", entry.rel);
            match entry.kind {
                _ if !entry.utf8 => violations.push(Violation::at(
                    ErrorCode::PathOutsideWorkspace,
                    shown.clone(),
                    0,
                    0,
                    format!("path is not valid UTF-8: {shown}"),
                )),
                FileKind::Dir => {}
                FileKind::File if entry.rel.ends_with(".md") => {
                    let path = self.stage.topics.join(&entry.rel);
                    let bytes = fs.read(&path).map_err(Error::io("read", &path))?;
                    match String::from_utf8(bytes) {
                        Ok(text) if text.contains('\0') => {
                            // Kept in the tree (its blocks still count as present), refused.
                            let at = text.find('\0').unwrap_or(0);
                            let line = text[..at].matches('\n').count() + 1;
                            violations.push(Violation {
                                diagnostic: Some(Code::NulByte),
                                ..Violation::at(
                                    ErrorCode::InvalidTopicFormat,
                                    shown.clone(),
                                    u32::try_from(line).unwrap_or(u32::MAX),
                                    1,
                                    format!("topic file contains a NUL byte: {shown}"),
                                )
                            });
                            on_disk.insert(entry.rel.clone(), text.clone());
                            files.push(TopicFile::new(entry.rel, text));
                        }
                        Ok(text) => {
                            on_disk.insert(entry.rel.clone(), text.clone());
                            files.push(TopicFile::new(entry.rel, text));
                        }
                        Err(_) => violations.push(Violation::at(
                            ErrorCode::InvalidTopicFormat,
                            shown.clone(),
                            1,
                            1,
                            format!("topic file is not valid UTF-8: {shown}"),
                        )),
                    }
                }
                FileKind::File => violations.push(Violation::at(
                    ErrorCode::ReadOnlyPath,
                    shown.clone(),
                    0,
                    0,
                    format!("only topics/**/*.md is writable: {shown}"),
                )),
                FileKind::Symlink | FileKind::Other => violations.push(Violation::at(
                    ErrorCode::PathOutsideWorkspace,
                    shown.clone(),
                    0,
                    0,
                    format!("path escapes the workspace (not a regular file): {shown}"),
                )),
            }
        }
        for (rel, kind) in &begin.snapshot.irregular {
            let shown = format!("topics/{rel}");
            violations.push(Violation::at(
                ErrorCode::PathOutsideWorkspace,
                shown.clone(),
                0,
                0,
                format!("the live tree holds a {kind:?} that a transaction cannot keep: {shown}"),
            ));
        }
        if sources_fingerprint(fs, &layout.sources)? != begin.sources {
            violations.push(Violation::tree(
                ErrorCode::SourcesChanged,
                "Source Memory is append-only: sources/ changed during the transaction",
            ));
        }

        // Normalize, validate, rewrite links.
        let committed: HashSet<String> = self.baseline.block_ids().iter().cloned().collect();
        let normalized = normalize(&files, &committed, self.baseline.units(), &begin.resolver);
        // Normalization's last step prunes sections that hold no record; written text there
        // would vanish while the change reports success. Refuse it instead.
        for dropped in &normalized.dropped {
            violations.push(Violation {
                diagnostic: Some(Code::UncitedParagraph),
                ..Violation::at(
                    ErrorCode::UncitedParagraph,
                    format!("topics/{}", dropped.path),
                    dropped.line,
                    1,
                    format!(
                        "text cites no source and would be dropped: {}; {CITE_HINT}",
                        excerpt(&dropped.text)
                    ),
                )
            });
        }
        let rules = Rules {
            required: self.opts.required.clone(),
            allowed_new_sources: self.opts.allowed_new_sources.as_ref(),
            limits: self.opts.limits,
        };
        let validation =
            validate::validate(&self.baseline, &normalized.files, &begin.resolver, &rules);
        violations.extend(validation.violations);
        for error in begin.resolver.files().take_errors() {
            violations.push(Violation::tree(ErrorCode::Io, error));
        }
        if !violations.is_empty() {
            return Ok(Err(violations));
        }
        let mut final_files = normalized.files;
        let rewritten = rewrite_links(&final_files, &validation.units, &begin.resolver);
        let units = if rewritten.is_empty() {
            validation.units
        } else {
            let by_path: HashMap<String, String> =
                rewritten.into_iter().map(|f| (f.path, f.text)).collect();
            for file in &mut final_files {
                if let Some(text) = by_path.get(&file.path) {
                    file.text.clone_from(text);
                }
            }
            let parsed = parse_tree(&final_files, &begin.resolver);
            if !parsed.diagnostics.is_empty() {
                return Ok(Err(parsed
                    .diagnostics
                    .into_iter()
                    .map(Violation::from_diagnostic)
                    .collect()));
            }
            parsed.units
        };

        // Write the normalized tree into the stage.
        let final_paths: HashSet<&str> = final_files.iter().map(|f| f.path.as_str()).collect();
        for file in &final_files {
            if on_disk.get(&file.path) != Some(&file.text) {
                let path = self.stage.topics.join(&file.path);
                fs.write(&path, file.text.as_bytes(), 0o600).map_err(Error::io("write", &path))?;
            }
        }
        for rel in on_disk.keys().filter(|rel| !final_paths.contains(rel.as_str())) {
            let path = self.stage.topics.join(rel);
            fs.remove_file(&path).map_err(Error::io("unlink", &path))?;
        }
        prune_empty_dirs(fs, &self.stage.topics)?;

        // What changed against the baseline.
        let hashes: HashMap<String, String> =
            final_files.iter().map(|f| (f.path.clone(), sha256_hex(f.text.as_bytes()))).collect();
        let before: HashMap<&str, &str> = begin
            .snapshot
            .files
            .iter()
            .map(|(rel, _, hash)| (rel.as_str(), hash.as_str()))
            .collect();
        let mut changed: BTreeSet<String> = BTreeSet::new();
        for (rel, hash) in &hashes {
            if before.get(rel.as_str()) != Some(&hash.as_str()) {
                changed.insert(format!("topics/{rel}"));
            }
        }
        for rel in before.keys().filter(|rel| !hashes.contains_key(**rel)) {
            changed.insert(format!("topics/{rel}"));
        }

        // Creation order (reference §7.5).
        let mut runtime_state = RuntimeState::parse(begin.runtime.as_deref());
        let seeded = runtime_state.seed(self.baseline.units(), &units);
        let counted = self.counters.as_ref().is_some_and(|counters| {
            let moved = runtime_state.counters() != *counters;
            runtime_state.set_counters(counters);
            moved
        });
        let runtime = if seeded || counted {
            let text = runtime_state.render();
            (begin.runtime.as_deref() != Some(text.as_bytes())).then_some(text)
        } else {
            None
        };
        // `runtime.json` is runtime state, not memory: it is installed with the topics but is
        // not a changed file (and a transaction that changes only it changes nothing).

        // Covered refs.
        let cited: BTreeSet<String> = units.iter().flat_map(|u| u.refs.iter().cloned()).collect();
        let covered: BTreeSet<String> = match &self.opts.allowed_new_sources {
            Some(allowed) => cited.intersection(allowed).cloned().collect(),
            None => cited.into_iter().filter(|r| !self.baseline.is_committed_ref(r)).collect(),
        };

        Ok(Ok(Prepared {
            files: final_files,
            units,
            hashes,
            runtime,
            changed_files: changed.into_iter().collect(),
            block_ids: normalized.block_ids,
            evidence_ids: normalized.evidence_ids,
            covered,
        }))
    }
}

/// What validation computed for the install.
pub(crate) struct Prepared {
    pub(crate) files: Vec<TopicFile>,
    pub(crate) units: Vec<Unit>,
    pub(crate) hashes: HashMap<String, String>,
    pub(crate) runtime: Option<String>,
    pub(crate) changed_files: Vec<String>,
    pub(crate) block_ids: BTreeMap<String, String>,
    pub(crate) evidence_ids: Vec<EvidenceAssignment>,
    pub(crate) covered: BTreeSet<String>,
}

/// A stage that passed validation, normalized, ready to install. Dropping it removes the stage.
#[must_use = "dropping a Validated discards the transaction"]
pub struct Validated {
    stage: Stage,
    begin: Arc<Begin>,
    opts: BeginOptions,
    prepared: Prepared,
}

impl fmt::Debug for Validated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Validated")
            .field("txn_id", &self.stage.txn_id)
            .field("changed_files", &self.prepared.changed_files)
            .finish()
    }
}

impl Validated {
    /// The transaction ID.
    pub fn txn_id(&self) -> &TxnId {
        &self.stage.txn_id
    }

    /// The `topics/…` paths the install will change, sorted (empty: the install changes
    /// nothing, see [`Installed::noop`]).
    pub fn changed_files(&self) -> &[String] {
        &self.prepared.changed_files
    }

    /// The normalized tree that will be installed.
    pub fn files(&self) -> &[TopicFile] {
        &self.prepared.files
    }

    /// Its units.
    pub fn units(&self) -> &[Unit] {
        &self.prepared.units
    }

    /// Installs the stage atomically (see the crate docs, *Install*): under the write lock,
    /// compare-and-set on the revision (`CONCURRENT_UPDATE`), intent record, fsync of the
    /// staged tree, `RENAME_EXCHANGE` of the staged and live `topics/` (the linearization
    /// point), fsyncs, new `runtime.json` and revision record, cleanup; then the observers.
    ///
    /// Atomicity: a crash or error before the exchange leaves the old revision; after it, the
    /// new one (the next `open` finishes the bookkeeping). An error that reaches the caller
    /// after the linearization point is [`Error::Unfinished`]: the memory *is* installed.
    pub fn install(self) -> Result<Installed> {
        let Validated { stage, begin, opts, prepared } = self;
        crate::install::install(crate::install::Job {
            stage: InstallStage {
                ws: stage.ws.clone(),
                txn_id: stage.txn_id.clone(),
                dir: stage.dir.clone(),
                topics: stage.topics.clone(),
                guard: stage,
            },
            begin_revision: begin.revision.clone(),
            base_revision: opts.base_revision.clone(),
            lock_timeout: opts.lock_timeout,
            message: opts.message,
            sources: begin.sources.clone(),
            pending_sources: opts.pending_sources,
            pending: begin.pending.clone(),
            batch: opts.batch,
            prepared,
        })
    }
}

/// The stage as the install sees it; `guard` removes it if the install fails early.
pub(crate) struct InstallStage {
    pub(crate) ws: Workspace,
    pub(crate) txn_id: TxnId,
    pub(crate) dir: PathBuf,
    pub(crate) topics: PathBuf,
    guard: Stage,
}

impl InstallStage {
    /// The install removed the stage itself: do not remove it again on drop.
    pub(crate) fn disarm(&mut self) {
        self.guard.armed = false;
    }
}

/// A rejected transaction: every violation, and the stage handed back untouched (the writer's
/// repair turn edits it again; the CLI saves the edited text).
#[must_use = "a Rejected holds the stage; drop it to discard the edits"]
pub struct Rejected {
    staged: Box<Staged>,
    violations: Vec<Violation>,
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

/// The outcome of a successful install.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Installed {
    /// The transaction ID (recorded in `.scriptorium/revision`; the history crate's `Txn-Id`).
    pub txn_id: TxnId,
    /// The new revision.
    pub revision: Revision,
    /// The revision the transaction started from.
    pub base_revision: Revision,
    /// Workspace paths whose bytes changed (created, modified or deleted `topics/…` files,
    /// and the archives of pending sources), sorted. Runtime state is not listed.
    pub changed_files: Vec<String>,
    /// Block IDs assigned by normalization, keyed `topics/<file>#<k>`.
    pub block_ids: BTreeMap<String, String>,
    /// Evidence IDs minted for local labels, per (file, label).
    pub evidence_ids: Vec<EvidenceAssignment>,
    /// Source refs cited by the installed tree that this transaction's evidence covers: with
    /// `allowed_new_sources`, the cited refs in that set (the batch's messages that made it into
    /// memory, or were already cited); without it, the cited refs no committed block cited
    /// before (the evidence this transaction introduced).
    pub covered: BTreeSet<String>,
    /// The commit message given at `begin`.
    pub message: String,
    /// Observers that failed (the install stands regardless).
    pub observer_failures: Vec<ObserverFailure>,
    /// The transaction changed no byte of `topics/` and archived nothing, so nothing was
    /// installed: `revision` is the unchanged revision, `changed_files` is empty, no observer
    /// ran (no views rebuild, no index update, no git commit). Only organizer counters, if they
    /// moved, were written to `runtime.json`.
    pub noop: bool,
}

/// An observer's failure after an install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObserverFailure {
    /// The observer's [`InstallObserver::name`].
    pub observer: String,
    /// Its error, rendered.
    pub message: String,
}

/// What an observer is told about an install.
#[derive(Debug)]
#[non_exhaustive]
pub struct InstallEvent<'a> {
    /// The memory root.
    pub root: &'a Path,
    /// The install's outcome.
    pub installed: &'a Installed,
    /// The installed tree (paths relative to `topics/`).
    pub files: &'a [TopicFile],
    /// Its units.
    pub units: &'a [Unit],
}

/// Told about every successful install (derived views, the search index, git history plug in
/// here; this crate knows none of them). Runs after the install finished, still under the
/// write lock, in registration order. A failure is reported in
/// [`Installed::observer_failures`] and never un-installs.
pub trait InstallObserver: Send + Sync {
    /// A short name for failure reports.
    fn name(&self) -> &str;

    /// Called once per install.
    fn installed(
        &self,
        event: &InstallEvent<'_>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>;

    /// Called once per archive append that wrote something ([`Workspace::archive_sources`]),
    /// still under the write lock. The files also show up in no install's changed files, so an
    /// observer that follows the tree (an index, git) learns about them here. Failures are
    /// the observer's own business (logged, never undoing the append).
    fn archived(&self, _event: &ArchiveEvent<'_>) {}
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
