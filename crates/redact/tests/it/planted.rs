//! The planted set (`fake::planted`): every secret is taken out, under its rule family, and
//! every other character of the surrounding text is kept.

use std::collections::{BTreeMap, BTreeSet};

use scriptorium_redact::{Counts, Redactor};

use crate::fake::{Case, planted};

fn expected_counts(case: &Case) -> Counts {
    let mut counts = BTreeMap::new();
    for (rule, _) in &case.secrets {
        *counts.entry((*rule).to_owned()).or_default() += 1;
    }
    Counts(counts)
}

#[test]
fn every_planted_secret_is_redacted_and_the_prose_kept() {
    let redactor = Redactor::builtin();
    let cases = planted();
    let mut failures = Vec::new();
    for case in &cases {
        let out = redactor.redact(&case.text);
        if out.text != case.expected {
            failures.push(format!(
                "{}:\n  input:    {:?}\n  expected: {:?}\n  got:      {:?}",
                case.name, case.text, case.expected, out.text
            ));
            continue;
        }
        if out.counts != expected_counts(case) {
            failures.push(format!("{}: counts {:?}", case.name, out.counts));
        }
        for (_, value) in &case.secrets {
            assert!(!out.text.contains(value.as_str()), "{}", case.name);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    let secrets: usize = cases.iter().map(|c| c.secrets.len()).sum();
    assert!(secrets >= 40, "only {secrets} planted secrets");
}

#[test]
fn planted_secrets_in_one_long_session_are_all_redacted() {
    let cases = planted();
    let text: Vec<&str> = cases.iter().map(|c| c.text.as_str()).collect();
    let expected: Vec<&str> = cases.iter().map(|c| c.expected.as_str()).collect();
    let text = text.join("\n\n---\n\n");
    let out = Redactor::builtin().redact(&text);
    assert_eq!(out.text, expected.join("\n\n---\n\n"));
    let mut counts = Counts::default();
    for case in &cases {
        counts.add(&expected_counts(case));
    }
    assert_eq!(out.counts, counts);
}

#[test]
fn the_planted_set_covers_every_family_of_the_issue() {
    let rules: BTreeSet<&str> =
        planted().iter().flat_map(|c| c.secrets.iter().map(|(rule, _)| *rule)).collect();
    let families = [
        // Cloud keys.
        "aws-access-token",
        "aws-secret-access-key",
        "gcp-api-key",
        "azure-storage-account-key",
        "azure-ad-client-secret",
        // VCS tokens.
        "github-pat",
        "github-fine-grained-pat",
        "github-oauth",
        "gitlab-pat",
        // AI providers.
        "openai-api-key",
        "anthropic-api-key",
        "huggingface-access-token",
        // Chat, payments, package registries.
        "slack-bot-token",
        "slack-user-token",
        "slack-webhook-url",
        "stripe-access-token",
        "npm-access-token",
        "pypi-upload-token",
        // Keys, tokens, passwords.
        "private-key",
        "jwt",
        "url-password",
        "connection-string-password",
        "generic-api-key",
    ];
    for family in families {
        assert!(rules.contains(family), "no planted {family}");
    }
}
