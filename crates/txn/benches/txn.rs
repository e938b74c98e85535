//! Criterion: one-paragraph edit transactions (begin → edit one paragraph → validate →
//! install; no git, views or index here) at 1 000 and 10 000 blocks, and at 10 000 blocks with
//! about 500 MB of extra archives in `sources/` (the time must not grow: staging never copies
//! or hashes source content). Budgets for the whole pipeline including git: 30 ms / 150 ms.

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use scriptorium_topics_format::source::{ArchiveRecord, plan_append};
use scriptorium_txn::{BeginOptions, LockTimeout, Workspace};

const SOURCES: u64 = 100;
const PER_FILE: usize = 100;

fn record(thread: &str, i: u64, content: String) -> ArchiveRecord {
    let mut record = ArchiveRecord::new("openprogram", thread, format!("u{i}"), i, "user", content);
    record.timestamp = Some("2024-04-02T09:14:00+02:00".into());
    record
}

/// A workspace with `blocks` records in files of 100, citing 100 archived messages.
fn workspace(root: &Path, blocks: usize) -> Workspace {
    let ws = Workspace::init(root).expect("init");
    let records: Vec<ArchiveRecord> =
        (1..=SOURCES).map(|i| record("bench", i, format!("Message {i}."))).collect();
    ws.archive_sources(&records, LockTimeout::DEFAULT).expect("archive");
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    for f in 0..blocks.div_ceil(PER_FILE) {
        let mut text = format!("# Topic {f}\n");
        let n = PER_FILE.min(blocks - f * PER_FILE);
        for p in 0..n {
            text.push_str(&format!("\nFact {f}-{p} is at version 0 of this benchmark.[^e{p}]\n"));
        }
        text.push('\n');
        for p in 0..n {
            let source = (f * PER_FILE + p) as u64 % SOURCES + 1;
            text.push_str(&format!(
                "[^e{p}]: Time: `2024-04-02`; Sources: [m{source}](openprogram/bench/u{source})\n"
            ));
        }
        staged.write_file(&format!("topics/t{:03}/topic{f:04}.md", f / 10), &text).expect("write");
    }
    staged.validate().expect("valid").install().expect("install");
    ws
}

/// About `megabytes` MB of valid, uncited v2 archives in 250 KB files.
fn bulk_sources(ws: &Workspace, megabytes: usize) {
    let body = "lorem ipsum dolor sit amet ".repeat(250_000 / 27);
    let files = megabytes * 4;
    for t in 0..files {
        let empty: BTreeMap<String, String> = BTreeMap::new();
        let plan =
            plan_append(&[record(&format!("bulk{t:05}"), 1, body.clone())], &empty).expect("plan");
        for write in plan.writes {
            let path = ws.root().join(&write.rel_path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, write.new_text).expect("write");
        }
    }
}

fn one_paragraph_edit(ws: &Workspace, version: &Cell<u64>) {
    let v = version.get();
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    let path = "topics/t000/topic0000.md";
    let text = staged.read_file(path).expect("read").expect("exists");
    let old = format!("Fact 0-7 is at version {v} ");
    let new = format!("Fact 0-7 is at version {} ", v + 1);
    staged.write_file(path, &text.replacen(&old, &new, 1)).expect("write");
    let installed = staged.validate().expect("valid").install().expect("install");
    assert_eq!(installed.changed_files, [path]);
    version.set(v + 1);
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("txn");
    group.sample_size(10);
    for (name, blocks, megabytes) in [
        ("one_paragraph_edit_1k_blocks", 1_000, 0),
        ("one_paragraph_edit_10k_blocks", 10_000, 0),
        ("one_paragraph_edit_10k_blocks_500mb_sources", 10_000, 500),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = workspace(dir.path(), blocks);
        if megabytes > 0 {
            bulk_sources(&ws, megabytes);
        }
        let version = Cell::new(0);
        group.bench_function(name, |b| b.iter(|| one_paragraph_edit(&ws, &version)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
