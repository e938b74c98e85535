//! Criterion: the per-turn methods of `LocalBackend` on a workspace of 10 000 blocks (and the
//! p50 / p99 of recall from 10 000 timed calls, printed first) —
//! `search` (recall, fenced, end to end: revision stat, index query, fence) and
//! `system_prompt` (the fenced core block, cached per revision). The async trait methods call
//! exactly these (`MemoryBackend::search` → `LocalBackend::recall`,
//! `MemoryBackend::system_prompt` → `LocalBackend::core_block`).

mod common;

use std::sync::Arc;

use common::{BLOCKS_PER_FILE, generate_with};
use criterion::{Criterion, criterion_group, criterion_main};
use scriptorium_backend::{Config, LocalBackend};
use scriptorium_testkit::synthetic::Words;
use scriptorium_topics_format::source::anchor_for;
use scriptorium_txn::BeginOptions;
use scriptorium_writer::model::journal::Journal;

fn backend(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let home = dir.path();
    // Paragraphs of 25 words from a Zipf-like vocabulary: term frequencies like text.
    let mut words = Words(0x9e37_79b9_7f4a_7c15);
    generate_with(&home.join("memory"), 10_000 / BLOCKS_PER_FILE, &mut |_, _| {
        format!("{}.", words.sentence(25))
    });
    let backend = LocalBackend::open(home, Config::default(), Arc::new(Journal)).expect("open");
    // A core master of a few cited paragraphs, installed (the install renders `core.md` and
    // brings the index up to date).
    let ws = backend.memory().workspace().clone();
    let mut core = String::from("# Core\n");
    for (n, fact) in
        ["prefers metric units", "works from Porto", "is allergic to wasps"].iter().enumerate()
    {
        let anchor = anchor_for(&format!("openprogram/bench-0000/m{n}"));
        core.push_str(&format!(
            "\nThe owner {fact}, and every answer should respect it.[^e{n}]\n\n\
             [^e{n}]: Time: `undated`; Sources: [standing fact](../sources/openprogram/_v2/bench-0000.md#{anchor})\n"
        ));
    }
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged.write_file("topics/core.md", &core).expect("write");
    let installed = staged.validate().map_err(|r| format!("{:?}", r.violations()));
    installed.expect("valid").install().expect("install");
    backend.memory().rebuild_index().expect("index");
    assert!(!backend.core_block().is_empty(), "the core block has a body");
    // Per-turn queries: a short message with two or three vocabulary words.
    let mut words = Words(42);
    let queries: Vec<String> = (0..64)
        .map(|n| match n % 2 {
            0 => format!("what about {} {}", words.word(), words.word()),
            _ => format!("tell me {} and {} {}", words.word(), words.word(), words.word()),
        })
        .collect();
    let found = queries.iter().filter(|q| !backend.recall(q).is_empty()).count();
    assert!(found > 32, "most queries recall something ({found} of 64)");
    // p50 / p99 from individual timings (the budgets: ≤ 100 µs and ≤ 1 ms).
    let mut samples: Vec<std::time::Duration> = (0..10_000)
        .map(|n| {
            let started = std::time::Instant::now();
            std::hint::black_box(backend.recall(&queries[n % queries.len()]));
            started.elapsed()
        })
        .collect();
    samples.sort();
    println!(
        "backend recall over 10000 calls: p50 {:?} p99 {:?} max {:?}",
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
        samples[samples.len() - 1]
    );
    let mut i = 0;
    c.bench_function("backend/search_fenced_10k_blocks", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            backend.recall(&queries[i])
        });
    });
    c.bench_function("backend/system_prompt_10k_blocks", |b| b.iter(|| backend.core_block()));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50);
    targets = backend
}
criterion_main!(benches);
