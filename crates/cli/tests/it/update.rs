//! `scriptorium update`: whole-file changes and patches as compare-and-set transactions, with
//! exit codes that tell a conflict (retry) from a rejection.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{home_with_sources, scriptorium};

/// A topic citing a source declared in the same request (`new-source-garden`): a change
/// request may only introduce evidence it brings along.
const NOTE: &str = "# Garden\n\nDana is planning a vegetable garden.[^e1]\n\n\
[^e1]: Time: `2024-04-02`; Sources: [garden](new-source-garden)\n";

const SOURCES: &str = r#"[{"label": "new-source-garden", "role": "user",
  "content": "I'm planning a vegetable garden.", "observed_at": "2024-04-02T09:00:00+02:00"}]"#;

/// Writes [`SOURCES`] next to the home and returns its path.
fn sources_file(home: &Path) -> String {
    let path = home.join("sources.json");
    fs::write(&path, SOURCES).expect("write sources");
    path.to_str().expect("utf-8").to_owned()
}

fn revision(home: &Path) -> String {
    let out = scriptorium(home, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    status["revision"].as_str().expect("revision").to_owned()
}

/// Runs `scriptorium update` with `stdin` as the request file.
fn update(home: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .arg("update")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("waits")
}

#[test]
fn whole_file_changes_install_and_report_the_result() {
    let home = home_with_sources();
    // The archive the home was given by hand is an outside edit: the status takes it in.
    let status = scriptorium(home.path(), &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(
        status["outside_edits"]["files"],
        serde_json::json!(["sources/openprogram/_v2/garden-2024.md"]),
        "{status}"
    );
    let base = status["revision"].as_str().expect("revision").to_owned();
    let changes =
        serde_json::json!([{ "path": "topics/garden.md", "action": "write", "content": NOTE }]);
    let sources = &sources_file(home.path());
    let out = update(
        home.path(),
        &["--base", &base, "--changes", "-", "--sources", sources, "--json", "-m", "add garden"],
        &changes.to_string(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(result["ok"], true);
    assert_eq!(result["memory_committed"], true);
    assert_eq!(result["git_committed"], true);
    assert!(
        result["changed_files"].as_array().expect("list").iter().any(|f| f == "topics/garden.md")
    );
    assert_eq!(result["block_ids"].as_object().expect("map").len(), 1);
    let source = result["source_ids"]["new-source-garden"].as_str().expect("archived");
    // Provenance: archived under the surface that added it, as the local owner's words.
    assert!(source.starts_with("cli/"), "{source}");
    let thread = source.split('/').nth(1).expect("a thread");
    let archive = format!("sources/cli/_v2/{thread}.md");
    let frames = fs::read_to_string(home.path().join("memory").join(&archive)).expect("archived");
    assert!(frames.contains(&format!("<!-- source-id:{source} -->")), "{frames}");
    assert!(frames.contains("<!-- speaker-id:owner%2Flocal -->"), "{frames}");
    // What changed is what a user sees: the commit's files exactly (the topic, the archive and
    // the derived views it rewrote), never internal state.
    let list = |key: &str| -> std::collections::BTreeSet<String> {
        let values = result[key].as_array().expect("list").iter();
        values.filter_map(serde_json::Value::as_str).map(str::to_owned).collect()
    };
    let changed = list("changed_files");
    assert!(list("adopted").is_empty(), "the status took the archive in: {result}");
    let show = std::process::Command::new("git")
        .args(["-C", &home.path().join("memory").to_string_lossy()])
        .args(["show", "--name-only", "--format=", "HEAD"])
        .output()
        .expect("git show");
    let committed: std::collections::BTreeSet<String> =
        String::from_utf8_lossy(&show.stdout).lines().map(str::to_owned).collect();
    let shown: std::collections::BTreeSet<String> =
        changed.union(&list("adopted")).cloned().collect();
    assert_eq!(shown, committed, "{result}");
    for path in
        ["topics/garden.md", archive.as_str(), "timeline/2024/04/02.md", "recent_events.jsonl"]
    {
        assert!(changed.contains(path), "{path} in {result}");
    }
    assert!(!changed.iter().any(|p| p.starts_with(".scriptorium")), "{result}");
    let text = fs::read_to_string(home.path().join("memory/topics/garden.md")).expect("read");
    assert!(!text.contains("new-source-garden"), "the label became a link: {text}");
    assert_ne!(result["revision"], base.as_str());
    let log = scriptorium(home.path(), &["log", "--json"]);
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).expect("json");
    assert_eq!(log["commits"][0]["summary"], "add garden");
}

#[test]
fn a_stale_base_is_a_retryable_conflict_and_changes_nothing() {
    let home = home_with_sources();
    let base = revision(home.path());
    let changes =
        serde_json::json!([{ "path": "topics/garden.md", "action": "write", "content": NOTE }]);
    let sources = &sources_file(home.path());
    let first = update(
        home.path(),
        &["--base", &base, "--changes", "-", "--sources", sources],
        &changes.to_string(),
    );
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let after = revision(home.path());
    let again = update(home.path(), &["--base", &base, "--changes", "-", "--json"], "[]");
    assert_eq!(again.status.code(), Some(1), "an empty change list is refused first");
    let stale =
        serde_json::json!([{ "path": "topics/other.md", "action": "write", "content": NOTE }]);
    let out = update(
        home.path(),
        &["--base", &base, "--changes", "-", "--sources", sources, "--json"],
        &stale.to_string(),
    );
    assert_eq!(out.status.code(), Some(75), "{}", String::from_utf8_lossy(&out.stdout));
    let error: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(error["ok"], false);
    assert_eq!(error["error"]["code"], "CONCURRENT_UPDATE");
    assert_eq!(revision(home.path()), after);
    assert!(!home.path().join("memory/topics/other.md").exists());
}

#[test]
fn a_conflicting_patch_is_rejected_with_its_code() {
    let home = home_with_sources();
    let base = revision(home.path());
    let patch = "--- a/topics/missing.md\n+++ b/topics/missing.md\n@@ -1 +1 @@\n-old\n+new\n";
    let out = update(home.path(), &["--base", &base, "--patch", "-", "--json"], patch);
    assert_eq!(out.status.code(), Some(1));
    let error: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(error["error"]["code"], "PATCH_CONFLICT");
    assert_eq!(error["error"]["message"], "patch modifies a file that does not exist");
    assert_eq!(revision(home.path()), base);
}

#[test]
fn exactly_one_form_is_required() {
    let home = home_with_sources();
    let out = scriptorium(home.path(), &["update", "--base", "0-00"]);
    assert_eq!(out.status.code(), Some(2), "clap refuses a request without a form");
    let out =
        scriptorium(home.path(), &["update", "--base", "0-00", "--changes", "a", "--patch", "b"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn structured_record_operations_create_and_update_records() {
    let home = home_with_sources();
    let base = revision(home.path());
    let ops = serde_json::json!([{
        "op": "create_record",
        "content": "Dana plans a vegetable garden.",
        "time": "2024-04-02",
        "sources": [{ "source": "openprogram/garden-2024/u2", "label": "garden" }],
        "destination": { "topic_path": "topics/people/dana.md", "headings": ["Dana", "Plans"], "position": "end" }
    }]);
    let out = update(
        home.path(),
        &["--base", &base, "--memory-changes", "-", "--json"],
        &ops.to_string(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let id = result["block_ids"].as_object().expect("map").values().next().expect("an id");
    let id = id.as_str().expect("string").to_owned();
    let text = fs::read_to_string(home.path().join("memory/topics/people/dana.md")).expect("read");
    assert!(text.starts_with("# Dana\n\n## Plans\n\nDana plans a vegetable garden.[^e-"), "{text}");

    let base = revision(home.path());
    let ops = serde_json::json!([{
        "op": "update_record", "memory_id": id, "content": "Dana plans an herb garden.",
        "time": "2024-04-09",
        "sources": [{ "source": "openprogram/garden-2024/u3", "label": "change of plan" }]
    }]);
    let out = update(home.path(), &["--base", &base, "--memory-changes", "-"], &ops.to_string());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = fs::read_to_string(home.path().join("memory/topics/people/dana.md")).expect("read");
    assert!(text.contains("Dana plans an herb garden."), "{text}");
    assert!(text.contains(&format!(" ^{id}")), "the block keeps its ID: {text}");

    let ops = serde_json::json!([{ "op": "delete_record", "memory_id": "ffffffff" }]);
    let out = update(
        home.path(),
        &["--base", &revision(home.path()), "--memory-changes", "-", "--json"],
        &ops.to_string(),
    );
    assert_eq!(out.status.code(), Some(1));
    let error: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(error["error"]["code"], "MEMORY_NOT_FOUND");
}

#[test]
fn a_change_cannot_borrow_evidence_it_did_not_bring() {
    let home = home_with_sources();
    let base = revision(home.path());
    // `u2` is archived but no record cites it: a change request may not introduce it.
    let note = NOTE.replace("new-source-garden", "openprogram/garden-2024/u2");
    let changes =
        serde_json::json!([{ "path": "topics/garden.md", "action": "write", "content": note }]);
    let out =
        update(home.path(), &["--base", &base, "--changes", "-", "--json"], &changes.to_string());
    assert_eq!(out.status.code(), Some(1));
    let error: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let violations = error["error"]["violations"].as_array().expect("violations");
    assert!(
        violations
            .iter()
            .any(|v| v["code"] == "SOURCE_NOT_IN_TRANSACTION" && v["path"] == "topics/garden.md")
    );
    assert_eq!(revision(home.path()), base);
}

#[test]
fn a_path_with_a_control_character_is_a_bad_request_that_names_no_stage() {
    let home = home_with_sources();
    let base = revision(home.path());
    for path in ["topics/a\u{0}b.md", "topics/a\nb.md"] {
        let content = crate::support::NOTE;
        let changes = serde_json::json!([{ "path": path, "action": "write", "content": content }]);
        let args = ["--base", &base, "--changes", "-", "--json"];
        let out = update(home.path(), &args, &changes.to_string());
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
        let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(result["error"]["code"], "INVALID_ARGUMENT", "{result}");
        assert!(!result.to_string().contains(".scriptorium"), "no internal path: {result}");
    }
    assert_eq!(revision(home.path()), base, "nothing changed");
}
