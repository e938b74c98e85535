//! [`LocalBackend`]: the nine methods over the crates below — the memory workspace (views,
//! git, index), the session store, and the writer.
//!
//! Key decision: the per-turn methods are cheap and never block on the writer. `system_prompt`
//! serves the rendered `core.md` from a cache keyed by the installed revision (one `stat` per
//! call); `search` is one index query; `write` runs the writer on a blocking thread
//! (`spawn_blocking`), never on the async executor.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use scriptorium_markers::record;
use scriptorium_search::{Query, fence, recall_text};
use scriptorium_session_dag::{Node, SessionId, SessionStore};
use scriptorium_topics_format::parse_tree;
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_txn::{LockTimeout, Revision};
use scriptorium_workspace_fs::RealFs;
use scriptorium_workspace_fs::read::{FsSources, read_in, read_topics};
use scriptorium_writer::{
    FailureCode, Model, OrganizeReport, WriteFailure, WriteReport, Writer, WriterConfig,
    archive_record, source_id,
};
use serde::Serialize;

use crate::config::Config;
use crate::interface::{MemoryBackend, WriteOutcome};
use crate::memory::{Error, MemoryWorkspace};
use crate::runtime::status::WriterStatus;
use crate::sessions::Sessions;

/// The local backend of one home (`<home>/memory`, `<home>/sessions`).
#[derive(Clone)]
pub struct LocalBackend {
    inner: Arc<Inner>,
}

struct Inner {
    home: PathBuf,
    config: Config,
    memory: MemoryWorkspace,
    store: Sessions,
    writer: Writer,
    initialized: Mutex<BTreeSet<SessionId>>,
    core: Mutex<Option<(Revision, String)>>,
}

impl std::fmt::Debug for LocalBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBackend").field("home", &self.inner.home).finish_non_exhaustive()
    }
}

/// Why the backend cannot open.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `memory.backend = "none"`.
    #[error("memory is disabled by memory.backend=none")]
    Disabled,
    /// The workspace cannot be opened or created.
    #[error(transparent)]
    Memory(#[from] Error),
    /// The session store cannot be opened.
    #[error("cannot open the session store: {0}")]
    Sessions(#[from] scriptorium_session_dag::Error),
}

/// What [`LocalBackend::status`] reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackendStatus {
    /// The backend name.
    pub backend: &'static str,
    /// The installed revision.
    pub revision: String,
    /// Eligible records (head branches and live tips of every session) without this
    /// workspace's marker; `None` when the count failed.
    pub pending_turns: Option<usize>,
    /// The model that writes.
    pub model: String,
    /// The last write outcome (`.scriptorium/writer-status.json`).
    pub writer: serde_json::Value,
}

impl LocalBackend {
    /// Opens (creating when missing) the workspace and the session store under `home`, with
    /// the writer `model`.
    pub fn open(home: &Path, config: Config, model: Arc<dyn Model>) -> Result<Self, OpenError> {
        if !config.enabled() {
            return Err(OpenError::Disabled);
        }
        let mut memory = MemoryWorkspace::open(home.join("memory"), true)?;
        // Per-turn recall looks for outside edits at most once a second (a stat of each file).
        memory.set_outside_check_interval(std::time::Duration::from_secs(1));
        if let Ok(redactor) = config.redactor() {
            memory.set_redactor(redactor);
        }
        let store = Sessions::open(home, &config)?;
        let writer_config = WriterConfig {
            threshold_tokens: config.memory.writer.trigger_tokens,
            max_turns: config.memory.writer.max_turns,
            max_tokens_per_day: config.memory.writer.max_tokens_per_day,
            ..WriterConfig::default()
        };
        let writer = Writer::new(memory.workspace().clone(), store.shared(), model, writer_config)
            .with_redactor(memory.redactor().clone());
        Ok(LocalBackend {
            inner: Arc::new(Inner {
                home: home.to_path_buf(),
                config,
                memory,
                store,
                writer,
                initialized: Mutex::new(BTreeSet::new()),
                core: Mutex::new(None),
            }),
        })
    }

    /// The memory workspace.
    pub fn memory(&self) -> &MemoryWorkspace {
        &self.inner.memory
    }

    /// The session store (the one `[sessions] store` names; see [`crate::sessions`]).
    pub fn store(&self) -> &Sessions {
        &self.inner.store
    }

    /// The door through which transcripts enter this home's session store.
    pub fn intake(&self) -> crate::intake::Intake {
        let redactor = self.inner.memory.redactor().clone();
        crate::intake::Intake::new(self.inner.memory.workspace().root(), redactor)
    }

    /// The writer.
    pub fn writer(&self) -> &Writer {
        &self.inner.writer
    }

    /// The home.
    pub fn home(&self) -> &Path {
        &self.inner.home
    }

    /// The fenced core block, served from the rendered `core.md` (cached per revision).
    pub fn core_block(&self) -> String {
        if !self.inner.config.memory.core.inject {
            return String::new();
        }
        let ws = self.inner.memory.workspace();
        let Ok(revision) = ws.installed_revision() else { return String::new() };
        let mut cache = self.inner.core.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((cached, text)) = cache.as_ref()
            && *cached == revision
        {
            return text.clone();
        }
        let text = injected_core_at(ws.root());
        *cache = Some((revision, text.clone()));
        text
    }

    /// The search scope of `project` over this backend's sessions (see
    /// [`crate::project::project_scope`]).
    pub fn project_scope(
        &self,
        project: &str,
        with_sources: bool,
    ) -> Result<scriptorium_search::ProjectScope, scriptorium_session_dag::Error> {
        let store: &dyn SessionStore = &**self.store();
        crate::project::project_scope(Some(store), project, with_sources)
    }

    /// The sessions of the archives `hits` come from ([`crate::hits::labels`]); empty (with a
    /// warning) when the store cannot be listed: records are then named by their archives.
    pub fn session_labels(
        &self,
        hits: &[scriptorium_search::Hit],
    ) -> std::collections::BTreeMap<String, crate::hits::SessionLabel> {
        crate::hits::labels_or_warn(crate::hits::labels(&*self.inner.store, hits))
    }

    /// Recall for one turn, fenced (topic blocks only; empty when nothing is relevant).
    pub fn recall(&self, query: &str) -> String {
        let mut q = Query::new(query);
        q.top_k = self.inner.config.memory.recall.top_k;
        q.include_sources = false;
        match self.inner.memory.search(&q) {
            Ok(hits) => fence(&recall_text(&hits)),
            Err(error) => {
                tracing::warn!(%error, "memory search failed");
                String::new()
            }
        }
    }

    /// The backend's status, with `pending_turns`.
    pub fn status(&self) -> BackendStatus {
        let ws = self.inner.memory.workspace();
        BackendStatus {
            backend: "local",
            revision: ws.installed_revision().map(|r| r.as_str().to_owned()).unwrap_or_default(),
            pending_turns: self.pending_turns(),
            model: self.inner.writer.model_name(),
            writer: WriterStatus::load(ws.root()).to_json(),
        }
    }

    /// The status every face answers ([`crate::summary::memory_status`] with this backend's
    /// session store).
    pub fn memory_status(
        &self,
    ) -> Result<crate::summary::MemoryStatus, crate::summary::StatusError> {
        crate::summary::memory_status(&self.inner.memory, Some(&*self.inner.store))
    }

    fn pending_turns(&self) -> Option<usize> {
        let id = self.inner.memory.workspace().workspace_id();
        crate::summary::pending_turns(&*self.inner.store, id.as_str())
    }

    /// Records a write's outcome in `.scriptorium/writer-status.json` (best effort).
    fn record_outcome(&self, session: &SessionId, outcome: &WriteOutcome) {
        WriterStatus::record_outcome(self.inner.memory.workspace().root(), session, outcome);
    }

    /// `messages` as they may be stored: redacted by the workspace's redactor (the door of an
    /// agent runtime's turns), the counts added to the totals.
    fn redacted(&self, messages: &[Node]) -> Vec<Node> {
        let mut messages = messages.to_vec();
        let counts = crate::privacy::redact_nodes(self.inner.memory.redactor(), &mut messages);
        crate::privacy::record(self.inner.memory.workspace().root(), &counts);
        messages
    }

    /// Adds the nodes of `messages` (already redacted) the store does not hold yet (in order);
    /// the last one added becomes the session's head.
    fn add_messages(&self, session: &SessionId, messages: &[Node]) -> Result<(), WriteFailure> {
        let store = &*self.inner.store;
        let mut new = Vec::new();
        for node in messages {
            match store.node(session, &node.id) {
                Ok(Some(_)) => {}
                Ok(None) => new.push(node.clone()),
                Err(e) => return Err(unavailable(e)),
            }
        }
        let Some(last) = new.last().map(|n| n.id.clone()) else { return Ok(()) };
        store.append_batch(session, new).map_err(unavailable)?;
        // The newest message is where the conversation is now (append_batch keeps the head).
        store.set_head(session, &last).map_err(unavailable)
    }

    /// The blocking body of `extract_before_discard`.
    fn extract_blocking(&self, session: &SessionId, messages: &[Node]) -> String {
        let messages = &self.redacted(messages)[..];
        if let Err(failure) = self.add_messages(session, messages) {
            tracing::warn!(%failure, "extract_before_discard could not store the messages");
            return String::new();
        }
        let records: Vec<_> =
            messages.iter().filter_map(record).map(|n| archive_record(session, &n)).collect();
        if !records.is_empty()
            && let Err(error) =
                self.inner.memory.workspace().archive_sources(&records, LockTimeout::default())
        {
            tracing::warn!(%error, "extract_before_discard could not archive the messages");
        }
        let wanted: BTreeSet<String> = messages.iter().map(|n| source_id(session, &n.id)).collect();
        let root = self.inner.memory.workspace().root();
        let Ok(files) = read_topics(root) else { return String::new() };
        let parsed = parse_tree(&files, &ArchiveResolver::new(FsSources::new(root)));
        let cited: Vec<&str> = parsed
            .units
            .iter()
            .filter(|u| u.refs.iter().any(|r| wanted.contains(r)))
            .map(|u| u.content.as_str())
            .collect();
        fence(&cited.join("\n\n"))
    }
}

/// The fenced core block of the workspace at `root`, as the system prompt receives it: its
/// rendered `core.md` (never read through a symlink: a link injects nothing) through
/// [`injected_core`].
pub fn injected_core_at(root: &Path) -> String {
    let rendered = read_in(&RealFs, root, "core.md")
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default();
    injected_core(&rendered)
}

/// Archives the records of `session` that are not yet written into memory (those after the
/// last marked one, from the head), as `extract_before_discard` does before a compaction drops
/// them from an agent's context. Idempotent: records already archived are not appended again.
/// Returns how many records were offered.
///
/// # Errors
/// The session store or the archive failed (`archive_sources` waits for the write lock).
pub fn archive_unwritten(
    memory: &MemoryWorkspace,
    store: &dyn SessionStore,
    session: &SessionId,
) -> Result<usize, String> {
    let workspace = memory.workspace();
    let pending = scriptorium_markers::pending(store, session, None, workspace.workspace_id())
        .map_err(|e| e.to_string())?;
    let records: Vec<_> = pending.iter().map(|n| archive_record(session, n)).collect();
    if !records.is_empty() {
        workspace.archive_sources(&records, LockTimeout::default()).map_err(|e| e.to_string())?;
    }
    Ok(records.len())
}

/// What the system prompt receives of a rendered core block: its compact form (no footnote
/// definitions, citations, block IDs or link targets; `scriptorium_views::compact`), fenced
/// once — nothing when it is only headings or empty.
pub fn injected_core(rendered: &str) -> String {
    let compact = scriptorium_views::compact(rendered);
    let has_body = compact.lines().any(|l| !l.trim().is_empty() && !l.starts_with("# "));
    if has_body { fence(&compact) } else { String::new() }
}

fn unavailable(error: scriptorium_session_dag::Error) -> WriteFailure {
    WriteFailure::permanent(FailureCode::SessionNodesUnavailable, error.to_string())
}

fn join_failure(error: tokio::task::JoinError) -> WriteFailure {
    WriteFailure::permanent(
        FailureCode::WriterFailureUnknown,
        format!("the writer task failed: {error}"),
    )
}

#[async_trait]
impl MemoryBackend for LocalBackend {
    fn name(&self) -> &str {
        "local"
    }

    async fn is_available(&self) -> bool {
        self.inner.memory.workspace().installed_revision().is_ok()
    }

    async fn initialize(&self, session: &SessionId) {
        self.inner
            .initialized
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.clone());
    }

    async fn system_prompt(&self) -> String {
        self.core_block()
    }

    async fn search(&self, query: &str) -> String {
        self.recall(query)
    }

    async fn write(&self, session: &SessionId, messages: &[Node], force: bool) -> WriteOutcome {
        if !self.inner.config.memory.writer.enabled {
            return Ok(WriteReport { session: session.0.clone(), batches: Vec::new() });
        }
        let this = self.clone();
        let session = session.clone();
        let messages = messages.to_vec();
        tokio::task::spawn_blocking(move || {
            let messages = this.redacted(&messages);
            let outcome = this
                .add_messages(&session, &messages)
                .and_then(|()| this.inner.writer.write(&session, force));
            this.record_outcome(&session, &outcome);
            outcome
        })
        .await
        .map_err(join_failure)?
    }

    async fn extract_before_discard(&self, session: &SessionId, messages: &[Node]) -> String {
        let this = self.clone();
        let session = session.clone();
        let messages = messages.to_vec();
        tokio::task::spawn_blocking(move || this.extract_blocking(&session, &messages))
            .await
            .unwrap_or_default()
    }

    async fn reorganize(&self) -> OrganizeReport {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.inner.writer.reorganize()).await.unwrap_or_else(
            |error| OrganizeReport {
                status: "failed".into(),
                topics: 0,
                changed_files: Vec::new(),
                error: Some(join_failure(error)),
            },
        )
    }

    /// Flushes what is owed: a forced write of every session this backend initialized.
    async fn shutdown(&self) {
        let sessions: Vec<SessionId> = self
            .inner
            .initialized
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        for session in sessions {
            if let Err(failure) = self.write(&session, &[], true).await {
                tracing::warn!(session = %session.0, %failure, "final write failed");
            }
        }
    }
}
