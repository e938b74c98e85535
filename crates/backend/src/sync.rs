//! Memory sync through a git remote: fetch, merge at the level of the format, install through
//! the normal transaction, push (see `docs/sync.md`).
//!
//! One round: fetch the remote's branch (gix); if it holds commits this clone lacks, merge them
//! (topics three-way by block ID against the merge base, archives by union:
//! `scriptorium_topics_format::merge`), archive the other clone's frames
//! (`Workspace::extend_archives`), install the merged topics as one transaction (normalize,
//! validate, install, views, index), and commit it with the remote commit as second parent (or,
//! when this clone had nothing new, move the branch to the remote commit: a fast-forward); then
//! push (the git CLI). A push refused because another clone pushed first starts the round
//! again, at most [`MAX_ROUNDS`] times.
//!
//! Key decisions:
//! - A conflict installs nothing and archives nothing: the merge is computed in memory before
//!   the first write, and when any block changed differently on both sides the round stops
//!   with `SYNC_CONFLICT`, both versions of every conflicting block kept in
//!   `.scriptorium/sync/state.json` for `scriptorium sync --status`. The person edits the block
//!   as they want it and syncs with `--prefer ours` (or takes the remote's with
//!   `--prefer theirs`); the other version stays in git history either way. `--prefer` resolves
//!   only the conflicts kept there, as they were shown: a conflict that arose since (another
//!   block, or the remote's version changed again, or this clone's when the remote's is kept)
//!   stops the round again, so no version is replaced that nobody saw.
//! - Only the paths the remote changed since the merge base are merged; derived views are
//!   rebuilt from the merged topics, except on a fast-forward, where the remote's views are
//!   taken verbatim so both clones end on the same commit (views number blocks by each clone's
//!   creation order).
//! - Every step is one of the engine's atomic steps (an archive append, an install, a commit),
//!   so a crash leaves the old or the merged revision; a commit lost to a crash is made by the
//!   next open's catch-up and the next round merges or pushes what is left.

use std::path::Path;

use scriptorium_history::{Ancestry, History, Pushed};
use scriptorium_topics_format::merge::{BlockConflict, Prefer, merge_archive, merge_topic};
use scriptorium_txn::validate::Required;
use scriptorium_txn::{ArchiveExtension, BeginOptions, LockTimeout};
use scriptorium_workspace_fs::read::{ReadError, read_in};
use scriptorium_workspace_fs::{Durability, RealFs, write_atomic};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::memory::{MemoryWorkspace, PendingMerge, now, write_taken_views};
use crate::wire::{Code, WireError};

/// How many fetch → merge → push rounds one sync runs before it gives up on a remote that
/// keeps moving (`CONCURRENT_UPDATE`, retryable).
pub const MAX_ROUNDS: u32 = 8;

/// The sync state file, under `.scriptorium/`.
const STATE_FILE: &str = "sync/state.json";

/// What one sync is asked to do.
#[derive(Clone)]
pub struct SyncRequest {
    /// The git remote (a path or a URL).
    pub remote: String,
    /// The session store, for a forget another clone made (found in the remote's ledger): its
    /// nodes lose their content here too. `None`: the store is left alone (the importers still
    /// skip what the ledger names).
    pub store: Option<std::sync::Arc<dyn scriptorium_session_dag::SessionStore + Send + Sync>>,
    /// How the conflicts the last stopped sync kept (those `scriptorium sync --status` shows)
    /// are resolved; any other conflict stops the round, and so does every conflict when
    /// `None`.
    pub prefer: Option<Prefer>,
}

/// What a sync did, as every surface reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReport {
    /// The remote.
    pub remote: String,
    /// The branch synced (this clone's, pushed to the same name).
    pub branch: String,
    /// `up_to_date`, `pushed` (the remote took ours), `fast_forward` (we took the remote's),
    /// `merged` (both had changes).
    pub action: String,
    /// `HEAD` afterwards.
    pub commit: String,
    /// Whether the remote's branch is now `commit`.
    pub pushed: bool,
    /// Topic files the merge changed here.
    pub topics_changed: Vec<String>,
    /// Archive files that took the remote's frames.
    pub sources_changed: Vec<String>,
    /// Conflicting blocks resolved by `--prefer`.
    pub resolved_conflicts: usize,
    /// Rounds run (more than one when another clone pushed meanwhile).
    pub rounds: u32,
    /// When it ended (RFC 3339).
    pub at: String,
}

/// A conflict kept for the person who resolves it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptConflict {
    /// The topic file.
    pub path: String,
    /// The block ID (or the chunk's first line).
    pub block: String,
    /// The block at the merge base.
    pub base: Option<String>,
    /// This clone's version.
    pub ours: Option<String>,
    /// The remote's version.
    pub theirs: Option<String>,
}

/// `.scriptorium/sync/state.json`: the last sync, and the conflict that stopped one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncState {
    /// The last sync that ended well.
    pub last: Option<SyncReport>,
    /// The open conflict: the sync that found it and every conflicting block.
    pub conflict: Option<OpenConflict>,
}

/// A sync stopped by conflicting changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenConflict {
    /// The remote.
    pub remote: String,
    /// This clone's commit.
    pub ours: String,
    /// The remote's commit.
    pub theirs: String,
    /// When it was found (RFC 3339).
    pub at: String,
    /// Every conflicting block.
    pub blocks: Vec<KeptConflict>,
    /// Why the merged tree was refused, when it was (a block in two files, a broken link).
    pub refused: Vec<String>,
}

/// Reads the sync state (the default when there is none yet).
pub fn read_state(root: &Path) -> Result<SyncState, WireError> {
    match read_in(&RealFs, root, &format!(".scriptorium/{STATE_FILE}")) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            WireError::new(Code::CorruptState, format!("the sync state does not parse: {e}"))
                .with_path(format!(".scriptorium/{STATE_FILE}"))
        }),
        Err(ReadError::NotFound { .. }) => Ok(SyncState::default()),
        Err(e) => Err(WireError::new(Code::Io, e.to_string())),
    }
}

fn write_state(root: &Path, state: &SyncState) -> Result<(), WireError> {
    let dir = root.join(".scriptorium/sync");
    scriptorium_workspace_fs::create_dir_all(&RealFs, &dir, 0o700)
        .map_err(|e| WireError::new(Code::Io, e.to_string()))?;
    let bytes = serde_json::to_vec_pretty(state).expect("the sync state serializes");
    write_atomic(
        &RealFs,
        &dir.join("state.json.tmp"),
        &dir.join("state.json"),
        &bytes,
        0o600,
        Durability::Cache,
    )
    .map_err(|e| WireError::new(Code::Io, e.to_string()))
}

fn git_error(error: &scriptorium_history::Error) -> WireError {
    WireError::new(error.code().into(), error.to_string())
}

fn txn_error(error: &scriptorium_txn::Error) -> WireError {
    WireError::from_txn(error)
}

/// What a round found to do.
enum Round {
    /// Nothing to take and nothing to give.
    UpToDate,
    /// Nothing to take: push ours.
    Push,
    /// Merged (or fast-forwarded) locally: push the result.
    Took { action: &'static str, topics: Vec<String>, sources: Vec<String>, resolved: usize },
    /// A local change raced the merge: run the round again.
    Again,
}

/// The merged state of the paths the remote changed, computed before anything is written.
struct Merged {
    topics: Vec<(String, Option<String>)>,
    archives: Vec<ArchiveExtension>,
    views: Vec<(String, Option<Vec<u8>>)>,
    conflicts: Vec<KeptConflict>,
    /// The block IDs of the remote's versions of the merged files: the other clone committed
    /// them, so they are kept as written (a block keeps its ID on every clone).
    adopted: std::collections::BTreeSet<String>,
}

/// Whether `path` is one of the derived views (rebuilt, never merged).
fn is_view(path: &str) -> bool {
    path == "core.md"
        || path == "recent_events.jsonl"
        || path == "relations.json"
        || path.starts_with("timeline/")
}

fn text(bytes: Option<Vec<u8>>, path: &str) -> Result<Option<String>, WireError> {
    bytes
        .map(|b| {
            String::from_utf8(b).map_err(|_| {
                WireError::new(Code::SyncConflict, "a file is not UTF-8 text").with_path(path)
            })
        })
        .transpose()
}

impl MemoryWorkspace {
    /// Runs one sync with the remote (see the module docs). Exit codes map as usual:
    /// `SYNC_CONFLICT` is permanent until a person resolves it, `REMOTE_UNAVAILABLE` and
    /// `CONCURRENT_UPDATE` (the remote kept moving) are retryable.
    pub fn sync(&self, request: &SyncRequest) -> Result<SyncReport, WireError> {
        let history = self.history_or_why().map_err(|e| WireError::new(Code::GitUnavailable, e))?;
        let root = self.workspace().root().to_path_buf();
        let branch = history.branch().map_err(|e| git_error(&e))?;
        let mut state = read_state(&root)?;
        let (mut topics, mut sources, mut resolved) = (Vec::new(), Vec::new(), 0);
        let mut action = "up_to_date";
        for round in 1..=MAX_ROUNDS {
            // Edits made outside a transaction are taken in first, so ours is what is installed.
            self.adopt_outside_edits().map_err(|e| txn_error(&e))?;
            let fetched = history.fetch(&request.remote, &branch).map_err(|e| git_error(&e))?;
            // Forgets first: the remote's that this clone has not applied, then what this
            // clone forgot and the remote's commits still hold (they are rewritten here and
            // the remote's branch replaced, with a lease on what was fetched).
            let (theirs, replacing) = match fetched {
                Some(fetched) => {
                    let (theirs, replacing) =
                        self.reconcile_forgets(history, &branch, &fetched, request)?;
                    (Some(theirs), replacing)
                }
                None => (None, None),
            };
            let ours = history
                .head_commit()
                .map_err(|e| git_error(&e))?
                .ok_or_else(|| WireError::new(Code::GitCorrupt, "the history has no commit"))?;
            let step = match &theirs {
                None => Round::Push,
                Some(theirs) => match history.ancestry(&ours, theirs).map_err(|e| git_error(&e))? {
                    Ancestry::Same => Round::UpToDate,
                    Ancestry::Ahead => Round::Push,
                    Ancestry::Behind => {
                        self.take(history, Some(&ours), &ours, theirs, request, &mut state)?
                    }
                    Ancestry::Diverged { base } => {
                        self.take(history, base.as_deref(), &ours, theirs, request, &mut state)?
                    }
                },
            };
            match step {
                Round::Again => continue,
                Round::UpToDate => {}
                Round::Push => action = if action == "up_to_date" { "pushed" } else { action },
                Round::Took { action: took, topics: t, sources: s, resolved: r } => {
                    action = if action == "merged" { action } else { took };
                    topics.extend(t);
                    sources.extend(s);
                    resolved += r;
                }
            }
            let head = history
                .head_commit()
                .map_err(|e| git_error(&e))?
                .ok_or_else(|| WireError::new(Code::GitCorrupt, "the history has no commit"))?;
            let pushed = if theirs.as_deref() == Some(head.as_str()) && replacing.is_none() {
                true
            } else {
                let push = match &replacing {
                    Some(expected) => {
                        history.push_replacing(&request.remote, &head, &branch, expected)
                    }
                    None => history.push(&request.remote, &head, &branch),
                };
                match push.map_err(|e| git_error(&e))? {
                    Pushed::Updated | Pushed::UpToDate => {
                        if replacing.is_some() {
                            // The old history is gone from the remote's branch: from its
                            // objects too when it is on this machine, and from ours (the
                            // fetch brought it back).
                            self.workspace()
                                .with_write_lock(LockTimeout::DEFAULT, || history.prune())
                                .map_err(|e| txn_error(&e))?
                                .map_err(|e| git_error(&e))?;
                            if let Some(dir) = local_remote_dir(&root, &request.remote) {
                                scriptorium_history::prune_repository(&dir)
                                    .map_err(|e| git_error(&e))?;
                            }
                        }
                        true
                    }
                    Pushed::Rejected { reason } => {
                        tracing::info!(%reason, round, "the remote moved meanwhile; syncing again");
                        continue;
                    }
                }
            };
            topics.sort();
            topics.dedup();
            sources.sort();
            sources.dedup();
            let report = SyncReport {
                remote: request.remote.clone(),
                branch,
                action: action.to_owned(),
                commit: head,
                pushed,
                topics_changed: topics,
                sources_changed: sources,
                resolved_conflicts: resolved,
                rounds: round,
                at: rfc3339(),
            };
            state.last = Some(report.clone());
            state.conflict = None;
            write_state(&root, &state)?;
            return Ok(report);
        }
        Err(WireError::new(
            Code::ConcurrentUpdate,
            format!(
                "the remote moved on during each of {MAX_ROUNDS} sync rounds (other clones \
                 pushing); nothing is lost: sync again"
            ),
        ))
    }

    /// Brings this clone and the fetched commit `fetched` to the same forgets (see
    /// `docs/sync.md#forgetting`): applies every forget of the remote's ledger this clone has
    /// not made ([`crate::forget::apply_entry`]), then, when this clone's ledger holds forgets
    /// the remote's does not (the remote's branch still has the old history), rewrites the
    /// fetched commits through them. Returns the commit to merge (the fetched one, or its
    /// rewrite) and, when the remote's branch must be replaced, the commit it holds now (the
    /// push's lease).
    fn reconcile_forgets(
        &self,
        history: &History,
        branch: &str,
        fetched: &str,
        request: &SyncRequest,
    ) -> Result<(String, Option<String>), WireError> {
        let root = self.workspace().root().to_path_buf();
        let theirs_ledger: Vec<crate::forget::LedgerEntry> = history
            .file_at(fetched, crate::forget::LEDGER)
            .map_err(|e| git_error(&e))?
            .map(|bytes| {
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .filter_map(|line| serde_json::from_str(line).ok())
                    .collect()
            })
            .unwrap_or_default();
        let ours_ledger = crate::forget::read_ledger(&root);
        let ours_ids: std::collections::HashSet<&str> =
            ours_ledger.iter().map(|e| e.id.as_str()).collect();
        let store =
            request.store.as_deref().map(|s| s as &dyn scriptorium_session_dag::SessionStore);
        for entry in theirs_ledger.iter().filter(|e| !ours_ids.contains(e.id.as_str())) {
            crate::forget::apply_entry(self, store, entry.clone()).map_err(|e| e.wire())?;
        }
        let theirs_ids: std::collections::HashSet<&str> =
            theirs_ledger.iter().map(|e| e.id.as_str()).collect();
        let missing: Vec<crate::forget::LedgerEntry> = crate::forget::read_ledger(&root)
            .into_iter()
            .filter(|e| !theirs_ids.contains(e.id.as_str()))
            .collect();
        if missing.is_empty() {
            return Ok((fetched.to_owned(), None));
        }
        let scrub = crate::forget::scrub_for(self, &missing).map_err(|e| e.wire())?;
        let known: std::collections::BTreeMap<String, String> =
            missing.iter().flat_map(|e| e.rewrite.iter().cloned()).collect();
        self.workspace()
            .with_write_lock(LockTimeout::DEFAULT, || history.rewrite(&*scrub, &known))
            .map_err(|e| txn_error(&e))?
            .map_err(|e| git_error(&e))?;
        let tracking = format!("{}{branch}", scriptorium_history::FETCHED_PREFIX);
        let refs = history.refs().map_err(|e| git_error(&e))?;
        let theirs = refs.get(&tracking).cloned().unwrap_or_else(|| fetched.to_owned());
        Ok((theirs, Some(fetched.to_owned())))
    }

    /// Merges the remote commit `theirs` into this clone (`base`: the merge base, `None` for
    /// unrelated histories) and installs the result.
    fn take(
        &self,
        history: &History,
        base: Option<&str>,
        ours: &str,
        theirs: &str,
        request: &SyncRequest,
        state: &mut SyncState,
    ) -> Result<Round, WireError> {
        let root = self.workspace().root().to_path_buf();
        let fast_forward = base == Some(ours);
        let revision = self.workspace().revision().map_err(|e| txn_error(&e))?;
        let merged = self.merge(history, base, theirs, request.prefer, fast_forward)?;
        // `--prefer` resolves only what a person was shown; any other conflict stops the round.
        let unseen: Vec<&KeptConflict> = match request.prefer {
            None => Vec::new(),
            Some(prefer) => merged
                .conflicts
                .iter()
                .filter(|c| !was_shown(state.conflict.as_ref(), c, prefer))
                .collect(),
        };
        if (request.prefer.is_none() && !merged.conflicts.is_empty()) || !unseen.is_empty() {
            let unseen = unseen
                .iter()
                .map(|c| json!({ "path": c.path, "block": c.block }))
                .collect::<Vec<_>>();
            let conflict = OpenConflict {
                remote: request.remote.clone(),
                ours: ours.to_owned(),
                theirs: theirs.to_owned(),
                at: rfc3339(),
                blocks: merged.conflicts.clone(),
                refused: Vec::new(),
            };
            return Err(self.stop(state, conflict, unseen));
        }
        let resolved = merged.conflicts.len();

        // Archives first: the merged topics cite the other clone's frames.
        let extended = self
            .workspace()
            .extend_archives(&merged.archives, LockTimeout::DEFAULT)
            .map_err(|e| txn_error(&e))?;
        if extended.previous_revision != revision {
            return Ok(Round::Again);
        }
        let message = format!("memory: sync with {} ({})", request.remote, &theirs[..12]);
        let begin = BeginOptions {
            base_revision: Some(extended.revision.clone()),
            lock_timeout: LockTimeout::DEFAULT,
            required: Required::StillPresent,
            message: message.clone(),
            adopted_block_ids: merged.adopted.clone(),
            ..BeginOptions::default()
        };
        let mut staged = match self.workspace().begin(begin) {
            Ok(staged) => staged,
            Err(e) if e.code() == scriptorium_txn::ErrorCode::ConcurrentUpdate => {
                return Ok(Round::Again);
            }
            Err(e) => return Err(txn_error(&e)),
        };
        let mut topics = Vec::new();
        for (path, text) in &merged.topics {
            let write = match text {
                Some(text) => staged.write_file(path, text),
                None => staged.remove_file(path),
            };
            write.map_err(|e| txn_error(&e))?;
            topics.push(path.clone());
        }
        let validated = match staged.validate() {
            Ok(validated) => validated,
            Err(rejected) => {
                let conflict = OpenConflict {
                    remote: request.remote.clone(),
                    ours: ours.to_owned(),
                    theirs: theirs.to_owned(),
                    at: rfc3339(),
                    blocks: merged.conflicts,
                    refused: rejected.violations().iter().map(|v| v.to_string()).collect(),
                };
                return Err(self.stop(state, conflict, Vec::new()));
            }
        };
        self.set_pending_merge(Some(PendingMerge {
            message: message.clone(),
            theirs: theirs.to_owned(),
            views: merged.views.clone(),
        }));
        let installed = validated.install();
        self.set_pending_merge(None);
        let installed = match installed {
            Ok(installed) => installed,
            Err(e) if e.code() == scriptorium_txn::ErrorCode::ConcurrentUpdate => {
                return Ok(Round::Again);
            }
            Err(e) => return Err(txn_error(&e)),
        };
        if installed.noop {
            // The topics already hold the merge (or only archives changed): the merge commit
            // is made here, under the write lock, as the install's observer would have.
            let commit = || -> Result<(), WireError> {
                let mut changed = extended.changed_files.clone();
                changed.extend(write_taken_views(&root, &merged.views));
                let txn_id = self.workspace().installed_txn_id().map_err(|e| txn_error(&e))?;
                let txn_id =
                    if txn_id.is_empty() { installed.txn_id.as_str().to_owned() } else { txn_id };
                history
                    .commit(scriptorium_history::CommitRequest {
                        txn_id: &txn_id,
                        message: &message,
                        changed: Some(&changed),
                        time: now(),
                        merge: Some(theirs),
                    })
                    .map(drop)
                    .map_err(|e| git_error(&e))
            };
            self.workspace()
                .with_write_lock(LockTimeout::DEFAULT, commit)
                .map_err(|e| txn_error(&e))??;
            topics.clear();
        } else if let Some(error) = crate::memory::after(&installed).git_error {
            return Err(WireError::new(
                Code::GitCommitFailed,
                format!("the merge is installed but its commit failed: {error}"),
            ));
        }
        Ok(Round::Took {
            action: if fast_forward { "fast_forward" } else { "merged" },
            topics,
            sources: extended.changed_files,
            resolved,
        })
    }

    /// The merge of every path the remote changed since `base`, in memory.
    fn merge(
        &self,
        history: &History,
        base: Option<&str>,
        theirs: &str,
        prefer: Option<Prefer>,
        fast_forward: bool,
    ) -> Result<Merged, WireError> {
        let root = self.workspace().root();
        let mut merged = Merged {
            topics: Vec::new(),
            archives: Vec::new(),
            views: Vec::new(),
            conflicts: Vec::new(),
            adopted: std::collections::BTreeSet::new(),
        };
        let changed = history.changed_between(base, theirs).map_err(|e| git_error(&e))?;
        let at = |commit: Option<&str>, path: &str| -> Result<Option<Vec<u8>>, WireError> {
            match commit {
                Some(commit) => history.file_at(commit, path).map_err(|e| git_error(&e)),
                None => Ok(None),
            }
        };
        let live = |path: &str| -> Result<Option<Vec<u8>>, WireError> {
            match read_in(&RealFs, root, path) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(ReadError::NotFound { .. }) => Ok(None),
                Err(e) => Err(WireError::new(Code::Io, e.to_string()).with_path(path)),
            }
        };
        for path in changed {
            if path.starts_with("topics/") && path.ends_with(".md") {
                let base_text = text(at(base, &path)?, &path)?;
                let ours = text(live(&path)?, &path)?;
                let theirs_text = text(at(Some(theirs), &path)?, &path)?;
                let merge = merge_topic(
                    base_text.as_deref(),
                    ours.as_deref(),
                    theirs_text.as_deref(),
                    prefer,
                );
                merged.conflicts.extend(merge.conflicts.into_iter().map(|c: BlockConflict| {
                    KeptConflict {
                        path: path.clone(),
                        block: c.block,
                        base: c.base,
                        ours: c.ours,
                        theirs: c.theirs,
                    }
                }));
                if let Some(theirs_text) = &theirs_text {
                    let doc = scriptorium_topics_format::topic::Document::parse(theirs_text);
                    for paragraph in doc.paragraphs() {
                        merged.adopted.extend(
                            doc.block_ids(paragraph).iter().map(|id| id.as_str().to_owned()),
                        );
                    }
                }
                if merge.text != ours {
                    merged.topics.push((path, merge.text));
                }
            } else if path.starts_with("sources/") {
                let ours = text(live(&path)?, &path)?;
                let theirs_text = text(at(Some(theirs), &path)?, &path)?;
                let union =
                    merge_archive(&path, ours.as_deref(), theirs_text.as_deref()).map_err(|e| {
                        WireError::new(Code::SyncConflict, e.to_string()).with_path(&path)
                    })?;
                if let Some(union) = union
                    && Some(&union) != ours.as_ref()
                {
                    merged.archives.push(ArchiveExtension {
                        rel_path: path,
                        current: ours,
                        merged: union,
                    });
                }
            } else if fast_forward && is_view(&path) {
                merged.views.push((path.clone(), at(Some(theirs), &path)?));
            }
        }
        Ok(merged)
    }

    /// Records a conflict that stopped a sync and returns its error; `unseen` lists the
    /// conflicts (`{path, block}`) a `--prefer` was not allowed to resolve.
    fn stop(&self, state: &mut SyncState, conflict: OpenConflict, unseen: Vec<Value>) -> WireError {
        let root = self.workspace().root();
        let mut details = Map::new();
        details.insert("theirs".into(), Value::String(conflict.theirs.clone()));
        details.insert("conflicts".into(), json!(conflict.blocks));
        details.insert("refused".into(), json!(conflict.refused));
        let message = if !unseen.is_empty() {
            format!(
                "{} conflicting block(s) were not shown by the sync that stopped (new since, or \
                 changed again on either side), and --prefer resolves only what was shown; \
                 nothing was installed. `scriptorium sync --status` shows every conflict now; \
                 then run `scriptorium sync --prefer ours` (or `--prefer theirs`) again",
                unseen.len()
            )
        } else if conflict.refused.is_empty() {
            format!(
                "{} block(s) changed differently here and on the remote; nothing was installed. \
                 `scriptorium sync --status` shows both versions; edit the block as you want it \
                 and run `scriptorium sync --prefer ours` (or `--prefer theirs`)",
                conflict.blocks.len()
            )
        } else {
            format!(
                "the merged memory does not validate ({}); nothing was installed. \
                 `scriptorium sync --status` shows why",
                conflict.refused.join("; ")
            )
        };
        if !unseen.is_empty() {
            details.insert("unseen".into(), Value::Array(unseen));
        }
        state.conflict = Some(conflict);
        if let Err(error) = write_state(root, state) {
            tracing::warn!(%error, "keeping the sync conflict failed");
        }
        let mut error = WireError::new(Code::SyncConflict, message);
        error.details = details;
        error
    }
}

/// Whether `--prefer prefer` may resolve `conflict`: the open conflict (what `scriptorium sync
/// --status` showed) holds the same block of the same file with the remote's version as it is
/// now, and this clone's version as it is now too, unless this clone's is the one kept: editing
/// the block here and keeping it with `--prefer ours` is how a person resolves a conflict by
/// hand, and keeping this clone's version replaces only the remote's version that was shown.
fn was_shown(open: Option<&OpenConflict>, conflict: &KeptConflict, prefer: Prefer) -> bool {
    open.is_some_and(|open| {
        open.blocks.iter().any(|shown| {
            shown.path == conflict.path
                && shown.block == conflict.block
                && shown.theirs == conflict.theirs
                && (prefer == Prefer::Ours || shown.ours == conflict.ours)
        })
    })
}

fn rfc3339() -> String {
    crate::memory::wall_clock()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The repository directory of a remote that is a local path or a `file://` URL (a relative
/// path is taken from the home, the memory's parent, as `[sync] remote` is), if it exists.
pub(crate) fn local_remote_dir(root: &Path, remote: &str) -> Option<std::path::PathBuf> {
    if remote.contains("://") && !remote.starts_with("file://") {
        return None;
    }
    if !remote.contains("://") && remote.contains(':') && !remote.starts_with('/') {
        return None;
    }
    let path = std::path::PathBuf::from(remote.strip_prefix("file://").unwrap_or(remote));
    let path = if path.is_absolute() { path } else { root.parent().unwrap_or(root).join(path) };
    path.is_dir().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::{MemoryWorkspace, SyncRequest};
    use crate::wire::Code;

    /// The library path, without the binary's startup: gix's HTTP transport builds a reqwest
    /// client with rustls and no provider of its own, which panicked for every `http(s)://`
    /// remote unless the process had installed one (issue 34).
    #[test]
    fn an_http_remote_nobody_answers_is_retryable_not_a_panic() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let memory = MemoryWorkspace::open(dir.path().join("memory"), true).expect("open");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a loopback port")
            .port();
        let remote = format!("http://127.0.0.1:{port}/memory.git");
        let request = SyncRequest { remote: remote.clone(), prefer: None, store: None };
        let error = memory.sync(&request).expect_err("nothing listens there");
        assert_eq!(error.code, Code::RemoteUnavailable, "{error}");
        assert!(error.code.is_retryable());
        assert!(error.message.contains(&remote), "{error}");
    }
}
