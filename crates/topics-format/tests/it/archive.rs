//! Source-archive integration tests: corpus snapshots, scan, append planning, resolution, and the
//! property and fuzz loops.

mod append;
mod corpus;
mod fuzz;
mod resolve;
mod roundtrip;
