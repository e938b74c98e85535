//! Criterion benchmarks of `scriptorium-views` (filled by the views and recall issue).
fn main() {}
