//! The session data model: IDs, nodes, sessions, and the [`SessionStore`] trait.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The stable ID of a session (e.g. a Claude Code `sessionId`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(pub String);

/// The stable ID of a node, unique within its session.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub String);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl SessionId {
    /// The ID as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl NodeId {
    /// The ID as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Milliseconds since the Unix epoch, UTC.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The time as RFC 3339 in UTC with millisecond precision (`2024-03-15T09:30:00.000Z`), or
    /// `None` when it is outside the years 0000–9999.
    pub fn to_rfc3339(self) -> Option<String> {
        let nanos = i128::from(self.0).checked_mul(1_000_000)?;
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(nanos).ok()?;
        let format = time::macros::format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
        );
        at.format(&format).ok()
    }
}

/// Who produced a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person (or the runtime speaking as them).
    User,
    /// The model.
    Assistant,
    /// System or developer instructions and runtime notices.
    System,
    /// Tool output.
    Tool,
}

impl Role {
    /// The stable name (as serialized): `user`, `assistant`, `system`, `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        }
    }
}

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A conversational message.
    Message,
    /// A tool call made by the model.
    ToolCall,
    /// The result of a tool call.
    ToolResult,
    /// A turn the runtime scheduled for itself (a sub-agent report, a merge prompt, …).
    Runtime,
    /// A summary that replaced earlier context at a compaction.
    CompactionSummary,
}

impl NodeKind {
    /// The stable name (as serialized): `message`, `tool_call`, `tool_result`, `runtime`,
    /// `compaction_summary`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Message => "message",
            NodeKind::ToolCall => "tool_call",
            NodeKind::ToolResult => "tool_result",
            NodeKind::Runtime => "runtime",
            NodeKind::CompactionSummary => "compaction_summary",
        }
    }
}

/// A trusted speaker identity, set by the runtime or importer, never parsed from content.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Speaker {
    /// The stable speaker ID (e.g. `owner/local`).
    pub id: String,
    /// How the speaker is shown (e.g. `Owner`).
    pub display: String,
}

/// One node of a session DAG.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Stable ID, unique within the session.
    pub id: NodeId,
    /// The predecessor; `None` for a root.
    pub parent: Option<NodeId>,
    /// Who produced it.
    pub role: Role,
    /// What it is.
    pub kind: NodeKind,
    /// The trusted speaker, if known.
    pub speaker: Option<Speaker>,
    /// The text.
    pub content: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// String metadata (e.g. the written marker `memory_written_scriptorium`).
    pub metadata: BTreeMap<String, String>,
    /// Whether the node was rewound (abandoned by an edit); rewound nodes are skipped by branches.
    pub rewound: bool,
}

/// The metadata key of the written marker (`memory_written_scriptorium = <workspace id>`, see
/// `docs/format.md#written-markers`); the per-workspace marker is this key, `:` and the
/// workspace ID. The markers crate owns their meaning; the store knows the names only so that a
/// forget keeps them ([`is_marker_key`]).
pub const WRITTEN_MARKER_KEY: &str = "memory_written_scriptorium";

/// The metadata key a forget sets (to `"1"`) on every node whose content it erased
/// ([`SessionStore::forget`]).
pub const FORGOTTEN_KEY: &str = "forgotten";

/// Whether a metadata key is a written marker (`memory_written_scriptorium`, or
/// `memory_written_scriptorium:<workspace id>`): the only keys a forget keeps.
pub fn is_marker_key(key: &str) -> bool {
    key.strip_prefix(WRITTEN_MARKER_KEY)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
}

/// A node's metadata as a forget leaves it: the written markers ([`is_marker_key`]) and
/// [`FORGOTTEN_KEY`] = `"1"`.
pub fn forgotten_metadata(metadata: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut kept: BTreeMap<String, String> = metadata
        .iter()
        .filter(|(key, _)| is_marker_key(key))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    kept.insert(FORGOTTEN_KEY.to_owned(), "1".to_owned());
    kept
}

impl Node {
    /// Whether a forget erased this node ([`FORGOTTEN_KEY`] is `"1"`).
    pub fn is_forgotten(&self) -> bool {
        self.metadata.get(FORGOTTEN_KEY).is_some_and(|v| v == "1")
    }

    /// The node as [`SessionStore::forget`] leaves it: the same ID, parent, role, kind,
    /// creation time and rewound flag; no content and no speaker; of its metadata only the
    /// written markers ([`is_marker_key`]), plus [`FORGOTTEN_KEY`] = `"1"`.
    pub fn forgotten(&self) -> Node {
        Node {
            id: self.id.clone(),
            parent: self.parent.clone(),
            role: self.role,
            kind: self.kind,
            speaker: None,
            content: String::new(),
            created_at: self.created_at,
            metadata: forgotten_metadata(&self.metadata),
            rewound: self.rewound,
        }
    }
}

/// A session: its head and when it last changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The session ID.
    pub id: SessionId,
    /// The current head node, if any node exists.
    pub head: Option<NodeId>,
    /// When a node was last appended or the head last moved. Metadata merges do not move it.
    pub updated_at: Timestamp,
    /// A human title, if known.
    pub title: Option<String>,
    /// The project the session worked in: the git root of its working directory (else the
    /// directory), when the transcript names one (see [`crate::import::project_of`]).
    pub project: Option<String>,
}

/// One page of [`SessionStore::list_sessions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// How many sessions to skip (newest first).
    pub offset: usize,
    /// At most how many to return.
    pub limit: usize,
}

/// Metadata patches keyed by node: each patch's keys are set (merged) on that node.
pub type MetadataBatch = BTreeMap<NodeId, BTreeMap<String, String>>;

/// A store of session DAGs.
///
/// Every method that changes state is durable when it returns (the embedded store fsyncs).
pub trait SessionStore {
    /// Appends `node` to `session`, creating the session if needed, and makes it the head.
    /// Appending a node whose ID already exists in the session is an error
    /// ([`crate::Error::DuplicateNode`]); importers check [`SessionStore::node`] first.
    fn append(&self, session: &SessionId, node: Node) -> Result<(), crate::Error>;

    /// Appends, in order, every node of `nodes` whose ID is not yet in `session` (creating the
    /// session if needed), with one fsync for the whole batch, and returns how many were appended.
    /// Existing nodes are left untouched (their metadata, markers included, is kept), so
    /// re-importing a transcript is idempotent. The head moves only when the session had none
    /// (then it is the last appended node); `updated_at` becomes the newest `created_at` seen.
    fn append_batch(&self, session: &SessionId, nodes: Vec<Node>) -> Result<usize, crate::Error>;

    /// Moves the head of `session` to `node` (moving it to the current head changes nothing).
    fn set_head(&self, session: &SessionId, node: &NodeId) -> Result<(), crate::Error>;

    /// [`SessionStore::set_head`] as of `at` rather than now: an importer moving the head to
    /// where a transcript left it, so that `updated_at` stays the transcript's own time. The
    /// default implementation is [`SessionStore::set_head`].
    fn set_head_at(
        &self,
        session: &SessionId,
        node: &NodeId,
        at: Timestamp,
    ) -> Result<(), crate::Error> {
        let _ = at;
        self.set_head(session, node)
    }

    /// Marks `node` (and so the branch through it) as rewound.
    fn rewind(&self, session: &SessionId, node: &NodeId) -> Result<(), crate::Error>;

    /// The nodes from the root to `tip` (default: the head), oldest first, skipping rewound nodes.
    fn branch(&self, session: &SessionId, tip: Option<&NodeId>) -> Result<Vec<Node>, crate::Error>;

    /// The live branch tips of `session`, the head's tip first, then newest first.
    fn tips(&self, session: &SessionId) -> Result<Vec<NodeId>, crate::Error>;

    /// One node, if it exists.
    fn node(&self, session: &SessionId, node: &NodeId) -> Result<Option<Node>, crate::Error>;

    /// Merges metadata patches into nodes. Costs O(batch), appends no node and does not change
    /// `updated_at`.
    fn merge_metadata(
        &self,
        session: &SessionId,
        batch: &MetadataBatch,
    ) -> Result<(), crate::Error>;

    /// One session, if it exists.
    fn session(&self, session: &SessionId) -> Result<Option<Session>, crate::Error>;

    /// Sessions ordered by `updated_at`, newest first.
    fn list_sessions(&self, page: Page) -> Result<Vec<Session>, crate::Error>;

    /// Visits `tip`, then its ancestors nearest first (rewound nodes included), until `visit`
    /// returns `false` or the walk reaches a root or a parent missing from the session. Returns
    /// `false` when `tip` (or the session) does not exist.
    ///
    /// The default implementation reads one node at a time through [`SessionStore::node`], so
    /// its cost is one `node` read per visited node; a store may override it to walk without
    /// copying nodes (the embedded store does). Either way the walk never materialises the
    /// branch.
    fn walk_ancestors(
        &self,
        session: &SessionId,
        tip: &NodeId,
        visit: &mut dyn FnMut(&Node) -> bool,
    ) -> Result<bool, crate::Error> {
        let Some(mut node) = self.node(session, tip)? else { return Ok(false) };
        loop {
            if !visit(&node) {
                return Ok(true);
            }
            let Some(parent) = node.parent.take() else { return Ok(true) };
            match self.node(session, &parent)? {
                Some(next) => node = next,
                None => return Ok(true),
            }
        }
    }

    /// Every node of `session` in append order, rewound ones included, with their metadata
    /// (empty for an unknown session): what a copy to another store, or a scan of every node
    /// (a forget by matching text), needs. Costs one read of the whole session.
    ///
    /// The default implementation reports [`crate::Error::Unsupported`].
    fn nodes(&self, session: &SessionId) -> Result<Vec<Node>, crate::Error> {
        let _ = session;
        Err(crate::Error::Unsupported { operation: "nodes" })
    }

    /// Erases the content of `nodes` of `session` (a forget): each node keeps its id, parent,
    /// role, kind, created_at and rewound flag; its content becomes empty, its speaker `None`,
    /// and its metadata keeps only the written markers (`memory_written_scriptorium` and the
    /// per-workspace `memory_written_scriptorium:<id>` keys) plus `forgotten = "1"` (see
    /// [`Node::forgotten`]). With `erase_title`, the session's title goes too (every title the
    /// store ever recorded for it). Nodes the session does not hold are ignored. Idempotent.
    /// Atomic per session (all of `nodes` or none). Returns how many nodes changed.
    ///
    /// Unlike every other write, the old bytes do not survive it: the embedded store rewrites
    /// the session's log, PostgreSQL updates the rows in place (see each store for what the
    /// disk may still hold). A forgotten node is never brought back by
    /// [`SessionStore::append_batch`] (its ID exists), and `updated_at` does not move. A
    /// session that does not exist is [`crate::Error::SessionNotFound`].
    ///
    /// The default implementation reports [`crate::Error::Unsupported`].
    fn forget(
        &self,
        session: &SessionId,
        nodes: &[NodeId],
        erase_title: bool,
    ) -> Result<usize, crate::Error> {
        let _ = (session, nodes, erase_title);
        Err(crate::Error::Unsupported { operation: "forget" })
    }

    /// Rewrites the texts of `session` in place (a redaction of what was stored before it
    /// redacted): every node's content and every title the store holds for the session are
    /// passed to `map`, which returns the new text, or `None` to keep it (returning the same
    /// text keeps it too). Empty texts are not passed: a forgotten node's content stays empty.
    /// Nothing else changes: IDs, parents, roles, kinds, speakers, `created_at`, metadata
    /// (written markers included), rewound flags, the head, `updated_at` and the project.
    ///
    /// Returns how many nodes changed, plus 1 when a title changed (the current one, or one
    /// that only a store keeping superseded titles still holds); 0, with nothing written, when
    /// `map` changes nothing (so a second call with an idempotent `map` returns 0).
    /// Atomic per session (every changed text or none). As with [`SessionStore::forget`], the
    /// old texts do not survive it: the embedded store rewrites the session's log, PostgreSQL
    /// updates the rows in place (see each store for what the disk may still hold). Nodes
    /// keep their IDs, so [`SessionStore::append_batch`] of the same nodes again adds nothing
    /// (their old texts included: a caller that imports again maps them the same way first).
    ///
    /// `map` runs on the calling thread while the store holds the session's lock; it is called
    /// once per stored text, in no promised order. A store that keeps superseded copies passes
    /// those too (the embedded store's log holds every title the session ever had), so `map`
    /// may see one text more than once, and sees superseded titles that
    /// [`SessionStore::session`] no longer shows. A session that does not exist is
    /// [`crate::Error::SessionNotFound`].
    ///
    /// The default implementation reports [`crate::Error::Unsupported`].
    fn rewrite_texts(
        &self,
        session: &SessionId,
        map: &mut dyn FnMut(&str) -> Option<String>,
    ) -> Result<usize, crate::Error> {
        let _ = (session, map);
        Err(crate::Error::Unsupported { operation: "rewrite_texts" })
    }

    /// Sets (or clears) the human title of an existing session. Does not change `updated_at`.
    ///
    /// The default implementation reports [`crate::Error::Unsupported`].
    fn set_title(&self, session: &SessionId, title: Option<String>) -> Result<(), crate::Error> {
        let _ = (session, title);
        Err(crate::Error::Unsupported { operation: "set_title" })
    }

    /// Sets (or clears) the project of an existing session. Does not change `updated_at`.
    ///
    /// The default implementation reports [`crate::Error::Unsupported`].
    fn set_project(
        &self,
        session: &SessionId,
        project: Option<String>,
    ) -> Result<(), crate::Error> {
        let _ = (session, project);
        Err(crate::Error::Unsupported { operation: "set_project" })
    }
}
