//! Real-browser end-to-end test of the web page: builds a workspace with a few valid topics, a core
//! master, timeline entries and enough compost facts to fill the rail with search hits, imports a
//! Claude Code transcript with an edited prompt (two branches) for the Sessions view and 60 more
//! sessions (generic JSONL, assistant turns without a model; a Codex rollout with its developer
//! instructions) to fill the rail, starts `scriptorium serve` on a free loopback port, and runs
//! `tests/browser/e2e.mjs` (Playwright driving Chromium) against the link the server prints, at
//! 1280×800 and 390×844. Screenshots go to `target/browser-artifacts/`.
//!
//! Without `node`, Chromium (`$CHROMIUM`, default `/usr/bin/chromium`) or the installed node
//! modules (`npm ci --prefix crates/cli/tests/browser`) the trial is reported as ignored (not
//! run); `SCRIPTORIUM_REQUIRE_BROWSER=1` turns that into a failure. A second trial checks the
//! page's size budget and CSP hygiene and always runs.

#![expect(clippy::unwrap_used, clippy::expect_used, reason = "test harness")]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Failed, Trial};
use scriptorium_backend::engine::{Surface, UpdateContext, UpdateRequest};
use scriptorium_backend::{Config, LocalBackend};
use scriptorium_writer::model::journal::Journal;
use serde_json::json;

/// Set to `1` to fail, instead of skip, when the browser toolchain is missing.
const REQUIRE_ENV: &str = "SCRIPTORIUM_REQUIRE_BROWSER";
/// The page's three assets may weigh at most this much together.
const ASSET_BUDGET: u64 = 100 * 1024;
/// How long the server may take to print its link, and the whole e2e run may take.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let trials = vec![Trial::test("assets_fit_the_budget_and_the_csp", assets), browser_trial()];
    libtest_mimic::run(&args, trials).exit_code()
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn node_dir() -> PathBuf {
    manifest_dir().join("tests").join("browser")
}

fn assets_dir() -> PathBuf {
    manifest_dir().join("..").join("server").join("assets")
}

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// What is missing to run the browser test, if anything.
fn missing_toolchain() -> Vec<String> {
    let mut missing = Vec::new();
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        missing.push("`node` on PATH".to_owned());
    }
    if !chromium().is_file() {
        missing.push(format!("Chromium at {} (apt-get install chromium)", chromium().display()));
    }
    if !node_dir().join("node_modules").join("playwright-core").join("package.json").is_file() {
        missing.push(format!("playwright-core (npm ci --prefix {})", node_dir().display()));
    }
    missing
}

fn browser_trial() -> Trial {
    let name = "page_works_in_chromium_at_desktop_and_phone_widths";
    let missing = missing_toolchain();
    if missing.is_empty() {
        return Trial::test(name, run_browser);
    }
    let what = missing.join(", ");
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        Trial::test(name, move || Err(format!("{REQUIRE_ENV}=1 but missing: {what}").into()))
    } else {
        eprintln!("note: browser test not run, missing: {what}");
        Trial::test(name, || Ok(())).with_ignored_flag(true).with_kind("needs-browser")
    }
}

/// The three assets stay under the size budget and hold nothing a strict CSP would block.
fn assets() -> Result<(), Failed> {
    let mut total = 0;
    for name in ["index.html", "app.js", "app.css"] {
        let path = assets_dir().join(name);
        total += std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?.len();
    }
    if total > ASSET_BUDGET {
        return Err(
            format!("the page weighs {total} bytes, over the {ASSET_BUDGET}-byte budget").into()
        );
    }
    let html = std::fs::read_to_string(assets_dir().join("index.html")).unwrap();
    let lower = html.to_lowercase();
    if lower.contains(" style=") || lower.contains("<style") {
        return Err("index.html carries inline styles, which the CSP blocks".into());
    }
    if lower.matches("<script").count() != lower.matches("<script type=\"module\" src=").count() {
        return Err("index.html carries an inline script, which the CSP blocks".into());
    }
    if lower.contains("http://") || lower.contains("https://") {
        return Err("index.html loads something from another origin".into());
    }
    Ok(())
}

/// A footnote definition citing the declared source `label` at `time`.
fn topic(title: &str, paragraphs: &[(&str, &str, &str)]) -> String {
    let mut text = format!("# {title}\n\n");
    let mut defs = String::new();
    for (i, (sentence, time, label)) in paragraphs.iter().enumerate() {
        let n = i + 1;
        text.push_str(&format!("{sentence}[^e{n}]\n\n"));
        defs.push_str(&format!(
            "[^e{n}]: Time: `{time}`; Sources: [{title}](new-source-{label})\n"
        ));
    }
    text + &defs
}

/// Installs a few topics in folders, a root topic and a core master into `<home>/memory`.
fn build_workspace(home: &Path) {
    let backend =
        LocalBackend::open(home, Config::default(), Arc::new(Journal)).expect("the backend opens");
    let ws = backend.memory().workspace().clone();
    let sources = [
        ("garden", "I'm planning a vegetable garden.", "2024-04-02T09:00:00Z"),
        ("units", "Please use metric units.", "2024-04-03T09:00:00Z"),
        ("bikes", "Sam fixes bikes on weekends.", "2024-05-11T09:00:00Z"),
        ("budget", "I track my spending in a spreadsheet.", "2024-05-20T09:00:00Z"),
        ("short", "I prefer short answers.", "2024-03-15T08:00:00Z"),
    ];
    let changes = [
        (
            "topics/people/dana.md",
            topic(
                "Dana",
                &[
                    ("Dana is planning a vegetable garden.", "2024-04-02", "garden"),
                    ("Dana prefers metric units.", "2024-04-03", "units"),
                ],
            ),
        ),
        (
            "topics/people/sam.md",
            topic("Sam", &[("Sam repairs bikes on weekends.", "2024-05", "bikes")]),
        ),
        (
            "topics/projects/budget-tracker.md",
            topic(
                "Budget tracker",
                &[("Dana keeps a monthly spending spreadsheet.", "2024-05-20", "budget")],
            ),
        ),
        ("topics/core.md", topic("Core", &[("Dana prefers short answers.", "undated", "short")])),
    ];
    let body = json!({
        "base_revision": ws.revision().expect("a revision").as_str(),
        "sources": sources.iter().map(|(label, content, at)| json!({
            "label": format!("new-source-{label}"), "role": "user",
            "content": content, "observed_at": at,
        })).collect::<Vec<_>>(),
        "changes": changes.iter().map(|(path, content)| json!({
            "path": path, "action": "write", "content": content,
        })).collect::<Vec<_>>(),
        "commit_message": "browser test fixture",
    });
    ws.update_with(
        UpdateRequest::from_json(&body.to_string()).expect("a valid request"),
        UpdateContext::owner(Surface::Web, "owner-test/browser"),
    )
    .expect("the fixture installs");

    // The budget tracker links to Dana's garden block (the topic then lists it under "Linked
    // from"): a second install, once the block has its ID.
    let memory = home.join("memory");
    let dana = std::fs::read_to_string(memory.join("topics/people/dana.md")).expect("dana");
    let garden = dana.lines().find(|l| l.contains("vegetable garden")).expect("the garden block");
    let id = garden.rsplit(" ^").next().expect("a block id");
    let budget = std::fs::read_to_string(memory.join("topics/projects/budget-tracker.md"))
        .expect("the budget tracker");
    let linked = budget.replace(
        "monthly spending spreadsheet.",
        &format!("monthly spending spreadsheet for [the garden](../people/dana.md#^{id})."),
    );
    assert_ne!(linked, budget, "the budget paragraph is there");
    let body = json!({
        "base_revision": ws.revision().expect("a revision").as_str(),
        "changes": [{"path": "topics/projects/budget-tracker.md", "action": "write", "content": linked}],
        "commit_message": "browser test fixture: a block link",
    });
    ws.update_with(
        UpdateRequest::from_json(&body.to_string()).expect("a valid request"),
        UpdateContext::owner(Surface::Web, "owner-test/browser"),
    )
    .expect("the link installs");

    // Compost facts: more search hits than the rail holds, and one fact whose footnote cites a
    // turn and three replies (the journal's shape: a day row ending in "reply reply reply").
    let mut paragraphs = String::new();
    let mut defs = String::new();
    let mut sources = Vec::new();
    for n in 1..=12 {
        paragraphs.push_str(&format!(
            "Compost pile {n} sits behind the shed, gets kitchen scraps and leaves, and is turned \
             every week so it is ready by autumn.[^c{n}]\n\n"
        ));
        defs.push_str(&format!(
            "[^c{n}]: Time: `2024-05-{n:02}`; Sources: [compost {n}](new-source-compost{n})\n"
        ));
        sources.push(json!({
            "label": format!("new-source-compost{n}"), "role": "user",
            "content": format!("My compost pile {n} is behind the shed."),
            "observed_at": format!("2024-05-{n:02}T09:00:00Z"),
        }));
    }
    paragraphs.push_str("Dana asked how to start a worm bin.[^w]\n\n");
    let replies = ["turn", "reply1", "reply2", "reply3"];
    let links: Vec<String> = replies
        .iter()
        .map(|r| {
            let label = if *r == "turn" { "conversation turn" } else { "reply" };
            format!("[{label}](new-source-worm-{r})")
        })
        .collect();
    defs.push_str(&format!("[^w]: Time: `2024-06-01`; Sources: {}\n", links.join(", ")));
    for (i, r) in replies.iter().enumerate() {
        sources.push(json!({
            "label": format!("new-source-worm-{r}"),
            "role": if i == 0 { "user" } else { "assistant" },
            "content": format!("Worm bin, part {i}."),
            "observed_at": format!("2024-06-01T09:0{i}:00Z"),
        }));
    }
    let body = json!({
        "base_revision": ws.revision().expect("a revision").as_str(),
        "sources": sources,
        "changes": [{"path": "topics/garden/compost.md", "action": "write",
                     "content": format!("# Compost\n\n{paragraphs}{defs}")}],
        "commit_message": "browser test fixture: compost",
    });
    ws.update_with(
        UpdateRequest::from_json(&body.to_string()).expect("a valid request"),
        UpdateContext::owner(Surface::Web, "owner-test/browser"),
    )
    .expect("the compost facts install");
}

/// Kills the server when the trial ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("an address").port()
}

/// Collects a child's stream in the background (so it never blocks on a full pipe).
fn drain(stream: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let buf = Arc::new(Mutex::new(String::new()));
    let sink = buf.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let mut text = sink.lock().unwrap();
            text.push_str(&line);
            text.push('\n');
        }
    });
    buf
}

/// Imports a Claude Code transcript whose last prompt was edited (two branches after the
/// assistant's answer) with the real `scriptorium import`, for the Sessions view.
fn import_forked_session(dir: &Path, home: &Path) -> Result<(), Failed> {
    let line = |uuid: &str, parent: Option<&str>, kind: &str, minute: u32, text: &str| {
        json!({
            "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "garden-chat",
            "timestamp": format!("2024-04-02T09:{minute:02}:00Z"), "cwd": "/srv/dana/garden",
            "message": {"role": kind, "content": [{"type": "text", "text": text}]},
        })
        .to_string()
    };
    let project = dir.join("transcripts/-srv-dana-garden");
    std::fs::create_dir_all(&project).map_err(|e| e.to_string())?;
    let text = [
        line("u1", None, "user", 0, "Which vegetables suit a sunny balcony?"),
        line("a1", Some("u1"), "assistant", 1, "Tomatoes, peppers and herbs do well in sun."),
        line("u2", Some("a1"), "user", 2, "I will plant cherry tomatoes then."),
        line("u3", Some("a1"), "user", 3, "I will plant chili peppers then."),
    ]
    .join("\n");
    std::fs::write(project.join("garden-chat.jsonl"), text + "\n").map_err(|e| e.to_string())?;
    let out = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(["import", "claude-code"])
        .arg(dir.join("transcripts"))
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .map_err(|e| format!("cannot run `scriptorium import`: {e}"))?;
    if !out.status.success() {
        return Err(format!("import failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(())
}

/// Runs `scriptorium import <format> <file>`.
fn import(home: &Path, format: &str, file: &Path) -> Result<(), Failed> {
    let out = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(["import", format])
        .arg(file)
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .map_err(|e| format!("cannot run `scriptorium import`: {e}"))?;
    if !out.status.success() {
        return Err(format!("import failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(())
}

/// Imports 60 short sessions (generic JSONL: a question, and an answer with no speaker, so no
/// model is known) and a Codex rollout that opens with Codex's developer instructions, all
/// older than the garden chat.
fn import_many_sessions(dir: &Path, home: &Path) -> Result<(), Failed> {
    let mut lines = Vec::new();
    for n in 0..60 {
        let (session, at) =
            (format!("chat-{n:02}"), format!("2023-01-{:02}T10:00:00Z", n % 28 + 1));
        lines.push(json!({"id": "q", "parent": null, "role": "user", "session": session,
            "created_at": at, "content": format!("Question {n}: which mulch keeps bed {n} moist through a dry July?")}));
        lines.push(json!({"id": "a", "parent": "q", "role": "assistant", "session": session,
            "created_at": at, "content": format!("Straw mulch, a hand deep, for bed {n}.")}));
    }
    let many = dir.join("many.jsonl");
    let text: Vec<String> = lines.iter().map(ToString::to_string).collect();
    std::fs::write(&many, text.join("\n") + "\n").map_err(|e| e.to_string())?;
    import(home, "jsonl", &many)?;

    let item = |at: &str, payload: serde_json::Value| {
        json!({"timestamp": at, "type": "response_item", "payload": payload}).to_string()
    };
    let rollout = [
        json!({"timestamp": "2023-02-01T10:00:00Z", "type": "session_meta",
               "payload": {"id": "codex-compost", "cwd": "/srv/dana/garden"}})
        .to_string(),
        item(
            "2023-02-01T10:00:01Z",
            json!({"type": "message", "role": "developer",
            "content": [{"type": "input_text", "text": "<permissions instructions>\nFilesystem sandboxing: read-only.\n</permissions instructions>"}]}),
        ),
        json!({"timestamp": "2023-02-01T10:00:02Z", "type": "turn_context",
               "payload": {"model": "gpt-5.5", "cwd": "/srv/dana/garden"}})
        .to_string(),
        item(
            "2023-02-01T10:00:03Z",
            json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "How hot should the compost get?"}]}),
        ),
        item(
            "2023-02-01T10:00:04Z",
            json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Between 55 and 65 degrees Celsius."}]}),
        ),
    ];
    let file = dir.join("rollout-codex-compost.jsonl");
    std::fs::write(&file, rollout.join("\n") + "\n").map_err(|e| e.to_string())?;
    import(home, "codex", &file)
}

fn run_browser() -> Result<(), Failed> {
    let dir = tempfile::tempdir().expect("a temp dir");
    let home = dir.path().join("home");
    build_workspace(&home);
    import_forked_session(dir.path(), &home)?;
    import_many_sessions(dir.path(), &home)?;

    let addr = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(&home)
        .args(["serve", "--addr", &addr])
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `scriptorium serve`: {e}"))?;
    let stdout = child.stdout.take().unwrap();
    let stderr = drain(child.stderr.take().unwrap());
    let mut server = Server(child);

    // The link is the first stdout line holding `#token=`; keep draining stdout afterwards.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + START_TIMEOUT;
    let url = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let (Some(start), true) = (line.find("http://"), line.contains("#token=")) {
                    let url: String =
                        line[start..].chars().take_while(|c| !c.is_whitespace()).collect();
                    break url;
                }
            }
            Err(err) => {
                // A closed stdout means the server is exiting: wait for its status.
                let status = match err {
                    mpsc::RecvTimeoutError::Disconnected => server.0.wait().ok(),
                    mpsc::RecvTimeoutError::Timeout => server.0.try_wait().ok().flatten(),
                };
                return Err(format!(
                    "`scriptorium serve --addr {addr}` printed no link with #token= (exit: {status:?}); stderr:\n{}",
                    stderr.lock().unwrap()
                )
                .into());
            }
        }
    };
    if !url.starts_with(&format!("http://{addr}/")) {
        return Err(format!("the printed link {url} is not on {addr}").into());
    }

    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR lives in the target directory")
        .join("browser-artifacts");
    std::fs::create_dir_all(&artifacts).expect("the artifacts directory");
    let mut node = Command::new("node")
        .arg("e2e.mjs")
        .current_dir(node_dir())
        .env("BASE_URL", &url)
        .env("ARTIFACTS", &artifacts)
        .env("CHROMIUM", chromium())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start node: {e}"))?;
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(status) = node.try_wait().expect("node's status") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = node.kill();
            let _ = node.wait();
            return Err(format!("e2e.mjs did not finish within {RUN_TIMEOUT:?}").into());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if let Ok(Some(exit)) = server.0.try_wait() {
        return Err(format!(
            "the server exited during the run ({exit}); stderr:\n{}",
            stderr.lock().unwrap()
        )
        .into());
    }
    drop(server);
    if !status.success() {
        return Err(format!(
            "e2e.mjs failed ({status}); screenshots in {}; server stderr:\n{}",
            artifacts.display(),
            stderr.lock().unwrap()
        )
        .into());
    }
    Ok(())
}
