//! Integration tests of `scriptorium-search`.

mod fence;
mod recall;
