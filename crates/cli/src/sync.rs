//! `scriptorium sync`: exchanges the memory workspace with a git remote (see `docs/sync.md`).

use std::process::ExitCode;

use scriptorium_backend::sync::{SyncRequest, read_state};
use scriptorium_backend::wire::Code;
use scriptorium_topics_format::merge::Prefer;

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium sync`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The git remote (a path or a URL); default: `[sync] remote` of the configuration.
    #[arg(long, value_name = "REMOTE")]
    pub(crate) remote: Option<String>,
    /// Show the last sync and any conflict that stopped one (both versions of each block);
    /// changes nothing.
    #[arg(long, conflicts_with_all = ["prefer", "remote"])]
    pub(crate) status: bool,
    /// Resolve the conflicting blocks the last sync stopped at (those `--status` shows) by
    /// taking this side's version (`ours`, e.g. after editing the block as you want it) or the
    /// remote's; a conflict not shown yet stops the sync again.
    #[arg(long, value_enum, value_name = "SIDE")]
    pub(crate) prefer: Option<Side>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `--prefer`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum Side {
    /// This clone's version.
    Ours,
    /// The remote's version.
    Theirs,
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    if args.status {
        return status(home, args.json);
    }
    let config = crate::config(home)?;
    let remote = match (args.remote, config.sync.remote) {
        (Some(remote), _) => absolute_remote(&remote, &std::env::current_dir()?),
        (None, Some(remote)) => absolute_remote(&remote, home.root()),
        (None, None) => {
            return Err(crate::output::usage(
                Code::InvalidConfig,
                "no sync remote: pass --remote or set remote under [sync] in scriptorium.toml",
            ));
        }
    };
    let memory = memory::open(home, false)?;
    let prefer = args.prefer.map(|side| match side {
        Side::Ours => Prefer::Ours,
        Side::Theirs => Prefer::Theirs,
    });
    let store = crate::existing_session_store(home)?.map(|s| s.shared());
    let report =
        memory.sync(&SyncRequest { remote, prefer, store }).map_err(crate::output::wire)?;
    if args.json {
        crate::output::document(&report)?;
    } else {
        let what = match report.action.as_str() {
            "up_to_date" => "already in step with".to_owned(),
            "pushed" => "sent this clone's changes to".to_owned(),
            "fast_forward" => "took the changes of".to_owned(),
            _ => "merged the changes of".to_owned(),
        };
        outln!(
            "{what} {} ({}): commit {}{}",
            report.remote,
            report.branch,
            &report.commit[..12.min(report.commit.len())],
            if report.pushed { "" } else { " (not pushed)" }
        );
        if !report.topics_changed.is_empty() || !report.sources_changed.is_empty() {
            outln!(
                "  {} topic file(s) and {} archive(s) changed here",
                report.topics_changed.len(),
                report.sources_changed.len()
            );
        }
        if report.resolved_conflicts > 0 {
            outln!("  {} conflicting block(s) resolved by --prefer", report.resolved_conflicts);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A remote given as a relative path is taken relative to `base` (the current directory for
/// `--remote`, as git does; the home for `[sync] remote`), not to the workspace git runs in; a
/// relative `base` (`--home h0`) is taken from the current directory first, since git runs
/// elsewhere.
pub(crate) fn absolute_remote(remote: &str, base: &std::path::Path) -> String {
    let path = std::path::Path::new(remote);
    let looks_like_url = remote.contains("://")
        || remote.split_once(':').is_some_and(|(host, _)| !host.contains('/'));
    if looks_like_url || path.is_absolute() {
        return remote.to_owned();
    }
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
    base.join(path).display().to_string()
}

fn status(home: &Home, json: bool) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    let state = read_state(memory.workspace().root()).map_err(crate::output::wire)?;
    let config = crate::config(home)?;
    if json {
        crate::output::document(&serde_json::json!({
            "ok": state.conflict.is_none(),
            "remote": config.sync.remote,
            "last": state.last,
            "conflict": state.conflict,
        }))?;
        return Ok(if state.conflict.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS });
    }
    match (&config.sync.remote, &state.last) {
        (Some(remote), _) => outln!("remote: {remote}"),
        (None, Some(last)) => {
            outln!("remote: none configured (the last sync used {})", last.remote);
        }
        (None, None) => outln!("remote: none configured ([sync] remote in scriptorium.toml)"),
    }
    match &state.last {
        Some(last) => outln!(
            "last sync: {} with {} at {} (commit {})",
            last.action.replace('_', " "),
            last.remote,
            last.at,
            &last.commit[..12.min(last.commit.len())]
        ),
        None => outln!("last sync: never"),
    }
    let Some(conflict) = &state.conflict else {
        outln!("conflicts: none");
        return Ok(ExitCode::SUCCESS);
    };
    outln!(
        "conflict found at {} merging {} ({}): nothing was installed",
        conflict.at,
        conflict.remote,
        &conflict.theirs[..12.min(conflict.theirs.len())]
    );
    for block in &conflict.blocks {
        outln!("\n{} ^{}", block.path, block.block);
        let show = |side: &str, text: &Option<String>| match text {
            Some(text) => outln!("  {side}:\n{}", indent(text)),
            None => outln!("  {side}: (deleted)"),
        };
        show("here", &block.ours);
        show("remote", &block.theirs);
    }
    for reason in &conflict.refused {
        outln!("refused: {reason}");
    }
    outln!(
        "\nEdit each block as you want it, then `scriptorium sync --prefer ours`; or take the \
         remote's versions with `scriptorium sync --prefer theirs`."
    );
    Ok(ExitCode::from(1))
}

fn indent(text: &str) -> String {
    text.trim_end().lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}
