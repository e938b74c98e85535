//! The session store: conversations as a branching DAG of nodes, with heads, branches and node
//! metadata, plus importers for Claude Code, Codex, pi and generic JSONL transcripts.
//!
//! Key decision: one append-only, fsynced log per session, so a crash can only tear the last
//! line, which is skipped on read.
//!
//! # Limitations
//!
//! Filled in by the sessions issue.

mod types;

pub use types::{
    MetadataBatch, Node, NodeId, NodeKind, Page, Role, Session, SessionId, SessionStore, Speaker,
    Timestamp,
};

/// Errors of the session store and the importers.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A node with this ID already exists in the session.
    #[error("node {node} already exists in session {session}")]
    DuplicateNode {
        /// The session.
        session: SessionId,
        /// The node.
        node: NodeId,
    },
    /// The session does not exist.
    #[error("session not found: {0}")]
    SessionNotFound(SessionId),
    /// The node does not exist in the session.
    #[error("node {node} not found in session {session}")]
    NodeNotFound {
        /// The session.
        session: SessionId,
        /// The node.
        node: NodeId,
    },
    /// An IO error on a path.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

pub mod import;
