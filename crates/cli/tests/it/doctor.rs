//! `scriptorium doctor --json` on a healthy home after `setup claude-code` (every check `ok` or
//! `skipped`, exit 0), then each problem it must find, by check ID, with exit 1; and
//! `scriptorium completions` / `scriptorium man`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{append_session, home_with_note, scriptorium};

/// The check IDs, in the order they run.
const IDS: [&str; 10] = [
    "home",
    "workspace",
    "index",
    "git",
    "session-store",
    "claude-code",
    "codex",
    "writer",
    "last-write",
    "sync-remote",
];

/// Runs `scriptorium <args>` for `home` with `user` as `HOME` (no Codex home).
fn run(home: &Path, user: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env("HOME", user)
        .env_remove("CODEX_HOME")
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("SCRIPTORIUM_MEMORY_BACKEND")
        .output()
        .expect("the scriptorium binary runs")
}

/// `doctor --json`: its exit code and document.
fn doctor(home: &Path, user: &Path) -> (Option<i32>, Value) {
    let out = run(home, user, &["doctor", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!("doctor --json printed no JSON ({err}): {}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code(), doc)
}

/// The check `id` of a doctor document.
fn check<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no check {id}: {doc}"))
}

/// A home holding one topic block (index and git up to date) and a user whose Claude Code is
/// set up for it.
fn healthy() -> (tempfile::TempDir, tempfile::TempDir) {
    let home = home_with_note();
    let user = tempfile::tempdir().expect("a user home");
    std::fs::create_dir_all(user.path().join(".claude")).expect("Claude Code's directory");
    // The journal writer: what the writer check does with an agent CLI is tested below.
    let out = run(home.path(), user.path(), &["setup", "claude-code", "--writer", "journal"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    (home, user)
}

/// Asserts that `doctor` exits 1 and that check `id` failed, saying `says`.
fn fails_with(home: &Path, user: &Path, id: &str, says: &str) -> Value {
    let (code, doc) = doctor(home, user);
    assert_eq!(code, Some(1), "{doc:#}");
    assert_eq!(doc["ok"], false, "{doc:#}");
    assert_eq!(doc["error"]["code"], "PROBLEMS_FOUND", "{doc:#}");
    let found = check(&doc, id);
    assert_eq!(found["status"], "fail", "{doc:#}");
    let finding = found["finding"].as_str().expect("a finding");
    assert!(finding.contains(says), "{id} should say {says:?}: {doc:#}");
    assert!(found["advice"].as_str().is_some_and(|a| !a.is_empty()), "advice for {id}: {doc:#}");
    doc
}

#[test]
fn a_healthy_home_passes_every_check_in_order() {
    let (home, user) = healthy();
    let (code, doc) = doctor(home.path(), user.path());
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(doc["ok"], true);
    let ids: Vec<&str> =
        doc["checks"].as_array().expect("checks").iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, IDS);
    for id in IDS {
        let status = check(&doc, id)["status"].as_str().expect("a status");
        assert!(status == "ok" || status == "skipped", "{id} is {status}: {doc:#}");
    }
    for id in ["home", "workspace", "index", "git", "session-store", "claude-code", "writer"] {
        assert_eq!(check(&doc, id)["status"], "ok", "{id}: {doc:#}");
    }
    // No Codex for this user, no remote configured.
    assert_eq!(check(&doc, "codex")["status"], "skipped");
    assert_eq!(check(&doc, "sync-remote")["status"], "skipped");

    // The same checks, for people: one line each, exit 0.
    let out = run(home.path(), user.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| l.starts_with('✓')).count(), 8, "{text}");
    assert!(text.lines().any(|l| l.starts_with("- codex")), "{text}");
}

#[test]
fn a_world_writable_home_fails_the_home_check() {
    use std::os::unix::fs::PermissionsExt as _;
    let (home, user) = healthy();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let doc = fails_with(home.path(), user.path(), "home", "world-writable");
    assert!(check(&doc, "home")["advice"].as_str().expect("advice").contains("chmod 700"));
    // The rest still runs.
    assert_eq!(check(&doc, "workspace")["status"], "ok", "{doc:#}");
}

#[test]
fn a_broken_topic_file_fails_the_workspace_check() {
    let (home, user) = healthy();
    let broken = "# Broken\n\nA claim citing nothing archived.[^e1]\n\n\
                  [^e1]: Time: `2024-04-02`; Sources: [gone](openprogram/no-such-session/u9)\n";
    std::fs::write(home.path().join("memory/topics/broken.md"), broken).expect("write");
    let doc = fails_with(home.path(), user.path(), "workspace", "problem(s)");
    assert!(check(&doc, "workspace")["finding"].as_str().expect("finding").contains("broken.md"));
    // Written outside a transaction, so git has not seen it either.
    assert_eq!(check(&doc, "git")["status"], "fail", "{doc:#}");
}

#[test]
fn a_missing_or_stale_index_fails_the_index_check() {
    let (home, user) = healthy();
    let index = home.path().join("memory/.scriptorium/index");
    let saved = home.path().join("index-before");
    let out = Command::new("cp").arg("-r").arg(&index).arg(&saved).output().expect("cp");
    assert!(out.status.success());
    // One more install moves the revision on; the index kept aside stays behind.
    crate::support::add_topic(home.path(), "more.md", "Dana also grows beans.");
    std::fs::remove_dir_all(&index).expect("remove the index");
    fails_with(home.path(), user.path(), "index", "there is no search index");
    let out = Command::new("cp").arg("-r").arg(&saved).arg(&index).output().expect("cp");
    assert!(out.status.success());
    fails_with(home.path(), user.path(), "index", "the memory is at");
    // What the advice says mends it.
    assert_eq!(scriptorium(home.path(), &["rebuild"]).status.code(), Some(0));
    assert_eq!(check(&doctor(home.path(), user.path()).1, "index")["status"], "ok");
}

#[test]
fn hooks_pointing_at_another_binary_fail_the_claude_code_check() {
    let (home, user) = healthy();
    let settings = user.path().join(".claude/settings.json");
    let text = std::fs::read_to_string(&settings).expect("settings");
    let exe = env!("CARGO_BIN_EXE_scriptorium");
    assert!(text.contains(exe), "{text}");
    std::fs::write(&settings, text.replace(exe, "/opt/elsewhere/scriptorium")).expect("write");
    fails_with(home.path(), user.path(), "claude-code", "runs /opt/elsewhere/scriptorium");
}

#[test]
fn the_plugin_beside_setups_hooks_is_a_warning_and_alone_needs_scriptorium_on_path() {
    let (home, user) = healthy();
    let settings = user.path().join(".claude/settings.json");
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("settings")).expect("json");
    doc["enabledPlugins"] = serde_json::json!({ "scriptorium@scriptorium": true });
    std::fs::write(&settings, doc.to_string()).expect("write");
    // Setup's hooks win (the plugin's stand down): it works, one of the two is redundant.
    let (code, found) = doctor(home.path(), user.path());
    assert_eq!(code, Some(0), "{found:#}");
    let claude = check(&found, "claude-code");
    assert_eq!(claude["status"], "warn", "{found:#}");
    assert!(claude["finding"].as_str().expect("finding").contains("plugin"), "{found:#}");

    // The plugin alone runs `scriptorium` from PATH: here there is none.
    doc.as_object_mut().expect("an object").remove("hooks");
    std::fs::write(&settings, doc.to_string()).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home.path())
        .args(["doctor", "--json"])
        .env("HOME", user.path())
        .env("PATH", user.path())
        .env_remove("CODEX_HOME")
        .env_remove("SCRIPTORIUM_HOME")
        .output()
        .expect("doctor runs");
    let found: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(1), "{found:#}");
    assert_eq!(check(&found, "claude-code")["status"], "fail", "{found:#}");
    let finding = check(&found, "claude-code")["finding"].as_str().expect("finding").to_owned();
    assert!(finding.contains("from PATH"), "{found:#}");
}

#[test]
fn codex_hooks_are_checked_for_this_home_and_their_trust() {
    let home = home_with_note();
    let user = tempfile::tempdir().expect("a user home");
    let codex_home = user.path().join(".codex");
    std::fs::create_dir(&codex_home).expect("Codex's directory");
    let empty = tempfile::tempdir().expect("a PATH without codex");
    let setup = |extra: &[&str], path: &std::ffi::OsStr| {
        let out = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
            .arg("--home")
            .arg(home.path())
            .args(["setup", "codex", "--writer", "journal"])
            .args(extra)
            .env("HOME", user.path())
            .env("PATH", path)
            .env_remove("CODEX_HOME")
            .env_remove("SCRIPTORIUM_HOME")
            .output()
            .expect("setup runs");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    };
    // No codex to record the trust with: it works once the user reviews the hooks.
    setup(&[], empty.path().as_os_str());
    let (code, doc) = doctor(home.path(), user.path());
    assert_eq!(code, Some(0), "{doc:#}");
    let codex = check(&doc, "codex");
    assert_eq!(codex["status"], "warn", "{doc:#}");
    assert!(codex["finding"].as_str().expect("finding").contains("trust"), "{doc:#}");
    assert_eq!(check(&doc, "claude-code")["status"], "skipped", "{doc:#}");

    // With the real Codex CLI, setup records the trust and the check passes.
    if let Some(cli) = std::env::var_os("SCRIPTORIUM_CODEX").filter(|v| !v.is_empty()) {
        // The CLI is a Node.js script: `node` must stay on PATH.
        let path = std::env::var_os("PATH").unwrap_or_default();
        setup(&["--codex", cli.to_str().expect("utf-8")], &path);
        let (code, doc) = doctor(home.path(), user.path());
        assert_eq!((code, &check(&doc, "codex")["status"]), (Some(0), &"ok".into()), "{doc:#}");
    }

    // The MCP server moved to another home: a failure.
    let config = codex_home.join("config.toml");
    let text = std::fs::read_to_string(&config).expect("config.toml");
    let home_arg = home.path().to_str().expect("utf-8");
    assert!(text.contains(home_arg), "{text}");
    std::fs::write(&config, text.replace(home_arg, "/srv/another-home")).expect("write");
    fails_with(home.path(), user.path(), "codex", "do not name this home");
}

#[test]
fn an_unreachable_remote_fails_the_sync_remote_check() {
    let (home, user) = healthy();
    let missing = home.path().join("no-such-remote.git");
    let config = format!("[sync]\nremote = \"{}\"\n", missing.display());
    std::fs::write(home.path().join("scriptorium.toml"), config).expect("config");
    fails_with(home.path(), user.path(), "sync-remote", "not reachable");

    // A reachable one that is behind this memory: a warning, which passes.
    let remote = crate::support::bare_remote(home.path());
    let config = format!("[sync]\nremote = \"{}\"\n", remote.display());
    std::fs::write(home.path().join("scriptorium.toml"), config).expect("config");
    let (code, doc) = doctor(home.path(), user.path());
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(check(&doc, "sync-remote")["status"], "warn", "{doc:#}");
    assert_eq!(scriptorium(home.path(), &["sync"]).status.code(), Some(0));
    let (code, doc) = doctor(home.path(), user.path());
    assert_eq!((code, &check(&doc, "sync-remote")["status"]), (Some(0), &"ok".into()), "{doc:#}");
    // One more install: one commit to push, counted.
    crate::support::add_topic(home.path(), "beans.md", "Dana also grows beans.");
    let (code, doc) = doctor(home.path(), user.path());
    assert_eq!(code, Some(0), "{doc:#}");
    let remote = check(&doc, "sync-remote");
    assert_eq!(remote["status"], "warn", "{doc:#}");
    assert!(
        remote["finding"].as_str().expect("finding").contains("ahead by 1 commit(s)"),
        "{doc:#}"
    );
}

#[test]
fn a_command_writer_must_answer_its_version() {
    let (home, user) = healthy();
    let config = home.path().join("scriptorium.toml");
    std::fs::write(&config, "[model]\nkind = \"command\"\ncommand = [\"no-such-agent-cli\"]\n")
        .expect("config");
    fails_with(home.path(), user.path(), "writer", "`no-such-agent-cli --version` failed");
    // `git` stands in for an agent CLI that answers.
    std::fs::write(&config, "[model]\nkind = \"command\"\ncommand = [\"git\", \"x\"]\n")
        .expect("config");
    let (code, doc) = doctor(home.path(), user.path());
    assert_eq!(code, Some(0), "{doc:#}");
    let writer = check(&doc, "writer");
    assert!(writer["finding"].as_str().expect("finding").contains("git version"), "{doc:#}");
}

#[test]
fn a_failed_last_write_fails_the_last_write_check_with_its_code() {
    let (home, user) = healthy();
    append_session(home.path(), &["I'm Dana and I live in Lyon.", "Noted."]);
    let failed =
        scriptorium(home.path(), &["write", "--all", "--model", "command", "--command", "false"]);
    assert_eq!(failed.status.code(), Some(1), "{}", String::from_utf8_lossy(&failed.stderr));
    let doc = fails_with(home.path(), user.path(), "last-write", "MODEL_FAILURE_UNKNOWN");
    let found = check(&doc, "last-write");
    assert!(found["finding"].as_str().expect("finding").contains("session s:"), "{doc:#}");
    assert!(found["advice"].as_str().expect("advice").contains("write --session s"), "{doc:#}");
}

#[test]
fn an_unreachable_postgresql_fails_the_session_store_check() {
    let (home, user) = healthy();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let config = format!(
        "[sessions]\nstore = \"postgres://nobody:secret@127.0.0.1:{port}/memory?sslmode=disable\"\n"
    );
    std::fs::write(home.path().join("scriptorium.toml"), config).expect("config");
    let doc = fails_with(home.path(), user.path(), "session-store", "not reachable");
    assert!(!doc.to_string().contains("secret"), "the password is never shown: {doc:#}");
}

#[test]
fn completions_name_the_subcommands_and_the_man_page_is_roff() {
    let dir = tempfile::tempdir().expect("a dir");
    let bash = scriptorium(dir.path(), &["completions", "bash"]);
    assert_eq!(bash.status.code(), Some(0));
    let script = String::from_utf8_lossy(&bash.stdout);
    for sub in ["doctor", "setup", "search", "completions"] {
        assert!(script.contains(sub), "bash completions lack {sub}");
    }
    assert!(script.contains("complete -F"), "{script}");
    let zsh = scriptorium(dir.path(), &["completions", "zsh"]);
    assert!(String::from_utf8_lossy(&zsh.stdout).starts_with("#compdef scriptorium"));

    let man = scriptorium(dir.path(), &["man"]);
    assert_eq!(man.status.code(), Some(0));
    let page = String::from_utf8_lossy(&man.stdout);
    // roff: after the two-line apostrophe preamble roff's writer puts first, the title.
    let first = page.lines().find(|l| !l.starts_with(".ie \\n(.g") && !l.starts_with(".el .ds"));
    assert!(first.is_some_and(|l| l.starts_with(".TH scriptorium 1")), "{page}");
    assert!(page.contains(".SH NAME") && page.contains("doctor"), "{page}");
    let out = dir.path().join("man1");
    let written = scriptorium(dir.path(), &["man", "--out", out.to_str().expect("utf-8")]);
    assert_eq!(written.status.code(), Some(0));
    let doctor_page = std::fs::read_to_string(out.join("scriptorium-doctor.1")).expect("a page");
    assert!(doctor_page.contains("\\-\\-json"), "{doctor_page}");
    // Neither creates a home.
    assert!(!dir.path().join("memory").exists());
}
