//! Helpers for running the `scriptorium` binary in tests.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `scriptorium` with `args` and `--home home`, with a clean environment for the variables
/// Scriptorium reads.
pub(crate) fn scriptorium(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .expect("the scriptorium binary runs")
}
