//! Data-driven suites over third-party data (`SCRIPTORIUM_TEST_DATA`): reported as not run when
//! the data is absent, never as passed.

#[path = "../common/redact.rs"]
mod redact;

mod archive;
mod forget;
mod rewrite;
mod topics;

fn main() -> std::process::ExitCode {
    let mut trials = Vec::new();
    trials.extend(topics::trials());
    trials.extend(archive::trials());
    trials.extend(forget::trials());
    trials.extend(rewrite::trials());
    scriptorium_testkit::run(trials)
}
