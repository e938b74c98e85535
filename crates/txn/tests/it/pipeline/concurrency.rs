//! N writers on one baseline (jj's concurrency tests): 8 threads, then 4 processes (this test
//! binary re-executed in a child role). Exactly one install per revision, the losers get `BUSY`
//! or `CONCURRENT_UPDATE`, and retrying on retryable errors loses no update. Plus: concurrent
//! first use yields one workspace ID.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use scriptorium_txn::{BeginOptions, ErrorCode, LockTimeout, Revision, Workspace};

use super::{add_fact, fixture, stages};

const CHILD_ROOT: &str = "SCRIPTORIUM_TXN_TEST_CHILD_ROOT";
const CHILD_NAME: &str = "SCRIPTORIUM_TXN_TEST_CHILD_NAME";
const CHILD_ROLE: &str = "SCRIPTORIUM_TXN_TEST_CHILD_ROLE";

/// What one writer saw.
#[derive(Debug, Default)]
struct Outcome {
    /// The base revision of each successful install.
    installed_from: Vec<Revision>,
    busy: usize,
    concurrent: usize,
}

/// Adds `topics/facts/<name>.md`, retrying from a fresh revision on retryable errors.
/// `first_base` makes the first attempt start from a revision read before a barrier.
fn commit_until_done(ws: &Workspace, name: &str, first_base: Option<Revision>) -> Outcome {
    let mut outcome = Outcome::default();
    let mut base = first_base;
    for _ in 0..200 {
        let base_revision = match base.take() {
            Some(base) => base,
            None => ws.revision().expect("revision"),
        };
        let opts = BeginOptions {
            base_revision: Some(base_revision.clone()),
            lock_timeout: LockTimeout {
                timeout: Duration::from_millis(200),
                poll: Duration::from_millis(5),
            },
            ..BeginOptions::default()
        };
        match add_fact(ws, name, 1, opts) {
            Ok(installed) => {
                assert_eq!(installed.base_revision, base_revision);
                outcome.installed_from.push(base_revision);
                return outcome;
            }
            Err(e) if e.code() == ErrorCode::Busy => outcome.busy += 1,
            Err(e) if e.code() == ErrorCode::ConcurrentUpdate => outcome.concurrent += 1,
            Err(e) => panic!("{name}: unexpected {e}"),
        }
    }
    panic!("{name}: no install after 200 attempts");
}

fn assert_all_present(root: &Path, names: &[String]) {
    for name in names {
        let path = root.join(format!("topics/facts/{name}.md"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(text.contains(&format!("Fact {name} holds.")), "{name}");
    }
    assert!(stages(root).is_empty());
}

#[test]
fn eight_threads_commit_on_one_baseline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    let base = ws.revision().expect("revision");
    let barrier = Arc::new(Barrier::new(8));
    let names: Vec<String> = (0..8).map(|i| format!("thread{i}")).collect();
    let handles: Vec<_> = names
        .iter()
        .map(|name| {
            let ws = ws.clone();
            let barrier = barrier.clone();
            let base = base.clone();
            let name = name.clone();
            std::thread::spawn(move || {
                barrier.wait();
                commit_until_done(&ws, &name, Some(base))
            })
        })
        .collect();
    let outcomes: Vec<Outcome> =
        handles.into_iter().map(|h| h.join().expect("thread panicked")).collect();
    let bases: Vec<&Revision> = outcomes.iter().flat_map(|o| &o.installed_from).collect();
    let distinct: BTreeSet<&Revision> = bases.iter().copied().collect();
    assert_eq!(bases.len(), 8);
    assert_eq!(distinct.len(), 8, "two installs from one revision: {bases:?}");
    // Exactly one of the eight first attempts (all on `base`) installed.
    assert_eq!(bases.iter().filter(|b| ***b == base).count(), 1);
    let losses: usize = outcomes.iter().map(|o| o.busy + o.concurrent).sum();
    assert!(losses >= 7, "{outcomes:?}");
    assert_all_present(dir.path(), &names);
    let state = ws.revision_state().expect("state");
    assert_eq!(state.counter, 2 + 8);
}

/// Child role of the process tests; a no-op in a normal run.
#[test]
fn child_process_role() {
    let (Ok(root), Ok(name), Ok(role)) =
        (std::env::var(CHILD_ROOT), std::env::var(CHILD_NAME), std::env::var(CHILD_ROLE))
    else {
        return;
    };
    let root = PathBuf::from(root);
    let out = root.parent().expect("parent").join(format!("{name}.out"));
    // Start together: wait for the go file.
    let go = root.parent().expect("parent").join("go");
    while !go.exists() {
        std::thread::sleep(Duration::from_millis(2));
    }
    match role.as_str() {
        "commit" => {
            let ws = Workspace::open(&root).expect("open");
            let outcome = commit_until_done(&ws, &name, None);
            let bases: Vec<String> = outcome.installed_from.iter().map(|r| r.to_string()).collect();
            std::fs::write(&out, bases.join("\n")).expect("write outcome");
        }
        "init" => {
            let ws = Workspace::init(&root).expect("init");
            std::fs::write(&out, ws.workspace_id().as_str()).expect("write outcome");
        }
        other => panic!("unknown role {other}"),
    }
}

fn spawn_children(root: &Path, role: &str, n: usize) -> Vec<String> {
    let exe = std::env::current_exe().expect("current exe");
    let names: Vec<String> = (0..n).map(|i| format!("proc{i}")).collect();
    let children: Vec<_> = names
        .iter()
        .map(|name| {
            Command::new(&exe)
                .args(["--exact", "pipeline::concurrency::child_process_role", "--test-threads=1"])
                .env(CHILD_ROOT, root)
                .env(CHILD_NAME, name)
                .env(CHILD_ROLE, role)
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn child")
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    std::fs::write(root.parent().expect("parent").join("go"), "").expect("go");
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "a child failed");
    }
    names
}

#[test]
fn four_processes_commit_on_one_baseline() {
    let parent = tempfile::tempdir().expect("tempdir");
    let root = parent.path().join("memory");
    let ws = fixture(&root);
    let names = spawn_children(&root, "commit", 4);
    let mut bases = Vec::new();
    for name in &names {
        let text = std::fs::read_to_string(parent.path().join(format!("{name}.out")))
            .expect("child outcome");
        bases.extend(text.lines().map(str::to_owned));
    }
    let distinct: BTreeSet<&String> = bases.iter().collect();
    assert_eq!(bases.len(), 4);
    assert_eq!(distinct.len(), 4, "two installs from one revision: {bases:?}");
    assert_all_present(&root, &names);
    assert_eq!(ws.revision_state().expect("state").counter, 2 + 4);
}

#[test]
fn eight_threads_first_use_yield_one_workspace_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("memory");
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let root = root.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                Workspace::init(&root).expect("init").workspace_id().to_string()
            })
        })
        .collect();
    let ids: BTreeSet<String> = handles.into_iter().map(|h| h.join().expect("thread")).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let id = ids.into_iter().next().expect("one id");
    let stored = std::fs::read_to_string(root.join(".scriptorium/workspace-id")).expect("read");
    assert_eq!(stored, format!("{id}\n"));
}

#[test]
fn four_processes_first_use_yield_one_workspace_id() {
    let parent = tempfile::tempdir().expect("tempdir");
    let root = parent.path().join("memory");
    let names = spawn_children(&root, "init", 4);
    let ids: BTreeSet<String> = names
        .iter()
        .map(|name| {
            std::fs::read_to_string(parent.path().join(format!("{name}.out"))).expect("outcome")
        })
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
}
