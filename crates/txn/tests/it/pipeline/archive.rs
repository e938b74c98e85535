//! Source archiving (see `docs/format.md#appending`): idempotent, preflighted before any write,
//! refusing truncated archives, symlinks and escaping paths; a sync's merged archive may only
//! extend the archive, its frames aside that the other clone forgot or redacted.

use scriptorium_topics_format::rewrite::rewrite_archive;
use scriptorium_topics_format::source::ArchiveRecord;
use scriptorium_topics_format::source::frame::append_frames_to;
use scriptorium_txn::{ArchiveExtension, ErrorCode, LockTimeout, Workspace};

use super::{fixture, records, tree_state};

fn record(provider: &str, thread: &str, message: &str) -> ArchiveRecord {
    let mut record = ArchiveRecord::new(provider, thread, message, 1, "user", "Hello.");
    record.timestamp = Some("2024-04-02T09:14:00+02:00".into());
    record
}

#[test]
fn archiving_is_idempotent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let first = ws.archive_sources(&records(6..=8), LockTimeout::DEFAULT).expect("archive");
    assert_eq!(first.changed_files, ["sources/openprogram/_v2/garden.md"]);
    assert_eq!(first.source_ids.len(), 3);
    let before = tree_state(dir.path(), false);
    let again = ws.archive_sources(&records(6..=8), LockTimeout::DEFAULT).expect("archive");
    assert!(again.changed_files.is_empty());
    assert_eq!(again.source_ids, first.source_ids);
    assert_eq!(again.revision, first.revision);
    assert_eq!(tree_state(dir.path(), false), before);
    // A batch mixing old and new records writes only the new frame.
    let mixed = ws.archive_sources(&records(8..=9), LockTimeout::DEFAULT).expect("archive");
    assert_eq!(mixed.source_ids, ["openprogram/garden/u8", "openprogram/garden/u9"]);
    let text = std::fs::read_to_string(dir.path().join("sources/openprogram/_v2/garden.md"))
        .expect("read");
    assert_eq!(text.matches("<!-- source-id:openprogram/garden/u8 -->").count(), 1);
}

#[test]
fn a_collision_is_refused_before_any_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let before = tree_state(dir.path(), false);
    let revision = ws.revision().expect("revision");
    // Against an existing directory entry: `OpenProgram` vs `openprogram`.
    let err = ws
        .archive_sources(&[record("OpenProgram", "garden", "x1")], LockTimeout::DEFAULT)
        .expect_err("collision");
    assert!(err.to_string().contains("source archive path collision"), "{err}");
    // Within one batch (case spelling), together with a valid record.
    let err = ws
        .archive_sources(
            &[
                record("newprov", "t", "m1"),
                record("NewProv", "t", "m2"),
                record("openprogram", "garden", "u42"),
            ],
            LockTimeout::DEFAULT,
        )
        .expect_err("collision");
    assert!(err.to_string().contains("collision"), "{err}");
    assert_eq!(tree_state(dir.path(), false), before);
    assert!(!dir.path().join("sources/newprov").exists());
    assert_eq!(ws.revision().expect("revision"), revision);
}

#[test]
fn a_truncated_archive_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let path = dir.path().join("sources/openprogram/_v2/garden.md");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, &text[..text.len() - 20]).expect("truncate");
    let ws = Workspace::open(ws.root()).expect("reopen");
    let before = tree_state(dir.path(), false);
    let err = ws.archive_sources(&records(6..=6), LockTimeout::DEFAULT).expect_err("truncated");
    assert_eq!(err.code(), ErrorCode::CorruptState);
    assert!(err.to_string().contains("invalid or truncated v2 archive"), "{err}");
    assert_eq!(tree_state(dir.path(), false), before);
}

#[test]
fn symlinks_in_sources_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let outside = tempfile::tempdir().expect("outside");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("sources/evil")).expect("link");
    let err = ws
        .archive_sources(&[record("evil", "t", "m1")], LockTimeout::DEFAULT)
        .expect_err("symlinked provider directory");
    assert_eq!(err.code(), ErrorCode::PathOutsideWorkspace, "{err}");
    assert_eq!(std::fs::read_dir(outside.path()).expect("read").count(), 0);

    // A symlinked archive file.
    let target = outside.path().join("t.md");
    std::fs::write(&target, "x").expect("write");
    std::fs::create_dir_all(dir.path().join("sources/other/_v2")).expect("mkdir");
    std::os::unix::fs::symlink(&target, dir.path().join("sources/other/_v2/t.md")).expect("link");
    let err = ws
        .archive_sources(&[record("other", "t", "m1")], LockTimeout::DEFAULT)
        .expect_err("symlinked archive");
    assert_eq!(err.code(), ErrorCode::PathOutsideWorkspace, "{err}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "x");
}

#[test]
fn archives_are_created_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    ws.archive_sources(&[record("newprov", "t1", "m1")], LockTimeout::DEFAULT).expect("archive");
    let mode =
        |p: &str| std::fs::metadata(dir.path().join(p)).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode("sources/newprov"), 0o700);
    assert_eq!(mode("sources/newprov/_v2"), 0o700);
    assert_eq!(mode("sources/newprov/_v2/t1.md"), 0o600);
}

/// The other clone redacted the archive (`scriptorium redact`) and archived a record since: the
/// merge keeps its redacted frames over this clone's originals, and the extension installs it.
/// Any other change of an archived record is refused, and so is the way back.
#[test]
fn a_merged_archive_may_replace_records_by_their_redactions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let path = "sources/openprogram/_v2/garden.md";
    let file = dir.path().join(path);
    let current = std::fs::read_to_string(&file).expect("archive");
    let redact =
        |text: &str| text.contains("garden").then(|| text.replace("garden", "[REDACTED:owner-1]"));
    let redacted = rewrite_archive(path, &current, &redact).expect("complete").expect("changed");
    let theirs = append_frames_to(&redacted, &[records(6..=6)[0].render()]);
    let merged =
        scriptorium_topics_format::merge::merge_archive(path, Some(&current), Some(&theirs))
            .expect("merges")
            .expect("text");
    assert_eq!(merged, theirs);
    let extend = |current: &str, merged: &str| {
        let extension = ArchiveExtension {
            rel_path: path.into(),
            current: Some(current.to_owned()),
            merged: merged.to_owned(),
        };
        ws.extend_archives(&[extension], LockTimeout::DEFAULT)
    };

    // Another text for a record, not its redaction.
    let other = current.replace("about the garden", "about the forest");
    let before = tree_state(dir.path(), false);
    let err = extend(&current, &other).expect_err("not an extension");
    assert_eq!(err.code(), ErrorCode::AppendOnlyRequired, "{err}");
    assert_eq!(tree_state(dir.path(), false), before);

    let outcome = extend(&current, &merged).expect("a redaction extends the archive");
    assert_eq!(outcome.changed_files, [path]);
    assert_ne!(outcome.revision, outcome.previous_revision);
    assert_eq!(std::fs::read_to_string(&file).expect("archive"), merged);

    // The originals do not come back.
    let back = append_frames_to(&current, &[records(6..=6)[0].render()]);
    let err = extend(&merged, &back).expect_err("not an extension");
    assert_eq!(err.code(), ErrorCode::AppendOnlyRequired, "{err}");
    assert_eq!(std::fs::read_to_string(&file).expect("archive"), merged);
}
