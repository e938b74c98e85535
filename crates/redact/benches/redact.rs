//! Criterion: the redactor's costs.
//!
//! - `redact/transcripts_20mb`: throughput over ~20 MB of real transcript text (the message
//!   texts of the Claude Code and Codex transcripts in the shared test data, read by the
//!   importers, repeated to 20 MB), one `redact` call per message as `import` makes them,
//!   regexes already compiled. Budget: ≥ 250 MB/s
//!   (import runs at ≥ 50 MB/s, and redaction may add at most 20 % to it).
//! - `redact/builtin_construction`: building the built-in rules afresh (what a hook process pays
//!   once). Budget: ≤ 5 ms.
//! - `redact/prompt_2kb_no_secret`: one 2 KB prompt without a secret, warm. Budget: ≤ 20 µs.
//! - `redact/first_prompt_in_a_fresh_process`: construction plus the first 2 KB prompt, regex
//!   compilation included (reported, no budget).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use scriptorium_redact::Redactor;
use scriptorium_session_dag::import;

const TARGET_BYTES: usize = 20_000_000;

/// A 2 KB prompt of the kind a user types into a coding agent: keywords of many rules (key,
/// token, auth, secret, api, password, curl), no secret.
fn prompt() -> String {
    let paragraph = "Can you look at the auth middleware in api/server.ts? When the access token \
        expires, the refresh call to /oauth/token returns 401 and the client retries forever. I \
        think the secret key rotation job (see jobs/rotate_keys.py) changed the signing key id, \
        so old tokens fail verification. Please add a test that sets API_KEY from the \
        environment, mocks the password reset endpoint, and runs `curl -s localhost:8080/health` \
        before the suite; keep the existing session handling and don't touch the billing \
        module. ";
    let mut text = String::new();
    while text.len() < 2048 {
        text.push_str(paragraph);
    }
    // ASCII: any length is a character boundary.
    text.truncate(2048);
    text
}

/// The message texts of the Claude Code and Codex transcripts, as `import` reads them, repeated
/// to ~20 MB.
fn transcript_texts(data: &Path) -> Vec<String> {
    let dirs: Vec<PathBuf> = [
        "claude-code-log/real_projects",
        "codemie-code/claude",
        "agent-history/real_sessions/claude",
        "codemie-code/codex",
        "agent-history/real_sessions/codex",
    ]
    .iter()
    .map(|dir| data.join(dir))
    .collect();
    let mut texts = Vec::new();
    for unit in import::discover_auto(&dirs).units {
        let Ok(parsed) = unit.parse() else { continue };
        for session in parsed.sessions {
            texts.extend(session.nodes.into_iter().map(|node| node.content));
        }
    }
    let once: usize = texts.iter().map(String::len).sum();
    if once == 0 {
        return texts;
    }
    let mut out = Vec::new();
    while out.iter().map(String::len).sum::<usize>() < TARGET_BYTES {
        out.extend(texts.iter().cloned());
    }
    out
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("redact");
    let prompt = prompt();
    group.bench_function("builtin_construction", |b| {
        b.iter(|| black_box(Redactor::builtin_uncached()));
    });
    group.bench_function("first_prompt_in_a_fresh_process", |b| {
        b.iter(|| {
            let redactor = Redactor::builtin_uncached();
            black_box(redactor.redact(black_box(&prompt)).counts.total())
        });
    });
    let redactor = Redactor::builtin();
    assert!(redactor.redact(&prompt).counts.is_empty(), "the prompt holds no secret");
    group.bench_function("prompt_2kb_no_secret", |b| {
        b.iter(|| black_box(redactor.redact(black_box(&prompt)).counts.total()));
    });

    match scriptorium_testkit::data_dir() {
        None => eprintln!(
            "note: test data not found (SCRIPTORIUM_TEST_DATA); skipping the throughput bench"
        ),
        Some(data) => {
            let texts = transcript_texts(&data);
            let bytes: usize = texts.iter().map(String::len).sum();
            for text in &texts {
                black_box(redactor.redact(text));
            }
            group.throughput(Throughput::Bytes(bytes as u64));
            group.sample_size(10);
            group.bench_function("transcripts_20mb", |b| {
                b.iter(|| {
                    let mut redactions = 0;
                    for text in &texts {
                        redactions += redactor.redact(black_box(text)).counts.total();
                    }
                    black_box(redactions)
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
