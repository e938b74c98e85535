//! Serves the `memory_*` MCP tools over stdio for the memory root given as the only argument.
//!
//! The MCP client test (`tests/mcp.rs`) builds and runs this; `scriptorium mcp` is the entry
//! point users run.

use std::path::PathBuf;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let Some(root) = std::env::args_os().nth(1) else {
        anyhow::bail!("usage: mcp_stdio <memory root>");
    };
    scriptorium_server::mcp::serve_stdio(PathBuf::from(root)).await
}
