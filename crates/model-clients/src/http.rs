//! Shared HTTP plumbing of the model clients: one blocking JSON POST with bounded retries, and
//! the mapping of HTTP outcomes onto [`ErrorReason`].
//!
//! Key decision: retries live here and nowhere else. Transport errors, timeouts, 429 and 5xx
//! (including 529 overloaded) are retried up to [`HttpOptions::max_retries`] times with
//! exponential backoff; a `retry-after` (or `retry-after-ms`) header replaces the backoff, and
//! when it asks for longer than [`HttpOptions::max_retry_after`] the call gives up at once with
//! the retryable error rather than blocking the writer. A 2xx body that does not parse is a
//! `Transport` error (a proxy or a truncated stream, worth retrying).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use scriptorium_writer::model::{ErrorReason, ModelError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::{OffsetDateTime, PrimitiveDateTime, format_description::FormatItem, macros};

/// Longest provider text kept in [`ModelError::message`], in characters.
pub const MAX_MESSAGE_CHARS: usize = 500;

/// Timeouts and the retry policy of one client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpOptions {
    /// Whole-request timeout (connect, send, and read the body).
    pub timeout: Duration,
    /// Retries after the first attempt (so at most `max_retries + 1` requests per call).
    pub max_retries: u32,
    /// The first backoff; attempt `n` waits `backoff_base * 2^n` unless `retry-after` says.
    pub backoff_base: Duration,
    /// The longest `retry-after` honoured; a longer one ends the call with the retryable error.
    pub max_retry_after: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            timeout: Duration::from_secs(120),
            max_retries: 2,
            backoff_base: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

/// How the retry loop waits (injectable so tests can record waits instead of sleeping).
pub type Sleep = Arc<dyn Fn(Duration) + Send + Sync>;

/// A blocking HTTP client with the retry policy of [`HttpOptions`].
#[derive(Clone)]
pub struct HttpClient {
    client: Client,
    options: HttpOptions,
    sleep: Sleep,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient").field("options", &self.options).finish_non_exhaustive()
    }
}

/// One failed attempt: the error and the wait the server asked for, if any.
struct Failure {
    error: ModelError,
    retry_after: Option<Duration>,
}

impl From<ModelError> for Failure {
    fn from(error: ModelError) -> Self {
        Failure { error, retry_after: None }
    }
}

/// What the retry loop does after a retryable failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Sleep this long, then try again.
    Wait(Duration),
    /// Return the error now.
    GiveUp,
}

impl HttpClient {
    /// Builds the client (installing the `ring` TLS provider if none is installed yet).
    pub fn new(options: HttpOptions) -> Result<Self, ModelError> {
        // Err means a provider is installed already, which is all we need.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::builder().timeout(options.timeout).build().map_err(|e| {
            ModelError::new(ErrorReason::Transport, format!("cannot build the HTTP client: {e}"))
        })?;
        Ok(HttpClient { client, options, sleep: Arc::new(std::thread::sleep) })
    }

    /// The same client waiting through `sleep` between attempts.
    #[must_use]
    pub fn with_sleep(mut self, sleep: Sleep) -> Self {
        self.sleep = sleep;
        self
    }

    /// The options it was built with.
    pub fn options(&self) -> HttpOptions {
        self.options
    }

    /// POSTs `body` as JSON to `url` with extra `headers`, retrying per [`HttpOptions`], and
    /// decodes a 2xx body as `T`. The error returned is final for this call.
    pub fn post_json<B, T>(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &B,
    ) -> Result<T, ModelError>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            ModelError::new(ErrorReason::Invalid, format!("cannot encode the request: {e}"))
        })?;
        let mut attempt = 0;
        // The first failure's status and text, while every attempt failed the same way.
        let mut same: Option<(Option<u16>, String)> = None;
        let mut identical = true;
        loop {
            let failure = match self.attempt(url, headers, &bytes) {
                Ok(value) => return Ok(value),
                Err(failure) => failure,
            };
            let this = (failure.error.status, failure.error.message.clone());
            identical &= same.as_ref().is_none_or(|first| *first == this);
            same.get_or_insert(this);
            if !failure.error.retryable {
                return Err(failure.error);
            }
            if attempt >= self.options.max_retries {
                return Err(deterministic(failure.error, attempt + 1, identical));
            }
            match next_step(&self.options, attempt, failure.retry_after) {
                Next::Wait(wait) => (self.sleep)(wait),
                Next::GiveUp => return Err(failure.error),
            }
            attempt += 1;
        }
    }

    /// One request and its decoded outcome.
    fn attempt<T: DeserializeOwned>(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        bytes: &[u8],
    ) -> Result<T, Failure> {
        let mut request =
            self.client.post(url).header(CONTENT_TYPE, "application/json").body(bytes.to_vec());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().map_err(|e| Failure::from(transport_error(&e)))?;
        decode(response)
    }
}

/// The final error of a call whose retries are spent. An HTTP 500 (or 501) answered with the
/// same text to every attempt is the server failing on this very request (a request shape it
/// cannot handle), not a passing outage: it is permanent, so that no retry loop (`watch`)
/// repeats it for ever. Other statuses (502, 503, 529 overloaded…) and changing answers stay
/// retryable.
fn deterministic(error: ModelError, attempts: u32, identical: bool) -> ModelError {
    if !(identical && attempts > 1 && matches!(error.status, Some(500 | 501))) {
        return error;
    }
    ModelError {
        retryable: false,
        message: format!(
            "{} (the same answer to all {attempts} attempts: the server fails on this request \
             every time)",
            error.message
        ),
        ..error
    }
}

/// The API key from environment variable `var`: unset or blank is a non-retryable `Auth`
/// error naming the variable.
pub(crate) fn read_key(var: &str) -> Result<String, ModelError> {
    match std::env::var(var) {
        Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_owned()),
        _ => Err(ModelError::new(ErrorReason::Auth, format!("API key required: set {var}"))),
    }
}

/// Reads the response: a 2xx body decoded as `T`, anything else a classified error.
fn decode<T: DeserializeOwned>(response: Response) -> Result<T, Failure> {
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let text = response.text().map_err(|e| Failure::from(transport_error(&e)))?;
    if (200..300).contains(&status) {
        return serde_json::from_str(&text).map_err(|e| {
            Failure::from(
                ModelError::new(
                    ErrorReason::Transport,
                    format!("malformed response body: {e}: {}", truncate(&text)),
                )
                .with_status(status),
            )
        });
    }
    Err(Failure { error: status_error(status, &text), retry_after })
}

/// The error of a request that got no (complete) response.
fn transport_error(error: &reqwest::Error) -> ModelError {
    if error.is_timeout() {
        ModelError::new(ErrorReason::Timeout, format!("request timed out: {error}"))
    } else if error.is_connect() {
        ModelError::new(ErrorReason::Transport, format!("cannot connect: {error}"))
    } else {
        ModelError::new(ErrorReason::Transport, format!("transport error: {error}"))
    }
}

/// The error of a non-2xx response with body `body` (see the module doc for the mapping).
pub fn status_error(status: u16, body: &str) -> ModelError {
    let reason = match status {
        401 => ErrorReason::Auth,
        403 if mentions_policy(body) => ErrorReason::Policy,
        403 => ErrorReason::Authz,
        429 => ErrorReason::RateLimit,
        500..=599 => ErrorReason::Provider,
        _ if mentions_context(body) => ErrorReason::Context,
        _ if mentions_policy(body) => ErrorReason::Policy,
        400..=499 => ErrorReason::Invalid,
        _ => ErrorReason::Unknown,
    };
    ModelError::new(reason, format!("HTTP {status}: {}", truncate(&provider_message(body))))
        .with_status(status)
}

/// Whether an error body says the prompt does not fit the context window.
fn mentions_context(body: &str) -> bool {
    const HINTS: &[&str] = &[
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "context window",
        "context size",
        "prompt is too long",
        "too many tokens",
    ];
    let body = body.to_lowercase();
    HINTS.iter().any(|hint| body.contains(hint))
}

/// Whether an error body is a content-policy refusal.
fn mentions_policy(body: &str) -> bool {
    const HINTS: &[&str] = &[
        "content_filter",
        "content_policy_violation",
        "content policy",
        "content filtering",
        "usage policy",
        "usage policies",
        "acceptable use policy",
    ];
    let body = body.to_lowercase();
    HINTS.iter().any(|hint| body.contains(hint))
}

/// The provider's own message from an error body (`{"error":{"message":…}}` for OpenAI and
/// Anthropic, `{"error":"…"}` for some local servers), else the body itself.
fn provider_message(body: &str) -> String {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return body.trim().to_owned();
    };
    let error = &value["error"];
    let message = error["message"].as_str().or_else(|| error.as_str());
    let kind = error["type"].as_str().or_else(|| error["code"].as_str());
    match (kind, message) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (None, Some(message)) => message.to_owned(),
        _ => body.trim().to_owned(),
    }
}

/// `text` cut to [`MAX_MESSAGE_CHARS`] characters (with an ellipsis when cut).
pub fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else `retry-after` (seconds
/// or an HTTP-date). Unparseable values count as absent.
#[expect(
    clippy::disallowed_methods,
    reason = "an HTTP-date in Retry-After is relative to the real now"
)]
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    parse_retry_after(header(RETRY_AFTER.as_str())?, OffsetDateTime::now_utc())
}

/// IMF-fixdate, the only HTTP-date form senders may generate (RFC 9110 §5.6.7).
const HTTP_DATE: &[FormatItem<'static>] = macros::format_description!(
    "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
);

/// A `retry-after` value as a wait from `now`: delay seconds, or an HTTP-date (a past date
/// waits zero).
fn parse_retry_after(value: &str, now: OffsetDateTime) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let date = PrimitiveDateTime::parse(value, HTTP_DATE).ok()?.assume_utc();
    let wait = date - now;
    Some(if wait.is_positive() { wait.unsigned_abs() } else { Duration::ZERO })
}

/// After failed attempt number `attempt` (0-based): the server's wait if it gave one and it is
/// within the cap, giving up if it is beyond the cap, else exponential backoff.
fn next_step(options: &HttpOptions, attempt: u32, retry_after: Option<Duration>) -> Next {
    match retry_after {
        Some(wait) if wait > options.max_retry_after => Next::GiveUp,
        Some(wait) => Next::Wait(wait),
        None => Next::Wait(backoff(options, attempt)),
    }
}

/// `backoff_base * 2^attempt`, saturating.
fn backoff(options: &HttpOptions, attempt: u32) -> Duration {
    options.backoff_base.saturating_mul(2u32.saturating_pow(attempt))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> HttpOptions {
        HttpOptions {
            backoff_base: Duration::from_millis(100),
            max_retry_after: Duration::from_secs(30),
            ..HttpOptions::default()
        }
    }

    #[test]
    fn backoff_doubles_per_attempt() {
        let o = options();
        assert_eq!(next_step(&o, 0, None), Next::Wait(Duration::from_millis(100)));
        assert_eq!(next_step(&o, 1, None), Next::Wait(Duration::from_millis(200)));
        assert_eq!(next_step(&o, 3, None), Next::Wait(Duration::from_millis(800)));
    }

    #[test]
    fn retry_after_replaces_backoff_and_beyond_the_cap_gives_up() {
        let o = options();
        assert_eq!(next_step(&o, 2, Some(Duration::ZERO)), Next::Wait(Duration::ZERO));
        assert_eq!(next_step(&o, 0, Some(Duration::from_secs(30))), Next::Wait(o.max_retry_after));
        assert_eq!(next_step(&o, 0, Some(Duration::from_secs(31))), Next::GiveUp);
    }

    #[test]
    fn retry_after_parses_seconds_and_http_dates() {
        let now = OffsetDateTime::from_unix_timestamp(784_111_777).unwrap(); // 06 Nov 1994 08:49:37
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("0.5", now), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn statuses_map_to_reasons() {
        let reason = |status, body| status_error(status, body).reason;
        assert_eq!(reason(401, "{}"), ErrorReason::Auth);
        assert_eq!(reason(403, "{}"), ErrorReason::Authz);
        assert_eq!(reason(429, "{}"), ErrorReason::RateLimit);
        assert_eq!(reason(500, "{}"), ErrorReason::Provider);
        assert_eq!(reason(529, "{}"), ErrorReason::Provider);
        assert_eq!(reason(400, "{}"), ErrorReason::Invalid);
        assert_eq!(reason(404, "not found"), ErrorReason::Invalid);
        assert_eq!(reason(422, "{}"), ErrorReason::Invalid);
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(reason(400, openai), ErrorReason::Context);
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert_eq!(reason(400, anthropic), ErrorReason::Context);
        let filter = r#"{"error":{"message":"rejected","code":"content_policy_violation"}}"#;
        assert_eq!(reason(400, filter), ErrorReason::Policy);
        let usage = r#"{"type":"error","error":{"type":"permission_error","message":"This request violates our Usage Policy"}}"#;
        assert_eq!(reason(403, usage), ErrorReason::Policy);
    }

    #[test]
    fn messages_carry_the_provider_text_truncated() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let error = status_error(529, body);
        assert_eq!(error.message, "HTTP 529: overloaded_error: Overloaded");
        assert!(error.retryable);
        assert_eq!(
            status_error(404, r#"{"error":"model not found"}"#).message,
            "HTTP 404: model not found"
        );
        let long = "é".repeat(2000);
        let cut = truncate(&long);
        assert_eq!(cut.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
