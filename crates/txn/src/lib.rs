//! Workspace transactions: staged, validated, crash-safe installs of `topics/`.
//!
//! Key decision: the only crate of ours it depends on is `scriptorium-topics-format`; derived
//! views and the search index are told about an install through traits the caller provides.
//!
//! # Limitations
//!
//! Being filled by the transactions issue.

pub mod code;
pub mod validate;

pub use code::ErrorCode;
