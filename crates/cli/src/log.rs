//! `scriptorium log [PATH]`: the git history of the workspace or of one file.

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
    /// With a file path: each commit's diff of that file (what changed, under why).
    #[arg(long, short = 'p', requires = "path")]
    patch: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    let Some(history) = memory.history() else {
        return Err(crate::output::usage(
            scriptorium_backend::wire::Code::GitUnavailable,
            format!(
                "git history unavailable: {}",
                memory.history_error().unwrap_or("unknown error")
            ),
        ));
    };
    let path = args.path.as_deref().map(|p| p.trim_start_matches("./").trim_end_matches('/'));
    if let (true, Some(path)) = (args.patch, path) {
        let changes = scriptorium_backend::inspect::topic_changes(history, path, args.limit)?;
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
    let entries = history.log(path, args.limit)?;
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
