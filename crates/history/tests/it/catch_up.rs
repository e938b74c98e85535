//! Catch-up: `HEAD` is made to name the installed transaction, whatever happened in between.

use scriptorium_history::History;

use crate::support::{Ws, at, commit};

#[test]
fn catch_up_with_a_current_head_does_nothing() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    ws.write("topics/a.md", "a2\n");
    commit(&history, "t-1", "memory: incremental transaction", Some(&["topics/a.md"]), at(1));
    let head = ws.git(&["rev-parse", "HEAD"]);
    assert_eq!(history.catch_up("t-1", at(2)).unwrap(), None);
    assert_eq!(ws.git(&["rev-parse", "HEAD"]), head);
    // A lost marker (or one of a repository older than it) is written again, by the check
    // that had to read HEAD to know, and by a catch-up.
    std::fs::remove_file(ws.path(".git/scriptorium-settled")).unwrap();
    assert!(History::settled(ws.root(), "t-1").is_some());
    assert_eq!(
        std::fs::read_to_string(ws.path(".git/scriptorium-settled")).unwrap(),
        format!("t-1 {head}")
    );
    std::fs::remove_file(ws.path(".git/scriptorium-settled")).unwrap();
    assert_eq!(history.catch_up("t-1", at(3)).unwrap(), None);
    assert_eq!(
        std::fs::read_to_string(ws.path(".git/scriptorium-settled")).unwrap(),
        format!("t-1 {head}")
    );
}

#[test]
fn catch_up_commits_a_missed_install_with_its_trailer() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    // An install whose git commit never happened.
    ws.write("topics/a.md", "a2\n");
    ws.write("core.md", "core\n");
    let outcome = history.catch_up("t-7", at(1)).unwrap().expect("committed");
    assert!(outcome.created);
    assert_eq!(
        ws.git(&["log", "-1", "--format=%B"]),
        "memory: catch up with transaction t-7\n\nTxn-Id: t-7\n\n"
    );
    assert_eq!(ws.tree_files(), ["core.md", "topics/a.md"]);
    assert_eq!(history.last_txn_id().unwrap().as_deref(), Some("t-7"));
    // With nothing to add, a catch-up to a new id makes no empty commit: HEAD is marked as
    // holding it, and the next catch-up to the same id has nothing to do.
    let head = ws.git(&["rev-parse", "HEAD"]);
    let again = history.catch_up("t-8", at(2)).unwrap().expect("recorded");
    assert!(!again.created);
    assert_eq!(again.commit, head.trim());
    assert_eq!(ws.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(history.last_txn_id().unwrap().as_deref(), Some("t-8"));
    assert_eq!(history.catch_up("t-8", at(3)).unwrap(), None);
    assert_eq!(ws.git(&["rev-list", "--count", "HEAD"]).trim(), "2");
    ws.assert_clean();
}

#[test]
fn a_hand_commit_holding_the_installed_files_gets_no_empty_catch_up_commit() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    ws.write("topics/a.md", "a2\n");
    commit(&history, "t-1", "memory: incremental transaction", Some(&["topics/a.md"]), at(1));
    // An install whose commit a user made by hand first (or a commit with no trailer at all).
    ws.write("topics/a.md", "a3\n");
    ws.git(&["-c", "user.name=x", "-c", "user.email=y@example.invalid", "commit", "-qam", "mine"]);
    let mine = ws.git(&["rev-parse", "HEAD"]);
    let outcome = history.catch_up("t-2", at(2)).unwrap().expect("recorded");
    assert!(!outcome.created, "the tree is already HEAD's: nothing to commit");
    assert_eq!(ws.git(&["rev-parse", "HEAD"]), mine);
    assert_eq!(history.last_txn_id().unwrap().as_deref(), Some("t-2"));
    assert!(History::settled(ws.root(), "t-2").is_some(), "opening needs no repair any more");
    // A commit made later moves HEAD: the marker no longer names it.
    ws.write("topics/a.md", "a4\n");
    ws.git(&["-c", "user.name=x", "-c", "user.email=y@example.invalid", "commit", "-qam", "more"]);
    assert_eq!(history.last_txn_id().unwrap(), None);
    ws.assert_clean();
}

#[test]
fn a_commit_made_by_the_git_cli_in_between_does_not_break_catch_up() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    ws.write("topics/b.md", "b\n");
    let history = ws.open();
    ws.write("topics/a.md", "a2\n");
    commit(&history, "t-1", "memory: incremental transaction", Some(&["topics/a.md"]), at(1));

    // Someone edits by hand and commits with the CLI, adding a new file as well.
    ws.write("topics/b.md", "b by hand\n");
    ws.write("notes.txt", "by hand\n");
    ws.git(&["add", "notes.txt"]);
    ws.git(&[
        "-c",
        "user.name=x",
        "-c",
        "user.email=y@example.invalid",
        "commit",
        "-qam",
        "by hand",
    ]);
    let cli_commit = ws.git(&["rev-parse", "HEAD"]);
    assert_eq!(history.last_txn_id().unwrap(), None, "the CLI commit has no trailer");

    // Then a transaction installs but its commit is lost.
    ws.write("topics/a.md", "a3\n");
    ws.remove("notes.txt");
    let outcome = history.catch_up("t-2", at(3)).unwrap().expect("committed");
    assert!(outcome.created);
    assert_eq!(history.last_txn_id().unwrap().as_deref(), Some("t-2"));
    assert_eq!(ws.git(&["rev-parse", "HEAD~1"]), cli_commit);
    assert_eq!(ws.tree_files(), ["topics/a.md", "topics/b.md"]);
    assert_eq!(ws.git(&["show", "HEAD:topics/b.md"]), "b by hand\n");
    assert_eq!(ws.git(&["show", "HEAD:topics/a.md"]), "a3\n");
    ws.assert_clean();

    // And ordinary incremental commits continue on top.
    ws.write("topics/b.md", "b4\n");
    commit(&history, "t-3", "memory: incremental transaction", Some(&["topics/b.md"]), at(4));
    assert_eq!(history.last_txn_id().unwrap().as_deref(), Some("t-3"));
    assert_eq!(history.catch_up("t-3", at(5)).unwrap(), None);
    ws.assert_clean();
}

#[test]
fn catch_up_reuses_the_stat_cache_instead_of_rehashing() {
    let ws = Ws::new();
    for i in 0..50 {
        ws.write(&format!("sources/s{i:03}.md"), &format!("source {i}\n"));
    }
    // Old mtimes: the entries are not racy, so the cache is trusted (as git would).
    #[expect(clippy::disallowed_methods, reason = "a test sets times relative to the real now")]
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for i in 0..50 {
        let file = std::fs::File::options()
            .append(true)
            .open(ws.path(&format!("sources/s{i:03}.md")))
            .unwrap();
        file.set_modified(past).unwrap();
    }
    let history = ws.open();
    ws.write("topics/a.md", "a\n");
    let outcome = history.catch_up("t-1", at(1)).unwrap().expect("committed");
    assert_eq!(outcome.files_hashed, 1, "only the new file is read");
    assert_eq!(ws.tree_files().len(), 51);
    ws.assert_clean();
}

/// Regression: `git status` was dirty after a kill during `write`. A committer killed between
/// moving the branch and writing `.git/index` leaves the index of the previous commit; the
/// catch-up that finds `HEAD` already naming the installed transaction now rewrites it.
#[test]
fn catch_up_rewrites_an_index_older_than_the_branch() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    let index = ws.path(".git/index");
    let old_index = std::fs::read(&index).expect("index");
    ws.write("topics/a.md", "a2\n");
    ws.write("topics/b.md", "b\n");
    commit(&history, "t-1", "memory: incremental transaction", None, at(1));
    ws.assert_clean();
    // The state a kill right after the ref update leaves: the old index, older than the ref.
    std::fs::write(&index, &old_index).expect("write index");
    let branch = ws.path(".git/refs/heads/main");
    let branch = if branch.exists() { branch } else { ws.path(".git/refs/heads/master") };
    let ref_time = std::fs::metadata(&branch).expect("ref").modified().expect("mtime");
    std::fs::File::options()
        .write(true)
        .open(&index)
        .expect("open index")
        .set_modified(ref_time - std::time::Duration::from_secs(10))
        .expect("set mtime");
    // (`--no-optional-locks`: a plain `git status` would refresh and rewrite the index.)
    let status = ws.git(&["--no-optional-locks", "status", "--porcelain"]);
    assert!(!status.is_empty(), "the stale index shows changes");
    assert_eq!(history.catch_up("t-1", at(2)).unwrap(), None, "no new commit");
    ws.assert_clean();
}

/// Every commit of a transaction records it in the settled marker, so a process can see that
/// `HEAD` holds the installed transaction from three small files; whatever moves `HEAD` or
/// tears the marker makes it fall back to reading the commit, never to a wrong answer.
#[test]
fn the_settled_marker_names_each_commit_and_is_never_trusted_past_it() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    ws.write("topics/a.md", "a2\n");
    commit(&history, "t-1", "memory: incremental transaction", Some(&["topics/a.md"]), at(1));
    let head = ws.git(&["rev-parse", "HEAD"]);
    let marker = ws.path(".git/scriptorium-settled");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), format!("t-1 {head}"));
    assert!(History::settled(ws.root(), "t-1").is_some());
    assert!(History::settled(ws.root(), "t-2").is_none(), "another transaction is not HEAD's");

    // A torn marker: the commit's trailer still names the transaction.
    std::fs::write(&marker, "t-1 0123").unwrap();
    assert!(History::settled(ws.root(), "t-1").is_some());
    // A marker naming the transaction at another commit: HEAD's own trailer decides.
    std::fs::write(&marker, format!("t-9 {head}")).unwrap();
    assert!(History::settled(ws.root(), "t-9").is_some(), "the marker names HEAD's commit");
    ws.write("topics/a.md", "a3\n");
    ws.git(&["-c", "user.name=x", "-c", "user.email=y@example.invalid", "commit", "-qam", "mine"]);
    assert!(History::settled(ws.root(), "t-9").is_none(), "HEAD moved past the marker's commit");
    assert!(History::settled(ws.root(), "t-1").is_none(), "HEAD holds no transaction now");

    // An index older than the branch needs the repair, marker or not.
    ws.write("topics/a.md", "a4\n");
    commit(&history, "t-2", "memory: incremental transaction", Some(&["topics/a.md"]), at(2));
    assert!(History::settled(ws.root(), "t-2").is_some());
    let branch = ws.path(".git/refs/heads/main");
    let later = std::fs::metadata(ws.path(".git/index")).unwrap().modified().unwrap()
        + std::time::Duration::from_secs(5);
    std::fs::File::options().write(true).open(&branch).unwrap().set_modified(later).unwrap();
    assert!(History::settled(ws.root(), "t-2").is_none(), "the index is older than the branch");
}

/// With nothing installed yet (a workspace another program wrote), the history needs no repair
/// once `HEAD` holds a commit, whether the branch is a loose file or packed; before the
/// repository exists, or with a committer's lock left behind, it does.
#[test]
fn with_nothing_installed_the_history_is_settled_once_head_holds_a_commit() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    assert!(History::settled(ws.root(), "").is_none(), "no repository yet");
    let _history = ws.open();
    assert!(History::settled(ws.root(), "").is_some(), "the initial commit, a loose branch");
    ws.git(&["pack-refs", "--all"]);
    assert!(!ws.path(".git/refs/heads/main").exists(), "the branch is packed now");
    assert!(History::settled(ws.root(), "").is_some(), "a packed branch is read from git");
    std::fs::write(ws.path(".git/index.lock"), "").unwrap();
    assert!(History::settled(ws.root(), "").is_none(), "a lock left behind needs the repair");
}
