//! `scriptorium import` tests on small hand-written transcripts: the summary line, `--json`,
//! re-import, bad lines, failed files and usage errors.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::scriptorium;

fn claude_line(uuid: &str, parent: Option<&str>, kind: &str, text: &str) -> String {
    json!({
        "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "sess-1",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": kind, "content": [{"type": "text", "text": text}]},
    })
    .to_string()
}

fn write_transcript(dir: &Path) -> std::path::PathBuf {
    let project = dir.join("projects/-w");
    std::fs::create_dir_all(&project).expect("dirs");
    let path = project.join("sess-1.jsonl");
    let text = [
        claude_line("u1", None, "user", "Plan the trip"),
        claude_line("a1", Some("u1"), "assistant", "Sure"),
        r#"{"type":"file-history-snapshot","messageId":"m"}"#.to_owned(),
    ]
    .join("\n");
    std::fs::write(&path, text + "\n").expect("write");
    path
}

fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

#[test]
fn imports_a_directory_and_reimports_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    write_transcript(tmp.path());
    let projects = tmp.path().join("projects");
    let projects = projects.to_str().expect("utf-8 path");

    let out = scriptorium(&home, &["import", "claude-code", projects]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        line.trim_end(),
        "imported 1 sessions: 2 nodes (2 new, 0 already present), 1 branches; \
         skipped 1 records (file-history-snapshot 1); 0 bad lines"
    );
    // No progress bar when stderr is not a terminal.
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(home.join("sessions").is_dir());

    let out = scriptorium(&home, &["import", "claude-code", projects, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = stdout_json(&out);
    assert_eq!(v["sessions"], 1);
    assert_eq!(v["nodes"], 2);
    assert_eq!(v["new_nodes"], 0);
    assert_eq!(v["existing_nodes"], 2);
    assert_eq!(v["skipped"]["file-history-snapshot"], 1);
    assert_eq!(v["session_list"][0]["id"], "sess-1");
    assert_eq!(v["session_list"][0]["title"], "Plan the trip");
}

#[test]
fn bad_lines_are_warned_and_skipped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let path = tmp.path().join("chat.jsonl");
    let text = [
        json!({"id": "m1", "role": "user", "content": "hi"}).to_string(),
        "garbage".to_owned(),
        json!({"id": "m2", "parent": "m1", "role": "assistant", "content": "hello"}).to_string(),
    ]
    .join("\n");
    std::fs::write(&path, text).expect("write");
    let out = scriptorium(&home, &["import", "jsonl", path.to_str().expect("utf-8"), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("chat.jsonl:2: not a JSON object"), "{stderr}");
    let v = stdout_json(&out);
    assert_eq!(v["new_nodes"], 2);
    assert_eq!(v["bad_lines"][0]["line"], 2);
}

#[test]
fn a_failed_file_exits_1_and_the_others_are_imported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let good = write_transcript(tmp.path());
    let bad = tmp.path().join("notes.jsonl");
    std::fs::write(&bad, "# not a transcript\n").expect("write");
    let missing = tmp.path().join("missing.jsonl");
    let args = [
        "import",
        "claude-code",
        bad.to_str().expect("utf-8"),
        good.to_str().expect("utf-8"),
        missing.to_str().expect("utf-8"),
        "--json",
    ];
    let out = scriptorium(&home, &args);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["new_nodes"], 2);
    let failed = v["failed"].as_array().expect("failed list");
    assert_eq!(failed.len(), 2, "{failed:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("notes.jsonl:1: not a JSONL transcript"), "{stderr}");
    assert!(stderr.contains("missing.jsonl"), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for args in [&["import", "word", "x.jsonl"][..], &["import", "codex"][..], &["import"][..]] {
        let out = scriptorium(tmp.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// The permission bits of `path` (not following a symlink).
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path).expect("stat").permissions().mode() & 0o777
}

/// Runs `scriptorium --home home args…` under `umask`, through `sh` (std has no umask call).
fn scriptorium_with_umask(umask: &str, home: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .expect("sh runs the scriptorium binary")
}

/// `import` run as the first command created the home and `sessions/` 0755 and the logs and
/// the registry 0644 (whatever the umask allowed); they are private whatever the umask.
#[test]
fn import_as_the_first_command_creates_a_private_home_whatever_the_umask() {
    for umask in ["000", "022", "277"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let transcript = write_transcript(tmp.path());
        // The home's parent is missing too: everything on the way is created private.
        let home = tmp.path().join("data/scriptorium");
        let out =
            scriptorium_with_umask(umask, &home, &["import", "claude-code", path_str(&transcript)]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let sessions = home.join("sessions");
        for dir in [&tmp.path().join("data"), &home, &sessions] {
            assert_eq!(mode(dir), 0o700, "umask {umask}: {}", dir.display());
        }
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&sessions).expect("list sessions/") {
            let path = entry.expect("entry").path();
            assert_eq!(mode(&path), 0o600, "umask {umask}: {}", path.display());
            names.push(path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_owned());
        }
        names.sort();
        assert_eq!(names, ["registry.jsonl", "registry.lock", "s_sess-1.log"], "umask {umask}");
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// An import truncated and appended to a file outside the home through a symlink planted at
/// `sessions/s_<id>.log`; the store refuses the symlink and the file outside is untouched.
#[test]
fn a_symlink_planted_at_a_log_path_is_refused_and_the_file_outside_is_untouched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let transcript = write_transcript(tmp.path());
    let sessions = home.join("sessions");
    std::fs::create_dir_all(&sessions).expect("mkdir");
    // No final newline: a store that follows the link sees a torn tail and truncates it.
    let outside = tmp.path().join("outside.txt");
    let precious = b"{\"precious\": true}\nnot a log line, and no newline";
    std::fs::write(&outside, precious).expect("write");
    std::os::unix::fs::symlink(&outside, sessions.join("s_sess-1.log")).expect("symlink");

    let out = scriptorium(&home, &["import", "claude-code", path_str(&transcript), "--json"]);
    let after = std::fs::read(&outside).expect("read");
    assert_eq!(String::from_utf8_lossy(&after), String::from_utf8_lossy(precious));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("s_sess-1.log") && stderr.contains("symlink"), "{stderr}");
    let v = stdout_json(&out);
    assert_eq!(v["new_nodes"], 0);
    assert_eq!(v["failed"][0]["code"], "SYMLINK_REFUSED", "{v}");
}

/// A symlinked registry is never written through either (it is a cache: the import succeeds
/// and says the registry was not updated).
#[test]
fn a_symlink_planted_at_the_registry_is_refused_and_the_file_outside_is_untouched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let transcript = write_transcript(tmp.path());
    let sessions = home.join("sessions");
    std::fs::create_dir_all(&sessions).expect("mkdir");
    let outside = tmp.path().join("outside.txt");
    std::fs::write(&outside, b"precious").expect("write");
    std::os::unix::fs::symlink(&outside, sessions.join("registry.jsonl")).expect("symlink");

    let out = scriptorium(&home, &["import", "claude-code", path_str(&transcript), "--json"]);
    assert_eq!(String::from_utf8_lossy(&std::fs::read(&outside).expect("read")), "precious");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout_json(&out)["new_nodes"], 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("registry.jsonl") && stderr.contains("symlink"), "{stderr}");
}

/// A symlinked `sessions/` directory is refused before anything is written through it.
#[test]
fn a_symlinked_sessions_directory_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let transcript = write_transcript(tmp.path());
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, home.join("sessions")).expect("symlink");

    let out = scriptorium(&home, &["import", "claude-code", path_str(&transcript)]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("symlink"), "{stderr}");
    assert_eq!(std::fs::read_dir(&elsewhere).expect("list").count(), 0);
}

/// Runs `scriptorium --home home args…`, killing it after a minute: only a safety net so that a
/// hang fails the test instead of the whole run (a healthy run takes a fraction of that).
fn scriptorium_or_kill(home: &Path, args: &[&str]) -> std::process::Output {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the scriptorium binary runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!("still running after 60 s: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `scriptorium import claude-code /path/to/fifo` blocked forever in `open`; a FIFO named on
/// the command line (or reached through a symlink) is a per-file error, and the other files
/// are still imported.
#[test]
fn an_explicit_fifo_is_a_per_file_error_not_a_hang() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let good = write_transcript(tmp.path());
    let fifo = tmp.path().join("fifo.jsonl");
    mkfifo(&fifo);
    let link = tmp.path().join("link.jsonl");
    std::os::unix::fs::symlink(&fifo, &link).expect("symlink");
    for format in ["auto", "claude-code", "codex", "pi", "jsonl"] {
        let mut args = vec!["import", format, path_str(&fifo), path_str(&link), "--json"];
        // The transcript beside them is still imported.
        let with_good = matches!(format, "auto" | "claude-code");
        if with_good {
            args.push(path_str(&good));
        }
        let out = scriptorium_or_kill(&home, &args);
        assert_eq!(out.status.code(), Some(1), "{format}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for path in [&fifo, &link] {
            let message = format!("{}: is a FIFO, not a regular file", path.display());
            assert!(stderr.contains(&message), "{format}: {stderr}");
        }
        let v = stdout_json(&out);
        let codes: Vec<&Value> = v["failed"].as_array().expect("failed").iter().collect();
        assert_eq!(codes.len(), 2, "{format}: {v}");
        assert!(codes.iter().all(|f| f["code"] == "NOT_A_REGULAR_FILE"), "{format}: {v}");
        assert_eq!(v["nodes"], if with_good { 2 } else { 0 }, "{format}: {v}");
    }
}

/// A symlink named on the command line is followed when it resolves to a regular file.
#[test]
fn an_explicit_symlink_to_a_transcript_is_followed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let good = write_transcript(tmp.path());
    let link = tmp.path().join("link.jsonl");
    std::os::unix::fs::symlink(&good, &link).expect("symlink");
    let out = scriptorium_or_kill(&home, &["import", "claude-code", path_str(&link), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout_json(&out)["new_nodes"], 2);
}

fn codex_rollout(dir: &Path, name: &str, id: &str) -> std::path::PathBuf {
    let line = |kind: &str, payload: Value| {
        json!({"timestamp": "2026-05-11T08:27:17.490Z", "type": kind, "payload": payload})
            .to_string()
    };
    let text = [
        line("session_meta", json!({"id": id, "cwd": "/w"})),
        line("turn_context", json!({"model": "gpt-x"})),
        line(
            "response_item",
            json!({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": "Plan the trip"}]}),
        ),
        line(
            "response_item",
            json!({"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": "Sure"}]}),
        ),
    ]
    .join("\n");
    let path = dir.join(name);
    std::fs::write(&path, text + "\n").expect("write");
    path
}

/// `scriptorium import pi <dir of Codex rollouts>` skipped every record, said it imported and
/// exited 0; each file is refused with what it looks like and the command to use, and
/// nothing is imported.
#[test]
fn an_import_in_the_wrong_format_says_what_the_files_look_like_and_imports_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let rollouts = tmp.path().join("rollouts");
    std::fs::create_dir_all(&rollouts).expect("mkdir");
    let a = codex_rollout(&rollouts, "rollout-a.jsonl", "r-a");
    let b = codex_rollout(&rollouts, "rollout-b.jsonl", "r-b");

    let out = scriptorium(&home, &["import", "pi", path_str(&rollouts)]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for path in [&a, &b] {
        let message = format!(
            "error: {}: looks like a Codex rollout, not a pi session; try `scriptorium import \
             codex` or `scriptorium import auto`",
            path.display()
        );
        assert!(stderr.contains(&message), "{stderr}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("imported 0 sessions: 0 nodes"), "{stdout}");
    assert!(stdout.trim_end().ends_with("; 2 failed"), "{stdout}");
    let logs = std::fs::read_dir(home.join("sessions"))
        .expect("sessions/")
        .filter(|e| e.as_ref().is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".log")))
        .count();
    assert_eq!(logs, 0);

    let out = scriptorium(&home, &["import", "claude-code", path_str(&a), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!((v["sessions"].clone(), v["nodes"].clone()), (json!(0), json!(0)), "{v}");
    assert_eq!(v["failed"][0]["code"], "WRONG_FORMAT", "{v}");
    assert_eq!(v["files"], json!([]), "{v}");
}

/// `import auto` on a directory of every kind of file imports each file as the format it looks
/// like, says which it chose for each, and reports the file it could not recognise.
#[test]
fn import_auto_imports_each_file_of_a_mixed_directory_with_its_format() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let mixed = tmp.path().join("mixed");
    std::fs::create_dir_all(&mixed).expect("mkdir");
    let claude = write_transcript(tmp.path());
    std::fs::copy(&claude, mixed.join("claude.jsonl")).expect("copy");
    codex_rollout(&mixed, "rollout.jsonl", "r-1");
    let pi = [
        json!({"type": "session", "version": 3, "id": "p-1", "timestamp": "2026-01-01T00:00:00Z"}),
        json!({"type": "message", "id": "e1", "parentId": null, "timestamp": "2026-01-01T00:00:01Z",
               "message": {"role": "user", "content": "Plan the trip"}}),
        json!({"type": "message", "id": "e2", "parentId": "e1", "timestamp": "2026-01-01T00:00:02Z",
               "message": {"role": "assistant", "content": [{"type": "text", "text": "Sure"}]}}),
    ];
    let pi: Vec<String> = pi.iter().map(Value::to_string).collect();
    std::fs::write(mixed.join("pi.jsonl"), pi.join("\n")).expect("write");
    let chat = [
        json!({"id": "m1", "role": "user", "content": "Plan the trip", "session": "chat-1"}),
        json!({"id": "m2", "parent": "m1", "role": "assistant", "content": "Sure",
               "session": "chat-1"}),
    ];
    let chat: Vec<String> = chat.iter().map(Value::to_string).collect();
    std::fs::write(mixed.join("chat.jsonl"), chat.join("\n")).expect("write");
    std::fs::write(mixed.join("empty.jsonl"), "").expect("write");
    std::fs::write(mixed.join("notes.jsonl"), "# not a transcript\n").expect("write");

    let out = scriptorium(&home, &["import", "auto", path_str(&mixed)]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dir = mixed.display();
    let want = format!(
        "{dir}/chat.jsonl: jsonl\n{dir}/claude.jsonl: claude-code\n{dir}/empty.jsonl: empty, \
         nothing to import\n{dir}/pi.jsonl: pi\n{dir}/rollout.jsonl: codex\nimported 4 sessions: \
         8 nodes (8 new, 0 already present), 4 branches; skipped 2 records \
         (file-history-snapshot 1, turn_context 1); 0 bad lines; 1 failed\n"
    );
    assert_eq!(stdout, want);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("error: {dir}/notes.jsonl: not a recognised transcript")));

    let out = scriptorium(&home, &["import", "auto", path_str(&mixed), "--json"]);
    let v = stdout_json(&out);
    assert_eq!(v["new_nodes"], 0, "{v}");
    assert_eq!(v["failed"][0]["code"], "UNRECOGNISED_FORMAT", "{v}");
    let formats: Vec<(String, Value)> = v["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (f["path"].as_str().unwrap_or("").replace(&dir.to_string(), ""), f["format"].clone())
        })
        .collect();
    assert_eq!(
        formats,
        [
            ("/chat.jsonl".to_owned(), json!("jsonl")),
            ("/claude.jsonl".to_owned(), json!("claude-code")),
            ("/empty.jsonl".to_owned(), Value::Null),
            ("/pi.jsonl".to_owned(), json!("pi")),
            ("/rollout.jsonl".to_owned(), json!("codex")),
        ]
    );
    let mut ids: Vec<&str> = v["session_list"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["chat-1", "p-1", "r-1", "sess-1"]);
}
