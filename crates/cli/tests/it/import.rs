//! `scriptorium import` tests on small hand-written transcripts: the summary line, `--json`,
//! re-import, bad lines, failed files and usage errors.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::scriptorium;

fn claude_line(uuid: &str, parent: Option<&str>, kind: &str, text: &str) -> String {
    json!({
        "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "sess-1",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": kind, "content": [{"type": "text", "text": text}]},
    })
    .to_string()
}

fn write_transcript(dir: &Path) -> std::path::PathBuf {
    let project = dir.join("projects/-w");
    std::fs::create_dir_all(&project).expect("dirs");
    let path = project.join("sess-1.jsonl");
    let text = [
        claude_line("u1", None, "user", "Plan the trip"),
        claude_line("a1", Some("u1"), "assistant", "Sure"),
        r#"{"type":"file-history-snapshot","messageId":"m"}"#.to_owned(),
    ]
    .join("\n");
    std::fs::write(&path, text + "\n").expect("write");
    path
}

fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

#[test]
fn imports_a_directory_and_reimports_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_transcript(tmp.path());
    let projects = tmp.path().join("projects");
    let projects = projects.to_str().expect("utf-8 path");

    let out = scriptorium(&home, &["import", "claude-code", projects]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        line.trim_end(),
        "imported 1 sessions: 2 nodes (2 new, 0 already present), 1 branches; \
         skipped 1 records (file-history-snapshot 1); 0 bad lines"
    );
    // No progress bar when stderr is not a terminal.
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(home.join("sessions").is_dir());

    let out = scriptorium(&home, &["import", "claude-code", projects, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = stdout_json(&out);
    assert_eq!(v["sessions"], 1);
    assert_eq!(v["nodes"], 2);
    assert_eq!(v["new_nodes"], 0);
    assert_eq!(v["existing_nodes"], 2);
    assert_eq!(v["skipped"]["file-history-snapshot"], 1);
    assert_eq!(v["session_list"][0]["id"], "sess-1");
    assert_eq!(v["session_list"][0]["title"], "Plan the trip");
}

#[test]
fn bad_lines_are_warned_and_skipped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let path = tmp.path().join("chat.jsonl");
    let text = [
        json!({"id": "m1", "role": "user", "content": "hi"}).to_string(),
        "garbage".to_owned(),
        json!({"id": "m2", "parent": "m1", "role": "assistant", "content": "hello"}).to_string(),
    ]
    .join("\n");
    std::fs::write(&path, text).expect("write");
    let out = scriptorium(&home, &["import", "jsonl", path.to_str().expect("utf-8"), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("chat.jsonl:2: not a JSON object"), "{stderr}");
    let v = stdout_json(&out);
    assert_eq!(v["new_nodes"], 2);
    assert_eq!(v["bad_lines"][0]["line"], 2);
}

#[test]
fn a_failed_file_exits_1_and_the_others_are_imported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let good = write_transcript(tmp.path());
    let bad = tmp.path().join("notes.jsonl");
    std::fs::write(&bad, "# not a transcript\n").expect("write");
    let missing = tmp.path().join("missing.jsonl");
    let args = [
        "import",
        "claude-code",
        bad.to_str().expect("utf-8"),
        good.to_str().expect("utf-8"),
        missing.to_str().expect("utf-8"),
        "--json",
    ];
    let out = scriptorium(&home, &args);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["new_nodes"], 2);
    let failed = v["failed"].as_array().expect("failed list");
    assert_eq!(failed.len(), 2, "{failed:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("notes.jsonl:1: not a JSONL transcript"), "{stderr}");
    assert!(stderr.contains("missing.jsonl"), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for args in [&["import", "word", "x.jsonl"][..], &["import", "codex"][..], &["import"][..]] {
        let out = scriptorium(tmp.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
