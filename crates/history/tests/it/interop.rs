//! Interoperation with the git CLI's maintenance: packed refs and packs after `git gc`.

use crate::support::{Ws, at, commit};

#[test]
fn open_commit_log_and_catch_up_work_after_git_gc() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    for i in 1..=5 {
        ws.write("topics/a.md", &format!("a{i}\n"));
        commit(
            &history,
            &format!("t-{i}"),
            "memory: incremental transaction",
            Some(&["topics/a.md"]),
            at(i),
        );
    }
    ws.git(&["gc", "--quiet", "--prune=now"]);
    assert!(ws.path(".git/packed-refs").exists(), "refs are packed");
    let loose = ws.git(&["count-objects", "-v"]);
    assert!(loose.contains("count: 0\n"), "objects are packed: {loose}");

    // The instance that was open during gc keeps working.
    assert_eq!(history.last_txn_id().unwrap().as_deref(), Some("t-5"));
    ws.write("topics/b.md", "b\n");
    commit(&history, "t-6", "memory: incremental transaction", Some(&["topics/b.md"]), at(6));
    assert_eq!(history.log(Some("topics/a.md"), usize::MAX).unwrap().len(), 6);

    // So does a fresh one.
    ws.git(&["gc", "--quiet", "--prune=now"]);
    let reopened = ws.open();
    assert_eq!(reopened.last_txn_id().unwrap().as_deref(), Some("t-6"));
    ws.write("topics/a.md", "a7\n");
    assert!(reopened.catch_up("t-7", at(7)).unwrap().is_some());
    assert_eq!(reopened.log(None, usize::MAX).unwrap().len(), 8);
    assert_eq!(ws.git_lines(&["log", "--format=%H"]).len(), 8);
    ws.assert_clean();
}
