//! Regressions of "no success for nothing": a change that would drop written text is refused,
//! a transaction that changes nothing installs nothing, dropped files leave no empty
//! directories, the workspace ID survives the loss of its file, the revision counter never
//! wraps, and a NUL byte never reaches a topic.

use scriptorium_txn::{BeginOptions, ErrorCode, Workspace, restore_workspace_id};

use super::{fixture, live, stages, tree_state};

/// Stages `text` at `path` and validates; returns the violations (empty when it installed).
fn try_write(ws: &Workspace, path: &str, text: &str) -> Vec<(ErrorCode, String, u32, String)> {
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged.write_file(path, text).expect("write");
    match staged.validate() {
        Ok(validated) => {
            validated.install().expect("install");
            Vec::new()
        }
        Err(rejected) => rejected
            .violations()
            .iter()
            .map(|v| (v.code, v.path.clone().unwrap_or_default(), v.line, v.message.clone()))
            .collect(),
    }
}

#[test]
fn an_uncited_new_topic_is_refused_instead_of_vanishing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let before = tree_state(dir.path(), false);
    let violations =
        try_write(&ws, "topics/core.md", "# Core\n\nThe owner wants only e2e tests.\n");
    assert_eq!(violations.len(), 1, "{violations:?}");
    let (code, path, line, message) = &violations[0];
    assert_eq!(*code, ErrorCode::UncitedParagraph);
    assert_eq!((path.as_str(), *line), ("topics/core.md", 3));
    assert!(message.contains("\"The owner wants only e2e tests.\""), "{message}");
    assert!(message.contains("would be dropped") && message.contains("[^e1]"), "{message}");
    assert_eq!(tree_state(dir.path(), false), before);
    assert!(stages(dir.path()).is_empty());
}

#[test]
fn an_uncited_section_appended_to_a_topic_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let text = live(dir.path(), "topics/people/dana.md");
    let grown = format!("{text}\n## Hobbies\n\nDana paints on Sundays.\n\n```\nkeep me\n```\n");
    let before = tree_state(dir.path(), false);
    let violations = try_write(&ws, "topics/people/dana.md", &grown);
    let lines: Vec<(ErrorCode, u32)> = violations.iter().map(|v| (v.0, v.2)).collect();
    let first = text.lines().count() as u32 + 4;
    assert_eq!(
        lines,
        [(ErrorCode::UncitedParagraph, first), (ErrorCode::UncitedParagraph, first + 2)],
        "{violations:?}"
    );
    assert_eq!(tree_state(dir.path(), false), before);
}

#[test]
fn an_uncited_paragraph_beside_records_names_the_missing_citation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let text = live(dir.path(), "topics/people/dana.md");
    let edited = text.replacen("\n\n", "\n\nDana has a cat.\n\n", 1);
    let violations = try_write(&ws, "topics/people/dana.md", &edited);
    assert_eq!(violations.len(), 1, "{violations:?}");
    let (code, _, line, message) = &violations[0];
    assert_eq!((*code, *line), (ErrorCode::UncitedParagraph, 3));
    assert!(message.starts_with("paragraph cites no source: \"Dana has a cat.\""), "{message}");
    assert!(!message.contains("block ID"), "{message}");
}

#[test]
fn a_heading_left_empty_by_deleting_its_records_is_pruned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let mut staged = ws.begin(super::agent()).expect("begin");
    let text = staged.read_file("topics/people/dana.md").expect("read").expect("exists");
    let text = format!("{text}\n## Empty\n");
    staged.write_file("topics/people/dana.md", &text).expect("write");
    let installed = staged.validate().expect("a bare heading is structure").install();
    let installed = installed.expect("install");
    assert!(installed.noop, "an empty section is pruned, so nothing changed");
    assert!(!live(dir.path(), "topics/people/dana.md").contains("## Empty"));
}

#[test]
fn an_identical_edit_installs_nothing_and_keeps_the_revision() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let before = tree_state(dir.path(), false);
    let revision = ws.revision().expect("revision");
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    let text = staged.read_file("topics/people/dana.md").expect("read").expect("exists");
    staged.write_file("topics/people/dana.md", &text).expect("write");
    let installed = staged.validate().expect("valid").install().expect("install");
    assert!(installed.noop);
    assert!(installed.changed_files.is_empty());
    assert_eq!(installed.revision, revision);
    assert_eq!(ws.revision().expect("revision"), revision);
    assert_eq!(tree_state(dir.path(), false), before, "a no-op wrote bytes");
}

#[test]
fn a_dropped_file_leaves_no_empty_directory_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    let text = super::topic("Deep", &[("A deep fact.".into(), 4)]);
    staged.write_file("topics/a/b/c/deep.md", &text).expect("write");
    staged.validate().expect("valid").install().expect("install");
    assert!(dir.path().join("topics/a/b/c/deep.md").is_file());
    let mut staged = ws.begin(super::agent()).expect("begin");
    staged.remove_file("topics/a/b/c/deep.md").expect("remove");
    staged.validate().expect("valid").install().expect("install");
    assert!(!dir.path().join("topics/a").exists(), "empty directories were installed");
    // Empty directories made outside a transaction go with the next install.
    std::fs::create_dir_all(dir.path().join("topics/x/y")).expect("mkdir");
    super::replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("install");
    assert!(!dir.path().join("topics/x").exists());
    assert!(dir.path().join("topics/people/dana.md").is_file());
}

#[test]
fn a_lost_workspace_id_is_restored_from_the_revision_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = fixture(dir.path()).workspace_id().clone();
    std::fs::remove_file(dir.path().join(".scriptorium/workspace-id")).expect("rm");
    let ws = Workspace::open(dir.path()).expect("open");
    assert_eq!(ws.workspace_id(), &id);
    let text = std::fs::read_to_string(dir.path().join(".scriptorium/workspace-id")).expect("id");
    assert_eq!(text, format!("{id}\n"));
}

#[test]
fn a_lost_workspace_id_is_never_minted_anew_in_a_workspace_with_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = fixture(dir.path()).workspace_id().clone();
    // A revision record written before the ID was recorded in it.
    let record_path = dir.path().join(".scriptorium/revision");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record_path).expect("read")).expect("json");
    record.as_object_mut().expect("object").remove("workspace_id");
    std::fs::write(&record_path, format!("{record}\n")).expect("write");
    std::fs::write(dir.path().join(".scriptorium/workspace-id"), "garbage\n").expect("write");
    let error = Workspace::open(dir.path()).expect_err("refused");
    assert_eq!(error.code(), ErrorCode::WorkspaceIdMissing);
    assert!(error.to_string().contains("scriptorium repair --workspace-id"), "{error}");
    // The documented repair restores the known ID; it never replaces an ID in use.
    std::fs::remove_file(dir.path().join(".scriptorium/workspace-id")).expect("rm");
    restore_workspace_id(dir.path(), &id).expect("restore");
    let ws = Workspace::open(dir.path()).expect("open");
    assert_eq!(ws.workspace_id(), &id);
    let other = scriptorium_txn::WorkspaceId::parse("w-00000000").expect("id");
    let error = restore_workspace_id(dir.path(), &other).expect_err("in use");
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert_eq!(Workspace::open(dir.path()).expect("open").workspace_id(), &id);
}

#[test]
fn the_revision_counter_never_wraps() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(fixture(dir.path()));
    let record_path = dir.path().join(".scriptorium/revision");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record_path).expect("read")).expect("json");
    record["counter"] = u64::MAX.into();
    std::fs::write(&record_path, format!("{record}\n")).expect("write");
    let ws = Workspace::open(dir.path()).expect("open");
    let before = tree_state(dir.path(), false);
    let error =
        super::replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
            .expect_err("refused");
    assert_eq!(error.code(), ErrorCode::CorruptState, "{error}");
    assert_eq!(tree_state(dir.path(), false), before);
    let error = ws
        .archive_sources(&super::records(6..=6), scriptorium_txn::LockTimeout::DEFAULT)
        .expect_err("refused");
    assert_eq!(error.code(), ErrorCode::CorruptState, "{error}");
    assert_eq!(tree_state(dir.path(), false), before);
}

#[test]
fn a_nul_byte_never_reaches_a_topic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let text = live(dir.path(), "topics/people/dana.md");
    let line = text.lines().position(|l| l.contains("Lyon")).expect("Lyon") as u32 + 1;
    let violations = try_write(&ws, "topics/people/dana.md", &text.replacen("Lyon", "Ly\0on", 1));
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!((violations[0].0, violations[0].2), (ErrorCode::InvalidTopicFormat, line));
    assert!(violations[0].3.contains("NUL byte"), "{violations:?}");
}

/// Regression: a file whose name is not UTF-8 in `topics/` (no topic can name it) made every
/// transaction fail. It is carried over unchanged, and the revision stays consistent.
#[test]
fn a_file_with_a_non_utf8_name_is_carried_over_and_blocks_nothing() {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let topics = dir.path().join("topics");
    let file = topics.join(std::ffi::OsStr::from_bytes(b"notes-\xff.md"));
    let folder = topics.join(std::ffi::OsStr::from_bytes(b"dir-\xfe"));
    std::fs::write(&file, b"not memory\n").expect("write");
    std::fs::create_dir(&folder).expect("mkdir");
    std::fs::write(folder.join("inner.md"), b"inner\n").expect("write");
    for round in ["Paris", "Rome"] {
        let text = live(dir.path(), "topics/people/dana.md");
        let old = if round == "Paris" { "Lyon" } else { "Paris" };
        let installed =
            super::replace(&ws, "topics/people/dana.md", old, round, BeginOptions::default())
                .expect("installs despite the foreign file");
        assert!(!installed.noop);
        assert_eq!(ws.revision().expect("revision"), installed.revision, "revision drifted");
        assert!(live(dir.path(), "topics/people/dana.md").contains(round), "{text}");
        assert_eq!(std::fs::read(&file).expect("kept"), b"not memory\n");
        assert_eq!(std::fs::read(folder.join("inner.md")).expect("kept"), b"inner\n");
    }
    assert!(!ws.revision_state().expect("state").topics_edited_outside);
}

/// Regression: an overlong name reached the filesystem and came back as an IO error (500).
#[test]
fn a_path_no_filesystem_can_hold_is_a_bad_request() {
    let long = format!("topics/{}.md", "n".repeat(300));
    let error = scriptorium_txn::writable_path(&long).expect_err("refused");
    assert_eq!(error.code(), ErrorCode::InvalidArgument, "{error}");
    let deep = format!("topics/{}x.md", "d/".repeat(1600));
    assert_eq!(
        scriptorium_txn::writable_path(&deep).expect_err("refused").code(),
        ErrorCode::InvalidArgument
    );
    let fine = format!("topics/{}.md", "n".repeat(252));
    assert!(scriptorium_txn::writable_path(&fine).is_ok());
}

#[test]
fn a_batch_another_writer_installed_meanwhile_is_refused_not_written_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let batch = || BeginOptions {
        batch: Some(scriptorium_txn::Batch::new(&["openprogram/s/u3"])),
        ..BeginOptions::default()
    };
    // Two writers of one session read the same owed batch; the first installs it.
    let first = super::add_fact(&ws, "first", 3, batch()).expect("the first write installs");
    let after_first = tree_state(dir.path(), false);
    // The second began after that install (so no revision conflict warns it) and writes the
    // same batch again: the install refuses it under the lock and changes nothing.
    let error = super::add_fact(&ws, "second", 3, batch()).expect_err("the batch was installed");
    assert_eq!(error.code(), ErrorCode::BatchInstalled, "{error}");
    assert!(error.to_string().contains(first.txn_id.as_str()), "{error}");
    assert_eq!(tree_state(dir.path(), false), after_first, "nothing installed twice");
    assert!(!dir.path().join("topics/facts/second.md").exists());
    // Another batch installs as usual.
    let other = BeginOptions {
        batch: Some(scriptorium_txn::Batch::new(&["openprogram/s/u4"])),
        ..BeginOptions::default()
    };
    super::add_fact(&ws, "third", 4, other).expect("a new batch installs");
}
