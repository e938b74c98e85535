//! What a workspace holds and whether its history is in step: the one status computation the
//! CLI (`scriptorium status`) and the MCP tool (`memory_status`) share.

use std::path::Path;

use scriptorium_topics_format::source::{ArchiveResolver, scan};
use scriptorium_topics_format::topic::parse_tree;
use scriptorium_workspace_fs::read::{FsSources, read_topics};
use scriptorium_workspace_fs::{FileKind, Fs as _, RealFs, walk};
use serde::Serialize;

use crate::memory::MemoryWorkspace;

/// The git side of [`WorkspaceStatus`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GitStatus {
    /// The HEAD commit, if any.
    pub head: Option<String>,
    /// The transaction HEAD records (its `Txn-Id:` trailer, or the settled marker).
    pub txn_id: Option<String>,
    /// Whether HEAD records the installed transaction.
    pub in_sync: bool,
    /// Why git is unavailable, if it is.
    pub error: Option<String>,
}

/// A workspace's status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkspaceStatus {
    /// The workspace ID.
    pub workspace: String,
    /// The installed revision.
    pub revision: String,
    /// Installs and archive appends so far.
    pub transactions: u64,
    /// The last transaction ID, if any.
    pub last_transaction: Option<String>,
    /// Whether `topics/` was edited outside a transaction.
    pub topics_edited_outside: bool,
    /// Whether `sources/` changed outside an append.
    pub sources_changed_outside: bool,
    /// Topic files.
    pub topic_files: usize,
    /// Blocks (parsed units).
    pub blocks: usize,
    /// Topic diagnostics (run `scriptorium check`).
    pub diagnostics: usize,
    /// Archive files under `sources/`.
    pub source_files: usize,
    /// Valid frames in them.
    pub source_records: usize,
    /// Whether `topics/core.md` exists.
    pub core_exists: bool,
    /// The history.
    pub git: GitStatus,
}

/// Reads the status of `memory` (every topic parsed, every archive scanned).
pub fn workspace_status(memory: &MemoryWorkspace) -> Result<WorkspaceStatus, StatusError> {
    let ws = memory.workspace();
    let root = ws.root();
    let state = ws.revision_state()?;
    if state.stat_cache_stale
        && let Err(error) = ws.refresh_stat_cache()
    {
        // A copy or checkout touched files without changing them; recording their new stat
        // only spares later commands some reads, so a failure here is not the status's.
        tracing::warn!(%error, "refreshing the revision record's stat cache failed");
    }
    let files = read_topics(root).map_err(scriptorium_views::Error::from)?;
    let parsed = parse_tree(&files, &ArchiveResolver::new(FsSources::new(root)));
    let (source_files, source_records) = count_sources(root);
    // The transaction HEAD records: its trailer, or the settled marker when HEAD already held
    // an installed tree (no empty commit is made for it).
    let head = memory
        .history()
        .map(|h| Ok::<_, scriptorium_history::Error>((h.log(None, 1)?, h.last_txn_id()?)));
    let (head, txn_id, error) = match head {
        Some(Ok((entries, txn_id))) => match entries.into_iter().next() {
            Some(e) => (Some(e.commit), txn_id, None),
            None => (None, None, None),
        },
        Some(Err(err)) => (None, None, Some(err.to_string())),
        None => (None, None, memory.history_error().map(str::to_owned)),
    };
    let in_sync =
        error.is_none() && (state.txn_id.is_empty() || txn_id.as_deref() == Some(&state.txn_id));
    Ok(WorkspaceStatus {
        workspace: ws.workspace_id().as_str().to_owned(),
        revision: state.revision.as_str().to_owned(),
        transactions: state.counter,
        last_transaction: (!state.txn_id.is_empty()).then(|| state.txn_id.clone()),
        topics_edited_outside: state.topics_edited_outside,
        sources_changed_outside: state.sources_changed_outside,
        topic_files: files.len(),
        blocks: parsed.units.len(),
        diagnostics: parsed.diagnostics.len(),
        source_files,
        source_records,
        core_exists: root.join("topics/core.md").is_file(),
        git: GitStatus { head, txn_id, in_sync, error },
    })
}

/// Why the status cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The revision state is unreadable.
    #[error(transparent)]
    Txn(#[from] scriptorium_txn::Error),
    /// The topics cannot be read.
    #[error(transparent)]
    Views(#[from] scriptorium_views::Error),
}

/// Counts the archive files and their valid frames under `sources/`.
fn count_sources(root: &Path) -> (usize, usize) {
    let sources = root.join("sources");
    let Ok(entries) = walk(&RealFs, &sources) else { return (0, 0) };
    let mut out = (0, 0);
    for entry in entries {
        if entry.kind != FileKind::File || !entry.rel.ends_with(".md") {
            continue;
        }
        out.0 += 1;
        let text =
            RealFs.read(&sources.join(&entry.raw)).ok().and_then(|b| String::from_utf8(b).ok());
        if let Some(text) = text {
            out.1 += scan(&format!("sources/{}", entry.rel), &text).frames.len();
        }
    }
    out
}

/// The success shape of an update (the CLI's `update --json` and the MCP `memory_update` tool):
/// `{ok, noop, revision, source_ids, block_ids, evidence_ids, changed_files, adopted,
/// memory_committed, git_committed, git_commit}`, evidence keyed `topics/<file>#<label>`. A change that changed
/// nothing is `noop: true` with the unchanged revision, no changed file, and nothing committed
/// (`memory_committed`, `git_committed` false). The git outcome is the install's own observer
/// report.
pub fn update_result(outcome: &scriptorium_txn::UpdateOutcome) -> serde_json::Value {
    let installed = &outcome.installed;
    let after = crate::memory::after(installed);
    let evidence: serde_json::Map<String, serde_json::Value> = installed
        .evidence_ids
        .iter()
        .map(|e| (format!("topics/{}#{}", e.path, e.label), e.id.clone().into()))
        .collect();
    let (git_committed, git_commit) = if installed.noop {
        (false, None)
    } else {
        (after.git_commit.is_some(), after.git_commit.clone())
    };
    serde_json::json!({
        "ok": true,
        "noop": installed.noop,
        "revision": installed.revision.as_str(),
        "source_ids": outcome.source_ids,
        "block_ids": installed.block_ids,
        "evidence_ids": evidence,
        "changed_files": installed.changed_files,
        // Files edited outside any transaction that this install recorded with the change
        // (they are in its commit too): a change of nothing can still take them in.
        "adopted": installed.adopted,
        "memory_committed": !installed.noop,
        "git_committed": git_committed,
        "git_commit": git_commit,
    })
}

/// The status's `pending_turns`: the eligible records (the branches of every live tip, across
/// every session) that lack the marker of workspace `workspace_id` — a plain count, not the
/// suffix walk; `None` when the count fails.
pub fn pending_turns(
    store: &dyn scriptorium_session_dag::SessionStore,
    workspace_id: &str,
) -> Option<usize> {
    use scriptorium_markers::{WorkspaceId, is_marked, is_record};
    use scriptorium_session_dag::Page;
    let workspace = WorkspaceId::parse(workspace_id).ok()?;
    let mut total = 0;
    let mut offset = 0;
    loop {
        let page = store.list_sessions(Page { offset, limit: 500 }).ok()?;
        for session in &page {
            let mut seen = std::collections::BTreeSet::new();
            for tip in store.tips(&session.id).ok()? {
                for node in store.branch(&session.id, Some(&tip)).ok()? {
                    if is_record(&node) && !is_marked(&node, &workspace) {
                        seen.insert(node.id.0);
                    }
                }
            }
            total += seen.len();
        }
        if page.len() < 500 {
            return Some(total);
        }
        offset += page.len();
    }
}
