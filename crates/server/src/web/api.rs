//! The `/api/memory/*` handlers. Each one parses its request, runs its file and transaction
//! work on the blocking pool ([`AppState::blocking`]) and answers JSON.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use scriptorium_backend::LocalBackend;
use scriptorium_backend::edit::{EditFailure, EditOptions};
use scriptorium_backend::engine::{
    FsSources, LockTimeout, Revision, Surface, TxnError, UpdateContext, UpdateRequest, Workspace,
    read_topics, writable_path,
};
use scriptorium_backend::forget::Forgotten;
use scriptorium_backend::memory::{CORE_BUDGET, RECENT_LIMIT};
use scriptorium_backend::runtime::status::WriterStatus;
use scriptorium_backend::summary::changed_files;
use scriptorium_backend::wire::Code;
use scriptorium_search::MAX_TOP_K;
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::{parse_tree, tokens};
use scriptorium_workspace_fs::read::{ReadError, read_with_meta, resolve_in};
use scriptorium_workspace_fs::{FileKind, Fs as _, Meta, RealFs, walk};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{ApiError, AppState, Inner, markdown};
use crate::mcp::forget::{ForgetArgs, forget as forget_with};

/// The origin recorded on sources that `POST /api/memory/changes` archives.
pub const CHANGES_ORIGIN: &str = "owner-rest/memory-changes";
/// The origin recorded on the notes `POST /api/memory/notes` archives.
pub const NOTE_ORIGIN: &str = "owner-rest/note";
/// Results `search` returns when `top_k` is not given.
const DEFAULT_TOP_K: usize = 8;
/// `refs` rows when `limit` is not given, and the most it may ask for.
const DEFAULT_REFS: usize = 100;
const MAX_REFS: usize = 500;
/// How long a request waits for the workspace write lock.
const LOCK_WAIT: Duration = Duration::from_secs(5);
/// The core master, workspace-relative.
const CORE_PATH: &str = "topics/core.md";

type ApiResult<T = Json<Value>> = Result<T, ApiError>;

/// The API routes.
pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/memory/status", get(status))
        .route("/api/memory/refs", get(refs))
        .route("/api/memory/changes", post(changes))
        .route("/api/memory/notes", post(note))
        .route("/api/memory/topics", get(list_topics))
        .route("/api/memory/topics/{*path}", get(get_topic).put(put_topic).delete(delete_topic))
        .route("/api/memory/timeline", get(list_timeline))
        .route("/api/memory/timeline/{date}", get(get_timeline))
        .route("/api/memory/recent", get(recent))
        .route("/api/memory/core", get(get_core).put(put_core))
        .route("/api/memory/search", get(search))
        .route("/api/memory/sources/{*path}", get(get_source))
        .route("/api/memory/history", get(workspace_history))
        .route("/api/memory/history/{*path}", get(topic_history))
        .route("/api/memory/commits/{rev}", get(commit_diff))
        .route("/api/memory/sessions", get(list_sessions))
        .route("/api/memory/sessions/{id}", get(get_session))
        .route("/api/memory/sessions/{id}/write", post(write_session))
        .route("/api/memory/forget", post(forget))
}

/// Unknown routes: a JSON 404.
pub(super) async fn not_found(uri: Uri) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, Code::NotFound, format!("no such route: {}", uri.path()))
}

/// Parses a JSON request body, answering 413 over the limit and 400 for bad JSON.
fn parse_body<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> ApiResult<T> {
    let bytes = body.map_err(|rejection| {
        let status = rejection.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            Code::SizeLimit
        } else {
            Code::InvalidArgument
        };
        ApiError::new(status, code, rejection.body_text())
    })?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::invalid(format!("invalid request body: {e}")))
}

fn txn(err: TxnError) -> ApiError {
    ApiError::from_txn(&err)
}

/// Seconds since the epoch of a file's mtime.
#[expect(clippy::cast_precision_loss, reason = "an mtime in seconds as a JSON float")]
fn mtime(meta: &Meta) -> f64 {
    meta.mtime_ns as f64 / 1e9
}

/// The full path of a workspace-relative path none of whose existing components is a symlink
/// (see `scriptorium_workspace_fs::read::resolve_in`); `None` when one is.
fn no_symlinks(root: &Path, rel: &str) -> Option<PathBuf> {
    resolve_in(&RealFs, root, rel).ok().map(|resolved| resolved.path)
}

/// Reads a regular file (`Ok(None)` when it does not exist); a symlink on the way is 403.
fn read_regular(root: &Path, rel: &str) -> ApiResult<Option<(String, Meta)>> {
    let (bytes, meta) = match read_with_meta(&RealFs, root, rel) {
        Ok(found) => found,
        Err(ReadError::NotFound { .. }) => return Ok(None),
        Err(ReadError::Symlink { .. } | ReadError::BadPath { .. }) => {
            return Err(ApiError::forbidden(rel, format!("symlinks are not followed: {rel}")));
        }
        Err(ReadError::NotAFile { .. }) => {
            return Err(ApiError::forbidden(rel, format!("not a regular file: {rel}")));
        }
        Err(err) => return Err(ApiError::internal(format!("{rel}: {err}"))),
    };
    let text = String::from_utf8(bytes)
        .map_err(|_| ApiError::internal(format!("{rel}: stream did not contain valid UTF-8")))?;
    Ok(Some((text, meta)))
}

/// Checks a topic path parameter (relative to `topics/`) and returns it workspace-relative
/// (`topics/…`). A name or path too long for the filesystem is 400 `INVALID_ARGUMENT` (see
/// [`too_long`]); backslashes, NULs, `..`, absolute paths, paths that are not `*.md` and
/// symlinks anywhere on the way are 403.
fn topic_path(root: &Path, param: &str) -> ApiResult<String> {
    if let Some(why) = too_long(root, param) {
        let mut err = ApiError::invalid(why);
        err.error.path = Some(param.to_owned());
        return Err(err);
    }
    if param.contains(['\\', '\0']) || param.starts_with('/') {
        return Err(ApiError::forbidden(param, format!("path escapes topics/: {param}")));
    }
    let rel = writable_path(&format!("topics/{param}"))
        .map_err(|e| ApiError::forbidden(param, e.to_string()))?;
    let ws_path = format!("topics/{rel}");
    if no_symlinks(root, &ws_path).is_none() {
        return Err(ApiError::forbidden(param, format!("symlinks are not followed: {param}")));
    }
    Ok(ws_path)
}

/// The longest file name the filesystem takes, in bytes (Linux `NAME_MAX`).
const NAME_MAX: usize = 255;
/// The longest path a system call takes, in bytes with its terminating NUL (Linux `PATH_MAX`).
const PATH_MAX: usize = 4096;
/// How much longer than `topics/` the deepest copy of a topic an edit makes is: its stage,
/// `.scriptorium/txn/<txn-id>/old-topics/` (a 24-byte transaction ID), with room to spare.
const STAGE_ALLOWANCE: usize = 64;

/// Why a topic path parameter is too long for the filesystem, if it is: a component over
/// [`NAME_MAX`] bytes, or a path whose staged copy would reach [`PATH_MAX`]. Checked before any
/// filesystem call, so such a request is the client's error (400 `INVALID_ARGUMENT`, not
/// `PATH_OUTSIDE_WORKSPACE`: the path stays inside `topics/`, it just cannot exist there), never
/// an `ENAMETOOLONG` that would surface as a 500.
fn too_long(root: &Path, param: &str) -> Option<String> {
    if let Some(name) = param.split('/').find(|name| name.len() > NAME_MAX) {
        return Some(format!(
            "a file or directory name is {} bytes; at most {NAME_MAX} are allowed",
            name.len()
        ));
    }
    let full = root.as_os_str().len() + "/topics/".len() + STAGE_ALLOWANCE + param.len();
    (full >= PATH_MAX).then(|| {
        format!(
            "the path is {} bytes; with the memory root ({} bytes) it must stay under {PATH_MAX}",
            param.len(),
            root.as_os_str().len() + "/topics/".len() + STAGE_ALLOWANCE
        )
    })
}

/// The update context of the owner's own page: sources are archived under the provider `web`.
fn owner_context() -> UpdateContext {
    UpdateContext::owner(Surface::Web, CHANGES_ORIGIN)
}

// ---- status, refs, search ----

#[derive(Debug, Deserialize)]
struct StatusQuery {
    #[serde(default)]
    settings: Option<String>,
}

async fn status(State(state): State<AppState>, Query(query): Query<StatusQuery>) -> ApiResult {
    let settings_only = query.settings.as_deref() == Some("true");
    state
        .blocking(move |_, backend| {
            let memory = backend.memory();
            if settings_only {
                // The settings page needs only these (`?settings=true`); no embedding model here.
                let root = memory.workspace().root().display().to_string();
                return Ok(Json(json!({ "workspace_path": root, "embedding_available": false })));
            }
            // The one status computation of every face (`scriptorium status --json` and the MCP
            // tool `memory_status` answer the same JSON).
            let status = backend.memory_status().map_err(|e| ApiError::internal(e.to_string()))?;
            let value =
                serde_json::to_value(status).map_err(|e| ApiError::internal(e.to_string()))?;
            Ok(Json(value))
        })
        .await
}

#[derive(Debug, Deserialize)]
struct RefsQuery {
    #[serde(default)]
    q: String,
    limit: Option<String>,
}

/// A `limit` query parameter: `default` when absent or empty, else a number from 1 to `max`
/// (anything else is 400 `INVALID_ARGUMENT`).
fn limit_param(text: Option<&str>, default: usize, max: usize) -> ApiResult<usize> {
    match text {
        None | Some("") => Ok(default),
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| ApiError::invalid(format!("limit must be 1 to {max}"))),
    }
}

async fn refs(State(state): State<AppState>, Query(query): Query<RefsQuery>) -> ApiResult {
    let limit = limit_param(query.limit.as_deref(), DEFAULT_REFS, MAX_REFS)?;
    state
        .blocking(move |_, backend| {
            let ws = backend.memory().workspace();
            let root = ws.root();
            let files = read_topics(root).map_err(|e| ApiError::internal(e.to_string()))?;
            let parsed = parse_tree(&files, &ArchiveResolver::new(FsSources::new(root)));
            let needle = query.q.trim().to_lowercase();
            let rows: Vec<Value> = parsed
                .units
                .iter()
                .filter(|u| {
                    needle.is_empty()
                        || u.memory_id.to_lowercase().contains(&needle)
                        || u.content.to_lowercase().contains(&needle)
                })
                .take(limit)
                .map(|u| {
                    json!({
                        "workspace_id": ws.workspace_id().as_str(),
                        "memory_id": u.memory_id,
                        "topic_path": format!("topics/{}", u.topic_path),
                        "content": u.content,
                        "when": u.when,
                    })
                })
                .collect();
            Ok(Json(Value::Array(rows)))
        })
        .await
}

#[derive(Debug, Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
    top_k: Option<usize>,
    prefix: Option<String>,
    /// `YYYY[-MM[-DD]]`: only results dated on or after.
    from: Option<String>,
    /// `YYYY[-MM[-DD]]`: only results dated on or before.
    to: Option<String>,
    /// `true`: topic blocks only.
    #[serde(default)]
    topics_only: bool,
    /// A project's directory or name (see `docs/format.md#projects`).
    project: Option<String>,
}

async fn search(State(state): State<AppState>, Query(query): Query<SearchQuery>) -> ApiResult {
    if query.q.trim().is_empty() {
        return Err(ApiError::invalid("q is required"));
    }
    state
        .blocking(move |_, backend| {
            let mut q = scriptorium_search::Query::new(query.q);
            q.top_k = query.top_k.unwrap_or(DEFAULT_TOP_K).clamp(1, MAX_TOP_K);
            q.path_prefix = query.prefix.filter(|p| !p.trim().is_empty());
            q.date_from = query.from.filter(|d| !d.trim().is_empty());
            q.date_to = query.to.filter(|d| !d.trim().is_empty());
            q.include_sources = !query.topics_only;
            if let Some(project) = query.project.filter(|p| !p.trim().is_empty()) {
                let scope = backend.project_scope(&project, q.include_sources).map_err(|e| {
                    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, Code::Io, e.to_string())
                })?;
                q.project = Some(scope);
            }
            let (hits, adoption) = backend.memory().search_reporting(&q).map_err(|e| {
                ApiError::new(StatusCode::BAD_REQUEST, e.wire_code(), e.to_string())
            })?;
            let labels = backend.session_labels(&hits);
            let rows: Vec<Value> = hits
                .iter()
                .map(|h| scriptorium_backend::hits::to_json(h, labels.get(&h.path)))
                .collect();
            let mut doc = json!({ "hits": rows });
            if let Some(outside) = adoption.as_ref().and_then(|a| a.report()) {
                doc["outside_edits"] = outside;
            }
            Ok(Json(doc))
        })
        .await
}

// ---- changes ----

async fn changes(State(state): State<AppState>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let body: Value = parse_body(body)?;
    if !body.is_object() {
        return Err(ApiError::invalid("request body must be a JSON object"));
    }
    state
        .blocking(move |_, backend| {
            let request = UpdateRequest::from_json(&body.to_string()).map_err(txn)?;
            let memory = backend.memory();
            let outcome = memory.update(request, owner_context()).map_err(txn)?;
            Ok(Json(serde_json::to_value(outcome.result()).unwrap_or(Value::Null)))
        })
        .await
}

/// The body of `POST /api/memory/notes`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteBody {
    text: String,
    #[serde(default)]
    core: bool,
    #[serde(default)]
    topic: Option<String>,
    #[serde(default)]
    time: Option<String>,
}

/// The owner adds one fact (see `scriptorium_backend::edit::Note`).
async fn note(State(state): State<AppState>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let body: NoteBody = serde_json::from_value(parse_body(body)?)
        .map_err(|e| ApiError::invalid(format!("invalid note: {e}")))?;
    if body.core && body.topic.as_deref().is_some_and(|t| !t.trim().is_empty()) {
        return Err(ApiError::invalid("core and topic exclude each other"));
    }
    state
        .blocking(move |_, backend| {
            let note = scriptorium_backend::edit::Note {
                text: body.text,
                core: body.core,
                topic: body.topic.filter(|t| !t.trim().is_empty()),
                time: body.time.filter(|t| !t.trim().is_empty()),
            };
            let memory = backend.memory();
            let context = UpdateContext::owner(Surface::Web, NOTE_ORIGIN);
            let outcome = memory
                .note(&note, context, scriptorium_backend::memory::wall_clock())
                .map_err(txn)?;
            serde_json::to_value(outcome.result())
                .map(Json)
                .map_err(|e| ApiError::internal(e.to_string()))
        })
        .await
}

// ---- topics ----

async fn list_topics(State(state): State<AppState>) -> ApiResult {
    state
        .blocking(|_, backend| {
            let topics = backend.memory().workspace().root().join("topics");
            let rows: Vec<Value> = md_files(&topics)
                .into_iter()
                .filter(|(rel, _, _)| rel != "core.md")
                .map(|(rel, path, meta)| {
                    let text = RealFs
                        .read(&path)
                        .ok()
                        .and_then(|b| String::from_utf8(b).ok())
                        .unwrap_or_default();
                    let title = text
                        .lines()
                        .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_owned()))
                        .unwrap_or_else(|| {
                            Path::new(&rel)
                                .file_stem()
                                .map(|s| s.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        });
                    let kind = rel.split_once('/').map(|(dir, _)| dir).unwrap_or_default();
                    json!({
                        "path": rel,
                        "title": title,
                        "type": kind,
                        "size": meta.len,
                        "mtime": mtime(&meta),
                    })
                })
                .collect();
            Ok(Json(Value::Array(rows)))
        })
        .await
}

/// Every regular `*.md` file under `dir` (symlinks skipped, never followed), relative to
/// `dir`, sorted, with its path and `lstat`.
fn md_files(dir: &Path) -> Vec<(String, PathBuf, Meta)> {
    let Ok(entries) = walk(&RealFs, dir) else { return Vec::new() };
    entries
        .into_iter()
        .filter(|e| e.kind == FileKind::File && e.utf8 && e.rel.ends_with(".md"))
        .filter_map(|e| {
            let path = dir.join(&e.raw);
            let meta = RealFs.metadata(&path).ok()?;
            Some((e.rel, path, meta))
        })
        .collect()
}

/// Reads `rel` and the revision it belongs to. The revision (which walks the trees) is taken
/// before the read, so the text is at least as new as it; when an install came in between (the
/// revision record names another transaction) the read is retried. An outside edit in between needs
/// no retry: an edit sent with the older revision is refused by the compare-and-set, never
/// applied over text the page did not show.
fn read_with_revision(backend: &LocalBackend, rel: &str) -> ApiResult<(Option<String>, Revision)> {
    let ws = backend.memory().workspace();
    for _ in 0..5 {
        let installed = ws.installed_txn_id().map_err(txn)?;
        let revision = ws.revision().map_err(txn)?;
        let text = read_regular(ws.root(), rel)?.map(|(text, _)| text);
        if ws.installed_txn_id().map_err(txn)? == installed {
            return Ok((text, revision));
        }
    }
    Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, Code::Busy, "memory keeps changing; retry"))
}

async fn get_topic(State(state): State<AppState>, UrlPath(param): UrlPath<String>) -> ApiResult {
    state
        .blocking(move |_, backend| {
            let ws_path = topic_path(backend.memory().workspace().root(), &param)?;
            let (text, revision) = read_with_revision(backend, &ws_path)?;
            let content = text.ok_or_else(|| ApiError::not_found(&param))?;
            // Derived, like a record's citing blocks: a read never fails for it.
            let backlinks = backend.memory().backlinks(&content).unwrap_or_else(|error| {
                tracing::warn!(%error, "the blocks linking to a topic could not be listed");
                Vec::new()
            });
            Ok(Json(json!({
                "path": ws_path.trim_start_matches("topics/"),
                "workspace_path": ws_path,
                "html": markdown::render(&content),
                "content": content,
                "revision": revision.as_str(),
                "backlinks": backlinks,
            })))
        })
        .await
}

#[derive(Debug, Deserialize)]
struct HistoryQuery {
    limit: Option<String>,
}

/// The workspace's transactions, newest first (`?limit=`, 20 by default): `{"commits":
/// [{"commit", "time", "summary", "txn_id", "files"}…]}`, `files` being what each changed,
/// topics first and derived files last ([`file_rank`]).
async fn workspace_history(
    State(state): State<AppState>,
    Query(query): Query<HistoryQuery>,
) -> ApiResult {
    use scriptorium_backend::inspect::{MAX_HISTORY, workspace_changes};
    let limit = limit_param(query.limit.as_deref(), 20, MAX_HISTORY)?;
    state
        .blocking(move |_, backend| {
            let history = backend.memory().history_or_why().map_err(git_unavailable)?;
            let mut commits =
                workspace_changes(history, limit).map_err(|e| ApiError::internal(e.to_string()))?;
            for commit in &mut commits {
                commit.files.sort_by_key(|path| file_rank(path));
            }
            Ok(Json(json!({ "commits": commits })))
        })
        .await
}

/// Where a transaction's file is listed: what was written first (the topics), then the archive
/// it cited, then the derived files (views rebuilt from the topics), each group in tree order
/// (the sort is stable).
fn file_rank(path: &str) -> u8 {
    if path.starts_with("topics/") {
        0
    } else if path.starts_with("sources/") {
        1
    } else {
        2
    }
}

/// 503 `GIT_UNAVAILABLE`.
fn git_unavailable(why: String) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, Code::GitUnavailable, why)
}

/// The commits that changed a topic (path relative to `topics/`, as the topic routes), newest
/// first, each with the topic's diff: `{"path", "changes": [TopicChange…]}`.
async fn topic_history(
    State(state): State<AppState>,
    UrlPath(param): UrlPath<String>,
    Query(query): Query<HistoryQuery>,
) -> ApiResult {
    use scriptorium_backend::inspect::{MAX_HISTORY, topic_changes};
    let limit = limit_param(query.limit.as_deref(), 20, MAX_HISTORY)?;
    state
        .blocking(move |_, backend| {
            let ws_path = topic_path(backend.memory().workspace().root(), &param)?;
            let history = backend.memory().history_or_why().map_err(git_unavailable)?;
            let changes = topic_changes(history, &ws_path, limit)
                .map_err(|e| ApiError::internal(e.to_string()))?;
            Ok(Json(json!({
                "path": ws_path.trim_start_matches("topics/"),
                "changes": changes,
            })))
        })
        .await
}

#[derive(Debug, Deserialize)]
struct CommitQuery {
    /// Only the files at or below this workspace-relative path.
    path: Option<String>,
}

/// One transaction's commit (`{rev}`: an id, a unique prefix of 4+ hex digits, `HEAD` or a
/// `Txn-Id`) with the diff of each file it changed (`?path=` keeps those at or below a
/// workspace-relative path), topics first and derived files last ([`file_rank`]):
/// `{"commit": CommitDiff}`. 404 `NOT_FOUND` for an unknown
/// revision, 400 for an ambiguous prefix, 403 for a path that escapes the workspace.
async fn commit_diff(
    State(state): State<AppState>,
    UrlPath(rev): UrlPath<String>,
    Query(query): Query<CommitQuery>,
) -> ApiResult {
    let path = query.path.filter(|p| !p.is_empty());
    if let Some(p) = &path
        && (p.contains(['\\', '\0']) || p.starts_with('/') || p.split('/').any(|c| c == ".."))
    {
        return Err(ApiError::forbidden(p, format!("path escapes the workspace: {p}")));
    }
    state
        .blocking(move |_, backend| {
            let history = backend.memory().history_or_why().map_err(git_unavailable)?;
            let shown = scriptorium_backend::inspect::commit_diff(history, &rev, path.as_deref());
            let mut shown = shown.map_err(|e| match Code::from(e.code()) {
                Code::NotFound => {
                    ApiError::new(StatusCode::NOT_FOUND, Code::NotFound, e.to_string())
                }
                Code::InvalidArgument => ApiError::invalid(e.to_string()),
                _ => ApiError::internal(e.to_string()),
            })?;
            shown.files.sort_by_key(|file| file_rank(&file.path));
            Ok(Json(json!({ "commit": shown })))
        })
        .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EditBody {
    content: String,
    base_revision: String,
    /// The block IDs the edit deletes on purpose: a save that deletes paragraphs is refused
    /// (`BLOCK_ID_REMOVED`, the paragraphs in `details`) until it names them here.
    #[serde(default)]
    delete_blocks: BTreeSet<String>,
}

#[derive(Debug, Deserialize)]
struct DeleteQuery {
    #[serde(default)]
    base_revision: String,
}

async fn put_topic(
    State(state): State<AppState>,
    UrlPath(param): UrlPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body: EditBody = parse_body(body)?;
    state
        .blocking(move |_, backend| {
            let ws_path = topic_path(backend.memory().workspace().root(), &param)?;
            edit(backend, &ws_path, Some(&body.content), &body.base_revision, body.delete_blocks)
        })
        .await
}

async fn delete_topic(
    State(state): State<AppState>,
    UrlPath(param): UrlPath<String>,
    Query(query): Query<DeleteQuery>,
) -> ApiResult {
    state
        .blocking(move |_, backend| {
            let ws_path = topic_path(backend.memory().workspace().root(), &param)?;
            edit(backend, &ws_path, None, &query.base_revision, BTreeSet::new())
        })
        .await
}

/// One compare-and-set edit of `ws_path`: write `content`, or delete the file when `None`.
/// A write must keep every block ID but those of `delete_blocks` (a refusal lists the
/// paragraphs it would delete, see `EditFailure::wire`); a delete may drop the file's own
/// (inbound links still refuse it).
fn edit(
    backend: &LocalBackend,
    ws_path: &str,
    content: Option<&str>,
    base_revision: &str,
    delete_blocks: BTreeSet<String>,
) -> ApiResult {
    if base_revision.trim().is_empty() {
        return Err(ApiError::invalid("base_revision is required"));
    }
    let memory = backend.memory();
    let options = EditOptions {
        base_revision: Some(Revision::new(base_revision.trim())),
        lock_wait: LOCK_WAIT,
        keep_blocks: content.is_some(),
        delete_blocks,
        message: format!("memory: {} {ws_path}", if content.is_some() { "edit" } else { "delete" }),
    };
    let mut edit = memory.begin_edit(ws_path, options).map_err(txn)?;
    let before = edit.current().map_err(txn)?;
    match content {
        Some(text) if before.as_deref() == Some(text) => {
            return Ok(Json(json!({
                "ok": true, "noop": true, "revision": base_revision.trim(), "changed_files": [],
                "git_committed": false,
            })));
        }
        None if before.is_none() => return Err(ApiError::not_found(ws_path)),
        _ => edit.set(content).map_err(txn)?,
    }
    let installed = edit.install().map_err(|failure| match failure {
        EditFailure::Rejected { .. } => {
            let mut error = failure.wire();
            if failure.only_deletes() {
                error.message.push_str(
                    "; nothing was changed: to delete them, send the same text again with \
                     their IDs in delete_blocks",
                );
            }
            ApiError { status: StatusCode::BAD_REQUEST, error }
        }
        EditFailure::Txn(error) => txn(error),
    })?;
    if installed.noop {
        // Nothing was installed, so nothing was committed.
        return Ok(Json(json!({
            "ok": true, "noop": true, "revision": installed.revision.as_str(),
            "changed_files": [], "git_committed": false,
        })));
    }
    let after = scriptorium_backend::memory::after(&installed);
    let mut answer = json!({
        "ok": true,
        "noop": false,
        "revision": installed.revision.as_str(),
        "changed_files": changed_files(&installed),
        "git_committed": after.git_commit.is_some(),
    });
    if let (Some(err), Some(map)) = (&after.git_error, answer.as_object_mut()) {
        map.insert(
            "warning".into(),
            format!("memory saved, but the git commit failed: {err}").into(),
        );
    }
    Ok(Json(answer))
}

// ---- timeline, recent ----

/// The workspace-relative file of a timeline date (`YYYY`, `YYYY-MM` or `YYYY-MM-DD`).
fn timeline_file(date: &str) -> Option<String> {
    let parts: Vec<&str> = date.split('-').collect();
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let ok = match parts.as_slice() {
        [y] => digits(y, 4),
        [y, m] => digits(y, 4) && digits(m, 2),
        [y, m, d] => digits(y, 4) && digits(m, 2) && digits(d, 2),
        _ => false,
    };
    ok.then(|| format!("timeline/{}.md", parts.join("/")))
}

async fn list_timeline(State(state): State<AppState>) -> ApiResult {
    state
        .blocking(|_, backend| {
            let dir = backend.memory().workspace().root().join("timeline");
            let mut rows: Vec<(String, Value)> = md_files(&dir)
                .into_iter()
                .filter_map(|(rel, _, meta)| {
                    let date = rel.strip_suffix(".md")?.replace('/', "-");
                    timeline_file(&date)?;
                    let row = json!({ "date": date, "size": meta.len, "mtime": mtime(&meta) });
                    Some((date, row))
                })
                .collect();
            rows.sort_by(|a, b| b.0.cmp(&a.0));
            Ok(Json(Value::Array(rows.into_iter().map(|(_, row)| row).collect())))
        })
        .await
}

async fn get_timeline(State(state): State<AppState>, UrlPath(date): UrlPath<String>) -> ApiResult {
    let rel = timeline_file(&date).ok_or_else(|| {
        ApiError::forbidden(&date, "the date must be YYYY, YYYY-MM or YYYY-MM-DD")
    })?;
    state
        .blocking(move |_, backend| {
            let root = backend.memory().workspace().root();
            let content = read_regular(root, &rel)?.map(|(text, _)| text).unwrap_or_default();
            Ok(Json(
                json!({ "date": date, "html": markdown::render(&content), "content": content }),
            ))
        })
        .await
}

#[derive(Debug, Deserialize)]
struct SourceQuery {
    /// The record's anchor (`source-…`); without it, the archive.
    anchor: Option<String>,
    offset: Option<usize>,
    limit: Option<usize>,
}

/// An archive (`sources/<path>`, paged) or one record of it by `?anchor=source-…`: its text,
/// its place in the conversation, the turns around it and the blocks citing it.
async fn get_source(
    State(state): State<AppState>,
    UrlPath(path): UrlPath<String>,
    Query(query): Query<SourceQuery>,
) -> ApiResult {
    let rel = format!("sources/{path}");
    state
        .blocking(move |_, backend| {
            let memory = backend.memory();
            let window = scriptorium_backend::inspect::Window {
                offset: query.offset.unwrap_or(0),
                limit: query.limit,
            };
            let anchor = query.anchor.as_deref().filter(|a| !a.trim().is_empty());
            let excerpt =
                memory.get(&rel, None, anchor, window).map_err(|e| inspect_refusal(&e, &rel))?;
            let mut answer =
                serde_json::to_value(&excerpt).map_err(|e| ApiError::internal(e.to_string()))?;
            if excerpt.record.is_some() {
                answer["forgotten"] = json!(is_tombstone_text(&excerpt.text));
            }
            if anchor.is_none() {
                // The whole archive also comes as its turns, for a page to show as a thread.
                let (turns, more) =
                    scriptorium_backend::inspect::conversation(memory.workspace().root(), &rel)
                        .map_err(|e| inspect_refusal(&e, &rel))?;
                answer["turns"] = json!(turns);
                answer["more_turns"] = json!(more);
            }
            Ok(Json(answer))
        })
        .await
}

/// Whether a record's text is a forget's tombstone (`[<time>] forgotten: [FORGOTTEN]`, see
/// `docs/format.md#tombstones`).
fn is_tombstone_text(text: &str) -> bool {
    use scriptorium_topics_format::forget::{FORGOTTEN, TOMBSTONE_LABEL};
    let text = text.trim_end();
    text.starts_with('[') && text.ends_with(&format!("] {TOMBSTONE_LABEL}: {FORGOTTEN}"))
}

/// An inspection's refusal as the API answers it: 403 for a path that escapes or names
/// internal state, 404 for a missing file or record.
fn inspect_refusal(err: &scriptorium_backend::inspect::InspectError, rel: &str) -> ApiError {
    use scriptorium_backend::inspect::InspectError;
    match err {
        InspectError::Outside(_) => ApiError::forbidden(rel, err.to_string()),
        InspectError::NotFound(_) => ApiError::not_found(rel),
        _ => {
            let mut error = ApiError::new(StatusCode::NOT_FOUND, err.wire_code(), err.to_string());
            error.error.path = Some(rel.to_owned());
            error
        }
    }
}

async fn recent(State(state): State<AppState>) -> Result<Response, ApiError> {
    let rows = state
        .blocking(|_, backend| {
            let root = backend.memory().workspace().root();
            let text =
                read_regular(root, "recent_events.jsonl")?.map(|(t, _)| t).unwrap_or_default();
            let mut rows: Vec<Value> =
                text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
            rows.reverse();
            Ok(rows)
        })
        .await?;
    let mut response = Json(Value::Array(rows)).into_response();
    response.headers_mut().insert("x-memory-recent-limit", HeaderValue::from(RECENT_LIMIT));
    Ok(response)
}

// ---- core ----

async fn get_core(State(state): State<AppState>) -> ApiResult {
    state.blocking(|inner, backend| core_answer(inner, backend, markdown::render)).await
}

/// What the core answer is made of, read together under the write lock.
struct CoreFiles {
    /// `topics/core.md` and its metadata, if it exists.
    master: Option<(String, Meta)>,
    /// The root `core.md` (the render the system prompt receives), if it exists.
    rendered: Option<(String, Meta)>,
    /// The revision both belong to.
    revision: Revision,
}

impl CoreFiles {
    /// Reads the master, its render and the revision while holding the write lock, and nothing
    /// more: the lock is held for three reads, never for rendering.
    ///
    /// The lock, not a revision check, because the render is not part of the revision: an
    /// install writes it after the linearization point (see `ARCHITECTURE.md#durability`, step 8),
    /// so between the two the revision is already the new one while the render is still the
    /// old one. Every install writes both under the lock, so under it they always agree.
    fn read(ws: &Workspace) -> ApiResult<CoreFiles> {
        ws.with_write_lock(LockTimeout::new(LOCK_WAIT), || {
            let root = ws.root();
            Ok(CoreFiles {
                master: read_regular(root, CORE_PATH)?,
                rendered: read_regular(root, "core.md")?,
                revision: ws.revision().map_err(txn)?,
            })
        })
        .map_err(txn)?
    }
}

/// The `GET /api/memory/core` answer: the files read under the lock ([`CoreFiles::read`]), then
/// rendered with `render` and counted after it is released, so an edit or `scriptorium status`
/// elsewhere is never kept waiting for a render.
fn core_answer(
    inner: &Inner,
    backend: &LocalBackend,
    render: impl Fn(&str) -> String,
) -> ApiResult {
    let CoreFiles { master, rendered, revision } = CoreFiles::read(backend.memory().workspace())?;
    let (content, size, modified) = match master.or_else(|| rendered.clone()) {
        Some((text, meta)) => (text, meta.len, mtime(&meta)),
        None => (String::new(), 0, 0.0),
    };
    let (rendered_content, rendered_size, rendered_mtime) = match rendered {
        Some((text, meta)) => (text, meta.len, mtime(&meta)),
        None => (String::new(), 0, 0.0),
    };
    let inject = inner.config.memory.core.inject;
    // What the system prompt really receives: the render's compact form, fenced.
    let injected =
        if inject { scriptorium_backend::injected_core(&rendered_content) } else { String::new() };
    Ok(Json(json!({
        "size": size,
        "mtime": modified,
        // What the budget counts: the render as a model receives it (without citations).
        "rendered_tokens": tokens::count(&scriptorium_backend::engine::compact_core(&rendered_content)),
        "rendered_size": rendered_size,
        "rendered_mtime": rendered_mtime,
        "injection_enabled": inject,
        "injected_tokens": tokens::count(&injected),
        "injected_content": injected,
        "budget_tokens": CORE_BUDGET,
        "revision": revision.as_str(),
        "html": render(&content),
        "rendered_html": render(&rendered_content),
        "content": content,
        "rendered_content": rendered_content,
    })))
}

async fn put_core(State(state): State<AppState>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let body: EditBody = parse_body(body)?;
    state
        .blocking(move |_, backend| {
            let root = backend.memory().workspace().root();
            if no_symlinks(root, CORE_PATH).is_none() {
                return Err(ApiError::forbidden(CORE_PATH, "symlinks are not followed"));
            }
            edit(backend, CORE_PATH, Some(&body.content), &body.base_revision, body.delete_blocks)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_read_renders_without_holding_the_write_lock() {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = AppState::open(&dir.path().join("home")).expect("the home opens");
        let backend = state.backend().expect("memory is enabled");
        let ws = backend.memory().workspace();
        let renders = std::cell::Cell::new(0);
        let answer = core_answer(&state.inner, backend, |text| {
            // An edit or `scriptorium status` in another process can take the lock meanwhile.
            ws.with_write_lock(LockTimeout::new(Duration::ZERO), || ())
                .expect("the write lock is free while the core renders");
            renders.set(renders.get() + 1);
            markdown::render(text)
        })
        .expect("the core answer");
        assert_eq!(renders.get(), 2, "the master and its render");
        assert_eq!(answer.0["revision"], ws.revision().expect("revision").as_str());
    }

    #[test]
    fn timeline_dates_are_strict() {
        assert_eq!(timeline_file("2024").as_deref(), Some("timeline/2024.md"));
        assert_eq!(timeline_file("2024-03").as_deref(), Some("timeline/2024/03.md"));
        assert_eq!(timeline_file("2024-03-15").as_deref(), Some("timeline/2024/03/15.md"));
        for bad in ["24", "2024-3", "2024-03-15-01", "../x", "2024/03", "abcd", ""] {
            assert_eq!(timeline_file(bad), None, "{bad}");
        }
    }
}

/// Marks each session row in `rows` (a row, or a list of rows) `forgotten` when the ledger says
/// the session was forgotten whole (its turns keep their place, without their text).
fn mark_forgotten(rows: &mut Value, forgotten: &Forgotten) {
    let mark = |row: &mut Value| {
        let id = row["id"].as_str().unwrap_or_default();
        let whole = forgotten.sessions.contains(id);
        if let Some(row) = row.as_object_mut() {
            row.insert("forgotten".into(), json!(whole));
        }
    };
    match rows {
        Value::Array(rows) => rows.iter_mut().for_each(mark),
        row => mark(row),
    }
}

/// Sessions listed when `limit` is not given, and the most a page may hold.
const DEFAULT_SESSIONS: usize = 50;
const MAX_SESSIONS: usize = 500;

#[derive(Debug, Deserialize)]
struct SessionsQuery {
    limit: Option<String>,
    offset: Option<String>,
}

/// 404 `SESSION_NOT_FOUND`.
fn no_session(id: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, Code::SessionNotFound, format!("session not found: {id}"))
}

/// A session store failure: 503 `IO` (the store is unreachable or unreadable).
fn store_failed(err: &dyn std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        Code::Io,
        format!("the session store failed: {err}"),
    )
}

/// The imported sessions, newest first (`?limit=` 50 by default, `?offset=`): `{"sessions":
/// [SessionRow…] (each with its own last write), "writer": the last write outcome}` (see
/// `scriptorium_backend::conversations`).
async fn list_sessions(
    State(state): State<AppState>,
    Query(query): Query<SessionsQuery>,
) -> ApiResult {
    use scriptorium_backend::conversations::rows;
    let limit = limit_param(query.limit.as_deref(), DEFAULT_SESSIONS, MAX_SESSIONS)?;
    let offset = match query.offset.as_deref() {
        None | Some("") => 0,
        Some(text) => text
            .parse::<usize>()
            .map_err(|_| ApiError::invalid("offset must be a whole number of sessions to skip"))?,
    };
    state
        .blocking(move |inner, backend| {
            let memory = backend.memory().workspace();
            let writer = WriterStatus::load(memory.root());
            let usage = writer_usage(memory.root(), inner.config.memory.writer.max_tokens_per_day);
            let page = scriptorium_session_dag::Page { offset, limit };
            let sessions = rows(backend.store(), &writer, page, Some(memory.workspace_id()))
                .map_err(|e| store_failed(&e))?;
            let mut sessions =
                serde_json::to_value(sessions).map_err(|e| ApiError::internal(e.to_string()))?;
            mark_forgotten(&mut sessions, &Forgotten::of(memory.root()));
            Ok(Json(json!({ "sessions": sessions, "writer": writer.to_json(), "usage": usage })))
        })
        .await
}

/// What the writer's model used today and this month (UTC, from the usage ledger) against the
/// daily budget: `{today, month, runs_today, max_tokens_per_day, budget_reached}`.
fn writer_usage(memory_root: &std::path::Path, max: Option<u64>) -> serde_json::Value {
    let totals = scriptorium_writer::Ledger::of(memory_root)
        .totals(scriptorium_backend::memory::wall_clock());
    let mut value = serde_json::to_value(totals).unwrap_or_else(|_| json!({}));
    value["max_tokens_per_day"] = json!(max);
    value["budget_reached"] = json!(max.is_some_and(|max| totals.today.total_tokens >= max));
    value
}

/// One session's conversation as a thread: `{"thread": Thread}` (the head branch, then each
/// other branch from where it leaves it; turns link to their archived records). 404
/// `SESSION_NOT_FOUND` for an unknown session.
async fn get_session(State(state): State<AppState>, UrlPath(id): UrlPath<String>) -> ApiResult {
    use scriptorium_backend::conversations::thread;
    state
        .blocking(move |_, backend| {
            let memory = backend.memory().workspace();
            let session = scriptorium_session_dag::SessionId(id.clone());
            let writer = WriterStatus::load(memory.root());
            let found = thread(
                backend.store(),
                memory.root(),
                &writer,
                &session,
                Some(memory.workspace_id()),
            )
            .map_err(|e| store_failed(&e))?;
            let thread = found.ok_or_else(|| no_session(&id))?;
            let mut thread =
                serde_json::to_value(thread).map_err(|e| ApiError::internal(e.to_string()))?;
            let forgotten = Forgotten::of(memory.root());
            mark_forgotten(&mut thread["session"], &forgotten);
            for branch in thread["branches"].as_array_mut().into_iter().flatten() {
                for turn in branch["turns"].as_array_mut().into_iter().flatten() {
                    // Named by the ledger, and erased here (a clone whose store a sync did
                    // not reach still holds the text, and shows it).
                    let node = turn["id"].as_str().unwrap_or_default();
                    let erased = turn["text"].as_str().is_some_and(str::is_empty);
                    turn["forgotten"] = json!(erased && forgotten.contains(&id, node));
                }
            }
            Ok(Json(json!({ "thread": thread })))
        })
        .await
}

/// Writes one session's owed turns now (the writer's `write --force` for that session, with the
/// configured model), and records the outcome as every write path does. 200 `{"ok": true,
/// "session", "batches": [{"turns", "changed_files", "revision", "recovered"}…], "pending"}`
/// (`batches` empty: nothing was owed); a failed write is 502 `WRITE_FAILED` (503 when retrying
/// later can succeed) with the writer's reason code in `details`; 409
/// `WRITER_PRECONDITION_FAILED` when `[memory.writer] enabled = false`; 404 for an unknown
/// session.
async fn write_session(State(state): State<AppState>, UrlPath(id): UrlPath<String>) -> ApiResult {
    use scriptorium_backend::interface::MemoryBackend as _;
    let session = scriptorium_session_dag::SessionId(id.clone());
    let backend = state
        .blocking({
            let session = session.clone();
            move |inner, backend| {
                if !inner.config.memory.writer.enabled {
                    return Err(ApiError::new(
                        StatusCode::CONFLICT,
                        Code::WriterPreconditionFailed,
                        "the writer is off ([memory.writer] enabled = false in scriptorium.toml)",
                    ));
                }
                match backend.store().session(&session) {
                    Ok(Some(_)) => Ok(backend.clone()),
                    Ok(None) => Err(no_session(&session.0)),
                    Err(e) => Err(store_failed(&e)),
                }
            }
        })
        .await?;
    match backend.write(&session, &[], true).await {
        Ok(report) => {
            let batches: Vec<Value> = report
                .batches
                .iter()
                .map(|b| {
                    json!({
                        "turns": b.source_ids.len(),
                        "changed_files": b.changed_files,
                        "revision": b.revision,
                        "recovered": b.recovered,
                    })
                })
                .collect();
            let left = state
                .blocking(move |_, backend| {
                    let workspace = backend.memory().workspace().workspace_id();
                    scriptorium_backend::conversations::session_pending(
                        &**backend.store(),
                        &session,
                        Some(workspace),
                    )
                    .map_err(|e| store_failed(&e))
                })
                .await?;
            Ok(Json(json!({ "ok": true, "session": id, "batches": batches, "pending": left })))
        }
        Err(failure) => {
            let status = if failure.retryable {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::BAD_GATEWAY
            };
            let mut error = ApiError::new(
                status,
                Code::WriteFailed,
                format!("writing session {id} failed: {} ({})", failure.reason, failure.code),
            );
            error.error.details.insert("reason_code".into(), json!(failure.code));
            error.error.details.insert("retryable".into(), json!(failure.retryable));
            Err(error)
        }
    }
}

/// The HTTP status of a forget's refusal: 400 a bad request, 404 nothing the selector names,
/// 409 a concurrent change, 503 what a retry can get past (the lock, the session database,
/// git), 500 the rest.
fn forget_status(code: Code) -> StatusCode {
    match code {
        Code::InvalidArgument => StatusCode::BAD_REQUEST,
        Code::NotFound | Code::SessionNotFound | Code::MemoryNotFound => StatusCode::NOT_FOUND,
        Code::ConcurrentUpdate => StatusCode::CONFLICT,
        Code::GitUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        code if code.is_retryable() => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Forgets a session, a record, a block or a text everywhere (`scriptorium_backend::forget`):
/// without `"confirm": true` only the plan, the dry-run list the page shows before asking; with
/// it, the forget itself. The answer is `memory_forget`'s (see `crate::mcp::forget`), the sync
/// remote the home's `[sync] remote`.
async fn forget(State(state): State<AppState>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let args: ForgetArgs = serde_json::from_value(parse_body(body)?)
        .map_err(|e| ApiError::invalid(format!("invalid forget request: {e}")))?;
    let request =
        args.into_request().map_err(|error| ApiError { status: StatusCode::BAD_REQUEST, error })?;
    state
        .blocking(move |inner, backend| {
            let remote = inner.config.sync.remote.as_deref();
            let output = forget_with(backend.memory(), &**backend.store(), remote, &request)
                .map_err(|error| ApiError { status: forget_status(error.code), error })?;
            serde_json::to_value(output).map(Json).map_err(|e| ApiError::internal(e.to_string()))
        })
        .await
}
