//! The Anthropic Messages client: wire format (alternation, merged tool results), reply parsing,
//! and the shared scenarios.

use scriptorium_model_clients::anthropic::{Anthropic, AnthropicConfig};
use scriptorium_model_clients::http::{HttpOptions, Sleep};
use scriptorium_writer::model::{
    Chat, ChatMessage, ChatReply, ChatRequest, ErrorReason, StopReason, ToolCall, Usage,
};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{Wire, blocking, body_of, fast_options, received, simple_request, tools};

const PATH: &str = "/v1/messages";

static ANTHROPIC: Wire = Wire { path: PATH, client, ok_body, error_body };

fn config(base_url: &str, options: HttpOptions) -> AnthropicConfig {
    AnthropicConfig {
        base_url: base_url.to_owned(),
        http: options,
        ..AnthropicConfig::new("claude-test")
    }
}

fn client(base_url: &str, options: HttpOptions, sleep: Sleep) -> Box<dyn Chat> {
    let chat = Anthropic::with_key(config(base_url, options), "sk-ant-test".to_owned())
        .expect("the client builds");
    Box::new(chat.with_sleep(sleep))
}

/// A Messages reply body.
fn message(content: Value, stop_reason: &str, input: u64, output: u64) -> Value {
    json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output}
    })
}

fn ok_body(text: &str) -> Value {
    message(json!([{"type": "text", "text": text}]), "end_turn", 1, 1)
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: arguments.to_owned() }
}

fn tool_result(call_id: &str, name: &str, content: &str, is_error: bool) -> ChatMessage {
    ChatMessage::Tool {
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        content: content.to_owned(),
        is_error,
    }
}

/// Mounts `bodies` as the answers to successive requests.
async fn mount_turns(server: &MockServer, bodies: Vec<Value>) {
    for body in bodies {
        Mock::given(method("POST"))
            .and(path(PATH))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .up_to_n_times(1)
            .mount(server)
            .await;
    }
}

/// The tools as the Messages API expects them.
fn wire_tools() -> Value {
    json!([
        {
            "name": "list",
            "description": "List the topics under a path.",
            "input_schema": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false
            }
        },
        {
            "name": "read",
            "description": "Read one topic.",
            "input_schema": {
                "type": "object",
                "properties": {"topic": {"type": "string"}},
                "required": ["topic"],
                "additionalProperties": false
            }
        }
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn three_turn_tool_conversation_merges_results_and_parses_replies() {
    let server = MockServer::start().await;
    mount_turns(
        &server,
        vec![
            message(
                json!([
                    {"type": "text", "text": "Let me look."},
                    tool_use("toolu_1", "list", json!({"path": "notes"}))
                ]),
                "tool_use",
                100,
                20,
            ),
            message(
                json!([
                    tool_use("toolu_2", "read", json!({"topic": "notes/a"})),
                    tool_use("toolu_3", "read", json!({"topic": "notes/b"}))
                ]),
                "tool_use",
                160,
                40,
            ),
            message(
                json!([
                    {"type": "text", "text": "Recorded."},
                    {"type": "text", "text": "Done."}
                ]),
                "end_turn",
                220,
                6,
            ),
        ],
    )
    .await;
    let base_url = server.uri();
    let (name, replies) = blocking(move || {
        let chat = Anthropic::with_key(config(&base_url, fast_options()), "sk-ant-test".to_owned())
            .expect("the client builds");
        let mut request = ChatRequest {
            system: "You keep the memory.".to_owned(),
            messages: vec![ChatMessage::User { text: "Record this session.".to_owned() }],
            tools: tools(),
            max_tokens: 2048,
        };
        let follow_ups = [
            vec![tool_result("toolu_1", "list", "notes/a\nnotes/b", false)],
            vec![
                tool_result("toolu_2", "read", "# A", false),
                tool_result("toolu_3", "read", "no such topic: notes/b", true),
                ChatMessage::User { text: "Also note the date.".to_owned() },
            ],
        ];
        let mut replies = Vec::new();
        for turn in 0..3 {
            let reply = chat.complete(&request).expect("the turn succeeds");
            request.messages.push(ChatMessage::Assistant {
                text: reply.text.clone(),
                tool_calls: reply.tool_calls.clone(),
            });
            if let Some(follow_up) = follow_ups.get(turn) {
                request.messages.extend(follow_up.iter().cloned());
            }
            replies.push(reply);
        }
        (chat.name(), replies)
    })
    .await;

    assert_eq!(name, "anthropic:claude-test");
    assert_eq!(
        replies,
        vec![
            ChatReply {
                text: "Let me look.".to_owned(),
                tool_calls: vec![call("toolu_1", "list", r#"{"path":"notes"}"#)],
                stop: StopReason::ToolUse,
                usage: Usage { input_tokens: 100, output_tokens: 20 },
            },
            ChatReply {
                text: String::new(),
                tool_calls: vec![
                    call("toolu_2", "read", r#"{"topic":"notes/a"}"#),
                    call("toolu_3", "read", r#"{"topic":"notes/b"}"#),
                ],
                stop: StopReason::ToolUse,
                usage: Usage { input_tokens: 160, output_tokens: 40 },
            },
            ChatReply {
                text: "Recorded.\nDone.".to_owned(),
                tool_calls: vec![],
                stop: StopReason::EndTurn,
                usage: Usage { input_tokens: 220, output_tokens: 6 },
            },
        ]
    );

    let requests = received(&server).await;
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.headers["x-api-key"], "sk-ant-test");
        assert_eq!(request.headers["anthropic-version"], "2023-06-01");
        assert_eq!(request.headers["content-type"], "application/json");
        assert!(!request.headers.contains_key("authorization"));
    }
    let user =
        json!({"role": "user", "content": [{"type": "text", "text": "Record this session."}]});
    let turn1 = json!({"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        tool_use("toolu_1", "list", json!({"path": "notes"}))
    ]});
    let results1 = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "notes/a\nnotes/b", "is_error": false}
    ]});
    let turn2 = json!({"role": "assistant", "content": [
        tool_use("toolu_2", "read", json!({"topic": "notes/a"})),
        tool_use("toolu_3", "read", json!({"topic": "notes/b"}))
    ]});
    let results2 = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "# A", "is_error": false},
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": "no such topic: notes/b", "is_error": true},
        {"type": "text", "text": "Also note the date."}
    ]});
    let body = |messages: Value| {
        json!({
            "model": "claude-test",
            "max_tokens": 2048,
            "system": "You keep the memory.",
            "messages": messages,
            "tools": wire_tools()
        })
    };
    assert_eq!(body_of(&requests[0]), body(json!([user])));
    assert_eq!(body_of(&requests[1]), body(json!([user, turn1, results1])));
    assert_eq!(body_of(&requests[2]), body(json!([user, turn1, results1, turn2, results2])));
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_recorded_arguments_are_replayed_as_an_empty_object() {
    let server = MockServer::start().await;
    mount_turns(&server, vec![ok_body("understood")]).await;
    let base_url = server.uri();
    let reply = blocking(move || {
        let chat = Anthropic::with_key(config(&base_url, fast_options()), "k".to_owned())
            .expect("the client builds");
        let request = ChatRequest {
            system: String::new(),
            messages: vec![
                ChatMessage::User { text: "Go.".to_owned() },
                ChatMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![
                        call("toolu_bad", "list", r#"{"path": "notes", "#),
                        call("toolu_list", "read", "[1, 2]"),
                        call("toolu_ok", "read", r#"{"topic": "a"}"#),
                    ],
                },
                tool_result("toolu_bad", "list", "malformed arguments", true),
                tool_result("toolu_list", "read", "arguments must be an object", true),
                tool_result("toolu_ok", "read", "# A", false),
            ],
            tools: vec![],
            max_tokens: 64,
        };
        chat.complete(&request)
    })
    .await
    .expect("the turn succeeds");
    assert_eq!(reply.text, "understood");
    let requests = received(&server).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(
        body_of(&requests[0]),
        json!({
            "model": "claude-test",
            "max_tokens": 64,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Go."}]},
                {"role": "assistant", "content": [
                    tool_use("toolu_bad", "list", json!({})),
                    tool_use("toolu_list", "read", json!({})),
                    tool_use("toolu_ok", "read", json!({"topic": "a"}))
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_bad", "content": "malformed arguments", "is_error": true},
                    {"type": "tool_result", "tool_use_id": "toolu_list", "content": "arguments must be an object", "is_error": true},
                    {"type": "tool_result", "tool_use_id": "toolu_ok", "content": "# A", "is_error": false}
                ]}
            ]
        }),
        "no system and no tools are sent when empty"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn max_tokens_other_stops_and_unknown_blocks_parse() {
    let server = MockServer::start().await;
    mount_turns(
        &server,
        vec![
            message(
                json!([
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "text", "text": "Partial"}
                ]),
                "max_tokens",
                5,
                64,
            ),
            message(json!([]), "refusal", 5, 0),
        ],
    )
    .await;
    let base_url = server.uri();
    let (first, second) = blocking(move || {
        let chat = Anthropic::with_key(config(&base_url, fast_options()), "k".to_owned())
            .expect("the client builds");
        let first = chat.complete(&simple_request());
        let second = chat.complete(&simple_request());
        (first, second)
    })
    .await;
    let first = first.expect("the first reply parses");
    assert_eq!(first.text, "Partial");
    assert_eq!(first.stop, StopReason::MaxTokens);
    assert_eq!(first.usage, Usage { input_tokens: 5, output_tokens: 64 });
    let second = second.expect("the second reply parses");
    assert_eq!(second.stop, StopReason::Other("refusal".to_owned()));
    assert!(second.text.is_empty() && second.tool_calls.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_then_success() {
    super::rate_limit_then_success(&ANTHROPIC).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_exhausted() {
    super::rate_limit_exhausted(&ANTHROPIC).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_after_beyond_the_cap_gives_up_at_once() {
    super::retry_after_beyond_cap(&ANTHROPIC, "3600").await;
    super::retry_after_beyond_cap(&ANTHROPIC, "Fri, 01 Jan 2100 00:00:00 GMT").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_errors_and_overload_are_retried_then_provider() {
    super::server_error(&ANTHROPIC, 500, "api_error").await;
    super::server_error(&ANTHROPIC, 529, "overloaded_error").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn changing_server_errors_stay_retryable() {
    super::changing_server_errors(&ANTHROPIC).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_server_times_out() {
    super::timeout(&ANTHROPIC).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn permanent_errors_are_not_retried() {
    super::permanent_error(
        &ANTHROPIC,
        401,
        error_body("authentication_error", "invalid x-api-key"),
        ErrorReason::Auth,
        "authentication_error: invalid x-api-key",
    )
    .await;
    super::permanent_error(
        &ANTHROPIC,
        403,
        error_body("permission_error", "Your API key does not have permission to use the model"),
        ErrorReason::Authz,
        "does not have permission",
    )
    .await;
    super::permanent_error(
        &ANTHROPIC,
        400,
        error_body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
        ErrorReason::Context,
        "prompt is too long",
    )
    .await;
    super::permanent_error(
        &ANTHROPIC,
        400,
        error_body("invalid_request_error", "messages: roles must alternate"),
        ErrorReason::Invalid,
        "roles must alternate",
    )
    .await;
    super::permanent_error(
        &ANTHROPIC,
        400,
        error_body("invalid_request_error", "Output blocked by content filtering policy"),
        ErrorReason::Policy,
        "content filtering policy",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_success_body_is_a_retryable_transport_error() {
    super::malformed_success_body(&ANTHROPIC).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_refused_is_a_retryable_transport_error() {
    super::connection_refused(&ANTHROPIC).await;
}

#[test]
fn missing_key_variable_is_an_auth_error_and_the_key_stays_private() {
    let config = AnthropicConfig {
        api_key_env: "SCRIPTORIUM_TEST_UNSET_ANTHROPIC_KEY".to_owned(),
        ..AnthropicConfig::new("claude-test")
    };
    assert_eq!(config.base_url, "https://api.anthropic.com");
    let error = Anthropic::new(config).expect_err("the variable is unset");
    assert_eq!(error.reason, ErrorReason::Auth);
    assert!(!error.retryable);
    assert_eq!(error.status, None);
    assert_eq!(error.message, "API key required: set SCRIPTORIUM_TEST_UNSET_ANTHROPIC_KEY");
    let keyed =
        Anthropic::with_key(AnthropicConfig::new("claude-test"), "sk-ant-secret".to_owned())
            .expect("the client builds");
    assert!(!format!("{keyed:?}").contains("sk-ant-secret"));
}
