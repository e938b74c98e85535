//! The kill -9 supervisor, end to end through the `scriptorium` binary: `scriptorium edit`
//! processes that add a paragraph each are killed with SIGKILL at random points; after every
//! kill the next open recovers, and then every block ever reported installed is present, no
//! stage is left in `.scriptorium/txn/`, the tree parses clean, and the real `git` CLI finds a
//! clean repository whose HEAD carries the installed transaction's `Txn-Id`.
//!
//! `SCRIPTORIUM_CRASH_ITERATIONS` sets the number of kills (default 20, as in CI);
//! `SCRIPTORIUM_CRASH_SEED` replays a run. `cargo xtask crash --iterations N` runs it longer.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ARCHIVE: &str = "examples/workspace/sources/openprogram/_v2/garden-2024.md";

fn scriptorium(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    cmd.arg("--home").arg(home).env_remove("SCRIPTORIUM_HOME").env_remove("XDG_DATA_HOME");
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
}

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

/// The block IDs in `topics/` (every ` ^id` at the end of a line).
fn block_ids(memory: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(memory.join("topics/log.md")).unwrap_or_default();
    text.lines()
        .filter_map(|line| line.rsplit_once(" ^").map(|(_, id)| id.trim().to_owned()))
        .collect()
}

/// Checks every invariant after a kill; returns the installed transaction.
fn check(home: &Path, installed: &BTreeSet<String>) -> Result<String, String> {
    let memory = home.join("memory");
    // Opening recovers and brings git up to the installed transaction.
    let out = scriptorium(home).args(["status", "--json"]).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("status failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let status: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("status json: {e}"))?;
    if status["git"]["in_sync"] != true {
        return Err(format!("git is not in step after recovery: {status}"));
    }
    if status["diagnostics"] != 0 {
        return Err(format!("the recovered tree does not parse clean: {status}"));
    }
    // The tree the last install replaced (`spare`) is a cache for the next `begin`, no stage.
    let leftovers: Vec<_> = std::fs::read_dir(memory.join(".scriptorium/txn"))
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name())
                .filter(|name| name != "spare" && name != "spare.json")
                .collect()
        })
        .unwrap_or_default();
    if !leftovers.is_empty() {
        return Err(format!("stage leftovers after recovery: {leftovers:?}"));
    }
    let present = block_ids(&memory);
    let missing: Vec<_> = installed.difference(&present).collect();
    if !missing.is_empty() {
        return Err(format!("blocks reported installed are missing: {missing:?}"));
    }
    git(&memory, &["fsck", "--full", "--strict"])?;
    let txn = status["last_transaction"].as_str().unwrap_or_default().to_owned();
    let trailer = git(&memory, &["log", "-1", "--format=%(trailers:key=Txn-Id,valueonly)"])?;
    if !txn.is_empty() && trailer.trim() != txn {
        return Err(format!("HEAD's Txn-Id {:?} is not the installed {txn:?}", trailer.trim()));
    }
    Ok(txn)
}

fn run() -> Result<String, String> {
    let iterations: u64 = std::env::var("SCRIPTORIUM_CRASH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let seed =
        std::env::var("SCRIPTORIUM_CRASH_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(
            || SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1,
        );
    eprintln!("crash supervisor: {iterations} iterations, SCRIPTORIUM_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let init = scriptorium(home.path()).arg("init").output().map_err(|e| e.to_string())?;
    if !init.status.success() {
        return Err(format!("init failed: {}", String::from_utf8_lossy(&init.stderr)));
    }
    let memory = home.path().join("memory");
    let archive = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(ARCHIVE);
    std::fs::create_dir_all(memory.join("sources/openprogram/_v2")).map_err(|e| e.to_string())?;
    std::fs::copy(&archive, memory.join("sources/openprogram/_v2/garden-2024.md"))
        .map_err(|e| e.to_string())?;

    let mut installed = BTreeSet::new();
    let (mut killed, mut finished) = (0, 0);
    // Calibrate: how long one uninterrupted edit takes here.
    let mut typical = Duration::from_millis(40);
    for i in 0..iterations {
        let turn = ["u1", "u2", "u3", "a1", "a2"][(i % 5) as usize];
        // Each edit appends one paragraph to whatever is installed now.
        let base = std::fs::read_to_string(memory.join("topics/log.md"))
            .unwrap_or_else(|_| "# Log\n".to_owned());
        let candidate = format!(
            "{base}\nEntry {i} of the crash log, citing {turn}.[^e1]\n\n\
             [^e1]: Time: `2024-04-0{}`; Sources: [entry {i}](openprogram/garden-2024/{turn})\n",
            1 + i % 9
        );
        let draft = home.path().join("draft.md");
        std::fs::write(&draft, &candidate).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut child = scriptorium(home.path())
            .args(["edit", "topics/log.md", "--from"])
            .arg(&draft)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let delay = Duration::from_micros(rng.next() % (typical.as_micros() as u64 * 3 / 2 + 1));
        std::thread::sleep(delay);
        let exited = child.try_wait().map_err(|e| e.to_string())?.is_some();
        if !exited {
            child.kill().map_err(|e| e.to_string())?;
            killed += 1;
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if exited && out.status.success() {
            finished += 1;
            typical = (typical + start.elapsed()) / 2;
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if let Some(id) = line.trim().strip_prefix("new block ^") {
                    installed.insert(id.split_whitespace().next().unwrap_or_default().to_owned());
                }
            }
        }
        check(home.path(), &installed).map_err(|e| format!("after iteration {i}: {e}"))?;
    }
    Ok(format!(
        "{iterations} iterations: {killed} killed mid-edit, {finished} finished; {} blocks installed",
        block_ids(&memory).len()
    ))
}

fn main() -> ExitCode {
    match run() {
        Ok(summary) => {
            println!("crash supervisor: {summary}");
            println!("1 passed, 0 failed");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("crash supervisor FAILED: {err}");
            println!("0 passed, 1 failed");
            ExitCode::FAILURE
        }
    }
}
