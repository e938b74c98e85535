//! Integration tests of `scriptorium-txn` (one binary, one module per area).

mod pipeline;
mod validate;
