//! The `SessionStore` conformance suite (`suite.rs`, shared with the PostgreSQL store's tests)
//! run against the embedded store, one fresh directory per test.

mod suite;

use std::sync::Arc;

use scriptorium_session_dag::{Clock, EmbeddedStore};
use scriptorium_testkit::{Arguments, Trial, data_trial};
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

    fn dump(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut dirs = vec![self.0.path().to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("the store directory lists") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    out.extend(std::fs::read(&path).expect("a store file reads"));
                    out.push(b'\n');
                }
            }
        }
        out
    }
}

fn main() -> std::process::ExitCode {
    let mut trials: Vec<Trial> = suite::TESTS
        .iter()
        .map(|&(name, test)| {
            Trial::test(name, move || {
                let backing = Directory(tempfile::tempdir().map_err(|e| e.to_string())?);
                test(&backing);
                Ok(())
            })
        })
        .collect();
    trials.extend(suite::DATA_TESTS.iter().map(|&(name, test)| {
        data_trial(name, move |data| {
            let backing = Directory(tempfile::tempdir().map_err(|e| e.to_string())?);
            test(&backing, data);
            Ok(())
        })
    }));
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}
