//! Exchanging history with a remote: fetch with gix, push with the git CLI, and what a merge of
//! two clones needs (ancestry, the merge base, the files two commits differ in, a file at a
//! commit). The merge itself is the format's (`scriptorium_topics_format::merge`), and its tree
//! is installed by a transaction like any other; [`CommitRequest::merge`](crate::CommitRequest)
//! then gives the commit its second parent.
//!
//! Why the git CLI pushes: gix (0.90) has no push. Fetching with gix needs the git CLI too for
//! `file://` and plain-path remotes (gix runs `git-upload-pack` for them, as git does), and
//! `ssh` for ssh remotes; `http(s)` remotes are gix's own client.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;

use gix::bstr::{BStr, ByteSlice};
use gix::hash::ObjectId;

use crate::{Error, History, Repo};

/// Where a fetched branch is kept: `refs/scriptorium/remote/<branch>`. Not a branch of this
/// clone, so no git command shows it as one; it only keeps the fetched commits reachable.
pub const FETCHED_PREFIX: &str = "refs/scriptorium/remote/";

/// How two commits relate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ancestry {
    /// The same commit.
    Same,
    /// Ours contains theirs: nothing to take, only to push.
    Ahead,
    /// Theirs contains ours: take theirs (a fast-forward).
    Behind,
    /// Both have commits the other lacks; `base` is their best common ancestor (`None`:
    /// unrelated histories, e.g. a new clone's first sync).
    Diverged {
        /// The merge base (hex).
        base: Option<String>,
    },
}

/// What a push did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// The remote branch moved to the commit.
    Updated,
    /// The remote branch already was the commit.
    UpToDate,
    /// The remote branch has commits the pushed one lacks (another clone pushed first, or
    /// its push landed while ours was being received, so the remote's compare-and-set on the
    /// branch refused ours): fetch, merge, and push again.
    Rejected {
        /// git's words.
        reason: String,
    },
}

pub(crate) fn oid(hex: &str) -> Result<ObjectId, Error> {
    ObjectId::from_hex(hex.as_bytes()).map_err(|_| Error::RevisionNotFound {
        rev: hex.to_owned(),
        reason: "not a full commit id",
    })
}

impl History {
    /// The branch `HEAD` is on (`main`); a detached `HEAD` is `REVISION_NOT_FOUND`.
    pub fn branch(&self) -> Result<String, Error> {
        let repo = self.open()?;
        let name =
            repo.repo.head_name().map_err(|source| Error::read("read HEAD", None, source))?;
        name.as_ref()
            .and_then(|name| name.as_bstr().to_str().ok())
            .and_then(|name| name.strip_prefix("refs/heads/"))
            .map(str::to_owned)
            .ok_or(Error::RevisionNotFound {
                rev: "HEAD".into(),
                reason: "HEAD is not on a branch",
            })
    }

    /// The commit `HEAD` names (hex), `None` before the first commit.
    pub fn head_commit(&self) -> Result<Option<String>, Error> {
        Ok(self.open()?.head()?.map(|head| head.commit.to_hex().to_string()))
    }

    /// Fetches `branch` of the remote at `url` (a path, `file://`, `ssh://`, `git@host:path` or
    /// `http(s)://`) into `refs/scriptorium/remote/<branch>` and returns its commit (hex), or
    /// `None` when the remote has no such branch (an empty remote).
    pub fn fetch(&self, url: &str, branch: &str) -> Result<Option<String>, Error> {
        let remote_err = |e: &(dyn std::error::Error + 'static)| Error::Remote {
            op: "fetch",
            url: url.to_owned(),
            message: causes(e),
        };
        check_local_remote(url)?;
        install_tls_provider();
        let repo = self.open()?;
        let wanted = format!("refs/heads/{branch}");
        let spec = format!("+{wanted}:{FETCHED_PREFIX}{branch}");
        let remote = repo
            .repo
            .remote_at(url)
            .and_then(|remote| {
                remote.with_refspecs(Some(spec.as_str()), gix::remote::Direction::Fetch)
            })
            .map_err(|e| remote_err(&e))?
            .with_fetch_tags(gix::remote::fetch::Tags::None);
        let connection =
            remote.connect(gix::remote::Direction::Fetch).map_err(|e| remote_err(&e))?;
        let prepare = connection
            .prepare_fetch(gix::progress::Discard, Default::default())
            .map_err(|e| remote_err(&e))?;
        // An empty remote (or one without the branch) advertises nothing to take.
        let advertised = prepare.ref_map().remote_refs.iter().find_map(|r| {
            let (name, target, peeled) = r.unpack();
            (name == BStr::new(wanted.as_bytes())).then(|| peeled.or(target).map(|o| o.to_owned()))
        });
        let Some(Some(commit)) = advertised else { return Ok(None) };
        prepare
            .receive(gix::progress::Discard, &AtomicBool::new(false))
            .map_err(|e| remote_err(&e))?;
        Ok(Some(commit.to_hex().to_string()))
    }

    /// How `ours` and `theirs` (hex commits) relate.
    pub fn ancestry(&self, ours: &str, theirs: &str) -> Result<Ancestry, Error> {
        let (a, b) = (oid(ours)?, oid(theirs)?);
        if a == b {
            return Ok(Ancestry::Same);
        }
        let repo = self.open()?;
        let base = repo
            .repo
            .merge_base(a, b)
            .map_err(|source| Error::read("find the merge base", None, source))?
            .map(|id| id.detach());
        Ok(match base {
            Some(base) if base == b => Ancestry::Ahead,
            Some(base) if base == a => Ancestry::Behind,
            base => Ancestry::Diverged { base: base.map(|b| b.to_hex().to_string()) },
        })
    }

    /// The files (workspace-relative) whose content differs between the trees of `from`
    /// (`None`: the empty tree) and `to`; equal subtrees are skipped, so the cost follows what
    /// differs.
    pub fn changed_between(&self, from: Option<&str>, to: &str) -> Result<Vec<String>, Error> {
        let repo = self.open()?;
        let from = from.map(|c| repo.tree_of(oid(c)?)).transpose()?;
        let to = repo.tree_of(oid(to)?)?;
        let mut out = Vec::new();
        repo.diff_trees(from, Some(to), BStr::new(""), &mut out)?;
        Ok(out.into_iter().map(|p| p.to_str_lossy().into_owned()).collect())
    }

    /// The bytes of the file at `path` in `commit` (`None`: no file there).
    pub fn file_at(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, Error> {
        let repo = self.open()?;
        let tree = repo.tree_of(oid(commit)?)?;
        let Some((mode, id)) = repo.entry_at(tree, path)? else { return Ok(None) };
        if !mode.is_blob() {
            return Ok(None);
        }
        let blob =
            repo.repo.find_object(id).map_err(|e| Error::read("read blob", Some(path), e))?;
        Ok(Some(blob.data.clone()))
    }

    /// Pushes `commit` to `branch` of the remote at `url` with the git CLI (`git push
    /// --porcelain`, never forced), without a prompt for credentials.
    pub fn push(&self, url: &str, commit: &str, branch: &str) -> Result<Pushed, Error> {
        oid(commit)?;
        self.run_push(url, commit, branch, None)
    }

    /// Pushes `commit` to `branch` of the remote at `url`, replacing what is there (a forget's
    /// rewritten history) but only while the remote's branch is still `expected` (`git push
    /// --force-with-lease`): a clone's push in between is never overwritten unseen, the push is
    /// `Pushed::Rejected` instead.
    pub fn push_replacing(
        &self,
        url: &str,
        commit: &str,
        branch: &str,
        expected: &str,
    ) -> Result<Pushed, Error> {
        oid(commit)?;
        oid(expected)?;
        self.run_push(url, commit, branch, Some(expected))
    }

    /// `git push --porcelain`, with a lease on `expected` when there is one; the porcelain line
    /// of the branch says whether it moved, was up to date, or lost a race.
    fn run_push(
        &self,
        url: &str,
        commit: &str,
        branch: &str,
        expected: Option<&str>,
    ) -> Result<Pushed, Error> {
        let remote_err =
            |message: String| Error::Remote { op: "push", url: url.to_owned(), message };
        let mut command = git(self.root());
        command.args(["push", "--porcelain"]);
        if let Some(expected) = expected {
            command.arg(format!("--force-with-lease=refs/heads/{branch}:{expected}"));
        }
        let output = command
            .args(["--", url])
            .arg(format!("{commit}:refs/heads/{branch}"))
            .output()
            .map_err(|e| remote_err(format!("cannot run git: {e}")))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout.lines().find(|l| l.contains(&format!(":refs/heads/{branch}")));
        let flag = line.and_then(|l| l.chars().next());
        if output.status.success() {
            return Ok(if flag == Some('=') { Pushed::UpToDate } else { Pushed::Updated });
        }
        let summary = line.and_then(|l| l.split('\t').nth(2)).unwrap_or_default().to_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stale = expected.is_some() && summary.contains("stale info");
        if flag == Some('!') && (stale || lost_race(&summary, &stderr)) {
            return Ok(Pushed::Rejected { reason: summary });
        }
        if let Some(fix) = unusable_remote(&summary, &stderr, branch) {
            return Err(Error::RemoteInvalid { op: "push", url: url.to_owned(), message: fix });
        }
        let message = if summary.is_empty() { stderr.trim().to_owned() } else { summary };
        Err(remote_err(message))
    }
}

/// `error` and its causes on one line: gix's own message alone ("Transport handshake failed")
/// does not say that the connection was refused, or that the server answered 404.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        let text = error.to_string();
        // Some errors repeat their cause in their own message; some causes are blank wrappers.
        if !text.trim().is_empty() && !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        next = error.source();
    }
    parts.join(": ")
}

/// Installs rustls's `ring` provider as the process default when none is installed yet. gix's
/// HTTP transport builds a reqwest client (compiled with `rustls-no-provider`) for every
/// `http(s)://` remote, plain `http://` too, and that build panics without a process default;
/// a binary installs one at startup, this covers every other caller of [`History::fetch`].
fn install_tls_provider() {
    // Err only says a provider is installed already, which is all that is needed.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A remote named by a path (or a `file://` URL) must hold a git repository: a path without
/// one is a mistake in the remote's name (a typo, a repository never created), which no retry
/// mends. Other URLs are checked by the exchange itself.
fn check_local_remote(url: &str) -> Result<(), Error> {
    let Ok(parsed) = gix::url::parse(url.as_bytes().as_bstr()) else { return Ok(()) };
    if parsed.scheme != gix::url::Scheme::File {
        return Ok(());
    }
    // Not UTF-8 on this platform: the exchange itself reports it.
    let Ok(path) = gix::path::from_bstr(parsed.path.as_bstr()) else { return Ok(()) };
    if gix::open_opts(&*path, gix::open::Options::isolated()).is_ok() {
        return Ok(());
    }
    let what = if std::fs::symlink_metadata(&*path).is_ok() {
        "is not a git repository"
    } else {
        "does not exist"
    };
    Err(Error::RemoteInvalid {
        op: "fetch",
        url: url.to_owned(),
        message: format!(
            "{} {what}: check the remote's name (`--remote`, `[sync] remote`), or create the \
             remote with `git init --bare {}`",
            path.display(),
            path.display()
        ),
    })
}

/// Whether a refused push lost a race with another clone's push: refused as not a fast-forward
/// (the remote had moved before ours began), or refused by the remote's compare-and-set on the
/// branch (`failed to update ref`, `cannot lock ref …: is at … but expected …`: another push
/// landed while ours was being received). Either way the next round fetches and merges it. A
/// ref the remote cannot write at all (permissions) is no race.
fn lost_race(summary: &str, stderr: &str) -> bool {
    const REFUSALS: [&str; 6] = [
        "non-fast-forward",
        "fetch first",
        "stale info",
        "failed to update ref",
        // Other wordings of the same compare-and-set refusal (older gits).
        "failed to lock",
        "incorrect old value",
    ];
    REFUSALS.iter().any(|s| summary.contains(s))
        && !stderr.contains("Permission denied")
        && !stderr.contains("Read-only file system")
}

/// What to fix when a push was refused by a remote no sync can push to (`None`: another
/// failure, possibly passing).
fn unusable_remote(summary: &str, stderr: &str, branch: &str) -> Option<String> {
    if summary.contains("branch is currently checked out")
        || stderr.contains("refusing to update checked out branch")
    {
        return Some(format!(
            "the remote is a non-bare repository with `{branch}` checked out, and git refuses \
             to push into a checked-out branch: sync through a bare repository (`git clone \
             --bare`), or set `receive.denyCurrentBranch updateInstead` in that repository"
        ));
    }
    let missing = ["does not appear to be a git repository", "Repository not found", "' not found"];
    if summary.is_empty() && missing.iter().any(|s| stderr.contains(s)) {
        return Some(format!(
            "no repository at the remote ({}): check the remote's name",
            stderr.trim()
        ));
    }
    None
}

/// The git CLI run in `root`, never prompting (a push that needs credentials it does not have
/// fails instead of waiting for a person).
fn git(root: &Path) -> Command {
    let mut command = Command::new("git");
    command.arg("-C").arg(root).env("GIT_TERMINAL_PROMPT", "0").env("GIT_ASKPASS", "true");
    command
}

impl Repo<'_> {
    pub(crate) fn tree_of(&self, commit: ObjectId) -> Result<ObjectId, Error> {
        let read = |source| Error::read("read commit", None, source);
        let commit = self.repo.find_commit(commit).map_err(read)?;
        Ok(commit.tree_id().map_err(read)?.detach())
    }

    /// Whether `ancestor` is `commit` or one of its ancestors.
    pub(crate) fn is_ancestor(&self, ancestor: ObjectId, commit: ObjectId) -> Result<bool, Error> {
        if ancestor == commit {
            return Ok(true);
        }
        let base = self
            .repo
            .merge_base(ancestor, commit)
            .map_err(|source| Error::read("find the merge base", None, source))?;
        Ok(base.is_some_and(|base| base.detach() == ancestor))
    }

    /// Moves `HEAD`'s branch from `from` to `to` (compare-and-set), recording `message` in the
    /// reflog.
    pub(crate) fn fast_forward(
        &self,
        from: Option<ObjectId>,
        to: ObjectId,
        message: &str,
        signature: gix::actor::SignatureRef<'_>,
    ) -> Result<(), Error> {
        use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
        let name =
            self.repo.head_name().map_err(|source| Error::read("read HEAD", None, source))?.ok_or(
                Error::RevisionNotFound { rev: "HEAD".into(), reason: "HEAD is not on a branch" },
            )?;
        let expected = match from {
            Some(id) => PreviousValue::MustExistAndMatch(gix::refs::Target::Object(id)),
            None => PreviousValue::MustNotExist,
        };
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: false,
                    message: message.into(),
                },
                expected,
                new: gix::refs::Target::Object(to),
            },
            name,
            deref: false,
        };
        self.repo
            .edit_references_as(Some(edit), Some(signature))
            .map_err(|source| Error::write("update HEAD", Some("HEAD"), source))?;
        Ok(())
    }
}
