//! Recovery: what opening a workspace, every install and every archive append do first, under
//! the write lock, to turn whatever a crash left into exactly the old or the new revision (the
//! table is in the crate docs, *Recovery*).

use std::io::ErrorKind;
use std::path::Path;

use crate::error::{Error, Result};
use crate::fs::{FileKind, Fs};
use crate::ids::IdSource;
use crate::state::{
    Intent, Layout, RevisionRecord, parse_record, read_record_bytes, scan_sources, write_atomic,
};

/// Recovery (see the crate docs' recovery table). The caller holds the write lock.
pub(crate) fn recover(fs: &dyn Fs, layout: &Layout, ids: &dyn IdSource) -> Result<()> {
    // 1. Temporaries of interrupted atomic writes.
    for (name, kind) in
        fs.read_dir(&layout.runtime).map_err(Error::io("read_dir", &layout.runtime))?
    {
        let name = name.to_string_lossy();
        if kind == FileKind::File && name.starts_with("tmp-") {
            let path = layout.runtime.join(name.as_ref());
            fs.remove_file(&path).map_err(Error::io("unlink", &path))?;
        }
    }
    // 2. A half-done install or archive append.
    recover_intent(fs, layout, ids)?;
    // 3. Stages whose owner is gone. The spare tree and its manifest are caches that `begin`
    // checks file by file before it keeps anything, so they stay: removing them here (every
    // install and archive append runs recovery first) made the next install write its
    // manifest as a new file, and the next transaction after an archive append copy the
    // whole tree again.
    for (name, kind) in fs.read_dir(&layout.txn).map_err(Error::io("read_dir", &layout.txn))? {
        let path = layout.txn.join(&name);
        if crate::stage::is_spare(&name) {
            continue;
        }
        if kind == FileKind::Dir && crate::lock::OwnerLock::is_held(&path) {
            continue;
        }
        let result =
            if kind == FileKind::Dir { fs.remove_tree(&path) } else { fs.remove_file(&path) };
        match result {
            Ok(()) => {}
            // Its owner was removing it at the same moment (a dropped stage removes its
            // directory before releasing its owner lock).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e)
                if fs.metadata(&path).is_err_and(|m| m.kind() == std::io::ErrorKind::NotFound) =>
            {
                drop(e);
            }
            Err(e) => return Err(Error::io("remove stale stage", &path)(e)),
        }
    }
    Ok(())
}

/// Roll-forward bookkeeping after the swap: `runtime.json`, the revision record, removal of
/// the stage (holding the old tree) and of the intent record. Idempotent.
pub(crate) fn finish_install(
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
    retire_stage_dir(fs, layout, stage_dir)?;
    remove_intent(fs, layout)
}

/// Removes a finished install's stage directory, or, when nothing is left in it (the old tree
/// went to the spare), keeps it as `.scriptorium/txn/spare-stage` for the next `begin` to
/// rename into its stage: no directory is made and deleted per transaction.
fn retire_stage_dir(fs: &dyn Fs, layout: &Layout, stage_dir: &Path) -> Result<()> {
    let empty = fs.read_dir(stage_dir).is_ok_and(|entries| entries.is_empty());
    if empty && fs.rename(stage_dir, &layout.spare_stage).is_ok() {
        return Ok(());
    }
    remove_tree_if_exists(fs, stage_dir)
}

/// Moves the old tree (`<stage>/topics` after an exchange, `<stage>/old-topics` after the
/// two-rename fallback) to `.scriptorium/txn/spare`, where the next `begin` recycles it.
/// Best effort, and no fsync: the spare is a cache that `begin` checks by stat against its
/// manifest or byte for byte (recovery keeps it). When a spare exists already, the old tree
/// is removed with the stage.
fn recycle_old_tree(fs: &dyn Fs, layout: &Layout, stage_dir: &Path) {
    // The spare's manifest describes the spare it was written for; a new spare starts without
    // one (the install that made it writes the next). Emptied in place, not removed: the next
    // one is written into the same file (no new inode per install; see `write_spare_manifest`).
    let manifest = layout.txn.join(crate::stage::SPARE_MANIFEST);
    match fs.metadata(&manifest) {
        Ok(meta) if meta.kind == FileKind::File => {
            if fs.write(&manifest, b"", 0o600).is_err() {
                return;
            }
        }
        Ok(_) => return,
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(_) => return,
    }
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

/// Removes the intent record by renaming it to `intent.next`, where the next intent is written
/// (see `write_intent`: no new inode per install), without an fsync of `.scriptorium/`: every
/// step it describes is durable by then, and recovering it again is idempotent (an install
/// whose record is live only loses its intent, one rolled back or an append is decided again
/// the same way). The next intent's own write syncs the directory, removal included, before
/// anything else happens.
fn remove_intent(fs: &dyn Fs, layout: &Layout) -> Result<()> {
    match fs.rename(&layout.intent, &layout.intent_next) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("rename", &layout.intent)(e)),
    }
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
    // The install finished (its revision record is the live one, written last): a power loss
    // brought back only its intent, whose removal is not synced. Nothing to decide by inode.
    // A record that cannot be read or parsed decides nothing here: the inode does, and rolling
    // forward writes the record again from the intent.
    let finished = read_record_bytes(fs, layout)
        .ok()
        .flatten()
        .and_then(|bytes| parse_record(layout, &bytes).ok())
        .is_some_and(|record| record.txn_id == intent.txn_id);
    if finished {
        remove_tree_if_exists(fs, &stage_dir)?;
        return remove_intent(fs, layout);
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
    let trust = crate::live::StatTrust::record_only(fs, &layout.revision);
    let now = scan_sources(fs, &layout.sources, &intent.record.source_files, None, trust)?;
    if now.content != intent.old_sources {
        let record = RevisionRecord {
            sources: now.content,
            source_files: now.files,
            ..intent.record.clone()
        };
        write_atomic(fs, layout, ids, &layout.revision, &record.to_bytes())?;
    }
    remove_intent(fs, layout)
}
