//! Criterion: strict scan of a 50 000-frame source archive.
fn main() {}
