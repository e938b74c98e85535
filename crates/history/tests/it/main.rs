//! Integration tests of `scriptorium-history`, read back with the real `git` CLI.

mod catch_up;
mod commit;
mod interop;
mod log;
mod review;
mod rewrite;
mod scan;
mod stale_locks;
mod support;
mod sync;
