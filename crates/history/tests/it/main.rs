//! Integration tests of `scriptorium-history`, read back with the real `git` CLI.
