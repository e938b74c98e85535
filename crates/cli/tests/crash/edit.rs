//! The `edit` supervisor: `scriptorium edit` processes that add a paragraph each are killed
//! with SIGKILL at random points; after every kill the next open recovers, and then every block
//! ever reported installed is present and [`check_recovered`]'s invariants hold.
//!
//! `SCRIPTORIUM_CRASH_ITERATIONS` edits (default 20, as in CI).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::{Outcome, Rng, check_recovered, env_number, scriptorium};

const ARCHIVE: &str = "examples/workspace/sources/openprogram/_v2/garden-2024.md";

/// The block IDs in `topics/` (every ` ^id` at the end of a line).
fn block_ids(memory: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(memory.join("topics/log.md")).unwrap_or_default();
    text.lines()
        .filter_map(|line| line.rsplit_once(" ^").map(|(_, id)| id.trim().to_owned()))
        .collect()
}

/// Checks every invariant after a kill.
fn check(home: &Path, installed: &BTreeSet<String>) -> Result<(), String> {
    check_recovered(home)?;
    let present = block_ids(&home.join("memory"));
    let missing: Vec<_> = installed.difference(&present).collect();
    if !missing.is_empty() {
        return Err(format!("blocks reported installed are missing: {missing:?}"));
    }
    Ok(())
}

/// Runs the supervisor with the kill schedule of `seed`.
pub(crate) fn run(seed: u64) -> Outcome {
    match supervise(seed) {
        Ok(summary) => Outcome::Passed(summary),
        Err(err) => Outcome::Failed(err),
    }
}

fn supervise(seed: u64) -> Result<String, String> {
    let iterations = env_number("SCRIPTORIUM_CRASH_ITERATIONS").unwrap_or(20);
    let mut rng = Rng(seed);
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let memory = home.path().join("memory");
    // The archive the entries cite is there before `init`, whose first commit takes it: git
    // commits what transactions install and archive, not files put there by hand.
    let archive = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(ARCHIVE);
    std::fs::create_dir_all(memory.join("sources/openprogram/_v2")).map_err(|e| e.to_string())?;
    std::fs::copy(&archive, memory.join("sources/openprogram/_v2/garden-2024.md"))
        .map_err(|e| e.to_string())?;
    let init = scriptorium(home.path()).arg("init").output().map_err(|e| e.to_string())?;
    if !init.status.success() {
        return Err(format!("init failed: {}", String::from_utf8_lossy(&init.stderr)));
    }
    let mut installed = BTreeSet::new();
    check(home.path(), &installed).map_err(|e| format!("after init: {e}"))?;

    let draft = home.path().join("draft.md");
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
        std::fs::write(&draft, &candidate).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut child = scriptorium(home.path())
            .args(["edit", "topics/log.md", "--from"])
            .arg(&draft)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let delay = Duration::from_micros(rng.below(typical.as_micros() as u64 * 3 / 2));
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
