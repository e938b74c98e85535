//! The three-way result of a write: `Ok` (everything owed is written, or nothing was owed), a
//! retryable [`WriteFailure`], or a permanent one, each with a reason code from the closed
//! [`FailureCode`] enum and the classification of every error the pipeline can meet.

use std::fmt;

use scriptorium_txn::{Error as TxnError, ErrorCode};
use serde::{Deserialize, Serialize};

use crate::model::{ErrorReason, ModelError};

/// Why a write failed: a closed enum (35 values). The string form is part of the public contract
/// (writer status, logs, the CLI's `--json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FailureCode {
    /// No session ID was given.
    MissingSessionId,
    /// The session or its nodes cannot be read.
    SessionNodesUnavailable,
    /// A forced write made no progress (the model changed nothing).
    WriterNoProgress,
    /// A precondition of the writer failed (configuration, API key, provenance).
    WriterPreconditionFailed,
    /// The memory backend could not be resolved.
    MemoryProviderResolutionFailed,
    /// The model could not be reached.
    ModelTransport,
    /// The model provider rate-limited the call.
    ModelRateLimit,
    /// The model provider failed (5xx).
    ModelProviderInternal,
    /// The model provider refused the credentials.
    ModelAuthentication,
    /// The model provider refused the operation.
    ModelAuthorization,
    /// The model provider refused the request as invalid.
    ModelInvalidRequest,
    /// The prompt does not fit the model's context.
    ModelContextLength,
    /// The provider refused the content.
    ModelContentPolicy,
    /// The model call timed out.
    ModelTimeout,
    /// The model failed otherwise.
    ModelFailureUnknown,
    /// An append-only caller tried to rewrite content.
    AppendOnlyRequired,
    /// The edits were rejected twice (first run and repair).
    CommitRejected,
    /// The workspace lock was held or the workspace moved.
    ConcurrentUpdate,
    /// Another write of the same session installed the batch first.
    BatchInstalled,
    /// Embeddings were unavailable (reserved; this implementation has none).
    EmbeddingUnavailable,
    /// The git commit failed.
    GitCommitFailed,
    /// A request argument was invalid.
    InvalidArgument,
    /// The topics did not parse.
    InvalidTopicFormat,
    /// A source was missing.
    MissingSource,
    /// A patch did not apply.
    PatchConflict,
    /// A path escaped the workspace.
    PathOutsideWorkspace,
    /// A path was read-only.
    ReadOnlyPath,
    /// The transaction failed otherwise (IO, corrupt state, record not found).
    TransactionFailureUnknown,
    /// Anything else.
    WriterFailureUnknown,
    /// Today's writer tokens reached `[memory.writer] max_tokens_per_day`: the turns stay
    /// pending until tomorrow (UTC) or a higher budget (retryable).
    WriterBudgetReached,
    /// The agent CLI that writes is not logged in (or its key was refused).
    WriterNotLoggedIn,
    /// The agent CLI's provider rate-limited it (retryable).
    WriterRateLimited,
    /// The agent CLI that writes is not installed (not on `PATH`).
    WriterCliMissing,
    /// The agent CLI is too old for the flags the writer runs it with.
    WriterCliTooOld,
    /// The agent ran and edited no topic file.
    WriterNoEdits,
}

impl FailureCode {
    /// The stable SCREAMING_SNAKE_CASE name.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::MissingSessionId => "MISSING_SESSION_ID",
            FailureCode::SessionNodesUnavailable => "SESSION_NODES_UNAVAILABLE",
            FailureCode::WriterNoProgress => "WRITER_NO_PROGRESS",
            FailureCode::WriterPreconditionFailed => "WRITER_PRECONDITION_FAILED",
            FailureCode::MemoryProviderResolutionFailed => "MEMORY_PROVIDER_RESOLUTION_FAILED",
            FailureCode::ModelTransport => "MODEL_TRANSPORT",
            FailureCode::ModelRateLimit => "MODEL_RATE_LIMIT",
            FailureCode::ModelProviderInternal => "MODEL_PROVIDER_INTERNAL",
            FailureCode::ModelAuthentication => "MODEL_AUTHENTICATION",
            FailureCode::ModelAuthorization => "MODEL_AUTHORIZATION",
            FailureCode::ModelInvalidRequest => "MODEL_INVALID_REQUEST",
            FailureCode::ModelContextLength => "MODEL_CONTEXT_LENGTH",
            FailureCode::ModelContentPolicy => "MODEL_CONTENT_POLICY",
            FailureCode::ModelTimeout => "MODEL_TIMEOUT",
            FailureCode::ModelFailureUnknown => "MODEL_FAILURE_UNKNOWN",
            FailureCode::AppendOnlyRequired => "APPEND_ONLY_REQUIRED",
            FailureCode::CommitRejected => "COMMIT_REJECTED",
            FailureCode::ConcurrentUpdate => "CONCURRENT_UPDATE",
            FailureCode::BatchInstalled => "BATCH_INSTALLED",
            FailureCode::EmbeddingUnavailable => "EMBEDDING_UNAVAILABLE",
            FailureCode::GitCommitFailed => "GIT_COMMIT_FAILED",
            FailureCode::InvalidArgument => "INVALID_ARGUMENT",
            FailureCode::InvalidTopicFormat => "INVALID_TOPIC_FORMAT",
            FailureCode::MissingSource => "MISSING_SOURCE",
            FailureCode::PatchConflict => "PATCH_CONFLICT",
            FailureCode::PathOutsideWorkspace => "PATH_OUTSIDE_WORKSPACE",
            FailureCode::ReadOnlyPath => "READ_ONLY_PATH",
            FailureCode::TransactionFailureUnknown => "TRANSACTION_FAILURE_UNKNOWN",
            FailureCode::WriterFailureUnknown => "WRITER_FAILURE_UNKNOWN",
            FailureCode::WriterBudgetReached => "WRITER_BUDGET_REACHED",
            FailureCode::WriterNotLoggedIn => "WRITER_NOT_LOGGED_IN",
            FailureCode::WriterRateLimited => "WRITER_RATE_LIMITED",
            FailureCode::WriterCliMissing => "WRITER_CLI_MISSING",
            FailureCode::WriterCliTooOld => "WRITER_CLI_TOO_OLD",
            FailureCode::WriterNoEdits => "WRITER_NO_EDITS",
        }
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed write: a diagnostic, whether retrying later can help, and the reason code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {reason}")]
pub struct WriteFailure {
    /// The diagnostic (may include provider text).
    pub reason: String,
    /// Whether retrying later can succeed (a held lock, a rate limit, a 5xx, a timeout).
    pub retryable: bool,
    /// The closed reason code.
    #[serde(rename = "reason_code")]
    pub code: FailureCode,
}

impl WriteFailure {
    /// A permanent failure.
    pub fn permanent(code: FailureCode, reason: impl Into<String>) -> Self {
        WriteFailure { reason: reason.into(), retryable: false, code }
    }

    /// Whether retrying later can succeed.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }
}

impl From<ModelError> for WriteFailure {
    fn from(error: ModelError) -> Self {
        let code = error.code.unwrap_or(match error.reason {
            ErrorReason::Transport => FailureCode::ModelTransport,
            ErrorReason::RateLimit => FailureCode::ModelRateLimit,
            ErrorReason::Provider => FailureCode::ModelProviderInternal,
            ErrorReason::Auth => FailureCode::ModelAuthentication,
            ErrorReason::Authz => FailureCode::ModelAuthorization,
            ErrorReason::Invalid => FailureCode::ModelInvalidRequest,
            ErrorReason::Context => FailureCode::ModelContextLength,
            ErrorReason::Policy => FailureCode::ModelContentPolicy,
            ErrorReason::Timeout => FailureCode::ModelTimeout,
            ErrorReason::Unknown => FailureCode::ModelFailureUnknown,
        });
        WriteFailure { reason: error.to_string(), retryable: error.retryable, code }
    }
}

impl From<TxnError> for WriteFailure {
    /// The transaction codes map to themselves, everything else is
    /// `TRANSACTION_FAILURE_UNKNOWN`; only a held lock or a moved workspace is retryable.
    fn from(error: TxnError) -> Self {
        let code = match error.code() {
            ErrorCode::Busy | ErrorCode::ConcurrentUpdate => FailureCode::ConcurrentUpdate,
            ErrorCode::BatchInstalled => FailureCode::BatchInstalled,
            ErrorCode::AppendOnlyRequired => FailureCode::AppendOnlyRequired,
            ErrorCode::InvalidArgument => FailureCode::InvalidArgument,
            ErrorCode::MissingSource => FailureCode::MissingSource,
            ErrorCode::PatchConflict => FailureCode::PatchConflict,
            ErrorCode::PathOutsideWorkspace => FailureCode::PathOutsideWorkspace,
            ErrorCode::ReadOnlyPath => FailureCode::ReadOnlyPath,
            ErrorCode::WriterPreconditionFailed => FailureCode::WriterPreconditionFailed,
            ErrorCode::InvalidTopicFormat => FailureCode::InvalidTopicFormat,
            _ => FailureCode::TransactionFailureUnknown,
        };
        WriteFailure { reason: error.to_string(), retryable: error.is_retryable(), code }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_their_stable_names() {
        for code in [FailureCode::CommitRejected, FailureCode::ModelRateLimit] {
            let json = serde_json::to_string(&code).expect("json");
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
        let failure = WriteFailure::from(ModelError::new(ErrorReason::RateLimit, "slow down"));
        assert!(failure.is_retryable());
        assert_eq!(failure.code, FailureCode::ModelRateLimit);
        let failure = WriteFailure::from(ModelError::new(ErrorReason::Auth, "no key"));
        assert!(!failure.is_retryable());
        assert_eq!(failure.code, FailureCode::ModelAuthentication);
    }
}
