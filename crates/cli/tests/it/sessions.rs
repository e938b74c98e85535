//! `scriptorium sessions` tests.

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::collections::BTreeMap;
use std::path::Path;

use scriptorium_markers::{WorkspaceId, mark};
use scriptorium_session_dag::{
    EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Timestamp,
};
use serde_json::Value;

use crate::support::scriptorium;

const T0: i64 = 1_710_495_000_000; // 2024-03-15T09:30:00Z

fn node(id: &str, parent: Option<&str>, role: Role, content: &str, minute: i64) -> Node {
    Node {
        id: NodeId(id.to_owned()),
        parent: parent.map(|p| NodeId(p.to_owned())),
        role,
        kind: NodeKind::Message,
        speaker: None,
        content: content.to_owned(),
        created_at: Timestamp(T0 + minute * 60_000),
        metadata: BTreeMap::new(),
        rewound: false,
    }
}

/// Two sessions: `older` (one message) and `forked` (trunk u1 a1 u2 a2 with u1 a1 written, and
/// a branch e2 off a1 that is the head), built through the library in `<home>/sessions`.
fn build_home(home: &Path) {
    let store = EmbeddedStore::open(home.join("sessions")).unwrap();
    let older = SessionId("older".into());
    store.append(&older, node("x1", None, Role::User, "hello", 0)).unwrap();
    let s = SessionId("forked".into());
    let trunk = vec![
        node("u1", None, Role::User, "Plan the budget tracker\nwith details", 1),
        node("a1", Some("u1"), Role::Assistant, "Sure, a tracker.", 2),
        node("u2", Some("a1"), Role::User, "Use a spreadsheet", 3),
        node("a2", Some("u2"), Role::Assistant, "Done, a spreadsheet.", 4),
    ];
    store.append_batch(&s, trunk.clone()).unwrap();
    let workspace = WorkspaceId::parse("w-0123abcd").unwrap();
    mark(&store, &s, &trunk[..2], &workspace).unwrap();
    let mut tool = node("t1", Some("a1"), Role::Assistant, "{\"tool\":\"ls\"}", 5);
    tool.kind = NodeKind::ToolCall;
    store.append(&s, tool).unwrap();
    store.append(&s, node("e2", Some("t1"), Role::User, "Use SQLite instead", 6)).unwrap();
    store.set_title(&s, Some("Budget tracker".into())).unwrap();
}

fn write_workspace_id(home: &Path, id: &str) {
    let dir = home.join("memory").join(".scriptorium");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("workspace-id"), format!("{id}\n")).unwrap();
}

fn stdout(output: &std::process::Output) -> String {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn json(output: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap()
}

#[test]
fn list_on_an_empty_home_says_so_and_creates_nothing() {
    let home = tempfile::tempdir().unwrap();
    assert_eq!(stdout(&scriptorium(home.path(), &["sessions", "list"])), "no sessions\n");
    let value = json(&scriptorium(home.path(), &["sessions", "list", "--json"]));
    assert_eq!(value, serde_json::json!({ "ok": true, "sessions": [] }));
    assert!(!home.path().join("sessions").exists());
}

#[test]
fn list_shows_sessions_newest_first() {
    let home = tempfile::tempdir().unwrap();
    build_home(home.path());
    let text = stdout(&scriptorium(home.path(), &["sessions", "list"]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("ID"), "{text}");
    assert!(lines[1].starts_with("forked"), "{text}");
    assert!(lines[1].contains("2024-03-15T09:36:00.000Z"), "{text}");
    assert!(lines[1].contains("Budget tracker") && lines[1].contains("e2"), "{text}");
    assert!(lines[2].starts_with("older"), "{text}");
    let value = json(&scriptorium(home.path(), &["sessions", "list", "--json", "--limit", "1"]));
    assert_eq!(
        value,
        serde_json::json!({ "ok": true, "sessions": [{
            "id": "forked",
            "title": "Budget tracker",
            "project": null,
            "updated_at": "2024-03-15T09:36:00.000Z",
            "updated_at_ms": T0 + 6 * 60_000,
            "head": "e2",
            "nodes": 6,
        }]})
    );
}

#[test]
fn show_prints_the_head_branch() {
    let home = tempfile::tempdir().unwrap();
    build_home(home.path());
    let text = stdout(&scriptorium(home.path(), &["sessions", "show", "forked"]));
    assert!(text.contains("head    e2"), "{text}");
    assert!(text.contains("4 nodes on the head branch"), "{text}");
    assert!(
        text.contains("2024-03-15T09:31:00.000Z  user/message  Plan the budget tracker\n"),
        "{text}"
    );
    assert!(text.contains("assistant/tool_call"), "{text}");
    assert!(!text.contains("Use a spreadsheet"), "not on the head branch: {text}");
    let value = json(&scriptorium(home.path(), &["sessions", "show", "forked", "--json"]));
    let ids: Vec<&str> =
        value["branch"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["u1", "a1", "t1", "e2"]);
    assert_eq!(value["branch"][0]["metadata"]["memory_written_scriptorium"], "w-0123abcd");
    assert_eq!(value["branch"][0]["content"], "Plan the budget tracker\nwith details");
}

#[test]
fn branches_count_pending_records_for_the_current_workspace() {
    let home = tempfile::tempdir().unwrap();
    build_home(home.path());
    // No workspace yet: every record is pending.
    let value = json(&scriptorium(home.path(), &["sessions", "branches", "forked", "--json"]));
    assert_eq!(value["workspace_id"], Value::Null);
    let summary = |value: &Value| -> Vec<(String, bool, u64, u64, u64)> {
        value["branches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["tip"].as_str().unwrap().to_owned(),
                    b["head"].as_bool().unwrap(),
                    b["length"].as_u64().unwrap(),
                    b["records"].as_u64().unwrap(),
                    b["pending"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        summary(&value),
        [("e2".to_owned(), true, 4, 3, 3), ("a2".to_owned(), false, 4, 4, 4)]
    );
    let text = stdout(&scriptorium(home.path(), &["sessions", "branches", "forked"]));
    assert!(text.contains("no workspace yet"), "{text}");
    assert!(text.contains("e2 (head)"), "{text}");
    // The workspace that wrote u1 and a1.
    write_workspace_id(home.path(), "w-0123abcd");
    let value = json(&scriptorium(home.path(), &["sessions", "branches", "forked", "--json"]));
    assert_eq!(value["workspace_id"], "w-0123abcd");
    assert_eq!(
        summary(&value),
        [("e2".to_owned(), true, 4, 3, 1), ("a2".to_owned(), false, 4, 4, 2)]
    );
    // Another machine's workspace: its marks count for nothing here.
    write_workspace_id(home.path(), "w-deadbeef");
    let value = json(&scriptorium(home.path(), &["sessions", "branches", "forked", "--json"]));
    assert_eq!(summary(&value)[1].4, 4);
    // A corrupt workspace-id file reads as no workspace.
    write_workspace_id(home.path(), "not an id");
    let text = stdout(&scriptorium(home.path(), &["sessions", "branches", "forked"]));
    assert!(text.contains("no workspace yet"), "{text}");
}

#[test]
fn an_unknown_session_exits_with_1_and_says_which() {
    let home = tempfile::tempdir().unwrap();
    for args in [["sessions", "show", "nope"], ["sessions", "branches", "nope"]] {
        let output = scriptorium(home.path(), &args);
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("session not found: nope"), "{stderr}");
    }
    build_home(home.path());
    let output = scriptorium(home.path(), &["sessions", "show", "nope", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let error: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON error");
    assert_eq!(error["ok"], false);
    assert_eq!(error["error"]["code"], "SESSION_NOT_FOUND");
}

#[test]
fn store_warnings_go_to_stderr_and_do_not_fail_the_command() {
    let home = tempfile::tempdir().unwrap();
    build_home(home.path());
    let log =
        home.path().join("sessions").join(EmbeddedStore::log_file_name(&SessionId("older".into())));
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"op\":\"node\",\"he");
    std::fs::write(&log, bytes).unwrap();
    let output = scriptorium(home.path(), &["sessions", "show", "older"]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning:") && stderr.contains("torn last line"), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("user/message  hello"));
}
