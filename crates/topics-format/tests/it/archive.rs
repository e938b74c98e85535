//! Source-archive integration tests: corpus snapshots, scan, append planning, fuzz loop.
