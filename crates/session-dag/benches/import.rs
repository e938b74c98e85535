//! Criterion: import throughput on the largest real transcript.
fn main() {}
