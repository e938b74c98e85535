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
use crate::model::{ErrorReason, ModelError};
use crate::tools::Tools;

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

    fn run(&self, task: &Task, tools: &mut Tools<'_>) -> Result<RunReport, ModelError> {
        let Some(dir) = tools.staged().path().parent().map(std::path::Path::to_path_buf) else {
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
            .map_err(|e| {
                ModelError::new(
                    ErrorReason::Invalid,
                    format!("cannot run {}: {e}", self.config.program),
                )
            })?;
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
        if !status.success() {
            return Err(ModelError {
                reason: ErrorReason::Unknown,
                retryable: false,
                status: None,
                message: format!("{} exited with {status}: {}", self.config.program, tail(&err)),
            });
        }
        Ok(RunReport { rounds: 1, reply: tail(&out), ..RunReport::default() })
    }
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
