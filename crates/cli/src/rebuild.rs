//! `scriptorium rebuild`: rebuilds every derived view and the search index from the canonical
//! files.

use std::process::ExitCode;

use scriptorium_views::{RebuildOptions, rebuild_workspace};

use crate::home::Home;
use crate::memory;

/// Arguments of `scriptorium rebuild`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the command. Derived files are replaced one by one, each atomically; the canonical
/// topics and sources are never written.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    let root = memory.workspace().root();
    let report = rebuild_workspace(root, &RebuildOptions::default())?;
    let docs = memory.rebuild_index().map_err(|e| anyhow::anyhow!("{}: {e}", e.code()))?;
    if args.json {
        let out = serde_json::json!({
            "blocks": report.units,
            "diagnostics": report.diagnostics.len(),
            "changed_files": report.written.changed_files,
            "removed_files": report.written.removed_files,
            "core_tokens": report.core.tokens,
            "indexed_documents": docs,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "rebuilt views from {} block(s): {} file(s) written, {} removed; core {} / {} tokens; \
             index of {docs} document(s)",
            report.units,
            report.written.changed_files.len(),
            report.written.removed_files.len(),
            report.core.tokens,
            report.core.budget
        );
        if !report.diagnostics.is_empty() {
            eprintln!(
                "{} problem(s) in topics/ (run `scriptorium check`); views use what parsed",
                report.diagnostics.len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
