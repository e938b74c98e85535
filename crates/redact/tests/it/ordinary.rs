//! Hard negatives: ordinary developer text that looks like secrets and is not (placeholders,
//! environment lookups, IDs, hashes, public keys, token counts). Every one comes out unchanged.

use std::borrow::Cow;

use scriptorium_redact::Redactor;

const ORDINARY: &[&str] = &[
    "The access token expires after 3600 seconds; use the refresh token to get a new one.",
    "password = os.environ[\"DB_PASSWORD\"]",
    "token = os.getenv(\"GITHUB_TOKEN\")",
    "api_key = \"<your-api-key>\"",
    "OPENAI_API_KEY=your_api_key_here",
    "export OPENAI_API_KEY=\"sk-...\"",
    "      - uses: actions/checkout@v4\n        with:\n          token: ${{ secrets.GITHUB_TOKEN }}",
    "const token = await getToken(); if (!token) throw new Error(\"no token\");",
    "access_token = response.json()[\"access_token\"]",
    "{\"sessionId\": \"03eb5929-52b3-4b13-ada3-b93ae35806b8\", \"parentUuid\": \"5f0c2a71-9d3e-4c1b-8a6f-2e7d9b1c4a30\"}",
    "commit b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b\nMerge: c3333150 e18d0da1",
    "\"usage\": {\"input_tokens\": 12345, \"output_tokens\": 678, \"cache_read_input_tokens\": 90210}",
    "\"integrity\": \"sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+aHW4hsWWfjf7oHn7VW7TFyRSSTD8Ve0m7jiQ7w==\"",
    "max_tokens=4096, token_count = len(tokens)",
    "public_key = load_pem_public_key(data)\n-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8xOUetsCa8EfOlDEBAfREhJqspDo\nyEh6Szz2in47Tv5n52m9dLYyPCbqZkOB5nTSqtscpkQD/HpykCggvx09iQ==\n-----END PUBLIC KEY-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl dev@laptop",
    "<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\">",
    "curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com/v1/me",
    "curl -H \"Authorization: Bearer ${API_TOKEN}\" https://api.example.com/v1/me",
    "REDIS_URL=redis://localhost:6379/0",
    "DATABASE_URL=postgres://postgres@localhost:5432/app",
    "DATABASE_URL=postgresql://app:${DB_PASSWORD}@db:5432/app",
    "mongodb+srv://admin:<password>@cluster0.mongodb.net/test",
    "https://github.com/acme/repo.git and git@github.com:acme/repo.git",
    "if key in cache:\n    return cache[key]",
    "secret_name = \"prod/db/credentials\"",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "color: #1a2b3c; background: #ffffff;",
    "FROM python:3.12-slim@sha256:2b0079146a74e23bb4ae8f6c9c8e2a4d8e1f9b7c6a5d4e3f2a1b0c9d8e7f6a5b",
    "password=\"password123\" in the test fixture, and username=\"admin\"",
    "Server=localhost;Database=app;Trusted_Connection=True;",
    "Server=db;Database=app;User Id=sa;Password={0};",
    "jdbc:postgresql://db:5432/app?user=app&password=${DB_PASSWORD}",
    "let secret = Secret::new(value); let key = derive_key(&secret, salt);",
    "I asked for the API key, and they said the key lives in the vault under kv/app.",
    "Run `pwd` to see where you are, then `ls -la`.",
    "The task list: ask Sky about the kiosk desk; they keep the key.",
    "sk-learn is not a package; you want scikit-learn.",
    "token: '[REDACTED:github-pat]' already redacted upstream",
];

#[test]
fn ordinary_text_comes_out_unchanged() {
    let redactor = Redactor::builtin();
    let mut changed = Vec::new();
    for text in ORDINARY {
        let (out, reviewed) = redactor.review(text);
        if !matches!(out.text, Cow::Borrowed(_)) || !out.counts.is_empty() {
            changed.push(format!("{text:?}\n  => {:?}\n  {reviewed:?}", out.text));
        }
    }
    assert!(changed.is_empty(), "{} changed:\n{}", changed.len(), changed.join("\n"));
}
