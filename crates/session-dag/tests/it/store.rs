//! Store tests: append, branches, tips, metadata, crash recovery.

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use proptest::prelude::*;
use scriptorium_session_dag::{
    EmbeddedStore, Error, ErrorCode, MetadataBatch, Node, NodeId, NodeKind, Page, Role, SessionId,
    SessionStore, Timestamp, WarningKind,
};

fn sid(s: &str) -> SessionId {
    SessionId(s.to_owned())
}

fn nid(s: &str) -> NodeId {
    NodeId(s.to_owned())
}

fn node(id: &str, parent: Option<&str>, created_at: i64) -> Node {
    Node {
        id: nid(id),
        parent: parent.map(nid),
        role: if id.ends_with('a') { Role::Assistant } else { Role::User },
        kind: NodeKind::Message,
        speaker: None,
        content: format!("content of {id}\nsecond line"),
        created_at: Timestamp(created_at),
        metadata: BTreeMap::new(),
        rewound: false,
    }
}

/// A clock that starts at `start` and advances by one millisecond per reading.
fn ticking_clock(start: i64) -> Arc<AtomicI64> {
    Arc::new(AtomicI64::new(start))
}

fn open_with(dir: &Path, clock: &Arc<AtomicI64>) -> EmbeddedStore {
    let clock = Arc::clone(clock);
    EmbeddedStore::open_with_clock(
        dir,
        Arc::new(move || Timestamp(clock.fetch_add(1, Ordering::SeqCst))),
    )
    .expect("store opens")
}

fn open(dir: &Path) -> EmbeddedStore {
    open_with(dir, &ticking_clock(1_000_000))
}

fn ids(nodes: &[Node]) -> Vec<&str> {
    nodes.iter().map(|n| n.id.as_str()).collect()
}

fn tip_ids(tips: &[NodeId]) -> Vec<&str> {
    tips.iter().map(NodeId::as_str).collect()
}

fn chain(
    prefix: &str,
    parent: Option<&str>,
    range: std::ops::RangeInclusive<u32>,
    t0: i64,
) -> Vec<Node> {
    let mut out = Vec::new();
    let mut parent = parent.map(str::to_owned);
    for i in range {
        let id = format!("{prefix}{i}");
        out.push(node(&id, parent.as_deref(), t0 + i64::from(i)));
        parent = Some(id);
    }
    out
}

#[test]
fn fork_gives_two_tips_head_first_and_branches_share_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let s = sid("s");
    for n in chain("m", None, 1..=5, 100) {
        store.append(&s, n).unwrap();
    }
    store.set_head(&s, &nid("m3")).unwrap();
    store.append(&s, node("b4", Some("m3"), 50)).unwrap();
    assert_eq!(tip_ids(&store.tips(&s).unwrap()), ["b4", "m5"]);
    assert_eq!(ids(&store.branch(&s, None).unwrap()), ["m1", "m2", "m3", "b4"]);
    assert_eq!(ids(&store.branch(&s, Some(&nid("m5"))).unwrap()), ["m1", "m2", "m3", "m4", "m5"]);
    // The head first even when the other tip is newer, then newest first.
    store.append(&s, node("c4", Some("m3"), 500)).unwrap();
    store.set_head(&s, &nid("b4")).unwrap();
    assert_eq!(tip_ids(&store.tips(&s).unwrap()), ["b4", "c4", "m5"]);
    // A head moved back onto an interior node is still listed first.
    store.set_head(&s, &nid("m3")).unwrap();
    assert_eq!(tip_ids(&store.tips(&s).unwrap()), ["m3", "c4", "m5", "b4"]);
    let reopened = open(dir.path());
    assert_eq!(tip_ids(&reopened.tips(&s).unwrap()), ["m3", "c4", "m5", "b4"]);
    assert!(reopened.warnings().is_empty(), "{:?}", reopened.warnings());
}

#[test]
fn rewound_nodes_are_skipped_by_branches_and_tips() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let s = sid("s");
    for n in chain("m", None, 1..=4, 100) {
        store.append(&s, n).unwrap();
    }
    store.rewind(&s, &nid("m2")).unwrap();
    assert_eq!(ids(&store.branch(&s, None).unwrap()), ["m1", "m3", "m4"]);
    store.rewind(&s, &nid("m4")).unwrap();
    // The rewound head resolves to its nearest live ancestor.
    assert_eq!(tip_ids(&store.tips(&s).unwrap()), ["m3"]);
    assert_eq!(ids(&store.branch(&s, Some(&nid("m4"))).unwrap()), ["m1", "m3"]);
    assert!(store.node(&s, &nid("m4")).unwrap().unwrap().rewound);
    let reopened = open(dir.path());
    assert_eq!(ids(&reopened.branch(&s, None).unwrap()), ["m1", "m3"]);
}

#[test]
fn merge_metadata_keeps_updated_at_appends_no_node_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let s = sid("s");
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    let before = store.session(&s).unwrap().unwrap();
    let log_lines = std::fs::read_to_string(store.log_path(&s)).unwrap().lines().count();
    let mut batch = MetadataBatch::new();
    batch.insert(nid("m2"), BTreeMap::from([("k".to_owned(), "v".to_owned())]));
    store.merge_metadata(&s, &batch).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap(), before);
    assert_eq!(store.branch(&s, None).unwrap().len(), 3);
    let lines_after = std::fs::read_to_string(store.log_path(&s)).unwrap().lines().count();
    assert_eq!(lines_after, log_lines + 1, "one metadata line");
    // The same patch again writes nothing.
    store.merge_metadata(&s, &batch).unwrap();
    assert_eq!(std::fs::read_to_string(store.log_path(&s)).unwrap().lines().count(), lines_after);
    let reopened = open(dir.path());
    assert_eq!(reopened.node(&s, &nid("m2")).unwrap().unwrap().metadata["k"], "v");
    assert_eq!(reopened.session(&s).unwrap().unwrap(), before);
    assert_eq!(reopened.list_sessions(Page { offset: 0, limit: 10 }).unwrap(), [before]);
    // An unknown node fails the whole batch before anything is written.
    batch.insert(nid("nope"), BTreeMap::new());
    assert!(matches!(store.merge_metadata(&s, &batch), Err(Error::NodeNotFound { .. })));
}

#[test]
fn append_batch_is_idempotent_and_keeps_existing_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let s = sid("s");
    assert_eq!(store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap(), 3);
    let session = store.session(&s).unwrap().unwrap();
    assert_eq!(session.head, Some(nid("m3")));
    assert_eq!(session.updated_at, Timestamp(103));
    let mut batch = MetadataBatch::new();
    batch.insert(nid("m1"), BTreeMap::from([("memory_written_scriptorium".into(), "w-1".into())]));
    store.merge_metadata(&s, &batch).unwrap();
    // Re-import of the grown transcript: only m4, m5 are new; the head stays; marks survive.
    assert_eq!(store.append_batch(&s, chain("m", None, 1..=5, 100)).unwrap(), 2);
    assert_eq!(store.append_batch(&s, chain("m", None, 1..=5, 100)).unwrap(), 0);
    let session = store.session(&s).unwrap().unwrap();
    assert_eq!(session.head, Some(nid("m3")));
    assert_eq!(session.updated_at, Timestamp(105));
    let reopened = open(dir.path());
    let m1 = reopened.node(&s, &nid("m1")).unwrap().unwrap();
    assert_eq!(m1.metadata["memory_written_scriptorium"], "w-1");
    assert_eq!(reopened.branch(&s, Some(&nid("m5"))).unwrap().len(), 5);
}

#[test]
fn errors_name_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let s = sid("s");
    assert!(matches!(store.branch(&s, None), Err(Error::SessionNotFound(_))));
    assert!(matches!(store.tips(&s), Err(Error::SessionNotFound(_))));
    assert!(matches!(store.set_head(&s, &nid("x")), Err(Error::SessionNotFound(_))));
    assert_eq!(store.node(&s, &nid("x")).unwrap(), None);
    assert_eq!(store.session(&s).unwrap(), None);
    store.append(&s, node("m1", None, 1)).unwrap();
    assert!(matches!(store.append(&s, node("m1", None, 1)), Err(Error::DuplicateNode { .. })));
    assert!(matches!(store.set_head(&s, &nid("x")), Err(Error::NodeNotFound { .. })));
    assert!(matches!(store.rewind(&s, &nid("x")), Err(Error::NodeNotFound { .. })));
    assert!(matches!(store.branch(&s, Some(&nid("x"))), Err(Error::NodeNotFound { .. })));
}

#[test]
fn a_parent_cycle_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let s = sid("s");
    // b's parent a is missing from the file; then a arrives claiming b as its parent.
    store.append(&s, node("b", Some("a"), 1)).unwrap();
    let err = store.append(&s, node("a", Some("b"), 2)).unwrap_err();
    assert!(matches!(err, Error::ParentCycle { .. }), "{err}");
    let err =
        store.append_batch(&s, vec![node("c", None, 3), node("a", Some("b"), 2)]).unwrap_err();
    assert!(matches!(err, Error::ParentCycle { .. }), "{err}");
    assert_eq!(store.node(&s, &nid("c")).unwrap(), None, "nothing of the batch was written");
    assert!(matches!(
        store.append_batch(&s, vec![node("x", Some("y"), 1), node("y", Some("x"), 1)]),
        Err(Error::ParentCycle { .. })
    ));
    assert!(matches!(store.append(&s, node("z", Some("z"), 1)), Err(Error::ParentCycle { .. })));
    // A missing parent is just a root of what is stored.
    assert_eq!(ids(&store.branch(&s, None).unwrap()), ["b"]);
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

#[test]
fn concurrent_writers_never_interleave_lines() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("shared");
    open(dir.path()).append(&s, node("root", None, 0)).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let path = dir.path().to_path_buf();
            let s = s.clone();
            std::thread::spawn(move || {
                // One store per thread: each has its own file descriptions, like separate
                // processes, so only the file lock keeps them apart.
                let store = open(&path);
                for i in 0..25 {
                    let id = format!("t{t}-{i}");
                    if i % 5 == 0 {
                        let batch = vec![
                            node(&format!("{id}-x"), Some("root"), 1),
                            node(&format!("{id}-y"), Some("root"), 1),
                        ];
                        assert_eq!(store.append_batch(&s, batch).unwrap(), 2);
                    }
                    store.append(&s, node(&id, Some("root"), 1)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let store = open(dir.path());
    assert_eq!(store.tips(&s).unwrap().len(), 4 * 25 + 4 * 5 * 2);
    assert!(store.warnings().is_empty(), "{:?}", store.warnings());
}

#[test]
fn a_store_sees_other_writers_before_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let s = sid("s");
    let a = open(dir.path());
    let b = open(dir.path());
    a.append(&s, node("m1", None, 1)).unwrap();
    b.append(&s, node("m2", Some("m1"), 2)).unwrap();
    assert!(matches!(a.append(&s, node("m2", Some("m1"), 2)), Err(Error::DuplicateNode { .. })));
    assert_eq!(ids(&a.branch(&s, None).unwrap()), ["m1", "m2"]);
}

#[test]
fn set_head_and_rewind_use_the_injected_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ticking_clock(5_000);
    let store = open_with(dir.path(), &clock);
    let s = sid("s");
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    store.set_head(&s, &nid("m1")).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap().updated_at, Timestamp(5_000));
    store.set_head(&s, &nid("m1")).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap().updated_at, Timestamp(5_000), "no-op move");
    store.rewind(&s, &nid("m3")).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap().updated_at, Timestamp(5_001));
    store.set_title(&s, Some("A title".into())).unwrap();
    let session = open(dir.path()).session(&s).unwrap().unwrap();
    assert_eq!((session.title.as_deref(), session.updated_at), (Some("A title"), Timestamp(5_001)));
}

/// A simple model of a session: the reference the store must agree with.
#[derive(Clone, Debug, Default)]
struct Model {
    nodes: Vec<Node>,
    head: Option<usize>,
    updated_at: i64,
}

impl Model {
    fn index(&self, id: &NodeId) -> Option<usize> {
        self.nodes.iter().position(|n| &n.id == id)
    }

    fn branch(&self, tip: usize) -> Vec<Node> {
        let mut out = Vec::new();
        let mut current = Some(tip);
        while let Some(i) = current {
            if !self.nodes[i].rewound {
                out.push(self.nodes[i].clone());
            }
            current = self.nodes[i].parent.as_ref().and_then(|p| self.index(p));
        }
        out.reverse();
        out
    }

    fn tips(&self) -> Vec<NodeId> {
        let live: Vec<usize> = (0..self.nodes.len()).filter(|&i| !self.nodes[i].rewound).collect();
        // n has a live child when some live m's branch has n just before m.
        let has_live_child = |n: usize| {
            live.iter().any(|&m| {
                let branch = self.branch(m);
                branch.len() >= 2 && branch[branch.len() - 2].id == self.nodes[n].id
            })
        };
        let head = self.head.and_then(|h| self.branch(h).last().map(|n| n.id.clone()));
        let mut others: Vec<usize> = live
            .iter()
            .copied()
            .filter(|&i| !has_live_child(i) && Some(&self.nodes[i].id) != head.as_ref())
            .collect();
        others.sort_by_key(|&i| std::cmp::Reverse((self.nodes[i].created_at, i)));
        head.into_iter().chain(others.into_iter().map(|i| self.nodes[i].id.clone())).collect()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Append { parent: Option<prop::sample::Index>, created_at: i64 },
    Batch { parents: Vec<Option<prop::sample::Index>>, created_at: i64 },
    SetHead(prop::sample::Index),
    Rewind(prop::sample::Index),
    Meta(prop::sample::Index, u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::option::weighted(0.8, any::<prop::sample::Index>()), 0..5i64)
            .prop_map(|(parent, created_at)| Op::Append { parent, created_at }),
        1 => (prop::collection::vec(proptest::option::weighted(0.9, any::<prop::sample::Index>()), 1..4), 0..5i64)
            .prop_map(|(parents, created_at)| Op::Batch { parents, created_at }),
        1 => any::<prop::sample::Index>().prop_map(Op::SetHead),
        1 => any::<prop::sample::Index>().prop_map(Op::Rewind),
        1 => (any::<prop::sample::Index>(), 0..3u8, 0..3u8).prop_map(|(n, k, v)| Op::Meta(n, k, v)),
    ]
}

fn agrees(store: &EmbeddedStore, s: &SessionId, model: &Model) -> Result<(), TestCaseError> {
    if model.nodes.is_empty() {
        prop_assert_eq!(store.session(s).unwrap(), None);
        return Ok(());
    }
    for (i, n) in model.nodes.iter().enumerate() {
        prop_assert_eq!(store.node(s, &n.id).unwrap(), Some(n.clone()));
        prop_assert_eq!(store.branch(s, Some(&n.id)).unwrap(), model.branch(i));
    }
    prop_assert_eq!(store.tips(s).unwrap(), model.tips());
    let session = store.session(s).unwrap().unwrap();
    prop_assert_eq!(session.head, model.head.map(|h| model.nodes[h].id.clone()));
    prop_assert_eq!(session.updated_at, Timestamp(model.updated_at));
    prop_assert!(store.warnings().is_empty(), "{:?}", store.warnings());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn store_agrees_with_a_model_after_every_step_and_reopen(ops in prop::collection::vec(op(), 1..16)) {
        let dir = tempfile::tempdir().unwrap();
        let clock = ticking_clock(10);
        let store = open_with(dir.path(), &clock);
        let s = sid("prop");
        let mut model = Model::default();
        let mut next = 0;
        for op in ops {
            let pick = |model: &Model, ix: &prop::sample::Index| ix.index(model.nodes.len());
            match op {
                Op::Append { parent, created_at } => {
                    let parent = if model.nodes.is_empty() { None } else { parent.map(|p| model.nodes[pick(&model, &p)].id.clone()) };
                    let mut n = node(&format!("n{next}"), None, created_at);
                    n.parent = parent;
                    next += 1;
                    store.append(&s, n.clone()).unwrap();
                    model.updated_at = model.updated_at.max(created_at);
                    model.head = Some(model.nodes.len());
                    model.nodes.push(n);
                }
                Op::Batch { parents, created_at } => {
                    let mut batch = Vec::new();
                    for parent in parents {
                        let parent = if model.nodes.is_empty() { None } else { parent.map(|p| model.nodes[pick(&model, &p)].id.clone()) };
                        let mut n = node(&format!("n{next}"), None, created_at);
                        n.parent = parent;
                        next += 1;
                        batch.push(n);
                    }
                    // Re-sending an existing node is a no-op.
                    if let Some(first) = model.nodes.first() {
                        batch.push(first.clone());
                    }
                    let new = batch.len() - usize::from(!model.nodes.is_empty());
                    prop_assert_eq!(store.append_batch(&s, batch.clone()).unwrap(), new);
                    let had_head = model.head.is_some();
                    model.nodes.extend(batch.into_iter().take(new));
                    model.updated_at = model.updated_at.max(created_at);
                    if !had_head {
                        model.head = Some(model.nodes.len() - 1);
                    }
                }
                Op::SetHead(ix) if !model.nodes.is_empty() => {
                    let i = pick(&model, &ix);
                    store.set_head(&s, &model.nodes[i].id).unwrap();
                    if model.head != Some(i) {
                        model.updated_at = model.updated_at.max(clock.load(Ordering::SeqCst) - 1);
                        model.head = Some(i);
                    }
                }
                Op::Rewind(ix) if !model.nodes.is_empty() => {
                    let i = pick(&model, &ix);
                    store.rewind(&s, &model.nodes[i].id).unwrap();
                    if !model.nodes[i].rewound {
                        model.updated_at = model.updated_at.max(clock.load(Ordering::SeqCst) - 1);
                        model.nodes[i].rewound = true;
                    }
                }
                Op::Meta(ix, k, v) if !model.nodes.is_empty() => {
                    let i = pick(&model, &ix);
                    let patch = BTreeMap::from([(format!("k{k}"), format!("v{v}"))]);
                    store.merge_metadata(&s, &MetadataBatch::from([(model.nodes[i].id.clone(), patch.clone())])).unwrap();
                    model.nodes[i].metadata.extend(patch);
                }
                Op::SetHead(_) | Op::Rewind(_) | Op::Meta(..) => {}
            }
            agrees(&store, &s, &model)?;
            agrees(&open(dir.path()), &s, &model)?;
        }
    }
}
