//! Store tests: append, branches, tips, metadata, crash recovery.
