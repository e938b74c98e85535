//! `scriptorium mcp`: the MCP server on stdio (`memory_search`, `memory_grep`, `memory_get`,
//! `memory_browse`, `memory_update`, `memory_note`, `memory_forget`, `memory_status`), for Claude
//! Code, Codex and any MCP client. It is given the home's session store (which `memory_forget`
//! erases from) and sync remote (whose history a forget replaces).

use std::process::ExitCode;

use anyhow::Context;

use crate::home::Home;

/// Arguments of `scriptorium mcp`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Serves until the client closes stdin. Logs go to stderr; stdout is the protocol.
pub(crate) fn run(home: &Home, _args: &Args) -> anyhow::Result<ExitCode> {
    let config = crate::config(home)?;
    let redactor = config.redactor()?;
    // Opened before the runtime (a PostgreSQL store runs its own blocking client). A store that
    // cannot be opened leaves the reading tools working: only `memory_forget` refuses. A home
    // without a memory workspace gets nothing created (the tools answer NO_WORKSPACE).
    let opened = if home.memory().is_dir() {
        crate::session_store(home).map(Some)
    } else {
        crate::existing_session_store(home)
    };
    let store = match opened {
        Ok(store) => store.map(|store| store.shared()),
        Err(err) => {
            tracing::warn!(%err, "the session store cannot be opened: memory_forget is refused");
            None
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut tools = scriptorium_server::mcp::MemoryTools::with_redactor(home.memory(), redactor)
        .with_remote(config.sync.remote.clone());
    if let Some(store) = store {
        tools = tools.with_store(store);
    }
    runtime.block_on(scriptorium_server::mcp::serve_stdio_with(tools))?;
    Ok(ExitCode::SUCCESS)
}
