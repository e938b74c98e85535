//! The pending walk, records and marking: the reference's fork cases and cost bounds.

use scriptorium_markers::{
    Error, MARKER_KEY, WorkspaceId, first_batch, is_marked, mark, pending, records,
};
use scriptorium_session_dag::{EmbeddedStore, NodeKind, Role, SessionStore};

use crate::support::{Counting, chain, ids, msg, nid, sid, ws};

fn mark_branch(store: &EmbeddedStore, s: &scriptorium_session_dag::SessionId, tip: &str) {
    let branch = store.branch(s, Some(&nid(tip))).unwrap();
    mark(store, s, &branch, &ws()).unwrap();
}

#[test]
fn design_fork_case_a_branch_off_a_written_trunk_is_pending_from_the_fork() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "m", None, 1..=9, 1);
    mark_branch(&store, &s, "m9");
    store.set_head(&s, &nid("m3")).unwrap();
    chain(&store, &s, "b", Some("m3"), 4..=9, 2);
    let on_branch = pending(&store, &s, None, &ws()).unwrap();
    // The old position cursor ("9 written") offered 0 turns here.
    assert_eq!(ids(&on_branch), ["b4", "b5", "b6", "b7", "b8", "b9"]);
    assert!(pending(&store, &s, Some(&nid("m9")), &ws()).unwrap().is_empty());
}

#[test]
fn reference_fork_case_two_and_eight_turns() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "m", None, 1..=3, 1);
    mark_branch(&store, &s, "m3");
    let a = chain(&store, &s, "short-", Some("m3"), 1..=2, 2);
    let b = chain(&store, &s, "long-", Some("m3"), 1..=8, 3);
    assert_eq!(ids(&pending(&store, &s, Some(&nid(&a)), &ws()).unwrap()), ["short-1", "short-2"]);
    let long = pending(&store, &s, Some(&nid(&b)), &ws()).unwrap();
    assert_eq!(long.len(), 8);
    assert_eq!(long[0].id, nid("long-1"));
}

#[test]
fn a_marker_of_another_workspace_or_a_corrupt_one_reads_as_unmarked() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "m", None, 1..=3, 1);
    for (node, value) in [("m1", "w-deadbeef"), ("m2", "garbage \u{0}"), ("m3", "")] {
        let patch = [(nid(node), [(MARKER_KEY.to_owned(), value.to_owned())].into())].into();
        store.merge_metadata(&s, &patch).unwrap();
    }
    assert_eq!(ids(&pending(&store, &s, None, &ws()).unwrap()), ["m1", "m2", "m3"]);
    let other = WorkspaceId::parse("w-deadbeef").unwrap();
    assert_eq!(ids(&pending(&store, &s, None, &other).unwrap()), ["m2", "m3"]);
}

#[test]
fn two_workspaces_sharing_a_store_each_keep_their_mark() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "m", None, 1..=3, 1);
    let other = WorkspaceId::parse("w-deadbeef").unwrap();
    let branch = store.branch(&s, Some(&nid("m3"))).unwrap();
    mark(&store, &s, &branch, &ws()).unwrap();
    // The other clone marks last: the shared key now names it, and the first keeps its own.
    mark(&store, &s, &branch, &other).unwrap();
    assert!(pending(&store, &s, None, &ws()).unwrap().is_empty());
    assert!(pending(&store, &s, None, &other).unwrap().is_empty());
    let node = store.node(&s, &nid("m3")).unwrap().unwrap();
    assert!(is_marked(&node, &ws()) && is_marked(&node, &other));
    assert_eq!(node.metadata[MARKER_KEY], "w-deadbeef");
}

#[test]
fn only_user_and_assistant_messages_with_content_are_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    let mut parent: Option<String> = None;
    let cases = [
        ("u1", Role::User, NodeKind::Message, "my garden is in Leeds", true),
        ("cmd", Role::User, NodeKind::Message, "<command-name>/clear</command-name>", false),
        ("ack", Role::User, NodeKind::Message, "ok", false),
        ("call", Role::Assistant, NodeKind::ToolCall, "{\"cmd\":\"ls\"}", false),
        ("result", Role::Tool, NodeKind::ToolResult, "a.txt", false),
        ("job", Role::User, NodeKind::Runtime, "sub-agent report", false),
        ("summary", Role::User, NodeKind::CompactionSummary, "earlier: …", false),
        ("sys", Role::System, NodeKind::Message, "be brief", false),
        ("blank", Role::Assistant, NodeKind::Message, " \n\t ", false),
        ("a1", Role::Assistant, NodeKind::Message, "  noted: Leeds  ", true),
    ];
    for (i, (id, role, kind, content, _)) in cases.iter().enumerate() {
        let mut node = msg(id, parent.as_deref(), content, i64::try_from(i).unwrap());
        node.role = *role;
        node.kind = *kind;
        store.append(&s, node).unwrap();
        parent = Some((*id).to_owned());
    }
    let branch = store.branch(&s, None).unwrap();
    let expected: Vec<&str> = cases.iter().filter(|c| c.4).map(|c| c.0).collect();
    assert_eq!(records(&branch).iter().map(|n| n.id.as_str()).collect::<Vec<_>>(), expected);
    let owed = pending(&store, &s, None, &ws()).unwrap();
    assert_eq!(ids(&owed), expected);
    // Pending records carry the text they are recorded with (trimmed here).
    assert_eq!(owed[1].content, "noted: Leeds");
}

#[test]
fn status_counts_two_pending_turns_around_a_runtime_row() {
    // {u1 marked, a1 unmarked} + {u2, runtime row} → 2 pending.
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    store.append(&s, msg("u1", None, "question", 1)).unwrap();
    store.append(&s, msg("a1", Some("u1"), "answer", 2)).unwrap();
    store.append(&s, msg("u2", Some("a1"), "follow-up", 3)).unwrap();
    let mut runtime = msg("job", Some("u2"), "job follow-up", 4);
    runtime.kind = NodeKind::Runtime;
    store.append(&s, runtime).unwrap();
    let u1 = store.node(&s, &nid("u1")).unwrap().unwrap();
    mark(&store, &s, &[u1], &ws()).unwrap();
    assert_eq!(ids(&pending(&store, &s, None, &ws()).unwrap()), ["a1", "u2"]);
}

#[test]
fn mark_marks_exactly_the_batch_and_keeps_updated_at() {
    // 4 turns of 4 chars, threshold 8 with a length counter.
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    store.append(&s, msg("t1", None, "abcd", 1)).unwrap();
    for i in 2..=4 {
        let node = msg(&format!("t{i}"), Some(&format!("t{}", i - 1)), "abcd", i);
        store.append(&s, node).unwrap();
    }
    let before = store.session(&s).unwrap().unwrap();
    let owed = pending(&store, &s, None, &ws()).unwrap();
    let counter = |text: &str| text.chars().count();
    let batch = first_batch(&owed, 8, &counter);
    assert_eq!(ids(batch), ["t1", "t2"]);
    mark(&store, &s, batch, &ws()).unwrap();
    let marks: Vec<bool> =
        store.branch(&s, None).unwrap().iter().map(|n| is_marked(n, &ws())).collect();
    assert_eq!(marks, [true, true, false, false]);
    assert_eq!(store.session(&s).unwrap().unwrap(), before, "marking keeps updated_at");
    assert_eq!(first_batch(&owed, 1000, &counter).len(), 4, "never reached: all of it");
    // A fresh store (another reader) sees the marks; marking the same batch again is a no-op.
    let reader = EmbeddedStore::open(dir.path()).unwrap();
    assert_eq!(ids(&pending(&reader, &s, None, &ws()).unwrap()), ["t3", "t4"]);
    mark(&reader, &s, batch, &ws()).unwrap();
    assert_eq!(reader.session(&s).unwrap().unwrap(), before);
}

#[test]
fn marks_survive_re_import_of_the_same_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    let nodes: Vec<_> = (1..=4)
        .map(|i: i64| {
            let parent = (i > 1).then(|| format!("m{}", i - 1));
            msg(&format!("m{i}"), parent.as_deref(), &format!("turn {i}"), i)
        })
        .collect();
    store.append_batch(&s, nodes.clone()).unwrap();
    mark(&store, &s, &nodes[..3], &ws()).unwrap();
    let before = store.session(&s).unwrap().unwrap();
    // The importer sends the same (unmarked) nodes again, plus one new one.
    let mut grown = nodes.clone();
    grown.push(msg("m5", Some("m4"), "turn 5", 5));
    assert_eq!(store.append_batch(&s, grown).unwrap(), 1);
    let reopened = EmbeddedStore::open(dir.path()).unwrap();
    assert_eq!(ids(&pending(&reopened, &s, Some(&nid("m5")), &ws()).unwrap()), ["m4", "m5"]);
    assert_eq!(before.head, reopened.session(&s).unwrap().unwrap().head);
}

#[test]
fn a_marked_tip_costs_one_node_read_and_unwritten_nodes_one_each() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    let nodes: Vec<_> = (1..=2_000)
        .map(|i: i64| {
            let parent = (i > 1).then(|| format!("m{}", i - 1));
            msg(&format!("m{i}"), parent.as_deref(), &format!("turn {i}"), i)
        })
        .collect();
    store.append_batch(&s, nodes.clone()).unwrap();
    mark(&store, &s, &nodes, &ws()).unwrap();
    let counting = Counting::new(&store);
    assert!(pending(&counting, &s, Some(&nid("m2000")), &ws()).unwrap().is_empty());
    assert_eq!((counting.node_reads.get(), counting.branch_reads.get()), (1, 0));
    let top: Vec<_> = (2_001..=2_100)
        .map(|i: i64| msg(&format!("m{i}"), Some(&format!("m{}", i - 1)), "new", i))
        .collect();
    store.append_batch(&s, top).unwrap();
    let counting = Counting::new(&store);
    assert_eq!(pending(&counting, &s, Some(&nid("m2100")), &ws()).unwrap().len(), 100);
    assert_eq!((counting.node_reads.get(), counting.branch_reads.get()), (101, 0));
}

#[test]
fn rewound_nodes_neither_count_nor_stop_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "m", None, 1..=5, 1);
    mark_branch(&store, &s, "m3");
    // m4 was written too, then rewound (an edit): its marker is not on any branch.
    let m4 = store.node(&s, &nid("m4")).unwrap().unwrap();
    mark(&store, &s, &[m4], &ws()).unwrap();
    store.rewind(&s, &nid("m4")).unwrap();
    assert_eq!(ids(&pending(&store, &s, None, &ws()).unwrap()), ["m5"]);
    // A rewound tip walks from its nearest live ancestor, as `branch` does.
    store.rewind(&s, &nid("m5")).unwrap();
    assert!(pending(&store, &s, Some(&nid("m5")), &ws()).unwrap().is_empty());
    // Every node above m1 rewound and unmarked: the walk reaches the marks below.
    store.append(&s, msg("m6", Some("m5"), "after the edit", 7)).unwrap();
    assert_eq!(ids(&pending(&store, &s, None, &ws()).unwrap()), ["m6"]);
}

#[test]
fn a_side_branch_keeps_its_own_unwritten_turns() {
    // Main m1..m5 with m1..m3 written; branch b1..b3 off m1 unwritten → b1..b3 pending on the
    // branch, m4, m5 on main.
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "m", None, 1..=5, 1);
    mark_branch(&store, &s, "m3");
    chain(&store, &s, "b", Some("m1"), 1..=3, 2);
    assert_eq!(ids(&pending(&store, &s, Some(&nid("b3")), &ws()).unwrap()), ["b1", "b2", "b3"]);
    assert_eq!(ids(&pending(&store, &s, Some(&nid("m5")), &ws()).unwrap()), ["m4", "m5"]);
}

#[test]
fn unknown_session_or_tip_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    assert!(matches!(pending(&store, &s, None, &ws()), Err(Error::SessionNotFound(_))));
    store.append(&s, msg("m1", None, "x", 1)).unwrap();
    let err = pending(&store, &s, Some(&nid("nope")), &ws()).unwrap_err();
    assert!(matches!(err, Error::NodeNotFound { .. }), "{err}");
}

#[test]
fn workspace_ids_are_validated() {
    assert_eq!(WorkspaceId::parse("w-4f21c8e0\n").unwrap().as_str(), "w-4f21c8e0");
    for bad in ["", "w-4F21C8E0", "w-4f21c8e", "w-4f21c8e01", "x-4f21c8e0", "w-4f21c8eg"] {
        assert!(WorkspaceId::parse(bad).is_err(), "{bad}");
    }
}
