//! What goes into a tree: internal paths and symlinks never; incremental commits give the same
//! tree as a full scan; unchanged files are not reread.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;

use crate::support::{Ws, at, commit};

#[test]
fn internal_paths_never_appear_in_any_tree() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    ws.write(".scriptorium/runtime.json", "{}\n");
    ws.write(".scriptorium/txn/t-1/topics/a.md", "staged\n");
    ws.write(".scriptorium-bm25.json", "{}\n");
    ws.write(".scriptorium-block-backup/topics/a.md", "old\n");
    ws.write(".nativemem/x", "x\n");
    ws.write(".nativemem-y/z", "z\n");
    ws.write("sources/repo/.git/config", "nested\n");
    ws.write("sources/repo/.GIT/config", "nested\n");
    ws.write("sources/repo/file.md", "kept\n");
    let history = ws.open();
    let changed = [
        "topics/a.md",
        ".scriptorium/runtime.json",
        ".scriptorium-bm25.json",
        ".nativemem",
        "sources/repo",
        ".git/config",
    ];
    ws.write("topics/a.md", "a2\n");
    commit(&history, "t-1", "memory: incremental transaction", Some(&changed), at(1));
    history.catch_up("t-2", at(2)).unwrap();

    let every_path = ws.git_lines(&["log", "--format=", "--name-only", "--all"]);
    assert!(!every_path.is_empty());
    for path in &every_path {
        assert!(!path.starts_with(".scriptorium"), "{path}");
        assert!(!path.starts_with(".nativemem"), "{path}");
        assert!(!path.to_ascii_lowercase().contains(".git/"), "{path}");
    }
    assert_eq!(ws.tree_files(), ["sources/repo/file.md", "topics/a.md"]);
}

#[test]
fn internal_entries_of_a_foreign_head_are_dropped() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    let history = ws.open();
    ws.write(".scriptorium/runtime.json", "{}\n");
    ws.git(&["add", "-f", ".scriptorium/runtime.json"]);
    ws.git(&["-c", "user.name=x", "-c", "user.email=y@example.invalid", "commit", "-qm", "oops"]);
    ws.write("topics/a.md", "a2\n");
    commit(&history, "t-1", "memory: incremental transaction", Some(&["topics/a.md"]), at(1));
    assert_eq!(ws.tree_files(), ["topics/a.md"]);
}

#[test]
fn symlinks_are_skipped_never_followed() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "secret\n").unwrap();
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    symlink(outside.path().join("secret.md"), ws.path("topics/link.md")).unwrap();
    symlink(outside.path(), ws.path("linked-dir")).unwrap();
    let history = ws.open();
    assert_eq!(ws.tree_files(), ["topics/a.md"]);

    // Listing a symlink, or a path through one, as changed records nothing.
    commit(
        &history,
        "t-1",
        "memory: incremental transaction",
        Some(&["topics/link.md", "linked-dir", "linked-dir/secret.md"]),
        at(1),
    );
    assert_eq!(ws.tree_files(), ["topics/a.md"]);

    // A file replaced by a symlink leaves the tree.
    ws.remove("topics/a.md");
    symlink(outside.path().join("secret.md"), ws.path("topics/a.md")).unwrap();
    commit(&history, "t-2", "memory: incremental transaction", Some(&["topics/a.md"]), at(2));
    assert_eq!(ws.tree_files(), Vec::<String>::new());
    let fsck = ws.git_output(&["fsck", "--full", "--strict"]);
    assert!(fsck.status.success());
}

/// A small deterministic generator (no dependency needed for a few hundred steps).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).expect("31 bits fit in usize") % bound
    }
}

#[test]
fn incremental_commits_give_the_same_tree_as_a_full_scan() {
    let dirs =
        ["topics", "topics/people", "topics/projects/x", "sources/chat/_v2", "timeline/2024"];
    let ws = Ws::new();
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    for i in 0..40 {
        let path = format!("{}/f{i}.md", dirs[i % dirs.len()]);
        ws.write(&path, &format!("file {i}\n"));
        model.insert(path, format!("file {i}\n"));
    }
    let history = ws.open();
    let mut rng = Lcg(7);
    for step in 1..=60_i64 {
        let mut changed = Vec::new();
        for _ in 0..=rng.next(3) {
            let op = rng.next(10);
            if op < 2 && !model.is_empty() {
                let path = model.keys().nth(rng.next(model.len())).unwrap().clone();
                ws.remove(&path);
                model.remove(&path);
                changed.push(path);
            } else if op < 3 {
                // A whole directory rewritten and listed as a directory.
                let dir = dirs[rng.next(dirs.len())];
                let inside: Vec<String> =
                    model.keys().filter(|p| p.starts_with(&format!("{dir}/"))).cloned().collect();
                for path in inside {
                    if rng.next(2) == 0 {
                        ws.remove(&path);
                        model.remove(&path);
                    }
                }
                let path = format!("{dir}/d{step}.md");
                ws.write(&path, &format!("dir step {step}\n"));
                model.insert(path, String::new());
                changed.push(format!("{dir}/"));
            } else {
                let path = format!("{}/f{}.md", dirs[rng.next(dirs.len())], rng.next(60));
                let content = format!("step {step} {}\n", rng.next(1000));
                ws.write(&path, &content);
                model.insert(path.clone(), content);
                changed.push(path);
            }
        }
        let txn_id = format!("t-{step}");
        let changed_refs: Vec<&str> = changed.iter().map(String::as_str).collect();
        let incremental = commit(
            &history,
            &txn_id,
            "memory: incremental transaction",
            Some(&changed_refs),
            at(step),
        );
        assert!(incremental.created);
        let full = commit(&history, &txn_id, "memory: incremental transaction", None, at(step));
        assert!(!full.created, "step {step}: full scan differs after {changed:?}");
        assert_eq!(full.commit, incremental.commit);
        if step % 15 == 0 {
            ws.assert_clean();
        }
    }
    let files: Vec<String> = model.keys().cloned().collect();
    assert_eq!(ws.tree_files(), files);
    ws.assert_clean();
}

#[test]
fn one_changed_file_is_the_only_file_read_in_a_large_workspace() {
    let ws = Ws::new();
    for i in 0..200 {
        ws.write(&format!("topics/t{:02}/topic{i}.md", i % 20), &format!("# Topic {i}\n\ntext\n"));
    }
    let big = "x".repeat(16 * 1024);
    for i in 0..1000 {
        ws.write(&format!("sources/p{}/_v2/s{i}.md", i % 10), &big);
    }
    let history = ws.open();
    ws.write("topics/t07/topic7.md", "# Topic 7\n\nchanged\n");
    let outcome = commit(
        &history,
        "t-1",
        "memory: incremental transaction",
        Some(&["topics/t07/topic7.md"]),
        at(1),
    );
    assert!(outcome.created);
    assert_eq!(outcome.files_hashed, 1);
    assert_eq!(
        ws.git_lines(&["show", "--name-only", "--format=", "HEAD"]),
        ["topics/t07/topic7.md"]
    );
    assert_eq!(ws.tree_files().len(), 1200);
    ws.assert_clean();
}

#[test]
fn a_file_becoming_a_directory_and_back_is_recorded() {
    let ws = Ws::new();
    ws.write("topics/x", "a file\n");
    ws.write("topics/d/one.md", "one\n");
    ws.write("topics/d/two.md", "two\n");
    let history = ws.open();

    ws.remove("topics/x");
    ws.write("topics/x/inner.md", "inner\n");
    ws.remove("topics/d");
    ws.write("topics/d", "now a file\n");
    commit(&history, "t-1", "memory: reorganize topics", Some(&["topics/x", "topics/d"]), at(1));
    assert_eq!(ws.tree_files(), ["topics/d", "topics/x/inner.md"]);
    assert!(!commit(&history, "t-1", "memory: reorganize topics", None, at(1)).created);

    ws.remove("topics/x");
    ws.write("topics/x", "a file again\n");
    commit(
        &history,
        "t-2",
        "memory: reorganize topics",
        Some(&["topics/x/inner.md", "topics/x"]),
        at(2),
    );
    assert_eq!(ws.tree_files(), ["topics/d", "topics/x"]);
    assert!(!commit(&history, "t-2", "memory: reorganize topics", None, at(2)).created);
    ws.assert_clean();
}
