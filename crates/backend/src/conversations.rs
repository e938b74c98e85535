//! Imported sessions as a person reviews them (the web UI's Sessions view and `scriptorium
//! sessions list --json`): one row per session with its branches and the turns not yet written
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

use std::collections::HashSet;
use std::path::Path;

use scriptorium_markers::{Error, WorkspaceId, is_marked, records};
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
    /// How many nodes the session holds (rewound ones included).
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

/// The rows of the sessions of `page`, newest first, for the memory at `memory_root` whose ID
/// is `workspace` (`None` before it has one: every record counts as pending).
///
/// # Errors
/// The session store's (or a branch that cannot be walked).
pub fn rows(
    store: &Sessions,
    memory_root: &Path,
    page: Page,
    workspace: Option<&WorkspaceId>,
) -> Result<Vec<SessionRow>, Error> {
    let status = WriterStatus::load(memory_root);
    store
        .list_summaries(page)?
        .into_iter()
        .map(|summary| row(&**store, &status, &summary.session, summary.nodes, workspace))
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
    let mut owed: HashSet<String> = HashSet::new();
    for tip in store.tips(id)? {
        owed.extend(unwritten(store, id, &tip, workspace)?);
    }
    Ok(owed.len())
}

/// The row of one session.
fn row(
    store: &dyn SessionStore,
    status: &WriterStatus,
    session: &Session,
    nodes: usize,
    workspace: Option<&WorkspaceId>,
) -> Result<SessionRow, Error> {
    let tips = store.tips(&session.id)?;
    let mut owed: HashSet<String> = HashSet::new();
    for tip in &tips {
        owed.extend(unwritten(store, &session.id, tip, workspace)?);
    }
    Ok(SessionRow {
        id: session.id.to_string(),
        title: session.title.clone(),
        project: session.project.clone(),
        updated_at: time(session.updated_at),
        updated_at_ms: session.updated_at.0,
        head: session.head.as_ref().map(ToString::to_string),
        nodes,
        branches: tips.len(),
        pending: owed.len(),
        last_write: status.sessions.get(session.id.as_str()).map(|w| w.to_json()),
    })
}

/// The IDs of the records of the branch ending at `tip` without `workspace`'s written marker
/// (all of its records without a workspace).
fn unwritten(
    store: &dyn SessionStore,
    session: &SessionId,
    tip: &NodeId,
    workspace: Option<&WorkspaceId>,
) -> Result<Vec<String>, Error> {
    let branch = store.branch(session, Some(tip))?;
    Ok(records(&branch)
        .into_iter()
        .filter(|n| !workspace.is_some_and(|w| is_marked(n, w)))
        .map(|n| n.id.to_string())
        .collect())
}

/// The thread of session `id`, or `None` when the store has no such session. `memory_root` is
/// the workspace whose archives the turns link to.
///
/// # Errors
/// The session store's (or a branch that cannot be walked).
pub fn thread(
    store: &Sessions,
    memory_root: &Path,
    id: &SessionId,
    workspace: Option<&WorkspaceId>,
) -> Result<Option<Thread>, Error> {
    let Some(session) = store.session(id)? else { return Ok(None) };
    let tips = store.tips(id)?;
    let mut branches: Vec<(NodeId, Vec<Node>)> = Vec::new();
    for tip in &tips {
        branches.push((tip.clone(), store.branch(id, Some(tip))?));
    }
    // The head branch first (the store lists the head's tip first when there is a head).
    if let Some(head) = &session.head
        && let Some(at) = branches.iter().position(|(_, b)| b.iter().any(|n| &n.id == head))
    {
        let head_branch = branches.remove(at);
        branches.insert(0, head_branch);
    }
    let mut children: std::collections::HashMap<String, HashSet<String>> = Default::default();
    for (_, branch) in &branches {
        for pair in branch.windows(2) {
            children.entry(pair[0].id.to_string()).or_default().insert(pair[1].id.to_string());
        }
    }
    let archived = Archived::of(memory_root, id);
    let on_head: HashSet<&str> = branches
        .first()
        .map(|(_, b)| b.iter().map(|n| n.id.as_str()).collect())
        .unwrap_or_default();
    let mut owed_all: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for (i, (tip, branch)) in branches.iter().enumerate() {
        let head = i == 0 && session.head.is_some();
        let owed = unwritten(&**store, id, tip, workspace)?;
        owed_all.extend(owed.iter().cloned());
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
            head,
            fork,
            pending: owed.len(),
            hidden,
            turns,
        });
    }
    let nodes = out.iter().map(|b| b.turns.len() + b.hidden).sum();
    let status = WriterStatus::load(memory_root);
    let mut row = row(&**store, &status, &session, nodes, workspace)?;
    row.pending = owed_all.len();
    Ok(Some(Thread { session: row, branches: out }))
}

fn turn(
    node: &Node,
    workspace: Option<&WorkspaceId>,
    archived: &Archived,
    children: usize,
) -> ThreadTurn {
    let record = !records(std::slice::from_ref(node)).is_empty();
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
