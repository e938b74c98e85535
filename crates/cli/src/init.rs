//! `scriptorium init`: creates the home, the memory workspace and its git history.

use std::process::ExitCode;

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium init`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the command. Idempotent: an existing workspace is opened (and recovered), never reset.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, true)?;
    let root = memory.workspace().root().display().to_string();
    let id = memory.workspace().workspace_id().as_str().to_owned();
    let revision = memory.workspace().revision()?.as_str().to_owned();
    if args.json {
        let out = serde_json::json!({
            "workspace": id, "workspace_path": root, "revision": revision,
            "git": memory.history_error().is_none(), "git_error": memory.history_error(),
        });
        crate::output::document(&out)?;
    } else {
        outln!("memory workspace {id} at {root}");
        outln!("revision {revision}");
        match &memory.history_error() {
            None => outln!("git history in {root}/.git"),
            Some(err) => outln!("git history unavailable: {err}"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
