//! `scriptorium update`: one change request (structured record operations, whole-file changes
//! or a unified diff) applied as one compare-and-set transaction, the way the REST API and the
//! MCP tool apply them.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use scriptorium_backend::engine::{Surface, UpdateContext, UpdateRequest};

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium update`.
#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("form").required(true).args(["changes", "patch", "memory_changes"])
))]
pub(crate) struct Args {
    /// The revision the change is based on (from `scriptorium status`); a different current
    /// revision refuses the change with CONCURRENT_UPDATE (exit 75: re-read and retry).
    #[arg(long = "base", value_name = "REV")]
    base: String,
    /// A JSON list of whole-file changes `[{"path", "action": "write"|"delete", "content"?}]`
    /// (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    changes: Option<PathBuf>,
    /// A JSON list of structured record operations (`create_record`, `update_record`,
    /// `delete_record`, `move_records`; `-` for standard input).
    #[arg(long, value_name = "FILE")]
    memory_changes: Option<PathBuf>,
    /// A unified diff of `topics/**/*.md` (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    patch: Option<PathBuf>,
    /// A JSON list of new sources the change cites by label:
    /// `[{"label": "new-source-…", "role": "user"|"assistant"|"system"|"tool", "content",
    /// "observed_at"?}]` (`-` for standard input). They are archived as the local owner's words.
    #[arg(long, value_name = "FILE")]
    sources: Option<PathBuf>,
    /// The commit message (default `Update memory`).
    #[arg(short, long)]
    message: Option<String>,
    /// Print the result or the error as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

fn read_input(path: &Path) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading standard input")?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

/// Runs the command.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let mut body = serde_json::Map::new();
    body.insert("base_revision".into(), args.base.clone().into());
    if let Some(file) = &args.changes {
        let text = read_input(file)?;
        let changes: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a JSON list of changes", file.display()))?;
        body.insert("changes".into(), changes);
    }
    if let Some(file) = &args.memory_changes {
        let text = read_input(file)?;
        let ops: serde_json::Value = serde_json::from_str(&text).with_context(|| {
            format!("{} is not a JSON list of record operations", file.display())
        })?;
        body.insert("memory_changes".into(), ops);
    }
    if let Some(file) = &args.patch {
        body.insert("patch".into(), read_input(file)?.into());
    }
    if let Some(file) = &args.sources {
        let text = read_input(file)?;
        let sources: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a JSON list of sources", file.display()))?;
        body.insert("sources".into(), sources);
    }
    if let Some(message) = &args.message {
        body.insert("commit_message".into(), message.clone().into());
    }
    let request = UpdateRequest::from_json(&serde_json::Value::Object(body).to_string())?;
    let memory = memory::open(home, false)?;
    // The person at the terminal is the workspace owner: sources they declare are archived
    // with the local owner's authority under the provider `cli`, never with identity fields
    // from the payload.
    let context = UpdateContext::owner(Surface::Cli, "owner-cli/update");
    let outcome = memory.update(request, context)?;
    let installed = &outcome.installed;
    let after = scriptorium_backend::memory::after(installed);
    let result = outcome.result();
    if args.json {
        crate::output::document(&result)?;
    } else if installed.noop {
        outln!("nothing changed: revision {} stays, no commit", installed.revision.as_str());
    } else {
        outln!("installed: revision {}", installed.revision.as_str());
        for file in &result.changed_files {
            outln!("  changed {file}");
        }
        memory::print_installed(installed, &after);
    }
    Ok(ExitCode::SUCCESS)
}
