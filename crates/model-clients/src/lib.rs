//! The HTTP model clients: [`openai::OpenAi`] (chat completions, which the OpenAI-compatible
//! local servers speak too) and [`anthropic::Anthropic`] (Messages), each a writer [`Chat`] over
//! blocking reqwest with rustls, sharing one retry and error policy ([`http`]).
//!
//! Key decision: the clients live above the writer, not in it. The writer owns the [`Chat`]
//! seam, the agent loop and the models that need no network; this crate is the one place below
//! the backend that knows HTTP and TLS, so the engine builds and tests without reqwest, rustls or
//! a mock server, and a new wire format is a module here, never a change to the writer. The
//! backend turns the `[model]` configuration into one of these clients (`models::build`); the
//! faces (CLI, server) reach them only through it.
//!
//! # Limitations
//!
//! - Blocking: a `complete` call holds its thread for the whole exchange, retries and their waits
//!   included (at most `max_retries + 1` requests of up to `timeout` each, plus the waits). Async
//!   callers run it on a blocking thread, and must also build and drop the client there
//!   (reqwest's blocking client owns a runtime of its own).
//! - No streaming: a reply arrives whole or not at all.
//! - Tool-using text chat only: no images, no prompt caching, no provider extras (an Anthropic
//!   reply's thinking blocks are dropped).
//! - API keys come from the environment (read once, when the client is built) or are passed in;
//!   the server certificate is checked against the operating system's trust store.
//! - Building a client installs rustls's `ring` provider as the process default when no provider
//!   is installed yet.
//!
//! # Example
//!
//! One turn against an OpenAI-compatible server: here a one-shot loopback stand-in; in use, a
//! local server such as `http://localhost:11434/v1`, or [`openai::OpenAiConfig::openai`].
//!
//! ```
//! use scriptorium_model_clients::openai::{OpenAi, OpenAiConfig};
//! use scriptorium_writer::model::{Chat, ChatMessage, ChatRequest, StopReason};
//! # fn serve_once(body: &'static str) -> String {
//! #     use std::io::{BufRead, BufReader, Read, Write};
//! #     let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
//! #     let url = format!("http://{}", listener.local_addr().unwrap());
//! #     std::thread::spawn(move || {
//! #         let mut reader = BufReader::new(listener.accept().unwrap().0);
//! #         let mut length = 0;
//! #         let mut line = String::new();
//! #         while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
//! #             if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
//! #                 length = v.trim().parse().unwrap();
//! #             }
//! #             line.clear();
//! #         }
//! #         reader.read_exact(&mut vec![0; length]).unwrap();
//! #         let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close";
//! #         write!(reader.get_mut(), "{head}\r\ncontent-length: {}\r\n\r\n{body}", body.len())
//! #             .unwrap();
//! #     });
//! #     url
//! # }
//! # let base_url = serve_once(
//! #     r#"{"choices":[{"message":{"content":"Noted."},"finish_reason":"stop"}]}"#,
//! # );
//!
//! let chat = OpenAi::new(OpenAiConfig::local(base_url, "llama3"))?;
//! let request = ChatRequest {
//!     system: "You keep the memory.".to_owned(),
//!     messages: vec![ChatMessage::User { text: "The build takes ten minutes.".to_owned() }],
//!     tools: Vec::new(),
//!     max_tokens: 256,
//! };
//! let reply = chat.complete(&request)?;
//! assert_eq!((reply.text.as_str(), reply.stop), ("Noted.", StopReason::EndTurn));
//! assert_eq!(chat.name(), "openai:llama3");
//! # Ok::<(), scriptorium_writer::model::ModelError>(())
//! ```
//!
//! [`Chat`]: scriptorium_writer::model::Chat

pub mod anthropic;
pub mod http;
pub mod openai;
