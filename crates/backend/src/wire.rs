//! What every surface says on the wire: one closed error-code enum ([`Code`]) and one error
//! shape ([`WireError`]) for the CLI's `--json`, the MCP tools and the REST API.
//!
//! The error shape is `{"ok": false, "error": {"code", "message", "path", "violations"}}`:
//! `path` is the workspace-relative path the error concerns or `null`, `violations` lists every
//! reason a change was refused (`[{code, message, path, line, col}]`, empty otherwise), and a
//! change request's structured details (a patch conflict's `line`, `expected`, `found`) come as
//! `details` when there are any. Success documents are objects with `"ok": true`; a list is
//! never a bare array but sits under a plural key (`"hits"`, `"commits"`, `"sessions"`).
//!
//! Codes come from the engine's closed enums ([`scriptorium_txn::ErrorCode`],
//! [`scriptorium_search::ErrorCode`], [`scriptorium_history::ErrorCode`]) mapped here once, plus
//! the few that only the surfaces meet (a usage error, a refused request). A code's string is
//! never renamed; new codes are added.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value, json};

/// A stable wire error code. Callers match on it, never on message text.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    // ---- requests ----
    /// The command line does not parse (unknown flag, missing argument, bad value).
    Usage,
    /// A malformed request (shape, limits, options, a bad date).
    InvalidArgument,
    /// `scriptorium.toml` or an environment override is invalid.
    InvalidConfig,
    /// Memory is disabled by `memory.backend = "none"`.
    MemoryDisabled,
    /// A file, route or record that does not exist.
    NotFound,
    /// There is no memory workspace yet (`scriptorium init`).
    NoWorkspace,
    /// A record ID named by a change does not exist.
    MemoryNotFound,
    /// A session that is not in the session store.
    SessionNotFound,
    /// The input is not in the format the command was asked to read.
    WrongFormat,
    /// A transcript whose format no importer recognises.
    UnrecognisedFormat,
    /// An agent's configuration file that `scriptorium setup` would edit does not parse.
    SetupUnparsable,
    /// A batch of session records was already installed by another write.
    BatchInstalled,
    /// A file that is not JSON lines.
    NotJsonl,
    /// A path that must be a regular file is a FIFO, socket, device or directory.
    NotRegularFile,
    /// A path that must not be a symlink is one (it is never followed).
    SymlinkRefused,
    /// A node that already exists in its session.
    DuplicateNode,
    /// A node that is not in its session.
    NodeNotFound,
    /// A node that would be its own ancestor.
    ParentCycle,
    /// An operation the session store does not implement.
    Unsupported,
    /// A report that found problems (`check`): the report lists them.
    ProblemsFound,
    /// A write that failed for some session (the report gives each session's reason code).
    WriteFailed,
    /// A request without the access token, or with a wrong one.
    Unauthorized,
    /// A request whose `Host` is not the server's address.
    ForbiddenHost,
    /// A state change whose `Origin` is not the server's.
    ForbiddenOrigin,
    /// A request method the route does not have.
    MethodNotAllowed,
    /// A sync whose merge found blocks changed differently on both sides (or a merged tree that
    /// does not validate): nothing was installed; `scriptorium sync --status` shows both
    /// versions.
    SyncConflict,
    /// The sync remote is no repository a sync can use (nothing there, or a non-bare
    /// repository with the branch checked out): fix the remote or its name.
    RemoteInvalid,

    // ---- concurrency (retryable) ----
    /// Another process holds the workspace write lock.
    Busy,
    /// The workspace changed since the caller's `base_revision`.
    ConcurrentUpdate,
    /// The search index is being written by another process.
    IndexBusy,
    /// A destructive operation (a forget) was asked for without the confirmation it needs
    /// (`--yes` off a terminal, `confirm: true` over MCP and REST); nothing was done.
    ConfirmationRequired,
    /// The disk (or quota) is full; retry once space is freed.
    NoSpace,
    /// The sync remote could not be reached or refused the exchange.
    RemoteUnavailable,

    // ---- refused changes (the transaction engine) ----
    /// A patch or whole-file change does not apply to the current files.
    PatchConflict,
    /// A change references a source that was not declared or archived.
    MissingSource,
    /// A path escapes the workspace (absolute, `..`, a symlink).
    PathOutsideWorkspace,
    /// A path that is not writable (only `topics/**/*.md` is).
    ReadOnlyPath,
    /// An append-only caller tried to rewrite existing content.
    AppendOnlyRequired,
    /// The caller lacks what the operation needs.
    WriterPreconditionFailed,
    /// The staged topics do not parse strictly.
    InvalidTopicFormat,
    /// A paragraph cites no source (or text would be dropped).
    UncitedParagraph,
    /// A committed block ID is missing from the staged tree.
    BlockIdRemoved,
    /// A Topic-to-Topic link does not target `#^block-id`.
    TopicLinkNotBlock,
    /// A block link targets an ID that does not exist.
    DanglingBlockLink,
    /// A cited source reference does not resolve.
    MissingSourceReference,
    /// A cited source reference is malformed.
    InvalidSourceReference,
    /// A new citation resolves to a pending (untrusted) source.
    SourceNotTrusted,
    /// A new citation is not among the transaction's evidence.
    SourceNotInTransaction,
    /// `sources/` changed during the transaction.
    SourcesChanged,
    /// A file or the whole change exceeds a size limit.
    SizeLimit,

    // ---- the workspace and its parts ----
    /// A filesystem operation failed.
    Io,
    /// Runtime state is unreadable or inconsistent.
    CorruptState,
    /// The workspace ID is lost in a workspace with history.
    WorkspaceIdMissing,
    /// The search index could not be read or written.
    IndexError,
    /// The git repository cannot be opened.
    GitUnavailable,
    /// A git commit failed (the memory is committed regardless).
    GitCommitFailed,
    /// The git repository is corrupt.
    GitCorrupt,
    /// The session store's database (PostgreSQL) cannot be reached or refused a statement;
    /// nothing of the failed call was committed (retryable).
    SessionDatabase,
    /// The session database's TLS settings cannot work (an untrusted or wrong certificate, a
    /// server without the required TLS, an unreadable CA file): a configuration error, not
    /// retryable.
    SessionDatabaseTls,
    /// A failure that is a bug (reported, never expected).
    Internal,
}

impl Code {
    /// The stable SCREAMING_SNAKE_CASE name.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Usage => "USAGE",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::InvalidConfig => "INVALID_CONFIG",
            Code::MemoryDisabled => "MEMORY_DISABLED",
            Code::NotFound => "NOT_FOUND",
            Code::NoWorkspace => "NO_WORKSPACE",
            Code::MemoryNotFound => "MEMORY_NOT_FOUND",
            Code::SessionNotFound => "SESSION_NOT_FOUND",
            Code::WrongFormat => "WRONG_FORMAT",
            Code::UnrecognisedFormat => "UNRECOGNISED_FORMAT",
            Code::SetupUnparsable => "SETUP_UNPARSABLE",
            Code::BatchInstalled => "BATCH_INSTALLED",
            Code::NotJsonl => "NOT_JSONL",
            Code::NotRegularFile => "NOT_A_REGULAR_FILE",
            Code::SymlinkRefused => "SYMLINK_REFUSED",
            Code::DuplicateNode => "DUPLICATE_NODE",
            Code::NodeNotFound => "NODE_NOT_FOUND",
            Code::ParentCycle => "PARENT_CYCLE",
            Code::Unsupported => "UNSUPPORTED",
            Code::ProblemsFound => "PROBLEMS_FOUND",
            Code::WriteFailed => "WRITE_FAILED",
            Code::Unauthorized => "UNAUTHORIZED",
            Code::ForbiddenHost => "FORBIDDEN_HOST",
            Code::ForbiddenOrigin => "FORBIDDEN_ORIGIN",
            Code::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Code::SyncConflict => "SYNC_CONFLICT",
            Code::RemoteInvalid => "REMOTE_INVALID",
            Code::RemoteUnavailable => "REMOTE_UNAVAILABLE",
            Code::Busy => "BUSY",
            Code::ConcurrentUpdate => "CONCURRENT_UPDATE",
            Code::IndexBusy => "INDEX_BUSY",
            Code::ConfirmationRequired => "CONFIRMATION_REQUIRED",
            Code::NoSpace => "NO_SPACE",
            Code::PatchConflict => "PATCH_CONFLICT",
            Code::MissingSource => "MISSING_SOURCE",
            Code::PathOutsideWorkspace => "PATH_OUTSIDE_WORKSPACE",
            Code::ReadOnlyPath => "READ_ONLY_PATH",
            Code::AppendOnlyRequired => "APPEND_ONLY_REQUIRED",
            Code::WriterPreconditionFailed => "WRITER_PRECONDITION_FAILED",
            Code::InvalidTopicFormat => "INVALID_TOPIC_FORMAT",
            Code::UncitedParagraph => "UNCITED_PARAGRAPH",
            Code::BlockIdRemoved => "BLOCK_ID_REMOVED",
            Code::TopicLinkNotBlock => "TOPIC_LINK_NOT_BLOCK",
            Code::DanglingBlockLink => "DANGLING_BLOCK_LINK",
            Code::MissingSourceReference => "MISSING_SOURCE_REFERENCE",
            Code::InvalidSourceReference => "INVALID_SOURCE_REFERENCE",
            Code::SourceNotTrusted => "SOURCE_NOT_TRUSTED",
            Code::SourceNotInTransaction => "SOURCE_NOT_IN_TRANSACTION",
            Code::SourcesChanged => "SOURCES_CHANGED",
            Code::SizeLimit => "SIZE_LIMIT",
            Code::Io => "IO",
            Code::CorruptState => "CORRUPT_STATE",
            Code::WorkspaceIdMissing => "WORKSPACE_ID_MISSING",
            Code::IndexError => "INDEX_ERROR",
            Code::GitUnavailable => "GIT_UNAVAILABLE",
            Code::GitCommitFailed => "GIT_COMMIT_FAILED",
            Code::GitCorrupt => "GIT_CORRUPT",
            Code::SessionDatabase => "SESSION_DATABASE",
            Code::SessionDatabaseTls => "SESSION_DATABASE_TLS",
            Code::Internal => "INTERNAL",
        }
    }

    /// Whether retrying the same request later can succeed.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Code::Busy
                | Code::ConcurrentUpdate
                | Code::IndexBusy
                | Code::NoSpace
                | Code::SessionDatabase
                | Code::RemoteUnavailable
        )
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl From<scriptorium_txn::ErrorCode> for Code {
    fn from(code: scriptorium_txn::ErrorCode) -> Code {
        use scriptorium_txn::ErrorCode as E;
        match code {
            E::InvalidArgument => Code::InvalidArgument,
            E::Busy => Code::Busy,
            E::ConcurrentUpdate => Code::ConcurrentUpdate,
            E::BatchInstalled => Code::BatchInstalled,
            E::MemoryNotFound => Code::MemoryNotFound,
            E::PatchConflict => Code::PatchConflict,
            E::MissingSource => Code::MissingSource,
            E::PathOutsideWorkspace => Code::PathOutsideWorkspace,
            E::ReadOnlyPath => Code::ReadOnlyPath,
            E::AppendOnlyRequired => Code::AppendOnlyRequired,
            E::WriterPreconditionFailed => Code::WriterPreconditionFailed,
            E::InvalidTopicFormat => Code::InvalidTopicFormat,
            E::BlockIdRemoved => Code::BlockIdRemoved,
            E::TopicLinkNotBlock => Code::TopicLinkNotBlock,
            E::DanglingBlockLink => Code::DanglingBlockLink,
            E::MissingSourceReference => Code::MissingSourceReference,
            E::InvalidSourceReference => Code::InvalidSourceReference,
            E::SourceNotTrusted => Code::SourceNotTrusted,
            E::SourceNotInTransaction => Code::SourceNotInTransaction,
            E::SourcesChanged => Code::SourcesChanged,
            E::SizeLimit => Code::SizeLimit,
            E::Io => Code::Io,
            E::CorruptState => Code::CorruptState,
            E::WorkspaceIdMissing => Code::WorkspaceIdMissing,
            E::UncitedParagraph => Code::UncitedParagraph,
            E::NoSpace => Code::NoSpace,
            _ => Code::Internal,
        }
    }
}

impl From<scriptorium_search::ErrorCode> for Code {
    fn from(code: scriptorium_search::ErrorCode) -> Code {
        use scriptorium_search::ErrorCode as E;
        match code {
            E::InvalidArgument => Code::InvalidArgument,
            E::Io => Code::Io,
            E::Busy => Code::IndexBusy,
            E::Index => Code::IndexError,
        }
    }
}

impl From<scriptorium_history::ErrorCode> for Code {
    fn from(code: scriptorium_history::ErrorCode) -> Code {
        use scriptorium_history::ErrorCode as E;
        match code {
            E::GitUnavailable => Code::GitUnavailable,
            E::GitCommitFailed => Code::GitCommitFailed,
            E::GitCorrupt => Code::GitCorrupt,
            E::Io => Code::Io,
            E::InvalidArgument => Code::InvalidArgument,
            E::RevisionNotFound => Code::NotFound,
            E::RemoteUnavailable => Code::RemoteUnavailable,
            E::RemoteInvalid => Code::RemoteInvalid,
            _ => Code::Internal,
        }
    }
}

impl From<scriptorium_session_dag::ErrorCode> for Code {
    fn from(code: scriptorium_session_dag::ErrorCode) -> Code {
        use scriptorium_session_dag::ErrorCode as E;
        match code {
            E::DuplicateNode => Code::DuplicateNode,
            E::SessionNotFound => Code::SessionNotFound,
            E::NodeNotFound => Code::NodeNotFound,
            E::ParentCycle => Code::ParentCycle,
            E::Unsupported => Code::Unsupported,
            E::Io => Code::Io,
            E::SymlinkRefused => Code::SymlinkRefused,
            E::NotRegularFile => Code::NotRegularFile,
            E::Database => Code::SessionDatabase,
            E::DatabaseTls => Code::SessionDatabaseTls,
            E::NotJsonl => Code::NotJsonl,
            E::WrongFormat => Code::WrongFormat,
            E::UnrecognisedFormat => Code::UnrecognisedFormat,
            _ => Code::Internal,
        }
    }
}

/// One reason a change was refused, as the wire shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WireViolation {
    /// The violation's code.
    pub code: Code,
    /// What is wrong, and often what to do.
    pub message: String,
    /// The workspace-relative path, `null` for the whole tree.
    pub path: Option<String>,
    /// 1-based line (0 without a path).
    pub line: u32,
    /// 1-based column (0 without a path).
    pub col: u32,
}

/// A refused request, as every surface reports it (see the module docs for the JSON).
#[derive(Clone, Debug, PartialEq)]
pub struct WireError {
    /// The stable code.
    pub code: Code,
    /// What went wrong.
    pub message: String,
    /// The workspace-relative path concerned, if any.
    pub path: Option<String>,
    /// Every violation of a refused change (empty otherwise).
    pub violations: Vec<WireViolation>,
    /// Structured details of a refused change request (empty when there are none).
    pub details: Map<String, Value>,
}

impl WireError {
    /// An error with `code` and `message` and nothing else.
    pub fn new(code: Code, message: impl Into<String>) -> WireError {
        WireError {
            code,
            message: message.into(),
            path: None,
            violations: Vec::new(),
            details: Map::new(),
        }
    }

    /// The same error about `path`.
    #[must_use]
    pub fn with_path(mut self, path: impl Into<String>) -> WireError {
        self.path = Some(path.into());
        self
    }

    /// The transaction engine's error: its code, the change request's own message, path and
    /// details, every violation.
    pub fn from_txn(err: &scriptorium_txn::Error) -> WireError {
        let (message, path, details) = match err {
            scriptorium_txn::Error::Change { message, path, details, .. } => {
                (message.clone(), path.clone(), details.clone())
            }
            // The code travels beside the message, not inside it.
            scriptorium_txn::Error::Invalid { message, .. } => (message.clone(), None, Map::new()),
            _ => (err.to_string(), None, Map::new()),
        };
        let violations = err
            .violations()
            .iter()
            .map(|v| WireViolation {
                code: v.code.into(),
                message: v.message.clone(),
                path: v.path.clone(),
                line: v.line,
                col: v.col,
            })
            .collect();
        WireError { code: err.code().into(), message, path, violations, details }
    }

    /// The error's JSON document.
    pub fn to_json(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), self.code.as_str().into());
        error.insert("message".into(), self.message.clone().into());
        error.insert("path".into(), self.path.clone().map_or(Value::Null, Value::String));
        error.insert("violations".into(), json!(self.violations));
        if !self.details.is_empty() {
            error.insert("details".into(), Value::Object(self.details.clone()));
        }
        json!({ "ok": false, "error": error })
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if let Some(path) = &self.path {
            write!(f, " ({path})")?;
        }
        for violation in &self.violations {
            match &violation.path {
                Some(path) => write!(
                    f,
                    "\n  {path}:{}:{}: {} {}",
                    violation.line, violation.col, violation.code, violation.message
                )?,
                None => write!(f, "\n  {} {}", violation.code, violation.message)?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for WireError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_document_always_has_path_and_violations() {
        let json = WireError::new(Code::Busy, "the lock is held").to_json();
        assert_eq!(
            json,
            json!({"ok": false, "error": {
                "code": "BUSY", "message": "the lock is held", "path": null, "violations": []
            }})
        );
    }

    #[test]
    fn engine_codes_keep_their_names_on_the_wire() {
        let txn = scriptorium_txn::ErrorCode::UncitedParagraph;
        assert_eq!(Code::from(txn).as_str(), txn.as_str());
        // An IO failure is the same failure whichever part met it.
        assert_eq!(Code::from(scriptorium_search::ErrorCode::Io), Code::Io);
        assert_eq!(Code::from(scriptorium_session_dag::ErrorCode::Io), Code::Io);
        let database = Code::from(scriptorium_session_dag::ErrorCode::Database);
        assert_eq!((database, database.as_str()), (Code::SessionDatabase, "SESSION_DATABASE"));
        assert!(database.is_retryable());
        let tls = Code::from(scriptorium_session_dag::ErrorCode::DatabaseTls);
        assert_eq!((tls, tls.as_str()), (Code::SessionDatabaseTls, "SESSION_DATABASE_TLS"));
        assert!(!tls.is_retryable());
        assert_eq!(scriptorium_search::ErrorCode::Io.as_str(), Code::Io.as_str());
        let store = scriptorium_session_dag::ErrorCode::NotRegularFile;
        assert_eq!(Code::from(store).as_str(), store.as_str());
        assert!(Code::from(scriptorium_txn::ErrorCode::NoSpace).is_retryable());
    }
}
