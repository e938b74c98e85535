//! `scriptorium check` tests.
