//! The session store: conversations as a branching DAG of nodes, with heads, branches and node
//! metadata, plus importers for Claude Code, Codex, pi and generic JSONL transcripts.
//!
//! Key decision: one append-only, fsynced log per session ([`EmbeddedStore`]), so a crash can
//! only tear the last line, which is skipped on read; a small registry cache lists sessions
//! without reading their logs, and is checked against the logs' lengths so it can never lie for
//! long. Sessions are loaded lazily: reading one session never reads another. The exceptions
//! to append-only are a forget ([`SessionStore::forget`]) and a rewrite of texts
//! ([`SessionStore::rewrite_texts`], a redaction after the fact), which must take bytes out of
//! the file: they write the session's whole log again and rename it over the old one (see
//! [`store`], *Rewriting*).
//!
//! The on-disk format is described in [`store`] (directory layout, durability), [`store::log`]
//! (records), [`store::naming`] (file names) and [`store::registry`] (the listing cache).
//!
//! # Limitations
//!
//! - A loaded session is held in memory whole (its nodes and an ID index); there is no eviction.
//! - [`SessionStore::node`] and [`SessionStore::walk_ancestors`] are served from memory: a
//!   store instance sees nodes that *other processes* appended, forgot or rewrote only after
//!   its next write to, or `branch`/`tips`/`session`/`nodes`/[`EmbeddedStore::refresh`] of,
//!   that session.
//! - Logs are never compacted: metadata patches and head moves stay as lines forever (a
//!   rewrite keeps them too).
//! - A forget or a rewrite of texts rewrites the file, but the file system may keep the old
//!   log's blocks until it reuses them, and backups or snapshots of the directory keep their
//!   copies.
//! - Locking uses `flock` (advisory, per open file): every writer must go through this crate.
//!   Network file systems without `flock` are not supported.
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use scriptorium_session_dag::{
//!     EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Timestamp,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = EmbeddedStore::open(dir.path())?;
//! let session = SessionId("s1".into());
//! let node = |id: &str, parent: Option<&str>| Node {
//!     id: NodeId(id.into()),
//!     parent: parent.map(|p| NodeId(p.into())),
//!     role: Role::User,
//!     kind: NodeKind::Message,
//!     speaker: None,
//!     content: format!("message {id}"),
//!     created_at: Timestamp(1_700_000_000_000),
//!     metadata: BTreeMap::new(),
//!     rewound: false,
//! };
//! store.append(&session, node("m1", None))?;
//! store.append(&session, node("m2", Some("m1")))?;
//! store.append(&session, node("b2", Some("m1")))?; // a fork: b2 is the head now
//! assert_eq!(store.tips(&session)?, [NodeId("b2".into()), NodeId("m2".into())]);
//! let branch = store.branch(&session, None)?;
//! assert_eq!(branch.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(), ["m1", "b2"]);
//! # Ok(())
//! # }
//! ```

pub mod dag;
mod files;
pub mod store;
mod types;

pub use store::{Clock, EmbeddedStore, LoadWarning, SessionSummary, SystemClock, WarningKind};
pub use types::{
    FORGOTTEN_KEY, MetadataBatch, Node, NodeId, NodeKind, Page, Role, Session, SessionId,
    SessionStore, Speaker, Timestamp, WRITTEN_MARKER_KEY, forgotten_metadata, is_marker_key,
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
    /// Appending the node would make it its own ancestor (its ID is the parent of one of its
    /// ancestors); nothing was written.
    #[error("node {node} would close a parent cycle in session {session}")]
    ParentCycle {
        /// The session.
        session: SessionId,
        /// The node.
        node: NodeId,
    },
    /// The store does not implement this optional operation.
    #[error("the session store does not support {operation}")]
    Unsupported {
        /// The operation (a [`SessionStore`] method name).
        operation: &'static str,
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
    /// A path the store (or an importer) would open is a symlink: the store never reads or
    /// writes through one, so nothing outside its directory is ever touched.
    #[error("{path}: is a symlink; the session store never follows symlinks")]
    SymlinkRefused {
        /// The symlink.
        path: std::path::PathBuf,
    },
    /// A path that must be a regular file is a FIFO, socket, device or directory (opening a
    /// FIFO would block forever); it was not read.
    #[error("{path}: is a {kind}, not a regular file")]
    NotRegularFile {
        /// The path.
        path: std::path::PathBuf,
        /// What it is: `FIFO`, `socket`, `character device`, `block device`, `directory`.
        kind: &'static str,
    },
    /// A database-backed store (the PostgreSQL one) could not reach its database, or the
    /// database refused a statement; nothing of the failed call was committed.
    #[error("session database: {message}")]
    Database {
        /// What failed (never holds a password).
        message: String,
        /// Whether retrying the call can help (a lost connection, a serialization failure).
        retryable: bool,
    },
    /// The database-backed store's TLS settings cannot work: the server's certificate is not
    /// trusted (self-signed, an unknown CA, another host's name, expired…), the server does not
    /// offer the TLS the settings require, or a CA file cannot be read. A configuration error:
    /// retrying the same settings cannot help.
    #[error("session database: {message}")]
    DatabaseTls {
        /// What failed, why, and what to change.
        message: String,
    },
}

/// The stable code of an [`Error`] or an [`import::Error`]: callers match on this, never on
/// message text. A code is never renamed, only added.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// [`Error::DuplicateNode`].
    DuplicateNode,
    /// [`Error::SessionNotFound`].
    SessionNotFound,
    /// [`Error::NodeNotFound`].
    NodeNotFound,
    /// [`Error::ParentCycle`].
    ParentCycle,
    /// [`Error::Unsupported`].
    Unsupported,
    /// [`Error::Io`], [`import::Error::Io`].
    Io,
    /// [`Error::SymlinkRefused`].
    SymlinkRefused,
    /// [`Error::NotRegularFile`].
    NotRegularFile,
    /// [`Error::Database`].
    Database,
    /// [`Error::DatabaseTls`].
    DatabaseTls,
    /// [`import::Error::NotJsonl`].
    NotJsonl,
    /// [`import::Error::WrongFormat`].
    WrongFormat,
    /// [`import::Error::Unrecognised`].
    UnrecognisedFormat,
}

impl ErrorCode {
    /// The stable SCREAMING_SNAKE_CASE name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::DuplicateNode => "DUPLICATE_NODE",
            ErrorCode::SessionNotFound => "SESSION_NOT_FOUND",
            ErrorCode::NodeNotFound => "NODE_NOT_FOUND",
            ErrorCode::ParentCycle => "PARENT_CYCLE",
            ErrorCode::Unsupported => "UNSUPPORTED",
            ErrorCode::Io => "IO",
            ErrorCode::SymlinkRefused => "SYMLINK_REFUSED",
            ErrorCode::NotRegularFile => "NOT_A_REGULAR_FILE",
            ErrorCode::Database => "SESSION_DATABASE",
            ErrorCode::DatabaseTls => "SESSION_DATABASE_TLS",
            ErrorCode::NotJsonl => "NOT_JSONL",
            ErrorCode::WrongFormat => "WRONG_FORMAT",
            ErrorCode::UnrecognisedFormat => "UNRECOGNISED_FORMAT",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::DuplicateNode { .. } => ErrorCode::DuplicateNode,
            Error::SessionNotFound(_) => ErrorCode::SessionNotFound,
            Error::NodeNotFound { .. } => ErrorCode::NodeNotFound,
            Error::ParentCycle { .. } => ErrorCode::ParentCycle,
            Error::Unsupported { .. } => ErrorCode::Unsupported,
            Error::Io { .. } => ErrorCode::Io,
            Error::SymlinkRefused { .. } => ErrorCode::SymlinkRefused,
            Error::NotRegularFile { .. } => ErrorCode::NotRegularFile,
            Error::Database { .. } => ErrorCode::Database,
            Error::DatabaseTls { .. } => ErrorCode::DatabaseTls,
        }
    }

    /// Whether retrying the call can help: only a database error that says so.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Database { retryable: true, .. })
    }
}

pub mod import;
