//! Making what a rewrite replaced unrecoverable: every reflog expired, every object no ref
//! reaches deleted, loose or packed.
//!
//! Why the git CLI: gix (0.90) cannot repack or prune. `git gc --prune=now` rewrites every pack
//! into one holding only what refs, `HEAD` and the index reach (`repack -a -d`, which drops the
//! unreachable objects of every pack, fetched ones included, instead of loosening them), deletes
//! every unreachable loose object, packs the refs (so no stale id is left shadowed in
//! `packed-refs`), and rewrites the commit-graph (which would otherwise still list the old
//! commits). git runs isolated from the person's and the system's configuration, so no user
//! setting changes what is kept.

use std::path::Path;
use std::process::{Command, Output};

use crate::{Error, History};

impl History {
    /// Makes the objects no ref reaches unrecoverable (after [`History::rewrite`]): removes
    /// `ORIG_HEAD`, `FETCH_HEAD` and `.git/logs` (every reflog), then `git gc --prune=now`, so
    /// no unreachable object is left, loose or in any pack (packs a fetch brought included).
    /// Returns how many objects remain. Idempotent. Call it under the workspace write lock.
    ///
    /// `git gc` packs the refs; `.git/index` is then rewritten (same entries) if it is older
    /// than the branch's ref, so [`History::settled`] needs no repair.
    ///
    /// Atomicity: git's. Each pack is written whole and renamed into place before the packs it
    /// replaces are deleted, so a crash leaves every reachable object in some pack and at worst
    /// some unreachable ones still present: running it again removes them.
    ///
    /// # Limitations
    ///
    /// A pack with a `.keep` file (a fetch in flight; one a killed fetch left behind) is left
    /// as it is, and objects borrowed from another repository (`objects/info/alternates`) are
    /// not this repository's to delete; the returned count includes them.
    ///
    /// Under that lock every git lock file and `gc.pid` is stale (all our git work holds the
    /// workspace lock): a prune killed halfway leaves them, and they are removed first so the
    /// next prune runs.
    pub fn prune(&self) -> Result<usize, Error> {
        self.remove_stale_locks()?;
        let git = self.root.join(".git");
        remove(&git.join("gc.pid"), false)?;
        // The ones a killed `git gc` leaves besides the committer's (the commit-graph's, the
        // multi-pack index's…).
        for dir in [git.join("objects").join("info"), git.join("objects").join("pack")] {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().ends_with(".lock") {
                    remove(&entry.path(), false)?;
                }
            }
        }
        let remaining = prune_repository(&self.root.join(".git"))?;
        let open = self.open()?;
        if let Some(head) = open.head()? {
            open.refresh_stale_index(&head)?;
        }
        Ok(remaining)
    }
}

/// The same prune as [`History::prune`] for a repository the caller reaches on disk, bare or
/// not, given its git directory (a sync remote that is a path or a `file://` URL). Does not
/// touch a work tree or an index.
///
/// `git gc --prune=now` is not safe while another process writes the repository (git's own
/// warning): a push received meanwhile can lose objects. The caller makes sure none is.
pub fn prune_repository(git_dir: &Path) -> Result<usize, Error> {
    gix::open_opts(git_dir, gix::open::Options::isolated())
        .map_err(|source| Error::Repository { op: "open", root: git_dir.to_path_buf(), source })?;
    for name in ["ORIG_HEAD", "FETCH_HEAD"] {
        remove(&git_dir.join(name), false)?;
    }
    remove(&git_dir.join("logs"), true)?;
    run(
        git(git_dir).args([
            // The reflogs of linked work trees, should there be any.
            "-c",
            "gc.reflogExpire=now",
            "-c",
            "gc.reflogExpireUnreachable=now",
            // Drop unreachable objects rather than keep them in a cruft pack.
            "-c",
            "gc.cruftPacks=false",
            "-c",
            "gc.pruneExpire=now",
            "-c",
            "gc.autoDetach=false",
            "gc",
            "--prune=now",
            "--quiet",
        ]),
        "gc",
        git_dir,
    )?;
    let listed = run(
        git(git_dir).args(["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"]),
        "count objects",
        git_dir,
    )?;
    Ok(listed.stdout.split(|b| *b == b'\n').filter(|line| !line.is_empty()).count())
}

/// Removes a file, or a directory with everything in it; a missing one is fine.
fn remove(path: &Path, directory: bool) -> Result<(), Error> {
    let removed =
        if directory { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    match removed {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::Workspace { op: "remove", path: path.to_path_buf(), source: err })
        }
        _ => Ok(()),
    }
}

/// The git CLI on `git_dir` alone: no system or global configuration (only the repository's
/// own), no environment that would point it at another repository, index or object store, no
/// replace refs, never prompting.
fn git(git_dir: &Path) -> Command {
    let mut command = Command::new("git");
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_QUARANTINE_PATH",
    ] {
        command.env_remove(var);
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", if cfg!(windows) { "NUL" } else { "/dev/null" })
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .arg("--git-dir")
        .arg(git_dir);
    command
}

/// Runs `command`; a program that cannot start is `GIT_UNAVAILABLE`, a failure
/// `GIT_COMMIT_FAILED` with git's words.
fn run(command: &mut Command, op: &'static str, git_dir: &Path) -> Result<Output, Error> {
    let output = command.output().map_err(|source| Error::GitProgram { op, source })?;
    if output.status.success() {
        return Ok(output);
    }
    Err(Error::GitCommand {
        op,
        git_dir: git_dir.to_path_buf(),
        status: output.status.to_string(),
        stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use crate::ErrorCode;

    #[test]
    fn a_git_program_that_cannot_run_is_git_unavailable() {
        let mut command = Command::new("/nonexistent/scriptorium-test/git");
        let err = super::run(&mut command, "gc", Path::new("/nowhere")).expect_err("no program");
        assert_eq!(err.code(), ErrorCode::GitUnavailable, "{err}");
        assert!(err.to_string().contains("is git installed"), "{err}");
    }
}
