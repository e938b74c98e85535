//! `scriptorium check` tests: the corpus workspaces print exactly their expected diagnostics, and
//! files the parser must never read (symlinks, non-UTF-8) are reported, not followed.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::scriptorium;

fn corpus_workspace(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../topics-format/tests/corpus/workspaces")
        .join(name)
}

fn stdout_lines(out: &std::process::Output) -> Vec<String> {
    let mut lines: Vec<String> =
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// Copies a directory tree (regular files only).
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create the copy's directory");
    for entry in fs::read_dir(from).expect("list the corpus directory") {
        let entry = entry.expect("read a directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).expect("copy a corpus file");
        }
    }
}

#[test]
fn corpus_workspaces_print_their_expected_diagnostics() {
    let home = tempfile::tempdir().unwrap();
    for name in ["valid", "invalid"] {
        let dir = corpus_workspace(name);
        let out = scriptorium(home.path(), &["check", "--workspace", dir.to_str().unwrap()]);
        let mut expected: Vec<String> =
            fs::read_to_string(dir.join("EXPECTED")).unwrap().lines().map(str::to_owned).collect();
        expected.sort();
        assert_eq!(stdout_lines(&out), expected, "{name}");
        let want = if expected.is_empty() { 0 } else { 1 };
        assert_eq!(out.status.code(), Some(want), "{name}: exit code");
    }
}

#[test]
fn json_output_carries_codes_and_positions() {
    let home = tempfile::tempdir().unwrap();
    let dir = corpus_workspace("invalid");
    let out = scriptorium(home.path(), &["check", "--json", "--workspace", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["ok"], false);
    assert_eq!(json["topic_files"], 2);
    let diagnostics = json["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 8);
    let dup = diagnostics.iter().find(|d| d["code"] == "DUPLICATE_MEMORY_ID").unwrap();
    assert_eq!(dup["path"], "topics/people/ann.md");
    assert_eq!(dup["line"], 3);
    assert_eq!(dup["col"], 31);
    assert_eq!(dup["message"], "duplicate memory_id: notes001");
}

#[test]
fn missing_workspace_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("nowhere");
    let out = scriptorium(home.path(), &["check", "--workspace", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a memory workspace"));
}

#[test]
fn default_workspace_is_the_memory_dir_of_the_home() {
    let home = tempfile::tempdir().unwrap();
    copy_tree(&corpus_workspace("valid"), &home.path().join("memory"));
    let out = scriptorium(home.path(), &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("0 problem(s)"));
}

#[test]
fn symlinks_and_non_utf8_files_are_reported_not_read() {
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().join("ws");
    copy_tree(&corpus_workspace("valid"), &ws);
    let outside = home.path().join("outside.md");
    fs::write(&outside, "# Outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("topics/linked.md")).unwrap();
    fs::write(ws.join("topics/latin1.md"), b"# Caf\xe9\n").unwrap();
    // A symlinked archive: the topic that cites it must not resolve through the link.
    let archive = ws.join("sources/openprogram/_v2/sess-7f2a.md");
    let moved = home.path().join("sess-7f2a.md");
    fs::rename(&archive, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &archive).unwrap();

    let out = scriptorium(home.path(), &["check", "--workspace", ws.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("topics/linked.md:1:1: NOT_REGULAR_FILE"), "{text}");
    assert!(text.contains("topics/latin1.md:1:6: INVALID_UTF8"), "{text}");
    assert!(text.contains("sources/openprogram/_v2/sess-7f2a.md:1:1: NOT_REGULAR_FILE"), "{text}");
    assert!(text.contains("INVALID_SOURCE_TARGET"), "{text}");
}

#[test]
fn version_and_help_follow_clap_conventions() {
    let home = tempfile::tempdir().unwrap();
    let out = scriptorium(home.path(), &["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("scriptorium {}", env!("CARGO_PKG_VERSION"))
    );
    let out = scriptorium(home.path(), &["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("check"));
    let out = scriptorium(home.path(), &["check", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
}
