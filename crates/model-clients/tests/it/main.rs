//! The HTTP model clients against wiremock loopback servers speaking each wire format: exact
//! request bodies of multi-turn tool conversations, reply parsing, and the retry and error
//! policy of the `http` module (scenarios shared by both wire formats live here; each provider
//! module runs them and adds its wire-format tests).
//!
//! The clients are blocking, so every call runs on `spawn_blocking`, never on the runtime.

mod anthropic;
mod openai;

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use scriptorium_model_clients::http::{HttpOptions, Sleep};
use scriptorium_writer::model::{
    Chat, ChatMessage, ChatReply, ChatRequest, ErrorReason, ModelError, ToolSpec,
};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// What the shared scenarios need of one wire format.
struct Wire {
    /// The path the client posts to.
    path: &'static str,
    /// A client for `base_url` with `options`, waiting through `sleep`.
    client: fn(&str, HttpOptions, Sleep) -> Box<dyn Chat>,
    /// A successful reply that says `text` and ends the turn.
    ok_body: fn(&str) -> Value,
    /// An error body of the provider's error `kind` with `message`.
    error_body: fn(&str, &str) -> Value,
}

/// The waits the retry loop asked for (recorded instead of slept).
type Waits = Arc<Mutex<Vec<Duration>>>;

/// Options for fast tests: 1 ms backoff base, two retries, a 5 s timeout.
fn fast_options() -> HttpOptions {
    HttpOptions {
        timeout: Duration::from_secs(5),
        max_retries: 2,
        backoff_base: Duration::from_millis(1),
        max_retry_after: Duration::from_secs(30),
    }
}

/// A sleep that records its waits and returns at once.
fn recording_sleep() -> (Sleep, Waits) {
    let waits: Waits = Arc::default();
    let recorder = Arc::clone(&waits);
    let sleep: Sleep = Arc::new(move |wait| {
        recorder.lock().expect("the waits lock is never poisoned").push(wait);
    });
    (sleep, waits)
}

fn waits_of(waits: &Waits) -> Vec<Duration> {
    waits.lock().expect("the waits lock is never poisoned").clone()
}

/// Runs blocking client code off the async runtime.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("the blocking client task panicked")
}

/// One `complete` call of a fresh client of `wire` at `base_url` (built and dropped on the
/// blocking thread, as a blocking reqwest client must be).
async fn complete_once(
    wire: &'static Wire,
    base_url: String,
    options: HttpOptions,
    sleep: Sleep,
    request: ChatRequest,
) -> Result<ChatReply, ModelError> {
    blocking(move || (wire.client)(&base_url, options, sleep).complete(&request)).await
}

/// The requests the server received.
async fn received(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.expect("request recording is on")
}

/// The JSON body of a received request.
fn body_of(request: &Request) -> Value {
    request.body_json().expect("the client sends JSON")
}

/// The two tools the conversations offer.
fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "list".to_owned(),
            description: "List the topics under a path.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "read".to_owned(),
            description: "Read one topic.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {"topic": {"type": "string"}},
                "required": ["topic"],
                "additionalProperties": false
            }),
        },
    ]
}

/// A one-message request.
fn simple_request() -> ChatRequest {
    ChatRequest {
        system: "You keep the memory.".to_owned(),
        messages: vec![ChatMessage::User { text: "Hello".to_owned() }],
        tools: tools(),
        max_tokens: 256,
    }
}

/// A base URL where nothing listens (a port bound and released).
fn refused_base_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port is free");
    let port = listener.local_addr().expect("a bound listener has an address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// Mounts `template` for the wire's path, answering at most `times` requests (`None`: all).
async fn mount(server: &MockServer, wire: &Wire, template: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST")).and(path(wire.path)).respond_with(template);
    match times {
        Some(n) => mock.up_to_n_times(n).mount(server).await,
        None => mock.mount(server).await,
    }
}

/// A 429 with `retry-after: 0`, then success: the reply after exactly two requests, one zero
/// wait.
async fn rate_limit_then_success(wire: &'static Wire) {
    let server = MockServer::start().await;
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "0")
        .set_body_json((wire.error_body)("rate_limit_error", "slow down"));
    mount(&server, wire, limited, Some(1)).await;
    mount(&server, wire, ResponseTemplate::new(200).set_body_json((wire.ok_body)("hi")), None)
        .await;
    let (sleep, waits) = recording_sleep();
    let reply = complete_once(wire, server.uri(), fast_options(), sleep, simple_request())
        .await
        .expect("the retry succeeds");
    assert_eq!(reply.text, "hi");
    assert_eq!(received(&server).await.len(), 2);
    assert_eq!(waits_of(&waits), vec![Duration::ZERO]);
}

/// 429 on every attempt: a retryable RateLimit with status 429 and the provider's message after
/// `max_retries + 1` requests, waiting the exponential backoff in between.
async fn rate_limit_exhausted(wire: &'static Wire) {
    let server = MockServer::start().await;
    let limited = ResponseTemplate::new(429)
        .set_body_json((wire.error_body)("rate_limit_error", "tokens per minute exceeded"));
    mount(&server, wire, limited, None).await;
    let (sleep, waits) = recording_sleep();
    let error = complete_once(wire, server.uri(), fast_options(), sleep, simple_request())
        .await
        .expect_err("every attempt is limited");
    assert_eq!(error.reason, ErrorReason::RateLimit);
    assert!(error.retryable);
    assert_eq!(error.status, Some(429));
    assert!(error.message.contains("tokens per minute exceeded"), "{}", error.message);
    assert_eq!(received(&server).await.len(), 3);
    assert_eq!(waits_of(&waits), vec![Duration::from_millis(1), Duration::from_millis(2)]);
}

/// A `retry-after` beyond the cap: no wait at all, the retryable RateLimit after one request.
async fn retry_after_beyond_cap(wire: &'static Wire, retry_after: &str) {
    let server = MockServer::start().await;
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", retry_after)
        .set_body_json((wire.error_body)("rate_limit_error", "come back later"));
    mount(&server, wire, limited, None).await;
    let options = HttpOptions { max_retry_after: Duration::from_secs(1), ..fast_options() };
    let started = Instant::now();
    let error =
        complete_once(wire, server.uri(), options, Arc::new(std::thread::sleep), simple_request())
            .await
            .expect_err("the wait is too long");
    assert!(started.elapsed() < Duration::from_secs(1), "waited {:?}", started.elapsed());
    assert_eq!(error.reason, ErrorReason::RateLimit);
    assert!(error.retryable);
    assert_eq!(error.status, Some(429));
    assert_eq!(received(&server).await.len(), 1);
}

/// A 5xx on every attempt: a retryable Provider error after `max_retries + 1` requests.
async fn server_error(wire: &'static Wire, status: u16, kind: &str) {
    let server = MockServer::start().await;
    let failing = ResponseTemplate::new(status).set_body_json((wire.error_body)(kind, "try later"));
    mount(&server, wire, failing, None).await;
    let (sleep, waits) = recording_sleep();
    let error = complete_once(wire, server.uri(), fast_options(), sleep, simple_request())
        .await
        .expect_err("every attempt fails");
    assert_eq!(error.reason, ErrorReason::Provider);
    assert_eq!(error.status, Some(status));
    assert!(error.message.contains("try later"), "{}", error.message);
    assert_eq!(received(&server).await.len(), 3);
    assert_eq!(waits_of(&waits).len(), 2);
    // The same HTTP 500 to every attempt is the server failing on this request: permanent, so
    // that no retry loop repeats it for ever; an overloaded 503 stays retryable.
    let deterministic = status == 500;
    assert_eq!(error.retryable, !deterministic, "{status}: {}", error.message);
    assert_eq!(error.message.contains("fails on this request every time"), deterministic);
}

/// HTTP 500 with a different answer each time: a passing failure, still retryable.
async fn changing_server_errors(wire: &'static Wire) {
    let server = MockServer::start().await;
    for text in ["first failure", "second failure"] {
        let failing =
            ResponseTemplate::new(500).set_body_json((wire.error_body)("server_error", text));
        mount(&server, wire, failing, Some(1)).await;
    }
    let failing =
        ResponseTemplate::new(500).set_body_json((wire.error_body)("server_error", "third"));
    mount(&server, wire, failing, None).await;
    let (sleep, _) = recording_sleep();
    let error = complete_once(wire, server.uri(), fast_options(), sleep, simple_request())
        .await
        .expect_err("every attempt fails");
    assert!(error.retryable, "{}", error.message);
    assert_eq!(received(&server).await.len(), 3);
}

/// A response slower than the timeout: a retryable Timeout, each attempt cut at the timeout.
async fn timeout(wire: &'static Wire) {
    let server = MockServer::start().await;
    let slow = ResponseTemplate::new(200)
        .set_body_json((wire.ok_body)("too late"))
        .set_delay(Duration::from_secs(5));
    mount(&server, wire, slow, None).await;
    let options =
        HttpOptions { timeout: Duration::from_millis(200), max_retries: 1, ..fast_options() };
    let (sleep, _) = recording_sleep();
    let started = Instant::now();
    let error = complete_once(wire, server.uri(), options, sleep, simple_request())
        .await
        .expect_err("the server is too slow");
    assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
    assert_eq!(error.reason, ErrorReason::Timeout);
    assert!(error.retryable);
    assert_eq!(error.status, None);
    assert_eq!(received(&server).await.len(), 2);
}

/// A permanent error: `reason`, not retryable, exactly one request, the provider text kept.
async fn permanent_error(
    wire: &'static Wire,
    status: u16,
    body: Value,
    reason: ErrorReason,
    text: &str,
) {
    let server = MockServer::start().await;
    mount(&server, wire, ResponseTemplate::new(status).set_body_json(body), None).await;
    let (sleep, waits) = recording_sleep();
    let error = complete_once(wire, server.uri(), fast_options(), sleep, simple_request())
        .await
        .expect_err("the request is refused");
    assert_eq!(error.reason, reason);
    assert!(!error.retryable);
    assert_eq!(error.status, Some(status));
    assert!(error.message.contains(text), "{} lacks {text}", error.message);
    assert_eq!(received(&server).await.len(), 1);
    assert!(waits_of(&waits).is_empty());
}

/// A 2xx body that is not the wire format: a retryable Transport error, retried.
async fn malformed_success_body(wire: &'static Wire) {
    let server = MockServer::start().await;
    mount(&server, wire, ResponseTemplate::new(200).set_body_string("<html>proxy</html>"), None)
        .await;
    let (sleep, _) = recording_sleep();
    let error = complete_once(wire, server.uri(), fast_options(), sleep, simple_request())
        .await
        .expect_err("the body is not JSON");
    assert_eq!(error.reason, ErrorReason::Transport);
    assert!(error.retryable);
    assert_eq!(error.status, Some(200));
    assert_eq!(received(&server).await.len(), 3);
}

/// Nothing listening: a retryable Transport error after the retries.
async fn connection_refused(wire: &'static Wire) {
    let (sleep, waits) = recording_sleep();
    let error = complete_once(wire, refused_base_url(), fast_options(), sleep, simple_request())
        .await
        .expect_err("nothing listens");
    assert_eq!(error.reason, ErrorReason::Transport);
    assert!(error.retryable);
    assert_eq!(error.status, None);
    assert_eq!(waits_of(&waits).len(), 2, "two retries were attempted");
}
