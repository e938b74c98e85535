//! Integration tests of `scriptorium-views`.
