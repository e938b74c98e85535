//! Error answers of the REST API, with stable codes.
//!
//! Two shapes, as in the reference (§8.5):
//!
//! - refusals before any memory work (memory disabled, no token, wrong `Host` or `Origin`, a
//!   workspace that cannot be opened): `{"detail": {"code", "message"}}`;
//! - everything a route refuses: `{"ok": false, "error": {"code", "message", "path"[,
//!   "details"][, "violations"]}}`, where `violations` (`[{code, path, line, col, message}]`)
//!   lists every reason a topic edit was rejected, for the page to show beside the editor.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::mcp::ToolError;

/// A `{"detail": {"code", "message"}}` answer.
pub(crate) fn detail(status: StatusCode, code: &str, message: &str) -> (StatusCode, Json<Value>) {
    (status, Json(json!({ "detail": { "code": code, "message": message } })))
}

/// A refused API request.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code, message, path and details.
    pub error: ToolError,
}

impl ApiError {
    /// An error with `status` and `code`.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError { status, error: ToolError::new(code, message) }
    }

    /// 400 `INVALID_ARGUMENT`.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", message)
    }

    /// 404 `NOT_FOUND` for `path`.
    pub fn not_found(path: &str) -> ApiError {
        let mut err =
            ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", format!("not found: {path}"));
        err.error.path = Some(path.to_owned());
        err
    }

    /// 403 `PATH_OUTSIDE_WORKSPACE` for a path parameter that escapes, names a symlink or is
    /// not allowed here.
    pub fn forbidden(path: &str, message: impl Into<String>) -> ApiError {
        let mut err = ApiError::new(StatusCode::FORBIDDEN, "PATH_OUTSIDE_WORKSPACE", message);
        err.error.path = Some(path.to_owned());
        err
    }

    /// 500 `INTERNAL`.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", message)
    }

    /// The transaction engine's error, with the status its code calls for: 409
    /// `CONCURRENT_UPDATE`, 503 `BUSY` (the lock is held: retry), 404 `MEMORY_NOT_FOUND`, 500
    /// `IO`/`CORRUPT_STATE`, 400 otherwise.
    pub fn from_txn(err: &scriptorium_txn::Error) -> ApiError {
        use scriptorium_txn::ErrorCode;
        let status = match err.code() {
            ErrorCode::ConcurrentUpdate => StatusCode::CONFLICT,
            ErrorCode::Busy => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::MemoryNotFound => StatusCode::NOT_FOUND,
            ErrorCode::Io | ErrorCode::CorruptState => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError { status, error: ToolError::from_txn(err) }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut body = self.error.to_json();
        // Violations are also given at the top of `error`, where the page looks for them.
        let violations = self
            .error
            .details
            .as_ref()
            .and_then(|d: &Map<String, Value>| d.get("violations"))
            .cloned();
        if let (Some(violations), Some(error)) =
            (violations, body.get_mut("error").and_then(Value::as_object_mut))
        {
            error.insert("violations".into(), violations);
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}
