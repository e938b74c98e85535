//! Criterion benchmarks of `scriptorium-search` (group `search`), over 10 000 blocks and 50 000
//! source records generated deterministically in a temp dir: warm search, open + first search,
//! and the incremental update after a one-paragraph install. Also prints warm-search p50/p99
//! from 10 000 timed calls.

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::Criterion;
use scriptorium_search::{Changes, Index, Query};
use scriptorium_testkit::synthetic::Words;
use scriptorium_topics_format::source::{ArchiveRecord, plan_append};

/// The `scriptorium` binary's allocator (see ARCHITECTURE.md, *Memory*).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BLOCKS: usize = 10_000;
const BLOCKS_PER_FILE: usize = 20;
const RECORDS: usize = 50_000;
const RECORDS_PER_ARCHIVE: usize = 1_000;

fn generate(root: &Path) {
    let mut words = Words(0x9e37_79b9_7f4a_7c15);
    for archive in 0..RECORDS / RECORDS_PER_ARCHIVE {
        let thread = format!("t{archive}");
        let records: Vec<ArchiveRecord> = (0..RECORDS_PER_ARCHIVE)
            .map(|i| {
                let mut r = ArchiveRecord::new(
                    "openprogram",
                    thread.as_str(),
                    format!("m{i}"),
                    i as u64,
                    "user",
                    words.sentence(20),
                );
                r.timestamp = Some(format!("2024-{:02}-{:02}T10:00:00Z", 1 + i % 12, 1 + i % 28));
                r.speaker_id = Some(format!("user{}", i % 7));
                r.speaker_display = Some(format!("User {}", i % 7));
                r
            })
            .collect();
        let plan = plan_append(&records, &BTreeMap::new()).expect("valid records");
        for write in plan.writes {
            let path = root.join(&write.rel_path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, write.new_text).expect("write archive");
        }
    }
    for file in 0..BLOCKS / BLOCKS_PER_FILE {
        let mut text = format!("# Topic {file}\n\n## Notes\n\n");
        let mut defs = String::new();
        for b in 0..BLOCKS_PER_FILE {
            let n = file * BLOCKS_PER_FILE + b;
            text.push_str(&format!("{}.[^e-{n:010x}] ^{n:08x}\n\n", words.sentence(25)));
            let source = format!("openprogram/t{}/m{}", n % 50, n % RECORDS_PER_ARCHIVE);
            defs.push_str(&format!(
                "[^e-{n:010x}]: Time: `2024-{:02}-{:02}`; Sources: [s]({source})\n",
                1 + n % 12,
                1 + n % 28
            ));
        }
        text.push_str(&defs);
        let path = root.join(format!("topics/area{}/file{file}.md", file % 10));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write topic");
    }
}

fn queries() -> Vec<Query> {
    let mut words = Words(42);
    (0..64).map(|_| Query::new(format!("what about {} {}", words.word(), words.word()))).collect()
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    generate(root);
    let started = Instant::now();
    let mut index = Index::open(root).expect("open");
    index.sync("rev-0", None).expect("initial sync");
    println!("built the index of {} documents in {:?}", index.num_docs(), started.elapsed());
    let queries = queries();

    // p50 / p99 of warm search from individual timings.
    let mut samples = Vec::with_capacity(10_000);
    let mut found = 0usize;
    for i in 0..10_000 {
        let t = Instant::now();
        let hits = index.search("rev-0", &queries[i % queries.len()]).expect("search");
        samples.push(t.elapsed());
        found += hits.len();
    }
    samples.sort();
    println!(
        "warm_search over 10000 calls: p50 {:?} p99 {:?} max {:?} (avg hits {:.2})",
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
        samples[samples.len() - 1],
        found as f64 / 10_000.0
    );

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("search");
    let mut i = 0;
    group.bench_function("warm_search", |b| {
        b.iter(|| {
            i += 1;
            black_box(index.search("rev-0", &queries[i % queries.len()]).expect("search"))
        });
    });
    drop(index);
    group.bench_function("open_and_first_search", |b| {
        b.iter(|| {
            let mut index = Index::open(root).expect("open");
            black_box(index.search("rev-0", &queries[0]).expect("search"))
        });
    });
    let mut index = Index::open(root).expect("open");
    let mut revision = 0u64;
    let mut words = Words(7);
    group.bench_function("incremental_update_one_paragraph", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                revision += 1;
                let rel = format!("topics/area{}/file{}.md", revision % 10, revision % 500 / 10 * 10 + revision % 10);
                let path = root.join(&rel);
                let mut text = std::fs::read_to_string(&path).expect("read topic");
                let n = 1_000_000 + revision as usize;
                let paragraph = format!(
                    "{}.[^e-{n:010x}] ^{n:08x}\n\n[^e-{n:010x}]: Time: `2024-05-05`; Sources: [s](openprogram/t1/m1)\n",
                    words.sentence(25)
                );
                text.push('\n');
                text.push_str(&paragraph);
                std::fs::write(&path, text).expect("write topic");
                let changes = Changes { since: format!("rev-{}", revision - 1), paths: vec![rel] };
                let t = Instant::now();
                index.sync(&format!("rev-{revision}"), Some(&changes)).expect("sync");
                total += t.elapsed();
            }
            total
        });
    });
    group.finish();
    c.final_summary();
}
