//! Criterion: parse + validate a 10 000-block topic tree.
fn main() {}
