//! Developer tasks for the Scriptorium workspace, run as `cargo xtask <task>`.
//!
//! - `ci`: the whole gate, in order: test data and the PostgreSQL server binaries present →
//!   `fmt --check` → `clippy -D warnings` (all targets) → tests → `writer-eval --check` (scripted,
//!   small slice) → `doc -D warnings` → `deps` → `tidy` → `examples`.
//! - `deps`: the allowed edges between our crates (see `ARCHITECTURE.md#code-map`); any other
//!   edge fails.
//! - `tidy`: the repository rules that a compiler cannot check (listed in `xtask/src/tidy.rs`).
//! - `examples`: the library examples (`examples/library/*`, `docs/library.md`) built offline and
//!   `--locked`, run against real workspaces, and the light ones' dependency trees checked (no
//!   tokio, axum, hyper, reqwest, postgres or rmcp); `ci` runs it last. `--update-locks` rewrites
//!   their lock files from the workspace's after our crates' dependencies change.
//! - `bench`: every criterion suite, then a JSON summary checked against the budgets.
//! - `recall`: the recall-quality harness on the LoCoMo dev split (recall_any/all@5 and @10,
//!   and the share of unrelated questions that return nothing), through the library and
//!   through `scriptorium search --top-k 5`.
//! - `snapshots [--accept]`: the snapshot suites (insta) of every package that has them; a
//!   changed snapshot fails and leaves a `.snap.new` beside it; with `--accept` the new
//!   snapshots replace the old ones, and the files that changed are listed for review.
//! - `gen-workspace --blocks N[k|m] --out DIR [--seed S]`: a generated memory workspace of N
//!   blocks in the OpenProgram layout (`generator.rs`; the benches and tests include the same
//!   generator), deterministic from the seed.
//! - `crash`: the kill supervisors, in release, for N iterations each: the transaction engine's
//!   and the binary's (`scriptorium edit` and `scriptorium write` killed at random points). CI
//!   runs a few as part of the tests; run many locally.
//! - `writer-eval --model <journal|scripted|command:…|openai:…|anthropic:…> [--slice
//!   small|full]`: the writer-quality harness on the LoCoMo dev split (`writer_eval/mod.rs`,
//!   `docs/writer-eval.md`); `ci` runs it with the scripted writer on the small slice, after
//!   the tests.
//!
//! `deps` and `tidy` also run as ordinary `#[test]`s, so plain `cargo test` enforces them.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};

mod bench;
mod deps;
mod examples;
mod gen_workspace;
mod generator;
mod tidy;
mod writer_eval;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("deps") => deps::check(&repo_root()).map(|()| println!("deps: ok")),
        Some("tidy") => tidy::check(&repo_root()).map(|()| println!("tidy: ok")),
        Some("examples") => examples::run(&repo_root(), &args[1..]),
        Some("bench") => bench::run(&repo_root(), &args[1..]),
        Some("crash") => crash(&args[1..]),
        Some("snapshots") => snapshots(&args[1..]),
        Some("recall") => recall(),
        Some("gen-workspace") => gen_workspace::run(&args[1..]),
        Some("writer-eval") => writer_eval::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|deps|tidy|bench [criterion args]|snapshots [--accept]|crash \
                 [--iterations N]|recall|gen-workspace --blocks N --out DIR [--seed S]|writer-eval \
                 --model M [--slice small|full]>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The repository root: the parent of this crate's directory.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives directly inside the repository")
        .to_path_buf()
}

/// The `cargo` that runs us (`$CARGO`), so toolchain overrides carry through.
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(repo_root());
    cmd
}

fn run_step(name: &str, mut cmd: Command) -> anyhow::Result<()> {
    eprintln!("==> {name}");
    let status = cmd.status().with_context(|| format!("could not start `{name}`"))?;
    if !status.success() {
        bail!("`{name}` failed ({status})");
    }
    Ok(())
}

/// `cargo xtask crash [--iterations N]`: the kill supervisors, longer than in CI.
fn crash(args: &[String]) -> anyhow::Result<()> {
    let iterations = match args {
        [] => "500".to_owned(),
        [flag, n] if flag == "--iterations" && n.parse::<u32>().is_ok() => n.clone(),
        _ => bail!("usage: cargo xtask crash [--iterations N]"),
    };
    let mut cmd = cargo();
    // Both supervisors: the engine's own (library calls) and the end-to-end one (the binary).
    cmd.args(["test", "--release", "--locked", "--test", "crash"])
        .args(["--package", "scriptorium-txn", "--package", "scriptorium-cli"])
        .env("SCRIPTORIUM_CRASH_ITERATIONS", &iterations);
    run_step(&format!("kill -9 supervisor, {iterations} iterations"), cmd)
}

/// The packages whose tests hold insta snapshots (`tests/**/snapshots/*.snap`).
const SNAPSHOT_PACKAGES: &[&str] = &[
    "scriptorium-topics-format",
    "scriptorium-txn",
    "scriptorium-views",
    "scriptorium-writer",
    "scriptorium-server",
    "scriptorium-redact",
];

/// `cargo xtask snapshots [--accept]`: runs the snapshot suites; with `--accept`, writes every
/// changed snapshot in place (`INSTA_UPDATE=always`) and lists the snapshot files that changed.
fn snapshots(args: &[String]) -> anyhow::Result<()> {
    let accept = match args {
        [] => false,
        [flag] if flag == "--accept" => true,
        _ => bail!("usage: cargo xtask snapshots [--accept]"),
    };
    if accept {
        // Pending `.snap.new` files of earlier checks are superseded by this run.
        remove_pending_snapshots(&repo_root())?;
    }
    let mut cmd = cargo();
    cmd.args(["test", "--locked"]);
    for package in SNAPSHOT_PACKAGES {
        cmd.args(["--package", package]);
    }
    // Checking: a mismatch fails and leaves `.snap.new` beside the snapshot. Accepting: the new
    // snapshot is written in place and the assertion passes (the listing below says what
    // changed).
    cmd.env("INSTA_UPDATE", if accept { "always" } else { "new" })
        .env("INSTA_FORCE_PASS", if accept { "1" } else { "0" });
    if std::env::var_os("SCRIPTORIUM_TEST_DATA").is_none_or(|d| d.is_empty()) {
        cmd.env("SCRIPTORIUM_TEST_DATA", data_dir()?);
    }
    let step = if accept { "snapshot suites, accepting changes" } else { "snapshot suites" };
    let result = run_step(step, cmd);
    let mut status = Command::new("git");
    status.current_dir(repo_root()).args(["status", "--porcelain", "--", "*.snap", "*.snap.new"]);
    let changed = status.output().context("running git status")?;
    let listing = String::from_utf8_lossy(&changed.stdout);
    if !listing.trim().is_empty() {
        eprintln!("snapshot files changed (review with `git diff`):\n{listing}");
    }
    result
}

/// Removes every `*.snap.new` under `dir` (not under `target/` or `.git/`).
fn remove_pending_snapshots(dir: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        if entry.file_type()?.is_dir() {
            if name != "target" && name != ".git" && name != "node_modules" {
                remove_pending_snapshots(&path)?;
            }
        } else if name.to_string_lossy().ends_with(".snap.new") {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

/// The third-party data directory: `$SCRIPTORIUM_TEST_DATA` or `../shared/data`.
fn data_dir() -> anyhow::Result<PathBuf> {
    let data = match std::env::var_os("SCRIPTORIUM_TEST_DATA") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join("..").join("shared").join("data"),
    };
    if !data.is_dir() {
        bail!(
            "third-party test data not found at {}: set SCRIPTORIUM_TEST_DATA to the shared data \
             directory (see README.md, \"Tests\")",
            data.display()
        );
    }
    data.canonicalize().with_context(|| format!("resolving {}", data.display()))
}

/// `cargo xtask recall`: recall@k on LoCoMo and the share of unrelated questions answered with
/// nothing, through the library (with a sweep of the relevance floor) and through the real
/// `scriptorium search --top-k 5`.
fn recall() -> anyhow::Result<()> {
    let data = data_dir()?;
    let mut build = cargo();
    build.args(["build", "--release", "--locked", "-p", "scriptorium-cli"]);
    run_step("cargo build --release -p scriptorium-cli", build)?;
    let mut cmd = cargo();
    cmd.args(["run", "--release", "--locked", "-p", "scriptorium-search", "--example", "recall"])
        .arg("--")
        .arg(&data)
        .arg("--cli")
        .arg(repo_root().join("target/release/scriptorium"));
    run_step("recall harness (LoCoMo dev split)", cmd)
}

/// The version range of the official MCP Python SDK the MCP test drives the server with.
const MCP_SDK: &str = "mcp>=2.3,<3";
/// The version range of `jsonschema`, which the MCP test validates every declared schema and
/// every structured result with.
const JSONSCHEMA: &str = "jsonschema>=4.23,<5";

/// The interpreter of `target/mcp-venv` (the MCP test's real client), with the MCP Python SDK
/// and `jsonschema` from PyPI. The venv is (re)installed when a pinned package is missing or
/// outside its range, so changing a pin here updates an existing venv.
fn mcp_python(root: &Path) -> anyhow::Result<PathBuf> {
    let venv = root.join("target/mcp-venv");
    let python = venv.join("bin/python");
    let pins = [MCP_SDK, JSONSCHEMA];
    if python.is_file() && pins_satisfied(&python, &pins) {
        return Ok(python);
    }
    if !python.is_file() {
        let mut create = Command::new("python3");
        create.arg("-m").arg("venv").arg(&venv);
        run_step("python3 -m venv target/mcp-venv (the MCP test client)", create)?;
    }
    let mut install = Command::new(venv.join("bin/pip"));
    install.args(["install", "--quiet"]).args(pins);
    run_step("pip install the MCP Python SDK and jsonschema", install)
        .context("the MCP test needs the official Python SDK and jsonschema from PyPI")?;
    Ok(python)
}

/// Whether the interpreter has every pinned requirement (`name>=a,<b`) within its range, asked
/// of the venv's own `importlib.metadata` and `packaging` (pip's copy when it has no other).
fn pins_satisfied(python: &Path, pins: &[&str]) -> bool {
    const CHECK: &str = r#"
import sys
from importlib.metadata import version, PackageNotFoundError
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
try:
    ok = all(Requirement(r).specifier.contains(version(Requirement(r).name)) for r in sys.argv[1:])
except (PackageNotFoundError, ImportError):
    ok = False
sys.exit(0 if ok else 1)
"#;
    Command::new(python)
        .arg("-c")
        .arg(CHECK)
        .args(pins)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The browser test's Node dependencies (`playwright-core`, pinned by its lock file), installed
/// with `npm ci` when missing. Returns whether the browser test is required: on CI (`CI` set,
/// where `.ci/run` installs Debian's chromium) or wherever `/usr/bin/chromium` exists; elsewhere
/// the test reports itself as not run.
fn browser_deps(root: &Path) -> anyhow::Result<bool> {
    let dir = root.join("crates/cli/tests/browser");
    let required = std::env::var_os("CI").is_some() || Path::new("/usr/bin/chromium").exists();
    if !required || dir.join("node_modules/playwright-core").is_dir() {
        return Ok(required);
    }
    let mut npm = Command::new("npm");
    npm.arg("ci").arg("--prefix").arg(&dir).arg("--no-audit").arg("--no-fund");
    run_step("npm ci (the browser test's playwright-core)", npm)?;
    Ok(true)
}

/// The real agent CLIs of the end-to-end hook tests (`@anthropic-ai/claude-code` and
/// `@openai/codex`, pinned by their lock file), installed with `npm ci` when missing. Returns
/// the `claude` and `codex` binaries.
fn agent_deps(root: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = root.join("crates/cli/tests/agents");
    let bin = dir.join("node_modules/.bin");
    let (claude, codex) = (bin.join("claude"), bin.join("codex"));
    if claude.exists() && codex.exists() {
        return Ok((claude, codex));
    }
    let mut npm = Command::new("npm");
    npm.arg("ci").arg("--prefix").arg(&dir).arg("--no-audit").arg("--no-fund");
    run_step("npm ci (the real Claude Code and Codex CLIs of the hook tests)", npm)
        .context("the hook tests drive the real agent CLIs from the npm registry")?;
    Ok((claude, codex))
}

/// The PostgreSQL server binaries the session store's tests run a scratch cluster with: the
/// directory `crates/testkit/src/pg.rs` would pick (`$SCRIPTORIUM_PG_BIN`, else the newest
/// `/usr/lib/postgresql/<version>/bin`, else `PATH`).
fn pg_bin_dir() -> anyhow::Result<PathBuf> {
    let has = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let found = match std::env::var_os("SCRIPTORIUM_PG_BIN").filter(|d| !d.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)).filter(|d| has(d)),
        None => {
            let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let version = e.file_name().to_str()?.parse::<u32>().ok()?;
                    Some((version, e.path().join("bin")))
                })
                .filter(|(_, bin)| has(bin))
                .collect();
            versions.sort();
            versions.pop().map(|(_, bin)| bin).or_else(|| {
                std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                    .find(|dir| has(dir))
            })
        }
    };
    found.ok_or_else(|| {
        anyhow::anyhow!(
            "PostgreSQL server binaries (initdb, pg_ctl) not found: the session store's tests \
             run a real server; install Debian's postgresql package (.ci/run does) or set \
             SCRIPTORIUM_PG_BIN to their directory"
        )
    })
}

fn ci() -> anyhow::Result<()> {
    let root = repo_root();
    let data = data_dir()?;
    let pg_bin = pg_bin_dir()?;

    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    run_step("cargo fmt --check", fmt)?;

    let mut clippy = cargo();
    clippy.args(["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"]);
    run_step("cargo clippy", clippy)?;

    let python = mcp_python(&root)?;
    let browser = browser_deps(&root)?;
    let (claude, codex) = agent_deps(&root)?;
    let mut test = cargo();
    test.args(["test", "--workspace", "--locked"])
        .env("SCRIPTORIUM_TEST_DATA", &data)
        .env("SCRIPTORIUM_REQUIRE_TEST_DATA", "1")
        .env("SCRIPTORIUM_MCP_PYTHON", &python)
        .env("SCRIPTORIUM_REQUIRE_MCP", "1")
        .env("SCRIPTORIUM_REQUIRE_BROWSER", if browser { "1" } else { "0" })
        .env("SCRIPTORIUM_CLAUDE", &claude)
        .env("SCRIPTORIUM_CODEX", &codex)
        .env("SCRIPTORIUM_REQUIRE_AGENTS", "1")
        .env("SCRIPTORIUM_PG_BIN", &pg_bin)
        .env("SCRIPTORIUM_REQUIRE_POSTGRES", "1")
        .env("INSTA_UPDATE", "no")
        .env("CI", "true");
    run_step("cargo test", test)?;

    // The writer-quality harness, on its own scripted writer and a small slice, through the
    // debug binary the tests just built: proves the harness still sees what it measures.
    eprintln!("==> writer-eval (scripted, small slice)");
    writer_eval::ci_check(&bench::target_dir(&root).join("debug").join("scriptorium"))?;

    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps", "--locked"]).env("RUSTDOCFLAGS", "-D warnings");
    run_step("cargo doc", doc)?;

    eprintln!("==> deps");
    deps::check(&root)?;
    eprintln!("==> tidy");
    tidy::check(&root)?;
    eprintln!("==> library examples");
    examples::check(&root, &data)?;
    eprintln!("ci: all gates passed");
    Ok(())
}
