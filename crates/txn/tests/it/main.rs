//! Integration tests of `scriptorium-txn` (one binary, one module per area).

mod change;
mod pipeline;
mod validate;
