//! End-to-end suites over real transcripts (`SCRIPTORIUM_TEST_DATA`): reported as not run when
//! the data is absent, never as passed.

mod fork;

fn main() -> std::process::ExitCode {
    scriptorium_testkit::run(fork::trials())
}
