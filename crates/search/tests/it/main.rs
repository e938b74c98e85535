//! Integration tests of `scriptorium-search`.
