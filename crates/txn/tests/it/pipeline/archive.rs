//! archive tests.
