//! A committer killed mid-commit leaves lock files in `.git`; they block every later commit
//! until `remove_stale_locks` clears them (the backend calls it under the workspace lock).

use scriptorium_history::CommitRequest;

use crate::support::{Ws, at, commit};

#[test]
fn stale_lock_files_block_commits_until_removed() {
    let ws = Ws::new();
    ws.write("topics/a.md", "first\n");
    let history = ws.open();
    commit(&history, "t-1", "memory: one", None, at(1));
    // What a SIGKILL between gix's ref-lock creation and its rename leaves behind.
    let head = ws.git_lines(&["symbolic-ref", "HEAD"]);
    let ref_lock = ws.path(&format!(".git/{}.lock", head[0]));
    std::fs::write(&ref_lock, "").expect("write a stale ref lock");
    std::fs::write(ws.path(".git/index.lock"), "").expect("write a stale index lock");
    ws.write("topics/a.md", "second\n");
    let blocked = history.commit(CommitRequest {
        txn_id: "t-2",
        message: "memory: two",
        changed: None,
        time: at(2),
        merge: None,
    });
    assert!(blocked.is_err(), "a stale ref lock blocks the commit");

    let mut removed = history.remove_stale_locks().expect("remove");
    removed.sort();
    assert_eq!(removed, [".git/index.lock".to_owned(), format!(".git/{}.lock", head[0])]);
    commit(&history, "t-2", "memory: two", None, at(2));
    assert_eq!(history.last_txn_id().expect("head"), Some("t-2".to_owned()));
    ws.git(&["fsck", "--full"]);
    assert!(history.remove_stale_locks().expect("remove").is_empty(), "nothing left");
}
