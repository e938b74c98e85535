//! `scriptorium import` tests.
