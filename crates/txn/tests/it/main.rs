//! Integration tests of `scriptorium-txn` (one binary, one module per area).

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

mod change;
mod pipeline;
mod validate;
