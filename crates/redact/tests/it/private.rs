//! `<private>` spans: removed with their tags before any secret rule runs.

use std::borrow::Cow;

use scriptorium_redact::Redactor;

/// A fake GitHub token (split so that no scanner reads a token in this file).
const TOKEN: &str = concat!("ghp_", "R7mXq2LpV9sKd4TnW8yZb3HcJ6fGa1EuQo5N");

fn check(input: &str, expected: &str, spans: usize) {
    let out = Redactor::builtin().redact(input);
    assert_eq!(out.text, expected, "{input:?}");
    assert_eq!(out.counts.0.get("private").copied().unwrap_or(0), spans, "{input:?}");
    assert_eq!(out.counts.total(), spans, "{input:?}: {:?}", out.counts);
}

#[test]
fn a_closed_span_is_removed_with_its_tags() {
    check(
        "My address is <private>12 Elm Street, Springfield</private>, ok?",
        "My address is , ok?",
        1,
    );
}

#[test]
fn an_unclosed_span_runs_to_the_end_of_the_message() {
    check("Deploy it. <private>The root password is hunter2\nand the PIN 4711", "Deploy it. ", 1);
}

#[test]
fn several_spans_are_each_removed_and_counted() {
    check("a<private>1</private>b<private>2</private>c<private>3</private>d", "abcd", 3);
}

#[test]
fn a_span_runs_over_lines() {
    check("Notes:\n<private>\nline one\nline two\n</private>\nDone.", "Notes:\n\nDone.", 1);
}

#[test]
fn nested_spans_end_at_the_outer_closing_tag() {
    check("a <private>x <private>y</private> z</private> b", "a  b", 1);
    // The inner closing tag does not end the span: nothing of it leaks.
    check("a <private>x <private>y</private> z", "a ", 1);
}

#[test]
fn tags_match_ascii_case_insensitively() {
    check("a <PRIVATE>x</Private> b <PrIvAtE>y</pRiVaTe> c", "a  b  c", 2);
}

#[test]
fn a_stray_closing_tag_is_kept() {
    check("nothing private here </private> at all", "nothing private here </private> at all", 0);
    check("a </private> b <private>c</private> d", "a </private> b  d", 1);
}

#[test]
fn tags_with_attributes_or_spaces_are_not_tags() {
    let text = "<private reason=\"x\">kept</private> and < private>kept</ private>";
    check(text, "<private reason=\"x\">kept</private> and < private>kept</ private>", 0);
}

#[test]
fn spans_inside_code_fences_are_removed_too() {
    // Markdown is not parsed: a tag is a tag wherever it is.
    check(
        "Run this:\n```sh\nexport DB=<private>prod-replica-7</private>\n```\nand `<private>inline</private>`",
        "Run this:\n```sh\nexport DB=\n```\nand ``",
        2,
    );
}

#[test]
fn secrets_inside_a_span_are_counted_as_the_span_only() {
    let text = format!("before <private>token {TOKEN}</private> after");
    check(&text, "before  after", 1);
}

#[test]
fn removing_a_span_that_joins_a_new_tag_removes_that_too() {
    // `<priv` + `ate>` meet once the span between them is gone: the result is redacted again.
    check("a <priv<private>x</private>ate>secret stuff", "a ", 2);
}

#[test]
fn nothing_to_redact_borrows_the_text() {
    let text = "An ordinary message, with </private> and a [REDACTED:jwt] marker in it.";
    let out = Redactor::builtin().redact(text);
    assert!(matches!(out.text, Cow::Borrowed(_)));
    assert!(out.counts.is_empty());
    assert!(matches!(Redactor::builtin().redact("").text, Cow::Borrowed("")));
}

#[test]
fn redacting_again_changes_nothing() {
    let with_token = format!("key {TOKEN} <private>p</private>");
    for text in [
        "a <private>b</private> c",
        "a <private>b",
        "x <priv<private>y</private>ate> z",
        &with_token,
    ] {
        let once = Redactor::builtin().redact(text);
        let twice = Redactor::builtin().redact(&once.text);
        assert_eq!(twice.text, once.text);
        assert!(matches!(twice.text, Cow::Borrowed(_)));
        assert!(twice.counts.is_empty(), "{text:?}: {:?}", twice.counts);
    }
}
