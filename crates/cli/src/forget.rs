//! `scriptorium forget (--session ID | --record ANCHOR | --block ID | --matching TEXT)…
//! [--dry-run] [--yes] [--json]`: remove a conversation, a record, a block or a text everywhere
//! (see `scriptorium_backend::forget`). It lists what would go first; on a terminal it asks
//! before acting; elsewhere it acts only with `--yes` (without it nothing is forgotten and it
//! says why, `CONFIRMATION_REQUIRED`).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::process::ExitCode;

use scriptorium_backend::forget::{self, ForgetPlan, Selector};
use scriptorium_backend::wire::Code;

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium forget`.
#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("what").required(true).multiple(true)
        .args(["session", "record", "block", "matching"])
))]
pub(crate) struct Args {
    /// A whole conversation (see `scriptorium sessions list`); repeat for several.
    #[arg(long, value_name = "ID")]
    session: Vec<String>,
    /// One archived message: its source ID, its anchor (`source-…`) or a citation's link.
    #[arg(long, value_name = "ANCHOR")]
    record: Vec<String>,
    /// One block (`^id` or `id`).
    #[arg(long, value_name = "ID")]
    block: Vec<String>,
    /// Every message, record and block containing this literal text.
    #[arg(long, value_name = "TEXT")]
    matching: Option<String>,
    /// List what would go, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Do it without asking (required when standard input is not a terminal).
    #[arg(long)]
    yes: bool,
    /// Print the plan or the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

impl Args {
    /// The forget of one session, as `sessions remove` asks for it.
    pub(crate) fn of_session(id: String, yes: bool, dry_run: bool, json: bool) -> Args {
        Args {
            session: vec![id],
            record: Vec::new(),
            block: Vec::new(),
            matching: None,
            dry_run,
            yes,
            json,
        }
    }

    fn selectors(&self) -> Vec<Selector> {
        let mut out: Vec<Selector> = self.session.iter().cloned().map(Selector::Session).collect();
        out.extend(self.record.iter().cloned().map(Selector::Record));
        out.extend(self.block.iter().cloned().map(Selector::Block));
        out.extend(self.matching.iter().cloned().map(Selector::Matching));
        out
    }
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: &Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    let store = crate::session_store(home)?;
    let plan = forget::plan(&memory, &*store, &args.selectors())
        .map_err(|e| crate::output::wire(e.wire()))?;
    if plan.is_empty() {
        if args.json {
            crate::output::document(&serde_json::json!({
                "ok": true, "dry_run": args.dry_run, "forgotten": false, "plan": plan,
            }))?;
        } else {
            outln!("nothing to forget: no session, record or block holds it");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        if args.json {
            crate::output::document(&serde_json::json!({
                "ok": true, "dry_run": true, "forgotten": false, "plan": shown(&plan),
            }))?;
        } else {
            print_plan(&plan);
            outln!("dry run: nothing was forgotten");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes
        && !confirm(
            || print_plan(&plan),
            "forget all of this, everywhere, for good?",
            "nothing was forgotten: a forget cannot be undone, and standard input is not a \
             terminal to ask on; run it again with --yes (or --dry-run to see what would go)",
        )?
    {
        outln!("nothing was forgotten");
        return Ok(ExitCode::SUCCESS);
    }
    let remote = remote(home)?;
    let report = forget::execute(&memory, &*store, plan, remote.as_deref())
        .map_err(|e| crate::output::wire(e.wire()))?;
    if args.json {
        crate::output::document(&serde_json::json!({
            "ok": true, "dry_run": false, "forgotten": true, "plan": report.plan,
            "commits_rewritten": report.commits_rewritten, "objects_left": report.objects_left,
            "revision": report.revision, "commit": report.commit, "remote": report.remote,
        }))?;
    } else {
        if !args.yes {
            // The list was shown before the question.
        } else {
            print_plan(&report.plan);
        }
        outln!(
            "forgotten: revision {}, {} commit(s) rewritten, old git objects pruned{}",
            report.revision,
            report.commits_rewritten,
            remote_note(&report.remote)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan as `--json` shows it (never the `--matching` text).
fn shown(plan: &ForgetPlan) -> ForgetPlan {
    ForgetPlan { matching: None, ..plan.clone() }
}

/// Shows what would change (`show`) and asks `question` on the terminal (`true`: the owner said
/// yes); without a terminal to ask on, the error `CONFIRMATION_REQUIRED` saying `refusal`.
pub(crate) fn confirm(show: impl FnOnce(), question: &str, refusal: &str) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        return Err(crate::output::problem(Code::ConfirmationRequired, refusal));
    }
    show();
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// What a purge's outcome at the sync remote (`replaced`, `pending`, `none`) adds to its line.
pub(crate) fn remote_note(remote: &str) -> &'static str {
    match remote {
        "replaced" => ", the sync remote's history replaced",
        "pending" => "; the sync remote was not reachable: the next `sync` replaces it",
        _ => "",
    }
}

/// The sync remote a forget replaces the history of (`[sync] remote`).
pub(crate) fn remote(home: &Home) -> anyhow::Result<Option<String>> {
    let config = crate::config(home)?;
    Ok(std::env::var("SCRIPTORIUM_SYNC_REMOTE")
        .ok()
        .filter(|r| !r.is_empty())
        .or(config.sync.remote))
}

fn print_plan(plan: &ForgetPlan) {
    outln!(
        "this forget removes, everywhere (the session store, the archive, the topics, the views, the search index, git history and the sync remote):"
    );
    if !plan.sessions.is_empty() {
        outln!("  sessions        {}", plan.sessions.join(", "));
    }
    outln!("  messages        {} (their text; the conversation's shape stays)", plan.node_count());
    if !plan.titles.is_empty() {
        outln!("  session titles  {}", plan.titles.len());
    }
    outln!(
        "  records         {} (archived as tombstones: a citation says \"forgotten\")",
        plan.records.len()
    );
    let blocks: Vec<String> = plan.blocks.iter().map(|b| format!("^{b}")).collect();
    outln!(
        "  blocks          {}{}",
        plan.blocks.len(),
        if blocks.is_empty() { String::new() } else { format!(": {}", blocks.join(" ")) }
    );
    if !plan.uncited.is_empty() {
        let uncited: Vec<String> = plan.uncited.iter().map(|b| format!("^{b}")).collect();
        outln!("  citations       dropped from {}", uncited.join(" "));
    }
    for file in &plan.files {
        outln!("  file            {file}");
    }
    outln!("  git commits     {} rewritten", plan.commits);
}
