//! The `SessionStore` conformance suite (shared with the embedded store: `session-dag`'s
//! `tests/conformance/suite.rs`) run against [`PgStore`] on a real PostgreSQL server: a scratch
//! cluster under the target directory (`scriptorium_testkit::pg`), one fresh database per test.
//! Without the server binaries every trial is reported as ignored (not run), never as passed.

#[path = "../../../session-dag/tests/conformance/suite.rs"]
mod suite;

mod schema;

use std::sync::Arc;

use scriptorium_session_dag::Clock;
use scriptorium_session_pg::PgStore;
use scriptorium_testkit::pg::{self, pg_trial};
use scriptorium_testkit::{Arguments, data_trial};
use suite::{Backing, Opened};

impl Opened for PgStore {}

/// One database of the scratch cluster.
struct Database(String);

impl Backing for Database {
    fn open_with(&self, clock: Arc<dyn Clock>) -> Box<dyn Opened> {
        Box::new(PgStore::connect_with_clock(&self.0, clock).expect("store connects"))
    }

    /// The real `pg_dump` of the database (`pg::dump`).
    fn dump(&self) -> Vec<u8> {
        pg::dump(&self.0).expect("pg_dump runs")
    }
}

fn main() -> std::process::ExitCode {
    let cluster = pg::cluster("session-pg-conformance");
    let mut trials: Vec<_> = suite::TESTS
        .iter()
        .map(|&(name, test)| {
            pg_trial(name, &cluster, move |cluster| {
                let backing = Database(cluster.create_database()?);
                test(&backing);
                Ok(())
            })
        })
        .collect();
    trials.extend(suite::DATA_TESTS.iter().map(|&(name, test)| {
        // A trial that needs both: without the test data it is what `data_trial` makes it
        // (ignored, or failing when the data is required), never run.
        if scriptorium_testkit::data_dir().is_none() {
            return data_trial(name, |_| Ok(()));
        }
        pg_trial(name, &cluster, move |cluster| {
            let data = scriptorium_testkit::data_dir().ok_or("the test data went away")?;
            let backing = Database(cluster.create_database()?);
            test(&backing, &data);
            Ok(())
        })
    }));
    trials.extend(schema::trials(&cluster));
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    drop(cluster);
    conclusion.exit_code()
}
