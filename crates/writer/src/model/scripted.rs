//! Placeholder: filled by the writer issue.
