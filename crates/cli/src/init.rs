//! `scriptorium init`: creates the home, the memory workspace and its git history.

use std::process::ExitCode;

use crate::home::Home;
use crate::memory;

/// Arguments of `scriptorium init`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
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
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("memory workspace {id} at {root}");
        println!("revision {revision}");
        match &memory.history_error() {
            None => println!("git history in {root}/.git"),
            Some(err) => println!("git history unavailable: {err}"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
