//! `scriptorium sessions migrate --to postgres://…` and `[sessions] store = "postgres://…"`
//! against a real PostgreSQL server (a scratch cluster, `scriptorium_testkit::pg`): the copy is
//! faithful (the same `sessions` output from both stores) and idempotent (a second run copies
//! nothing and says so). The server speaks TLS with a test CA's certificate, and every command
//! here trusts that CA (`SSL_CERT_FILE`), so the sessions travel over verified TLS as between
//! machines. Without the server binaries the trials are reported as not run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use scriptorium_markers::{WorkspaceId, mark};
use scriptorium_session_dag::{
    EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Timestamp,
};
use scriptorium_testkit::pg::{self, Cluster, pg_trial};
use scriptorium_testkit::{Arguments, Failed, Trial};
use serde_json::Value;

/// The test CA's certificate, trusted by the commands [`scriptorium`] runs.
static CA: OnceLock<PathBuf> = OnceLock::new();

fn scriptorium(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    if let Some(ca) = CA.get() {
        command.env("SSL_CERT_FILE", ca).env_remove("SSL_CERT_DIR");
    }
    command
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("SCRIPTORIUM_SESSIONS_STORE")
        .output()
        .expect("the scriptorium binary runs")
}

fn json(output: &Output) -> Result<Value, Failed> {
    if !output.status.success() {
        return Err(format!(
            "failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(serde_json::from_slice(&output.stdout)?)
}

fn node(id: &str, parent: Option<&str>, role: Role, minute: i64) -> Node {
    Node {
        id: NodeId(id.to_owned()),
        parent: parent.map(|p| NodeId(p.to_owned())),
        role,
        kind: NodeKind::Message,
        speaker: None,
        content: format!("message {id}: about the budget tracker"),
        created_at: Timestamp(1_710_495_000_000 + minute * 60_000),
        metadata: BTreeMap::new(),
        rewound: false,
    }
}

/// Two sessions in `<home>/sessions`: `forked` (a trunk with the first two records written, a
/// fork, a rewound node, a title) and `older`.
fn build_home(home: &Path) -> Result<(), Failed> {
    let store = EmbeddedStore::open(home.join("sessions"))?;
    let older = SessionId("older".into());
    store.append(&older, node("x1", None, Role::User, 0))?;
    let s = SessionId("forked".into());
    let trunk = vec![
        node("u1", None, Role::User, 1),
        node("a1", Some("u1"), Role::Assistant, 2),
        node("u2", Some("a1"), Role::User, 3),
        node("a2", Some("u2"), Role::Assistant, 4),
    ];
    store.append_batch(&s, trunk.clone())?;
    let workspace = WorkspaceId::parse("w-0123abcd")?;
    mark(&store, &s, &trunk[..2], &workspace)?;
    store.append(&s, node("e2", Some("a1"), Role::User, 6))?;
    store.append(&s, node("e3", Some("e2"), Role::Assistant, 7))?;
    store.rewind(&s, &NodeId("a2".into()))?;
    store.set_title(&s, Some("Budget tracker".into()))?;
    let dir = home.join("memory").join(".scriptorium");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("workspace-id"), "w-0123abcd\n")?;
    Ok(())
}

/// What `sessions list/show/branches --json` print.
fn views(home: &Path) -> Result<Vec<Value>, Failed> {
    [
        &["sessions", "list", "--json"][..],
        &["sessions", "show", "forked", "--json"],
        &["sessions", "branches", "forked", "--json"],
        &["sessions", "show", "older", "--json"],
    ]
    .iter()
    .map(|args| json(&scriptorium(home, args)))
    .collect()
}

fn migrate_copies_once_and_the_store_serves_the_same_sessions(
    cluster: &Cluster,
) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let home = tempfile::tempdir()?;
    build_home(home.path())?;
    let embedded = views(home.path())?;

    let first = json(&scriptorium(home.path(), &["sessions", "migrate", "--to", &url, "--json"]))?;
    assert_eq!(first["sessions"], 2, "{first}");
    assert_eq!(first["sessions_changed"], 2, "{first}");
    assert_eq!(first["nodes_copied"], 7, "{first}");
    assert_eq!(first["to"], url.as_str(), "the database, named without a password");
    let again = json(&scriptorium(home.path(), &["sessions", "migrate", "--to", &url, "--json"]))?;
    assert_eq!(
        (again["sessions_changed"].clone(), again["nodes_copied"].clone()),
        (0.into(), 0.into())
    );
    let human = scriptorium(home.path(), &["sessions", "migrate", "--to", &url]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(human.status.success() && text.starts_with("nothing to copy"), "{text}");

    // The configured store is PostgreSQL now: every view is the same as the embedded store's.
    std::fs::write(
        home.path().join("scriptorium.toml"),
        format!("[sessions]\nstore = \"{url}\"\n"),
    )?;
    std::fs::rename(home.path().join("sessions"), home.path().join("sessions.copied"))?;
    assert_eq!(views(home.path())?, embedded);

    // A new mark on the embedded side travels with a later migrate, and only it.
    std::fs::rename(home.path().join("sessions.copied"), home.path().join("sessions"))?;
    let store = EmbeddedStore::open(home.path().join("sessions"))?;
    let s = SessionId("forked".into());
    let e2 = store.node(&s, &NodeId("e2".into()))?.ok_or("e2")?;
    mark(&store, &s, &[e2], &WorkspaceId::parse("w-0123abcd")?)?;
    let third = json(&scriptorium(home.path(), &["sessions", "migrate", "--to", &url, "--json"]))?;
    assert_eq!(
        (third["sessions_changed"].clone(), third["nodes_copied"].clone()),
        (1.into(), 0.into())
    );
    let branches = json(&scriptorium(home.path(), &["sessions", "branches", "forked", "--json"]))?;
    assert_ne!(branches, embedded[2], "the new mark is visible through PostgreSQL");
    Ok(())
}

/// With `[sessions] store` set, import, write and the session views all use the database, and
/// `<home>/sessions` is never created.
fn import_and_write_use_the_configured_database(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let tmp = tempfile::tempdir()?;
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    std::fs::write(home.join("scriptorium.toml"), format!("[sessions]\nstore = \"{url}\"\n"))?;
    let chat = tmp.path().join("chat.jsonl");
    let lines = [
        serde_json::json!({"id": "m1", "role": "user", "content": "I keep my budget in a spreadsheet called Ledger."}),
        serde_json::json!({"id": "m2", "parent": "m1", "role": "assistant", "content": "Noted: your budget lives in Ledger."}),
    ];
    std::fs::write(&chat, lines.map(|l| l.to_string()).join("\n") + "\n")?;
    let chat = chat.to_str().ok_or("utf-8")?;
    json(&scriptorium(&home, &["init", "--json"]))?;
    let first = json(&scriptorium(&home, &["import", "jsonl", chat, "--json"]))?;
    assert_eq!(first["new_nodes"], 2, "{first}");
    let again = json(&scriptorium(&home, &["import", "jsonl", chat, "--json"]))?;
    assert_eq!(again["new_nodes"], 0, "{again}");
    let before = json(&scriptorium(&home, &["sessions", "branches", "chat", "--json"]))?;
    let written = json(&scriptorium(&home, &["write", "--all", "--force", "--json"]))?;
    assert_eq!(written["ok"], true, "{written}");
    let after = json(&scriptorium(&home, &["sessions", "branches", "chat", "--json"]))?;
    assert_ne!(before, after, "the write marked the records in the database");
    let status = json(&scriptorium(&home, &["status", "--json"]))?;
    assert_eq!(status["pending_turns"], 0, "{status}");
    assert!(!home.join("sessions").exists(), "the embedded store was never created");
    Ok(())
}

/// Whether `needle` occurs in `haystack`.
fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Whether a `pg_dump` holds `text` as it is or as the hex of its UTF-8 bytes (how it prints a
/// `bytea`, the type the store keeps texts in).
fn dump_holds(dump: &[u8], text: &str) -> bool {
    let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
    holds(dump, text) || holds(dump, &hex)
}

/// Every file under `dir` holding `needle` (binary ones too).
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_holding(&path, needle));
        } else if std::fs::read(&path).is_ok_and(|bytes| holds(&bytes, needle)) {
            out.push(path);
        }
    }
    out
}

/// With the session store in PostgreSQL, the doors redact before anything reaches the database
/// (a `pg_dump` holds no secret and no private span), and `scriptorium redact` cleans what an
/// older home stored there: here, a token the owner had allowed and a code name no pattern
/// matched yet.
fn secrets_never_reach_the_database_and_redact_cleans_it(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let tmp = tempfile::tempdir()?;
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    // Assembled here so that no scanner flags this file.
    let aws = format!("AKIA{}", "QX7RZ2M4KT6WN3PB");
    let token = format!("ghp_{}", "R7kq2Vx9Lm4Tz8Wb3Nc6Pd1Hf5Js0Ya2Eu7G");
    let (address, codename) = ("14 Rue des Lilas, 69003 Lyon", "NIGHTINGALE-4471");
    let config = |privacy: &str| format!("[sessions]\nstore = \"{url}\"\n\n[privacy]\n{privacy}\n");
    std::fs::write(home.join("scriptorium.toml"), config(&format!("allow = ['^{token}$']")))?;
    let chat = tmp.path().join("chat.jsonl");
    let lines = [
        serde_json::json!({"id": "m1", "role": "user", "content": format!(
            "The {codename} deploy uses aws_access_key_id = {aws}; ship to <private>{address}</private>.")}),
        serde_json::json!({"id": "m2", "parent": "m1", "role": "assistant",
            "content": format!("Use the token {token} for the {codename} repository.")}),
    ];
    std::fs::write(&chat, lines.map(|l| l.to_string()).join("\n") + "\n")?;
    let chat = chat.to_str().ok_or("utf-8")?;
    json(&scriptorium(&home, &["init", "--json"]))?;
    let imported = json(&scriptorium(&home, &["import", "jsonl", chat, "--json"]))?;
    // The message, and the session title taken from it.
    assert_eq!(imported["redacted"]["aws-access-token"], 2, "{imported}");
    assert!(imported["redacted"]["private"].as_u64().is_some_and(|n| n >= 1), "{imported}");
    json(&scriptorium(&home, &["write", "--all", "--force", "--json"]))?;
    let dump = pg::dump(&url)?;
    assert!(!dump_holds(&dump, &aws) && !dump_holds(&dump, address), "the doors redacted");
    assert!(dump_holds(&dump, &token), "the allowed token is kept");
    assert!(dump_holds(&dump, codename), "what no rule matches is kept");

    std::fs::write(
        home.join("scriptorium.toml"),
        config(r#"patterns = [{ id = "codename", regex = 'NIGHTINGALE-\d+' }]"#),
    )?;
    let done = json(&scriptorium(&home, &["redact", "--yes", "--json"]))?;
    assert_eq!(done["redacted"], true, "{done}");
    assert!(done["plan"]["messages"].as_u64().is_some_and(|n| n >= 2), "{done}");
    let dump = pg::dump(&url)?;
    for secret in [aws.as_str(), token.as_str(), address, codename] {
        assert!(!dump_holds(&dump, secret), "{secret} is in the database");
        assert_eq!(files_holding(&home, secret), Vec::<PathBuf>::new(), "{secret} in a file");
    }
    assert!(dump_holds(&dump, "[REDACTED:codename]"), "the store says what was redacted");
    let again = json(&scriptorium(&home, &["import", "jsonl", chat, "--json"]))?;
    assert_eq!(again["new_nodes"], 0, "nothing new: {again}");
    assert!(!dump_holds(&pg::dump(&url)?, codename), "a re-import brings nothing back");
    Ok(())
}

/// `sslmode=require` gets TLS (a server without it would be refused), and a certificate from a
/// CA the machine does not trust is refused whatever the mode.
fn tls_is_verified(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let home = tempfile::tempdir()?;
    build_home(home.path())?;
    for host in ["localhost", "127.0.0.1"] {
        let port = cluster.port();
        let url = format!(
            "{}?sslmode=require",
            url.replace(&format!("127.0.0.1:{port}"), &format!("{host}:{port}"))
        );
        let out =
            json(&scriptorium(home.path(), &["sessions", "migrate", "--to", &url, "--json"]))?;
        assert_eq!(out["sessions"], 2, "{out}");
    }
    let untrusted = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home.path())
        .args(["sessions", "migrate", "--to", &url, "--json"])
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .output()?;
    assert_eq!(untrusted.status.code(), Some(2), "{untrusted:?}");
    let value: Value = serde_json::from_slice(&untrusted.stdout)?;
    assert_eq!(value["error"]["code"], "SESSION_DATABASE_TLS", "{value}");
    Ok(())
}

fn an_unreachable_database_is_retryable_with_a_stable_code(_: &Cluster) -> Result<(), Failed> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    drop(listener);
    let home = tempfile::tempdir()?;
    let url = format!("postgres://scriptorium:pw-never-shown@127.0.0.1:{port}/x");
    let out = scriptorium(home.path(), &["sessions", "migrate", "--to", &url, "--json"]);
    assert_eq!(out.status.code(), Some(75), "{out:?}");
    let value: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(value["error"]["code"], "SESSION_DATABASE", "{value}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("pw-never-shown"));
    Ok(())
}

fn a_url_that_is_not_postgres_is_a_usage_error() -> Result<(), Failed> {
    let home = tempfile::tempdir()?;
    let out = scriptorium(home.path(), &["sessions", "migrate", "--to", "/tmp/x", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let value: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(value["error"]["code"], "INVALID_ARGUMENT", "{value}");
    std::fs::write(home.path().join("scriptorium.toml"), "[sessions]\nstore = \"/var/x\"\n")?;
    let out = scriptorium(home.path(), &["sessions", "list", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let value: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(value["error"]["code"], "INVALID_CONFIG", "{value}");
    Ok(())
}

/// A home configured with one shared database and one git remote (`../remote.git`).
fn machine(dir: &Path, name: &str, url: &str) -> Result<PathBuf, Failed> {
    let home = dir.join(name);
    std::fs::create_dir_all(&home)?;
    std::fs::write(
        home.join("scriptorium.toml"),
        format!("[sessions]\nstore = \"{url}\"\n[sync]\nremote = \"../remote.git\"\n"),
    )?;
    json(&scriptorium(&home, &["init", "--json"]))?;
    Ok(home)
}

/// A JSON-lines chat `name` of two turns about `topic`, imported into the shared store.
fn import_chat(home: &Path, dir: &Path, name: &str, topic: &str) -> Result<(), Failed> {
    let chat = dir.join(format!("{name}.jsonl"));
    let lines = [
        serde_json::json!({"id": format!("{name}-1"), "role": "user", "content": format!("Remember that {topic}.")}),
        serde_json::json!({"id": format!("{name}-2"), "parent": format!("{name}-1"), "role": "assistant", "content": "Noted."}),
    ];
    std::fs::write(&chat, lines.map(|l| l.to_string()).join("\n") + "\n")?;
    json(&scriptorium(home, &["import", "jsonl", chat.to_str().ok_or("utf-8")?, "--json"]))?;
    Ok(())
}

/// `scriptorium sync` until it is done (75 is retryable: another machine pushed meanwhile).
fn sync(home: &Path) -> Result<Value, Failed> {
    for _ in 0..50 {
        let out = scriptorium(home, &["sync", "--json"]);
        if out.status.code() != Some(75) {
            return json(&out);
        }
    }
    Err("sync stayed retryable".into())
}

/// Every file of the memory but `.git` and runtime state.
fn memory_tree(home: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let memory = home.join("memory");
    let mut out = BTreeMap::new();
    let mut dirs = vec![memory.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if dir == memory && (name == ".git" || name.starts_with(".scriptorium")) {
                continue;
            }
            if entry.file_type()?.is_dir() {
                dirs.push(entry.path());
            } else {
                let rel = entry.path().strip_prefix(&memory)?.display().to_string();
                out.insert(rel, std::fs::read(entry.path())?);
            }
        }
    }
    Ok(out)
}

/// Two machines share one database and one git remote: a session one of them wrote is marked,
/// not written again, by the other once it has synced; then both import, write and sync at the
/// same time, and end with the same memory at the same commit, every turn written once.
fn two_machines_with_one_remote_and_one_database_converge(cluster: &Cluster) -> Result<(), Failed> {
    let url = cluster.create_database()?;
    let tmp = tempfile::tempdir()?;
    let status = Command::new("git")
        .args(["init", "--quiet", "--bare", "--initial-branch=main"])
        .arg(tmp.path().join("remote.git"))
        .status()?;
    assert!(status.success());
    let (a, b) = (machine(tmp.path(), "a", &url)?, machine(tmp.path(), "b", &url)?);
    import_chat(&a, tmp.path(), "ledger", "my budget lives in a spreadsheet called Ledger")?;
    json(&scriptorium(&a, &["write", "--all", "--force", "--json"]))?;
    sync(&a)?;
    sync(&b)?;
    // b sees the session in the shared store, finds its turns cited, and writes nothing.
    let before = memory_tree(&b)?;
    let written = json(&scriptorium(&b, &["write", "--all", "--force", "--json"]))?;
    assert!(written.to_string().contains("\"recovered\":true"), "{written}");
    assert_eq!(memory_tree(&b)?, before, "b wrote the turns a had written");
    // Both at once: each imports and writes its own chat, then syncs.
    let work = |home: PathBuf, name: &'static str, topic: &'static str| {
        let dir = tmp.path().to_path_buf();
        std::thread::spawn(move || -> Result<(), String> {
            import_chat(&home, &dir, name, topic).map_err(|e| format!("{e:?}"))?;
            let out = scriptorium(&home, &["write", "--all", "--force", "--json"]);
            json(&out).map_err(|e| format!("{e:?}"))?;
            sync(&home).map_err(|e| format!("{e:?}"))?;
            Ok(())
        })
    };
    let jobs = [
        work(a.clone(), "garden", "the garden needs watering on Sundays"),
        work(b.clone(), "car", "the car is due for a service in May"),
    ];
    for job in jobs {
        job.join().map_err(|_| "a machine's thread panicked")??;
    }
    for _ in 0..2 {
        sync(&a)?;
        sync(&b)?;
    }
    assert_eq!(memory_tree(&a)?, memory_tree(&b)?, "the two machines differ");
    let head = |home: &Path| -> Result<Vec<u8>, Failed> {
        Ok(Command::new("git")
            .arg("-C")
            .arg(home.join("memory"))
            .args(["rev-parse", "HEAD"])
            .output()?
            .stdout)
    };
    assert_eq!(head(&a)?, head(&b)?);
    let text: String = memory_tree(&a)?
        .iter()
        .filter(|(path, _)| path.starts_with("topics/"))
        .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
        .collect();
    for fact in ["Ledger", "watering on Sundays", "service in May"] {
        assert_eq!(text.matches(fact).count(), 1, "{fact:?} is not written exactly once:\n{text}");
    }
    // Each machine's writer marks what the other wrote (cited already) and writes nothing;
    // the marks of both machines stand side by side in the shared store.
    let settled = memory_tree(&a)?;
    for home in [&a, &b] {
        json(&scriptorium(home, &["write", "--all", "--force", "--json"]))?;
    }
    for home in [&a, &b] {
        assert_eq!(memory_tree(home)?, settled, "a write after the sync changed the memory");
        let status = json(&scriptorium(home, &["status", "--json"]))?;
        assert_eq!(status["pending_turns"], 0, "{status}");
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let cluster = pg::tls_cluster("cli-pg");
    if let Ok(Some(cluster)) = &cluster
        && let Some(ca) = cluster.ca_file()
    {
        let _ = CA.set(ca);
    }
    let trials = vec![
        pg_trial("tls_is_verified", &cluster, tls_is_verified),
        pg_trial(
            "migrate_copies_once_and_the_store_serves_the_same_sessions",
            &cluster,
            migrate_copies_once_and_the_store_serves_the_same_sessions,
        ),
        pg_trial(
            "import_and_write_use_the_configured_database",
            &cluster,
            import_and_write_use_the_configured_database,
        ),
        pg_trial(
            "secrets_never_reach_the_database_and_redact_cleans_it",
            &cluster,
            secrets_never_reach_the_database_and_redact_cleans_it,
        ),
        pg_trial(
            "an_unreachable_database_is_retryable_with_a_stable_code",
            &cluster,
            an_unreachable_database_is_retryable_with_a_stable_code,
        ),
        pg_trial(
            "two_machines_with_one_remote_and_one_database_converge",
            &cluster,
            two_machines_with_one_remote_and_one_database_converge,
        ),
        Trial::test(
            "a_url_that_is_not_postgres_is_a_usage_error",
            a_url_that_is_not_postgres_is_a_usage_error,
        ),
    ];
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    drop(cluster);
    conclusion.exit_code()
}
