//! The kill supervisors, end to end through the `scriptorium` binary (a `harness = false`
//! test). Three supervisors run, each reported as its own trial:
//!
//! - `edit` ([`edit`]): `scriptorium edit` processes that add a paragraph each are killed with
//!   SIGKILL at random points; every block ever reported installed must survive.
//! - `sync` ([`sync`]): `scriptorium sync` of one of two homes sharing a bare remote is
//!   killed (SIGKILL) at random points; the home stays at its old or merged revision, and a
//!   sync run to the end brings both homes to the same memory and commit.
//! - `write` ([`write`]): a real Claude Code project is imported and `scriptorium write --all
//!   --force` is killed (SIGKILL, SIGTERM, SIGINT) at random points and run again until it
//!   finishes; the result must equal an uninterrupted run byte for byte, and the session
//!   markers must match. It needs the third-party test data and reports itself as not run
//!   without it (a failure with `SCRIPTORIUM_REQUIRE_TEST_DATA=1`).
//!
//! After every kill, `scriptorium status --json` recovers, and then no stage is left in
//! `.scriptorium/txn/`, the tree parses clean, git is in step with the installed transaction,
//! and the real `git` CLI finds a clean work tree (`git status --porcelain` prints nothing) and
//! a sound repository (`git fsck --full --strict`) whose HEAD carries the installed
//! transaction's `Txn-Id`.
//!
//! `SCRIPTORIUM_CRASH_ITERATIONS` sets the number of iterations of each supervisor (default 20
//! edits; the write supervisor's own default is smaller, see [`write`], and
//! `SCRIPTORIUM_CRASH_WRITE_ITERATIONS` overrides it); `SCRIPTORIUM_CRASH_SEED` replays a run.
//! A name given on the command line runs only the supervisors whose name contains it.
//! `cargo xtask crash --iterations N` runs them longer, in release.

mod edit;
mod sync;
mod write;

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{SystemTime, UNIX_EPOCH};

/// The `scriptorium` binary under test, on `home`, blind to the caller's environment.
fn scriptorium(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    cmd.arg("--home")
        .arg(home)
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("SCRIPTORIUM_MEMORY_BACKEND")
        .env_remove("SCRIPTORIUM_MODEL");
    cmd
}

/// A small deterministic generator (xorshift), so a failing run can be replayed by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..=max`.
    fn below(&mut self, max: u64) -> u64 {
        self.next() % (max + 1)
    }
}

/// Runs the real `git` CLI in `dir`; its stdout, or why it failed.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("git {args:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A number from the environment, if set.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The invariants every supervisor checks after a kill. Runs `scriptorium status --json` (which
/// recovers and catches git up) and returns its document.
fn check_recovered(home: &Path) -> Result<serde_json::Value, String> {
    let memory = home.join("memory");
    let out = scriptorium(home).args(["status", "--json"]).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "status (recovery) failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let status: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("status json: {e}"))?;
    if status["git"]["in_sync"] != true {
        return Err(format!("git is not in step after recovery: {status}"));
    }
    if status["diagnostics"] != 0 {
        return Err(format!("the recovered tree does not parse clean: {status}"));
    }
    let stages = stage_leftovers(&memory);
    if !stages.is_empty() {
        return Err(format!("stage leftovers after recovery: {stages:?}"));
    }
    let porcelain = git(&memory, &["status", "--porcelain"])?;
    if !porcelain.is_empty() {
        return Err(format!("`git status --porcelain` after recovery:\n{porcelain}"));
    }
    git(&memory, &["fsck", "--full", "--strict"])?;
    let txn = status["last_transaction"].as_str().unwrap_or_default();
    let trailer = git(&memory, &["log", "-1", "--format=%(trailers:key=Txn-Id,valueonly)"])?;
    if !txn.is_empty() && trailer.trim() != txn {
        return Err(format!("HEAD's Txn-Id {:?} is not the installed {txn:?}", trailer.trim()));
    }
    Ok(status)
}

/// The entries of `.scriptorium/txn/` that are stages: everything but the `spare` directory,
/// which is a cache of the tree the last install replaced (see `crates/txn`), its manifest,
/// and the empty `spare-stage` directory the next `begin` makes its stage.
fn stage_leftovers(memory: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(memory.join(".scriptorium/txn")) else { return Vec::new() };
    dir.flatten()
        // The tree the last install replaced (`spare`, with its manifest) is a cache for the
        // next `begin`, no stage.
        .filter(|e| {
            let name = e.file_name();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            let empty = || std::fs::read_dir(e.path()).is_ok_and(|mut d| d.next().is_none());
            !(name == "spare" && is_dir)
                && name != "spare.json"
                && !(name == "spare-stage" && is_dir && empty())
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// How one supervisor ended.
enum Outcome {
    Passed(String),
    Failed(String),
    /// Its data is absent (and not required): not run, never counted as passed.
    NotRun(String),
}

/// A supervisor: runs with the kill schedule of a seed.
type Supervisor = fn(u64) -> Outcome;

#[expect(clippy::disallowed_methods, reason = "seeds the kill schedule")]
fn main() -> ExitCode {
    let seed = env_number("SCRIPTORIUM_CRASH_SEED").unwrap_or_else(|| {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1
    });
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    eprintln!("crash supervisors: SCRIPTORIUM_CRASH_SEED={seed}");
    let supervisors: [(&str, Supervisor); 3] =
        [("edit", edit::run), ("sync", sync::run), ("write", write::run)];
    let (mut passed, mut failed, mut not_run, mut filtered) = (0, 0, 0, 0);
    for (name, supervise) in supervisors {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            filtered += 1;
            continue;
        }
        match supervise(seed) {
            Outcome::Passed(summary) => {
                println!("crash supervisor {name}: ok: {summary}");
                passed += 1;
            }
            Outcome::Failed(err) => {
                println!("crash supervisor {name}: FAILED (SCRIPTORIUM_CRASH_SEED={seed}): {err}");
                failed += 1;
            }
            Outcome::NotRun(why) => {
                println!("crash supervisor {name}: not run: {why}");
                not_run += 1;
            }
        }
    }
    let mut summary = format!("{passed} passed, {failed} failed");
    if not_run > 0 {
        summary.push_str(&format!(", {not_run} not run"));
    }
    if filtered > 0 {
        summary.push_str(&format!(", {filtered} filtered out"));
    }
    println!("{summary}");
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
