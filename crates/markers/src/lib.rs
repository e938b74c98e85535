//! Written markers: which session records have been handed to the memory writer of a workspace,
//! the pending walk, and the branch plan at a session boundary.
//!
//! Key decision: a marker lives on the node (`memory_written_scriptorium = <workspace id>`), not
//! in a position cursor, so forks are handled by walking from a tip toward the root.
//!
//! # Limitations
//!
//! Filled in by the sessions issue.
