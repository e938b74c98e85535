//! `scriptorium check`.

use std::process::ExitCode;

use crate::home::Home;

/// Arguments of `scriptorium check`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The memory workspace to check (default: `<home>/memory`).
    #[arg(long, value_name = "DIR")]
    workspace: Option<std::path::PathBuf>,
    /// Print diagnostics as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let _ = (home.memory(), args.workspace, args.json);
    anyhow::bail!("`scriptorium check` is not available yet")
}
