//! Regressions of "every surface tells the truth", as a user meets them through the binary:
//! uncited text refused (not silently dropped), a change of nothing reported as such and not
//! committed, a lost workspace ID refused and repaired, exit codes as the README says them
//! (75 for a held lock, 2 for a usage error), JSON errors with `--json` on every command that
//! takes it, a closed pipe ending the process quietly, private drafts, and a `check` that sees
//! what transactions cannot use.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{NOTE, git, home_with_sources, scriptorium};

fn commits(home: &Path) -> usize {
    git(&home.join("memory"), &["rev-list", "--count", "HEAD"]).trim().parse().expect("count")
}

fn status(home: &Path) -> Value {
    let out = scriptorium(home, &["status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn write(home: &Path, name: &str, text: &str) -> String {
    let path = home.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("utf-8").to_owned()
}

#[test]
fn an_uncited_core_edit_is_refused_keeps_the_draft_and_creates_nothing() {
    let home = home_with_sources();
    let before = commits(home.path());
    let file = write(home.path(), "c.md", "# Core\n\nThe owner wants only e2e tests.\n");
    let out = scriptorium(home.path(), &["edit", "topics/core.md", "--from", &file]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("topics/core.md:3:1: UNCITED_PARAGRAPH")
            && stdout.contains("The owner wants only e2e tests."),
        "{stdout}"
    );
    assert!(!stdout.contains("installed"), "{stdout}");
    assert!(!home.path().join("memory/topics/core.md").exists());
    assert_eq!(commits(home.path()), before);
    // The text is kept, privately.
    let drafts = home.path().join("drafts");
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&drafts), 0o700);
    let draft = std::fs::read_dir(&drafts).expect("drafts").next().expect("a draft").expect("e");
    assert_eq!(mode(&draft.path()), 0o600);
    assert_eq!(
        std::fs::read_to_string(draft.path()).expect("draft"),
        "# Core\n\nThe owner wants only e2e tests.\n"
    );
}

#[test]
fn an_edit_that_changes_nothing_says_so_and_makes_no_commit() {
    let home = home_with_sources();
    let file = write(home.path(), "note.md", NOTE);
    let out = scriptorium(home.path(), &["edit", "topics/garden.md", "--from", &file]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let revision = status(home.path())["revision"].clone();
    let before = commits(home.path());
    // The installed text without its final newline: a different text, the same memory.
    let installed =
        std::fs::read_to_string(home.path().join("memory/topics/garden.md")).expect("installed");
    let same = write(home.path(), "same.md", installed.trim_end());
    let out = scriptorium(home.path(), &["edit", "topics/garden.md", "--from", &same]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("nothing changed"), "{stdout}");
    assert!(!stdout.contains("git commit"), "{stdout}");
    assert_eq!(commits(home.path()), before);
    assert_eq!(status(home.path())["revision"], revision);
}

#[test]
fn an_update_that_changes_nothing_is_a_noop_without_a_commit() {
    let home = home_with_sources();
    let file = write(home.path(), "note.md", NOTE);
    assert_eq!(
        scriptorium(home.path(), &["edit", "garden.md", "--from", &file]).status.code(),
        Some(0)
    );
    let installed =
        std::fs::read_to_string(home.path().join("memory/topics/garden.md")).expect("installed");
    let changes = serde_json::json!([
        { "path": "topics/garden.md", "action": "write", "content": installed }
    ]);
    let changes = write(home.path(), "changes.json", &changes.to_string());
    let revision = status(home.path())["revision"].as_str().expect("revision").to_owned();
    let before = commits(home.path());
    let out =
        scriptorium(home.path(), &["update", "--base", &revision, "--changes", &changes, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(result["ok"], true);
    assert_eq!(result["noop"], true);
    assert_eq!(result["revision"], revision.as_str());
    assert_eq!(result["changed_files"], serde_json::json!([]));
    assert_eq!(result["git_committed"], false);
    assert_eq!(commits(home.path()), before);
    // A sleep with nothing to reorganize commits nothing either.
    let out = scriptorium(home.path(), &["sleep", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(commits(home.path()), before);
    assert_eq!(status(home.path())["revision"], revision.as_str());
}

/// Imports a small generic session and writes it with the journal writer (markers name the
/// workspace).
fn written_session(home: &Path) {
    let lines = [
        r#"{"id": "u1", "role": "user", "content": "I'm Dana and I live in Lyon.", "created_at": "2024-04-02T09:00:00Z"}"#,
        r#"{"id": "a1", "parent": "u1", "role": "assistant", "content": "Hello Dana.", "created_at": "2024-04-02T09:01:00Z"}"#,
    ];
    let file = write(home, "s.jsonl", &format!("{}\n", lines.join("\n")));
    let out = scriptorium(home, &["import", "jsonl", &file]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = scriptorium(home, &["write", "--all", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(status(home)["pending_turns"], 0);
}

#[test]
fn a_lost_workspace_id_is_refused_and_repaired_from_the_session_markers() {
    let home = home_with_sources();
    written_session(home.path());
    let id = status(home.path())["workspace"].as_str().expect("id").to_owned();
    let runtime = home.path().join("memory/.scriptorium");
    // A record written before it kept the ID, and the ID file gone.
    let record_path = runtime.join("revision");
    let mut record: Value =
        serde_json::from_slice(&std::fs::read(&record_path).expect("read")).expect("json");
    record.as_object_mut().expect("object").remove("workspace_id");
    std::fs::write(&record_path, format!("{record}\n")).expect("write");
    std::fs::remove_file(runtime.join("workspace-id")).expect("rm");
    let out = scriptorium(home.path(), &["status", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let error: Value = serde_json::from_slice(&out.stdout).expect("a JSON error");
    assert_eq!(error["error"]["code"], "WORKSPACE_ID_MISSING", "{error}");
    assert!(!runtime.join("workspace-id").exists(), "a new ID was minted");
    let out = scriptorium(home.path(), &["repair", "--workspace-id"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let now = status(home.path());
    assert_eq!(now["workspace"], id.as_str());
    assert_eq!(now["pending_turns"], 0, "written turns became pending again");
    // An ID in use is never replaced.
    let out = scriptorium(home.path(), &["repair", "--workspace-id", "w-00000000"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(status(home.path())["workspace"], id.as_str());
}

#[test]
fn a_held_lock_is_retryable_everywhere_and_reads_do_not_wait_for_it() {
    let home = home_with_sources();
    let file = write(home.path(), "note.md", NOTE);
    let revision = status(home.path())["revision"].as_str().expect("revision").to_owned();
    let changes =
        serde_json::json!([{ "path": "topics/garden.md", "action": "write", "content": NOTE }]);
    let changes = write(home.path(), "changes.json", &changes.to_string());
    let lock = std::fs::File::options()
        .read(true)
        .write(true)
        .open(home.path().join("memory/.scriptorium/write.lock"))
        .expect("open the lock");
    lock.lock().expect("hold the workspace lock");
    // Reads never wait for the write lock.
    assert_eq!(status(home.path())["revision"], revision.as_str());
    let out = scriptorium(home.path(), &["search", "garden", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Writers wait, then give up with the retryable exit code (run side by side).
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_scriptorium"))
            .arg("--home")
            .arg(home.path())
            .args(args)
            .env_remove("SCRIPTORIUM_HOME")
            .env_remove("XDG_DATA_HOME")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let children = [
        spawn(&["update", "--base", &revision, "--changes", &changes, "--json"]),
        spawn(&["edit", "topics/garden.md", "--from", &file]),
    ];
    let outputs: Vec<_> =
        children.into_iter().map(|c| c.wait_with_output().expect("wait")).collect();
    for out in &outputs {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(75), "{text}");
        assert!(text.contains("BUSY"), "{text}");
    }
    let error: Value = serde_json::from_slice(&outputs[0].stdout).expect("a JSON error");
    assert_eq!(error["error"]["code"], "BUSY");
    drop(lock);
    assert!(!home.path().join("memory/topics/garden.md").exists());
}

#[test]
fn every_command_that_takes_json_answers_a_failure_in_json() {
    // A home without a workspace: every command that needs one fails.
    let home = tempfile::tempdir().expect("home");
    let missing = home.path().join("missing.json");
    let missing = missing.to_str().expect("utf-8");
    let cases: Vec<Vec<&str>> = vec![
        vec!["status"],
        vec!["search", "garden"],
        vec!["grep", "garden"],
        vec!["get", "topics/a.md"],
        vec!["browse"],
        vec!["core"],
        vec!["rebuild"],
        vec!["log"],
        vec!["update", "--base", "1-x", "--changes", missing],
        vec!["write", "--all"],
        vec!["sleep"],
        vec!["sessions", "show", "nope"],
        vec!["sessions", "branches", "nope"],
        vec!["import", "claude-code", missing],
        vec!["check", "--workspace", missing],
        vec!["repair", "--workspace-id", "not-an-id"],
        vec!["search"],
        vec!["status", "--no-such-flag"],
    ];
    for case in cases {
        let mut args = case.clone();
        args.push("--json");
        let out = scriptorium(home.path(), &args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let code = out.status.code().expect("exited");
        assert!(code == 1 || code == 2, "{case:?}: exit {code}: {stdout}");
        let json: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{case:?}: not JSON ({e}): {stdout}"));
        assert_eq!(json["ok"], false, "{case:?}: {json}");
        let error = json["error"].as_object().unwrap_or_else(|| panic!("{case:?}: {json}"));
        let code = error["code"].as_str().expect("a code");
        assert!(!code.is_empty() && code.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{case:?}: {json}");
        assert!(error.contains_key("path") && error["violations"].is_array(), "{case:?}: {json}");
    }
    assert!(!home.path().join("memory").exists(), "a failing command created the workspace");
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let home = tempfile::tempdir().expect("home");
    // A session long enough that its listing cannot fit in a pipe's buffer.
    let mut lines = Vec::new();
    for i in 0..4000 {
        let parent = if i == 0 { String::new() } else { format!(r#""parent": "n{}", "#, i - 1) };
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        lines.push(format!(
            r#"{{"id": "n{i}", {parent}"role": "{role}", "content": "turn {i} of a long talk about gardens"}}"#
        ));
    }
    let file = write(home.path(), "long.jsonl", &format!("{}\n", lines.join("\n")));
    let out = scriptorium(home.path(), &["import", "jsonl", &file, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let imported: Value = serde_json::from_slice(&out.stdout).expect("json");
    let session = imported["session_list"][0]["id"].as_str().expect("session").to_owned();
    for args in [vec!["sessions", "show", session.as_str()], vec!["sessions", "list"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
            .arg("--home")
            .arg(home.path())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // `| head -1`: read one line, then close the pipe.
        let mut stdout = child.stdout.take().expect("stdout");
        let mut first = [0u8; 16];
        std::io::Read::read(&mut stdout, &mut first).expect("read");
        drop(stdout);
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && stderr.is_empty(), "{args:?}: {stderr}");
    }
}

#[test]
fn check_reports_what_transactions_cannot_use_and_never_reads_through_a_symlink() {
    use std::os::unix::ffi::OsStrExt as _;
    let home = home_with_sources();
    let file = write(home.path(), "note.md", NOTE);
    assert_eq!(
        scriptorium(home.path(), &["edit", "garden.md", "--from", &file]).status.code(),
        Some(0)
    );
    let memory = home.path().join("memory");
    let odd = memory.join("topics").join(std::ffi::OsStr::from_bytes(b"notes-\xff.md"));
    std::fs::write(&odd, "# Notes\n").expect("write");
    let out = scriptorium(home.path(), &["check", "--json"]);
    assert_eq!(out.status.code(), Some(1), "check passed with a file no link can name");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["ok"], false);
    assert_eq!(report["diagnostics"][0]["code"], "INVALID_UTF8", "{report}");
    // Transactions still work: the file is not memory and is carried over unchanged.
    let installed = std::fs::read_to_string(memory.join("topics/garden.md")).expect("installed");
    let changed = write(home.path(), "note2.md", &installed.replace("vegetable", "flower"));
    let out = scriptorium(home.path(), &["edit", "garden.md", "--from", &changed]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(std::fs::read(&odd).expect("kept"), b"# Notes\n");
    // A NUL byte, which every transaction refuses, is reported too.
    std::fs::remove_file(&odd).expect("rm");
    let installed = std::fs::read_to_string(memory.join("topics/garden.md")).expect("installed");
    std::fs::write(memory.join("topics/garden.md"), installed.replacen("flower", "flo\0wer", 1))
        .expect("write");
    let out = scriptorium(home.path(), &["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["diagnostics"][0]["code"], "NUL_BYTE", "{report}");
    // A symlinked topics/ is reported, and what it points to is not read.
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    std::fs::write(elsewhere.path().join("secret.md"), "not a topic\n").expect("write");
    let other = tempfile::tempdir().expect("workspace");
    std::fs::create_dir(other.path().join("sources")).expect("mkdir");
    std::os::unix::fs::symlink(elsewhere.path(), other.path().join("topics")).expect("symlink");
    let workspace = other.path().to_str().expect("utf-8");
    let out = scriptorium(home.path(), &["check", "--workspace", workspace, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["topic_files"], 0, "read through the symlink: {report}");
    assert_eq!(report["diagnostics"][0]["path"], "topics", "{report}");
    assert_eq!(report["diagnostics"][0]["code"], "NOT_REGULAR_FILE", "{report}");
}

#[test]
fn status_tells_the_last_write_outcome_whatever_ran_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path();
    assert_eq!(scriptorium(home, &["init"]).status.code(), Some(0));
    let line = r#"{"id": "u1", "role": "user", "content": "I'm Dana and I live in Lyon.", "created_at": "2024-04-02T09:00:00Z"}"#;
    let file = write(home, "s.jsonl", &format!("{line}\n"));
    assert_eq!(scriptorium(home, &["import", "jsonl", &file]).status.code(), Some(0));
    let text_status =
        || String::from_utf8_lossy(&scriptorium(home, &["status"]).stdout).into_owned();
    assert!(text_status().contains("writer      no write yet"), "{}", text_status());

    // `scriptorium write` with a model that fails: the failure is recorded with its code.
    let failed = scriptorium(home, &["write", "--all", "--model", "command", "--command", "false"]);
    assert_eq!(failed.status.code(), Some(1), "{}", String::from_utf8_lossy(&failed.stderr));
    let writer = &status(home)["writer"];
    assert_eq!(writer["last_outcome"], "failure", "{writer}");
    assert_eq!(writer["last_failure"]["reason_code"], "MODEL_FAILURE_UNKNOWN", "{writer}");
    assert!(writer["last_failure"]["at"].as_str().is_some_and(|t| t.starts_with("20")), "{writer}");
    let text = text_status();
    assert!(
        text.contains("last write failed at") && text.contains("MODEL_FAILURE_UNKNOWN"),
        "{text}"
    );

    // The next write succeeds, and the status says so.
    let ok = scriptorium(home, &["write", "--all"]);
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    assert_eq!(status(home)["writer"]["last_outcome"], "success");
    assert!(text_status().contains("writer      last write succeeded at"), "{}", text_status());
}
