//! `scriptorium import <auto|claude-code|codex|pi|jsonl> PATH…`: imports transcripts into the
//! session store at `<home>/sessions`.
//!
//! Paths are files or directories (searched recursively for `*.jsonl`; Claude Code sidechains,
//! beside their session or under `<session>/subagents/`, join their session). A FIFO, socket or
//! device is refused without being opened. Every file's first lines are checked
//! (`import::detect`): with a named format, a file that looks like another one is refused with
//! what it looks like and the command to use, and nothing is imported from it; with `auto`,
//! each file is imported as the format it looks like, `path: format` is printed for each, and a
//! file of no known shape is refused. A progress bar runs on stderr when it is a terminal; the
//! summary goes to stdout (one line, or JSON with `--json`, where `files` lists each file with
//! its format, `null` for an empty file); bad lines are listed on stderr as `path:line: reason`,
//! then the store's warnings, then the failures as `error: …` (in `--json`, `failed` with a
//! stable `code`).
//!
//! Exit codes: 0 everything imported (bad lines are skipped, not failures); 1 some file or path
//! failed — unreadable, not a regular file, in another format, unrecognised, refused by the
//! store (the others were still imported); 2 usage errors or a store that cannot be opened.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use scriptorium_session_dag::import::{self, Format, Summary};

use scriptorium_backend::wire::{Code, WireError, WireViolation};

use crate::home::Home;
use crate::output::outln;

/// How many bad lines are listed on stderr before the rest is only counted.
const BAD_LINES_SHOWN: usize = 20;

/// A transcript format on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum FormatArg {
    /// Each file's format, detected from its first lines.
    Auto,
    /// Claude Code session JSONL (`~/.claude/projects/…`).
    ClaudeCode,
    /// Codex rollout JSONL (`~/.codex/sessions/…`).
    Codex,
    /// pi session JSONL (`~/.pi/agent/sessions/…`).
    Pi,
    /// Generic JSONL: `{id, parent, role, content, created_at, speaker?}` per line.
    Jsonl,
}

impl FormatArg {
    /// The format asked for; `None` for `auto`.
    fn format(self) -> Option<Format> {
        match self {
            FormatArg::Auto => None,
            FormatArg::ClaudeCode => Some(Format::ClaudeCode),
            FormatArg::Codex => Some(Format::Codex),
            FormatArg::Pi => Some(Format::Pi),
            FormatArg::Jsonl => Some(Format::Jsonl),
        }
    }
}

/// Arguments of `scriptorium import`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The transcript format, or `auto` to detect each file's.
    #[arg(value_enum)]
    format: FormatArg,
    /// Transcript files or directories (searched recursively for `*.jsonl`).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let (units, errors, empty) = match args.format.format() {
        Some(format) => {
            let (units, errors) = import::discover(format, &args.paths);
            (units, errors, Vec::new())
        }
        None => {
            let found = import::discover_auto(&args.paths);
            (found.units, found.errors, found.empty)
        }
    };
    let mut failed: Vec<Failure> = errors.iter().map(Failure::new).collect();
    // Each file with the format it is imported as (`None`: empty, nothing to import).
    let mut files: Vec<(String, Option<Format>)> = units
        .iter()
        .flat_map(|u| u.files.iter().map(|f| (f.path.display().to_string(), Some(u.format))))
        .chain(empty.iter().map(|p| (p.display().to_string(), None)))
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let store = crate::session_store(home).context("cannot open the session store")?;
    let redactor = crate::config(home)?.redactor()?;
    let intake = scriptorium_backend::intake::Intake::new(&home.memory(), redactor);

    let sizes: Vec<u64> = units.iter().map(import::Unit::len_bytes).collect();
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(sizes.iter().sum()), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut summary = Summary::default();
    for (unit, size) in units.iter().zip(&sizes) {
        bar.set_message(unit.first_path().display().to_string());
        match intake.import_unit_of_many(&*store, unit) {
            Ok(s) => summary.merge(s),
            Err(err) => failed.push(Failure::new(&err)),
        }
        bar.inc(*size);
    }
    bar.finish_and_clear();
    intake.record(&summary.report.redacted);

    for bad in summary.report.bad_lines.iter().take(BAD_LINES_SHOWN) {
        eprintln!("warning: {}:{}: {}", bad.path.display(), bad.line, bad.reason);
    }
    if summary.report.bad_lines.len() > BAD_LINES_SHOWN {
        eprintln!(
            "warning: … and {} more bad lines",
            summary.report.bad_lines.len() - BAD_LINES_SHOWN
        );
    }
    // What the store skipped or could not update (torn tails, a registry it refused).
    for warning in store.warnings() {
        eprintln!("warning: {warning}");
    }
    for failure in &failed {
        eprintln!("error: {}", failure.message);
    }
    if args.json {
        let mut value = json(&summary, &files, &failed);
        value["ok"] = failed.is_empty().into();
        if let Some(first) = failed.first() {
            // The one error shape, for the files that could not be imported.
            let mut error = WireError::new(
                first.code,
                format!("{} of the given paths could not be imported", failed.len()),
            );
            error.violations = failed
                .iter()
                .map(|f| WireViolation {
                    code: f.code,
                    message: f.message.clone(),
                    path: Some(f.path.clone()),
                    line: 0,
                    col: 0,
                })
                .collect();
            value["error"] = error.to_json()["error"].clone();
        }
        crate::output::document(&value)?;
    } else {
        if args.format.format().is_none() {
            for (path, format) in &files {
                match format {
                    Some(format) => outln!("{path}: {format}"),
                    None => outln!("{path}: empty, nothing to import"),
                }
            }
        }
        outln!("{}", line(&summary, failed.len()));
    }
    Ok(if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// A file or path that was not imported.
struct Failure {
    path: String,
    code: Code,
    message: String,
}

impl Failure {
    fn new(err: &import::Error) -> Failure {
        let mut message = err.to_string();
        if let import::Error::WrongFormat { found, .. } = err {
            message.push_str(&format!(
                "; try `scriptorium import {found}` or `scriptorium import auto`"
            ));
        }
        Failure { path: err.path().display().to_string(), code: err.code().into(), message }
    }
}

/// Sessions with at least one node in the imported files (a file whose records were all
/// skipped gives a session of no node, which the store never holds).
fn sessions(summary: &Summary) -> usize {
    summary
        .sessions
        .iter()
        .filter(|s| s.nodes > 0)
        .map(|s| &s.session)
        .collect::<BTreeSet<_>>()
        .len()
}

/// The human summary line.
fn line(summary: &Summary, failed: usize) -> String {
    let nodes = summary.nodes();
    let new = summary.new_nodes();
    let report = &summary.report;
    let mut out = format!(
        "imported {} sessions: {nodes} nodes ({new} new, {} already present), {} branches; \
         skipped {} records",
        sessions(summary),
        nodes - new,
        summary.branches(),
        report.skipped_total(),
    );
    if !report.skipped.is_empty() {
        let reasons: Vec<String> = report.skipped.iter().map(|(r, n)| format!("{r} {n}")).collect();
        out.push_str(&format!(" ({})", reasons.join(", ")));
    }
    out.push_str(&format!("; {} bad lines", report.bad_lines.len()));
    if !report.redacted.is_empty() {
        let counts = scriptorium_redact::Counts(report.redacted.clone());
        out.push_str(&format!(
            "; redacted {} (secrets and <private> spans never stored)",
            scriptorium_backend::privacy::describe(&counts)
        ));
    }
    if failed > 0 {
        out.push_str(&format!("; {failed} failed"));
    }
    out
}

/// The `--json` summary.
fn json(
    summary: &Summary,
    files: &[(String, Option<Format>)],
    failed: &[Failure],
) -> serde_json::Value {
    let nodes = summary.nodes();
    let new = summary.new_nodes();
    serde_json::json!({
        "sessions": sessions(summary),
        "nodes": nodes,
        "new_nodes": new,
        "existing_nodes": nodes - new,
        "branches": summary.branches(),
        "lines": summary.report.lines,
        "skipped": summary.report.skipped,
        "redacted": summary.report.redacted,
        "bad_lines": summary.report.bad_lines.iter().map(|b| serde_json::json!({
            "path": b.path.display().to_string(),
            "line": b.line,
            "reason": b.reason,
        })).collect::<Vec<_>>(),
        "files": files.iter().map(|(path, format)| serde_json::json!({
            "path": path,
            "format": format.map(Format::name),
        })).collect::<Vec<_>>(),
        "failed": failed.iter().map(|f| serde_json::json!({
            "path": f.path,
            "code": f.code,
            "error": f.message,
        })).collect::<Vec<_>>(),
        "session_list": summary.sessions.iter().filter(|s| s.nodes > 0).map(|s| serde_json::json!({
            "id": s.session.as_str(),
            "title": s.title,
            "nodes": s.nodes,
            "new_nodes": s.new_nodes,
            "branches": s.branches,
            "head": s.head.as_ref().map(|h| h.as_str()),
        })).collect::<Vec<_>>(),
    })
}
