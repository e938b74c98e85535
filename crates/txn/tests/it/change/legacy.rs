//! Structured edits of legacy `mem_` units (see `docs/format.md#memory-units`): one unit of a
//! shared paragraph is updated or deleted in place, its peers and the trailing prose stay,
//! definitions stay before the paragraph, links to `mem_` IDs keep working and deleting the last
//! unit removes the file.
//!
//! It also holds the record API's checks on labels kept verbatim, on the link to a thread whose
//! name has a space, on headings counting toward the byte limit (against this engine's fixed
//! 512 000-byte limit) and on an HTML-bearing paragraph located as the parser locates it.

use std::path::Path;

use scriptorium_txn::{ChangeLimits, ErrorCode, UpdateRequest, Workspace};
use serde_json::{Value, json};

use super::{live, refused, update};
use crate::pipeline::fixture;

const EVE: &str = "topics/people/eve.md";

const LEGACY: &str = "# Eve\n\n\
    [^mem_a1]: Time: `2023`; Sources: [chat one](openprogram/garden/u1)\n\
    [^mem_b2]: Time: `2023-05`; Sources: [chat two](openprogram/garden/u2)\n\n\
    Eve runs a bakery.[^mem_a1] She bakes rye.[^mem_b2] More to come.\n";

/// A fixture workspace with the legacy topic `eve.md`.
fn legacy_workspace(root: &Path) -> Workspace {
    let ws = fixture(root);
    update(&ws, json!({"changes": [{"path": EVE, "action": "write", "content": LEGACY}]}))
        .expect("legacy topic");
    ws
}

fn changes(ws: &Workspace, ops: Value) {
    update(ws, json!({"memory_changes": ops})).expect("installed");
}

fn edit(memory_id: &str, content: &str) -> Value {
    json!({"op": "update_record", "memory_id": memory_id, "content": content,
           "time": "2024-03",
           "sources": [{"source": "openprogram/garden/u3", "label": "label 3"}]})
}

/// The 0-based index of the live line starting with `prefix`.
fn index(root: &Path, prefix: &str) -> usize {
    live(root, EVE).lines().position(|l| l.starts_with(prefix)).expect("line present")
}

#[test]
fn update_edits_one_unit_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = legacy_workspace(root);
    let b_before = live(root, EVE).lines().find(|l| l.starts_with("[^mem_b2]:")).map(str::to_owned);
    changes(&ws, json!([edit("mem_a1", "Eve runs a rye bakery.")]));
    let text = live(root, EVE);
    assert!(
        text.contains("\nEve runs a rye bakery.[^mem_a1] She bakes rye.[^mem_b2] More to come.\n"),
        "{text}"
    );
    let a_def = text.lines().find(|l| l.starts_with("[^mem_a1]:")).expect("definition");
    assert!(a_def.starts_with("[^mem_a1]: Time: `2024-03`; Sources: [label 3]("), "{a_def}");
    assert_eq!(text.lines().find(|l| l.starts_with("[^mem_b2]:")).map(str::to_owned), b_before);
    let paragraph = index(root, "Eve runs");
    assert!(index(root, "[^mem_a1]:") < paragraph && index(root, "[^mem_b2]:") < paragraph);
    assert_eq!(text.matches("[^mem_a1]").count(), 2, "{text}");

    // The peer too, leaving the first unit's new text alone.
    changes(&ws, json!([edit("mem_b2", "She bakes spelt.")]));
    assert!(
        live(root, EVE).contains(
            "\nEve runs a rye bakery.[^mem_a1] She bakes spelt.[^mem_b2] More to come.\n"
        )
    );
}

#[test]
fn delete_removes_one_unit_and_keeps_the_trailing_prose() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = legacy_workspace(root);
    changes(&ws, json!([{"op": "delete_record", "memory_id": "mem_b2"}]));
    let text = live(root, EVE);
    assert!(text.contains("\nEve runs a bakery.[^mem_a1] More to come.\n"), "{text}");
    assert!(!text.contains("mem_b2"), "{text}");
    assert!(index(root, "[^mem_a1]:") < index(root, "Eve runs"));

    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = legacy_workspace(root);
    changes(&ws, json!([{"op": "delete", "memory_id": "mem_a1"}]));
    let text = live(root, EVE);
    assert!(text.contains("\nShe bakes rye.[^mem_b2] More to come.\n"), "{text}");
    assert!(!text.contains("mem_a1"), "{text}");
}

#[test]
fn deleting_the_last_units_removes_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = legacy_workspace(root);
    changes(&ws, json!([{"op": "delete_record", "memory_id": "mem_a1"}]));
    assert!(root.join(EVE).exists());
    changes(&ws, json!([{"op": "delete_record", "memory_id": "mem_b2"}]));
    assert!(!root.join(EVE).exists());

    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = legacy_workspace(root);
    changes(
        &ws,
        json!([{"op": "delete_record", "memory_id": "mem_b2"},
               {"op": "delete_record", "memory_id": "mem_a1"}]),
    );
    assert!(!root.join(EVE).exists());
}

#[test]
fn links_to_mem_ids_keep_working() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = legacy_workspace(root);
    let link = "See [the bakery](people/eve.md#^mem_a1).";
    update(
        &ws,
        json!({"changes": [{"path": "topics/links.md", "action": "write",
                            "content": super::note("Links", link)}]}),
    )
    .expect("link");
    changes(
        &ws,
        json!([edit("mem_a1", "Eve runs a rye bakery."),
               {"op": "delete_record", "memory_id": "mem_b2"}]),
    );
    assert!(live(root, EVE).contains("\nEve runs a rye bakery.[^mem_a1] More to come.\n"));
    assert!(live(root, "topics/links.md").contains(link));
    // Decision: the Python implementation reports INVALID_TOPIC_FORMAT; this engine keeps its
    // more specific closed code DANGLING_BLOCK_LINK (the message names the ID either way).
    refused(
        root,
        &ws,
        json!({"memory_changes": [{"op": "delete_record", "memory_id": "mem_a1"}]}),
        ErrorCode::DanglingBlockLink,
        "dangling block link: mem_a1",
    );
}

#[test]
fn rejections_leave_every_byte_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = legacy_workspace(root);
    for (ops, code, message) in [
        (
            json!([edit("mem_zz", "Nope.")]),
            ErrorCode::MemoryNotFound,
            "memory_changes[0]: memory_id does not exist: mem_zz",
        ),
        (
            json!([{"op": "delete_record", "memory_id": "mem_zz"}]),
            ErrorCode::MemoryNotFound,
            "memory_changes[0]: memory_id does not exist: mem_zz",
        ),
        (
            json!([edit("mem_a1", "One."), edit("mem_a1", "Two.")]),
            ErrorCode::InvalidArgument,
            "memory_changes[1]: duplicate content memory_id",
        ),
        (
            json!([edit("mem_a1", "Bad.[^e1]")]),
            ErrorCode::InvalidArgument,
            "memory_changes[0]: content must be one final paragraph without Runtime IDs",
        ),
    ] {
        refused(root, &ws, json!({"memory_changes": ops}), code, message);
    }
    assert_eq!(live(root, EVE).matches("mem_").count(), 4);
}

fn labelled(content: &str, sources: &[(u64, &str)], path: &str) -> Value {
    let sources: Vec<Value> = sources
        .iter()
        .map(|(n, label)| json!({"source": format!("openprogram/garden/u{n}"), "label": label}))
        .collect();
    json!({"op": "create_record", "content": content, "time": "2024-03", "sources": sources,
           "destination": {"topic_path": path, "headings": ["Labels"], "position": "end"}})
}

#[test]
fn labels_are_kept_verbatim_in_the_topic_and_after_a_move() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let cjk = "会议记录整理完毕的说明文件";
    let words = "one two three four five six seven";
    let raw = "openprogram/garden/u3";
    let first = [(1, cjk), (2, words), (3, raw)];
    let second = [(4, "Owner 1"), (5, "S1"), (1, "2024-04-02"), (2, "https://example.com/a?b=1")];
    let path = "topics/labels.md";
    changes(
        &ws,
        json!([
            labelled("First labelled fact.", &first, path),
            labelled("Second labelled fact.", &second, path)
        ]),
    );
    let labels: Vec<&str> = first.iter().chain(&second).map(|(_, l)| *l).collect();
    let text = live(root, path);
    for label in &labels {
        assert!(text.contains(&format!("[{label}](")), "{label} in {text}");
    }
    let id = super::block_id(root, path, "First labelled");
    changes(
        &ws,
        json!([{"op": "move_records", "memory_ids": [id],
                "destination": {"topic_path": "topics/archive/moved.md",
                                "headings": ["Moved"], "position": "end"}}]),
    );
    let moved = live(root, "topics/archive/moved.md");
    for (_, label) in first {
        assert!(moved.contains(&format!("[{label}](../../sources/")), "{label} in {moved}");
    }
    let text = live(root, path);
    for (_, label) in second {
        assert!(text.contains(&format!("[{label}](")), "{label} in {text}");
    }
}

#[test]
fn an_html_bearing_paragraph_is_located_as_the_parser_locates_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let path = "topics/html.md";
    let content = "# Html\n\n<!-- kept comment -->\n<a id=\"anchor\"></a>\n\
        A <b>bold</b> fact with <span class=\"x\">markup</span>.[^e1]\n\n\
        [^e1]: Time: `2024-04-02`; Sources: [s1](openprogram/garden/u1)\n";
    update(&ws, json!({"changes": [{"path": path, "action": "write", "content": content}]}))
        .expect("html topic");
    let id = super::block_id(root, path, "<b>bold</b>");
    changes(
        &ws,
        json!([{"op": "update_record", "memory_id": id, "content": "A <i>new</i> fact.",
                "time": "2024-05", "sources": [{"source": "openprogram/garden/u2", "label": "s2"}]}]),
    );
    let text = live(root, path);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..4], ["# Html", "", "<!-- kept comment -->", "<a id=\"anchor\"></a>"]);
    assert!(lines[4].starts_with("A <i>new</i> fact.[^e-"), "{text}");
    assert!(lines[4].ends_with(&format!(" ^{id}")), "{text}");
    assert!(!text.contains("bold"), "{text}");
    assert_eq!(super::block_id(root, path, "<i>new</i>"), id);
}

#[test]
fn a_thread_with_a_space_is_linked_percent_encoded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let mut record = scriptorium_topics_format::source::ArchiveRecord::new(
        "openprogram",
        "encoded id",
        "u1",
        1,
        "user",
        "A message in a thread with a space.",
    );
    record.timestamp = Some("2024-04-02T09:14:00+02:00".into());
    ws.archive_sources(&[record], scriptorium_txn::LockTimeout::DEFAULT).expect("archive");
    changes(
        &ws,
        json!([{"op": "create_record", "content": "A fact from that thread.", "time": "2024-04",
                "sources": [{"source": "openprogram/encoded id/u1", "label": "spaced"}],
                "destination": {"topic_path": "topics/spaced.md", "headings": ["Spaced"],
                                "position": "end"}}]),
    );
    let text = live(root, "topics/spaced.md");
    let line = text.lines().find(|l| l.contains("[spaced](")).expect("definition");
    assert!(line.contains("/_v2/encoded%20id.md#"), "{line}");
}

#[test]
fn long_headings_count_toward_the_byte_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    // 2 000-character headings against `max_patch_bytes = 100`.
    let op = json!({"op": "create_record", "content": "Short.", "time": null,
                    "sources": [{"source": "openprogram/garden/u1", "label": "s1"}],
                    "destination": {"topic_path": "topics/long.md",
                                    "headings": ["h".repeat(2_000)], "position": "end"}});
    let body = json!({"base_revision": ws.revision().expect("revision").as_str(),
                      "memory_changes": [op.clone()]});
    let limits = ChangeLimits { max_change_bytes: 100, ..ChangeLimits::default() };
    let error = UpdateRequest::from_json_with(&body.to_string(), &limits).expect_err("exceeds");
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert_eq!(error.to_string(), "INVALID_ARGUMENT: memory_changes exceed 100 bytes");
    // Under the default limits the engine's own ceiling (512 000 bytes) still counts them:
    // 64 operations with six such headings each.
    let mut big = op;
    big["destination"]["headings"] = json!(vec!["h".repeat(2_000); 6]);
    refused(
        root,
        &ws,
        json!({"memory_changes": vec![big; 64]}),
        ErrorCode::InvalidArgument,
        "memory_changes exceed 512000 bytes",
    );
    assert!(!root.join("topics/long.md").exists());
}
