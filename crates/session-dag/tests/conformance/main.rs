//! The `SessionStore` conformance suite (`suite.rs`, shared with the PostgreSQL store's tests)
//! run against the embedded store, one fresh directory per test.

mod suite;

use std::sync::Arc;

use scriptorium_session_dag::{Clock, EmbeddedStore};
use scriptorium_testkit::{Arguments, Trial};
use suite::{Backing, Opened};

impl Opened for EmbeddedStore {
    fn problems(&self) -> Vec<String> {
        self.warnings().iter().map(ToString::to_string).collect()
    }
}

struct Directory(tempfile::TempDir);

impl Backing for Directory {
    fn open_with(&self, clock: Arc<dyn Clock>) -> Box<dyn Opened> {
        Box::new(EmbeddedStore::open_with_clock(self.0.path(), clock).expect("store opens"))
    }
}

fn main() -> std::process::ExitCode {
    let trials = suite::TESTS
        .iter()
        .map(|&(name, test)| {
            Trial::test(name, move || {
                let backing = Directory(tempfile::tempdir().map_err(|e| e.to_string())?);
                test(&backing);
                Ok(())
            })
        })
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}
