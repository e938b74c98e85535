//! End-to-end tests of the `scriptorium` binary across crates; the tests live in `tests/it/`.
