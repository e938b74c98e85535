//! The REST API and the web UI (Topics, Timeline, Recent, Core), secure by default.
//!
//! Key decision: every write goes through the same transaction as every other change, with
//! compare-and-set on the revision the page read.
//!
//! [`mcp`] serves the `memory_*` tools (see `ARCHITECTURE.md#cratesserver`) to chat agents over
//! MCP (stdio): every refusal is a tool result `{"ok": false, "error": {…}}` with the engine's
//! stable code.
//!
//! [`web`] serves the owner's page and the REST API (its routes are listed in [`web`]) over HTTP
//! (axum), secure by default: loopback only, a per-home token, `Host` and `Origin` checks and a
//! strict CSP (see [`web::security`]).
//!
//! # Limitations
//!
//! - The web server is plain HTTP; it is meant for the owner's own machine.
//! - `POST /api/memory/embedding/install` and the settings API of the reference are not served.
//!
//! # Example
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! let addr = "127.0.0.1:7878".parse()?;
//! scriptorium_server::web::serve("home".into(), addr, async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await
//! # }
//! ```

pub mod mcp;
pub mod web;
