//! `scriptorium model check` against a loopback server that speaks the OpenAI chat-completions
//! wire format: a model that calls the tool, one that only talks, and no server at all.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;

use serde_json::{Value, json};

use crate::support::scriptorium;

/// Serves `reply` (a chat-completions `message`) to every request on a loopback port, for the
/// test's lifetime; returns the base URL (`http://127.0.0.1:<port>/v1`).
fn server(reply: Value) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}/v1", listener.local_addr().expect("the address"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let answer = json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": reply, "finish_reason":
                    if reply.get("tool_calls").is_some() { "tool_calls" } else { "stop" }}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            })
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    url
}

fn check(url: &str) -> (Option<i32>, Value) {
    let home = tempfile::tempdir().expect("a temp dir");
    let out = scriptorium(
        home.path(),
        &[
            "model",
            "check",
            "--model",
            "openai",
            "--model-name",
            "m",
            "--base-url",
            url,
            "--api-key-env",
            "none",
            "--timeout",
            "30",
            "--retries",
            "0",
            "--json",
        ],
    );
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), report)
}

#[test]
fn a_model_that_calls_the_tool_passes() {
    let url = server(json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "echo", "arguments": "{\"word\":\"scriptorium\"}"}
    }]}));
    let (code, report) = check(&url);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["tool_calls_work"], true, "{report}");
    assert!(report["finding"].as_str().is_some_and(|f| f.starts_with("tool calls work")));
    assert!(report["elapsed_ms"].is_u64());
}

#[test]
fn a_model_that_only_talks_fails_with_advice() {
    let url = server(json!({"role": "assistant", "content": "I would call echo."}));
    let (code, report) = check(&url);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(report["tool_calls_work"], false);
    assert!(report["advice"].as_str().is_some_and(|a| a.contains("function calling")), "{report}");
}

#[test]
fn no_server_says_what_to_check_and_the_journal_needs_nothing() {
    let closed = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/v1", closed.local_addr().expect("addr"));
    drop(closed);
    let (code, report) = check(&url);
    assert_eq!(code, Some(1), "{report}");
    assert!(report["advice"].as_str().is_some_and(|a| a.contains("base_url")), "{report}");
    let home = tempfile::tempdir().expect("a temp dir");
    let out = scriptorium(home.path(), &["model", "check"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to check"));
}
