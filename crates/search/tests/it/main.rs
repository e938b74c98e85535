//! Integration tests of `scriptorium-search`.

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

mod fence;
mod recall;
