//! Importer tests on small hand-written transcripts: every record type of every format, the
//! error paths, re-import idempotence, discovery, and a proptest over prefixes of a file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use scriptorium_session_dag::import::{self, Error, Format, Input, Parsed, ParsedSession};
use scriptorium_session_dag::{
    EmbeddedStore, MetadataBatch, Node, NodeId, NodeKind, Page, Role, SessionId, SessionStore,
};
use serde_json::{Value, json};

fn jsonl(records: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        out.extend_from_slice(r.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn parse(format: Format, bytes: &[u8]) -> Parsed {
    import::parse(format, &[Input::new(Path::new("t.jsonl"), bytes)]).expect("parses")
}

fn one(parsed: &Parsed) -> &ParsedSession {
    assert_eq!(parsed.sessions.len(), 1, "{parsed:?}");
    &parsed.sessions[0]
}

fn node<'a>(s: &'a ParsedSession, id: &str) -> &'a Node {
    s.nodes.iter().find(|n| n.id.as_str() == id).unwrap_or_else(|| panic!("node {id} in {s:?}"))
}

fn parent(n: &Node) -> Option<&str> {
    n.parent.as_ref().map(NodeId::as_str)
}

fn ids(s: &ParsedSession) -> Vec<&str> {
    s.nodes.iter().map(|n| n.id.as_str()).collect()
}

fn skipped(parsed: &Parsed, reason: &str) -> usize {
    parsed.report.skipped.get(reason).copied().unwrap_or(0)
}

fn store() -> (tempfile::TempDir, EmbeddedStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = EmbeddedStore::open(dir.path().join("sessions")).expect("store opens");
    (dir, store)
}

// ---- Claude Code -------------------------------------------------------------------------

fn cc(kind: &str, uuid: &str, parent: Option<&str>, content: Value) -> Value {
    json!({
        "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
        "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w", "gitBranch": "main",
        "message": {"role": kind, "model": "claude-x", "content": content},
    })
}

#[test]
fn claude_messages_text_blocks_and_thinking() {
    let bytes = jsonl(&[
        cc("user", "u1", None, json!("Hello")),
        cc(
            "assistant",
            "a1",
            Some("u1"),
            json!([{"type":"thinking","thinking":"secret"},{"type":"text","text":"one"},{"type":"text","text":"two"}]),
        ),
    ]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let s = one(&parsed);
    assert_eq!(s.id, SessionId("s1".into()));
    assert_eq!(ids(s), ["u1", "a1"]);
    let user = node(s, "u1");
    assert_eq!((user.role, user.kind), (Role::User, NodeKind::Message));
    assert_eq!(user.speaker.as_ref().map(|sp| sp.id.as_str()), Some("owner/local"));
    assert_eq!(user.created_at.0, 1_767_225_600_000);
    let a = node(s, "a1");
    assert_eq!(a.content, "one\ntwo");
    assert_eq!(parent(a), Some("u1"));
    assert_eq!(a.speaker.as_ref().map(|sp| sp.id.as_str()), Some("model/claude-x"));
    for key in ["source_format", "source_file", "source_line", "cwd", "git_branch", "model"] {
        assert!(a.metadata.contains_key(key), "{key} in {:?}", a.metadata);
    }
    assert_eq!(a.metadata["source_line"], "2");
    assert_eq!(s.head.as_ref().map(NodeId::as_str), Some("a1"));
    assert_eq!(s.fallback_title.as_deref(), Some("Hello"));
    assert_eq!(s.branches, 1);
}

/// Parallel tool calls as Claude Code writes them (one row per `tool_use` block of a message,
/// chained; each result row the child of its own call's row; the conversation going on after
/// the last result): one branch, every call and result on the head branch.
#[test]
fn claude_parallel_tool_calls_stay_one_branch() {
    let with_id = |mut row: Value, message: &str| {
        row["message"]["id"] = json!(message);
        row
    };
    let call = |id: &str, file: &str| json!([{"type":"tool_use","id":id,"name":"Write","input":{"file_path":file}}]);
    let result = |id: &str| json!([{"type":"tool_result","tool_use_id":id,"content":"ok"}]);
    let bytes = jsonl(&[
        cc("user", "u1", None, json!("Write two files in parallel")),
        with_id(cc("assistant", "t1", Some("u1"), call("call_a", "a.md")), "msg_1"),
        with_id(cc("assistant", "t2", Some("t1"), call("call_b", "b.md")), "msg_1"),
        cc("user", "r1", Some("t1"), result("call_a")),
        cc("user", "r2", Some("t2"), result("call_b")),
        with_id(cc("assistant", "a2", Some("r2"), json!("Created both files.")), "msg_2"),
    ]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let s = one(&parsed);
    assert_eq!(s.branches, 1, "{s:?}");
    assert_eq!(parent(node(s, "r1")), Some("t2"), "the first result follows the last call");
    assert_eq!(parent(node(s, "r2")), Some("r1"));
    assert_eq!(parent(node(s, "a2")), Some("r2"));
    let (_dir, store) = store();
    import::import_into(&store, parsed, Path::new("t.jsonl")).expect("imports");
    let session = SessionId("s1".into());
    assert_eq!(store.tips(&session).expect("tips").len(), 1);
    let branch: Vec<String> =
        store.branch(&session, None).expect("branch").iter().map(|n| n.id.0.clone()).collect();
    assert_eq!(branch, ["u1", "t1", "t2", "r1", "r2", "a2"]);
}

#[test]
fn claude_multi_block_line_gives_the_source_id_to_its_last_node() {
    let bytes = jsonl(&[
        cc("user", "u1", None, json!("go")),
        cc(
            "assistant",
            "a1",
            Some("u1"),
            json!([
                {"type":"text","text":"Running"},
                {"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},
                {"type":"tool_use","id":"t2","name":"Read","input":{"path":"x"}},
            ]),
        ),
        cc(
            "user",
            "r1",
            Some("a1"),
            json!([
                {"type":"tool_result","tool_use_id":"t1","content":"a b"},
                {"type":"tool_result","tool_use_id":"t2","is_error":true,
                 "content":[{"type":"text","text":"no such file"},{"type":"image","source":{}}]},
            ]),
        ),
    ]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let s = one(&parsed);
    assert_eq!(ids(s), ["u1", "a1#0", "a1#1", "a1", "r1#0", "r1"]);
    assert_eq!(parent(node(s, "a1#0")), Some("u1"));
    assert_eq!(parent(node(s, "a1")), Some("a1#1"));
    assert_eq!(parent(node(s, "r1#0")), Some("a1"));
    let call = node(s, "a1#1");
    assert_eq!((call.role, call.kind), (Role::Assistant, NodeKind::ToolCall));
    assert_eq!(call.content, r#"Bash {"command":"ls"}"#);
    assert_eq!(call.metadata["tool_call_id"], "t1");
    let result = node(s, "r1");
    assert_eq!((result.role, result.kind), (Role::Tool, NodeKind::ToolResult));
    assert_eq!(result.content, "no such file");
    assert_eq!(result.metadata["is_error"], "true");
    assert_eq!(result.metadata["tool_name"], "Read");
    assert_eq!(result.speaker.as_ref().map(|sp| sp.id.as_str()), Some("tool/Read"));
}

#[test]
fn claude_skipped_records_are_transparent_and_counted() {
    let bytes = jsonl(&[
        json!({"type":"file-history-snapshot","messageId":"m","snapshot":{}}),
        json!({"type":"queue-operation","operation":"enqueue","sessionId":"s1"}),
        cc("user", "u1", None, json!("hi")),
        cc("assistant", "th", Some("u1"), json!([{"type":"thinking","thinking":"hmm"}])),
        json!({"type":"progress","uuid":"p1","parentUuid":"th","data":{}}),
        json!({"type":"system","subtype":"stop_hook_summary","uuid":"sys","parentUuid":"p1"}),
        cc("assistant", "a1", Some("sys"), json!([{"type":"text","text":"answer"}])),
        json!({"type":"last-prompt","leafUuid":"a1"}),
        json!({"type":"mystery","uuid":"x"}),
    ]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let s = one(&parsed);
    assert_eq!(ids(s), ["u1", "a1"]);
    assert_eq!(parent(node(s, "a1")), Some("u1"));
    for reason in [
        "file-history-snapshot",
        "queue-operation",
        "assistant (thinking only)",
        "progress",
        "system:stop_hook_summary",
        "last-prompt",
        "mystery",
    ] {
        assert_eq!(skipped(&parsed, reason), 1, "{reason}: {:?}", parsed.report.skipped);
    }
    assert_eq!(parsed.report.lines, 9);
}

#[test]
fn claude_compaction_keeps_the_dag_connected_through_the_logical_parent() {
    let bytes = jsonl(&[
        cc("user", "u1", None, json!("long talk")),
        cc("assistant", "a1", Some("u1"), json!([{"type":"text","text":"ok"}])),
        json!({"type":"system","subtype":"compact_boundary","uuid":"cb","parentUuid":null,
               "logicalParentUuid":"a1","sessionId":"s1","compactMetadata":{"trigger":"auto","preTokens":9}}),
        {
            let mut v = cc("user", "sum", Some("cb"), json!("This session is being continued"));
            v["isCompactSummary"] = json!(true);
            v
        },
        cc("assistant", "a2", Some("sum"), json!([{"type":"text","text":"continuing"}])),
    ]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let s = one(&parsed);
    let summary = node(s, "sum");
    assert_eq!((summary.role, summary.kind), (Role::System, NodeKind::CompactionSummary));
    assert_eq!(parent(summary), Some("a1"));
    assert_eq!(summary.metadata["compact_boundary"], "cb");
    assert_eq!(summary.metadata["compact_trigger"], "auto");
    assert_eq!(s.nodes.iter().filter(|n| n.parent.is_none()).count(), 1);
    assert!(parsed.report.skipped.is_empty(), "{:?}", parsed.report.skipped);
}

#[test]
fn claude_missing_parent_becomes_a_root_with_the_id_kept() {
    let bytes = jsonl(&[cc("user", "u2", Some("gone"), json!("orphan"))]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let n = node(one(&parsed), "u2");
    assert_eq!(n.parent, None);
    assert_eq!(n.metadata["missing_parent"], "gone");
}

#[test]
fn claude_summary_titles_only_its_own_leaves() {
    let bytes = jsonl(&[
        json!({"type":"summary","summary":"Other session","leafUuid":"elsewhere"}),
        cc("user", "u1", None, json!("<command-name>/clear</command-name>")),
        cc("user", "u2", Some("u1"), json!("Plan the trip")),
        json!({"type":"summary","summary":"Trip planning","leafUuid":"u2"}),
    ]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let s = one(&parsed);
    assert_eq!(s.title.as_deref(), Some("Trip planning"));
    assert_eq!(s.fallback_title.as_deref(), Some("Plan the trip"));
    assert_eq!(skipped(&parsed, "summary (leaf not in session)"), 1);
}

#[test]
fn claude_meta_and_synthetic_records_are_runtime() {
    let mut meta = cc("user", "m1", None, json!("Caveat: local command output"));
    meta["isMeta"] = json!(true);
    let mut synth = cc("assistant", "s2", Some("m1"), json!([{"type":"text","text":"API Error"}]));
    synth["message"]["model"] = json!("<synthetic>");
    let parsed = parse(Format::ClaudeCode, &jsonl(&[meta, synth]));
    let s = one(&parsed);
    for id in ["m1", "s2"] {
        let n = node(s, id);
        assert_eq!(n.kind, NodeKind::Runtime, "{id}");
        assert_eq!(n.speaker.as_ref().map(|sp| sp.id.as_str()), Some("runtime/claude-code"));
    }
}

#[test]
fn claude_session_id_changes_keep_every_parent_link() {
    let mut resumed = cc("user", "c", Some("b"), json!("resume"));
    resumed["sessionId"] = json!("s2");
    let bytes = jsonl(&[
        cc("user", "a", None, json!("start")),
        cc("assistant", "b", Some("a"), json!([{"type":"text","text":"reply"}])),
        resumed,
    ]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let s = one(&parsed);
    assert_eq!(s.id.as_str(), "s1");
    assert_eq!(parent(node(s, "c")), Some("b"));
    assert_eq!(node(s, "c").metadata["source_session_id"], "s2");
}

#[test]
fn claude_head_is_the_newest_main_node_after_a_rewind() {
    let mut edited = cc("user", "u2b", Some("a1"), json!("second try"));
    edited["timestamp"] = json!("2026-01-01T00:05:00Z");
    let mut first = cc("user", "u2a", Some("a1"), json!("first try"));
    first["timestamp"] = json!("2026-01-01T00:01:00Z");
    let bytes = jsonl(&[
        cc("user", "u1", None, json!("q")),
        cc("assistant", "a1", Some("u1"), json!([{"type":"text","text":"r"}])),
        edited,
        first,
    ]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let s = one(&parsed);
    assert_eq!(s.head.as_ref().map(NodeId::as_str), Some("u2b"));
    assert_eq!(s.branches, 2);
}

#[test]
fn claude_sidechain_hangs_off_the_task_call_that_spawned_it() {
    let main = jsonl(&[
        cc("user", "u1", None, json!("explore")),
        cc(
            "assistant",
            "task",
            Some("u1"),
            json!([{"type":"tool_use","id":"toolu_T","name":"Task","input":{"prompt":"look"}}]),
        ),
        {
            let mut r = cc(
                "user",
                "res",
                Some("task"),
                json!([{"type":"tool_result","tool_use_id":"toolu_T","content":"found it"}]),
            );
            r["toolUseResult"] = json!({"status":"completed","agentId":"ag1","content":[]});
            r
        },
    ]);
    let side = |uuid: &str, parent: Option<&str>, text: &str| {
        let mut v = cc("assistant", uuid, parent, json!([{"type":"text","text":text}]));
        v["isSidechain"] = json!(true);
        v["agentId"] = json!("ag1");
        v
    };
    let agent = jsonl(&[side("g1", None, "looking"), side("g2", Some("g1"), "found")]);
    let meta = br#"{"agentType":"Explore","description":"Look around"}"#;
    let agent_path = PathBuf::from("s1/subagents/agent-ag1.jsonl");
    let inputs = [
        Input::new(Path::new("s1.jsonl"), &main),
        Input { path: &agent_path, bytes: &agent, sidechain: true, meta: Some(meta) },
    ];
    let parsed = import::parse(Format::ClaudeCode, &inputs).expect("parses");
    let s = one(&parsed);
    let root = node(s, "g1");
    assert_eq!(parent(root), Some("task"));
    assert_eq!(root.metadata["spawned_by_tool_call"], "toolu_T");
    assert_eq!(root.metadata["agent_type"], "Explore");
    assert_eq!(root.metadata["agent_description"], "Look around");
    assert_eq!(root.metadata["is_sidechain"], "true");
    assert_eq!(root.metadata["agent_id"], "ag1");
    assert_eq!(s.head.as_ref().map(NodeId::as_str), Some("res"));
    assert_eq!(s.branches, 2);

    // A unit of sidechains only decides no head.
    let alone = import::parse(Format::ClaudeCode, &inputs[1..]).expect("parses");
    let s = one(&alone);
    assert_eq!(s.head, None);
    assert_eq!(parent(node(s, "g1")), None);
}

#[test]
fn claude_parent_cycles_are_cut() {
    let bytes = jsonl(&[
        cc("user", "x", Some("y"), json!("one")),
        cc("assistant", "y", Some("x"), json!([{"type":"text","text":"two"}])),
    ]);
    let parsed = parse(Format::ClaudeCode, &bytes);
    let s = one(&parsed);
    let roots: Vec<&Node> = s.nodes.iter().filter(|n| n.parent.is_none()).collect();
    assert_eq!(roots.len(), 1);
    assert!(roots[0].metadata.contains_key("cycle_parent"));
    // And the store accepts the result.
    let (_dir, store) = store();
    import::import_into(&store, parsed, Path::new("t.jsonl")).expect("imports");
    let branch = store.branch(&SessionId("s1".into()), Some(&NodeId("x".into()))).expect("branch");
    assert_eq!(branch.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(), ["y", "x"]);
}

// ---- bad input -----------------------------------------------------------------------------

#[test]
fn garbage_lines_are_skipped_with_their_line_numbers() {
    let mut bytes = jsonl(&[cc("user", "u1", None, json!("hi"))]);
    bytes.extend_from_slice(b"this is not json\n\n{\"type\": \n");
    bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
    bytes.extend_from_slice(b"[1,2]\n");
    bytes.extend_from_slice(&jsonl(&[cc("assistant", "a1", Some("u1"), json!("yo"))]));
    for format in [Format::ClaudeCode, Format::Codex, Format::Pi, Format::Jsonl] {
        let parsed = parse(format, &bytes);
        let mut lines: Vec<usize> = parsed.report.bad_lines.iter().map(|b| b.line).collect();
        // The generic format also rejects the Claude records themselves (no `id`).
        if format == Format::Jsonl {
            lines.retain(|l| ![1, 7].contains(l));
        }
        assert_eq!(lines, [2, 4, 5, 6], "{format}: {:?}", parsed.report.bad_lines);
        assert!(parsed.report.bad_lines.iter().all(|b| b.path == Path::new("t.jsonl")));
    }
    let s = one(&parse(Format::ClaudeCode, &bytes)).clone();
    assert_eq!(ids(&s), ["u1", "a1"]);
}

#[test]
fn a_file_that_is_not_jsonl_is_an_error_naming_the_path() {
    for format in [Format::ClaudeCode, Format::Codex, Format::Pi, Format::Jsonl] {
        let err =
            import::parse(format, &[Input::new(Path::new("notes.md"), b"# Notes\n\nhello\n")])
                .expect_err("not JSONL");
        assert!(
            matches!(&err, Error::NotJsonl { path, line: 1, .. } if path == Path::new("notes.md"))
        );
        assert!(err.to_string().starts_with("notes.md:1: not a JSONL transcript"), "{err}");
    }
}

#[test]
fn empty_and_blank_files_give_no_session() {
    for bytes in [&b""[..], b"\n\n  \n"] {
        for format in [Format::ClaudeCode, Format::Codex, Format::Pi, Format::Jsonl] {
            let parsed = parse(format, bytes);
            assert!(parsed.sessions.is_empty() && parsed.report.bad_lines.is_empty(), "{format}");
        }
    }
}

// ---- Codex ---------------------------------------------------------------------------------

fn cx(kind: &str, payload: Value) -> Value {
    json!({"timestamp": "2026-05-11T08:27:17.490Z", "type": kind, "payload": payload})
}

#[test]
fn codex_rollout_is_linear() {
    let bytes = jsonl(&[
        cx("session_meta", json!({"id":"cx1","cwd":"/w","forked_from_id":"cx0"})),
        cx(
            "response_item",
            json!({"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>"}]}),
        ),
        cx("turn_context", json!({"model":"gpt-9","cwd":"/w"})),
        cx(
            "response_item",
            json!({"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x</environment_context>"}]}),
        ),
        cx(
            "response_item",
            json!({"type":"message","role":"user","content":[{"type":"input_text","text":"show tools"}]}),
        ),
        cx("event_msg", json!({"type":"user_message","message":"show tools"})),
        cx("response_item", json!({"type":"reasoning","encrypted_content":"zz"})),
        cx(
            "response_item",
            json!({"type":"function_call","name":"exec","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}),
        ),
        cx("event_msg", json!({"type":"token_count"})),
        cx("response_item", json!({"type":"function_call_output","call_id":"c1","output":"a b"})),
        cx(
            "response_item",
            json!({"type":"custom_tool_call","name":"apply_patch","input":"*** Begin","call_id":"c2"}),
        ),
        cx(
            "response_item",
            json!({"type":"custom_tool_call_output","call_id":"c2","output":"{\"output\":\"ok\"}"}),
        ),
        cx(
            "response_item",
            json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}),
        ),
        cx("compacted", json!({"message":"summary so far"})),
    ]);
    let parsed = parse(Format::Codex, &bytes);
    let s = one(&parsed);
    assert_eq!(s.id.as_str(), "cx1");
    // The developer message (Codex's instructions to the model) is no turn (issue 34).
    assert_eq!(
        ids(s),
        ["line-4", "line-5", "line-8", "line-10", "line-11", "line-12", "line-13", "line-14"]
    );
    for pair in s.nodes.windows(2) {
        assert_eq!(pair[1].parent.as_ref(), Some(&pair[0].id));
    }
    let kinds: Vec<(Role, NodeKind)> = s.nodes.iter().map(|n| (n.role, n.kind)).collect();
    assert_eq!(
        kinds,
        [
            (Role::User, NodeKind::Runtime),
            (Role::User, NodeKind::Message),
            (Role::Assistant, NodeKind::ToolCall),
            (Role::Tool, NodeKind::ToolResult),
            (Role::Assistant, NodeKind::ToolCall),
            (Role::Tool, NodeKind::ToolResult),
            (Role::Assistant, NodeKind::Message),
            (Role::System, NodeKind::CompactionSummary),
        ]
    );
    assert_eq!(node(s, "line-4").metadata["forked_from"], "cx0");
    assert_eq!(node(s, "line-10").metadata["tool_name"], "exec");
    assert_eq!(node(s, "line-10").content, "a b");
    assert_eq!(node(s, "line-12").content, "{\"output\":\"ok\"}");
    assert_eq!(node(s, "line-13").speaker.as_ref().map(|sp| sp.id.as_str()), Some("model/gpt-9"));
    assert_eq!(s.head.as_ref().map(NodeId::as_str), Some("line-14"));
    for reason in [
        "response_item:message (developer)",
        "turn_context",
        "event_msg:user_message (duplicate)",
        "response_item:reasoning",
        "event_msg:token_count",
    ] {
        assert_eq!(skipped(&parsed, reason), 1, "{reason}: {:?}", parsed.report.skipped);
    }
}

#[test]
fn codex_event_only_user_messages_are_imported() {
    let bytes = jsonl(&[
        cx("session_meta", json!({"id":"cx2"})),
        cx("event_msg", json!({"type":"user_message","message":"analyze this"})),
        cx(
            "response_item",
            json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}),
        ),
        cx("event_msg", json!({"type":"user_message","message":"analyze this"})),
    ]);
    let parsed = parse(Format::Codex, &bytes);
    let s = one(&parsed);
    // The same words in a later turn are a new message.
    assert_eq!(ids(s), ["line-2", "line-3", "line-4"]);
    assert_eq!(node(s, "line-4").role, Role::User);
}

// ---- pi ------------------------------------------------------------------------------------

#[test]
fn pi_v1_is_linear_with_line_ids() {
    let bytes = jsonl(&[
        json!({"type":"session","id":"p1","timestamp":"2025-12-09T00:53:29.825Z","cwd":"/w","modelId":"opus",
               "branchedFrom":"/h/.pi/agent/sessions/--w--/2025-12-09T00-52-54-397Z_d97339c6-aaaa.jsonl"}),
        json!({"type":"model_change","timestamp":"2025-12-09T00:53:30Z","provider":"a","modelId":"sonnet"}),
        json!({"type":"message","timestamp":"2025-12-09T00:53:31Z","message":{"role":"user","content":[{"type":"text","text":"read main"}]}}),
        json!({"type":"message","timestamp":"2025-12-09T00:53:32Z","message":{"role":"assistant","model":"opus-4",
               "content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"Reading"},{"type":"toolCall","id":"tc1","name":"read","arguments":{"path":"main.ts"}}]}}),
        json!({"type":"message","timestamp":"2025-12-09T00:53:33Z","message":{"role":"toolResult","toolCallId":"tc1","toolName":"read","isError":false,"content":[{"type":"text","text":"code"}]}}),
        json!({"type":"message","timestamp":"2025-12-09T00:53:34Z","message":{"role":"assistant","content":[],"stopReason":"aborted"}}),
        json!({"type":"message","timestamp":"2025-12-09T00:53:35Z","message":{"role":"bashExecution","command":"ls","output":"a\n","exitCode":0}}),
        json!({"type":"compaction","timestamp":"2025-12-09T00:53:36Z","summary":"# Checkpoint","firstKeptEntryIndex":3,"tokensBefore":100}),
        json!({"type":"thinking_level_change","timestamp":"2025-12-09T00:53:37Z","thinkingLevel":"high"}),
    ]);
    let parsed = parse(Format::Pi, &bytes);
    let s = one(&parsed);
    assert_eq!(s.id.as_str(), "p1");
    assert_eq!(ids(s), ["line-3", "line-4#0", "line-4", "line-5", "line-7", "line-8"]);
    for pair in s.nodes.windows(2) {
        assert_eq!(pair[1].parent.as_ref(), Some(&pair[0].id));
    }
    let root = node(s, "line-3");
    assert_eq!(root.metadata["branched_from_session"], "d97339c6-aaaa");
    assert!(root.metadata["branched_from"].ends_with(".jsonl"));
    assert_eq!(node(s, "line-4#0").content, "Reading");
    assert_eq!(node(s, "line-4#0").speaker.as_ref().map(|sp| sp.id.as_str()), Some("model/opus-4"));
    assert_eq!(node(s, "line-4").kind, NodeKind::ToolCall);
    assert_eq!(node(s, "line-5").metadata["tool_call_id"], "tc1");
    assert_eq!(node(s, "line-7").content, "$ ls\na\n");
    let c = node(s, "line-8");
    assert_eq!((c.kind, c.content.as_str()), (NodeKind::CompactionSummary, "# Checkpoint"));
    assert_eq!(c.metadata["tokens_before"], "100");
    for reason in ["model_change", "thinking_level_change", "message:assistant (no content)"] {
        assert_eq!(skipped(&parsed, reason), 1, "{reason}: {:?}", parsed.report.skipped);
    }
}

#[test]
fn pi_v3_is_a_tree_with_transparent_entries() {
    let e = |kind: &str, id: &str, parent: Option<&str>, extra: Value| {
        let mut v =
            json!({"type":kind,"id":id,"parentId":parent,"timestamp":"2026-06-05T05:24:28.246Z"});
        if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), extra) {
            obj.extend(more);
        }
        v
    };
    let msg = |role: &str, text: &str| json!({"message":{"role":role,"content":[{"type":"text","text":text}]}});
    let bytes = jsonl(&[
        json!({"type":"session","version":3,"id":"v3","timestamp":"2026-06-05T05:24:28.246Z","cwd":"/w"}),
        e("session_info", "i1", None, json!({"name":"Refactor auth"})),
        e("model_change", "m1", Some("i1"), json!({"provider":"o","modelId":"gpt"})),
        e("message", "u1", Some("m1"), msg("user", "hello")),
        e("message", "a1", Some("u1"), msg("assistant", "hi")),
        e("message", "u2", Some("u1"), msg("user", "other way")),
        e("label", "l1", Some("u2"), json!({"label":"x"})),
        e("branch_summary", "b1", Some("l1"), json!({"fromId":"a1","summary":"Tried hi"})),
    ]);
    let parsed = parse(Format::Pi, &bytes);
    let s = one(&parsed);
    assert_eq!(s.title.as_deref(), Some("Refactor auth"));
    assert_eq!(parent(node(s, "u1")), None);
    assert_eq!(parent(node(s, "a1")), Some("u1"));
    assert_eq!(parent(node(s, "u2")), Some("u1"));
    let b = node(s, "b1");
    assert_eq!((b.kind, parent(b)), (NodeKind::CompactionSummary, Some("u2")));
    assert_eq!(b.metadata["from_id"], "a1");
    assert_eq!(s.branches, 2);
    assert_eq!(s.head.as_ref().map(NodeId::as_str), Some("b1"));
    assert_eq!(skipped(&parsed, "model_change"), 1);
    assert_eq!(skipped(&parsed, "label"), 1);
}

// ---- generic JSONL ---------------------------------------------------------------------------

#[test]
fn generic_jsonl_schema() {
    let bytes = jsonl(&[
        json!({"id":"m1","parent":null,"role":"user","content":"hi","created_at":"2026-01-02T03:04:05Z"}),
        json!({"id":"m2","parent":"m1","role":"assistant","content":[{"type":"text","text":"hello"}],
               "created_at":1700000000000_i64,"speaker":{"id":"model/x","display":"X"},"metadata":{"k":"v"}}),
        json!({"id":"t1","parent":"m2","role":"tool","kind":"tool_result","content":"out"}),
        json!({"id":"o1","parent":"zz","role":"user","content":"other","session":"s2"}),
        json!({"parent":"m1","role":"user","content":"no id"}),
        json!({"id":"bad","role":"wizard","content":"x"}),
        json!({"id":"bad2","role":"user","kind":"poem","content":"x"}),
        json!({"id":"bad3","role":"user","content":"x","created_at":"yesterday"}),
    ]);
    let parsed = import::parse(Format::Jsonl, &[Input::new(Path::new("dir/chat.jsonl"), &bytes)])
        .expect("parses");
    assert_eq!(parsed.sessions.len(), 2);
    let s = &parsed.sessions[0];
    assert_eq!(s.id.as_str(), "chat");
    assert_eq!(ids(s), ["m1", "m2", "t1"]);
    let m2 = node(s, "m2");
    assert_eq!(m2.content, "hello");
    assert_eq!(m2.created_at.0, 1_700_000_000_000);
    assert_eq!(m2.speaker.as_ref().map(|sp| sp.display.as_str()), Some("X"));
    assert_eq!(m2.metadata["k"], "v");
    assert_eq!(node(s, "m1").speaker.as_ref().map(|sp| sp.id.as_str()), Some("owner/local"));
    // Regression (issue 34): an assistant turn without a speaker was `model/unknown`, shown as
    // "unknown (model/unknown)"; it has none and is labelled by its role.
    let plain = jsonl(&[json!({"id":"a","parent":null,"role":"assistant","content":"hi"})]);
    let plain =
        import::parse(Format::Jsonl, &[Input::new(Path::new("p.jsonl"), &plain)]).expect("parses");
    assert_eq!(plain.sessions[0].nodes[0].speaker, None);
    assert_eq!((node(s, "t1").role, node(s, "t1").kind), (Role::Tool, NodeKind::ToolResult));
    let o1 = node(&parsed.sessions[1], "o1");
    assert_eq!((parsed.sessions[1].id.as_str(), o1.parent.as_ref()), ("s2", None));
    assert_eq!(o1.metadata["missing_parent"], "zz");
    let bad: Vec<usize> = parsed.report.bad_lines.iter().map(|b| b.line).collect();
    assert_eq!(bad, [5, 6, 7, 8]);
}

// ---- import into a store ---------------------------------------------------------------------

#[test]
fn reimport_is_idempotent_keeps_marks_and_moves_the_head_only_on_growth() {
    let (_dir, store) = store();
    let sid = SessionId("s1".into());
    let full = jsonl(&[
        cc("user", "u1", None, json!("q1")),
        cc("assistant", "a1", Some("u1"), json!([{"type":"text","text":"r1"}])),
        cc("user", "u2", Some("a1"), json!("q2")),
        cc("assistant", "a2", Some("u2"), json!([{"type":"text","text":"r2"}])),
    ]);
    let cut = full.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(1).map(|(i, _)| i + 1);
    let prefix = &full[..cut.expect("two lines")];
    let run = |bytes: &[u8]| {
        let parsed = parse(Format::ClaudeCode, bytes);
        import::import_into(&store, parsed, Path::new("t.jsonl")).expect("imports")
    };
    let first = run(prefix);
    assert_eq!((first.nodes(), first.new_nodes()), (2, 2));
    let head = |s: &EmbeddedStore| s.session(&sid).expect("session").and_then(|x| x.head);
    assert_eq!(head(&store).as_ref().map(NodeId::as_str), Some("a1"));
    let mut batch = MetadataBatch::new();
    batch.insert(
        NodeId("a1".into()),
        BTreeMap::from([("memory_written_scriptorium".into(), "w1".into())]),
    );
    store.merge_metadata(&sid, &batch).expect("marks");

    let grown = run(&full);
    assert_eq!((grown.nodes(), grown.new_nodes()), (4, 2));
    assert_eq!(head(&store).as_ref().map(NodeId::as_str), Some("a2"));
    let before = store.session(&sid).expect("session");
    for bytes in [&full[..], prefix, &full[..]] {
        assert_eq!(run(bytes).new_nodes(), 0);
    }
    assert_eq!(store.session(&sid).expect("session"), before);
    let a1 = store.node(&sid, &NodeId("a1".into())).expect("node").expect("a1");
    assert_eq!(a1.metadata["memory_written_scriptorium"], "w1");
    assert_eq!(store.branch(&sid, None).expect("branch").len(), 4);
    assert_eq!(before.and_then(|s| s.title).as_deref(), Some("q1"));
}

// ---- discovery -------------------------------------------------------------------------------

#[test]
fn discovery_groups_sidechains_with_their_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("projects/-w");
    std::fs::create_dir_all(root.join("s1/subagents")).expect("dirs");
    let line = |sid: &str| format!("{}\n", json!({"type":"user","uuid":"x","sessionId":sid}));
    let write = |rel: &str, text: &str| std::fs::write(root.join(rel), text).expect("write");
    write("s1.jsonl", &line("s1"));
    write("agent-old.jsonl", &line("s1"));
    write("s1/subagents/agent-new.jsonl", &line("s1"));
    write("s1/subagents/agent-new.meta.json", "{}");
    write("s2.jsonl", &format!("{{\"type\":\"summary\"}}\n{}", line("s2")));
    write("notes.txt", "not a transcript");
    let (units, errors) = import::discover(Format::ClaudeCode, &[dir.path().to_path_buf()]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(units.len(), 2);
    let s1 = units.iter().find(|u| u.first_path().ends_with("s1.jsonl")).expect("s1 unit");
    let names: Vec<(String, bool, bool)> = s1
        .files
        .iter()
        .map(|f| {
            let name = f.path.file_name().map(|n| n.to_string_lossy().into_owned());
            (name.unwrap_or_default(), f.sidechain, f.meta.is_some())
        })
        .collect();
    assert_eq!(
        names,
        [
            ("s1.jsonl".to_owned(), false, false),
            ("agent-old.jsonl".to_owned(), true, false),
            ("agent-new.jsonl".to_owned(), true, true),
        ]
    );
    // Asked for as Codex, every file is refused as what it looks like; a missing path is an
    // error too.
    let (units, errors) = import::discover(Format::Codex, &[root.clone(), root.join("missing")]);
    assert!(units.is_empty(), "{units:?}");
    let wrong = |e: &Error| {
        matches!(e, Error::WrongFormat { expected: Format::Codex, found: Format::ClaudeCode, .. })
    };
    assert_eq!(errors.iter().filter(|e| wrong(e)).count(), 4, "{errors:?}");
    assert!(
        errors.iter().any(|e| matches!(e, Error::Io { path, .. } if path.ends_with("missing")))
    );
}

/// Six files of every kind in one directory.
fn mixed_directory(dir: &Path) {
    let write = |name: &str, records: &[Value]| {
        std::fs::write(dir.join(name), jsonl(records)).expect("write");
    };
    write("claude.jsonl", &[cc("user", "u1", None, json!("hello"))]);
    write(
        "rollout.jsonl",
        &[
            cx("session_meta", json!({"id": "r1"})),
            cx(
                "response_item",
                json!({"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "hi"}]}),
            ),
        ],
    );
    write(
        "pi.jsonl",
        &[
            json!({"type": "session", "version": 3, "id": "p1"}),
            json!({"type": "message", "id": "e1", "parentId": null,
                   "message": {"role": "user", "content": "hi"}}),
        ],
    );
    write("chat.jsonl", &[json!({"id": "m1", "role": "user", "content": "hi"})]);
    write("empty.jsonl", &[]);
    std::fs::write(dir.join("notes.jsonl"), "# notes\n").expect("write");
}

/// `import pi` of a Codex rollout skipped every record and reported success: a file that
/// looks like another format is refused, naming what it looks like; a file of no known shape
/// (or an empty one) is still taken as the format asked for.
#[test]
fn discovery_refuses_files_that_look_like_another_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    mixed_directory(dir.path());
    let (units, errors) = import::discover(Format::Pi, &[dir.path().to_path_buf()]);
    let taken: Vec<&Path> = units.iter().map(|u| u.first_path()).collect();
    let names = ["empty.jsonl", "notes.jsonl", "pi.jsonl"].map(|n| dir.path().join(n));
    assert_eq!(taken, names.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    let refused: Vec<(String, Format)> = errors
        .iter()
        .map(|e| match e {
            Error::WrongFormat { path, expected: Format::Pi, found } => {
                (path.file_name().unwrap_or_default().to_string_lossy().into_owned(), *found)
            }
            other => panic!("{other}"),
        })
        .collect();
    assert_eq!(
        refused,
        [
            ("chat.jsonl".to_owned(), Format::Jsonl),
            ("claude.jsonl".to_owned(), Format::ClaudeCode),
            ("rollout.jsonl".to_owned(), Format::Codex),
        ]
    );
    assert_eq!(
        errors[2].to_string(),
        format!(
            "{}: looks like a Codex rollout, not a pi session",
            dir.path().join("rollout.jsonl").display()
        )
    );
    assert_eq!(errors[2].code().as_str(), "WRONG_FORMAT");
}

/// `discover_auto` gives each file the format its lines look like, lists the empty ones, and
/// reports the files of no known shape.
#[test]
fn auto_discovery_picks_each_files_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    mixed_directory(dir.path());
    let found = import::discover_auto(&[dir.path().to_path_buf()]);
    let formats: Vec<(String, Format)> = found
        .units
        .iter()
        .map(|u| {
            assert_eq!(u.files.len(), 1, "{u:?}");
            (
                u.first_path().file_name().unwrap_or_default().to_string_lossy().into_owned(),
                u.format,
            )
        })
        .collect();
    assert_eq!(
        formats,
        [
            ("chat.jsonl".to_owned(), Format::Jsonl),
            ("claude.jsonl".to_owned(), Format::ClaudeCode),
            ("pi.jsonl".to_owned(), Format::Pi),
            ("rollout.jsonl".to_owned(), Format::Codex),
        ]
    );
    assert_eq!(found.empty, [dir.path().join("empty.jsonl")]);
    assert!(
        matches!(&found.errors[..], [Error::Unrecognised { path }] if path.ends_with("notes.jsonl")),
        "{:?}",
        found.errors
    );
    // Each unit imports under its format.
    let (_tmp, store) = store();
    for unit in &found.units {
        let summary = import::import_unit(&store, unit).expect("imports");
        assert_eq!(summary.new_nodes(), 1, "{}: {summary:?}", unit.format);
    }
}

/// Discovery of a FIFO named on the command line opened it (and blocked forever); it is an
/// error without being opened, as is a symlink to one, and a FIFO met in a directory search is
/// not a transcript.
#[test]
fn discovery_refuses_a_fifo_without_opening_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo.jsonl");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&fifo, &link).expect("symlink");
    for format in Format::ALL {
        let paths = [fifo.clone(), link.clone(), dir.path().to_path_buf()];
        let (units, errors) = import::discover(format, &paths);
        assert!(units.is_empty(), "{format}: {units:?}");
        let refused: Vec<&Path> = errors
            .iter()
            .map(|e| match e {
                Error::NotRegularFile { path, kind: "FIFO" } => path.as_path(),
                other => panic!("{format}: {other}"),
            })
            .collect();
        assert_eq!(refused, [fifo.as_path(), link.as_path()], "{format}");
    }
}

// ---- proptest: re-imports of prefixes ----------------------------------------------------------

/// A Claude-like transcript: each record's parent is an earlier record (or none), with skipped
/// and multi-block records mixed in.
fn transcript() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec((0usize..6, any::<prop::sample::Index>(), any::<bool>()), 1..24).prop_map(
        |specs| {
            let mut out = Vec::new();
            for (i, (shape, parent, root)) in specs.into_iter().enumerate() {
                let uuid = format!("n{i}");
                let parent = (i > 0 && !root).then(|| format!("n{}", parent.index(i)));
                let p = parent.as_deref();
                let mut v = match shape {
                    0 => cc("user", &uuid, p, json!(format!("question {i}"))),
                    1 => cc("assistant", &uuid, p, json!([{"type":"text","text":"answer"}])),
                    2 => cc(
                        "assistant",
                        &uuid,
                        p,
                        json!([{"type":"text","text":"run"},{"type":"tool_use","id":format!("t{i}"),"name":"Bash","input":{}}]),
                    ),
                    3 => cc("assistant", &uuid, p, json!([{"type":"thinking","thinking":"..."}])),
                    4 => json!({"type":"system","subtype":"turn_duration","uuid":uuid,"parentUuid":p,"sessionId":"s1"}),
                    _ => json!({"type":"file-history-snapshot","messageId":uuid}),
                };
                v["timestamp"] = json!(format!("2026-01-01T00:{:02}:00Z", i % 60));
                out.push(v);
            }
            out
        },
    )
}

fn store_state(
    store: &EmbeddedStore,
) -> Vec<(Option<scriptorium_session_dag::Session>, Vec<Node>)> {
    let sid = SessionId("s1".into());
    let session = store.session(&sid).expect("session");
    let mut nodes: Vec<Node> = Vec::new();
    if session.is_some() {
        for tip in store.tips(&sid).expect("tips") {
            nodes.extend(store.branch(&sid, Some(&tip)).expect("branch"));
        }
    }
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    nodes.dedup_by(|a, b| a.id == b.id);
    let session = session.map(|mut s| {
        s.updated_at = scriptorium_session_dag::Timestamp(0);
        s
    });
    vec![(session, nodes)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Importing any prefixes of a file, in any order, and then the whole file, leaves exactly
    /// what importing the whole file once leaves; importing it again changes nothing.
    #[test]
    fn reimporting_prefixes_is_idempotent_and_order_independent(
        records in transcript(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let full = jsonl(&records);
        let ends: Vec<usize> = full.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).collect();
        let import = |store: &EmbeddedStore, bytes: &[u8]| {
            let parsed = parse(Format::ClaudeCode, bytes);
            import::import_into(store, parsed, Path::new("t.jsonl")).expect("imports")
        };
        let (_a, once) = store();
        import(&once, &full);
        let (_b, many) = store();
        for cut in &cuts {
            import(&many, &full[..ends[cut.index(ends.len())]]);
        }
        import(&many, &full);
        for cut in &cuts {
            import(&many, &full[..ends[cut.index(ends.len())]]);
        }
        prop_assert_eq!(store_state(&many), store_state(&once));
        prop_assert_eq!(import(&many, &full).new_nodes(), 0);
    }
}

// ---- projects ------------------------------------------------------------------------------

#[test]
fn a_project_is_the_git_root_of_the_working_directory_else_the_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("budget");
    std::fs::create_dir_all(repo.join(".git")).expect("a repository");
    std::fs::create_dir_all(repo.join("src/app")).expect("a subdirectory");
    assert_eq!(import::project_of(&repo.join("src/app")), repo.to_string_lossy());
    assert_eq!(import::project_of(&repo), repo.to_string_lossy());
    let plain = dir.path().join("notes");
    std::fs::create_dir(&plain).expect("a plain directory");
    assert_eq!(import::project_of(&plain), plain.to_string_lossy());
    // A directory of another machine is its own project.
    assert_eq!(import::project_of(Path::new("/nowhere/here/x/")), "/nowhere/here/x");
}

#[test]
fn an_import_records_the_sessions_project_once() {
    let (dir, store) = store();
    let bytes = jsonl(&[cc("user", "u1", None, json!("Hello"))]);
    import::import_into(&store, parse(Format::ClaudeCode, &bytes), Path::new("t.jsonl"))
        .expect("imports");
    let session = store.session(&SessionId("s1".into())).expect("reads").expect("exists");
    assert_eq!(session.project.as_deref(), Some("/w"));
    let listed = store.list_sessions(Page { offset: 0, limit: 10 }).expect("lists");
    assert_eq!(listed[0].project.as_deref(), Some("/w"), "the registry carries it");
    // Importing again writes no second `project` line.
    let log = || {
        std::fs::read_dir(dir.path().join("sessions"))
            .expect("the store")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .map(|e| std::fs::read_to_string(e.path()).expect("the log"))
            .collect::<String>()
    };
    let before = log();
    assert_eq!(before.matches(r#""op":"project""#).count(), 1, "{before}");
    import::import_into(&store, parse(Format::ClaudeCode, &bytes), Path::new("t.jsonl"))
        .expect("imports");
    assert_eq!(log(), before);
}
