//! Criterion: a one-paragraph edit transaction end to end on workspaces of 1 000 and 10 000 blocks:
//! `…_git_…` is begin → edit → validate → install → git commit (the budgets: ≤ 30 ms and ≤ 150 ms);
//! `…_full_…` adds the derived views and the search index update (stage → install → views → index →
//! git, under the same budgets). The `txn` crate's own benches show the same without views and git,
//! and with a 500 MB `sources/`: staging never copies or hashes sources, and the git commit only
//! reads the files the transaction changed.

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use scriptorium_backend::memory::{MemoryWorkspace, Wiring};
use scriptorium_txn::BeginOptions;
use scriptorium_txn::change::UpdateRequest;

mod common;

use common::{BLOCKS_PER_FILE, generate_with};

/// The `scriptorium` binary's allocator (see ARCHITECTURE.md, *Memory*).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The transaction benches' workspace: every paragraph says what it is about.
fn generate(root: &Path, files: usize) {
    generate_with(root, files, &mut |f, b| {
        format!("Fact {b} about topic {f}: the owner cares about item {f}-{b} and said so.")
    });
}

fn bench_edit(c: &mut Criterion, name: &str, files: usize, wiring: Wiring) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().join("memory");
    generate(&root, files);
    let memory = MemoryWorkspace::open_wired(&root, true, wiring).expect("open");
    assert!(memory.history().is_some(), "git history available");
    let path = "topics/t0000.md";
    let original = std::fs::read_to_string(root.join(path)).expect("read");
    let edited = original.replacen("Fact 7 about", "Fact 7, revised, about", 1);
    let mut flip = false;
    c.bench_function(name, |b| {
        b.iter(|| {
            flip = !flip;
            let text = if flip { &edited } else { &original };
            let mut staged = memory.workspace().begin(BeginOptions::default()).expect("begin");
            staged.write_file(path, text).expect("write");
            let validated = staged.validate().map_err(|r| format!("{:?}", r.violations()));
            let installed = validated.expect("valid").install().expect("install");
            assert!(installed.observer_failures.is_empty(), "{:?}", installed.observer_failures);
            assert!(scriptorium_backend::memory::after(&installed).git_commit.is_some());
        });
    });
}

/// A 10-operation `memory_changes` request (ten `update_record`s across ten files) on a
/// workspace of 10 000 blocks, begin → install → git commit (the budget: ≤ 150 ms).
fn bench_memory_changes(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().join("memory");
    let files = 10_000 / BLOCKS_PER_FILE;
    generate(&root, files);
    let git_only = Wiring { views: false, index: false };
    let memory = MemoryWorkspace::open_wired(&root, true, git_only).expect("open");
    let mut round = 0u64;
    c.bench_function("transaction/memory_changes_10_ops_10k_blocks", |b| {
        b.iter(|| {
            round += 1;
            let ops: Vec<serde_json::Value> = (0..10)
                .map(|i| {
                    let f = i * (files / 10);
                    serde_json::json!({
                        "op": "update_record",
                        "memory_id": format!("{f:04}{:04}", 7),
                        "content": format!("Fact 7 about topic {f}, revision {round}."),
                        "time": "2024-03-08",
                        "sources": [{
                            "source": format!("openprogram/bench-{f:04}/m7"),
                            "label": "item 7",
                        }],
                    })
                })
                .collect();
            let base = memory.workspace().revision().expect("revision");
            let body = serde_json::json!({
                "base_revision": base.as_str(),
                "memory_changes": ops,
            });
            let request = UpdateRequest::from_json(&body.to_string()).expect("a valid request");
            let installed = memory.workspace().update(request).expect("installs");
            assert!(installed.observer_failures.is_empty(), "{:?}", installed.observer_failures);
        });
    });
}

fn transaction(c: &mut Criterion) {
    // Begin → install → git commit (the budgets: ≤ 30 ms and ≤ 150 ms).
    let git_only = Wiring { views: false, index: false };
    bench_edit(
        c,
        "transaction/one_paragraph_edit_git_1k_blocks",
        1_000 / BLOCKS_PER_FILE,
        git_only,
    );
    bench_edit(
        c,
        "transaction/one_paragraph_edit_git_10k_blocks",
        10_000 / BLOCKS_PER_FILE,
        git_only,
    );
    // Stage → install → views → index → git (the same budgets).
    let all = Wiring::default();
    bench_edit(c, "transaction/one_paragraph_edit_full_1k_blocks", 1_000 / BLOCKS_PER_FILE, all);
    bench_edit(c, "transaction/one_paragraph_edit_full_10k_blocks", 10_000 / BLOCKS_PER_FILE, all);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = transaction, bench_memory_changes
}
criterion_main!(benches);
