//! Forgotten nodes ([`SessionStore::forget`]) in the pending walk and the boundary plan: no
//! record, never pending, and a forgotten written record still says where writing stopped.

use std::collections::BTreeMap;

use scriptorium_markers::{
    MARKER_KEY, WorkspaceId, boundary_plan, is_marked, is_record, mark, pending, record_text,
    records, workspace_marker_key,
};
use scriptorium_session_dag::{
    EmbeddedStore, MetadataBatch, NodeId, NodeKind, Role, SessionId, SessionStore,
};

use crate::support::{Counting, chain, ids, msg, nid, sid, ws};

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn mark_branch(store: &EmbeddedStore, s: &SessionId, tip: &str) {
    let branch = store.branch(s, Some(&nid(tip))).unwrap();
    mark(store, s, &branch, &ws()).unwrap();
}

fn forget(store: &EmbeddedStore, s: &SessionId, nodes: &[&str]) {
    let nodes: Vec<NodeId> = nodes.iter().map(|n| nid(n)).collect();
    assert_eq!(store.forget(s, &nodes, false).unwrap(), nodes.len());
}

fn plan(store: &EmbeddedStore, s: &SessionId, threshold: usize) -> Vec<(String, Vec<String>)> {
    boundary_plan(store, s, &ws(), threshold, &words)
        .unwrap()
        .into_iter()
        .map(|b| (b.tip.0, b.pending.into_iter().map(|n| n.id.0).collect()))
        .collect()
}

#[test]
fn a_forgotten_message_is_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "m", None, 1..=4, 1);
    forget(&store, &s, &["m1", "m2"]);
    let branch = store.branch(&s, None).unwrap();
    for node in &branch[..2] {
        assert!(
            node.kind == NodeKind::Message && matches!(node.role, Role::User | Role::Assistant)
        );
        assert!(node.is_forgotten() && !is_record(node) && record_text(node).is_none());
    }
    assert_eq!(ids(&records(&branch).into_iter().cloned().collect::<Vec<_>>()), ["m3", "m4"]);
}

#[test]
fn forgetting_a_pending_record_takes_it_out_of_pending_and_of_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "m", None, 1..=2, 1);
    mark_branch(&store, &s, "m2");
    chain(&store, &s, "m", Some("m2"), 3..=6, 1);
    assert_eq!(ids(&pending(&store, &s, None, &ws()).unwrap()), ["m3", "m4", "m5", "m6"]);
    // A forgotten node in the middle of the unwritten part: passed over, not a stop.
    forget(&store, &s, &["m4"]);
    assert_eq!(ids(&pending(&store, &s, None, &ws()).unwrap()), ["m3", "m5", "m6"]);
    assert_eq!(
        plan(&store, &s, 0),
        [("m6".to_owned(), vec!["m3".into(), "m5".into(), "m6".into()])]
    );
    // Forgetting the whole unwritten part leaves nothing to write.
    forget(&store, &s, &["m3", "m5", "m6"]);
    assert!(pending(&store, &s, None, &ws()).unwrap().is_empty());
    assert!(plan(&store, &s, 0).is_empty());
}

/// The newest written record is forgotten: it keeps its marks, and its mark still stops the
/// walk, so nothing older becomes pending again (not even records whose own mark was lost, which
/// the walk trusts as a prefix) and the walk costs no more than before.
#[test]
fn a_forgotten_written_record_keeps_its_mark_and_still_stops_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "m", None, 1..=6, 1);
    mark_branch(&store, &s, "m6");
    // m1..m5 lost this workspace's marks (a clone of an older version overwrote the shared key
    // and had no key of its own): only m6 says they were written.
    let other = WorkspaceId::parse("w-deadbeef").unwrap();
    let lost: MetadataBatch = (1..=5)
        .map(|i| {
            let patch = BTreeMap::from([
                (MARKER_KEY.to_owned(), other.as_str().to_owned()),
                (workspace_marker_key(&ws()), "0".to_owned()),
            ]);
            (nid(&format!("m{i}")), patch)
        })
        .collect();
    store.merge_metadata(&s, &lost).unwrap();
    chain(&store, &s, "m", Some("m6"), 7..=8, 1);
    assert_eq!(ids(&pending(&store, &s, None, &ws()).unwrap()), ["m7", "m8"]);

    forget(&store, &s, &["m6"]);
    let m6 = store.node(&s, &nid("m6")).unwrap().unwrap();
    assert!(m6.is_forgotten() && is_marked(&m6, &ws()), "{m6:?}");
    assert_eq!(m6.metadata[&workspace_marker_key(&ws())], "1");
    let counting = Counting::new(&store);
    assert_eq!(ids(&pending(&counting, &s, None, &ws()).unwrap()), ["m7", "m8"]);
    assert_eq!(counting.node_reads.get(), 3, "m8, m7 and the forgotten m6, where it stops");
    assert_eq!(plan(&store, &s, 0), [("m8".to_owned(), vec!["m7".into(), "m8".into()])]);
    // An unmarked forgotten node does not stop it: forgetting m7 leaves m8 pending.
    forget(&store, &s, &["m7"]);
    assert_eq!(ids(&pending(&store, &s, None, &ws()).unwrap()), ["m8"]);
}

#[test]
fn forgetting_a_whole_session_leaves_every_branch_with_nothing_pending() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let s = sid("s");
    chain(&store, &s, "t", None, 1..=3, 1);
    mark_branch(&store, &s, "t2");
    store.append(&s, msg("big", Some("t1"), &vec!["w"; 40].join(" "), 50)).unwrap();
    store.set_head(&s, &nid("t3")).unwrap();
    assert_eq!(plan(&store, &s, 10).len(), 2, "t3 and the big branch are owed");
    let all: Vec<NodeId> = store.nodes(&s).unwrap().into_iter().map(|n| n.id).collect();
    assert_eq!(store.forget(&s, &all, true).unwrap(), 4);
    for tip in store.tips(&s).unwrap() {
        assert!(pending(&store, &s, Some(&tip), &ws()).unwrap().is_empty(), "{tip}");
    }
    assert!(plan(&store, &s, 0).is_empty());
    // The written ones are still marked: a new turn after them is the only thing owed.
    assert!(is_marked(&store.node(&s, &nid("t2")).unwrap().unwrap(), &ws()));
    store.append(&s, msg("t4", Some("t3"), "a new turn", 7)).unwrap();
    assert_eq!(ids(&pending(&store, &s, None, &ws()).unwrap()), ["t4"]);
}
