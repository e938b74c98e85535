//! `scriptorium hook <agent> <EVENT>` as the agents call it: the payload on stdin, the context
//! as `hookSpecificOutput.additionalContext` on stdout, and fail-open (exit 0, nothing printed,
//! one line in `<home>/logs/hooks.log`) for every bad payload.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{
    ALPHA_FACT, BETA_FACT, CORE_FACT, add_core, home_with_note, home_with_projects, scriptorium,
    write_until_done,
};

/// Runs the hook with `payload` on stdin.
fn hook(home: &Path, agent: &str, event: &str, payload: &[u8]) -> Output {
    hook_in(home, agent, event, payload, &[])
}

/// Runs the hook with `payload` on stdin and `env` added to its environment.
fn hook_in(home: &Path, agent: &str, event: &str, payload: &[u8], env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(["hook", agent, event])
        .env_remove("SCRIPTORIUM_WRITER_RUN")
        .envs(env.iter().copied())
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the scriptorium binary runs");
    child.stdin.take().expect("stdin").write_all(payload).expect("the payload is sent");
    child.wait_with_output().expect("the hook ends")
}

/// The context a successful hook printed for `event` (`None`: it printed nothing).
fn context(out: &Output, event: &str) -> Option<String> {
    assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
    assert!(out.stderr.is_empty(), "nothing on stderr: {}", String::from_utf8_lossy(&out.stderr));
    if out.stdout.is_empty() {
        return None;
    }
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["hookSpecificOutput"]["hookEventName"], event, "{doc}");
    Some(doc["hookSpecificOutput"]["additionalContext"].as_str().expect("context").to_owned())
}

fn log_lines(home: &Path) -> Vec<String> {
    fs::read_to_string(home.join("logs/hooks.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn prompt(text: &str) -> Vec<u8> {
    json!({
        "session_id": "3fb74381-1bf4-475e-8c6f-442d872b1bcf",
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": "/srv/dana/project",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    })
    .to_string()
    .into_bytes()
}

#[test]
fn user_prompt_submit_injects_the_fenced_recall_and_nothing_for_an_unrelated_prompt() {
    let home = home_with_note();
    for agent in ["claude-code", "codex"] {
        let out = hook(home.path(), agent, "UserPromptSubmit", &prompt("What is Dana planning?"));
        let recall = context(&out, "UserPromptSubmit").expect("a recall");
        assert!(recall.starts_with("<memory-context>"), "{recall}");
        assert!(recall.contains("Dana is planning a vegetable garden."), "{recall}");
        let unrelated = hook(home.path(), agent, "UserPromptSubmit", &prompt("quantum lattice"));
        assert_eq!(context(&unrelated, "UserPromptSubmit"), None);
    }
    assert!(log_lines(home.path()).is_empty(), "nothing failed: {:?}", log_lines(home.path()));
}

#[test]
fn user_prompt_submit_recalls_the_sessions_project_and_the_shared_topics_only() {
    let home = home_with_projects();
    let projects = tempfile::tempdir().expect("a temp dir");
    // The session works in a subdirectory of the `alpha` repository.
    let repo = projects.path().join("Alpha");
    fs::create_dir_all(repo.join(".git")).expect("a repository");
    fs::create_dir_all(repo.join("src/app")).expect("a subdirectory");
    let mut payload: Value = serde_json::from_slice(&prompt("vegetable garden")).expect("json");
    payload["cwd"] = json!(repo.join("src/app"));
    let out = hook(home.path(), "claude-code", "UserPromptSubmit", payload.to_string().as_bytes());
    let recall = context(&out, "UserPromptSubmit").expect("a recall");
    assert!(recall.contains(ALPHA_FACT), "the project's topic: {recall}");
    assert!(recall.contains("Dana is planning a vegetable garden."), "a shared topic: {recall}");
    assert!(!recall.contains(BETA_FACT), "never another project's: {recall}");
    // A session in no known project sees the shared topics only.
    payload["cwd"] = json!(projects.path().join("gamma"));
    let out = hook(home.path(), "codex", "UserPromptSubmit", payload.to_string().as_bytes());
    let recall = context(&out, "UserPromptSubmit").expect("a recall");
    assert!(recall.contains("Dana is planning a vegetable garden."), "{recall}");
    assert!(!recall.contains(ALPHA_FACT) && !recall.contains(BETA_FACT), "{recall}");
    assert!(log_lines(home.path()).is_empty(), "nothing failed: {:?}", log_lines(home.path()));
}

#[test]
fn session_start_injects_the_core_only_when_there_is_one() {
    let home = home_with_note();
    let start = json!({
        "session_id": "s-1", "transcript_path": home.path().join("not-yet.jsonl"),
        "cwd": "/srv/dana/project", "hook_event_name": "SessionStart", "source": "startup",
    })
    .to_string();
    // No core master yet: nothing at all on stdout (a sentence would be injected).
    assert_eq!(
        context(
            &hook(home.path(), "claude-code", "SessionStart", start.as_bytes()),
            "SessionStart"
        ),
        None
    );

    add_core(home.path());
    let injected =
        context(&hook(home.path(), "codex", "SessionStart", start.as_bytes()), "SessionStart")
            .expect("the core");
    assert!(injected.starts_with("<memory-context>"), "{injected}");
    assert!(injected.contains(CORE_FACT), "{injected}");
    assert!(log_lines(home.path()).is_empty(), "{:?}", log_lines(home.path()));
}

#[test]
fn bad_payloads_and_arguments_fail_open_with_one_log_line_each() {
    let home = home_with_note();
    let transcript = home.path().join("elsewhere.jsonl");
    fs::write(&transcript, "{}\n").expect("write");
    let link = home.path().join("link.jsonl");
    std::os::unix::fs::symlink(&transcript, &link).expect("symlink");
    let text = home.path().join("notes.txt");
    fs::write(&text, "not a transcript\n").expect("write");
    let other = home.path().join("other.jsonl");
    fs::write(&other, "{\"a\": 1}\n").expect("write");
    let stop = |path: &Path| {
        json!({"session_id": "s-1", "transcript_path": path, "hook_event_name": "Stop"})
            .to_string()
            .into_bytes()
    };
    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        ("claude-code", "UserPromptSubmit", b"not json".to_vec(), "HOOK_BAD_PAYLOAD"),
        ("claude-code", "UserPromptSubmit", b"[1, 2]".to_vec(), "HOOK_BAD_PAYLOAD"),
        ("claude-code", "UserPromptSubmit", br#"{"session_id": "s"}"#.to_vec(), "HOOK_BAD_PAYLOAD"),
        ("claude-code", "Stop", br#"{"transcript_path": "/x"}"#.to_vec(), "HOOK_BAD_PAYLOAD"),
        ("claude-code", "Stop", stop(&home.path().join("missing.jsonl")), "HOOK_TRANSCRIPT"),
        ("claude-code", "Stop", stop(&link), "HOOK_TRANSCRIPT"),
        ("claude-code", "Stop", stop(home.path()), "HOOK_TRANSCRIPT"),
        ("claude-code", "Stop", stop(&text), "HOOK_TRANSCRIPT"),
        ("claude-code", "Stop", stop(&other), "HOOK_TRANSCRIPT"),
        ("claude-code", "NoSuchEvent", prompt("x"), "HOOK_UNKNOWN_EVENT"),
        ("gemini", "UserPromptSubmit", prompt("x"), "HOOK_UNKNOWN_AGENT"),
    ];
    for (i, (agent, event, payload, code)) in cases.iter().enumerate() {
        let out = hook(home.path(), agent, event, payload);
        assert_eq!(context(&out, event), None, "case {i}: nothing printed");
        let lines = log_lines(home.path());
        assert_eq!(lines.len(), i + 1, "case {i}: one line per failure: {lines:?}");
        assert!(lines[i].contains(code), "case {i}: {}", lines[i]);
    }
    // Nothing was imported from the refused transcripts.
    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&sessions.stdout).expect("json");
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(0), "{listed}");
}

#[test]
fn a_home_without_memory_fails_open() {
    let home = tempfile::tempdir().expect("temp dir");
    let out =
        hook(home.path(), "claude-code", "UserPromptSubmit", &prompt("What is Dana planning?"));
    assert_eq!(context(&out, "UserPromptSubmit"), None);
    let lines = log_lines(home.path());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("HOOK_NO_MEMORY"), "{}", lines[0]);
    assert!(!home.path().join("memory").exists(), "a hook creates no workspace");
}

#[test]
fn pre_compact_imports_the_transcript_and_archives_every_unwritten_turn() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let source = data.join("codemie-code/claude/incremental-simple/turn-2.jsonl");
    let home = home_with_note();
    let transcript = home.path().join("3fb74381.jsonl");
    fs::copy(&source, &transcript).expect("copy the transcript");
    let payload = json!({
        "session_id": "3fb74381-1bf4-475e-8c6f-442d872b1bcf", "transcript_path": transcript,
        "cwd": "/srv/dana/project", "hook_event_name": "PreCompact", "trigger": "auto",
        "custom_instructions": "",
    })
    .to_string();
    assert_eq!(
        context(&hook(home.path(), "claude-code", "PreCompact", payload.as_bytes()), "PreCompact"),
        None
    );
    assert!(log_lines(home.path()).is_empty(), "{:?}", log_lines(home.path()));
    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&sessions.stdout).expect("json");
    assert!(listed.to_string().contains("3fb74381-1bf4-475e-8c6f-442d872b1bcf"), "{listed}");
    let archive =
        home.path().join("memory/sources/openprogram/_v2/3fb74381-1bf4-475e-8c6f-442d872b1bcf.md");
    let text = fs::read_to_string(&archive).expect("the session's archive");
    assert!(text.contains("show tools"), "the first prompt is archived before it is dropped");
    // A second compaction archives nothing twice.
    assert_eq!(
        context(&hook(home.path(), "claude-code", "PreCompact", payload.as_bytes()), "PreCompact"),
        None
    );
    assert_eq!(fs::read_to_string(&archive).expect("the archive"), text);
}

#[test]
fn stop_imports_the_turn_and_its_detached_write_is_never_done_twice() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let home = home_with_note();
    let transcript = home.path().join("3fb74381.jsonl");
    fs::copy(data.join("codemie-code/claude/incremental-simple/turn-2.jsonl"), &transcript)
        .expect("copy the transcript");
    let session = "3fb74381-1bf4-475e-8c6f-442d872b1bcf";
    let payload = json!({
        "session_id": session, "transcript_path": transcript, "cwd": "/srv/dana/project",
        "hook_event_name": "SessionEnd", "reason": "prompt_input_exit",
    })
    .to_string();
    assert_eq!(
        context(&hook(home.path(), "claude-code", "SessionEnd", payload.as_bytes()), "SessionEnd"),
        None
    );
    assert!(log_lines(home.path()).is_empty(), "{:?}", log_lines(home.path()));
    // The import happened before the hook returned.
    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    assert!(String::from_utf8_lossy(&sessions.stdout).contains(session));
    // Whichever of the detached write and this one runs first writes the session; the other
    // finds it written (the workspace lock orders them): one set of blocks, nothing pending.
    write_until_done(home.path(), &["--session", session, "--force"]);
    let journal = home.path().join("memory/topics/projects/codemie-code/journal/2026/01-15.md");
    let text = fs::read_to_string(&journal).expect("the journal");
    let prompts = text.matches("show tools").count();
    assert_eq!(prompts, 1, "the session was written once: {text}");
    let status = scriptorium(home.path(), &["status", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(status["pending_turns"], 0, "{status}");
}

#[test]
fn parallel_writes_of_one_session_write_it_once() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let home = home_with_note();
    let transcript = data.join("codemie-code/claude/incremental-simple/turn-2.jsonl");
    let out =
        scriptorium(home.path(), &["import", "claude-code", transcript.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let session = "3fb74381-1bf4-475e-8c6f-442d872b1bcf";
    // Four writes of the same session at once (parallel Stop hooks): whatever the interleaving,
    // each turn is written once.
    let writers: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_scriptorium"))
                .arg("--home")
                .arg(home.path())
                .args(["write", "--session", session, "--force"])
                .env_remove("SCRIPTORIUM_HOME")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a write starts")
        })
        .collect();
    for writer in writers {
        let out = writer.wait_with_output().expect("the write ends");
        // 75: the lock stayed busy longer than the writer waits (a loaded machine); retryable.
        let code = out.status.code();
        assert!(matches!(code, Some(0 | 75)), "{code:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    write_until_done(home.path(), &["--session", session, "--force"]);
    let text = fs::read_to_string(
        home.path().join("memory/topics/projects/codemie-code/journal/2026/01-15.md"),
    )
    .expect("the journal");
    for prompt in ["show tools", "tell me more about agent module"] {
        assert_eq!(text.matches(&format!("Owner said: {prompt}")).count(), 1, "{prompt}: {text}");
    }
    let status = scriptorium(home.path(), &["status", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(status["pending_turns"], 0, "{status}");
}

#[test]
fn with_the_writer_disabled_stop_captures_the_turn_and_starts_no_write() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    let home = home_with_note();
    fs::write(home.path().join("scriptorium.toml"), "[memory.writer]\nenabled = false\n")
        .expect("the config");
    let transcript = home.path().join("3fb74381.jsonl");
    fs::copy(data.join("codemie-code/claude/incremental-simple/turn-2.jsonl"), &transcript)
        .expect("copy the transcript");
    let session = "3fb74381-1bf4-475e-8c6f-442d872b1bcf";
    let payload = json!({ "session_id": session, "transcript_path": transcript,
        "hook_event_name": "Stop" })
    .to_string();
    assert_eq!(
        context(&hook(home.path(), "claude-code", "Stop", payload.as_bytes()), "Stop"),
        None
    );
    assert!(log_lines(home.path()).is_empty(), "{:?}", log_lines(home.path()));
    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    assert!(String::from_utf8_lossy(&sessions.stdout).contains(session), "captured");
    // The hook returned after deciding; a write it started would have created its log first.
    assert!(!home.path().join("logs/hook-writes.log").exists(), "no write was started");
}

/// The sessions in the home's store.
pub(crate) fn session_ids(home: &Path) -> Vec<String> {
    let out = scriptorium(home, &["sessions", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&out.stdout).expect("json");
    listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_owned))
        .collect()
}

/// A copy of the real Claude Code transcript `turn-2.jsonl` in `dir` whose session worked in
/// `cwd` (`None`: as recorded). `None` without the test data.
fn transcript_in(dir: &Path, cwd: Option<&Path>) -> Option<std::path::PathBuf> {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return None;
    };
    let text = fs::read_to_string(data.join("codemie-code/claude/incremental-simple/turn-2.jsonl"))
        .expect("the transcript");
    let text = match cwd {
        Some(cwd) => text.replace(
            "\"cwd\":\"/Users/User/repo/codemie-ai/codemie-code\"",
            &format!("\"cwd\":{}", Value::from(cwd.to_string_lossy())),
        ),
        None => text,
    };
    let path = dir.join("3fb74381.jsonl");
    fs::write(&path, text).expect("the transcript copy");
    Some(path)
}

const TRANSCRIPT_SESSION: &str = "3fb74381-1bf4-475e-8c6f-442d872b1bcf";

#[test]
fn the_writers_own_agent_run_fires_no_hook() {
    let home = home_with_note();
    let Some(transcript) = transcript_in(home.path(), None) else { return };
    let writer = [("SCRIPTORIUM_WRITER_RUN", "/srv/dana/memory/.scriptorium/txn/t-1")];
    // No recall is injected into the writer's prompt, no core into its session.
    let asked = hook_in(home.path(), "claude-code", "UserPromptSubmit", &prompt("Dana?"), &writer);
    assert_eq!(context(&asked, "UserPromptSubmit"), None);
    assert!(
        context(
            &hook(home.path(), "claude-code", "UserPromptSubmit", &prompt("Dana?")),
            "UserPromptSubmit"
        )
        .is_some(),
        "the same prompt outside a writer run is recalled"
    );
    add_core(home.path());
    let start = json!({ "session_id": TRANSCRIPT_SESSION, "transcript_path": transcript,
        "hook_event_name": "SessionStart", "source": "startup" })
    .to_string();
    let started = hook_in(home.path(), "codex", "SessionStart", start.as_bytes(), &writer);
    assert_eq!(context(&started, "SessionStart"), None);
    // Its Stop and SessionEnd import nothing and start no write.
    for event in ["Stop", "SessionEnd", "PreCompact"] {
        let payload = json!({ "session_id": TRANSCRIPT_SESSION, "transcript_path": transcript,
            "cwd": "/srv/dana/project", "hook_event_name": event })
        .to_string();
        let out = hook_in(home.path(), "claude-code", event, payload.as_bytes(), &writer);
        assert_eq!(context(&out, event), None);
    }
    assert_eq!(session_ids(home.path()), Vec::<String>::new(), "nothing was imported");
    assert!(!home.path().join("logs/hook-writes.log").exists(), "no write was started");
    assert!(log_lines(home.path()).is_empty(), "standing down is no failure");
}

#[test]
fn a_session_working_inside_the_memory_is_never_memory_input() {
    let home = home_with_note();
    let stage = home.path().join("memory/.scriptorium/txn/t-0123456789abcdef");
    let Some(transcript) = transcript_in(home.path(), Some(&stage)) else { return };
    // A hook of such a session (its payload's cwd is the stage) does nothing …
    let payload = json!({ "session_id": TRANSCRIPT_SESSION, "transcript_path": transcript,
        "cwd": stage, "hook_event_name": "SessionEnd" })
    .to_string();
    let out = hook(home.path(), "claude-code", "SessionEnd", payload.as_bytes());
    assert_eq!(context(&out, "SessionEnd"), None);
    assert!(!home.path().join("logs/hook-writes.log").exists(), "no write was started");
    // … and an import of its transcript (by hand, or `watch` over the agent's folder) leaves it
    // out, saying why.
    let out = scriptorium(
        home.path(),
        &["import", "claude-code", transcript.to_str().expect("utf-8"), "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let skipped = report["skipped"].to_string();
    assert!(skipped.contains("session of the memory writer"), "{report}");
    assert_eq!(session_ids(home.path()), Vec::<String>::new(), "{report}");
    assert!(log_lines(home.path()).is_empty(), "{:?}", log_lines(home.path()));
}

#[test]
fn a_stop_whose_session_id_is_not_its_transcripts_is_said_in_the_hook_log() {
    let home = home_with_note();
    fs::write(home.path().join("scriptorium.toml"), "[memory.writer]\nenabled = false\n")
        .expect("the config");
    let Some(transcript) = transcript_in(home.path(), None) else { return };
    let payload = json!({ "session_id": "not-the-transcripts", "transcript_path": transcript,
        "hook_event_name": "Stop" })
    .to_string();
    assert_eq!(
        context(&hook(home.path(), "claude-code", "Stop", payload.as_bytes()), "Stop"),
        None
    );
    let lines = log_lines(home.path());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("HOOK_SESSION_MISMATCH"), "{}", lines[0]);
    assert!(lines[0].contains(TRANSCRIPT_SESSION), "{}", lines[0]);
    assert_eq!(session_ids(home.path()), [TRANSCRIPT_SESSION]);
    // A session the store does not hold and no transcript to import it from: said, no write.
    let payload = json!({ "session_id": "never-imported", "hook_event_name": "Stop" }).to_string();
    assert_eq!(
        context(&hook(home.path(), "claude-code", "Stop", payload.as_bytes()), "Stop"),
        None
    );
    let lines = log_lines(home.path());
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[1].contains("HOOK_UNKNOWN_SESSION"), "{}", lines[1]);
}

#[test]
fn a_session_captured_before_the_memory_existed_is_written_by_the_next_session_end() {
    let Some(data) = scriptorium_testkit::data_dir() else {
        assert!(!scriptorium_testkit::data_required(), "the test data is required");
        return;
    };
    // Hooks installed, no memory yet: the session is captured, and the hook log says that
    // nothing is written until the memory exists.
    let home = tempfile::tempdir().expect("a home");
    let early = home.path().join("early.jsonl");
    fs::copy(data.join("codemie-code/claude/session-624a4a58.jsonl"), &early).expect("copy");
    let stop = json!({ "session_id": "624a4a58-b34c-462d-a70d-13421c8125a8",
        "transcript_path": early, "hook_event_name": "SessionEnd" })
    .to_string();
    assert_eq!(
        context(&hook(home.path(), "claude-code", "SessionEnd", stop.as_bytes()), "SessionEnd"),
        None
    );
    let lines = log_lines(home.path());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("HOOK_NO_MEMORY") && lines[0].contains("captured"), "{}", lines[0]);
    assert!(!home.path().join("logs/hook-writes.log").exists(), "no write was started");
    let out = scriptorium(home.path(), &["init"]);
    assert_eq!(out.status.code(), Some(0));
    // The next session's end writes its own session and the one captured before.
    let Some(transcript) = transcript_in(home.path(), None) else { return };
    let end = json!({ "session_id": TRANSCRIPT_SESSION, "transcript_path": transcript,
        "hook_event_name": "SessionEnd" })
    .to_string();
    assert_eq!(
        context(&hook(home.path(), "claude-code", "SessionEnd", end.as_bytes()), "SessionEnd"),
        None
    );
    // The write runs detached; wait for its outcome (bounded only against a broken build).
    let mut pending = Value::Null;
    for _ in 0..1200 {
        let status = scriptorium(home.path(), &["status", "--json"]);
        let status: Value = serde_json::from_slice(&status.stdout).expect("json");
        pending = status["pending_turns"].clone();
        if pending == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        pending,
        0,
        "both sessions written: {:?}",
        fs::read_to_string(home.path().join("logs/hook-writes.log"))
    );
    let found = scriptorium(home.path(), &["grep", "show tools"]);
    assert!(String::from_utf8_lossy(&found.stdout).contains("journal"), "the new session");
}
