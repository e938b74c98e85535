//! Test helpers shared by the crates' test suites: where the third-party test data lives, a
//! runner for data-driven suites, and a sorted directory listing ([`file_names`]).
//!
//! Key decision: a data-driven suite whose data is absent is reported as *not run* (an ignored
//! trial in the libtest output), never as passed. `cargo xtask ci` sets
//! `SCRIPTORIUM_REQUIRE_TEST_DATA=1`, which turns a missing data directory into a failure.
//!
//! The data directory is `$SCRIPTORIUM_TEST_DATA`, or `../shared/data` beside the repository.
//!
//! # Limitations
//!
//! Dev-dependency only: no library crate may depend on it for normal builds.
//!
//! # Example
//!
//! A test binary with `harness = false`:
//!
//! ```no_run
//! use scriptorium_testkit::{data_trial, run};
//!
//! fn main() -> std::process::ExitCode {
//!     run(vec![data_trial("locomo_exists", |data| {
//!         assert!(data.join("locomo").is_dir());
//!         Ok(())
//!     })])
//! }
//! ```

pub mod pg;
pub mod synthetic;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use libtest_mimic::{Arguments, Failed, Trial};

/// The environment variable naming the third-party test data directory.
pub const DATA_ENV: &str = "SCRIPTORIUM_TEST_DATA";
/// The environment variable that makes a missing data directory a failure instead of "not run".
pub const REQUIRE_ENV: &str = "SCRIPTORIUM_REQUIRE_TEST_DATA";

/// The repository root (the directory holding the workspace `Cargo.toml`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("testkit lives at crates/testkit inside the repository")
        .to_path_buf()
}

/// The configured data directory, whether or not it exists.
pub fn data_dir_setting() -> PathBuf {
    match std::env::var_os(DATA_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join("..").join("shared").join("data"),
    }
}

/// The directories of real agent transcripts in the test data (Claude Code, Codex and pi), as
/// `scriptorium import auto` reads them: every data-driven suite over "every real transcript"
/// uses this list.
pub const REAL_TRANSCRIPTS: [&str; 7] = [
    "claude-code-log/real_projects",
    "codemie-code/claude",
    "agent-history/real_sessions/claude",
    "codemie-code/codex",
    "agent-history/real_sessions/codex",
    "pi-mono",
    "agent-history/real_sessions/pi",
];

/// The data directory if it exists.
pub fn data_dir() -> Option<PathBuf> {
    let dir = data_dir_setting();
    dir.is_dir().then_some(dir)
}

/// Whether a missing data directory must fail the suite (set by `cargo xtask ci`).
pub fn data_required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// A trial that needs the third-party data directory: ignored (reported as not run) when the
/// data is absent, failing when it is absent and required, and otherwise run with the directory.
pub fn data_trial<F>(name: impl Into<String>, test: F) -> Trial
where
    F: FnOnce(&Path) -> Result<(), Failed> + Send + 'static,
{
    let name = name.into();
    match data_dir() {
        Some(dir) => Trial::test(name, move || test(&dir)),
        None if data_required() => Trial::test(name, || {
            Err(format!(
                "test data missing at {}: set {DATA_ENV} to the shared data directory",
                data_dir_setting().display()
            )
            .into())
        }),
        None => Trial::test(name, || Ok(())).with_ignored_flag(true).with_kind("needs-test-data"),
    }
}

/// Runs trials with the libtest command-line conventions and returns the process exit code.
pub fn run(trials: Vec<Trial>) -> ExitCode {
    let args = Arguments::from_args();
    if data_dir().is_none() && !data_required() {
        eprintln!(
            "note: test data not found at {} ({DATA_ENV}); data-driven trials are reported as ignored (not run)",
            data_dir_setting().display()
        );
    }
    libtest_mimic::run(&args, trials).exit_code()
}

/// The names of the entries of `dir`, sorted (what a test asserts a directory holds).
///
/// # Panics
///
/// When `dir` cannot be listed.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Turns any displayable error into a trial failure.
pub fn fail(err: impl std::fmt::Display) -> Failed {
    Failed::from(err.to_string())
}
