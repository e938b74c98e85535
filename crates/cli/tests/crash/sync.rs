//! The `sync` supervisor: two homes and a bare remote; each iteration both homes note a fact,
//! the first syncs, and the second's `scriptorium sync` is killed with SIGKILL at a random
//! point. After every kill the next open recovers: the home is at its old or its merged
//! revision (every fact it had is there, nothing half-merged), git is in step and the real git
//! CLI finds a clean work tree and a sound repository; then a sync run to the end takes in
//! everything. At the end both homes hold the same memory at the same commit.
//!
//! `SCRIPTORIUM_CRASH_SYNC_ITERATIONS` iterations (default 12, as in CI).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::{Outcome, Rng, env_number, git, scriptorium, stage_leftovers};

/// The facts of `topics/notes.md`.
fn facts(home: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(home.join("memory/topics/notes.md")).unwrap_or_default();
    text.lines()
        .filter_map(|line| line.split_once(" is noted.").map(|(fact, _)| fact.to_owned()))
        .collect()
}

/// The invariants after a kill: `status` recovers with git in step, no stage is left, the
/// work tree is clean and the repository sound.
fn check(home: &Path) -> Result<(), String> {
    let out = scriptorium(home).args(["status", "--json"]).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("status failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let status: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("status json: {e}"))?;
    if status["git"]["in_sync"] != true || status["diagnostics"] != 0 {
        return Err(format!("not recovered: {status}"));
    }
    let memory = home.join("memory");
    let stages = stage_leftovers(&memory);
    if !stages.is_empty() {
        return Err(format!("stage leftovers: {stages:?}"));
    }
    let porcelain = git(&memory, &["status", "--porcelain"])?;
    if !porcelain.is_empty() {
        return Err(format!("`git status --porcelain`:\n{porcelain}"));
    }
    git(&memory, &["fsck", "--full", "--strict"]).map(drop)
}

/// Runs `scriptorium sync` on `home` until it finishes (75, retryable, runs it again).
fn sync_to_the_end(home: &Path, remote: &Path) -> Result<Duration, String> {
    for _ in 0..20 {
        let start = Instant::now();
        let out = scriptorium(home).arg("sync").arg("--remote").arg(remote).output();
        let out = out.map_err(|e| e.to_string())?;
        match out.status.code() {
            Some(0) => return Ok(start.elapsed()),
            Some(75) => {}
            code => {
                return Err(format!(
                    "sync exited {code:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    Err("sync stayed retryable 20 times".into())
}

fn note(home: &Path, fact: &str) -> Result<(), String> {
    let out = scriptorium(home)
        .args(["note", &format!("{fact} is noted.")])
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("note failed: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// Runs the supervisor with the kill schedule of `seed`.
pub(crate) fn run(seed: u64) -> Outcome {
    match supervise(seed) {
        Ok(summary) => Outcome::Passed(summary),
        Err(err) => Outcome::Failed(err),
    }
}

fn supervise(seed: u64) -> Result<String, String> {
    let iterations = env_number("SCRIPTORIUM_CRASH_SYNC_ITERATIONS").unwrap_or(12);
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let remote = dir.path().join("remote.git");
    std::process::Command::new("git")
        .args(["init", "--quiet", "--bare", "--initial-branch=main"])
        .arg(&remote)
        .status()
        .map_err(|e| e.to_string())?;
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for home in [&a, &b] {
        let out = scriptorium(home).arg("init").output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("init failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
    }
    let mut typical = Duration::from_millis(200);
    let (mut killed, mut finished) = (0, 0);
    let mut everything = BTreeSet::new();
    for i in 0..iterations {
        let (fact_a, fact_b) = (format!("Fact a{i}"), format!("Fact b{i}"));
        note(&a, &fact_a)?;
        sync_to_the_end(&a, &remote)?;
        note(&b, &fact_b)?;
        everything.extend([fact_a.clone(), fact_b.clone()]);
        let before = facts(&b);
        let mut child = scriptorium(&b)
            .arg("sync")
            .arg("--remote")
            .arg(&remote)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_micros(rng.below(typical.as_micros() as u64 * 3 / 2)));
        if child.try_wait().map_err(|e| e.to_string())?.is_none() {
            child.kill().map_err(|e| e.to_string())?;
            killed += 1;
        } else {
            finished += 1;
        }
        child.wait().map_err(|e| e.to_string())?;
        check(&b).map_err(|e| format!("iteration {i}, after the kill: {e}"))?;
        // Old or merged: everything b had is there, and what it has beyond is a's.
        let now = facts(&b);
        if !before.is_subset(&now) {
            return Err(format!("iteration {i}: b lost {:?}", before.difference(&now)));
        }
        typical = (typical + sync_to_the_end(&b, &remote)?) / 2;
        check(&b).map_err(|e| format!("iteration {i}, after the sync: {e}"))?;
        let merged = facts(&b);
        if merged != everything {
            return Err(format!(
                "iteration {i}: after a full sync b has {merged:?}, expected {everything:?}"
            ));
        }
    }
    sync_to_the_end(&a, &remote)?;
    check(&a)?;
    if facts(&a) != facts(&b) {
        return Err("the two homes differ at the end".into());
    }
    let head = |home: &Path| git(&home.join("memory"), &["rev-parse", "HEAD"]);
    if head(&a)? != head(&b)? {
        return Err("the two homes end on different commits".into());
    }
    Ok(format!(
        "{iterations} iterations: {killed} syncs killed, {finished} finished first; {} facts on both homes",
        everything.len()
    ))
}
