//! The in-memory index of one session, built by replaying its log.
//!
//! Invariant: the parent links of the indexed nodes form no cycle (a record that would close
//! one is refused at append and skipped at replay), so every walk toward the root ends.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crate::{Node, NodeId, Session, SessionId, Timestamp};

use super::log::Record;
use super::{LoadWarning, WarningKind};

/// One session's nodes, head and bookkeeping.
#[derive(Debug)]
pub(crate) struct SessionState {
    pub(crate) id: SessionId,
    pub(crate) path: PathBuf,
    /// Nodes in log order.
    pub(crate) nodes: Vec<Node>,
    /// Node ID → position in `nodes`.
    pub(crate) index: HashMap<NodeId, usize>,
    /// IDs referenced as a parent by some node but absent (the only IDs that can close a cycle).
    pub(crate) dangling: HashSet<NodeId>,
    pub(crate) head: Option<NodeId>,
    pub(crate) updated_at: Timestamp,
    pub(crate) title: Option<String>,
    pub(crate) project: Option<String>,
    /// Bytes of the log applied (complete, settled lines only).
    pub(crate) loaded_len: u64,
    /// Lines in `loaded_len`.
    pub(crate) loaded_lines: usize,
    /// The log's length when last looked at (it exceeds `loaded_len` by a torn tail).
    pub(crate) seen_len: u64,
    /// The inode of the log `loaded_len` is an offset into (0 before the first read).
    pub(crate) ino: u64,
    /// The log's first line as read, line end included (empty before the first read): a log
    /// whose first line differs was rewritten (a forget, a rewrite of texts), and is read
    /// again from the start.
    pub(crate) header: Vec<u8>,
}

impl SessionState {
    /// An empty state for a session whose log is at `path`.
    pub(crate) fn new(id: SessionId, path: PathBuf) -> SessionState {
        SessionState {
            id,
            path,
            nodes: Vec::new(),
            index: HashMap::new(),
            dangling: HashSet::new(),
            head: None,
            updated_at: Timestamp(0),
            title: None,
            project: None,
            loaded_len: 0,
            loaded_lines: 0,
            seen_len: 0,
            ino: 0,
            header: Vec::new(),
        }
    }

    /// Whether the session exists (has at least one node).
    pub(crate) fn exists(&self) -> bool {
        !self.nodes.is_empty()
    }

    /// The session record.
    pub(crate) fn session(&self) -> Session {
        Session {
            id: self.id.clone(),
            head: self.head.clone(),
            updated_at: self.updated_at,
            title: self.title.clone(),
            project: self.project.clone(),
        }
    }

    /// The node with this ID.
    pub(crate) fn get(&self, node_id: &NodeId) -> Option<&Node> {
        self.index.get(node_id).map(|&i| &self.nodes[i])
    }

    /// Applies one record; what cannot apply is reported in `warnings` and skipped.
    pub(crate) fn apply(&mut self, line: usize, record: Record, warnings: &mut Vec<LoadWarning>) {
        let mut warn = |kind: WarningKind, message: String| {
            warnings.push(LoadWarning { path: self.path.clone(), line, kind, message });
        };
        match record {
            Record::Session { id, .. } => {
                if id != self.id {
                    warn(
                        WarningKind::InvalidRecord,
                        format!("header names session {id}, expected {}", self.id),
                    );
                }
            }
            Record::Batch { .. } => {}
            Record::Node { node, head } => {
                if self.index.contains_key(&node.id) {
                    warn(WarningKind::InvalidRecord, format!("duplicate node {} skipped", node.id));
                    return;
                }
                if (node.parent.as_ref() == Some(&node.id) || self.dangling.contains(&node.id))
                    && crate::dag::closes_cycle(&node.id, node.parent.as_ref(), |id| self.get(id))
                {
                    warn(
                        WarningKind::InvalidRecord,
                        format!("node {} would close a parent cycle; skipped", node.id),
                    );
                    return;
                }
                self.insert(node, head);
            }
            Record::Head { node, at } => {
                if self.index.contains_key(&node) {
                    self.updated_at = self.updated_at.max(at);
                    self.head = Some(node);
                } else {
                    warn(WarningKind::InvalidRecord, format!("head moved to unknown node {node}"));
                }
            }
            Record::Rewind { node, at } => match self.index.get(&node) {
                Some(&i) => {
                    self.nodes[i].rewound = true;
                    self.updated_at = self.updated_at.max(at);
                }
                None => warn(WarningKind::InvalidRecord, format!("rewind of unknown node {node}")),
            },
            Record::Meta { patch } => {
                for (node_id, entries) in patch {
                    match self.index.get(&node_id) {
                        Some(&i) => self.nodes[i].metadata.extend(entries),
                        None => warn(
                            WarningKind::InvalidRecord,
                            format!("metadata for unknown node {node_id} skipped"),
                        ),
                    }
                }
            }
            Record::Title { title } => self.title = title,
            Record::Project { project } => self.project = project,
        }
    }

    /// Inserts a node known to be new and acyclic.
    fn insert(&mut self, node: Node, head: bool) {
        self.dangling.remove(&node.id);
        if let Some(parent) = &node.parent
            && !self.index.contains_key(parent)
        {
            self.dangling.insert(parent.clone());
        }
        self.updated_at = self.updated_at.max(node.created_at);
        if head {
            self.head = Some(node.id.clone());
        }
        self.index.insert(node.id.clone(), self.nodes.len());
        self.nodes.push(node);
    }

    /// The positions root→`tip`, skipping rewound nodes; a parent missing from the session ends
    /// the walk (the node is a root of what is stored).
    pub(crate) fn branch_positions(&self, tip: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut current = Some(tip);
        while let Some(i) = current {
            if !self.nodes[i].rewound {
                out.push(i);
            }
            current = self.nodes[i].parent.as_ref().and_then(|p| self.index.get(p).copied());
        }
        out.reverse();
        out
    }

    /// The live tips (see [`crate::dag::tips`]).
    pub(crate) fn tips(&self) -> Vec<NodeId> {
        crate::dag::tips(&self.nodes, &self.index, self.head.as_ref())
    }
}
