//! `scriptorium core`: the core block as it is injected, with its token budget.

use std::process::ExitCode;

use scriptorium_backend::engine::{FsSources, render_core};
use scriptorium_backend::injected_core;
use scriptorium_backend::memory::CORE_BUDGET;
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::tokens;

use crate::home::Home;
use crate::memory;
use crate::output::outln;

/// Arguments of `scriptorium core`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The token budget (o200k_base).
    #[arg(long, default_value_t = CORE_BUDGET)]
    budget: usize,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the command: the canonical master (`topics/core.md`), its render within the budget,
/// and the fenced text injected into the system prompt.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open(home, false)?;
    let root = memory.workspace().root();
    // Never through a symlink (as the injected core is read).
    let canonical = scriptorium_workspace_fs::read::read_in(
        &scriptorium_workspace_fs::RealFs,
        root,
        "topics/core.md",
    )
    .ok()
    .and_then(|bytes| String::from_utf8(bytes).ok());
    let render =
        render_core(canonical.as_deref(), &ArchiveResolver::new(FsSources::new(root)), args.budget);
    let rendered = render.text.clone().unwrap_or_default();
    let injected = injected_core(&rendered);
    let report = &render.report;
    if args.json {
        let out = serde_json::json!({
            "canonical": canonical,
            "rendered": rendered,
            "rendered_tokens": report.tokens,
            "injected": injected,
            "injected_tokens": tokens::count(&injected),
            "budget_tokens": report.budget,
            "rendered_block_ids": report.rendered_block_ids,
            "excluded_block_ids": report.excluded_block_ids,
        });
        crate::output::document(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if canonical.is_none() {
        outln!("no core master yet (topics/core.md); nothing is injected");
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{injected}");
    eprintln!(
        "{} / {} tokens rendered, {} block(s) kept, {} excluded{}",
        report.tokens,
        report.budget,
        report.rendered_block_ids.len(),
        report.excluded_block_ids.len(),
        if report.excluded_block_ids.is_empty() {
            String::new()
        } else {
            format!(": {}", report.excluded_block_ids.join(", "))
        }
    );
    Ok(ExitCode::SUCCESS)
}
