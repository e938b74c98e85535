//! Criterion: whole `scriptorium` processes on generated workspaces of 10 000, 100 000 and
//! (with `SCRIPTORIUM_BENCH_1M=1`) 1 000 000 blocks, the shapes of a heavy user's memory after
//! years (`xtask/src/generator.rs`: the OpenProgram layout, people, projects with journals,
//! archives of many frames, links between topics). Issue 39's table, per size `<n>`
//! (`10k`, `100k`, `1m`):
//!
//! - `scale/update_cpu_<n>_blocks`: one `update --memory-changes` with one `update_record` of a
//!   sample block, the process's CPU time (user + system) — its peak RSS is recorded as the
//!   extra figure `scale/update_peak_rss_<n>_blocks` (bytes, see `support::ExtraFigures`);
//! - `scale/update_noop_cpu_<n>_blocks`: the same request again (a change identical to the
//!   files), CPU time;
//! - `scale/search_cpu_<n>_blocks`: one `search`, CPU time;
//! - `scale/hook_user_prompt_submit_wall_<n>_blocks`: one `hook claude-code UserPromptSubmit`,
//!   wall time;
//! - `scale/search_cpu_watched_<n>_blocks`, `scale/hook_user_prompt_submit_wall_watched_<n>_blocks`:
//!   the same while an outside-edit watch runs (`scriptorium_search::watch`, started in this
//!   process as a long-lived one would), so a search skips the stat scan of both trees;
//! - `scale/check_wall_<n>_blocks`: `check` of the whole tree, wall time.
//!
//! Each workspace is generated once in `TMPDIR` (the filesystem measured: point it at a tmpfs or
//! a disk), given its views and index by `scriptorium rebuild`, and `check`ed before anything is
//! measured. The million is opt-in: generating it and its first `rebuild` take minutes.
//! Budgets in `xtask/src/bench.rs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use scriptorium_search::watch::{OutsideWatch, ask};

#[path = "../../../xtask/src/generator.rs"]
mod generator;
mod support;

use support::{ExtraFigures, children_cpu, probed, prompt_submit, scriptorium};

/// The sizes measured: (blocks, the name in benchmark ids).
fn sizes() -> Vec<(usize, &'static str)> {
    let mut sizes = vec![(10_000, "10k"), (100_000, "100k")];
    if std::env::var_os("SCRIPTORIUM_BENCH_1M").is_some_and(|v| v == "1") {
        sizes.push((1_000_000, "1m"));
    }
    sizes
}

/// A home whose memory is a generated workspace of `blocks` blocks, with its views, index and
/// history, checked clean.
fn workspace(dir: &Path, blocks: usize, name: &str) -> (PathBuf, generator::Summary) {
    let home = dir.join(format!("home-{name}"));
    let start = Instant::now();
    let summary = generator::generate(&home.join("memory"), &generator::Spec { blocks, seed: 39 })
        .expect("generate");
    eprintln!(
        "scale: generated {blocks} blocks ({} topic files, {} archives) in {:.1} s",
        summary.topic_files,
        summary.archives,
        start.elapsed().as_secs_f64()
    );
    let start = Instant::now();
    scriptorium(&home, &["rebuild"]);
    eprintln!("scale: rebuild of {name} in {:.1} s", start.elapsed().as_secs_f64());
    let out = scriptorium(&home, &["check"]);
    assert!(out.status.success(), "the generated workspace checks clean");
    scriptorium(&home, &["search", "warm up the index"]);
    (home, summary)
}

fn revision(home: &Path) -> String {
    let status: serde_json::Value =
        serde_json::from_slice(&scriptorium(home, &["status", "--json"]).stdout).expect("json");
    status["revision"].as_str().expect("a revision").to_owned()
}

fn bench_scale(c: &mut Criterion, extra: &mut ExtraFigures) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut group = c.benchmark_group("scale");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for (blocks, name) in sizes() {
        let (home, summary) = workspace(dir.path(), blocks, name);
        let request = dir.path().join(format!("change-{name}.json"));
        let request_arg = request.to_str().expect("utf-8").to_owned();
        let samples = &summary.samples;
        let mut base = revision(&home);
        let mut round = 0usize;
        // The request of round `round`: one record of a sample block rewritten.
        let body = |round: usize| {
            let sample = &samples[round % samples.len()];
            serde_json::json!([{
                "op": "update_record",
                "memory_id": sample.block_id,
                "content": format!("Owner said the bench changed this record in round {round}."),
                "time": sample.when,
                "sources": [{"source": sample.source_ref, "label": "the record"}],
            }])
            .to_string()
        };
        let update = |base: &mut String, text: &str, noop: bool| {
            std::fs::write(&request, text).expect("write the request");
            let args = ["update", "--json", "--base", base, "--memory-changes", &request_arg];
            let (out, cost) = probed(&home, &args);
            let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(result["noop"].as_bool(), Some(noop), "{result}");
            *base = result["revision"].as_str().expect("a revision").to_owned();
            cost
        };
        group.bench_function(format!("update_cpu_{name}_blocks"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    round += 1;
                    let cost = update(&mut base, &body(round), false);
                    extra.record(
                        &format!("scale/update_peak_rss_{name}_blocks"),
                        "bytes",
                        cost.peak_rss,
                    );
                    total += cost.cpu;
                }
                total
            });
        });
        if round == 0 {
            // The one-record bench did not run (a filter): one change for the no-op to repeat.
            round += 1;
            update(&mut base, &body(round), false);
        }
        group.bench_function(format!("update_noop_cpu_{name}_blocks"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    // The last round's request again: every byte is already in the files.
                    total += update(&mut base, &body(round), true).cpu;
                }
                total
            });
        });

        let queries = ["owner prefers the release draft", "deadline next week", "team meeting"];
        let mut q = 0usize;
        // Without and with an outside-edit watch running (`scriptorium_search::watch`, what a
        // long-lived process holds): with one, a search skips the stat scan of both trees.
        for watched in [false, true] {
            let suffix = if watched { "_watched" } else { "" };
            let watch = watched.then(|| {
                let memory = home.join("memory");
                let watch = OutsideWatch::start(&memory).expect("a watch").expect("not watched");
                // The first search scans and tells the watch the trees are as recorded.
                scriptorium(&home, &["search", "warm up the watch"]);
                assert!(ask(&memory).is_some_and(|f| f.clean), "the watch is clean");
                watch
            });
            group.bench_function(format!("search_cpu{suffix}_{name}_blocks"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        q += 1;
                        let before = children_cpu();
                        scriptorium(&home, &["search", queries[q % queries.len()], "--json"]);
                        total += children_cpu() - before;
                    }
                    total
                });
            });
            group.bench_function(
                format!("hook_user_prompt_submit_wall{suffix}_{name}_blocks"),
                |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            q += 1;
                            let wall = Instant::now();
                            prompt_submit(&home, queries[q % queries.len()]);
                            total += wall.elapsed();
                        }
                        total
                    });
                },
            );
            drop(watch);
        }
        group.bench_function(format!("check_wall_{name}_blocks"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let wall = Instant::now();
                    scriptorium(&home, &["check"]);
                    total += wall.elapsed();
                }
                total
            });
        });
        // Each size's files go before the next is generated.
        let _ = std::fs::remove_dir_all(&home);
    }
    group.finish();
}

fn main() {
    support::serve_probe();
    let mut criterion = Criterion::default().configure_from_args();
    let mut extra = ExtraFigures::default();
    bench_scale(&mut criterion, &mut extra);
    extra.save("scale");
    criterion.final_summary();
}
