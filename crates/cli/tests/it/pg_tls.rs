//! `[sessions] store = "postgres://…"` against a server whose certificate this machine does not
//! trust (issue 34 item 12): a scratch cluster (`scriptorium_testkit::pg`) with a self-signed
//! certificate, and one whose certificate a private CA signs. Refused, the error is
//! `SESSION_DATABASE_TLS` (exit 2, a configuration error, never 75) and names the verifier's
//! reason and the remedy; given as the root (`?sslrootcert=` or `SSL_CERT_FILE`), the same
//! certificate verifies. A server that is not there stays `SESSION_DATABASE`, exit 75.
//!
//! Without the PostgreSQL server binaries these tests return at once (they say so on standard
//! error); `SCRIPTORIUM_REQUIRE_POSTGRES=1` makes that a failure.

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use scriptorium_testkit::pg::{self, Cluster};
use serde_json::Value;

/// Runs `scriptorium` in `home` with `SSL_CERT_FILE` set to `cert_file` (else unset, as is
/// `SSL_CERT_DIR`: the system's roots).
fn scriptorium(home: &Path, args: &[&str], cert_file: Option<&Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scriptorium"));
    command
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("SCRIPTORIUM_SESSIONS_STORE")
        .env_remove("SSL_CERT_DIR");
    match cert_file {
        Some(file) => command.env("SSL_CERT_FILE", file),
        None => command.env_remove("SSL_CERT_FILE"),
    };
    command.output().expect("the scriptorium binary runs")
}

/// `sessions migrate --to url --json` (it connects, so it verifies the certificate).
fn migrate(url: &str, cert_file: Option<&Path>) -> Output {
    let home = tempfile::tempdir().unwrap();
    scriptorium(home.path(), &["sessions", "migrate", "--to", url, "--json"], cert_file)
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_ok(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{}", describe(out));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["ok"], true, "{value}");
}

/// Asserts a failure with exit `exit` and code `code`; returns the error message.
fn assert_error(out: &Output, exit: i32, code: &str) -> String {
    assert_eq!(out.status.code(), Some(exit), "{}", describe(out));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["error"]["code"], code, "{value}");
    value["error"]["message"].as_str().unwrap().to_owned()
}

fn assert_mentions(message: &str, words: &[&str]) {
    for word in words {
        assert!(message.contains(word), "{word:?} is not in: {message}");
    }
}

/// The cluster, or `None` when the server binaries are missing and not required.
fn start(cluster: Result<Option<Arc<Cluster>>, String>) -> Option<Arc<Cluster>> {
    match cluster {
        Ok(Some(cluster)) => Some(cluster),
        Ok(None) => {
            eprintln!("note: PostgreSQL server binaries not found; this test did not run");
            None
        }
        Err(reason) => panic!("the scratch cluster did not start: {reason}"),
    }
}

/// `url` with `query` (`key=value&…`) appended.
fn with(url: &str, query: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{query}")
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_self_signed_certificate_is_refused_with_its_cause_and_trusted_as_its_own_root() {
    let Some(cluster) = start(pg::self_signed_cluster("cli-it-tls-self")) else { return };
    let url = cluster.create_database().unwrap();
    let certificate = cluster.certificate_file().unwrap();
    let root = format!("sslrootcert={}", certificate.display());

    // Not trusted: a permanent configuration error that says why and what to do.
    let message = assert_error(&migrate(&url, None), 2, "SESSION_DATABASE_TLS");
    assert_mentions(
        &message,
        &["not trusted", "self-signed", "sslrootcert=", "SSL_CERT_FILE", "sslmode=disable"],
    );
    let message =
        assert_error(&migrate(&with(&url, "sslmode=require"), None), 2, "SESSION_DATABASE_TLS");
    assert_mentions(&message, &["not trusted", "sslrootcert="]);

    // The certificate as its own root, in the URL or in SSL_CERT_FILE, in every verifying mode.
    assert_ok(&migrate(&with(&url, &root), None));
    for mode in ["prefer", "require", "verify-ca", "verify-full"] {
        assert_ok(&migrate(&with(&url, &format!("sslmode={mode}&{root}")), None));
    }
    assert_ok(&migrate(&url, Some(&certificate)));
    assert_ok(&migrate(&with(&url, "sslmode=verify-full"), Some(&certificate)));

    // As the configured store.
    let home = tempfile::tempdir().unwrap();
    let store = with(&url, &root);
    std::fs::write(
        home.path().join("scriptorium.toml"),
        format!("[sessions]\nstore = {store:?}\n"),
    )
    .unwrap();
    let out = scriptorium(home.path(), &["sessions", "list", "--json"], None);
    assert_ok(&out);

    // Trusted, but for 127.0.0.1 only: `localhost` is refused by name, unless only the chain
    // is checked (verify-ca).
    let port = cluster.port();
    let by_name = url.replace(&format!("127.0.0.1:{port}"), &format!("localhost:{port}"));
    let message = assert_error(&migrate(&with(&by_name, &root), None), 2, "SESSION_DATABASE_TLS");
    assert_mentions(&message, &["localhost", "127.0.0.1", "sslmode=verify-ca"]);
    assert_ok(&migrate(&with(&by_name, &format!("sslmode=verify-ca&{root}")), None));

    // Nothing listening, whatever the TLS settings: retryable, as before.
    let gone = format!("postgres://scriptorium@127.0.0.1:{}/x", closed_port());
    let out = migrate(&with(&gone, &format!("sslmode=verify-full&{root}")), None);
    assert_error(&out, 75, "SESSION_DATABASE");
    let out = migrate(&gone, Some(&certificate));
    assert_error(&out, 75, "SESSION_DATABASE");
}

#[test]
fn a_private_ca_is_refused_with_its_cause_and_trusted_when_given() {
    let Some(cluster) = start(pg::tls_cluster("cli-it-tls-ca")) else { return };
    let url = cluster.create_database().unwrap();
    let ca = cluster.ca_file().unwrap();
    let root = format!("sslrootcert={}", ca.display());

    let message = assert_error(&migrate(&url, None), 2, "SESSION_DATABASE_TLS");
    assert_mentions(
        &message,
        &["not trusted", "UnknownIssuer", "sslrootcert=", "SSL_CERT_FILE", "sslmode=disable"],
    );

    assert_ok(&migrate(&with(&url, &root), None));
    assert_ok(&migrate(&with(&url, &format!("sslmode=verify-full&{root}")), None));
    assert_ok(&migrate(&url, Some(&ca)));
    // The server's own certificate, given without its CA, is trusted as itself.
    let own = cluster.certificate_file().unwrap();
    assert_ok(&migrate(
        &with(&url, &format!("sslmode=verify-full&sslrootcert={}", own.display())),
        None,
    ));
    // `sslrootcert` names the roots, whatever SSL_CERT_FILE names (here a broken file).
    let other = tempfile::tempdir().unwrap();
    let broken = other.path().join("broken.pem");
    std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n")
        .unwrap();
    assert_ok(&migrate(&with(&url, &root), Some(&broken)));
    let message = assert_error(&migrate(&url, Some(&broken)), 2, "SESSION_DATABASE_TLS");
    assert_mentions(&message, &["SSL_CERT_FILE", "broken.pem", "cannot be a root"]);
}

#[test]
fn tls_settings_that_cannot_work_are_refused_before_connecting() {
    // Nothing listens: each refusal below comes before any connection is tried.
    let url = format!("postgres://scriptorium@127.0.0.1:{}/x", closed_port());
    let missing = "/nonexistent/scriptorium/ca.pem";

    let out = migrate(&with(&url, &format!("sslrootcert={missing}")), None);
    let message = assert_error(&out, 2, "SESSION_DATABASE_TLS");
    assert_mentions(&message, &["sslrootcert", missing]);

    let out = migrate(&url, Some(Path::new(missing)));
    let message = assert_error(&out, 2, "SESSION_DATABASE_TLS");
    assert_mentions(&message, &["SSL_CERT_FILE", missing]);

    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let out = migrate(&with(&url, &format!("sslrootcert={}", empty.display())), None);
    let message = assert_error(&out, 2, "SESSION_DATABASE_TLS");
    assert_mentions(&message, &["no certificate", "empty.pem"]);

    let out = migrate(&with(&url, "sslmode=verify-ca"), None);
    let message = assert_error(&out, 2, "SESSION_DATABASE_TLS");
    assert_mentions(&message, &["verify-ca", "sslrootcert=", "verify-full"]);

    let out = migrate(&with(&url, "sslmode=sometimes"), None);
    let message = assert_error(&out, 2, "SESSION_DATABASE_TLS");
    assert_mentions(&message, &["sometimes", "verify-full"]);

    // Without TLS no certificate is read, and nothing listening stays retryable.
    let out = migrate(&with(&url, &format!("sslmode=disable&sslrootcert={missing}")), None);
    assert_error(&out, 75, "SESSION_DATABASE");
}
