//! Integration tests of `scriptorium-markers` (one binary, one module per area).

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

mod forget;
mod pending;
mod plan;
mod support;
