//! `scriptorium rebuild`: rebuilds every derived view and the search index from the canonical
//! files.

use std::process::ExitCode;

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium rebuild`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the command. Derived files are replaced one by one, each atomically; the canonical
/// topics and sources are never written, except that a legacy root `core.md` without a master
/// is promoted to `topics/core.md` through a transaction first.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    let report = memory.rebuild()?;
    if report.promoted_legacy_core && !args.json {
        outln!("promoted the legacy core.md to topics/core.md");
    }
    if args.json {
        let out = serde_json::json!({
            "blocks": report.blocks,
            "diagnostics": report.diagnostics,
            "changed_files": report.changed_files,
            "removed_files": report.removed_files,
            "core_tokens": report.core_tokens,
            "indexed_documents": report.indexed_documents,
            "promoted_legacy_core": report.promoted_legacy_core,
        });
        crate::output::document(&out)?;
    } else {
        outln!(
            "rebuilt views from {} block(s): {} file(s) written, {} removed; core {} / {} tokens; \
             index of {} document(s)",
            report.blocks,
            report.changed_files.len(),
            report.removed_files.len(),
            report.core_tokens,
            report.core_budget,
            report.indexed_documents
        );
        if report.diagnostics > 0 {
            eprintln!(
                "{} problem(s) in topics/ (run `scriptorium check`); views use what parsed",
                report.diagnostics
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
