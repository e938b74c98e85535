//! End-to-end suites over real transcripts (`SCRIPTORIUM_TEST_DATA`): reported as not run when
//! the data is absent, never as passed.

mod fork;
mod write;

fn main() -> std::process::ExitCode {
    scriptorium_testkit::run(fork::trials().into_iter().chain(write::trials()).collect())
}
