//! The forced loop at a session boundary (reference §5.4, §12 items 7, 8, 20, 21, 29, 30):
//! head branch first and batch after batch, other tips only when they reach the threshold,
//! shared prefixes written once, no progress is a permanent failure.
