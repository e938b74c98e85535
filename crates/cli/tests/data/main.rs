//! Data-driven CLI suites over third-party data (`SCRIPTORIUM_TEST_DATA`): reported as not run
//! when the data is absent, never as passed.

mod check;
mod import;
mod write;

fn main() -> std::process::ExitCode {
    let mut trials = check::trials();
    trials.extend(import::trials());
    trials.extend(write::trials());
    scriptorium_testkit::run(trials)
}
