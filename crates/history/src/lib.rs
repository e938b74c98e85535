//! Git history of the memory workspace.
//!
//! This crate will own one git commit per installed transaction, built directly from the workspace
//! files with `gix` (no shelling out), each carrying a `Txn-Id:` trailer; catch-up on open when the
//! last commit does not carry the installed transaction; and `log(path)`.
//!
//! Key decision: git is history, not the commit point. A failed commit after an install is
//! reported as `memory_committed = true, git_committed = false`, never as a rollback.
//!
//! # Limitations
//!
//! Not implemented yet: this crate is filled by the transactions issue.
