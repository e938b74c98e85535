//! Integration tests of `scriptorium-session-dag` (one binary, one module per area).

mod forget;
mod import;
mod rewrite;
mod store;
#[path = "../conformance/suite.rs"]
#[expect(dead_code, reason = "the store tests share the suite's helpers, not its tests")]
mod suite;
