//! `resolve` (HEAD, id, prefix, Txn-Id) and `commit_changes` agree with the git CLI.

use scriptorium_history::{ErrorCode, History};

use crate::support::{Ws, at, commit};

/// A history of three transactions over a file, a directory and a deletion.
fn build(ws: &Ws) -> History {
    ws.write("topics/a.md", "one\ntwo\n");
    let history = ws.open();
    ws.write("topics/a.md", "one\n2\n");
    ws.write("topics/people/dave.md", "dave\n");
    commit(&history, "t-1", "memory: edit a, add dave", Some(&["topics"]), at(1));
    ws.write("topics/b.md", "b\n");
    commit(&history, "t-2", "memory: add b", Some(&["topics/b.md"]), at(2));
    ws.remove("topics/b.md");
    ws.write("topics/people/dave.md", "dave\nlikes tea\n");
    commit(&history, "t-3", "memory: drop b", Some(&["topics/b.md", "topics/people"]), at(3));
    history
}

#[test]
fn revisions_resolve_by_head_id_prefix_and_txn_id() {
    let ws = Ws::new();
    let history = build(&ws);
    let t2 = ws.git(&["rev-parse", "HEAD~1"]).trim().to_owned();
    assert_eq!(history.resolve("t-2").expect("by Txn-Id"), t2);
    assert_eq!(history.resolve(&t2).expect("by id"), t2);
    assert_eq!(history.resolve(&t2[..10].to_uppercase()).expect("by prefix"), t2);
    assert_eq!(history.resolve("HEAD").expect("HEAD"), ws.git(&["rev-parse", "HEAD"]).trim());
    for rev in ["t-99", "ffff0000", ""] {
        let err = history.resolve(rev).expect_err(rev);
        assert_eq!(err.code(), ErrorCode::RevisionNotFound, "{rev}: {err}");
        assert_eq!(err.code().as_str(), "REVISION_NOT_FOUND");
    }
}

#[test]
fn commit_changes_agree_with_git_show() {
    let ws = Ws::new();
    let history = build(&ws);
    for rev in ["t-1", "t-2", "t-3"] {
        let id = history.resolve(rev).expect("resolve");
        let (entry, files) = history.commit_changes(rev, None).expect("changes");
        assert_eq!(entry.commit, id);
        assert_eq!(entry.txn_id.as_deref(), Some(rev));
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let git = ws.git(&["show", "--first-parent", "--name-only", "--format=", &id]);
        assert_eq!(paths, git.lines().collect::<Vec<_>>(), "{rev}");
        for file in &files {
            let at = |commit: &str| {
                let out = ws.git_output(&["show", &format!("{commit}:{}", file.path)]);
                out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
            };
            assert_eq!(file.after, at(&id), "{rev} {}", file.path);
            assert_eq!(file.before, at(&format!("{id}~1")), "{rev} {}", file.path);
        }
    }
    let (_, only) = history.commit_changes("t-3", Some("topics/people")).expect("one folder");
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].path, "topics/people/dave.md");
    let (_, removed) = history.commit_changes("t-3", Some("topics/b.md")).expect("removed");
    assert_eq!((removed[0].before.as_deref(), removed[0].after.as_deref()), (Some("b\n"), None));
    let err = history.commit_changes("t-1", Some("../x")).expect_err("escapes");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}
