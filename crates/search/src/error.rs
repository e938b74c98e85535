//! The crate's error type and its closed set of codes.

use std::path::PathBuf;

/// What went wrong in a search or an index update.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The query is malformed: a bad date, `date_from` after `date_to`, a speaker filter with
    /// topics-only recall.
    #[error("invalid argument: {message}")]
    InvalidArgument {
        /// What is wrong, for a person.
        message: String,
    },
    /// Reading the workspace or writing the index's own files failed.
    #[error("I/O error at {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Another process holds the index writer, and the index does not reflect the requested
    /// revision yet. Retry shortly.
    #[error("the search index is being updated by another process")]
    Busy,
    /// tantivy failed on an index it had just opened or rebuilt.
    #[error("search index error: {message}")]
    Index {
        /// tantivy's message.
        message: String,
    },
}

/// The stable code of an [`Error`]; callers match on this, never on message text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// [`Error::InvalidArgument`].
    InvalidArgument,
    /// [`Error::Io`].
    Io,
    /// [`Error::Busy`].
    Busy,
    /// [`Error::Index`].
    Index,
}

impl ErrorCode {
    /// The code as it appears in JSON: `INVALID_ARGUMENT`, `IO`, `INDEX_BUSY`,
    /// `INDEX_ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::Io => "IO",
            ErrorCode::Busy => "INDEX_BUSY",
            ErrorCode::Index => "INDEX_ERROR",
        }
    }
}

impl Error {
    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            Error::Io { .. } => ErrorCode::Io,
            Error::Busy => ErrorCode::Busy,
            Error::Index { .. } => ErrorCode::Index,
        }
    }

    /// Whether retrying the same call later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Busy | Error::Io { .. })
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument { message: message.into() }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

impl From<tantivy::TantivyError> for Error {
    fn from(error: tantivy::TantivyError) -> Self {
        match error {
            tantivy::TantivyError::LockFailure(..) => Error::Busy,
            other => Error::Index { message: other.to_string() },
        }
    }
}

impl From<tantivy::directory::error::LockError> for Error {
    fn from(error: tantivy::directory::error::LockError) -> Self {
        match error {
            tantivy::directory::error::LockError::LockBusy => Error::Busy,
            other => Error::Index { message: other.to_string() },
        }
    }
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
