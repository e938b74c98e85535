//! Data-driven CLI suites over third-party data (`SCRIPTORIUM_TEST_DATA`): reported as not run
//! when the data is absent, never as passed.

mod import;

fn main() -> std::process::ExitCode {
    scriptorium_testkit::run(import::trials())
}
