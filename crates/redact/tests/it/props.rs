//! Properties over arbitrary text: redaction is idempotent, and a planted secret inserted
//! anywhere never survives.

use proptest::prelude::*;
use scriptorium_redact::Redactor;

use crate::fake::planted;

/// Pieces that exercise the rules' edges: tags, markers, keywords, assignments, prefixes.
const PIECES: &[&str] = &[
    "<private>",
    "</private>",
    "<PRIVATE>",
    "<priv",
    "ate>",
    "[REDACTED:jwt]",
    "[REDACTED:",
    "]",
    "password = ",
    "api_key: \"",
    "SECRET_TOKEN=",
    "token",
    "://",
    "postgres://u:",
    "@host/db",
    "curl -H \"Authorization: Bearer ",
    "\"",
    "'",
    "`",
    ";",
    "=",
    "\n",
    " ",
    "eyJ",
    ".eyJ",
    "sk-ant-api03-",
    "ghp_",
    "AKIA",
    "xoxb-",
    "hooks.slack.com/services/",
    "Server=db;Password=",
    "ünïcödé ",
    "日本語",
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(PIECES).prop_map(str::to_owned),
        2 => "[A-Za-z0-9+/=_-]{8,48}",
        1 => any::<String>(),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..24).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn redacting_twice_is_redacting_once(x in text()) {
        let redactor = Redactor::builtin();
        let once = redactor.redact(&x);
        let twice = redactor.redact(&once.text);
        prop_assert_eq!(&twice.text, &once.text);
        prop_assert!(twice.counts.is_empty(), "{:?}", twice.counts);
        // Deterministic.
        prop_assert_eq!(redactor.redact(&x), once);
    }

    #[test]
    fn a_planted_secret_never_survives(x in text(), which in any::<prop::sample::Index>(), at in any::<prop::sample::Index>()) {
        let cases = planted();
        let case = &cases[which.index(cases.len())];
        let boundaries: Vec<usize> =
            (0..=x.len()).filter(|&i| x.is_char_boundary(i)).collect();
        let i = boundaries[at.index(boundaries.len())];
        let text = format!("{}\n{}\n{}", &x[..i], case.text, &x[i..]);
        let out = Redactor::builtin().redact(&text);
        for (rule, value) in &case.secrets {
            prop_assert!(!out.text.contains(value.as_str()), "{} ({rule}) survived in {:?}", case.name, out.text);
        }
    }
}
