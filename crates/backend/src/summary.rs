//! What a workspace holds and whether its history is in step: the one status computation the
//! CLI (`scriptorium status`), the REST API (`GET /api/memory/status`) and the MCP tool
//! (`memory_status`) share ([`memory_status`]), and the one shape of a change's result
//! ([`ChangeResult`]). Both types derive `JsonSchema`: the MCP tools declare them as their
//! output schemas, so what a face answers and what it advertises are one type.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use scriptorium_session_dag::SessionStore;
use scriptorium_topics_format::source::{ArchiveResolver, scan};
use scriptorium_topics_format::topic::parse_tree;
use scriptorium_workspace_fs::is_internal_path;
use scriptorium_workspace_fs::read::{FsSources, read_topics};
use scriptorium_workspace_fs::{FileKind, Fs as _, RealFs, walk};
use serde::Serialize;

use crate::memory::MemoryWorkspace;
use crate::runtime::{Outcome, WriterStatus};

/// The git side of [`WorkspaceStatus`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
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

/// The status every face answers (`scriptorium status --json`, `GET /api/memory/status`, the
/// MCP tool `memory_status`): the workspace's [`WorkspaceStatus`] with where it lives, the
/// turns not yet written into memory and how the last write ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MemoryStatus {
    /// Always `true` (a failure is the error document instead).
    #[schemars(extend("const" = true))]
    pub ok: bool,
    /// The workspace, its revision, counts and git state.
    #[serde(flatten)]
    pub workspace: WorkspaceStatus,
    /// The memory root on disk.
    pub workspace_path: String,
    /// Records of the session store not yet written into memory (every live branch of every
    /// session); `null` when the count failed.
    pub pending_turns: Option<usize>,
    /// How the last write ended, whatever ran it.
    pub writer: WriterState,
    /// Edits made to `topics/` or `sources/` outside a transaction that the status took in
    /// first (or found invalid), as a search reports them; absent when there were none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_edits: Option<OutsideEdits>,
    /// What the doors redacted before storing anything, by rule (never a value).
    pub redactions: crate::privacy::RedactionTotals,
}

/// Edits made outside any transaction, as a status found them (see
/// [`crate::memory::Adoption`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OutsideEdits {
    /// Whether they were installed as one transaction (`false`: they do not validate).
    pub adopted: bool,
    /// The edited files (`topics/…`, `sources/…`).
    pub files: Vec<String>,
    /// The revision the adoption installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Its git commit, when one was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// How many violations validation found (refused edits; absent when these very edits were
    /// refused before and not validated again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub violations: Option<usize>,
}

impl OutsideEdits {
    /// What a status says of `adoption` (`None`: nothing to say).
    pub fn of(adoption: &crate::memory::Adoption) -> Option<OutsideEdits> {
        use crate::memory::Adoption;
        match adoption {
            Adoption::Installed { files, installed } => Some(OutsideEdits {
                adopted: true,
                files: files.clone(),
                revision: Some(installed.revision.as_str().to_owned()),
                git_commit: crate::memory::after(installed).git_commit,
                violations: None,
            }),
            Adoption::Refused { files, violations } => Some(OutsideEdits {
                adopted: false,
                files: files.clone(),
                revision: None,
                git_commit: None,
                violations: *violations,
            }),
            Adoption::Nothing | Adoption::Busy => None,
        }
    }
}

/// How the last write ended ([`WriterStatus`], `.scriptorium/writer-status.json`), as the
/// status shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct WriterState {
    /// `success`, `failure`, or `null` before the first write.
    pub last_outcome: Option<WriteOutcome>,
    /// When a write last succeeded (RFC 3339), if ever.
    pub last_success_at: Option<String>,
    /// The last failed write, if any (kept after a later success).
    pub last_failure: Option<WriteFailureState>,
}

/// How a write ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WriteOutcome {
    /// Everything owed was written, or nothing was owed.
    Success,
    /// The write failed.
    Failure,
}

/// The last failed write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct WriteFailureState {
    /// When it failed (RFC 3339).
    pub at: String,
    /// Its stable code (`COMMIT_REJECTED`, `WRITER_NO_PROGRESS`, `MODEL_TIMEOUT`, …).
    pub reason_code: String,
    /// Whether retrying later can help.
    pub retryable: bool,
}

impl WriterState {
    /// The state of the writer status file.
    pub fn of(status: &WriterStatus) -> WriterState {
        let json = status.to_json();
        let text = |value: &serde_json::Value| value.as_str().map(str::to_owned);
        WriterState {
            last_outcome: status.last_outcome.map(|outcome| match outcome {
                Outcome::Success => WriteOutcome::Success,
                Outcome::Failure => WriteOutcome::Failure,
            }),
            last_success_at: text(&json["last_success_at"]),
            last_failure: status.last_failure.map(|failure| WriteFailureState {
                at: text(&json["last_failure"]["at"]).unwrap_or_default(),
                reason_code: failure.reason_code.as_str().to_owned(),
                retryable: failure.retryable,
            }),
        }
    }
}

/// The status of `memory` with the pending turns of `store` (`None`: no session store yet,
/// so nothing is pending).
pub fn memory_status(
    memory: &MemoryWorkspace,
    store: Option<&dyn SessionStore>,
) -> Result<MemoryStatus, StatusError> {
    // Edits made outside any transaction are taken in first, as a search does: the revision
    // reported is then the one the next update is compared against, so status → search →
    // update never conflicts with itself.
    let adoption = memory.adopt_outside_edits()?;
    let workspace = workspace_status(memory)?;
    let root = memory.workspace().root();
    let pending_turns = match store {
        Some(store) => pending_turns(store, &workspace.workspace),
        None => Some(0),
    };
    Ok(MemoryStatus {
        ok: true,
        workspace_path: root.display().to_string(),
        pending_turns,
        writer: WriterState::of(&WriterStatus::load(root)),
        outside_edits: OutsideEdits::of(&adoption),
        redactions: crate::privacy::totals(root),
        workspace,
    })
}

/// [`memory_status`] with the session store the configuration of `home` names (the faces that
/// hold no store of their own: the CLI and the MCP server). A store or configuration that
/// cannot be opened makes `pending_turns` `null`, logged, never a failed status.
pub fn memory_status_in(
    home: &Path,
    memory: &MemoryWorkspace,
) -> Result<MemoryStatus, StatusError> {
    let store = crate::Config::load(home).map_err(|error| error.to_string()).and_then(|config| {
        crate::sessions::Sessions::open_existing(home, &config).map_err(|e| e.to_string())
    });
    match store {
        Ok(store) => memory_status(memory, store.as_deref().map(|s| s as &dyn SessionStore)),
        Err(error) => {
            tracing::warn!(%error, "the session store could not be opened: pending turns unknown");
            let mut status = memory_status(memory, None)?;
            status.pending_turns = None;
            Ok(status)
        }
    }
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

/// The success shape of a change on every face (the CLI's `update --json` and `note --json`,
/// `POST /api/memory/changes` and `/notes`, the MCP tools `memory_update` and `memory_note`).
/// A change that changed nothing is `noop: true` with the unchanged revision, no changed file,
/// and nothing committed. The git outcome is the install's own observer report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ChangeResult {
    /// Always `true` (a refusal is the error document instead).
    #[schemars(extend("const" = true))]
    pub ok: bool,
    /// Whether nothing changed (no revision, no commit).
    pub noop: bool,
    /// The installed revision: the `base_revision` of the next change.
    pub revision: String,
    /// Each declared `new-source-…` label and the source ID it was archived under.
    pub source_ids: BTreeMap<String, String>,
    /// The block IDs assigned, keyed `topics/<file>#<k>`.
    pub block_ids: BTreeMap<String, String>,
    /// The evidence IDs minted, keyed `topics/<file>#<label>`.
    pub evidence_ids: BTreeMap<String, String>,
    /// What a user sees changed: topic files, archives and the derived views the same commit
    /// rewrote (never internal state); see [`changed_files`].
    pub changed_files: Vec<String>,
    /// Files edited outside any transaction that this install recorded with the change.
    pub adopted: Vec<String>,
    /// Whether the memory moved to a new revision.
    pub memory_committed: bool,
    /// Whether a git commit records it.
    pub git_committed: bool,
    /// That commit, if one was made.
    pub git_commit: Option<String>,
    /// `memory_note` only: the same note is already there (nothing was added).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_noted: Option<bool>,
    /// `memory_note` only: the topic file that holds the note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_path: Option<String>,
    /// What the door redacted from the request's texts before anything stored them, by rule
    /// (never a value); absent when nothing was.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub redactions: BTreeMap<String, usize>,
}

/// What a user sees an install changed: its topic files and archives with the derived views the
/// same commit rewrote (`core.md`, `timeline/…`, `recent_events.jsonl`, `relations.json`),
/// sorted, never an internal path (`.scriptorium/…`, see `docs/format.md#internal-paths`).
pub fn changed_files(installed: &scriptorium_txn::Installed) -> Vec<String> {
    if installed.noop {
        return Vec::new();
    }
    let after = crate::memory::after(installed);
    let files: std::collections::BTreeSet<&String> = installed
        .changed_files
        .iter()
        .chain(&after.views_changed)
        .filter(|path| !is_internal_path(path))
        .collect();
    files.into_iter().cloned().collect()
}

/// The [`ChangeResult`] of an update (evidence keyed `topics/<file>#<label>`).
pub fn change_result(outcome: &scriptorium_txn::UpdateOutcome) -> ChangeResult {
    let installed = &outcome.installed;
    let after = crate::memory::after(installed);
    let evidence_ids = installed
        .evidence_ids
        .iter()
        .map(|e| (format!("topics/{}#{}", e.path, e.label), e.id.clone()))
        .collect();
    let git_commit = if installed.noop { None } else { after.git_commit.clone() };
    ChangeResult {
        ok: true,
        noop: installed.noop,
        revision: installed.revision.as_str().to_owned(),
        source_ids: outcome.source_ids.clone(),
        block_ids: installed
            .block_ids
            .iter()
            .map(|(key, id)| (key.clone(), id.as_str().to_owned()))
            .collect(),
        evidence_ids,
        changed_files: changed_files(installed),
        // Files edited outside any transaction that this install recorded with the change
        // (they are in its commit too): a change of nothing can still take them in.
        adopted: installed.adopted.clone(),
        memory_committed: !installed.noop,
        git_committed: git_commit.is_some(),
        git_commit,
        already_noted: None,
        topic_path: None,
        redactions: BTreeMap::new(),
    }
}

/// The status's `pending_turns`: the eligible records (the branches of every live tip, across
/// every session) that lack the marker of workspace `workspace_id` — a plain count, not the
/// suffix walk, summed over [`crate::conversations::session_pending`] (the Sessions view's
/// count); `None` when the count fails.
pub fn pending_turns(
    store: &dyn scriptorium_session_dag::SessionStore,
    workspace_id: &str,
) -> Option<usize> {
    use scriptorium_markers::WorkspaceId;
    use scriptorium_session_dag::Page;
    let workspace = WorkspaceId::parse(workspace_id).ok()?;
    let mut total = 0;
    let mut offset = 0;
    loop {
        let page = store.list_sessions(Page { offset, limit: 500 }).ok()?;
        for session in &page {
            total +=
                crate::conversations::session_pending(store, &session.id, Some(&workspace)).ok()?;
        }
        if page.len() < 500 {
            return Some(total);
        }
        offset += page.len();
    }
}
