//! `write_views` and `rebuild_workspace` on real directories: minimal, atomic replacement,
//! stale timeline files removed, the root `core.md` following its master.

use std::fs;
use std::path::Path;

use scriptorium_views::{CoreRender, RebuildOptions, Views, rebuild_workspace, write_views};

use crate::common::corpus_workspace;

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&corpus_workspace().join("topics"), &dir.path().join("topics"));
    copy_tree(&corpus_workspace().join("sources"), &dir.path().join("sources"));
    dir
}

fn leftover_temporaries(root: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(root.join(".scriptorium")) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|name| name.ends_with(".tmp"))
        .collect()
}

#[test]
fn rebuild_writes_every_view_then_nothing() {
    let dir = workspace();
    let root = dir.path();
    let report = rebuild_workspace(root, &RebuildOptions::default()).expect("rebuild");
    assert!(report.diagnostics.is_empty());
    assert_eq!(report.units, 3);
    assert_eq!(
        report.written.changed_files,
        [
            "core.md",
            "recent_events.jsonl",
            "relations.json",
            "timeline/2024/03.md",
            "timeline/2024/03/15.md",
        ]
    );
    assert_eq!(
        fs::read_to_string(root.join("core.md")).expect("core.md"),
        "# Core\n\nThe owner prefers plain language.[^e-cecd4ddc68] ^18d91425\n\n\
         [^e-cecd4ddc68]: Time: `undated`; Sources: \
         [preference](sources/openprogram/_v2/sess-7f2a.md#source-0640c5fc0b1951db)\n"
    );
    assert!(
        !root.join(".scriptorium/runtime.json").exists(),
        "the views never write runtime state"
    );
    let mtime = |rel: &str| fs::metadata(root.join(rel)).and_then(|m| m.modified()).expect("mtime");
    let before = ["core.md", "relations.json", "timeline/2024/03/15.md"].map(mtime);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let again = rebuild_workspace(root, &RebuildOptions::default()).expect("rebuild");
    assert!(again.written.changed_files.is_empty(), "{:?}", again.written.changed_files);
    assert!(again.written.removed_files.is_empty());
    assert_eq!(["core.md", "relations.json", "timeline/2024/03/15.md"].map(mtime), before);
    assert!(leftover_temporaries(root).is_empty());
}

#[test]
fn stale_timeline_files_and_empty_directories_are_removed() {
    let dir = workspace();
    let root = dir.path();
    fs::create_dir_all(root.join("timeline/1999/01")).expect("mkdir");
    fs::write(root.join("timeline/1999/01/01.md"), "# 1999-01-01\n").expect("write");
    fs::write(root.join("timeline/2024.md"), "# 2024\n").expect("write");
    let report = rebuild_workspace(root, &RebuildOptions::default()).expect("rebuild");
    assert_eq!(report.written.removed_files, ["timeline/1999/01/01.md", "timeline/2024.md"]);
    assert!(!root.join("timeline/1999").exists());
    assert!(root.join("timeline/2024/03/15.md").is_file());
}

#[test]
fn root_core_follows_its_master() {
    let dir = workspace();
    let root = dir.path();
    fs::write(root.join("core.md"), "stale\n").expect("write");
    let none = CoreRender::default();
    // No master before either: a root core.md without one is a legacy file, left alone.
    let written = write_views(root, &Views::default(), &none, false).expect("write");
    assert!(written.removed_files.is_empty());
    assert!(root.join("core.md").exists());
    // The master was deleted: the view disappears with it (see `docs/format.md#core-view`,
    // step 1).
    let written = write_views(root, &Views::default(), &none, true).expect("write");
    assert_eq!(written.removed_files, ["core.md"]);
    assert!(!root.join("core.md").exists());
}

#[test]
fn unparseable_legacy_root_core_is_left_alone_and_a_valid_one_promoted() {
    let dir = workspace();
    let root = dir.path();
    let legacy = fs::read_to_string(corpus_workspace().join("topics/core.md"))
        .expect("master")
        .replace("../sources/", "sources/");
    fs::remove_file(root.join("topics/core.md")).expect("rm");
    fs::write(root.join("core.md"), "Free prose.\n").expect("write");
    let options = RebuildOptions { promote_legacy_core: true, ..RebuildOptions::default() };
    let report = rebuild_workspace(root, &options).expect("rebuild");
    assert!(!report.promoted_legacy_core);
    assert_eq!(fs::read_to_string(root.join("core.md")).expect("kept"), "Free prose.\n");
    assert!(!root.join("topics/core.md").exists());

    fs::write(root.join("core.md"), &legacy).expect("write");
    let report = rebuild_workspace(root, &options).expect("rebuild");
    assert!(report.promoted_legacy_core);
    assert!(root.join("topics/core.md").is_file());
    assert_eq!(fs::read_to_string(root.join("core.md")).expect("render"), legacy);
}

#[cfg(unix)]
#[test]
fn symlinked_sources_are_refused() {
    let dir = workspace();
    let root = dir.path();
    let real = root.join("elsewhere.md");
    fs::rename(root.join("sources/openprogram/_v2/sess-7f2a.md"), &real).expect("mv");
    std::os::unix::fs::symlink(&real, root.join("sources/openprogram/_v2/sess-7f2a.md"))
        .expect("symlink");
    let report = rebuild_workspace(root, &RebuildOptions::default()).expect("rebuild");
    assert!(!report.diagnostics.is_empty(), "a symlinked archive must not resolve");
}

#[test]
fn empty_workspace_rebuilds_to_empty_views() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = rebuild_workspace(dir.path(), &RebuildOptions::default()).expect("rebuild");
    assert_eq!(report.units, 0);
    assert_eq!(report.core.tokens, 0);
    assert!(!dir.path().join("core.md").exists());
    assert_eq!(fs::read_to_string(dir.path().join("recent_events.jsonl")).expect("recent"), "");
}
