//! The atomic install ([`Validated::install`]; the steps are in the crate docs, *Install*) and
//! its outcome ([`Installed`]).

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use scriptorium_topics_format::BlockId;
use scriptorium_topics_format::topic::EvidenceAssignment;

use crate::begin::{Begin, BeginOptions, CachedBaseline};
use crate::error::{Error, Result};
use crate::fs::{Fs, Meta, exchange_unsupported};
use crate::ids::{Revision, TxnId};
use crate::observer::{
    ChangedFile, InstallEvent, InstallObserver, InstallingEvent, Observation, ObserverFailure,
};
use crate::prepare::Prepared;
use crate::recover::{finish_install, recover, recover_intent};
use crate::stage::{Stage, write_spare_manifest};
use crate::state::{
    BATCH_STAMPS, InstalledBatch, Intent, Layout, RevisionRecord, RuntimeCache, SwapMode,
    sha256_hex, topics_digest, write_atomic,
};
use crate::validate::Baseline;
use crate::workspace::{Current, Workspace, manifest_of};

/// A stage that passed validation, normalized, ready to install. Dropping it removes the stage.
#[must_use = "dropping a Validated discards the transaction"]
pub struct Validated {
    pub(crate) stage: Stage,
    pub(crate) begin: Arc<Begin>,
    pub(crate) opts: BeginOptions,
    pub(crate) prepared: Prepared,
    pub(crate) baseline: Arc<Baseline>,
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

    /// The changed files as they will be installed (created or modified), in tree order.
    pub fn changed(&self) -> impl Iterator<Item = &crate::validate::FileState> + '_ {
        self.prepared.changed.iter().map(AsRef::as_ref)
    }

    /// Installs the stage atomically (see the crate docs, *Install*): under the write lock,
    /// compare-and-set on the revision (`CONCURRENT_UPDATE`), intent record, fsync of what the
    /// transaction wrote into the stage, `RENAME_EXCHANGE` of the staged and live `topics/`
    /// (the linearization point), fsyncs, new `runtime.json` and revision record, cleanup;
    /// then the observers.
    ///
    /// Atomicity: a crash or error before the exchange leaves the old revision; after it, the
    /// new one (the next `open` finishes the bookkeeping). An error that reaches the caller
    /// after the linearization point is [`Error::Unfinished`]: the memory *is* installed.
    pub fn install(self) -> Result<Installed> {
        install(self)
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
    /// Files edited outside any transaction since the last install that this install recorded
    /// (`topics/…`, then `sources/…` archive files another program wrote, each part sorted):
    /// they are committed, indexed and viewed with it.
    pub adopted: Vec<String>,
    /// Block IDs assigned by normalization, keyed `topics/<file>#<k>`.
    pub block_ids: BTreeMap<String, BlockId>,
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
    /// What each observer reported, by [`InstallObserver::name`](crate::InstallObserver::name).
    pub observed: Vec<(String, Observation)>,
    /// The transaction changed no byte of `topics/` and archived nothing, so nothing was
    /// installed: `revision` is the unchanged revision, `changed_files` is empty, no observer
    /// ran (no views rebuild, no index update, no git commit). Only organizer counters, if they
    /// moved, were written to `runtime.json`.
    pub noop: bool,
}

impl Installed {
    /// The first observer report of type `T` (how a caller reads back what its own observer
    /// did, such as the git commit it made).
    pub fn report<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.observed.iter().find_map(|(_, o)| o.report.as_ref()?.downcast_ref::<T>())
    }
}

fn install(validated: Validated) -> Result<Installed> {
    let Validated { mut stage, begin, opts, mut prepared, baseline } = validated;
    let ws = stage.ws.clone();
    let fs = ws.fs();
    let layout = ws.layout();
    let ids = ws.inner.ids.as_ref();
    let lock = ws.lock(opts.lock_timeout)?;
    recover(fs, layout, ids)?;
    let mut current = ws.current()?;
    let stale = |current: &Current| Error::ConcurrentUpdate {
        base_revision: opts.base_revision.clone().unwrap_or(begin.revision.clone()),
        revision: current.revision.clone(),
    };
    if current.revision != begin.revision {
        return Err(stale(&current));
    }
    // Under the lock: a batch that another writer of the same session installed since this
    // one read what is owed is not installed twice.
    if let Some(batch) = &opts.batch
        && let Some(done) = current.record.batches.iter().find(|stamp| stamp.batch == *batch)
    {
        return Err(Error::BatchInstalled { txn_id: done.txn_id.clone() });
    }
    // Archive files another program changed since the last install or append: the record
    // takes in their bytes and observers hear of them, like outside edits of `topics/`.
    let sources_outside = sources_changed_outside(&current);
    let nothing = prepared.changed_files.is_empty()
        && prepared.adopted.is_empty()
        && sources_outside.is_empty()
        && begin.pending.is_empty();
    if nothing {
        if let Some((text, state)) = prepared.runtime.take() {
            write_atomic(fs, layout, ids, &layout.runtime_json, text.as_bytes())?;
            ws.keep_runtime(RuntimeCache { bytes: Some(Arc::from(text.into_bytes())), state });
        }
        drop(lock);
        return Ok(Installed {
            txn_id: stage.txn_id.clone(),
            revision: current.revision,
            base_revision: begin.revision.clone(),
            changed_files: Vec::new(),
            adopted: Vec::new(),
            block_ids: std::mem::take(&mut prepared.block_ids),
            evidence_ids: std::mem::take(&mut prepared.evidence_ids),
            covered: std::mem::take(&mut prepared.covered),
            message: opts.message,
            observer_failures: Vec::new(),
            observed: Vec::new(),
            noop: true,
        });
    }
    let counter = next_counter(&current.record, layout)?;
    // Something is installed: the stage must hold the whole tree (a transaction that wrote
    // nothing, adopting outside edits or archiving sources, never filled it). Under the lock,
    // with the revision `begin` read, the live tree is the one `begin` scanned.
    if !stage.materialized {
        crate::stage::fill_stage(&ws, &mut stage, &begin.live)?;
    }
    let mut changed_files = std::mem::take(&mut prepared.changed_files);
    if !begin.pending.is_empty() {
        // Validation checked the topics against exactly this append: the revision (which
        // covers the `sources/` digest) is unchanged, so planning again must agree.
        let plan = ws.plan_archive(&opts.pending_sources)?;
        let same = plan.writes.len() == begin.pending.len()
            && plan
                .writes
                .iter()
                .zip(&begin.pending)
                .all(|(a, b)| a.rel_path == b.rel_path && a.new_text == b.new_text);
        if !same {
            return Err(stale(&current));
        }
        // Archive first: a crash between this append and the swap leaves the frames
        // archived and the topics at the old revision (a retry archives nothing new).
        ws.append_planned(&plan.writes, &current)?;
        current = ws.current()?;
        // The appended archives changed with this transaction: report them with its files.
        changed_files.extend(plan.writes.iter().map(|w| w.rel_path.clone()));
        changed_files.sort();
    }

    // What is installed is final now: the observers may start on it beside the durable steps
    // (they are told below whether it happened).
    let mut adopted = prepared.adopted.clone();
    adopted.sort();
    let adopted_paths: Vec<String> = adopted
        .iter()
        .map(|rel| format!("topics/{rel}"))
        .chain(sources_outside.iter().cloned())
        .collect();
    let changes: Vec<ChangedFile> = change_list(&baseline, &prepared, &adopted);
    // The files before the change were read from the live tree on demand: one that could not
    // be read as `begin` saw it makes this transaction stale.
    if !baseline.take_load_errors().is_empty() {
        return Err(stale(&current));
    }
    let stage_topics = stage.topics.clone();
    let announced = Announced::new(
        &ws.inner.observers,
        &InstallingEvent {
            root: &layout.root,
            base_revision: &begin.revision,
            changed_files: &changed_files,
            adopted: &adopted_paths,
            changes: &changes,
            staged_topics: &stage_topics,
        },
    );

    // The staged tree must be durable before it becomes live. A stage recycled from the
    // previous install's old tree keeps the inodes of files that did not change, which were
    // made durable when they were installed: only what this transaction wrote is synced.
    make_durable(fs, &stage)?;

    // The new manifest: the live hashes, with the changed files' new ones.
    let mut hashes: HashMap<String, String> =
        begin.live.files.iter().map(|(rel, f)| (rel.clone(), f.hash.clone())).collect();
    for rel in &prepared.removed {
        hashes.remove(rel);
    }
    for state in &prepared.changed {
        hashes.insert(state.path().to_owned(), state.hash.clone());
    }
    let manifest = manifest_of(fs, &stage_topics, &hashes)?;
    let mut unlisted: Vec<(String, String)> =
        begin.live.foreign.iter().map(crate::live::Foreign::digest_item).collect();
    unlisted.sort_unstable();
    let mut items: Vec<(String, String)> =
        manifest.iter().map(|m| (m.path.clone(), m.sha256.clone())).collect();
    items.extend(unlisted.iter().cloned());
    items.sort_unstable();
    let topics = topics_digest(items.iter().map(|(a, b)| (a.as_str(), b.as_str())));
    let runtime = match &prepared.runtime {
        Some((text, _)) => sha256_hex(text.as_bytes()),
        None => current.record.runtime.clone(),
    };
    let mut batches = current.record.batches.clone();
    if let Some(batch) = opts.batch.clone() {
        batches.push(InstalledBatch { batch, txn_id: stage.txn_id.as_str().to_owned() });
        let excess = batches.len().saturating_sub(BATCH_STAMPS);
        batches.drain(..excess);
    }
    let record = RevisionRecord {
        version: 1,
        counter,
        txn_id: stage.txn_id.as_str().to_owned(),
        topics: topics.clone(),
        sources: current.source_scan.content.clone(),
        runtime,
        files: manifest,
        source_files: current.source_scan.files.clone(),
        workspace_id: Some(ws.workspace_id().as_str().to_owned()),
        batches,
        unlisted: Some(unlisted),
    };
    let new_revision = record.revision();
    let old_ino = stat(fs, &layout.topics)?.ino;
    let new_ino = stat(fs, &stage_topics)?.ino;
    let mode = if ws.inner.no_exchange.load(Ordering::Relaxed) {
        SwapMode::Rename
    } else {
        SwapMode::Exchange
    };
    let stage_rel = stage.dir.strip_prefix(&layout.root).map_or_else(
        |_| stage.dir.to_string_lossy().into_owned(),
        |p| p.to_string_lossy().into_owned(),
    );
    let intent = Intent {
        version: 1,
        kind: "install".to_owned(),
        txn_id: stage.txn_id.as_str().to_owned(),
        stage: stage_rel,
        mode,
        old_ino,
        new_ino,
        old_revision: current.revision.as_str().to_owned(),
        new_revision: new_revision.as_str().to_owned(),
        record,
        runtime: prepared.runtime.as_ref().map(|(text, _)| text.clone()),
        old_sources: String::new(),
    };
    let intent_bytes =
        serde_json::to_vec(&intent).map_err(|e| Error::corrupt(&layout.intent, e.to_string()))?;
    crate::state::write_intent(fs, layout, &intent_bytes)?;

    if let Err(error) = swap_and_finish(&ws, &stage.dir, &stage_topics, mode, &intent) {
        // Let recovery decide from the disk: forward if the swap happened, back otherwise.
        let recovered = recover_intent(fs, layout, ids);
        let live_is_new = fs.metadata(&layout.topics).is_ok_and(|m| m.ino == new_ino);
        match (recovered, live_is_new) {
            (Ok(()), true) => {}
            (Err(_), true) => {
                return Err(Error::Unfinished {
                    txn_id: stage.txn_id.clone(),
                    revision: new_revision,
                    source: Box::new(error),
                });
            }
            (_, false) => return Err(error),
        }
    }
    stage.armed = false;
    // The old tree is the spare now: its manifest lets the next `begin` recycle it by stat.
    write_spare_manifest(&ws, &begin.live);

    // The installed tree: the baseline with the changed files replaced.
    let tree = updated_baseline(&ws, baseline, &prepared);
    // The catalog follows the installed tree (derived state: a crash before or during this
    // write leaves entries that `begin` checks by hash, so it can only cost parses).
    crate::begin::write_catalog(fs, layout, &tree);
    let mut installed = Installed {
        txn_id: stage.txn_id.clone(),
        revision: new_revision,
        base_revision: begin.revision.clone(),
        changed_files,
        adopted: adopted_paths,
        block_ids: std::mem::take(&mut prepared.block_ids),
        evidence_ids: std::mem::take(&mut prepared.evidence_ids),
        covered: std::mem::take(&mut prepared.covered),
        message: opts.message.clone(),
        observer_failures: Vec::new(),
        observed: Vec::new(),
        noop: false,
    };
    // The parse of the `runtime.json` just written is this handle's from now on.
    let runtime = match prepared.runtime.take() {
        Some((text, state)) => {
            let runtime = RuntimeCache { bytes: Some(Arc::from(text.into_bytes())), state };
            ws.keep_runtime(runtime.clone());
            runtime
        }
        None => begin.runtime.clone(),
    };
    let creation_order = &runtime.state.creation_order;
    announced.disarm();
    let mut observed = Vec::new();
    for observer in &ws.inner.observers {
        let event = InstallEvent {
            root: &layout.root,
            installed: &installed,
            changes: &changes,
            tree: &tree,
            creation_order,
        };
        observed.push((observer.name().to_owned(), observer.installed(&event)));
    }
    drop(lock);
    installed.observer_failures = observed
        .iter()
        .filter_map(|(name, o)| {
            o.failure
                .as_ref()
                .map(|message| ObserverFailure { observer: name.clone(), message: message.clone() })
        })
        .collect();
    installed.observed = observed;
    ws.cache_baseline(CachedBaseline {
        revision: installed.revision.clone(),
        topics,
        sources: current.source_scan.content,
        baseline: tree,
    });
    Ok(installed)
}

/// The observers told that an install is coming ([`InstallObserver::installing`]): dropped
/// before [`disarm`](Self::disarm) (the install failed on the way), it tells them it was
/// abandoned.
struct Announced<'a> {
    observers: &'a [Arc<dyn InstallObserver>],
    armed: bool,
}

impl<'a> Announced<'a> {
    fn new(observers: &'a [Arc<dyn InstallObserver>], event: &InstallingEvent<'_>) -> Self {
        for observer in observers {
            observer.installing(event);
        }
        Announced { observers, armed: true }
    }

    /// The install happened: the observers hear it from `installed`.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Announced<'_> {
    fn drop(&mut self) {
        if self.armed {
            for observer in self.observers {
                observer.abandoned();
            }
        }
    }
}

/// The `sources/…` paths whose bytes differ from the record's manifest (new, changed or gone),
/// sorted; none when the archive is as recorded.
fn sources_changed_outside(current: &Current) -> Vec<String> {
    let scan = &current.source_scan;
    if scan.digest == current.record.sources {
        return Vec::new();
    }
    let recorded: HashMap<&str, &str> =
        current.record.source_files.iter().map(|e| (e.path.as_str(), e.sha256.as_str())).collect();
    let live: HashMap<&str, &str> =
        scan.files.iter().map(|e| (e.path.as_str(), e.sha256.as_str())).collect();
    let mut paths: Vec<String> = live
        .iter()
        .filter(|(path, hash)| recorded.get(*path) != Some(*hash))
        .chain(recorded.iter().filter(|(path, _)| !live.contains_key(*path)))
        .map(|(path, _)| format!("sources/{path}"))
        .collect();
    paths.sort();
    paths
}

/// The files the install changed, in tree order, with their states before and after.
fn change_list(baseline: &Baseline, prepared: &Prepared, adopted: &[String]) -> Vec<ChangedFile> {
    let mut changes: BTreeMap<crate::validate::TreePath, ChangedFile> = BTreeMap::new();
    for state in &prepared.changed {
        let path = state.path().to_owned();
        changes.insert(
            crate::validate::TreePath(path.clone()),
            ChangedFile {
                before: baseline.file(&path).cloned(),
                after: Some(Arc::clone(state)),
                outside: adopted.contains(&path),
                path,
            },
        );
    }
    for path in &prepared.removed {
        changes.insert(
            crate::validate::TreePath(path.clone()),
            ChangedFile {
                before: baseline.file(path).cloned(),
                after: None,
                outside: adopted.contains(path),
                path: path.clone(),
            },
        );
    }
    for path in adopted {
        changes.entry(crate::validate::TreePath(path.clone())).or_insert_with(|| ChangedFile {
            before: baseline.file(path).cloned(),
            after: baseline.file(path).cloned(),
            outside: true,
            path: path.clone(),
        });
    }
    changes.into_values().collect()
}

/// `baseline` with the install's files replaced: updated in place when nobody else holds it
/// (the workspace handle's cache let go of it at `begin` or holds this very baseline), else
/// copied first.
fn updated_baseline(ws: &Workspace, baseline: Arc<Baseline>, prepared: &Prepared) -> Arc<Baseline> {
    let cached = ws.take_cached_baseline();
    drop(cached);
    let mut baseline = baseline;
    Arc::make_mut(&mut baseline).replace(prepared.changed.clone(), &prepared.removed);
    baseline
}

/// Makes everything the transaction wrote into the stage durable: one `syncfs` for a stage
/// written from scratch or handed out (anything in it may be new), else an `fsync` of each
/// file written and of each directory whose entries changed.
fn make_durable(fs: &dyn Fs, stage: &Stage) -> Result<()> {
    let topics = &stage.topics;
    if stage.fresh {
        return fs.sync_fs(topics).map_err(Error::io("syncfs", topics));
    }
    for rel in &stage.written {
        let path = topics.join(rel);
        match fs.sync_file(&path) {
            Ok(()) => {}
            // Written, then removed or renamed again by the same transaction.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("fsync", &path)(e)),
        }
    }
    for rel in &stage.dirs_changed {
        let path = if rel.is_empty() { topics.clone() } else { topics.join(rel) };
        match fs.sync_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("fsync dir", &path)(e)),
        }
    }
    Ok(())
}

/// The counter of the next revision record; `CORRUPT_STATE` rather than wrapping around.
pub(crate) fn next_counter(record: &RevisionRecord, layout: &Layout) -> Result<u64> {
    record.counter.checked_add(1).ok_or_else(|| {
        Error::corrupt(&layout.revision, "the revision counter is exhausted (u64::MAX)")
    })
}

fn stat(fs: &dyn Fs, path: &Path) -> Result<Meta> {
    fs.metadata(path).map_err(Error::io("stat", path))
}

fn swap_and_finish(
    ws: &Workspace,
    stage_dir: &Path,
    stage_topics: &Path,
    mode: SwapMode,
    intent: &Intent,
) -> Result<()> {
    let fs = ws.fs();
    let layout = ws.layout();
    let two_renames = |fs: &dyn Fs| -> Result<()> {
        let old = stage_dir.join("old-topics");
        fs.rename(&layout.topics, &old).map_err(Error::io("rename", &layout.topics))?;
        fs.rename(stage_topics, &layout.topics).map_err(Error::io("rename", stage_topics))
    };
    match mode {
        SwapMode::Exchange => match fs.exchange(stage_topics, &layout.topics) {
            Ok(()) => {}
            Err(e) if exchange_unsupported(&e) => {
                ws.inner.no_exchange.store(true, Ordering::Relaxed);
                two_renames(fs)?;
            }
            Err(e) => return Err(Error::io("exchange", stage_topics)(e)),
        },
        SwapMode::Rename => two_renames(fs)?,
    }
    // The linearization point has passed: make the swap durable, then finish.
    // (The stage directory, which now holds the old tree, needs no fsync: wherever a power
    // loss leaves that tree, recovery only deletes it.)
    fs.sync_dir(&layout.root).map_err(Error::io("fsync dir", &layout.root))?;
    finish_install(fs, layout, ws.inner.ids.as_ref(), intent, stage_dir)
}
