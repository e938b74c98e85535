//! Data-driven suites over third-party data (`SCRIPTORIUM_TEST_DATA`): reported as not run when
//! the data is absent, never as passed.

fn main() -> std::process::ExitCode {
    scriptorium_testkit::run(Vec::new())
}
