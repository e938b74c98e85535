//! Transaction pipeline tests: begin, edit, install, recovery, faults, concurrency, archiving.
//!
//! Every test builds its workspace in a fresh temp directory with a fixed clock and seeded IDs,
//! so two runs of one scenario produce the same transaction IDs and the same bytes.

mod archive;
mod basics;
mod cache;
mod concurrency;
mod content;
mod faults;
mod perms;
mod truth;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use scriptorium_topics_format::source::ArchiveRecord;
use scriptorium_txn::validate::Required;
use scriptorium_txn::{
    BeginOptions, Clock, Fs, Installed, LockTimeout, Options, RealFs, SeqIds, Workspace,
};
use sha2::{Digest, Sha256};

/// A clock stuck at 2024-04-02T09:00:00Z.
#[derive(Debug)]
pub(crate) struct FixedClock;

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_712_048_400)
    }
}

/// Deterministic options over `fs`.
pub(crate) fn options(fs: Arc<dyn Fs>, seed: u64) -> Options {
    Options {
        fs,
        clock: Arc::new(FixedClock),
        ids: Arc::new(SeqIds::new(seed)),
        ..Options::default()
    }
}

/// `openprogram/garden/u<i>` for i in 1..=n, trusted.
pub(crate) fn records(range: std::ops::RangeInclusive<u64>) -> Vec<ArchiveRecord> {
    range
        .map(|i| {
            let mut record = ArchiveRecord::new(
                "openprogram",
                "garden",
                format!("u{i}"),
                i,
                "user",
                format!("Message number {i} about the garden."),
            );
            record.timestamp = Some("2024-04-02T09:14:00+02:00".into());
            record
        })
        .collect()
}

/// A topic file with one record per fact, each citing `openprogram/garden/u<source>`
/// through a local label (normalization mints the IDs).
pub(crate) fn topic(title: &str, facts: &[(String, u64)]) -> String {
    let mut text = format!("# {title}\n");
    for (i, (fact, _)) in facts.iter().enumerate() {
        text.push_str(&format!("\n{fact}[^e{i}]\n"));
    }
    text.push('\n');
    for (i, (_, source)) in facts.iter().enumerate() {
        text.push_str(&format!(
            "[^e{i}]: Time: `2024-04-02`; Sources: [s{source}](openprogram/garden/u{source})\n"
        ));
    }
    text
}

/// The standard fixture: sources u1–u5 archived; `topics/people/dana.md` with two records and
/// `topics/projects/garden.md` with three, installed by one transaction.
pub(crate) fn fixture(root: &Path) -> Workspace {
    fixture_with(root, Arc::new(RealFs))
}

pub(crate) fn fixture_with(root: &Path, fs: Arc<dyn Fs>) -> Workspace {
    let ws = Workspace::init_with(root, options(fs, 7)).expect("init");
    ws.archive_sources(&records(1..=5), LockTimeout::DEFAULT).expect("archive");
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged
        .write_file(
            "topics/people/dana.md",
            &topic(
                "Dana",
                &[("Dana prefers plain language.".into(), 1), ("Dana lives in Lyon.".into(), 2)],
            ),
        )
        .expect("write");
    staged
        .write_file(
            "topics/projects/garden.md",
            &topic(
                "Garden planner",
                &[
                    ("The planner is written in Rust.".into(), 3),
                    ("It stores data in SQLite.".into(), 4),
                    ("Tomatoes go in the south bed.".into(), 5),
                ],
            ),
        )
        .expect("write");
    staged.validate().expect("valid").install().expect("install");
    ws
}

/// Every file under `root` as (path, sha256), sorted, minus the lock file and open stages
/// (tests check those with [`stages`]). The revision record
/// is included byte for byte unless `normalize_revision`, which keeps only what is
/// independent of inode numbers and mtimes (counter, transaction, digests, per-file hashes).
pub(crate) fn tree_state(root: &Path, normalize_revision: bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            let rel = path.strip_prefix(root).expect("inside").to_string_lossy().into_owned();
            let kind = entry.file_type().expect("type");
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            // The lock, stages, the spare tree, the file the next intent is written into (the
            // last one's bytes, never read) and the catalog (derived, checked by hash when
            // read) are not state.
            if rel == ".scriptorium/write.lock"
                || rel == ".scriptorium/intent.next"
                || rel == ".scriptorium/catalog"
                || rel.starts_with(".scriptorium/txn/")
            {
                continue;
            }
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).expect("link");
                out.push((rel, format!("symlink:{}", target.display())));
                continue;
            }
            let bytes = std::fs::read(&path).expect("read");
            let hash = if normalize_revision && rel == ".scriptorium/revision" {
                let record: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
                let files: Vec<String> = record["files"]
                    .as_array()
                    .expect("files")
                    .iter()
                    .map(|f| format!("{}={}", f["path"], f["sha256"]))
                    .collect();
                format!(
                    "{} {} {} {} [{}]",
                    record["counter"],
                    record["txn_id"],
                    record["topics"],
                    record["runtime"],
                    files.join(",")
                )
            } else {
                hex::encode(Sha256::digest(&bytes))
            };
            out.push((rel, hash));
        }
    }
    out.sort();
    out
}

/// The stage directories left in `.scriptorium/txn/` (not the `spare` tree an install leaves
/// for the next `begin` to recycle: it is no stage, and recovery removes it).
pub(crate) fn stages(root: &Path) -> Vec<String> {
    std::fs::read_dir(root.join(".scriptorium/txn"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name != "spare" && name != "spare.json" && name != "spare-stage")
                .collect()
        })
        .unwrap_or_default()
}

/// Reads a live topic file.
pub(crate) fn live(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).expect("read topic")
}

/// One transaction that replaces `old` by `new` in `path` (workspace-relative).
pub(crate) fn replace(
    ws: &Workspace,
    path: &str,
    old: &str,
    new: &str,
    opts: BeginOptions,
) -> scriptorium_txn::Result<Installed> {
    let mut staged = ws.begin(opts)?;
    let text = staged.read_file(path)?.expect("file exists");
    assert!(text.contains(old), "{path} does not contain {old:?}");
    staged.write_file(path, &text.replacen(old, new, 1))?;
    staged.validate()?.install()
}

/// One transaction that adds `topics/facts/<name>.md` with one record citing u<source>.
pub(crate) fn add_fact(
    ws: &Workspace,
    name: &str,
    source: u64,
    opts: BeginOptions,
) -> scriptorium_txn::Result<Installed> {
    let mut staged = ws.begin(opts)?;
    staged.write_file(
        &format!("topics/facts/{name}.md"),
        &topic(name, &[(format!("Fact {name} holds."), source)]),
    )?;
    staged.validate()?.install()
}

/// Options that let several blocks disappear (agents).
pub(crate) fn agent() -> BeginOptions {
    BeginOptions { required: Required::StillPresent, ..BeginOptions::default() }
}

/// `text` without the record whose line contains `needle`, and without its definition.
pub(crate) fn drop_record(text: &str, needle: &str) -> String {
    let line = text.lines().find(|l| l.contains(needle)).expect("record present");
    let label = line.split("[^").nth(1).and_then(|rest| rest.split(']').next()).expect("label");
    let definition = format!("[^{label}]:");
    text.lines()
        .filter(|l| !l.contains(needle) && !l.starts_with(&definition))
        .map(|l| format!("{l}\n"))
        .collect()
}
