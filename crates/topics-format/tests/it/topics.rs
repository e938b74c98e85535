//! Topic-file integration tests: corpus snapshots, round trip, normalization, fuzz loop.
