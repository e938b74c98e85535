//! The `command` model: an external coding agent the user is already logged into (`claude -p`,
//! `codex exec`, …), run with the stage directory as its working directory and the system
//! prompt plus the task on stdin, under a timeout.
//!
//! Key decision: the agent edits the stage's files directly, so the writer validates exactly
//! what it left, like any other model. The confinement of the other models' tools does not
//! apply to a process: it runs with the user's rights, and only the working directory points it
//! at the stage. What it writes outside `topics/**/*.md` of the stage is refused at validation;
//! what it might write outside the stage is its own (and its sandbox's) business — say so to
//! users who configure one.
//!
//! Key decision: the agent's run is never memory input. Its environment carries
//! [`WRITER_RUN_ENV`] (naming the stage), which every `scriptorium hook` honours by doing
//! nothing, so an agent that has Scriptorium's hooks installed (the usual case: the user's own
//! Claude Code or Codex) neither imports its writer session, nor gets recall injected, nor starts
//! a nested write from its `Stop`/`SessionEnd` hooks; and the importers skip any session whose
//! working directory lies inside the memory workspace, where every stage is.

use std::io::{Read, Write};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use crate::agent::{Model, RunReport, Task};
use crate::model::{ErrorReason, ModelError, Usage};
use crate::outcome::FailureCode;
use crate::tools::Tools;
use crate::usage::{AgentOutput, parse_agent_output};

/// The environment variable set on every external agent the writer runs (its value is the
/// stage directory): a `scriptorium hook` that sees it does nothing.
pub const WRITER_RUN_ENV: &str = "SCRIPTORIUM_WRITER_RUN";

/// How to run the agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandConfig {
    /// The program (looked up on `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// How long it may run before it is killed.
    pub timeout: Duration,
}

/// The external agent.
#[derive(Clone, Debug)]
pub struct Command {
    config: CommandConfig,
}

impl Command {
    /// An agent run as `config` says.
    pub fn new(config: CommandConfig) -> Self {
        Command { config }
    }
}

/// The most bytes of the agent's output kept (the tail) for the report or the error.
const OUTPUT_TAIL: usize = 4_000;

impl Model for Command {
    fn name(&self) -> String {
        format!("command:{}", self.config.program)
    }

    fn edits_expected(&self) -> bool {
        true
    }

    fn run(&self, task: &Task, tools: &mut Tools<'_>) -> Result<RunReport, ModelError> {
        let topics = tools.staged_mut().path().map(std::path::Path::to_path_buf).map_err(|e| {
            ModelError::new(ErrorReason::Unknown, format!("the stage cannot be handed out: {e}"))
        })?;
        let Some(dir) = topics.parent().map(std::path::Path::to_path_buf) else {
            return Err(ModelError::new(ErrorReason::Unknown, "the stage has no directory"));
        };
        let mut child = Process::new(&self.config.program)
            .args(&self.config.args)
            .current_dir(&dir)
            .env(WRITER_RUN_ENV, &dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_failure(&self.config.program, &e))?;
        tools.note_external_edits();
        let input = format!("{}\n\n{}", task.system, task.prompt);
        if let Some(mut stdin) = child.stdin.take() {
            // A program that exits without reading its input is not an error by itself.
            let _ = stdin.write_all(input.as_bytes());
        }
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let out_reader = std::thread::spawn(move || drain(stdout.as_mut()));
        let err_reader = std::thread::spawn(move || drain(stderr.as_mut()));
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() >= self.config.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(ModelError::new(
                        ErrorReason::Timeout,
                        format!(
                            "{} did not finish within {:?}",
                            self.config.program, self.config.timeout
                        ),
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => {
                    return Err(ModelError::new(ErrorReason::Unknown, format!("wait failed: {e}")));
                }
            }
        };
        let out = out_reader.join().unwrap_or_default();
        let err = err_reader.join().unwrap_or_default();
        let parsed = parse_agent_output(&out);
        let spent = parsed.usage.unwrap_or_default();
        let usage = Usage { input_tokens: spent.input_tokens, output_tokens: spent.output_tokens };
        if !status.success() || parsed.error.is_some() {
            let mut error = classify(&self.config.program, &status.to_string(), &parsed, &err);
            error.spent = spent;
            return Err(error);
        }
        Ok(RunReport {
            rounds: 1,
            reply: parsed.result.unwrap_or_else(|| tail(&out)),
            usage,
            cost_micro_usd: spent.cost_micro_usd,
            ..RunReport::default()
        })
    }
}

/// The failure of starting the program: missing (`WRITER_CLI_MISSING`), or not runnable.
fn spawn_failure(program: &str, error: &std::io::Error) -> ModelError {
    if error.kind() == std::io::ErrorKind::NotFound {
        return ModelError::new(
            ErrorReason::Invalid,
            format!(
                "{program} is not installed (not found on PATH): install it, or choose another \
                 writer (`scriptorium setup <agent> --writer journal`, or edit [model] in \
                 scriptorium.toml)"
            ),
        )
        .with_code(FailureCode::WriterCliMissing, false);
    }
    ModelError::new(ErrorReason::Invalid, format!("cannot run {program}: {error}"))
}

/// What a failed agent run means to a user, from its output (`parsed`), its exit `status` and
/// its `stderr`: not logged in, rate limited (retryable), too old for the flags it was given,
/// the provider failing (retryable), or the message as it is.
pub fn classify(program: &str, status: &str, parsed: &AgentOutput, stderr: &str) -> ModelError {
    let said = parsed.error.clone().unwrap_or_else(|| tail(stderr));
    let lower = format!("{said}\n{stderr}").to_lowercase();
    let message = format!("{program} exited with {status}: {said}");
    let http = parsed.status;
    let login = http == Some(401)
        || ["not logged in", "/login", "invalid api key", "incorrect api key", "unauthorized"]
            .iter()
            .any(|needle| lower.contains(needle));
    if login {
        let error = ModelError::new(
            ErrorReason::Auth,
            format!(
                "{message} (log in to {program} as you normally do, e.g. run it once interactively)"
            ),
        );
        return error.with_code(FailureCode::WriterNotLoggedIn, false);
    }
    let limited = http == Some(429)
        || ["rate limit", "rate_limit", "too many requests", "usage limit"]
            .iter()
            .any(|needle| lower.contains(needle));
    if limited {
        let mut error = ModelError::new(ErrorReason::RateLimit, message);
        error.status = http;
        return error.with_code(FailureCode::WriterRateLimited, true);
    }
    let too_old = ["unknown option", "unexpected argument", "unrecognized option", "unknown flag"]
        .iter()
        .any(|needle| lower.contains(needle));
    if too_old {
        return ModelError::new(
            ErrorReason::Invalid,
            format!("{message} (this {program} is too old for the writer's flags: update it)"),
        )
        .with_code(FailureCode::WriterCliTooOld, false);
    }
    let mut error = match http {
        Some(403) => ModelError::new(ErrorReason::Authz, message),
        Some(500..=599) => ModelError::new(ErrorReason::Provider, message),
        Some(_) => ModelError::new(ErrorReason::Invalid, message),
        None => ModelError { retryable: false, ..ModelError::new(ErrorReason::Unknown, message) },
    };
    error.status = http;
    error
}

fn drain(pipe: Option<&mut impl Read>) -> String {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn tail(text: &str) -> String {
    let text = text.trim_end();
    if text.len() <= OUTPUT_TAIL {
        return text.to_owned();
    }
    let mut start = text.len() - OUTPUT_TAIL;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(error: &str, status: Option<u16>) -> AgentOutput {
        AgentOutput { error: Some(error.to_owned()), status, ..AgentOutput::default() }
    }

    #[test]
    fn failures_get_the_code_a_user_understands() {
        let code = |parsed: &AgentOutput, stderr: &str| {
            let error = classify("claude", "exit status: 1", parsed, stderr);
            (error.code, error.retryable)
        };
        // What Claude Code 2.1 printed (its result object) against a mock answering 401/429,
        // and with no login at all.
        let not_logged_in = (Some(FailureCode::WriterNotLoggedIn), false);
        let limited = (Some(FailureCode::WriterRateLimited), true);
        assert_eq!(
            code(&failed("Invalid API key · Fix external API key", Some(401)), ""),
            not_logged_in
        );
        assert_eq!(code(&failed("Not logged in · Please run /login", None), ""), not_logged_in);
        assert_eq!(
            code(
                &failed(
                    "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
                    Some(429)
                ),
                ""
            ),
            limited
        );
        // Codex 0.171's `turn.failed` messages.
        assert_eq!(
            code(
                &failed(
                    "unexpected status 401 Unauthorized: Incorrect API key provided",
                    Some(401)
                ),
                ""
            ),
            not_logged_in
        );
        assert_eq!(
            code(
                &failed("exceeded retry limit, last status: 429 Too Many Requests", Some(429)),
                ""
            ),
            limited
        );
        // An option the CLI does not know: Claude Code (commander) and Codex (clap).
        let old = (Some(FailureCode::WriterCliTooOld), false);
        assert_eq!(code(&AgentOutput::default(), "error: unknown option '--restricted'"), old);
        assert_eq!(
            code(&AgentOutput::default(), "error: unexpected argument '--ephemeral' found"),
            old
        );
        // A provider outage stays retryable under its model code; anything else is permanent.
        let outage =
            classify("codex", "exit status: 1", &failed("unexpected status 503", Some(503)), "");
        assert_eq!(
            (outage.code, outage.retryable, outage.reason),
            (None, true, ErrorReason::Provider)
        );
        assert_eq!(code(&AgentOutput::default(), "segmentation fault"), (None, false));
    }

    #[test]
    fn a_program_that_is_not_installed_is_missing() {
        let error = spawn_failure("claude", &std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!((error.code, error.retryable), (Some(FailureCode::WriterCliMissing), false));
        let error =
            spawn_failure("claude", &std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert_eq!(error.code, None);
    }
}
