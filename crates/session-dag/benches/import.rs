//! Criterion: import throughput on the largest real transcript
//! (`codemie-code/claude/session-624a4a58.jsonl`, 2.6 MB): parse plus the write into a fresh
//! [`EmbeddedStore`] in a temporary directory (one `append_batch` with its fsync, the head and
//! the title). The budget: ≥ 50 MB/s.

use std::hint::black_box;
use std::path::Path;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use scriptorium_session_dag::EmbeddedStore;
use scriptorium_session_dag::import::{self, Format, Input};

fn import_largest_transcript(c: &mut Criterion) {
    let Some(data) = scriptorium_testkit::data_dir() else {
        eprintln!("note: test data not found (SCRIPTORIUM_TEST_DATA); skipping the import bench");
        return;
    };
    let path = data.join("codemie-code/claude/session-624a4a58.jsonl");
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) => {
            eprintln!("note: {}: {err}; skipping the import bench", path.display());
            return;
        }
    };
    let mut group = c.benchmark_group("session_dag");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("import_largest_transcript", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let store = EmbeddedStore::open(dir.path()).expect("a fresh store opens");
                (dir, store)
            },
            |(dir, store)| {
                let summary = import_once(&store, &path, &bytes);
                black_box(summary);
                (dir, store)
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn import_once(store: &EmbeddedStore, path: &Path, bytes: &[u8]) -> usize {
    let parsed =
        import::parse(Format::ClaudeCode, &[Input::new(path, bytes)]).expect("the file parses");
    let summary = import::import_into(store, parsed, path).expect("the import succeeds");
    summary.new_nodes()
}

criterion_group!(benches, import_largest_transcript);
criterion_main!(benches);
