//! What `begin` reuses between transactions: the baseline cached per revision, and the tree
//! the last install replaced (`.scriptorium/txn/spare`), recycled as the next stage. Neither
//! may ever let a stale baseline or a stage that differs from the live tree through.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use scriptorium_txn::validate::Baseline;
use scriptorium_txn::{BeginOptions, Workspace};

use super::{add_fact, agent, fixture, live, replace};

/// The parts of a baseline a transaction is judged by.
fn summary(baseline: &Baseline) -> String {
    let mut refs: Vec<&String> = baseline.committed_refs().collect();
    refs.sort();
    // Per block: where it lives and what it cites (the indexes an incremental install keeps).
    let blocks: Vec<String> = baseline
        .block_ids()
        .iter()
        .map(|id| format!("{id} {:?} {:?}", baseline.home(id), baseline.refs_of(id)))
        .collect();
    let files: Vec<(&str, u64)> =
        baseline.files().map(|f| (f.path(), baseline.file_bytes(f.path()).unwrap_or(0))).collect();
    format!(
        "{:?}\n{:?}\n{refs:?}\n{}\n{:?}\n{blocks:?}\n{files:?}",
        baseline.units().collect::<Vec<_>>(),
        baseline.block_ids(),
        baseline.total_bytes(),
        baseline.diagnostics()
    )
}

/// The baseline `ws` hands a new transaction, next to the one a fresh handle (no cache) reads.
fn baselines(ws: &Workspace, root: &Path) -> (String, String) {
    let cached = summary(ws.begin(BeginOptions::default()).expect("begin").baseline());
    let fresh = Workspace::open(root).expect("open");
    let read = summary(fresh.begin(BeginOptions::default()).expect("begin").baseline());
    (cached, read)
}

#[test]
fn the_baseline_after_an_install_is_the_installed_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("install");
    let (cached, fresh) = baselines(&ws, dir.path());
    assert!(cached.contains("Dana lives in Paris."), "{cached}");
    assert_eq!(cached, fresh);
}

#[test]
fn a_run_of_installs_keeps_the_cached_baseline_equal_to_a_fresh_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let check = |step: &str| {
        let (cached, fresh) = baselines(&ws, dir.path());
        assert_eq!(cached, fresh, "after {step}");
    };
    add_fact(&ws, "tandem", 3, BeginOptions::default()).expect("add");
    check("a new file");
    // A link from the garden to Dana's first block, then Dana's file moved: the link is
    // rewritten in the garden (an unchanged file's text changes with the move).
    let dana = live(dir.path(), "topics/people/dana.md");
    let id = dana.lines().find_map(|l| l.rsplit_once(" ^").map(|(_, id)| id.to_owned()));
    let id = id.expect("a block ID");
    replace(
        &ws,
        "topics/projects/garden.md",
        "Tomatoes go in the south bed.",
        &format!("Tomatoes go in the south bed (ask [Dana](../people/dana.md#^{id})).",),
        BeginOptions::default(),
    )
    .expect("link");
    check("a new block link");
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged.remove_file("topics/people/dana.md").expect("remove");
    staged.write_file("topics/friends/dana.md", &dana).expect("write");
    let moved = staged.validate().expect("valid").install().expect("install");
    assert!(moved.changed_files.iter().any(|p| p == "topics/projects/garden.md"), "{moved:?}");
    check("a move that rewrote a link elsewhere");
    replace(&ws, "topics/facts/tandem.md", "holds.", "holds, mostly.", BeginOptions::default())
        .expect("edit");
    check("an edit");
    let mut staged = ws.begin(agent()).expect("begin");
    staged.remove_file("topics/facts/tandem.md").expect("remove");
    staged.validate().expect("valid").install().expect("install");
    check("a removed file");
}

#[test]
fn an_outside_edit_is_never_hidden_by_the_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let (before, _) = baselines(&ws, dir.path());
    // Same size, and the mtime put back: only the bytes tell.
    let path = dir.path().join("topics/people/dana.md");
    let mtime = std::fs::metadata(&path).expect("stat").modified().expect("mtime");
    let text = live(dir.path(), "topics/people/dana.md").replace("Lyon", "Nice");
    std::fs::write(&path, text).expect("write");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open")
        .set_modified(mtime)
        .expect("set mtime");
    let (cached, fresh) = baselines(&ws, dir.path());
    assert_ne!(cached, before);
    assert!(cached.contains("Dana lives in Nice."), "{cached}");
    assert_eq!(cached, fresh);
}

#[test]
fn a_rejected_transaction_leaves_the_baseline_as_committed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let (before, _) = baselines(&ws, dir.path());
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    staged.write_file("topics/people/dana.md", "# Dana\n\nNo evidence here.\n").expect("write");
    let rejected = staged.validate().expect_err("rejected");
    drop(rejected);
    let (cached, fresh) = baselines(&ws, dir.path());
    assert_eq!(cached, before);
    assert_eq!(cached, fresh);
}

#[test]
fn another_handles_install_moves_the_baseline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let (before, _) = baselines(&ws, dir.path());
    let other = Workspace::open(dir.path()).expect("open");
    replace(&other, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("install");
    let (cached, fresh) = baselines(&ws, dir.path());
    assert_ne!(cached, before);
    assert!(cached.contains("Dana lives in Paris."), "{cached}");
    assert_eq!(cached, fresh);
}

/// Every regular file under `dir`, as (relative path, bytes), sorted.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).expect("read_dir").flatten() {
            let path = entry.path();
            let kind = entry.file_type().expect("type");
            if kind.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("inside").to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_recycled_stage_is_a_private_copy_of_the_live_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("install");
    let spare = dir.path().join(".scriptorium/txn/spare");
    assert!(spare.is_dir(), "the install leaves its old tree to recycle");

    // Tamper with the spare: a changed file, a file hard-linked from outside, an extra file,
    // a symlink, an extra directory.
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(spare.join("people/dana.md"), "stale").expect("write");
    std::fs::hard_link(spare.join("projects/garden.md"), outside.path().join("garden.md"))
        .expect("link");
    std::fs::write(spare.join("projects/extra.md"), "extra").expect("write");
    std::os::unix::fs::symlink("/etc/passwd", spare.join("people/evil.md")).expect("symlink");
    std::fs::create_dir(spare.join("more")).expect("mkdir");

    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    // The stage is filled on first use: handing out its path fills it from the spare.
    assert!(spare.exists(), "begin copies nothing");
    staged.path().expect("stage");
    assert!(!spare.exists(), "the stage took the spare");
    assert_eq!(files(staged.path().expect("stage")), files(&dir.path().join("topics")));
    assert!(!staged.path().expect("stage").join("more").exists());
    for (rel, _) in files(staged.path().expect("stage")) {
        let meta =
            std::fs::symlink_metadata(staged.path().expect("stage").join(&rel)).expect("stat");
        assert!(meta.is_file(), "{rel}");
        assert_eq!(meta.nlink(), 1, "{rel} shares its inode");
        assert_eq!(meta.mode() & 0o777, 0o600, "{rel}");
    }
    // An in-place edit of the stage reaches neither the live tree nor the outside link.
    let before = live(dir.path(), "topics/projects/garden.md");
    std::fs::write(staged.path().expect("stage").join("projects/garden.md"), "edited in place")
        .expect("write");
    assert_eq!(live(dir.path(), "topics/projects/garden.md"), before);
    assert_ne!(
        std::fs::read_to_string(outside.path().join("garden.md")).expect("read"),
        "edited in place"
    );
    staged.write_file("topics/projects/garden.md", &before).expect("write");
    let installed = staged.validate().expect("valid").install().expect("install");
    assert!(installed.changed_files.is_empty(), "{:?}", installed.changed_files);

    // The spare the second install left is recycled again, and the stage still matches.
    let mut staged = ws.begin(BeginOptions::default()).expect("begin");
    assert_eq!(files(staged.path().expect("stage")), files(&dir.path().join("topics")));
}

#[test]
fn the_installed_revision_follows_installs_and_appends_but_not_outside_edits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    assert_eq!(ws.installed_revision().expect("installed"), ws.revision().expect("revision"));
    let before = ws.installed_revision().expect("installed");
    let installed = replace(&ws, "topics/people/dana.md", "Lyon", "Paris", BeginOptions::default())
        .expect("install");
    assert_eq!(ws.installed_revision().expect("installed"), installed.revision);
    assert_ne!(installed.revision, before);
    // Another handle's install is seen too (the record is replaced by a rename).
    let other = Workspace::open(dir.path()).expect("open");
    let again = replace(&other, "topics/people/dana.md", "Paris", "Rome", BeginOptions::default())
        .expect("install");
    assert_eq!(ws.installed_revision().expect("installed"), again.revision);
    // An edit outside any transaction moves `revision()` but not the recorded one.
    let path = dir.path().join("topics/people/dana.md");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("Rome", "Oslo")).expect("outside edit");
    assert_ne!(ws.revision().expect("revision"), again.revision);
    assert_eq!(ws.installed_revision().expect("installed"), again.revision);
}

/// The digests a scan takes from the revision record when it finds the trees as recorded
/// (see `docs/format.md`, revision record): they stand only while that is exactly so.
#[test]
fn the_recorded_digests_stand_only_while_the_trees_are_as_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let installed = ws.revision().expect("revision");
    let state = ws.revision_state().expect("state");
    assert!(!state.topics_edited_outside && !state.sources_changed_outside, "{state:?}");

    // A special file in `topics/` is no manifest entry, and moves the revision all the same;
    // removed again, the tree is the recorded one.
    let link = dir.path().join("topics/people/link.md");
    std::os::unix::fs::symlink("dana.md", &link).expect("symlink");
    let state = ws.revision_state().expect("state");
    assert!(state.topics_edited_outside, "{state:?}");
    assert_ne!(state.revision, installed);
    std::fs::remove_file(&link).expect("remove");
    assert_eq!(ws.revision().expect("revision"), installed);

    // A byte of an archive changed and put back (with another mtime): the revision moves and
    // returns.
    let archive = std::fs::read_dir(dir.path().join("sources"))
        .expect("sources")
        .map(|e| e.expect("entry").path())
        .find_map(|p| first_file(&p))
        .expect("an archive");
    let bytes = std::fs::read(&archive).expect("read");
    let mut changed = bytes.clone();
    changed.push(b'\n');
    std::fs::write(&archive, &changed).expect("write");
    let state = ws.revision_state().expect("state");
    assert!(state.sources_changed_outside, "{state:?}");
    assert_ne!(state.revision, installed);
    std::fs::write(&archive, &bytes).expect("write back");
    assert_eq!(ws.revision().expect("revision"), installed);

    // A workspace first opened with a special file in `topics/`: its record lists it, and
    // removing it moves the revision (its digest counted it).
    let other = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(other.path().join("topics")).expect("mkdir");
    std::fs::write(other.path().join("topics/a.md"), "# A\n").expect("write");
    std::os::unix::fs::symlink("a.md", other.path().join("topics/b.md")).expect("symlink");
    let opened = Workspace::open(other.path()).expect("open");
    let first = opened.revision().expect("revision");
    std::fs::remove_file(other.path().join("topics/b.md")).expect("remove");
    assert_ne!(opened.revision().expect("revision"), first);
    std::os::unix::fs::symlink("a.md", other.path().join("topics/b.md")).expect("symlink");
    assert_eq!(opened.revision().expect("revision"), first);
}

/// The first regular file under `path` (itself when it is one).
fn first_file(path: &Path) -> Option<std::path::PathBuf> {
    if path.is_file() {
        return Some(path.to_owned());
    }
    std::fs::read_dir(path).ok()?.find_map(|e| first_file(&e.ok()?.path()))
}
