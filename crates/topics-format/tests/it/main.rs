//! Integration tests of `scriptorium-topics-format` (one binary, one module per area).

mod archive;
mod forget;
mod topics;
