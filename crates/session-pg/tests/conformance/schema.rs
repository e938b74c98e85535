//! What only the PostgreSQL store has: its migrations, the schema's own append-only guard, the
//! indexed ancestor walk, and its connection errors.

use std::sync::Arc;

use postgres::{Client, NoTls};
use scriptorium_session_dag::{ErrorCode, SessionId, SessionStore};
use scriptorium_session_pg::PgStore;
use scriptorium_session_pg::migrate::MIGRATIONS;
use scriptorium_testkit::pg::{Cluster, pg_trial};
use scriptorium_testkit::{Failed, Trial};

type Check = fn(&Cluster) -> Result<(), Failed>;

pub(crate) fn trials(cluster: &Result<Option<Arc<Cluster>>, String>) -> Vec<Trial> {
    let checks: [(&str, Check); 11] = [
        ("migrations_apply_once_even_when_processes_race", migrations_apply_once),
        ("a_schema_newer_than_the_build_is_refused", newer_schema_is_refused),
        ("the_schema_refuses_deleting_or_rewriting_nodes", schema_is_append_only),
        ("the_schema_lets_a_forget_through_and_nothing_else", schema_lets_only_a_forget_through),
        ("the_schema_lets_a_declared_rewrite_of_content_through", schema_lets_a_declared_rewrite),
        ("a_rewrite_leaves_no_row_version_holding_an_old_text", rewrite_leaves_no_row_version),
        ("a_version_1_database_with_sessions_is_migrated_and_forgets", version_1_is_migrated),
        ("the_ancestor_walk_follows_the_primary_key", walk_uses_the_index),
        ("connection_failures_have_a_stable_code_and_no_password", connection_errors),
        ("a_lost_connection_is_reopened_by_the_next_call", lost_connection_is_reopened),
        ("calls_from_inside_a_tokio_runtime_work", calls_inside_a_runtime),
    ];
    checks.into_iter().map(|(name, check)| pg_trial(name, cluster, check)).collect()
}

fn client(url: &str) -> Result<Client, Failed> {
    Ok(Client::connect(url, NoTls)?)
}

fn migrations_apply_once(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let stores: Vec<PgStore> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| PgStore::connect(&url))).collect();
        handles.into_iter().map(|h| h.join().expect("thread ends")).collect::<Vec<_>>()
    })
    .into_iter()
    .collect::<Result<_, _>>()?;
    drop(stores);
    PgStore::connect(&url)?;
    let rows =
        client(&url)?.query("SELECT version FROM schema_migrations ORDER BY version", &[])?;
    let versions: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    let expected: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(versions, expected);
    Ok(())
}

fn newer_schema_is_refused(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    PgStore::connect(&url)?;
    client(&url)?
        .execute("INSERT INTO schema_migrations (version, name) VALUES (999, 'x')", &[])?;
    let err = PgStore::connect(&url).expect_err("a newer schema is refused");
    assert_eq!(err.code(), ErrorCode::Database);
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("newer than this build"), "{err}");
    Ok(())
}

fn schema_is_append_only(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let store = PgStore::connect(&url)?;
    let s = SessionId("s".into());
    store.append(&s, suite_node("m1"))?;
    store.rewind(&s, &suite_node("m1").id)?;
    let mut raw = client(&url)?;
    for statement in [
        "DELETE FROM nodes",
        "UPDATE nodes SET content = 'rewritten'::bytea",
        "UPDATE nodes SET parent = NULL, seq = 7",
        "UPDATE nodes SET rewound = FALSE",
    ] {
        let err = raw.execute(statement, &[]).expect_err(statement);
        let message = err.as_db_error().map(|e| e.message().to_owned()).unwrap_or_default();
        assert!(message.contains("append-only"), "{statement}: {err:?}");
    }
    raw.execute("UPDATE nodes SET metadata = '{\"k\":\"v\"}'", &[])?;
    let node = store.node(&s, &suite_node("m1").id)?.expect("still there");
    assert_eq!((node.content.as_str(), node.metadata["k"].as_str()), ("content", "v"));
    Ok(())
}

/// Runs `statement` and expects the append-only guard to refuse it.
fn refused(raw: &mut Client, statement: &str) {
    let err = raw.execute(statement, &[]).expect_err(statement);
    let message = err.as_db_error().map(|e| e.message().to_owned()).unwrap_or_default();
    assert!(message.contains("append-only"), "{statement}: {err:?}");
}

/// Schema version 2 lets exactly a forget change `content` and `speaker`: both emptied, the
/// metadata the markers and `forgotten = "1"`, every other column as it was. Everything the
/// first version refused it still refuses, and a forgotten node's content never comes back.
fn schema_lets_only_a_forget_through(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let store = PgStore::connect(&url)?;
    let s = SessionId("s".into());
    let mut spoken = suite_node("m1");
    spoken.speaker =
        Some(scriptorium_session_dag::Speaker { id: "owner/local".into(), display: "Ana".into() });
    store.append(&s, spoken)?;
    store.set_title(&s, Some("A title".into()))?;
    let mut raw = client(&url)?;
    let forgotten = r#"'{"forgotten":"1","memory_written_scriptorium":"w-1","memory_written_scriptorium:w-1":"1"}'"#;
    for statement in [
        // Not a forget: something is left, or the metadata is not a forgotten node's.
        "UPDATE nodes SET content = ''::bytea".to_owned(),
        "UPDATE nodes SET speaker = NULL".to_owned(),
        format!("UPDATE nodes SET content = ''::bytea, metadata = {forgotten}"),
        "UPDATE nodes SET content = ''::bytea, speaker = NULL".to_owned(),
        r#"UPDATE nodes SET content = ''::bytea, speaker = NULL, metadata = '{"forgotten":"0"}'"#
            .to_owned(),
        r#"UPDATE nodes SET content = ''::bytea, speaker = NULL,
               metadata = '{"forgotten":"1","cwd":"/srv"}'"#
            .to_owned(),
        // `_` is no wildcard: only the markers' own names are kept.
        r#"UPDATE nodes SET content = ''::bytea, speaker = NULL,
               metadata = '{"forgotten":"1","memoryXwrittenXscriptorium:w-1":"1"}'"#
            .to_owned(),
        r#"UPDATE nodes SET content = ''::bytea, speaker = NULL, metadata = '["forgotten"]'"#
            .to_owned(),
        "UPDATE nodes SET content = 'other'::bytea, speaker = NULL".to_owned(),
        // A forget that changes anything else.
        format!(
            "UPDATE nodes SET content = ''::bytea, speaker = NULL, metadata = {forgotten}, role = 'assistant'"
        ),
        format!(
            "UPDATE nodes SET content = ''::bytea, speaker = NULL, metadata = {forgotten}, created_at = 5"
        ),
        format!(
            "UPDATE nodes SET content = ''::bytea, speaker = NULL, metadata = {forgotten}, parent = 'x'::bytea"
        ),
        format!(
            "UPDATE nodes SET content = ''::bytea, speaker = NULL, metadata = {forgotten}, rewound = FALSE, nid = 'm9'::bytea"
        ),
        "DELETE FROM nodes".to_owned(),
    ] {
        refused(&mut raw, &statement);
    }
    let node = store.node(&s, &suite_node("m1").id)?.expect("still there");
    assert_eq!((node.content.as_str(), node.speaker.is_some()), ("content", true));
    // The forget itself, as the store writes it, and the title.
    raw.execute(
        &format!("UPDATE nodes SET content = ''::bytea, speaker = NULL, metadata = {forgotten}"),
        &[],
    )?;
    raw.execute("UPDATE sessions SET title = NULL", &[])?;
    let node = store.node(&s, &suite_node("m1").id)?.expect("still there");
    assert!(node.content.is_empty() && node.speaker.is_none() && node.is_forgotten());
    assert_eq!(store.session(&s)?.map(|s| s.title), Some(None));
    // Forgotten for good: content and speaker never come back; metadata and rewinds as before.
    refused(&mut raw, "UPDATE nodes SET content = 'back'::bytea");
    refused(&mut raw, r#"UPDATE nodes SET speaker = '{"id":"x","display":"x"}'"#);
    raw.execute(r#"UPDATE nodes SET metadata = '{"k":"v"}'"#, &[])?;
    raw.execute("UPDATE nodes SET rewound = TRUE", &[])?;
    refused(&mut raw, "UPDATE nodes SET rewound = FALSE");
    Ok(())
}

/// Schema version 3 lets a rewrite of texts change `content` in a transaction that declares
/// itself one, when the speaker stays and the old content is not empty (a forgotten node's
/// content never comes back). Nothing else of the guard moves, and the declaration ends with
/// its transaction.
fn schema_lets_a_declared_rewrite(cluster: &Cluster) -> Result<(), Failed> {
    const DECLARE: &str = "SET LOCAL scriptorium.rewrite_texts = 'on'";
    let url = cluster.create_database()?;
    let store = PgStore::connect(&url)?;
    let s = SessionId("s".into());
    let mut spoken = suite_node("m1");
    spoken.speaker =
        Some(scriptorium_session_dag::Speaker { id: "owner/local".into(), display: "Ana".into() });
    store.append(&s, spoken.clone())?;
    store.append(&s, suite_node("m2"))?;
    store.forget(&s, &[suite_node("m2").id], false)?;
    let mut raw = client(&url)?;
    refused(&mut raw, "UPDATE nodes SET content = 'rewritten'::bytea WHERE nid = 'm1'::bytea");
    for statement in [
        "UPDATE nodes SET content = 'x'::bytea, speaker = NULL WHERE nid = 'm1'::bytea",
        r#"UPDATE nodes SET speaker = '{"id":"x","display":"x"}' WHERE nid = 'm1'::bytea"#,
        "UPDATE nodes SET content = 'back'::bytea WHERE nid = 'm2'::bytea",
        "UPDATE nodes SET content = 'x'::bytea, created_at = 5 WHERE nid = 'm1'::bytea",
        "UPDATE nodes SET content = 'x'::bytea, parent = 'm2'::bytea WHERE nid = 'm1'::bytea",
        "DELETE FROM nodes WHERE nid = 'm1'::bytea",
    ] {
        let mut tx = raw.transaction()?;
        tx.batch_execute(DECLARE)?;
        let err = tx.execute(statement, &[]).expect_err(statement);
        let message = err.as_db_error().map(|e| e.message().to_owned()).unwrap_or_default();
        assert!(message.contains("append-only"), "{statement}: {err:?}");
    }
    // The rewrite as the store writes it: the content alone, declared.
    let mut tx = raw.transaction()?;
    tx.batch_execute(DECLARE)?;
    tx.execute("UPDATE nodes SET content = 'rewritten'::bytea WHERE nid = 'm1'::bytea", &[])?;
    tx.commit()?;
    let node = store.node(&s, &spoken.id)?.expect("still there");
    assert_eq!(node, scriptorium_session_dag::Node { content: "rewritten".into(), ..spoken });
    let m2 = store.node(&s, &suite_node("m2").id)?.expect("still there");
    assert!(m2.content.is_empty() && m2.is_forgotten());
    // The declaration ended with its transaction.
    refused(&mut raw, "UPDATE nodes SET content = 'again'::bytea WHERE nid = 'm1'::bytea");
    Ok(())
}

/// How many row versions (live or dead) on the pages of `relation` hold `text`, read with
/// `pageinspect`, which shows what a dump does not: the versions an UPDATE left behind.
fn versions_holding(raw: &mut Client, relation: &str, text: &str) -> Result<i64, Failed> {
    let row = raw.query_one(
        "SELECT count(*) FROM generate_series(0,
                 (pg_relation_size($1::text::regclass) / current_setting('block_size')::bigint)
                 - 1) AS block,
             LATERAL heap_page_items(get_raw_page($1::text, block)) AS item
         WHERE item.t_data IS NOT NULL AND position($2::bytea IN item.t_data) > 0",
        &[&relation, &text.as_bytes()],
    )?;
    Ok(row.get(0))
}

/// A rewrite's vacuum takes the old row versions out of the tables' pages (the nodes', their
/// TOAST table's, the sessions'): no version, live or dead, holds an old text afterwards.
/// (Autovacuum is off for these tables, so nothing but the rewrite's own vacuum prunes them,
/// and nothing holds a lock that would make it skip.)
fn rewrite_leaves_no_row_version(cluster: &Cluster) -> Result<(), Failed> {
    const SECRET: &str = "Zanzibar-7f3a";
    let url = cluster.create_database()?;
    let store = PgStore::connect(&url)?;
    let mut raw = client(&url)?;
    raw.batch_execute(
        "CREATE EXTENSION pageinspect;
         ALTER TABLE nodes SET (autovacuum_enabled = false, toast.autovacuum_enabled = false);
         ALTER TABLE sessions SET (autovacuum_enabled = false);",
    )?;
    let toast: String = raw
        .query_one(
            "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'nodes'::regclass",
            &[],
        )?
        .get(0);
    // A long text no compression shrinks, so it is stored out of line as it is.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let noise: String = (0..6_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'!' + u8::try_from(state % 90).expect("below 90"))
        })
        .collect();
    let s = SessionId("s".into());
    let mut short = suite_node("m1");
    short.content = format!("pay with {SECRET}");
    let mut long = suite_node("m2");
    long.parent = Some(short.id.clone());
    long.content = format!("{}{SECRET}{noise}", &noise[..100]);
    store.append_batch(&s, vec![short, long])?;
    store.set_title(&s, Some(format!("Trip to {SECRET}")))?;
    let relations = ["nodes", toast.as_str(), "sessions"];
    for relation in relations {
        assert!(versions_holding(&mut raw, relation, SECRET)? > 0, "planted in {relation}");
    }
    let mut redact = |text: &str| text.contains(SECRET).then(|| text.replace(SECRET, "[gone]"));
    assert_eq!(store.rewrite_texts(&s, &mut redact)?, 2 + 1);
    for relation in relations {
        assert_eq!(versions_holding(&mut raw, relation, SECRET)?, 0, "{relation}");
    }
    assert!(versions_holding(&mut raw, toast.as_str(), "[gone]")? > 0, "the new text is there");
    Ok(())
}

/// A database made by the first schema, with sessions in it, takes the second when a store of
/// this build connects, and the store forgets there.
fn version_1_is_migrated(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let mut raw = client(&url)?;
    raw.batch_execute(MIGRATIONS[0].sql)?;
    raw.batch_execute(
        "CREATE TABLE schema_migrations (
             version BIGINT PRIMARY KEY, name TEXT NOT NULL,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
         INSERT INTO schema_migrations (version, name) VALUES (1, '0001_sessions.sql');
         INSERT INTO sessions (sid, head, updated_at, title, node_count)
             VALUES ('s'::bytea, 'm1'::bytea, 1, 'Old title'::bytea, 1);
         INSERT INTO nodes (sid, nid, seq, role, kind, content, created_at)
             VALUES ('s'::bytea, 'm1'::bytea, 0, 'user', 'message', 'old text'::bytea, 1);",
    )?;
    refused(&mut raw, "UPDATE nodes SET content = ''::bytea, speaker = NULL");
    let store = PgStore::connect(&url)?;
    let versions: Vec<i64> = raw
        .query("SELECT version FROM schema_migrations ORDER BY version", &[])?
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, MIGRATIONS.iter().map(|m| m.version).collect::<Vec<_>>());
    let s = SessionId("s".into());
    assert_eq!(store.forget(&s, &[suite_node("m1").id], true)?, 1);
    let node = store.node(&s, &suite_node("m1").id)?.expect("still there");
    assert!(node.content.is_empty() && node.is_forgotten());
    assert_eq!(store.session(&s)?.map(|s| s.title), Some(None));
    Ok(())
}

fn suite_node(id: &str) -> scriptorium_session_dag::Node {
    scriptorium_session_dag::Node {
        id: scriptorium_session_dag::NodeId(id.into()),
        parent: None,
        role: scriptorium_session_dag::Role::User,
        kind: scriptorium_session_dag::NodeKind::Message,
        speaker: None,
        content: "content".into(),
        created_at: scriptorium_session_dag::Timestamp(1),
        metadata: Default::default(),
        rewound: false,
    }
}

/// The walk's plan reads `nodes` through its primary key, never by scanning the table, so a
/// walk that stops early reads few rows of a large session (the store plans each execution
/// with the table's current size: `plan_cache_mode = force_custom_plan`, see `conn`).
fn walk_uses_the_index(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let store = PgStore::connect(&url)?;
    let s = SessionId("big".into());
    let chain: Vec<_> = (1..=20_000)
        .map(|i| {
            let mut n = suite_node(&format!("n{i}"));
            n.parent = (i > 1).then(|| scriptorium_session_dag::NodeId(format!("n{}", i - 1)));
            n
        })
        .collect();
    store.append_batch(&s, chain)?;
    // No ANALYZE: a database just filled, before autovacuum looked at it.
    let mut raw = client(&url)?;
    let plan: String = raw
        .query(
            "EXPLAIN WITH RECURSIVE walk AS (
                 SELECT nid, parent FROM nodes WHERE sid = $1 AND nid = $2
                 UNION ALL
                 SELECT n.nid, n.parent FROM walk w JOIN nodes n ON n.sid = $1 AND n.nid = w.parent)
             SELECT * FROM walk LIMIT 8",
            &[&b"big".as_slice(), &b"n20000".as_slice()],
        )?
        .iter()
        .map(|r| r.get::<_, String>(0) + "\n")
        .collect();
    assert!(!plan.contains("Seq Scan on nodes"), "{plan}");
    assert!(plan.contains("nodes_pkey"), "{plan}");
    let mut visited = 0;
    store.walk_ancestors(&s, &scriptorium_session_dag::NodeId("n20000".into()), &mut |_| {
        visited += 1;
        visited < 3
    })?;
    assert_eq!(visited, 3);
    Ok(())
}

fn connection_errors(cluster: &Cluster) -> Result<(), Failed> {
    // A port nobody listens on: the cluster's own port + 1 is refused almost surely, but a
    // closed port is what matters, so take one that was just free.
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    drop(listener);
    let url = format!("postgres://scriptorium:s3cret-pw@127.0.0.1:{port}/none?connect_timeout=5");
    let err = PgStore::connect(&url).expect_err("nothing listens there");
    assert_eq!(err.code(), ErrorCode::Database);
    assert_eq!(err.code().as_str(), "SESSION_DATABASE");
    assert!(err.is_retryable(), "{err}");
    assert!(!err.to_string().contains("s3cret-pw"), "{err}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}/none")), "{err}");
    let err = PgStore::connect("postgres://x@127.0.0.1:notaport/db").expect_err("bad URL");
    assert_eq!(err.code(), ErrorCode::Database);
    assert!(!err.is_retryable());
    // This cluster has no TLS: a connection that requires it is refused, saying why, and for
    // good (the server's configuration or the URL must change).
    for mode in ["require", "verify-full"] {
        let plain = format!("{}?sslmode={mode}", cluster.url("postgres"));
        let err = PgStore::connect(&plain).expect_err("TLS required, server without it");
        assert_eq!(err.code(), ErrorCode::DatabaseTls, "{err}");
        assert!(!err.is_retryable());
        assert!(err.to_string().contains("does not offer TLS"), "{err}");
    }
    let missing = cluster.url("no_such_database");
    let err = PgStore::connect(&missing).expect_err("no such database");
    assert!(err.to_string().contains("no_such_database"), "{err}");
    Ok(())
}

/// The server ends the store's connection (a restart, a failover): the call that meets the
/// closed connection fails retryably, and a later call reconnects on its own.
fn lost_connection_is_reopened(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let store = PgStore::connect(&url)?;
    let s = SessionId("s".into());
    store.append(&s, suite_node("m1"))?;
    let database = url.rsplit('/').next().ok_or("a database name")?.to_owned();
    let killed = client(&url)?.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = $1 AND pid <> pg_backend_pid()",
        &[&database],
    )?;
    assert_eq!(killed, 1, "the store's one connection");
    let mut attempts = 0;
    let session = loop {
        attempts += 1;
        match store.session(&s) {
            Ok(found) => break found,
            Err(err) if err.is_retryable() && attempts < 3 => continue,
            Err(err) => return Err(format!("after {attempts} attempt(s): {err}").into()),
        }
    };
    assert_eq!(session.map(|s| s.head), Some(Some(suite_node("m1").id)));
    Ok(())
}

/// The synchronous client would panic inside a Tokio runtime (the server's handlers, `watch`);
/// the store's worker thread makes a call there block like a file read instead.
fn calls_inside_a_runtime(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let found = runtime.block_on(async {
        let store = PgStore::connect(&url)?;
        let s = SessionId("s".into());
        store.append(&s, suite_node("m1"))?;
        store.session(&s)
    })?;
    assert!(found.is_some());
    Ok(())
}
