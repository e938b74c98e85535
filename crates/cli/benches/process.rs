//! Criterion: whole `scriptorium` processes on a workspace of 10 000 blocks in the Python
//! implementation's layout (topics, archives, the derived views and `runtime.json`; no revision
//! record, no git history, no search index), which is what a hook or an agent's shell call pays:
//!
//! - `process/first_command_10k_blocks`: `status --json` on a fresh copy of that workspace
//!   (wall time; the copy and its writeback are not timed): the revision record, the first
//!   git commit and the status itself;
//! - `process/update_memory_changes_10k_blocks`: one `update --memory-changes` with one
//!   `update_record` (wall time, views, index and git included; the base revision is read
//!   untimed);
//! - `process/search_cpu_10k_blocks`: one `search` (the child's CPU time, user + system, from
//!   `getrusage(RUSAGE_CHILDREN)`; its wall time is reported as `process/search_wall_10k_blocks`);
//! - `process/hook_user_prompt_submit_{cpu,wall}_10k_blocks`: one `hook claude-code
//!   UserPromptSubmit` (the per-turn recall an agent waits for), CPU and wall time;
//! - `process/hook_session_start_10k_blocks`, `process/hook_stop_10k_blocks`: the wall time of
//!   a `SessionStart` (the core) and of a `Stop` until it returns (its write is detached).
//!
//! Budgets in `xtask/src/bench.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../../../tests/benches/common/mod.rs"]
mod common;
#[expect(dead_code, reason = "the scale bench uses the rest of the support module")]
mod support;

use support::{children_cpu, hook, prompt_submit, scriptorium};

const FILES: usize = 10_000 / common::BLOCKS_PER_FILE;

/// `sync(1)`: every dirty page to disk.
fn sync() {
    let out = Command::new("sync").output().expect("sync runs");
    assert!(out.status.success());
}

/// `cp -r from to`.
fn copy_tree(from: &Path, to: &Path) {
    let out = Command::new("cp").arg("-r").arg(from).arg(to).output().expect("cp runs");
    assert!(out.status.success(), "cp: {}", String::from_utf8_lossy(&out.stderr));
}

/// A home whose memory is the 10 000-block workspace as the Python implementation leaves it:
/// generated, its views written by `scriptorium rebuild`, then everything only this
/// implementation keeps removed (`.git`, and `.scriptorium/` but for `runtime.json`).
fn python_layout(dir: &Path) -> PathBuf {
    let home = dir.join("pristine");
    let memory = home.join("memory");
    common::generate_with(&memory, FILES, &mut |f, b| {
        format!("Fact {b} about topic {f}: the owner cares about item {f}-{b} and said so.")
    });
    scriptorium(&home, &["init"]);
    scriptorium(&home, &["rebuild"]);
    std::fs::remove_dir_all(memory.join(".git")).expect("remove .git");
    for entry in std::fs::read_dir(memory.join(".scriptorium")).expect("runtime dir") {
        let path = entry.expect("entry").path();
        if path.file_name().is_some_and(|n| n == "runtime.json") {
            continue;
        }
        if path.is_dir() {
            std::fs::remove_dir_all(&path).expect("remove");
        } else {
            std::fs::remove_file(&path).expect("remove");
        }
    }
    for entry in std::fs::read_dir(&home).expect("home") {
        let path = entry.expect("entry").path();
        if path.file_name().is_some_and(|n| n != "memory") {
            if path.is_dir() {
                std::fs::remove_dir_all(&path).expect("remove");
            } else {
                std::fs::remove_file(&path).expect("remove");
            }
        }
    }
    home
}

fn revision(home: &Path) -> String {
    let status: serde_json::Value =
        serde_json::from_slice(&scriptorium(home, &["status", "--json"]).stdout).expect("json");
    status["revision"].as_str().expect("a revision").to_owned()
}

fn bench_processes(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let pristine = python_layout(dir.path());
    let mut group = c.benchmark_group("process");
    group.sample_size(10);

    let mut copies = 0u32;
    group.bench_function("first_command_10k_blocks", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                copies += 1;
                let home = dir.path().join(format!("copy-{copies}"));
                copy_tree(&pristine, &home);
                // The copy's own writeback is not the command's cost (an fsync would wait
                // for it): flush it untimed.
                sync();
                let start = Instant::now();
                scriptorium(&home, &["status", "--json"]);
                total += start.elapsed();
                // Copies are removed only after the bench: creating files right after
                // deleting thousands makes ext4's inode allocator search (`recently_deleted`),
                // which doubled the figure without saying anything about the command.
            }
            total
        });
    });

    // The steady state: one workspace the first command initialized.
    let home = dir.path().join("steady");
    copy_tree(&pristine, &home);
    scriptorium(&home, &["search", "warm up the index"]);
    let changes = dir.path().join("changes.json");
    let mut round = 0u64;
    group.bench_function("update_memory_changes_10k_blocks", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                let f = round as usize % FILES;
                let body = serde_json::json!([{
                    "op": "update_record",
                    "memory_id": format!("{f:04}{:04}", 7),
                    "content": format!("Fact 7 about topic {f}, revision {round}."),
                    "time": "2024-03-08",
                    "sources": [{"source": format!("openprogram/bench-{f:04}/m7"), "label": "item 7"}],
                }]);
                std::fs::write(&changes, body.to_string()).expect("write the request");
                let base = revision(&home);
                let args = ["update", "--base", &base, "--memory-changes"];
                let changes = changes.to_str().expect("utf-8");
                let start = Instant::now();
                scriptorium(&home, &[&args[..], &[changes]].concat());
                total += start.elapsed();
            }
            total
        });
    });

    let queries = ["owner cares about item 17-3", "topic 42", "item 150-9 said so"];
    let mut q = 0usize;
    let mut search = |b: &mut criterion::Bencher<'_>, cpu: bool| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                q += 1;
                let query = queries[q % queries.len()];
                let (wall, before) = (Instant::now(), children_cpu());
                scriptorium(&home, &["search", query, "--json"]);
                total += if cpu { children_cpu() - before } else { wall.elapsed() };
            }
            total
        });
    };
    group.bench_function("search_cpu_10k_blocks", |b| search(b, true));
    group.bench_function("search_wall_10k_blocks", |b| search(b, false));

    let mut prompt = |b: &mut criterion::Bencher<'_>, cpu: bool| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                q += 1;
                let (wall, before) = (Instant::now(), children_cpu());
                prompt_submit(&home, queries[q % queries.len()]);
                total += if cpu { children_cpu() - before } else { wall.elapsed() };
            }
            total
        });
    };
    group.bench_function("hook_user_prompt_submit_cpu_10k_blocks", |b| prompt(b, true));
    group.bench_function("hook_user_prompt_submit_wall_10k_blocks", |b| prompt(b, false));
    let start =
        br#"{"session_id": "bench", "hook_event_name": "SessionStart", "source": "startup"}"#;
    group.bench_function("hook_session_start_10k_blocks", |b| {
        b.iter(|| hook(&home, "SessionStart", start));
    });
    // A turn's end: the transcript is imported, the write started and not waited for.
    let transcript = dir.path().join("turn.jsonl");
    std::fs::write(&transcript, claude_turn()).expect("write the transcript");
    let stop = serde_json::json!({
        "session_id": "bench-session", "transcript_path": transcript, "hook_event_name": "Stop",
    })
    .to_string();
    // Timed: the hook until it returns. Not timed: waiting for the write it started (its line
    // in `hook-writes.log`), so that detached writes of earlier iterations never compete with
    // the hook measured (a turn's end comes seconds apart, not thirty times a second).
    let writes = home.join("logs/hook-writes.log");
    group.bench_function("hook_stop_10k_blocks", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let before = std::fs::metadata(&writes).map_or(0, |m| m.len());
                let wall = Instant::now();
                hook(&home, "Stop", stop.as_bytes());
                total += wall.elapsed();
                // The write has started once its log grows, and is done once the log has been
                // quiet for half a second (it prints its outcome last).
                let waiting = Instant::now();
                let (mut size, mut quiet) = (before, Instant::now());
                while waiting.elapsed() < Duration::from_secs(30) {
                    std::thread::sleep(Duration::from_millis(10));
                    let now = std::fs::metadata(&writes).map_or(0, |m| m.len());
                    if now != size {
                        (size, quiet) = (now, Instant::now());
                    } else if size != before && quiet.elapsed() > Duration::from_millis(500) {
                        break;
                    }
                }
            }
            total
        });
    });
    group.finish();
}

/// A Claude Code transcript of one exchange (the shape `claude` writes).
fn claude_turn() -> String {
    let line = |uuid: &str, parent: Option<&str>, role: &str, text: &str| {
        serde_json::json!({
            "parentUuid": parent, "isSidechain": false, "type": role, "uuid": uuid,
            "sessionId": "bench-session", "timestamp": "2026-01-15T17:24:23.974Z",
            "cwd": "/srv/dana/project", "version": "2.1.7",
            "message": {"role": role, "content": text},
        })
        .to_string()
    };
    [
        line("u1", None, "user", "Remind me what the owner cares about."),
        line("a1", Some("u1"), "assistant", "Item 17-3, among others."),
    ]
    .join("\n")
        + "\n"
}

criterion_group!(benches, bench_processes);
criterion_main!(benches);
