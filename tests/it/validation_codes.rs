//! Every validation code, triggered through the public transaction pipeline
//! (`begin → edit → validate`) on a real workspace on disk, each rejection leaving every byte of
//! the workspace and its revision unchanged.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use scriptorium_topics_format::source::{ArchiveRecord, TrustState, anchor_for};
use scriptorium_txn::validate::Limits;
use scriptorium_txn::{BeginOptions, ErrorCode, LockTimeout, Staged, Workspace};
use sha2::{Digest, Sha256};

/// Every file under `dir` with the SHA-256 of its bytes, except the lock file and transient
/// stages under `.scriptorium/txn/`.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).expect("list") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(root).expect("inside").to_string_lossy().into_owned();
            let meta = fs::symlink_metadata(&path).expect("stat");
            if meta.is_dir() {
                walk(root, &path, out);
            } else if !rel.ends_with("write.lock") && !rel.starts_with(".scriptorium/txn/") {
                let bytes = fs::read(&path).unwrap_or_default();
                out.insert(rel, hex::encode(Sha256::digest(bytes)));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn link(message: &str) -> String {
    format!(
        "../sources/openprogram/_v2/codes.md#{}",
        anchor_for(&format!("openprogram/codes/{message}"))
    )
}

/// A workspace with three archived messages (`u1`, `u2` trusted; `p1` pending) and one topic
/// citing `u1`, plus a second topic linking to the first's block.
fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::init(dir.path()).expect("init");
    let mut records = Vec::new();
    for (i, (message, trust)) in
        [("u1", TrustState::Trusted), ("u2", TrustState::Trusted), ("p1", TrustState::Pending)]
            .into_iter()
            .enumerate()
    {
        let mut r = ArchiveRecord::new("openprogram", "codes", message, i as u64, "user", "text");
        r.timestamp = Some("2024-05-01T10:00:00+00:00".into());
        r.trust_state = trust;
        records.push(r);
    }
    ws.archive_sources(&records, LockTimeout::DEFAULT).expect("archive");
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged
        .write_file(
            "topics/a.md",
            &format!(
                "# A\n\nA committed fact.[^e1]\n\n[^e1]: Time: `2024-05-01`; Sources: [one]({})\n",
                link("u1")
            ),
        )
        .expect("write");
    let installed = staged.validate().map_err(|r| format!("{:?}", r.violations()));
    installed.expect("valid").install().expect("install");
    let a = fs::read_to_string(dir.path().join("topics/a.md")).expect("read");
    let block = a.lines().find_map(|l| l.rsplit_once(" ^").map(|(_, id)| id.to_owned()));
    let block = block.expect("a block id");
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged
        .write_file(
            "topics/b.md",
            &format!(
                "# B\n\nSee [a](a.md#^{block}).[^e1]\n\n[^e1]: Time: `2024-05-01`; Sources: [one]({})\n",
                link("u1")
            ),
        )
        .expect("write");
    staged
        .validate()
        .map_err(|r| format!("{:?}", r.violations()))
        .expect("valid")
        .install()
        .expect("install");
    (dir, ws)
}

/// Runs `edit` in a fresh transaction and returns the codes of the rejection, asserting that
/// the workspace did not change.
fn rejected(
    dir: &Path,
    ws: &Workspace,
    options: BeginOptions,
    edit: impl FnOnce(&mut Staged, &Path),
) -> BTreeSet<ErrorCode> {
    let before = snapshot(dir);
    let revision = ws.revision().expect("revision");
    let mut staged = ws.begin(options).expect("begin");
    let stage = staged.path().expect("the stage").to_path_buf();
    edit(&mut staged, &stage);
    let Err(rejection) = staged.validate() else {
        panic!("the edit should have been rejected");
    };
    let codes = rejection.violations().iter().map(|v| v.code).collect();
    drop(rejection);
    assert_eq!(snapshot(dir), before, "a rejected transaction changes no byte");
    assert_eq!(ws.revision().expect("revision"), revision);
    codes
}

/// One edit of a stage (the stage, and its `topics/` directory on disk).
type Edit = Box<dyn FnOnce(&mut Staged, &Path)>;

fn fact(text: &str, message: &str) -> String {
    format!("# C\n\n{text}[^e1]\n\n[^e1]: Time: `2024-05-01`; Sources: [src]({})\n", link(message))
}

#[test]
fn every_validation_code_rejects_and_changes_nothing() {
    let (dir, ws) = workspace();
    let d = dir.path();
    let a = fs::read_to_string(d.join("topics/a.md")).expect("read");
    let block = a.lines().find_map(|l| l.rsplit_once(" ^").map(|(_, id)| id.to_owned()));
    let block = block.expect("block");
    let default = BeginOptions::default;

    let cases: Vec<(ErrorCode, BeginOptions, Edit)> = vec![
        (
            ErrorCode::InvalidTopicFormat,
            default(),
            Box::new(|s, _| {
                let text = "# C\n\nA fact.[^e1] ^abc12345\n";
                s.write_file("topics/c.md", text).expect("write");
            }),
        ),
        (
            ErrorCode::BlockIdRemoved,
            default(),
            Box::new(|s, _| {
                s.remove_file("topics/a.md").expect("remove");
                s.remove_file("topics/b.md").expect("remove");
            }),
        ),
        (
            ErrorCode::DanglingBlockLink,
            default(),
            Box::new(move |s, _| {
                let text = fact(&format!("See [gone](a.md#^{block}x)."), "u2");
                s.write_file("topics/c.md", &text).expect("write");
            }),
        ),
        (
            ErrorCode::TopicLinkNotBlock,
            default(),
            Box::new(|s, _| {
                s.write_file("topics/c.md", &fact("See [a](a.md).", "u2")).expect("write");
            }),
        ),
        (
            ErrorCode::MissingSourceReference,
            default(),
            Box::new(|s, _| {
                let text = "# C\n\nA fact.[^e1]\n\n[^e1]: Time: `2024-05-01`; Sources: [x](D9:9)\n";
                s.write_file("topics/c.md", text).expect("write");
            }),
        ),
        (
            ErrorCode::SourceNotTrusted,
            default(),
            Box::new(|s, _| {
                s.write_file("topics/c.md", &fact("A pending claim.", "p1")).expect("write");
            }),
        ),
        (
            ErrorCode::SourceNotInTransaction,
            BeginOptions { allowed_new_sources: Some(BTreeSet::new()), ..default() },
            Box::new(|s, _| {
                s.write_file("topics/c.md", &fact("A new fact.", "u2")).expect("write");
            }),
        ),
        (
            ErrorCode::SizeLimit,
            BeginOptions {
                limits: Limits { max_file_bytes: 64, ..Limits::default() },
                ..default()
            },
            Box::new(|s, _| {
                s.write_file("topics/c.md", &fact(&"long ".repeat(40), "u2")).expect("write");
            }),
        ),
        (
            ErrorCode::ReadOnlyPath,
            default(),
            Box::new(|_, stage| {
                fs::write(stage.join("notes.txt"), "not a topic").expect("write");
            }),
        ),
        (
            ErrorCode::PathOutsideWorkspace,
            default(),
            Box::new(|_, stage| {
                std::os::unix::fs::symlink("/etc/hostname", stage.join("linked.md"))
                    .expect("symlink");
            }),
        ),
    ];
    for (code, options, edit) in cases {
        let codes = rejected(d, &ws, options, edit);
        assert!(codes.contains(&code), "{code}: got {codes:?}");
    }
}

#[test]
fn sources_changed_between_begin_and_validate_is_refused() {
    let (dir, ws) = workspace();
    let archive = dir.path().join("sources/openprogram/_v2/codes.md");
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged.write_file("topics/c.md", &fact("A fact.", "u2")).expect("write");
    let mut changed = fs::read(&archive).expect("read");
    changed.extend_from_slice(b"\n");
    fs::write(&archive, &changed).expect("tamper");
    let before = snapshot(dir.path());
    let revision = ws.revision().expect("revision");
    let Err(rejection) = staged.validate() else {
        panic!("tampered sources must be refused");
    };
    assert!(rejection.violations().iter().any(|v| v.code == ErrorCode::SourcesChanged));
    drop(rejection);
    assert_eq!(snapshot(dir.path()), before, "nothing installed");
    assert_eq!(ws.revision().expect("revision"), revision);
}
