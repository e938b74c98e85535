//! End-to-end tests that need no third-party data.

mod example_workspace;
mod validation_codes;
