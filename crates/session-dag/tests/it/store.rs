//! The embedded store's own tests: its files (names, symlinks, FIFOs, the registry), crash
//! recovery and lazy loading. What every store must do is in the conformance suite
//! (`tests/conformance/`).

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::collections::BTreeMap;
use std::path::Path;

use scriptorium_session_dag::{
    EmbeddedStore, Error, ErrorCode, MetadataBatch, Page, SessionId, SessionStore, WarningKind,
};

use crate::suite::{chain, clock_from, ids, nid, node, sid, ticking_clock};

fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open_with_clock(dir, clock_from(&ticking_clock(1_000_000))).expect("store opens")
}

/// The embedded store's side of the metadata contract (the rest is in the conformance suite):
/// a merge is one log line, and a patch that changes nothing writes none.
#[test]
fn merge_metadata_writes_one_log_line_and_a_no_op_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let s = sid("s");
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    let log_lines = std::fs::read_to_string(store.log_path(&s)).unwrap().lines().count();
    let mut batch = MetadataBatch::new();
    batch.insert(nid("m2"), BTreeMap::from([("k".to_owned(), "v".to_owned())]));
    store.merge_metadata(&s, &batch).unwrap();
    let lines_after = std::fs::read_to_string(store.log_path(&s)).unwrap().lines().count();
    assert_eq!(lines_after, log_lines + 1, "one metadata line");
    store.merge_metadata(&s, &batch).unwrap();
    assert_eq!(std::fs::read_to_string(store.log_path(&s)).unwrap().lines().count(), lines_after);
    batch.insert(nid("nope"), BTreeMap::new());
    assert!(matches!(store.merge_metadata(&s, &batch), Err(Error::NodeNotFound { .. })));
    assert_eq!(std::fs::read_to_string(store.log_path(&s)).unwrap().lines().count(), lines_after);
}

#[test]
fn hostile_session_ids_stay_inside_the_store_directory() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("store");
    let store = open(&inner);
    let hostile = ["../escape", "a/b", "..", "", "Ünïcödé 会话", "A", "a", "/etc/passwd"];
    for (i, raw) in hostile.iter().enumerate() {
        store.append(&sid(raw), node("m1", None, i64::try_from(i).unwrap())).unwrap();
    }
    let outside: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(outside, ["store"]);
    let logs = std::fs::read_dir(&inner)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".log"))
        .count();
    assert_eq!(logs, hostile.len());
    let reopened = open(&inner);
    let listed = reopened.list_sessions(Page { offset: 0, limit: 100 }).unwrap();
    let mut listed: Vec<String> = listed.into_iter().map(|s| s.id.0).collect();
    listed.sort();
    let mut expected: Vec<String> = hostile.iter().map(|s| (*s).to_owned()).collect();
    expected.sort();
    assert_eq!(listed, expected);
    // A long ID gets a hashed name and is still listed by its ID (read from the header).
    let long = "x".repeat(300);
    reopened.append(&sid(&long), node("m1", None, 99)).unwrap();
    std::fs::remove_file(inner.join("registry.jsonl")).unwrap();
    let listed = open(&inner).list_sessions(Page { offset: 0, limit: 1 }).unwrap();
    assert_eq!(listed[0].id, sid(&long));
}

/// Truncates a copy of the log at every offset inside its last record and checks the store
/// opens with the record wholly there or wholly absent.
/// An import truncated and appended to a file outside the store through a symlink planted at
/// a log path; every read and write of that session is refused with a stable code, and the
/// file outside is never touched.
#[test]
fn a_symlink_at_a_log_path_is_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sessions");
    let store = open(&dir);
    let outside = tmp.path().join("outside.txt");
    std::fs::write(&outside, "torn tail without newline").unwrap();
    let s = sid("s1");
    std::os::unix::fs::symlink(&outside, store.log_path(&s)).unwrap();

    let err = store.append(&s, node("m1", None, 1)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SymlinkRefused, "{err}");
    let err = store.append_batch(&s, vec![node("m1", None, 1)]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SymlinkRefused, "{err}");
    assert_eq!(store.session(&s).unwrap_err().code(), ErrorCode::SymlinkRefused);
    assert_eq!(open(&dir).session(&s).unwrap_err().code(), ErrorCode::SymlinkRefused);
    assert_eq!(store.list_sessions(Page { offset: 0, limit: 10 }).unwrap(), []);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "torn tail without newline");
}

/// A FIFO at a log path is refused at once (opening it for reading would wait for a writer).
#[test]
fn a_fifo_at_a_log_path_is_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    let s = sid("s1");
    let status = std::process::Command::new("mkfifo").arg(store.log_path(&s)).status().unwrap();
    assert!(status.success());
    assert_eq!(store.session(&s).unwrap_err().code(), ErrorCode::NotRegularFile);
    let err = store.append(&s, node("m1", None, 1)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotRegularFile, "{err}");
}

/// A symlinked store directory is refused, so nothing is created through it.
#[test]
fn a_symlinked_store_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let dir = tmp.path().join("sessions");
    std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
    let err = EmbeddedStore::open(&dir).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SymlinkRefused, "{err}");
    assert_eq!(err.code().as_str(), "SYMLINK_REFUSED");
}

fn check_every_truncation(
    last_op: impl Fn(&EmbeddedStore, &SessionId),
    present: impl Fn(&EmbeddedStore, &SessionId) -> bool,
    absent: impl Fn(&EmbeddedStore, &SessionId) -> bool,
) {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("crash");
    let store = open(dir.path());
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    store.append(&s, node("m4", Some("m3"), 104)).unwrap();
    let log = store.log_path(&s);
    let before = std::fs::metadata(&log).unwrap().len();
    last_op(&store, &s);
    let bytes = std::fs::read(&log).unwrap();
    let after = bytes.len();
    assert!(after > usize::try_from(before).unwrap());
    let name = EmbeddedStore::log_file_name(&s);
    for cut in usize::try_from(before).unwrap()..=after {
        let copy = tempfile::tempdir().unwrap();
        std::fs::write(copy.path().join(&name), &bytes[..cut]).unwrap();
        let reopened = open(copy.path());
        let branch = reopened.branch(&s, Some(&nid("m4"))).unwrap();
        assert_eq!(ids(&branch), ["m1", "m2", "m3", "m4"], "cut at {cut}");
        if cut == after {
            assert!(present(&reopened, &s), "complete record missing");
            assert!(reopened.warnings().is_empty(), "{:?}", reopened.warnings());
        } else {
            assert!(absent(&reopened, &s), "half a record at cut {cut}");
            if cut > usize::try_from(before).unwrap() {
                let warnings = reopened.warnings();
                assert!(
                    warnings.iter().any(|w| matches!(
                        w.kind,
                        WarningKind::TornTail | WarningKind::IncompleteBatch
                    )),
                    "cut {cut}: {warnings:?}"
                );
            }
            // The next write truncates the torn tail: the log is clean again.
            reopened.append(&s, node("next", Some("m4"), 200)).unwrap();
            let again = open(copy.path());
            assert_eq!(ids(&again.branch(&s, None).unwrap()), ["m1", "m2", "m3", "m4", "next"]);
            assert!(again.warnings().is_empty(), "cut {cut}: {:?}", again.warnings());
        }
    }
}

#[test]
fn crash_inside_the_last_append_leaves_it_whole_or_absent() {
    check_every_truncation(
        |store, s| store.append(s, node("m5", Some("m4"), 105)).unwrap(),
        |store, s| store.node(s, &nid("m5")).unwrap().is_some(),
        |store, s| store.node(s, &nid("m5")).unwrap().is_none(),
    );
}

#[test]
fn crash_inside_the_last_batch_leaves_it_whole_or_absent() {
    let names = ["b5", "b6", "b7"];
    check_every_truncation(
        |store, s| {
            store.append_batch(s, chain("b", Some("m4"), 5..=7, 200)).unwrap();
        },
        |store, s| names.iter().all(|n| store.node(s, &nid(n)).unwrap().is_some()),
        |store, s| names.iter().all(|n| store.node(s, &nid(n)).unwrap().is_none()),
    );
}

#[test]
fn crash_inside_the_last_metadata_patch_leaves_it_whole_or_absent() {
    let patch: MetadataBatch = ["m1", "m2", "m3"]
        .iter()
        .map(|n| {
            (
                nid(n),
                BTreeMap::from([(
                    "memory_written_scriptorium".to_owned(),
                    "w-0000abcd".to_owned(),
                )]),
            )
        })
        .collect();
    let marked = |store: &EmbeddedStore, s: &SessionId, n: &str| {
        store.node(s, &nid(n)).unwrap().unwrap().metadata.contains_key("memory_written_scriptorium")
    };
    check_every_truncation(
        |store, s| store.merge_metadata(s, &patch).unwrap(),
        |store, s| ["m1", "m2", "m3"].iter().all(|n| marked(store, s, n)),
        |store, s| ["m1", "m2", "m3"].iter().all(|n| !marked(store, s, n)),
    );
}

#[test]
fn a_corrupt_middle_line_is_reported_with_its_line_number_and_the_rest_loads() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    let store = open(dir.path());
    for n in chain("m", None, 1..=4, 100) {
        store.append(&s, n).unwrap();
    }
    let log = store.log_path(&s);
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // Line 1 is the header; line 3 is m2's node record.
    assert!(lines[2].contains("\"m2\""));
    lines[2] = "{\"op\":\"node\", this is not json";
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let reopened = open(dir.path());
    let branch = reopened.branch(&s, None).unwrap();
    // m2 is gone, so m3's parent is missing: m3 is a root of what is stored.
    assert_eq!(ids(&branch), ["m3", "m4"]);
    assert_eq!(reopened.node(&s, &nid("m1")).unwrap().unwrap().id, nid("m1"));
    let warnings = reopened.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!((warnings[0].line, warnings[0].kind), (3, WarningKind::CorruptLine));
    assert!(warnings[0].to_string().contains(":3: corrupt line"), "{}", warnings[0]);
}

#[test]
fn opening_ten_thousand_sessions_and_reading_one_reads_no_other_log() {
    let dir = tempfile::tempdir().unwrap();
    let target = sid("target");
    {
        let store = open(dir.path());
        store.append_batch(&target, chain("m", None, 1..=20, 100)).unwrap();
    }
    // 9 999 other logs that would each produce a warning if they were read.
    for i in 0..9_999 {
        let name = EmbeddedStore::log_file_name(&sid(&format!("other-{i}")));
        std::fs::write(dir.path().join(name), b"garbage that is not a log\n{torn").unwrap();
    }
    let store = open(dir.path());
    assert_eq!(store.logs_read(), 0, "opening reads no log");
    assert_eq!(store.branch(&target, None).unwrap().len(), 20);
    assert_eq!(store.tips(&target).unwrap(), [nid("m20")]);
    assert!(store.node(&target, &nid("m7")).unwrap().is_some());
    assert_eq!(store.session(&target).unwrap().unwrap().head, Some(nid("m20")));
    assert_eq!(store.logs_read(), 1, "only the target's log was read");
    assert!(store.warnings().is_empty(), "{:?}", store.warnings());
}

#[test]
fn list_sessions_orders_by_updated_at_and_repairs_a_stale_registry() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for (name, t) in [("old", 100), ("new", 300), ("mid", 200)] {
        store.append(&sid(name), node("m1", None, t)).unwrap();
    }
    let page = |offset, limit| Page { offset, limit };
    let listed = |store: &EmbeddedStore, p| -> Vec<String> {
        store.list_sessions(p).unwrap().into_iter().map(|s| s.id.0).collect()
    };
    assert_eq!(listed(&store, page(0, 10)), ["new", "mid", "old"]);
    assert_eq!(listed(&store, page(1, 1)), ["mid"]);
    // A crash between a log's fsync and its registry line: put the old registry back.
    let registry = dir.path().join("registry.jsonl");
    let saved = std::fs::read(&registry).unwrap();
    store.append(&sid("old"), node("m2", Some("m1"), 400)).unwrap();
    std::fs::write(&registry, &saved).unwrap();
    let fresh = open(dir.path());
    assert_eq!(listed(&fresh, page(0, 10)), ["old", "new", "mid"]);
    assert_eq!(fresh.logs_read(), 1, "only the stale log was read");
    // Now the registry is repaired: a new store reads no log at all to list.
    let again = open(dir.path());
    assert_eq!(listed(&again, page(0, 10)), ["old", "new", "mid"]);
    assert_eq!(again.logs_read(), 0);
    // A garbage registry is repaired too; an explicit rebuild reads every log.
    std::fs::write(&registry, b"\0\0garbage\n{\"s\":").unwrap();
    assert_eq!(listed(&open(dir.path()), page(0, 10)), ["old", "new", "mid"]);
    assert_eq!(open(dir.path()).rebuild_registry().unwrap(), 3);
    let summaries = open(dir.path()).list_summaries(page(0, 1)).unwrap();
    assert_eq!((summaries[0].session.id.as_str(), summaries[0].nodes), ("old", 2));
}
