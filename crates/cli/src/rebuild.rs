//! `scriptorium rebuild`: rebuilds every derived view and the search index from the canonical
//! files.

use std::process::ExitCode;

use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_txn::BeginOptions;
use scriptorium_views::{
    FsSources, RebuildOptions, promote_legacy_core, read_topics, rebuild_workspace,
};

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

/// Promotes a legacy root `core.md` (a workspace from before `topics/core.md` existed) into the
/// master through a transaction, when the tree with it parses (see `docs/format.md#core-view`).
/// Returns whether it did.
fn promote_legacy(memory: &scriptorium_backend::memory::MemoryWorkspace) -> anyhow::Result<bool> {
    let root = memory.workspace().root();
    let Ok(legacy) = std::fs::read_to_string(root.join("core.md")) else {
        return Ok(false);
    };
    if root.join("topics/core.md").exists() {
        return Ok(false);
    }
    let topics = read_topics(root)?;
    let resolver = ArchiveResolver::new(FsSources::new(root));
    let Some(master) = promote_legacy_core(&legacy, &topics, &resolver) else {
        return Ok(false);
    };
    let options = BeginOptions {
        message: "memory: promote legacy core.md to topics/core.md".into(),
        ..BeginOptions::default()
    };
    let mut staged = memory.workspace().begin(options)?;
    staged.write_file("topics/core.md", &master)?;
    let validated = staged.validate().map_err(|rejected| {
        let problems: Vec<String> = rejected.violations().iter().map(ToString::to_string).collect();
        anyhow::anyhow!("the legacy core.md could not be promoted:\n{}", problems.join("\n"))
    })?;
    validated.install()?;
    Ok(true)
}

/// Runs the command. Derived files are replaced one by one, each atomically; the canonical
/// topics and sources are never written, except that a legacy root `core.md` without a master
/// is promoted to `topics/core.md` through a transaction first.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    let promoted = promote_legacy(&memory)?;
    if promoted && !args.json {
        outln!("promoted the legacy core.md to topics/core.md");
    }
    let workspace = memory.workspace();
    // Under the write lock: an install between reading the tree and writing its views would
    // otherwise be overwritten by views of the tree before it.
    let report = workspace.with_write_lock(scriptorium_txn::LockTimeout::DEFAULT, || {
        let options = RebuildOptions {
            creation_order: workspace.creation_order()?.to_map(),
            ..RebuildOptions::default()
        };
        anyhow::Ok(rebuild_workspace(workspace.root(), &options)?)
    })??;
    let docs = memory.rebuild_index().map_err(|e| anyhow::anyhow!("{}: {e}", e.code()))?;
    if args.json {
        let out = serde_json::json!({
            "blocks": report.units,
            "diagnostics": report.diagnostics.len(),
            "changed_files": report.written.changed_files,
            "removed_files": report.written.removed_files,
            "core_tokens": report.core.tokens,
            "indexed_documents": docs,
            "promoted_legacy_core": promoted,
        });
        crate::output::document(&out)?;
    } else {
        outln!(
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
