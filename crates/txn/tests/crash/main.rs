//! The kill -9 supervisor (filled by the transactions issue).

fn main() {}
