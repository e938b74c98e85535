//! The page's two heaviest reads through the whole router (`app(state).oneshot`), on a
//! 10 000-block workspace (`common::generate_with`: 200 topic files of 50 cited paragraphs, one
//! archive per file):
//! `GET /api/memory/core` (under the write lock, with token counts and both previews) and
//! `GET /api/memory/topics/{path}` (content, revision and the rendered preview of a 50-block
//! file). Budget: 5 ms each.

mod common;

use std::path::Path;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use common::{BLOCKS_PER_FILE, generate_with};
use criterion::{Criterion, criterion_group, criterion_main};
use scriptorium_server::web::{AppState, app};
use scriptorium_topics_format::source::anchor_for;
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// Topic files.
const FILES: usize = 10_000 / BLOCKS_PER_FILE;
const HOST: &str = "127.0.0.1:7878";

/// Writes the topic files and their archives straight into the memory root (the first
/// transaction takes them as its baseline).
fn generate(root: &Path) {
    generate_with(root, FILES, &mut |f, b| {
        format!(
            "The owner mentioned topic {f}-{b} while talking about gardens, budgets and travel \
             plans for the spring."
        )
    });
}

/// A request the guard lets through.
fn request(method: Method, uri: &str, token: &str, body: Option<Value>) -> Request<Body> {
    let builder = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, HOST)
        .header(header::ORIGIN, format!("http://{HOST}"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"));
    match body {
        Some(body) => builder
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string())),
        None => builder.body(Body::empty()),
    }
    .expect("a request")
}

async fn call(router: &Router, request: Request<Body>) -> Value {
    let response = router.clone().oneshot(request).await.expect("an answer");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("a body");
    let body: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let memory = scriptorium_backend::memory::MemoryWorkspace::open(home.join("memory"), true)
        .expect("a workspace");
    drop(memory);
    generate(&home.join("memory"));
    let state =
        AppState::open(&home).expect("the home opens").with_addr(HOST.parse().expect("addr"));
    let token = state.token().to_owned();
    let router = app(state);
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");

    // A core master of 20 cited paragraphs, installed through the API (which also rebuilds the
    // views and indexes the generated topics).
    let base =
        runtime.block_on(call(&router, request(Method::GET, "/api/memory/core", &token, None)));
    let mut master = String::from("# Core\n");
    for b in 0..20 {
        let id = format!("openprogram/bench-0000/m{b}");
        master.push_str(&format!(
            "\nCore rule {b}: answer plainly and cite what the owner said.[^c{b}]\n\n\
             [^c{b}]: Time: `undated`; Sources: [rule {b}](../sources/openprogram/_v2/bench-0000.md#{})\n",
            anchor_for(&id)
        ));
    }
    let put = json!({"content": master, "base_revision": base["revision"]});
    runtime.block_on(call(&router, request(Method::PUT, "/api/memory/core", &token, Some(put))));

    let core =
        runtime.block_on(call(&router, request(Method::GET, "/api/memory/core", &token, None)));
    assert!(core["rendered_tokens"].as_u64().is_some_and(|t| t > 0));

    let mut group = c.benchmark_group("web");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("get_core_10k_blocks", |b| {
        b.iter(|| {
            runtime.block_on(call(&router, request(Method::GET, "/api/memory/core", &token, None)))
        });
    });
    group.bench_function("get_topic_with_html_10k_blocks", |b| {
        b.iter(|| {
            runtime.block_on(call(
                &router,
                request(Method::GET, "/api/memory/topics/t0100.md", &token, None),
            ))
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
