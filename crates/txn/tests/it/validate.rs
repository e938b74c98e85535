//! Validation tests: every violation code triggered, the workspace byte-identical after.
