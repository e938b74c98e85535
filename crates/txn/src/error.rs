//! The crate's error type: every failure carries a closed [`ErrorCode`] and its context.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use scriptorium_topics_format::source::AppendError;

use crate::code::ErrorCode;
use crate::ids::{Revision, TxnId};
use crate::validate::Violation;

/// Why a workspace operation failed. Callers match on [`Error::code`], never on the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another holder kept the write lock past the caller's timeout (retryable).
    #[error("another write transaction holds the workspace lock {} (waited {waited:?})", lock.display())]
    Busy {
        /// The lock file, `.scriptorium/write.lock`.
        lock: PathBuf,
        /// How long this caller waited.
        waited: Duration,
    },
    /// The batch this transaction writes was installed by an earlier transaction (two writers
    /// of one session raced; the install happens under the write lock, so only one wins).
    #[error("the batch was already installed by transaction {txn_id}")]
    BatchInstalled {
        /// The transaction that installed it.
        txn_id: String,
    },
    /// The workspace moved since the caller's base revision (retryable after a re-read).
    #[error("workspace changed since base_revision was read: {base_revision} != {revision}")]
    ConcurrentUpdate {
        /// The revision the caller based its change on.
        base_revision: Revision,
        /// The workspace's revision now.
        revision: Revision,
    },
    /// Validation refused the staged tree; every violation is listed (the stage is gone).
    #[error("transaction rejected: {}", summary(violations))]
    Rejected {
        /// Every violation found, in path order.
        violations: Vec<Violation>,
    },
    /// A request the API refuses (bad option, bad path shape, bad archive record).
    #[error("{code}: {message}")]
    Invalid {
        /// `INVALID_ARGUMENT`, `PATH_OUTSIDE_WORKSPACE`, `READ_ONLY_PATH`, …
        code: ErrorCode,
        /// What was wrong.
        message: String,
    },
    /// A change request ([`crate::change`]) refused before anything was installed, with the
    /// reference's exact message, the path it concerns and structured details (e.g. the
    /// `line`, `expected` and `found` of a patch conflict).
    #[error("{code}: {message}{}", path.as_ref().map(|p| format!(" ({p})")).unwrap_or_default())]
    Change {
        /// `INVALID_ARGUMENT`, `PATCH_CONFLICT`, `PATH_OUTSIDE_WORKSPACE`, `READ_ONLY_PATH`, …
        code: ErrorCode,
        /// The reference's message.
        message: String,
        /// The workspace-relative path concerned, if any.
        path: Option<String>,
        /// Structured details (empty when there are none).
        details: serde_json::Map<String, serde_json::Value>,
    },
    /// Source archiving refused the batch before writing anything.
    #[error("source archiving refused: {source}")]
    Archive {
        /// The planner's reason.
        #[from]
        source: AppendError,
    },
    /// The directory is not a memory workspace (no `topics/` and no `.scriptorium/`).
    #[error("not a memory workspace: {}", root.display())]
    NotAWorkspace {
        /// The directory given.
        root: PathBuf,
    },
    /// `.scriptorium/workspace-id` is missing in a workspace that has installed transactions,
    /// and nothing recorded it: a new ID would make every written turn pending again.
    #[error(
        "the workspace ID is missing ({}) in a workspace that has history; a new one would \
         make every turn already written pending again. Restore the file, or run \
         `scriptorium repair --workspace-id` to recover it from the session markers",
        path.display()
    )]
    WorkspaceIdMissing {
        /// `.scriptorium/workspace-id`.
        path: PathBuf,
    },
    /// Runtime state is unreadable or inconsistent.
    #[error("corrupt workspace state at {}: {message}", path.display())]
    Corrupt {
        /// The offending file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The install passed its linearization point (the new `topics/` is live) but finishing
    /// the bookkeeping failed; the next `open` completes it. The memory *is* installed.
    #[error("transaction {txn_id} installed as {revision}, but finishing it failed: {source}")]
    Unfinished {
        /// The installed transaction.
        txn_id: TxnId,
        /// The revision the workspace has after the next open.
        revision: Revision,
        /// What failed.
        source: Box<Error>,
    },
    /// A filesystem call failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// The operation (`read`, `rename`, `exchange`, …).
        op: &'static str,
        /// The path it was applied to.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

impl From<scriptorium_workspace_fs::Error> for Error {
    fn from(e: scriptorium_workspace_fs::Error) -> Error {
        Error::Io { op: e.op, path: e.path, source: e.source }
    }
}

fn summary(violations: &[Violation]) -> String {
    let mut parts: Vec<String> =
        violations.iter().take(3).map(|v| format!("{}: {}", v.code, v.message)).collect();
    if violations.len() > 3 {
        parts.push(format!("and {} more", violations.len() - 3));
    }
    parts.join("; ")
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Busy { .. } => ErrorCode::Busy,
            Error::ConcurrentUpdate { .. } => ErrorCode::ConcurrentUpdate,
            Error::BatchInstalled { .. } => ErrorCode::BatchInstalled,
            Error::Rejected { violations } => {
                violations.first().map_or(ErrorCode::InvalidTopicFormat, |v| v.code)
            }
            Error::Invalid { code, .. } | Error::Change { code, .. } => *code,
            Error::Archive { source } => match source {
                AppendError::PathEscapes { .. } | AppendError::NotRegularFile { .. } => {
                    ErrorCode::PathOutsideWorkspace
                }
                AppendError::InvalidArchive { .. } => ErrorCode::CorruptState,
                _ => ErrorCode::InvalidArgument,
            },
            Error::NotAWorkspace { .. } => ErrorCode::InvalidArgument,
            Error::Corrupt { .. } => ErrorCode::CorruptState,
            Error::WorkspaceIdMissing { .. } => ErrorCode::WorkspaceIdMissing,
            Error::Io { source, .. } if is_no_space(source) => ErrorCode::NoSpace,
            Error::Unfinished { .. } | Error::Io { .. } => ErrorCode::Io,
        }
    }

    /// Whether the same call can succeed later unchanged (`BUSY`, `CONCURRENT_UPDATE`).
    pub fn is_retryable(&self) -> bool {
        self.code().is_retryable()
    }

    /// The violations of a rejected transaction (empty for every other error).
    pub fn violations(&self) -> &[Violation] {
        match self {
            Error::Rejected { violations } => violations,
            _ => &[],
        }
    }

    pub(crate) fn io(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> Error {
        let path = path.to_path_buf();
        move |source| Error::Io { op, path, source }
    }

    pub(crate) fn corrupt(path: &Path, message: impl Into<String>) -> Error {
        Error::Corrupt { path: path.to_path_buf(), message: message.into() }
    }

    pub(crate) fn invalid(code: ErrorCode, message: impl Into<String>) -> Error {
        Error::Invalid { code, message: message.into() }
    }
}

/// `ENOSPC` or `EDQUOT`: the disk (or the quota) is full; retrying after space is freed works.
pub(crate) fn is_no_space(error: &io::Error) -> bool {
    matches!(error.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded)
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
