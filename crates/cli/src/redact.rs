//! `scriptorium redact [--dry-run] [--yes] [--json]`: clean a home written before redaction
//! existed (or before a rule was added) of every secret and `<private>` span the rules now match,
//! everywhere: the session store, the archive, the topics, the views, the internal files, git
//! history and the sync remote (see `scriptorium_backend::redact`). It counts what it would
//! change first, by place and by rule, never a value; on a terminal it asks before acting;
//! elsewhere it acts only with `--yes` (`CONFIRMATION_REQUIRED`), as `forget` does.

use std::process::ExitCode;

use scriptorium_backend::redact::{self, RedactPlan};

use crate::forget::{confirm, remote, remote_note};
use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium redact`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Count what would be redacted, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Do it without asking (required when standard input is not a terminal).
    #[arg(long)]
    yes: bool,
    /// Print the plan or the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: &Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    let store = crate::session_store(home)?;
    let plan = redact::plan(&memory, Some(&*store)).map_err(|e| crate::output::wire(e.wire()))?;
    if plan.is_empty() || args.dry_run {
        if args.json {
            crate::output::document(&serde_json::json!({
                "ok": true, "dry_run": args.dry_run, "redacted": false, "plan": plan,
            }))?;
        } else if plan.is_empty() {
            outln!("nothing to redact: no stored text matches the rules");
        } else {
            print_plan(&plan);
            outln!("dry run: nothing was redacted");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes
        && !confirm(
            || print_plan(&plan),
            "redact all of this, everywhere, git history included?",
            "nothing was redacted: a redact rewrites git history and cannot be undone, and \
             standard input is not a terminal to ask on; run it again with --yes (or --dry-run \
             to count what would change)",
        )?
    {
        outln!("nothing was redacted");
        return Ok(ExitCode::SUCCESS);
    }
    let remote = remote(home)?;
    let Some(report) = redact::execute(&memory, Some(&*store), plan, remote.as_deref())
        .map_err(|e| crate::output::wire(e.wire()))?
    else {
        outln!("nothing to redact: no stored text matches the rules");
        return Ok(ExitCode::SUCCESS);
    };
    if args.json {
        crate::output::document(&serde_json::json!({
            "ok": true, "dry_run": false, "redacted": true, "plan": report.plan,
            "commits_rewritten": report.commits_rewritten, "objects_left": report.objects_left,
            "revision": report.revision, "commit": report.commit, "remote": report.remote,
        }))?;
    } else {
        if args.yes {
            print_plan(&report.plan);
        }
        outln!(
            "redacted: revision {}, {} commit(s) rewritten, old git objects pruned{}",
            report.revision,
            report.commits_rewritten,
            remote_note(&report.remote)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn print_plan(plan: &RedactPlan) {
    outln!(
        "this redact rewrites, everywhere (the session store, the archive, the topics, the views, the search index, git history and the sync remote):"
    );
    outln!("  messages        {} in {} session(s)", plan.messages, plan.sessions);
    if plan.titles > 0 {
        outln!("  session titles  {}", plan.titles);
    }
    outln!(
        "  records         {} (each keeps its place: every citation still resolves)",
        plan.records
    );
    for file in plan.archives.iter().chain(&plan.topics) {
        outln!("  file            {file}");
    }
    outln!("  git commits     {} rewritten ({} blobs)", plan.commits, plan.blobs);
    let rules: Vec<String> = plan.by_rule.iter().map(|(rule, n)| format!("{rule} {n}")).collect();
    if !rules.is_empty() {
        outln!("  by rule         {}", rules.join(", "));
    }
}
