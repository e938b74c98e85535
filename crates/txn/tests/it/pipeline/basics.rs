//! The pipeline end to end: what an install changes, what a rejection leaves, the IO checks,
//! compare-and-set, the lock, observers, the revision, stage cleanup and recovery of stages.

use std::fs::{File, OpenOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scriptorium_txn::{
    BeginOptions, Counters, ErrorCode, InstallEvent, InstallObserver, LockTimeout, Observation,
    Options, RealFs, Revision, Workspace, writable_path,
};

use super::{agent, drop_record, fixture, live, options, replace, stages, tree_state};

#[test]
fn install_changes_exactly_the_edited_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let before = tree_state(dir.path(), false);
    let revision = ws.revision().expect("revision");

    let installed = replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("install");

    assert_eq!(installed.changed_files, ["topics/people/dana.md"]);
    assert_ne!(installed.revision, revision);
    assert_eq!(installed.base_revision, revision);
    assert_eq!(ws.revision().expect("revision"), installed.revision);
    let after = tree_state(dir.path(), false);
    let changed: Vec<&str> = after
        .iter()
        .filter(|entry| !before.contains(entry))
        .map(|(path, _)| path.as_str())
        .collect();
    assert_eq!(changed, [".scriptorium/revision", "topics/people/dana.md"]);
    assert_eq!(after.len(), before.len());
    assert!(live(dir.path(), "topics/people/dana.md").contains("Dana lives in Paris."));
    assert!(stages(dir.path()).is_empty());
}

#[test]
fn installed_files_are_normalized_and_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged
        .write_file(
            "topics/people/luis.md",
            &super::topic("Luis", &[("Luis grows beans.".into(), 3)]),
        )
        .expect("write");
    let validated = staged.validate().expect("valid");
    assert_eq!(validated.changed_files(), ["topics/people/luis.md"]);
    let installed = validated.install().expect("install");
    assert_eq!(installed.block_ids.len(), 1);
    assert_eq!(installed.evidence_ids.len(), 1);
    assert_eq!(installed.evidence_ids[0].label, "e0");
    let text = live(dir.path(), "topics/people/luis.md");
    let block = installed.block_ids.values().next().expect("one block");
    assert!(
        text.contains(&format!("Luis grows beans.[^{}] ^{block}", installed.evidence_ids[0].id))
    );
    assert!(text.contains("../../sources/openprogram/_v2/garden.md#source-"), "{text}");
    // u3 was cited before (garden.md), so nothing new is covered.
    assert!(installed.covered.is_empty());
    // Creation order: the new block comes after the five committed ones.
    let runtime: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".scriptorium/runtime.json")).expect("runtime"),
    )
    .expect("json");
    assert_eq!(runtime["creation_order"][block.as_str()], 5);
    assert_eq!(runtime["creation_order"].as_object().expect("object").len(), 6);
}

#[test]
fn covered_lists_the_transactions_evidence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    ws.archive_sources(&super::records(6..=7), LockTimeout::DEFAULT).expect("archive");
    let allowed = ["openprogram/garden/u6", "openprogram/garden/u7", "openprogram/garden/u1"]
        .map(str::to_owned)
        .into();
    let opts = BeginOptions { allowed_new_sources: Some(allowed), ..BeginOptions::default() };
    let installed = super::add_fact(&ws, "six", 6, opts).expect("install");
    let covered: Vec<&str> = installed.covered.iter().map(String::as_str).collect();
    // u1 is cited by the tree (committed before) and is in the set; u7 is not cited.
    assert_eq!(covered, ["openprogram/garden/u1", "openprogram/garden/u6"]);

    let installed = super::add_fact(&ws, "seven", 7, BeginOptions::default()).expect("install");
    let covered: Vec<&str> = installed.covered.iter().map(String::as_str).collect();
    assert_eq!(covered, ["openprogram/garden/u7"]);
}

#[test]
fn rejected_edit_leaves_the_workspace_byte_identical() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let before = tree_state(dir.path(), false);
    let revision = ws.revision().expect("revision");

    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    let text = staged.read_file("topics/people/dana.md").expect("read").expect("exists");
    let kept = drop_record(&text, "Lyon");
    staged.write_file("topics/people/dana.md", &kept).expect("write");
    let rejected = staged.validate().expect_err("a committed block was removed");
    assert_eq!(
        rejected.violations().iter().map(|v| v.code).collect::<Vec<_>>(),
        [ErrorCode::BlockIdRemoved],
        "{rejected}"
    );
    // The stage comes back with the edit as typed.
    let staged = rejected.into_staged();
    assert_eq!(staged.read_file("topics/people/dana.md").expect("read"), Some(kept));
    drop(staged);

    assert_eq!(tree_state(dir.path(), false), before);
    assert_eq!(ws.revision().expect("revision"), revision);
    assert!(stages(dir.path()).is_empty());

    // Agents may delete blocks.
    let mut staged = ws.begin(agent()).expect("begin");
    let text = staged.read_file("topics/people/dana.md").expect("read").expect("exists");
    staged.write_file("topics/people/dana.md", &drop_record(&text, "Lyon")).expect("write");
    staged.validate().expect("valid").install().expect("install");
    assert!(!live(dir.path(), "topics/people/dana.md").contains("Lyon"));
}

#[test]
fn reset_rolls_the_stage_back_for_a_repair_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged.remove_file("topics/people/dana.md").expect("remove");
    let mut staged = staged.validate().expect_err("blocks removed").into_staged();
    staged.reset().expect("reset");
    assert_eq!(
        staged.read_file("topics/people/dana.md").expect("read"),
        Some(live(dir.path(), "topics/people/dana.md"))
    );
    assert_eq!(staged.baseline().block_ids().len(), 5);
    let text = staged.read_file("topics/projects/garden.md").expect("read").expect("exists");
    staged
        .write_file("topics/projects/garden.md", &text.replace("south bed", "north bed"))
        .expect("write");
    let installed = staged.validate().expect("valid").install().expect("install");
    assert_eq!(installed.changed_files, ["topics/projects/garden.md"]);
}

#[test]
fn io_checks_refuse_what_is_not_a_topic_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let before = tree_state(dir.path(), false);
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("x.md"), "# Outside\n").expect("write");

    type Edit<'a> = Box<dyn Fn(&std::path::Path) + 'a>;
    let cases: Vec<(&str, ErrorCode, Edit<'_>)> = vec![
        (
            "symlink",
            ErrorCode::PathOutsideWorkspace,
            Box::new(|stage| {
                std::os::unix::fs::symlink(outside.path().join("x.md"), stage.join("link.md"))
                    .expect("symlink");
            }),
        ),
        (
            "txt",
            ErrorCode::ReadOnlyPath,
            Box::new(|stage| std::fs::write(stage.join("notes.txt"), "x").expect("write")),
        ),
        (
            "non-utf8",
            ErrorCode::InvalidTopicFormat,
            Box::new(|stage| std::fs::write(stage.join("bad.md"), [0xff, 0xfe]).expect("write")),
        ),
    ];
    for (name, code, edit) in cases {
        let mut staged = ws.begin(BeginOptions::default()).expect("begin");
        staged.edit(|stage| edit(stage)).expect("stage");
        let rejected = staged.validate().expect_err(name);
        assert_eq!(
            rejected.violations().iter().map(|v| v.code).collect::<Vec<_>>(),
            [code],
            "{name}: {rejected}"
        );
        drop(rejected);
        assert_eq!(tree_state(dir.path(), false), before, "{name}");
        assert!(stages(dir.path()).is_empty(), "{name}");
    }
}

#[test]
fn sources_changed_after_begin_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    let text = staged.read_file("topics/people/dana.md").expect("read").expect("exists");
    staged.write_file("topics/people/dana.md", &text.replace("Lyon", "Nice")).expect("write");
    ws.archive_sources(&super::records(6..=6), LockTimeout::DEFAULT).expect("archive");
    let before = tree_state(dir.path(), false);
    let rejected = staged.validate().expect_err("sources changed");
    assert_eq!(
        rejected.violations().iter().map(|v| v.code).collect::<Vec<_>>(),
        [ErrorCode::SourcesChanged]
    );
    drop(rejected);
    assert_eq!(tree_state(dir.path(), false), before);
}

#[test]
fn compare_and_set_at_begin_and_at_install() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let stale = Revision::new("0-0000000000000000");
    let err = ws
        .begin(BeginOptions { base_revision: Some(stale.clone()), ..BeginOptions::default() })
        .expect_err("stale");
    assert_eq!(err.code(), ErrorCode::ConcurrentUpdate);
    assert!(err.is_retryable());
    let revision = ws.revision().expect("revision");
    match &err {
        scriptorium_txn::Error::ConcurrentUpdate { base_revision, revision: now } => {
            assert_eq!(*base_revision, stale);
            assert_eq!(*now, revision);
        }
        other => panic!("unexpected {other:?}"),
    }

    let base = BeginOptions { base_revision: Some(revision.clone()), ..BeginOptions::default() };
    let mut first = ws.begin(base.clone()).expect("begin");
    let mut second = ws.begin(base).expect("begin");
    for (staged, city) in [(&mut first, "Paris"), (&mut second, "Rome")] {
        let text = staged.read_file("topics/people/dana.md").expect("read").expect("exists");
        staged.write_file("topics/people/dana.md", &text.replace("Lyon", city)).expect("write");
    }
    let first = first.validate().expect("valid");
    let second = second.validate().expect("valid");
    first.install().expect("first wins");
    let before = tree_state(dir.path(), false);
    let err = second.install().expect_err("second loses");
    assert_eq!(err.code(), ErrorCode::ConcurrentUpdate);
    assert_eq!(tree_state(dir.path(), false), before);
    assert!(live(dir.path(), "topics/people/dana.md").contains("Paris"));
    assert!(stages(dir.path()).is_empty());
}

#[test]
fn a_held_lock_is_busy_and_names_the_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let holder = OpenOptions::new().write(true).open(ws.lock_path()).expect("open lock");
    holder.lock().expect("lock");
    let timeout =
        LockTimeout { timeout: Duration::from_millis(120), poll: Duration::from_millis(20) };
    let err = ws
        .begin(BeginOptions { lock_timeout: timeout, ..BeginOptions::default() })
        .expect_err("busy");
    assert_eq!(err.code(), ErrorCode::Busy);
    assert!(err.is_retryable());
    assert!(err.to_string().contains("write.lock"), "{err}");
    let err = ws.archive_sources(&super::records(9..=9), timeout).expect_err("busy");
    assert_eq!(err.code(), ErrorCode::Busy);
    drop(holder);
    replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("free again");
}

#[test]
fn writable_paths_follow_the_reference_rules() {
    assert_eq!(writable_path("topics/a/b.md").expect("ok"), "a/b.md");
    assert_eq!(writable_path("topics/./note.md").expect("ok"), "note.md");
    for (path, code) in [
        ("../outside.md", ErrorCode::PathOutsideWorkspace),
        ("/etc/passwd.md", ErrorCode::PathOutsideWorkspace),
        ("topics/../x.md", ErrorCode::PathOutsideWorkspace),
        ("sources/x.md", ErrorCode::ReadOnlyPath),
        ("topics/x.txt", ErrorCode::ReadOnlyPath),
        ("core.md", ErrorCode::ReadOnlyPath),
    ] {
        assert_eq!(writable_path(path).expect_err(path).code(), code, "{path}");
    }
}

#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<(String, usize)>>,
    fail: bool,
}

impl InstallObserver for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn installed(&self, event: &InstallEvent<'_>) -> Observation {
        self.seen
            .lock()
            .expect("poisoned")
            .push((event.installed.txn_id.to_string(), event.tree.units().count()));
        Observation {
            report: Some(std::sync::Arc::new(event.changes.len())),
            failure: self.fail.then(|| "index unavailable".to_owned()),
        }
    }
}

#[test]
fn observers_see_installs_and_their_failure_never_uninstalls() {
    let dir = tempfile::tempdir().expect("tempdir");
    fixture(dir.path());
    let ok = Arc::new(Recorder::default());
    let failing = Arc::new(Recorder { fail: true, ..Recorder::default() });
    let ws = Workspace::open_with(
        dir.path(),
        Options { observers: vec![ok.clone(), failing.clone()], ..Options::default() },
    )
    .expect("open");
    let installed = replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("install");
    assert_eq!(ok.seen.lock().expect("poisoned").clone(), [(installed.txn_id.to_string(), 5)]);
    assert_eq!(installed.observer_failures.len(), 1);
    assert_eq!(installed.observer_failures[0].observer, "recorder");
    assert_eq!(installed.observer_failures[0].message, "index unavailable");
    assert_eq!(ws.revision().expect("revision"), installed.revision);
    assert!(live(dir.path(), "topics/people/dana.md").contains("Paris"));
}

#[test]
fn a_transaction_that_writes_nothing_adopts_an_outside_edit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    // Another program rewrites a paragraph by hand, keeping its block ID and citation; the
    // transaction writes nothing, so its stage is filled only to validate and install that.
    let path = dir.path().join("topics/people/dana.md");
    let text = std::fs::read_to_string(&path).expect("read");
    let edited = text.replacen("Dana prefers", "Dana much prefers", 1);
    assert_ne!(edited, text);
    std::fs::write(&path, &edited).expect("write");
    let staged = ws.begin(BeginOptions::default()).expect("begin");
    let installed = staged.validate().expect("the edit validates").install().expect("install");
    assert!(!installed.noop);
    assert_eq!(installed.adopted, ["topics/people/dana.md"]);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), edited);
    // And a transaction after it writes nothing, changes nothing, installs nothing.
    let staged = ws.begin(BeginOptions::default()).expect("begin");
    assert!(staged.validate().expect("valid").install().expect("install").noop);
}

#[test]
fn an_install_numbers_the_ids_of_the_outside_edits_it_adopts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    // A paragraph added by hand, with its own block ID, citing Dana's first evidence.
    let path = dir.path().join("topics/people/dana.md");
    let text = std::fs::read_to_string(&path).expect("read");
    let first = text.lines().find(|l| l.starts_with("Dana prefers")).expect("a record");
    let citation = first.split("[^").nth(1).and_then(|r| r.split(']').next()).expect("label");
    let added = format!("{first}\n\nDana keeps bees.[^{citation}] ^abcd1234");
    std::fs::write(&path, text.replacen(first, &added, 1)).expect("write");
    let installed =
        replace(&ws, "topics/projects/garden.md", "Rust", "Rust 2024", BeginOptions::default())
            .expect("install");
    assert_eq!(installed.adopted, ["topics/people/dana.md"]);
    let runtime: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".scriptorium/runtime.json")).expect("runtime"),
    )
    .expect("json");
    // Five committed blocks numbered 0-4: the adopted one is next.
    assert_eq!(runtime["creation_order"]["abcd1234"], 5, "{runtime}");
}

#[test]
fn revision_ignores_runtime_noise_and_sees_outside_edits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let revision = ws.revision().expect("revision");
    let runtime = dir.path().join(".scriptorium");
    std::fs::write(runtime.join("writer-status.json"), "{\"version\":1}").expect("write");
    std::fs::write(runtime.join("session-end.json"), "{}").expect("write");
    std::fs::create_dir_all(runtime.join("index")).expect("mkdir");
    std::fs::write(runtime.join("index/meta.json"), "{}").expect("write");
    std::fs::write(dir.path().join(".scriptorium-bm25.json"), "{}").expect("write");
    File::open(ws.lock_path()).expect("lock").lock().expect("lock");
    assert_eq!(ws.revision().expect("revision"), revision);
    let state = ws.revision_state().expect("state");
    assert!(!state.topics_edited_outside && !state.sources_changed_outside);

    // An edit outside a transaction, keeping the size.
    let path = dir.path().join("topics/people/dana.md");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("Lyon", "Caen")).expect("write");
    let moved = ws.revision().expect("revision");
    assert_ne!(moved, revision);
    assert!(ws.revision_state().expect("state").topics_edited_outside);
    // A transaction based on the old revision is refused; one based on the new one works and
    // keeps the outside edit.
    let stale = BeginOptions { base_revision: Some(revision), ..BeginOptions::default() };
    assert_eq!(ws.begin(stale).expect_err("stale").code(), ErrorCode::ConcurrentUpdate);
    let fresh = BeginOptions { base_revision: Some(moved), ..BeginOptions::default() };
    replace(&ws, "topics/projects/garden.md", "Rust", "Rust 2024", fresh).expect("install");
    assert!(live(dir.path(), "topics/people/dana.md").contains("Caen"));
    assert!(!ws.revision_state().expect("state").topics_edited_outside);

    // Archiving moves the revision; re-archiving does not.
    let revision = ws.revision().expect("revision");
    let outcome = ws.archive_sources(&super::records(6..=6), LockTimeout::DEFAULT).expect("a");
    assert_ne!(outcome.revision, revision);
    assert_eq!(ws.revision().expect("revision"), outcome.revision);
}

#[test]
fn dropping_any_stage_cleans_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    assert_eq!(stages(dir.path()).len(), 1);
    assert!(staged.path().expect("stage").starts_with(dir.path().join(".scriptorium/txn")));
    drop(staged);
    assert!(stages(dir.path()).is_empty());
    let validated = ws.begin(BeginOptions::default()).expect("begin").validate().expect("valid");
    assert_eq!(stages(dir.path()).len(), 1);
    drop(validated);
    assert!(stages(dir.path()).is_empty());
    // An unchanged stage installs nothing: the revision stays (a moved revision would make
    // every agent's base_revision stale for nothing).
    let revision = ws.revision().expect("revision");
    let record = std::fs::read(dir.path().join(".scriptorium/revision")).expect("record");
    let installed =
        ws.begin(BeginOptions::default()).expect("begin").validate().expect("ok").install();
    let installed = installed.expect("install");
    assert!(installed.noop);
    assert!(installed.changed_files.is_empty());
    assert_eq!(installed.revision, revision);
    assert_eq!(ws.revision().expect("revision"), revision);
    assert_eq!(std::fs::read(dir.path().join(".scriptorium/revision")).expect("record"), record);
    assert!(stages(dir.path()).is_empty());
}

#[test]
fn open_removes_abandoned_stages_but_not_live_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let live_stage = ws.begin(BeginOptions::default()).expect("begin");
    let abandoned = dir.path().join(".scriptorium/txn/t-0000000000000-deadbeef");
    std::fs::create_dir_all(abandoned.join("topics/people")).expect("mkdir");
    std::fs::write(abandoned.join("topics/people/x.md"), "x").expect("write");
    std::fs::write(abandoned.join("owner.lock"), "").expect("write");
    std::fs::write(dir.path().join(".scriptorium/tmp-12345678-revision"), "junk").expect("write");
    // A stage an earlier version owns: its `owner.lock` file is locked, not the directory.
    let legacy = dir.path().join(".scriptorium/txn/t-0000000000001-0000beef");
    std::fs::create_dir_all(legacy.join("topics")).expect("mkdir");
    let legacy_lock = std::fs::File::create(legacy.join("owner.lock")).expect("create");
    legacy_lock.try_lock().expect("locked");

    Workspace::open(dir.path()).expect("open");
    let mut expected = vec![live_stage.txn_id().to_string(), "t-0000000000001-0000beef".into()];
    expected.sort();
    let mut found = stages(dir.path());
    found.sort();
    assert_eq!(found, expected);
    assert!(!dir.path().join(".scriptorium/tmp-12345678-revision").exists());
    live_stage.validate().expect("valid").install().expect("still installs");
    drop(legacy_lock);
    Workspace::open(dir.path()).expect("open");
    assert!(stages(dir.path()).is_empty());
}

#[test]
fn the_spare_tree_its_manifest_and_the_stage_directory_are_recycled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    super::add_fact(&ws, "a", 1, BeginOptions::default()).expect("install");
    let txn = dir.path().join(".scriptorium/txn");
    assert!(txn.join("spare").is_dir() && txn.join("spare.json").is_file());
    let manifest = std::fs::read(txn.join("spare.json")).expect("manifest");
    // A leftover temporary makes the open run the whole recovery.
    std::fs::write(dir.path().join(".scriptorium/tmp-12345678-revision"), "junk").expect("write");
    let ws = Workspace::open(dir.path()).expect("open");
    assert!(!dir.path().join(".scriptorium/tmp-12345678-revision").exists());
    assert!(txn.join("spare").is_dir());
    assert_eq!(std::fs::read(txn.join("spare.json")).expect("manifest"), manifest);
    // And so does the recovery every install runs first: the next install recycles the spare
    // and leaves a new one with its manifest. Its stage is the directory the last one left
    // (`spare-stage`), made no new inode for the stage, and left it again.
    use std::os::unix::fs::MetadataExt as _;
    let stage_dir = std::fs::metadata(txn.join("spare-stage")).expect("spare stage").ino();
    let staged = ws.begin(BeginOptions::default()).expect("begin");
    let stage_path = txn.join(staged.txn_id().as_str());
    assert_eq!(std::fs::metadata(&stage_path).expect("stage").ino(), stage_dir);
    assert!(!txn.join("spare-stage").exists());
    drop(staged);
    assert!(!stage_path.exists(), "a dropped stage is removed");
    super::add_fact(&ws, "b", 2, BeginOptions::default()).expect("install");
    assert!(txn.join("spare").is_dir());
    assert_ne!(std::fs::read(txn.join("spare.json")).expect("manifest"), manifest);
    let next = std::fs::metadata(txn.join("spare-stage")).expect("spare stage").ino();
    super::add_fact(&ws, "c", 3, BeginOptions::default()).expect("install");
    assert_eq!(std::fs::metadata(txn.join("spare-stage")).expect("spare stage").ino(), next);
}

#[test]
fn runtime_json_keeps_python_layout_and_survives_corruption() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let path = dir.path().join(".scriptorium/runtime.json");
    let text = std::fs::read_to_string(&path).expect("runtime");
    assert!(text.starts_with("{\n  \"creation_order\": {\n    \""), "{text}");
    assert!(text.ends_with("  \"last_global_at\": null\n}\n"), "{text}");

    // Unknown keys are dropped on the next save; counters are kept.
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("json");
    value["cursors"] = serde_json::json!({"x": 1});
    value["local_tokens"] = 17.into();
    std::fs::write(&path, serde_json::to_string(&value).expect("json")).expect("write");
    super::add_fact(&ws, "a", 1, BeginOptions::default()).expect("install");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("runtime")).expect("json");
    assert!(value.get("cursors").is_none());
    assert_eq!(value["local_tokens"], 17);
    assert_eq!(value["creation_order"].as_object().expect("object").len(), 6);

    // Corrupt: defaults, re-seeded from the committed units.
    std::fs::write(&path, "{not json").expect("write");
    super::add_fact(&ws, "b", 2, BeginOptions::default()).expect("install");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("runtime")).expect("json");
    assert_eq!(value["creation_order"].as_object().expect("object").len(), 7);
    assert_eq!(value["local_tokens"], 0);
}

#[test]
fn not_a_workspace_and_deterministic_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = Workspace::open(dir.path()).expect_err("empty dir");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    let ws = Workspace::init_with(dir.path(), options(Arc::new(RealFs), 1)).expect("init");
    let id = ws.workspace_id().to_string();
    assert!(id.starts_with("w-") && id.len() == 10, "{id}");
    let staged = ws.begin(BeginOptions::default()).expect("begin");
    assert!(staged.txn_id().as_str().starts_with("t-1712048400000-"), "{}", staged.txn_id());
}

#[test]
fn organizer_counters_install_with_the_transaction_or_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    assert_eq!(ws.counters().expect("counters"), Counters::default());
    let counters = Counters {
        write_commits_since_global: 1,
        local_batches: 2,
        local_tokens: 300,
        last_global_at: Some("2026-11-30T03:00:00+00:00".into()),
    };
    // With an edit.
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    assert_eq!(staged.counters(), Counters::default());
    let text = staged.read_file("topics/people/dana.md").expect("read").expect("exists");
    staged.write_file("topics/people/dana.md", &text.replace("Lyon", "Paris")).expect("write");
    staged.set_counters(counters.clone());
    let installed = staged.validate().expect("valid").install().expect("install");
    assert_eq!(installed.changed_files, ["topics/people/dana.md"]);
    assert!(!installed.noop);
    assert_eq!(ws.counters().expect("counters"), counters);
    let runtime = std::fs::read_to_string(dir.path().join(".scriptorium/runtime.json"))
        .expect("runtime.json");
    assert!(runtime.contains("\"local_tokens\": 300,\n"), "{runtime}");
    assert!(runtime.contains("\"last_global_at\": \"2026-11-30T03:00:00+00:00\"\n"), "{runtime}");
    // Alone: the counters are saved, but no topic byte changed, so nothing is installed and
    // the revision stays.
    let before = ws.revision().expect("revision");
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    assert_eq!(staged.counters(), counters);
    staged.set_counters(Counters { local_batches: 0, local_tokens: 0, ..counters });
    let installed = staged.validate().expect("valid").install().expect("install");
    assert!(installed.noop);
    assert!(installed.changed_files.is_empty());
    assert_eq!(installed.revision, before);
    assert_eq!(ws.revision().expect("revision"), before);
    assert_eq!(ws.counters().expect("counters").local_batches, 0);
}
