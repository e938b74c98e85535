//! The owner's patterns and allowlist (`[privacy]` of `scriptorium.toml`).

use scriptorium_redact::{ErrorCode, OwnerPattern, PrivacyConfig, Redactor};

/// A fake AWS access key id (split so that no scanner reads a key in this file).
const AWS_KEY: &str = concat!("AKIA", "Q3V7XK2M4P6R5T2W");

fn config(toml_text: &str) -> PrivacyConfig {
    #[derive(serde::Deserialize)]
    struct File {
        privacy: PrivacyConfig,
    }
    toml::from_str::<File>(toml_text).expect("valid TOML").privacy
}

#[test]
fn the_privacy_section_parses() {
    let c = config(
        r#"
        [privacy]
        patterns = ['\bACME-\d{6}\b', { id = "employee-id", regex = 'EMP-(\d{5})' }]
        allow = ['^AKIA[A-Z0-9]{12}TEST$']
        "#,
    );
    assert_eq!(
        c.patterns,
        [
            OwnerPattern::Regex(r"\bACME-\d{6}\b".into()),
            OwnerPattern::Named { id: "employee-id".into(), regex: r"EMP-(\d{5})".into() },
        ]
    );
    assert_eq!(c.allow, [r"^AKIA[A-Z0-9]{12}TEST$"]);
    assert_eq!(config("[privacy]\n"), PrivacyConfig::default());
}

#[test]
fn unknown_keys_are_refused() {
    #[derive(Debug, serde::Deserialize)]
    struct File {
        #[expect(dead_code, reason = "only the parse result is checked")]
        privacy: PrivacyConfig,
    }
    let err = toml::from_str::<File>("[privacy]\npaterns = []\n").expect_err("a typo");
    assert!(err.to_string().contains("unknown field `paterns`"), "{err}");
    let err = toml::from_str::<File>("[privacy]\npatterns = [{ id = \"x\", regx = \"y\" }]\n")
        .expect_err("a typo in a table");
    assert!(err.to_string().contains("unknown field `regx`"), "{err}");
    let err =
        toml::from_str::<File>("[privacy]\npatterns = [{ regex = \"y\" }]\n").expect_err("no id");
    assert!(err.to_string().contains("missing field `id`"), "{err}");
    let err = toml::from_str::<File>("[privacy]\npatterns = [3]\n").expect_err("a number");
    assert!(err.to_string().contains("a regex string, or a table"), "{err}");
}

#[test]
fn custom_patterns_are_redacted_under_their_ids() {
    let c = config(
        r#"
        [privacy]
        patterns = ['\bACME-\d{6}\b', { id = "employee-id", regex = 'EMP-(\d{5})' }, 'Project Bluebird']
        "#,
    );
    let redactor = Redactor::new(&c).expect("valid");
    let out = redactor.redact("Ticket ACME-004211 for EMP-77120 about Project Bluebird.");
    assert_eq!(
        out.text,
        "Ticket [REDACTED:owner-1] for EMP-[REDACTED:employee-id] about [REDACTED:owner-3]."
    );
    assert_eq!(out.counts.0.len(), 3);
    assert_eq!(out.counts.total(), 3);
    // The built-in rules still run beside them.
    let text = format!("key {AWS_KEY} and ACME-000001");
    let out = redactor.redact(&text);
    assert_eq!(out.text, "key [REDACTED:aws-access-token] and [REDACTED:owner-1]");
}

#[test]
fn an_owner_pattern_wins_an_overlap_with_a_builtin_rule() {
    let c = PrivacyConfig {
        patterns: vec![OwnerPattern::Named {
            id: "aws-ours".into(),
            regex: "key AKIA[A-Z0-9]+".into(),
        }],
        allow: vec![],
    };
    let text = format!("the key {AWS_KEY}.");
    let out = Redactor::new(&c).expect("valid").redact(&text);
    assert_eq!(out.text, "the [REDACTED:aws-ours].");
    assert_eq!(out.counts.0.keys().collect::<Vec<_>>(), ["aws-ours"]);
}

#[test]
fn an_allowlisted_value_survives() {
    let text = format!("the test fixture key is {AWS_KEY}");
    assert_eq!(
        Redactor::builtin().redact(&text).text,
        "the test fixture key is [REDACTED:aws-access-token]"
    );
    let c = PrivacyConfig { patterns: vec![], allow: vec![format!("^{AWS_KEY}$")] };
    let out = Redactor::new(&c).expect("valid").redact(&text);
    assert_eq!(out.text, text);
    assert!(out.counts.is_empty());
    // The allowlist applies to the owner's patterns too.
    let c = PrivacyConfig {
        patterns: vec![OwnerPattern::Regex(r"ACME-\d+".into())],
        allow: vec!["^ACME-0+$".into()],
    };
    let out = Redactor::new(&c).expect("valid").redact("ACME-000 and ACME-123");
    assert_eq!(out.text, "ACME-000 and [REDACTED:owner-1]");
}

#[test]
fn the_allowlist_does_not_reach_private_spans() {
    let c = PrivacyConfig { patterns: vec![], allow: vec![".*".into()] };
    let out = Redactor::new(&c).expect("valid").redact("a <private>b</private> c");
    assert_eq!(out.text, "a  c");
}

#[test]
fn a_bad_entry_is_an_error_naming_it() {
    let bad = |patterns: Vec<OwnerPattern>, allow: Vec<&str>| {
        let config =
            PrivacyConfig { patterns, allow: allow.into_iter().map(str::to_owned).collect() };
        Redactor::new(&config).expect_err("invalid")
    };
    let ok = || OwnerPattern::Regex("ok".into());
    let err = bad(vec![ok(), ok(), OwnerPattern::Regex("(unclosed".into())], vec![]);
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
    assert_eq!(err.code().as_str(), "INVALID_CONFIG");
    assert!(!err.is_retryable());
    let message = err.to_string();
    assert!(message.starts_with("privacy.patterns[2]: invalid regex: "), "{message}");
    assert!(message.contains("unclosed group"), "{message}");

    let err = bad(vec![], vec!["fine", "[z-a]"]);
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
    assert!(err.to_string().starts_with("privacy.allow[1]: invalid regex: "), "{err}");

    let err = bad(vec![OwnerPattern::Regex("x*".into())], vec![]);
    assert!(err.to_string().starts_with("privacy.patterns[0]: "), "{err}");
    assert!(err.to_string().contains("matches the empty string"), "{err}");

    let named = |id: &str| OwnerPattern::Named { id: id.into(), regex: "x".into() };
    for (id, why) in [
        ("has space", "invalid id"),
        ("a]b", "invalid id"),
        ("", "invalid id"),
        ("jwt", "built-in rule's id"),
        ("private", "built-in rule's id"),
        ("pkcs12-file", "built-in rule's id"),
    ] {
        let err = bad(vec![named(id)], vec![]);
        assert!(err.to_string().starts_with("privacy.patterns[0]: "), "{err}");
        assert!(err.to_string().contains(why), "{id:?}: {err}");
    }
    let err = bad(vec![named("mine"), named("mine")], vec![]);
    assert!(err.to_string().starts_with("privacy.patterns[1]: "), "{err}");
    assert!(err.to_string().contains("used twice"), "{err}");
    // A bare pattern's id is taken by position.
    let err = bad(vec![named("owner-2"), OwnerPattern::Regex("y".into())], vec![]);
    assert!(err.to_string().contains("used twice"), "{err}");
}
