//! The closed set of transaction error and violation codes.

use std::fmt;

/// A stable code for everything a transaction can refuse. Callers (the writer, the REST API, the
/// MCP tool, the CLI) match on the code, never on message text. The string form is part of the
/// public contract; a code is never renamed, only added.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    // ---- request and concurrency ----
    /// A malformed request (shape, limits, options).
    InvalidArgument,
    /// Another process holds the workspace write lock (retryable; the error names the lock).
    Busy,
    /// The workspace changed since the caller's `base_revision` (retryable after a re-read).
    ConcurrentUpdate,
    /// A record ID named by a change does not exist.
    MemoryNotFound,
    /// A patch or whole-file change does not apply to the current files.
    PatchConflict,
    /// A change references a source that was not declared or archived.
    MissingSource,
    /// A path escapes the workspace (absolute, `..`, symlink).
    PathOutsideWorkspace,
    /// A path that exists but is not writable (only `topics/**/*.md` is).
    ReadOnlyPath,
    /// An append-only caller tried to rewrite existing content.
    AppendOnlyRequired,
    /// The caller lacks what the operation needs, e.g. creating a source without complete
    /// persisted authority.
    WriterPreconditionFailed,

    // ---- validation of the staged tree (see `validate`) ----
    /// The staged topics do not parse strictly; the violation carries the topic diagnostic.
    InvalidTopicFormat,
    /// A block ID of the baseline is missing from the staged tree.
    BlockIdRemoved,
    /// A Topic-to-Topic link in a changed unit does not target `#^block-id`.
    TopicLinkNotBlock,
    /// A block link targets an ID that does not exist after the edit.
    DanglingBlockLink,
    /// A cited source reference does not resolve in the live archive.
    MissingSourceReference,
    /// A cited source reference is malformed.
    InvalidSourceReference,
    /// A reference new to a block resolves to a pending (untrusted) source.
    SourceNotTrusted,
    /// A reference new to the workspace is not among this transaction's declared sources.
    SourceNotInTransaction,
    /// `sources/` changed between `begin` and validation (the archive is append-only and only
    /// the runtime appends to it).
    SourcesChanged,
    /// A file or the whole change exceeds a size limit.
    SizeLimit,

    // ---- the workspace itself ----
    /// A filesystem operation failed.
    Io,
    /// Runtime state (revision, intent record, workspace id) is unreadable or inconsistent.
    CorruptState,
    /// The workspace ID is lost in a workspace with history (see
    /// [`crate::Error::WorkspaceIdMissing`]).
    WorkspaceIdMissing,
    /// A paragraph cites no source (every paragraph of a topic must cite an archived message);
    /// also reported for text a transaction would otherwise drop.
    UncitedParagraph,
    /// A filesystem operation failed for lack of space (retryable once space is freed).
    NoSpace,
    /// The transaction writes a batch of session records that an earlier transaction already
    /// installed (see [`crate::BeginOptions::batch`]): installing it again would write it twice.
    BatchInstalled,
}

impl ErrorCode {
    /// The stable SCREAMING_SNAKE_CASE name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::Busy => "BUSY",
            ErrorCode::ConcurrentUpdate => "CONCURRENT_UPDATE",
            ErrorCode::MemoryNotFound => "MEMORY_NOT_FOUND",
            ErrorCode::PatchConflict => "PATCH_CONFLICT",
            ErrorCode::MissingSource => "MISSING_SOURCE",
            ErrorCode::PathOutsideWorkspace => "PATH_OUTSIDE_WORKSPACE",
            ErrorCode::ReadOnlyPath => "READ_ONLY_PATH",
            ErrorCode::AppendOnlyRequired => "APPEND_ONLY_REQUIRED",
            ErrorCode::WriterPreconditionFailed => "WRITER_PRECONDITION_FAILED",
            ErrorCode::InvalidTopicFormat => "INVALID_TOPIC_FORMAT",
            ErrorCode::BlockIdRemoved => "BLOCK_ID_REMOVED",
            ErrorCode::TopicLinkNotBlock => "TOPIC_LINK_NOT_BLOCK",
            ErrorCode::DanglingBlockLink => "DANGLING_BLOCK_LINK",
            ErrorCode::MissingSourceReference => "MISSING_SOURCE_REFERENCE",
            ErrorCode::InvalidSourceReference => "INVALID_SOURCE_REFERENCE",
            ErrorCode::SourceNotTrusted => "SOURCE_NOT_TRUSTED",
            ErrorCode::SourceNotInTransaction => "SOURCE_NOT_IN_TRANSACTION",
            ErrorCode::SourcesChanged => "SOURCES_CHANGED",
            ErrorCode::SizeLimit => "SIZE_LIMIT",
            ErrorCode::Io => "IO",
            ErrorCode::CorruptState => "CORRUPT_STATE",
            ErrorCode::WorkspaceIdMissing => "WORKSPACE_ID_MISSING",
            ErrorCode::UncitedParagraph => "UNCITED_PARAGRAPH",
            ErrorCode::NoSpace => "NO_SPACE",
            ErrorCode::BatchInstalled => "BATCH_INSTALLED",
        }
    }

    /// Whether retrying the same operation later can succeed without changing the request.
    pub fn is_retryable(self) -> bool {
        matches!(self, ErrorCode::Busy | ErrorCode::ConcurrentUpdate | ErrorCode::NoSpace)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
