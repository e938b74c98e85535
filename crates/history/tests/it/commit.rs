//! Opening, committing, the commit layout, and what the git CLI sees of it.

use scriptorium_history::{
    CommitRequest, EXCLUDES, ErrorCode, History, IDENTITY_EMAIL, IDENTITY_NAME, INITIAL_MESSAGE,
};

use crate::support::{Ws, at, commit};

const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

#[test]
fn init_commits_existing_files_and_adds_excludes() {
    let ws = Ws::new();
    ws.write("topics/core.md", "# Core\n");
    ws.write("sources/chat/_v2/t1.md", "source\n");
    ws.write(".scriptorium/runtime.json", "{}\n");
    ws.write(".scriptorium-bm25.json", "{}\n");
    let history = ws.open();

    assert_eq!(ws.git_lines(&["log", "--format=%s"]), [INITIAL_MESSAGE]);
    assert_eq!(ws.tree_files(), ["sources/chat/_v2/t1.md", "topics/core.md"]);
    assert_eq!(history.last_txn_id().unwrap(), None);
    let exclude = std::fs::read_to_string(ws.path(".git/info/exclude")).unwrap();
    for line in EXCLUDES {
        assert_eq!(exclude.lines().filter(|l| *l == line).count(), 1, "{exclude}");
    }
    // The excludes make the CLI ignore runtime state too.
    ws.assert_clean();
}

#[test]
fn init_of_an_empty_workspace_is_an_empty_commit_and_reopen_adds_nothing() {
    let ws = Ws::new();
    drop(ws.open());
    assert_eq!(ws.git(&["rev-parse", "HEAD^{tree}"]).trim(), EMPTY_TREE);
    let history = ws.open();
    drop(history);
    assert_eq!(ws.git_lines(&["log", "--format=%s"]), [INITIAL_MESSAGE]);
    let exclude = std::fs::read_to_string(ws.path(".git/info/exclude")).unwrap();
    assert_eq!(exclude.matches("/.scriptorium*").count(), 1, "excludes added once: {exclude}");
    ws.assert_clean();
}

#[test]
fn unborn_repository_made_by_the_cli_gets_the_initial_commit() {
    let ws = Ws::new();
    ws.git(&["init", "-q"]);
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    assert_eq!(ws.git_lines(&["log", "--format=%s"]), [INITIAL_MESSAGE]);
    assert_eq!(ws.tree_files(), ["topics/a.md"]);
    assert_eq!(history.log(None, usize::MAX).unwrap().len(), 1);
    ws.assert_clean();
}

#[test]
fn commits_carry_message_trailer_identity_and_exactly_the_changed_files() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    ws.write("topics/b.md", "b\n");
    ws.write("core.md", "core\n");
    let history = ws.open();

    ws.write("topics/a.md", "a2\n");
    ws.write("core.md", "core2\n");
    let first = commit(
        &history,
        "t-0001",
        "memory: incremental transaction",
        Some(&["topics/a.md", "core.md"]),
        at(1),
    );
    assert!(first.created);
    assert_eq!(first.files_hashed, 2);
    assert!(first.index_written);
    ws.assert_clean();
    assert_eq!(ws.git(&["rev-parse", "HEAD"]).trim(), first.commit);
    let stat = ws.git_lines(&["show", "--stat=200", "--format=", "HEAD"]);
    assert_eq!(stat.len(), 3, "{stat:?}");
    assert!(stat[0].trim_start().starts_with("core.md "), "{stat:?}");
    assert!(stat[1].trim_start().starts_with("topics/a.md "), "{stat:?}");

    ws.write("topics/people/dave.md", "dave\n");
    commit(
        &history,
        "t-0002",
        "memory: edit topics/people/dave.md",
        Some(&["topics/people/dave.md"]),
        at(2),
    );
    assert_eq!(
        ws.git_lines(&["show", "--name-status", "--format=", "HEAD"]),
        ["A\ttopics/people/dave.md"]
    );

    assert_eq!(
        ws.git(&["log", "--format=%B%x00"]),
        "memory: edit topics/people/dave.md\n\nTxn-Id: t-0002\n\0\n\
         memory: incremental transaction\n\nTxn-Id: t-0001\n\0\n\
         memory: initialize history\n\0\n"
    );
    assert_eq!(
        ws.git(&["log", "-1", "--format=%(trailers:key=Txn-Id,valueonly)"]).trim(),
        "t-0002"
    );
    assert_eq!(
        ws.git(&["log", "-1", "--format=%an <%ae>|%cn <%ce>|%at %ai"]).trim(),
        format!(
            "{IDENTITY_NAME} <{IDENTITY_EMAIL}>|{IDENTITY_NAME} <{IDENTITY_EMAIL}>|1700000120 \
             2023-11-14 23:15:20 +0100"
        )
    );
    assert_eq!(history.last_txn_id().unwrap().as_deref(), Some("t-0002"));
    ws.assert_clean();
}

#[test]
fn a_deleted_file_and_a_rewritten_directory_are_reflected() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    ws.write("topics/b.md", "b\n");
    ws.write("timeline/2024.md", "y\n");
    ws.write("timeline/2024/01.md", "m\n");
    let history = ws.open();

    ws.remove("topics/b.md");
    ws.remove("timeline");
    ws.write("timeline/2025.md", "y2\n");
    let outcome = commit(
        &history,
        "t-1",
        "memory: delete topics/b.md",
        Some(&["topics/b.md", "timeline/"]),
        at(1),
    );
    assert!(outcome.created);
    assert_eq!(ws.tree_files(), ["timeline/2025.md", "topics/a.md"]);

    // Deleting the last file of a directory removes the directory from the tree.
    ws.remove("timeline");
    commit(&history, "t-2", "memory: reorganize topics", Some(&["timeline"]), at(2));
    assert_eq!(ws.tree_files(), ["topics/a.md"]);
    ws.assert_clean();
}

#[test]
fn the_same_tree_is_never_committed_again_and_a_new_txn_is_marked_at_head() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    ws.write("topics/a.md", "a2\n");
    let first =
        commit(&history, "t-1", "memory: incremental transaction", Some(&["topics/a.md"]), at(1));

    let again =
        commit(&history, "t-1", "memory: incremental transaction", Some(&["topics/a.md"]), at(2));
    assert_eq!(again.commit, first.commit);
    assert!(!again.created);
    let full = commit(&history, "t-1", "memory: incremental transaction", None, at(2));
    assert!(!full.created, "a full scan gives the same tree");

    let next = commit(&history, "t-2", "memory: incremental transaction", Some(&[]), at(3));
    assert!(!next.created, "no empty commit");
    assert_eq!(next.commit, first.commit);
    assert_eq!(ws.git(&["rev-parse", "HEAD"]).trim(), first.commit);
    assert_eq!(history.last_txn_id().unwrap().as_deref(), Some("t-2"), "HEAD is marked");
    ws.assert_clean();
}

#[test]
fn executable_files_keep_their_mode() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Ws::new();
    ws.write("tools/run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(ws.path("tools/run.sh"), std::fs::Permissions::from_mode(0o755))
        .unwrap();
    drop(ws.open());
    assert!(ws.git(&["ls-tree", "HEAD", "tools/run.sh"]).starts_with("100755 "));
    ws.assert_clean();
}

#[test]
fn bad_requests_are_invalid_arguments() {
    let ws = Ws::new();
    let history = ws.open();
    for path in ["../outside", "/etc/passwd", "a/./b", ""] {
        let changed = [path.to_owned()];
        let err = history
            .commit(CommitRequest {
                txn_id: "t-1",
                message: "m",
                changed: Some(&changed),
                time: at(1),
                merge: None,
            })
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{path:?}: {err}");
        assert!(err.to_string().contains(path), "{err}");
    }
    for txn_id in ["", "two words", "line\nbreak"] {
        let err = history
            .commit(CommitRequest { txn_id, message: "m", changed: None, time: at(1), merge: None })
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{txn_id:?}");
    }
    assert_eq!(history.catch_up("a b", at(1)).unwrap_err().code(), ErrorCode::InvalidArgument);
    assert_eq!(history.log(Some("../x"), 1).unwrap_err().code(), ErrorCode::InvalidArgument);
    assert_eq!(ws.git_lines(&["log", "--format=%s"]), [INITIAL_MESSAGE], "nothing committed");
}

#[test]
fn an_unusable_repository_is_git_unavailable() {
    let ws = Ws::new();
    ws.write(".git", "not a repository\n");
    let err = History::open_or_init(ws.root(), at(0)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::GitUnavailable, "{err}");
    assert_eq!(err.code().as_str(), "GIT_UNAVAILABLE");
}

#[test]
fn a_failed_commit_moves_nothing_and_reports_git_commit_failed() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    let before = ws.git(&["rev-parse", "HEAD"]);
    // Another writer holding the branch's ref lock makes the ref update fail.
    let branch = ws.git(&["symbolic-ref", "HEAD"]);
    let lock = ws.path(&format!(".git/{}.lock", branch.trim()));
    std::fs::write(&lock, "").unwrap();

    ws.write("topics/a.md", "a2\n");
    let changed = ["topics/a.md".to_owned()];
    let err = history
        .commit(CommitRequest {
            txn_id: "t-1",
            message: "memory: incremental transaction",
            changed: Some(&changed),
            time: at(1),
            merge: None,
        })
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::GitCommitFailed, "{err}");
    assert_eq!(ws.git(&["rev-parse", "HEAD"]), before);
    assert_eq!(history.last_txn_id().unwrap(), None);

    // Once the lock is gone, catch-up commits what is missing.
    std::fs::remove_file(&lock).unwrap();
    let outcome = history.catch_up("t-1", at(2)).unwrap().expect("a catch-up commit");
    assert!(outcome.created);
    assert_eq!(history.last_txn_id().unwrap().as_deref(), Some("t-1"));
    assert_eq!(ws.git(&["show", "HEAD:topics/a.md"]), "a2\n");
    ws.assert_clean();
}
