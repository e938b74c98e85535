//! Security by default for the web server: loopback binding, the per-home token, the `Host` and
//! `Origin` checks and the response headers.
//!
//! Every request passes [`guard`] (an axum middleware), in this order:
//!
//! 1. `Host` must be one of the bound origin's names (`127.0.0.1:PORT`, `localhost:PORT`,
//!    `[::1]:PORT`, or the explicit remote address): 403 `FORBIDDEN_HOST` otherwise. This stops
//!    DNS rebinding, where a hostile page's own host name resolves to loopback.
//! 2. For `/api/…`: memory disabled (`memory.backend = "none"`) → 503 `MEMORY_DISABLED`
//!    (before the token, so a disabled home never gets a token file written).
//! 3. For `/api/…`: `Authorization: Bearer <token>` must equal the home's token (compared in
//!    constant time): 401 `UNAUTHORIZED` otherwise.
//! 4. For state-changing methods (anything but GET, HEAD, OPTIONS): `Origin` must be the
//!    server's own origin (`http://` + an allowed host); a missing `Origin` is refused too: 403
//!    `FORBIDDEN_ORIGIN`. This stops cross-site request forgery even if a token leaked into a
//!    page of another origin.
//!
//! A refusal answers in the API's one error shape (see [`super::error`]), on the page's routes
//! too; every other error answer of the API is put in that shape here.
//!
//! Every response then gets the strict [`CSP`], `X-Content-Type-Options: nosniff`,
//! `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY` and, for the API, `Cache-Control:
//! no-store`.
//!
//! The token is 32 random bytes (`getrandom`) in hex, stored in `<home>/server-token` with mode
//! 0600 at the first serve and reused afterwards. The page receives it in the URL fragment
//! (`#token=…`), which browsers never send to a server or put in a `Referer`.
//!
//! # Limitations
//!
//! - Plain HTTP: with `--allow-remote` the token travels in clear text on the network; put a
//!   TLS proxy in front for anything but a trusted network.

use std::net::SocketAddr;
use std::path::Path;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use scriptorium_backend::wire::Code;

use super::error::reshape;
use super::{ApiError, AppState};

/// The Content-Security-Policy of every response.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
frame-ancestors 'none'";

/// The token file, relative to the home.
pub const TOKEN_FILE: &str = "server-token";

/// Why a bind address is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// A non-loopback address without the explicit opt-in.
    #[error(
        "refusing to listen on {0}: it is reachable from other machines; use a loopback \
         address (127.0.0.1, [::1]) or pass --allow-remote"
    )]
    NotLoopback(SocketAddr),
}

/// Checks the address to listen on: loopback always, anything else only with `allow_remote`.
pub fn check_bind(addr: SocketAddr, allow_remote: bool) -> Result<(), BindError> {
    if addr.ip().is_loopback() || allow_remote { Ok(()) } else { Err(BindError::NotLoopback(addr)) }
}

/// The `Host` values accepted for a server bound to `addr`: the loopback names with its port,
/// plus the address itself when it is not a loopback one.
pub fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut hosts =
        vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
    let own = addr.to_string();
    if !hosts.contains(&own) {
        hosts.push(own);
    }
    hosts
}

/// A new token: 32 random bytes, hex.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(hex::encode(bytes))
}

/// The home's token: read from `<home>/server-token`, or generated and written there (mode
/// 0600, created exclusively so two servers starting at once agree on one token). A token file
/// that is a symlink or not 64 hex characters is refused rather than trusted.
pub fn load_or_create_token(home: &Path) -> std::io::Result<String> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    // `create_new` is O_CREAT|O_EXCL: it never follows a symlink planted at the path.
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(home)?;
    let path = home.join(TOKEN_FILE);
    let token = new_token()?;
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path) {
        Ok(mut file) => {
            file.write_all(token.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()?;
            Ok(token)
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => read_token(&path),
        Err(err) => Err(err),
    }
}

fn read_token(path: &Path) -> std::io::Result<String> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::other(format!("{} is not a regular file", path.display())));
    }
    let text = std::fs::read_to_string(path)?;
    let token = text.trim();
    if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(std::io::Error::other(format!(
            "{} does not hold a token (64 hex characters); delete it to get a new one",
            path.display()
        )));
    }
    Ok(token.to_owned())
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `headers` carry `Authorization: Bearer <token>`.
fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some(given) = value.strip_prefix("Bearer ") else { return false };
    constant_time_eq(given.trim().as_bytes(), token.as_bytes())
}

/// The middleware every request passes (see the module docs).
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let is_api = request.uri().path().starts_with("/api/") || request.uri().path() == "/api";
    let refusal = check(&state, &request, is_api);
    let mut response = match refusal {
        Some(refused) => refused.into_response(),
        None if is_api => {
            let (method, path) = (request.method().clone(), request.uri().path().to_owned());
            reshape(next.run(request).await, &method, &path).await
        }
        None => next.run(request).await,
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if is_api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The refusal of a request, if it is refused.
fn check(state: &AppState, request: &Request, is_api: bool) -> Option<ApiError> {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !state.hosts().iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Some(ApiError::new(
            StatusCode::FORBIDDEN,
            Code::ForbiddenHost,
            "the Host header is not this server",
        ));
    }
    if !is_api {
        return None;
    }
    if state.is_disabled() {
        return Some(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            Code::MemoryDisabled,
            "memory is disabled by memory.backend=none",
        ));
    }
    if !authorized(headers, state.token()) {
        return Some(ApiError::new(
            StatusCode::UNAUTHORIZED,
            Code::Unauthorized,
            "a valid `Authorization: Bearer <token>` header is required",
        ));
    }
    let safe = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe {
        let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
        let own = origin.is_some_and(|o| {
            state.hosts().iter().any(|h| o.eq_ignore_ascii_case(&format!("http://{h}")))
        });
        if !own {
            return Some(ApiError::new(
                StatusCode::FORBIDDEN,
                Code::ForbiddenOrigin,
                "a state-changing request must come from this server's own page (Origin)",
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_binds_without_the_opt_in() {
        let local: SocketAddr = "127.0.0.1:7878".parse().expect("addr");
        let v6: SocketAddr = "[::1]:7878".parse().expect("addr");
        let any: SocketAddr = "0.0.0.0:7878".parse().expect("addr");
        assert_eq!(check_bind(local, false), Ok(()));
        assert_eq!(check_bind(v6, false), Ok(()));
        assert_eq!(check_bind(any, false), Err(BindError::NotLoopback(any)));
        assert_eq!(check_bind(any, true), Ok(()));
    }

    #[test]
    fn hosts_are_the_loopback_names_with_the_port() {
        let local: SocketAddr = "127.0.0.1:9000".parse().expect("addr");
        assert_eq!(allowed_hosts(local), ["127.0.0.1:9000", "localhost:9000", "[::1]:9000"]);
        let remote: SocketAddr = "192.0.2.7:9000".parse().expect("addr");
        assert_eq!(allowed_hosts(remote).last().map(String::as_str), Some("192.0.2.7:9000"));
    }

    #[test]
    fn tokens_are_random_hex_and_compared_exactly() {
        let a = new_token().expect("token");
        let b = new_token().expect("token");
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(constant_time_eq(a.as_bytes(), a.as_bytes()));
        assert!(!constant_time_eq(a.as_bytes(), b.as_bytes()));
        assert!(!constant_time_eq(a.as_bytes(), &a.as_bytes()[..63]));
    }

    #[test]
    fn the_token_file_is_created_once_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("temp dir");
        let first = load_or_create_token(dir.path()).expect("created");
        let again = load_or_create_token(dir.path()).expect("read back");
        assert_eq!(first, again);
        let mode = std::fs::metadata(dir.path().join(TOKEN_FILE)).expect("meta").permissions();
        assert_eq!(mode.mode() & 0o777, 0o600);
    }

    #[test]
    fn a_symlinked_or_garbled_token_file_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "a".repeat(64)).expect("write");
        let home = dir.path().join("home");
        std::fs::create_dir(&home).expect("mkdir");
        std::os::unix::fs::symlink(&elsewhere, home.join(TOKEN_FILE)).expect("symlink");
        assert!(load_or_create_token(&home).is_err());
        let other = dir.path().join("other");
        std::fs::create_dir(&other).expect("mkdir");
        std::fs::write(other.join(TOKEN_FILE), "short").expect("write");
        assert!(load_or_create_token(&other).is_err());
    }
}
