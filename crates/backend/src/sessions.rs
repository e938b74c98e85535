//! Which session store a home uses, chosen in this one place: the embedded store in
//! `<home>/sessions` by default, or PostgreSQL when `[sessions] store = "postgres://…"`
//! (see [`crate::config::SessionsConfig`]); and [`migrate`], which copies an embedded store into
//! a PostgreSQL one.
//!
//! Every face and the backend open the store through [`Sessions::open`] (or
//! [`Sessions::open_existing`] for the commands that only read), so the choice never drifts.

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use scriptorium_session_dag::{
    EmbeddedStore, Error, LoadWarning, Page, SessionStore, SessionSummary,
};
use scriptorium_session_pg::PgStore;

use crate::config::Config;

pub use scriptorium_session_pg::is_postgres_url;

/// The session store of a home.
#[derive(Clone)]
pub struct Sessions {
    shared: Arc<dyn SessionStore + Send + Sync>,
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Embedded(Arc<EmbeddedStore>),
    Postgres(Arc<PgStore>),
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").field("location", &self.location()).finish()
    }
}

impl Deref for Sessions {
    type Target = dyn SessionStore + Send + Sync;

    fn deref(&self) -> &Self::Target {
        &*self.shared
    }
}

impl Sessions {
    /// Opens the store `config` names for `home`. Disk effect for the embedded store: creates
    /// `<home>/sessions` (0700) when missing; for PostgreSQL: connects and applies the pending
    /// schema migrations.
    pub fn open(home: &Path, config: &Config) -> Result<Sessions, Error> {
        match &config.sessions.store {
            Some(url) => Ok(Sessions::postgres(Arc::new(PgStore::connect(url)?))),
            None => Ok(Sessions::embedded(Arc::new(EmbeddedStore::open(home.join("sessions"))?))),
        }
    }

    /// [`Sessions::open`] for a command that only reads: `None` when the embedded store's
    /// directory does not exist (nothing was ever imported), which it never creates.
    pub fn open_existing(home: &Path, config: &Config) -> Result<Option<Sessions>, Error> {
        if config.sessions.store.is_none() && !home.join("sessions").is_dir() {
            return Ok(None);
        }
        Sessions::open(home, config).map(Some)
    }

    /// An embedded store.
    pub fn embedded(store: Arc<EmbeddedStore>) -> Sessions {
        Sessions { shared: store.clone(), kind: Kind::Embedded(store) }
    }

    /// A PostgreSQL store.
    pub fn postgres(store: Arc<PgStore>) -> Sessions {
        Sessions { shared: store.clone(), kind: Kind::Postgres(store) }
    }

    /// The store as a shared trait object (for the writer, the watcher).
    pub fn shared(&self) -> Arc<dyn SessionStore + Send + Sync> {
        Arc::clone(&self.shared)
    }

    /// The embedded store, when this is one.
    pub fn as_embedded(&self) -> Option<&EmbeddedStore> {
        match &self.kind {
            Kind::Embedded(store) => Some(store),
            Kind::Postgres(_) => None,
        }
    }

    /// Where the sessions are: the directory, or `postgres://user@host:port/database` (never a
    /// password).
    pub fn location(&self) -> String {
        match &self.kind {
            Kind::Embedded(store) => store.dir().display().to_string(),
            Kind::Postgres(store) => format!("postgres://{}", store.target()),
        }
    }

    /// Problems the embedded store found reading its logs (torn or corrupt lines); none for
    /// PostgreSQL.
    pub fn warnings(&self) -> Vec<LoadWarning> {
        self.as_embedded().map(EmbeddedStore::warnings).unwrap_or_default()
    }

    /// Sessions with their node counts, newest first.
    pub fn list_summaries(&self, page: Page) -> Result<Vec<SessionSummary>, Error> {
        match &self.kind {
            Kind::Embedded(store) => store.list_summaries(page),
            Kind::Postgres(store) => store.list_summaries(page),
        }
    }
}

/// What [`migrate`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MigrateReport {
    /// Sessions in the embedded store.
    pub sessions: usize,
    /// Sessions that changed in PostgreSQL (new, or given nodes, marks, rewinds, fields).
    pub sessions_changed: usize,
    /// Nodes copied.
    pub nodes_copied: usize,
    /// The database, as `postgres://user@host:port/database`.
    pub to: String,
}

/// Copies every session of the embedded store in `<home>/sessions` into the PostgreSQL
/// database at `url`, idempotently: each session is one transaction that only adds (see
/// [`PgStore::copy_session`]), so a second run copies nothing and reports no change, and a run
/// interrupted half-way is finished by the next. The embedded store is only read.
pub fn migrate(home: &Path, url: &str) -> Result<MigrateReport, Error> {
    let to = PgStore::connect(url)?;
    let mut report =
        MigrateReport { to: format!("postgres://{}", to.target()), ..Default::default() };
    let dir = home.join("sessions");
    if !dir.is_dir() {
        return Ok(report);
    }
    let from = EmbeddedStore::open(&dir)?;
    let all = from.list_summaries(Page { offset: 0, limit: usize::MAX })?;
    for summary in all {
        let nodes = from.nodes(&summary.session.id)?;
        let copied = to.copy_session(&summary.session, nodes)?;
        report.sessions += 1;
        report.nodes_copied += copied.nodes;
        report.sessions_changed += usize::from(copied.changed);
    }
    Ok(report)
}
