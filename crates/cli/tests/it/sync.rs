//! `scriptorium sync`: homes on one machine exchanging memory through a bare git remote (the
//! real `git` CLI pushes; gix fetches), as several machines would.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::support::{append_session, git, scriptorium};

/// A bare remote and `n` initialized homes.
struct Cluster {
    _dir: tempfile::TempDir,
    remote: PathBuf,
    homes: Vec<PathBuf>,
}

impl Cluster {
    fn new(n: usize) -> Cluster {
        let dir = tempfile::tempdir().expect("a temp dir");
        let remote = dir.path().join("remote.git");
        let out = std::process::Command::new("git")
            .args(["init", "--quiet", "--bare", "--initial-branch=main"])
            .arg(&remote)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let homes: Vec<PathBuf> = (0..n).map(|i| dir.path().join(format!("home-{i}"))).collect();
        for home in &homes {
            ok(&scriptorium(home, &["init"]));
        }
        Cluster { _dir: dir, remote, homes }
    }

    fn sync(&self, home: usize, extra: &[&str]) -> Output {
        let remote = self.remote.to_str().expect("utf-8");
        scriptorium(
            &self.homes[home],
            &[&["sync", "--remote", remote, "--json"][..], extra].concat(),
        )
    }

    fn note(&self, home: usize, text: &str) {
        ok(&scriptorium(&self.homes[home], &["note", text]));
    }

    fn memory(&self, home: usize) -> PathBuf {
        self.homes[home].join("memory")
    }

    fn notes(&self, home: usize) -> String {
        std::fs::read_to_string(self.memory(home).join("topics/notes.md")).unwrap_or_default()
    }

    fn head(&self, home: usize) -> String {
        git(&self.memory(home), &["rev-parse", "HEAD"]).trim().to_owned()
    }
}

fn ok(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Every file of `topics/`, `sources/` and the derived views (not `.git`, not runtime state).
fn tree(memory: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![memory.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if dir == memory && (name == ".git" || name.starts_with(".scriptorium")) {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(memory).expect("inside").display().to_string();
                out.push((rel, std::fs::read(&path).expect("read")));
            }
        }
    }
    out.sort();
    out
}

/// The repository of `memory` is sound and its work tree clean, as the git CLI sees it.
fn git_clean(memory: &Path) {
    git(memory, &["fsck", "--full", "--strict"]);
    assert_eq!(git(memory, &["status", "--porcelain"]), "", "git status of {}", memory.display());
}

#[test]
fn notes_on_three_homes_converge_to_one_memory_and_one_commit() {
    let cluster = Cluster::new(3);
    cluster.note(0, "Alice prefers green tea.");
    cluster.note(1, "Bob drives a blue car.");
    cluster.note(2, "Carol keeps bees in Leeds.");
    assert_eq!(ok(&cluster.sync(0, &[]))["action"], "pushed");
    assert_eq!(ok(&cluster.sync(1, &[]))["action"], "merged");
    let merged = ok(&cluster.sync(2, &[]));
    assert_eq!(merged["action"], "merged");
    assert_eq!(merged["topics_changed"], serde_json::json!(["topics/notes.md"]));
    // The first two take the rest without a commit of their own.
    assert_eq!(ok(&cluster.sync(0, &[]))["action"], "fast_forward");
    assert_eq!(ok(&cluster.sync(1, &[]))["action"], "fast_forward");
    assert_eq!(ok(&cluster.sync(2, &[]))["action"], "up_to_date");

    let reference = tree(&cluster.memory(0));
    for home in 0..3 {
        let notes = cluster.notes(home);
        for fact in ["Alice prefers green tea.", "Bob drives a blue car.", "Carol keeps bees"] {
            assert!(notes.contains(fact), "home {home} lacks {fact:?}:\n{notes}");
        }
        assert_eq!(tree(&cluster.memory(home)), reference, "home {home} differs from home 0");
        assert_eq!(cluster.head(home), cluster.head(0));
        git_clean(&cluster.memory(home));
    }
    // The merge commit has both parents and names its transaction.
    let parents = git(
        &cluster.memory(2),
        &["log", "-1", "--format=%P", &merged["commit"].as_str().unwrap()[..12]],
    );
    assert_eq!(parents.split_whitespace().count(), 2, "{parents}");
    let trailer =
        git(&cluster.memory(2), &["log", "-1", "--format=%(trailers:key=Txn-Id,valueonly)"]);
    assert!(!trailer.trim().is_empty(), "the merge commit has no Txn-Id");
    // What came from another home is found by search here.
    let out = scriptorium(&cluster.homes[0], &["search", "who keeps bees", "--json"]);
    let hits = json(&out);
    assert!(hits.to_string().contains("Carol keeps bees"), "{hits}");
    // Block IDs are the ones their home minted.
    let id_of = |notes: &str, fact: &str| {
        notes
            .lines()
            .find(|l| l.contains(fact))
            .and_then(|l| l.rsplit_once(" ^"))
            .map(|(_, id)| id.to_owned())
    };
    let carol = id_of(&cluster.notes(0), "Carol keeps bees");
    assert!(carol.is_some());
    assert_eq!(carol, id_of(&cluster.notes(2), "Carol keeps bees"));
}

#[test]
fn a_block_changed_differently_on_two_homes_is_kept_and_installs_nothing() {
    let cluster = Cluster::new(2);
    cluster.note(0, "Alice prefers green tea.");
    ok(&cluster.sync(0, &[]));
    ok(&cluster.sync(1, &[]));
    // Each home edits the same block its own way (by hand: the sync takes the edit in).
    for (home, tea) in [(0, "mint"), (1, "jasmine")] {
        let path = cluster.memory(home).join("topics/notes.md");
        let text = std::fs::read_to_string(&path).expect("notes");
        std::fs::write(&path, text.replace("green tea", &format!("{tea} tea"))).expect("edit");
    }
    ok(&cluster.sync(0, &[]));
    let head = cluster.head(1);
    let before = cluster.notes(1);
    let out = cluster.sync(1, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let error = json(&out);
    assert_eq!(error["ok"], false);
    assert_eq!(error["error"]["code"], "SYNC_CONFLICT");
    let conflicts = &error["error"]["details"]["conflicts"];
    assert_eq!(conflicts.as_array().map(Vec::len), Some(1), "{error}");
    assert!(conflicts[0]["ours"].as_str().unwrap().contains("jasmine"), "{error}");
    assert!(conflicts[0]["theirs"].as_str().unwrap().contains("mint"), "{error}");
    // Nothing was installed: the home's own edit (taken in as its own transaction) stands.
    assert_eq!(cluster.notes(1), before);
    assert_ne!(cluster.head(1), head, "the hand edit was committed before merging");
    git_clean(&cluster.memory(1));
    // Both versions are kept for a person.
    let status = scriptorium(&cluster.homes[1], &["sync", "--status", "--json"]);
    assert_eq!(status.status.code(), Some(1));
    let status = json(&status);
    assert_eq!(status["conflict"]["blocks"][0]["theirs"], conflicts[0]["theirs"]);
    let text = scriptorium(&cluster.homes[1], &["sync", "--status"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("jasmine") && text.contains("mint") && text.contains("--prefer"),
        "{text}"
    );
    // Keeping this home's version resolves it, and the other home takes it.
    let resolved = ok(&cluster.sync(1, &["--prefer", "ours"]));
    assert_eq!(resolved["resolved_conflicts"], 1);
    assert!(cluster.notes(1).contains("jasmine tea"));
    ok(&cluster.sync(0, &[]));
    assert_eq!(cluster.notes(0), cluster.notes(1));
    assert_eq!(cluster.head(0), cluster.head(1));
    let status = json(&scriptorium(&cluster.homes[1], &["sync", "--status", "--json"]));
    assert_eq!(status["conflict"], Value::Null);
    // Nothing is lost: the other version is in the history.
    let log = git(&cluster.memory(1), &["log", "-p", "--all", "--", "topics/notes.md"]);
    assert!(log.contains("mint tea"), "the remote's version left the history");
}

#[test]
fn a_remote_that_cannot_be_reached_is_retryable_and_changes_nothing() {
    let cluster = Cluster::new(1);
    cluster.note(0, "Alice prefers green tea.");
    let head = cluster.head(0);
    let missing = cluster.remote.with_file_name("missing.git");
    let out = scriptorium(
        &cluster.homes[0],
        &["sync", "--remote", missing.to_str().expect("utf-8"), "--json"],
    );
    assert_eq!(out.status.code(), Some(75), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["error"]["code"], "REMOTE_UNAVAILABLE");
    assert_eq!(cluster.head(0), head);
    // Without a remote anywhere the command says how to give one.
    let out = scriptorium(&cluster.homes[0], &["sync"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[sync]"));
}

#[test]
fn the_configured_remote_is_used_relative_to_the_home() {
    let cluster = Cluster::new(2);
    for home in &cluster.homes {
        std::fs::write(home.join("scriptorium.toml"), "[sync]\nremote = \"../remote.git\"\n")
            .expect("config");
    }
    cluster.note(0, "Alice prefers green tea.");
    ok(&scriptorium(&cluster.homes[0], &["sync"]));
    ok(&scriptorium(&cluster.homes[1], &["sync"]));
    assert!(cluster.notes(1).contains("Alice prefers green tea."));
    let status = scriptorium(&cluster.homes[1], &["sync", "--status"]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(said.contains("remote: ../remote.git\n"), "{said}");
    // A fast-forward when both homes' first commits fell in the same second (identical), a
    // merge otherwise: which one depends on the clock, so only that a sync happened is checked.
    assert!(
        said.contains("last sync: fast forward with ") || said.contains("last sync: merged with "),
        "{said}"
    );
}

/// `--home` given as a relative path, with a relative `[sync] remote`: git runs in the
/// workspace, so the remote must be resolved from the current directory, not passed on relative.
#[test]
fn a_relative_home_with_a_relative_remote_syncs() {
    let cluster = Cluster::new(2);
    let dir = cluster.homes[0].parent().expect("the cluster directory").to_path_buf();
    let relative = |home: &str, args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_scriptorium"))
            .current_dir(&dir)
            .args(["--home", home])
            .args(args)
            .env_remove("SCRIPTORIUM_HOME")
            .env_remove("XDG_DATA_HOME")
            .output()
            .expect("scriptorium runs")
    };
    for home in &cluster.homes {
        std::fs::write(home.join("scriptorium.toml"), "[sync]\nremote = \"../remote.git\"\n")
            .expect("config");
    }
    cluster.note(0, "Alice prefers green tea.");
    ok(&relative("home-0", &["sync", "--json"]));
    ok(&relative("home-1", &["sync", "--json"]));
    assert!(cluster.notes(1).contains("Alice prefers green tea."));
}

#[test]
fn four_processes_syncing_in_a_loop_lose_no_update() {
    const HOMES: usize = 4;
    const ROUNDS: usize = 3;
    let cluster = std::sync::Arc::new(Cluster::new(HOMES));
    let workers: Vec<_> = (0..HOMES)
        .map(|home| {
            let cluster = cluster.clone();
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    cluster.note(home, &format!("Fact {round} of home {home} is recorded."));
                    // Another home pushing between our fetch and our push is retried inside
                    // the sync; a remote that kept moving every time is retryable (75).
                    loop {
                        let out = cluster.sync(home, &[]);
                        match out.status.code() {
                            Some(0) => break,
                            Some(75) => continue,
                            code => panic!(
                                "home {home}: sync exited {code:?}: {}",
                                String::from_utf8_lossy(&out.stdout)
                            ),
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a sync worker");
    }
    // Two quiet passes bring every home to the remote's last commit.
    for _ in 0..2 {
        for home in 0..HOMES {
            ok(&cluster.sync(home, &[]));
        }
    }
    for home in 0..HOMES {
        let notes = cluster.notes(home);
        for other in 0..HOMES {
            for round in 0..ROUNDS {
                let fact = format!("Fact {round} of home {other} is recorded.");
                assert!(notes.contains(&fact), "home {home} lost {fact:?}:\n{notes}");
            }
        }
        assert_eq!(cluster.head(home), cluster.head(0));
        git_clean(&cluster.memory(home));
    }
}

/// The same two-turn session `s` in `home`'s embedded store.
fn import_session(home: &Path) {
    append_session(home, &["I'm Dana. I moved to Lisbon in June.", "Welcome to Lisbon, Dana."]);
}

#[test]
fn a_session_two_homes_hold_is_written_once() {
    let cluster = Cluster::new(2);
    import_session(&cluster.homes[0]);
    import_session(&cluster.homes[1]);
    let wrote = scriptorium(&cluster.homes[0], &["write", "--session", "s", "--force"]);
    assert!(String::from_utf8_lossy(&wrote.stdout).contains("s: wrote 1 batch(es)"));
    ok(&cluster.sync(0, &[]));
    ok(&cluster.sync(1, &[]));
    let before = tree(&cluster.memory(1));
    let head = cluster.head(1);
    // The second home finds the turns cited already: it marks them and writes nothing.
    let out = scriptorium(&cluster.homes[1], &["write", "--session", "s", "--force", "--json"]);
    let report = ok(&out);
    let batches = report.to_string();
    assert!(batches.contains("\"recovered\":true"), "{batches}");
    assert_eq!(tree(&cluster.memory(1)), before);
    assert_eq!(cluster.head(1), head);
    let status = json(&scriptorium(&cluster.homes[1], &["status", "--json"]));
    assert_eq!(status["pending_turns"], 0, "{status}");
}
