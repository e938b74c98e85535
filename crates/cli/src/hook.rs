//! `scriptorium hook <claude-code|codex> <EVENT>`: the agents' command hooks, reading the hook's
//! JSON on stdin (see `docs/hooks.md`).
//!
//! | Event | What it does | Output |
//! |---|---|---|
//! | `SessionStart` | imports the session's transcript | the fenced core block |
//! | `UserPromptSubmit` | recalls for the prompt, scoped to the project of the payload's `cwd` | the fenced recall |
//! | `Stop` | imports the transcript, starts `write --session` detached (its output goes to `<home>/logs/hook-writes.log`) | nothing |
//! | `PreCompact` | imports the transcript, archives every turn not yet written | nothing |
//! | `SessionEnd` | imports the transcript, starts `write --session --force` detached | nothing |
//!
//! Context goes to stdout as `{"hookSpecificOutput": {"hookEventName", "additionalContext"}}`,
//! the shape both agents add to the model's context on exit 0; nothing at all is printed when
//! there is nothing to add. **Fail-open:** every failure (a payload that does not parse, a
//! transcript that is missing or a symlink, a workspace that is busy or absent, a disabled
//! memory) exits 0 with no output and appends one line to `<home>/logs/hooks.log`, so a hook
//! never blocks, delays with an error, or alters the user's prompt.
//!
//! **Never the writer's own run:** under [`WRITER_RUN_ENV`] (set on every agent the `command`
//! writer runs) and for a payload whose `cwd` lies inside the memory workspace (where every
//! stage is), a hook does nothing at all: no import, no recall, no write. An agent used as the
//! writer usually has these very hooks installed, and without this guard its run would be
//! imported as a session and its `Stop` would start another write, which runs the agent again.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use scriptorium_backend::intake::{Intake, WRITER_SESSION, is_inside_memory};
use scriptorium_backend::sessions::Sessions;
use scriptorium_backend::{archive_unwritten, injected_core_at};
use scriptorium_search::{Query, fence, recall_text};
use scriptorium_session_dag::SessionId;
use scriptorium_session_dag::import::{self, Format};
use scriptorium_workspace_fs::{FileKind, Fs as _, RealFs};
use scriptorium_writer::model::command::WRITER_RUN_ENV;
use serde_json::Value;

use crate::home::Home;
use crate::memory;

/// The most a payload may hold (a prompt with a large paste stays well under it).
const MAX_PAYLOAD: u64 = 8 * 1024 * 1024;

/// Arguments of `scriptorium hook`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The agent calling the hook: `claude-code` or `codex`.
    agent: String,
    /// The hook event: `SessionStart`, `UserPromptSubmit`, `Stop`, `PreCompact`, `SessionEnd`.
    event: String,
}

/// The agents whose hooks are understood.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agent {
    ClaudeCode,
    Codex,
}

impl Agent {
    fn parse(name: &str) -> Option<Agent> {
        match name {
            "claude-code" | "claude" => Some(Agent::ClaudeCode),
            "codex" => Some(Agent::Codex),
            _ => None,
        }
    }

    /// The agent's name for a person.
    fn title(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
        }
    }

    /// The transcript format the agent writes.
    fn format(self) -> Format {
        match self {
            Agent::ClaudeCode => Format::ClaudeCode,
            Agent::Codex => Format::Codex,
        }
    }
}

/// The hook events handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    SessionStart,
    UserPromptSubmit,
    Stop,
    PreCompact,
    SessionEnd,
}

impl Event {
    fn parse(name: &str) -> Option<Event> {
        match name {
            "SessionStart" => Some(Event::SessionStart),
            "UserPromptSubmit" => Some(Event::UserPromptSubmit),
            "Stop" => Some(Event::Stop),
            "PreCompact" => Some(Event::PreCompact),
            "SessionEnd" => Some(Event::SessionEnd),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Stop => "Stop",
            Event::PreCompact => "PreCompact",
            Event::SessionEnd => "SessionEnd",
        }
    }
}

/// Why a hook did nothing: a stable code and what happened (one line of `hooks.log`).
#[derive(Debug)]
struct Failure {
    code: &'static str,
    message: String,
}

impl Failure {
    fn new(code: &'static str, message: impl Into<String>) -> Failure {
        Failure { code, message: message.into() }
    }
}

/// What the hook reads of its payload (both agents send these snake_case fields).
#[derive(Debug, Default)]
struct Payload {
    session_id: Option<String>,
    transcript_path: Option<PathBuf>,
    prompt: Option<String>,
    /// The session's working directory (both agents send it): its project scopes recall.
    cwd: Option<PathBuf>,
}

impl Payload {
    fn parse(bytes: &[u8]) -> Result<Payload, Failure> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            Failure::new("HOOK_BAD_PAYLOAD", format!("the payload is not JSON: {e}"))
        })?;
        let Value::Object(map) = value else {
            return Err(Failure::new("HOOK_BAD_PAYLOAD", "the payload is not a JSON object"));
        };
        let text = |key: &str| {
            map.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned)
        };
        Ok(Payload {
            session_id: text("session_id"),
            transcript_path: text("transcript_path").map(PathBuf::from),
            prompt: text("prompt"),
            cwd: text("cwd").map(PathBuf::from),
        })
    }

    fn session(&self) -> Result<SessionId, Failure> {
        self.session_id
            .clone()
            .map(SessionId)
            .ok_or_else(|| Failure::new("HOOK_BAD_PAYLOAD", "the payload has no session_id"))
    }
}

/// Runs the hook. Always exit 0 (see the module docs).
pub(crate) fn run(home: &Home, args: &Args) -> ExitCode {
    // A panic is logged like any failure; its message must not reach the agent's stderr.
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(|| handle(home, args))
        .unwrap_or_else(|_| Err(Failure::new("HOOK_PANIC", "the hook panicked")));
    match outcome {
        Ok(Some((event, context))) => {
            let doc = serde_json::json!({
                "hookSpecificOutput": { "hookEventName": event.name(), "additionalContext": context }
            });
            let mut stdout = std::io::stdout().lock();
            // A closed stdout (the agent gave up waiting) is not worth a log line.
            let _ = writeln!(stdout, "{doc}").and_then(|()| stdout.flush());
        }
        Ok(None) => {}
        Err(failure) => log(home, args, &failure),
    }
    ExitCode::SUCCESS
}

/// Appends `failure` to `<home>/logs/hooks.log` (best effort: a hook that cannot log still
/// exits 0 quietly).
fn log(home: &Home, args: &Args, failure: &Failure) {
    let dir = home.root().join("logs");
    let line = format!(
        "{} {} {} {}: {}\n",
        scriptorium_backend::memory::wall_clock()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        args.agent,
        args.event,
        failure.code,
        failure.message.replace('\n', " ")
    );
    let _ = scriptorium_workspace_fs::create_dir_all(&RealFs, &dir, 0o700);
    // One `write` on an `O_APPEND` descriptor: lines of parallel hooks never interleave.
    let _ = log_file(&dir.join("hooks.log")).and_then(|mut file| file.write_all(line.as_bytes()));
}

fn handle(home: &Home, args: &Args) -> Result<Option<(Event, String)>, Failure> {
    // The payload is read first, whatever happens next: an agent writing it must never meet a
    // closed pipe.
    let mut bytes = Vec::new();
    let read = std::io::stdin().take(MAX_PAYLOAD + 1).read_to_end(&mut bytes);
    if bytes.len() as u64 > MAX_PAYLOAD {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    }
    // The writer's own agent run: nothing of it is memory input (see the module docs).
    if std::env::var_os(WRITER_RUN_ENV).is_some_and(|v| !v.is_empty()) {
        return Ok(None);
    }
    let agent = Agent::parse(&args.agent).ok_or_else(|| {
        Failure::new("HOOK_UNKNOWN_AGENT", format!("unknown agent {:?}", args.agent))
    })?;
    let event = Event::parse(&args.event).ok_or_else(|| {
        Failure::new("HOOK_UNKNOWN_EVENT", format!("unknown event {:?}", args.event))
    })?;
    read.map_err(|e| Failure::new("HOOK_BAD_PAYLOAD", format!("reading stdin: {e}")))?;
    if bytes.len() as u64 > MAX_PAYLOAD {
        return Err(Failure::new("HOOK_BAD_PAYLOAD", "the payload is over 8 MiB"));
    }
    let config = crate::config(home).map_err(|e| Failure::new("HOOK_NO_MEMORY", e.to_string()))?;
    let payload = Payload::parse(&bytes)?;
    if payload.cwd.as_deref().is_some_and(|cwd| is_inside_memory(&home.memory(), cwd)) {
        return Ok(None);
    }
    // The door that stores (and redacts) is built only by the events that import: a per-turn
    // recall stores nothing.
    let intake = || {
        let redactor =
            config.redactor().map_err(|e| Failure::new("HOOK_NO_MEMORY", e.to_string()))?;
        Ok::<_, Failure>(Intake::new(&home.memory(), redactor))
    };
    match event {
        Event::SessionStart => {
            import_transcript(home, args, &intake()?, agent, event, &payload)?;
            if !config.memory.core.inject {
                return Ok(None);
            }
            let core = injected_core_at(&home.memory());
            Ok((!core.is_empty()).then_some((event, core)))
        }
        Event::UserPromptSubmit => {
            let Some(prompt) = payload.prompt.as_deref() else {
                return Err(Failure::new("HOOK_BAD_PAYLOAD", "the payload has no prompt"));
            };
            let memory = memory::open_for_reading(home)
                .map_err(|e| Failure::new("HOOK_NO_MEMORY", e.to_string()))?;
            let mut query = Query::new(prompt);
            query.top_k = config.memory.recall.top_k;
            query.include_sources = false;
            // Scoped to the session's project: its topics and those of no project, never
            // another project's (topics only, so no session is read).
            if let Some(cwd) = payload.cwd.as_deref() {
                let project = scriptorium_session_dag::import::project_of(cwd);
                query.project = Some(scriptorium_search::ProjectScope::new(&project, Vec::new()));
            }
            let hits =
                memory.search(&query).map_err(|e| Failure::new("HOOK_SEARCH", e.to_string()))?;
            let recall = recall_text(&hits);
            Ok((!recall.trim().is_empty()).then(|| (event, fence(&recall))))
        }
        Event::Stop | Event::SessionEnd => {
            let session = payload.session()?;
            let imported = import_transcript(home, args, &intake()?, agent, event, &payload)?;
            let session = written_session(home, args, session, &imported)?;
            if !scriptorium_backend::memory::MemoryWorkspace::exists(&home.memory()) {
                return Err(Failure::new(
                    "HOOK_NO_MEMORY",
                    format!(
                        "session {session} is captured, but nothing is written until the memory \
                         exists (`scriptorium setup` or `scriptorium init`); the first write \
                         after that takes it in"
                    ),
                ));
            }
            // `memory.writer.enabled = false`: turns are captured, never written automatically.
            if config.memory.writer.enabled {
                spawn_write(home, &session, event == Event::SessionEnd)?;
            }
            Ok(None)
        }
        Event::PreCompact => {
            let session = payload.session()?;
            let imported = import_transcript(home, args, &intake()?, agent, event, &payload)?;
            let session = written_session(home, args, session, &imported)?;
            let store = open_store(home)?;
            let memory = memory::open(home, false)
                .map_err(|e| Failure::new("HOOK_NO_MEMORY", e.to_string()))?;
            archive_unwritten(&memory, &*store, &session)
                .map_err(|e| Failure::new("HOOK_ARCHIVE", e))?;
            Ok(None)
        }
    }
}

fn open_store(home: &Home) -> Result<Sessions, Failure> {
    crate::session_store(home).map_err(|e| Failure::new("HOOK_STORE", format!("{e:#}")))
}

/// The session a `Stop`, `SessionEnd` or `PreCompact` hook writes: the payload's, which must be
/// in the store. When the transcript the payload named holds other sessions only (a payload
/// whose `session_id` is not its transcript's), that is said in `hooks.log` and the
/// transcript's session is the one written, since that is what was captured.
fn written_session(
    home: &Home,
    args: &Args,
    session: SessionId,
    imported: &[SessionId],
) -> Result<SessionId, Failure> {
    if imported.is_empty() || imported.contains(&session) {
        let store = open_store(home)?;
        return match store.session(&session) {
            Ok(Some(_)) => Ok(session),
            Ok(None) => Err(Failure::new(
                "HOOK_UNKNOWN_SESSION",
                format!(
                    "session {session} is not in the session store and the payload names no \
                     transcript to import it from; nothing is written"
                ),
            )),
            Err(e) => Err(Failure::new("HOOK_STORE", e.to_string())),
        };
    }
    let transcript = imported[0].clone();
    log(
        home,
        args,
        &Failure::new(
            "HOOK_SESSION_MISMATCH",
            format!(
                "the payload's session_id {session} is not the session of its transcript \
                 ({transcript}); writing {transcript}"
            ),
        ),
    );
    Ok(transcript)
}

/// Imports the transcript the payload names (idempotent: a grown file adds its new turns) and
/// returns the sessions it holds. A payload without one imports nothing; a path that is a
/// symlink or not a regular file is refused, and so is a missing one but at `SessionStart` (a
/// session just started).
fn import_transcript(
    home: &Home,
    args: &Args,
    intake: &Intake,
    agent: Agent,
    event: Event,
    payload: &Payload,
) -> Result<Vec<SessionId>, Failure> {
    let Some(path) = payload.transcript_path.as_deref() else { return Ok(Vec::new()) };
    match RealFs.metadata(path) {
        Ok(meta) if meta.kind == FileKind::File => {}
        Ok(meta) if meta.kind == FileKind::Symlink => {
            return Err(Failure::new(
                "HOOK_TRANSCRIPT",
                format!("{} is a symlink; it is never read through", path.display()),
            ));
        }
        Ok(_) => {
            return Err(Failure::new(
                "HOOK_TRANSCRIPT",
                format!("{} is not a regular file", path.display()),
            ));
        }
        // A session just started may not have written its transcript yet: nothing to import.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && event == Event::SessionStart => {
            return Ok(Vec::new());
        }
        Err(e) => {
            return Err(Failure::new("HOOK_TRANSCRIPT", format!("{}: {e}", path.display())));
        }
    }
    let (units, errors) = import::discover(agent.format(), &[path.to_path_buf()]);
    if let Some(error) = errors.first() {
        return Err(Failure::new("HOOK_TRANSCRIPT", error.to_string()));
    }
    let store = open_store(home)?;
    let mut sessions = Vec::new();
    let mut writer_sessions = 0;
    let mut redacted = scriptorium_redact::Counts::default();
    for unit in &units {
        let summary = intake.import_unit(&*store, unit).map_err(|e| match e {
            // The store refused: the import failed. Anything else: the file is no transcript.
            import::Error::Store { .. } => Failure::new("HOOK_IMPORT", e.to_string()),
            _ => Failure::new("HOOK_TRANSCRIPT", e.to_string()),
        })?;
        writer_sessions += summary.report.skipped.get(WRITER_SESSION).copied().unwrap_or(0);
        redacted.add(&scriptorium_redact::Counts(summary.report.redacted.clone()));
        sessions.extend(summary.sessions.into_iter().filter(|s| s.nodes > 0).map(|s| s.session));
    }
    // Said (never the values): what the transcript held that memory does not keep.
    if !redacted.is_empty() {
        log(
            home,
            args,
            &Failure::new(
                "HOOK_REDACTED",
                format!(
                    "redacted {} from {} before storing it",
                    scriptorium_backend::privacy::describe(&redacted),
                    path.display()
                ),
            ),
        );
    }
    if sessions.is_empty() && writer_sessions == 0 && event != Event::SessionStart {
        return Err(Failure::new(
            "HOOK_TRANSCRIPT",
            format!("{} holds no conversation in {}'s format", path.display(), agent.title()),
        ));
    }
    Ok(sessions)
}

/// Starts `scriptorium write --session <id>` (`--force` at a session's end) detached: its own
/// process group, no terminal, its output appended to `<home>/logs/hook-writes.log`; the hook
/// does not wait for it (the agent never waits for a model). Two such writes of one session
/// (parallel hooks) are safe: the workspace lock orders them and the second finds the batches
/// already written.
fn spawn_write(home: &Home, session: &SessionId, force: bool) -> Result<(), Failure> {
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::new("HOOK_SPAWN", format!("the scriptorium binary: {e}")))?;
    let dir = home.root().join("logs");
    scriptorium_workspace_fs::create_dir_all(&RealFs, &dir, 0o700)
        .map_err(|e| Failure::new("HOOK_SPAWN", e.to_string()))?;
    let log = log_file(&dir.join("hook-writes.log"))
        .map_err(|e| Failure::new("HOOK_SPAWN", format!("the hooks log: {e}")))?;
    let err = log.try_clone().map_err(|e| Failure::new("HOOK_SPAWN", e.to_string()))?;
    let mut command = Command::new(exe);
    command.arg("--home").arg(home.root()).args(["write", "--session", &session.0]);
    if force {
        // A session's end also takes in sessions captured while no write could run (see
        // `write --catch-up`).
        command.args(["--force", "--catch-up"]);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err))
        .process_group(0)
        .spawn()
        .map_err(|e| Failure::new("HOOK_SPAWN", format!("starting the write: {e}")))?;
    Ok(())
}

/// The log at `path`, opened for appending (created 0600; never through a symlink).
fn log_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(path)
}
