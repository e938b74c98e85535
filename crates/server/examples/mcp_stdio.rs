//! Serves the `memory_*` MCP tools over stdio for the memory root given as the only argument,
//! with the embedded session store beside it (`<root>/../sessions`, the CLI's layout), so
//! `memory_forget` works as under `scriptorium mcp`.
//!
//! The MCP client test (`tests/mcp.rs`) builds and runs this; `scriptorium mcp` is the entry
//! point users run.

use std::path::PathBuf;
use std::sync::Arc;

use scriptorium_server::mcp::{MemoryTools, serve_stdio_with};
use scriptorium_session_dag::EmbeddedStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let Some(root) = std::env::args_os().nth(1).map(PathBuf::from) else {
        anyhow::bail!("usage: mcp_stdio <memory root>");
    };
    let sessions = root.parent().map_or_else(|| PathBuf::from("sessions"), |h| h.join("sessions"));
    let store = EmbeddedStore::open(sessions)?;
    serve_stdio_with(MemoryTools::new(root).with_store(Arc::new(store))).await
}
