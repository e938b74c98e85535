//! End-to-end tests across crates: the example workspace the README runs, and real transcripts
//! carried from import through the written-marker walk. The tests live in `it/` and `data/`.
