//! The atomic install and the recovery of a half-done install or archive append (the steps
//! and the recovery table are in the crate docs).

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use scriptorium_topics_format::TreeParse;
use scriptorium_topics_format::source::{ArchiveRecord, PlannedWrite};

use crate::error::{Error, Result};
use crate::fs::{FileKind, Fs, Meta, exchange_unsupported};
use crate::ids::{IdSource, Revision};
use crate::lock::LockTimeout;
use crate::pipeline::{
    CachedBaseline, InstallEvent, InstallStage, Installed, ObserverFailure, Prepared,
};
use crate::state::{
    BATCH_STAMPS, Batch, InstalledBatch, Intent, Layout, RevisionRecord, SwapMode, sha256_hex,
    sources_fingerprint, topics_digest, write_atomic,
};
use crate::validate::Baseline;
use crate::workspace::{manifest_of, recover};

/// Everything the install needs from the validated transaction.
pub(crate) struct Job {
    pub(crate) stage: InstallStage,
    pub(crate) begin_revision: Revision,
    pub(crate) base_revision: Option<Revision>,
    pub(crate) lock_timeout: LockTimeout,
    pub(crate) message: String,
    pub(crate) prepared: Prepared,
    /// The `sources/` fingerprint read at `begin` (the compare-and-set guarantees it is still
    /// the live one).
    pub(crate) sources: String,
    /// Sources to archive right before the swap, and the append `begin` planned for them.
    pub(crate) pending_sources: Vec<ArchiveRecord>,
    pub(crate) pending: Vec<PlannedWrite>,
    /// The batch of session records the transaction writes, recorded with the topics.
    pub(crate) batch: Option<Batch>,
    /// How the entries with non-UTF-8 names (carried over unchanged) count in the digest.
    pub(crate) foreign: Vec<(String, String)>,
}

pub(crate) fn install(mut job: Job) -> Result<Installed> {
    let ws = job.stage.ws.clone();
    let fs = ws.fs();
    let layout = ws.layout();
    let ids = ws.inner.ids.as_ref();
    let lock = ws.lock(job.lock_timeout)?;
    recover(fs, layout, ids)?;
    let mut current = ws.current()?;
    if current.revision != job.begin_revision {
        return Err(Error::ConcurrentUpdate {
            base_revision: job.base_revision.clone().unwrap_or(job.begin_revision.clone()),
            revision: current.revision,
        });
    }
    if job.prepared.changed_files.is_empty() && job.pending.is_empty() {
        return install_nothing(job, &ws, current, lock);
    }
    let counter = next_counter(&current.record, layout)?;
    if !job.pending.is_empty() {
        // Validation checked the topics against exactly this append: the revision (which
        // covers the `sources/` fingerprint) is unchanged, so planning again must agree.
        let plan = ws.plan_archive(&job.pending_sources)?;
        let same = plan.writes.len() == job.pending.len()
            && plan
                .writes
                .iter()
                .zip(&job.pending)
                .all(|(a, b)| a.rel_path == b.rel_path && a.new_text == b.new_text);
        if !same {
            return Err(Error::ConcurrentUpdate {
                base_revision: job.base_revision.clone().unwrap_or(job.begin_revision.clone()),
                revision: current.revision,
            });
        }
        // Archive first: a crash between this append and the swap leaves the frames
        // archived and the topics at the old revision (a retry archives nothing new).
        ws.append_planned(&plan.writes, &current)?;
        current = ws.current()?;
        job.sources.clone_from(&current.sources);
        // The appended archives changed with this transaction: report them with its files.
        job.prepared.changed_files.extend(plan.writes.iter().map(|w| w.rel_path.clone()));
        job.prepared.changed_files.sort();
    }

    // The staged tree must be durable before it becomes live: one `syncfs` covers every
    // staged file and directory. Only what this transaction wrote is dirty: a stage recycled
    // from the previous install's old tree (see `begin`) keeps the inodes of files that did
    // not change, which were made durable when they were installed.
    let stage_topics = job.stage.topics.clone();
    fs.sync_fs(&stage_topics).map_err(Error::io("syncfs", &stage_topics))?;

    let manifest = manifest_of(fs, &stage_topics, &job.prepared.hashes)?;
    let mut items: Vec<(&str, &str)> =
        manifest.iter().map(|m| (m.path.as_str(), m.sha256.as_str())).collect();
    items.extend(job.foreign.iter().map(|(rel, hash)| (rel.as_str(), hash.as_str())));
    items.sort_unstable();
    let topics = topics_digest(items.into_iter());
    let installed_topics = topics.clone();
    let runtime = match &job.prepared.runtime {
        Some(text) => sha256_hex(text.as_bytes()),
        None => current.record.runtime.clone(),
    };
    let mut batches = current.record.batches.clone();
    if let Some(batch) = job.batch.take() {
        batches.push(InstalledBatch { batch, txn_id: job.stage.txn_id.as_str().to_owned() });
        let excess = batches.len().saturating_sub(BATCH_STAMPS);
        batches.drain(..excess);
    }
    let record = RevisionRecord {
        version: 1,
        counter,
        txn_id: job.stage.txn_id.as_str().to_owned(),
        topics,
        sources: current.sources.clone(),
        runtime,
        files: manifest,
        workspace_id: Some(ws.workspace_id().as_str().to_owned()),
        batches,
    };
    let new_revision = record.revision();
    let old_ino = stat(fs, &layout.topics)?.ino;
    let new_ino = stat(fs, &stage_topics)?.ino;
    let mode = if ws.inner.no_exchange.load(Ordering::Relaxed) {
        SwapMode::Rename
    } else {
        SwapMode::Exchange
    };
    let stage_rel = job.stage.dir.strip_prefix(&layout.root).map_or_else(
        |_| job.stage.dir.to_string_lossy().into_owned(),
        |p| p.to_string_lossy().into_owned(),
    );
    let intent = Intent {
        version: 1,
        kind: "install".to_owned(),
        txn_id: job.stage.txn_id.as_str().to_owned(),
        stage: stage_rel,
        mode,
        old_ino,
        new_ino,
        old_revision: current.revision.as_str().to_owned(),
        new_revision: new_revision.as_str().to_owned(),
        record,
        runtime: job.prepared.runtime.clone(),
        old_sources: String::new(),
    };
    let intent_bytes =
        serde_json::to_vec(&intent).map_err(|e| Error::corrupt(&layout.intent, e.to_string()))?;
    write_atomic(fs, layout, ids, &layout.intent, &intent_bytes)?;

    if let Err(error) = swap_and_finish(&ws, &job.stage.dir, &stage_topics, mode, &intent) {
        // Let recovery decide from the disk: forward if the swap happened, back otherwise.
        let recovered = recover_intent(fs, layout, ids);
        let live_is_new = fs.metadata(&layout.topics).is_ok_and(|m| m.ino == new_ino);
        match (recovered, live_is_new) {
            (Ok(()), true) => {}
            (Err(_), true) => {
                return Err(Error::Unfinished {
                    txn_id: job.stage.txn_id.clone(),
                    revision: new_revision,
                    source: Box::new(error),
                });
            }
            (_, false) => return Err(error),
        }
    }
    job.stage.disarm();

    let installed = Installed {
        txn_id: job.stage.txn_id.clone(),
        revision: new_revision,
        base_revision: job.begin_revision.clone(),
        changed_files: std::mem::take(&mut job.prepared.changed_files),
        block_ids: std::mem::take(&mut job.prepared.block_ids),
        evidence_ids: std::mem::take(&mut job.prepared.evidence_ids),
        covered: std::mem::take(&mut job.prepared.covered),
        message: job.message.clone(),
        observer_failures: Vec::new(),
        noop: false,
    };
    let mut failures = Vec::new();
    for observer in &ws.inner.observers {
        let event = InstallEvent {
            root: &layout.root,
            installed: &installed,
            files: &job.prepared.files,
            units: &job.prepared.units,
        };
        if let Err(e) = observer.installed(&event) {
            failures.push(ObserverFailure {
                observer: observer.name().to_owned(),
                message: e.to_string(),
            });
        }
    }
    drop(lock);
    // The next `begin` of this handle takes the installed tree as its baseline without parsing
    // it again: `prepared.units` are the strict parse of exactly `prepared.files`, which passed
    // validation (no diagnostics).
    let parsed =
        TreeParse { units: std::mem::take(&mut job.prepared.units), diagnostics: Vec::new() };
    ws.cache_baseline(CachedBaseline {
        revision: installed.revision.clone(),
        topics: installed_topics,
        sources: job.sources.clone(),
        baseline: Arc::new(Baseline::from_parse(&job.prepared.files, parsed)),
    });
    Ok(Installed { observer_failures: failures, ..installed })
}

/// A transaction that changes no byte of `topics/` and archives nothing installs nothing: no
/// revision move, no observer (so no views rebuild and no git commit). Under the lock, after
/// the compare-and-set, it only writes `runtime.json` when its counters moved (bookkeeping,
/// atomic on its own, not part of the revision). The stage is removed when `job` drops.
fn install_nothing(
    job: Job,
    ws: &crate::Workspace,
    current: crate::workspace::Current,
    lock: crate::lock::WriteLock,
) -> Result<Installed> {
    let layout = ws.layout();
    if let Some(text) = &job.prepared.runtime {
        write_atomic(
            ws.fs(),
            layout,
            ws.inner.ids.as_ref(),
            &layout.runtime_json,
            text.as_bytes(),
        )?;
    }
    drop(lock);
    let Job { stage, begin_revision, message, mut prepared, .. } = job;
    Ok(Installed {
        txn_id: stage.txn_id.clone(),
        revision: current.revision,
        base_revision: begin_revision,
        changed_files: Vec::new(),
        block_ids: std::mem::take(&mut prepared.block_ids),
        evidence_ids: std::mem::take(&mut prepared.evidence_ids),
        covered: std::mem::take(&mut prepared.covered),
        message,
        observer_failures: Vec::new(),
        noop: true,
    })
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
    ws: &crate::Workspace,
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

/// Roll-forward bookkeeping after the swap: `runtime.json`, the revision record, removal of
/// the stage (holding the old tree) and of the intent record. Idempotent.
fn finish_install(
    fs: &dyn Fs,
    layout: &Layout,
    ids: &dyn IdSource,
    intent: &Intent,
    stage_dir: &Path,
) -> Result<()> {
    if let Some(runtime) = &intent.runtime {
        write_atomic(fs, layout, ids, &layout.runtime_json, runtime.as_bytes())?;
    }
    write_atomic(fs, layout, ids, &layout.revision, &intent.record.to_bytes())?;
    recycle_old_tree(fs, layout, stage_dir);
    remove_tree_if_exists(fs, stage_dir)?;
    remove_intent(fs, layout)
}

/// Moves the old tree (`<stage>/topics` after an exchange, `<stage>/old-topics` after the
/// two-rename fallback) to `.scriptorium/txn/spare`, where the next `begin` recycles it.
/// Best effort, and no fsync: the spare is a cache that `begin` checks byte for byte, and
/// recovery removes it like any stage nobody owns. When a spare exists already, the old tree
/// is removed with the stage.
fn recycle_old_tree(fs: &dyn Fs, layout: &Layout, stage_dir: &Path) {
    for name in ["topics", "old-topics"] {
        let old = stage_dir.join(name);
        if fs.metadata(&old).is_ok_and(|m| m.kind == FileKind::Dir) {
            // Ignored on failure (e.g. a spare exists already): the stage removal deletes it.
            let _ = fs.rename(&old, &layout.spare);
            return;
        }
    }
}

fn remove_tree_if_exists(fs: &dyn Fs, path: &Path) -> Result<()> {
    match fs.remove_tree(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove", path)(e)),
    }
}

fn remove_intent(fs: &dyn Fs, layout: &Layout) -> Result<()> {
    match fs.remove_file(&layout.intent) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("unlink", &layout.intent)(e)),
    }
    fs.sync_dir(&layout.runtime).map_err(Error::io("fsync dir", &layout.runtime))
}

/// Finishes or undoes whatever the intent record describes. The caller holds the write lock.
pub(crate) fn recover_intent(fs: &dyn Fs, layout: &Layout, ids: &dyn IdSource) -> Result<()> {
    let bytes = match fs.read(&layout.intent) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("read", &layout.intent)(e)),
    };
    let intent: Intent = serde_json::from_slice(&bytes)
        .map_err(|e| Error::corrupt(&layout.intent, format!("unreadable intent record: {e}")))?;
    match intent.kind.as_str() {
        "install" => recover_install(fs, layout, ids, &intent),
        "archive" => recover_archive(fs, layout, ids, &intent),
        other => Err(Error::corrupt(&layout.intent, format!("unknown intent kind {other:?}"))),
    }
}

fn recover_install(
    fs: &dyn Fs,
    layout: &Layout,
    ids: &dyn IdSource,
    intent: &Intent,
) -> Result<()> {
    let stage_dir = layout.root.join(&intent.stage);
    if !stage_dir.starts_with(&layout.txn) || intent.stage.contains("..") {
        return Err(Error::corrupt(
            &layout.intent,
            "intent names a stage outside .scriptorium/txn",
        ));
    }
    let live = match fs.metadata(&layout.topics) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io("stat", &layout.topics)(e)),
    };
    match live {
        Some(meta) if meta.kind == FileKind::Dir && meta.ino == intent.new_ino => {
            // Swapped: roll forward.
            fs.sync_dir(&layout.root).map_err(Error::io("fsync dir", &layout.root))?;
            if fs.metadata(&stage_dir).is_ok() {
                fs.sync_dir(&stage_dir).map_err(Error::io("fsync dir", &stage_dir))?;
            }
            finish_install(fs, layout, ids, intent, &stage_dir)
        }
        Some(meta) if meta.kind == FileKind::Dir && meta.ino == intent.old_ino => {
            // Not swapped: roll back.
            remove_tree_if_exists(fs, &stage_dir)?;
            remove_intent(fs, layout)
        }
        None => {
            // Two-rename fallback, between its renames: put the old tree back.
            let old = stage_dir.join("old-topics");
            match fs.metadata(&old) {
                Ok(meta) if meta.kind == FileKind::Dir && meta.ino == intent.old_ino => {
                    fs.rename(&old, &layout.topics).map_err(Error::io("rename", &old))?;
                    fs.sync_dir(&layout.root).map_err(Error::io("fsync dir", &layout.root))?;
                    remove_tree_if_exists(fs, &stage_dir)?;
                    remove_intent(fs, layout)
                }
                _ => Err(Error::corrupt(
                    &layout.topics,
                    format!(
                        "topics/ is missing and transaction {} left no old tree",
                        intent.txn_id
                    ),
                )),
            }
        }
        Some(_) => Err(Error::corrupt(
            &layout.topics,
            format!("topics/ is neither the old nor the new tree of transaction {}", intent.txn_id),
        )),
    }
}

fn recover_archive(
    fs: &dyn Fs,
    layout: &Layout,
    ids: &dyn IdSource,
    intent: &Intent,
) -> Result<()> {
    let now = sources_fingerprint(fs, &layout.sources)?;
    if now != intent.old_sources {
        let record = RevisionRecord { sources: now, ..intent.record.clone() };
        write_atomic(fs, layout, ids, &layout.revision, &record.to_bytes())?;
    }
    remove_intent(fs, layout)
}
