//! The OpenAI chat-completions client: wire format, reply parsing, and the shared scenarios.

use scriptorium_model_clients::http::{HttpOptions, Sleep};
use scriptorium_model_clients::openai::{OpenAi, OpenAiConfig};
use scriptorium_writer::model::{
    Chat, ChatMessage, ChatReply, ChatRequest, ErrorReason, StopReason, ToolCall, Usage,
};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{
    Wire, blocking, body_of, fast_options, received, recording_sleep, simple_request, tools,
};

const PATH: &str = "/v1/chat/completions";

static OPENAI: Wire = Wire { path: PATH, client, ok_body, error_body };

fn config(base_url: &str, options: HttpOptions) -> OpenAiConfig {
    OpenAiConfig {
        base_url: format!("{base_url}/v1"),
        model: "gpt-test".to_owned(),
        api_key_env: None,
        http: options,
        temperature: None,
    }
}

fn client(base_url: &str, options: HttpOptions, sleep: Sleep) -> Box<dyn Chat> {
    let chat = OpenAi::with_key(config(base_url, options), Some("sk-test".to_owned()))
        .expect("the client builds");
    Box::new(chat.with_sleep(sleep))
}

/// A completion body with one choice.
fn completion(message: Value, finish_reason: &str, prompt: u64, completion: u64) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion
        }
    })
}

fn ok_body(text: &str) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop", 1, 1)
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
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

/// The tools as the chat-completions API expects them.
fn wire_tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "list",
            "description": "List the topics under a path.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false
            }
        }},
        {"type": "function", "function": {
            "name": "read",
            "description": "Read one topic.",
            "parameters": {
                "type": "object",
                "properties": {"topic": {"type": "string"}},
                "required": ["topic"],
                "additionalProperties": false
            }
        }}
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn three_turn_tool_conversation_sends_exact_bodies_and_parses_replies() {
    let server = MockServer::start().await;
    mount_turns(
        &server,
        vec![
            completion(
                json!({"role": "assistant", "content": null, "tool_calls": [
                    tool_call("call_1", "list", r#"{"path":"notes"}"#)
                ]}),
                "tool_calls",
                100,
                12,
            ),
            completion(
                json!({"role": "assistant", "content": "Reading both.", "tool_calls": [
                    tool_call("call_2", "read", r#"{"topic":"notes/a"}"#),
                    tool_call("call_3", "read", r#"{"topic":"notes/b"}"#)
                ]}),
                "tool_calls",
                150,
                30,
            ),
            completion(json!({"role": "assistant", "content": "Recorded."}), "stop", 200, 5),
        ],
    )
    .await;
    let base_url = server.uri();
    let replies = blocking(move || {
        let mut config = config(&base_url, fast_options());
        config.temperature = Some(0.5);
        let chat = OpenAi::with_key(config, Some("sk-test".to_owned())).expect("the client builds");
        let mut request = ChatRequest {
            system: "You keep the memory.".to_owned(),
            messages: vec![ChatMessage::User { text: "Record this session.".to_owned() }],
            tools: tools(),
            max_tokens: 1024,
        };
        let mut replies = Vec::new();
        let results = [
            vec![tool_result("call_1", "list", "notes/a\nnotes/b", false)],
            vec![
                tool_result("call_2", "read", "# A", false),
                tool_result("call_3", "read", "no such topic: notes/b", true),
            ],
        ];
        for turn in 0..3 {
            let reply = chat.complete(&request).expect("the turn succeeds");
            request.messages.push(ChatMessage::Assistant {
                text: reply.text.clone(),
                tool_calls: reply.tool_calls.clone(),
            });
            if let Some(results) = results.get(turn) {
                request.messages.extend(results.iter().cloned());
            }
            replies.push(reply);
        }
        (chat.name(), replies)
    })
    .await;

    let (name, replies) = replies;
    assert_eq!(name, "openai:gpt-test");
    assert_eq!(
        replies,
        vec![
            ChatReply {
                text: String::new(),
                tool_calls: vec![call("call_1", "list", r#"{"path":"notes"}"#)],
                stop: StopReason::ToolUse,
                usage: Usage { input_tokens: 100, output_tokens: 12 },
            },
            ChatReply {
                text: "Reading both.".to_owned(),
                tool_calls: vec![
                    call("call_2", "read", r#"{"topic":"notes/a"}"#),
                    call("call_3", "read", r#"{"topic":"notes/b"}"#),
                ],
                stop: StopReason::ToolUse,
                usage: Usage { input_tokens: 150, output_tokens: 30 },
            },
            ChatReply {
                text: "Recorded.".to_owned(),
                tool_calls: vec![],
                stop: StopReason::EndTurn,
                usage: Usage { input_tokens: 200, output_tokens: 5 },
            },
        ]
    );

    let requests = received(&server).await;
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.headers["authorization"], "Bearer sk-test");
        assert_eq!(request.headers["content-type"], "application/json");
    }
    let system = json!({"role": "system", "content": "You keep the memory."});
    let user = json!({"role": "user", "content": "Record this session."});
    // An empty string, never `null`, beside tool calls: llama-cpp-python answers HTTP 500 to
    // every request holding an assistant turn with `"content": null`.
    let turn1 = json!({"role": "assistant", "content": "", "tool_calls": [
        tool_call("call_1", "list", r#"{"path":"notes"}"#)
    ]});
    let result1 = json!({"role": "tool", "tool_call_id": "call_1", "content": "notes/a\nnotes/b"});
    let turn2 = json!({"role": "assistant", "content": "Reading both.", "tool_calls": [
        tool_call("call_2", "read", r#"{"topic":"notes/a"}"#),
        tool_call("call_3", "read", r#"{"topic":"notes/b"}"#)
    ]});
    let result2 = json!({"role": "tool", "tool_call_id": "call_2", "content": "# A"});
    let result3 =
        json!({"role": "tool", "tool_call_id": "call_3", "content": "no such topic: notes/b"});
    let body = |messages: Value| {
        json!({
            "model": "gpt-test",
            "messages": messages,
            "tools": wire_tools(),
            "tool_choice": "auto",
            "max_tokens": 1024,
            "temperature": 0.5
        })
    };
    assert_eq!(body_of(&requests[0]), body(json!([system, user])));
    assert_eq!(body_of(&requests[1]), body(json!([system, user, turn1, result1])));
    assert_eq!(
        body_of(&requests[2]),
        body(json!([system, user, turn1, result1, turn2, result2, result3]))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_arguments_pass_through_verbatim_both_ways() {
    let server = MockServer::start().await;
    let malformed = r#"{"path": "notes", "#;
    mount_turns(
        &server,
        vec![
            completion(
                json!({"role": "assistant", "content": null, "tool_calls": [
                    tool_call("call_9", "list", malformed)
                ]}),
                "tool_calls",
                10,
                3,
            ),
            ok_body("fixed"),
        ],
    )
    .await;
    let base_url = server.uri();
    let (first, second) = blocking(move || {
        let chat = OpenAi::with_key(config(&base_url, fast_options()), None).expect("builds");
        let mut request = simple_request();
        request.tools.clear();
        let first = chat.complete(&request).expect("the first turn succeeds");
        request.messages.push(ChatMessage::Assistant {
            text: first.text.clone(),
            tool_calls: first.tool_calls.clone(),
        });
        request.messages.push(tool_result("call_9", "list", "malformed arguments", true));
        let second = chat.complete(&request).expect("the second turn succeeds");
        (first, second)
    })
    .await;
    assert_eq!(first.tool_calls, vec![call("call_9", "list", malformed)]);
    assert_eq!(second.text, "fixed");
    let requests = received(&server).await;
    assert_eq!(requests.len(), 2);
    assert!(!requests[0].headers.contains_key("authorization"), "a keyless client sends none");
    let replayed = &body_of(&requests[1])["messages"][2];
    assert_eq!(replayed["tool_calls"][0]["function"]["arguments"], malformed);
    let first_body = body_of(&requests[0]);
    assert!(first_body.get("tools").is_none() && first_body.get("tool_choice").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn null_content_length_stop_and_missing_ids_parse() {
    let server = MockServer::start().await;
    let body = completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"type": "function", "function": {"name": "read", "arguments": {"topic": "x"}}}
        ]}),
        "length",
        7,
        9,
    );
    mount_turns(&server, vec![body]).await;
    let base_url = server.uri();
    let reply = blocking(move || {
        let chat = OpenAi::with_key(config(&base_url, fast_options()), None).expect("builds");
        chat.complete(&simple_request())
    })
    .await
    .expect("the reply parses");
    assert_eq!(reply.text, "");
    assert_eq!(reply.stop, StopReason::MaxTokens);
    assert_eq!(reply.tool_calls, vec![call("call_0", "read", r#"{"topic":"x"}"#)]);
    assert_eq!(reply.usage, Usage { input_tokens: 7, output_tokens: 9 });
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_choices_is_a_transport_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": "x", "usage": {}})))
        .mount(&server)
        .await;
    let base_url = server.uri();
    let (sleep, _) = recording_sleep();
    let error =
        blocking(move || client(&base_url, fast_options(), sleep).complete(&simple_request()))
            .await
            .expect_err("no choices");
    assert_eq!(error.reason, ErrorReason::Transport);
    assert!(error.retryable);
    assert!(error.message.contains("choices"), "{}", error.message);
    assert_eq!(received(&server).await.len(), 3, "a malformed body is retried");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_key_is_sent_as_a_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(PATH))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(ResponseTemplate::new(200).set_body_json(ok_body("keyed")))
        .mount(&server)
        .await;
    let base_url = server.uri();
    let (sleep, _) = recording_sleep();
    let reply =
        blocking(move || client(&base_url, fast_options(), sleep).complete(&simple_request()))
            .await
            .expect("the keyed request matches");
    assert_eq!(reply.text, "keyed");
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_then_success() {
    super::rate_limit_then_success(&OPENAI).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_exhausted() {
    super::rate_limit_exhausted(&OPENAI).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_after_beyond_the_cap_gives_up_at_once() {
    super::retry_after_beyond_cap(&OPENAI, "3600").await;
    super::retry_after_beyond_cap(&OPENAI, "Fri, 01 Jan 2100 00:00:00 GMT").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_error_is_retried_then_provider() {
    super::server_error(&OPENAI, 500, "server_error").await;
    super::server_error(&OPENAI, 503, "server_error").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn changing_server_errors_stay_retryable() {
    super::changing_server_errors(&OPENAI).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_server_times_out() {
    super::timeout(&OPENAI).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn permanent_errors_are_not_retried() {
    let e = |kind: &str, message: &str| error_body(kind, message);
    super::permanent_error(
        &OPENAI,
        401,
        e("invalid_request_error", "Incorrect API key provided"),
        ErrorReason::Auth,
        "Incorrect API key provided",
    )
    .await;
    super::permanent_error(
        &OPENAI,
        403,
        e("invalid_request_error", "Project does not have access to model"),
        ErrorReason::Authz,
        "does not have access",
    )
    .await;
    let context = json!({"error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded"
    }});
    super::permanent_error(&OPENAI, 400, context, ErrorReason::Context, "maximum context length")
        .await;
    let policy = json!({"error": {
        "message": "Your request was rejected as a result of our safety system.",
        "type": "invalid_request_error",
        "param": null,
        "code": "content_policy_violation"
    }});
    super::permanent_error(&OPENAI, 400, policy, ErrorReason::Policy, "safety system").await;
    let unknown_model = e("invalid_request_error", "The model `gpt-x` does not exist");
    super::permanent_error(&OPENAI, 404, unknown_model, ErrorReason::Invalid, "does not exist")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_success_body_is_a_retryable_transport_error() {
    super::malformed_success_body(&OPENAI).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_refused_is_a_retryable_transport_error() {
    super::connection_refused(&OPENAI).await;
}

#[test]
fn missing_key_variable_is_an_auth_error() {
    let mut config = config("http://127.0.0.1:9", fast_options());
    config.api_key_env = Some("SCRIPTORIUM_TEST_UNSET_OPENAI_KEY".to_owned());
    let error = OpenAi::new(config).expect_err("the variable is unset");
    assert_eq!(error.reason, ErrorReason::Auth);
    assert!(!error.retryable);
    assert_eq!(error.message, "API key required: set SCRIPTORIUM_TEST_UNSET_OPENAI_KEY");
    let keyless = OpenAi::new(OpenAiConfig::local("http://127.0.0.1:9/v1", "llama"))
        .expect("a keyless server needs no key");
    assert_eq!(keyless.name(), "openai:llama");
    let keyed = OpenAi::with_key(OpenAiConfig::openai("gpt-test"), Some("sk-secret".to_owned()))
        .expect("the client builds");
    assert!(!format!("{keyed:?}").contains("sk-secret"));
}
