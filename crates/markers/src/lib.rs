//! Written markers: which session records have been handed to the memory writer of a workspace,
//! the pending walk, and the branch plan at a session boundary; and what a record is
//! ([`clean`]: the cleaning rules).
//!
//! Key decision: a marker lives on the node (`memory_written_scriptorium = <workspace id>`), not
//! in a position cursor, so forks are handled by walking from a tip toward the root: a new
//! branch off a written trunk is pending from the fork point on, whatever its length, and the
//! walk stops at the newest marked record, so its cost is the unwritten suffix, not the session.
//!
//! The marker value is the workspace ID: a session copied from another machine (another
//! workspace) is written from the start, while a restored backup keeps its marks. Any value
//! other than this workspace's ID — another workspace, or garbage — reads as unmarked. Each mark
//! also sets `memory_written_scriptorium:<workspace id> = 1` ([`workspace_marker_key`]): clones
//! of one memory sharing a session store (PostgreSQL) overwrite each other's value of the
//! shared key, and the per-workspace key keeps every clone's mark.
//!
//! # Limitations
//!
//! - Marks are trusted as a prefix: the walk stops at the newest marked record, so a record
//!   older than it that lost its mark is never offered again (the reference's accepted
//!   trade-off; there is no online prefix check).
//! - A rewound node is not on any branch: its marker neither counts nor stops the walk, exactly
//!   as [`SessionStore::branch`] skips it. A rewound tip is walked from its nearest live
//!   ancestor.
//! - A forgotten node ([`SessionStore::forget`]: its content erased, its markers kept) is no
//!   record, so it is never pending; but its mark still stops the walk, as the record it was
//!   when it was written: forgetting the newest written record makes nothing older pending
//!   again, and the walk still costs the unwritten suffix.
//! - [`boundary_plan`] is computed before anything is written: it assumes each planned branch
//!   is then written (and marked) completely, in order, which is what lets later branches stop
//!   at records an earlier planned branch will mark.
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use scriptorium_markers::{WorkspaceId, mark, pending};
//! use scriptorium_session_dag::{
//!     EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Timestamp,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = EmbeddedStore::open(dir.path())?;
//! let session = SessionId("s1".into());
//! let workspace = WorkspaceId::parse("w-4f21c8e0")?;
//! for (i, parent) in [(1, None), (2, Some("m1")), (3, Some("m2"))] {
//!     store.append(&session, Node {
//!         id: NodeId(format!("m{i}")),
//!         parent: parent.map(|p: &str| NodeId(p.into())),
//!         role: if i % 2 == 1 { Role::User } else { Role::Assistant },
//!         kind: NodeKind::Message,
//!         speaker: None,
//!         content: format!("turn {i}"),
//!         created_at: Timestamp(i),
//!         metadata: BTreeMap::new(),
//!         rewound: false,
//!     })?;
//! }
//! let owed = pending(&store, &session, None, &workspace)?;
//! assert_eq!(owed.len(), 3);
//! mark(&store, &session, &owed[..2], &workspace)?; // the writer took the first two
//! let owed = pending(&store, &session, None, &workspace)?;
//! assert_eq!(owed.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(), ["m3"]);
//! # Ok(())
//! # }
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

pub mod clean;

use scriptorium_session_dag::{
    MetadataBatch, Node, NodeId, NodeKind, Role, SessionId, SessionStore,
};

/// The node metadata key of the written marker (historical and fixed: changing it orphans every
/// existing mark). The session store knows the name too: a forget keeps the markers.
pub const MARKER_KEY: &str = scriptorium_session_dag::WRITTEN_MARKER_KEY;

/// The per-workspace marker key, `memory_written_scriptorium:<workspace id>` (value `1`),
/// written beside [`MARKER_KEY`] so that clones of one memory sharing a session store (see
/// `docs/sync.md#written-once`) keep each its own mark: [`MARKER_KEY`] holds one workspace,
/// the last to mark, and a metadata merge only adds keys.
pub fn workspace_marker_key(workspace: &WorkspaceId) -> String {
    format!("{MARKER_KEY}:{}", workspace.as_str())
}

/// Errors of the marker operations.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The session store failed.
    #[error(transparent)]
    Store(#[from] scriptorium_session_dag::Error),
    /// The session does not exist.
    #[error("session not found: {0}")]
    SessionNotFound(SessionId),
    /// The tip to walk from does not exist in the session.
    #[error("node {node} not found in session {session}")]
    NodeNotFound {
        /// The session.
        session: SessionId,
        /// The node.
        node: NodeId,
    },
    /// The parent links loop (only a store that does not prevent cycles can produce this).
    #[error("the parent links of session {session} loop through node {node}")]
    Cycle {
        /// The session.
        session: SessionId,
        /// A node on the loop.
        node: NodeId,
    },
    /// A workspace ID that is not `w-` followed by 8 lower-case hex digits.
    #[error(transparent)]
    InvalidWorkspaceId(#[from] scriptorium_ids::InvalidWorkspaceId),
}

/// A workspace ID, `w-` followed by 8 lower-case hex digits (e.g. `w-4f21c8e0`): the value of a
/// written marker (the engine's own type).
pub use scriptorium_ids::WorkspaceId;

/// The node metadata key the Claude Code importer sets (`"true"`) on a sub-agent's messages.
pub const SIDECHAIN_KEY: &str = "is_sidechain";

/// Whether `node` is a record: a user or assistant message with something left to remember
/// once cleaned ([`clean`]: command wrappers, context blocks, interrupt notices, ANSI escapes
/// and content-free acknowledgements are not). Tool calls, tool results, runtime turns,
/// compaction summaries and system messages are not, nor are a sub-agent's messages (a
/// sidechain, [`SIDECHAIN_KEY`]): its "user" is the main agent, not the owner, and what it
/// found reaches the conversation through the main agent's replies.
pub fn is_record(node: &Node) -> bool {
    record_text(node).is_some()
}

/// The text `node` is recorded (archived, written) with: its content cleaned by the rules of
/// [`clean`]; `None` when it is not a record.
pub fn record_text(node: &Node) -> Option<Cow<'_, str>> {
    if node.kind != NodeKind::Message || !matches!(node.role, Role::User | Role::Assistant) {
        return None;
    }
    if node.metadata.get(SIDECHAIN_KEY).is_some_and(|v| v == "true") {
        return None;
    }
    clean::record_text(node.role, &node.content)
}

/// `node` as a record: a copy whose content is its [`record_text`]; `None` when it is not one.
pub fn record(node: &Node) -> Option<Node> {
    record_text(node).map(|text| with_text(node, text))
}

/// A copy of `node` with its record `text`.
fn with_text(node: &Node, text: Cow<'_, str>) -> Node {
    let mut copy = node.clone();
    if text != node.content {
        copy.content = text.into_owned();
    }
    copy
}

/// The records of a branch (as returned by [`SessionStore::branch`]), in order, as stored
/// (see [`record`] for the text each is recorded with).
pub fn records(branch: &[Node]) -> Vec<&Node> {
    branch.iter().filter(|n| is_record(n)).collect()
}

/// Whether `node` carries this workspace's written marker (the shared key naming it, or its
/// own per-workspace key).
pub fn is_marked(node: &Node, workspace: &WorkspaceId) -> bool {
    Marker::new(workspace).on(node)
}

/// A workspace's written marker, its per-workspace key built once: what [`is_marked`] checks,
/// for a walk over many nodes.
pub struct Marker<'a> {
    workspace: &'a WorkspaceId,
    own_key: String,
}

impl<'a> Marker<'a> {
    /// `workspace`'s marker.
    pub fn new(workspace: &'a WorkspaceId) -> Self {
        Marker { workspace, own_key: workspace_marker_key(workspace) }
    }

    /// Whether `node` carries the marker (see [`is_marked`]).
    pub fn on(&self, node: &Node) -> bool {
        node.metadata.get(MARKER_KEY).is_some_and(|v| v == self.workspace.as_str())
            || node.metadata.get(&self.own_key).is_some_and(|v| v == "1")
    }
}

/// The records of the branch ending at `tip` (default: the head) that are not yet written for
/// `workspace`, oldest first: the walk from `tip` toward the root stops at the first record
/// marked with `workspace`, or at a forgotten node so marked (it was a record when written).
///
/// Cost: one node visit ([`SessionStore::walk_ancestors`]; by default one [`SessionStore::node`]
/// read) per node between `tip` and the newest marked record (non-records and rewound nodes on
/// the way included), plus one `session` read when `tip` is `None`; a marked tip costs one
/// visit. The branch is never materialised; only the returned records are copied. A parent missing from
/// the session ends the walk like a root. Rewound nodes are skipped as
/// [`SessionStore::branch`] skips them.
pub fn pending<S: SessionStore + ?Sized>(
    store: &S,
    session: &SessionId,
    tip: Option<&NodeId>,
    workspace: &WorkspaceId,
) -> Result<Vec<Node>, Error> {
    let marker = Marker::new(workspace);
    walk(store, session, tip, |node| marker.on(node))
}

/// Walks from `tip` (default: the head) toward the root collecting records until `stop` holds
/// for a record; returns them oldest first.
fn walk<S: SessionStore + ?Sized>(
    store: &S,
    session: &SessionId,
    tip: Option<&NodeId>,
    stop: impl Fn(&Node) -> bool,
) -> Result<Vec<Node>, Error> {
    let start = match tip {
        Some(tip) => tip.clone(),
        None => match store.session(session)? {
            Some(found) => match found.head {
                Some(head) => head,
                None => return Ok(Vec::new()),
            },
            None => return Err(Error::SessionNotFound(session.clone())),
        },
    };
    let mut out: Vec<Node> = Vec::new();
    let mut cycle: Option<NodeId> = None;
    // Brent's cycle detection: one ID comparison per step, a clone per power of two.
    let mut saved: Option<NodeId> = None;
    let (mut power, mut steps) = (1usize, 0usize);
    let found = store.walk_ancestors(session, &start, &mut |node| {
        if saved.as_ref() == Some(&node.id) {
            cycle = Some(node.id.clone());
            return false;
        }
        if !node.rewound {
            if let Some(text) = record_text(node) {
                if stop(node) {
                    return false;
                }
                out.push(with_text(node, text));
            } else if node.is_forgotten() && stop(node) {
                // It was a record when it was written: its mark still says where writing stopped.
                return false;
            }
        }
        steps += 1;
        if saved.is_none() || steps == power {
            saved = Some(node.id.clone());
            power *= 2;
            steps = 0;
        }
        true
    })?;
    if !found {
        return Err(Error::NodeNotFound { session: session.clone(), node: start });
    }
    if let Some(node) = cycle {
        return Err(Error::Cycle { session: session.clone(), node });
    }
    out.reverse();
    Ok(out)
}

/// Marks exactly the nodes of `batch` as written for `workspace`, with one
/// [`SessionStore::merge_metadata`] (which appends no node and does not change `updated_at`).
///
/// Call it only after the batch's transaction installed and changed at least one file.
/// Atomicity: that of the store's `merge_metadata` (for the embedded store, one fsynced log
/// line: all of the batch or none of it).
pub fn mark<S: SessionStore + ?Sized>(
    store: &S,
    session: &SessionId,
    batch: &[Node],
    workspace: &WorkspaceId,
) -> Result<(), Error> {
    if batch.is_empty() {
        return Ok(());
    }
    let patch: MetadataBatch = batch
        .iter()
        .map(|n| {
            let marks = [
                (MARKER_KEY.to_owned(), workspace.as_str().to_owned()),
                (workspace_marker_key(workspace), "1".to_owned()),
            ];
            (n.id.clone(), BTreeMap::from(marks))
        })
        .collect();
    store.merge_metadata(session, &patch)?;
    Ok(())
}

/// The first batch of `pending` to hand to the writer: the shortest prefix whose token count
/// reaches `threshold_tokens`, or all of `pending` when it never does.
pub fn first_batch<'a>(
    pending: &'a [Node],
    threshold_tokens: usize,
    token_counter: &dyn Fn(&str) -> usize,
) -> &'a [Node] {
    let mut total = 0;
    for (i, node) in pending.iter().enumerate() {
        total += token_counter(&node.content);
        if total >= threshold_tokens {
            return &pending[..=i];
        }
    }
    pending
}

/// One branch of a [`boundary_plan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedBranch {
    /// The tip the branch ends at (the head for the head branch).
    pub tip: NodeId,
    /// Whether this is the head branch (written whatever its size).
    pub head: bool,
    /// The records to write, oldest first, excluding those an earlier planned branch covers.
    pub pending: Vec<Node>,
    /// The tokens of `pending` by the plan's counter.
    pub tokens: usize,
}

/// What to write for `workspace` at a session boundary, in order: the head branch first whenever it has pending
/// records (whatever their size, even when another tip is newer), then each other live tip
/// (in [`SessionStore::tips`] order, newest first) whose pending tokens reach
/// `threshold_tokens`. Tokens count record content only.
///
/// Shared prefixes are counted once: a later branch's walk also stops at a record that an
/// earlier planned branch includes (it will be marked by then), so each record appears in at
/// most one planned branch. Skipped branches claim nothing.
pub fn boundary_plan<S: SessionStore + ?Sized>(
    store: &S,
    session: &SessionId,
    workspace: &WorkspaceId,
    threshold_tokens: usize,
    token_counter: &dyn Fn(&str) -> usize,
) -> Result<Vec<PlannedBranch>, Error> {
    let Some(found) = store.session(session)? else {
        return Err(Error::SessionNotFound(session.clone()));
    };
    let tips = store.tips(session)?;
    let mut claimed: HashSet<NodeId> = HashSet::new();
    let mut plan = Vec::new();
    let mut candidates: Vec<(NodeId, bool)> = Vec::new();
    let others = match &found.head {
        // The store lists the head's tip first; the head itself stands for it.
        Some(head) => {
            candidates.push((head.clone(), true));
            tips.get(1..).unwrap_or_default()
        }
        None => &tips[..],
    };
    candidates.extend(others.iter().map(|t| (t.clone(), false)));
    let marker = Marker::new(workspace);
    for (tip, head) in candidates {
        let pending =
            walk(store, session, Some(&tip), |node| marker.on(node) || claimed.contains(&node.id))?;
        let tokens: usize = pending.iter().map(|n| token_counter(&n.content)).sum();
        if pending.is_empty() || (!head && tokens < threshold_tokens) {
            continue;
        }
        claimed.extend(pending.iter().map(|n| n.id.clone()));
        plan.push(PlannedBranch { tip, head, pending, tokens });
    }
    Ok(plan)
}
