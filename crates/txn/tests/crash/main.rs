//! The kill -9 supervisor (sled's crash harness): this binary re-executes itself as a child that
//! commits transactions in a loop (each adds a record with a new block to one of four topic
//! files and, after `install` returned, appends the block ID to a log), kills it with SIGKILL at
//! a random moment, reopens the workspace (recovery) and checks the invariants:
//!
//! - every block ID the child logged as installed is in the live tree;
//! - no `.scriptorium/txn/` entry and no intent record remain;
//! - the tree parses strictly and is exactly what the revision record describes.
//!
//! Iterations: `SCRIPTORIUM_CRASH_ITERATIONS` (default 20; `cargo xtask crash --iterations N`
//! runs more). The seed of the kill schedule is printed; `SCRIPTORIUM_CRASH_SEED` replays it.

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use scriptorium_topics_format::source::{ArchiveRecord, ArchiveResolver};
use scriptorium_topics_format::{TopicFile, parse_tree};
use scriptorium_txn::{BeginOptions, LiveSources, LockTimeout, RealFs, Workspace};

const CHILD_ENV: &str = "SCRIPTORIUM_CRASH_CHILD_ROOT";
const ITERATIONS_ENV: &str = "SCRIPTORIUM_CRASH_ITERATIONS";
const SEED_ENV: &str = "SCRIPTORIUM_CRASH_SEED";

fn main() -> ExitCode {
    // libtest-style flags (`--list`, `--format terse`) from `cargo test` are accepted and ignored,
    // except `--list`, which must print nothing for a harness-less test.
    if std::env::args().any(|a| a == "--list") {
        return ExitCode::SUCCESS;
    }
    if let Some(root) = std::env::var_os(CHILD_ENV) {
        return child(&PathBuf::from(root));
    }
    match supervise() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("crash test FAILED: {message}");
            ExitCode::FAILURE
        }
    }
}

fn log_path(root: &Path) -> PathBuf {
    root.parent().map_or_else(|| root.join("installed.log"), |p| p.join("installed.log"))
}

/// Child role: commit forever; the supervisor kills it.
#[expect(clippy::disallowed_methods, reason = "seeds the kill schedule")]
fn child(root: &Path) -> ExitCode {
    let Ok(ws) = Workspace::open(root) else {
        return ExitCode::FAILURE;
    };
    let opened = std::fs::OpenOptions::new().create(true).append(true).open(log_path(root));
    let Ok(mut log) = opened else {
        return ExitCode::FAILURE;
    };
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    for i in 0u64.. {
        let result = (|| -> scriptorium_txn::Result<Vec<String>> {
            let mut staged = ws.begin(BeginOptions::default())?;
            let path = format!("topics/crash/f{}.md", i % 4);
            let text = staged.read_file(&path)?.unwrap_or_else(|| format!("# Crash {}\n", i % 4));
            let fact = format!("Crash fact {nanos}-{i} holds.");
            staged.write_file(&path, &add_record(&text, &fact))?;
            let installed = staged.validate()?.install()?;
            Ok(installed.block_ids.into_values().map(String::from).collect())
        })();
        match result {
            Ok(ids) => {
                for id in ids {
                    if writeln!(log, "{id}").is_err() {
                        return ExitCode::FAILURE;
                    }
                }
            }
            Err(e) => {
                eprintln!("child: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// Inserts a record before the first footnote definition and its definition at the end.
fn add_record(text: &str, fact: &str) -> String {
    let (head, defs) = match text.find("\n[^") {
        Some(at) => text.split_at(at + 1),
        None => (text, ""),
    };
    let mut out = head.trim_end().to_owned();
    out.push_str(&format!("\n\n{fact}[^e1]\n\n"));
    out.push_str(defs);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("[^e1]: Time: `2024-04-02`; Sources: [crash](openprogram/crash/u1)\n");
    out
}

struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below.max(1)
    }
}

#[expect(clippy::disallowed_methods, reason = "seeds the kill schedule")]
fn supervise() -> Result<(), String> {
    let iterations: u64 =
        std::env::var(ITERATIONS_ENV).ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let seed: u64 =
        std::env::var(SEED_ENV).ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
        });
    println!("crash: {iterations} iterations, seed {seed} ({SEED_ENV} replays it)");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = dir.path().join("memory");
    let ws = Workspace::init(&root).map_err(|e| e.to_string())?;
    let mut record = ArchiveRecord::new("openprogram", "crash", "u1", 1, "user", "Crash source.");
    record.timestamp = Some("2024-04-02T09:14:00+02:00".into());
    ws.archive_sources(&[record], LockTimeout::DEFAULT).map_err(|e| e.to_string())?;
    drop(ws);

    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut logged_total = 0;
    for iteration in 0..iterations {
        let mut child = Command::new(&exe)
            .env(CHILD_ENV, &root)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_millis(30 + rng.next(400)));
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("iteration {iteration}: the child exited early: {status}"));
        }
        child.kill().map_err(|e| e.to_string())?; // SIGKILL
        child.wait().map_err(|e| e.to_string())?;
        logged_total = check(&root).map_err(|e| format!("iteration {iteration}: {e}"))?;
    }
    println!("crash: ok, {logged_total} installed blocks survived {iterations} kills");
    if iterations >= 5 && logged_total == 0 {
        return Err("the child never installed anything".to_owned());
    }
    Ok(())
}

/// Opens (recovers) and checks the invariants; returns the number of logged blocks.
fn check(root: &Path) -> Result<usize, String> {
    let ws = Workspace::open(root).map_err(|e| format!("open: {e}"))?;
    let leftovers: Vec<String> = std::fs::read_dir(root.join(".scriptorium/txn"))
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // The tree the last install replaced is a cache for the next `begin`, not a stage.
        .filter(|name| name != "spare" && name != "spare.json" && name != "spare-stage")
        .collect();
    if !leftovers.is_empty() {
        return Err(format!("stage leftovers: {leftovers:?}"));
    }
    if root.join(".scriptorium/intent.json").exists() {
        return Err("intent record left".to_owned());
    }
    let state = ws.revision_state().map_err(|e| e.to_string())?;
    if state.topics_edited_outside || state.sources_changed_outside {
        return Err(format!("the tree is not the recorded revision: {state:?}"));
    }

    let mut files = Vec::new();
    let crash_dir = root.join("topics/crash");
    if crash_dir.exists() {
        for entry in std::fs::read_dir(&crash_dir).map_err(|e| e.to_string())?.flatten() {
            let text = std::fs::read_to_string(entry.path()).map_err(|e| e.to_string())?;
            files.push(TopicFile::new(
                format!("crash/{}", entry.file_name().to_string_lossy()),
                text,
            ));
        }
    }
    let resolver =
        ArchiveResolver::new(LiveSources::new(std::sync::Arc::new(RealFs), root.to_path_buf()));
    let parsed = parse_tree(&files, &resolver);
    if !parsed.diagnostics.is_empty() {
        return Err(format!("the tree does not parse: {:?}", parsed.diagnostics));
    }
    let present: BTreeSet<&str> = parsed.units.iter().map(|u| u.memory_id.as_str()).collect();
    let log = std::fs::read_to_string(log_path(root)).unwrap_or_default();
    // A kill can tear the last line of the log (written after install): skip an unterminated tail.
    let complete = log.rfind('\n').map_or("", |end| &log[..end]);
    let logged: Vec<&str> = complete.lines().filter(|l| !l.is_empty()).collect();
    let missing: Vec<&&str> = logged.iter().filter(|id| !present.contains(**id)).collect();
    if !missing.is_empty() {
        return Err(format!("installed blocks lost: {missing:?}"));
    }
    Ok(logged.len())
}
