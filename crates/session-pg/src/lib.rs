//! The session store on PostgreSQL: [`PgStore`] implements
//! [`SessionStore`](scriptorium_session_dag::SessionStore) on one database that
//! several processes on several machines share.
//!
//! Key decision: every mutation is one transaction that first locks its session's row
//! (`SELECT … FOR UPDATE`), then checks its preconditions against what is committed and writes.
//! So mutations of one session serialize exactly as the embedded store's `flock` makes them,
//! mutations of different sessions run in parallel, and a metadata merge racing an append or
//! another merge never loses a mark. Reads take no lock. The schema is versioned in the
//! repository (`migrations/`, see [`migrate`]) and brought up to date when a store connects.
//!
//! The invariants are those of the embedded store:
//!
//! - Nodes are append-only: never deleted, only their metadata and rewound flag change, a
//!   forget empties their content and speaker and keeps only the markers of their metadata,
//!   and a rewrite of texts (a redaction after the fact) replaces a non-empty content in a
//!   transaction that declares itself one (enforced again by triggers in the schema, which let
//!   exactly that through).
//! - `append_batch` is one transaction: all of the batch or none of it.
//! - `merge_metadata` is one read of the batch's nodes by primary key and one `UPDATE` of the
//!   changed ones: O(batch); it appends no node and leaves `updated_at` alone.
//! - The ancestor walk (`walk_ancestors`, so the markers' pending walk) is a recursive query that
//!   follows the primary key one parent at a time and is fetched in growing chunks, so a walk
//!   that stops after k nodes reads O(k) rows, whatever the session's size.
//! - Durability: a call returns after its transaction committed (PostgreSQL's
//!   `synchronous_commit`, on by default).
//!
//! # Limitations
//!
//! - One connection per store, used by one call at a time (a worker thread owns it; see the
//!   `conn` module); open several stores for parallel calls.
//! - TLS is rustls, no OpenSSL. `sslmode` takes libpq's values but `allow` (`prefer` by
//!   default: TLS when the server offers it); unlike libpq, a TLS connection always verifies
//!   the server's certificate (`verify-ca` alone skips the host name). The roots are
//!   `sslrootcert=<PEM file>`, else `SSL_CERT_FILE`, else the system's; a self-signed server
//!   certificate given as the root is trusted as itself. A certificate that does not verify,
//!   or TLS settings that cannot work, are [`DatabaseTls`] errors (not retryable) with the
//!   verifier's reason and the remedy. The host name is matched against the certificate's
//!   subjectAltName only, never its common name. Client certificates (`sslcert`, `sslkey`) and
//!   CRLs are not supported.
//! - `tips` reads the IDs, parents and flags of all the session's nodes (not their content), as
//!   the embedded store scans its index.
//! - Give the store a database of its own: it creates `sessions`, `nodes` and
//!   `schema_migrations` in the connection's default schema.
//!
//! [`DatabaseTls`]: scriptorium_session_dag::Error::DatabaseTls
//!
//! # Example
//!
//! ```no_run
//! use scriptorium_session_dag::{SessionId, SessionStore};
//! use scriptorium_session_pg::PgStore;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = PgStore::connect("postgres://scriptorium@127.0.0.1:5432/scriptorium")?;
//! let session = store.session(&SessionId("s1".into()))?;
//! assert!(session.is_none());
//! # Ok(())
//! # }
//! ```

mod codec;
mod conn;
pub mod migrate;
mod store;
mod tls;

pub use store::{Copied, PgStore};

/// Whether `location` names a PostgreSQL database (`postgres://…` or `postgresql://…`) rather
/// than a directory.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}
