//! Source archiving: append-only, idempotent, under the write lock (see
//! `docs/format.md#appending`).

use crate::error::{Error, Result};
use crate::ids::{Revision, TxnId};
use crate::lock::LockTimeout;
use crate::observer::ArchiveEvent;
use crate::recover::{recover, recover_intent};
use crate::sources::LiveSources;
use crate::state::{Intent, RevisionRecord, SwapMode};
use crate::workspace::{Current, Workspace, ensure_dir};
use scriptorium_topics_format::catalog::FileLookup;
use scriptorium_topics_format::source::{
    AppendPlan, ArchiveRecord, ArchiveTree as _, PlannedWrite, plan_append,
};

/// A rewrite of one archive ([`Workspace::rewrite_archives`]): its workspace-relative path and
/// text → the new text, `None` to keep it, `Err` (why) to refuse the whole rewrite.
pub type ArchiveRewrite<'a> =
    dyn Fn(&str, &str) -> std::result::Result<Option<String>, String> + 'a;

/// The outcome of [`Workspace::archive_sources`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveOutcome {
    /// Every record's source ID (archived now or before), in archive order.
    pub source_ids: Vec<String>,
    /// The archive files written (workspace-relative), empty when everything was archived.
    pub changed_files: Vec<String>,
    /// The revision after the append (unchanged when nothing was written).
    pub revision: Revision,
    /// The revision under the lock before the append (equal to `revision` when nothing was
    /// written), so a caller holding a base revision can tell its own append from another
    /// writer's install.
    pub previous_revision: Revision,
}

impl Workspace {
    /// Appends `records` to the live `sources/` archive (see `docs/format.md#appending`). Run it
    /// before a writer's transaction begins: a transaction refuses `sources/` changes after its
    /// `begin` (`SOURCES_CHANGED`).
    ///
    /// Under the write lock: plans the append against the live tree (every record checked,
    /// every target path preflighted — inside `sources/`, no NFC + casefold collision, an
    /// existing archive must scan complete, no symlink on the way — before anything is
    /// written), then writes each planned file as a private temp file in `.scriptorium/`
    /// (write, fsync, chmod 0600) renamed over the target, and fsyncs its directory; parent
    /// directories are created 0700. Re-archiving writes nothing and keeps the revision.
    ///
    /// Atomicity: each file is replaced atomically (old or new bytes, never a torn append);
    /// an intent record makes the revision move exactly when some file changed, even across a
    /// crash. A multi-file batch interrupted by a crash may leave some files appended and
    /// others not; re-running the batch completes it (the append is idempotent).
    pub fn archive_sources(
        &self,
        records: &[ArchiveRecord],
        lock_timeout: LockTimeout,
    ) -> Result<ArchiveOutcome> {
        let _lock = self.lock(lock_timeout)?;
        recover(self.fs(), self.layout(), self.inner.ids.as_ref())?;
        let plan = self.plan_archive(records)?;
        let current = self.current()?;
        self.write_and_announce(plan.writes, current, plan.source_ids)
    }

    /// Plans the append of `records` against the live `sources/` (every record checked, every
    /// target path preflighted); writes nothing. An IO error while reading the archive is an
    /// error, never a "missing" file.
    pub(crate) fn plan_archive(&self, records: &[ArchiveRecord]) -> Result<AppendPlan> {
        let layout = self.layout();
        let tree = LiveSources::new(self.inner.fs.clone(), layout.root.clone());
        let plan = plan_append(records, &tree);
        if let Some(error) = tree.take_errors().into_iter().next() {
            return Err(Error::Io {
                op: "read sources",
                path: layout.sources.clone(),
                source: std::io::Error::other(error),
            });
        }
        Ok(plan?)
    }

    /// Writes planned archive files under an `archive` intent record, so the revision moves
    /// exactly when some file changed, even across a crash. `current` is the state read under
    /// the write lock, which the caller holds.
    pub(crate) fn append_planned(&self, writes: &[PlannedWrite], current: &Current) -> Result<()> {
        let fs = self.fs();
        let layout = self.layout();
        let ids = self.inner.ids.as_ref();
        let op = TxnId::generate(self.inner.clock.as_ref(), ids);
        let intent = Intent {
            version: 1,
            kind: "archive".to_owned(),
            txn_id: op.as_str().to_owned(),
            stage: String::new(),
            mode: SwapMode::Exchange,
            old_ino: 0,
            new_ino: 0,
            old_revision: current.revision.as_str().to_owned(),
            new_revision: String::new(),
            record: RevisionRecord {
                counter: crate::install::next_counter(&current.record, layout)?,
                txn_id: op.as_str().to_owned(),
                sources: String::new(),
                ..(*current.record).clone()
            },
            runtime: None,
            old_sources: current.source_scan.content.clone(),
        };
        let bytes = serde_json::to_vec(&intent)
            .map_err(|e| Error::corrupt(&layout.intent, e.to_string()))?;
        crate::state::write_intent(fs, layout, &bytes)?;

        let result = (|| -> Result<()> {
            for write in writes {
                let parts: Vec<&str> = write.rel_path.split('/').collect();
                let mut dir = layout.root.clone();
                for part in &parts[..parts.len() - 1] {
                    dir.push(part);
                    ensure_dir(fs, &dir)?;
                }
                let target = layout.root.join(&write.rel_path);
                let tmp = layout.runtime.join(format!("tmp-{}-source-archive", ids.hex8()));
                let written = (|| -> Result<()> {
                    fs.write(&tmp, write.new_text.as_bytes(), 0o600)
                        .map_err(Error::io("write", &tmp))?;
                    fs.sync_file(&tmp).map_err(Error::io("fsync", &tmp))?;
                    fs.set_mode(&tmp, 0o600).map_err(Error::io("chmod", &tmp))?;
                    fs.rename(&tmp, &target).map_err(Error::io("rename", &tmp))
                })();
                if let Err(e) = written {
                    let _ = fs.remove_file(&tmp);
                    return Err(e);
                }
                fs.sync_dir(&dir).map_err(Error::io("fsync dir", &dir))?;
            }
            recover_intent(fs, layout, ids)
        })();
        if let Err(error) = result {
            // Recovery moves the revision iff some file changed, and removes the intent.
            let _ = recover_intent(fs, layout, ids);
            return Err(error);
        }
        Ok(())
    }
}

/// One archive file a sync's merge extends (see `docs/format.md#merging-two-clones`): the text
/// it held when the merge read it (`None`: absent) and the merged text, which must extend it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveExtension {
    /// Workspace-relative path of the archive file (`sources/…`).
    pub rel_path: String,
    /// What the file held when the merge was computed.
    pub current: Option<String>,
    /// The merged text: `current` followed by the frames the other clone archived.
    pub merged: String,
}

impl Workspace {
    /// Extends archive files to a sync's merged versions, as an append does (intent record,
    /// each file replaced atomically, the revision moved iff some file changed, observers told).
    ///
    /// Under the write lock, before anything is written: every path is preflighted as an
    /// append's (inside `sources/`, no case-fold collision, no symlink on the way); each file
    /// must still hold `current` (else `CONCURRENT_UPDATE`: merge again) and `merged` must
    /// extend it, frames replaced by their tombstones or redactions aside
    /// (`scriptorium_topics_format::merge::extends_archive`; else `APPEND_ONLY_REQUIRED`: the
    /// archive is append-only).
    pub fn extend_archives(
        &self,
        files: &[ArchiveExtension],
        lock_timeout: LockTimeout,
    ) -> Result<ArchiveOutcome> {
        let _lock = self.lock(lock_timeout)?;
        recover(self.fs(), self.layout(), self.inner.ids.as_ref())?;
        let current = self.current()?;
        let tree = LiveSources::new(self.inner.fs.clone(), self.layout().root.clone());
        let paths: Vec<&str> = files.iter().map(|f| f.rel_path.as_str()).collect();
        scriptorium_topics_format::source::append::preflight_paths(&paths, &tree)
            .map_err(|source| Error::Archive { source })?;
        let mut writes = Vec::new();
        for file in files {
            let live = match tree.read(&file.rel_path) {
                FileLookup::Text(text) => Some(text.to_string()),
                FileLookup::Missing => None,
                FileLookup::NotRegularFile => {
                    return Err(Error::Archive {
                        source: scriptorium_topics_format::source::AppendError::NotRegularFile {
                            rel_path: file.rel_path.clone(),
                        },
                    });
                }
            };
            if let Some(error) = tree.take_errors().into_iter().next() {
                return Err(Error::Io {
                    op: "read sources",
                    path: self.layout().root.join(&file.rel_path),
                    source: std::io::Error::other(error),
                });
            }
            if live != file.current {
                return Err(Error::ConcurrentUpdate {
                    base_revision: current.revision.clone(),
                    revision: current.revision.clone(),
                });
            }
            let held = live.as_deref().unwrap_or_default();
            // Appended frames, and the other clone's tombstones of forgotten records and
            // redactions of redacted ones (a merge keeps either over the original): nothing
            // else may change an archive.
            if !scriptorium_topics_format::merge::extends_archive(
                &file.rel_path,
                held,
                &file.merged,
            ) {
                return Err(Error::Invalid {
                    code: crate::ErrorCode::AppendOnlyRequired,
                    message: format!("{}: a merged archive must extend the archive", file.rel_path),
                });
            }
            if file.merged != held {
                writes.push(PlannedWrite {
                    rel_path: file.rel_path.clone(),
                    new_text: file.merged.clone(),
                    existed: live.is_some_and(|t| !t.is_empty()),
                    appended: Vec::new(),
                });
            }
        }
        self.write_and_announce(writes, current, Vec::new())
    }

    /// Writes `writes` (nothing when empty) and tells the observers which files changed.
    fn write_and_announce(
        &self,
        writes: Vec<PlannedWrite>,
        current: Current,
        source_ids: Vec<String>,
    ) -> Result<ArchiveOutcome> {
        if writes.is_empty() {
            return Ok(ArchiveOutcome {
                source_ids,
                changed_files: Vec::new(),
                previous_revision: current.revision.clone(),
                revision: current.revision,
            });
        }
        self.append_planned(&writes, &current)?;
        let changed_files: Vec<String> = writes.into_iter().map(|w| w.rel_path).collect();
        let revision = self.current()?.revision;
        let event = ArchiveEvent {
            root: &self.layout().root,
            changed_files: &changed_files,
            previous_revision: &current.revision,
            revision: &revision,
        };
        for observer in &self.inner.observers {
            observer.archived(&event);
        }
        Ok(ArchiveOutcome {
            source_ids,
            changed_files,
            revision,
            previous_revision: current.revision,
        })
    }
}

impl Workspace {
    /// Replaces the frames of `sources` (source IDs) with tombstones in the live archive (see
    /// `docs/format.md#forgetting`): the one operation that changes archived bytes instead of
    /// appending them, and only ever in that way — every frame keeps its place, its anchor and
    /// its source ID, and a forgotten record's text, speaker and metadata go. Called by a
    /// forget, never by an ordinary transaction (which still refuses any `sources/` change).
    ///
    /// Under the write lock, as an append (an intent record, each file replaced atomically, the
    /// revision moved iff some file changed, observers told). Idempotent: a tombstone stays as
    /// it is, and sources no archive holds are ignored. An archive that does not scan complete
    /// is refused (nothing past a fault is ever rewritten).
    pub fn tombstone_sources(
        &self,
        sources: &std::collections::BTreeSet<String>,
        lock_timeout: LockTimeout,
    ) -> Result<ArchiveOutcome> {
        let _lock = self.lock(lock_timeout)?;
        recover(self.fs(), self.layout(), self.inner.ids.as_ref())?;
        let current = self.current()?;
        let mut by_archive: std::collections::BTreeMap<String, std::collections::HashSet<String>> =
            std::collections::BTreeMap::new();
        for source in sources {
            if let Some((provider, thread, _)) =
                scriptorium_topics_format::source::id::split_id(source)
            {
                let path = scriptorium_topics_format::source::id::v2_path_of(provider, thread);
                by_archive.entry(path).or_default().insert(source.clone());
            }
        }
        let writes = self.plan_rewrites(by_archive.keys().cloned(), &|rel_path, text| {
            scriptorium_topics_format::forget::tombstone_archive(
                rel_path,
                text,
                &by_archive[rel_path],
            )
            .map_err(|error| error.to_string())
        })?;
        self.write_and_announce(writes, current, sources.iter().cloned().collect())
    }

    /// Rewrites every archive under `sources/` through `rewrite` (workspace-relative path and
    /// text → the new text, `None` to keep it, `Err` to refuse the whole rewrite): the texts a
    /// `redact` cleans in place. `rewrite` must keep each frame's place, anchor and source ID
    /// (`scriptorium_topics_format::forget::rewrite_archive` does), so every citation still
    /// resolves. Under the write lock, with the guarantees of
    /// [`tombstone_sources`](Self::tombstone_sources); nothing is written when any archive is
    /// refused.
    pub fn rewrite_archives(
        &self,
        rewrite: &ArchiveRewrite<'_>,
        lock_timeout: LockTimeout,
    ) -> Result<ArchiveOutcome> {
        let _lock = self.lock(lock_timeout)?;
        recover(self.fs(), self.layout(), self.inner.ids.as_ref())?;
        let current = self.current()?;
        let tree = LiveSources::new(self.inner.fs.clone(), self.layout().root.clone());
        let mut files = Vec::new();
        let mut dirs = vec!["sources".to_owned()];
        while let Some(dir) = dirs.pop() {
            for name in tree.list_dir(&dir).unwrap_or_default() {
                let rel = format!("{dir}/{name}");
                if tree.list_dir(&rel).is_some() {
                    dirs.push(rel);
                } else {
                    files.push(rel);
                }
            }
        }
        files.sort();
        let writes = self.plan_rewrites(files.into_iter(), rewrite)?;
        self.write_and_announce(writes, current, Vec::new())
    }

    /// The writes of `rewrite` applied to the archives at `paths` (missing ones skipped). Every
    /// archive is read and rewritten before anything is written.
    fn plan_rewrites(
        &self,
        paths: impl Iterator<Item = String>,
        rewrite: &ArchiveRewrite<'_>,
    ) -> Result<Vec<PlannedWrite>> {
        let tree = LiveSources::new(self.inner.fs.clone(), self.layout().root.clone());
        let mut writes = Vec::new();
        for rel_path in paths {
            let text = match tree.read(&rel_path) {
                FileLookup::Text(text) => text,
                FileLookup::Missing => continue,
                FileLookup::NotRegularFile => {
                    return Err(Error::Archive {
                        source: scriptorium_topics_format::source::AppendError::NotRegularFile {
                            rel_path,
                        },
                    });
                }
            };
            if let Some(error) = tree.take_errors().into_iter().next() {
                return Err(Error::Io {
                    op: "read sources",
                    path: self.layout().root.join(&rel_path),
                    source: std::io::Error::other(error),
                });
            }
            let rewritten = rewrite(&rel_path, &text).map_err(|error| Error::Invalid {
                code: crate::ErrorCode::AppendOnlyRequired,
                message: format!("{rel_path}: {error}"),
            })?;
            if let Some(new_text) = rewritten {
                writes.push(PlannedWrite {
                    rel_path,
                    new_text,
                    existed: true,
                    appended: Vec::new(),
                });
            }
        }
        Ok(writes)
    }
}
