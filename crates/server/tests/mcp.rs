//! The MCP server driven by a real client: the official Python SDK (`tests/mcp/client.py`) spawns
//! the `mcp_stdio` example (with the session store beside the workspace) over stdio against a
//! workspace holding one topic, and checks every
//! `memory_*` tool end to end as a model meets them: the declared schemas are valid JSON Schemas
//! (`jsonschema`), every call is valid by its input schema and every answer by its output
//! schema, and arguments a schema rejects are refused with `INVALID_ARGUMENT` (see the script's
//! docstring for the sequence).
//!
//! The interpreter is `$SCRIPTORIUM_MCP_PYTHON`, else `<repo>/target/mcp-venv/bin/python`, which
//! `cargo xtask ci` creates with the pinned `mcp` and `jsonschema` packages. Without
//! one the trial is reported as ignored (not run), never as passed; with
//! `SCRIPTORIUM_REQUIRE_MCP=1` it fails.
//!
//! The example is built here with the cargo that runs the test, into the test's own target
//! directory and profile.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use scriptorium_testkit::{Arguments, Failed, Trial, fail, repo_root};

/// The environment variable naming the Python interpreter that has the `mcp` SDK.
const PYTHON_ENV: &str = "SCRIPTORIUM_MCP_PYTHON";
/// The environment variable that makes a missing interpreter a failure instead of "not run".
const REQUIRE_ENV: &str = "SCRIPTORIUM_REQUIRE_MCP";
/// The word of the fixture topic the client searches for.
const WORD: &str = "vegetable";
/// The trial's name.
const NAME: &str = "python_sdk_client_drives_every_memory_tool";

/// The venv the test looks for when `$SCRIPTORIUM_MCP_PYTHON` is not set.
fn default_python() -> PathBuf {
    repo_root().join("target").join("mcp-venv").join("bin").join("python")
}

/// The first interpreter that exists: `$SCRIPTORIUM_MCP_PYTHON`, then the default venv.
fn python() -> Option<PathBuf> {
    let configured = std::env::var_os(PYTHON_ENV).filter(|p| !p.is_empty()).map(PathBuf::from);
    configured.into_iter().chain([default_python()]).find(|p| p.is_file())
}

/// Builds the `mcp_stdio` example into this test's target directory and profile and returns
/// its path.
fn build_server() -> Result<PathBuf, Failed> {
    let exe = std::env::current_exe().map_err(fail)?;
    // <target dir>/<profile dir>/deps/<this test>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| fail(format!("unexpected test binary location {}", exe.display())))?;
    let target_dir = profile_dir.parent().ok_or_else(|| fail("no target directory"))?;
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let status = Command::new(env!("CARGO"))
        .current_dir(repo_root())
        .args(["build", "-q", "-p", "scriptorium-server", "--example", "mcp_stdio"])
        .args(["--profile", profile])
        .arg("--target-dir")
        .arg(target_dir)
        .status()
        .map_err(|e| fail(format!("running cargo: {e}")))?;
    if !status.success() {
        return Err(fail(format!("building the mcp_stdio example failed: {status}")));
    }
    let server = profile_dir.join("examples").join("mcp_stdio");
    if !server.is_file() {
        return Err(fail(format!("no example binary at {}", server.display())));
    }
    Ok(server)
}

/// Builds the fixture and the server, runs the Python client and checks its summary.
fn drive(python: &Path) -> Result<(), Failed> {
    let home = tempfile::tempdir().map_err(fail)?;
    let root = support::memory_with_topic(home.path());
    let server = build_server()?;
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("mcp").join("client.py");
    let output = Command::new(python)
        .arg(&client)
        .arg(&server)
        .arg(&root)
        .args(["--word", WORD, "--topic", support::TOPIC_PATH])
        .output()
        .map_err(|e| fail(format!("running {}: {e}", python.display())))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(fail(format!(
            "the MCP client failed ({}):\n{stdout}\n--- stderr ---\n{stderr}",
            output.status
        )));
    }
    let summary: serde_json::Value = serde_json::from_str(&stdout)
        .map_err(|e| fail(format!("the client's summary is not JSON ({e}): {stdout}")))?;
    if summary["ok"] != true || summary["revision_after"] == summary["revision_before"] {
        return Err(fail(format!("unexpected summary: {summary}")));
    }
    // Every tool was refused something its schema rejects, a record's speaker was a name, and
    // a forget removed the note's block.
    let refused = summary["invalid_calls_refused"].as_u64().unwrap_or(0);
    let speakers = summary["speakers"].as_array().map_or(0, Vec::len);
    let forgotten = summary["forgotten"].as_array().map_or(0, Vec::len);
    if refused < 8 || speakers == 0 || forgotten == 0 {
        return Err(fail(format!("the client checked too little: {summary}")));
    }
    eprintln!("MCP client summary: {summary}");
    Ok(())
}

/// The trial: run with an interpreter, failing without one when required, else ignored.
fn trial() -> Trial {
    match python() {
        Some(python) => Trial::test(NAME, move || drive(&python)),
        None => {
            let missing = format!(
                "no Python with the `mcp` SDK: set {PYTHON_ENV} or create {} \
                 (python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install \
                 'mcp>=2.3,<3' 'jsonschema>=4.23,<5')",
                default_python().display()
            );
            let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1");
            let test = Trial::test(NAME, move || Err(missing.into()));
            if required { test } else { test.with_ignored_flag(true).with_kind("needs-mcp-python") }
        }
    }
}

fn main() -> std::process::ExitCode {
    libtest_mimic::run(&Arguments::from_args(), vec![trial()]).exit_code()
}
