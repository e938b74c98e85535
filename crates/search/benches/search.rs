//! Criterion benchmarks of `scriptorium-search` (filled by the views and recall issue).
fn main() {}
