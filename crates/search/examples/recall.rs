//! The LoCoMo recall harness (`cargo xtask recall`): prints recall_any@5/@10 and recall_all@5/@10
//! of the evidence turns and the share of unrelated and absent-fact questions returning
//! nothing, for the default relevance floor and a sweep around it. With `--cli <scriptorium>`
//! it also asks every question through the real command, `scriptorium search --json --top-k 5`,
//! in a home whose memory holds the same archives (the figure the recall targets are set on).
//!
//! Run: `cargo run --release -p scriptorium-search --example recall -- <data dir> [--cli
//! <path to the scriptorium binary>]` (the data directory holds `locomo/locomo-dev.json`).

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../tests/recall/harness.rs"]
mod harness;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut data = std::env::var_os("SCRIPTORIUM_TEST_DATA").map(PathBuf::from);
    let mut cli = None;
    while let Some(arg) = args.next() {
        if arg == "--cli" {
            cli = Some(PathBuf::from(args.next().expect("--cli needs the scriptorium binary")));
        } else {
            data = Some(PathBuf::from(arg));
        }
    }
    let data = data.expect("usage: recall <data dir> [--cli <scriptorium>]");
    let started = std::time::Instant::now();
    let mut locomo = harness::prepare(&data);
    println!("indexed {} documents in {:?}", locomo.index.num_docs(), started.elapsed());
    let default = scriptorium_search::DEFAULT_MIN_COVERAGE;
    println!("library default {}", harness::measure(&mut locomo, default));
    for floor in [0.0, 0.2, 0.25, 0.3, 0.33, 0.35, 0.37, 0.4, 0.45] {
        println!("library sweep   {}", harness::measure(&mut locomo, floor));
    }
    if let Some(cli) = cli {
        println!("cli     default {}", through_cli(&cli, &data));
    }
}

/// Every question through `scriptorium search --json --top-k 5` in a fresh home.
fn through_cli(cli: &Path, data: &Path) -> harness::Figures {
    let home = tempfile::tempdir().expect("a temp dir");
    let run = |args: &[&str]| {
        let output = Command::new(cli)
            .arg("--home")
            .arg(home.path())
            .args(args)
            .env_remove("SCRIPTORIUM_HOME")
            .output()
            .expect("run scriptorium");
        assert!(
            output.status.success(),
            "scriptorium {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    };
    run(&["init"]);
    let qa = harness::archive_into(data, &home.path().join("memory"));
    run(&["rebuild"]);
    harness::measure_with(&qa, scriptorium_search::DEFAULT_MIN_COVERAGE, 5, |question| {
        let stdout = run(&["search", "--json", "--top-k", "5", question]);
        let doc: serde_json::Value = serde_json::from_slice(&stdout).expect("search --json");
        doc["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|hit| {
                let mut ids = vec![hit["id"].as_str().expect("an id").to_owned()];
                ids.extend(
                    hit["collapsed"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|v| v.as_str())
                        .map(str::to_owned),
                );
                ids
            })
            .collect()
    })
}
