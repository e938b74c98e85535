//! Criterion: the pending walk on a 100 000-node session.
fn main() {}
