//! Workspace transactions: staged, validated, crash-safe installs of `topics/`.
//!
//! This crate will own the memory workspace on disk (reference §1.1 layout, workspace id,
//! permissions, the revision), the cross-process write lock, the typestate pipeline
//! `begin → Staged → Validated → Installed`, validation of every rule of reference §4.5 with
//! closed error codes, the atomic `RENAME_EXCHANGE` install with an intent record and recovery,
//! append-only source archiving, and the unified change interface (`memory_changes`, whole-file
//! `changes`, unified `patch`).
//!
//! Key decision: the only crate of ours it depends on is `scriptorium-topics-format`; derived
//! views and the search index are told about an install through traits the caller provides.
//!
//! # Limitations
//!
//! Not implemented yet: this crate is filled by the transactions issue.
