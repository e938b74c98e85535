//! `scriptorium write` and `scriptorium sleep`: run the writer over imported sessions, and the
//! organizer over every topic, with the model chosen on the command line (the `journal` writer
//! when none is).
//!
//! Exit codes: 0 written (or nothing owed), 75 a retryable failure (a held lock, a rate limit,
//! the model unreachable: run it again later), 1 a permanent one (rejected twice, no progress,
//! bad credentials).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use scriptorium_backend::config::{ModelConfig, ModelKind as ConfigKind};
use scriptorium_backend::models;
use scriptorium_session_dag::{Page, SessionId, SessionStore};
use scriptorium_writer::{Model, OrganizeReport, WriteFailure, WriteReport, Writer, WriterConfig};

use crate::home::Home;
use crate::output::outln;
use crate::{EXIT_RETRYABLE, memory};

/// Which model writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ModelKind {
    /// No model: one condensed, cited paragraph per user turn under topics/journal/.
    Journal,
    /// An OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM
    /// Studio, OpenRouter).
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
    /// An external coding agent run in the stage with the task on stdin.
    Command,
    /// Replay a recorded JSON list of tool calls (tests, demos).
    Scripted,
}

/// The model options shared by `write` and `sleep`; each overrides `[model]` of
/// `scriptorium.toml`.
#[derive(Debug, clap::Args)]
pub(crate) struct ModelArgs {
    /// The model that writes (default: `[model] kind` of scriptorium.toml, else journal, which
    /// needs no model at all).
    #[arg(long, value_enum)]
    model: Option<ModelKind>,
    /// The model ID (openai, anthropic), e.g. gpt-4.1-mini or claude-sonnet-4-5.
    #[arg(long, value_name = "NAME")]
    model_name: Option<String>,
    /// The API base URL (openai: default `https://api.openai.com/v1`; anthropic: default
    /// `https://api.anthropic.com`).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The environment variable holding the API key (openai: default OPENAI_API_KEY, `none`
    /// for local servers; anthropic: default ANTHROPIC_API_KEY).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// The program of the command model, e.g. `claude`; its arguments follow with
    /// --command-arg.
    #[arg(long, value_name = "PROGRAM")]
    command: Option<String>,
    /// One argument of the command model (repeat it), e.g. `--command-arg -p`.
    #[arg(long = "command-arg", value_name = "ARG", allow_hyphen_values = true)]
    command_args: Vec<String>,
    /// The JSON script of the scripted model.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Seconds a model call (or the command) may take.
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Retries of a model call that retrying can help (0–10; default `model.retries`, 2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=10))]
    retries: Option<u32>,
    /// The most seconds one writer run (all its model turns) may take (default
    /// `model.deadline_secs`, 900).
    #[arg(long, value_name = "SECS")]
    deadline: Option<u64>,
    /// Most tokens a model turn may produce (256–200000; default `model.max_tokens`, 8192).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(256..=200_000))]
    max_tokens: Option<u32>,
    /// Most model turns per run.
    #[arg(long)]
    max_turns: Option<u32>,
}

impl ModelArgs {
    /// The `[model]` section with the flags applied.
    pub(crate) fn model_config(&self, base: &ModelConfig) -> anyhow::Result<ModelConfig> {
        let mut config = base.clone();
        if let Some(kind) = self.model {
            config.kind = match kind {
                ModelKind::Journal => ConfigKind::Journal,
                ModelKind::Openai => ConfigKind::Openai,
                ModelKind::Anthropic => ConfigKind::Anthropic,
                ModelKind::Command => ConfigKind::Command,
                ModelKind::Scripted => ConfigKind::Scripted,
            };
        }
        if self.model_name.is_some() {
            config.name.clone_from(&self.model_name);
        }
        if self.base_url.is_some() {
            config.base_url.clone_from(&self.base_url);
        }
        if self.api_key_env.is_some() {
            config.api_key_env.clone_from(&self.api_key_env);
        }
        if let Some(program) = &self.command {
            config.command =
                std::iter::once(program.clone()).chain(self.command_args.clone()).collect();
        }
        if let Some(script) = &self.script {
            config.script = Some(std::path::absolute(script).context("resolving --script")?);
        }
        if let Some(timeout) = self.timeout {
            config.timeout_secs = timeout.max(1);
        }
        if let Some(retries) = self.retries {
            config.retries = retries;
        }
        if let Some(max_tokens) = self.max_tokens {
            config.max_tokens = max_tokens;
        }
        if let Some(deadline) = self.deadline {
            config.deadline_secs = deadline.max(1);
        }
        Ok(config)
    }

    fn build(&self, home: &Home) -> anyhow::Result<(Arc<dyn Model>, WriterConfig)> {
        let config = crate::config(home)?;
        let model_config = self.model_config(&config.model)?;
        if model_config.kind == ConfigKind::Journal {
            eprintln!(
                "note: no model configured; using the journal writer (one cited paragraph per user turn)"
            );
        }
        let model = models::build_with_progress(&model_config, home.root(), terminal_progress())?;
        let writer = WriterConfig {
            threshold_tokens: config.memory.writer.trigger_tokens,
            max_turns: self.max_turns.unwrap_or(config.memory.writer.max_turns),
            max_tokens_per_day: config.memory.writer.max_tokens_per_day,
            ..WriterConfig::default()
        };
        Ok((model, writer))
    }
}

/// Arguments of `scriptorium write`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["session", "all"])))]
pub(crate) struct Args {
    /// The session to write (see `scriptorium sessions list`).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Every imported session.
    #[arg(long)]
    all: bool,
    /// Also write, as at their end, the other sessions that still owe turns and have been idle
    /// for `[watch] idle_secs` (what `watch` writes): a session captured while no write could
    /// run (before the memory existed, a failed write) is taken in by the next one. The hooks'
    /// `SessionEnd` write passes it.
    #[arg(long, requires = "session")]
    catch_up: bool,
    /// Write everything owed now, batch after batch (a session boundary), instead of only a
    /// batch that reached the threshold or has been idle for an hour.
    #[arg(long)]
    force: bool,
    /// Tokens that make a batch due (8000, 16000 or 32000; default
    /// `memory.writer.trigger_tokens`, 16000).
    #[arg(long, value_parser = threshold)]
    threshold: Option<usize>,
    #[command(flatten)]
    model: ModelArgs,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

fn threshold(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n @ (8_000 | 16_000 | 32_000)) => Ok(n),
        _ => Err("the threshold is one of 8000, 16000, 32000".into()),
    }
}

/// Arguments of `scriptorium sleep`.
#[derive(Debug, clap::Args)]
pub(crate) struct SleepArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs `scriptorium write`.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let (model, mut config) = args.model.build(home)?;
    if let Some(threshold) = args.threshold {
        config.threshold_tokens = threshold;
    }
    let memory = memory::open(home, false)?;
    let Some(store) = crate::existing_session_store(home)? else {
        bail!("no sessions at {} (run `scriptorium import` first)", home.sessions().display());
    };
    let writer = Writer::new(memory.workspace().clone(), store.shared(), model, config)
        .with_redactor(memory.redactor().clone());
    let mut sessions = match &args.session {
        Some(id) => vec![SessionId(id.clone())],
        None => all_sessions(&*store)?,
    };
    let mut forced = vec![args.force; sessions.len()];
    if args.catch_up {
        let idle_ms = i64::try_from(crate::config(home)?.watch.idle_secs.saturating_mul(1000))
            .unwrap_or(i64::MAX);
        let now = scriptorium_backend::memory::wall_clock();
        let now_ms = i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX);
        let idle = idle_sessions(&*store, now_ms.saturating_sub(idle_ms))?;
        for session in idle {
            if !sessions.contains(&session) {
                sessions.push(session);
                forced.push(true);
            }
        }
    }
    let mut outcomes: Vec<(String, Result<WriteReport, WriteFailure>)> = Vec::new();
    for (session, force) in sessions.into_iter().zip(forced) {
        let outcome = writer.write(&session, force);
        // `status` tells the last write's outcome whatever ran it.
        scriptorium_backend::runtime::status::WriterStatus::record_outcome(
            memory.workspace().root(),
            &session,
            &outcome,
        );
        outcomes.push((session.0, outcome));
    }
    if args.json {
        let out: Vec<serde_json::Value> = outcomes
            .iter()
            .map(|(session, outcome)| match outcome {
                Ok(report) => serde_json::json!({
                    "session": session,
                    "ok": true,
                    "batches": report.batches,
                    "usage": report_usage(report),
                }),
                Err(failure) => {
                    serde_json::json!({"session": session, "ok": false, "error": failure})
                }
            })
            .collect();
        let failed: Vec<String> = outcomes
            .iter()
            .filter_map(|(session, outcome)| {
                outcome.as_ref().err().map(|f| format!("{session}: {} ({})", f.code, f.reason))
            })
            .collect();
        // The whole write: every model run, those of failed sessions included.
        let mut value = serde_json::json!({ "ok": failed.is_empty(), "sessions": out, "usage": writer.spent() });
        if !failed.is_empty() {
            let error = scriptorium_backend::wire::WireError::new(
                scriptorium_backend::wire::Code::WriteFailed,
                format!("{} session(s) failed: {}", failed.len(), failed.join("; ")),
            );
            value["error"] = error.to_json()["error"].clone();
        }
        crate::output::document(&value)?;
    } else {
        for (session, outcome) in &outcomes {
            print_outcome(session, outcome);
        }
        let spent = writer.spent();
        if !spent.is_empty() {
            outln!("usage: {} ({})", spent.describe(), writer.model_name());
        }
    }
    let failures: Vec<&WriteFailure> =
        outcomes.iter().filter_map(|(_, o)| o.as_ref().err()).collect();
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else if failures.iter().all(|f| f.retryable) {
        ExitCode::from(EXIT_RETRYABLE)
    } else {
        ExitCode::from(1)
    })
}

/// What the batches of a report used.
fn report_usage(report: &WriteReport) -> scriptorium_writer::TokenUsage {
    let mut usage = scriptorium_writer::TokenUsage::default();
    for batch in &report.batches {
        usage.add(&batch.usage);
    }
    usage
}

/// The sessions whose last change is older than `cutoff` (milliseconds since the epoch) and
/// that may owe turns (whether they do, the writer's pending walk says).
fn idle_sessions(store: &dyn SessionStore, cutoff: i64) -> anyhow::Result<Vec<SessionId>> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let page = store.list_sessions(Page { offset, limit: 500 })?;
        offset += page.len();
        let short = page.len() < 500;
        out.extend(
            page.into_iter()
                .filter(|s| s.updated_at.0 > 0 && s.updated_at.0 < cutoff)
                .map(|s| s.id),
        );
        if short {
            return Ok(out);
        }
    }
}

fn all_sessions(store: &dyn SessionStore) -> anyhow::Result<Vec<SessionId>> {
    let mut out = Vec::new();
    loop {
        let page = store.list_sessions(Page { offset: out.len(), limit: 500 })?;
        let short = page.len() < 500;
        out.extend(page.into_iter().map(|s| s.id));
        if short {
            return Ok(out);
        }
    }
}

fn print_outcome(session: &str, outcome: &Result<WriteReport, WriteFailure>) {
    match outcome {
        Ok(report) if report.batches.is_empty() => {
            outln!("{session}: nothing due (nothing owed, or below the threshold)");
        }
        Ok(report) => {
            let recovered = report.batches.iter().filter(|b| b.recovered).count();
            let written = report.batches.len() - recovered;
            if written > 0 {
                outln!("{session}: wrote {written} batch(es)");
            }
            if recovered > 0 {
                outln!(
                    "{session}: {recovered} batch(es) already written (by another write, one \
                     interrupted after installing, or another machine syncing this memory), \
                     marked as written"
                );
            }
            for batch in &report.batches {
                outln!(
                    "  batch of {} turn(s), {} tokens{} → revision {}{}",
                    batch.source_ids.len(),
                    batch.tokens,
                    if batch.repaired { " (after one repair)" } else { "" },
                    batch.revision,
                    if batch.recovered {
                        format!(" (transaction {})", batch.txn_id)
                    } else {
                        String::new()
                    }
                );
                for file in &batch.changed_files {
                    outln!("    {file}");
                }
                for id in &batch.block_ids {
                    outln!("    new block ^{id}");
                }
                if !batch.usage.is_empty() {
                    outln!("    usage {}", batch.usage.describe());
                }
                if !batch.redacted.is_empty() {
                    let counts = scriptorium_redact::Counts(batch.redacted.clone());
                    outln!("    redacted {}", scriptorium_backend::privacy::describe(&counts));
                }
                for organized in &batch.organized {
                    print_organize("    organize", organized);
                }
            }
        }
        Err(failure) => {
            let kind = if failure.retryable { "retryable" } else { "permanent" };
            // With the time: in the hooks' write log, lines of many writes follow each other.
            let at = scriptorium_backend::memory::wall_clock()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default();
            eprintln!("{at} {session}: {} ({kind}): {}", failure.code, failure.reason);
        }
    }
}

fn print_organize(prefix: &str, report: &OrganizeReport) {
    outln!(
        "{prefix}: {} over {} topic(s), {} changed",
        report.status,
        report.topics,
        report.changed_files.len()
    );
    for file in &report.changed_files {
        outln!("{prefix}   {file}");
    }
    if let Some(error) = &report.error {
        eprintln!("{prefix}: {}: {}", error.code, error.reason);
    }
}

/// Runs `scriptorium sleep`: the reorganize pass over every topic.
pub(crate) fn sleep(home: &Home, args: SleepArgs) -> anyhow::Result<ExitCode> {
    let (model, config) = args.model.build(home)?;
    let memory = memory::open(home, false)?;
    let writer = Writer::organizer(memory.workspace().clone(), model, config)
        .with_redactor(memory.redactor().clone());
    let report = writer.reorganize();
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["usage"] = serde_json::to_value(writer.spent())?;
        let ok = matches!(report.status.as_str(), "ok" | "empty");
        value["ok"] = ok.into();
        if !ok {
            use scriptorium_backend::wire::{Code, WireError};
            let code = if report.status == "busy" { Code::Busy } else { Code::WriteFailed };
            let reason = report.error.as_ref().map_or_else(
                || report.status.clone(),
                |error| format!("{}: {}", error.code, error.reason),
            );
            let mut error = WireError::new(code, reason);
            // The writer's own code, as `write --json` gives it per session.
            if let Some(failure) = &report.error {
                error.details.insert("reason_code".into(), failure.code.as_str().into());
                error.details.insert("retryable".into(), failure.retryable.into());
            }
            value["error"] = error.to_json()["error"].clone();
        }
        crate::output::document(&value)?;
    } else {
        print_organize("reorganize", &report);
        let spent = writer.spent();
        if !spent.is_empty() {
            outln!("usage: {} ({})", spent.describe(), writer.model_name());
        }
    }
    Ok(match (report.status.as_str(), &report.error) {
        ("ok" | "empty", _) => ExitCode::SUCCESS,
        (_, Some(error)) if error.retryable => ExitCode::from(EXIT_RETRYABLE),
        _ => ExitCode::from(1),
    })
}

/// On a terminal, a spinner on stderr that each model turn updates (`model turn 3/20: read,
/// edit (2.4 s, 310 tokens)`), cleared when the writer is done; nothing when stderr is not a
/// terminal (a log stays clean).
fn terminal_progress() -> Option<scriptorium_writer::Progress> {
    use std::io::IsTerminal as _;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new_spinner()
        .with_finish(indicatif::ProgressFinish::AndClear)
        .with_message("waiting for the model's first turn");
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(Arc::new(move |turn: &scriptorium_writer::TurnProgress| {
        let calls = if turn.tool_calls.is_empty() {
            "no tool call".to_owned()
        } else {
            turn.tool_calls.join(", ")
        };
        bar.set_message(format!(
            "model turn {}/{}: {calls} ({:.1} s, {} tokens)",
            turn.round,
            turn.max_turns,
            turn.elapsed.as_secs_f64(),
            turn.output_tokens
        ));
    }))
}
