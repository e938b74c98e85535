//! Git history of the memory workspace: one commit per installed transaction, written with `gix`
//! directly from the workspace files, readable by the plain `git` CLI.
//!
//! Key decision: git is history, not the commit point. The transaction engine installs first;
//! a commit failure afterwards is reported by the caller as `memory_committed = true,
//! git_committed = false`, never as a rollback, and [`History::catch_up`] repairs it on the next
//! open. So that a one-paragraph transaction commits in milliseconds however large `sources/`
//! is, [`History::commit`] edits `HEAD`'s tree at exactly the paths the transaction changed and
//! reads no other workspace file; full scans (first commit, catch-up) reuse git's stat cache in
//! `.git/index`, so even they rehash only files whose stat data changed.
//!
//! Commit layout:
//! - message: the caller's message, a blank line, and the trailer `Txn-Id: <txn id>`;
//! - author and committer: the fixed identity `Scriptorium <memory@scriptorium.invalid>` at the
//!   caller-supplied [`Time`], so no git configuration is needed;
//! - tree: every regular file of the workspace except internal paths ([`is_internal_path`]:
//!   `.scriptorium*`, `.nativemem*`, `.git`); symlinks are skipped, never followed;
//! - `.git/index` is rewritten from the new tree (carrying stat data) so `git status` is clean;
//! - never an empty commit: a transaction whose tree `HEAD` already holds (it changed only
//!   internal files, or a `git commit` by hand recorded its files first) is recorded by the
//!   marker `.git/scriptorium-settled` (`<txn id> <commit>`), which names it while `HEAD` is that
//!   commit. Every commit of a transaction writes the marker too, so [`History::settled`]
//!   sees that `HEAD` holds the installed transaction from `HEAD`, the branch file and the
//!   marker, without opening the repository (what a search process pays on its way out).
//!
//! # Limitations
//!
//! - Callers must hold the workspace write lock: two writers racing on `HEAD` make the second
//!   fail with `GIT_COMMIT_FAILED` (gix updates `HEAD` compare-and-set), not merge.
//! - Objects and refs are written without `fsync` (gix's default): a power loss right after a
//!   commit can lose it, which the next [`History::catch_up`] repairs; a process kill cannot.
//! - History is linear as far as this crate is concerned: [`History::log`] follows first parents.
//! - Keeping `.git/index` in step costs time proportional to the number of tracked files (not
//!   their size): the index is read and rewritten on every commit.
//! - Files are read whole into memory to be hashed; file names must be valid UTF-8 on non-Unix
//!   systems. Names git refuses in trees (`.git` spelled any way, `git~1`) are skipped.
//!
//! # Example
//!
//! ```
//! use scriptorium_history::{CommitRequest, History, Time};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir_all(dir.path().join("topics"))?;
//! std::fs::write(dir.path().join("topics/core.md"), "# Core\n")?;
//!
//! let history = History::open_or_init(dir.path(), Time::utc(1_700_000_000))?;
//! std::fs::write(dir.path().join("topics/core.md"), "# Core\n\nA paragraph.\n")?;
//! let changed = ["topics/core.md".to_owned()];
//! let outcome = history.commit(CommitRequest {
//!     txn_id: "t-0001",
//!     message: "memory: edit topics/core.md",
//!     changed: Some(&changed),
//!     time: Time::utc(1_700_000_060),
//!     merge: None,
//! })?;
//! assert!(outcome.created);
//! assert_eq!(history.last_txn_id()?.as_deref(), Some("t-0001"));
//! assert_eq!(history.log(Some("topics/core.md"), 10)?.len(), 2);
//! # Ok(())
//! # }
//! ```

mod error;
mod message;
mod paths;
mod prune;
mod rewrite;
mod scan;
mod sync;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice, ByteVec};
use gix::hash::ObjectId;

pub use error::{Error, ErrorCode};
pub use message::{IDENTITY_EMAIL, IDENTITY_NAME, INITIAL_MESSAGE, TXN_ID_TRAILER, Time};
pub use paths::{is_internal_path, is_runtime_name};
pub use prune::prune_repository;
pub use rewrite::{RewritePlan, Rewritten, Scrub, Scrubbed};
pub use sync::{Ancestry, FETCHED_PREFIX, Pushed};

use message::{check_txn_id, summary_of, txn_id_of, with_trailer};
use paths::{check_changed_path, is_git_reserved_name, is_internal_bytes};
use scan::{Found, Scanner};

/// The lines [`History::open_or_init`] makes sure `.git/info/exclude` holds, so that the git CLI
/// ignores runtime state as well.
pub const EXCLUDES: [&str; 2] = ["/.scriptorium*", "/.nativemem*"];

/// The git history of one memory workspace (the repository at `<root>/.git`).
///
/// It holds only the workspace root and opens the repository for each call (about a
/// millisecond), because a `gix::Repository` is neither `Send` nor `Sync` with the features
/// we build gix with, and so that refs and packs rewritten meanwhile by the git CLI (`git gc`)
/// are always seen fresh. `History` is `Send + Sync`.
#[derive(Clone, Debug)]
pub struct History {
    root: PathBuf,
}

/// The repository opened for one call.
struct Repo<'h> {
    root: &'h Path,
    repo: gix::Repository,
}

/// One commit to make; see [`History::commit`].
#[derive(Clone, Copy, Debug)]
pub struct CommitRequest<'a> {
    /// The installed transaction; becomes the `Txn-Id:` trailer.
    pub txn_id: &'a str,
    /// The commit message without trailer, e.g. `memory: incremental transaction` (trailing
    /// whitespace is trimmed; an empty one becomes `memory: transaction <txn id>`).
    pub message: &'a str,
    /// Workspace-relative paths (`/`-separated) the transaction changed, including the derived
    /// views it rebuilt. A path that no longer exists is removed; a directory stands for its
    /// whole subtree. Paths not listed keep their entry from `HEAD`. `None` scans the whole
    /// workspace.
    pub changed: Option<&'a [String]>,
    /// The author and committer time.
    pub time: Time,
    /// A sync's merge: the remote commit (hex) whose tree the transaction merged in. The commit
    /// gets it as second parent; when `HEAD` is an ancestor of it and the new tree is its tree,
    /// the branch moves to it instead (a fast-forward, no new commit), so two clones that took
    /// each other's changes end on the same commit.
    pub merge: Option<&'a str>,
}

/// What [`History::commit`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitOutcome {
    /// The hex id of `HEAD` afterwards (the new commit, or the existing one).
    pub commit: String,
    /// Whether a new commit was made.
    pub created: bool,
    /// Whether `.git/index` was rewritten. `false` means only that `git status` may show
    /// spurious changes until the next commit; the history itself is complete.
    pub index_written: bool,
    /// How many workspace files were read and hashed (the rest came from `HEAD`'s tree or
    /// from the stat cache); useful to check that unchanged files are not reread.
    pub files_hashed: usize,
}

/// One commit as listed by [`History::log`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// The hex commit id.
    pub commit: String,
    /// The committer time.
    pub time: Time,
    /// The first line of the message.
    pub summary: String,
    /// The `Txn-Id` trailer, if the commit has one.
    pub txn_id: Option<String>,
}

/// A commit that changed one file (see [`History::file_changes`]): the commit, and the file's
/// text there and in the commit's first parent (`None` where it did not exist as a file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The commit.
    pub entry: LogEntry,
    /// The file in the first parent (`None`: the commit created it).
    pub before: Option<String>,
    /// The file in the commit (`None`: the commit removed it).
    pub after: Option<String>,
}

/// One file a commit changed (see [`History::commit_changes`]): its text in the first parent
/// and in the commit (lossy UTF-8; `None` where it did not exist as a file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangedFile {
    /// The workspace-relative path.
    pub path: String,
    /// The file in the first parent (`None`: the commit created it).
    pub before: Option<String>,
    /// The file in the commit (`None`: the commit removed it).
    pub after: Option<String>,
}

struct HeadInfo {
    commit: ObjectId,
    tree: ObjectId,
    txn_id: Option<String>,
}

impl History {
    /// Open the repository at `<root>/.git`, creating it if missing.
    ///
    /// Also makes sure `.git/info/exclude` holds [`EXCLUDES`], and, if `HEAD` has no commit yet,
    /// commits the existing workspace files as [`INITIAL_MESSAGE`] (an empty tree if there are
    /// none) at `time`, without a `Txn-Id` trailer. Nothing is committed when `HEAD` exists.
    ///
    /// Atomicity: repository creation is not atomic (a crash can leave a partial `.git`, which
    /// then fails to open with `GIT_UNAVAILABLE`); `info/exclude` is replaced by a rename; the
    /// initial commit is atomic as described at [`History::commit`]. Call it under the workspace
    /// write lock.
    pub fn open_or_init(root: impl AsRef<Path>, time: Time) -> Result<History, Error> {
        let root = root.as_ref().to_path_buf();
        let exists = root.join(".git").symlink_metadata().is_ok();
        let repo = if exists {
            gix::open_opts(&root, gix::open::Options::isolated())
                .map_err(|source| Error::Repository { op: "open", root: root.clone(), source })?
        } else {
            gix::ThreadSafeRepository::init_opts(
                &root,
                gix::create::Kind::WithWorktree,
                gix::create::Options::default(),
                gix::open::Options::isolated(),
            )
            .map_err(|source| Error::Repository { op: "init", root: root.clone(), source })?
            .to_thread_local()
        };
        ensure_excludes(repo.git_dir())?;
        let history = History { root };
        let open = Repo { root: &history.root, repo };
        if open.head()?.is_none() {
            open.commit_inner(format!("{INITIAL_MESSAGE}\n"), None, None, time)?;
        }
        Ok(history)
    }

    /// The history at `root` when it needs no repair for `installed_txn_id`: the repository
    /// exists, `.git/info/exclude` holds [`EXCLUDES`], no lock file a killed committer could
    /// have left is present, `HEAD` names the installed transaction and `.git/index` is not
    /// older than the branch (with nothing installed yet, an empty `installed_txn_id`: `HEAD`
    /// holds a commit). Reads only (but for writing the settled marker when it had to read
    /// `HEAD`'s commit to know); `None` means: repair under the workspace lock
    /// ([`History::open_or_init`], [`History::remove_stale_locks`], [`History::catch_up`]).
    pub fn settled(root: impl AsRef<Path>, installed_txn_id: &str) -> Option<History> {
        let history = History { root: root.as_ref().to_path_buf() };
        let git = history.root.join(".git");
        let exclude = std::fs::read_to_string(git.join("info/exclude")).ok()?;
        if !EXCLUDES.iter().all(|line| exclude.lines().any(|l| l.trim() == *line)) {
            return None;
        }
        if history.lock_files().iter().any(|path| path.exists()) {
            return None;
        }
        if installed_txn_id.is_empty() {
            // Nothing installed yet (a workspace another program wrote): there is nothing to
            // catch up, so the history is settled once `HEAD` holds a commit.
            if history.loose_head().is_some() {
                return Some(history);
            }
            let has_commit = history.open().ok()?.head().ok()?.is_some();
            return has_commit.then_some(history);
        }
        if history.settled_by_marker(installed_txn_id) {
            return Some(history);
        }
        let open = history.open().ok()?;
        let head = open.head().ok()??;
        if head.txn_id.as_deref() != Some(installed_txn_id) || open.index_is_stale().ok()? {
            return None;
        }
        // The marker this check could not use (a repository older than it): the next one can.
        // A pair read from `HEAD` itself, so at worst it is stale once `HEAD` moves on.
        let _ = write_settled(&history.root, installed_txn_id, head.commit);
        Some(history)
    }

    /// Whether the settled marker shows, without opening the repository, that `HEAD` holds
    /// `installed_txn_id` and `.git/index` is not older than the branch: `HEAD` is a loose
    /// branch whose commit the marker names with that transaction. Anything else (a detached
    /// or packed `HEAD`, a commit made by hand, a torn marker) says `false`, and the caller
    /// reads `HEAD`'s commit instead.
    fn settled_by_marker(&self, installed_txn_id: &str) -> bool {
        let git = self.root.join(".git");
        let Some((reference, commit)) = self.loose_head() else { return false };
        let Some((txn, settled)) = read_settled(&self.root) else { return false };
        if txn != installed_txn_id || settled != commit {
            return false;
        }
        let mtime = |path: &Path| std::fs::symlink_metadata(path).and_then(|m| m.modified()).ok();
        matches!((mtime(&git.join("index")), mtime(&reference)), (Some(index), Some(branch)) if index >= branch)
    }

    /// `HEAD`'s branch file and the commit it names, read without opening the repository, when
    /// `HEAD` is a loose branch under `refs/heads/` (`None` for anything else: detached, packed,
    /// unborn or unreadable).
    fn loose_head(&self) -> Option<(PathBuf, ObjectId)> {
        let git = self.root.join(".git");
        let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
        let branch = head.strip_prefix("ref: ").map(str::trim_end)?;
        if !branch.starts_with("refs/heads/")
            || branch.split('/').any(|c| c == ".." || c.is_empty())
        {
            return None;
        }
        let reference = git.join(branch);
        let commit = std::fs::read_to_string(&reference).ok()?;
        let commit = ObjectId::from_hex(commit.trim_end().as_bytes()).ok()?;
        Some((reference, commit))
    }

    /// Every lock file a committer takes (`HEAD.lock`, `index.lock`, `packed-refs.lock`, and
    /// `*.lock` under `refs/`).
    fn lock_files(&self) -> Vec<PathBuf> {
        let git = self.root.join(".git");
        let mut found: Vec<PathBuf> =
            ["HEAD.lock", "index.lock", "packed-refs.lock"].iter().map(|n| git.join(n)).collect();
        let mut dirs = vec![git.join("refs")];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else { continue };
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if entry.file_name().to_string_lossy().ends_with(".lock") {
                    found.push(entry.path());
                }
            }
        }
        found
    }

    fn open(&self) -> Result<Repo<'_>, Error> {
        let repo = gix::open_opts(&self.root, gix::open::Options::isolated())
            .map_err(|source| Error::Repository { op: "open", root: self.root.clone(), source })?;
        Ok(Repo { root: &self.root, repo })
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Commit the installed transaction `request.txn_id`.
    ///
    /// The new tree is `HEAD`'s tree with exactly the `changed` paths re-read from the
    /// workspace (see [`CommitRequest::changed`]); only those files are read and hashed, and
    /// only the trees on their paths are rewritten. Unchanged files cost nothing but their entry
    /// in `.git/index`, which is read and rewritten whole (time proportional to the number of
    /// tracked files, independent of their size). With `changed: None` the whole workspace is scanned, rehashing only files
    /// whose stat data differs from `.git/index`. Internal paths are never committed (a listed
    /// internal path is ignored, and internal entries of a foreign `HEAD` are dropped);
    /// symlinks are skipped, never followed (a path that became a symlink is removed).
    ///
    /// No commit is made (`created: false`) if the tree equals `HEAD`'s and `HEAD` already
    /// carries this transaction id. If the tree is unchanged but `HEAD` names another
    /// transaction (or none), an empty-diff commit is still made, so that `HEAD` always names
    /// the installed transaction.
    ///
    /// Atomicity: blobs and trees are written first (each loose object by temp file and
    /// rename), then `HEAD`'s branch is moved in one locked compare-and-set step (the
    /// linearization point: the commit exists iff the ref moved), then `.git/index` is replaced
    /// by lock file and rename. A failure before the ref update leaves only unreferenced objects;
    /// a failure writing the index is reported as `index_written: false`, not as an error.
    pub fn commit(&self, request: CommitRequest<'_>) -> Result<CommitOutcome, Error> {
        check_txn_id(request.txn_id)?;
        let message = with_trailer(request.message, request.txn_id);
        let merge = request
            .merge
            .map(|hex| {
                ObjectId::from_hex(hex.as_bytes()).map_err(|_| Error::RevisionNotFound {
                    rev: hex.to_owned(),
                    reason: "not a full commit id",
                })
            })
            .transpose()?;
        self.open()?.commit_merge(
            message,
            Some(request.txn_id),
            request.changed,
            request.time,
            merge,
        )
    }

    /// The `Txn-Id` trailer of `HEAD`; `None` if `HEAD` has none (e.g. a commit made with the
    /// git CLI, or the initial commit) or there is no commit at all.
    pub fn last_txn_id(&self) -> Result<Option<String>, Error> {
        Ok(self.open()?.head()?.and_then(|head| head.txn_id))
    }

    /// Removes the lock files a killed committer can leave in `.git` (`HEAD.lock`,
    /// `index.lock`, `packed-refs.lock`, and `*.lock` under `refs/`), which would otherwise make
    /// every later commit fail. Returns the paths removed (workspace-relative).
    ///
    /// Only call this while no other process can be committing to this repository: the memory
    /// backend calls it under the workspace write lock, the only place it commits from. A git
    /// CLI running in the memory repository at the same moment would lose its lock.
    pub fn remove_stale_locks(&self) -> Result<Vec<String>, Error> {
        let mut removed = Vec::new();
        for path in self.lock_files() {
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                std::fs::remove_file(&path).map_err(|source| Error::Workspace {
                    op: "remove stale lock",
                    path: path.clone(),
                    source,
                })?;
                let rel = path.strip_prefix(&self.root).unwrap_or(&path);
                removed.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
        Ok(removed)
    }

    /// Make `HEAD` name `installed_txn_id` if it does not already: commit the current workspace
    /// (full scan) as `memory: catch up with transaction <id>` with that trailer, or, when
    /// `HEAD`'s tree already equals the workspace, record it with the settled marker and make
    /// no commit (the outcome says `created: false`). Returns `None`
    /// when `HEAD` already carries it; then `.git/index` is rewritten from `HEAD`'s tree if it
    /// is older than the ref `HEAD` points to (a committer killed between moving the ref and
    /// writing the index leaves it so, and `git status` would show the commit's changes as
    /// undone). Commits made meanwhile by the git CLI (without a trailer,
    /// with other files, after `git gc`) are simply the parent of the catch-up commit.
    ///
    /// Atomicity: as [`History::commit`].
    pub fn catch_up(
        &self,
        installed_txn_id: &str,
        time: Time,
    ) -> Result<Option<CommitOutcome>, Error> {
        check_txn_id(installed_txn_id)?;
        let open = self.open()?;
        let head = open.head()?;
        if let Some(head) = head.as_ref().filter(|h| h.txn_id.as_deref() == Some(installed_txn_id))
        {
            open.refresh_stale_index(head)?;
            // A repository whose commits predate the marker (or whose marker a crash tore)
            // gets it now, so the next process needs no repair to see that nothing is missing.
            if read_settled(&self.root)
                .is_none_or(|(txn, commit)| txn != installed_txn_id || commit != head.commit)
            {
                let _ = write_settled(&self.root, installed_txn_id, head.commit);
            }
            return Ok(None);
        }
        let message = format!("memory: catch up with transaction {installed_txn_id}");
        let message = with_trailer(&message, installed_txn_id);
        open.commit_inner(message, Some(installed_txn_id), None, time).map(Some)
    }

    /// The history, newest first, following first parents, at most `limit` entries (pass
    /// `usize::MAX` for all). With a path (a file or a directory), only commits whose tree
    /// entry at that path differs from their first parent's (for the root commit: exists) —
    /// the same list `git log -- <path>` gives for a linear history.
    pub fn log(&self, path: Option<&str>, limit: usize) -> Result<Vec<LogEntry>, Error> {
        let path = path.map(check_changed_path).transpose()?;
        self.open()?.log(path, limit)
    }

    /// The files the commit `commit` (hex) changed against its first parent (every file of a
    /// root commit), workspace-relative, in tree order.
    pub fn commit_files(&self, commit: &str) -> Result<Vec<String>, Error> {
        let repo = self.open()?;
        let read = |e| Error::read("read commit", None, e);
        let id = ObjectId::from_hex(commit.as_bytes()).map_err(read)?;
        let (tree, parent) = repo.trees_of(id)?;
        let mut out = Vec::new();
        repo.diff_trees(parent, Some(tree), BStr::new(""), &mut out)?;
        Ok(out.into_iter().map(|p| p.to_str_lossy().into_owned()).collect())
    }

    /// The commit `rev` names, as hex: `HEAD`, a full id or a unique prefix of at least 4 hex
    /// digits of a commit in the first-parent history, or a transaction id (the newest commit
    /// whose `Txn-Id` it is). None matching is `REVISION_NOT_FOUND`; an ambiguous prefix is
    /// `INVALID_ARGUMENT`.
    pub fn resolve(&self, rev: &str) -> Result<String, Error> {
        let rev = rev.trim();
        let not_found = |reason| Error::RevisionNotFound { rev: rev.to_owned(), reason };
        let repo = self.open()?;
        let Some(head) = repo.head()? else { return Err(not_found("the history is empty")) };
        if rev == "HEAD" {
            return Ok(head.commit.to_hex().to_string());
        }
        let is_hex = (4..=40).contains(&rev.len()) && rev.bytes().all(|b| b.is_ascii_hexdigit());
        let prefix = rev.to_ascii_lowercase();
        let read = |op| move |source| Error::read(op, None, source);
        let walk = repo
            .repo
            .find_commit(head.commit)
            .map_err(read("read commit"))?
            .ancestors()
            .first_parent_only()
            .all()
            .map_err(read("walk history"))?;
        let mut found = None;
        for info in walk {
            let info = info.map_err(read("walk history"))?;
            let hex = info.id.to_hex().to_string();
            if is_hex {
                if hex.starts_with(&prefix) {
                    if found.is_some() {
                        return Err(Error::AmbiguousRevision { rev: rev.to_owned() });
                    }
                    found = Some(hex);
                }
            } else {
                let commit = info.object().map_err(read("read commit"))?;
                if txn_id_of(commit.message_raw_sloppy()).as_deref() == Some(rev) {
                    return Ok(hex);
                }
            }
        }
        found.ok_or_else(|| {
            not_found(if is_hex {
                "no commit in the history starts with it"
            } else {
                "neither a commit id nor the Txn-Id of a commit in the history"
            })
        })
    }

    /// The commit `rev` names ([`History::resolve`]) and the files it changed against its first
    /// parent ([`History::commit_files`]; only those at or below `path` when given), each with
    /// its text before and after.
    pub fn commit_changes(
        &self,
        rev: &str,
        path: Option<&str>,
    ) -> Result<(LogEntry, Vec<ChangedFile>), Error> {
        let path = path.map(check_changed_path).transpose()?;
        let commit = self.resolve(rev)?;
        let files = self.commit_files(&commit)?;
        let repo = self.open()?;
        let read = |e| Error::read("read commit", None, e);
        let id = ObjectId::from_hex(commit.as_bytes()).map_err(read)?;
        let entry = repo.entry(id)?;
        let (tree, parent) = repo.trees_of(id)?;
        let mut changed = Vec::new();
        for file in files {
            if let Some(path) = path
                && !(file == path || file.strip_prefix(path).is_some_and(|r| r.starts_with('/')))
            {
                continue;
            }
            let before = match parent {
                Some(parent) => repo.text_at(parent, &file)?,
                None => None,
            };
            let after = repo.text_at(tree, &file)?;
            changed.push(ChangedFile { path: file, before, after });
        }
        Ok((entry, changed))
    }

    /// The commits that changed the file `path` ([`History::log`] for that path, at most
    /// `limit`), each with the file's text before and after it (lossy UTF-8), to show what
    /// changed and why.
    pub fn file_changes(&self, path: &str, limit: usize) -> Result<Vec<FileChange>, Error> {
        let path = check_changed_path(path)?;
        let repo = self.open()?;
        let entries = repo.log(Some(path), limit)?;
        let mut changes = Vec::with_capacity(entries.len());
        for entry in entries {
            let read = |e| Error::read("read commit", Some(path), e);
            let id = ObjectId::from_hex(entry.commit.as_bytes())
                .map_err(|e| Error::read("read commit", Some(path), e))?;
            let commit = repo.repo.find_commit(id).map_err(read)?;
            let after = repo.text_at(commit.tree_id().map_err(read)?.detach(), path)?;
            let before = match commit.parent_ids().next() {
                Some(parent) => {
                    let parent = repo.repo.find_commit(parent).map_err(read)?;
                    repo.text_at(parent.tree_id().map_err(read)?.detach(), path)?
                }
                None => None,
            };
            changes.push(FileChange { entry, before, after });
        }
        Ok(changes)
    }
}

/// The [`LogEntry`] of a commit.
fn entry_of(commit: &gix::Commit<'_>) -> Result<LogEntry, Error> {
    let time = commit.time().map_err(|source| Error::read("read commit", None, source))?;
    let message = commit.message_raw_sloppy();
    Ok(LogEntry {
        commit: commit.id().to_hex().to_string(),
        time: time.into(),
        summary: summary_of(message),
        txn_id: txn_id_of(message),
    })
}

impl Repo<'_> {
    /// The tree of the commit `id` and its first parent's (`None` for a root commit).
    fn trees_of(&self, id: ObjectId) -> Result<(ObjectId, Option<ObjectId>), Error> {
        let read = |e| Error::read("read commit", None, e);
        let commit = self.repo.find_commit(id).map_err(read)?;
        let tree = commit.tree_id().map_err(read)?.detach();
        let parent = match commit.parent_ids().next() {
            Some(parent) => {
                Some(self.repo.find_commit(parent).map_err(read)?.tree_id().map_err(read)?.detach())
            }
            None => None,
        };
        Ok((tree, parent))
    }

    /// The [`LogEntry`] of the commit `id`.
    fn entry(&self, id: ObjectId) -> Result<LogEntry, Error> {
        entry_of(&self.repo.find_commit(id).map_err(|e| Error::read("read commit", None, e))?)
    }

    fn log(&self, path: Option<&str>, limit: usize) -> Result<Vec<LogEntry>, Error> {
        let mut entries = Vec::new();
        let Some(head) = self.head()? else { return Ok(entries) };
        if limit == 0 {
            return Ok(entries);
        }
        let walk = self
            .repo
            .find_commit(head.commit)
            .map_err(|source| Error::read("read commit", None, source))?
            .ancestors()
            .first_parent_only()
            .all()
            .map_err(|source| Error::read("walk history", None, source))?;
        for info in walk {
            let info = info.map_err(|source| Error::read("walk history", None, source))?;
            let commit =
                info.object().map_err(|source| Error::read("read commit", None, source))?;
            if let Some(path) = path {
                let tree = commit.tree_id().map_err(|e| Error::read("read commit", None, e))?;
                let here = self.entry_at(tree.detach(), path)?;
                let before = match info.parent_ids().next() {
                    Some(parent) => {
                        let parent = self
                            .repo
                            .find_commit(parent)
                            .map_err(|source| Error::read("read commit", None, source))?;
                        let tree =
                            parent.tree_id().map_err(|e| Error::read("read commit", None, e))?;
                        self.entry_at(tree.detach(), path)?
                    }
                    None => None,
                };
                if here == before {
                    continue;
                }
            }
            entries.push(entry_of(&commit)?);
            if entries.len() >= limit {
                break;
            }
        }
        Ok(entries)
    }

    fn entry_at(
        &self,
        tree: ObjectId,
        path: &str,
    ) -> Result<Option<(gix::object::tree::EntryMode, ObjectId)>, Error> {
        let tree =
            self.repo.find_tree(tree).map_err(|e| Error::read("read tree", Some(path), e))?;
        let entry =
            tree.lookup_entry_by_path(path).map_err(|e| Error::read("read tree", Some(path), e))?;
        Ok(entry.map(|entry| (entry.mode(), entry.object_id())))
    }

    /// The paths (files) that differ between the trees `old` and `new` (`None`: empty), under
    /// `prefix`, appended to `out` in tree order; subtrees with the same ID are skipped, so the
    /// cost follows what changed.
    fn diff_trees(
        &self,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        prefix: &BStr,
        out: &mut Vec<BString>,
    ) -> Result<(), Error> {
        type Entries = std::collections::BTreeMap<BString, (bool, ObjectId)>;
        let entries = |id: Option<ObjectId>| -> Result<Entries, Error> {
            let mut map = Entries::new();
            let Some(id) = id else { return Ok(map) };
            let read = |e| Error::read("read tree", prefix.to_str().ok(), e);
            let tree = self.repo.find_tree(id).map_err(read)?;
            for entry in &tree.decode().map_err(read)?.entries {
                map.insert(entry.filename.to_owned(), (entry.mode.is_tree(), entry.oid.to_owned()));
            }
            Ok(map)
        };
        let (old, new) = (entries(old)?, entries(new)?);
        let names: std::collections::BTreeSet<&BString> = old.keys().chain(new.keys()).collect();
        for name in names {
            let (a, b) = (old.get(name), new.get(name));
            if a == b {
                continue;
            }
            let mut path = BString::from(prefix);
            if !path.is_empty() {
                path.push_byte(b'/');
            }
            path.push_str(name);
            let tree = |e: Option<&(bool, ObjectId)>| e.filter(|(t, _)| *t).map(|(_, id)| *id);
            if tree(a).is_some() || tree(b).is_some() {
                self.diff_trees(tree(a), tree(b), path.as_bstr(), out)?;
            }
            if a.is_some_and(|(t, _)| !t) || b.is_some_and(|(t, _)| !t) {
                out.push(path);
            }
        }
        Ok(())
    }

    /// The text of the file at `path` in `tree` (lossy UTF-8; `None` when there is no blob).
    fn text_at(&self, tree: ObjectId, path: &str) -> Result<Option<String>, Error> {
        let Some((mode, id)) = self.entry_at(tree, path)? else { return Ok(None) };
        if !mode.is_blob() {
            return Ok(None);
        }
        let blob =
            self.repo.find_object(id).map_err(|e| Error::read("read blob", Some(path), e))?;
        Ok(Some(String::from_utf8_lossy(&blob.data).into_owned()))
    }

    /// Every non-tree entry at or below `path` in `tree`, as full paths.
    fn leaves_under(
        &self,
        tree: ObjectId,
        path: &str,
        out: &mut Vec<BString>,
    ) -> Result<(), Error> {
        let read = |e| Error::read("read tree", Some(path), e);
        let root = self.repo.find_tree(tree).map_err(read)?;
        match root.lookup_entry_by_path(path).map_err(read)? {
            None => Ok(()),
            Some(entry) if entry.mode().is_tree() => {
                self.collect_leaves(entry.object_id(), path.into(), out)
            }
            Some(_) => {
                out.push(path.into());
                Ok(())
            }
        }
    }

    fn collect_leaves(
        &self,
        tree: ObjectId,
        prefix: BString,
        out: &mut Vec<BString>,
    ) -> Result<(), Error> {
        let read = |e| Error::read("read tree", prefix.to_str().ok(), e);
        let tree = self.repo.find_tree(tree).map_err(read)?;
        let decoded = tree.decode().map_err(read)?;
        for entry in &decoded.entries {
            let mut path = prefix.clone();
            path.push_byte(b'/');
            path.push_str(entry.filename);
            if entry.mode.is_tree() {
                self.collect_leaves(entry.oid.to_owned(), path, out)?;
            } else {
                out.push(path);
            }
        }
        Ok(())
    }

    /// Rewrites `.git/index` from `head`'s tree when it is missing or strictly older than the
    /// file holding the ref `HEAD` points to (the loose ref, else `packed-refs`). Every commit
    /// writes the index after the ref, so an older index is one a killed commit never wrote.
    fn refresh_stale_index(&self, head: &HeadInfo) -> Result<(), Error> {
        if self.index_is_stale()? {
            self.write_index(head.tree, &Scanner::new(&self.repo, self.root))?;
        }
        Ok(())
    }

    /// Whether `.git/index` is missing or strictly older than the file holding the ref `HEAD`
    /// points to (see [`Repo::refresh_stale_index`]).
    fn index_is_stale(&self) -> Result<bool, Error> {
        let git_dir = self.repo.git_dir();
        let mtime = |path: &Path| std::fs::symlink_metadata(path).and_then(|m| m.modified()).ok();
        let Some(name) =
            self.repo.head_name().map_err(|source| Error::read("read HEAD", None, source))?
        else {
            return Ok(false);
        };
        let Ok(rel) = name.as_bstr().to_str() else { return Ok(false) };
        let loose = git_dir.join(rel);
        let Some(reference) = mtime(&loose).or_else(|| mtime(&git_dir.join("packed-refs"))) else {
            return Ok(false);
        };
        Ok(mtime(&git_dir.join("index")).is_none_or(|index| index < reference))
    }

    fn head(&self) -> Result<Option<HeadInfo>, Error> {
        let head = self.repo.head().map_err(|source| Error::read("read HEAD", None, source))?;
        let Some(id) = head.id() else { return Ok(None) };
        let commit =
            self.repo.find_commit(id).map_err(|source| Error::read("read HEAD", None, source))?;
        let tree = commit.tree_id().map_err(|source| Error::read("read HEAD", None, source))?;
        let commit_id = id.detach();
        // A transaction whose tree equals `HEAD`'s is recorded by the settled marker, not by
        // an empty commit; the marker counts only while `HEAD` is the commit it names.
        let txn_id = read_settled(self.root)
            .filter(|(_, settled)| *settled == commit_id)
            .map(|(txn, _)| txn)
            .or_else(|| txn_id_of(commit.message_raw_sloppy()));
        Ok(Some(HeadInfo { commit: commit_id, tree: tree.detach(), txn_id }))
    }

    fn commit_inner(
        &self,
        message: String,
        txn_id: Option<&str>,
        changed: Option<&[String]>,
        time: Time,
    ) -> Result<CommitOutcome, Error> {
        self.commit_merge(message, txn_id, changed, time, None)
    }

    fn commit_merge(
        &self,
        message: String,
        txn_id: Option<&str>,
        changed: Option<&[String]>,
        time: Time,
        merge: Option<ObjectId>,
    ) -> Result<CommitOutcome, Error> {
        let repo = &self.repo;
        let head = self.head()?;
        let mut scanner = Scanner::new(repo, self.root);
        let base = match (changed, &head) {
            (Some(_), Some(head)) => head.tree,
            _ => ObjectId::empty_tree(repo.object_hash()),
        };
        let mut editor =
            repo.edit_tree(base).map_err(|source| Error::read("read tree", None, source))?;
        let edit_err = |path: &BStr| {
            let path = path.to_str_lossy().into_owned();
            move |source| Error::Write { op: "edit tree", path: Some(path), source }
        };
        let mut files = Vec::new();
        match changed {
            None => scanner.walk(BStr::new(""), &mut files)?,
            Some(paths) => {
                if head.is_some() {
                    // Internal entries a foreign commit may have added never survive.
                    let tree = repo
                        .find_tree(base)
                        .map_err(|source| Error::read("read tree", None, source))?;
                    let decoded =
                        tree.decode().map_err(|source| Error::read("read tree", None, source))?;
                    let internal: Vec<String> = decoded
                        .entries
                        .iter()
                        .filter(|e| {
                            is_internal_bytes(e.filename) || is_git_reserved_name(e.filename)
                        })
                        .map(|e| e.filename.to_str_lossy().into_owned())
                        .collect();
                    for name in internal {
                        editor.remove(&name).map_err(edit_err(name.as_bytes().as_bstr()))?;
                    }
                }
                let mut removals: Vec<BString> = Vec::new();
                for path in paths {
                    let path = check_changed_path(path)?;
                    if is_internal_path(path)
                        || path.split('/').any(|c| is_git_reserved_name(c.as_bytes()))
                    {
                        continue;
                    }
                    // Subtrees are never removed and then written into again: gix's editor
                    // keeps a removed subtree cached and would resurrect its old entries.
                    // A directory is instead updated leaf by leaf.
                    match scanner.find(path)? {
                        Found::Nothing => removals.push(path.into()),
                        Found::File => match scanner.hash_file(path.into())? {
                            Some((kind, id)) => files.push((path.into(), kind, id)),
                            None => removals.push(path.into()),
                        },
                        Found::Dir => {
                            let start = files.len();
                            scanner.walk(path.into(), &mut files)?;
                            let present: HashSet<&BString> =
                                files[start..].iter().map(|(path, _, _)| path).collect();
                            let mut before = Vec::new();
                            self.leaves_under(base, path, &mut before)?;
                            removals.extend(before.into_iter().filter(|p| !present.contains(p)));
                        }
                    }
                }
                for path in removals {
                    editor.remove(&path).map_err(edit_err(path.as_bstr()))?;
                }
            }
        }
        for (path, kind, id) in files {
            editor.upsert(&path, kind, id).map_err(edit_err(path.as_bstr()))?;
        }
        let tree = editor.write().map_err(|source| Error::write("write tree", None, source))?;
        let tree = tree.detach();

        let signature = time.signature();
        let mut time_buf = gix::date::parse::TimeBuf::default();
        let signature = signature.to_ref(&mut time_buf);
        // A merge whose result is the other side's tree, when `HEAD` is behind it, is that
        // commit: the branch moves there and no commit is made.
        let merge = match merge {
            Some(other) if head.as_ref().is_some_and(|h| h.commit == other) => None,
            Some(other) => {
                let behind = match &head {
                    Some(head) => self.is_ancestor(head.commit, other)?,
                    None => true,
                };
                if behind && self.tree_of(other)? == tree {
                    self.fast_forward(
                        head.as_ref().map(|h| h.commit),
                        other,
                        "sync: fast-forward",
                        signature,
                    )?;
                    let index_written = self.write_index(tree, &scanner).is_ok();
                    if let Some(txn_id) = txn_id {
                        let _ = write_settled(self.root, txn_id, other);
                    }
                    return Ok(CommitOutcome {
                        commit: other.to_hex().to_string(),
                        created: false,
                        index_written,
                        files_hashed: scanner.hashed,
                    });
                }
                // Already merged (the other commit is in our history): a plain commit.
                match &head {
                    Some(head) if self.is_ancestor(other, head.commit)? => None,
                    _ => Some(other),
                }
            }
            None => None,
        };

        if let Some(head) = &head
            && head.tree == tree
            && merge.is_none()
        {
            // Nothing to commit: never an empty commit. When a transaction is named, `HEAD`
            // already holds its tree, so it is recorded as settled at `HEAD`.
            if let Some(txn_id) = txn_id
                && head.txn_id.as_deref() != Some(txn_id)
            {
                write_settled(self.root, txn_id, head.commit)?;
            }
            let index_written = self.write_index(tree, &scanner).is_ok();
            return Ok(CommitOutcome {
                commit: head.commit.to_hex().to_string(),
                created: false,
                index_written,
                files_hashed: scanner.hashed,
            });
        }

        let parents: Vec<ObjectId> = head.iter().map(|head| head.commit).chain(merge).collect();
        let commit = repo
            .commit_as(signature, signature, "HEAD", &message, tree, parents)
            .map_err(|source| Error::write("update HEAD", Some("HEAD"), source))?;
        let index_written = self.write_index(tree, &scanner).is_ok();
        if let Some(txn_id) = txn_id {
            // Lets the next process see that `HEAD` holds the installed transaction without
            // opening the repository (`History::settled`). A marker that fails to be written
            // only costs that process the full check.
            let _ = write_settled(self.root, txn_id, commit.detach());
        }
        Ok(CommitOutcome {
            commit: commit.to_hex().to_string(),
            created: true,
            index_written,
            files_hashed: scanner.hashed,
        })
    }

    /// Replace `.git/index` by the entries of `tree`, carrying stat data for files this commit
    /// read and for unchanged entries of the previous index (unless racy there), so that
    /// `git status` and the next full scan need not rehash them.
    fn write_index(&self, tree: ObjectId, scanner: &Scanner<'_>) -> Result<(), Error> {
        let mut index = self
            .repo
            .index_from_tree(&tree)
            .map_err(|source| Error::write("build index", None, source))?;
        let options = gix::index::entry::stat::Options::default();
        let old = scanner.old_index();
        for (entry, path) in index.entries_mut_with_paths() {
            if let Some((id, stat)) = scanner.recorded.get(path)
                && *id == entry.id
            {
                entry.stat = *stat;
            } else if let Some(old) = old
                && let Some(previous) = old.entry_by_path(path)
                && previous.id == entry.id
                && previous.mode == entry.mode
                && !previous.stat.is_racy(old.timestamp(), options)
            {
                entry.stat = previous.stat;
            }
        }
        index
            .write(gix::index::write::Options::default())
            .map_err(|source| Error::write("write index", Some(".git/index"), source))
    }
}

/// The file in `.git` that records a transaction whose tree `HEAD` already held
/// (`<txn id> <commit hex>\n`), so that no empty commit is made for it.
const SETTLED_FILE: &str = "scriptorium-settled";

/// The settled marker: the transaction and the commit that holds its tree.
fn read_settled(root: &Path) -> Option<(String, ObjectId)> {
    let text = std::fs::read_to_string(root.join(".git").join(SETTLED_FILE)).ok()?;
    let (txn, commit) = text.trim_end().split_once(' ')?;
    check_txn_id(txn).ok()?;
    Some((txn.to_owned(), ObjectId::from_hex(commit.as_bytes()).ok()?))
}

/// Writes the settled marker in place (no new inode per commit): a reader that meets it torn
/// finds no transaction or commit in it, and falls back to reading `HEAD`'s commit.
fn write_settled(root: &Path, txn_id: &str, commit: ObjectId) -> Result<(), Error> {
    let path = root.join(".git").join(SETTLED_FILE);
    std::fs::write(&path, format!("{txn_id} {}\n", commit.to_hex()))
        .map_err(|source| Error::Workspace { op: "write settled marker", path, source })
}

/// Add the missing [`EXCLUDES`] lines to `<git_dir>/info/exclude` (temp file and rename).
fn ensure_excludes(git_dir: &Path) -> Result<(), Error> {
    let info = git_dir.join("info");
    let path = info.join("exclude");
    let current = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(Error::Exclude { op: "read info/exclude", path, source }),
    };
    let missing: Vec<&str> =
        EXCLUDES.into_iter().filter(|line| !current.lines().any(|l| l.trim() == *line)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut next = current;
    if !next.is_empty() && !next.ends_with('\n') {
        next.push('\n');
    }
    for line in missing {
        next.push_str(line);
        next.push('\n');
    }
    let tmp = info.join("exclude.scriptorium-tmp");
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(&info)?;
        std::fs::write(&tmp, &next)?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|source| Error::Exclude {
        op: "write info/exclude",
        path: path.clone(),
        source,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn history_is_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<super::History>();
    }
}
