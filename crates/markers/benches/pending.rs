//! Criterion: the pending walk on a 100 000-node session (store loaded, warm).
//!
//! The budgets: a marked tip ≤ 10 µs; 100 unwritten nodes on top ≤ 100 µs.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use scriptorium_markers::{WorkspaceId, mark, pending};
use scriptorium_session_dag::{
    EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Timestamp,
};

const NODES: u32 = 100_000;
const UNWRITTEN: u32 = 100;

fn node(i: u32) -> Node {
    Node {
        id: NodeId(format!("node-{i:08}")),
        parent: (i > 1).then(|| NodeId(format!("node-{:08}", i - 1))),
        role: if i % 2 == 1 { Role::User } else { Role::Assistant },
        kind: NodeKind::Message,
        speaker: None,
        content: format!("turn {i}: a message of ordinary length about the budget tracker"),
        created_at: Timestamp(1_700_000_000_000 + i64::from(i)),
        metadata: BTreeMap::new(),
        rewound: false,
    }
}

fn bench_pending(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = EmbeddedStore::open(dir.path()).expect("store opens");
    let session = SessionId("bench".into());
    let workspace = WorkspaceId::parse("w-4f21c8e0").expect("valid id");
    let nodes: Vec<Node> = (1..=NODES).map(node).collect();
    store.append_batch(&session, nodes.clone()).expect("append");
    mark(&store, &session, &nodes, &workspace).expect("mark");
    let marked_tip = NodeId(format!("node-{NODES:08}"));
    assert!(pending(&store, &session, Some(&marked_tip), &workspace).expect("walk").is_empty());

    let mut group = c.benchmark_group("markers");
    group.bench_function("pending_marked_tip_100k", |b| {
        b.iter(|| pending(&store, &session, Some(black_box(&marked_tip)), &workspace));
    });

    let top: Vec<Node> = (NODES + 1..=NODES + UNWRITTEN).map(node).collect();
    store.append_batch(&session, top).expect("append");
    let tip = NodeId(format!("node-{:08}", NODES + UNWRITTEN));
    let owed = pending(&store, &session, Some(&tip), &workspace).expect("walk");
    assert_eq!(owed.len(), UNWRITTEN as usize);
    group.bench_function("pending_100_unwritten_100k", |b| {
        b.iter(|| pending(&store, &session, Some(black_box(&tip)), &workspace));
    });
    group.finish();
}

criterion_group!(benches, bench_pending);
criterion_main!(benches);
