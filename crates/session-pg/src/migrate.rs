//! Schema migrations: SQL files under `migrations/` in the repository, embedded at build time
//! and applied in order.
//!
//! Applying is one transaction that first takes a transaction-scoped advisory lock
//! ([`MIGRATION_LOCK`]), so processes opening the store at once serialize and each finds the
//! versions the others applied; `schema_migrations` records every applied version. Applying
//! twice changes nothing; a database that records a version this build does not know (written
//! by a newer Scriptorium) is refused before anything is touched.

use postgres::Client;
use scriptorium_session_dag::Error;

use crate::conn::db_error;

/// One migration: its version (the file's number) and its SQL.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// The schema version it brings the database to.
    pub version: i64,
    /// The file name under `migrations/`.
    pub name: &'static str,
    /// The SQL (several statements).
    pub sql: &'static str,
}

/// Every migration, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_sessions.sql",
        sql: include_str!("../migrations/0001_sessions.sql"),
    },
    Migration {
        version: 2,
        name: "0002_forget.sql",
        sql: include_str!("../migrations/0002_forget.sql"),
    },
    Migration {
        version: 3,
        name: "0003_rewrite.sql",
        sql: include_str!("../migrations/0003_rewrite.sql"),
    },
];

/// The advisory lock key that serializes migrations (`'scrptrm1'` as a big-endian integer).
pub const MIGRATION_LOCK: i64 = 0x7363_7270_7472_6d31;

/// Brings the database to the newest schema in one transaction; returns the versions it
/// applied (empty when the database was current). A current database costs one read and no
/// lock (every process connecting, every hook, pays only that).
pub(crate) fn apply(client: &mut Client) -> Result<Vec<i64>, Error> {
    if let Ok(rows) = client.query("SELECT version FROM schema_migrations", &[]) {
        let applied: Vec<i64> = rows.iter().map(|row| row.get(0)).collect();
        let newest = MIGRATIONS.last().map_or(0, |m| m.version);
        let current = MIGRATIONS.iter().all(|m| applied.contains(&m.version));
        if current && applied.iter().all(|&v| v <= newest) {
            return Ok(Vec::new());
        }
    }
    let mut tx = client.transaction().map_err(db_error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).map_err(db_error)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    BIGINT PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )
    .map_err(db_error)?;
    let applied: Vec<i64> = tx
        .query("SELECT version FROM schema_migrations ORDER BY version", &[])
        .map_err(db_error)?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let newest = MIGRATIONS.last().map_or(0, |m| m.version);
    if let Some(&unknown) = applied.iter().find(|&&v| v > newest) {
        return Err(Error::Database {
            message: format!(
                "the database has session schema version {unknown}, newer than this build \
                 knows ({newest}): upgrade scriptorium"
            ),
            retryable: false,
        });
    }
    let mut done = Vec::new();
    for migration in MIGRATIONS.iter().filter(|m| !applied.contains(&m.version)) {
        tx.batch_execute(migration.sql).map_err(db_error)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            &[&migration.version, &migration.name],
        )
        .map_err(db_error)?;
        done.push(migration.version);
    }
    tx.commit().map_err(db_error)?;
    Ok(done)
}
