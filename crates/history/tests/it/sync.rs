//! Fetching from and pushing to remotes: which failures are retryable and which say the remote
//! itself must be fixed.

use scriptorium_history::{ErrorCode, Pushed};

use crate::support::{Ws, at, commit};

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("local address").port()
}

/// gix's HTTP transport builds a reqwest client without a TLS provider of its own: fetching
/// must install one rather than panic (issue 34: every `http(s)://` remote panicked), and a
/// server that cannot be reached is retryable.
#[test]
fn an_http_remote_nobody_answers_is_unavailable_not_a_panic() {
    let ws = Ws::new();
    let history = ws.open();
    let port = closed_port();
    for scheme in ["http", "https"] {
        let url = format!("{scheme}://127.0.0.1:{port}/memory.git");
        let err = history.fetch(&url, "main").expect_err("nothing listens");
        assert_eq!(err.code(), ErrorCode::RemoteUnavailable, "{err}");
        assert!(err.is_retryable());
        assert!(err.to_string().contains(&url), "{err}");
    }
}

#[test]
fn a_path_without_a_repository_is_an_invalid_remote() {
    let ws = Ws::new();
    let history = ws.open();
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let missing = elsewhere.path().join("typo.git");
    let plain = elsewhere.path().join("plain");
    std::fs::create_dir(&plain).expect("mkdir");
    for (path, what) in [(&missing, "does not exist"), (&plain, "is not a git repository")] {
        for url in [path.display().to_string(), format!("file://{}", path.display())] {
            let err = history.fetch(&url, "main").expect_err("no repository there");
            assert_eq!(err.code(), ErrorCode::RemoteInvalid, "{err}");
            assert!(!err.is_retryable());
            let message = err.to_string();
            assert!(message.contains(what) && message.contains("git init --bare"), "{message}");
        }
    }
}

#[test]
fn a_non_bare_remote_with_the_branch_checked_out_is_an_invalid_remote() {
    let ws = Ws::new();
    let history = ws.open();
    ws.write("topics/a.md", "# A\n");
    commit(&history, "t-1", "memory: a", None, at(1));
    // A clone with a work tree on `main`, as a person makes one; then a commit to push to it
    // (a fast-forward, as a sync's push always is).
    let remote = Ws::new();
    let url = remote.root().join("clone").display().to_string();
    ws.git(&["clone", "--quiet", &ws.root().display().to_string(), &url]);
    ws.write("topics/b.md", "# B\n");
    commit(&history, "t-2", "memory: b", None, at(2));
    let head = history.head_commit().expect("head").expect("a commit");
    let err = history.push(&url, &head, "main").expect_err("git refuses the checked-out branch");
    assert_eq!(err.code(), ErrorCode::RemoteInvalid, "{err}");
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("bare"), "{err}");
    // Another branch of the same repository takes the push: the refusal was about `main` only.
    assert_eq!(history.push(&url, &head, "other").expect("push"), Pushed::Updated);
}
