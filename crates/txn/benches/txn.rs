//! Criterion: one-paragraph edit transactions (filled by the transactions issue).
fn main() {}
