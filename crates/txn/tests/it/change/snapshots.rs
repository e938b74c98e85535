//! Byte-for-byte snapshots of the topic files that representative `memory_changes` requests leave:
//! a create with a new heading chain, updates and deletes of merged aliases, a move with an inbound
//! link re-pathed, and merge and split as plain update + delete and update + create. The fixture's
//! clock and IDs are seeded, so every byte is stable.

use std::path::Path;

use scriptorium_txn::Workspace;
use serde_json::{Value, json};

use super::{block_id, live, update};
use crate::pipeline::fixture;

const DANA: &str = "topics/people/dana.md";
const GARDEN: &str = "topics/projects/garden.md";

fn src(n: u64, label: &str) -> Value {
    json!([{"source": format!("openprogram/garden/u{n}"), "label": label}])
}

fn dest(path: &str, headings: &[&str], position: &str) -> Value {
    json!({"topic_path": path, "headings": headings, "position": position})
}

fn changes(ws: &Workspace, ops: Value) -> scriptorium_txn::Installed {
    update(ws, json!({"memory_changes": ops})).expect("installed")
}

/// Every block ID and evidence ID on the live lines of `rel`, in order.
fn ids(root: &Path, rel: &str) -> (Vec<String>, Vec<String>) {
    let text = live(root, rel);
    let blocks = text
        .lines()
        .filter(|l| !l.starts_with("[^"))
        .flat_map(|l| l.split(" ^").skip(1).map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let evidence = text
        .lines()
        .filter_map(|l| l.strip_prefix("[^"))
        .map(|l| l.split(']').next().expect("label").to_owned())
        .collect();
    (blocks, evidence)
}

/// Rewrites `dana.md` so that its two records form one paragraph carrying `^a ^b`.
fn merge_dana(root: &Path, ws: &Workspace) -> (String, String) {
    let a = block_id(root, DANA, "plain language");
    let b = block_id(root, DANA, "Lyon");
    let text = live(root, DANA);
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().find(|l| l.contains("plain language")).expect("first");
    let second = lines.iter().find(|l| l.contains("Lyon")).expect("second");
    let cite_b = second.split(" ^").next().expect("body").split("Lyon.").nth(1).expect("cite");
    let merged = format!("{}{cite_b} ^{a} ^{b}", first.split(" ^").next().expect("body"));
    let new = text.replace(first, &merged).replace(&format!("{second}\n\n"), "");
    update(ws, json!({"changes": [{"path": DANA, "action": "write", "content": new}]}))
        .expect("merged");
    (a, b)
}

#[test]
fn create_into_a_new_file_with_a_heading_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    changes(
        &ws,
        json!([
            {"op": "create_record", "content": "The shed holds the seed trays.", "time": "2024-03",
             "sources": src(5, "shed"),
             "destination": dest("topics/places/shed.md", &["Shed", "Inside", "Shelves"], "end")},
            {"op": "create_record", "content": "The shed has a green door.", "time": null,
             "sources": src(4, "door"),
             "destination": dest("topics/places/shed.md", &["Shed", "Outside"], "start")},
        ]),
    );
    insta::assert_snapshot!("create_heading_chain", live(root, "topics/places/shed.md"));
}

#[test]
fn update_through_an_alias_keeps_every_alias() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let (a, b) = merge_dana(root, &ws);
    changes(
        &ws,
        json!([{"op": "update_record", "memory_id": b,
                "content": "Dana speaks plainly and lives in Lyon.", "time": "2024-04",
                "sources": src(2, "merged note")}]),
    );
    assert_eq!(ids(root, DANA).0, [a, b]);
    insta::assert_snapshot!("update_keeps_aliases", live(root, DANA));
}

#[test]
fn delete_of_an_alias_keeps_the_paragraph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let (a, b) = merge_dana(root, &ws);
    changes(&ws, json!([{"op": "delete_record", "memory_id": a}]));
    assert_eq!(ids(root, DANA).0, [b]);
    insta::assert_snapshot!("delete_alias", live(root, DANA));
}

#[test]
fn move_two_records_into_a_new_file_repaths_inbound_links() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let rust = block_id(root, GARDEN, "Rust");
    let tomatoes = block_id(root, GARDEN, "Tomatoes");
    let links = format!(
        "# Links\n\nThe beds are planned in [the garden notes](projects/garden.md#^{tomatoes}).\
         [^e1]\n\n[^e1]: Time: `2024-04-02`; Sources: [s1](openprogram/garden/u1)\n"
    );
    update(
        &ws,
        json!({"changes": [{"path": "topics/links.md", "action": "write", "content": links}]}),
    )
    .expect("links");
    changes(
        &ws,
        json!([{"op": "move_records", "memory_ids": [tomatoes, rust],
                "destination": dest("topics/archive/garden-facts.md",
                                    &["Garden facts", "Moved"], "end")}]),
    );
    insta::assert_snapshot!("move_destination", live(root, "topics/archive/garden-facts.md"));
    insta::assert_snapshot!("move_source", live(root, GARDEN));
    insta::assert_snapshot!("move_inbound_link", live(root, "topics/links.md"));
}

#[test]
fn merge_as_update_and_delete_keeps_the_surviving_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let rust = block_id(root, GARDEN, "Rust");
    let sqlite = block_id(root, GARDEN, "SQLite");
    let tomatoes = block_id(root, GARDEN, "Tomatoes");
    let (_, evidence_before) = ids(root, GARDEN);
    changes(
        &ws,
        json!([
            {"op": "update_record", "memory_id": rust,
             "content": "The planner is written in Rust and stores data in SQLite.",
             "time": "2024-04-02",
             "sources": [{"source": "openprogram/garden/u3", "label": "s3"},
                         {"source": "openprogram/garden/u4", "label": "s4"}]},
            {"op": "delete_record", "memory_id": sqlite},
        ]),
    );
    let (blocks, evidence) = ids(root, GARDEN);
    assert_eq!(blocks, [rust, tomatoes]);
    // The untouched record keeps its evidence ID.
    assert!(evidence.contains(evidence_before.last().expect("tomatoes' evidence")));
    insta::assert_snapshot!("merge", live(root, GARDEN));
}

#[test]
fn split_as_update_and_create_keeps_the_old_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let plain = block_id(root, DANA, "plain language");
    let lyon = block_id(root, DANA, "Lyon");
    let (_, evidence_before) = ids(root, DANA);
    let installed = changes(
        &ws,
        json!([
            {"op": "update_record", "memory_id": plain, "content": "Dana prefers plain words.",
             "time": "2024-04-02", "sources": src(1, "s1")},
            {"op": "create_record", "content": "Dana dislikes jargon.", "time": "2024-04-02",
             "sources": src(1, "s1"),
             "destination": {"topic_path": DANA, "headings": ["Dana"], "position": "after",
                             "anchor_memory_id": plain}},
        ]),
    );
    let new = installed.block_ids.values().next().expect("new ID").as_str().to_owned();
    let (blocks, evidence) = ids(root, DANA);
    assert_eq!(blocks, [plain, new, lyon]);
    // The untouched record keeps its evidence ID; both halves cite the first source.
    assert!(evidence.contains(evidence_before.last().expect("Lyon's evidence")));
    assert_eq!(live(root, DANA).matches("[s1](../../sources/").count(), 2);
    insta::assert_snapshot!("split", live(root, DANA));
}
