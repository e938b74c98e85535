//! Links the `scriptorium` executable position-dependent (`-no-pie`) on Linux, unless
//! `SCRIPTORIUM_PIE=1` is set at build time.
//!
//! Why: every hook and agent shell call is a fresh process, and a position-independent
//! executable of this size carries some 80 000 relative relocations, which the dynamic loader
//! applies at every start by writing to ~370 pages of `.data.rel.ro` — one copy-on-write page
//! fault each. Linked without PIE (the code stays position-independent; the linker resolves
//! those addresses once), a `search` process takes ~450 fewer page faults and about a third
//! less CPU (`process/search_cpu_10k_blocks`, see the README's Benchmarks). The
//! trade: the executable's own image loads at a fixed address (shared libraries, heap, stack
//! and every mapping stay randomized), as Go builds its Linux binaries by default.

fn main() {
    println!("cargo:rerun-if-env-changed=SCRIPTORIUM_PIE");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let pie = std::env::var("SCRIPTORIUM_PIE").is_ok_and(|v| v == "1");
    if linux && !pie {
        println!("cargo:rustc-link-arg-bin=scriptorium=-no-pie");
    }
}
