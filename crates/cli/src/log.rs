//! `scriptorium log [PATH]`: the git history of the workspace or of one file; `scriptorium show
//! REV [PATH]`: one transaction's commit with its diffs.

use std::process::ExitCode;

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium log`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A workspace-relative path (e.g. `topics/people/dave.md`); all commits when omitted.
    path: Option<String>,
    /// At most this many commits.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Skip this many of the newest commits first (the next page starts at offset + limit).
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// With a file path: each commit's diff of that file (what changed, under why).
    #[arg(long, short = 'p', requires = "path")]
    patch: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `scriptorium show`.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The commit: `HEAD`, a commit id or a unique prefix of it (4+ hex digits), or a
    /// transaction id (`Txn-Id`).
    rev: String,
    /// Only the files at or below this workspace-relative path.
    path: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The workspace's history, or `GIT_UNAVAILABLE` saying why there is none.
fn open(home: &Home) -> anyhow::Result<scriptorium_history::History> {
    let memory = memory::open(home, false)?;
    match memory.history() {
        Some(history) => Ok(history.clone()),
        None => Err(crate::output::usage(
            scriptorium_backend::wire::Code::GitUnavailable,
            format!(
                "git history unavailable: {}",
                memory.history_error().unwrap_or("unknown error")
            ),
        )),
    }
}

/// Runs `scriptorium show`.
pub(crate) fn run_show(home: &Home, args: ShowArgs) -> anyhow::Result<ExitCode> {
    let history = open(home)?;
    let path = args.path.as_deref().map(|p| p.trim_start_matches("./").trim_end_matches('/'));
    let shown = scriptorium_backend::inspect::commit_diff(&history, &args.rev, path)?;
    if args.json {
        crate::output::document(&serde_json::json!({ "commit": shown }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("commit {}", shown.commit);
    if let Some(txn) = &shown.txn_id {
        outln!("Txn-Id: {txn}");
    }
    outln!("Date:   {}", shown.time);
    outln!("\n    {}\n", shown.summary);
    for file in &shown.files {
        outln!("{}", file.diff.trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `scriptorium log`.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let history = open(home)?;
    let history = &history;
    let path = args.path.as_deref().map(|p| p.trim_start_matches("./").trim_end_matches('/'));
    if let (true, Some(path)) = (args.patch, path) {
        let wanted = args.offset.saturating_add(args.limit);
        let mut changes = scriptorium_backend::inspect::topic_changes(history, path, wanted)?;
        changes.drain(..args.offset.min(changes.len()));
        if args.json {
            crate::output::document(&serde_json::json!({ "path": path, "changes": changes }))?;
        } else {
            for c in &changes {
                let txn = c.txn_id.as_deref().map(|t| format!("  [{t}]")).unwrap_or_default();
                outln!("{}  {}  {}{txn}", &c.commit[..c.commit.len().min(12)], c.time, c.summary);
                outln!("{}", c.diff.trim_end());
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut entries = history.log(path, args.offset.saturating_add(args.limit))?;
    entries.drain(..args.offset.min(entries.len()));
    if args.json {
        let rows: Vec<_> = entries
            .iter()
            .map(|e| {
                serde_json::json!({
                    "commit": e.commit, "time": e.time.seconds,
                    "summary": e.summary, "txn_id": e.txn_id,
                })
            })
            .collect();
        crate::output::document(&serde_json::json!({ "commits": rows }))?;
    } else {
        for e in &entries {
            let when = time::OffsetDateTime::from_unix_timestamp(e.time.seconds)
                .ok()
                .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
                .unwrap_or_default();
            let txn = e.txn_id.as_deref().map(|t| format!("  [{t}]")).unwrap_or_default();
            outln!("{}  {when}  {}{txn}", &e.commit[..e.commit.len().min(12)], e.summary);
        }
    }
    Ok(ExitCode::SUCCESS)
}
