//! `scriptorium status`: what the workspace holds and whether its history is in step.

use std::process::ExitCode;

use scriptorium_backend::runtime::{Outcome, WriterStatus};
use scriptorium_backend::summary::{pending_turns, workspace_status};

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
    let root = memory.workspace().root();
    let status = workspace_status(&memory)?;
    let writer = WriterStatus::load(root);
    let pending = match crate::existing_session_store(home)? {
        Some(store) => pending_turns(&*store, &status.workspace),
        None => Some(0),
    };
    if args.json {
        let mut out = serde_json::to_value(&status)?;
        out["workspace_path"] = root.display().to_string().into();
        out["writer"] = writer.to_json();
        out["pending_turns"] = pending.into();
        crate::output::document(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("workspace   {} at {}", status.workspace, root.display());
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
    if status.topics_edited_outside {
        outln!("note        topics/ was edited outside a transaction");
    }
    match pending {
        Some(n) => outln!("sessions    {n} turn(s) not yet written into memory"),
        None => outln!("sessions    the pending count failed"),
    }
    match (&writer.last_outcome, &writer.last_failure, &writer.last_success_at) {
        (Some(Outcome::Failure), Some(failure), _) => outln!(
            "writer      last write failed at {}: {} ({})",
            rfc3339(failure.at),
            failure.reason_code,
            if failure.retryable { "retryable" } else { "permanent" }
        ),
        (Some(Outcome::Success), _, Some(at)) => {
            outln!("writer      last write succeeded at {}", rfc3339(*at));
        }
        _ => outln!("writer      no write yet"),
    }
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

/// `at` as RFC 3339.
fn rfc3339(at: time::OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}
