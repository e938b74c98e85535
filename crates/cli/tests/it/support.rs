//! Helpers for running the `scriptorium` binary in tests.

use std::path::Path;
use std::process::{Command, Output};

/// A home with an initialized workspace and the example archive (archived before any
/// transaction, as the runtime does).
pub(crate) fn home_with_sources() -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("a temp dir");
    let out = scriptorium(home.path(), &["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let archive = "sources/openprogram/_v2/garden-2024.md";
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/workspace");
    let target = home.path().join("memory").join(archive);
    std::fs::create_dir_all(target.parent().expect("parent")).expect("create sources");
    std::fs::copy(example.join(archive), target).expect("copy the archive");
    home
}

/// Runs the real `git` CLI in `dir`; panics unless it succeeds.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

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
