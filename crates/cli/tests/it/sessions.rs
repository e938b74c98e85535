//! `scriptorium sessions` tests.
