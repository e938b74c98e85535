//! Append planning: separators, idempotence, refusals before any write.

use std::collections::BTreeMap;

use scriptorium_topics_format::source::{
    AppendError, ArchiveRecord, TrustState, V2_MARKER, plan_append, scan,
};

fn record(thread: &str, message: &str, ordinal: u64, content: &str) -> ArchiveRecord {
    let mut record = ArchiveRecord::new("openprogram", thread, message, ordinal, "user", content);
    record.timestamp = Some("2024-03-15T10:00:00+08:00".into());
    record.speaker_id = Some("owner/local".into());
    record.speaker_display = Some("Owner".into());
    record
}

fn apply(tree: &mut BTreeMap<String, String>, records: &[ArchiveRecord]) -> usize {
    let plan = plan_append(records, tree).expect("plan");
    let writes = plan.writes.len();
    for write in plan.writes {
        tree.insert(write.rel_path, write.new_text);
    }
    writes
}

#[test]
fn a_new_archive_starts_with_the_marker_and_ends_with_one_lf() {
    let mut tree = BTreeMap::new();
    apply(&mut tree, &[record("s", "m2", 2, "second"), record("s", "m1", 1, "first")]);
    let text = &tree["sources/openprogram/_v2/s.md"];
    assert!(text.starts_with(&format!("{V2_MARKER}\n\n<a id=\"source-")));
    assert!(text.ends_with("second\n") && !text.ends_with("\n\n"));
    let scanned = scan("sources/openprogram/_v2/s.md", text);
    assert!(scanned.complete);
    let ids: Vec<&str> = scanned.frames.iter().map(|f| f.source_id).collect();
    assert_eq!(ids, ["openprogram/s/m1", "openprogram/s/m2"], "sorted by ordinal");
}

#[test]
fn re_archiving_changes_nothing_and_appending_adds_one_empty_line() {
    let mut tree = BTreeMap::new();
    let batch = [record("s", "m1", 1, "one\r\ntwo  \n"), record("t", "m1", 1, "other thread")];
    assert_eq!(apply(&mut tree, &batch), 2);
    let before = tree.clone();
    let plan = plan_append(&batch, &tree).expect("plan");
    assert!(plan.writes.is_empty());
    assert_eq!(plan.source_ids, ["openprogram/s/m1", "openprogram/t/m1"]);
    assert_eq!(tree, before);
    assert_eq!(apply(&mut tree, &[record("s", "m1", 1, "dup"), record("s", "m3", 3, "three")]), 1);
    let text = &tree["sources/openprogram/_v2/s.md"];
    assert!(text.starts_with(&before["sources/openprogram/_v2/s.md"]));
    assert!(
        text.contains("two  \n\n\n<a id="),
        "content's trailing LF, the frame's LF, the separator"
    );
    assert_eq!(scan("sources/openprogram/_v2/s.md", text).frames.len(), 2);
}

#[test]
fn a_duplicate_in_one_batch_is_framed_once() {
    let mut tree = BTreeMap::new();
    let plan =
        plan_append(&[record("s", "m1", 1, "a"), record("s", "m1", 2, "b")], &tree).expect("plan");
    assert_eq!(plan.source_ids.len(), 2);
    assert_eq!(plan.writes[0].appended, ["openprogram/s/m1"]);
    apply(&mut tree, &[record("s", "m1", 1, "a")]);
}

#[test]
fn an_incomplete_archive_refuses_further_appends() {
    let mut tree = BTreeMap::new();
    apply(&mut tree, &[record("s", "m1", 1, "one"), record("s", "m2", 2, "two")]);
    let path = "sources/openprogram/_v2/s.md".to_owned();
    let torn = tree[&path][..tree[&path].len() - 3].to_owned();
    tree.insert(path.clone(), torn);
    let error = plan_append(&[record("s", "m3", 3, "three")], &tree).expect_err("refused");
    assert_eq!(error.to_string(), "invalid or truncated v2 archive: sources/openprogram/_v2/s.md");
    match error {
        AppendError::InvalidArchive { fault: Some(fault), .. } => assert_eq!(fault.line, 10),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn refusals_plan_nothing() {
    let mut tree = BTreeMap::new();
    tree.insert("sources/openprogram/_v2/Case.md".to_owned(), String::new());
    let error = plan_append(&[record("ok", "m", 1, "fine"), record("case", "m", 2, "x")], &tree)
        .expect_err("collision");
    assert_eq!(
        error.to_string(),
        "source archive path collision: sources/openprogram/_v2/case.md and sources/openprogram/_v2/Case.md"
    );
    let mut pending = record("s", "m", 1, "x");
    pending.trust_state = TrustState::Pending;
    pending.timestamp = Some("bad\nts".into());
    assert!(matches!(
        plan_append(&[pending], &BTreeMap::new()),
        Err(AppendError::UnsafeTimestamp { .. })
    ));
}

#[test]
fn a_provider_named_v2_gets_its_own_directory() {
    let plan = plan_append(
        &[record("s", "m", 1, "x")].map(|mut r| {
            r.provider = "_v2".into();
            r
        }),
        &BTreeMap::new(),
    )
    .expect("plan");
    assert_eq!(plan.writes[0].rel_path, "sources/_v2/_v2/s.md");
}
