//! The index over a small workspace: incremental sync, the no-IO revision check, rebuild,
//! CJK, filters, trust and anchors.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use scriptorium_search::{Changes, ErrorCode, FileAccess, HitKind, Index, Query, RealFs, Stat};
use scriptorium_topics_format::source::{ArchiveRecord, TrustState, plan_append};

/// Counts every call through the seam.
#[derive(Default)]
struct CountingFs {
    calls: AtomicUsize,
}

impl CountingFs {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl FileAccess for CountingFs {
    fn stat(&self, path: &Path) -> io::Result<Option<Stat>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        RealFs.stat(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        RealFs.read(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        RealFs.read_dir(path)
    }
    fn write_atomic(&self, path: &Path, bytes: &[u8], synced: bool) -> io::Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        RealFs.write_atomic(path, bytes, synced)
    }
}

fn record(thread: &str, message: &str, speaker: &str, content: &str, ts: &str) -> ArchiveRecord {
    let mut r = ArchiveRecord::new("openprogram", thread, message, 1, "user", content);
    r.timestamp = Some(ts.to_owned());
    r.speaker_id = Some(speaker.to_lowercase());
    r.speaker_display = Some(speaker.to_owned());
    r
}

/// Archives `records` into the workspace (append), returning the written paths.
fn archive(root: &Path, records: &[ArchiveRecord]) -> Vec<String> {
    let mut tree = BTreeMap::new();
    for r in records {
        let rel = format!("sources/openprogram/_v2/{}.md", r.thread);
        if let Ok(text) = std::fs::read_to_string(root.join(&rel)) {
            tree.insert(rel, text);
        }
    }
    let plan = plan_append(records, &tree).expect("valid records");
    let mut written = Vec::new();
    for w in plan.writes {
        let path = root.join(&w.rel_path);
        std::fs::create_dir_all(path.parent().expect("test step")).expect("test step");
        std::fs::write(&path, &w.new_text).expect("test step");
        written.push(w.rel_path);
    }
    written
}

fn anchor_of(root: &Path, source_id: &str) -> (String, String) {
    let (provider, rest) = source_id.split_once('/').expect("test step");
    let (thread, _) = rest.split_once('/').expect("test step");
    let rel = format!("sources/{provider}/_v2/{thread}.md");
    let text = std::fs::read_to_string(root.join(&rel)).expect("test step");
    let scan = scriptorium_topics_format::source::scan(&rel, &text);
    (rel.clone(), scan.frame(source_id).expect("test step").anchor.to_owned())
}

/// A footnote definition citing `source_id` from `topics/<topic>`.
fn definition(root: &Path, topic: &str, label: &str, when: &str, source_id: &str) -> String {
    let (rel, anchor) = anchor_of(root, source_id);
    let depth = topic.matches('/').count() + 1;
    let up = "../".repeat(depth);
    format!("[^{label}]: Time: `{when}`; Sources: [src]({up}{rel}#{anchor})")
}

fn write_topic(root: &Path, topic: &str, text: &str) {
    let path = root.join("topics").join(topic);
    std::fs::create_dir_all(path.parent().expect("test step")).expect("test step");
    std::fs::write(path, text).expect("test step");
}

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// A workspace with two archives and two topic files.
fn workspace() -> Workspace {
    let dir = tempfile::tempdir().expect("test step");
    let root = dir.path();
    archive(
        root,
        &[
            record(
                "s1",
                "u1",
                "Craig",
                "I'm building a budget tracker in Flask.",
                "2024-03-15T10:00:00+08:00",
            ),
            record(
                "s1",
                "u2",
                "Craig",
                "Dave runs a bike shop in Leeds.",
                "2024-03-20T08:00:00+08:00",
            ),
            record("s2", "u1", "Lin", "我们讨论了写入流程和事务。", "2024-05-02T09:00:00+08:00"),
        ],
    );
    let mut pending = record(
        "s3",
        "u1",
        "Stranger",
        "The secret volcano lair is in Iceland.",
        "2024-06-01T00:00:00Z",
    );
    pending.trust_state = TrustState::Pending;
    archive(root, &[pending]);
    let d1 =
        definition(root, "projects/budget.md", "e-aaaaaaaaaa", "2024-03-15", "openprogram/s1/u1");
    let d2 = definition(root, "projects/budget.md", "e-bbbbbbbbbb", "2024-03", "openprogram/s1/u2");
    write_topic(
        root,
        "projects/budget.md",
        &format!(
            "# Budget\n\n## Status\n\nCraig is building a budget tracker in Flask.[^e-aaaaaaaaaa] ^6dfc15f1\n\n\
             Dave owns a bicycle repair business.[^e-bbbbbbbbbb] ^4d5ed8b5\n\n{d1}\n{d2}\n"
        ),
    );
    let d3 = definition(root, "notes/design.md", "e-cccccccccc", "2024-05-02", "openprogram/s2/u1");
    let d4 = definition(root, "notes/design.md", "e-dddddddddd", "2024", "openprogram/s3/u1");
    write_topic(
        root,
        "notes/design.md",
        &format!(
            "# 设计\n\n写入流程先归档证据再安装事务。[^e-cccccccccc] ^abc12345\n\n\
             The volcano lair hides a telescope.[^e-dddddddddd] ^def45678\n\n{d3}\n{d4}\n"
        ),
    );
    Workspace { dir }
}

fn ids(hits: &[scriptorium_search::Hit]) -> Vec<String> {
    hits.iter().map(|h| h.id.clone()).collect()
}

/// The IDs of the hits and of the matches they stand for ([`scriptorium_search::Hit::collapsed`]).
fn found(hits: &[scriptorium_search::Hit]) -> Vec<String> {
    hits.iter().flat_map(|h| std::iter::once(&h.id).chain(&h.collapsed)).cloned().collect()
}

#[test]
fn finds_blocks_and_sources_with_resolving_anchors() {
    let ws = workspace();
    let mut index = Index::open(ws.root()).expect("test step");
    let hits = index.search("r1", &Query::new("budget tracker Flask")).expect("test step");
    assert!(!hits.is_empty());
    let block = hits.iter().find(|h| h.kind == HitKind::Block).expect("the block");
    assert_eq!(block.id, "6dfc15f1");
    assert_eq!(block.path, "topics/projects/budget.md");
    assert_eq!(block.anchor, "#^6dfc15f1");
    assert_eq!(block.headings, ["Budget", "Status"]);
    assert_eq!(block.dates, ["2024-03-15"]);
    assert!(block.content.starts_with("[2024-03-15] Craig is building"));
    let text = std::fs::read_to_string(ws.root().join(&block.path)).expect("test step");
    assert!(text.contains(&format!(" {}\n", &block.anchor[1..])), "block anchor resolves");

    // The record the block cites is its evidence, not a hit of its own (one hit per fact).
    assert_eq!(block.collapsed, ["openprogram/s1/u1"]);
    assert!(!ids(&hits).contains(&"openprogram/s1/u1".to_owned()), "{hits:?}");
    let mut records = Query::new("budget tracker Flask");
    records.path_prefix = Some("sources".into());
    let hits = index.search("r1", &records).expect("test step");
    let source = hits.iter().find(|h| h.kind == HitKind::Source).expect("the source record");
    assert_eq!(source.id, "openprogram/s1/u1");
    assert_eq!(source.speaker_display.as_deref(), Some("Craig"));
    let archive = std::fs::read_to_string(ws.root().join(&source.path)).expect("test step");
    let anchor = source.anchor.strip_prefix('#').expect("test step");
    assert!(archive.contains(&format!("<a id=\"{anchor}\"></a>")), "source anchor resolves");
}

#[test]
fn incremental_update_sees_new_block_and_drops_deleted_one() {
    let ws = workspace();
    let root = ws.root();
    let mut index = Index::open(root).expect("test step");
    assert_eq!(
        ids(&index.search("r1", &Query::new("bicycle repair")).expect("test step")),
        ["4d5ed8b5"]
    );

    // Append an archive record, then edit the topic: delete one paragraph, add another.
    let written = archive(
        root,
        &[record(
            "s1",
            "u3",
            "Craig",
            "Craig adopted a greyhound named Pixel.",
            "2024-04-01T10:00:00Z",
        )],
    );
    let d1 =
        definition(root, "projects/budget.md", "e-aaaaaaaaaa", "2024-03-15", "openprogram/s1/u1");
    let d5 =
        definition(root, "projects/budget.md", "e-eeeeeeeeee", "2024-04-01", "openprogram/s1/u3");
    write_topic(
        root,
        "projects/budget.md",
        &format!(
            "# Budget\n\n## Status\n\nCraig is building a budget tracker in Flask.[^e-aaaaaaaaaa] ^6dfc15f1\n\n\
             Craig has a greyhound called Pixel.[^e-eeeeeeeeee] ^0a1b2c3d\n\n{d1}\n{d5}\n"
        ),
    );
    let mut paths = written;
    paths.push("topics/projects/budget.md".to_owned());
    let report =
        index.sync("r2", Some(&Changes { since: "r1".to_owned(), paths })).expect("test step");
    assert!(!report.full_walk);
    assert_eq!(report.reindexed, ["sources/openprogram/_v2/s1.md", "topics/projects/budget.md"]);

    let hits = index.search("r2", &Query::new("greyhound Pixel")).expect("test step");
    assert!(ids(&hits).contains(&"0a1b2c3d".to_owned()), "{hits:?}");
    assert!(found(&hits).contains(&"openprogram/s1/u3".to_owned()), "the appended record");
    assert!(
        !ids(&index.search("r2", &Query::new("bicycle repair")).expect("test step"))
            .contains(&"4d5ed8b5".to_owned())
    );

    // Without a hint, an unknown revision catches up from the manifest: only the changed file.
    let d1 =
        definition(root, "projects/budget.md", "e-aaaaaaaaaa", "2024-03-15", "openprogram/s1/u1");
    write_topic(
        root,
        "projects/budget.md",
        &format!(
            "# Budget\n\nCraig is building a budget tracker in Flask and Rust.[^e-aaaaaaaaaa] ^6dfc15f1\n\n{d1}\n"
        ),
    );
    let report = index.sync("r3", None).expect("test step");
    assert!(report.full_walk);
    assert_eq!(report.reindexed, ["topics/projects/budget.md"]);
    assert!(
        index
            .search("r3", &Query::new("greyhound Pixel"))
            .expect("test step")
            .iter()
            .all(|h| h.kind == HitKind::Source)
    );

    // Reopening reads the persisted revision and index.
    drop(index);
    let index = Index::open(root).expect("test step");
    assert_eq!(index.revision(), Some("r3"));
}

#[test]
fn unchanged_revision_search_does_no_file_io() {
    let ws = workspace();
    let fs = Arc::new(CountingFs::default());
    let mut index = Index::open_with(ws.root(), fs.clone()).expect("test step");
    index.search("r1", &Query::new("budget")).expect("test step");
    assert!(fs.calls() > 0, "the first search syncs");
    let before = fs.calls();
    for _ in 0..5 {
        assert!(!index.search("r1", &Query::new("budget tracker")).expect("test step").is_empty());
    }
    assert_eq!(fs.calls(), before, "no file access at an unchanged revision");
    // A new revision with nothing changed: stats only, no reads of unchanged files.
    index.search("r2", &Query::new("budget")).expect("test step");
    assert!(fs.calls() > before);
}

#[test]
fn missing_or_corrupt_index_is_rebuilt() {
    let ws = workspace();
    let mut index = Index::open(ws.root()).expect("test step");
    index.search("r1", &Query::new("budget")).expect("test step");
    drop(index);
    let dir = ws.root().join(".scriptorium/index");
    // tantivy's `meta.json` lives in two slots (see the crate's `directory` module): a torn or
    // garbled slot is as good as none.
    for slot in ["meta.json.slot0", "meta.json.slot1"] {
        if dir.join(slot).exists() {
            std::fs::write(dir.join(slot), "SCRSLOT1{ not json").expect("test step");
        }
    }
    let mut index = Index::open(ws.root()).expect("test step");
    assert_eq!(index.revision(), None);
    assert!(!index.search("r1", &Query::new("budget tracker")).expect("test step").is_empty());
    drop(index);
    std::fs::remove_dir_all(&dir).expect("test step");
    let mut index = Index::open(ws.root()).expect("test step");
    assert!(!index.search("r1", &Query::new("budget tracker")).expect("test step").is_empty());
}

#[test]
fn cjk_query_finds_cjk_text() {
    let ws = workspace();
    let mut index = Index::open(ws.root()).expect("test step");
    let hits = index.search("r1", &Query::new("写入流程")).expect("test step");
    assert!(ids(&hits).contains(&"abc12345".to_owned()), "{hits:?}");
    assert!(found(&hits).contains(&"openprogram/s2/u1".to_owned()));
}

#[test]
fn filters() {
    let ws = workspace();
    let mut index = Index::open(ws.root()).expect("test step");
    let q = |text: &str| Query::new(text);

    let mut prefix = q("Craig budget tracker");
    prefix.path_prefix = Some("projects".into());
    assert!(
        index
            .search("r1", &prefix)
            .expect("test step")
            .iter()
            .all(|h| h.path.starts_with("topics/projects/"))
    );
    prefix.path_prefix = Some("sources/openprogram/s1".into());
    let hits = index.search("r1", &prefix).expect("test step");
    assert!(!hits.is_empty() && hits.iter().all(|h| h.kind == HitKind::Source), "logical path");

    let mut dates = q("Craig Dave budget bicycle bike");
    dates.date_from = Some("2024-03-16".into());
    dates.date_to = Some("2024-03-31".into());
    let within = found(&index.search("r1", &dates).expect("test step"));
    assert!(within.contains(&"4d5ed8b5".to_owned()), "month 2024-03 overlaps: {within:?}");
    assert!(within.contains(&"openprogram/s1/u2".to_owned()));
    assert!(!within.contains(&"6dfc15f1".to_owned()));
    dates.date_from = Some("2024-04".into());
    dates.date_to = Some("2024-03".into());
    let err = index.search("r1", &dates).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    dates.date_from = Some("2024-13".into());
    assert_eq!(index.search("r1", &dates).unwrap_err().code(), ErrorCode::InvalidArgument);

    let mut speaker = q("budget tracker bike");
    speaker.speaker = Some("craig".into());
    let hits = index.search("r1", &speaker).expect("test step");
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|h| h.kind == HitKind::Source && h.speaker_id.as_deref() == Some("craig"))
    );
    speaker.speaker = Some("LIN".into());
    assert!(index.search("r1", &speaker).expect("test step").is_empty());
    speaker.include_sources = false;
    speaker.speaker = Some("craig".into());
    let err = index.search("r1", &speaker).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(err.code().as_str(), "INVALID_ARGUMENT");
    assert!(err.to_string().contains("topics-only"));

    let mut topics_only = q("budget tracker");
    topics_only.include_sources = false;
    assert!(
        index
            .search("r1", &topics_only)
            .expect("test step")
            .iter()
            .all(|h| h.kind == HitKind::Block)
    );

    let mut many = q("Craig");
    many.top_k = 50;
    assert!(index.search("r1", &many).expect("test step").len() <= 10);
}

#[test]
fn pending_blocks_and_sources_are_excluded() {
    let ws = workspace();
    let mut index = Index::open(ws.root()).expect("test step");
    assert!(index.search("r1", &Query::new("volcano lair")).expect("test step").is_empty());
}

#[test]
fn relevance_floor() {
    let ws = workspace();
    let mut index = Index::open(ws.root()).expect("test step");
    assert!(
        index.search("r1", &Query::new("what is the")).expect("test step").is_empty(),
        "stopwords only"
    );
    assert!(
        index
            .search("r1", &Query::new("quantum chromodynamics lecture"))
            .expect("test step")
            .is_empty()
    );
    assert!(
        index
            .search("r1", &Query::new("What is Craig's favourite opera singer?"))
            .expect("test step")
            .is_empty()
    );
    assert!(
        !index.search("r1", &Query::new("What is Craig building?")).expect("test step").is_empty()
    );
}

/// Regression: a hint names only what changed since its own revision. An index further behind
/// (a process archived a batch and died before indexing it; the next process installed the
/// topics citing it) took the hint as the whole change, stamped itself with the new revision
/// and never saw the archive: neither its records nor the blocks citing them were recalled.
#[test]
fn a_hint_from_a_revision_the_index_does_not_reflect_falls_back_to_the_manifest() {
    let ws = workspace();
    let root = ws.root();
    let mut index = Index::open(root).expect("test step");
    index.sync("r1", None).expect("test step");
    // r2: an archive append that was never indexed.
    archive(
        root,
        &[record(
            "s1",
            "u3",
            "Craig",
            "Craig adopted a greyhound named Pixel.",
            "2024-04-01T10:00:00Z",
        )],
    );
    // r3: a block citing it, hinted as a change from r2.
    let rel = "topics/projects/budget.md";
    let d5 =
        definition(root, "projects/budget.md", "e-eeeeeeeeee", "2024-04-01", "openprogram/s1/u3");
    let mut text = std::fs::read_to_string(root.join(rel)).expect("test step");
    text.push_str(&format!(
        "\nCraig has a greyhound called Pixel.[^e-eeeeeeeeee] ^0a1b2c3d\n\n{d5}\n"
    ));
    std::fs::write(root.join(rel), text).expect("test step");
    let hint = Changes { since: "r2".to_owned(), paths: vec![rel.to_owned()] };
    let report = index.sync("r3", Some(&hint)).expect("test step");
    assert!(report.full_walk, "the index is at r1, not r2");
    assert_eq!(report.reindexed, ["sources/openprogram/_v2/s1.md", rel]);
    let hits = index.search("r3", &Query::new("greyhound Pixel")).expect("test step");
    assert!(found(&hits).contains(&"openprogram/s1/u3".to_owned()), "the record: {hits:?}");
    assert!(ids(&hits).contains(&"0a1b2c3d".to_owned()), "the block citing it: {hits:?}");
}

/// Regression: a process killed while committing a sync leaves the delete files it wrote
/// (`<segment>.<opstamp>.del`) beside the old `meta.json` (kept in slots, see the crate's
/// `directory` module). The next sync starts again from the committed opstamp and, re-doing the same
/// operations, names its delete files the same: tantivy refused to create them
/// (`FileAlreadyExists`), and every search failed with `INDEX_ERROR` until an install with
/// another number of operations came along.
#[test]
fn a_sync_after_one_killed_while_committing_writes_its_delete_files_again() {
    killed_commit_then_sync(false);
}

/// The same with a torn list of the files tantivy created, as an earlier version stored it in
/// slots without `fsync`: the directory's segment files are the list, and the next save
/// removes the stored one.
#[test]
fn a_lost_managed_list_still_lets_the_next_sync_collect_what_a_killed_commit_left() {
    killed_commit_then_sync(true);
}

fn killed_commit_then_sync(lose_managed_list: bool) {
    let ws = workspace();
    let root = ws.root();
    let dir = root.join(".scriptorium/index");
    let mut index = Index::open(root).expect("test step");
    index.sync("r1", None).expect("test step");
    drop(index);
    let before = tempfile::tempdir().expect("test step");
    copy_files(&dir, before.path());

    // The sync the process was killed in: it re-indexes a file (deleting its documents).
    let hint = append_paragraph(root, "r1", 7, "Craig mentioned a theremin.");
    let mut index = Index::open(root).expect("test step");
    index.sync("r2", Some(&hint)).expect("test step");
    drop(index);
    // What the kill left: everything it wrote but the new `meta.json` (kept in two slots).
    for entry in std::fs::read_dir(&dir).expect("test step") {
        let path = entry.expect("test step").path();
        let name = path.file_name().expect("test step").to_string_lossy().into_owned();
        if !name.starts_with("meta.json")
            && (name.starts_with(".managed.json") || !before.path().join(&name).exists())
        {
            std::fs::copy(&path, before.path().join(&name)).expect("test step");
        }
    }
    assert!(
        std::fs::read_dir(before.path()).expect("test step").any(|e| e
            .expect("test step")
            .file_name()
            .to_string_lossy()
            .ends_with(".del")),
        "the killed commit wrote delete files"
    );
    std::fs::remove_dir_all(&dir).expect("test step");
    copy_files(before.path(), &dir);
    if lose_managed_list {
        for slot in [".managed.json.slot0", ".managed.json.slot1"] {
            std::fs::write(dir.join(slot), "SCRSLOT1 torn by a power loss").expect("test step");
        }
    }

    let mut index = Index::open(root).expect("test step");
    assert_eq!(index.revision(), Some("r1"), "the killed commit never happened");
    index.sync("r2", Some(&hint)).expect("the same sync again");
    assert_eq!(ids(&index.search("r2", &Query::new("theremin")).expect("test step")), ["00000007"]);
    for slot in [".managed.json.slot0", ".managed.json.slot1"] {
        assert!(!dir.join(slot).exists(), "{slot}: the list is the directory's segment files");
    }
}

fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("test step");
    for entry in std::fs::read_dir(from).expect("test step") {
        let path = entry.expect("test step").path();
        std::fs::copy(&path, to.join(path.file_name().expect("test step"))).expect("test step");
    }
}

/// Appends a paragraph to `topics/projects/budget.md`, returning the hint for it (a change
/// from revision `since`). It cites an archived, trusted record: uncited blocks are never
/// recallable.
fn append_paragraph(root: &Path, since: &str, n: usize, text: &str) -> Changes {
    append_citing(root, "topics/projects/budget.md", "e-aaaaaaaaaa", since, n, text)
}

/// Appends block `n` saying `text` and citing footnote `label` to the topic file `rel`,
/// returning the hint for it (a change from revision `since`).
fn append_citing(
    root: &Path,
    rel: &str,
    label: &str,
    since: &str,
    n: usize,
    text: &str,
) -> Changes {
    let mut body = std::fs::read_to_string(root.join(rel)).expect("test step");
    body.push_str(&format!("\n{text}[^{label}] ^{n:08x}\n"));
    std::fs::write(root.join(rel), body).expect("test step");
    Changes { since: since.to_owned(), paths: vec![rel.to_owned()] }
}

#[test]
fn one_writer_is_reused_across_syncs() {
    let ws = workspace();
    let root = ws.root();
    let mut index = Index::open(root).expect("test step");
    assert!(!index.holds_writer(), "opening takes no writer");
    index.sync("r1", None).expect("test step");
    assert!(index.holds_writer(), "the first update keeps the writer");
    let words = ["aardvark", "bassoon", "cormorant", "dulcimer", "echidna", "flugelhorn"];
    for (n, word) in words.iter().enumerate() {
        let since = format!("r{}", n + 1);
        let hint = append_paragraph(root, &since, n + 1, &format!("Craig mentioned a {word}."));
        let report = index.sync(&format!("r{}", n + 2), Some(&hint)).expect("test step");
        assert_eq!(report.reindexed, ["topics/projects/budget.md"]);
        assert!(index.holds_writer());
    }
    // Every paragraph of every sync is visible, and nothing is indexed twice.
    let revision = format!("r{}", words.len() + 1);
    for (n, word) in words.iter().enumerate() {
        let hits = index.search(&revision, &Query::new(*word)).expect("test step");
        assert_eq!(ids(&hits), [format!("{:08x}", n + 1)], "{word}");
    }
    let before = index.num_docs();
    index.sync(&revision, None).expect("test step");
    assert_eq!(index.num_docs(), before, "a known revision writes nothing");

    // The state survives a reopen with a new writer.
    drop(index);
    let mut index = Index::open(root).expect("test step");
    assert_eq!(index.revision(), Some(revision.as_str()));
    let hint = append_paragraph(root, &revision, 99, "Craig bought a gramophone.");
    index.sync("r99", Some(&hint)).expect("test step");
    assert_eq!(
        ids(&index.search("r99", &Query::new("gramophone")).expect("test step")),
        ["00000063"]
    );
    assert_eq!(ids(&index.search("r99", &Query::new("echidna")).expect("test step")), ["00000005"]);
}

/// An update's new segment goes to disk as one file, its pack, and its deletes as delete
/// files: a handful of new files per install instead of six per segment (on a filesystem where
/// creating a file among recently deleted ones is slow, most of an install's cost).
#[test]
fn an_updates_segment_is_written_as_one_pack() {
    let ws = workspace();
    let root = ws.root();
    let dir = root.join(".scriptorium/index");
    let mut index = Index::open(root).expect("test step");
    index.sync("r1", None).expect("test step");
    for n in 1..=3 {
        let before = segment_files(&dir);
        let hint = append_paragraph(root, &format!("r{n}"), n, &format!("Craig noted pk{n}x."));
        index.sync(&format!("r{}", n + 1), Some(&hint)).expect("test step");
        let new: Vec<String> = segment_files(&dir).difference(&before).cloned().collect();
        let packs = new.iter().filter(|name| name.ends_with(".pack")).count();
        assert_eq!(packs, 1, "update {n} wrote {new:?}");
        assert!(
            new.iter().all(|name| name.ends_with(".pack") || name.ends_with(".del")),
            "update {n} wrote {new:?}"
        );
    }
    // Found from a new handle, as another process would.
    drop(index);
    let mut index = Index::open(root).expect("test step");
    for n in 1..=3 {
        let hits = index.search("r4", &Query::new(format!("pk{n}x"))).expect("search");
        assert_eq!(ids(&hits), [format!("{n:08x}")], "paragraph {n}");
    }
}

/// A handle that updates again and again makes each next segment's writer beside the caller
/// after a commit (and takes it, or drops it unused for an update that only deletes): whatever
/// the sequence, every segment file left is one of the last commit's, and everything is found.
#[test]
fn segment_writers_made_ahead_leave_nothing_behind() {
    let ws = workspace();
    let root = ws.root();
    let dir = root.join(".scriptorium/index");
    let mut index = Index::open(root).expect("test step");
    index.sync("r1", None).expect("test step");
    let gone = "notes/gone.md";
    let mut revision = 1;
    let sync = |index: &mut Index, revision: &mut usize, paths: Vec<String>| {
        let hint = Changes { since: format!("r{revision}"), paths };
        *revision += 1;
        index.sync(&format!("r{revision}"), Some(&hint)).expect("test step");
    };
    for n in 1..=12usize {
        let paths = match n {
            4 => {
                let d = definition(root, gone, "e-aaaaaaaaaa", "2024-03-15", "openprogram/s1/u1");
                let text = format!("# Gone\n\nOboe gq1x.[^e-aaaaaaaaaa] ^00000fff\n\n{d}\n");
                write_topic(root, gone, &text);
                vec![format!("topics/{gone}")]
            }
            // An update that writes no document: only deletes.
            8 => {
                std::fs::remove_file(root.join("topics").join(gone)).expect("test step");
                vec![format!("topics/{gone}")]
            }
            _ => {
                let since = format!("r{revision}");
                append_paragraph(root, &since, n, &format!("Craig noted wq{n}x.")).paths
            }
        };
        sync(&mut index, &mut revision, paths);
    }
    let last = format!("r{revision}");
    index.finish_merges().expect("merges finish");
    for n in (1..=12usize).filter(|n| ![4, 8].contains(n)) {
        let hits = index.search(&last, &Query::new(format!("wq{n}x"))).expect("search");
        assert_eq!(ids(&hits), [format!("{n:08x}")], "paragraph {n} once");
    }
    assert!(index.search(&last, &Query::new("gq1x")).expect("search").is_empty());
    // Every segment of the last commit is one pack, and nothing else of a segment is left.
    let names = segment_files(&dir);
    let packs = names.iter().filter(|name| name.ends_with(".pack")).count();
    assert_eq!(packs, index.num_segments(), "{names:?}");
    assert!(
        names.iter().all(|name| name.ends_with(".pack") || name.ends_with(".del")),
        "{names:?}"
    );
    let deletes = names.iter().filter(|name| name.ends_with(".del")).count();
    assert!(deletes <= index.num_segments(), "{names:?}");
}

/// The segment files in the index directory `dir` (named by their segment's 32 hex digits).
fn segment_files(dir: &Path) -> std::collections::BTreeSet<String> {
    let names = scriptorium_testkit::file_names(dir).into_iter();
    names.filter(|name| name.as_bytes().get(32) == Some(&b'.')).collect()
}

/// One file edited again and again: each update deletes every document of the previous
/// update's segment, and a segment left without documents leaves the index, so the segments do
/// not pile up, and nothing is found twice.
#[test]
fn re_indexing_one_file_again_and_again_keeps_one_segment_for_it() {
    let ws = workspace();
    let root = ws.root();
    let mut index = Index::open(root).expect("test step");
    index.sync("r1", None).expect("test step");
    let base = index.num_segments();
    let before = index.num_docs();
    for n in 1..=30 {
        let hint = append_paragraph(root, &format!("r{n}"), n, &format!("Craig noted zq{n}x."));
        index.sync(&format!("r{}", n + 1), Some(&hint)).expect("test step");
        assert!(
            index.num_segments() <= base + 1,
            "{} segments after {n} updates",
            index.num_segments()
        );
    }
    for n in 1..=30 {
        let hits = index.search("r31", &Query::new(format!("zq{n}x"))).expect("search");
        assert_eq!(ids(&hits), [format!("{n:08x}")], "paragraph {n} once");
    }
    assert_eq!(index.num_docs(), before + 30, "every paragraph indexed once");
}

/// Updates of many files leave many small segments; the merges they start run beside the
/// updates and fold them, and after `finish_merges` every document is still found exactly once.
#[test]
fn merges_fold_the_small_segments_of_many_updates() {
    let ws = workspace();
    let root = ws.root();
    let mut index = Index::open(root).expect("test step");
    index.sync("r1", None).expect("test step");
    let before = index.num_docs();
    for n in 1..=24usize {
        let topic = format!("notes/n{n:02}.md");
        let d = definition(root, &topic, "e-aaaaaaaaaa", "2024-03-15", "openprogram/s1/u1");
        write_topic(
            root,
            &topic,
            &format!(
                "# N{n}\n\nOrchid oq{n}x bloomed.[^e-aaaaaaaaaa] ^{:08x}\n\n{d}\n",
                0x1000 + n
            ),
        );
        let hint = Changes { since: format!("r{n}"), paths: vec![format!("topics/{topic}")] };
        index.sync(&format!("r{}", n + 1), Some(&hint)).expect("test step");
    }
    index.finish_merges().expect("merges finish");
    assert!(!index.holds_writer(), "finishing releases the writer");
    assert_eq!(index.num_docs(), before + 24);
    assert!(index.num_segments() < 12, "{} segments after 24 updates", index.num_segments());
    for n in 1..=24usize {
        let hits = index.search("r25", &Query::new(format!("oq{n}x"))).expect("search");
        assert_eq!(ids(&hits), [format!("{:08x}", 0x1000 + n)], "paragraph {n} once");
    }
    // The state survives a reopen.
    drop(index);
    let mut index = Index::open(root).expect("test step");
    assert_eq!(ids(&index.search("r25", &Query::new("oq7x")).expect("search")), ["00001007"]);
}

#[test]
fn a_second_index_on_the_same_directory_is_busy_while_the_first_holds_the_writer() {
    let ws = workspace();
    let root = ws.root();
    let mut first = Index::open(root).expect("test step");
    first.sync("r1", None).expect("test step");
    assert!(first.holds_writer());

    // Reading at the revision the index reflects needs no writer.
    let mut second = Index::open(root).expect("test step");
    assert!(!second.search("r1", &Query::new("budget tracker")).expect("test step").is_empty());

    // Catching up does, and fails gracefully (retryable) while the first holds it.
    let hint = append_paragraph(root, "r1", 1, "Craig mentioned a zeppelin.");
    let error = second.sync("r2", Some(&hint)).expect_err("the writer is held");
    assert_eq!(error.code(), ErrorCode::Busy);
    assert!(error.is_retryable());
    let error = second.search("r2", &Query::new("zeppelin")).expect_err("the writer is held");
    assert_eq!(error.code(), ErrorCode::Busy);
    assert_eq!(second.revision(), Some("r1"), "a failed sync changes nothing");

    // Once released, the second can update, and then holds the writer itself.
    first.release_writer();
    assert!(!first.holds_writer());
    assert_eq!(
        ids(&second.search("r2", &Query::new("zeppelin")).expect("test step")),
        ["00000001"]
    );
    assert!(second.holds_writer());
    // The second brought the index to r2, whatever the first last saw.
    let hint = append_paragraph(root, "r2", 2, "Craig mentioned a xylophone.");
    assert_eq!(first.sync("r3", Some(&hint)).expect_err("held").code(), ErrorCode::Busy);
    drop(second);
    first.sync("r3", Some(&hint)).expect("test step");
    assert_eq!(
        ids(&first.search("r3", &Query::new("xylophone")).expect("test step")),
        ["00000002"]
    );
}

/// A 200 KB message of bracket runs took ~30 s to index (the link cleaning was quadratic); it
/// indexes like any message now, and the words on both sides of the soup find it (the whole
/// text was indexed, none of it swallowed as a link or comment).
#[test]
fn a_200_kb_bracket_message_is_indexed_and_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let soup = ["[", "[^", "[](", "[x]"].map(|unit| unit.repeat(50 * 1024 / unit.len())).concat();
    let content = format!("marzipan {soup} tangerine");
    archive(dir.path(), &[record("soup", "m1", "Ada", &content, "2024-03-15T10:00:00Z")]);
    let mut index = Index::open(dir.path()).expect("open");
    for word in ["marzipan", "tangerine"] {
        let hits = index.search("rev-1", &Query::new(word)).expect("search");
        assert_eq!(ids(&hits), ["openprogram/soup/m1"], "{word}");
        assert_eq!(hits[0].kind, HitKind::Source);
    }
}

/// A project scope: the project's topics (its directory and its single Python-style file) and
/// the shared ones, never another project's, and only the records of the project's archives.
#[test]
fn a_project_scope_sees_its_topics_the_shared_ones_and_its_sessions() {
    let dir = tempfile::tempdir().expect("test step");
    let root = dir.path();
    let alpha_archive = archive(
        root,
        &[record(
            "alpha-1",
            "u1",
            "Ana",
            "The deploy key rotates monthly.",
            "2024-03-01T00:00:00Z",
        )],
    );
    let beta_archive = archive(
        root,
        &[record("beta-1", "u1", "Ana", "The deploy key lives in vault.", "2024-03-02T00:00:00Z")],
    );
    let cite =
        |topic: &str, label: &str, source: &str| definition(root, topic, label, "2024-03", source);
    let topic = |path: &str, text: &str, id: &str, source: &str| {
        let def = cite(path, "e-aaaaaaaaaa", source);
        write_topic(root, path, &format!("# T\n\n{text}[^e-aaaaaaaaaa] ^{id}\n\n{def}\n"));
    };
    topic(
        "projects/alpha/deploy.md",
        "Alpha's deploy key rotates monthly.",
        "a1a1a1a1",
        "openprogram/alpha-1/u1",
    );
    topic(
        "projects/beta/deploy.md",
        "Beta's deploy key lives in vault.",
        "b2b2b2b2",
        "openprogram/beta-1/u1",
    );
    topic(
        "projects/alpha.md",
        "Alpha's old deploy key was revoked.",
        "d4d4d4d4",
        "openprogram/alpha-1/u1",
    );
    topic(
        "projects/beta.md",
        "Beta's deploy key is shared with ops.",
        "e5e5e5e5",
        "openprogram/beta-1/u1",
    );
    topic(
        "owner.md",
        "Ana wants every deploy key in a password manager.",
        "c3c3c3c3",
        "openprogram/alpha-1/u1",
    );
    let mut index = Index::open(root).expect("test step");
    let mut query = Query::new("deploy key");
    query.top_k = 10;
    query.min_coverage = 0.0;
    let everything = index.search("r1", &query).expect("test step");
    // Paths of the hits and of the records they stand for (`openprogram/<thread>/<message>` is
    // archived in `sources/openprogram/_v2/<thread>.md`).
    let paths = |hits: &[scriptorium_search::Hit]| {
        let archived = |id: &String| {
            let thread = id.split('/').nth(1).expect("a source id");
            format!("sources/openprogram/_v2/{thread}.md")
        };
        let mut paths: Vec<String> = hits
            .iter()
            .flat_map(|h| std::iter::once(h.path.clone()).chain(h.collapsed.iter().map(archived)))
            .collect();
        paths.sort();
        paths.dedup();
        paths
    };
    assert_eq!(paths(&everything).len(), 7, "unscoped: every topic and archive: {everything:?}");

    query.project =
        Some(scriptorium_search::ProjectScope::new("/srv/ana/code/Alpha", alpha_archive.clone()));
    let scoped = index.search("r1", &query).expect("test step");
    let mut expected = vec![
        alpha_archive[0].clone(),
        "topics/owner.md".to_owned(),
        "topics/projects/alpha.md".to_owned(),
        "topics/projects/alpha/deploy.md".to_owned(),
    ];
    expected.sort();
    assert_eq!(paths(&scoped), expected);
    assert!(!paths(&scoped).contains(&beta_archive[0]));

    // Topics only (as per-turn recall asks): the project's and the shared topics.
    query.include_sources = false;
    let topics = index.search("r1", &query).expect("test step");
    assert_eq!(
        paths(&topics),
        ["topics/owner.md", "topics/projects/alpha.md", "topics/projects/alpha/deploy.md"]
    );

    // A project with no topics and no sessions still sees the shared topics.
    query.project = Some(scriptorium_search::ProjectScope::new("/srv/gamma", Vec::new()));
    assert_eq!(paths(&index.search("r1", &query).expect("test step")), ["topics/owner.md"]);
}

/// A conversation archived as one session, with the helpers the ranking tests share.
fn conversation(turns: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("test step");
    let records: Vec<ArchiveRecord> = turns
        .iter()
        .map(|(message, speaker, text)| {
            record("talk", message, speaker, text, "2023-05-08T13:56:00Z")
        })
        .collect();
    archive(dir.path(), &records);
    std::fs::create_dir_all(dir.path().join("topics")).expect("test step");
    dir
}

#[test]
fn words_meet_their_other_forms() {
    let dir = conversation(&[
        ("m1", "Mel", "We painted the fence and went running."),
        ("m2", "Ana", "Totally unrelated chatter about tea."),
    ]);
    let mut index = Index::open(dir.path()).expect("test step");
    for query in ["painting fences", "Who runs?", "the paints"] {
        let hits = index.search("r1", &Query::new(query)).expect("test step");
        assert_eq!(ids(&hits).first().map(String::as_str), Some("openprogram/talk/m1"), "{query}");
    }
}

/// A short reply is found by the question it answers: the turns around a record are indexed
/// as its context (with a lower weight), within its own session only.
#[test]
fn a_reply_is_found_by_the_question_it_answers() {
    let dir = conversation(&[
        ("m1", "Caroline", "How did the adoption agency interview go?"),
        ("m2", "Melanie", "Really well, they loved us!"),
        ("m3", "Caroline", "So glad to hear it."),
    ]);
    archive(
        dir.path(),
        &[record("other", "m1", "Jon", "Really well, thanks.", "2023-05-09T10:00:00Z")],
    );
    let mut index = Index::open(dir.path()).expect("test step");
    let hits = index.search("r1", &Query::new("adoption agency interview")).expect("test step");
    let found = ids(&hits);
    assert_eq!(found[0], "openprogram/talk/m1", "the turn that says it ranks first: {hits:?}");
    assert!(found.contains(&"openprogram/talk/m2".to_owned()), "the reply: {hits:?}");
    assert!(!found.contains(&"openprogram/other/m1".to_owned()), "another session: {hits:?}");
}

/// A query naming a speaker ranks that speaker's own words above someone else's words about
/// them; the date's month is searchable by name.
#[test]
fn speakers_and_months_are_searchable() {
    let dir = conversation(&[
        ("m1", "Gina", "Jon, your dance studio idea sounds great."),
        ("m2", "Jon", "My dance studio opens next month."),
    ]);
    let mut index = Index::open(dir.path()).expect("test step");
    let hits = index.search("r1", &Query::new("Jon's dance studio")).expect("test step");
    assert_eq!(ids(&hits)[0], "openprogram/talk/m2", "{hits:?}");
    let hits = index.search("r1", &Query::new("dance studio in May")).expect("test step");
    assert_eq!(hits.len(), 2, "both turns are of May 2023: {hits:?}");
}

/// One hit per fact: a block and the record it cites are one hit (the block, with the record
/// as its evidence), and the same text twice is one hit.
#[test]
fn one_hit_per_fact() {
    let dir = conversation(&[
        ("m1", "Ana", "The owner prefers metric units."),
        ("m2", "Ana", "the owner   PREFERS metric units."),
    ]);
    let root = dir.path();
    let d1 = definition(root, "owner.md", "e-aaaaaaaaaa", "2023-05-08", "openprogram/talk/m1");
    write_topic(
        root,
        "owner.md",
        &format!("# Owner\n\nThe owner prefers metric units.[^e-aaaaaaaaaa] ^a1b2c3d4\n\n{d1}\n"),
    );
    let mut index = Index::open(root).expect("test step");
    let hits = index.search("r1", &Query::new("metric units")).expect("test step");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].kind, HitKind::Block);
    assert_eq!(hits[0].id, "a1b2c3d4");
    let mut collapsed = hits[0].collapsed.clone();
    collapsed.sort();
    assert_eq!(collapsed, ["openprogram/talk/m1", "openprogram/talk/m2"]);

    // Records only: the two copies are still one hit.
    let mut records = Query::new("metric units");
    records.path_prefix = Some("sources".into());
    let hits = index.search("r1", &records).expect("test step");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].collapsed.len(), 1, "{hits:?}");
}

/// A long prompt keeps its rarest words: a message of forty common words and one rare one
/// still finds the record with the rare one.
#[test]
fn a_long_query_keeps_its_rarest_words() {
    let filler: Vec<String> = (0..40).map(|n| format!("common{n}")).collect();
    let chatter = filler.join(" ");
    let mut turns: Vec<(String, String)> =
        (0..5).map(|n| (format!("m{n}"), chatter.clone())).collect();
    turns.push(("rare".into(), "The xylophone is tuned.".into()));
    let refs: Vec<(&str, &str, &str)> =
        turns.iter().map(|(m, t)| (m.as_str(), "Ana", t.as_str())).collect();
    let dir = conversation(&refs);
    let mut index = Index::open(dir.path()).expect("test step");
    let mut query = Query::new(format!("{chatter} xylophone"));
    query.min_coverage = 0.0;
    let hits = index.search("r1", &query).expect("test step");
    assert!(ids(&hits).contains(&"openprogram/talk/rare".to_owned()), "{hits:?}");
}

/// The real filesystem, with a boot identity the test sets (a reboot is a new one).
struct BootFs {
    boot: std::sync::Mutex<String>,
}

impl BootFs {
    fn new(boot: &str) -> Arc<BootFs> {
        Arc::new(BootFs { boot: std::sync::Mutex::new(boot.to_owned()) })
    }
}

impl FileAccess for BootFs {
    fn stat(&self, path: &Path) -> io::Result<Option<Stat>> {
        RealFs.stat(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealFs.read(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        RealFs.read_dir(path)
    }
    fn write_atomic(&self, path: &Path, bytes: &[u8], synced: bool) -> io::Result<()> {
        RealFs.write_atomic(path, bytes, synced)
    }
    fn boot_id(&self) -> Option<String> {
        Some(self.boot.lock().expect("test step").clone())
    }
}

/// Flips one byte in the middle of the largest segment file, as a power loss may leave it.
fn damage_a_segment_file(dir: &Path) {
    let largest = std::fs::read_dir(dir)
        .expect("test step")
        .map(|e| e.expect("test step").path())
        .filter(|p| {
            p.file_name().is_some_and(|n| n.to_string_lossy().as_bytes().get(32) == Some(&b'.'))
        })
        .max_by_key(|p| std::fs::metadata(p).expect("test step").len())
        .expect("a segment file");
    let mut bytes = std::fs::read(&largest).expect("test step");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&largest, bytes).expect("test step");
}

#[test]
fn an_index_written_without_fsync_is_checked_once_after_a_reboot() {
    let ws = workspace();
    let root = ws.root();
    let dir = root.join(".scriptorium/index");
    let mut index = Index::open_with(root, BootFs::new("boot-a")).expect("test step");
    index.sync("r1", None).expect("test step");
    drop(index);

    // A reboot that kept every file: the index is checked, kept, and the check recorded.
    let index = Index::open_with(root, BootFs::new("boot-b")).expect("test step");
    assert_eq!(index.revision(), Some("r1"), "an intact index is kept");
    assert_eq!(
        std::fs::read_to_string(dir.join("scriptorium-boot-checked")).expect("recorded"),
        "boot-b"
    );
    drop(index);

    // A damaged file in the same boot is not looked for again (nothing can have been lost)...
    let hint = append_paragraph(root, "r1", 7, "Craig mentioned a theremin.");
    let mut index = Index::open_with(root, BootFs::new("boot-b")).expect("test step");
    index.sync("r2", Some(&hint)).expect("test step");
    drop(index);
    // ...but after a reboot it makes the index start again, and the next sync fills it.
    damage_a_segment_file(&dir);
    let mut index = Index::open_with(root, BootFs::new("boot-c")).expect("test step");
    assert_eq!(index.revision(), None, "a damaged index is rebuilt");
    assert_eq!(ids(&index.search("r2", &Query::new("theremin")).expect("test step")), ["00000007"]);
}

#[test]
fn after_a_reboot_a_manifest_of_another_commit_is_dropped() {
    let ws = workspace();
    let root = ws.root();
    let dir = root.join(".scriptorium/index");
    let mut index = Index::open_with(root, BootFs::new("boot-a")).expect("test step");
    index.sync("r1", None).expect("test step");
    let hint = append_paragraph(root, "r1", 7, "Craig mentioned a theremin.");
    index.sync("r2", Some(&hint)).expect("test step");
    drop(index);
    // The power loss kept the manifest of `r2` but the index's commit of `r1`: stand in for it
    // by naming another commit in the manifest.
    let manifest = dir.join("scriptorium-manifest.json");
    let text = std::fs::read_to_string(&manifest).expect("test step");
    assert!(text.contains("\"revision\":\"r2\""), "{text}");
    std::fs::write(&manifest, text.replace("\"revision\":\"r2\"", "\"revision\":\"r9\""))
        .expect("test step");
    let mut index = Index::open_with(root, BootFs::new("boot-b")).expect("test step");
    assert_eq!(index.revision(), Some("r2"));
    // Its stamps are not trusted: the next catch-up reads every file again.
    let report = index.sync("r3", None).expect("test step");
    assert!(report.full_walk);
    assert!(report.reindexed.len() > 2, "every file re-read: {report:?}");
    assert_eq!(ids(&index.search("r3", &Query::new("theremin")).expect("test step")), ["00000007"]);
}

#[test]
fn an_update_prepared_ahead_is_published_only_once_the_install_happened() {
    let ws = workspace();
    let root = ws.root();
    let mut index = Index::open(root).expect("test step");
    index.sync("r1", None).expect("test step");
    // The transaction's file: staged beside the live one (as the engine stages it).
    let rel = "topics/projects/budget.md";
    let staged = root.join("staged-budget.md");
    let mut text = std::fs::read_to_string(root.join(rel)).expect("test step");
    text.push_str("\nCraig mentioned a theremin.[^e-aaaaaaaaaa] ^00000007\n");
    std::fs::write(&staged, &text).expect("test step");
    let stat = RealFs.stat(&staged).expect("test step").expect("staged");
    let mut overlay = scriptorium_search::Overlay::default();
    overlay.insert(rel, Some((stat, text.into_bytes())));
    let hint = Changes { since: "r1".to_owned(), paths: vec![rel.to_owned()] };

    // The install failed: nothing is published.
    let outcome = index.sync_ahead(&hint, &overlay, || None).expect("test step");
    assert_eq!(outcome, scriptorium_search::Ahead::Abandoned);
    assert_eq!(index.revision(), Some("r1"));
    assert!(index.search("r1", &Query::new("theremin")).expect("test step").is_empty());

    // It happened: the prepared segment is published at the installed revision.
    let outcome = index.sync_ahead(&hint, &overlay, || Some("r2".to_owned())).expect("test step");
    assert!(matches!(outcome, scriptorium_search::Ahead::Committed(_)), "{outcome:?}");
    assert_eq!(index.revision(), Some("r2"));
    assert_eq!(ids(&index.search("r2", &Query::new("theremin")).expect("test step")), ["00000007"]);

    // An index that is not at the transaction's base prepares nothing and asks nothing.
    let stale = Changes { since: "r1".to_owned(), paths: vec![rel.to_owned()] };
    let outcome = index
        .sync_ahead(&stale, &overlay, || panic!("not asked when nothing was prepared"))
        .expect("test step");
    assert_eq!(outcome, scriptorium_search::Ahead::Behind);
}

/// Appends a paragraph citing the pending record `openprogram/s3/u1` to
/// `topics/notes/design.md`; the hint for it (a change from revision `since`).
fn append_lair(root: &Path, since: &str, n: usize, text: &str) -> Changes {
    append_citing(root, "topics/notes/design.md", "e-dddddddddd", since, n, text)
}

/// Writes `sources/openprogram/_v2/s3.md` again, its one record (the workspace's pending
/// `openprogram/s3/u1`) now in trust state `trust`.
fn set_s3_trust(root: &Path, trust: TrustState) -> Changes {
    let rel = "sources/openprogram/_v2/s3.md";
    let mut lair = record(
        "s3",
        "u1",
        "Stranger",
        "The secret volcano lair is in Iceland.",
        "2024-06-01T00:00:00Z",
    );
    lair.trust_state = trust;
    let plan = plan_append(&[lair], &BTreeMap::new()).expect("valid records");
    let [write] = plan.writes.as_slice() else { panic!("one archive") };
    assert_eq!(write.rel_path, rel);
    let before = std::fs::read_to_string(root.join(rel)).expect("test step");
    assert_ne!(before, write.new_text, "the trust changed");
    std::fs::write(root.join(rel), &write.new_text).expect("test step");
    Changes { since: String::new(), paths: vec![rel.to_owned()] }
}

fn finds(index: &mut Index, revision: &str, word: &str) -> bool {
    let hits = index.search(revision, &Query::new(word)).expect("test step");
    hits.iter().any(|h| h.kind == HitKind::Block && h.content.contains(word))
}

#[test]
fn kept_source_facts_follow_a_change_of_trust_by_this_or_another_handle() {
    let ws = workspace();
    let root = ws.root();
    let mut index = Index::open(root).expect("test step");
    index.sync("r1", None).expect("test step");
    // A block citing a pending record is not recalled; its trust is now known to the handle.
    let hint = append_lair(root, "r1", 1, "The lair has a moat.");
    index.sync("r2", Some(&hint)).expect("test step");
    assert!(!finds(&mut index, "r2", "moat"));
    // The record becomes trusted (its archive changed): the citing block is indexed again.
    let hint = Changes { since: "r2".to_owned(), ..set_s3_trust(root, TrustState::Trusted) };
    index.sync("r3", Some(&hint)).expect("test step");
    assert!(finds(&mut index, "r3", "moat"));
    // A later update that touches no archive sees the new trust, not the one it knew.
    let hint = append_lair(root, "r3", 2, "The lair has a drawbridge.");
    index.sync("r4", Some(&hint)).expect("test step");
    assert!(finds(&mut index, "r4", "drawbridge"));
    // Another handle commits a change of trust: this handle's next update looks again.
    index.release_writer();
    let mut other = Index::open(root).expect("test step");
    let hint = Changes { since: "r4".to_owned(), ..set_s3_trust(root, TrustState::Pending) };
    other.sync("r5", Some(&hint)).expect("test step");
    drop(other);
    let hint = append_lair(root, "r5", 3, "The lair has a catapult.");
    index.sync("r6", Some(&hint)).expect("test step");
    assert!(!finds(&mut index, "r6", "catapult"));
    assert!(!finds(&mut index, "r6", "drawbridge"));
}
