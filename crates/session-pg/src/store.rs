//! [`PgStore`]: the [`SessionStore`] calls as SQL (schema: `migrations/0001_sessions.sql`,
//! `0002_forget.sql`, which lets a forget through the append-only guard, and
//! `0003_rewrite.sql`, which lets a declared rewrite of texts through).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use postgres::types::ToSql;
use postgres::{IsolationLevel, Statement, Transaction};
use scriptorium_session_dag::{
    Clock, Error, MetadataBatch, Node, NodeId, Page, Session, SessionId, SessionStore,
    SessionSummary, SystemClock, Timestamp, dag, forgotten_metadata,
};

use crate::codec::{self, node_from_row};
use crate::conn::{Asker, Conn, Worker, db_error};
use crate::tls::Tls;

/// The node columns, in the order [`node_from_row`] reads them (a macro for `concat!`).
macro_rules! node_columns {
    () => {
        "nid, parent, role, kind, speaker, content, created_at, metadata, rewound"
    };
}

/// Creates the session if needed and locks its row, in one statement (`ON CONFLICT DO UPDATE`
/// locks the existing row as `FOR UPDATE` would, and waits for a concurrent creator).
const CREATE_SESSION: &str = "INSERT INTO sessions (sid) VALUES ($1)
    ON CONFLICT (sid) DO UPDATE SET sid = EXCLUDED.sid
    RETURNING head, node_count, title, project";
/// The session lock every mutation takes first.
const LOCK_SESSION: &str =
    "SELECT head, node_count, title, project FROM sessions WHERE sid = $1 FOR UPDATE";
/// Which of the IDs are stored (`TRUE`), and which some stored node names as its parent
/// (`FALSE`: only those can close a cycle).
const IDS: &str = "SELECT nid, TRUE FROM nodes WHERE sid = $1 AND nid = ANY($2)
    UNION ALL
    SELECT DISTINCT parent, FALSE FROM nodes WHERE sid = $1 AND parent = ANY($2)";
const PARENT_OF: &str = "SELECT parent FROM nodes WHERE sid = $1 AND nid = $2";
const INSERT_NODES: &str = "INSERT INTO nodes
        (sid, nid, seq, parent, role, kind, speaker, content, created_at, metadata, rewound)
    SELECT $1, u.nid, u.seq, u.parent, u.role, u.kind, u.speaker, u.content, u.created_at,
           u.metadata, u.rewound
    FROM unnest($2::bytea[], $3::int8[], $4::bytea[], $5::text[], $6::text[], $7::text[],
                $8::bytea[], $9::int8[], $10::text[], $11::bool[])
        AS u(nid, seq, parent, role, kind, speaker, content, created_at, metadata, rewound)";
const AFTER_APPEND: &str = "UPDATE sessions SET node_count = node_count + $2,
        updated_at = GREATEST(updated_at, $3),
        head = CASE WHEN $4 THEN $5 ELSE COALESCE(head, $5) END
    WHERE sid = $1";
const NODE: &str = concat!("SELECT ", node_columns!(), " FROM nodes WHERE sid = $1 AND nid = $2");
/// The walk from `$2` toward the root, nearest first, at most `$3` nodes (NULL: all). Each step
/// is one primary-key lookup; the recursion runs only as far as the rows are fetched.
const WALK: &str = concat!(
    "WITH RECURSIVE walk AS (SELECT ",
    node_columns!(),
    " FROM nodes WHERE sid = $1 AND nid = $2
     UNION ALL
     SELECT n.nid, n.parent, n.role, n.kind, n.speaker, n.content, n.created_at, n.metadata,
            n.rewound
     FROM walk w JOIN nodes n ON n.sid = $1 AND n.nid = w.parent)
     SELECT * FROM walk LIMIT $3"
);
const SESSION: &str =
    "SELECT head, updated_at, title, project FROM sessions WHERE sid = $1 AND node_count > 0";
const LIST: &str = "SELECT sid, head, updated_at, title, project, node_count FROM sessions
    WHERE node_count > 0 ORDER BY updated_at DESC, sid OFFSET $1 LIMIT $2";
const SHAPE: &str =
    "SELECT nid, parent, rewound, created_at FROM nodes WHERE sid = $1 ORDER BY seq";
const META_READ: &str = "SELECT nid, metadata FROM nodes WHERE sid = $1 AND nid = ANY($2)";
const META_WRITE: &str = "UPDATE nodes AS n SET metadata = u.metadata
    FROM unnest($2::bytea[], $3::text[]) AS u(nid, metadata)
    WHERE n.sid = $1 AND n.nid = u.nid";
const SET_HEAD: &str =
    "UPDATE sessions SET head = $2, updated_at = GREATEST(updated_at, $3) WHERE sid = $1";
const REWIND: &str = "UPDATE nodes SET rewound = TRUE WHERE sid = $1 AND nid = $2";
const TOUCH: &str = "UPDATE sessions SET updated_at = GREATEST(updated_at, $2) WHERE sid = $1";
const REWIND_MANY: &str =
    "UPDATE nodes SET rewound = TRUE WHERE sid = $1 AND nid = ANY($2) AND NOT rewound";
/// A copied session's fields: all of them for a session new here (`$6`), else only where this
/// store has none; `updated_at` the later. Touches the row only when something changes.
const ADOPT: &str = "UPDATE sessions SET
        head = CASE WHEN $6 THEN $2 ELSE COALESCE(head, $2) END,
        title = CASE WHEN $6 THEN $3 ELSE COALESCE(title, $3) END,
        project = CASE WHEN $6 THEN $4 ELSE COALESCE(project, $4) END,
        updated_at = GREATEST(updated_at, $5)
    WHERE sid = $1 AND ($6
        OR (head IS NULL AND $2::bytea IS NOT NULL)
        OR (title IS NULL AND $3::bytea IS NOT NULL)
        OR (project IS NULL AND $4::bytea IS NOT NULL)
        OR updated_at < $5)";
const SET_TITLE: &str = "UPDATE sessions SET title = $2 WHERE sid = $1";
const NODES: &str = concat!("SELECT ", node_columns!(), " FROM nodes WHERE sid = $1 ORDER BY seq");
/// What a forget compares, per node: whether content and speaker are already gone, and the
/// metadata.
const FORGET_READ: &str = "SELECT nid, content = ''::bytea AND speaker IS NULL, metadata
    FROM nodes WHERE sid = $1 AND nid = ANY($2)";
/// The one change `migrations/0002_forget.sql` lets through besides metadata and rewinds.
const FORGET_WRITE: &str = "UPDATE nodes AS n SET content = ''::bytea, speaker = NULL,
        metadata = u.metadata
    FROM unnest($2::bytea[], $3::text[]) AS u(nid, metadata)
    WHERE n.sid = $1 AND n.nid = u.nid";
const SET_PROJECT: &str = "UPDATE sessions SET project = $2 WHERE sid = $1";
/// The texts a rewrite passes to its map: every non-empty content, in append order.
const REWRITE_READ: &str =
    "SELECT nid, content FROM nodes WHERE sid = $1 AND content <> ''::bytea ORDER BY seq";
/// The change `migrations/0003_rewrite.sql` lets through in a transaction that declared it
/// ([`DECLARE_REWRITE`]).
const REWRITE_WRITE: &str = "UPDATE nodes AS n SET content = u.content
    FROM unnest($2::bytea[], $3::bytea[]) AS u(nid, content)
    WHERE n.sid = $1 AND n.nid = u.nid";
/// A rewrite's declaration, for this transaction only.
const DECLARE_REWRITE: &str = "SET LOCAL scriptorium.rewrite_texts = 'on'";

/// The first chunk of an ancestor walk; each next one is four times larger, up to
/// [`WALK_CHUNK_MAX`].
const WALK_CHUNK_FIRST: i64 = 8;
const WALK_CHUNK_MAX: i64 = 4096;

/// What [`PgStore::copy_session`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copied {
    /// How many nodes were new here.
    pub nodes: usize,
    /// Whether anything changed (nodes, metadata, rewinds, head, title, project, time).
    pub changed: bool,
}

/// The [`SessionStore`] on PostgreSQL (see the crate documentation for its invariants).
pub struct PgStore {
    worker: Worker,
    clock: Arc<dyn Clock>,
    target: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("target", &self.target).finish_non_exhaustive()
    }
}

/// `user@host:port/database`, never the password.
fn describe(config: &postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                postgres::config::Host::Tcp(name) => name.clone(),
                postgres::config::Host::Unix(path) => path.display().to_string(),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) => format!("{name}:{port}"),
                None => name,
            }
        })
        .collect();
    format!(
        "{}@{}/{}",
        config.get_user().unwrap_or_default(),
        hosts.join(","),
        config.get_dbname().unwrap_or_default()
    )
}

/// Whether a mutation may create the session.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Create {
    Yes,
    No,
}

/// The locked session row.
struct Locked {
    head: Option<String>,
    nodes: i64,
    title: Option<String>,
    project: Option<String>,
}

fn lock_session(
    tx: &mut Transaction<'_>,
    statements: &Statements,
    session: &SessionId,
    create: Create,
) -> Result<Locked, Error> {
    let sid = session.0.as_bytes();
    let row = match create {
        Create::Yes => tx.query_opt(&statements.create, &[&sid]),
        Create::No => tx.query_opt(&statements.lock, &[&sid]),
    }
    .map_err(db_error)?;
    match row {
        Some(row) if create == Create::Yes || row.get::<_, i64>(1) > 0 => Ok(Locked {
            head: codec::opt_text(row.get(0))?,
            nodes: row.get(1),
            title: codec::opt_text(row.get(2))?,
            project: codec::opt_text(row.get(3))?,
        }),
        _ => Err(Error::SessionNotFound(session.clone())),
    }
}

/// The two statements every mutation starts with.
struct Statements {
    create: Statement,
    lock: Statement,
}

fn node_not_found(session: &SessionId, node: &NodeId) -> Error {
    Error::NodeNotFound { session: session.clone(), node: node.clone() }
}

/// How an append treats a node already stored.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `append`: a stored ID is [`Error::DuplicateNode`]; the head moves to the node.
    One,
    /// `append_batch`: stored IDs are skipped; the head moves only when there was none.
    Batch,
}

/// The statements of an append.
const APPEND_SQL: [&str; 6] =
    [CREATE_SESSION, LOCK_SESSION, IDS, PARENT_OF, INSERT_NODES, AFTER_APPEND];

fn append_nodes(
    conn: &mut Conn,
    session: &SessionId,
    nodes: Vec<Node>,
    mode: Mode,
) -> Result<usize, Error> {
    let (client, statements) = conn.prepared(APPEND_SQL)?;
    let mut tx = client.transaction().map_err(db_error)?;
    let count = append_in(&mut tx, &statements, session, nodes, mode)?;
    if count > 0 {
        tx.commit().map_err(db_error)?;
    }
    Ok(count)
}

/// Appends inside `tx` (after locking the session, created if needed) with the statements of
/// [`APPEND_SQL`]; returns how many nodes were new. The caller commits.
fn append_in(
    tx: &mut Transaction<'_>,
    statements: &[Statement; 6],
    session: &SessionId,
    nodes: Vec<Node>,
    mode: Mode,
) -> Result<usize, Error> {
    let [create, lock, ids_statement, parent_of, insert, after] = statements;
    let sid = session.0.as_bytes();
    let lock = Statements { create: create.clone(), lock: lock.clone() };
    let locked = lock_session(tx, &lock, session, Create::Yes)?;
    let ids: Vec<&[u8]> = nodes.iter().map(|n| n.id.0.as_bytes()).collect();
    let (mut stored, mut referenced) = (HashSet::new(), HashSet::new());
    for row in tx.query(ids_statement, &[&sid, &ids]).map_err(db_error)? {
        let id = NodeId(codec::text(row.get(0))?);
        let set = if row.get::<_, bool>(1) { &mut stored } else { &mut referenced };
        set.insert(id);
    }
    let mut accepted: Vec<Node> = Vec::with_capacity(nodes.len());
    let mut staged: HashMap<NodeId, usize> = HashMap::new();
    // IDs named as a parent by a node staged earlier in this batch.
    let mut batch_parents: HashSet<NodeId> = HashSet::new();
    for node in nodes {
        if stored.contains(&node.id) || staged.contains_key(&node.id) {
            if mode == Mode::One {
                return Err(Error::DuplicateNode { session: session.clone(), node: node.id });
            }
            continue;
        }
        if node.parent.as_ref() == Some(&node.id)
            || referenced.contains(&node.id)
            || batch_parents.contains(&node.id)
        {
            let cycle = dag::closes_cycle_by(&node.id, node.parent.as_ref(), |id| {
                if let Some(&k) = staged.get(id) {
                    return Ok(accepted[k].parent.clone());
                }
                let row = tx.query_opt(parent_of, &[&sid, &id.0.as_bytes()]).map_err(db_error)?;
                match row {
                    Some(row) => Ok(codec::opt_text(row.get(0))?.map(NodeId)),
                    None => Ok(None),
                }
            })?;
            if cycle {
                return Err(Error::ParentCycle { session: session.clone(), node: node.id });
            }
        }
        if let Some(parent) = &node.parent {
            batch_parents.insert(parent.clone());
        }
        staged.insert(node.id.clone(), accepted.len());
        accepted.push(node);
    }
    let Some(last) = accepted.last() else { return Ok(0) };
    let count = accepted.len();
    let newest = accepted.iter().map(|n| n.created_at.0).max().unwrap_or(0);
    let nids: Vec<&[u8]> = accepted.iter().map(|n| n.id.0.as_bytes()).collect();
    let seqs: Vec<i64> = (0..count).map(|i| locked.nodes + i as i64).collect();
    let parents: Vec<Option<&[u8]>> =
        accepted.iter().map(|n| n.parent.as_ref().map(|p| p.0.as_bytes())).collect();
    let roles: Vec<&str> = accepted.iter().map(|n| n.role.as_str()).collect();
    let kinds: Vec<&str> = accepted.iter().map(|n| n.kind.as_str()).collect();
    let speakers: Vec<Option<String>> =
        accepted.iter().map(|n| codec::speaker_text(n.speaker.as_ref())).collect();
    let contents: Vec<&[u8]> = accepted.iter().map(|n| n.content.as_bytes()).collect();
    let created: Vec<i64> = accepted.iter().map(|n| n.created_at.0).collect();
    let metadata: Vec<String> =
        accepted.iter().map(|n| codec::metadata_text(&n.metadata)).collect();
    let rewound: Vec<bool> = accepted.iter().map(|n| n.rewound).collect();
    let params: [&(dyn ToSql + Sync); 11] = [
        &sid, &nids, &seqs, &parents, &roles, &kinds, &speakers, &contents, &created, &metadata,
        &rewound,
    ];
    tx.execute(insert, &params).map_err(db_error)?;
    let move_head = mode == Mode::One;
    let count_i64 = i64::try_from(count).expect("a batch fits in memory");
    tx.execute(after, &[&sid, &count_i64, &newest, &move_head, &last.id.0.as_bytes()])
        .map_err(db_error)?;
    Ok(count)
}

/// Merges `batch` inside `tx` (`META_READ`, `META_WRITE`); returns whether anything changed.
/// Every node must exist ([`Error::NodeNotFound`] otherwise, before anything is written).
fn merge_in(
    tx: &mut Transaction<'_>,
    read: &Statement,
    write: &Statement,
    session: &SessionId,
    batch: &MetadataBatch,
) -> Result<bool, Error> {
    let key = session.0.as_bytes();
    let ids: Vec<&[u8]> = batch.keys().map(|n| n.0.as_bytes()).collect();
    let mut stored = HashMap::new();
    for row in tx.query(read, &[&key, &ids]).map_err(db_error)? {
        let metadata: String = row.get(1);
        stored.insert(NodeId(codec::text(row.get(0))?), codec::metadata_of(&metadata)?);
    }
    let mut changed_ids: Vec<&[u8]> = Vec::new();
    let mut changed: Vec<String> = Vec::new();
    for (node_id, entries) in batch {
        let Some(metadata) = stored.get_mut(node_id) else {
            return Err(node_not_found(session, node_id));
        };
        let before = metadata.clone();
        metadata.extend(entries.iter().map(|(k, v)| (k.clone(), v.clone())));
        if *metadata != before {
            changed_ids.push(node_id.0.as_bytes());
            changed.push(codec::metadata_text(metadata));
        }
    }
    if !changed.is_empty() {
        tx.execute(write, &[&key, &changed_ids, &changed]).map_err(db_error)?;
    }
    Ok(!changed.is_empty())
}

/// The transaction of [`SessionStore::rewrite_texts`] on the worker: locks the session, asks
/// the calling thread to map its texts (the non-empty contents in append order, then the
/// title when it has one), writes what changed and commits; rolls back when nothing did.
/// Returns how many nodes changed, and whether the title did.
fn rewrite_in(
    conn: &mut Conn,
    session: &SessionId,
    asker: &Asker<Vec<String>, Vec<Option<String>>>,
) -> Result<(usize, bool), Error> {
    let [create, lock] = conn.prepared([CREATE_SESSION, LOCK_SESSION])?.1;
    let statements = Statements { create, lock };
    let (client, [read, write, set_title]) =
        conn.prepared([REWRITE_READ, REWRITE_WRITE, SET_TITLE])?;
    let mut tx = client.transaction().map_err(db_error)?;
    let locked = lock_session(&mut tx, &statements, session, Create::No)?;
    let key = session.0.as_bytes();
    let mut ids: Vec<Vec<u8>> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    for row in tx.query(&read, &[&key]).map_err(db_error)? {
        ids.push(row.get(0));
        texts.push(codec::text(row.get(1))?);
    }
    let old_title = locked.title.filter(|t| !t.is_empty());
    let titled = old_title.is_some();
    texts.extend(old_title);
    let mut mapped = asker.ask(texts)?;
    let title = if titled { mapped.pop().flatten() } else { None };
    let (changed_ids, changed): (Vec<Vec<u8>>, Vec<Vec<u8>>) =
        ids.into_iter().zip(mapped).filter_map(|(id, new)| Some((id, new?.into_bytes()))).unzip();
    if changed.is_empty() && title.is_none() {
        return Ok((0, false));
    }
    if !changed.is_empty() {
        tx.batch_execute(DECLARE_REWRITE).map_err(db_error)?;
        tx.execute(&write, &[&key, &changed_ids, &changed]).map_err(db_error)?;
    }
    if let Some(title) = &title {
        tx.execute(&set_title, &[&key, &title.as_bytes()]).map_err(db_error)?;
    }
    tx.commit().map_err(db_error)?;
    Ok((changed.len(), title.is_some()))
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/database`, or the
    /// `key=value` form) with the system clock, and brings its schema up to date. TLS follows
    /// the `sslmode` and `sslrootcert` parameters (see the crate documentation); settings that
    /// cannot work, or a server certificate that does not verify, are
    /// [`Error::DatabaseTls`], which retrying does not help.
    ///
    /// Database effect: applies the pending migrations (one transaction; see
    /// [`crate::migrate`]).
    pub fn connect(url: &str) -> Result<PgStore, Error> {
        PgStore::connect_with_clock(url, Arc::new(SystemClock))
    }

    /// [`PgStore::connect`] with `clock` (the `at` of head moves and rewinds).
    pub fn connect_with_clock(url: &str, clock: Arc<dyn Clock>) -> Result<PgStore, Error> {
        let (config, settings) = crate::tls::configure(url)?;
        let target = describe(&config);
        let named = |err| match err {
            Error::Database { message, retryable } => {
                Error::Database { message: format!("{target}: {message}"), retryable }
            }
            Error::DatabaseTls { message } => {
                Error::DatabaseTls { message: format!("{target}: {message}") }
            }
            other => other,
        };
        let tls = Tls::new(&settings).map_err(named)?;
        let worker = Worker::start(config, tls).map_err(named)?;
        worker.run(|conn| conn.client().map(|_| ())).map_err(named)?;
        let store = PgStore { worker, clock, target };
        Ok(store)
    }

    /// The database this store uses, as `user@host:port/database` (no password).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Sessions with their node counts, newest `updated_at` first (ties by ID), as
    /// [`scriptorium_session_dag::EmbeddedStore::list_summaries`] lists them.
    pub fn list_summaries(&self, page: Page) -> Result<Vec<SessionSummary>, Error> {
        let offset = i64::try_from(page.offset).unwrap_or(i64::MAX);
        let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
        self.worker.run(move |conn| {
            let (client, [list]) = conn.prepared([LIST])?;
            let rows = client.query(&list, &[&offset, &limit]).map_err(db_error)?;
            rows.iter()
                .map(|row| {
                    let nodes: i64 = row.get(5);
                    Ok(SessionSummary {
                        session: Session {
                            id: SessionId(codec::text(row.get(0))?),
                            head: codec::opt_text(row.get(1))?.map(NodeId),
                            updated_at: Timestamp(row.get(2)),
                            title: codec::opt_text(row.get(3))?,
                            project: codec::opt_text(row.get(4))?,
                        },
                        nodes: usize::try_from(nodes).unwrap_or(0),
                    })
                })
                .collect()
        })
    }

    /// Copies a session from another store (`scriptorium sessions migrate`): `nodes` are all
    /// its nodes in append order. Only adds, in one transaction: the nodes this store lacks,
    /// the metadata keys whose values differ, the rewinds, and the head, title and project
    /// where this store has none (a session new here takes them all); `updated_at` becomes the
    /// later of both. Copying the same session again changes nothing and returns
    /// `changed: false`.
    pub fn copy_session(&self, session: &Session, nodes: Vec<Node>) -> Result<Copied, Error> {
        let session = session.clone();
        self.worker.run(move |conn| {
            let append = conn.prepared(APPEND_SQL)?.1;
            let (client, [read, write, rewind_many, adopt]) =
                conn.prepared([META_READ, META_WRITE, REWIND_MANY, ADOPT])?;
            let mut tx = client.transaction().map_err(db_error)?;
            let sid = session.id.0.as_bytes();
            let lock = Statements { create: append[0].clone(), lock: append[1].clone() };
            let fresh = lock_session(&mut tx, &lock, &session.id, Create::Yes)?.nodes == 0;
            let marks: MetadataBatch = nodes
                .iter()
                .filter(|n| !n.metadata.is_empty())
                .map(|n| (n.id.clone(), n.metadata.clone()))
                .collect();
            let rewound: Vec<Vec<u8>> =
                nodes.iter().filter(|n| n.rewound).map(|n| n.id.0.as_bytes().to_vec()).collect();
            let appended = append_in(&mut tx, &append, &session.id, nodes, Mode::Batch)?;
            let marked = merge_in(&mut tx, &read, &write, &session.id, &marks)?;
            let rewinds = tx.execute(&rewind_many, &[&sid, &rewound]).map_err(db_error)?;
            let head = session.head.as_ref().map(|h| h.0.as_bytes());
            let title = session.title.as_ref().map(String::as_bytes);
            let project = session.project.as_ref().map(String::as_bytes);
            let adopted = tx
                .execute(&adopt, &[&sid, &head, &title, &project, &session.updated_at.0, &fresh])
                .map_err(db_error)?;
            let changed = appended > 0 || marked || rewinds > 0 || adopted > 0;
            if changed {
                tx.commit().map_err(db_error)?;
            }
            Ok(Copied { nodes: appended, changed })
        })
    }

    /// Runs one mutation of `session` under its row lock: `change` sees the locked row and
    /// writes through the transaction; the transaction commits when it returns `Ok`.
    fn mutate<const N: usize, R: Send + 'static>(
        &self,
        session: &SessionId,
        sql: [&'static str; N],
        change: impl FnOnce(&mut Transaction<'_>, &Locked, &[Statement; N]) -> Result<R, Error>
        + Send
        + 'static,
    ) -> Result<R, Error> {
        let session = session.clone();
        self.worker.run(move |conn| {
            let [create, lock] = conn.prepared([CREATE_SESSION, LOCK_SESSION])?.1;
            let statements = Statements { create, lock };
            let (client, prepared) = conn.prepared(sql)?;
            let mut tx = client.transaction().map_err(db_error)?;
            let locked = lock_session(&mut tx, &statements, &session, Create::No)?;
            let result = change(&mut tx, &locked, &prepared)?;
            tx.commit().map_err(db_error)?;
            Ok(result)
        })
    }

    fn move_head(
        &self,
        session: &SessionId,
        node: &NodeId,
        at: Option<Timestamp>,
    ) -> Result<(), Error> {
        let (sid, node) = (session.clone(), node.clone());
        let clock = Arc::clone(&self.clock);
        self.mutate(session, [PARENT_OF, SET_HEAD], move |tx, locked, [exists, set]| {
            let key = [sid.0.as_bytes(), node.0.as_bytes()];
            if tx.query_opt(exists, &[&key[0], &key[1]]).map_err(db_error)?.is_none() {
                return Err(node_not_found(&sid, &node));
            }
            if locked.head.as_deref() == Some(node.as_str()) {
                return Ok(());
            }
            let at = at.unwrap_or_else(|| clock.now()).0;
            tx.execute(set, &[&key[0], &key[1], &at]).map_err(db_error)?;
            Ok(())
        })
    }

    fn set_field(
        &self,
        session: &SessionId,
        sql: &'static str,
        value: Option<String>,
        current: fn(&Locked) -> &Option<String>,
    ) -> Result<(), Error> {
        let sid = session.clone();
        self.mutate(session, [sql], move |tx, locked, [set]| {
            if *current(locked) == value {
                return Ok(());
            }
            let bytes = value.as_ref().map(String::as_bytes);
            tx.execute(set, &[&sid.0.as_bytes(), &bytes]).map_err(db_error)?;
            Ok(())
        })
    }

    /// After a forget or a rewrite committed, and best effort, a `VACUUM (SKIP_LOCKED)` of the
    /// tables it changed, so the old row versions leave the tables' pages (and their TOAST
    /// tables'). A vacuum that cannot take its lock at once, or that fails, is skipped: the
    /// change stands, autovacuum does the work later.
    fn vacuum(&self, nodes: bool, sessions: bool) {
        let tables = match (nodes, sessions) {
            (true, true) => "nodes, sessions",
            (true, false) => "nodes",
            (false, true) => "sessions",
            (false, false) => return,
        };
        let vacuum = format!("VACUUM (SKIP_LOCKED) {tables}");
        let _ =
            self.worker.run(move |conn| conn.client()?.batch_execute(&vacuum).map_err(db_error));
    }

    /// Up to `limit` nodes (all when `None`) from `start` toward the root, nearest first.
    fn ancestors(
        &self,
        session: &SessionId,
        start: &NodeId,
        limit: Option<i64>,
    ) -> Result<Vec<Node>, Error> {
        let (sid, start) = (session.clone(), start.clone());
        self.worker.run(move |conn| {
            let (client, [walk]) = conn.prepared([WALK])?;
            let rows = client
                .query(&walk, &[&sid.0.as_bytes(), &start.0.as_bytes(), &limit])
                .map_err(db_error)?;
            rows.iter().map(node_from_row).collect()
        })
    }
}

impl SessionStore for PgStore {
    /// Atomicity: one transaction (the node and the session's head).
    fn append(&self, session: &SessionId, node: Node) -> Result<(), Error> {
        let sid = session.clone();
        self.worker.run(move |conn| append_nodes(conn, &sid, vec![node], Mode::One)).map(|_| ())
    }

    /// Atomicity: one transaction; a node that would close a parent cycle fails the whole batch
    /// with [`Error::ParentCycle`] before anything is written.
    fn append_batch(&self, session: &SessionId, nodes: Vec<Node>) -> Result<usize, Error> {
        let sid = session.clone();
        self.worker.run(move |conn| append_nodes(conn, &sid, nodes, Mode::Batch))
    }

    fn set_head(&self, session: &SessionId, node: &NodeId) -> Result<(), Error> {
        self.move_head(session, node, None)
    }

    fn set_head_at(&self, session: &SessionId, node: &NodeId, at: Timestamp) -> Result<(), Error> {
        self.move_head(session, node, Some(at))
    }

    /// The session's `updated_at` moves to the clock's time; rewinding a rewound node changes
    /// nothing.
    fn rewind(&self, session: &SessionId, node: &NodeId) -> Result<(), Error> {
        let (sid, node) = (session.clone(), node.clone());
        let clock = Arc::clone(&self.clock);
        self.mutate(session, [NODE, REWIND, TOUCH], move |tx, _, [read, rewind, touch]| {
            let key = [sid.0.as_bytes(), node.0.as_bytes()];
            let Some(row) = tx.query_opt(read, &[&key[0], &key[1]]).map_err(db_error)? else {
                return Err(node_not_found(&sid, &node));
            };
            if row.get::<_, bool>(8) {
                return Ok(());
            }
            tx.execute(rewind, &[&key[0], &key[1]]).map_err(db_error)?;
            tx.execute(touch, &[&key[0], &clock.now().0]).map_err(db_error)?;
            Ok(())
        })
    }

    fn branch(&self, session: &SessionId, tip: Option<&NodeId>) -> Result<Vec<Node>, Error> {
        let Some(found) = self.session(session)? else {
            return Err(Error::SessionNotFound(session.clone()));
        };
        let Some(tip) = tip.cloned().or(found.head) else { return Ok(Vec::new()) };
        let mut nodes = self.ancestors(session, &tip, None)?;
        if nodes.is_empty() {
            return Err(node_not_found(session, &tip));
        }
        nodes.retain(|n| !n.rewound);
        nodes.reverse();
        Ok(nodes)
    }

    /// One consistent read of the session's head and node shapes (IDs, parents, flags).
    fn tips(&self, session: &SessionId) -> Result<Vec<NodeId>, Error> {
        let sid = session.clone();
        self.worker.run(move |conn| {
            let (client, [read_session, shape]) = conn.prepared([SESSION, SHAPE])?;
            let mut tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(db_error)?;
            let key = sid.0.as_bytes();
            let Some(row) = tx.query_opt(&read_session, &[&key]).map_err(db_error)? else {
                return Err(Error::SessionNotFound(sid.clone()));
            };
            let head = codec::opt_text(row.get(0))?.map(NodeId);
            let mut nodes = Vec::new();
            let mut index = HashMap::new();
            for row in tx.query(&shape, &[&key]).map_err(db_error)? {
                let id = NodeId(codec::text(row.get(0))?);
                index.insert(id.clone(), nodes.len());
                nodes.push(Node {
                    id,
                    parent: codec::opt_text(row.get(1))?.map(NodeId),
                    role: scriptorium_session_dag::Role::User,
                    kind: scriptorium_session_dag::NodeKind::Message,
                    speaker: None,
                    content: String::new(),
                    created_at: Timestamp(row.get(3)),
                    metadata: Default::default(),
                    rewound: row.get(2),
                });
            }
            tx.commit().map_err(db_error)?;
            Ok(dag::tips(&nodes, &index, head.as_ref()))
        })
    }

    fn node(&self, session: &SessionId, node: &NodeId) -> Result<Option<Node>, Error> {
        let (sid, node) = (session.clone(), node.clone());
        self.worker.run(move |conn| {
            let (client, [read]) = conn.prepared([NODE])?;
            let row = client
                .query_opt(&read, &[&sid.0.as_bytes(), &node.0.as_bytes()])
                .map_err(db_error)?;
            row.as_ref().map(node_from_row).transpose()
        })
    }

    /// Atomicity: one transaction under the session's row lock; patches that change nothing
    /// are dropped, and an all-no-op batch writes nothing. Every node must exist
    /// ([`Error::NodeNotFound`] otherwise, before anything is written).
    fn merge_metadata(&self, session: &SessionId, batch: &MetadataBatch) -> Result<(), Error> {
        let (sid, batch) = (session.clone(), batch.clone());
        self.mutate(session, [META_READ, META_WRITE], move |tx, _, [read, write]| {
            merge_in(tx, read, write, &sid, &batch).map(|_| ())
        })
    }

    fn session(&self, session: &SessionId) -> Result<Option<Session>, Error> {
        let sid = session.clone();
        self.worker.run(move |conn| {
            let (client, [read]) = conn.prepared([SESSION])?;
            let Some(row) = client.query_opt(&read, &[&sid.0.as_bytes()]).map_err(db_error)? else {
                return Ok(None);
            };
            Ok(Some(Session {
                head: codec::opt_text(row.get(0))?.map(NodeId),
                updated_at: Timestamp(row.get(1)),
                title: codec::opt_text(row.get(2))?,
                project: codec::opt_text(row.get(3))?,
                id: sid,
            }))
        })
    }

    fn list_sessions(&self, page: Page) -> Result<Vec<Session>, Error> {
        Ok(self.list_summaries(page)?.into_iter().map(|s| s.session).collect())
    }

    /// Fetches the ancestors in chunks (8, 32, 128, … up to 4096 nodes), so a walk the visitor
    /// stops early reads few rows; each chunk is one statement.
    fn walk_ancestors(
        &self,
        session: &SessionId,
        tip: &NodeId,
        visit: &mut dyn FnMut(&Node) -> bool,
    ) -> Result<bool, Error> {
        let mut start = tip.clone();
        let mut chunk = WALK_CHUNK_FIRST;
        let mut first = true;
        loop {
            let nodes = self.ancestors(session, &start, Some(chunk))?;
            let Some(last) = nodes.last() else { return Ok(!first) };
            first = false;
            let next = last.parent.clone();
            let full = nodes.len() as i64 == chunk;
            for node in &nodes {
                if !visit(node) {
                    return Ok(true);
                }
            }
            match next {
                Some(parent) if full => start = parent,
                _ => return Ok(true),
            }
            chunk = (chunk * 4).min(WALK_CHUNK_MAX);
        }
    }

    fn set_title(&self, session: &SessionId, title: Option<String>) -> Result<(), Error> {
        self.set_field(session, SET_TITLE, title, |locked| &locked.title)
    }

    /// One statement, ordered by append order (the `(sid, seq)` index).
    fn nodes(&self, session: &SessionId) -> Result<Vec<Node>, Error> {
        let sid = session.clone();
        self.worker.run(move |conn| {
            let (client, [read]) = conn.prepared([NODES])?;
            let rows = client.query(&read, &[&sid.0.as_bytes()]).map_err(db_error)?;
            rows.iter().map(node_from_row).collect()
        })
    }

    /// Atomicity: one transaction under the session's row lock: one read of the named nodes
    /// by primary key, one `UPDATE` of those that change, and the title. `updated_at` stays.
    /// Then, outside the transaction and best effort, a `VACUUM (SKIP_LOCKED)` of the tables
    /// it changed, so the old row versions leave the tables' pages (a vacuum that cannot take
    /// its lock at once, or that fails, is skipped: the forget stands).
    ///
    /// What the database may still hold: a dump (`pg_dump`) reads live rows only and holds
    /// none of it. On disk, the old row versions stay in the table's (and its TOAST table's)
    /// pages until a vacuum prunes them (the one above cannot while an older snapshot is
    /// open), and a page's freed space is not overwritten at once; the write-ahead log holds
    /// them until its segments are recycled (longer with `wal_keep_size`, a replication slot
    /// or WAL archiving), and so do backups, archives and replicas made before.
    fn forget(
        &self,
        session: &SessionId,
        nodes: &[NodeId],
        erase_title: bool,
    ) -> Result<usize, Error> {
        let (sid, nodes) = (session.clone(), nodes.to_vec());
        let sql = [FORGET_READ, FORGET_WRITE, SET_TITLE];
        let (changed, title) =
            self.mutate(session, sql, move |tx, locked, [read, write, set_title]| {
                let key = sid.0.as_bytes();
                let ids: Vec<&[u8]> = nodes.iter().map(|n| n.0.as_bytes()).collect();
                let mut changed_ids: Vec<Vec<u8>> = Vec::new();
                let mut changed: Vec<String> = Vec::new();
                for row in tx.query(read, &[&key, &ids]).map_err(db_error)? {
                    let erased: bool = row.get(1);
                    let stored: String = row.get(2);
                    let metadata = codec::metadata_of(&stored)?;
                    let kept = forgotten_metadata(&metadata);
                    if !erased || kept != metadata {
                        changed_ids.push(row.get(0));
                        changed.push(codec::metadata_text(&kept));
                    }
                }
                if !changed.is_empty() {
                    tx.execute(write, &[&key, &changed_ids, &changed]).map_err(db_error)?;
                }
                let title = erase_title && locked.title.is_some();
                if title {
                    tx.execute(set_title, &[&key, &None::<&[u8]>]).map_err(db_error)?;
                }
                Ok((changed.len(), title))
            })?;
        self.vacuum(changed > 0, title);
        Ok(changed)
    }

    /// Atomicity: one transaction under the session's row lock: one read of the session's
    /// non-empty contents (the title came with the lock), `map` on the calling thread, one
    /// `UPDATE` of the contents that change (in a transaction that declares itself a rewrite,
    /// which the schema's guard lets through: `migrations/0003_rewrite.sql`) and one of the
    /// title. `updated_at` stays. Then the vacuum of [`SessionStore::forget`], and what the
    /// database may still hold is what a forget leaves (see there).
    ///
    /// `map` sees every text once: PostgreSQL keeps no superseded title. The session's
    /// contents are held in memory at once (as [`SessionStore::nodes`] holds its nodes), and
    /// the session stays locked while `map` runs.
    fn rewrite_texts(
        &self,
        session: &SessionId,
        map: &mut dyn FnMut(&str) -> Option<String>,
    ) -> Result<usize, Error> {
        let sid = session.clone();
        let mut answer = |texts: Vec<String>| -> Vec<Option<String>> {
            texts
                .iter()
                .map(
                    |text| if text.is_empty() { None } else { map(text).filter(|new| new != text) },
                )
                .collect()
        };
        let (changed, title) = self
            .worker
            .run_asking(move |conn, asker| rewrite_in(conn, &sid, asker), &mut answer)?;
        self.vacuum(changed > 0, title);
        Ok(changed + usize::from(title))
    }

    fn set_project(&self, session: &SessionId, project: Option<String>) -> Result<(), Error> {
        self.set_field(session, SET_PROJECT, project, |locked| &locked.project)
    }
}
