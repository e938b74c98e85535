//! Integration tests of `scriptorium-session-dag` (one binary, one module per area).

mod import;
mod store;
