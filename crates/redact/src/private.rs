//! `<private>…</private>` spans (the claude-mem convention): removed, tags included.
//!
//! The tags are matched ASCII case-insensitively and exactly (`<private>`, `</private>`: no
//! attributes, no spaces). Tags nest: an opening tag inside a span opens a deeper level, and the
//! span ends at the closing tag that returns to level 0, so `<private>a <private>b</private> c
//! </private>` removes everything. An unclosed span runs to the end of the text. A closing tag
//! with no span open is kept as text (it hides nothing). Markdown is not parsed: a tag inside a
//! code fence or inline code removes its span like any other. A removal that joins the text
//! around it into a new tag (`<priv<private>…</private>ate>`) removes that one too.

use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

const OPEN: usize = 0;

fn tags() -> &'static AhoCorasick {
    static TAGS: OnceLock<AhoCorasick> = OnceLock::new();
    TAGS.get_or_init(|| {
        AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostFirst)
            .build(["<private>", "</private>"])
            .expect("two fixed patterns build")
    })
}

/// How many rounds of removal [`strip`] makes before it cuts at the first opening tag.
const MAX_ROUNDS: usize = 16;

/// `text` with its private spans removed, and how many spans there were; `None` when there is
/// none. Removing a span can join `<priv` and `ate>` into a new tag, so removal repeats until
/// no opening tag is left; after 16 rounds (only a constructed text needs them), everything
/// from the first opening tag on is removed. The removed texts go to `removed`.
pub(crate) fn strip(text: &str, mut removed: Option<&mut Vec<String>>) -> Option<(String, usize)> {
    let mut current: Option<String> = None;
    let mut count = 0;
    for _ in 0..MAX_ROUNDS {
        let now = current.as_deref().unwrap_or(text);
        let found = spans(now);
        if found.is_empty() {
            return current.map(|rest| (rest, count));
        }
        count += found.len();
        if let Some(removed) = removed.as_deref_mut() {
            removed.extend(found.iter().map(|s| now[s.clone()].to_owned()));
        }
        current = Some(remove(now, &found));
    }
    let mut rest = current.unwrap_or_else(|| text.to_owned());
    if let Some(first) = tags().find_iter(&rest).find(|m| m.pattern().as_usize() == OPEN) {
        count += 1;
        if let Some(removed) = removed {
            removed.push(rest[first.start()..].to_owned());
        }
        rest.truncate(first.start());
    }
    Some((rest, count))
}

/// The byte ranges of the private spans of `text`, tags included, in order.
pub(crate) fn spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for m in tags().find_iter(text) {
        if m.pattern().as_usize() == OPEN {
            if depth == 0 {
                start = m.start();
            }
            depth += 1;
        } else if depth > 0 {
            depth -= 1;
            if depth == 0 {
                spans.push(start..m.end());
            }
        }
    }
    if depth > 0 {
        spans.push(start..text.len());
    }
    spans
}

/// The text without the given spans (from [`spans`]), in order.
pub(crate) fn remove(text: &str, spans: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut kept_from = 0;
    for span in spans {
        out.push_str(&text[kept_from..span.start]);
        kept_from = span.end;
    }
    out.push_str(&text[kept_from..]);
    out
}

#[cfg(test)]
mod tests {
    use super::{remove, spans};

    fn check(input: &str, want: Option<(&str, usize)>) {
        let spans = spans(input);
        let got = (!spans.is_empty()).then(|| (remove(input, &spans), spans.len()));
        assert_eq!(got.as_ref().map(|(s, n)| (s.as_str(), *n)), want, "{input:?}");
    }

    #[test]
    fn joined_tags_are_removed_too_and_nesting_joins_end() {
        assert_eq!(
            super::strip("a <priv<private>x</private>ate>b", None),
            Some(("a ".to_owned(), 2))
        );
        // Each round joins one more tag: after 16 rounds, the rest goes from the first tag on.
        let depth = 40;
        let mut text = String::from("keep ");
        text.push_str(&"<priv".repeat(depth));
        text.push_str("<private>x</private>");
        for _ in 0..depth {
            text.push_str("ate>y</private>");
        }
        let (rest, _) = super::strip(&text, None).expect("spans");
        assert!(!rest.to_ascii_lowercase().contains("<private>"), "{rest:?}");
        assert!(rest.starts_with("keep "));
        assert_eq!(super::strip(&rest, None), None);
    }

    #[test]
    fn tags_and_spans() {
        check("no tags", None);
        check("a <private>b</private> c", Some(("a  c", 1)));
        check("a <PRIVATE>b</Private> c", Some(("a  c", 1)));
        check("a <private>b", Some(("a ", 1)));
        check("<private>x</private>y<private>z</private>", Some(("y", 2)));
        check("a <private>1 <private>2</private> 3</private> b", Some(("a  b", 1)));
        check("a </private> b", None);
        check("a </private> b <private>c</private>", Some(("a </private> b ", 1)));
        check("a <private>b</private> </private>", Some(("a  </private>", 1)));
        check("<private >not a tag</private>", None);
    }
}
