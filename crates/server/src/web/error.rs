//! Error answers of the REST API, with stable codes, in one shape.
//!
//! Every error answer under `/api/` — a guard's refusal (memory disabled, no token, a wrong
//! `Host` or `Origin`), a body over the limit, a route's refusal, and what axum itself refuses
//! before a handler runs (a query or path parameter that does not parse, a method the route
//! does not have) — is
//!
//! ```json
//! {"ok": false, "error": {"code": "…", "message": "…", "path": "topics/…" | null, "violations": […]}}
//! ```
//!
//! `path` is the workspace-relative path concerned, or null; `violations` (`[{code, message,
//! path, line, col}]`, empty when none apply) lists every reason a topic edit was rejected, for
//! the page to show beside the editor. A refused change request's structured details (a patch
//! conflict's `line`, `expected` and `found`) come as `details` when there are any. It is the
//! shape of `scriptorium_backend::wire::WireError`, the same the CLI's `--json` and the MCP
//! tools answer.
//!
//! Key decision: [`ApiError`] renders the shape and marks its responses; the request guard
//! passes every other error response of the API through `reshape`, so a rejection produced
//! inside axum cannot escape in another shape (plain text, or an empty body).

use axum::Json;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use scriptorium_backend::wire::{Code, WireError};

/// A refused API request.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code, message, path, violations and details.
    pub error: WireError,
}

impl ApiError {
    /// An error with `status` and `code`.
    pub fn new(status: StatusCode, code: Code, message: impl Into<String>) -> ApiError {
        ApiError { status, error: WireError::new(code, message) }
    }

    /// 400 `INVALID_ARGUMENT`.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, Code::InvalidArgument, message)
    }

    /// 404 `NOT_FOUND` for `path`.
    pub fn not_found(path: &str) -> ApiError {
        let mut err =
            ApiError::new(StatusCode::NOT_FOUND, Code::NotFound, format!("not found: {path}"));
        err.error.path = Some(path.to_owned());
        err
    }

    /// 403 `PATH_OUTSIDE_WORKSPACE` for a path parameter that escapes, names a symlink or is
    /// not allowed here.
    pub fn forbidden(path: &str, message: impl Into<String>) -> ApiError {
        let mut err = ApiError::new(StatusCode::FORBIDDEN, Code::PathOutsideWorkspace, message);
        err.error.path = Some(path.to_owned());
        err
    }

    /// 500 `INTERNAL`.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, Code::Internal, message)
    }

    /// The transaction engine's error, with the status its code calls for: 409
    /// `CONCURRENT_UPDATE`, 503 `BUSY` or `NO_SPACE` (retry), 404 `MEMORY_NOT_FOUND`, 500
    /// `IO`/`CORRUPT_STATE`/`WORKSPACE_ID_MISSING`, 400 otherwise.
    pub fn from_txn(err: &scriptorium_backend::engine::TxnError) -> ApiError {
        use scriptorium_backend::engine::ErrorCode;
        let status = match err.code() {
            ErrorCode::ConcurrentUpdate => StatusCode::CONFLICT,
            ErrorCode::Busy | ErrorCode::NoSpace => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::MemoryNotFound => StatusCode::NOT_FOUND,
            ErrorCode::Io | ErrorCode::CorruptState | ErrorCode::WorkspaceIdMissing => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError { status, error: WireError::from_txn(err) }
    }

    /// The JSON body, in the one shape (see the module docs).
    pub fn body(&self) -> Value {
        self.error.to_json()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        response.extensions_mut().insert(Shaped);
        response
    }
}

/// Marks a response whose body [`ApiError`] rendered in the error shape.
#[derive(Clone, Copy, Debug)]
struct Shaped;

/// The most of an unshaped error body read for its message (axum's rejections are one line).
const REJECTION_TEXT_LIMIT: usize = 16 * 1024;

/// The code of an error answer that only has its status (an axum rejection).
fn code_for(status: StatusCode) -> Code {
    match status {
        StatusCode::NOT_FOUND => Code::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => Code::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => Code::SizeLimit,
        status if status.is_server_error() => Code::Internal,
        _ => Code::InvalidArgument,
    }
}

/// `response` in the error shape, if it is an error answer that [`ApiError`] did not render
/// (axum's rejection of a query or path parameter, of a method the route does not have): the
/// code its status calls for, its text (or, when it has none, `method path: reason`) as the
/// message. Other responses are returned unchanged.
pub(crate) async fn reshape(response: Response, method: &Method, path: &str) -> Response {
    let status = response.status();
    let error = status.is_client_error() || status.is_server_error();
    if !error || response.extensions().get::<Shaped>().is_some() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, REJECTION_TEXT_LIMIT)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let message = if text.is_empty() {
        format!("{method} {path}: {}", status.canonical_reason().unwrap_or("refused"))
    } else {
        text
    };
    let mut shaped = ApiError::new(status, code_for(status), message).into_response();
    // A 405 names the methods the route has.
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        shaped.headers_mut().insert(header::ALLOW, allow.clone());
    }
    shaped
}
