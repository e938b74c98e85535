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
use scriptorium_testkit::Arguments;
use scriptorium_testkit::pg::{self, pg_trial};
use suite::{Backing, Opened};

impl Opened for PgStore {}

/// One database of the scratch cluster.
struct Database(String);

impl Backing for Database {
    fn open_with(&self, clock: Arc<dyn Clock>) -> Box<dyn Opened> {
        Box::new(PgStore::connect_with_clock(&self.0, clock).expect("store connects"))
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
    trials.extend(schema::trials(&cluster));
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    drop(cluster);
    conclusion.exit_code()
}
