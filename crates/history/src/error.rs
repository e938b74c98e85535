//! The error type of this crate and its closed set of codes.

use std::fmt;
use std::path::PathBuf;

/// A stable code for every way a history operation can fail. Callers match on the code, never on
/// message text; any failure of [`History::commit`](crate::History::commit) after an install is
/// reported by the caller as `memory_committed = true, git_committed = false`. The string form
/// is part of the public contract; a code is never renamed, only added.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    /// The repository could not be opened or created (missing, unreadable, not a repository),
    /// or the `git` program, which pruning needs, could not be run (not installed, not on
    /// `PATH`).
    GitUnavailable,
    /// Writing objects, references or the index failed, or the `git` program failed to prune
    /// the repository; nothing of the workspace itself is affected.
    GitCommitFailed,
    /// The repository exists but its history cannot be read (missing or malformed objects).
    GitCorrupt,
    /// A workspace file or directory could not be read.
    Io,
    /// The request itself is malformed (a path escaping the workspace, a bad transaction id,
    /// an ambiguous commit prefix).
    InvalidArgument,
    /// No commit of the history matches the revision asked for.
    RevisionNotFound,
    /// The remote could not be reached or refused the exchange (fetch or push); retrying later
    /// can succeed.
    RemoteUnavailable,
    /// The remote is not one a sync can use (no repository there, or a non-bare repository with
    /// the branch checked out): retrying cannot help until the remote or its name is fixed.
    RemoteInvalid,
}

impl ErrorCode {
    /// The stable SCREAMING_SNAKE_CASE name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::GitUnavailable => "GIT_UNAVAILABLE",
            ErrorCode::GitCommitFailed => "GIT_COMMIT_FAILED",
            ErrorCode::GitCorrupt => "GIT_CORRUPT",
            ErrorCode::Io => "IO",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::RevisionNotFound => "REVISION_NOT_FOUND",
            ErrorCode::RemoteUnavailable => "REMOTE_UNAVAILABLE",
            ErrorCode::RemoteInvalid => "REMOTE_INVALID",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can go wrong in this crate. Each variant names the git operation (a short
/// static phrase such as `"read HEAD"`) and, where one is involved, the path.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Opening or creating the repository failed.
    #[error("git repository at {root}: {op} failed: {source}")]
    Repository {
        /// The operation (`"open"`, `"init"`).
        op: &'static str,
        /// The workspace root.
        root: PathBuf,
        /// The underlying git error.
        #[source]
        source: gix::Error,
    },
    /// Reading or writing `info/exclude` failed.
    #[error("git {op} at {path}: {source}")]
    Exclude {
        /// The operation (`"read info/exclude"`, `"write info/exclude"`).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying IO error.
        #[source]
        source: std::io::Error,
    },
    /// Reading the existing history (refs, commits, trees) failed.
    #[error("git {op}{}: {source}", fmt_path(path.as_deref()))]
    Read {
        /// The operation (`"read HEAD"`, `"read tree"`, `"walk history"`, …).
        op: &'static str,
        /// The repository path involved, if any.
        path: Option<String>,
        /// The underlying git error.
        #[source]
        source: gix::Error,
    },
    /// Writing objects, the reference or the index failed.
    #[error("git {op}{}: {source}", fmt_path(path.as_deref()))]
    Write {
        /// The operation (`"write blob"`, `"write tree"`, `"update HEAD"`, `"write index"`).
        op: &'static str,
        /// The repository path involved, if any.
        path: Option<String>,
        /// The underlying git error.
        #[source]
        source: gix::Error,
    },
    /// A workspace file or directory could not be read.
    #[error("git {op} at {path}: {source}")]
    Workspace {
        /// The operation (`"read file"`, `"read directory"`, `"stat"`).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying IO error.
        #[source]
        source: std::io::Error,
    },
    /// A changed path given by the caller is not a plain workspace-relative path.
    #[error("invalid workspace path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The transaction id cannot be written as a `Txn-Id:` trailer.
    #[error("invalid transaction id {txn_id:?}: {reason}")]
    InvalidTxnId {
        /// The id as given.
        txn_id: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// No commit of the (first-parent) history matches the revision.
    #[error("no commit {rev:?} in the history: {reason}")]
    RevisionNotFound {
        /// The revision as given.
        rev: String,
        /// What was looked for.
        reason: &'static str,
    },
    /// Fetching from or pushing to a remote failed.
    #[error("git {op} {url}: {message}")]
    Remote {
        /// The operation (`"fetch"`, `"push"`).
        op: &'static str,
        /// The remote as configured.
        url: String,
        /// What failed (gix's error, or the git CLI's own words).
        message: String,
    },
    /// The remote is not a repository a sync can use; the message says what to fix.
    #[error("git {op} {url}: {message}")]
    RemoteInvalid {
        /// The operation (`"fetch"`, `"push"`).
        op: &'static str,
        /// The remote as configured.
        url: String,
        /// What is wrong and what to do about it.
        message: String,
    },
    /// A commit id prefix matches more than one commit.
    #[error("commit prefix {rev:?} is ambiguous; give more digits")]
    AmbiguousRevision {
        /// The prefix as given.
        rev: String,
    },
    /// A rewrite's `known` map names a rewritten commit this repository does not have.
    #[error(
        "the rewritten commit {new} (of {old}) is not in this repository: fetch it before \
         rewriting with its map"
    )]
    KnownCommitMissing {
        /// The commit of this history the map rewrites.
        old: String,
        /// The commit it maps to, which is missing.
        new: String,
    },
    /// A ref points (possibly through a tag) at an object a rewrite cannot scrub.
    #[error("the ref {name} points at {kind}, which a rewrite cannot scrub: delete the ref")]
    UnscrubbableRef {
        /// The ref.
        name: String,
        /// What it points at (`"a blob"`).
        kind: &'static str,
    },
    /// The `git` program could not be run.
    #[error("cannot run the git program to {op}: {source} (is git installed and on PATH?)")]
    GitProgram {
        /// What it was run for (`"prune"`, `"count objects"`).
        op: &'static str,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },
    /// The `git` program ran and failed.
    #[error("git {op} in {git_dir} failed ({status}): {stderr}")]
    GitCommand {
        /// What it was run for (`"gc"`, `"count objects"`).
        op: &'static str,
        /// The repository (its git directory).
        git_dir: PathBuf,
        /// The exit status.
        status: String,
        /// What git said on standard error.
        stderr: String,
    },
}

fn fmt_path(path: Option<&str>) -> String {
    path.map(|path| format!(" ({path})")).unwrap_or_default()
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Repository { .. } | Error::Exclude { .. } | Error::GitProgram { .. } => {
                ErrorCode::GitUnavailable
            }
            Error::Read { .. } => ErrorCode::GitCorrupt,
            Error::Write { .. } | Error::GitCommand { .. } => ErrorCode::GitCommitFailed,
            Error::Workspace { .. } => ErrorCode::Io,
            Error::InvalidPath { .. }
            | Error::InvalidTxnId { .. }
            | Error::AmbiguousRevision { .. }
            | Error::UnscrubbableRef { .. } => ErrorCode::InvalidArgument,
            Error::RevisionNotFound { .. } | Error::KnownCommitMissing { .. } => {
                ErrorCode::RevisionNotFound
            }
            Error::Remote { .. } => ErrorCode::RemoteUnavailable,
            Error::RemoteInvalid { .. } => ErrorCode::RemoteInvalid,
        }
    }

    /// Whether retrying the same operation later can succeed without changing the request.
    /// History operations run under the caller's workspace lock, so none is retryable as such;
    /// a failed commit is repaired by the next [`catch_up`](crate::History::catch_up) instead.
    /// A remote that could not be reached is the exception: the exchange can be tried again
    /// (not so a remote that is no usable repository, [`ErrorCode::RemoteInvalid`]).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Remote { .. })
    }

    pub(crate) fn read(op: &'static str, path: Option<&str>, source: gix::Error) -> Self {
        Error::Read { op, path: path.map(str::to_owned), source }
    }

    pub(crate) fn write(op: &'static str, path: Option<&str>, source: gix::Error) -> Self {
        Error::Write { op, path: path.map(str::to_owned), source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_travel_across_threads_and_codes_are_stable() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<Error>();
        let err = Error::InvalidPath { path: "../x".into(), reason: "r" };
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        assert_eq!(err.code().to_string(), "INVALID_ARGUMENT");
        assert!(!err.is_retryable());
    }
}
