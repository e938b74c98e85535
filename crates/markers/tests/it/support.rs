//! Shared helpers: building sessions in a real embedded store, and a read-counting decorator.

use std::cell::Cell;
use std::collections::BTreeMap;

use scriptorium_markers::WorkspaceId;
use scriptorium_session_dag::{
    EmbeddedStore, Error, MetadataBatch, Node, NodeId, NodeKind, Page, Role, Session, SessionId,
    SessionStore, Timestamp,
};

pub(crate) fn sid(s: &str) -> SessionId {
    SessionId(s.to_owned())
}

pub(crate) fn nid(s: &str) -> NodeId {
    NodeId(s.to_owned())
}

pub(crate) fn ws() -> WorkspaceId {
    WorkspaceId::parse("w-4f21c8e0").unwrap()
}

/// A user (odd index) or assistant message with content `content`.
pub(crate) fn msg(id: &str, parent: Option<&str>, content: &str, created_at: i64) -> Node {
    Node {
        id: nid(id),
        parent: parent.map(nid),
        role: if created_at % 2 == 0 { Role::Assistant } else { Role::User },
        kind: NodeKind::Message,
        speaker: None,
        content: content.to_owned(),
        created_at: Timestamp(created_at),
        metadata: BTreeMap::new(),
        rewound: false,
    }
}

/// Appends a chain `prefix<from>..=prefix<to>` under `parent` (created_at = 100 × run + index)
/// and returns the last ID.
pub(crate) fn chain(
    store: &EmbeddedStore,
    s: &SessionId,
    prefix: &str,
    parent: Option<&str>,
    range: std::ops::RangeInclusive<u32>,
    run: i64,
) -> String {
    let mut parent = parent.map(str::to_owned);
    let mut nodes = Vec::new();
    for i in range {
        let id = format!("{prefix}{i}");
        let created = run * 100 + i64::from(i);
        nodes.push(msg(&id, parent.as_deref(), &format!("turn {id}"), created));
        parent = Some(id);
    }
    for node in nodes {
        store.append(s, node).unwrap();
    }
    parent.unwrap()
}

pub(crate) fn ids(nodes: &[Node]) -> Vec<&str> {
    nodes.iter().map(|n| n.id.as_str()).collect()
}

/// Forwards to a real store and counts the calls.
pub(crate) struct Counting<'a> {
    pub(crate) inner: &'a EmbeddedStore,
    pub(crate) node_reads: Cell<usize>,
    pub(crate) branch_reads: Cell<usize>,
}

impl<'a> Counting<'a> {
    pub(crate) fn new(inner: &'a EmbeddedStore) -> Counting<'a> {
        Counting { inner, node_reads: Cell::new(0), branch_reads: Cell::new(0) }
    }
}

impl SessionStore for Counting<'_> {
    fn append(&self, session: &SessionId, node: Node) -> Result<(), Error> {
        self.inner.append(session, node)
    }
    fn append_batch(&self, session: &SessionId, nodes: Vec<Node>) -> Result<usize, Error> {
        self.inner.append_batch(session, nodes)
    }
    fn set_head(&self, session: &SessionId, node: &NodeId) -> Result<(), Error> {
        self.inner.set_head(session, node)
    }
    fn rewind(&self, session: &SessionId, node: &NodeId) -> Result<(), Error> {
        self.inner.rewind(session, node)
    }
    fn branch(&self, session: &SessionId, tip: Option<&NodeId>) -> Result<Vec<Node>, Error> {
        self.branch_reads.set(self.branch_reads.get() + 1);
        self.inner.branch(session, tip)
    }
    fn tips(&self, session: &SessionId) -> Result<Vec<NodeId>, Error> {
        self.inner.tips(session)
    }
    fn node(&self, session: &SessionId, node: &NodeId) -> Result<Option<Node>, Error> {
        self.node_reads.set(self.node_reads.get() + 1);
        self.inner.node(session, node)
    }
    fn merge_metadata(&self, session: &SessionId, batch: &MetadataBatch) -> Result<(), Error> {
        self.inner.merge_metadata(session, batch)
    }
    fn session(&self, session: &SessionId) -> Result<Option<Session>, Error> {
        self.inner.session(session)
    }
    fn list_sessions(&self, page: Page) -> Result<Vec<Session>, Error> {
        self.inner.list_sessions(page)
    }
}
