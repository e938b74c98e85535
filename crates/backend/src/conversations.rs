//! Imported sessions as a person reviews them (the web UI's Sessions view, and the pending count
//! of `status`): one row per session with its branches and the turns not yet written
//! into this memory, and a session's conversation as a thread whose branches are marked and
//! whose written turns link to their archived records.
//!
//! Key decision: one computation for every face. "Pending" counts the records of every live
//! branch that lack this memory's written marker, each once however many branches share it —
//! the count `status` sums over every session ([`session_pending`]); a turn links to its record
//! only when the archive holds a frame with that anchor (the strict scan of the session's
//! archive file), never by formula alone.
//!
//! # Limitations
//!
//! - A thread shows at most [`MAX_THREAD_TURNS`] turns per branch (the latest ones), and each
//!   turn's text cut to [`MAX_TURN_CHARS`] characters; the cut is reported.
//! - A session's last write is what the writer status keeps (the newest
//!   [`crate::runtime::status::SESSIONS_KEPT`] sessions); an older one shows none.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use scriptorium_markers::{Error, Marker, WorkspaceId, is_marked, is_record};
use scriptorium_session_dag::{Node, NodeId, Page, Session, SessionId, SessionStore, Timestamp};
use scriptorium_topics_format::source::id::SourceId;
use serde::Serialize;

use crate::runtime::status::WriterStatus;
use crate::sessions::Sessions;

/// The most turns a thread shows per branch (the latest).
pub const MAX_THREAD_TURNS: usize = 400;
/// The most characters of one turn's text a thread shows.
pub const MAX_TURN_CHARS: usize = 4_000;

/// One imported session as the Sessions list shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionRow {
    /// The session ID.
    pub id: String,
    /// Its title, when the transcript gave one.
    pub title: Option<String>,
    /// The project (the git root of its working directory), when known.
    pub project: Option<String>,
    /// When a node was last added or the head last moved (RFC 3339).
    pub updated_at: String,
    /// The same, in Unix milliseconds.
    pub updated_at_ms: i64,
    /// The head node.
    pub head: Option<String>,
    /// How many nodes the session holds: in a list every node (rewound ones included), in a
    /// thread those of its live branches.
    pub nodes: usize,
    /// How many live branches (tips) it has.
    pub branches: usize,
    /// The records of every branch not yet written into this memory, each counted once.
    pub pending: usize,
    /// How its last write ended (`{at, outcome[, turns][, reason_code, retryable]}`), when the
    /// writer status keeps one.
    pub last_write: Option<serde_json::Value>,
}

/// One turn of a [`Thread`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadTurn {
    /// The node ID.
    pub id: String,
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// The node's kind (`message`, `tool_call`, …).
    pub kind: String,
    /// Who spoke, by name (display name, else ID), when the transcript says.
    pub speaker: Option<String>,
    /// When (RFC 3339).
    pub created_at: String,
    /// The text, cut to [`MAX_TURN_CHARS`] characters.
    pub text: String,
    /// Whether the text was cut.
    pub cut: bool,
    /// Whether the writer takes this turn as a record (user and assistant messages).
    pub record: bool,
    /// Whether this memory has written it (its written marker).
    pub written: bool,
    /// The archived record (`sources/…/<thread>.md#source-…`) when the archive holds it.
    pub link: Option<String>,
    /// How many branches continue from this turn (2 or more: a fork).
    pub children: usize,
}

/// One branch of a [`Thread`]: the head branch whole, another from where it leaves the head
/// branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadBranch {
    /// The branch's tip.
    pub tip: String,
    /// Whether it is the head branch (the conversation as it stands).
    pub head: bool,
    /// The last turn it shares with the head branch (`None` for the head branch, or a branch
    /// with a root of its own).
    pub fork: Option<String>,
    /// Its records not yet written into this memory.
    pub pending: usize,
    /// How many turns are not shown (older than the [`MAX_THREAD_TURNS`] shown).
    pub hidden: usize,
    /// Its turns, oldest first (for another branch: only those after `fork`).
    pub turns: Vec<ThreadTurn>,
}

/// A session's conversation: the head branch, then every other branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Thread {
    /// The session.
    pub session: SessionRow,
    /// The head branch first.
    pub branches: Vec<ThreadBranch>,
}

fn time(at: Timestamp) -> String {
    at.to_rfc3339().unwrap_or_else(|| format!("{} ms", at.0))
}

/// The rows of the sessions of `page`, newest first, with each one's last write from `status`.
/// `workspace` is this memory's ID (`None` before it has one: every record counts as pending).
///
/// # Errors
/// The session store's (or a branch that cannot be walked).
pub fn rows(
    store: &Sessions,
    status: &WriterStatus,
    page: Page,
    workspace: Option<&WorkspaceId>,
) -> Result<Vec<SessionRow>, Error> {
    store
        .list_summaries(page)?
        .into_iter()
        .map(|summary| {
            let tips = store.tips(&summary.session.id)?;
            let owed = owed_on(&**store, &summary.session.id, &tips, workspace)?;
            Ok(row(status, &summary.session, summary.nodes, tips.len(), owed.len()))
        })
        .collect()
}

/// How many records of session `id` (over every live branch, each once) lack this memory's
/// written marker — the Sessions view's count, and what `status` sums over every session.
///
/// # Errors
/// The session store's.
pub fn session_pending(
    store: &dyn SessionStore,
    id: &SessionId,
    workspace: Option<&WorkspaceId>,
) -> Result<usize, Error> {
    let tips = store.tips(id)?;
    Ok(owed_on(store, id, &tips, workspace)?.len())
}

/// The unwritten records of the branches ending at `tips`, each once.
fn owed_on(
    store: &dyn SessionStore,
    id: &SessionId,
    tips: &[NodeId],
    workspace: Option<&WorkspaceId>,
) -> Result<HashSet<String>, Error> {
    let mut owed = HashSet::new();
    for tip in tips {
        let branch = store.branch(id, Some(tip))?;
        owed.extend(unwritten(&branch, workspace).map(|n| n.id.to_string()));
    }
    Ok(owed)
}

/// The records of `branch` without `workspace`'s written marker (all of them without a
/// workspace).
fn unwritten<'b>(
    branch: &'b [Node],
    workspace: Option<&'b WorkspaceId>,
) -> impl Iterator<Item = &'b Node> {
    let marker = workspace.map(Marker::new);
    branch.iter().filter(move |n| is_record(n) && !marker.as_ref().is_some_and(|m| m.on(n)))
}

/// The row of one session.
fn row(
    status: &WriterStatus,
    session: &Session,
    nodes: usize,
    branches: usize,
    pending: usize,
) -> SessionRow {
    SessionRow {
        id: session.id.to_string(),
        title: session.title.clone(),
        project: session.project.clone(),
        updated_at: time(session.updated_at),
        updated_at_ms: session.updated_at.0,
        head: session.head.as_ref().map(ToString::to_string),
        nodes,
        branches,
        pending,
        last_write: status.sessions.get(session.id.as_str()).map(|w| w.to_json()),
    }
}

/// The thread of session `id`, or `None` when the store has no such session. `memory_root` is
/// the workspace whose archives the turns link to; `status` gives the session's last write.
///
/// # Errors
/// The session store's.
pub fn thread(
    store: &Sessions,
    memory_root: &Path,
    status: &WriterStatus,
    id: &SessionId,
    workspace: Option<&WorkspaceId>,
) -> Result<Option<Thread>, Error> {
    let Some(session) = store.session(id)? else { return Ok(None) };
    let mut branches: Vec<(NodeId, Vec<Node>)> = Vec::new();
    for tip in store.tips(id)? {
        let branch = store.branch(id, Some(&tip))?;
        branches.push((tip, branch));
    }
    // The head branch first.
    if let Some(head) = &session.head
        && let Some(at) = branches.iter().position(|(_, b)| b.iter().any(|n| &n.id == head))
    {
        let head_branch = branches.remove(at);
        branches.insert(0, head_branch);
    }
    let mut children: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut nodes: HashSet<&str> = HashSet::new();
    let mut owed: HashSet<&str> = HashSet::new();
    for (_, branch) in &branches {
        nodes.extend(branch.iter().map(|n| n.id.as_str()));
        owed.extend(unwritten(branch, workspace).map(|n| n.id.as_str()));
        for pair in branch.windows(2) {
            children.entry(pair[0].id.as_str()).or_default().insert(pair[1].id.as_str());
        }
    }
    let archived = Archived::of(memory_root, id);
    let on_head: HashSet<&str> = branches
        .first()
        .map(|(_, b)| b.iter().map(|n| n.id.as_str()).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, (tip, branch)) in branches.iter().enumerate() {
        let (fork, own): (Option<String>, &[Node]) = if i == 0 {
            (None, branch)
        } else {
            let shared = branch.iter().take_while(|n| on_head.contains(n.id.as_str())).count();
            (shared.checked_sub(1).map(|at| branch[at].id.to_string()), &branch[shared..])
        };
        let hidden = own.len().saturating_sub(MAX_THREAD_TURNS);
        let turns = own[hidden..]
            .iter()
            .map(|node| {
                let forks = children.get(node.id.as_str()).map_or(0, HashSet::len);
                turn(node, workspace, &archived, forks)
            })
            .collect();
        out.push(ThreadBranch {
            tip: tip.to_string(),
            head: i == 0 && session.head.is_some(),
            fork,
            pending: unwritten(branch, workspace).count(),
            hidden,
            turns,
        });
    }
    let row = row(status, &session, nodes.len(), branches.len(), owed.len());
    Ok(Some(Thread { session: row, branches: out }))
}

fn turn(
    node: &Node,
    workspace: Option<&WorkspaceId>,
    archived: &Archived,
    children: usize,
) -> ThreadTurn {
    let record = is_record(node);
    let cut = node.content.chars().count() > MAX_TURN_CHARS;
    let text = if cut {
        node.content.chars().take(MAX_TURN_CHARS).collect()
    } else {
        node.content.clone()
    };
    let speaker = node
        .speaker
        .as_ref()
        .map(|s| if s.display.trim().is_empty() { s.id.clone() } else { s.display.clone() });
    ThreadTurn {
        id: node.id.to_string(),
        role: node.role.as_str().to_owned(),
        kind: node.kind.as_str().to_owned(),
        speaker: speaker.filter(|s| !s.trim().is_empty()),
        created_at: time(node.created_at),
        text,
        cut,
        record,
        written: workspace.is_some_and(|w| is_marked(node, w)),
        link: record.then(|| archived.link(node)).flatten(),
        children,
    }
}

/// The anchors the session's archive holds (its frames by the strict scan).
struct Archived {
    session: SessionId,
    path: Option<String>,
    anchors: HashSet<String>,
}

impl Archived {
    fn of(memory_root: &Path, session: &SessionId) -> Archived {
        // Every record of a session lives in one archive file: its thread's.
        let probe = scriptorium_writer::source_id(session, &NodeId("x".into()));
        let path = SourceId::parse(&probe).map(|id| id.v2_path());
        let anchors = path
            .as_deref()
            .map(|path| crate::inspect::archived_anchors(memory_root, path))
            .unwrap_or_default();
        Archived { session: session.clone(), path, anchors }
    }

    /// `sources/…/<thread>.md#source-…` when the archive holds the node's record.
    fn link(&self, node: &Node) -> Option<String> {
        let id = SourceId::parse(&scriptorium_writer::source_id(&self.session, &node.id))?;
        let location = id.v2_location();
        (self.path.as_deref() == Some(location.path.as_str())
            && self.anchors.contains(&location.anchor))
        .then(|| format!("{}#{}", location.path, location.anchor))
    }
}
