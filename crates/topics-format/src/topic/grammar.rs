//! The lexical grammar of topic files (see `docs/format.md#topic-files`), with the Python
//! regexes' exact match semantics.
//!
//! Line-level rules (definitions, headings, fences, HTML lines, block suffixes, citations) are
//! hand-written byte scanners: they run on every line of every file, and a regex per line would
//! dominate the parse. Links use `regex`, whose leftmost-first semantics give the same matches as
//! Python's backtracking engine for these patterns.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::text::is_py_space;

/// `[A-Za-z0-9_-]`: a footnote (evidence) ID character.
pub(crate) fn is_footnote_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `[A-Za-z0-9-]`: a block ID character.
pub(crate) fn is_block_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// Whether `s` is a whole `BLOCK_ID` (`[A-Za-z0-9-]+`).
pub fn is_block_id(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_block_char)
}

/// Whether `s` is a whole legacy `MEMORY_ID` (`mem_[A-Za-z0-9_-]+`).
pub fn is_memory_id(s: &str) -> bool {
    s.strip_prefix("mem_")
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(is_footnote_char))
}

/// Whether `s` is a whole `FOOTNOTE_ID` (`[A-Za-z0-9_-]+`).
pub fn is_footnote_id(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_footnote_char)
}

/// Whether `s` is a writer's local evidence label (`e\d+` or `new-evidence-[A-Za-z0-9-]+`),
/// which normalization replaces by a stable `e-` ID.
pub fn is_local_label(s: &str) -> bool {
    if let Some(digits) = s.strip_prefix('e')
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        return true;
    }
    s.strip_prefix("new-evidence-")
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(is_block_char))
}

/// Whether `value` is a valid evidence time: `YYYY`, `YYYY-MM` or `YYYY-MM-DD` naming a real
/// calendar date (month and day default to 1, year 1..=9999), or `undated`.
pub fn is_valid_temporal(value: &str) -> bool {
    value == "undated" || temporal_parts(value).is_some()
}

/// The (year, month, day) of a valid dated temporal value.
fn temporal_parts(value: &str) -> Option<(u32, u32, u32)> {
    let b = value.as_bytes();
    let digits = |r: Range<usize>| -> Option<u32> {
        let s = b.get(r)?;
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| s.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let (year, month, day) = match b.len() {
        4 => (digits(0..4)?, 1, 1),
        7 if b[4] == b'-' => (digits(0..4)?, digits(5..7)?, 1),
        10 if b[4] == b'-' && b[7] == b'-' => (digits(0..4)?, digits(5..7)?, digits(8..10)?),
        _ => return None,
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (year >= 1 && (1..=days).contains(&day)).then_some((year, month, day))
}

/// Whether `c` matches Python's `\d` (a Unicode decimal digit).
fn is_py_digit(c: char) -> bool {
    static DIGIT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^\d$").expect("static pattern compiles"));
    c.is_ascii_digit() || (!c.is_ascii() && DIGIT.is_match(c.encode_utf8(&mut [0; 4])))
}

/// Skips Python `\s*` from byte `i`.
fn skip_space(s: &str, mut i: usize) -> usize {
    while let Some(c) = s[i..].chars().next() {
        if !is_py_space(c) {
            break;
        }
        i += c.len_utf8();
    }
    i
}

/// Matches `\d{n}` at `i`; returns the end.
fn digits(s: &str, mut i: usize, n: usize) -> Option<usize> {
    for _ in 0..n {
        let c = s[i..].chars().next()?;
        if !is_py_digit(c) {
            return None;
        }
        i += c.len_utf8();
    }
    Some(i)
}

/// Matches `TEMPORAL|undated` at `i` greedily (the only parse the definition regexes can accept,
/// because what follows is never `-`); returns the end.
fn temporal_at(s: &str, i: usize) -> Option<usize> {
    if let Some(mut end) = digits(s, i, 4) {
        if s[end..].starts_with('-')
            && let Some(month) = digits(s, end + 1, 2)
        {
            end = month;
            if s[end..].starts_with('-')
                && let Some(day) = digits(s, end + 1, 2)
            {
                end = day;
            }
        }
        return Some(end);
    }
    s[i..].starts_with("undated").then_some(i + "undated".len())
}

/// A footnote definition line (canonical or legacy), as byte ranges of the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DefinitionMatch {
    /// The footnote ID (after `[^`).
    pub(crate) id: Range<usize>,
    /// The time value as written (without backticks): a temporal value or `undated`.
    pub(crate) when: Range<usize>,
    /// The `sources` group: everything after `Sources:` up to trailing whitespace.
    pub(crate) sources: Range<usize>,
    /// The `·` legacy form.
    pub(crate) legacy: bool,
}

/// Parses `^\[\^(ID)\]:\s*` and returns (id range, position after it).
fn definition_head(line: &str) -> Option<(Range<usize>, usize)> {
    let b = line.as_bytes();
    if !line.starts_with("[^") {
        return None;
    }
    let mut i = 2;
    while i < b.len() && is_footnote_char(b[i]) {
        i += 1;
    }
    if i == 2 || !line[i..].starts_with("]:") {
        return None;
    }
    Some((2..i, skip_space(line, i + 2)))
}

/// `\s*(?P<sources>.+?)\s*$` from `i`.
fn sources_tail(line: &str, i: usize) -> Option<Range<usize>> {
    let start = skip_space(line, i);
    let end = line.trim_end_matches(is_py_space).len();
    if end > start {
        return Some(start..end);
    }
    // Only whitespace remains: `.+?` backtracks into `\s*` and takes its last character.
    let last = line[i..].chars().next_back()?;
    Some(line.len() - last.len_utf8()..line.len())
}

/// `DEFINITION.match(line) or LEGACY_DEFINITION.match(line)`.
pub(crate) fn definition_match(line: &str) -> Option<DefinitionMatch> {
    let (id, after) = definition_head(line)?;
    canonical_definition(line, id.clone(), after).or_else(|| legacy_definition(line, id, after))
}

fn canonical_definition(line: &str, id: Range<usize>, i: usize) -> Option<DefinitionMatch> {
    let i = line[i..].starts_with("Time:").then_some(i + 5)?;
    let mut i = skip_space(line, i);
    let tick = line[i..].starts_with('`');
    if tick {
        i += 1;
    }
    let when_end = temporal_at(line, i)?;
    let when = i..when_end;
    let mut i = when_end;
    if tick {
        i = line[i..].starts_with('`').then_some(i + 1)?;
    }
    let i = skip_space(line, i);
    let i = line[i..].starts_with(';').then_some(i + 1)?;
    let i = skip_space(line, i);
    let i = line[i..].starts_with("Sources:").then_some(i + "Sources:".len())?;
    Some(DefinitionMatch { id, when, sources: sources_tail(line, i)?, legacy: false })
}

fn legacy_definition(line: &str, id: Range<usize>, i: usize) -> Option<DefinitionMatch> {
    let when_end = temporal_at(line, i)?;
    let when = i..when_end;
    let i = skip_space(line, when_end);
    let i = line[i..].starts_with('·').then_some(i + '·'.len_utf8())?;
    let i = skip_space(line, i);
    let i = line[i..].starts_with("Sources:").then_some(i + "Sources:".len())?;
    Some(DefinitionMatch { id, when, sources: sources_tail(line, i)?, legacy: true })
}

/// `line.lstrip().startswith("```")`.
pub(crate) fn is_fence(line: &str) -> bool {
    line.trim_start_matches(is_py_space).starts_with("```")
}

/// `re.match(r"\s*(?:<!--|<a\s)", line)`.
pub(crate) fn is_html(line: &str) -> bool {
    let rest = line.trim_start_matches(is_py_space);
    rest.starts_with("<!--")
        || rest.strip_prefix("<a").and_then(|r| r.chars().next()).is_some_and(is_py_space)
}

/// `^(#{1,6})\s+(.+?)\s*$`: the level and the text range of a heading line.
pub(crate) fn heading_match(line: &str) -> Option<(u8, Range<usize>)> {
    let b = line.as_bytes();
    let hashes = b.iter().take_while(|&&c| c == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let ws_end = skip_space(line, hashes);
    if ws_end == hashes {
        return None;
    }
    let end = line.trim_end_matches(is_py_space).len();
    if end > ws_end {
        return Some((u8::try_from(hashes).unwrap_or(6), ws_end..end));
    }
    // Only whitespace after the hashes: `\s+` gives back its last character to `.+?`, which
    // needs at least two whitespace characters.
    let last = line[hashes..].chars().next_back()?;
    let start = line.len() - last.len_utf8();
    (start > hashes).then_some((u8::try_from(hashes).unwrap_or(6), start..line.len()))
}

/// `not line.strip()`.
pub(crate) fn is_blank(line: &str) -> bool {
    line.chars().all(is_py_space)
}

/// The trailing block-ID suffix of `text` (`BLOCK_SUFFIX.search`): the start of the suffix and
/// the byte range of every ID in it, in order.
pub(crate) fn block_suffix(text: &str) -> Option<(usize, Vec<Range<usize>>)> {
    let b = text.as_bytes();
    let mut end = text.trim_end_matches(is_py_space).len();
    let mut ids = Vec::new();
    let mut suffix_start = None;
    loop {
        let mut i = end;
        while i > 0 && is_block_char(b[i - 1]) {
            i -= 1;
        }
        if i == end || i == 0 || b[i - 1] != b'^' {
            break;
        }
        let caret = i - 1;
        let ws_start = text[..caret].trim_end_matches(is_py_space).len();
        if ws_start == caret {
            break;
        }
        ids.push(i..end);
        suffix_start = Some(ws_start);
        end = ws_start;
    }
    ids.reverse();
    suffix_start.map(|start| (start, ids))
}

/// `ANY_BLOCK_SUFFIX.search(text)` (`\s+\^(\S+)\s*$`): the range of the token after `^`.
pub(crate) fn any_suffix(text: &str) -> Option<Range<usize>> {
    let end = text.trim_end_matches(is_py_space).len();
    let token_start = text[..end]
        .rfind(is_py_space)
        .map(|i| i + text[i..].chars().next().map_or(1, char::len_utf8))?;
    let token = &text[token_start..end];
    (token.len() > 1 && token.starts_with('^')).then(|| token_start + 1..end)
}

/// `\s\^[A-Za-z0-9-]+\s*$` searched in one line: the line already ends with a block ID.
pub(crate) fn line_has_block_id(line: &str) -> bool {
    let b = line.as_bytes();
    let end = line.trim_end_matches(is_py_space).len();
    let mut i = end;
    while i > 0 && is_block_char(b[i - 1]) {
        i -= 1;
    }
    i < end
        && i >= 1
        && b[i - 1] == b'^'
        && line[..i - 1].chars().next_back().is_some_and(is_py_space)
}

/// One `(?:\[\^ID\])+` citation group: its range and the ranges of its IDs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CitationGroup {
    /// The whole group.
    pub(crate) range: Range<usize>,
    /// Each cited ID.
    pub(crate) ids: Vec<Range<usize>>,
}

/// Matches one `\[\^(ID)\]` at `i`; returns the ID range.
pub(crate) fn citation_at(s: &str, i: usize) -> Option<Range<usize>> {
    let b = s.as_bytes();
    if b.get(i) != Some(&b'[') || b.get(i + 1) != Some(&b'^') {
        return None;
    }
    let mut j = i + 2;
    while j < b.len() && is_footnote_char(b[j]) {
        j += 1;
    }
    (j > i + 2 && b.get(j) == Some(&b']')).then_some(i + 2..j)
}

/// Every single citation `[^ID]` in `s`, left to right (`SINGLE_CITATION.finditer`).
pub(crate) fn citations(s: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = s[from..].find("[^") {
        let i = from + pos;
        match citation_at(s, i) {
            Some(id) => {
                from = id.end + 1;
                out.push(id);
            }
            None => from = i + 1,
        }
    }
    out
}

/// Every citation group in `s`, left to right (`CITATION_GROUP.finditer`).
pub(crate) fn citation_groups(s: &str) -> Vec<CitationGroup> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = s[from..].find("[^") {
        let start = from + pos;
        let mut ids = Vec::new();
        let mut i = start;
        while let Some(id) = citation_at(s, i) {
            i = id.end + 1;
            ids.push(id);
        }
        if ids.is_empty() {
            from = start + 1;
        } else {
            out.push(CitationGroup { range: start..i, ids });
            from = i;
        }
    }
    out
}

/// One `\[([^]]+)\]\(([^)]+)\)` match: a Markdown link with its label and target groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LinkMatch {
    /// The whole link.
    pub(crate) whole: Range<usize>,
    /// The label (between the brackets).
    pub(crate) label: Range<usize>,
    /// The target (between the parentheses).
    pub(crate) target: Range<usize>,
}

/// Every `\[([^]]+)\]\(([^)]+)\)` match in `s`, left to right (`LINK.findall`).
///
/// Hand-written because it runs on every definition: the label ends at the first `]` after the
/// `[` and the target at the first `)` after the `(`, so a match at `[` is unique, and the next
/// `]`/`)` positions are remembered so that a run of unclosed brackets stays linear.
pub(crate) fn links(s: &str) -> Vec<LinkMatch> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let next = |byte: u8, from: usize, memo: &mut Option<usize>| -> Option<usize> {
        if memo.is_none_or(|m| m < from) {
            *memo = b
                .get(from..)
                .and_then(|rest| rest.iter().position(|&c| c == byte))
                .map(|p| from + p);
            if memo.is_none() {
                *memo = Some(usize::MAX);
            }
        }
        memo.filter(|&m| m != usize::MAX)
    };
    let (mut rb, mut rp) = (None, None);
    let mut i = 0;
    while let Some(p) = b.get(i..).and_then(|rest| rest.iter().position(|&c| c == b'[')) {
        let open = i + p;
        i = open + 1;
        let Some(close) = next(b']', open + 1, &mut rb) else { break };
        if close == open + 1 || b.get(close + 1) != Some(&b'(') {
            continue;
        }
        let Some(end) = next(b')', close + 2, &mut rp) else { continue };
        if end == close + 2 {
            continue;
        }
        out.push(LinkMatch {
            whole: open..end + 1,
            label: open + 1..close,
            target: close + 2..end,
        });
        i = end + 1;
    }
    out
}

/// `BLOCK_LINK`: a link whose fragment is `#^<MEMORY_ID|BLOCK_ID>`; group 1 is the target ID.
pub(crate) static BLOCK_LINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[[^\]]+\]\([^)#]*#\^(mem_[A-Za-z0-9_-]+|[A-Za-z0-9-]+)\)")
        .expect("static pattern compiles")
});

/// Every block-link target ID in `s`, in order.
pub(crate) fn block_link_targets(s: &str) -> Vec<String> {
    if !s.contains("#^") {
        return Vec::new();
    }
    BLOCK_LINK.captures_iter(s).filter_map(|c| c.get(1)).map(|m| m.as_str().to_owned()).collect()
}

/// `re.split(r"\s*(?:,|·)\s*", value)` with each piece stripped and empty pieces dropped.
pub(crate) fn split_bare_sources(value: &str) -> Vec<&str> {
    value.split([',', '·']).map(super::text::py_strip).filter(|piece| !piece.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporal_values() {
        for ok in ["2024", "2024-02", "2024-02-29", "0001-01-01", "undated"] {
            assert!(is_valid_temporal(ok), "{ok}");
        }
        for bad in ["0000", "2023-02-29", "2024-13", "2024-00", "2024-04-31", "24", "2024-1", ""] {
            assert!(!is_valid_temporal(bad), "{bad}");
        }
    }

    #[test]
    fn definitions() {
        let line = "[^e1]: Time: `2024-03-15`; Sources: [a](b)  ";
        let m = definition_match(line).expect("canonical");
        assert_eq!(&line[m.id], "e1");
        assert_eq!(&line[m.when], "2024-03-15");
        assert_eq!(&line[m.sources], "[a](b)");
        let legacy = "[^mem_1]: 2024 · Sources: x";
        assert!(definition_match(legacy).expect("legacy").legacy);
        assert!(definition_match("[^e1]: Time: `2024; Sources: x").is_none());
        assert!(definition_match("[^e1]: Time: 2024-03-15x; Sources: x").is_none());
        assert!(definition_match("[^e1]: Time: 2024; Sources:").is_none());
        let ws = "[^e1]: Time: 2024; Sources:  ";
        assert_eq!(&ws[definition_match(ws).expect("ws").sources], " ");
    }

    #[test]
    fn headings() {
        assert_eq!(heading_match("## Status  "), Some((2, 3..9)));
        assert_eq!(heading_match("####### x"), None);
        assert_eq!(heading_match("#x"), None);
        assert_eq!(heading_match("# "), None);
        assert_eq!(heading_match("#  "), Some((1, 2..3)));
    }

    #[test]
    fn suffixes() {
        let text = "Merged.[^e-1] ^abc12345 ^def45678";
        let (start, ids) = block_suffix(text).expect("suffix");
        assert_eq!(&text[..start], "Merged.[^e-1]");
        assert_eq!(
            ids.iter().map(|r| &text[r.clone()]).collect::<Vec<_>>(),
            ["abc12345", "def45678"]
        );
        assert_eq!(block_suffix("x ^a^b"), None);
        assert_eq!(any_suffix("x ^a^b").map(|r| &"x ^a^b"[r]), Some("a^b"));
        assert_eq!(any_suffix("x^a"), None);
        assert!(line_has_block_id("a ^x1 "));
        assert!(!line_has_block_id("a^x1"));
    }

    #[test]
    fn link_scanning_matches_the_regex() {
        let re = Regex::new(r"\[([^\]]+)\]\(([^)]+)\)").expect("pattern");
        for s in [
            "[a](b), [c](d)",
            "[[a](b)",
            "[a]](b)",
            "[](x) [y]()[z](w)",
            "[a\nb](c\n)",
            "[[[[",
            "[a](b",
            "x [l](t#u) y",
        ] {
            let ours: Vec<(&str, &str)> =
                links(s).iter().map(|m| (&s[m.label.clone()], &s[m.target.clone()])).collect();
            let theirs: Vec<(&str, &str)> = re
                .captures_iter(s)
                .map(|c| (c.get(1).map_or("", |m| m.as_str()), c.get(2).map_or("", |m| m.as_str())))
                .collect();
            assert_eq!(ours, theirs, "{s:?}");
        }
    }

    #[test]
    fn citation_scanning() {
        let s = "a[^x][^y] b [^[^z] [^";
        let groups = citation_groups(s);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].ids.len(), 2);
        assert_eq!(citations(s).len(), 3);
    }
}
