//! The LoCoMo recall harness (`cargo xtask recall`): prints recall@5/@10 of the evidence turns
//! and the share of negative queries returning nothing, for the default relevance floor and a
//! sweep around it.
//!
//! Run: `cargo run --release -p scriptorium-search --example recall -- <data dir>` (the shared
//! data directory holding `locomo/locomo-dev.json`).

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

#[path = "../tests/recall/harness.rs"]
mod harness;

fn main() {
    let data = std::env::args_os()
        .nth(1)
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("SCRIPTORIUM_TEST_DATA").map(std::path::PathBuf::from))
        .expect("usage: recall <data dir> (or set SCRIPTORIUM_TEST_DATA)");
    let started = std::time::Instant::now();
    let mut locomo = harness::prepare(&data);
    println!("indexed {} documents in {:?}", locomo.index.num_docs(), started.elapsed());
    let default = scriptorium_search::DEFAULT_MIN_COVERAGE;
    println!("default {}", harness::measure(&mut locomo, default));
    for floor in [0.0, 0.2, 0.25, 0.27, 0.28, 0.3, 0.35, 0.4] {
        println!("sweep   {}", harness::measure(&mut locomo, floor));
    }
}
