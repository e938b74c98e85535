//! The REST API and the web UI (Topics, Timeline, Recent, Core), secure by default.
//!
//! Key decision: every write goes through the same transaction as every other change, with
//! compare-and-set on the revision the page read.
//!
//! [`mcp`] serves the `memory_*` tools of reference §8.4 to chat agents over MCP (stdio): every
//! refusal is a tool result `{"ok": false, "error": {…}}` with the engine's stable code.
//!
//! # Limitations
//!
//! The REST API and the web UI are not implemented yet: they are filled by the web UI issue.

pub mod mcp;
