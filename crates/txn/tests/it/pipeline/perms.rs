//! perms tests.
