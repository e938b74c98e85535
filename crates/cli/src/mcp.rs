//! `scriptorium mcp`: the MCP server on stdio (`memory_search`, `memory_grep`, `memory_get`,
//! `memory_browse`, `memory_update`, `memory_status`), for Claude Code, Codex and any MCP client.

use std::process::ExitCode;

use anyhow::Context;

use crate::home::Home;

/// Arguments of `scriptorium mcp`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Serves until the client closes stdin. Logs go to stderr; stdout is the protocol.
pub(crate) fn run(home: &Home, _args: &Args) -> anyhow::Result<ExitCode> {
    crate::config(home)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(scriptorium_server::mcp::serve_stdio(home.memory()))?;
    Ok(ExitCode::SUCCESS)
}
