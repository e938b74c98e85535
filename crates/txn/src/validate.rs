//! Validation of a staged, normalized topic tree against the baseline (reference §4.5).
