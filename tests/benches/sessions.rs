//! Criterion: the session store, embedded vs PostgreSQL on the same machine — append a
//! 100-node batch, mark a 100-node batch (one metadata merge), and the pending walk of 100
//! unwritten nodes on top of a 100 000-node session. `cargo xtask bench` reports p50 and p99
//! of each; there are no budgets (the comparison is the point).
//!
//! PostgreSQL runs as a scratch cluster (`scriptorium_testkit::pg`, `fsync` off, so its figures
//! are the engine's and the round trips', not the disk's); without the server binaries only the
//! embedded store is measured.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{
    BenchmarkGroup, Criterion, criterion_group, criterion_main, measurement::WallTime,
};
use scriptorium_markers::{WorkspaceId, mark, pending};
use scriptorium_session_dag::{
    EmbeddedStore, MetadataBatch, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Timestamp,
};
use scriptorium_session_pg::PgStore;

const NODES: u32 = 100_000;
const BATCH: u32 = 100;

fn node(prefix: &str, i: u32) -> Node {
    Node {
        id: NodeId(format!("{prefix}-{i:08}")),
        parent: (i > 1).then(|| NodeId(format!("{prefix}-{:08}", i - 1))),
        role: if i % 2 == 1 { Role::User } else { Role::Assistant },
        kind: NodeKind::Message,
        speaker: None,
        content: format!("turn {i}: a message of ordinary length about the budget tracker"),
        created_at: Timestamp(1_700_000_000_000 + i64::from(i)),
        metadata: BTreeMap::new(),
        rewound: false,
    }
}

/// The three benchmarks on `store`, named `<what>_<name>`.
fn measure(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, store: &dyn SessionStore) {
    // Append: each iteration a new batch of 100 chained nodes.
    let appended = SessionId("append".into());
    let mut round = 0u32;
    group.bench_function(format!("append_100_node_batch_{name}"), |b| {
        b.iter(|| {
            round += 1;
            let batch: Vec<Node> = (1..=BATCH).map(|i| node(&format!("r{round}"), i)).collect();
            assert_eq!(store.append_batch(&appended, batch).expect("append"), BATCH as usize);
        });
    });

    // Mark: one merge of a new value onto the same 100 nodes (a no-op merge writes nothing).
    let marked = SessionId("mark".into());
    let nodes: Vec<Node> = (1..=BATCH).map(|i| node("m", i)).collect();
    store.append_batch(&marked, nodes.clone()).expect("append");
    let mut value = 0u64;
    group.bench_function(format!("mark_100_node_batch_{name}"), |b| {
        b.iter(|| {
            value += 1;
            let patch: MetadataBatch = nodes
                .iter()
                .map(|n| (n.id.clone(), BTreeMap::from([("bench".to_owned(), value.to_string())])))
                .collect();
            store.merge_metadata(&marked, black_box(&patch)).expect("merge");
        });
    });

    // Pending: 100 unwritten nodes on a written 100 000-node trunk.
    let big = SessionId("big".into());
    let workspace = WorkspaceId::parse("w-4f21c8e0").expect("valid id");
    let trunk: Vec<Node> = (1..=NODES).map(|i| node("n", i)).collect();
    store.append_batch(&big, trunk.clone()).expect("append");
    mark(store, &big, &trunk, &workspace).expect("mark");
    drop(trunk);
    let top: Vec<Node> = (NODES + 1..=NODES + BATCH).map(|i| node("n", i)).collect();
    store.append_batch(&big, top).expect("append");
    let tip = NodeId(format!("n-{:08}", NODES + BATCH));
    assert_eq!(pending(store, &big, Some(&tip), &workspace).expect("walk").len(), BATCH as usize);
    group.bench_function(format!("pending_100_unwritten_100k_{name}"), |b| {
        b.iter(|| pending(store, &big, Some(black_box(&tip)), &workspace).expect("walk"));
    });
}

fn bench_sessions(c: &mut Criterion) {
    let mut group = c.benchmark_group("sessions");
    group.sample_size(20);
    let dir = tempfile::tempdir().expect("temp dir");
    let embedded = EmbeddedStore::open(dir.path()).expect("store opens");
    measure(&mut group, "embedded", &embedded);
    match scriptorium_testkit::pg::cluster("bench-sessions") {
        Ok(Some(cluster)) => {
            let url = cluster.create_database().expect("a database");
            let store = PgStore::connect(&url).expect("store connects");
            measure(&mut group, "postgres", &store);
            // The store's connection closes before the cluster stops.
            drop(store);
            drop(cluster);
        }
        Ok(None) => {
            eprintln!("note: PostgreSQL binaries not found; only the embedded store is measured");
        }
        Err(reason) => panic!("the scratch PostgreSQL cluster did not start: {reason}"),
    }
    group.finish();
}

criterion_group!(benches, bench_sessions);
criterion_main!(benches);
