//! End to end with the real agent CLIs (from the npm registry, pinned in
//! `crates/cli/tests/agents/package.json`), hooks installed by `scriptorium setup`, the model
//! replaced by a loopback mock of its API: the Anthropic Messages API for Claude Code (streaming
//! SSE and plain JSON), the OpenAI Responses API for Codex (streaming SSE, `wire_api =
//! "responses"`). The agent must send the mock the fenced recall and the fenced core, and its
//! session must end up in the session store (and, for Claude Code, after the write in the topics).
//!
//! The CLIs are `$SCRIPTORIUM_CLAUDE` and `$SCRIPTORIUM_CODEX` (set by `cargo xtask ci`, which
//! installs them) or the ones `npm ci --prefix crates/cli/tests/agents` installs; without them a
//! test reports itself as not run, unless `SCRIPTORIUM_REQUIRE_AGENTS=1` (CI), where that is a
//! failure.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{CORE_FACT, add_core, home_with_note, scriptorium, write_until_done};

/// What the model answers.
pub(crate) const ANSWER: &str = "Dana is planning a vegetable garden.";

/// The agent CLI `name` (`claude`, `codex`): `$<variable>`, else the one npm installed.
pub(crate) fn agent_cli(variable: &str, name: &str) -> Option<PathBuf> {
    let configured = std::env::var_os(variable).filter(|p| !p.is_empty());
    let default =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/node_modules/.bin").join(name);
    let found = configured.map(PathBuf::from).into_iter().chain([default]).find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var("SCRIPTORIUM_REQUIRE_AGENTS").as_deref() != Ok("1"),
            "the {name} CLI is required (npm ci --prefix crates/cli/tests/agents)"
        );
        eprintln!("not run: no {name} CLI (npm ci --prefix crates/cli/tests/agents)");
    }
    found
}

/// A loopback mock of the Messages API: every request's path and body is kept; `/v1/messages`
/// answers [`ANSWER`] (as SSE when the request streams), anything else an empty JSON object.
pub(crate) struct MockModel {
    url: String,
    requests: Arc<Mutex<Vec<(String, String)>>>,
}

/// The content type a responder gives to have the mock answer `401 Unauthorized`.
const REFUSED: &str = "application/json; status=401";
/// The content type a responder gives to have the mock answer `429 Too Many Requests`.
const LIMITED: &str = "application/json; status=429";

/// What a mock answers to a request: `(path, body)` → `(content type, payload)`.
type Responder = fn(&str, &str) -> (&'static str, String);

impl MockModel {
    pub(crate) fn start() -> MockModel {
        MockModel::start_with(answer)
    }

    fn start_with(responder: Responder) -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || serve(stream, &seen, responder));
            }
        });
        MockModel { url, requests }
    }

    pub(crate) fn bodies(&self) -> Vec<(String, String)> {
        self.requests.lock().expect("unpoisoned").clone()
    }
}

/// Answers the requests of one connection (keep-alive), until the client closes it.
fn serve(stream: TcpStream, seen: &Mutex<Vec<(String, String)>>, responder: Responder) {
    let mut reader = BufReader::new(stream.try_clone().expect("a clone of the stream"));
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        seen.lock().expect("unpoisoned").push((path.clone(), body.clone()));
        let (content_type, payload) = responder(&path, &body);
        // An error status rides on the content type ([`REFUSED`], [`LIMITED`]).
        let (status, content_type) = match content_type {
            REFUSED => ("401 Unauthorized", "application/json"),
            LIMITED => ("429 Too Many Requests", "application/json"),
            other => ("200 OK", other),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
            payload.len()
        );
        if writer
            .write_all(head.as_bytes())
            .and_then(|()| writer.write_all(payload.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

/// The answer to a request: a Responses API stream for `/v1/responses`, a Messages API message
/// (as SSE events when the request streams) for `/v1/messages`.
fn answer(path: &str, body: &str) -> (&'static str, String) {
    if path.starts_with("/v1/responses") {
        return ("text/event-stream", responses_stream());
    }
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return ("application/json", json!({ "input_tokens": 10 }).to_string());
    }
    let request: Value = serde_json::from_str(body).unwrap_or_default();
    let model = request["model"].as_str().unwrap_or("claude-mock").to_owned();
    let usage = json!({ "input_tokens": 10, "output_tokens": 8 });
    if request["stream"] != true {
        let message = json!({
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
            "content": [{ "type": "text", "text": ANSWER }],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage,
        });
        return ("application/json", message.to_string());
    }
    ("text/event-stream", message_stream(&model, &Block::Text(ANSWER.to_owned())))
}

/// One content block of a mocked assistant message.
enum Block {
    Text(String),
    /// A tool call: the tool's name and its input.
    Tool(&'static str, Value),
}

/// The Messages API's stream (SSE) of one assistant message holding `block`.
fn message_stream(model: &str, block: &Block) -> String {
    message_stream_with(model, block, "toolu_mock", (10, 8))
}

/// [`message_stream`] with the tool call's `id` (the calls of one conversation differ) and the
/// `(input, output)` tokens the message reports.
fn message_stream_with(model: &str, block: &Block, id: &str, usage: (u64, u64)) -> String {
    let (start, delta, stop) = match block {
        Block::Text(text) => (
            json!({ "type": "text", "text": "" }),
            json!({ "type": "text_delta", "text": text }),
            "end_turn",
        ),
        Block::Tool(name, input) => (
            json!({ "type": "tool_use", "id": id, "name": name, "input": {} }),
            json!({ "type": "input_json_delta", "partial_json": input.to_string() }),
            "tool_use",
        ),
    };
    let events = [
        (
            "message_start",
            json!({ "type": "message_start", "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": usage.0, "output_tokens": 1 } } }),
        ),
        (
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0, "content_block": start }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": delta }),
        ),
        ("content_block_stop", json!({ "type": "content_block_stop", "index": 0 })),
        (
            "message_delta",
            json!({ "type": "message_delta",
            "delta": { "stop_reason": stop, "stop_sequence": null },
            "usage": { "output_tokens": usage.1 } }),
        ),
        ("message_stop", json!({ "type": "message_stop" })),
    ];
    events.iter().map(|(name, data)| format!("event: {name}\ndata: {data}\n\n")).collect()
}

/// The OpenAI Responses API's stream of one assistant message saying [`ANSWER`].
fn responses_stream() -> String {
    let item = json!({
        "id": "msg_mock", "type": "message", "role": "assistant", "status": "completed",
        "content": [{ "type": "output_text", "text": ANSWER, "annotations": [] }],
    });
    let response = |status: &str, output: Value| {
        json!({
            "id": "resp_mock", "object": "response", "created_at": 0, "status": status,
            "model": "gpt-mock", "output": output,
            "usage": { "input_tokens": 10, "output_tokens": 8, "total_tokens": 18,
                "input_tokens_details": { "cached_tokens": 0 },
                "output_tokens_details": { "reasoning_tokens": 0 } },
        })
    };
    let mut started = item.clone();
    started["status"] = json!("in_progress");
    started["content"] = json!([]);
    let events = [
        json!({ "type": "response.created", "response": response("in_progress", json!([])) }),
        json!({ "type": "response.output_item.added", "output_index": 0, "item": started }),
        json!({ "type": "response.output_text.delta", "output_index": 0, "content_index": 0,
            "item_id": "msg_mock", "delta": ANSWER }),
        json!({ "type": "response.output_item.done", "output_index": 0, "item": item }),
        json!({ "type": "response.completed", "response": response("completed", json!([item])) }),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

/// The environment Claude Code (or a process starting it) runs in: `user` as its home, the
/// mock as its API, no telemetry or update traffic, no Scriptorium home of the machine.
pub(crate) fn claude_env(command: &mut Command, user: &Path, model: &MockModel) {
    command
        .env("HOME", user)
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("ANTHROPIC_API_KEY", "sk-ant-test-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("CLAUDE_CONFIG_DIR");
}

/// A user's home (a temporary directory) in which `scriptorium setup claude-code` installed the
/// hooks and the MCP server of the Scriptorium home `home`, keeping the writer configured in
/// the home, else with the journal writer (these tests are about the hooks; the agent as the
/// writer setup configures has its own tests).
fn claude_code_set_up(home: &Path) -> tempfile::TempDir {
    let configured = home.join("scriptorium.toml").exists();
    let args: &[&str] = if configured { &[] } else { &["--writer", "journal"] };
    claude_code_set_up_with(home, args).0
}

/// [`claude_code_set_up`] with setup's `args`; also returns what setup printed.
fn claude_code_set_up_with(home: &Path, args: &[&str]) -> (tempfile::TempDir, String) {
    let user = tempfile::tempdir().expect("a user home");
    let setup = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(["setup", "claude-code"])
        .args(args)
        .env("HOME", user.path())
        .env_remove("SCRIPTORIUM_HOME")
        .output()
        .expect("setup runs");
    assert_eq!(setup.status.code(), Some(0), "{}", String::from_utf8_lossy(&setup.stderr));
    (user, String::from_utf8_lossy(&setup.stdout).into_owned())
}

/// The `[model]` configuration that makes the Claude Code CLI at `claude` the writer.
fn claude_writer(claude: &Path) -> String {
    format!(
        "[model]\nkind = \"command\"\ncommand = [{}, \"-p\", \"--permission-mode\", \
         \"acceptEdits\"]\ntimeout_secs = 240\n",
        Value::from(claude.to_string_lossy())
    )
}

/// Runs `command`, killing it if it has not ended after `limit` (a hung CLI must fail the test,
/// not hang the suite; the limit is far above any normal run).
pub(crate) fn run_bounded(mut command: Command, limit: Duration) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the CLI starts");
    let start = Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("the CLI ends")
}

/// Runs the agent's `command` and checks what a memory-equipped turn must show: the agent
/// printed the mock's answer, the request it sent to `api` held the fenced recall and the fenced
/// core, and no hook failed.
pub(crate) fn answered_with_memory(command: Command, model: &MockModel, home: &Path, api: &str) {
    let out = run_bounded(command, Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the agent: {stdout}\n{stderr}");
    assert!(stdout.contains(ANSWER), "the mock's answer is printed: {stdout}");
    let bodies = model.bodies();
    let paths: Vec<&String> = bodies.iter().map(|b| &b.0).collect();
    let (_, asked) = bodies
        .iter()
        .find(|(path, body)| path.starts_with(api) && body.contains("What is Dana planning"))
        .unwrap_or_else(|| panic!("the prompt reached the model: {paths:?}"));
    assert!(asked.contains("<memory-context>"), "fenced context reached the model");
    assert!(asked.contains("Dana is planning a vegetable garden."), "the recall reached the model");
    assert!(asked.contains(CORE_FACT), "the core reached the model");
    let log = std::fs::read_to_string(home.join("logs/hooks.log")).unwrap_or_default();
    assert!(log.is_empty(), "no hook failed: {log}");
}

#[test]
fn claude_code_receives_the_core_and_the_recall_and_its_session_is_captured_and_written() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    let home = home_with_note();
    add_core(home.path());

    // The user's own home, where setup writes Claude Code's configuration.
    let user = claude_code_set_up(home.path());

    let model = MockModel::start();
    let project = user.path().join("garden-project");
    std::fs::create_dir(&project).expect("a project directory");
    let mut command = Command::new(&claude);
    command.args(["-p", "What is Dana planning for the garden?"]).current_dir(&project);
    claude_env(&mut command, user.path(), &model);
    answered_with_memory(command, &model, home.path(), "/v1/messages");

    // The Stop and SessionEnd hooks imported the session before claude exited.
    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&sessions.stdout).expect("json");
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 1, "the new session is in the store: {listed}");
    // Written (by the detached write of SessionEnd or by this one, whichever runs first).
    write_until_done(home.path(), &["--all", "--force"]);
    let found = scriptorium(home.path(), &["grep", "What is Dana planning for the garden"]);
    let found = String::from_utf8_lossy(&found.stdout);
    // Filed in the journal of the session's project (the directory the agent ran in).
    assert!(found.contains("/journal/"), "the turn is in the topics: {found}");
}

#[test]
fn codex_receives_the_core_and_the_recall_from_trusted_hooks_and_its_session_is_captured() {
    let Some(codex) = agent_cli("SCRIPTORIUM_CODEX", "codex") else { return };
    let home = home_with_note();
    add_core(home.path());
    let model = MockModel::start();
    // The user's Codex configuration: a model provider at the mock.
    let user = tempfile::tempdir().expect("a user home");
    std::fs::create_dir(user.path().join(".codex")).expect("mkdir");
    let config = format!(
        "model = \"gpt-mock\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\n\
         name = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
        model.url
    );
    std::fs::write(user.path().join(".codex/config.toml"), &config).expect("the Codex config");
    // The journal writer: this test is about the hooks, and a detached agent writer would
    // outlive it.
    let setup_codex = || {
        Command::new(env!("CARGO_BIN_EXE_scriptorium"))
            .arg("--home")
            .arg(home.path())
            .args(["setup", "codex", "--writer", "journal", "--codex"])
            .arg(&codex)
            .env("HOME", user.path())
            .env_remove("CODEX_HOME")
            .output()
            .expect("setup runs")
    };
    let setup = setup_codex();
    let said = String::from_utf8_lossy(&setup.stdout);
    assert_eq!(setup.status.code(), Some(0), "{said}{}", String::from_utf8_lossy(&setup.stderr));
    assert_eq!(said.matches("trusted the Codex hook").count(), 5, "every hook is trusted: {said}");
    let installed = std::fs::read_to_string(user.path().join(".codex/config.toml")).expect("read");
    let again = setup_codex();
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(said.contains("already set up") && !said.contains("trusted"), "{said}");
    let unchanged = std::fs::read_to_string(user.path().join(".codex/config.toml")).expect("read");
    assert_eq!(unchanged, installed, "a second run changes nothing");

    let project = user.path().join("garden-project");
    std::fs::create_dir(&project).expect("a project directory");
    let mut command = Command::new(&codex);
    command
        .args(["exec", "--skip-git-repo-check", "What is Dana planning for the garden?"])
        .current_dir(&project)
        .env("HOME", user.path())
        .env("MOCK_API_KEY", "test-key")
        .env_remove("CODEX_HOME")
        .env_remove("OPENAI_API_KEY")
        .env_remove("SCRIPTORIUM_HOME");
    answered_with_memory(command, &model, home.path(), "/v1/responses");
    // The Stop hook imported the rollout before codex exited.
    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&sessions.stdout).expect("json");
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(1), "{listed}");

    // Uninstalled, the trust entries go with the hooks: the user's file is as it was.
    let uninstall = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home.path())
        .args(["setup", "codex", "--uninstall"])
        .env("HOME", user.path())
        .env_remove("CODEX_HOME")
        .output()
        .expect("setup runs");
    assert_eq!(uninstall.status.code(), Some(0), "{}", String::from_utf8_lossy(&uninstall.stderr));
    let after = std::fs::read_to_string(user.path().join(".codex/config.toml")).expect("read");
    assert_eq!(after, config, "byte for byte");
}

/// The memory writer's model, as Claude Code meets it through the mock: to a write task it
/// answers with a `Write` of a topic file into its working directory (the stage); the first
/// time a paragraph without a citation, which the validation refuses, and to the repair task a
/// cited one; to the tool's result, and to anything else, a short text.
fn writer_answer(path: &str, body: &str) -> (&'static str, String) {
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return ("application/json", json!({ "input_tokens": 10 }).to_string());
    }
    let request: Value = serde_json::from_str(body).unwrap_or_default();
    let model = request["model"].as_str().unwrap_or("claude-mock");
    let answered = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
    let text = request["messages"].to_string();
    let cwd = body
        .split("Primary working directory: ")
        .nth(1)
        .and_then(|rest| rest.split("\\n").next())
        .unwrap_or_default();
    if answered || !text.contains("Task: write memory") || cwd.is_empty() {
        return ("text/event-stream", message_stream(model, &Block::Text("Done.".to_owned())));
    }
    let file = format!("{cwd}/topics/people/mara.md");
    let content = if text.contains("Your edits were rejected") {
        "# Mara\n\nMara is turning her back yard in Porto into a vegetable garden.[^e1]\n\n\
         [^e1]: Time: `2026-03-14`; Sources: [garden](openprogram/garden-planning/u1)\n"
    } else {
        "# Mara\n\nMara lives in Porto.\n"
    };
    let input = json!({ "file_path": file, "content": content });
    ("text/event-stream", message_stream(model, &Block::Tool("Write", input)))
}

#[test]
fn the_command_writer_runs_the_real_claude_code_which_edits_the_stage_and_is_repaired_once() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    let home = tempfile::tempdir().expect("a home");
    let out = scriptorium(home.path(), &["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let transcript = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/garden-planning.jsonl");
    let out = scriptorium(home.path(), &["import", "jsonl", &transcript.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let model = MockModel::start_with(writer_answer);
    let user = tempfile::tempdir().expect("a user home");
    let mut write = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    write
        .arg("--home")
        .arg(home.path())
        .args(["write", "--session", "garden-planning", "--force", "--model", "command"])
        .arg("--command")
        .arg(&claude)
        .args(["--command-arg", "-p", "--command-arg", "--permission-mode"])
        .args(["--command-arg", "acceptEdits", "--timeout", "240", "--json"]);
    claude_env(&mut write, user.path(), &model);
    let out = run_bounded(write, Duration::from_secs(600));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let batches = report["sessions"][0]["batches"].as_array().cloned().unwrap_or_default();
    assert!(!batches.is_empty(), "a batch was installed: {report:#}");
    assert!(batches.iter().any(|b| b["repaired"] == true), "one repair turn: {report:#}");
    // The real agent wrote the file in the stage; Scriptorium validated and installed it.
    let mara = std::fs::read_to_string(home.path().join("memory/topics/people/mara.md"))
        .expect("the installed topic");
    assert!(mara.contains("Mara is turning her back yard in Porto"), "{mara}");
    let bodies = model.bodies();
    assert!(
        bodies.iter().any(|(_, b)| b.contains("Your edits were rejected")),
        "the repair reached the model"
    );
    // Marked: nothing of the session is owed any more.
    let status: Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("status");
    assert_eq!(status["pending_turns"], 0, "{status}");
}

/// Every process that names `marker` (a Scriptorium home's path) in its command line or its
/// environment: the detached writes the hooks start (`--home <home>`) and the writer's agent runs
/// (`SCRIPTORIUM_WRITER_RUN=<home>/memory/…`) with everything they start.
fn processes_naming(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            ["cmdline", "environ"].iter().any(|file| {
                std::fs::read(format!("/proc/{pid}/{file}"))
                    .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(marker))
            })
        })
        .collect()
}

/// Ends every process a test caused in a home (see [`processes_naming`]) when dropped, so a
/// failing test leaves no runaway behind.
pub(crate) struct Reaper {
    marker: String,
}

impl Reaper {
    pub(crate) fn new(home: &Path) -> Reaper {
        Reaper { marker: home.to_string_lossy().into_owned() }
    }

    /// Waits until every such process has ended by itself; one still running after `limit`
    /// (far above a normal run) fails the test. Returns how many were seen running at the start.
    pub(crate) fn settle(&self, limit: Duration) -> usize {
        let start = Instant::now();
        let first = processes_naming(&self.marker).len();
        loop {
            let running = processes_naming(&self.marker);
            if running.is_empty() {
                return first;
            }
            assert!(
                start.elapsed() < limit,
                "processes of the test still running: {running:?} (a runaway?)"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        for pid in processes_naming(&self.marker) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

/// Every string in `value`, joined: the text a request carries, unescaped.
fn strings_of(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings_of(v, out)),
        _ => {}
    }
}

/// The working directory Claude Code tells its model (`Primary working directory: …`).
fn claude_cwd(text: &str) -> Option<&str> {
    text.split("Primary working directory: ").nth(1)?.lines().next().map(str::trim)
}

/// The user's Claude Code and the memory writer's, both through one mock: a write task (its
/// prompt says `Task: write memory`) is answered with a `Write` of a topic citing the task's
/// first turn (`"ref":"…"`) into the agent's working directory (the stage); a tool result with
/// "Done."; anything else with [`ANSWER`].
fn user_and_writer_answer(path: &str, body: &str) -> (&'static str, String) {
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return answer(path, body);
    }
    let request: Value = serde_json::from_str(body).unwrap_or_default();
    let model = request["model"].as_str().unwrap_or("claude-mock");
    let mut text = String::new();
    strings_of(&request, &mut text);
    if !text.contains("Task: write memory") {
        return answer(path, body);
    }
    let answered = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
    let reference =
        text.split("\"ref\":\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or_default();
    let (Some(cwd), false, false) = (claude_cwd(&text), answered, reference.is_empty()) else {
        return ("text/event-stream", message_stream(model, &Block::Text("Done.".to_owned())));
    };
    let content = format!(
        "# Dana\n\nDana asked what she is planning for the garden.[^e1]\n\n\
         [^e1]: Time: `2026-12-01`; Sources: [question]({reference})\n"
    );
    let input = json!({ "file_path": format!("{cwd}/topics/people/dana.md"), "content": content });
    ("text/event-stream", message_stream(model, &Block::Tool("Write", input)))
}

#[test]
fn claude_code_as_the_writer_with_the_hooks_installed_writes_once_and_never_feeds_itself() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    let home = home_with_note();
    add_core(home.path());
    let reaper = Reaper::new(home.path());
    // Claude Code is the writer, next to the hooks setup installed: the configuration that ran
    // away (each writer run's hooks imported it and started another write).
    let config = claude_writer(&claude);
    std::fs::write(home.path().join("scriptorium.toml"), config).expect("the configuration");
    let user = claude_code_set_up(home.path());

    // The user's session; its SessionEnd hook starts the write, which runs the writer.
    let model = MockModel::start_with(user_and_writer_answer);
    let project = user.path().join("garden-project");
    std::fs::create_dir(&project).expect("a project directory");
    let mut command = Command::new(&claude);
    command.args(["-p", "What is Dana planning for the garden?"]).current_dir(&project);
    claude_env(&mut command, user.path(), &model);
    let out = run_bounded(command, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Every write the hooks started, and the writer's agent runs, end by themselves.
    reaper.settle(Duration::from_secs(600));

    // One session in the store: the user's, never the writer's.
    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&sessions.stdout).expect("json");
    let titles: Vec<String> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["title"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(titles.len(), 1, "only the user's session: {listed}");
    assert!(titles[0].contains("What is Dana planning"), "{listed}");
    // The writer ran once: one stage was given a write task.
    let stages: std::collections::BTreeSet<String> = model
        .bodies()
        .iter()
        .filter_map(|(_, body)| {
            let request: Value = serde_json::from_str(body).ok()?;
            let mut text = String::new();
            strings_of(&request, &mut text);
            let cwd = claude_cwd(&text)?.to_owned();
            text.contains("Task: write memory").then_some(cwd)
        })
        .collect();
    assert_eq!(stages.len(), 1, "one writer run, no nested one: {stages:?}");
    // No recall or core was injected into the writer's requests (both come fenced, with the
    // fence's system note), while the user's session got both.
    let fenced = |body: &str| body.contains("recalled memory context, NOT new");
    let bodies = model.bodies();
    let (writer, user): (Vec<_>, Vec<_>) =
        bodies.iter().partition(|(_, b)| b.contains("Task: write memory"));
    assert!(writer.iter().all(|(_, b)| !fenced(b)), "the writer got no memory context");
    assert!(user.iter().any(|(_, b)| fenced(b) && b.contains(CORE_FACT)), "the user's session did");
    // It wrote the user's session into the topics, cited, and nothing is owed.
    let dana = std::fs::read_to_string(home.path().join("memory/topics/people/dana.md"))
        .expect("the topic the writer wrote");
    assert!(dana.contains("Dana asked what she is planning for the garden."), "{dana}");
    let status: Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("status");
    assert_eq!(status["pending_turns"], 0, "{status}");
    let log = std::fs::read_to_string(home.path().join("logs/hooks.log")).unwrap_or_default();
    assert!(log.is_empty(), "no hook failed: {log}");
    // Nothing of the writer's run was archived: the only archive is the user's session's.
    let search = scriptorium(home.path(), &["search", "You maintain the long-term memory"]);
    assert!(
        !String::from_utf8_lossy(&search.stdout).contains("long-term memory"),
        "the writer's task is not in memory"
    );
}

/// The working directory Codex tells its model (`<cwd>…</cwd>` of its environment context).
fn codex_cwd(text: &str) -> Option<&str> {
    text.split("<cwd>").nth(1)?.split("</cwd>").next().map(str::trim)
}

/// A user's home whose Codex talks to `model` (a provider of its own, `MOCK_API_KEY`).
fn codex_user(model: &MockModel) -> tempfile::TempDir {
    let user = tempfile::tempdir().expect("a user home");
    std::fs::create_dir(user.path().join(".codex")).expect("mkdir");
    let provider = format!(
        "model = \"gpt-mock\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\n\
         name = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
        model.url
    );
    std::fs::write(user.path().join(".codex/config.toml"), provider).expect("the Codex config");
    user
}

/// The environment Codex (or a process starting it) runs in for the user at `user`.
fn codex_user_env(command: &mut Command, user: &Path) {
    command
        .env("HOME", user)
        .env("MOCK_API_KEY", "test-key")
        .env_remove("CODEX_HOME")
        .env_remove("OPENAI_API_KEY")
        .env_remove("SCRIPTORIUM_HOME");
}

#[test]
fn codex_as_the_writer_with_the_hooks_installed_never_feeds_itself() {
    let Some(codex) = agent_cli("SCRIPTORIUM_CODEX", "codex") else { return };
    let home = home_with_note();
    let reaper = Reaper::new(home.path());
    let model = MockModel::start();
    let user = codex_user(&model);
    let codex_env = |command: &mut Command| codex_user_env(command, user.path());
    // The user's session, before the hooks are installed (so that no hook writes it), imported
    // by hand.
    let project = user.path().join("garden-project");
    std::fs::create_dir(&project).expect("a project directory");
    let mut command = Command::new(&codex);
    command
        .args(["exec", "--skip-git-repo-check", "What is Dana planning for the garden?"])
        .current_dir(&project);
    codex_env(&mut command);
    let out = run_bounded(command, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let sessions = user.path().join(".codex/sessions");
    let out = scriptorium(home.path(), &["import", "codex", sessions.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let setup = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home.path())
        .args(["setup", "codex", "--codex"])
        .arg(&codex)
        .env("HOME", user.path())
        .env_remove("CODEX_HOME")
        .output()
        .expect("setup runs");
    assert_eq!(setup.status.code(), Some(0), "{}", String::from_utf8_lossy(&setup.stderr));

    // Codex as the writer, exactly as setup configured it (its default), next to its hooks,
    // trusted and enabled: it answers without editing (the mock), so the write ends
    // WRITER_NO_EDITS; what matters is what its run fires, and what it cost.
    let config = std::fs::read_to_string(home.path().join("scriptorium.toml")).expect("config");
    assert!(config.contains("kind = \"command\"") && config.contains("gpt-6-luna"), "{config}");
    let mut write = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    write.arg("--home").arg(home.path()).args(["write", "--all", "--force", "--json"]);
    codex_env(&mut write);
    let out = run_bounded(write, Duration::from_secs(600));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("WRITER_NO_EDITS"), "the writer ran and edited nothing: {report}");
    assert_eq!(out.status.code(), Some(1), "a permanent outcome: {report}");
    reaper.settle(Duration::from_secs(600));

    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&sessions.stdout).expect("json");
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(1), "the user's only: {listed}");
    let bodies = model.bodies();
    let stages: std::collections::BTreeSet<&str> = bodies
        .iter()
        .filter(|(_, body)| body.contains("Task: write memory"))
        .filter_map(|(_, body)| codex_cwd(body))
        .collect();
    assert_eq!(stages.len(), 1, "one writer run, no nested one: {stages:?}");
    let writer_requests =
        bodies.iter().filter(|(_, body)| body.contains("Task: write memory")).count();
    assert!(writer_requests > 0, "the writer reached the model");
    assert!(
        bodies
            .iter()
            .filter(|(_, b)| b.contains("Task: write memory"))
            .all(|(_, b)| !b.contains("recalled memory context, NOT new")),
        "no memory context in the writer's requests"
    );
    // Locked down: the model setup chose, no MCP server (setup installed Scriptorium's in the
    // user's Codex configuration), no shell tool.
    for (_, body) in bodies.iter().filter(|(_, b)| b.contains("Task: write memory")) {
        let request: Value = serde_json::from_str(body).expect("a JSON request");
        assert_eq!(request["model"], "gpt-6-luna", "the default writer model");
        assert!(!body.contains("mcp__scriptorium"), "no MCP tools reach the writer");
        assert!(!body.contains("### `exec_command`"), "no shell tool reaches the writer");
    }
    // The usage the mock reported (10 in, 8 out per request) reaches `status`.
    let status: Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("status");
    let today = &status["writer_usage"]["today"];
    assert_eq!(today["total_tokens"], 18 * writer_requests as u64, "{status}");
    assert_eq!(today["cost_usd"], Value::Null, "Codex reports no price: {status}");
    let log = std::fs::read_to_string(home.path().join("logs/hooks.log")).unwrap_or_default();
    assert!(log.is_empty(), "no hook failed: {log}");
}

/// The tokens the writer's model reports for each of its messages: `(input, output)`.
const WRITER_USAGE: (u64, u64) = (1_000, 50);

/// The tool results in a Messages API request: how far the agent's conversation has come.
fn tool_results(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .count()
}

/// The tool result of the call `id`, and whether it was an error.
fn tool_result(bodies: &[(String, String)], id: &str) -> Option<(String, bool)> {
    bodies.iter().find_map(|(_, body)| {
        let request: Value = serde_json::from_str(body).ok()?;
        let messages = request["messages"].as_array()?.clone();
        messages.iter().filter_map(|m| m["content"].as_array()).flatten().find_map(|b| {
            (b["type"] == "tool_result" && b["tool_use_id"] == id).then(|| {
                let mut text = String::new();
                strings_of(&b["content"], &mut text);
                (text, b["is_error"] == true)
            })
        })
    })
}

/// The writer's model as Claude Code (run as setup configured it) meets it through the mock,
/// beside the user's own session ([`answer`]): to a write task, a `Write` of a topic citing the
/// task's first turn into its working directory (the stage), then an `Edit` of that paragraph,
/// then "Done." Every writer message reports [`WRITER_USAGE`].
fn own_writer_answer(path: &str, body: &str) -> (&'static str, String) {
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return answer(path, body);
    }
    let request: Value = serde_json::from_str(body).unwrap_or_default();
    let model = request["model"].as_str().unwrap_or("claude-mock");
    let mut text = String::new();
    strings_of(&request, &mut text);
    if !text.contains("Task: write memory") {
        return answer(path, body);
    }
    let step = tool_results(&request);
    let reference =
        text.split("\"ref\":\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or_default();
    let file = claude_cwd(&text).map(|cwd| format!("{cwd}/topics/people/dana.md"));
    let block = match (step, file) {
        (0, Some(file)) if !reference.is_empty() => {
            let content = format!(
                "# Dana\n\nDana asked what she is planning for the garden.[^e1]\n\n\
                 [^e1]: Time: `2026-12-01`; Sources: [question]({reference})\n"
            );
            Block::Tool("Write", json!({ "file_path": file, "content": content }))
        }
        (1, Some(file)) => Block::Tool(
            "Edit",
            json!({ "file_path": file, "old_string": "planning for the garden.",
                    "new_string": "planning for her vegetable garden." }),
        ),
        _ => Block::Text("Done.".to_owned()),
    };
    let id = format!("toolu_writer_{step}");
    ("text/event-stream", message_stream_with(model, &block, &id, WRITER_USAGE))
}

/// The tokens the mock reported to the writer's agent runs: every model request whose working
/// directory (`cwd_of` its text) is a stage of `home`'s memory, the write tasks
/// ([`WRITER_USAGE`]) and the organize passes they triggered (10 in, 8 out).
fn writer_runs_usage(
    bodies: &[(String, String)],
    home: &Path,
    cwd_of: impl Fn(&str) -> Option<&str>,
) -> u64 {
    let memory = home.join("memory").to_string_lossy().into_owned();
    bodies
        .iter()
        .filter(|(path, _)| {
            (path.starts_with("/v1/messages") && !path.contains("count_tokens"))
                || path.starts_with("/v1/responses")
        })
        .filter_map(|(_, body)| {
            let request: Value = serde_json::from_str(body).ok()?;
            let mut text = String::new();
            strings_of(&request, &mut text);
            cwd_of(&text)?.starts_with(&memory).then_some(text)
        })
        .map(
            |text| {
                if text.contains("Task: write memory") {
                    WRITER_USAGE.0 + WRITER_USAGE.1
                } else {
                    18
                }
            },
        )
        .sum()
}

/// The writer's requests among `bodies` (the Messages API, a write task).
fn writer_requests(bodies: &[(String, String)]) -> Vec<Value> {
    bodies
        .iter()
        .filter(|(path, body)| {
            path.starts_with("/v1/messages")
                && !path.contains("count_tokens")
                && body.contains("Task: write memory")
        })
        .filter_map(|(_, body)| serde_json::from_str(body).ok())
        .collect()
}

#[test]
fn setup_makes_claude_code_the_writer_which_writes_the_users_session_with_its_cost_shown() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    let home = home_with_note();
    add_core(home.path());
    let reaper = Reaper::new(home.path());
    // The default writer: Claude Code itself (its binary named, as a user's PATH would).
    let claude_arg = claude.to_string_lossy().into_owned();
    let (user, said) = claude_code_set_up_with(home.path(), &["--claude", &claude_arg]);
    let line = said.lines().find(|l| l.starts_with("writer:")).expect("the writer line");
    assert!(line.contains("Claude Code writes the memory with model haiku"), "{said}");
    assert!(line.contains("your own Claude Code login") && line.contains("--writer journal"));

    // The user's session; its SessionEnd hook starts the write, which runs the writer.
    let model = MockModel::start_with(own_writer_answer);
    let project = user.path().join("garden-project");
    std::fs::create_dir(&project).expect("a project directory");
    let mut command = Command::new(&claude);
    command.args(["-p", "What is Dana planning for the garden?"]).current_dir(&project);
    claude_env(&mut command, user.path(), &model);
    let out = run_bounded(command, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    reaper.settle(Duration::from_secs(600));

    // One session in the store: the user's, never the writer's.
    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&sessions.stdout).expect("json");
    let titles: Vec<&str> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["title"].as_str())
        .collect();
    assert_eq!(titles.len(), 1, "only the user's session: {listed}");
    assert!(titles[0].contains("What is Dana planning"), "{listed}");
    // The writer's run: one stage, the model setup chose, the file tools only, no MCP server,
    // no recall or core injected.
    let bodies = model.bodies();
    let writer = writer_requests(&bodies);
    assert!(writer.len() >= 3, "Write, Edit, then done: {} request(s)", writer.len());
    let stages: std::collections::BTreeSet<String> = writer
        .iter()
        .filter_map(|r| {
            let mut text = String::new();
            strings_of(r, &mut text);
            claude_cwd(&text).map(str::to_owned)
        })
        .collect();
    assert_eq!(stages.len(), 1, "one writer run, no nested one: {stages:?}");
    for request in &writer {
        assert!(
            request["model"].as_str().is_some_and(|m| m.contains("haiku")),
            "{}",
            request["model"]
        );
        let tools: Vec<&str> = request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .collect();
        // (`DeferredToolPlaceholder` is Claude Code's own stand-in for tools loaded later:
        // with no MCP server there are none.)
        let allowed = ["Read", "Write", "Edit", "Glob", "Grep", "DeferredToolPlaceholder"];
        assert!(tools.iter().all(|t| allowed.contains(t)), "the file tools only: {tools:?}");
        assert!(tools.contains(&"Write") && tools.contains(&"Edit"), "{tools:?}");
        // (The task shows the topics, the core's master among them; what must not come is
        // the fenced context the hooks inject.)
        let text = request.to_string();
        assert!(!text.contains("recalled memory context, NOT new"), "no memory context");
        assert!(!text.contains("<memory-context>"), "no memory context");
    }
    let user_requests = bodies.iter().filter(|(_, b)| !b.contains("Task: write memory"));
    assert!(
        user_requests.clone().any(|(_, b)| b.contains("recalled memory context, NOT new")),
        "the user's session got its memory context"
    );
    // Both edits landed in the stage and were installed, cited.
    let write = tool_result(&bodies, "toolu_writer_0").expect("the Write's result");
    assert!(!write.1, "the Write was accepted: {}", write.0);
    let edit = tool_result(&bodies, "toolu_writer_1").expect("the Edit's result");
    assert!(!edit.1, "the Edit was accepted: {}", edit.0);
    let dana = std::fs::read_to_string(home.path().join("memory/topics/people/dana.md"))
        .expect("the topic the writer wrote");
    assert!(dana.contains("Dana asked what she is planning for her vegetable garden."), "{dana}");
    assert!(dana.contains("Sources: [question](../../sources/openprogram/"), "cited: {dana}");
    // The usage the mock reported reaches `status`, and the hooks' write log.
    let status: Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("status");
    assert_eq!(status["pending_turns"], 0, "{status}");
    let usage = &status["writer_usage"];
    let expected = writer_runs_usage(&bodies, home.path(), claude_cwd);
    assert_eq!(usage["today"]["total_tokens"], expected, "{usage}");
    assert!(usage["today"]["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "a price: {usage}");
    assert_eq!(usage["max_tokens_per_day"], 2_000_000, "setup's budget: {usage}");
    assert_eq!(usage["budget_reached"], false);
    let log = std::fs::read_to_string(home.path().join("logs/hook-writes.log")).expect("log");
    assert!(log.contains(&format!("usage: {expected} tokens")), "{log}");
    let hooks = std::fs::read_to_string(home.path().join("logs/hooks.log")).unwrap_or_default();
    assert!(hooks.is_empty(), "no hook failed: {hooks}");
}

/// A home where setup made the Claude Code at `claude` the writer, with session `s1` to write;
/// and the environment of a write run against `model`.
fn claude_writer_home(claude: &Path) -> (tempfile::TempDir, tempfile::TempDir) {
    let home = home_with_note();
    let claude_arg = claude.to_string_lossy().into_owned();
    let (user, _) = claude_code_set_up_with(home.path(), &["--claude", &claude_arg]);
    crate::support::append_named_session(
        home.path(),
        "s1",
        &["Dana is planning a vegetable garden.", "Noted."],
    );
    (home, user)
}

/// `scriptorium write --session <session> --force --json` in `home`, the writer's agent talking
/// to `model`; its exit code and JSON report.
fn write_with_agent(home: &Path, user: &Path, model: &MockModel, session: &str) -> (i32, Value) {
    let mut write = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    write.arg("--home").arg(home).args(["write", "--session", session, "--force", "--json"]);
    claude_env(&mut write, user, model);
    let out = run_bounded(write, Duration::from_secs(600));
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("a JSON report: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), report)
}

#[test]
fn a_write_over_the_daily_budget_is_refused_retryably_and_the_turns_stay_pending() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    let (home, user) = claude_writer_home(&claude);
    let _reaper = Reaper::new(home.path());
    // The smallest budget there is: one writer run passes it.
    let path = home.path().join("scriptorium.toml");
    let config = std::fs::read_to_string(&path).expect("config");
    let config = config.replace("max_tokens_per_day = 2000000", "max_tokens_per_day = 1000");
    assert!(config.contains("max_tokens_per_day = 1000"), "{config}");
    std::fs::write(&path, config).expect("the budget");

    let model = MockModel::start_with(own_writer_answer);
    let (code, report) = write_with_agent(home.path(), user.path(), &model, "s1");
    assert_eq!(code, 0, "{report:#}");
    let batch = &report["sessions"][0]["batches"][0];
    let runs = writer_requests(&model.bodies()).len() as u64;
    let spent = runs * (WRITER_USAGE.0 + WRITER_USAGE.1);
    assert_eq!(batch["usage"]["total_tokens"], spent, "the batch's usage: {report:#}");
    assert_eq!(report["usage"]["total_tokens"], spent, "the write's usage: {report:#}");
    assert!(report["usage"]["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "{report:#}");

    // Over the budget: the next write is refused before the model runs, retryably.
    crate::support::append_named_session(home.path(), "s2", &["Dana sowed the beans.", "Good."]);
    let (code, report) = write_with_agent(home.path(), user.path(), &model, "s2");
    assert_eq!(code, 75, "retryable: {report:#}");
    let error = &report["sessions"][0]["error"];
    assert_eq!(error["reason_code"], "WRITER_BUDGET_REACHED", "{report:#}");
    assert_eq!(error["retryable"], true);
    assert_eq!(writer_requests(&model.bodies()).len() as u64, runs, "no writer run started");
    let status: Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("status");
    assert_eq!(status["pending_turns"], 2, "the turns stay pending: {status}");
    assert_eq!(status["writer_usage"]["budget_reached"], true, "{status}");
    assert_eq!(status["writer"]["last_failure"]["reason_code"], "WRITER_BUDGET_REACHED");
    let text = String::from_utf8_lossy(&scriptorium(home.path(), &["status"]).stdout).into_owned();
    assert!(text.contains("budget 1000 a day: reached"), "{text}");
    // `sleep` runs the same writer, held by the same budget.
    // Run as the writes are (the test user, the mock, bounded): were the budget not to hold,
    // the writer would reach the mock, never a real login.
    let mut sleep = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    sleep.arg("--home").arg(home.path()).args(["sleep", "--json"]);
    claude_env(&mut sleep, user.path(), &model);
    let sleep = run_bounded(sleep, Duration::from_secs(600));
    let report: Value = serde_json::from_slice(&sleep.stdout).expect("a JSON report");
    assert_eq!(sleep.status.code(), Some(75), "{report:#}");
    let details = &report["error"]["details"];
    assert_eq!(details["reason_code"], "WRITER_BUDGET_REACHED", "{report:#}");
    assert_eq!(details["retryable"], true, "{report:#}");
    assert_eq!(writer_requests(&model.bodies()).len() as u64, runs, "no writer run started");
}

/// The writer's model asks Claude Code (run as setup configured it) for a shell command, then
/// for a file outside the stage (`<home>/outside/`), then writes the topic in the stage.
fn escaping_writer_answer(path: &str, body: &str) -> (&'static str, String) {
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return answer(path, body);
    }
    let request: Value = serde_json::from_str(body).unwrap_or_default();
    let model = request["model"].as_str().unwrap_or("claude-mock");
    let mut text = String::new();
    strings_of(&request, &mut text);
    let cwd = claude_cwd(&text).unwrap_or_default().to_owned();
    let outside = cwd.split("/memory/").next().map(|home| format!("{home}/outside"));
    let reference =
        text.split("\"ref\":\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or_default();
    let step = tool_results(&request);
    let block = match (step, outside) {
        _ if !text.contains("Task: write memory") || cwd.is_empty() => {
            return answer(path, body);
        }
        (0, Some(outside)) => Block::Tool(
            "Bash",
            json!({ "command": format!("touch {outside}/ran-by-bash"), "description": "touch" }),
        ),
        (1, Some(outside)) => Block::Tool(
            "Write",
            json!({ "file_path": format!("{outside}/escaped.md"), "content": "# Escaped\n" }),
        ),
        (2, _) => {
            let content = format!(
                "# Dana\n\nDana is planning a vegetable garden.[^e1]\n\n\
                 [^e1]: Time: `2024-03-15`; Sources: [plan]({reference})\n"
            );
            let file = format!("{cwd}/topics/people/dana.md");
            Block::Tool("Write", json!({ "file_path": file, "content": content }))
        }
        _ => Block::Text("Done.".to_owned()),
    };
    let id = format!("toolu_writer_{step}");
    ("text/event-stream", message_stream_with(model, &block, &id, WRITER_USAGE))
}

#[test]
fn the_writer_setup_configured_can_run_no_shell_and_write_nothing_outside_the_stage() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    let (home, user) = claude_writer_home(&claude);
    let _reaper = Reaper::new(home.path());
    let outside = home.path().join("outside");
    std::fs::create_dir(&outside).expect("a directory outside the stage");
    let model = MockModel::start_with(escaping_writer_answer);
    let (code, report) = write_with_agent(home.path(), user.path(), &model, "s1");
    assert_eq!(code, 0, "the write went on after the refusals: {report:#}");
    let bodies = model.bodies();
    // The agent's own permission settings refused both, and said so to the model.
    let bash = tool_result(&bodies, "toolu_writer_0").expect("the Bash call's result");
    assert!(bash.1, "the shell command was refused: {}", bash.0);
    let escape = tool_result(&bodies, "toolu_writer_1").expect("the outside Write's result");
    assert!(escape.1, "the write outside the stage was refused: {}", escape.0);
    assert!(!outside.join("ran-by-bash").exists(), "no command ran");
    assert!(!outside.join("escaped.md").exists(), "nothing was written outside the stage");
    let entries: Vec<_> = std::fs::read_dir(&outside).expect("read").collect();
    assert!(entries.is_empty(), "the outside directory is untouched: {entries:?}");
    // What it wrote in the stage was installed.
    let dana = std::fs::read_to_string(home.path().join("memory/topics/people/dana.md"))
        .expect("the topic");
    assert!(dana.contains("Dana is planning a vegetable garden.[^"), "{dana}");
}

/// The Responses API's stream of one output `item`, reporting [`WRITER_USAGE`].
fn responses_item_stream(item: &Value) -> String {
    let response = |status: &str, output: Value| {
        json!({
            "id": "resp_writer", "object": "response", "created_at": 0, "status": status,
            "model": "gpt-mock", "output": output,
            "usage": { "input_tokens": WRITER_USAGE.0, "output_tokens": WRITER_USAGE.1,
                "total_tokens": WRITER_USAGE.0 + WRITER_USAGE.1,
                "input_tokens_details": { "cached_tokens": 0 },
                "output_tokens_details": { "reasoning_tokens": 0 } },
        })
    };
    let events = [
        json!({ "type": "response.created", "response": response("in_progress", json!([])) }),
        json!({ "type": "response.output_item.done", "output_index": 0, "item": item }),
        json!({ "type": "response.completed", "response": response("completed", json!([item])) }),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

/// The writer's model as Codex (run as setup configured it, in code mode: its tools are called
/// from a JavaScript `exec`) meets it through the mock, beside the user's session
/// ([`answer`]): to a write task, an `apply_patch` adding a topic citing the task's first turn
/// to the stage; then one adding a file outside it (`<home>/outside/escaped.md`); then "Done.".
fn codex_writer_answer(path: &str, body: &str) -> (&'static str, String) {
    if !path.starts_with("/v1/responses") || !body.contains("Task: write memory") {
        return answer(path, body);
    }
    let request: Value = serde_json::from_str(body).unwrap_or_default();
    let mut text = String::new();
    strings_of(&request, &mut text);
    let step = request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "custom_tool_call_output")
        .count();
    let reference =
        text.split("\"ref\":\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or_default();
    let home = codex_cwd(&text).and_then(|cwd| cwd.split("/memory/").next()).unwrap_or_default();
    let patch = match step {
        0 => format!(
            "*** Begin Patch\n*** Add File: topics/people/dana.md\n+# Dana\n+\n\
             +Dana asked what she is planning for the garden.[^e1]\n+\n\
             +[^e1]: Time: `2026-12-01`; Sources: [question]({reference})\n*** End Patch\n"
        ),
        1 => format!(
            "*** Begin Patch\n*** Add File: {home}/outside/escaped.md\n+# Escaped\n*** End Patch\n"
        ),
        _ => {
            let item = json!({
                "id": "msg_writer", "type": "message", "role": "assistant", "status": "completed",
                "content": [{ "type": "output_text", "text": "Done.", "annotations": [] }],
            });
            return ("text/event-stream", responses_item_stream(&item));
        }
    };
    let script =
        format!("const result = await tools.apply_patch({});\ntext(result);\n", json!(patch));
    let item = json!({
        "id": format!("ctc_writer_{step}"), "type": "custom_tool_call", "status": "completed",
        "call_id": format!("call_writer_{step}"), "name": "exec", "input": script,
    });
    ("text/event-stream", responses_item_stream(&item))
}

#[test]
fn setup_makes_codex_the_writer_which_writes_cited_topics_and_nothing_outside_the_stage() {
    let Some(codex) = agent_cli("SCRIPTORIUM_CODEX", "codex") else { return };
    let home = home_with_note();
    let reaper = Reaper::new(home.path());
    let outside = home.path().join("outside");
    std::fs::create_dir(&outside).expect("a directory outside the stage");
    let model = MockModel::start_with(codex_writer_answer);
    let user = codex_user(&model);
    let codex_env = |command: &mut Command| codex_user_env(command, user.path());
    // Setup with the default writer: Codex itself.
    let mut setup = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    setup.arg("--home").arg(home.path()).args(["setup", "codex", "--codex"]).arg(&codex);
    codex_env(&mut setup);
    let out = setup.output().expect("setup runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("writer: Codex writes the memory with model gpt-6-luna"), "{said}");

    // The user's session, captured by the hooks setup installed and trusted.
    let project = user.path().join("garden-project");
    std::fs::create_dir(&project).expect("a project directory");
    let mut command = Command::new(&codex);
    command
        .args(["exec", "--skip-git-repo-check", "What is Dana planning for the garden?"])
        .current_dir(&project);
    codex_env(&mut command);
    let out = run_bounded(command, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    reaper.settle(Duration::from_secs(600));
    // Whatever the hooks' writes did, the session is written to the end.
    let mut write = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    write.arg("--home").arg(home.path()).args(["write", "--all", "--force", "--json"]);
    codex_env(&mut write);
    let out = run_bounded(write, Duration::from_secs(600));
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}{}", String::from_utf8_lossy(&out.stderr));
    reaper.settle(Duration::from_secs(600));

    let sessions = scriptorium(home.path(), &["sessions", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&sessions.stdout).expect("json");
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(1), "the user's only: {listed}");
    let dana = std::fs::read_to_string(home.path().join("memory/topics/people/dana.md"))
        .expect("the topic Codex wrote");
    assert!(dana.contains("Dana asked what she is planning for the garden.[^"), "{dana}");
    assert!(dana.contains("Sources: [question](../../sources/openprogram/"), "cited: {dana}");
    // The patch outside the stage was refused by Codex's sandbox settings setup wrote.
    assert!(!outside.join("escaped.md").exists(), "nothing was written outside the stage");
    let bodies = model.bodies();
    let writer: Vec<&String> = bodies
        .iter()
        .filter(|(path, b)| path.starts_with("/v1/responses") && b.contains("Task: write memory"))
        .map(|(_, b)| b)
        .collect();
    assert!(
        writer.iter().any(|b| b.contains("patch rejected")),
        "the model was told the patch outside the stage was rejected"
    );
    let stages: std::collections::BTreeSet<&str> =
        writer.iter().filter_map(|b| codex_cwd(b)).collect();
    assert_eq!(stages.len(), 1, "one writer run, no nested one: {stages:?}");
    for body in &writer {
        assert!(!body.contains("recalled memory context, NOT new"), "no memory context");
        assert!(!body.contains("mcp__scriptorium"), "no MCP tools reach the writer");
    }
    let status: Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("status");
    assert_eq!(status["pending_turns"], 0, "{status}");
    let today = &status["writer_usage"]["today"];
    let expected = writer_runs_usage(&bodies, home.path(), codex_cwd);
    assert_eq!(today["total_tokens"], expected, "{status}");
    let log = std::fs::read_to_string(home.path().join("logs/hooks.log")).unwrap_or_default();
    assert!(log.is_empty(), "no hook failed: {log}");
}

/// The Messages API refusing the key (401), as the provider words it.
fn refusing_answer(path: &str, _body: &str) -> (&'static str, String) {
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return ("application/json", json!({ "input_tokens": 10 }).to_string());
    }
    let error = json!({ "type": "error",
        "error": { "type": "authentication_error", "message": "invalid x-api-key" } });
    (REFUSED, error.to_string())
}

/// The Messages API rate-limiting every call (429).
fn limiting_answer(path: &str, _body: &str) -> (&'static str, String) {
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return ("application/json", json!({ "input_tokens": 10 }).to_string());
    }
    let error = json!({ "type": "error", "error": { "type": "rate_limit_error",
        "message": "Number of request tokens has exceeded your per-minute rate limit" } });
    (LIMITED, error.to_string())
}

#[test]
fn the_agent_writers_failures_get_codes_a_user_understands() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    let (home, user) = claude_writer_home(&claude);
    let _reaper = Reaper::new(home.path());
    // The key refused: not logged in, permanent; the turns stay pending.
    let model = MockModel::start_with(refusing_answer);
    let (code, report) = write_with_agent(home.path(), user.path(), &model, "s1");
    assert_eq!(code, 1, "{report:#}");
    let error = &report["sessions"][0]["error"];
    assert_eq!(error["reason_code"], "WRITER_NOT_LOGGED_IN", "{report:#}");
    assert_eq!(error["retryable"], false);
    // Rate limited: retryable (Claude Code's own retries off, so that the test is quick).
    let model = MockModel::start_with(limiting_answer);
    let mut write = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    write.arg("--home").arg(home.path()).args(["write", "--session", "s1", "--force", "--json"]);
    claude_env(&mut write, user.path(), &model);
    write.env("CLAUDE_CODE_MAX_RETRIES", "0");
    let out = run_bounded(write, Duration::from_secs(600));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(out.status.code(), Some(75), "{report:#}");
    let error = &report["sessions"][0]["error"];
    assert_eq!(error["reason_code"], "WRITER_RATE_LIMITED", "{report:#}");
    assert_eq!(error["retryable"], true);
    let status: Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("status");
    assert_eq!(status["writer"]["last_failure"]["reason_code"], "WRITER_RATE_LIMITED");
    assert_eq!(status["pending_turns"], 2, "the turns stay pending: {status}");
    // And so does `status`.
    let text = String::from_utf8_lossy(&scriptorium(home.path(), &["status"]).stdout).into_owned();
    assert!(text.contains("WRITER_RATE_LIMITED (retryable)"), "{text}");
}

/// The planted secrets and private text of the privacy test, assembled at run time (so that no scanner flags this file): an AWS key pair and a GitHub token
/// the user pastes, a home address in a `<private>` span, an OpenAI key the assistant echoes, a
/// Stripe key the writer's model puts in a topic.
mod planted {
    pub(super) fn aws_id() -> String {
        format!("AKIA{}", "QX7RZ2M4KT6WN3PB")
    }
    pub(super) fn aws_secret() -> String {
        format!("{}{}", "wJ3lr9XUtnFEMIK7MDEN", "GbPxRfiCYz4QpL2a8Vh0")
    }
    pub(super) fn github() -> String {
        format!("ghp_{}", "R7kq2Vx9Lm4Tz8Wb3Nc6Pd1Hf5Js0Ya2Eu7G")
    }
    pub(super) const ADDRESS: &str = "14 Rue des Lilas, 69003 Lyon";
    pub(super) fn openai() -> String {
        let half = "Xq3vN8dK2pLm7RtY5wZb9HcF4jGs6TaE1uQo0iVy3kDr8NxM2sWp7LfB5gJh9CzA4nUe6KtY1q";
        format!("sk-proj-{half}T3BlbkFJ{}", half.chars().rev().collect::<String>())
    }
    pub(super) fn stripe() -> String {
        format!("sk_live_{}", "4eC39HqLyjWDarjtT1zdp7dc")
    }
    pub(super) fn all() -> Vec<String> {
        vec![aws_id(), aws_secret(), github(), ADDRESS.to_owned(), openai(), stripe()]
    }
    /// The user's prompt.
    pub(super) fn prompt() -> String {
        format!(
            "Dana's deploy is broken. aws_access_key_id = {} and aws_secret_access_key = {}; \
             the GitHub token is {}. Send the parts to <private>{ADDRESS}</private> please.",
            aws_id(),
            aws_secret(),
            github()
        )
    }
}

/// The user's Claude Code and the writer's for the privacy test: the user's session gets an
/// answer echoing an OpenAI key; a write task gets a `Write` of a topic quoting the task's first
/// turn as the writer was given it, plus a Stripe key of the model's own, citing that turn.
fn privacy_answer(path: &str, body: &str) -> (&'static str, String) {
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return answer(path, body);
    }
    let request: Value = serde_json::from_str(body).unwrap_or_default();
    let model = request["model"].as_str().unwrap_or("claude-mock");
    let mut text = String::new();
    strings_of(&request, &mut text);
    if !text.contains("Task: write memory") {
        let echo = format!("Set OPENAI_API_KEY={} and run the deploy again.", planted::openai());
        return ("text/event-stream", message_stream(model, &Block::Text(echo)));
    }
    let answered = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
    let first: Option<Value> = text
        .lines()
        .filter(|line| line.starts_with("{\"ref\":"))
        .find_map(|line| serde_json::from_str(line).ok());
    let (Some(cwd), false, Some(first)) = (claude_cwd(&text), answered, first) else {
        return ("text/event-stream", message_stream(model, &Block::Text("Done.".to_owned())));
    };
    let said = first["content"].as_str().unwrap_or_default().split_whitespace().collect::<Vec<_>>();
    let content = format!(
        "# Dana\n\nDana wrote: {} Her deploy key is {}.[^e1]\n\n\
         [^e1]: Time: `2026-12-01`; Sources: [the request]({})\n",
        said.join(" "),
        planted::stripe(),
        first["ref"].as_str().unwrap_or_default()
    );
    // One topic per session (a later session's write must not replace what the test reads).
    let session = first["ref"].as_str().unwrap_or_default().split('/').nth(1).unwrap_or_default();
    let file = format!("{cwd}/topics/people/dana-{}.md", session.get(..8).unwrap_or(session));
    let input = json!({ "file_path": file, "content": content });
    ("text/event-stream", message_stream(model, &Block::Tool("Write", input)))
}

#[test]
fn nothing_planted_reaches_a_file_an_object_a_remote_or_the_writers_model() {
    let Some(claude) = agent_cli("SCRIPTORIUM_CLAUDE", "claude") else { return };
    let home = home_with_note();
    add_core(home.path());
    let reaper = Reaper::new(home.path());
    let remotes = tempfile::tempdir().expect("a directory for the remote");
    let remote = crate::support::bare_remote(remotes.path());
    let config = format!(
        "{}\n[sync]\nremote = {}\n",
        claude_writer(&claude),
        Value::from(remote.to_string_lossy())
    );
    std::fs::write(home.path().join("scriptorium.toml"), config).expect("the configuration");
    let user = claude_code_set_up(home.path());

    // The session with the secrets; its hooks import it and start the write.
    let model = MockModel::start_with(privacy_answer);
    let project = user.path().join("deploy-project");
    std::fs::create_dir(&project).expect("a project directory");
    let mut command = Command::new(&claude);
    command.args(["-p", &planted::prompt()]).current_dir(&project);
    claude_env(&mut command, user.path(), &model);
    let out = run_bounded(command, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("OPENAI_API_KEY"), "the echo");
    reaper.settle(Duration::from_secs(600));
    let user_requests = model.bodies().len();
    let out = scriptorium(home.path(), &["sync", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));

    // A second session gets the memory (the core, the recall) from the hooks.
    let mut command = Command::new(&claude);
    command.args(["-p", "What do you remember about Dana's deploy?"]).current_dir(&project);
    claude_env(&mut command, user.path(), &model);
    let out = run_bounded(command, Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    reaper.settle(Duration::from_secs(600));

    // The writer ran, and wrote what it was given: the redacted turn, its own key redacted.
    let written = crate::support::files_holding(&home.path().join("memory/topics"), "deploy is");
    let first_topic = written
        .iter()
        .find(|path| std::fs::read_to_string(path).is_ok_and(|t| t.contains("is broken")))
        .unwrap_or_else(|| panic!("the first session's topic: {written:?}"));
    let dana = std::fs::read_to_string(first_topic).expect("the topic the writer wrote");
    for marker in ["[REDACTED:aws-access-token]", "[REDACTED:github-pat]", "[REDACTED:stripe"] {
        assert!(dana.contains(marker), "{marker} in {dana}");
    }
    assert!(
        dana.contains("Send the parts to  please") || dana.contains("Send the parts to please")
    );
    let writes =
        std::fs::read_to_string(home.path().join("logs/hook-writes.log")).unwrap_or_default();
    assert!(writes.contains("redacted"), "the write said what it redacted: {writes}");
    // The hook and `status` count what was redacted, by rule (never a value).
    let hooks = std::fs::read_to_string(home.path().join("logs/hooks.log")).unwrap_or_default();
    let said = hooks.lines().filter(|l| l.contains(" HOOK_REDACTED: ")).collect::<Vec<_>>();
    for rule in ["aws-access-token", "github-pat", "private"] {
        assert!(said.iter().any(|l| l.contains(rule)), "{rule} counted in the hook log: {hooks}");
    }
    let status: Value =
        serde_json::from_slice(&scriptorium(home.path(), &["status", "--json"]).stdout)
            .expect("status");
    for rule in ["aws-access-token", "github-pat", "private"] {
        let counted = status["redactions"]["by_rule"][rule].as_u64().unwrap_or(0);
        assert!(counted >= 1, "{rule} counted in status: {status}");
    }
    // Nothing planted anywhere: files (binary ones too), git objects, the remote, and every
    // request the mock received but the first session's own (what the user typed and the
    // assistant answered went to the model before Scriptorium saw it) and a writer run's
    // follow-ups, which carry back the tool calls its model made (the Stripe key).
    let bodies = model.bodies();
    let is_writer = |body: &str| body.contains("Task: write memory");
    let writer: Vec<&String> = bodies.iter().map(|(_, b)| b).filter(|b| is_writer(b)).collect();
    let first: Vec<&String> =
        bodies[..user_requests].iter().map(|(_, b)| b).filter(|b| !is_writer(b)).collect();
    let later: Vec<&String> =
        bodies[user_requests..].iter().map(|(_, b)| b).filter(|b| !is_writer(b)).collect();
    assert!(!writer.is_empty() && !first.is_empty() && !later.is_empty(), "all ran");
    assert!(first.iter().any(|b| b.contains(&planted::github())), "the mock saw what was typed");
    assert!(
        later.iter().any(|body| body.contains("recalled memory context, NOT new")),
        "the second session was given the memory"
    );
    for secret in planted::all() {
        let files = crate::support::files_holding(home.path(), &secret);
        assert!(files.is_empty(), "{secret} is in {files:?}");
        assert!(!crate::support::git_objects_hold(&home.path().join("memory"), &secret));
        assert!(!crate::support::git_objects_hold(&remote, &secret), "{secret} at the remote");
        let told = later.iter().filter(|body| body.contains(&secret)).count();
        assert_eq!(told, 0, "{secret} was given to the next session");
        if secret != planted::stripe() {
            let given = writer.iter().filter(|body| body.contains(&secret)).count();
            assert_eq!(given, 0, "{secret} was given to the writer's model");
        }
    }
    crate::support::check_clean(home.path());
    // A re-import of the transcript adds nothing.
    let transcript = std::fs::read_dir(user.path().join(".claude/projects"))
        .expect("Claude Code's projects")
        .flatten()
        .flat_map(|dir| std::fs::read_dir(dir.path()).into_iter().flatten().flatten())
        .map(|entry| entry.path())
        .find(|path| {
            std::fs::read_to_string(path).is_ok_and(|text| text.contains("Dana's deploy is broken"))
        })
        .expect("the first session's transcript");
    let again = crate::support::ok(&scriptorium(
        home.path(),
        &["import", "claude-code", &transcript.to_string_lossy(), "--json"],
    ));
    assert_eq!(again["new_nodes"], 0, "nothing new: {again}");
}
