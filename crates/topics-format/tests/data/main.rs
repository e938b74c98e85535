//! Data-driven suites over third-party data (`SCRIPTORIUM_TEST_DATA`): reported as not run when
//! the data is absent, never as passed.

mod archive;
mod forget;
mod topics;

fn main() -> std::process::ExitCode {
    let mut trials = Vec::new();
    trials.extend(topics::trials());
    trials.extend(archive::trials());
    trials.extend(forget::trials());
    scriptorium_testkit::run(trials)
}
