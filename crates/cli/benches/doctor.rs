//! Criterion: `process/doctor_10k_blocks`, the wall time of one `scriptorium doctor --json`
//! process on a healthy home whose memory holds the 10 000-block workspace the process benches
//! use (`tests/benches/common`), initialized, its views and index built, with Claude Code set
//! up for it and the journal writer. Every check runs: the workspace check parses every block,
//! git reads every object of `HEAD`; there is no remote and no model to reach. Budget in
//! `xtask/src/bench.rs` (1 s).

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../../../tests/benches/common/mod.rs"]
mod common;

const FILES: usize = 10_000 / common::BLOCKS_PER_FILE;

/// Runs `scriptorium --home home <args>` with `user` as `HOME`.
fn scriptorium(home: &Path, user: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env("HOME", user)
        .env_remove("CODEX_HOME")
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("SCRIPTORIUM_LOG")
        .output()
        .expect("the scriptorium binary runs")
}

fn bench_doctor(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (home, user) = (dir.path().join("home"), dir.path().join("user"));
    common::generate_with(&home.join("memory"), FILES, &mut |f, b| {
        format!("Fact {b} about topic {f}: the owner cares about item {f}-{b} and said so.")
    });
    std::fs::create_dir_all(user.join(".claude")).expect("Claude Code's directory");
    for args in [&["init"][..], &["rebuild"], &["setup", "claude-code", "--writer", "journal"]] {
        let out = scriptorium(&home, &user, args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Only a healthy home is measured.
    let out = scriptorium(&home, &user, &["doctor", "--json"]);
    assert!(out.status.success(), "doctor: {}", String::from_utf8_lossy(&out.stdout));

    let mut group = c.benchmark_group("process");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("doctor_10k_blocks", |b| {
        b.iter(|| {
            let out = scriptorium(&home, &user, &["doctor", "--json"]);
            assert!(out.status.success());
        });
    });
    group.finish();
}

criterion_group!(benches, bench_doctor);
criterion_main!(benches);
