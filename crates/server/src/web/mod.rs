//! The owner's web surface: the REST routes under `/api/memory/` (listed below), and the page
//! (`/`, `/assets/app.js`, `/assets/app.css`, embedded in the binary).
//!
//! Key decision: every write goes through the same transaction as every other change, with
//! compare-and-set on the revision the page read (`base_revision`): a topic or core edit is
//! `begin` (at that revision) → `write_file` → `validate` → `install`, so a stale page gets 409
//! `CONCURRENT_UPDATE` instead of overwriting newer memory, and a rejected edit gets every
//! violation back. Reads that the page later writes against (`GET` a topic, `GET` the core)
//! return the content together with the revision it belongs to.
//!
//! # Routes
//!
//! | route | answer |
//! |---|---|
//! | `GET /api/memory/status` | the workspace status (as `scriptorium status --json`) + `workspace_path` + `writer: {…, pending_turns}`; with `?settings=true` only `{workspace_path, embedding_available}` |
//! | `GET /api/memory/refs?q&limit` | `[{workspace_id, memory_id, topic_path, content, when}]` (blocks whose content or ID contains `q`; `limit` 1–500, default 100) |
//! | `POST /api/memory/changes` | the change API (`{base_revision, memory_changes \| changes \| patch, sources?, commit_message?}`) → `{ok: true, revision, source_ids, block_ids, evidence_ids, changed_files, memory_committed, git_committed, git_commit}` |
//! | `GET /api/memory/topics` | `[{path, title, type, size, mtime}]`, `path` relative to `topics/`, without `core.md` |
//! | `GET /api/memory/topics/{path}` | `{path, workspace_path, content, revision, html}` |
//! | `PUT /api/memory/topics/{path}` | `{content, base_revision, delete_blocks?}` → `{ok: true, revision, changed_files, git_committed}`; a text that leaves paragraphs out is refused, 400 `BLOCK_ID_REMOVED` naming each (`details.paragraphs: [{block_ids, excerpt}]`, `details.delete_blocks`), until the same text comes with those IDs in `delete_blocks`: then they are deleted in the same transaction; violations are at lines of the `content` sent |
//! | `DELETE /api/memory/topics/{path}?base_revision=…` | same answer |
//! | `GET /api/memory/timeline` | `[{date, size, mtime}]`, newest first |
//! | `GET /api/memory/timeline/{date}` | `{date, content, html}` (`content` is `""` when there is no file) |
//! | `GET /api/memory/recent` | recent rows newest first; header `X-Memory-Recent-Limit` |
//! | `GET /api/memory/core` | `{content, size, mtime, rendered_content, rendered_tokens, rendered_size, rendered_mtime, injection_enabled, injected_content, injected_tokens, budget_tokens, revision}` + `html` (of `content`), `rendered_html` (of `rendered_content`) |
//! | `PUT /api/memory/core` | `{content, base_revision}` → like `PUT` a topic, on `topics/core.md` |
//! | `GET /api/memory/search?q&top_k&prefix` | `{hits: [{path, anchor, kind, score, content}], outside_edits?}` (`outside_edits`: edits made outside a transaction that this search took in or found invalid, `{adopted, files, revision, git_commit}` or `{adopted: false, files, violations, reason}`) |
//! | `GET /api/memory/sources/{path}?anchor&offset&limit` | an archive under `sources/` (paged: `{path, text, truncated, offset, total_lines, next_offset?}`, and its records as `turns: [{anchor, text}]` with `more_turns` past 500), or with `anchor=source-…` one record of it: the same with `record: {source_id, anchor, position, records, previous?, next?: {anchor, snippet}, cited_by: [{path, block_id, snippet}]}` and `forgotten` (the record is a forget's tombstone); 404 `MEMORY_NOT_FOUND` for an anchor it does not hold |
//! | `GET /api/memory/history?limit` | `{commits: [{commit, time, summary, txn_id, files}]}`, the workspace's transactions newest first, each one's `files` the topics first, then `sources/`, then the derived views |
//! | `GET /api/memory/history/{path}?limit` | `{path, changes: [{commit, time, summary, txn_id, change, diff, text}]}`, the commits that changed a topic |
//! | `GET /api/memory/sessions?limit&offset` | `{sessions: [{id, title, project, updated_at, updated_at_ms, head, nodes, branches, pending, last_write, forgotten}], writer}`: the imported sessions newest first (50 by default, at most 500), `forgotten` when a forget took the whole session (its turns stay, without their text), `pending` the records of every branch not yet written into this memory, each counted once, `last_write` how the session's last write ended (`{at, outcome[, turns][, reason_code, retryable]}`, when kept); `writer` the last write outcome, `usage` what the writer's model used (`{today, month, runs_today, max_tokens_per_day, budget_reached}`, tokens and `cost_usd`, UTC days) |
//! | `GET /api/memory/sessions/{id}` | `{thread: {session, branches: [{tip, head, fork, pending, hidden, turns: [{id, role, kind, speaker, created_at, text, cut, record, written, link, children, forgotten}]}]}}`: the head branch whole, each other branch from the turn it leaves it (`fork`); `link` the archived record of a written turn; 404 `SESSION_NOT_FOUND` |
//! | `POST /api/memory/sessions/{id}/write` | writes the session now with the configured model: `{ok: true, session, batches: [{turns, changed_files, revision, recovered}], pending}` (no batches: nothing was owed); 502 `WRITE_FAILED` (503 when a retry can succeed) with `details.reason_code`; 409 `WRITER_PRECONDITION_FAILED` when the writer is off; the outcome is recorded in the writer status |
//! | `POST /api/memory/forget` | `{session \| record \| block: ID or [ID…], matching?: text, confirm?: bool}` (at least one selector) → without `confirm: true` only the plan, `{ok: true, forgotten: false, plan: {id, sessions, messages, titles, records, blocks, uncited, files, commits}}` (nothing written; never the `matching` text); with it the forget itself, `{ok: true, forgotten: true, plan, commits_rewritten, revision, commit, remote}` (`remote`: `none`, `replaced` or `pending`); the same request and answer as the MCP tool `memory_forget`; 400 `INVALID_ARGUMENT`, 404 `NOT_FOUND` for a session, record or block that does not exist |
//! | `GET /api/memory/commits/{rev}?path` | `{commit: {commit, time, summary, txn_id, files: [{path, change, diff}]}}` (files in the order of `history`): `rev` is an id, a unique prefix (4+ hex digits), `HEAD` or a `Txn-Id`; `path` keeps the files at or below it; 404 `NOT_FOUND` for an unknown revision |
//!
//! The `{path}` of the topic routes is relative to `topics/` (`people/dave.md`), as in the
//! topic list; `mtime` values are seconds since the epoch (float). Status codes: 400 a bad
//! request, a rejected edit (with `violations`) or a topic path too long for the filesystem
//! (a name over 255 bytes, a path near 4096), 401 no or wrong token, 403 a path that
//! escapes `topics/` (`..`, absolute, encoded, backslashes, symlinks), a bad `Host` or `Origin`,
//! or an invalid timeline date, 404 a missing topic or memory record, 409 a stale
//! `base_revision`, 413 a body over [`BODY_LIMIT`], 500 IO or corrupt state, 503 memory
//! disabled or the write lock busy. Every error answer is `{"ok": false, "error": {code,
//! message, path, violations}}`; see [`security`] for the request checks and [`error`] for the
//! shape.
//!
//! # Limitations
//!
//! - Files are checked for symlinks component by component before they are read; a symlink
//!   swapped in between the check and the read is not caught (the workspace is the owner's own
//!   directory, mode 0700).
//! - `refs` is a substring match, not a ranked search (`search` is the ranked one).
//! - [`serve_with`] times out a connection that is slow to send a request's headers, not one
//!   that trickles a request body or reads its answer slowly: such a client keeps one of the
//!   [`ServeOptions::max_connections`] slots for as long as it goes on. With every slot taken,
//!   new clients wait in the listen queue until a connection closes.

mod api;
pub mod error;
pub mod markdown;
pub mod security;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use scriptorium_backend::wire::Code;
use scriptorium_backend::{Config, LocalBackend, OpenError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use api::{CHANGES_ORIGIN, NOTE_ORIGIN};
pub use error::ApiError;

/// The largest request body accepted (413 above it).
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;
/// The address `scriptorium serve` listens on by default.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7878";
/// How long a connection may take to send a request's headers (see [`ServeOptions`]).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How many connections are served at once (see [`ServeOptions`]).
pub const MAX_CONNECTIONS: usize = 256;

/// The page, embedded in the binary.
const INDEX_HTML: &str = include_str!("../../assets/index.html");
/// The page's script.
const APP_JS: &str = include_str!("../../assets/app.js");
/// The page's style sheet.
const APP_CSS: &str = include_str!("../../assets/app.css");

/// Why the server state cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] scriptorium_backend::config::ConfigError),
    /// The backend (workspace, session store) cannot be opened.
    #[error(transparent)]
    Backend(#[from] OpenError),
    /// The token file cannot be read or written.
    #[error("the server token ({}): {source}", path.display())]
    Token {
        /// The token file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What the handlers share: the backend (none when memory is disabled), the token and the
/// names the server answers to.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
    hosts: Arc<[String]>,
}

pub(crate) struct Inner {
    home: PathBuf,
    backend: Option<LocalBackend>,
    config: Config,
    token: String,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("home", &self.inner.home)
            .field("enabled", &self.inner.backend.is_some())
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Opens the home: its configuration, then the [`LocalBackend`] (creating the workspace
    /// when missing; a forget a crash interrupted is finished) and the token (`<home>/server-token`, created on first use). With
    /// `memory.backend = "none"` nothing is opened or created: every API route answers 503.
    /// The state answers to `127.0.0.1:7878` until [`AppState::with_addr`] names the bound
    /// address.
    ///
    /// Blocking (files, git, the session store): call it from a blocking context.
    pub fn open(home: &Path) -> Result<AppState, StateError> {
        let config = Config::load(home)?;
        let default_addr: SocketAddr =
            DEFAULT_ADDR.parse().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 7878)));
        let hosts: Arc<[String]> = security::allowed_hosts(default_addr).into();
        if !config.enabled() {
            let token = security::new_token()
                .map_err(|source| StateError::Token { path: PathBuf::new(), source })?;
            let inner = Inner { home: home.to_path_buf(), backend: None, config, token };
            return Ok(AppState { inner: Arc::new(inner), hosts });
        }
        // The server never writes on its own; the model is only reported by the status.
        let model = scriptorium_backend::models::build(&config.model, home).unwrap_or_else(|err| {
            tracing::warn!(%err, "no writer model: the status reports the journal model");
            Arc::new(scriptorium_writer::model::journal::Journal)
        });
        let backend = LocalBackend::open(home, config.clone(), model)?;
        crate::mcp::forget::finish_interrupted(
            backend.memory(),
            &**backend.store(),
            config.sync.remote.as_deref(),
        );
        let token = security::load_or_create_token(home).map_err(|source| StateError::Token {
            path: home.join(security::TOKEN_FILE),
            source,
        })?;
        let inner = Inner { home: home.to_path_buf(), backend: Some(backend), config, token };
        Ok(AppState { inner: Arc::new(inner), hosts })
    }

    /// The state answering to the server bound at `addr` (see [`security::allowed_hosts`]).
    pub fn with_addr(self, addr: SocketAddr) -> AppState {
        AppState { inner: self.inner, hosts: security::allowed_hosts(addr).into() }
    }

    /// The token every API request must carry (`Authorization: Bearer <token>`).
    pub fn token(&self) -> &str {
        &self.inner.token
    }

    /// The backend, unless memory is disabled.
    pub fn backend(&self) -> Option<&LocalBackend> {
        self.inner.backend.as_ref()
    }

    /// Whether memory is disabled (`memory.backend = "none"`).
    pub fn is_disabled(&self) -> bool {
        self.inner.backend.is_none()
    }

    /// The `Host` values accepted.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Runs `work` on the blocking pool with the backend.
    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Inner, &LocalBackend) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || match inner.backend.as_ref() {
            Some(backend) => work(&inner, backend),
            None => Err(ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                Code::MemoryDisabled,
                "memory is disabled by memory.backend=none",
            )),
        })
        .await
        .map_err(|join| ApiError::internal(format!("the request failed: {join}")))?
    }
}

/// The router: the API, the page and its assets, behind [`security::guard`] and the
/// [`BODY_LIMIT`].
pub fn app(state: AppState) -> Router {
    Router::new()
        .merge(api::routes())
        .route("/", get(|| async { page("text/html; charset=utf-8", INDEX_HTML) }))
        .route("/assets/app.js", get(|| async { page("text/javascript; charset=utf-8", APP_JS) }))
        .route("/assets/app.css", get(|| async { page("text/css; charset=utf-8", APP_CSS) }))
        .fallback(api::not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(state.clone(), security::guard))
        .with_state(state)
}

/// An embedded asset.
fn page(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body)
}

/// How [`serve_with`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// Allow a non-loopback address (`--allow-remote`): the server is then reachable from the
    /// network, over plain HTTP, guarded by the token alone.
    pub allow_remote: bool,
    /// How long a client has to send a request's headers, from the moment its connection is
    /// taken up (or its previous response is sent); a connection that has not sent them by
    /// then is closed. Default [`HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// The most connections served at once; more wait in the listen queue until one closes.
    /// Default [`MAX_CONNECTIONS`].
    pub max_connections: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            allow_remote: false,
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// Where a started server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listening {
    /// The bound address (the real port when 0 was asked for).
    pub addr: SocketAddr,
    /// The page's URL with the token in its fragment: `http://127.0.0.1:7878/#token=…`.
    pub url: String,
}

/// Serves the home's memory at `addr` (loopback only) until `shutdown` completes, printing
/// `Scriptorium at <url>` to stdout once listening.
pub async fn serve(
    home: PathBuf,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let ready = |listening: &Listening| println!("Scriptorium at {}", listening.url);
    serve_with(home, addr, ServeOptions::default(), ready, shutdown).await
}

/// [`serve`] with options; `ready` is called once the socket is bound.
pub async fn serve_with(
    home: PathBuf,
    addr: SocketAddr,
    options: ServeOptions,
    ready: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    security::check_bind(addr, options.allow_remote)?;
    let opened = home.clone();
    let state = tokio::task::spawn_blocking(move || AppState::open(&opened))
        .await
        .context("opening the home")??;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let local = listener.local_addr()?;
    let state = state.with_addr(local);
    let host = match local {
        SocketAddr::V4(a) if a.ip().is_loopback() => format!("127.0.0.1:{}", a.port()),
        SocketAddr::V6(a) if a.ip().is_loopback() => format!("[::1]:{}", a.port()),
        other => other.to_string(),
    };
    ready(&Listening { addr: local, url: format!("http://{host}/#token={}", state.token()) });
    tracing::info!(%local, home = %home.display(), "serving the web UI");
    serve_connections(listener, app(state), options, shutdown).await;
    Ok(())
}

/// How long to wait before accepting again after an accept failed for want of resources (file
/// descriptors, memory), so a full process table is not polled in a busy loop.
const ACCEPT_RETRY: Duration = Duration::from_secs(1);

/// Serves `app` on every connection `listener` accepts until `shutdown` completes; then stops
/// accepting, asks each open connection to finish (an idle one closes at once, a request in
/// progress gets its answer) and returns once all are closed.
///
/// Why not `axum::serve`: it takes no configuration, and without a timer hyper never times a
/// connection out, so clients that connect and then send nothing, or half a request line, held
/// a task and a file descriptor each for as long as they liked. Here hyper's HTTP/1 server
/// closes a connection that has not sent a request's headers within
/// [`ServeOptions::header_read_timeout`] (counted from the accept, and again after each
/// response on a kept-alive connection), and at most [`ServeOptions::max_connections`] are
/// served at once: with every slot taken the loop stops accepting, so further clients wait in
/// the kernel's listen queue, holding nothing of this process, until a connection closes.
async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) {
    let max = u32::try_from(options.max_connections.max(1)).unwrap_or(u32::MAX);
    let slots = Arc::new(Semaphore::new(max as usize));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(options.header_read_timeout);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = next_connection(&listener, &slots) => accepted,
        };
        let Some((stream, slot)) = accepted else { continue };
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            // The slot is free again when the connection is closed, however it ends.
            let _slot = slot;
            let mut connection = std::pin::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                _ = stop.changed() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(err) = ended {
                // Timeouts and clients that go away are routine; nothing to report above debug.
                tracing::debug!(%err, "connection ended");
            }
        });
    }
    drop(listener);
    // Sending fails only when no connection is left to tell.
    let _ = stop_tx.send(());
    // Every connection holds a slot until it is closed: all slots free means all closed.
    let _all = slots.acquire_many(max).await;
}

/// Waits for a free slot, then accepts one connection; `None` when the accept failed (the
/// caller tries again). Cancel-safe: dropping it loses no accepted connection.
async fn next_connection(
    listener: &tokio::net::TcpListener,
    slots: &Arc<Semaphore>,
) -> Option<(tokio::net::TcpStream, OwnedSemaphorePermit)> {
    let slot = Arc::clone(slots).acquire_owned().await.expect("the slots are never closed");
    match listener.accept().await {
        Ok((stream, _peer)) => Some((stream, slot)),
        Err(err) => {
            // A connection reset or aborted before it was accepted is the client's affair; any
            // other failure (out of file descriptors) is the process's, and retrying at once
            // would only spin.
            let client_side = matches!(
                err.kind(),
                std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionRefused
            );
            if !client_side {
                tracing::warn!(%err, "accepting a connection failed; retrying");
                drop(slot);
                tokio::time::sleep(ACCEPT_RETRY).await;
            }
            None
        }
    }
}
