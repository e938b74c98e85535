//! `scriptorium status`: what the workspace holds and whether its history is in step.

use std::process::ExitCode;

use scriptorium_backend::summary::{WriteOutcome, memory_status_in};

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium status`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    // The one status computation of every face (REST and MCP answer the same JSON).
    let full = memory_status_in(home.root(), &memory)?;
    let usage = writer_usage(home, memory.workspace().root());
    if args.json {
        let mut value = serde_json::to_value(&full)?;
        value["writer_usage"] = serde_json::to_value(&usage)?;
        crate::output::document(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    let status = &full.workspace;
    let (pending, writer) = (full.pending_turns, &full.writer);
    outln!("workspace   {} at {}", status.workspace, full.workspace_path);
    outln!("revision    {} ({} installs and appends)", status.revision, status.transactions);
    match &status.last_transaction {
        None => outln!("last txn    none yet"),
        Some(txn) => outln!("last txn    {txn}"),
    }
    outln!(
        "topics      {} file(s), {} block(s){}{}",
        status.topic_files,
        status.blocks,
        if status.core_exists { ", core master present" } else { "" },
        match status.diagnostics {
            0 => String::new(),
            n => format!(", {n} problem(s) (run `scriptorium check`)"),
        }
    );
    outln!("sources     {} archive(s), {} record(s)", status.source_files, status.source_records);
    if let Some(outside) = &full.outside_edits {
        let files = outside.files.join(", ");
        if outside.adopted {
            outln!("note        took in edits made outside a transaction: {files}");
        } else {
            outln!(
                "note        edits made outside a transaction do not validate: {files} (run \
                 `scriptorium check`)"
            );
        }
    } else if status.topics_edited_outside {
        outln!("note        topics/ was edited outside a transaction");
    }
    let redactions = &full.redactions;
    if redactions.total > 0 {
        let rules: Vec<String> =
            redactions.by_rule.iter().map(|(rule, n)| format!("{rule} {n}")).collect();
        outln!(
            "privacy     {} redaction(s) before storing: {}",
            redactions.total,
            rules.join(", ")
        );
    }
    match pending {
        Some(n) => outln!("sessions    {n} turn(s) not yet written into memory"),
        None => outln!("sessions    the pending count failed"),
    }
    match (&writer.last_outcome, &writer.last_failure, &writer.last_success_at) {
        (Some(WriteOutcome::Failure), Some(failure), _) => outln!(
            "writer      last write failed at {}: {} ({})",
            failure.at,
            failure.reason_code,
            if failure.retryable { "retryable" } else { "permanent" }
        ),
        (Some(WriteOutcome::Success), _, Some(at)) => {
            outln!("writer      last write succeeded at {at}");
        }
        _ => outln!("writer      no write yet"),
    }
    let budget = usage.max_tokens_per_day.map_or_else(
        || "no daily budget".to_owned(),
        |max| {
            let left =
                if usage.budget_reached { ": reached, writes wait for tomorrow (UTC)" } else { "" };
            format!("budget {max} a day{left}")
        },
    );
    outln!(
        "usage       today {} tokens{}, this month {} tokens{} ({budget})",
        usage.totals.today.total_tokens,
        cost(&usage.totals.today),
        usage.totals.month.total_tokens,
        cost(&usage.totals.month),
    );
    let git = &status.git;
    match (&git.error, &git.head) {
        (Some(err), _) => outln!("git         unavailable: {err}"),
        (None, Some(head)) => outln!(
            "git         HEAD {} ({})",
            &head[..head.len().min(12)],
            if git.in_sync {
                "in step with the installed transaction"
            } else {
                "behind: the next open catches up"
            }
        ),
        (None, None) => outln!("git         no commits yet"),
    }
    Ok(ExitCode::SUCCESS)
}

/// What the writer's model used (from the ledger) against its daily budget.
#[derive(Debug, serde::Serialize)]
struct WriterUsage {
    /// Today (UTC) and this month.
    #[serde(flatten)]
    totals: scriptorium_writer::UsageTotals,
    /// `[memory.writer] max_tokens_per_day`.
    max_tokens_per_day: Option<u64>,
    /// Whether today's usage reached it (writes end `WRITER_BUDGET_REACHED`).
    budget_reached: bool,
}

fn writer_usage(home: &Home, memory_root: &std::path::Path) -> WriterUsage {
    let totals = scriptorium_writer::Ledger::of(memory_root)
        .totals(scriptorium_backend::memory::wall_clock());
    let max = crate::config(home).ok().and_then(|c| c.memory.writer.max_tokens_per_day);
    WriterUsage {
        totals,
        max_tokens_per_day: max,
        budget_reached: max.is_some_and(|max| totals.today.total_tokens >= max),
    }
}

/// `, $0.0123` when the cost is known and not zero.
fn cost(usage: &scriptorium_writer::TokenUsage) -> String {
    match usage.cost_micro_usd {
        Some(micros) if micros > 0 => format!(", ${:.4}", micros as f64 / 1e6),
        _ => String::new(),
    }
}
