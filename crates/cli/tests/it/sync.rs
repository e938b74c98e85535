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
        self.sync_with(home, self.remote.to_str().expect("utf-8"), extra)
    }

    /// `scriptorium sync --remote remote --json extra…` in `home`.
    fn sync_with(&self, home: usize, remote: &str, extra: &[&str]) -> Output {
        scriptorium(
            &self.homes[home],
            &[&["sync", "--remote", remote, "--json"][..], extra].concat(),
        )
    }

    /// Replaces `from` by `to` in `topics/notes.md` of `home`, by hand (the next sync takes the
    /// edit in as its own transaction).
    fn edit_notes(&self, home: usize, from: &str, to: &str) {
        let path = self.memory(home).join("topics/notes.md");
        let text = std::fs::read_to_string(&path).expect("notes");
        assert!(text.contains(from), "home {home} has no {from:?}:\n{text}");
        std::fs::write(&path, text.replace(from, to)).expect("edit");
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

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("its address").port()
}

/// Asserts `out` is the JSON error `code` with exit code `exit`, and returns its message.
fn failed(out: &Output, exit: i32, code: &str) -> String {
    assert_eq!(
        out.status.code(),
        Some(exit),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let error = json(out);
    assert_eq!(error["ok"], false, "{error}");
    assert_eq!(error["error"]["code"], code, "{error}");
    error["error"]["message"].as_str().expect("a message").to_owned()
}

#[test]
fn a_remote_that_cannot_be_reached_is_retryable_and_changes_nothing() {
    let cluster = Cluster::new(1);
    cluster.note(0, "Alice prefers green tea.");
    let head = cluster.head(0);
    // Issue 34: every http(s) remote panicked (exit 101, nothing on stdout under --json).
    let port = closed_port();
    for scheme in ["http", "https"] {
        let url = format!("{scheme}://127.0.0.1:{port}/memory.git");
        let message = failed(&cluster.sync_with(0, &url, &[]), 75, "REMOTE_UNAVAILABLE");
        assert!(message.contains(&url), "{message}");
        let out = scriptorium(&cluster.homes[0], &["sync", "--remote", &url]);
        assert_eq!(out.status.code(), Some(75));
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("REMOTE_UNAVAILABLE") && !said.contains("panicked"), "{said}");
    }
    assert_eq!(cluster.head(0), head);
    // Without a remote anywhere the command says how to give one.
    let out = scriptorium(&cluster.homes[0], &["sync"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[sync]"));
}

/// A child process killed and reaped on drop, also when the test fails.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `watch` syncs at once (then every interval): an http remote nobody answers is logged as a
/// retryable failure (issue 34: a panic, at every interval).
#[test]
fn watch_logs_an_unreachable_http_remote_as_retryable() {
    use std::io::BufRead;
    let cluster = Cluster::new(1);
    let url = format!("http://127.0.0.1:{}/memory.git", closed_port());
    std::fs::write(
        cluster.homes[0].join("scriptorium.toml"),
        format!("[sync]\nremote = \"{url}\"\n"),
    )
    .expect("config");
    let mut watch = Reaped(
        std::process::Command::new(env!("CARGO_BIN_EXE_scriptorium"))
            .arg("--home")
            .arg(&cluster.homes[0])
            .arg("watch")
            .env_remove("SCRIPTORIUM_HOME")
            .env_remove("XDG_DATA_HOME")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("watch starts"),
    );
    let stderr = watch.0.stderr.take().expect("piped");
    let (lines, log) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    // The bound only keeps a broken build from hanging the suite.
    let failed = loop {
        let line = log.recv_timeout(std::time::Duration::from_secs(120)).expect("a log line");
        assert!(!line.contains("panicked") && !line.contains("task failed"), "{line}");
        if line.contains("sync failed") {
            break line;
        }
    };
    assert!(failed.contains("REMOTE_UNAVAILABLE") && failed.contains(&url), "{failed}");
}

/// A typo in the remote's name, or a repository with a work tree on the branch, is no outage:
/// retrying cannot help, so it is not reported as retryable (issue 34).
#[test]
fn a_remote_that_is_no_usable_repository_is_an_error_to_fix() {
    let cluster = Cluster::new(1);
    cluster.note(0, "Alice prefers green tea.");
    let head = cluster.head(0);
    let missing = cluster.remote.with_file_name("typo.git");
    let message =
        failed(&cluster.sync_with(0, missing.to_str().expect("utf-8"), &[]), 1, "REMOTE_INVALID");
    assert!(message.contains("does not exist") && message.contains("git init --bare"), "{message}");
    assert_eq!(cluster.head(0), head);
    // A clone with a work tree, `main` checked out: git refuses to push into it.
    ok(&cluster.sync(0, &[]));
    let clone = cluster.remote.with_file_name("clone");
    let out = std::process::Command::new("git")
        .args(["clone", "--quiet"])
        .arg(&cluster.remote)
        .arg(&clone)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    cluster.note(0, "Bob drives a blue car.");
    let message =
        failed(&cluster.sync_with(0, clone.to_str().expect("utf-8"), &[]), 1, "REMOTE_INVALID");
    assert!(message.contains("checked out") && message.contains("bare"), "{message}");
}

/// Two homes exchanging memory through a real smart-HTTP server: gix fetches over HTTP, the
/// git CLI pushes over HTTP.
#[test]
fn homes_sync_through_an_http_remote() {
    let cluster = Cluster::new(2);
    let server = GitHttp::serve(cluster.remote.parent().expect("the cluster directory"));
    let url = server.url("remote.git");
    cluster.note(0, "Alice prefers green tea.");
    let pushed = ok(&cluster.sync_with(0, &url, &[]));
    assert_eq!((&pushed["action"], &pushed["pushed"]), (&"pushed".into(), &true.into()));
    let taken = ok(&cluster.sync_with(1, &url, &[]));
    assert!(cluster.notes(1).contains("Alice prefers green tea."), "{taken}");
    cluster.note(1, "Bob drives a blue car.");
    assert_eq!(ok(&cluster.sync_with(1, &url, &[]))["action"], "pushed");
    assert_eq!(ok(&cluster.sync_with(0, &url, &[]))["action"], "fast_forward");
    assert!(cluster.notes(0).contains("Bob drives a blue car."));
    assert_eq!(cluster.head(0), cluster.head(1));
    let remote_head = git(&cluster.remote, &["rev-parse", "refs/heads/main"]);
    assert_eq!(remote_head.trim(), cluster.head(0));
    assert!(server.requests() > 0);
    // A repository the server does not have: the server's answer is in the message. It stays
    // retryable: hosts answer so for a repository the credentials cannot see, too.
    let missing = server.url("typo.git");
    let message = failed(&cluster.sync_with(0, &missing, &[]), 75, "REMOTE_UNAVAILABLE");
    assert!(message.contains("404"), "{message}");
}

/// Issue 34: a `--prefer` resolved every conflict of its round, also those that arose after
/// `sync --status` showed the first ones, replacing a local edit nobody saw.
#[test]
fn prefer_resolves_only_the_conflicts_that_were_shown() {
    let cluster = Cluster::new(2);
    cluster.note(0, "Alice prefers green tea.");
    cluster.note(0, "Bob drives a blue car.");
    ok(&cluster.sync(0, &[]));
    ok(&cluster.sync(1, &[]));
    cluster.edit_notes(0, "green tea", "mint tea");
    ok(&cluster.sync(0, &[]));
    cluster.edit_notes(1, "green tea", "jasmine tea");
    failed(&cluster.sync(1, &[]), 1, "SYNC_CONFLICT");
    let status = json(&scriptorium(&cluster.homes[1], &["sync", "--status", "--json"]));
    assert_eq!(status["conflict"]["blocks"].as_array().map(Vec::len), Some(1), "{status}");

    // After the status: both homes change the car, differently.
    cluster.edit_notes(0, "blue car", "red car");
    ok(&cluster.sync(0, &[]));
    cluster.edit_notes(1, "blue car", "green car");
    let before = cluster.notes(1);
    let out = cluster.sync(1, &["--prefer", "theirs"]);
    let message = failed(&out, 1, "SYNC_CONFLICT");
    assert!(message.contains("not shown"), "{message}");
    let error = json(&out);
    let unseen = &error["error"]["details"]["unseen"];
    assert_eq!(unseen.as_array().map(Vec::len), Some(1), "{error}");
    assert!(error["error"]["details"]["conflicts"].to_string().contains("green car"), "{error}");
    assert_eq!(cluster.notes(1), before, "the unseen local edit was replaced");
    // Now both are shown, and --prefer resolves both.
    let status = scriptorium(&cluster.homes[1], &["sync", "--status"]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(said.contains("green car") && said.contains("red car"), "{said}");
    let resolved = ok(&cluster.sync(1, &["--prefer", "theirs"]));
    assert_eq!(resolved["resolved_conflicts"], 2);
    let notes = cluster.notes(1);
    assert!(notes.contains("mint tea") && notes.contains("red car"), "{notes}");

    // The same block changed again on the remote after it was shown: --prefer ours would
    // drop a remote version nobody saw.
    cluster.edit_notes(0, "mint tea", "peppermint tea");
    ok(&cluster.sync(0, &[]));
    ok(&cluster.sync(1, &[]));
    cluster.edit_notes(0, "peppermint tea", "black tea");
    ok(&cluster.sync(0, &[]));
    cluster.edit_notes(1, "peppermint tea", "oolong tea");
    failed(&cluster.sync(1, &[]), 1, "SYNC_CONFLICT");
    cluster.edit_notes(0, "black tea", "white tea");
    ok(&cluster.sync(0, &[]));
    failed(&cluster.sync(1, &["--prefer", "ours"]), 1, "SYNC_CONFLICT");
    assert!(cluster.notes(1).contains("oolong tea"));
    // Editing the shown block here and keeping it is how a person resolves it by hand.
    cluster.edit_notes(1, "oolong tea", "oolong or white tea");
    let resolved = ok(&cluster.sync(1, &["--prefer", "ours"]));
    assert_eq!(resolved["resolved_conflicts"], 1);
    ok(&cluster.sync(0, &[]));
    assert!(cluster.notes(0).contains("oolong or white tea"));
    assert_eq!(cluster.head(0), cluster.head(1));
}

/// Issue 34: keeping a block the other home deleted failed with `INVALID_TOPIC_FORMAT
/// undefined footnote` (its definition had gone with the deletion).
#[test]
fn a_block_deleted_on_one_home_and_edited_on_the_other_can_keep_the_edit() {
    let cluster = Cluster::new(2);
    cluster.note(0, "Alice prefers green tea.");
    cluster.note(0, "Bob drives a blue car.");
    ok(&cluster.sync(0, &[]));
    ok(&cluster.sync(1, &[]));
    // Home 0 deletes Bob's paragraph with the definition only it cited.
    let path = cluster.memory(0).join("topics/notes.md");
    let text = std::fs::read_to_string(&path).expect("notes");
    let start = text.find("Bob drives").expect("Bob's paragraph");
    let end = text[start..].find("\n\n[^").map(|at| start + at + 2).expect("its definition");
    let end = text[end..].find('\n').map_or(text.len(), |at| end + at + 1);
    std::fs::write(&path, format!("{}{}", &text[..start], &text[end..])).expect("delete");
    ok(&cluster.sync(0, &[]));
    assert!(!cluster.notes(0).contains("Bob"));
    cluster.edit_notes(1, "blue car", "red car");
    failed(&cluster.sync(1, &[]), 1, "SYNC_CONFLICT");
    let kept = ok(&cluster.sync(1, &["--prefer", "ours"]));
    assert_eq!(kept["resolved_conflicts"], 1);
    ok(&cluster.sync(0, &[]));
    for home in 0..2 {
        let notes = cluster.notes(home);
        assert!(notes.contains("Bob drives a red car."), "home {home}:\n{notes}");
        let check = scriptorium(&cluster.homes[home], &["check", "--json"]);
        assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
        git_clean(&cluster.memory(home));
    }
    assert_eq!(cluster.head(0), cluster.head(1));
}

/// Issue 34: two clones pushing at the same instant sometimes ended `REMOTE_UNAVAILABLE`: the
/// remote refuses the later ref update with `failed to update ref` (`cannot lock ref …: is at
/// … but expected …`), not as a non-fast-forward. A pre-receive hook makes that race happen
/// deterministically: once, while this push is being received, it moves the branch to the
/// other home's commit, exactly as that home's concurrent push would.
#[test]
fn a_push_that_loses_the_race_on_the_remote_runs_another_round() {
    let cluster = Cluster::new(2);
    cluster.note(0, "Alice prefers green tea.");
    ok(&cluster.sync(0, &[]));
    ok(&cluster.sync(1, &[]));
    cluster.note(1, "Bob drives a blue car.");
    let remote = cluster.remote.to_str().expect("utf-8");
    git(&cluster.memory(1), &["push", "--quiet", remote, "HEAD:refs/heads/other"]);
    let hook = cluster.remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\n\
         if [ ! -e \"$GIT_DIR/raced\" ]; then\n\
           touch \"$GIT_DIR/raced\"\n\
           unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\n\
           git update-ref refs/heads/main refs/heads/other\n\
         fi\n",
    )
    .expect("write the hook");
    let mut permissions = std::fs::metadata(&hook).expect("the hook").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&hook, permissions).expect("chmod the hook");
    cluster.note(0, "Carol keeps bees in Leeds.");
    let report = ok(&cluster.sync(0, &[]));
    assert!(cluster.remote.join("raced").exists(), "the hook did not run");
    assert_eq!((&report["rounds"], &report["action"]), (&2.into(), &"merged".into()), "{report}");
    let notes = cluster.notes(0);
    assert!(notes.contains("Bob drives a blue car.") && notes.contains("Carol keeps bees"));
    let remote_head = git(&cluster.remote, &["rev-parse", "refs/heads/main"]);
    assert_eq!(remote_head.trim(), cluster.head(0));
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

/// A smart-HTTP git server on loopback: `git http-backend` (CGI) behind a minimal HTTP/1.1
/// front that answers one request per connection and closes it. Pushes are allowed
/// (`REMOTE_USER` is set, which enables `http.receivepack`). The server stops on drop, also
/// when the test fails.
struct GitHttp {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    served: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl GitHttp {
    /// Serves the repositories under `root` (`http://127.0.0.1:<port>/<name>`).
    fn serve(root: &Path) -> GitHttp {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let root = root.to_path_buf();
        let acceptor = std::thread::spawn({
            let (stop, served) = (stop.clone(), served.clone());
            move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    served.fetch_add(1, Ordering::SeqCst);
                    let root = root.clone();
                    // A failed exchange shows as the client's error; the server only goes on.
                    std::thread::spawn(move || {
                        let _ = cgi(stream, &root);
                    });
                }
            }
        });
        GitHttp { port, stop, served, acceptor: Some(acceptor) }
    }

    fn url(&self, repository: &str) -> String {
        format!("http://127.0.0.1:{}/{repository}", self.port)
    }

    /// How many connections it accepted.
    fn requests(&self) -> usize {
        self.served.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for GitHttp {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the acceptor, which then sees the flag.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Serves one HTTP request on `stream` with `git http-backend`.
fn cgi(stream: std::net::TcpStream, root: &Path) -> std::io::Result<()> {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or("GET").to_owned(), parts.next().unwrap_or("/"));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (path, query) = (path.to_owned(), query.to_owned());
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    if header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let mut body = Vec::new();
    if let Some(length) = header("content-length").and_then(|v| v.parse::<u64>().ok()) {
        reader.by_ref().take(length).read_to_end(&mut body)?;
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = line.trim().split(';').next().unwrap_or("0");
            let size = usize::from_str_radix(size, 16).map_err(std::io::Error::other)?;
            let mut chunk = vec![0; size + 2];
            if size == 0 {
                // The last chunk: trailers up to an empty line.
                loop {
                    line.clear();
                    if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            reader.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk[..size]);
        }
    }
    let mut command = std::process::Command::new("git");
    command
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REMOTE_USER", "sync-test")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", &path)
        .env("QUERY_STRING", &query)
        .env("CONTENT_LENGTH", body.len().to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    if let Some(kind) = header("content-type") {
        command.env("CONTENT_TYPE", kind);
    }
    // CGI passes every request header as HTTP_<NAME> (Git-Protocol, Content-Encoding, …).
    for (name, value) in &headers {
        command.env(format!("HTTP_{}", name.to_ascii_uppercase().replace('-', "_")), value);
    }
    let mut child = command.spawn()?;
    let mut stdin = child.stdin.take().expect("piped");
    // Written from another thread, so a backend that answers before reading all cannot block.
    let feeder = std::thread::spawn(move || stdin.write_all(&body));
    let mut output = Vec::new();
    child.stdout.take().expect("piped").read_to_end(&mut output)?;
    child.wait()?;
    let _ = feeder.join();
    let split = output.windows(4).position(|w| w == b"\r\n\r\n").map(|at| (at, at + 4));
    let split =
        split.or_else(|| output.windows(2).position(|w| w == b"\n\n").map(|at| (at, at + 2)));
    let (head, content) = match split {
        Some((end, start)) => {
            (String::from_utf8_lossy(&output[..end]).into_owned(), &output[start..])
        }
        None => (String::new(), &output[..]),
    };
    let mut status = "200 OK".to_owned();
    let mut response = Vec::new();
    for header in head.lines().map(str::trim_end).filter(|h| !h.is_empty()) {
        match header.strip_prefix("Status:") {
            Some(value) => status = value.trim().to_owned(),
            None => response.extend_from_slice(format!("{header}\r\n").as_bytes()),
        }
    }
    let mut out = format!("HTTP/1.1 {status}\r\n").into_bytes();
    out.extend_from_slice(&response);
    out.extend_from_slice(
        format!("Content-Length: {}\r\nConnection: close\r\n\r\n", content.len()).as_bytes(),
    );
    out.extend_from_slice(content);
    writer.write_all(&out)?;
    writer.flush()
}
