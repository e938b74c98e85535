//! Structured record operations, `memory_changes`. Every rejection goes through [`refused`],
//! which checks that the workspace and its revision are unchanged byte for byte.

use std::path::Path;

use scriptorium_topics_format::BlockId;
use scriptorium_txn::{ErrorCode, Workspace};
use serde_json::{Value, json};

use super::{block_id, live, refused, update};
use crate::pipeline::fixture;

const DANA: &str = "topics/people/dana.md";
const GARDEN: &str = "topics/projects/garden.md";

fn src(n: u64) -> Value {
    json!([{"source": format!("openprogram/garden/u{n}"), "label": format!("label {n}")}])
}

fn dest(path: &str, headings: &[&str], position: &str) -> Value {
    json!({"topic_path": path, "headings": headings, "position": position})
}

fn anchored(path: &str, headings: &[&str], position: &str, anchor: &str) -> Value {
    json!({"topic_path": path, "headings": headings, "position": position,
           "anchor_memory_id": anchor})
}

fn create(content: &str, destination: Value) -> Value {
    json!({"op": "create_record", "content": content, "time": "2024-03", "sources": src(3),
           "destination": destination})
}

fn changes(ws: &Workspace, ops: Value) -> scriptorium_txn::Installed {
    update(ws, json!({"memory_changes": ops})).expect("installed")
}

fn refuse_ops(root: &Path, ws: &Workspace, ops: Value, code: ErrorCode, message: &str) {
    refused(root, ws, json!({"memory_changes": ops}), code, message);
}

/// The paragraphs of a live file that carry a block ID, without citations and IDs.
fn records(root: &Path, rel: &str) -> Vec<String> {
    live(root, rel)
        .lines()
        .filter(|l| l.contains(" ^") && !l.starts_with("[^"))
        .map(|l| l.split("[^").next().unwrap_or_default().to_owned())
        .collect()
}

/// Rewrites `dana.md` so that its two records form one merged paragraph `^a ^b`.
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
fn create_update_and_new_file_in_one_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let lyon = block_id(root, DANA, "Lyon");
    let installed = changes(
        &ws,
        json!([
            create("Dana rides a bike.", dest(DANA, &["Dana", "Hobbies"], "end")),
            {"op": "update_record", "memory_id": lyon, "content": "Dana lives in Paris.",
             "time": null, "sources": src(4)},
            {"op": "create_record", "content": "Brand new.", "time": "2025",
             "source_refs": ["openprogram/garden/u1"],
             "destination": dest("topics/new/thing.md", &["Thing", "Sub"], "start")},
        ]),
    );
    let bike = block_id(root, DANA, "bike");
    let new = block_id(root, "topics/new/thing.md", "Brand new.");
    let ids: Vec<&str> = installed.block_ids.values().map(BlockId::as_str).collect();
    assert_eq!(ids, vec![new.as_str(), bike.as_str()]);
    assert_eq!(
        live(root, DANA),
        format!(
            "# Dana\n\n\
             Dana prefers plain language.[^e-c536b5f9bc] ^3dd4940b\n\n\
             Dana lives in Paris.[^e-20619c0c80] ^{lyon}\n\n\
             [^e-20619c0c80]: Time: `undated`; Sources: [label 4](../../sources/openprogram/_v2/garden.md#source-716a18489a70dedd)\n\n\
             [^e-c536b5f9bc]: Time: `2024-04-02`; Sources: [s1](../../sources/openprogram/_v2/garden.md#source-c8c4e1deb57655c9)\n\n\
             ## Hobbies\n\n\
             Dana rides a bike.[^e-1ab10990e7] ^{bike}\n\n\
             [^e-1ab10990e7]: Time: `2024-03`; Sources: [label 3](../../sources/openprogram/_v2/garden.md#source-657f6ffcd3c87ed6)\n"
        )
    );
    assert_eq!(
        live(root, "topics/new/thing.md"),
        format!(
            "# Thing\n\n## Sub\n\nBrand new.[^e-3d7cbd0e09] ^{new}\n\n\
             [^e-3d7cbd0e09]: Time: `2025`; Sources: [openprogram/garden/u1](../../sources/openprogram/_v2/garden.md#source-c8c4e1deb57655c9)\n"
        )
    );
}

#[test]
fn before_and_after_anchors_place_the_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let rust = block_id(root, GARDEN, "Rust");
    let sqlite = block_id(root, GARDEN, "SQLite");
    changes(
        &ws,
        json!([
            create("Inserted before.", anchored(GARDEN, &["Garden planner"], "before", &rust)),
            create("Inserted after.", anchored(GARDEN, &["Garden planner"], "after", &sqlite)),
            create("At the start.", dest(GARDEN, &["Garden planner"], "start")),
        ]),
    );
    assert_eq!(
        records(root, GARDEN),
        [
            "At the start.",
            "Inserted before.",
            "The planner is written in Rust.",
            "It stores data in SQLite.",
            "Inserted after.",
            "Tomatoes go in the south bed.",
        ]
    );
}

#[test]
fn delete_removes_the_paragraph_its_evidence_and_an_emptied_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let sqlite = block_id(root, GARDEN, "SQLite");
    let cited = live(root, GARDEN)
        .lines()
        .find(|l| l.contains("SQLite"))
        .and_then(|l| l.split("[^").nth(1))
        .and_then(|c| c.split(']').next())
        .expect("citation")
        .to_owned();
    changes(&ws, json!([{"op": "delete_record", "memory_id": sqlite}]));
    let garden = live(root, GARDEN);
    assert!(!garden.contains(&sqlite) && !garden.contains(&cited), "{garden}");
    assert_eq!(records(root, GARDEN).len(), 2);
    // Deleting every record of a file deletes the file (the prune step of
    // `docs/format.md#normalization`).
    let installed =
        changes(&ws, json!([create("Core fact.", dest("topics/core.md", &["Core"], "end"))]));
    let core = installed.block_ids.values().next().expect("new id").clone();
    changes(&ws, json!([{"op": "delete_record", "memory_id": core}]));
    assert!(!root.join("topics/core.md").exists());
    assert!(!root.join("core.md").exists());
}

#[test]
fn merged_aliases_update_delete_and_double_update() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let (a, b) = merge_dana(root, &ws);
    // Two updates on one merged block are refused atomically.
    let up = |id: &str, text: &str| {
        json!({"op": "update_record", "memory_id": id, "content": text, "time": "2024",
               "sources": src(5)})
    };
    refuse_ops(
        root,
        &ws,
        json!([up(&a, "One."), up(&b, "Two.")]),
        ErrorCode::InvalidArgument,
        "memory_changes[1]: two updates target the same merged block",
    );
    // Updating through the first alias keeps both IDs.
    changes(&ws, json!([up(&a, "Dana is plain-spoken and lives in Lyon.")]));
    let line = live(root, DANA).lines().find(|l| l.contains("plain-spoken")).map(str::to_owned);
    assert!(line.as_deref().is_some_and(|l| l.ends_with(&format!(" ^{a} ^{b}"))), "{line:?}");
    // Deleting the first alias leaves only the second.
    changes(&ws, json!([{"op": "delete_record", "memory_id": a}]));
    let line = live(root, DANA).lines().find(|l| l.contains("plain-spoken")).map(str::to_owned);
    assert!(line.as_deref().is_some_and(|l| l.ends_with(&format!("] ^{b}"))), "{line:?}");
}

#[test]
fn move_records_into_a_new_file_in_declared_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let lyon = block_id(root, DANA, "Lyon");
    let plain = block_id(root, DANA, "plain language");
    let link = format!("See [Lyon](people/dana.md#^{lyon}).");
    update(
        &ws,
        json!({"changes": [{"path": "topics/links.md", "action": "write",
                            "content": super::note("Links", &link)}]}),
    )
    .expect("link");
    changes(
        &ws,
        json!([{"op": "move_records", "memory_ids": [lyon, plain],
                "destination": dest("topics/archive/grouped.md", &["Grouped", "Selected"], "end")}]),
    );
    assert!(!root.join(DANA).exists(), "the emptied source file is deleted");
    let grouped = live(root, "topics/archive/grouped.md");
    assert!(grouped.starts_with("# Grouped\n\n## Selected\n\nDana lives in Lyon."), "{grouped}");
    assert_eq!(
        records(root, "topics/archive/grouped.md"),
        ["Dana lives in Lyon.", "Dana prefers plain language.",]
    );
    assert!(grouped.contains(&format!(" ^{lyon}\n")) && grouped.contains(&format!(" ^{plain}\n")));
    assert!(grouped.contains("](../../sources/openprogram/_v2/garden.md#source-"), "{grouped}");
    assert!(live(root, "topics/links.md").contains(&format!("(archive/grouped.md#^{lyon})")));
}

#[test]
fn move_across_files_and_reorder_within_a_section() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let rust = block_id(root, GARDEN, "Rust");
    let tomatoes = block_id(root, GARDEN, "Tomatoes");
    let lyon = block_id(root, DANA, "Lyon");
    changes(
        &ws,
        json!([
            {"op": "move_records", "memory_ids": [rust],
             "destination": anchored(GARDEN, &["Garden planner"], "after", &tomatoes)},
            {"op": "move_records", "memory_ids": [lyon],
             "destination": dest("topics/places.md", &["Places"], "end")},
        ]),
    );
    assert_eq!(
        records(root, GARDEN),
        [
            "It stores data in SQLite.",
            "Tomatoes go in the south bed.",
            "The planner is written in Rust.",
        ]
    );
    assert_eq!(records(root, DANA), ["Dana prefers plain language."]);
    let places = live(root, "topics/places.md");
    assert!(places.contains(&format!("Dana lives in Lyon.[^e-0006fa350a] ^{lyon}")), "{places}");
    assert!(places.contains("[^e-0006fa350a]: Time: `2024-04-02`; Sources: [s2](../sources/"));
}

#[test]
fn shared_block_moves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let (a, b) = merge_dana(root, &ws);
    let to = || dest("topics/moved.md", &["Moved"], "end");
    refuse_ops(
        root,
        &ws,
        json!([{"op": "move_records", "memory_ids": [a], "destination": to()}]),
        ErrorCode::InvalidArgument,
        "memory_changes[0]: move_records must include every ID in a shared physical block",
    );
    refuse_ops(
        root,
        &ws,
        json!([{"op": "move_records", "memory_ids": [b, a], "destination": to()}]),
        ErrorCode::InvalidArgument,
        "memory_changes[0]: move_records must preserve shared physical block order",
    );
    // Update + move of the same record is allowed.
    changes(
        &ws,
        json!([
            {"op": "move_records", "memory_ids": [a, b], "destination": to()},
            {"op": "update_record", "memory_id": b, "content": "Dana, updated.", "time": "2024",
             "sources": src(5)},
        ]),
    );
    assert_eq!(records(root, "topics/moved.md"), ["Dana, updated."]);
    // Delete an alias and move the survivor.
    changes(
        &ws,
        json!([
            {"op": "delete_record", "memory_id": a},
            {"op": "move_records", "memory_ids": [b], "destination": dest(GARDEN, &["Garden planner"], "end")},
        ]),
    );
    assert!(!root.join("topics/moved.md").exists());
    assert!(live(root, GARDEN).contains("Dana, updated.[^e-"));
    assert!(live(root, GARDEN).contains(&format!("] ^{b}\n")));
}

#[test]
fn merge_and_split_keep_every_id_and_evidence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let plain = block_id(root, DANA, "plain language");
    let lyon = block_id(root, DANA, "Lyon");
    // Merge: update one record with both sources, delete the other.
    let both = json!([
        {"source": "openprogram/garden/u1", "label": "s1"},
        {"source": "openprogram/garden/u2", "label": "s2"},
    ]);
    changes(
        &ws,
        json!([
            {"op": "update_record", "memory_id": plain,
             "content": "Dana prefers plain language and lives in Lyon.", "time": "2024-04-02",
             "sources": both},
            {"op": "delete_record", "memory_id": lyon},
        ]),
    );
    assert_eq!(records(root, DANA), ["Dana prefers plain language and lives in Lyon."]);
    let text = live(root, DANA);
    assert!(text.contains(&format!("] ^{plain}\n")) && !text.contains(&lyon), "{text}");
    assert!(text.contains("Sources: [s1](../../sources/") && text.contains(", [s2](../../"));
    // Split: update it back and create the second half; the old ID survives.
    let installed = changes(
        &ws,
        json!([
            {"op": "update_record", "memory_id": plain, "content": "Dana prefers plain language.",
             "time": "2024-04-02", "sources": src(1)},
            {"op": "create_record", "content": "Dana lives in Lyon.", "time": "2024-04-02",
             "sources": src(2), "destination": anchored(DANA, &["Dana"], "after", &plain)},
        ]),
    );
    assert_eq!(records(root, DANA), ["Dana prefers plain language.", "Dana lives in Lyon."]);
    let new = block_id(root, DANA, "Lyon");
    assert_eq!(installed.block_ids.values().collect::<Vec<_>>(), [&new]);
    assert_eq!(block_id(root, DANA, "plain language"), plain);
    assert_eq!(live(root, DANA).matches("]: Time: `2024-04-02`").count(), 2);
}

#[test]
fn evidence_definition_conflicts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let plain = block_id(root, DANA, "plain language");
    let other = "# Other\n\nOther fact.[^e-c536b5f9bc]\n\n\
                 [^e-c536b5f9bc]: Time: `2020`; Sources: [s1](openprogram/garden/u1)\n";
    update(
        &ws,
        json!({"changes": [{"path": "topics/other.md", "action": "write",
                                    "content": other}]}),
    )
    .expect("other");
    let other_id = block_id(root, "topics/other.md", "Other fact.");
    refuse_ops(
        root,
        &ws,
        json!([{"op": "move_records", "memory_ids": [plain],
                "destination": dest("topics/other.md", &["Other"], "end")}]),
        ErrorCode::InvalidArgument,
        "memory_changes[0]: evidence definition conflicts in destination: e-c536b5f9bc",
    );
    refuse_ops(
        root,
        &ws,
        json!([{"op": "move_records", "memory_ids": [plain, other_id],
                "destination": dest("topics/third.md", &["Third"], "end")}]),
        ErrorCode::InvalidArgument,
        "memory_changes[0]: evidence definition conflicts across sources: e-c536b5f9bc",
    );
}

#[test]
fn destination_and_identity_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let rust = block_id(root, GARDEN, "Rust");
    let plain = block_id(root, DANA, "plain language");
    let missing = [
        (
            json!([{"op": "update_record", "memory_id": "feedf00d", "content": "x.", "time": null,
                 "sources": src(1)}]),
            "memory_changes[0]: memory_id does not exist: feedf00d",
        ),
        (
            json!([{"op": "delete_record", "memory_id": "feedf00d"}]),
            "memory_changes[0]: memory_id does not exist: feedf00d",
        ),
        (
            json!([{"op": "move_records", "memory_ids": ["feedf00d"],
                 "destination": dest(DANA, &["Dana"], "end")}]),
            "memory_changes[0]: memory_id does not exist: feedf00d",
        ),
        (
            json!([create("x.", anchored(DANA, &["Dana"], "before", "feedf00d"))]),
            "memory_changes[0]: memory_id does not exist: feedf00d",
        ),
    ];
    for (ops, message) in missing {
        refuse_ops(root, &ws, ops, ErrorCode::MemoryNotFound, message);
    }
    let invalid = [
        (
            json!([create("x.", anchored(DANA, &["Dana"], "after", &rust))]),
            "memory_changes[0]: anchor_memory_id is not in the destination section",
        ),
        (
            json!([create("x.", anchored(DANA, &["Dana", "Nope"], "after", &plain))]),
            "memory_changes[0]: destination heading path does not exist",
        ),
        (
            json!([create("x.", anchored("topics/nope.md", &["Nope"], "after", &plain))]),
            "memory_changes[0]: destination heading path does not exist",
        ),
    ];
    for (ops, message) in invalid {
        refuse_ops(root, &ws, ops, ErrorCode::InvalidArgument, message);
    }
    refuse_ops(
        root,
        &ws,
        json!([create("x.", dest("../outside.md", &["X"], "end"))]),
        ErrorCode::PathOutsideWorkspace,
        "memory_changes[0]: destination path escapes",
    );
    refuse_ops(
        root,
        &ws,
        json!([create("x.", dest("sources/x.md", &["X"], "end"))]),
        ErrorCode::ReadOnlyPath,
        "memory_changes[0]: destination only topics/**/*.md",
    );
}

#[test]
fn deleting_a_linked_record_fails_the_whole_update() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let lyon = block_id(root, DANA, "Lyon");
    let link = format!("See [Lyon](people/dana.md#^{lyon}).");
    update(
        &ws,
        json!({"changes": [{"path": "topics/links.md", "action": "write",
                            "content": super::note("Links", &link)}]}),
    )
    .expect("link");
    // Decision: the Python implementation reports INVALID_TOPIC_FORMAT; this engine keeps its
    // more specific closed code DANGLING_BLOCK_LINK (the message names the ID either way).
    refuse_ops(
        root,
        &ws,
        json!([create("Unrelated.", dest(GARDEN, &["Garden planner"], "end")),
               {"op": "delete_record", "memory_id": lyon}]),
        ErrorCode::DanglingBlockLink,
        &format!("dangling block link: {lyon}"),
    );
}

#[test]
fn shape_errors_are_invalid_argument() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let plain = block_id(root, DANA, "plain language");
    let lyon = block_id(root, DANA, "Lyon");
    let d = || dest(DANA, &["Dana"], "end");
    let up = |extra: Value| {
        let mut op = json!({"op": "update_record", "memory_id": plain, "content": "x.",
                            "time": "2024", "sources": src(1)});
        if let (Some(op), Some(extra)) = (op.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                if v.is_null() && k != "time" {
                    op.remove(k);
                } else {
                    op.insert(k.clone(), v.clone());
                }
            }
        }
        op
    };
    let mv = |ids: Value, destination: Value| json!({"op": "move_records", "memory_ids": ids, "destination": destination});
    let cases: Vec<(Value, &str)> = vec![
        (json!([]), "memory_changes must be a non-empty list"),
        (json!({"op": "delete_record"}), "memory_changes must be a non-empty list"),
        (
            json!((0..65).map(|_| up(json!({}))).collect::<Vec<_>>()),
            "memory_changes has more than 64 items",
        ),
        (json!([create(&"x".repeat(512_001), d())]), "memory_changes exceed 512000 bytes"),
        (json!(["x"]), "memory_changes[0]: item must be an object"),
        (json!([{"op": "merge"}]), "memory_changes[0]: op must be create_record"),
        (json!([up(json!({"extra": 1}))]), "memory_changes[0]: unknown field: extra"),
        (
            json!([{"op": "create_record", "memory_id": "x", "content": "x.", "time": null,
                 "sources": src(1), "destination": d()}]),
            "memory_changes[0]: memory_id is Runtime-assigned",
        ),
        (json!([up(json!({"memory_id": null}))]), "memory_changes[0]: memory_id is required"),
        (
            json!([up(json!({})), {"op": "delete_record", "memory_id": plain}]),
            "memory_changes[1]: duplicate content memory_id",
        ),
        (
            json!([mv(json!([lyon]), d()), {"op": "delete_record", "memory_id": lyon}]),
            "memory_changes[1]: moved memory_id cannot be deleted",
        ),
        (
            json!([{"op": "delete_record", "memory_id": lyon}, mv(json!([lyon]), d())]),
            "memory_changes[1]: deleted memory_id cannot be moved",
        ),
        (
            json!([mv(json!([lyon]), d()), mv(json!([lyon]), d())]),
            "memory_changes[1]: duplicate moved memory_id",
        ),
        (
            json!([up(json!({"content": " "}))]),
            "memory_changes[0]: content must be a non-empty string",
        ),
        (
            json!([up(json!({"content": 3}))]),
            "memory_changes[0]: content must be a non-empty string",
        ),
        (
            json!([up(json!({"content": "a\n\nb"}))]),
            "memory_changes[0]: content must be one final paragraph without Runtime IDs",
        ),
        (
            json!([up(json!({"content": "# Heading"}))]),
            "memory_changes[0]: content must be one final paragraph without Runtime IDs",
        ),
        (
            json!([up(json!({"content": "cites[^e1]"}))]),
            "memory_changes[0]: content must be one final paragraph without Runtime IDs",
        ),
        (
            json!([up(json!({"content": "has an id ^abc12345"}))]),
            "memory_changes[0]: content must be one final paragraph without Runtime IDs",
        ),
        (
            json!([up(json!({"time": "2024-13"}))]),
            "memory_changes[0]: time must be null or YYYY, YYYY-MM, or YYYY-MM-DD",
        ),
        (
            json!([{"op": "update_record", "memory_id": plain, "content": "x.", "sources": src(1)}]),
            "memory_changes[0]: time must be null or YYYY, YYYY-MM, or YYYY-MM-DD",
        ),
        (
            json!([up(json!({"source_refs": ["openprogram/garden/u1"]}))]),
            "memory_changes[0]: cannot contain both source_refs and sources",
        ),
        (
            json!([up(json!({"sources": []}))]),
            "memory_changes[0]: sources must be a non-empty object list",
        ),
        (
            json!([up(json!({"sources": null}))]),
            "memory_changes[0]: sources must be a non-empty object list",
        ),
        (
            json!([up(json!({"sources": [{"source": "openprogram/garden/u1"}]}))]),
            "memory_changes[0]: sources[0] must contain source and label",
        ),
        (
            json!([up(json!({"sources": [{"source": " ", "label": "l"}]}))]),
            "memory_changes[0]: sources[0].source is required",
        ),
        (
            json!([up(json!({"sources": [{"source": "openprogram/garden/u1", "label": ""}]}))]),
            "memory_changes[0]: sources[0].label is required",
        ),
        (
            json!([up(json!({"sources": null, "source_refs": [1]}))]),
            "memory_changes[0]: source_refs must be a non-empty string list",
        ),
        (
            json!([up(json!({"sources": [{"source": "openprogram/garden/u1", "label": "a"},
                                      {"source": "openprogram/garden/u1", "label": "b"}]}))]),
            "memory_changes[0]: sources contains a duplicate source",
        ),
        (
            json!([mv(json!([]), d())]),
            "memory_changes[0]: memory_ids must be a non-empty string list",
        ),
        (
            json!([mv(json!([lyon, lyon]), d())]),
            "memory_changes[0]: memory_ids contains a duplicate",
        ),
        (
            json!([mv(json!([lyon]), anchored(DANA, &["Dana"], "after", &lyon))]),
            "memory_changes[0]: move_records anchor_memory_id cannot be moved",
        ),
        (
            json!([mv(json!([lyon]), json!("topics/x.md"))]),
            "memory_changes[0]: destination must be an object",
        ),
        (
            json!([mv(json!([lyon]), json!({"topic_path": DANA, "position": "end"}))]),
            "memory_changes[0]: destination headings is required",
        ),
        (
            json!([mv(json!([lyon]), json!({"topic_path": DANA, "headings": ["Dana"]}))]),
            "memory_changes[0]: destination position is required",
        ),
        (
            json!([mv(json!([lyon]), json!({"headings": ["Dana"], "position": "end"}))]),
            "memory_changes[0]: destination topic_path is required",
        ),
        (
            json!([mv(
                json!([lyon]),
                json!({"topic_path": DANA, "headings": [], "position": "end",
                                         "x": 1})
            )]),
            "memory_changes[0]: destination has unknown field: x",
        ),
        (
            json!([mv(json!([lyon]), dest(DANA, &["a\nb"], "end"))]),
            "memory_changes[0]: destination headings must be a string list",
        ),
        (
            json!([mv(json!([lyon]), dest(DANA, &["a", "b", "c", "d", "e", "f", "g"], "end"))]),
            "memory_changes[0]: destination headings has more than 6 levels",
        ),
        (
            json!([mv(json!([lyon]), dest(DANA, &["Dana"], "middle"))]),
            "memory_changes[0]: position must be start, end, before or after",
        ),
        (
            json!([mv(json!([lyon]), dest(DANA, &["Dana"], "before"))]),
            "memory_changes[0]: anchor_memory_id is required for before",
        ),
        (
            json!([mv(json!([lyon]), anchored(DANA, &["Dana"], "end", &plain))]),
            "memory_changes[0]: anchor_memory_id is only allowed for before or after",
        ),
    ];
    for (ops, message) in cases {
        refuse_ops(root, &ws, ops, ErrorCode::InvalidArgument, message);
    }
}

#[test]
fn pre_release_aliases_update_delete_and_create() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let plain = block_id(root, DANA, "plain language");
    let lyon = block_id(root, DANA, "Lyon");
    let installed = changes(
        &ws,
        json!([
            {"op": "update", "memory_id": plain, "content": "Dana prefers short answers.",
             "time": "2026-02-01", "sources": src(1)},
            {"op": "delete", "memory_id": lyon},
            {"op": "create", "content": "Dana moved to Nantes.", "time": "2026-02-02",
             "sources": src(2), "topic_path": DANA, "headings": ["Dana"]},
        ]),
    );
    let new = block_id(root, DANA, "Nantes");
    assert_eq!(installed.block_ids.values().collect::<Vec<_>>(), [&new]);
    assert_eq!(records(root, DANA), ["Dana prefers short answers.", "Dana moved to Nantes."]);
    let text = live(root, DANA);
    assert!(!text.contains(&lyon), "{text}");
    assert!(text.contains("Time: `2026-02-01`") && text.contains("Time: `2026-02-02`"), "{text}");
    refuse_ops(
        root,
        &ws,
        json!([{"op": "create", "content": "x.", "time": null, "sources": src(1),
                "topic_path": DANA, "headings": ["Dana"], "position": "start"}]),
        ErrorCode::InvalidArgument,
        "memory_changes[0]: unknown field: position",
    );
}

#[test]
fn outbound_block_links_follow_a_moved_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let rust = block_id(root, GARDEN, "Rust");
    let installed = changes(
        &ws,
        json!([create(
            &format!("Dana uses [the planner](../projects/garden.md#^{rust})."),
            dest(DANA, &["Dana"], "end"),
        )]),
    );
    let new = installed.block_ids.values().next().expect("new id").clone();
    changes(
        &ws,
        json!([{"op": "move_records", "memory_ids": [new],
                "destination": dest("topics/deep/er/links.md", &["Links"], "end")}]),
    );
    let text = live(root, "topics/deep/er/links.md");
    assert!(text.contains(&format!("(../../projects/garden.md#^{rust})")), "{text}");
}

/// The `creation_order` map of `.scriptorium/runtime.json`.
fn creation_order(root: &Path) -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(root.join(".scriptorium/runtime.json")).expect("runtime");
    let state: Value = serde_json::from_str(&text).expect("json");
    state.get("creation_order").and_then(Value::as_object).cloned().expect("creation_order")
}

#[test]
fn a_first_reorder_into_a_new_file_keeps_creation_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let tomatoes = block_id(root, GARDEN, "Tomatoes");
    let plain = block_id(root, DANA, "plain language");
    // After this install the runtime state holds an order value for every ID.
    changes(&ws, json!([create("Seed.", dest(GARDEN, &["Garden planner"], "end"))]));
    let before = creation_order(root);
    changes(
        &ws,
        json!([{"op": "move_records", "memory_ids": [tomatoes, plain],
                "destination": dest("topics/a/first.md", &["First"], "start")}]),
    );
    assert_eq!(
        records(root, "topics/a/first.md"),
        ["Tomatoes go in the south bed.", "Dana prefers plain language.",]
    );
    assert_eq!(creation_order(root), before);
}

#[test]
fn an_unknown_source_rejects_the_whole_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let lyon = block_id(root, DANA, "Lyon");
    let before = super::tree_state(root, false);
    let error = update(
        &ws,
        json!({"memory_changes": [
            {"op": "delete_record", "memory_id": lyon},
            {"op": "create_record", "content": "x.", "time": null,
             "sources": [{"source": "openprogram/nowhere/u9", "label": "n"}],
             "destination": dest(DANA, &["Dana"], "end")},
        ]}),
    )
    .expect_err("rejected");
    assert_eq!(error.code(), ErrorCode::MissingSource, "{error}");
    assert!(
        error.to_string().contains("source is not archived: openprogram/nowhere/u9"),
        "{error}"
    );
    assert_eq!(super::tree_state(root, false), before);
}
