//! Integration tests of `scriptorium-topics-format` (one binary, one module per area).

#[path = "../common/redact.rs"]
mod redact;

mod archive;
mod forget;
mod merge;
mod rewrite;
mod topics;
