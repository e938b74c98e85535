//! Shared helpers: a temporary workspace and the real `git` CLI, isolated from any user or
//! system git configuration.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use scriptorium_history::{CommitOutcome, CommitRequest, History, Time};

/// A deterministic time: `n` minutes after a fixed epoch.
pub(crate) fn at(n: i64) -> Time {
    Time { seconds: 1_700_000_000 + 60 * n, offset_seconds: 3600 }
}

/// A temporary workspace directory.
pub(crate) struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    pub(crate) fn new() -> Self {
        Ws { dir: tempfile::tempdir().expect("temp dir") }
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub(crate) fn write(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    pub(crate) fn remove(&self, rel: &str) {
        let path = self.path(rel);
        if path.is_dir() {
            std::fs::remove_dir_all(path).expect("remove dir");
        } else {
            std::fs::remove_file(path).expect("remove file");
        }
    }

    pub(crate) fn open(&self) -> History {
        History::open_or_init(self.root(), at(0)).expect("open history")
    }

    /// Run git and return the raw output.
    pub(crate) fn git_output(&self, args: &[&str]) -> Output {
        Command::new("git")
            .args(args)
            .current_dir(self.root())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CEILING_DIRECTORIES", self.root().parent().expect("parent"))
            .env("LC_ALL", "C")
            .output()
            .expect("run git")
    }

    /// Run git, assert success, return stdout.
    pub(crate) fn git(&self, args: &[&str]) -> String {
        let out = self.git_output(args);
        assert!(
            out.status.success(),
            "git {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 git output")
    }

    /// Lines of a git command's stdout.
    pub(crate) fn git_lines(&self, args: &[&str]) -> Vec<String> {
        self.git(args).lines().map(str::to_owned).collect()
    }

    /// Assert the repository is sound and the working tree matches HEAD.
    pub(crate) fn assert_clean(&self) {
        let fsck = self.git_output(&["fsck", "--full", "--strict"]);
        assert!(fsck.status.success(), "fsck: {}", String::from_utf8_lossy(&fsck.stderr));
        let stderr = String::from_utf8_lossy(&fsck.stderr);
        assert!(!stderr.contains("error"), "fsck: {stderr}");
        assert_eq!(self.git(&["status", "--porcelain"]), "", "git status is not clean");
    }

    /// Every path in HEAD's tree.
    pub(crate) fn tree_files(&self) -> Vec<String> {
        self.git_lines(&["ls-tree", "-r", "--name-only", "HEAD"])
    }
}

/// Commit with the given changed paths (`None` = full scan).
pub(crate) fn commit(
    history: &History,
    txn_id: &str,
    message: &str,
    changed: Option<&[&str]>,
    time: Time,
) -> CommitOutcome {
    let changed: Option<Vec<String>> =
        changed.map(|paths| paths.iter().map(|p| (*p).to_owned()).collect());
    history
        .commit(CommitRequest { txn_id, message, changed: changed.as_deref(), time, merge: None })
        .expect("commit")
}
