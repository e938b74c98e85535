//! The conformance suite of every `SessionStore`: the same tests, run against the embedded
//! store (`session-dag`'s `conformance` test) and the PostgreSQL store (`session-pg`'s), each
//! through a [`Backing`] that opens stores on one fresh location.
//!
//! A second `open` on one backing is another process's view of the same store: "reopen" checks
//! what is durable, concurrent tests give each thread its own store.

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use scriptorium_session_dag::import::{self, Format, Parsed, ParsedSession};
use scriptorium_session_dag::{
    Clock, Error, MetadataBatch, Node, NodeId, NodeKind, Page, Role, Session, SessionId,
    SessionStore, Speaker, Timestamp,
};

/// A store as the suite sees it.
pub(crate) trait Opened: SessionStore + Send + Sync {
    /// Problems the store found while reading (torn lines, …): must be none after any sequence
    /// of the trait's own calls.
    fn problems(&self) -> Vec<String> {
        Vec::new()
    }
}

/// One fresh, empty store location.
pub(crate) trait Backing: Send + Sync {
    /// Opens a store on this location with `clock`.
    fn open_with(&self, clock: Arc<dyn Clock>) -> Box<dyn Opened>;

    /// Opens a store with a clock ticking from 1 000 000.
    fn open(&self) -> Box<dyn Opened> {
        self.open_with(clock_from(&ticking_clock(1_000_000)))
    }

    /// Every byte a copy of the store takes away: the embedded store's files, one after the
    /// other; the database's `pg_dump`. Two dumps of a store nothing wrote to in between are
    /// equal.
    fn dump(&self) -> Vec<u8>;
}

/// One test of the suite.
pub(crate) type Test = fn(&dyn Backing);

/// One test of the suite that reads the real transcripts of the test data (`data`).
pub(crate) type DataTest = fn(&dyn Backing, &Path);

/// Every test that needs the test data, by name.
pub(crate) const DATA_TESTS: &[(&str, DataTest)] = &[
    ("reimporting_a_real_transcript_after_a_forget_brings_nothing_back", reimport_after_forget),
    (
        "reimporting_a_real_transcript_mapped_as_a_rewrite_mapped_it_adds_nothing",
        reimport_real_after_rewrite,
    ),
];

/// Every test, by name.
pub(crate) const TESTS: &[(&str, Test)] = &[
    ("fork_gives_two_tips_head_first_and_branches_share_the_prefix", fork_gives_two_tips),
    ("rewound_nodes_are_skipped_by_branches_and_tips", rewound_nodes_are_skipped),
    ("merge_metadata_keeps_updated_at_appends_no_node_and_survives_reopen", merge_metadata),
    ("append_batch_is_idempotent_and_keeps_existing_metadata", append_batch_is_idempotent),
    ("errors_name_what_is_missing", errors_name_what_is_missing),
    ("a_parent_cycle_is_refused_before_writing", a_parent_cycle_is_refused),
    ("any_session_id_and_content_round_trip", any_id_and_content_round_trip),
    ("list_sessions_orders_by_updated_at_newest_first", list_sessions_orders),
    ("concurrent_writers_lose_nothing", concurrent_writers_lose_nothing),
    ("concurrent_appends_and_marks_lose_no_mark", concurrent_appends_and_marks_lose_no_mark),
    ("a_store_sees_other_writers_before_it_writes", a_store_sees_other_writers),
    ("set_head_and_rewind_use_the_injected_clock", set_head_and_rewind_use_the_clock),
    ("title_and_project_do_not_move_updated_at", title_and_project),
    ("walk_ancestors_stops_where_the_visitor_says", walk_ancestors_stops),
    ("store_agrees_with_a_model_after_every_step_and_reopen", store_agrees_with_a_model),
    ("forget_erases_content_and_keeps_the_shape_and_the_marks", forget_keeps_the_shape),
    ("forget_with_the_title_erases_every_title", forget_erases_every_title),
    ("forget_leaves_no_byte_of_the_forgotten_text_in_the_store", forget_leaves_no_byte),
    ("a_forgotten_node_is_not_brought_back_by_append_batch", forgotten_stays_forgotten),
    ("other_stores_see_a_forget_and_lose_no_write_after_it", other_stores_see_a_forget),
    ("concurrent_appends_marks_and_forgets_lose_nothing", concurrent_forgets_lose_nothing),
    ("rewrite_texts_changes_the_mapped_texts_and_nothing_else", rewrite_keeps_the_shape),
    ("rewrite_texts_leaves_no_byte_of_the_old_texts_in_the_store", rewrite_leaves_no_byte),
    ("rewrite_texts_again_returns_0_and_writes_nothing", rewrite_is_idempotent),
    ("rewrite_texts_of_the_title_alone_changes_the_title_everywhere", rewrite_title_only),
    ("an_import_mapped_as_a_rewrite_mapped_the_store_adds_nothing", reimport_after_rewrite),
    ("concurrent_appends_marks_and_rewrites_lose_nothing", concurrent_rewrites_lose_nothing),
    ("a_map_that_panics_leaves_the_session_as_it_was", a_map_that_panics),
];

pub(crate) fn sid(s: &str) -> SessionId {
    SessionId(s.to_owned())
}

pub(crate) fn nid(s: &str) -> NodeId {
    NodeId(s.to_owned())
}

pub(crate) fn node(id: &str, parent: Option<&str>, created_at: i64) -> Node {
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
pub(crate) fn ticking_clock(start: i64) -> Arc<AtomicI64> {
    Arc::new(AtomicI64::new(start))
}

pub(crate) fn clock_from(clock: &Arc<AtomicI64>) -> Arc<dyn Clock> {
    let clock = Arc::clone(clock);
    Arc::new(move || Timestamp(clock.fetch_add(1, Ordering::SeqCst)))
}

pub(crate) fn ids(nodes: &[Node]) -> Vec<&str> {
    nodes.iter().map(|n| n.id.as_str()).collect()
}

fn tip_ids(tips: &[NodeId]) -> Vec<&str> {
    tips.iter().map(NodeId::as_str).collect()
}

pub(crate) fn chain(
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

fn mark_patch(nodes: &[&str], key: &str, value: &str) -> MetadataBatch {
    nodes.iter().map(|n| (nid(n), BTreeMap::from([(key.to_owned(), value.to_owned())]))).collect()
}

fn fork_gives_two_tips(backing: &dyn Backing) {
    let store = backing.open();
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
    let reopened = backing.open();
    assert_eq!(tip_ids(&reopened.tips(&s).unwrap()), ["m3", "c4", "m5", "b4"]);
    assert!(reopened.problems().is_empty(), "{:?}", reopened.problems());
}

fn rewound_nodes_are_skipped(backing: &dyn Backing) {
    let store = backing.open();
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
    let reopened = backing.open();
    assert_eq!(ids(&reopened.branch(&s, None).unwrap()), ["m1", "m3"]);
}

fn merge_metadata(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    let before = store.session(&s).unwrap().unwrap();
    let mut batch = MetadataBatch::new();
    batch.insert(nid("m2"), BTreeMap::from([("k".to_owned(), "v".to_owned())]));
    store.merge_metadata(&s, &batch).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap(), before);
    assert_eq!(store.branch(&s, Some(&nid("m3"))).unwrap().len(), 3);
    assert_eq!(store.tips(&s).unwrap(), [nid("m3")], "no node appended");
    // Keys merge: a second key keeps the first.
    batch.insert(nid("m2"), BTreeMap::from([("k2".to_owned(), "v2".to_owned())]));
    store.merge_metadata(&s, &batch).unwrap();
    let reopened = backing.open();
    let m2 = reopened.node(&s, &nid("m2")).unwrap().unwrap();
    assert_eq!((m2.metadata["k"].as_str(), m2.metadata["k2"].as_str()), ("v", "v2"));
    assert_eq!(reopened.session(&s).unwrap().unwrap(), before);
    assert_eq!(reopened.list_sessions(Page { offset: 0, limit: 10 }).unwrap(), [before]);
    // An unknown node fails the whole batch before anything is written.
    let mut bad = mark_patch(&["m1"], "k3", "v3");
    bad.insert(nid("nope"), BTreeMap::new());
    assert!(matches!(store.merge_metadata(&s, &bad), Err(Error::NodeNotFound { .. })));
    assert!(!reopened.node(&s, &nid("m1")).unwrap().unwrap().metadata.contains_key("k3"));
    assert!(matches!(
        store.merge_metadata(&sid("none"), &MetadataBatch::new()),
        Err(Error::SessionNotFound(_))
    ));
}

fn append_batch_is_idempotent(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    assert_eq!(store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap(), 3);
    let session = store.session(&s).unwrap().unwrap();
    assert_eq!(session.head, Some(nid("m3")));
    assert_eq!(session.updated_at, Timestamp(103));
    let batch = mark_patch(&["m1"], "memory_written_scriptorium", "w-1");
    store.merge_metadata(&s, &batch).unwrap();
    // Re-import of the grown transcript: only m4, m5 are new; the head stays; marks survive.
    assert_eq!(store.append_batch(&s, chain("m", None, 1..=5, 100)).unwrap(), 2);
    assert_eq!(store.append_batch(&s, chain("m", None, 1..=5, 100)).unwrap(), 0);
    let session = store.session(&s).unwrap().unwrap();
    assert_eq!(session.head, Some(nid("m3")));
    assert_eq!(session.updated_at, Timestamp(105));
    let reopened = backing.open();
    let m1 = reopened.node(&s, &nid("m1")).unwrap().unwrap();
    assert_eq!(m1.metadata["memory_written_scriptorium"], "w-1");
    assert_eq!(reopened.branch(&s, Some(&nid("m5"))).unwrap().len(), 5);
    // An empty batch creates no session.
    assert_eq!(store.append_batch(&sid("empty"), Vec::new()).unwrap(), 0);
    assert_eq!(store.session(&sid("empty")).unwrap(), None);
    assert_eq!(store.list_sessions(Page { offset: 0, limit: 10 }).unwrap().len(), 1);
}

fn errors_name_what_is_missing(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    assert!(matches!(store.branch(&s, None), Err(Error::SessionNotFound(_))));
    assert!(matches!(store.tips(&s), Err(Error::SessionNotFound(_))));
    assert!(matches!(store.set_head(&s, &nid("x")), Err(Error::SessionNotFound(_))));
    assert!(matches!(store.rewind(&s, &nid("x")), Err(Error::SessionNotFound(_))));
    assert!(matches!(store.set_title(&s, Some("t".into())), Err(Error::SessionNotFound(_))));
    assert_eq!(store.node(&s, &nid("x")).unwrap(), None);
    assert_eq!(store.session(&s).unwrap(), None);
    assert!(!store.walk_ancestors(&s, &nid("x"), &mut |_| true).unwrap());
    store.append(&s, node("m1", None, 1)).unwrap();
    let err = store.append(&s, node("m1", None, 1)).unwrap_err();
    assert!(matches!(err, Error::DuplicateNode { .. }), "{err}");
    assert_eq!(err.code().as_str(), "DUPLICATE_NODE");
    assert!(matches!(store.set_head(&s, &nid("x")), Err(Error::NodeNotFound { .. })));
    assert!(matches!(store.rewind(&s, &nid("x")), Err(Error::NodeNotFound { .. })));
    assert!(matches!(store.branch(&s, Some(&nid("x"))), Err(Error::NodeNotFound { .. })));
    assert_eq!(store.branch(&s, None).unwrap().len(), 1, "the failed calls wrote nothing");
}

fn a_parent_cycle_is_refused(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    // b's parent a is missing from the store; then a arrives claiming b as its parent.
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
    // A longer loop through stored nodes: d → e → a(missing); a under d closes it.
    store.append_batch(&s, vec![node("e", Some("a"), 1), node("d", Some("e"), 1)]).unwrap();
    assert!(matches!(store.append(&s, node("a", Some("d"), 1)), Err(Error::ParentCycle { .. })));
    // A missing parent is just a root of what is stored.
    assert_eq!(ids(&store.branch(&s, Some(&nid("b"))).unwrap()), ["b"]);
    assert_eq!(ids(&store.branch(&s, Some(&nid("d"))).unwrap()), ["e", "d"]);
}

fn any_id_and_content_round_trip(backing: &dyn Backing) {
    let store = backing.open();
    let hostile =
        ["../escape", "a/b", "..", "", "Ünïcödé 会话", "A", "a", "/etc/passwd", "nul\0id"];
    for (i, raw) in hostile.iter().enumerate() {
        let mut n = node("m1", None, i64::try_from(i).unwrap());
        n.id = nid(raw);
        n.parent = Some(nid("p\0arent"));
        n.content = format!("NUL \0 inside, quotes ' \" and \\ backslash, {raw}");
        n.speaker = Some(Speaker { id: "owner/local".into(), display: "Own\0er".into() });
        n.metadata = BTreeMap::from([("k\0".to_owned(), "v\0".to_owned())]);
        store.append(&sid(raw), n.clone()).unwrap();
        assert_eq!(store.node(&sid(raw), &nid(raw)).unwrap(), Some(n));
    }
    let long = "x".repeat(300);
    store.append(&sid(&long), node("m1", None, 99)).unwrap();
    store.set_title(&sid(&long), Some("tit\0le".into())).unwrap();
    let reopened = backing.open();
    let listed = reopened.list_sessions(Page { offset: 0, limit: 100 }).unwrap();
    assert_eq!(listed[0].id, sid(&long));
    assert_eq!(listed[0].title.as_deref(), Some("tit\0le"));
    let mut listed: Vec<String> = listed.into_iter().map(|s| s.id.0).collect();
    listed.sort();
    let mut expected: Vec<String> = hostile.iter().map(|s| (*s).to_owned()).collect();
    expected.push(long);
    expected.sort();
    assert_eq!(listed, expected);
}

fn list_sessions_orders(backing: &dyn Backing) {
    let store = backing.open();
    for (name, t) in [("old", 100), ("new", 300), ("mid", 200), ("tie", 200)] {
        store.append(&sid(name), node("m1", None, t)).unwrap();
    }
    let page = |offset, limit| Page { offset, limit };
    let listed = |store: &dyn Opened, p| -> Vec<String> {
        store.list_sessions(p).unwrap().into_iter().map(|s| s.id.0).collect()
    };
    // Newest first, ties by ID.
    assert_eq!(listed(&*store, page(0, 10)), ["new", "mid", "tie", "old"]);
    assert_eq!(listed(&*store, page(1, 1)), ["mid"]);
    assert_eq!(listed(&*store, page(4, 1)), Vec::<String>::new());
    store.append(&sid("old"), node("m2", Some("m1"), 400)).unwrap();
    assert_eq!(listed(&*backing.open(), page(0, 10)), ["old", "new", "mid", "tie"]);
}

fn concurrent_writers_lose_nothing(backing: &dyn Backing) {
    let s = sid("shared");
    backing.open().append(&s, node("root", None, 0)).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let s = s.clone();
            scope.spawn(move || {
                // One store per thread, like separate processes.
                let store = backing.open();
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
            });
        }
    });
    let store = backing.open();
    assert_eq!(store.tips(&s).unwrap().len(), 4 * 25 + 4 * 5 * 2);
    assert!(store.problems().is_empty(), "{:?}", store.problems());
}

/// Writers append and mark on one session at once, each marking with its own key; every mark
/// must survive (a read-modify-write of the metadata without a lock would lose some).
fn concurrent_appends_and_marks_lose_no_mark(backing: &dyn Backing) {
    let s = sid("marks");
    let shared: Vec<Node> = chain("m", None, 1..=20, 0);
    backing.open().append_batch(&s, shared).unwrap();
    let all: Vec<String> = (1..=20).map(|i| format!("m{i}")).collect();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (s, all) = (s.clone(), all.clone());
            scope.spawn(move || {
                let store = backing.open();
                for i in 0..10 {
                    // Every writer marks every shared node, under its own key…
                    let names: Vec<&str> = all.iter().map(String::as_str).collect();
                    let key = format!("writer-{t}");
                    store.merge_metadata(&s, &mark_patch(&names, &key, &i.to_string())).unwrap();
                    // …and appends and marks nodes of its own.
                    let own = format!("t{t}-{i}");
                    store.append(&s, node(&own, Some("m20"), 1)).unwrap();
                    store.merge_metadata(&s, &mark_patch(&[&own], "mine", &own)).unwrap();
                }
            });
        }
    });
    let store = backing.open();
    for name in &all {
        let metadata = store.node(&s, &nid(name)).unwrap().unwrap().metadata;
        for t in 0..4 {
            assert_eq!(metadata.get(&format!("writer-{t}")).map(String::as_str), Some("9"));
        }
    }
    for t in 0..4 {
        for i in 0..10 {
            let own = format!("t{t}-{i}");
            let found = store.node(&s, &nid(&own)).unwrap().unwrap();
            assert_eq!(found.metadata.get("mine"), Some(&own));
        }
    }
    assert_eq!(store.tips(&s).unwrap().len(), 40);
}

fn a_store_sees_other_writers(backing: &dyn Backing) {
    let s = sid("s");
    let a = backing.open();
    let b = backing.open();
    a.append(&s, node("m1", None, 1)).unwrap();
    b.append(&s, node("m2", Some("m1"), 2)).unwrap();
    assert!(matches!(a.append(&s, node("m2", Some("m1"), 2)), Err(Error::DuplicateNode { .. })));
    assert_eq!(ids(&a.branch(&s, None).unwrap()), ["m1", "m2"]);
}

fn set_head_and_rewind_use_the_clock(backing: &dyn Backing) {
    let clock = ticking_clock(5_000);
    let store = backing.open_with(clock_from(&clock));
    let s = sid("s");
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    store.set_head(&s, &nid("m1")).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap().updated_at, Timestamp(5_000));
    store.set_head(&s, &nid("m1")).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap().updated_at, Timestamp(5_000), "no-op move");
    store.rewind(&s, &nid("m3")).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap().updated_at, Timestamp(5_001));
    store.rewind(&s, &nid("m3")).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap().updated_at, Timestamp(5_001), "no-op rewind");
    // A head moved as of an older time does not move `updated_at` back.
    store.set_head_at(&s, &nid("m2"), Timestamp(7)).unwrap();
    let session = store.session(&s).unwrap().unwrap();
    assert_eq!((session.head, session.updated_at), (Some(nid("m2")), Timestamp(5_001)));
    store.set_head_at(&s, &nid("m3"), Timestamp(9_000)).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap().updated_at, Timestamp(9_000));
}

fn title_and_project(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    store.append(&s, node("m1", None, 10)).unwrap();
    store.set_title(&s, Some("A title".into())).unwrap();
    store.set_project(&s, Some("/srv/projects/tracker".into())).unwrap();
    let session = backing.open().session(&s).unwrap().unwrap();
    assert_eq!(session.title.as_deref(), Some("A title"));
    assert_eq!(session.project.as_deref(), Some("/srv/projects/tracker"));
    assert_eq!(session.updated_at, Timestamp(10));
    store.set_title(&s, None).unwrap();
    assert_eq!(store.session(&s).unwrap().unwrap().title, None);
    assert!(matches!(store.set_project(&sid("x"), None), Err(Error::SessionNotFound(_))));
}

fn walk_ancestors_stops(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    store.append_batch(&s, chain("m", None, 1..=300, 0)).unwrap();
    store.rewind(&s, &nid("m150")).unwrap();
    let mut seen = Vec::new();
    let found = store
        .walk_ancestors(&s, &nid("m300"), &mut |n| {
            seen.push(n.id.0.clone());
            n.id.as_str() != "m100"
        })
        .unwrap();
    assert!(found);
    assert_eq!(seen.len(), 201, "m300 down to m100, the rewound m150 included");
    assert_eq!((seen[0].as_str(), seen[200].as_str()), ("m300", "m100"));
    let mut count = 0;
    assert!(
        store
            .walk_ancestors(&s, &nid("m300"), &mut |_| {
                count += 1;
                true
            })
            .unwrap()
    );
    assert_eq!(count, 300, "to the root");
    assert!(!store.walk_ancestors(&s, &nid("nope"), &mut |_| true).unwrap());
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

fn agrees(store: &dyn Opened, s: &SessionId, model: &Model) -> Result<(), TestCaseError> {
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
    prop_assert!(store.problems().is_empty(), "{:?}", store.problems());
    Ok(())
}

/// Runs one generated sequence against a store on a fresh session of `backing`.
fn run_ops(backing: &dyn Backing, s: &SessionId, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let clock = ticking_clock(10);
    let store = backing.open_with(clock_from(&clock));
    let mut model = Model::default();
    let mut next = 0;
    for op in ops {
        let pick = |model: &Model, ix: &prop::sample::Index| ix.index(model.nodes.len());
        let parent_of = |model: &Model, parent: Option<prop::sample::Index>| {
            if model.nodes.is_empty() {
                None
            } else {
                parent.map(|p| model.nodes[pick(model, &p)].id.clone())
            }
        };
        match op {
            Op::Append { parent, created_at } => {
                let mut n = node(&format!("n{next}"), None, created_at);
                n.parent = parent_of(&model, parent);
                next += 1;
                store.append(s, n.clone()).unwrap();
                model.updated_at = model.updated_at.max(created_at);
                model.head = Some(model.nodes.len());
                model.nodes.push(n);
            }
            Op::Batch { parents, created_at } => {
                let mut batch = Vec::new();
                for parent in parents {
                    let mut n = node(&format!("n{next}"), None, created_at);
                    n.parent = parent_of(&model, parent);
                    next += 1;
                    batch.push(n);
                }
                // Re-sending an existing node is a no-op.
                if let Some(first) = model.nodes.first() {
                    batch.push(first.clone());
                }
                let new = batch.len() - usize::from(!model.nodes.is_empty());
                prop_assert_eq!(store.append_batch(s, batch.clone()).unwrap(), new);
                let had_head = model.head.is_some();
                model.nodes.extend(batch.into_iter().take(new));
                model.updated_at = model.updated_at.max(created_at);
                if !had_head {
                    model.head = Some(model.nodes.len() - 1);
                }
            }
            Op::SetHead(ix) if !model.nodes.is_empty() => {
                let i = pick(&model, &ix);
                store.set_head(s, &model.nodes[i].id).unwrap();
                if model.head != Some(i) {
                    model.updated_at = model.updated_at.max(clock.load(Ordering::SeqCst) - 1);
                    model.head = Some(i);
                }
            }
            Op::Rewind(ix) if !model.nodes.is_empty() => {
                let i = pick(&model, &ix);
                store.rewind(s, &model.nodes[i].id).unwrap();
                if !model.nodes[i].rewound {
                    model.updated_at = model.updated_at.max(clock.load(Ordering::SeqCst) - 1);
                    model.nodes[i].rewound = true;
                }
            }
            Op::Meta(ix, k, v) if !model.nodes.is_empty() => {
                let i = pick(&model, &ix);
                let patch = BTreeMap::from([(format!("k{k}"), format!("v{v}"))]);
                let batch = MetadataBatch::from([(model.nodes[i].id.clone(), patch.clone())]);
                store.merge_metadata(s, &batch).unwrap();
                model.nodes[i].metadata.extend(patch);
            }
            Op::SetHead(_) | Op::Rewind(_) | Op::Meta(..) => {}
        }
        agrees(&*store, s, &model)?;
        agrees(&*backing.open(), s, &model)?;
    }
    Ok(())
}

fn store_agrees_with_a_model(backing: &dyn Backing) {
    let config =
        ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = TestRunner::new(config);
    let case = std::sync::atomic::AtomicUsize::new(0);
    let result = runner.run(&prop::collection::vec(op(), 1..16), |ops| {
        // Each case (and each shrinking step) works on a session of its own.
        let s = sid(&format!("prop-{}", case.fetch_add(1, Ordering::SeqCst)));
        run_ops(backing, &s, ops)
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

/// The speaker, content and metadata a forget must erase, each holding `secret`.
fn with_secrets(mut n: Node, secret: &str) -> Node {
    n.content = format!("{secret} in the content of {}", n.id);
    n.speaker = Some(Speaker { id: "owner/local".into(), display: format!("{secret} speaker") });
    n.metadata = BTreeMap::from([
        ("cwd".to_owned(), format!("/srv/{secret}")),
        ("memory_written_scriptorium".to_owned(), "w-0000abcd".to_owned()),
    ]);
    n
}

fn marks(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// Whether `dump` holds `text` as it is, JSON-escaped, or as the hex of its UTF-8 bytes (a
/// `BYTEA` in a dump).
fn holds(dump: &[u8], text: &str) -> bool {
    let escaped = serde_json::to_string(text).unwrap();
    let forms = [text.to_owned(), escaped[1..escaped.len() - 1].to_owned(), hex(text)];
    forms.iter().any(|form| dump.windows(form.len()).any(|w| w == form.as_bytes()))
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn forget_keeps_the_shape(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    let nodes: Vec<Node> =
        chain("m", None, 1..=4, 100).into_iter().map(|n| with_secrets(n, "secret")).collect();
    store.append_batch(&s, nodes).unwrap();
    store.append(&s, node("b3", Some("m2"), 200)).unwrap();
    let patch = MetadataBatch::from([(
        nid("m2"),
        marks(&[("memory_written_scriptorium:w-0000abcd", "1"), ("note", "secret note")]),
    )]);
    store.merge_metadata(&s, &patch).unwrap();
    store.rewind(&s, &nid("m4")).unwrap();
    store.set_title(&s, Some("A kept title".into())).unwrap();
    let session = store.session(&s).unwrap().unwrap();
    let tips = store.tips(&s).unwrap();
    let before = store.nodes(&s).unwrap();
    let branches: Vec<Vec<String>> = ["m4", "b3"]
        .iter()
        .map(|tip| {
            store.branch(&s, Some(&nid(tip))).unwrap().iter().map(|n| n.id.0.clone()).collect()
        })
        .collect();

    let forgotten = [nid("m2"), nid("m4"), nid("not-in-the-session")];
    assert_eq!(store.forget(&s, &forgotten, false).unwrap(), 2);
    let erased = |old: &Node, metadata: BTreeMap<String, String>| Node {
        speaker: None,
        content: String::new(),
        metadata,
        ..old.clone()
    };
    for view in [store.as_ref(), backing.open().as_ref()] {
        let after = view.nodes(&s).unwrap();
        assert_eq!(ids(&after), ids(&before));
        for (old, new) in before.iter().zip(&after) {
            match old.id.as_str() {
                "m2" => assert_eq!(
                    *new,
                    erased(
                        old,
                        marks(&[
                            ("forgotten", "1"),
                            ("memory_written_scriptorium", "w-0000abcd"),
                            ("memory_written_scriptorium:w-0000abcd", "1"),
                        ])
                    )
                ),
                "m4" => {
                    let kept =
                        marks(&[("forgotten", "1"), ("memory_written_scriptorium", "w-0000abcd")]);
                    assert_eq!(*new, erased(old, kept));
                    assert!(new.rewound && new.is_forgotten());
                }
                _ => assert_eq!(new, old),
            }
        }
        assert_eq!(view.node(&s, &nid("m2")).unwrap().as_ref(), after.get(1));
        assert_eq!(view.session(&s).unwrap().unwrap(), session, "head, time and title stay");
        assert_eq!(view.tips(&s).unwrap(), tips);
        for (tip, branch) in ["m4", "b3"].iter().zip(&branches) {
            assert_eq!(ids(&view.branch(&s, Some(&nid(tip))).unwrap()), *branch);
        }
        assert!(view.problems().is_empty(), "{:?}", view.problems());
    }
    // Idempotent, from any store.
    assert_eq!(store.forget(&s, &forgotten, false).unwrap(), 0);
    assert_eq!(backing.open().forget(&s, &[nid("m2")], false).unwrap(), 0);
    assert_eq!(store.forget(&s, &[], false).unwrap(), 0);
    // A forgotten node is marked like any other, and keeps the mark; a key that is no marker,
    // merged after the forget, goes with the next one.
    let mark = MetadataBatch::from([(nid("m2"), marks(&[("memory_written_scriptorium", "w-2")]))]);
    store.merge_metadata(&s, &mark).unwrap();
    assert_eq!(store.forget(&s, &[nid("m2")], false).unwrap(), 0);
    store.merge_metadata(&s, &mark_patch(&["m2"], "later", "secret")).unwrap();
    assert_eq!(store.forget(&s, &[nid("m2")], false).unwrap(), 1);
    let m2 = backing.open().node(&s, &nid("m2")).unwrap().unwrap();
    assert_eq!(m2.metadata.get("memory_written_scriptorium").map(String::as_str), Some("w-2"));
    assert!(!m2.metadata.contains_key("later"), "{:?}", m2.metadata);
    assert!(matches!(
        store.forget(&sid("none"), &[nid("m1")], true),
        Err(Error::SessionNotFound(_))
    ));
}

fn forget_erases_every_title(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    store.append_batch(&s, chain("m", None, 1..=2, 100)).unwrap();
    let other = sid("other");
    store.append(&other, node("m1", None, 50)).unwrap();
    store.set_title(&other, Some("Another title".into())).unwrap();
    let all = Page { offset: 0, limit: 10 };
    for title in ["A first title", "A second title"] {
        store.set_title(&s, Some(title.into())).unwrap();
        // Listed by another store: the listing's cache learns the title.
        backing.open().list_sessions(all).unwrap();
    }
    let updated_at = store.session(&s).unwrap().unwrap().updated_at;
    assert_eq!(store.forget(&s, &[], true).unwrap(), 0, "no node changed");
    for view in [store.as_ref(), backing.open().as_ref()] {
        let session = view.session(&s).unwrap().unwrap();
        assert_eq!((session.title, session.updated_at), (None, updated_at));
        let listed = view.list_sessions(all).unwrap();
        let titles: Vec<Option<&str>> = listed.iter().map(|s| s.title.as_deref()).collect();
        assert_eq!(titles, [None, Some("Another title")]);
        assert_eq!(
            view.node(&s, &nid("m1")).unwrap().unwrap().content,
            "content of m1\nsecond line"
        );
    }
    for title in ["A first title", "A second title"] {
        assert!(!holds(&backing.dump(), title), "{title} is still in the store");
    }
    assert!(holds(&backing.dump(), "Another title"));
    assert_eq!(store.forget(&s, &[], true).unwrap(), 0);
    // A title set after the forget is an ordinary title.
    store.set_title(&s, Some("A new title".into())).unwrap();
    assert_eq!(store.forget(&s, &[nid("m1")], true).unwrap(), 1);
    assert_eq!(backing.open().session(&s).unwrap().unwrap().title, None);
}

fn forget_leaves_no_byte(backing: &dyn Backing) {
    let store = backing.open();
    let (s, kept) = (sid("s"), sid("kept"));
    // The secret in every place a node carries it, in a batch and in single appends, in a
    // metadata patch, and in titles.
    let nodes: Vec<Node> =
        chain("m", None, 1..=3, 100).into_iter().map(|n| with_secrets(n, "Zanzibar")).collect();
    store.append_batch(&s, nodes).unwrap();
    store.append(&s, with_secrets(node("m4", Some("m3"), 104), "Zanzibar")).unwrap();
    store.append(&s, with_secrets(node("m5", Some("m4"), 105), "Kept")).unwrap();
    let notes = MetadataBatch::from([
        (nid("m2"), marks(&[("note", "Zanzibar note")])),
        (nid("m5"), marks(&[("note", "Kept note")])),
    ]);
    store.merge_metadata(&s, &notes).unwrap();
    store.set_title(&s, Some("Trip to Zanzibar".into())).unwrap();
    backing.open().list_sessions(Page { offset: 0, limit: 10 }).unwrap();
    store.set_title(&s, Some("More on Zanzibar".into())).unwrap();
    store.append(&kept, with_secrets(node("k1", None, 1), "Kept")).unwrap();
    backing.open().list_sessions(Page { offset: 0, limit: 10 }).unwrap();
    let texts = [
        "Zanzibar in the content of m1",
        "Zanzibar in the content of m4",
        "Zanzibar speaker",
        "/srv/Zanzibar",
        "Zanzibar note",
        "Trip to Zanzibar",
        "More on Zanzibar",
    ];
    // (The first title is superseded: a database dump no longer holds it, a log does.)
    for text in texts.iter().filter(|t| !t.starts_with("Trip")) {
        assert!(holds(&backing.dump(), text), "{text} is in the store before the forget");
    }
    let forgotten: Vec<NodeId> = ["m1", "m2", "m3", "m4"].map(nid).to_vec();
    assert_eq!(store.forget(&s, &forgotten, true).unwrap(), 4);
    let dump = backing.dump();
    for text in texts {
        assert!(!holds(&dump, text), "{text} is still in the store");
    }
    assert!(holds(&dump, "Kept in the content of m5") && holds(&dump, "Kept in the content of k1"));
    // m5's half of the patch stays: it was not forgotten.
    assert_eq!(store.node(&s, &nid("m5")).unwrap().unwrap().metadata["note"], "Kept note");
    let reopened = backing.open();
    assert_eq!(ids(&reopened.branch(&s, None).unwrap()), ["m1", "m2", "m3", "m4", "m5"]);
    assert!(reopened.problems().is_empty(), "{:?}", reopened.problems());
}

fn forgotten_stays_forgotten(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    assert_eq!(store.forget(&s, &[nid("m2")], false).unwrap(), 1);
    // The transcript imported again, then grown: only the new node is appended.
    assert_eq!(store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap(), 0);
    assert_eq!(store.append_batch(&s, chain("m", None, 1..=4, 100)).unwrap(), 1);
    let err = store.append(&s, node("m2", Some("m1"), 102)).unwrap_err();
    assert!(matches!(err, Error::DuplicateNode { .. }), "{err}");
    for view in [store.as_ref(), backing.open().as_ref()] {
        let m2 = view.node(&s, &nid("m2")).unwrap().unwrap();
        assert!(m2.content.is_empty() && m2.is_forgotten(), "{m2:?}");
        assert_eq!(ids(&view.branch(&s, None).unwrap()), ["m1", "m2", "m3"]);
        assert_eq!(ids(&view.branch(&s, Some(&nid("m4"))).unwrap()), ["m1", "m2", "m3", "m4"]);
    }
}

fn other_stores_see_a_forget(backing: &dyn Backing) {
    let s = sid("s");
    let a = backing.open();
    let b = backing.open();
    a.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    assert_eq!(a.branch(&s, None).unwrap().len(), 3, "a has read the session");
    assert_eq!(b.forget(&s, &[nid("m2")], false).unwrap(), 1);
    // a reads what b left, and its next writes go where b's forget put the session.
    assert_eq!(a.branch(&s, None).unwrap()[1].content, "");
    b.append(&s, node("m4", Some("m3"), 104)).unwrap();
    a.append(&s, node("m5", Some("m4"), 105)).unwrap();
    assert_eq!(b.forget(&s, &[nid("m3")], false).unwrap(), 1);
    a.merge_metadata(&s, &mark_patch(&["m3", "m5"], "memory_written_scriptorium", "w-1")).unwrap();
    let c = backing.open();
    let branch = c.branch(&s, None).unwrap();
    assert_eq!(ids(&branch), ["m1", "m2", "m3", "m4", "m5"]);
    let contents: Vec<&str> = branch.iter().map(|n| n.content.as_str()).collect();
    let full = |id| format!("content of {id}\nsecond line");
    assert_eq!(contents, [full("m1"), String::new(), String::new(), full("m4"), full("m5")]);
    assert!(branch[2].is_forgotten() && branch[2].metadata["memory_written_scriptorium"] == "w-1");
    for view in [a.as_ref(), b.as_ref(), c.as_ref()] {
        assert_eq!(view.branch(&s, None).unwrap(), branch);
        assert!(view.problems().is_empty(), "{:?}", view.problems());
    }
}

/// Writers append and mark while another forgets, each through its own store: nothing appended
/// or marked is lost, everything forgotten is erased, and no store reads a mixed log.
fn concurrent_forgets_lose_nothing(backing: &dyn Backing) {
    let s = sid("busy");
    let setup = backing.open();
    setup.append_batch(&s, chain("m", None, 1..=20, 0)).unwrap();
    setup.set_title(&s, Some("A busy session".into())).unwrap();
    std::thread::scope(|scope| {
        for t in 0..3 {
            let s = s.clone();
            scope.spawn(move || {
                let store = backing.open();
                for i in 0..15 {
                    let own = format!("t{t}-{i}");
                    store.append(&s, node(&own, Some("m20"), 1)).unwrap();
                    store.merge_metadata(&s, &mark_patch(&[&own], "mine", &own)).unwrap();
                    assert_eq!(store.branch(&s, Some(&nid(&own))).unwrap().len(), 21);
                }
            });
        }
        let s = s.clone();
        scope.spawn(move || {
            let store = backing.open();
            for i in 1..=20 {
                let erase_title = i % 5 == 0;
                assert_eq!(store.forget(&s, &[nid(&format!("m{i}"))], erase_title).unwrap(), 1);
            }
        });
    });
    let store = backing.open();
    assert_eq!(store.tips(&s).unwrap().len(), 45);
    for i in 1..=20 {
        let n = store.node(&s, &nid(&format!("m{i}"))).unwrap().unwrap();
        assert!(n.content.is_empty() && n.is_forgotten(), "{n:?}");
    }
    for t in 0..3 {
        for i in 0..15 {
            let own = format!("t{t}-{i}");
            let n = store.node(&s, &nid(&own)).unwrap().unwrap();
            assert_eq!((n.content, n.metadata.get("mine")), (full_content(&own), Some(&own)));
        }
    }
    assert_eq!(store.session(&s).unwrap().unwrap().title, None);
    assert!(store.problems().is_empty(), "{:?}", store.problems());
}

fn full_content(id: &str) -> String {
    format!("content of {id}\nsecond line")
}

/// A real Claude Code transcript imported, its every other message forgotten with the title,
/// and imported again: nothing comes back, nothing is added, and the forgotten texts are in no
/// byte of the store.
/// The first real Claude Code transcript (in path order) with one session of a few dozen
/// messages.
fn real_transcript(data: &Path) -> (import::Unit, SessionId) {
    let (mut units, errors) = import::discover(
        Format::ClaudeCode,
        &[data.join(scriptorium_testkit::REAL_TRANSCRIPTS[0])],
    );
    assert!(errors.is_empty(), "{errors:?}");
    units.sort_by(|a, b| a.first_path().cmp(b.first_path()));
    units
        .into_iter()
        .find_map(|unit| {
            let parsed = unit.parse().ok()?;
            let [only] = &parsed.sessions[..] else { return None };
            let messages = only.nodes.iter().filter(|n| n.kind == NodeKind::Message).count();
            let id = only.id.clone();
            (20..400).contains(&messages).then_some((unit, id))
        })
        .expect("a real transcript of one session")
}

fn reimport_after_forget(backing: &dyn Backing, data: &Path) {
    let store = backing.open();
    let (unit, session) = real_transcript(data);
    let unit = &unit;
    let first = import::import_unit(store.as_ref(), unit).unwrap();
    assert_eq!(first.sessions.len(), 1);
    let title = store.session(&session).unwrap().unwrap().title.expect("an imported title");
    let before = store.nodes(&session).unwrap();
    let forgotten: BTreeSet<NodeId> = before
        .iter()
        .filter(|n| n.kind == NodeKind::Message && !n.content.is_empty())
        .step_by(2)
        .map(|n| n.id.clone())
        .collect();
    let ids: Vec<NodeId> = forgotten.iter().cloned().collect();
    assert_eq!(store.forget(&session, &ids, true).unwrap(), forgotten.len());

    let again = import::import_unit(store.as_ref(), unit).unwrap();
    assert_eq!(again.sessions[0].new_nodes, 0, "{again:?}");
    for view in [store.as_ref(), backing.open().as_ref()] {
        let after = view.nodes(&session).unwrap();
        assert_eq!(after.len(), before.len());
        for (old, new) in before.iter().zip(&after) {
            if forgotten.contains(&old.id) {
                assert_eq!(*new, old.forgotten());
            } else {
                assert_eq!(new, old);
            }
        }
        assert_eq!(view.session(&session).unwrap().unwrap().title, None, "the title stays gone");
    }
    // No byte of a forgotten message is left (the long ones: a short one may be a word that
    // another message, or a key of the format, holds too).
    let dump = backing.dump();
    let kept: Vec<&str> =
        before.iter().filter(|n| !forgotten.contains(&n.id)).map(|n| n.content.as_str()).collect();
    let mut checked = 0;
    for node in before.iter().filter(|n| forgotten.contains(&n.id) && n.content.len() >= 40) {
        if kept.iter().any(|k| k.contains(&node.content)) {
            continue;
        }
        assert!(!holds(&dump, &node.content), "{} is still in the store", node.id);
        checked += 1;
    }
    assert!(checked > 0, "no long forgotten message to look for");
    if title.len() >= 12 && !kept.iter().any(|k| k.contains(&title)) {
        assert!(!holds(&dump, &title), "the title {title:?} is still in the store");
    }
}

/// A secret planted in texts: nothing else of the tests holds it.
const SECRET: &str = "Zanzibar-7f3a";
/// What the tests' map puts in its place.
const MARKER: &str = "[REDACTED:test]";

/// The tests' map: [`SECRET`] replaced by [`MARKER`], `None` where there is none (idempotent).
fn redact(text: &str) -> Option<String> {
    text.contains(SECRET).then(|| text.replace(SECRET, MARKER))
}

fn with_secret(n: Node) -> Node {
    Node { content: format!("pay with {SECRET}, said {}", n.id), ..n }
}

fn rewrite_keeps_the_shape(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    // The secret in contents, and where a rewrite of texts does not look: the speaker, the
    // metadata and the project keep it.
    let nodes: Vec<Node> = chain("m", None, 1..=4, 100)
        .into_iter()
        .map(|n| with_secrets(n, SECRET))
        .chain([node("b3", Some("m2"), 200), with_secrets(node("e5", Some("m4"), 300), SECRET)])
        .collect();
    store.append_batch(&s, nodes).unwrap();
    let patch = MetadataBatch::from([(
        nid("m2"),
        marks(&[("memory_written_scriptorium:w-0000abcd", "1"), ("note", "Zanzibar-7f3a note")]),
    )]);
    store.merge_metadata(&s, &patch).unwrap();
    store.rewind(&s, &nid("m4")).unwrap();
    store.set_head(&s, &nid("b3")).unwrap();
    store.set_title(&s, Some(format!("Trip to {SECRET}"))).unwrap();
    store.set_project(&s, Some(format!("/srv/{SECRET}"))).unwrap();
    assert_eq!(store.forget(&s, &[nid("e5")], false).unwrap(), 1);
    let session = store.session(&s).unwrap().unwrap();
    let tips = store.tips(&s).unwrap();
    let before = store.nodes(&s).unwrap();
    let branches: Vec<Vec<Node>> =
        tips.iter().map(|tip| store.branch(&s, Some(tip)).unwrap()).collect();

    let mut seen = Vec::new();
    let mut map = |text: &str| {
        seen.push(text.to_owned());
        redact(text)
    };
    assert_eq!(store.rewrite_texts(&s, &mut map).unwrap(), 4 + 1, "m1–m4 and the title");
    // Every non-empty content and the title, nothing else (no empty text: e5 was forgotten).
    seen.sort();
    seen.dedup();
    let mut texts: Vec<String> = before.iter().map(|n| n.content.clone()).collect();
    texts.push(format!("Trip to {SECRET}"));
    texts.retain(|t| !t.is_empty());
    texts.sort();
    assert_eq!(seen, texts);

    let mapped = |old: &Node| Node { content: redact(&old.content).unwrap(), ..old.clone() };
    let title = Some(format!("Trip to {MARKER}"));
    for view in [store.as_ref(), backing.open().as_ref()] {
        let after = view.nodes(&s).unwrap();
        assert_eq!(ids(&after), ids(&before));
        for (old, new) in before.iter().zip(&after) {
            if old.content.contains(SECRET) {
                assert_eq!(*new, mapped(old));
            } else {
                assert_eq!(new, old);
            }
        }
        assert_eq!(view.node(&s, &nid("m2")).unwrap().as_ref(), after.get(1));
        assert!(after[5].is_forgotten() && after[5].content.is_empty(), "{:?}", after[5]);
        let expected = Session { title: title.clone(), ..session.clone() };
        assert_eq!(view.session(&s).unwrap().unwrap(), expected, "only the title changed");
        assert_eq!(view.list_sessions(Page { offset: 0, limit: 10 }).unwrap(), [expected]);
        assert_eq!(view.tips(&s).unwrap(), tips);
        for (tip, branch) in tips.iter().zip(&branches) {
            let ids_before: Vec<&str> = ids(branch);
            assert_eq!(ids(&view.branch(&s, Some(tip)).unwrap()), ids_before);
        }
        assert!(view.problems().is_empty(), "{:?}", view.problems());
    }
    assert!(matches!(
        store.rewrite_texts(&sid("none"), &mut redact),
        Err(Error::SessionNotFound(_))
    ));
}

fn rewrite_leaves_no_byte(backing: &dyn Backing) {
    let store = backing.open();
    let (s, kept) = (sid("s"), sid("kept"));
    // The secret in a batch and in single appends, long (stored out of line by PostgreSQL)
    // and short, and in titles, one superseded; the listing caches see the titles.
    let long = format!("{} {SECRET} at the end", "a long text ".repeat(2_000));
    let mut nodes: Vec<Node> = chain("m", None, 1..=3, 100).into_iter().map(with_secret).collect();
    nodes[1].content = long.clone();
    store.append_batch(&s, nodes).unwrap();
    store.append(&s, with_secret(node("m4", Some("m3"), 104))).unwrap();
    store.append(&s, node("m5", Some("m4"), 105)).unwrap();
    store.set_title(&s, Some(format!("Trip to {SECRET}"))).unwrap();
    backing.open().list_sessions(Page { offset: 0, limit: 10 }).unwrap();
    store.set_title(&s, Some(format!("More on {SECRET}"))).unwrap();
    store.append(&kept, node("k1", None, 1)).unwrap();
    backing.open().list_sessions(Page { offset: 0, limit: 10 }).unwrap();
    let dump = backing.dump();
    assert!(holds(&dump, &format!("pay with {SECRET}, said m4")), "planted");
    assert!(holds(&dump, &format!("More on {SECRET}")), "planted");

    assert_eq!(store.rewrite_texts(&s, &mut redact).unwrap(), 4 + 1);
    let dump = backing.dump();
    assert!(!holds(&dump, SECRET), "the secret is still in the store");
    assert!(holds(&dump, &format!("pay with {MARKER}, said m4")));
    assert!(holds(&dump, &format!("More on {MARKER}")));
    assert!(holds(&dump, &full_content("m5")) && holds(&dump, &full_content("k1")));
    let reopened = backing.open();
    assert_eq!(reopened.node(&s, &nid("m2")).unwrap().unwrap().content, redact(&long).unwrap());
    assert_eq!(ids(&reopened.branch(&s, None).unwrap()), ["m1", "m2", "m3", "m4", "m5"]);
    assert!(reopened.problems().is_empty(), "{:?}", reopened.problems());
}

fn rewrite_is_idempotent(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    let nodes: Vec<Node> = chain("m", None, 1..=3, 100).into_iter().map(with_secret).collect();
    store.append_batch(&s, nodes).unwrap();
    store.set_title(&s, Some(format!("About {SECRET}"))).unwrap();
    assert_eq!(store.rewrite_texts(&s, &mut redact).unwrap(), 3 + 1);
    let dump = backing.dump();
    let session = store.session(&s).unwrap();
    assert_eq!(store.rewrite_texts(&s, &mut redact).unwrap(), 0);
    assert_eq!(backing.open().rewrite_texts(&s, &mut redact).unwrap(), 0);
    // A map that gives every text back as it is, or keeps every one, changes nothing either.
    assert_eq!(store.rewrite_texts(&s, &mut |text: &str| Some(text.to_owned())).unwrap(), 0);
    assert_eq!(store.rewrite_texts(&s, &mut |_: &str| None).unwrap(), 0);
    assert!(backing.dump() == dump, "a rewrite that changes nothing writes nothing");
    assert_eq!(backing.open().session(&s).unwrap(), session);
}

fn rewrite_title_only(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    store.append_batch(&s, chain("m", None, 1..=3, 100)).unwrap();
    store.set_title(&s, Some(format!("Passwords for {SECRET}"))).unwrap();
    let all = Page { offset: 0, limit: 10 };
    backing.open().list_sessions(all).unwrap();
    let before = store.nodes(&s).unwrap();
    let session = store.session(&s).unwrap().unwrap();

    assert_eq!(store.rewrite_texts(&s, &mut redact).unwrap(), 1, "the title alone");
    let expected = Session { title: Some(format!("Passwords for {MARKER}")), ..session };
    for view in [store.as_ref(), backing.open().as_ref()] {
        assert_eq!(view.nodes(&s).unwrap(), before);
        assert_eq!(view.session(&s).unwrap().unwrap(), expected);
        assert_eq!(view.list_sessions(all).unwrap(), std::slice::from_ref(&expected));
    }
    assert!(!holds(&backing.dump(), SECRET));
    assert_eq!(store.rewrite_texts(&s, &mut redact).unwrap(), 0);
}

/// A transcript imported before redaction existed, its texts rewritten, then imported again
/// by a caller that maps what it imports as the rewrite did (its intake redacts): nothing is
/// added or written, and a grown transcript adds only its new node.
fn reimport_after_rewrite(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("imported");
    let transcript = |upto: u32| {
        let mut nodes = chain("m", None, 1..=upto, 100);
        for n in nodes.iter_mut().filter(|n| ["m2", "m3"].contains(&n.id.as_str())) {
            *n = with_secret(n.clone());
        }
        let head = nodes.last().map(|n| n.id.clone());
        let session = ParsedSession {
            id: s.clone(),
            title: Some(format!("Deploy with {SECRET}")),
            fallback_title: Some(format!("first line {SECRET}")),
            nodes,
            head,
            branches: 1,
        };
        Parsed { sessions: vec![session], ..Parsed::default() }
    };
    let mapped = |mut parsed: Parsed| {
        for session in &mut parsed.sessions {
            for n in &mut session.nodes {
                n.content = redact(&n.content).unwrap_or_else(|| n.content.clone());
            }
            for text in [&mut session.title, &mut session.fallback_title].into_iter().flatten() {
                *text = redact(text).unwrap_or_else(|| text.clone());
            }
        }
        parsed
    };
    let path = Path::new("transcript.jsonl");
    import::import_into(store.as_ref(), transcript(4), path).unwrap();
    assert_eq!(store.rewrite_texts(&s, &mut redact).unwrap(), 2 + 1);
    let dump = backing.dump();
    let nodes = store.nodes(&s).unwrap();

    let again = import::import_into(store.as_ref(), mapped(transcript(4)), path).unwrap();
    assert_eq!(again.new_nodes(), 0, "{again:?}");
    assert_eq!(again.sessions[0].title, Some(format!("Deploy with {MARKER}")));
    assert!(backing.dump() == dump, "the import wrote nothing");
    let grown = import::import_into(store.as_ref(), mapped(transcript(5)), path).unwrap();
    assert_eq!(grown.new_nodes(), 1, "{grown:?}");
    for view in [store.as_ref(), backing.open().as_ref()] {
        let after = view.nodes(&s).unwrap();
        assert_eq!(after[..4], nodes[..]);
        assert_eq!(ids(&after), ["m1", "m2", "m3", "m4", "m5"]);
        assert_eq!(view.session(&s).unwrap().unwrap().head, Some(nid("m5")), "as imported");
    }
    assert!(!holds(&backing.dump(), SECRET));
}

/// `map` runs inside the store's critical section (under the session's lock, in PostgreSQL
/// inside the transaction): when it panics, nothing is written, and the store goes on working.
fn a_map_that_panics(backing: &dyn Backing) {
    let store = backing.open();
    let s = sid("s");
    let nodes: Vec<Node> = chain("m", None, 1..=3, 100).into_iter().map(with_secret).collect();
    store.append_batch(&s, nodes).unwrap();
    let before = store.nodes(&s).unwrap();
    let dump = backing.dump();
    let mut calls = 0;
    let mut failing = |text: &str| {
        calls += 1;
        assert!(calls < 2, "the map fails on its second text");
        redact(text)
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.rewrite_texts(&s, &mut failing).unwrap();
    }));
    assert!(outcome.is_err(), "the panic reached the caller");
    assert!(backing.dump() == dump, "nothing was written");
    assert_eq!(store.nodes(&s).unwrap(), before);
    assert_eq!(store.rewrite_texts(&s, &mut redact).unwrap(), 3);
    assert!(!holds(&backing.dump(), SECRET));
    store.append(&s, node("m4", Some("m3"), 104)).unwrap();
    assert_eq!(ids(&backing.open().branch(&s, None).unwrap()), ["m1", "m2", "m3", "m4"]);
}

/// Writers append and mark while another rewrites texts, each through its own store: nothing
/// appended or marked is lost, every rewrite lands, and no store reads a mixed log.
fn concurrent_rewrites_lose_nothing(backing: &dyn Backing) {
    let s = sid("busy");
    let setup = backing.open();
    setup.append_batch(&s, chain("m", None, 1..=20, 0)).unwrap();
    setup.set_title(&s, Some("A busy session".into())).unwrap();
    std::thread::scope(|scope| {
        for t in 0..3 {
            let s = s.clone();
            scope.spawn(move || {
                let store = backing.open();
                for i in 0..15 {
                    let own = format!("t{t}-{i}");
                    store.append(&s, node(&own, Some("m20"), 1)).unwrap();
                    store.merge_metadata(&s, &mark_patch(&[&own], "mine", &own)).unwrap();
                    assert_eq!(store.branch(&s, Some(&nid(&own))).unwrap().len(), 21);
                }
            });
        }
        let s = s.clone();
        scope.spawn(move || {
            let store = backing.open();
            for i in 1..=20 {
                let target = full_content(&format!("m{i}"));
                let retitle = i % 5 == 0;
                let mut map = |text: &str| {
                    if text == target {
                        Some(format!("rewritten m{i}"))
                    } else if retitle && text.starts_with("A busy session") {
                        Some(format!("A busy session, pass {i}"))
                    } else {
                        None
                    }
                };
                let changed = store.rewrite_texts(&s, &mut map).unwrap();
                assert_eq!(changed, 1 + usize::from(retitle));
            }
        });
    });
    let store = backing.open();
    assert_eq!(store.tips(&s).unwrap().len(), 45);
    for i in 1..=20 {
        let n = store.node(&s, &nid(&format!("m{i}"))).unwrap().unwrap();
        assert_eq!(n.content, format!("rewritten m{i}"));
    }
    for t in 0..3 {
        for i in 0..15 {
            let own = format!("t{t}-{i}");
            let n = store.node(&s, &nid(&own)).unwrap().unwrap();
            assert_eq!((n.content, n.metadata.get("mine")), (full_content(&own), Some(&own)));
        }
    }
    let title = store.session(&s).unwrap().unwrap().title;
    assert_eq!(title.as_deref(), Some("A busy session, pass 20"));
    assert!(store.problems().is_empty(), "{:?}", store.problems());
}

/// A real Claude Code transcript imported, every text holding an `e` rewritten (each `e` made
/// a `3`), then imported again mapped the same way: nothing is added or written, only the
/// mapped texts changed, and no byte of a rewritten text is left in the store.
fn reimport_real_after_rewrite(backing: &dyn Backing, data: &Path) {
    let mut map = |text: &str| text.contains('e').then(|| text.replace('e', "3"));
    let store = backing.open();
    let (unit, session) = real_transcript(data);
    import::import_unit(store.as_ref(), &unit).unwrap();
    let title = store.session(&session).unwrap().unwrap().title.expect("an imported title");
    let before = store.nodes(&session).unwrap();
    let expected = before.iter().filter(|n| n.content.contains('e')).count();
    let changed = store.rewrite_texts(&session, &mut map).unwrap();
    assert_eq!(changed, expected + usize::from(title.contains('e')));
    assert!(changed > 10, "a real transcript has texts with an `e`: {changed}");
    for view in [store.as_ref(), backing.open().as_ref()] {
        let after = view.nodes(&session).unwrap();
        assert_eq!(after.len(), before.len());
        for (old, new) in before.iter().zip(&after) {
            let content = map(&old.content).unwrap_or_else(|| old.content.clone());
            assert_eq!(*new, Node { content, ..old.clone() });
        }
        let stored = view.session(&session).unwrap().unwrap().title;
        assert_eq!(stored, Some(map(&title).unwrap_or_else(|| title.clone())));
    }
    let dump = backing.dump();

    let mut parsed = unit.parse().unwrap();
    for parsed_session in &mut parsed.sessions {
        for n in &mut parsed_session.nodes {
            n.content = map(&n.content).unwrap_or_else(|| n.content.clone());
        }
        let titles = [&mut parsed_session.title, &mut parsed_session.fallback_title];
        for text in titles.into_iter().flatten() {
            *text = map(text).unwrap_or_else(|| text.clone());
        }
    }
    let again = import::import_into(store.as_ref(), parsed, unit.first_path()).unwrap();
    assert_eq!(again.new_nodes(), 0, "{again:?}");
    assert!(backing.dump() == dump, "the import wrote nothing");
    // No byte of a rewritten text is left (the long ones, which no metadata value holds: the
    // importers copy some texts into metadata, which a rewrite leaves alone).
    let in_metadata = |text: &str| {
        before.iter().any(|n| n.metadata.values().any(|v| v.contains(text)))
            || a_speaker_holds(&before, text)
    };
    let mut checked = 0;
    for old in before.iter().filter(|n| n.content.contains('e') && n.content.len() >= 40) {
        if in_metadata(&old.content) {
            continue;
        }
        assert!(!holds(&dump, &old.content), "{} is still in the store", old.id);
        checked += 1;
        if checked == 40 {
            break;
        }
    }
    assert!(checked > 0, "no long rewritten text to look for");
    if title.contains('e') && title.len() >= 12 {
        assert!(!holds(&dump, &title), "the title {title:?} is still in the store");
    }
}

/// Whether a speaker's display name of `nodes` holds `text`.
fn a_speaker_holds(nodes: &[Node], text: &str) -> bool {
    nodes.iter().filter_map(|n| n.speaker.as_ref()).any(|s| s.display.contains(text))
}
