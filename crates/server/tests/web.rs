//! The REST API and the page, driven through `app(state).oneshot(…)`: every route's shape and
//! status codes, the security checks (token, `Host`, `Origin`, body limit, CSP, path
//! traversal, symlinks), compare-and-set edits, the disabled backend, and a core read that
//! waits for the write lock.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use scriptorium_backend::engine::{LockTimeout, Workspace};
use scriptorium_server::web::{AppState, app};
use serde_json::{Value, json};
use tower::ServiceExt as _;

const HOST: &str = "127.0.0.1:7878";
const ORIGIN: &str = "http://127.0.0.1:7878";

/// The topic the fixture installs (the label is replaced by the archived source ID).
const TOPIC: &str = "# Budget tracker\n\n## Status\n\n\
Craig is building a budget tracker in Flask.[^e1]\n\n\
[^e1]: Time: `2024-03-15`; Sources: [Flask tracker](new-source-flask)\n";

/// A server over a fresh home.
struct Server {
    _dir: tempfile::TempDir,
    home: PathBuf,
    state: AppState,
    app: Router,
}

/// What a call answered.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Server {
    fn new() -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let home = dir.path().join("home");
        let state = AppState::open(&home).expect("the home opens");
        let state = state.with_addr(HOST.parse().expect("an address"));
        Server { app: app(state.clone()), state, home, _dir: dir }
    }

    fn memory(&self) -> PathBuf {
        self.home.join("memory")
    }

    /// A request with the right Host, token and Origin.
    fn request(&self, method: Method, uri: &str) -> axum::http::request::Builder {
        Request::builder()
            .method(method)
            .uri(uri)
            .header(header::HOST, HOST)
            .header(header::ORIGIN, ORIGIN)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.state.token()))
    }

    async fn send(&self, request: Request<Body>) -> Answer {
        let response = self.app.clone().oneshot(request).await.expect("the router answers");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("a body");
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        Answer { status, headers, body }
    }

    async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> Answer {
        let request = self.request(method, uri);
        let request = match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => request.body(Body::empty()),
        };
        self.send(request.expect("a request")).await
    }

    async fn get(&self, uri: &str) -> Answer {
        self.call(Method::GET, uri, None).await
    }

    async fn revision(&self) -> String {
        let status = self.get("/api/memory/status").await;
        assert_eq!(status.status, StatusCode::OK, "{}", status.body);
        status.body["revision"].as_str().expect("a revision").to_owned()
    }

    /// Installs [`TOPIC`] at `topics/projects/budget.md` through the change API.
    async fn seed(&self) -> Value {
        let base = self.revision().await;
        let answer = self
            .call(
                Method::POST,
                "/api/memory/changes",
                Some(json!({
                    "base_revision": base,
                    "changes": [{"path": "topics/projects/budget.md", "action": "write", "content": TOPIC}],
                    "sources": [{
                        "label": "new-source-flask", "role": "user",
                        "content": "I'm building a budget tracker in Flask.",
                        "observed_at": "2024-03-15T10:00:00+00:00",
                    }],
                    "commit_message": "add the tracker",
                })),
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        answer.body
    }

    /// The block ID of the seeded paragraph.
    fn block_id(&self) -> String {
        let text = std::fs::read_to_string(self.memory().join("topics/projects/budget.md"))
            .expect("the topic");
        let line = text.lines().find(|l| l.starts_with("Craig")).expect("the paragraph");
        line.rsplit(" ^").next().expect("a block id").to_owned()
    }
}

fn error_code(answer: &Answer) -> &str {
    answer.body["error"]["code"].as_str().unwrap_or("")
}

/// Checks that `answer` is an error in the one shape every API refusal has: `{"ok": false,
/// "error": {"code", "message", "path", "violations"[, "details"]}}`, `path` a string or null,
/// each violation `{code, message, path, line, col}`, `details` (a refused change's structured
/// facts) an object when present. Returns the code.
fn assert_error_shape(what: &str, answer: &Answer) -> String {
    let body = &answer.body;
    assert!(answer.status.is_client_error() || answer.status.is_server_error(), "{what}");
    let content_type = answer.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    assert_eq!(content_type, Some("application/json"), "{what}: {body}");
    let keys = |v: &Value| -> Vec<String> {
        let mut keys: Vec<String> =
            v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        keys.sort();
        keys
    };
    assert_eq!(keys(body), ["error", "ok"], "{what}: {body}");
    assert_eq!(body["ok"], false, "{what}: {body}");
    let error = &body["error"];
    let mut shape = keys(error);
    if error.get("details").is_some() {
        assert!(error["details"].is_object(), "{what}: {body}");
        shape.retain(|key| key != "details");
    }
    assert_eq!(shape, ["code", "message", "path", "violations"], "{what}: {body}");
    let code = error["code"].as_str().unwrap_or_default();
    assert!(
        !code.is_empty() && code.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
        "{what}: {body}"
    );
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {body}");
    assert!(error["path"].is_null() || error["path"].is_string(), "{what}: {body}");
    for violation in error["violations"].as_array().expect("violations is an array") {
        assert_eq!(keys(violation), ["code", "col", "line", "message", "path"], "{what}: {body}");
    }
    code.to_owned()
}

#[tokio::test]
async fn every_api_error_answer_has_one_shape_including_the_guards_refusals() {
    let server = Server::new();
    server.seed().await;
    let base = server.revision().await;
    let token = format!("Bearer {}", server.state.token());
    let raw = |method: Method, uri: &str, headers: &[(header::HeaderName, &str)]| {
        let mut request = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            request = request.header(name, *value);
        }
        request.body(Body::empty()).expect("request")
    };
    let mut cases: Vec<(&str, Answer, &str)> = Vec::new();
    // The guards.
    let answer = server.send(raw(Method::GET, "/api/memory/status", &[(header::HOST, HOST)])).await;
    cases.push(("no token", answer, "UNAUTHORIZED"));
    let foreign = [(header::HOST, "evil.example:7878"), (header::AUTHORIZATION, token.as_str())];
    let answer = server.send(raw(Method::GET, "/api/memory/status", &foreign)).await;
    cases.push(("foreign Host", answer, "FORBIDDEN_HOST"));
    let answer = server.send(raw(Method::GET, "/", &foreign)).await;
    cases.push(("foreign Host on the page", answer, "FORBIDDEN_HOST"));
    let no_origin = [(header::HOST, HOST), (header::AUTHORIZATION, token.as_str())];
    let answer = server.send(raw(Method::PUT, "/api/memory/core", &no_origin)).await;
    cases.push(("no Origin", answer, "FORBIDDEN_ORIGIN"));
    let big =
        json!({"content": "x".repeat(scriptorium_server::web::BODY_LIMIT), "base_revision": base});
    let answer = server.call(Method::PUT, "/api/memory/core", Some(big)).await;
    cases.push(("body over the limit", answer, "SIZE_LIMIT"));
    // What axum refuses before a handler runs.
    let answer = server.call(Method::POST, "/api/memory/status", None).await;
    cases.push(("method not allowed", answer, "METHOD_NOT_ALLOWED"));
    let answer = server.get("/api/memory/search?q=x&top_k=many").await;
    cases.push(("a query that does not parse", answer, "INVALID_ARGUMENT"));
    let answer = server.get("/api/memory/topics/%FF.md").await;
    cases.push(("a path that is not UTF-8", answer, "INVALID_ARGUMENT"));
    // The routes.
    let answer = server.get("/api/memory/nothing").await;
    cases.push(("unknown route", answer, "NOT_FOUND"));
    let answer = server.get("/api/memory/topics/projects/none.md").await;
    cases.push(("missing topic", answer, "NOT_FOUND"));
    let answer = server.get("/api/memory/topics/..%2Fsecret.md").await;
    cases.push(("traversal", answer, "PATH_OUTSIDE_WORKSPACE"));
    let answer = server.get("/api/memory/timeline/x").await;
    cases.push(("bad date", answer, "PATH_OUTSIDE_WORKSPACE"));
    let answer = server.get("/api/memory/refs?limit=0").await;
    cases.push(("bad limit", answer, "INVALID_ARGUMENT"));
    let stale = json!({"content": "# Core\n", "base_revision": "0-0000000000000000"});
    let answer = server.call(Method::PUT, "/api/memory/core", Some(stale)).await;
    cases.push(("stale base", answer, "CONCURRENT_UPDATE"));
    let uri = "/api/memory/topics/projects/budget.md";
    let broken =
        json!({"content": "# Budget tracker\n\nNo evidence.[^x]\n", "base_revision": base});
    let answer = server.call(Method::PUT, uri, Some(broken)).await;
    let rejected_code = error_code(&answer).to_owned();
    cases.push(("rejected edit", answer, rejected_code.as_str()));
    let patch = "--- a/topics/projects/budget.md\n+++ b/topics/projects/budget.md\n\
                 @@ -1 +1 @@\n-# Not the title\n+# Budget\n";
    let answer = server
        .call(
            Method::POST,
            "/api/memory/changes",
            Some(json!({"base_revision": base, "patch": patch})),
        )
        .await;
    cases.push(("patch conflict", answer, "PATCH_CONFLICT"));
    for (what, answer, code) in &cases {
        assert_eq!(assert_error_shape(what, answer), *code, "{what}: {}", answer.body);
    }
    let violations = |what: &str| {
        let (_, answer, _) = cases.iter().find(|(w, _, _)| *w == what).expect("the case");
        answer.body["error"]["violations"].as_array().cloned().unwrap_or_default()
    };
    assert!(violations("rejected edit").iter().any(|v| v["code"] == "BLOCK_ID_REMOVED"));
    // A patch conflict's line, expected and found text survive, as its details.
    let (_, conflict, _) = cases.iter().find(|(w, _, _)| *w == "patch conflict").expect("case");
    let error = &conflict.body["error"];
    assert_eq!(error["path"], "topics/projects/budget.md");
    assert_eq!(error["details"]["line"], 1);
    assert_eq!(error["details"]["expected"], "# Not the title");
    assert_eq!(error["details"]["found"], "# Budget tracker");
    assert!(violations("missing topic").is_empty());
    assert_eq!(server.revision().await, base, "nothing refused was installed");
}

#[tokio::test]
async fn the_page_and_its_assets_need_no_token_and_carry_the_security_headers() {
    let server = Server::new();
    for (uri, kind) in
        [("/", "text/html"), ("/assets/app.js", "text/javascript"), ("/assets/app.css", "text/css")]
    {
        let request = Request::get(uri).header(header::HOST, HOST).body(Body::empty());
        let answer = server.send(request.expect("request")).await;
        assert_eq!(answer.status, StatusCode::OK, "{uri}");
        let content_type = answer.headers[header::CONTENT_TYPE].to_str().expect("ascii");
        assert!(content_type.starts_with(kind), "{uri}: {content_type}");
        let csp = answer.headers[header::CONTENT_SECURITY_POLICY].to_str().expect("ascii");
        assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("base-uri 'none'"));
        assert_eq!(answer.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(answer.headers[header::REFERRER_POLICY], "no-referrer");
    }
    let index = server.get("/").await;
    assert!(index.body.as_str().is_some_and(|html| html.contains("/assets/app.js")));
    // API answers carry the CSP too, and are never cached.
    let status = server.get("/api/memory/status").await;
    assert!(status.headers.contains_key(header::CONTENT_SECURITY_POLICY));
    assert_eq!(status.headers[header::CACHE_CONTROL], "no-store");
}

#[tokio::test]
async fn every_api_route_requires_the_token() {
    let server = Server::new();
    let routes = [
        (Method::GET, "/api/memory/status"),
        (Method::GET, "/api/memory/topics"),
        (Method::GET, "/api/memory/topics/projects/budget.md"),
        (Method::GET, "/api/memory/core"),
        (Method::GET, "/api/memory/recent"),
        (Method::GET, "/api/memory/timeline"),
        (Method::GET, "/api/memory/search?q=x"),
        (Method::GET, "/api/memory/refs"),
        (Method::GET, "/api/memory/sources/openprogram/_v2/x.md?anchor=source-1"),
        (Method::GET, "/api/memory/history/projects/budget.md"),
        (Method::GET, "/api/memory/history"),
        (Method::GET, "/api/memory/commits/HEAD"),
        (Method::GET, "/api/memory/sessions"),
        (Method::GET, "/api/memory/sessions/s"),
        (Method::POST, "/api/memory/sessions/s/write"),
        (Method::POST, "/api/memory/forget"),
        (Method::POST, "/api/memory/changes"),
        (Method::POST, "/api/memory/notes"),
        (Method::PUT, "/api/memory/core"),
        (Method::DELETE, "/api/memory/topics/x.md?base_revision=1"),
    ];
    let wrong = "0".repeat(64);
    let prefix = &server.state.token()[..63];
    for (method, uri) in routes {
        for auth in [
            None,
            Some(format!("Bearer {wrong}")),
            Some(format!("Bearer {prefix}")),
            Some(server.state.token().to_owned()),
        ] {
            let mut request = Request::builder()
                .method(method.clone())
                .uri(uri)
                .header(header::HOST, HOST)
                .header(header::ORIGIN, ORIGIN);
            if let Some(auth) = auth {
                request = request.header(header::AUTHORIZATION, auth);
            }
            let answer = server.send(request.body(Body::empty()).expect("request")).await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{method} {uri}");
            assert_eq!(answer.body["error"]["code"], "UNAUTHORIZED");
        }
    }
    assert_eq!(server.get("/api/memory/status").await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_foreign_host_header_is_refused() {
    let server = Server::new();
    for host in
        ["evil.example:7878", "127.0.0.1:9999", "localhost", "127.0.0.1.evil.example:7878", ""]
    {
        for uri in [
            "/",
            "/api/memory/status",
            "/api/memory/sources/openprogram/_v2/x.md?anchor=source-1",
            "/api/memory/history/projects/budget.md",
            "/api/memory/commits/HEAD",
            "/api/memory/sessions",
            "/api/memory/sessions/s",
        ] {
            let request = server
                .request(Method::GET, uri)
                .header(header::HOST, host)
                .body(Body::empty())
                .expect("request");
            let mut request = request;
            request.headers_mut().insert(header::HOST, host.parse().expect("a header value"));
            let answer = server.send(request).await;
            assert_eq!(answer.status, StatusCode::FORBIDDEN, "{host} {uri}");
            assert_eq!(answer.body["error"]["code"], "FORBIDDEN_HOST");
        }
    }
    for host in ["localhost:7878", "[::1]:7878", "LOCALHOST:7878"] {
        let mut request =
            server.request(Method::GET, "/api/memory/status").body(Body::empty()).expect("request");
        request.headers_mut().insert(header::HOST, host.parse().expect("a header value"));
        assert_eq!(server.send(request).await.status, StatusCode::OK, "{host}");
    }
}

#[tokio::test]
async fn state_changes_need_this_servers_origin() {
    let server = Server::new();
    let base = server.revision().await;
    let body = json!({"content": "# Core\n", "base_revision": base}).to_string();
    let changes = json!({"base_revision": base, "changes": []}).to_string();
    let cases = [
        (Method::PUT, "/api/memory/core", body.clone()),
        (Method::PUT, "/api/memory/topics/x.md", body),
        (Method::POST, "/api/memory/changes", changes),
        (Method::POST, "/api/memory/notes", json!({"text": "x"}).to_string()),
        (Method::POST, "/api/memory/sessions/s/write", String::new()),
        (Method::POST, "/api/memory/forget", json!({"block": "x", "confirm": true}).to_string()),
        (Method::DELETE, &format!("/api/memory/topics/x.md?base_revision={base}"), String::new()),
    ];
    for (method, uri, body) in cases {
        for origin in
            [Some("http://evil.example"), Some("http://127.0.0.1:9999"), Some("null"), None]
        {
            let mut request = server
                .request(method.clone(), uri)
                .body(Body::from(body.clone()))
                .expect("request");
            match origin {
                Some(origin) => {
                    request.headers_mut().insert(header::ORIGIN, origin.parse().expect("value"));
                }
                None => {
                    request.headers_mut().remove(header::ORIGIN);
                }
            }
            let answer = server.send(request).await;
            assert_eq!(answer.status, StatusCode::FORBIDDEN, "{method} {uri} from {origin:?}");
            assert_eq!(answer.body["error"]["code"], "FORBIDDEN_ORIGIN");
        }
    }
    // Reads need no Origin (a plain navigation or fetch may omit it).
    let mut read =
        server.request(Method::GET, "/api/memory/core").body(Body::empty()).expect("request");
    read.headers_mut().remove(header::ORIGIN);
    assert_eq!(server.send(read).await.status, StatusCode::OK);
    // Nothing was written.
    assert_eq!(server.revision().await, base);
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let server = Server::new();
    let base = server.revision().await;
    let big = "x".repeat(scriptorium_server::web::BODY_LIMIT + 1);
    let answer = server
        .call(Method::PUT, "/api/memory/core", Some(json!({"content": big, "base_revision": base})))
        .await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", answer.body);
    assert_eq!(error_code(&answer), "SIZE_LIMIT");
    assert!(answer.headers.contains_key(header::CONTENT_SECURITY_POLICY));
}

#[tokio::test]
async fn status_reports_the_workspace_and_the_writer() {
    let server = Server::new();
    server.seed().await;
    let answer = server.get("/api/memory/status").await;
    assert_eq!(answer.status, StatusCode::OK);
    let body = &answer.body;
    assert!(body["workspace"].as_str().is_some_and(|w| w.starts_with("w-")));
    assert_eq!(body["workspace_path"], server.memory().display().to_string());
    assert_eq!(body["topic_files"], 1);
    assert_eq!(body["blocks"], 1);
    assert_eq!(body["core_exists"], false);
    assert!(body["revision"].as_str().is_some_and(|r| !r.is_empty()));
    assert_eq!(body["pending_turns"], 0);
    assert_eq!(body["writer"]["last_outcome"], Value::Null, "no write yet: {body}");
    let settings = server.get("/api/memory/status?settings=true").await;
    assert_eq!(
        settings.body,
        json!({"workspace_path": server.memory().display().to_string(), "embedding_available": false})
    );
}

#[tokio::test]
async fn the_change_api_installs_and_maps_errors_to_status_codes() {
    let server = Server::new();
    let before = server.revision().await;
    let done = server.seed().await;
    assert_eq!(done["ok"], true);
    assert!(
        done["changed_files"]
            .as_array()
            .is_some_and(|f| f.iter().any(|p| p == "topics/projects/budget.md"))
    );
    assert_eq!(done["git_committed"], true);
    assert!(done["source_ids"]["new-source-flask"].as_str().is_some_and(|id| !id.is_empty()));
    assert_ne!(done["revision"], before.as_str());

    // A stale base revision: 409.
    let stale = server
        .call(
            Method::POST,
            "/api/memory/changes",
            Some(json!({
                "base_revision": before,
                "changes": [{"path": "topics/other.md", "action": "delete"}],
            })),
        )
        .await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.body);
    assert_eq!(stale.body["ok"], false);
    assert_eq!(error_code(&stale), "CONCURRENT_UPDATE");

    // An unknown record: 404.
    let base = server.revision().await;
    let missing = server
        .call(
            Method::POST,
            "/api/memory/changes",
            Some(json!({
                "base_revision": base,
                "memory_changes": [{"op": "delete_record", "memory_id": "0badc0de"}],
            })),
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
    assert_eq!(error_code(&missing), "MEMORY_NOT_FOUND");

    // Bad shapes: 400.
    let not_object = server.call(Method::POST, "/api/memory/changes", Some(json!([1, 2]))).await;
    assert_eq!(not_object.status, StatusCode::BAD_REQUEST);
    assert_eq!(not_object.body["error"]["message"], "request body must be a JSON object");
    let request = server
        .request(Method::POST, "/api/memory/changes")
        .body(Body::from("{nope"))
        .expect("request");
    let garbled = server.send(request).await;
    assert_eq!(garbled.status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&garbled), "INVALID_ARGUMENT");
    let outside = server
        .call(
            Method::POST,
            "/api/memory/changes",
            Some(json!({
                "base_revision": base,
                "changes": [{"path": "../escape.md", "action": "write", "content": "x"}],
            })),
        )
        .await;
    assert_eq!(outside.status, StatusCode::BAD_REQUEST, "{}", outside.body);
    assert_eq!(error_code(&outside), "PATH_OUTSIDE_WORKSPACE");
    assert_eq!(server.revision().await, base, "nothing refused was installed");
}

#[tokio::test]
async fn topics_are_listed_read_with_their_revision_and_rendered() {
    let server = Server::new();
    server.seed().await;
    let block = server.block_id();
    let list = server.get("/api/memory/topics").await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(
        list.body,
        json!([{
            "path": "projects/budget.md", "title": "Budget tracker", "type": "projects",
            "size": list.body[0]["size"], "mtime": list.body[0]["mtime"],
        }])
    );
    assert!(list.body[0]["size"].as_u64().is_some_and(|s| s > 0));
    assert!(list.body[0]["mtime"].as_f64().is_some_and(|m| m > 0.0));

    let topic = server.get("/api/memory/topics/projects/budget.md").await;
    assert_eq!(topic.status, StatusCode::OK, "{}", topic.body);
    assert_eq!(topic.body["path"], "projects/budget.md");
    assert_eq!(topic.body["workspace_path"], "topics/projects/budget.md");
    let on_disk =
        std::fs::read_to_string(server.memory().join("topics/projects/budget.md")).expect("read");
    assert_eq!(topic.body["content"], on_disk.as_str());
    assert_eq!(topic.body["revision"], server.revision().await.as_str());
    let html = topic.body["html"].as_str().expect("html");
    assert!(html.contains(&format!("id=\"^{block}\"")), "{html}");
    assert!(html.contains(">[1]</a></sup>") && !html.contains(&format!(" ^{block}")), "{html}");

    let missing = server.get("/api/memory/topics/projects/none.md").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.body["ok"], false);

    // The core master is managed by the core routes and is not listed.
    let base = server.revision().await;
    let core = format!(
        "# Core\n\nCore fact.[^e1]\n\n[^e1]: Time: `undated`; Sources: [k]({})\n",
        source_link(&on_disk)
    );
    let put = server
        .call(
            Method::PUT,
            "/api/memory/core",
            Some(json!({"content": core, "base_revision": base})),
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    let list = server.get("/api/memory/topics").await;
    assert_eq!(list.body.as_array().map(Vec::len), Some(1), "{}", list.body);
}

/// The source link target of the seeded topic's footnote, rewritten relative to `topics/`.
fn source_link(topic: &str) -> String {
    let start = topic.find("](../../sources/").expect("a source link") + 2;
    let end = topic[start..].find(')').expect("link end") + start;
    topic[start..end].replacen("../../", "../", 1)
}

#[tokio::test]
async fn a_topic_lists_the_blocks_linking_to_its_blocks() {
    let server = Server::new();
    server.seed().await;
    let block = server.block_id();
    let budget = std::fs::read_to_string(server.memory().join("topics/projects/budget.md"))
        .expect("the topic");
    // The seeded footnote's source link, as written from a file one folder below `topics/`.
    let start = budget.find("](../../sources/").expect("a source link") + 2;
    let end = budget[start..].find(')').expect("link end") + start;
    let dana = format!(
        "# Dana\n\nDana reviews [the tracker](../projects/budget.md#^{block}) monthly.[^e1]\n\n\
         [^e1]: Time: `2024-03-15`; Sources: [k]({})\n",
        &budget[start..end]
    );
    // Read once before the link exists: the server keeps the relations it read until the
    // views replace them, and must not answer from that copy after the install below.
    let before = server.get("/api/memory/topics/projects/budget.md").await;
    assert_eq!(before.body["backlinks"], json!([]), "{}", before.body);
    let base = server.revision().await;
    let put = server
        .call(
            Method::PUT,
            "/api/memory/topics/people/dana.md",
            Some(json!({"content": dana, "base_revision": base})),
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    let written =
        std::fs::read_to_string(server.memory().join("topics/people/dana.md")).expect("dana");
    let line = written.lines().find(|l| l.starts_with("Dana reviews")).expect("the paragraph");
    let linking = line.rsplit(" ^").next().expect("a block id");

    let topic = server.get("/api/memory/topics/projects/budget.md").await;
    assert_eq!(topic.status, StatusCode::OK, "{}", topic.body);
    let links = topic.body["backlinks"].as_array().expect("backlinks");
    assert_eq!(links.len(), 1, "{}", topic.body["backlinks"]);
    assert_eq!(links[0]["target"], block.as_str());
    assert_eq!(links[0]["from"]["path"], "topics/people/dana.md");
    assert_eq!(links[0]["from"]["block_id"], linking);
    assert!(
        links[0]["from"]["snippet"].as_str().is_some_and(|s| s.contains("Dana reviews")),
        "{}",
        links[0]
    );
    // Nothing links to Dana's block.
    let other = server.get("/api/memory/topics/people/dana.md").await;
    assert_eq!(other.body["backlinks"], json!([]), "{}", other.body);
}

#[tokio::test]
async fn a_topics_history_lists_the_transactions_that_changed_it_with_their_diffs() {
    let server = Server::new();
    server.seed().await;
    let path = "/api/memory/topics/projects/budget.md";
    let before = server.get(path).await;
    let edited = before.body["content"].as_str().expect("content").replace("Flask", "Django");
    let put = server
        .call(
            Method::PUT,
            path,
            Some(json!({"content": edited, "base_revision": before.body["revision"]})),
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);

    let history = server.get("/api/memory/history/projects/budget.md").await;
    assert_eq!(history.status, StatusCode::OK, "{}", history.body);
    assert_eq!(history.body["path"], "projects/budget.md");
    let changes = history.body["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 2, "{}", history.body);
    // Newest first: the edit, then the change that created the topic.
    assert_eq!(changes[0]["change"], "modified");
    let diff = changes[0]["diff"].as_str().expect("a diff");
    assert!(diff.contains("--- a/topics/projects/budget.md"), "{diff}");
    assert!(diff.lines().any(|l| l.starts_with('-') && l.contains("Flask")), "{diff}");
    assert!(diff.lines().any(|l| l.starts_with('+') && l.contains("Django")), "{diff}");
    assert!(changes[0]["txn_id"].as_str().is_some_and(|t| t.starts_with("t-")), "{}", changes[0]);
    assert_eq!(changes[0]["text"], edited.as_str(), "each change carries the file it left");
    assert_eq!(changes[1]["text"], before.body["content"]);
    assert_eq!(changes[1]["change"], "created");
    assert!(changes[1]["summary"].as_str().is_some_and(|s| s.contains("add the tracker")));
    assert!(changes[1]["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{}", changes[1]);
    // The workspace's transactions, each with the files it changed.
    let log = server.get("/api/memory/history?limit=2").await;
    assert_eq!(log.status, StatusCode::OK, "{}", log.body);
    let commits = log.body["commits"].as_array().expect("commits");
    assert_eq!(commits.len(), 2, "{}", log.body);
    assert_eq!(commits[0]["txn_id"], changes[0]["txn_id"]);
    let files = |c: &Value| -> Vec<String> {
        c["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| f.as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert!(files(&commits[0]).contains(&"topics/projects/budget.md".to_owned()), "{}", commits[0]);
    assert!(files(&commits[1]).iter().any(|f| f.starts_with("sources/")), "{}", commits[1]);
    assert!(files(&commits[1]).contains(&"topics/projects/budget.md".to_owned()), "{}", commits[1]);
    assert!(!files(&commits[0]).iter().any(|f| f.starts_with("sources/")), "{}", commits[0]);
    // One commit at most, a topic without history, and bad paths and limits.
    let one = server.get("/api/memory/history/projects/budget.md?limit=1").await;
    assert_eq!(one.body["changes"].as_array().map(Vec::len), Some(1), "{}", one.body);
    let none = server.get("/api/memory/history/projects/none.md").await;
    assert_eq!((none.status, none.body["changes"].clone()), (StatusCode::OK, json!([])));
    let bad = server.get("/api/memory/history/projects/budget.md?limit=0").await;
    assert_eq!((bad.status, error_code(&bad)), (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"));
    for attempt in ["..%2F..%2Fsecret.md", "%2e%2e/x.md", "..%5Cx.md", "notes.txt"] {
        let got = server.get(&format!("/api/memory/history/{attempt}")).await;
        assert_eq!(got.status, StatusCode::FORBIDDEN, "{attempt}: {}", got.body);
    }
}

#[tokio::test]
async fn a_commit_is_found_by_txn_id_or_prefix_with_its_diffs() {
    let server = Server::new();
    server.seed().await;
    let log = server.get("/api/memory/history?limit=1").await;
    let newest = &log.body["commits"][0];
    let txn = newest["txn_id"].as_str().expect("a Txn-Id");
    let commit = newest["commit"].as_str().expect("a commit");

    let shown = server.get(&format!("/api/memory/commits/{txn}")).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert_eq!(shown.body["commit"]["commit"], commit);
    let files = shown.body["commit"]["files"].as_array().expect("files");
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap_or("")).collect();
    assert_eq!(json!(paths), newest["files"], "the same files as the workspace history");
    let budget = files
        .iter()
        .find(|f| f["path"] == "topics/projects/budget.md")
        .expect("the topic is among them");
    assert_eq!(budget["change"], "created");
    assert!(budget["diff"].as_str().is_some_and(|d| d.contains("+++ b/topics/projects/budget.md")));

    let by_prefix = server.get(&format!("/api/memory/commits/{}", &commit[..8])).await;
    assert_eq!(by_prefix.body, shown.body);
    let only =
        server.get(&format!("/api/memory/commits/{txn}?path=topics/projects/budget.md")).await;
    assert_eq!(only.body["commit"]["files"].as_array().map(Vec::len), Some(1), "{}", only.body);

    let missing = server.get("/api/memory/commits/t-0000000000000-nothing").await;
    assert_eq!((missing.status, error_code(&missing)), (StatusCode::NOT_FOUND, "NOT_FOUND"));
    for attempt in ["../secret.md", "..%2Fsecret.md", "%2Fetc%2Fpasswd", "topics%5C..%5Cx"] {
        let got = server.get(&format!("/api/memory/commits/HEAD?path={attempt}")).await;
        assert_eq!(got.status, StatusCode::FORBIDDEN, "{attempt}: {}", got.body);
    }
}

#[tokio::test]
async fn path_traversal_and_symlinks_are_refused_on_every_path_route() {
    let server = Server::new();
    server.seed().await;
    let outside = server.home.join("secret.md");
    std::fs::write(&outside, "# Secret\n").expect("write");
    std::os::unix::fs::symlink(&outside, server.memory().join("topics/link.md")).expect("symlink");
    std::os::unix::fs::symlink(server.home.as_path(), server.memory().join("topics/linkdir"))
        .expect("symlink");
    let base = server.revision().await;
    let attempts = [
        "../secret.md",
        "..%2Fsecret.md",
        "%2e%2e/secret.md",
        "%2E%2E%2F%2E%2E%2Fsecret.md",
        "projects/..%2F..%2F..%2Fsecret.md",
        "%2Fetc%2Fpasswd.md",
        "..%5Csecret.md",
        "projects%5C..%5C..%5Csecret.md",
        "link.md",
        "linkdir/secret.md",
        "projects/budget.txt",
        "..",
    ];
    for attempt in attempts {
        let uri = format!("/api/memory/topics/{attempt}");
        let got = server.get(&uri).await;
        assert_eq!(got.status, StatusCode::FORBIDDEN, "GET {attempt}: {}", got.body);
        let put = server
            .call(Method::PUT, &uri, Some(json!({"content": "# Owned\n", "base_revision": base})))
            .await;
        assert_eq!(put.status, StatusCode::FORBIDDEN, "PUT {attempt}: {}", put.body);
        let delete =
            server.call(Method::DELETE, &format!("{uri}?base_revision={base}"), None).await;
        assert_eq!(delete.status, StatusCode::FORBIDDEN, "DELETE {attempt}: {}", delete.body);
        let history = server.get(&format!("/api/memory/history/{attempt}")).await;
        assert_eq!(history.status, StatusCode::FORBIDDEN, "history {attempt}: {}", history.body);
    }
    assert_eq!(std::fs::read_to_string(&outside).expect("read"), "# Secret\n");
    // A symlink in place of the recent file or a timeline file is not followed either.
    std::fs::remove_file(server.memory().join("recent_events.jsonl")).expect("remove");
    std::os::unix::fs::symlink(&outside, server.memory().join("recent_events.jsonl"))
        .expect("symlink");
    assert_eq!(server.get("/api/memory/recent").await.status, StatusCode::FORBIDDEN);
    std::fs::create_dir_all(server.memory().join("timeline")).expect("mkdir");
    std::os::unix::fs::symlink(&outside, server.memory().join("timeline/1999.md"))
        .expect("symlink");
    assert_eq!(server.get("/api/memory/timeline/1999").await.status, StatusCode::FORBIDDEN);
    let list = server.get("/api/memory/topics").await;
    assert!(!list.body.to_string().contains("link"), "symlinks are not listed: {}", list.body);
}

#[tokio::test]
async fn a_citation_opens_its_record_with_its_turns_and_the_blocks_citing_it() {
    let server = Server::new();
    server.seed().await;
    let topic = std::fs::read_to_string(server.memory().join("topics/projects/budget.md"))
        .expect("the topic");
    let link = source_link(&topic);
    let (archive, anchor) = link.trim_start_matches("../").split_once('#').expect("an anchor");
    let archive = archive.strip_prefix("sources/").expect("an archive");
    let got = server.get(&format!("/api/memory/sources/{archive}?anchor={anchor}")).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    assert!(got.body["text"].as_str().is_some_and(|t| t.contains("budget tracker in Flask")));
    assert_eq!(got.body["record"]["anchor"], anchor, "{}", got.body);
    assert_eq!(got.body["record"]["position"], 1, "{}", got.body);
    assert_eq!(got.body["record"]["cited_by"][0]["path"], "topics/projects/budget.md");
    assert_eq!(got.body["record"]["cited_by"][0]["block_id"], server.block_id().as_str());
    // The whole archive, paged.
    let whole = server.get(&format!("/api/memory/sources/{archive}?limit=1")).await;
    assert_eq!(whole.status, StatusCode::OK, "{}", whole.body);
    assert_eq!(whole.body["next_offset"], 1, "{}", whole.body);
    assert_eq!(whole.body["turns"][0]["anchor"], anchor, "{}", whole.body);
    assert!(whole.body["turns"][0]["text"].as_str().is_some_and(|t| t.contains("Flask")));
    // A record that is not there, a file that is not there, and paths that escape.
    let missing = server.get(&format!("/api/memory/sources/{archive}?anchor=source-0")).await;
    assert_eq!((missing.status, error_code(&missing)), (StatusCode::NOT_FOUND, "MEMORY_NOT_FOUND"));
    let none = server.get("/api/memory/sources/openprogram/_v2/none.md").await;
    assert_eq!((none.status, error_code(&none)), (StatusCode::NOT_FOUND, "NOT_FOUND"));
    let outside = server.home.join("secret.md");
    std::fs::write(&outside, "# Secret\n").expect("write");
    std::os::unix::fs::symlink(&outside, server.memory().join("sources/link.md")).expect("link");
    for attempt in ["..%2F..%2Fsecret.md", "%2e%2e/%2e%2e/secret.md", "..%5C..%5Csecret.md"] {
        let got = server.get(&format!("/api/memory/sources/{attempt}")).await;
        assert!(
            got.status == StatusCode::FORBIDDEN || got.status == StatusCode::NOT_FOUND,
            "{attempt}: {} {}",
            got.status,
            got.body
        );
        assert!(!got.body.to_string().contains("Secret"), "{attempt}: {}", got.body);
    }
    let link = server.get("/api/memory/sources/link.md").await;
    assert_eq!(link.status, StatusCode::NOT_FOUND, "a symlink is not read: {}", link.body);
    assert!(!link.body.to_string().contains("Secret"));
}

#[tokio::test]
async fn overlong_topic_names_are_400_on_every_topic_route_not_500() {
    let server = Server::new();
    server.seed().await;
    let base = server.revision().await;
    // 256 bytes: one more than a file name may have (NAME_MAX), in ASCII and in UTF-8.
    let long_name = format!("{}.md", "n".repeat(253));
    let long_utf8 = format!("{}x.md", "%C3%A9".repeat(126));
    let long_dir = format!("{}/x.md", "d".repeat(256));
    // Every component short, the whole path beyond PATH_MAX (4096 bytes).
    let long_path = format!("{}/x.md", vec!["d".repeat(250); 17].join("/"));
    for param in [long_name.clone(), format!("notes/{long_name}"), long_utf8, long_dir, long_path] {
        let uri = format!("/api/memory/topics/{param}");
        let put = json!({"content": "# Long\n", "base_revision": base});
        for (method, uri, body) in [
            (Method::GET, uri.clone(), None),
            (Method::PUT, uri.clone(), Some(put)),
            (Method::DELETE, format!("{uri}?base_revision={base}"), None),
        ] {
            let answer = server.call(method.clone(), &uri, body).await;
            let what = format!("{method} {} bytes: {}", param.len(), answer.body);
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{what}");
            assert_eq!(error_code(&answer), "INVALID_ARGUMENT", "{what}");
            assert!(answer.body["error"]["path"].as_str().is_some(), "{what}");
        }
    }
    assert_eq!(server.revision().await, base, "nothing was installed");
    // 255 bytes is a name like any other.
    let topic =
        std::fs::read_to_string(server.memory().join("topics/projects/budget.md")).expect("read");
    let start = topic.find("](../../sources/").expect("a source link") + 2;
    let link = &topic[start..start + topic[start..].find(')').expect("link end")];
    let content = format!(
        "# Longest\n\nA fact with a long name.[^e1]\n\n[^e1]: Time: `undated`; Sources: [k]({link})\n"
    );
    let longest = format!("notes/{}.md", "n".repeat(252));
    let uri = format!("/api/memory/topics/{longest}");
    assert_eq!(server.get(&uri).await.status, StatusCode::NOT_FOUND);
    let put = server
        .call(Method::PUT, &uri, Some(json!({"content": content, "base_revision": base})))
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    let changed = put.body["changed_files"].as_array().expect("changed files");
    assert!(changed.iter().any(|f| *f == format!("topics/{longest}").as_str()), "{}", put.body);
    let got = server.get(&uri).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    assert!(got.body["content"].as_str().is_some_and(|c| c.contains("long name")));
}

#[tokio::test]
async fn topic_edits_are_compare_and_set_and_validated() {
    let server = Server::new();
    server.seed().await;
    let uri = "/api/memory/topics/projects/budget.md";
    let topic = server.get(uri).await;
    let base = topic.body["revision"].as_str().expect("revision").to_owned();
    let old = topic.body["content"].as_str().expect("content").to_owned();
    let new = old.replace("in Flask.", "in Flask and SQLite.");

    let missing_base = server.call(Method::PUT, uri, Some(json!({"content": new}))).await;
    assert_eq!(missing_base.status, StatusCode::BAD_REQUEST);

    let saved =
        server.call(Method::PUT, uri, Some(json!({"content": new, "base_revision": base}))).await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.body);
    assert_eq!(saved.body["ok"], true);
    // What a user sees changed: the topic and the derived views the commit rewrote.
    assert_eq!(
        saved.body["changed_files"],
        json!(["recent_events.jsonl", "timeline/2024/03/15.md", "topics/projects/budget.md"])
    );
    assert_ne!(saved.body["revision"], base.as_str());
    let reread = server.get(uri).await;
    assert!(reread.body["content"].as_str().is_some_and(|c| c.contains("Flask and SQLite")));
    assert_eq!(reread.body["revision"], saved.body["revision"]);

    // The page's copy is now stale.
    let stale =
        server.call(Method::PUT, uri, Some(json!({"content": old, "base_revision": base}))).await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.body);
    assert_eq!(error_code(&stale), "CONCURRENT_UPDATE");

    // Dropping the block and citing nothing: rejected with every violation listed.
    let current = saved.body["revision"].as_str().expect("revision").to_owned();
    let broken = "# Budget tracker\n\nNo evidence here.[^x]\n";
    let rejected = server
        .call(Method::PUT, uri, Some(json!({"content": broken, "base_revision": current})))
        .await;
    assert_eq!(rejected.status, StatusCode::BAD_REQUEST, "{}", rejected.body);
    let violations = rejected.body["error"]["violations"].as_array().expect("violations");
    assert!(!violations.is_empty());
    for v in violations {
        for field in ["code", "path", "line", "col", "message"] {
            assert!(v.get(field).is_some(), "{field} in {v}");
        }
    }
    assert!(violations.iter().any(|v| v["code"] == "BLOCK_ID_REMOVED"), "{violations:?}");
    assert_eq!(server.revision().await, current, "a rejected edit installs nothing");

    // A PUT of a bare heading changes nothing (an empty section is structure, not memory):
    // ok, but a no-op, and it says so.
    let empty = server
        .call(
            Method::PUT,
            "/api/memory/topics/notes/empty.md",
            Some(json!({"content": "# Empty\n", "base_revision": current})),
        )
        .await;
    assert_eq!(empty.status, StatusCode::OK, "{}", empty.body);
    assert_eq!(empty.body["noop"], true, "{}", empty.body);
    assert_eq!(server.revision().await, current);
    // Regression: an uncited paragraph was answered 200 ok:true and then 404 (pruned).
    let uncited = server
        .call(
            Method::PUT,
            "/api/memory/topics/core.md",
            Some(json!({"content": "# Core\n\nThe owner wants only e2e tests.\n",
                        "base_revision": current})),
        )
        .await;
    assert_eq!(uncited.status, StatusCode::BAD_REQUEST, "{}", uncited.body);
    let violation = &uncited.body["error"]["violations"][0];
    assert_eq!(violation["code"], "UNCITED_PARAGRAPH", "{}", uncited.body);
    assert_eq!(
        (violation["path"].as_str(), violation["line"].as_u64()),
        (Some("topics/core.md"), Some(3))
    );
    assert_eq!(server.revision().await, current, "nothing was installed");
}

#[tokio::test]
async fn topic_deletes_are_compare_and_set() {
    let server = Server::new();
    let before = server.revision().await;
    server.seed().await;
    let uri = "/api/memory/topics/projects/budget.md";
    assert_eq!(server.call(Method::DELETE, uri, None).await.status, StatusCode::BAD_REQUEST);
    let stale = server.call(Method::DELETE, &format!("{uri}?base_revision={before}"), None).await;
    assert_eq!(stale.status, StatusCode::CONFLICT);
    let base = server.revision().await;
    let deleted = server.call(Method::DELETE, &format!("{uri}?base_revision={base}"), None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.body);
    assert_eq!(
        deleted.body["changed_files"],
        json!([
            "recent_events.jsonl",
            "relations.json",
            "timeline/2024/03/15.md",
            "topics/projects/budget.md"
        ])
    );
    assert_eq!(server.get(uri).await.status, StatusCode::NOT_FOUND);
    let base = server.revision().await;
    let again = server.call(Method::DELETE, &format!("{uri}?base_revision={base}"), None).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
}

/// Three paragraphs citing one source, installed at `topics/people/dana.md`; returns their
/// block IDs in file order.
async fn seed_garden(server: &Server) -> Vec<String> {
    let garden = "# Garden\n\n\
        Dana grows tomatoes on the balcony.[^e1]\n\n\
        Dana waters them every morning before work.[^e1]\n\n\
        Dana plans to add chili peppers next spring.[^e1]\n\n\
        [^e1]: Time: `2024-04-02`; Sources: [garden](new-source-garden)\n";
    let base = server.revision().await;
    let answer = server
        .call(
            Method::POST,
            "/api/memory/changes",
            Some(json!({
                "base_revision": base,
                "changes": [{"path": "topics/people/dana.md", "action": "write", "content": garden}],
                "sources": [{
                    "label": "new-source-garden", "role": "user",
                    "content": "I grow tomatoes on the balcony and will add chili peppers.",
                    "observed_at": "2024-04-02T09:00:00+00:00",
                }],
            })),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let text =
        std::fs::read_to_string(server.memory().join("topics/people/dana.md")).expect("dana");
    text.lines()
        .filter(|l| l.starts_with("Dana"))
        .map(|l| l.rsplit(" ^").next().expect("a block id").to_owned())
        .collect()
}

/// Regression (issue 34, item 9): a save that leaves paragraphs out was refused with
/// `BLOCK_ID_REMOVED` at lines of the installed file and no way to delete them. Now the refusal
/// names each paragraph, and the same text with their IDs in `delete_blocks` deletes them in
/// one transaction; a paragraph not named is still refused.
#[tokio::test]
async fn a_save_that_deletes_paragraphs_names_them_and_installs_once_they_are_confirmed() {
    let server = Server::new();
    let ids = seed_garden(&server).await;
    let [tomatoes, waters, chili] = ids.as_slice() else { panic!("three paragraphs: {ids:?}") };
    let uri = "/api/memory/topics/people/dana.md";
    let topic = server.get(uri).await;
    let base = topic.body["revision"].as_str().expect("revision").to_owned();
    let content = topic.body["content"].as_str().expect("content");
    let kept: String = content
        .lines()
        .filter(|l| !l.contains("tomatoes") && !l.contains("chili"))
        .map(|l| format!("{l}\n"))
        .collect();

    let refused =
        server.call(Method::PUT, uri, Some(json!({"content": kept, "base_revision": base}))).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(assert_error_shape("a save deleting paragraphs", &refused), "BLOCK_ID_REMOVED");
    let error = &refused.body["error"];
    let message = error["message"].as_str().expect("a message");
    let said = format!(
        "this edit deletes 2 paragraphs: ^{tomatoes} “Dana grows tomatoes on the balcony.”, \
         ^{chili} “Dana plans to add chili peppers next spring.”"
    );
    assert!(message.starts_with(&said), "{message}");
    assert!(message.contains("delete_blocks"), "{message}");
    assert_eq!(error["details"]["delete_blocks"], json!([tomatoes, chili]));
    assert_eq!(
        error["details"]["paragraphs"][0],
        json!({"block_ids": [tomatoes], "excerpt": "Dana grows tomatoes on the balcony."})
    );
    let violations = error["violations"].as_array().expect("violations");
    assert_eq!(violations.len(), 2, "{violations:?}");
    for v in violations {
        assert_eq!(v["code"], "BLOCK_ID_REMOVED");
        assert_eq!(v["path"], "topics/people/dana.md");
        assert_eq!(v["line"], 0, "the paragraph is not in the text sent: {v}");
    }
    assert_eq!(server.revision().await, base, "nothing was installed");

    // Confirming one is not enough: the other is still named.
    let half = server
        .call(
            Method::PUT,
            uri,
            Some(json!({"content": kept, "base_revision": base, "delete_blocks": [tomatoes]})),
        )
        .await;
    assert_eq!(half.status, StatusCode::BAD_REQUEST, "{}", half.body);
    assert_eq!(half.body["error"]["details"]["delete_blocks"], json!([chili]));
    assert_eq!(server.revision().await, base, "nothing was installed");

    let confirmed = server
        .call(
            Method::PUT,
            uri,
            Some(
                json!({"content": kept, "base_revision": base, "delete_blocks": [tomatoes, chili]}),
            ),
        )
        .await;
    assert_eq!(confirmed.status, StatusCode::OK, "{}", confirmed.body);
    let after = server.get(uri).await.body["content"].as_str().expect("content").to_owned();
    assert!(after.contains(&format!(" ^{waters}")), "{after}");
    assert!(!after.contains("tomatoes") && !after.contains("chili"), "{after}");
    let history = server.get("/api/memory/history/people/dana.md").await;
    assert_eq!(history.body["changes"].as_array().map(Vec::len), Some(2), "one transaction");
}

/// Regression (issue 34, item 9): the engine validates the normalized text, and normalization
/// drops sections without records, so violations pointed at lines above the ones the user
/// wrote. They point at the text sent.
#[tokio::test]
async fn a_refused_edit_points_at_lines_of_the_text_it_sent() {
    let server = Server::new();
    server.seed().await;
    let uri = "/api/memory/topics/projects/budget.md";
    let topic = server.get(uri).await;
    let base = topic.body["revision"].as_str().expect("revision").to_owned();
    let content = topic.body["content"].as_str().expect("content");
    let sent = content
        .replacen("\n\n", "\n\n## Ideas\n\n## Later\n\n", 1)
        .replace("`2024-03-15`", "`2024-13-45`");
    let line = sent.lines().position(|l| l.contains("2024-13-45")).expect("the definition") + 1;
    let refused =
        server.call(Method::PUT, uri, Some(json!({"content": sent, "base_revision": base}))).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    let violation = &refused.body["error"]["violations"][0];
    assert_eq!(violation["code"], "INVALID_TOPIC_FORMAT", "{}", refused.body);
    assert_eq!(violation["line"], json!(line), "{}\n{sent}", refused.body);
}

/// Regression (issue 34): Recent → Changes showed `recent_events.jsonl` first. A transaction's
/// files list the topics first, then the archive, then the derived views.
#[tokio::test]
async fn a_transactions_files_list_topics_first_and_derived_files_last() {
    let server = Server::new();
    server.seed().await;
    let log = server.get("/api/memory/history?limit=1").await;
    let files: Vec<String> = serde_json::from_value(log.body["commits"][0]["files"].clone())
        .expect("the files of the newest transaction");
    assert_eq!(files[0], "topics/projects/budget.md", "{files:?}");
    assert!(files[1].starts_with("sources/"), "{files:?}");
    assert!(
        files[2..].iter().all(|f| !f.starts_with("topics/") && !f.starts_with("sources/")),
        "{files:?}"
    );
    let shown = server.get("/api/memory/commits/HEAD").await;
    let paths: Vec<&str> = shown.body["commit"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(paths, files);
}

#[tokio::test]
async fn the_timeline_lists_dates_newest_first_and_refuses_bad_dates() {
    let server = Server::new();
    server.seed().await;
    let list = server.get("/api/memory/timeline").await;
    assert_eq!(list.status, StatusCode::OK);
    let dates: Vec<&str> =
        list.body.as_array().expect("rows").iter().filter_map(|r| r["date"].as_str()).collect();
    assert_eq!(dates, ["2024-03-15"], "{}", list.body);
    assert!(list.body[0]["size"].as_u64().is_some_and(|s| s > 0));
    std::fs::write(server.memory().join("timeline/2023.md"), "# 2023\n").expect("write");
    let list = server.get("/api/memory/timeline").await;
    let dates: Vec<&str> =
        list.body.as_array().expect("rows").iter().filter_map(|r| r["date"].as_str()).collect();
    assert_eq!(dates, ["2024-03-15", "2023"]);

    let day = server.get("/api/memory/timeline/2024-03-15").await;
    assert_eq!(day.status, StatusCode::OK);
    assert_eq!(day.body["date"], "2024-03-15");
    assert!(
        day.body["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("# 2024-03-15") && c.contains("Craig"))
    );
    assert!(day.body["html"].as_str().is_some_and(|h| h.contains("<h1>2024-03-15</h1>")));
    let absent = server.get("/api/memory/timeline/1999-01").await;
    assert_eq!(absent.status, StatusCode::OK);
    assert_eq!(absent.body["content"], "");
    for bad in ["2024-3", "24", "..%2F..%2Fsecret", "2024-03-15-01", "2024%2F03", "x"] {
        let answer = server.get(&format!("/api/memory/timeline/{bad}")).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{bad}");
    }
}

#[tokio::test]
async fn recent_rows_come_newest_first_with_the_limit_header() {
    let server = Server::new();
    server.seed().await;
    let base = server.revision().await;
    let created = server
        .call(Method::POST, "/api/memory/changes", Some(json!({
            "base_revision": base,
            "memory_changes": [{
                "op": "create_record", "content": "Craig deploys on Fridays.", "time": "2024-03",
                "sources": [{"source": "new-source-deploy", "label": "deploys"}],
                "destination": {"topic_path": "topics/projects/budget.md", "headings": ["Budget tracker", "Status"], "position": "end"},
            }],
            "sources": [{"label": "new-source-deploy", "role": "user", "content": "I deploy on Fridays."}],
        })))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.body);
    let recent = server.get("/api/memory/recent").await;
    assert_eq!(recent.status, StatusCode::OK);
    assert_eq!(recent.headers["x-memory-recent-limit"], "50");
    let rows = recent.body.as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    assert!(rows[0]["content"].as_str().is_some_and(|c| c.contains("Fridays")), "{}", recent.body);
    assert!(rows[1]["content"].as_str().is_some_and(|c| c.contains("Flask")));
    assert_eq!(rows[0]["topic_path"], "topics/projects/budget.md");
}

#[tokio::test]
async fn core_is_read_with_its_render_and_written_by_compare_and_set() {
    let server = Server::new();
    let empty = server.get("/api/memory/core").await;
    assert_eq!(empty.status, StatusCode::OK);
    for (key, want) in [
        ("content", json!("")),
        ("rendered_content", json!("")),
        ("injected_content", json!("")),
        ("rendered_tokens", json!(0)),
        ("injected_tokens", json!(0)),
        ("budget_tokens", json!(2000)),
        ("injection_enabled", json!(true)),
        ("size", json!(0)),
    ] {
        assert_eq!(empty.body[key], want, "{key}");
    }
    server.seed().await;
    let topic =
        std::fs::read_to_string(server.memory().join("topics/projects/budget.md")).expect("read");
    let base = server.get("/api/memory/core").await.body["revision"]
        .as_str()
        .expect("revision")
        .to_owned();
    let core = format!(
        "# Core\n\nThe owner prefers plain language.[^e1]\n\n[^e1]: Time: `undated`; Sources: [style]({})\n",
        source_link(&topic)
    );
    let put = server
        .call(
            Method::PUT,
            "/api/memory/core",
            Some(json!({"content": core, "base_revision": base})),
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    assert!(
        put.body["changed_files"]
            .as_array()
            .is_some_and(|f| f.iter().any(|p| p == "topics/core.md"))
    );

    let read = server.get("/api/memory/core").await;
    let body = &read.body;
    let master = std::fs::read_to_string(server.memory().join("topics/core.md")).expect("master");
    let rendered = std::fs::read_to_string(server.memory().join("core.md")).expect("render");
    assert_eq!(body["content"], master.as_str());
    assert_eq!(body["rendered_content"], rendered.as_str());
    assert_eq!(body["size"], master.len());
    assert!(body["rendered_tokens"].as_u64().is_some_and(|t| t > 0 && t <= 2000));
    let injected = body["injected_content"].as_str().expect("injected");
    assert!(
        injected.contains("plain language") && injected.contains("<memory-context>"),
        "{injected}"
    );
    let injected_tokens = body["injected_tokens"].as_u64().expect("injected_tokens");
    let rendered_tokens = body["rendered_tokens"].as_u64().expect("rendered_tokens");
    assert!(injected_tokens > rendered_tokens, "the fence adds tokens");
    assert_eq!(body["revision"], server.revision().await.as_str());
    assert!(
        body["rendered_html"]
            .as_str()
            .is_some_and(|h| h.contains("plain language") && h.contains(">[1]</a></sup>"))
    );
    assert!(body["html"].as_str().is_some_and(|h| h.contains("block-anchor")));

    let stale = server
        .call(
            Method::PUT,
            "/api/memory/core",
            Some(json!({"content": "# Core\n", "base_revision": base})),
        )
        .await;
    assert_eq!(stale.status, StatusCode::CONFLICT);
    assert_eq!(server.get("/api/memory/core").await.body["content"], master.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_core_read_waits_for_the_write_lock_and_sees_the_new_text() {
    let server = Server::new();
    let root = server.memory();
    let (locked_tx, locked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let holder_root = root.clone();
    // Another handle holds the write lock, as an install does, and writes while holding it.
    let holder = std::thread::spawn(move || {
        let ws = Workspace::open(&holder_root).expect("a second handle");
        ws.with_write_lock(LockTimeout::DEFAULT, || {
            locked_tx.send(()).expect("signal");
            release_rx.recv().expect("release");
            std::fs::write(
                holder_root.join("topics/core.md"),
                "# Core\n\nHalf-installed no more.\n",
            )
            .expect("write master");
            std::fs::write(holder_root.join("core.md"), "# Core\n\nHalf-installed no more.\n")
                .expect("write render");
        })
        .expect("the lock");
    });
    locked_rx.recv().expect("the lock is held");
    let app = server.app.clone();
    let request =
        server.request(Method::GET, "/api/memory/core").body(Body::empty()).expect("request");
    let read = tokio::spawn(async move { app.oneshot(request).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!read.is_finished(), "the read must wait for the lock");
    release_tx.send(()).expect("release");
    let response = read.await.expect("joined").expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
    let body: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(body["content"], "# Core\n\nHalf-installed no more.\n");
    assert_eq!(body["rendered_content"], "# Core\n\nHalf-installed no more.\n");
    holder.join().expect("the holder finished");
    // The revision answered is the one of the text answered, not the one before the writes.
    let revision = Workspace::open(&root).expect("a handle").revision().expect("revision");
    assert_eq!(body["revision"], revision.as_str());
}

#[tokio::test]
async fn a_search_takes_in_an_outside_edit_and_says_so() {
    let server = Server::new();
    server.seed().await;
    // Another program (an editor, `git pull`) rewrites the paragraph, keeping its ID and citation.
    let path = server.memory().join("topics/projects/budget.md");
    let text = std::fs::read_to_string(&path).expect("the topic");
    std::fs::write(&path, text.replace("in Flask", "in Flask with a SQLite ledger")).expect("edit");
    let hits = server.get("/api/memory/search?q=sqlite%20ledger&prefix=topics").await;
    assert_eq!(hits.status, StatusCode::OK, "{}", hits.body);
    assert!(
        hits.body["hits"][0]["content"].as_str().is_some_and(|c| c.contains("SQLite ledger")),
        "the edit is found by this very search: {}",
        hits.body
    );
    let outside = &hits.body["outside_edits"];
    assert_eq!(outside["adopted"], true, "{}", hits.body);
    assert_eq!(outside["files"], json!(["topics/projects/budget.md"]));
    assert_eq!(outside["revision"].as_str(), Some(server.revision().await.as_str()));
    assert!(outside["git_commit"].as_str().is_some_and(|c| c.len() == 40), "{outside}");
    // Taken in once: the next search has nothing to report.
    let again = server.get("/api/memory/search?q=sqlite%20ledger").await;
    assert!(again.body.get("outside_edits").is_none(), "{}", again.body);
}

#[tokio::test]
async fn search_and_refs_find_the_seeded_block() {
    let server = Server::new();
    server.seed().await;
    let block = server.block_id();
    let hits =
        server.get("/api/memory/search?q=budget%20tracker%20Flask&top_k=3&prefix=topics").await;
    assert_eq!(hits.status, StatusCode::OK, "{}", hits.body);
    let first = &hits.body["hits"][0];
    assert_eq!(first["path"], "topics/projects/budget.md");
    assert_eq!(first["kind"], "block");
    assert_eq!(first["anchor"], format!("#^{block}"));
    assert!(first["score"].as_f64().is_some_and(|s| s > 0.0));
    assert!(first["content"].as_str().is_some_and(|c| c.contains("Flask")));
    assert_eq!(server.get("/api/memory/search").await.status, StatusCode::BAD_REQUEST);

    let refs = server.get("/api/memory/refs?q=flask").await;
    assert_eq!(refs.status, StatusCode::OK);
    let workspace = server.get("/api/memory/status").await.body["workspace"].clone();
    assert_eq!(
        refs.body,
        json!([{
            "workspace_id": workspace, "memory_id": block, "topic_path": "topics/projects/budget.md",
            "content": refs.body[0]["content"], "when": "2024-03-15",
        }])
    );
    assert!(refs.body[0]["content"].as_str().is_some_and(|c| c.starts_with("Craig")));
    assert_eq!(server.get("/api/memory/refs?q=nothing-like-it").await.body, json!([]));
    assert_eq!(server.get("/api/memory/refs?limit=1").await.body.as_array().map(Vec::len), Some(1));
    for bad in ["0", "501", "x", "-1"] {
        assert_eq!(
            server.get(&format!("/api/memory/refs?limit={bad}")).await.status,
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
}

#[tokio::test]
async fn unknown_api_routes_are_json_404s() {
    let server = Server::new();
    let answer = server.get("/api/memory/nothing").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(answer.body["ok"], false);
}

#[tokio::test]
async fn memory_disabled_answers_503_everywhere_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    std::fs::create_dir(&home).expect("mkdir");
    std::fs::write(home.join("scriptorium.toml"), "[memory]\nbackend = \"none\"\n")
        .expect("config");
    let state =
        AppState::open(&home).expect("opens disabled").with_addr(HOST.parse().expect("addr"));
    assert!(state.is_disabled());
    let router = app(state.clone());
    let routes = [
        (Method::GET, "/api/memory/status"),
        (Method::GET, "/api/memory/refs"),
        (Method::POST, "/api/memory/changes"),
        (Method::GET, "/api/memory/topics"),
        (Method::GET, "/api/memory/topics/a.md"),
        (Method::PUT, "/api/memory/topics/a.md"),
        (Method::DELETE, "/api/memory/topics/a.md"),
        (Method::GET, "/api/memory/timeline"),
        (Method::GET, "/api/memory/timeline/2024"),
        (Method::GET, "/api/memory/recent"),
        (Method::GET, "/api/memory/core"),
        (Method::PUT, "/api/memory/core"),
        (Method::GET, "/api/memory/search?q=x"),
        (Method::GET, "/api/memory/sessions"),
        (Method::GET, "/api/memory/sessions/s"),
        (Method::POST, "/api/memory/sessions/s/write"),
        (Method::POST, "/api/memory/forget"),
    ];
    for (method, uri) in routes {
        for token in [None, Some(state.token())] {
            let mut request =
                Request::builder().method(method.clone()).uri(uri).header(header::HOST, HOST);
            if let Some(token) = token {
                request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
            }
            let response = router
                .clone()
                .oneshot(request.body(Body::empty()).expect("request"))
                .await
                .expect("answer");
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE, "{method} {uri}");
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
            let body: Value = serde_json::from_slice(&bytes).expect("json");
            assert_eq!(
                body,
                json!({"ok": false, "error": {
                    "code": "MEMORY_DISABLED", "message": "memory is disabled by memory.backend=none",
                    "path": null, "violations": [],
                }})
            );
        }
    }
    let names: Vec<_> = std::fs::read_dir(&home)
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["scriptorium.toml"], "nothing created in the home");
    assert!(!Path::new(&home.join("memory")).exists());
}

#[tokio::test]
async fn serve_refuses_a_remote_address_without_the_opt_in() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err = scriptorium_server::web::serve(
        dir.path().join("home"),
        "0.0.0.0:0".parse().expect("addr"),
        async {},
    )
    .await
    .expect_err("refused");
    assert!(err.to_string().contains("--allow-remote"), "{err}");
    assert!(!dir.path().join("home").exists(), "nothing opened");
}

/// Sends one `GET /api/memory/status` with `Connection: close` and reads the whole answer.
async fn status_over_tcp(addr: std::net::SocketAddr, token: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /api/memory/status HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
        addr.port(),
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_beyond_the_limit_neither_hang_the_server_nor_stay_open() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    const LIMIT: usize = 64;
    const HALF_OPEN: usize = 300;
    // Bounds that no loaded machine comes near; the test's speed never decides its result.
    const PATIENCE: Duration = Duration::from_secs(120);
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let options = scriptorium_server::web::ServeOptions {
        header_read_timeout: Duration::from_millis(500),
        max_connections: LIMIT,
        ..scriptorium_server::web::ServeOptions::default()
    };
    let server = tokio::spawn(scriptorium_server::web::serve_with(
        home.clone(),
        "127.0.0.1:0".parse().expect("addr"),
        options,
        move |listening| {
            let _ = ready_tx.send(listening.addr);
        },
        async move {
            let _ = stop_rx.await;
        },
    ));
    let addr = ready_rx.await.expect("listening");
    let token = std::fs::read_to_string(home.join("server-token")).expect("token file");
    // Connections that send nothing, or half a request line, and then wait.
    let mut idle = Vec::with_capacity(HALF_OPEN);
    for i in 0..HALF_OPEN {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        if i % 2 == 1 {
            stream.write_all(b"GET /api/memory/sta").await.expect("write");
        }
        idle.push(stream);
    }
    // A real request is still answered while all of them are open on this side: it waits in
    // the listen queue until the timeout has freed enough connections.
    let answer = tokio::time::timeout(PATIENCE, status_over_tcp(addr, token.trim()))
        .await
        .expect("the request is answered despite 300 half-open connections");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The server closed every one of them: each reaches its end (an orderly close or a reset).
    for (i, stream) in idle.iter_mut().enumerate() {
        let mut rest = Vec::new();
        let ended = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut rest)).await;
        assert!(ended.is_ok(), "half-open connection {i} is still open");
        assert!(!rest.starts_with(b"HTTP/1.1 200"), "connection {i} was answered");
    }
    stop_tx.send(()).expect("stop");
    server.await.expect("joined").expect("served cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_listens_on_loopback_with_the_token_url() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let (url_tx, url_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(scriptorium_server::web::serve_with(
        home.clone(),
        "127.0.0.1:0".parse().expect("addr"),
        scriptorium_server::web::ServeOptions::default(),
        move |listening| {
            let _ = url_tx.send(listening.clone());
        },
        async move {
            let _ = stop_rx.await;
        },
    ));
    let listening = url_rx.await.expect("listening");
    let token = std::fs::read_to_string(home.join("server-token")).expect("token file");
    assert_eq!(
        listening.url,
        format!("http://127.0.0.1:{}/#token={}", listening.addr.port(), token.trim())
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(home.join("server-token")).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // One real request over loopback.
    let mut stream = tokio::net::TcpStream::connect(listening.addr).await.expect("connect");
    let request = format!(
        "GET /api/memory/status HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        listening.addr.port(),
        token.trim()
    );
    tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes()).await.expect("write");
    let mut response = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut response).await.expect("read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"workspace\""));
    stop_tx.send(()).expect("stop");
    server.await.expect("joined").expect("served cleanly");
}

#[tokio::test]
async fn a_note_is_archived_and_cited_and_a_bad_one_changes_nothing() {
    let server = Server::new();
    let done = server
        .call(Method::POST, "/api/memory/notes", Some(json!({"text": "Dana keeps two hives."})))
        .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    assert_eq!(done.body["ok"], true, "{}", done.body);
    let notes = std::fs::read_to_string(server.memory().join("topics/notes.md")).expect("notes");
    assert!(notes.contains("Dana keeps two hives.[^e-"), "{notes}");
    // Provenance: archived under the surface that added it, as the owner's record.
    assert!(notes.contains("](../sources/web/_v2/"), "{notes}");
    let pinned = server
        .call(Method::POST, "/api/memory/notes", Some(json!({"text": "Use metric.", "core": true})))
        .await;
    assert_eq!(pinned.status, StatusCode::OK, "{}", pinned.body);
    let again = server
        .call(Method::POST, "/api/memory/notes", Some(json!({"text": "Dana keeps two hives."})))
        .await;
    assert_eq!((again.status, again.body["noop"].clone()), (StatusCode::OK, json!(true)));
    for (topic, text) in [
        ("projects/alpha/bees", "Alpha's hives face south."),
        ("projects/beta/bees", "Beta's hives face north."),
    ] {
        let body = json!({"text": text, "topic": topic});
        assert_eq!(
            server.call(Method::POST, "/api/memory/notes", Some(body)).await.status,
            StatusCode::OK
        );
    }
    let scoped = server.get("/api/memory/search?q=hives&project=alpha&topics_only=true").await;
    let paths = scoped.body["hits"].to_string();
    assert!(paths.contains("projects/alpha/bees.md") && paths.contains("notes.md"), "{paths}");
    assert!(!paths.contains("projects/beta"), "{paths}");
    let after = server.revision().await;
    for bad in [
        json!({"text": "x", "time": "2024-13"}),
        json!({"text": ""}),
        json!({"text": "x", "core": true, "topic": "people/dana"}),
        json!({"text": "x", "colour": "red"}),
        json!({"core": true}),
    ] {
        let refused = server.call(Method::POST, "/api/memory/notes", Some(bad.clone())).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{bad}: {}", refused.body);
        assert_eq!(refused.body["error"]["code"], "INVALID_ARGUMENT", "{bad}: {}", refused.body);
    }
    assert_eq!(server.revision().await, after, "a refused note changes nothing");
}

/// Appends session `s` to the home's session store: `u0 → a1 → u2` (the head) and a second
/// branch `a1 → u3` (an edited prompt), each user turn spoken by Dana.
fn forked_session(home: &Path) {
    use scriptorium_session_dag::{
        EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Speaker, Timestamp,
    };
    let store = EmbeddedStore::open(home.join("sessions")).expect("store");
    let session = SessionId("s".into());
    let turns = [
        ("u0", None, Role::User, "I keep bees in the garden."),
        ("a1", Some("u0"), Role::Assistant, "Noted: bees in the garden."),
        ("u2", Some("a1"), Role::User, "The hives face south."),
        ("u3", Some("a1"), Role::User, "The hives face north."),
    ];
    for (i, (id, parent, role, text)) in turns.into_iter().enumerate() {
        let node = Node {
            id: NodeId(id.into()),
            parent: parent.map(|p| NodeId(p.into())),
            role,
            kind: NodeKind::Message,
            speaker: (role == Role::User)
                .then(|| Speaker { id: "owner/local".into(), display: "Dana".into() }),
            content: text.to_owned(),
            created_at: Timestamp(1_710_493_200_000 + 60_000 * i as i64),
            metadata: std::collections::BTreeMap::new(),
            rewound: false,
        };
        store.append(&session, node).expect("append");
    }
    store.set_head(&session, &NodeId("u2".into())).expect("head");
}

/// The Sessions page shows what the writer's model used (the ledger's today and month) and
/// whether the daily budget is reached.
#[tokio::test]
async fn the_sessions_list_carries_the_writers_usage_and_budget() {
    use scriptorium_writer::usage::{Ledger, LedgerEntry, TokenUsage};
    let server = Server::new();
    let listed = server.get("/api/memory/sessions").await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert_eq!(listed.body["usage"]["today"]["total_tokens"], 0, "{}", listed.body);
    assert_eq!(listed.body["usage"]["max_tokens_per_day"], Value::Null);
    let now = scriptorium_backend::memory::wall_clock()
        .format(&time::format_description::well_known::Rfc3339)
        .expect("now");
    let entry = LedgerEntry {
        at: now,
        model: "command:claude".into(),
        stage: "write".into(),
        usage: TokenUsage::new(1_500, 100, Some(12_000)),
    };
    Ledger::of(&server.home.join("memory")).append(&entry).expect("a run");
    std::fs::write(
        server.home.join("scriptorium.toml"),
        "[memory.writer]\nmax_tokens_per_day = 1000\n",
    )
    .expect("a budget");
    // The configuration is read when the server opens the home.
    let Server { _dir, home, .. } = server;
    let state = AppState::open(&home).expect("the home opens again");
    let state = state.with_addr(HOST.parse().expect("an address"));
    let server = Server { app: app(state.clone()), state, home, _dir };
    let listed = server.get("/api/memory/sessions").await;
    let usage = &listed.body["usage"];
    assert_eq!(usage["today"]["total_tokens"], 1_600, "{usage}");
    assert_eq!(usage["month"]["cost_usd"], 0.012, "{usage}");
    assert_eq!(usage["max_tokens_per_day"], 1_000, "{usage}");
    assert_eq!(usage["budget_reached"], true, "{usage}");
}

#[tokio::test]
async fn sessions_are_listed_read_as_a_thread_with_the_fork_marked_and_written_now() {
    let server = Server::new();
    forked_session(&server.home);
    let listed = server.get("/api/memory/sessions").await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let row = &listed.body["sessions"][0];
    assert_eq!((row["id"].as_str(), row["branches"].as_u64()), (Some("s"), Some(2)), "{row}");
    // Four records, the shared two counted once.
    assert_eq!(row["pending"], 4, "{row}");
    assert_eq!(row["head"], "u2", "{row}");
    assert!(listed.body.get("writer").is_some(), "{}", listed.body);
    // `status` counts what the list counts.
    let status = server.get("/api/memory/status").await;
    assert_eq!(status.body["pending_turns"], 4, "{}", status.body);

    let thread = server.get("/api/memory/sessions/s").await;
    assert_eq!(thread.status, StatusCode::OK, "{}", thread.body);
    let branches = thread.body["thread"]["branches"].as_array().expect("branches").clone();
    assert_eq!(branches.len(), 2, "{}", thread.body);
    let ids = |b: &Value| -> Vec<String> {
        b["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        (branches[0]["head"].clone(), ids(&branches[0])),
        (json!(true), vec!["u0".to_owned(), "a1".into(), "u2".into()])
    );
    assert_eq!(
        (branches[1]["fork"].clone(), ids(&branches[1])),
        (json!("a1"), vec!["u3".to_owned()])
    );
    let fork = &branches[0]["turns"][1];
    assert_eq!(fork["children"], 2, "the fork is marked: {fork}");
    assert_eq!(branches[0]["turns"][0]["speaker"], "Dana");
    assert!(branches[0]["turns"][0]["link"].is_null(), "nothing archived yet");

    // Write now: the journal writer (no model) writes the head branch's turns.
    let before = server.revision().await;
    let written = server.call(Method::POST, "/api/memory/sessions/s/write", None).await;
    assert_eq!(written.status, StatusCode::OK, "{}", written.body);
    assert_eq!(written.body["ok"], true);
    let batches = written.body["batches"].as_array().expect("batches");
    assert!(!batches.is_empty(), "{}", written.body);
    assert_ne!(server.revision().await, before, "memory changed");
    let thread = server.get("/api/memory/sessions/s").await;
    let head = &thread.body["thread"]["branches"][0];
    let first = &head["turns"][0];
    assert_eq!(first["written"], true, "{first}");
    let link = first["link"].as_str().expect("the written turn links to its record");
    let (path, anchor) = link.split_once('#').expect("path#anchor");
    let archive = path.strip_prefix("sources/").expect("an archive under sources/");
    let record = server.get(&format!("/api/memory/sources/{archive}?anchor={anchor}")).await;
    assert_eq!(record.status, StatusCode::OK, "{}", record.body);
    assert!(record.body.to_string().contains("I keep bees in the garden."), "{}", record.body);
    let status = server.get("/api/memory/status").await;
    assert_eq!(status.body["writer"]["last_outcome"], "success", "{}", status.body);
    // The session's own last write, in its row and its thread.
    let listed = server.get("/api/memory/sessions").await;
    let last = &listed.body["sessions"][0]["last_write"];
    assert_eq!(last["outcome"], "success", "{}", listed.body);
    assert!(last["turns"].as_u64().is_some_and(|t| t >= 3), "{last}");
    assert_eq!(thread.body["thread"]["session"]["last_write"]["outcome"], "success");

    // Again: nothing owed on the head branch, nothing written, said so.
    let again_before = server.revision().await;
    let again = server.call(Method::POST, "/api/memory/sessions/s/write", None).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(server.revision().await, again_before, "a write of nothing changes nothing");

    for (method, uri) in [
        (Method::GET, "/api/memory/sessions/nope"),
        (Method::POST, "/api/memory/sessions/nope/write"),
    ] {
        let missing = server.call(method, uri, None).await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(missing.body["error"]["code"], "SESSION_NOT_FOUND", "{uri}");
    }
    for bad in ["limit=0", "limit=x", "offset=-1"] {
        let refused = server.get(&format!("/api/memory/sessions?{bad}")).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(refused.body["error"]["code"], "INVALID_ARGUMENT", "{bad}");
    }
}

/// A plain test (no runtime around it): the configured HTTP model client is blocking, and is
/// built and dropped outside any async context, as `serve` does.
#[test]
fn a_failing_write_now_says_why_changes_nothing_and_is_recorded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    std::fs::create_dir(&home).expect("mkdir");
    // A model nobody answers: the connection is refused.
    std::fs::write(
        home.join("scriptorium.toml"),
        "[model]\nkind = \"openai\"\nname = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         api_key_env = \"none\"\nretries = 0\n",
    )
    .expect("config");
    let state =
        AppState::open(&home).expect("the home opens").with_addr(HOST.parse().expect("addr"));
    let server = Server { app: app(state.clone()), state, home, _dir: dir };
    forked_session(&server.home);
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let before = server.get("/api/memory/topics").await.body;
        let failed = server.call(Method::POST, "/api/memory/sessions/s/write", None).await;
        assert!(failed.status.is_server_error(), "{} {}", failed.status, failed.body);
        assert_eq!(failed.body["ok"], false);
        assert_eq!(failed.body["error"]["code"], "WRITE_FAILED", "{}", failed.body);
        let reason = failed.body["error"]["details"]["reason_code"].clone();
        assert!(reason.is_string(), "{}", failed.body);
        // No topic changed (the turns may be archived already: the writer archives a batch
        // before it asks the model, append-only, and a later write cites them).
        assert_eq!(server.get("/api/memory/topics").await.body, before, "no topic installed");
        let status = server.get("/api/memory/status").await;
        let writer = &status.body["writer"];
        assert_eq!(writer["last_outcome"], "failure", "{writer}");
        assert_eq!(writer["last_failure"]["reason_code"], reason, "{writer}");
        let listed = server.get("/api/memory/sessions").await;
        assert_eq!(listed.body["sessions"][0]["pending"], 4, "still owed: {}", listed.body);
        let last = &listed.body["sessions"][0]["last_write"];
        assert_eq!((last["outcome"].as_str(), &last["reason_code"]), (Some("failure"), &reason));
    });
    drop(runtime);
}

/// The home's topics, joined (what the page can show of them).
fn all_topics(memory: &Path) -> String {
    fn walk(dir: &Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut out = String::new();
    walk(&memory.join("topics"), &mut out);
    out
}

#[tokio::test]
async fn a_written_session_is_planned_then_forgotten_everywhere_over_rest() {
    let server = Server::new();
    forked_session(&server.home);
    let written = server.call(Method::POST, "/api/memory/sessions/s/write", None).await;
    assert_eq!(written.status, StatusCode::OK, "{}", written.body);
    assert!(all_topics(&server.memory()).contains("I keep bees in the garden."));
    let base = server.revision().await;

    // The plan: what would go, and nothing changes.
    let plan = server.call(Method::POST, "/api/memory/forget", Some(json!({"session": "s"}))).await;
    assert_eq!(plan.status, StatusCode::OK, "{}", plan.body);
    assert_eq!(
        (plan.body["ok"].clone(), plan.body["forgotten"].clone()),
        (json!(true), json!(false))
    );
    let shown = &plan.body["plan"];
    assert_eq!(shown["sessions"], json!(["s"]), "{shown}");
    assert_eq!(shown["messages"], 4, "every node of the session: {shown}");
    assert!(shown["records"].as_u64().is_some_and(|n| n >= 3), "{shown}");
    assert!(shown["blocks"].as_array().is_some_and(|b| !b.is_empty()), "{shown}");
    assert!(shown["files"].to_string().contains("topics/"), "{shown}");
    assert!(shown["commits"].as_u64().is_some_and(|n| n >= 1), "{shown}");
    assert_eq!(server.revision().await, base, "a plan changes nothing");
    assert!(all_topics(&server.memory()).contains("I keep bees in the garden."));
    let thread = server.get("/api/memory/sessions/s").await;
    assert_eq!(thread.body["thread"]["session"]["forgotten"], false, "{}", thread.body);
    let first = &thread.body["thread"]["branches"][0]["turns"][0];
    assert_eq!(first["forgotten"], false, "{first}");
    let link = first["link"].as_str().expect("a written turn links its record").to_owned();

    // Confirmed: gone from the topics, the search, the archive and the session's thread.
    let done = server
        .call(Method::POST, "/api/memory/forget", Some(json!({"session": ["s"], "confirm": true})))
        .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    assert_eq!(done.body["forgotten"], true, "{}", done.body);
    assert_eq!(done.body["remote"], "none", "{}", done.body);
    assert!(done.body["commits_rewritten"].as_u64().is_some_and(|n| n >= 1), "{}", done.body);
    assert_ne!(done.body["revision"], base.as_str());
    assert_eq!(server.revision().await, done.body["revision"].as_str().expect("a revision"));
    for text in ["I keep bees in the garden.", "The hives face south."] {
        assert!(!all_topics(&server.memory()).contains(text), "{text} is still in a topic");
    }
    let found = server.get("/api/memory/search?q=bees%20garden%20hives").await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    assert!(!found.body.to_string().contains("bees in the garden"), "{}", found.body);
    let thread = server.get("/api/memory/sessions/s").await;
    assert_eq!(thread.status, StatusCode::OK, "the session keeps its shape: {}", thread.body);
    assert_eq!(thread.body["thread"]["session"]["forgotten"], true, "{}", thread.body);
    let turns: Vec<Value> = thread.body["thread"]["branches"]
        .as_array()
        .expect("branches")
        .iter()
        .flat_map(|b| b["turns"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(turns.len(), 4, "{}", thread.body);
    for turn in &turns {
        assert_eq!((turn["forgotten"].clone(), turn["text"].clone()), (json!(true), json!("")));
    }
    let listed = server.get("/api/memory/sessions").await;
    assert_eq!(listed.body["sessions"][0]["forgotten"], true, "{}", listed.body);
    // Its record reads as the tombstone it now is.
    let (path, anchor) = link.split_once('#').expect("path#anchor");
    let record = server
        .get(&format!(
            "/api/memory/sources/{}?anchor={anchor}",
            path.trim_start_matches("sources/")
        ))
        .await;
    assert_eq!(record.status, StatusCode::OK, "{}", record.body);
    assert_eq!(record.body["forgotten"], true, "{}", record.body);
    assert!(!record.body.to_string().contains("bees"), "{}", record.body);
}

#[tokio::test]
async fn bad_forget_requests_are_refused_in_the_one_error_shape_and_forget_nothing() {
    let server = Server::new();
    server.seed().await;
    let block = server.block_id();
    let base = server.revision().await;
    let post = |body: &str| {
        server
            .request(Method::POST, "/api/memory/forget")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_owned()))
            .expect("request")
    };
    for (body, status, code) in [
        ("{}", StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        (r#"{"confirm": true}"#, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        (r#"{"session": [], "confirm": true}"#, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        (r#"{"session": 3}"#, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        (r#"{"matching": "abc", "confirm": true}"#, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        (r#"{"block": "x", "confirm": "yes"}"#, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        (r#"{"block": "x", "everywhere": true}"#, StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        ("not json", StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        (r#"{"session": "nope", "confirm": true}"#, StatusCode::NOT_FOUND, "NOT_FOUND"),
        (r#"{"block": "zzzzzzzz", "confirm": true}"#, StatusCode::NOT_FOUND, "NOT_FOUND"),
    ] {
        let answer = server.send(post(body)).await;
        assert_eq!(answer.status, status, "{body}: {}", answer.body);
        assert_eq!(assert_error_shape(body, &answer), code, "{body}: {}", answer.body);
    }
    // The state-change guards: a foreign Host, no token, a foreign Origin.
    let confirmed = json!({"block": block, "confirm": true}).to_string();
    let mut foreign_host = post(&confirmed);
    foreign_host.headers_mut().insert(header::HOST, "evil.example:7878".parse().expect("value"));
    assert_eq!(error_code(&server.send(foreign_host).await), "FORBIDDEN_HOST");
    let mut no_token = post(&confirmed);
    no_token.headers_mut().remove(header::AUTHORIZATION);
    assert_eq!(error_code(&server.send(no_token).await), "UNAUTHORIZED");
    let mut foreign_origin = post(&confirmed);
    foreign_origin
        .headers_mut()
        .insert(header::ORIGIN, "http://evil.example".parse().expect("value"));
    assert_eq!(error_code(&server.send(foreign_origin).await), "FORBIDDEN_ORIGIN");
    assert_eq!(server.revision().await, base, "nothing refused was forgotten");
    assert!(all_topics(&server.memory()).contains("Craig is building a budget tracker"));

    // A block, planned then forgotten: the topic re-renders without it.
    let plan = server.call(Method::POST, "/api/memory/forget", Some(json!({"block": block}))).await;
    assert_eq!(plan.body["plan"]["blocks"], json!([block]), "{}", plan.body);
    let done = server.send(post(&confirmed)).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    let topic = server.get("/api/memory/topics/projects/budget.md").await;
    assert!(!topic.body.to_string().contains("Craig is building"), "{}", topic.body);
}
