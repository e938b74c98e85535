//! Revisions are of content: a copy, a checkout or `touch` that changes no byte moves no
//! revision and is no "outside change"; a changed byte of either tree is one. The stat cache of
//! the revision record is refreshed without moving the revision, and a record written before
//! `source_files` existed keeps its revision until the next install.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use scriptorium_txn::{BeginOptions, RealFs, Workspace};
use sha2::{Digest, Sha256};

use super::{fixture, options, replace};

/// Copies `from` into `to` file by file (new inodes, new mtimes), as `cp -r` does.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Sets the mtime of `path` to `secs` after the epoch without changing a byte.
fn set_mtime(path: &Path, secs: u64) {
    let file = std::fs::File::options().write(true).open(path).expect("open");
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)).expect("set mtime");
}

fn record(root: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(root.join(".scriptorium/revision")).expect("record");
    serde_json::from_str(&text).expect("json")
}

#[test]
fn the_revision_of_a_seeded_workspace_is_reproducible() {
    // The worked example of docs/format.md#revision: the fixture's archive append and install
    // with a fixed clock and seeded IDs give this revision on any machine.
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let revision = ws.revision().expect("revision");
    let rec = record(dir.path());
    let digest = |field: &str| rec[field].as_str().expect("digest").to_owned();
    let formula = format!(
        "scriptorium-revision/2\0{}\0{}\0{}\0{}",
        rec["counter"],
        rec["txn_id"].as_str().expect("txn id"),
        digest("topics"),
        digest("sources")
    );
    let expected =
        format!("{}-{}", rec["counter"], &hex::encode(Sha256::digest(formula.as_bytes()))[..16]);
    assert_eq!(revision.as_str(), expected);
    assert_eq!(
        (
            revision.as_str(),
            rec["txn_id"].as_str(),
            &digest("topics")[..8],
            &digest("sources")[..8]
        ),
        ("2-92904f2a6f6bb7c9", Some("t-1712048400000-52727028"), "4ccedec6", "eba4789f"),
        "the worked example of docs/format.md#revision"
    );
}

#[test]
fn a_copied_workspace_keeps_its_revision_and_reports_no_outside_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let original = dir.path().join("a");
    let ws = fixture(&original);
    let revision = ws.revision().expect("revision");
    drop(ws);
    let copy = dir.path().join("b");
    copy_tree(&original, &copy);

    let ws = Workspace::open_with(&copy, options(Arc::new(RealFs), 11)).expect("open copy");
    let state = ws.revision_state().expect("state");
    assert_eq!(state.revision, revision, "no byte changed: the same revision");
    assert!(!state.topics_edited_outside);
    assert!(!state.sources_changed_outside, "no source byte changed");
    assert!(state.outside_files.is_empty());
    assert!(state.stat_cache_stale, "every stat differs from the record's");
    assert_eq!(ws.installed_revision().expect("installed"), revision);

    assert!(ws.refresh_stat_cache().expect("refresh"));
    let state = ws.revision_state().expect("state");
    assert!(!state.stat_cache_stale, "the record now carries the copy's stats");
    assert_eq!(state.revision, revision);
    assert_eq!(ws.installed_revision().expect("installed"), revision);
    assert!(!ws.refresh_stat_cache().expect("refresh"), "nothing left to refresh");
}

#[test]
fn touching_an_archive_is_no_source_change_and_appending_a_byte_is_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let revision = ws.revision().expect("revision");
    let archive = dir.path().join("sources/openprogram/_v2/garden.md");
    assert!(archive.is_file(), "the fixture archives into {}", archive.display());

    set_mtime(&archive, 1_000_000_000);
    let state = ws.revision_state().expect("state");
    assert!(!state.sources_changed_outside);
    assert!(state.stat_cache_stale);
    assert_eq!(state.revision, revision);

    let mut text = std::fs::read_to_string(&archive).expect("read");
    text.push('\n');
    std::fs::write(&archive, text).expect("write");
    let state = ws.revision_state().expect("state");
    assert!(state.sources_changed_outside);
    assert_ne!(state.revision, revision);
}

#[test]
fn a_record_without_a_source_manifest_keeps_its_revision_until_the_next_install() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(fixture(dir.path()));
    // Rewrite the record as a release before `source_files` wrote it: `sources` is the stat
    // fingerprint (kind, path, size, mtime, inode per entry; docs/format.md#revision).
    let sources = dir.path().join("sources");
    let mut entries = Vec::new();
    let mut stack = vec![sources.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_dir() {
                stack.push(entry.path());
            } else {
                entries.push(entry.path());
            }
        }
    }
    let mut lines: Vec<(String, String)> = entries
        .iter()
        .map(|path| {
            use std::os::unix::fs::MetadataExt;
            let meta = std::fs::symlink_metadata(path).expect("stat");
            let rel = path.strip_prefix(&sources).expect("rel").to_string_lossy().into_owned();
            let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
            let line = format!("File\0{rel}\0{}\0{mtime}\0{}\n", meta.len(), meta.ino());
            (rel, line)
        })
        .collect();
    lines.sort();
    let mut hasher = Sha256::new();
    for (_, line) in &lines {
        hasher.update(line.as_bytes());
    }
    let mut old = record(dir.path());
    old["sources"] = serde_json::Value::String(hex::encode(hasher.finalize()));
    old.as_object_mut().expect("object").remove("source_files");
    std::fs::write(dir.path().join(".scriptorium/revision"), format!("{old}\n")).expect("write");

    let ws = Workspace::open_with(dir.path(), options(Arc::new(RealFs), 12)).expect("reopen");
    let state = ws.revision_state().expect("state");
    assert!(!state.sources_changed_outside, "the old fingerprint still matches");
    assert_eq!(state.revision, ws.installed_revision().expect("installed"));

    replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("install");
    let new = record(dir.path());
    assert!(new["source_files"].as_array().is_some_and(|files| !files.is_empty()));
    assert!(!ws.revision_state().expect("state").sources_changed_outside);
}
