//! Integration tests of `scriptorium-views`.

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

mod common;
mod core;
mod views;
mod write;
