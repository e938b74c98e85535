//! Integration tests of `scriptorium-views`.

mod common;
mod core;
mod views;
mod write;
