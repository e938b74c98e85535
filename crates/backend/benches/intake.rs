//! Criterion: what redaction adds to `import`. A folder of ~150 MB of real Claude Code and Codex
//! transcripts is imported the way `scriptorium import auto <folder>` does it (discovery, then
//! every unit parsed and stored), each iteration into a new, empty embedded store.
//!
//! - `intake/import_150mb_plain`: the import without redaction. [`Intake`] cannot skip its
//!   redaction (and gets no switch for it), so this replicates `Intake::import_unit` minus the
//!   redaction: the parse, the writer's own sessions left out (the same
//!   [`Intake::is_inside_memory`]), forgotten nodes turned into shells (the same ledger), and
//!   `import_into`.
//! - `intake/import_150mb_redacted`: the real [`Intake`] with [`Redactor::builtin`], as
//!   `scriptorium import` drives it: every node and title redacted, the counts summed into the
//!   report and added to the workspace's totals once for the folder
//!   ([`Intake::import_unit_of_many`], then [`Intake::record`]; the memory workspace has its
//!   `.scriptorium/`, as a real one does). Budget: median ≤ 1.2 ×
//!   the plain median.
//! - `intake/redact_only_150mb`: the redaction alone, what the redacted import adds to the plain
//!   one: every node content and title of the corpus (parsed beforehand) through the same
//!   redactor; throughput in bytes of that text. Reported, no budget.
//!
//! The corpus is made once per run in a temporary directory (`TMPDIR`): every real Claude Code
//! and Codex transcript of the shared test data (`scriptorium_testkit::REAL_TRANSCRIPTS`),
//! copied again and again until the folder holds 150 MB, each copy under fresh session IDs
//! (every ID a transcript's `sessionId` or `session_meta` names is replaced, in the text and in
//! the file names, by another of the same length), so each copy is a distinct session of the
//! same size. Before measuring, both imports run once and must import every file, fail none,
//! skip no session and find every node new.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use scriptorium_backend::forget::Forgotten;
use scriptorium_backend::intake::{Intake, WRITER_SESSION};
use scriptorium_redact::Redactor;
use scriptorium_session_dag::EmbeddedStore;
use scriptorium_session_dag::import::{self, Format, Summary, Unit};

/// The size the corpus grows to.
const TARGET_BYTES: u64 = 150_000_000;

/// One transcript file (or a sidechain's `.meta.json`) of the test data.
struct Source {
    /// The path relative to the data directory.
    relative: PathBuf,
    text: String,
}

/// The corpus folder and what it holds.
struct Corpus {
    _dir: tempfile::TempDir,
    root: PathBuf,
    bytes: u64,
    files: usize,
}

/// The real Claude Code and Codex transcripts (with their sidechains' `.meta.json`), and every
/// session ID they name.
fn sources(data: &Path) -> (Vec<Source>, Vec<String>) {
    let dirs: Vec<PathBuf> =
        scriptorium_testkit::REAL_TRANSCRIPTS.iter().map(|dir| data.join(dir)).collect();
    let mut sources = Vec::new();
    let mut ids = Vec::new();
    for unit in import::discover_auto(&dirs).units {
        if !matches!(unit.format, Format::ClaudeCode | Format::Codex) {
            continue;
        }
        for file in &unit.files {
            for path in std::iter::once(&file.path).chain(&file.meta) {
                let text = std::fs::read_to_string(path).expect("a transcript of the test data");
                if path == &file.path {
                    ids.extend(session_ids(&text));
                }
                let relative =
                    path.strip_prefix(data).expect("discovered under the data directory");
                sources.push(Source { relative: relative.to_path_buf(), text });
            }
        }
    }
    ids.sort();
    ids.dedup();
    (sources, ids)
}

/// The session IDs a transcript names: Claude Code's `sessionId`s, Codex's `session_meta` id.
fn session_ids(text: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for line in text.lines() {
        let Ok(record) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let id = match record["type"].as_str() {
            Some("session_meta") => &record["payload"]["id"],
            _ => &record["sessionId"],
        };
        if let Some(id) = id.as_str() {
            ids.push(id.to_owned());
        }
    }
    ids
}

/// The ID that stands for the `index`-th original ID in copy `copy`: a UUID-shaped string of the
/// original's length (all of them are UUIDs), distinct for every (copy, index).
fn fresh_id(original: &str, copy: usize, index: usize) -> String {
    let id = format!("{copy:08x}-{index:04x}-4000-8000-000000000000");
    assert_eq!(id.len(), original.len(), "the session IDs of the test data are UUIDs");
    id
}

/// Copies the sources under fresh session IDs into a temporary folder until it holds
/// [`TARGET_BYTES`].
fn build_corpus(sources: &[Source], ids: &[String]) -> Corpus {
    let dir = tempfile::Builder::new()
        .prefix("scriptorium-intake-bench-")
        .tempdir()
        .expect("a temporary directory");
    let root = dir.path().join("transcripts");
    let (mut bytes, mut files) = (0, 0);
    let mut copy = 0;
    while bytes < TARGET_BYTES {
        let fresh: Vec<(&str, String)> =
            ids.iter().enumerate().map(|(i, id)| (id.as_str(), fresh_id(id, copy, i))).collect();
        let rewrite = |text: &str| {
            fresh.iter().fold(text.to_owned(), |text, (old, new)| text.replace(old, new))
        };
        for source in sources {
            let relative = rewrite(&source.relative.to_string_lossy());
            let path = root.join(format!("copy-{copy:03}")).join(relative);
            std::fs::create_dir_all(path.parent().expect("a file has a parent"))
                .expect("a corpus directory");
            let text = rewrite(&source.text);
            std::fs::write(&path, &text).expect("a corpus file");
            if path.extension().is_some_and(|e| e == "jsonl") {
                bytes += text.len() as u64;
                files += 1;
            }
        }
        copy += 1;
    }
    let fs = std::fs::File::open(&root).expect("the corpus opens");
    rustix::fs::syncfs(&fs).expect("syncfs");
    Corpus { _dir: dir, root, bytes, files }
}

/// A new home: an empty session store and a memory workspace with its `.scriptorium/`.
struct Home {
    _dir: tempfile::TempDir,
    memory: PathBuf,
    store: EmbeddedStore,
}

fn fresh_home() -> Home {
    let dir = tempfile::Builder::new()
        .prefix("scriptorium-intake-bench-home-")
        .tempdir()
        .expect("a temporary directory");
    // What earlier iterations wrote and deleted is on disk before this one starts, so that the
    // kernel's writeback of it does not land in the next measurement.
    let fs = std::fs::File::open(dir.path()).expect("the temporary directory opens");
    rustix::fs::syncfs(&fs).expect("syncfs");
    let memory = dir.path().join("memory");
    std::fs::create_dir_all(memory.join(".scriptorium")).expect("the memory workspace");
    let store = EmbeddedStore::open(dir.path().join("sessions")).expect("a fresh store opens");
    Home { _dir: dir, memory, store }
}

/// What one import of the folder gave.
struct Outcome {
    summary: Summary,
    units: usize,
    files: usize,
    failed: usize,
}

/// `scriptorium import auto <root>`: discovery, then every unit through `import_unit`.
fn import_folder(
    root: &Path,
    mut import_unit: impl FnMut(&Unit) -> Result<Summary, import::Error>,
) -> Outcome {
    let found = import::discover_auto(&[root.to_path_buf()]);
    let mut failed = found.errors.len();
    let files = found.units.iter().map(|u| u.files.len()).sum();
    let mut summary = Summary::default();
    for unit in &found.units {
        match import_unit(unit) {
            Ok(s) => summary.merge(s),
            Err(_) => failed += 1,
        }
    }
    Outcome { summary, units: found.units.len(), files, failed }
}

/// `Intake::import_unit` without the redaction (see the module docs).
fn import_unit_plain(
    door: &Intake,
    forgotten: &Forgotten,
    store: &EmbeddedStore,
    unit: &Unit,
) -> Result<Summary, import::Error> {
    let mut parsed = unit.parse()?;
    let before = parsed.sessions.len();
    parsed.sessions.retain(|session| {
        !session
            .nodes
            .iter()
            .filter_map(|n| n.metadata.get("cwd"))
            .any(|cwd| door.is_inside_memory(Path::new(cwd)))
    });
    let dropped = before - parsed.sessions.len();
    if dropped > 0 {
        *parsed.report.skipped.entry(WRITER_SESSION.to_owned()).or_default() += dropped;
    }
    for session in &mut parsed.sessions {
        if forgotten.sessions.contains(&session.id.0) {
            session.title = None;
            session.fallback_title = None;
        }
        for node in &mut session.nodes {
            if forgotten.contains(&session.id.0, &node.id.0) && !node.is_forgotten() {
                *node = node.forgotten();
            }
        }
    }
    import::import_into(store, parsed, unit.first_path())
}

fn import_plain(root: &Path, home: &Home) -> Outcome {
    // The door only answers `is_inside_memory` here; its redactor is never called.
    let door = Intake::new(&home.memory, Redactor::builtin());
    let forgotten = Forgotten::of(&home.memory);
    import_folder(root, |unit| import_unit_plain(&door, &forgotten, &home.store, unit))
}

fn import_redacted(root: &Path, home: &Home) -> Outcome {
    let door = Intake::new(&home.memory, Redactor::builtin());
    let outcome = import_folder(root, |unit| door.import_unit_of_many(&home.store, unit));
    door.record(&outcome.summary.report.redacted);
    outcome
}

/// Every file imported, none failed, no session left out, every node new.
fn check(name: &str, corpus: &Corpus, outcome: &Outcome) {
    let summary = &outcome.summary;
    assert_eq!(outcome.failed, 0, "{name}: some files failed");
    assert_eq!(outcome.files, corpus.files, "{name}: not every file was imported");
    assert!(!summary.report.skipped.contains_key(WRITER_SESSION), "{name}: sessions left out");
    assert!(summary.sessions.iter().all(|s| s.nodes > 0 && s.new_nodes == s.nodes), "{name}");
    let sessions: std::collections::BTreeSet<_> =
        summary.sessions.iter().map(|s| &s.session).collect();
    eprintln!(
        "{name}: {} files in {} units, {} sessions, {} nodes, {} bad lines, {} redactions",
        outcome.files,
        outcome.units,
        sessions.len(),
        summary.nodes(),
        summary.report.bad_lines.len(),
        summary.report.redacted.values().sum::<usize>(),
    );
}

/// Every text the door redacts in the folder at `root`: each node's content, each session's
/// titles.
fn redactable_texts(root: &Path) -> Vec<String> {
    let mut texts = Vec::new();
    for unit in import::discover_auto(&[root.to_path_buf()]).units {
        let parsed = unit.parse().expect("the corpus parses (checked)");
        for session in parsed.sessions {
            texts.extend(session.title);
            texts.extend(session.fallback_title);
            texts.extend(session.nodes.into_iter().map(|node| node.content));
        }
    }
    texts
}

fn bench(c: &mut Criterion) {
    let Some(data) = scriptorium_testkit::data_dir() else {
        eprintln!("note: test data not found (SCRIPTORIUM_TEST_DATA); skipping the intake bench");
        return;
    };
    let (sources, ids) = sources(&data);
    if sources.is_empty() {
        eprintln!("note: no Claude Code or Codex transcript in the test data; skipping");
        return;
    }
    let corpus = build_corpus(&sources, &ids);
    eprintln!(
        "corpus: {} transcripts, {:.1} MB in {}",
        corpus.files,
        corpus.bytes as f64 / 1e6,
        corpus.root.display()
    );
    let plain = import_plain(&corpus.root, &fresh_home());
    check("plain", &corpus, &plain);
    let redacted = import_redacted(&corpus.root, &fresh_home());
    check("redacted", &corpus, &redacted);
    assert_eq!(plain.summary.nodes(), redacted.summary.nodes(), "both import the same nodes");

    let mut group = c.benchmark_group("intake");
    // Seconds per iteration: one iteration per sample, ten samples.
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(30));
    group.throughput(Throughput::Bytes(corpus.bytes));
    group.bench_function("import_150mb_plain", |b| {
        b.iter_batched(
            fresh_home,
            |home| {
                black_box(import_plain(&corpus.root, &home).summary.new_nodes());
                home
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("import_150mb_redacted", |b| {
        b.iter_batched(
            fresh_home,
            |home| {
                black_box(import_redacted(&corpus.root, &home).summary.new_nodes());
                home
            },
            BatchSize::PerIteration,
        );
    });
    let texts = redactable_texts(&corpus.root);
    let text_bytes: usize = texts.iter().map(String::len).sum();
    eprintln!("redactable text: {} texts, {:.1} MB", texts.len(), text_bytes as f64 / 1e6);
    let redactor = Redactor::builtin();
    group.throughput(Throughput::Bytes(text_bytes as u64));
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("redact_only_150mb", |b| {
        b.iter(|| {
            let mut redactions = 0;
            for text in &texts {
                redactions += redactor.redact(black_box(text)).counts.total();
            }
            black_box(redactions)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
