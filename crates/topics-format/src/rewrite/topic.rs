//! Rewriting the text of a topic file (see `docs/format.md#rewriting-texts-in-place-redact`).
//!
//! The file is read once as a [`Document`]; each paragraph, heading, definition, HTML line,
//! fence line and run of fenced lines is one piece, mapped on its own, and every other byte
//! (blank lines, line breaks, what is not text) is copied.
//!
//! A paragraph is mapped as one text so that a `<private>` span may run across its citations,
//! with each *token* (a citation group, or a link whose target is internal: no URL scheme, or a
//! `#^` block fragment) replaced by a sentinel: a space, one character of the Supplementary
//! Private Use Area-A numbering the token, a space. The spaces make a token a word boundary to
//! the mapper, as it is to a reader. Afterwards each sentinel found is its token again; a
//! citation whose sentinel was removed (a `<private>` span covered it) is put back after what
//! is left of the text before it, an internal link whose sentinel was removed goes. The result
//! must read as the same paragraph: prose lines only, the same block suffix and citations, the
//! internal links that were kept, and non-blank text before each citation group. When it does
//! not, each piece of text between tokens that the mapper changed becomes [`REDACTED`] and every
//! token stays, which always reads as the same paragraph.
//!
//! Architecture Invariant: no token is ever passed to the mapper or rebuilt from what it
//! returned; a token in the output is a copy of the token in the input.

use std::collections::HashMap;
use std::ops::Range;

use super::{Map, REDACTED, map_label, redacted_keeping_space};
use crate::python::is_space;
use crate::topic::{
    Document, LineKind, any_suffix, block_link_targets, block_suffix, citation_groups,
    definition_match, links,
};

/// The first sentinel: U+F0000, the start of the Supplementary Private Use Area-A.
const SENTINEL_BASE: u32 = 0xF_0000;
/// How many sentinels there are (U+F0000..=U+FFFFD).
const SENTINELS: usize = 0xFFFE;

/// The topic file `text` (a `topics/**.md` file, or the root `core.md` view) with its text
/// mapped by `map`; `None` when nothing changes.
///
/// - A paragraph: its text, as one piece, without its block suffix (` ^id…`), its citations
///   (`[^id]`) and its internal links (`[label](target)` whose target has no URL scheme or
///   names a block with `#^`), which stay byte for byte; a link to a URL is text. A citation
///   whose text was removed whole is kept after [`REDACTED`].
/// - A heading: its text (the level stays).
/// - A footnote definition: the label of each source link, on its own (ID, time and targets
///   stay); see [`REDACTED_LABEL`](super::REDACTED_LABEL).
/// - An HTML line and a fence line: the line. Fenced lines: each run as one piece.
///
/// The result has the same lines but for those inside a paragraph or a fenced block, the same
/// paragraphs with the same block IDs and citations in the same order, the same footnote
/// definitions with the same targets, the same headings at the same levels and the same
/// fences; internal links are kept unless the mapper removed the text around them. Front
/// matter is prose to the grammar, so it is a paragraph's text.
pub fn rewrite_topic(text: &str, map: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    rewrite(text, Map(map))
}

pub(super) fn rewrite(text: &str, map: Map<'_>) -> Option<String> {
    let doc = Document::parse(text);
    let lines = doc.lines();
    let paragraphs: HashMap<usize, usize> =
        doc.paragraphs().iter().map(|p| (p.lines.start, p.lines.end)).collect();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        let content = &text[line.content.clone()];
        let (last, new) = if let Some(&end) = paragraphs.get(&i) {
            let span = line.content.start..lines[end - 1].content.end;
            (end - 1, paragraph(&text[span], map))
        } else {
            match &line.kind {
                LineKind::Heading { level, text: range } => {
                    let at = range.start - line.content.start..range.end - line.content.start;
                    (i, heading(content, at, *level, map))
                }
                LineKind::Definition { .. } => (i, definition(content, map)),
                LineKind::Html => (i, single_line(content, &LineKind::Html, map)),
                LineKind::Fence => (i, single_line(content, &LineKind::Fence, map)),
                LineKind::Fenced => {
                    let end = (i..lines.len())
                        .find(|&k| lines[k].kind != LineKind::Fenced)
                        .unwrap_or(lines.len());
                    let span = line.content.start..lines[end - 1].content.end;
                    (end - 1, fenced(&text[span], map))
                }
                LineKind::Blank | LineKind::Paragraph => (i, None),
            }
        };
        if let Some(new) = new {
            out.push_str(&text[copied..line.content.start]);
            out.push_str(&new);
            copied = lines[last].content.end;
            changed = true;
        }
        i = last + 1;
    }
    if !changed {
        return None;
    }
    out.push_str(&text[copied..]);
    (out != text).then_some(out)
}

/// What one line reads as on its own (outside any fence); `None` when it is not one line.
fn kind_alone(line: &str) -> Option<LineKind> {
    match Document::parse(line).lines() {
        [one] if one.terminator.is_empty() => Some(one.kind.clone()),
        _ => None,
    }
}

/// A heading line with its text (`at`, a range of `line`) mapped; a heading of the same level
/// holding [`REDACTED`] when the mapped text would not keep it one.
fn heading(line: &str, at: Range<usize>, level: u8, map: Map<'_>) -> Option<String> {
    let mapped = map.apply(&line[at.clone()])?;
    let rebuilt = |text: &str| format!("{}{text}{}", &line[..at.start], &line[at.end..]);
    let new = rebuilt(&mapped);
    let same = matches!(kind_alone(&new), Some(LineKind::Heading { level: l, .. }) if l == level);
    Some(if same { new } else { rebuilt(REDACTED) })
}

/// An HTML or fence line mapped whole; when it would no longer be one line of that kind, the
/// line's indentation and `<!-- [REDACTED] -->` (HTML) or the bare fence.
fn single_line(line: &str, kind: &LineKind, map: Map<'_>) -> Option<String> {
    let mapped = map.apply(line)?;
    if kind_alone(&mapped).as_ref() == Some(kind) {
        return Some(mapped);
    }
    let indent = &line[..line.len() - line.trim_start_matches(is_space).len()];
    Some(match kind {
        LineKind::Fence => format!("{indent}```"),
        _ => format!("{indent}<!-- {REDACTED} -->"),
    })
}

/// A run of fenced lines mapped as one text; when a line of it would become a fence, each line
/// is mapped on its own instead, and a line that would still be one (or would break) becomes
/// [`REDACTED`].
fn fenced(block: &str, map: Map<'_>) -> Option<String> {
    let mapped = map.apply(block)?;
    if Document::parse(&mapped).lines().iter().all(|l| l.kind != LineKind::Fence) {
        return Some(mapped);
    }
    let doc = Document::parse(block);
    let mut out = String::with_capacity(block.len());
    for line in doc.lines() {
        let content = &block[line.content.clone()];
        match map.apply(content) {
            Some(new)
                if new.is_empty() || kind_alone(&new).is_some_and(|k| k != LineKind::Fence) =>
            {
                out.push_str(&new);
            }
            Some(_) => out.push_str(REDACTED),
            None => out.push_str(content),
        }
        out.push_str(&block[line.terminator.clone()]);
    }
    Some(out)
}

/// A footnote definition with its `Sources:` text mapped: the label of each link, and the text
/// between links, each piece on its own; the ID, the time and every link target stay (a legacy
/// list of bare values is all targets). A piece between links that would make or unmake a link
/// becomes [`REDACTED`].
fn definition(line: &str, map: Map<'_>) -> Option<String> {
    let m = definition_match(line)?;
    let sources = &line[m.sources.clone()];
    let found = links(sources);
    if found.is_empty() {
        return None;
    }
    let targets =
        |s: &str| links(s).into_iter().map(|l| s[l.target].to_owned()).collect::<Vec<_>>();
    let rebuild = |gap_text: &dyn Fn(&str) -> Option<String>| {
        let mut out = String::with_capacity(sources.len());
        let mut changed = false;
        let mut push = |out: &mut String, old: &str, new: Option<String>| match new {
            Some(new) => {
                out.push_str(&new);
                changed = true;
            }
            None => out.push_str(old),
        };
        let mut at = 0;
        for link in &found {
            let gap = &sources[at..link.whole.start];
            push(&mut out, gap, gap_text(gap));
            let label = &sources[link.label.clone()];
            out.push_str(&sources[link.whole.start..link.label.start]);
            push(&mut out, label, map_label(label, map));
            out.push_str(&sources[link.label.end..link.whole.end]);
            at = link.whole.end;
        }
        let gap = &sources[at..];
        push(&mut out, gap, gap_text(gap));
        changed.then_some(out)
    };
    let mut new = rebuild(&|gap| map.apply(gap))?;
    if targets(&new) != targets(sources) {
        new = rebuild(&|gap| map.apply(gap).map(|_| redacted_keeping_space(gap)))?;
    }
    Some(format!("{}{new}{}", &line[..m.sources.start], &line[m.sources.end..]))
}

/// One token of a paragraph's body: a citation group or an internal link (overlapping ones
/// merged), kept byte for byte.
struct Token {
    range: Range<usize>,
    /// Whether it holds a citation (and so must stay).
    cites: bool,
}

/// Whether a link target is internal: it names a block (`#^`) or has no URL scheme.
fn is_internal(target: &str) -> bool {
    let target = target.trim_matches(is_space);
    if target.contains("#^") {
        return true;
    }
    let scheme = target.find(':').map(|colon| &target[..colon]);
    !scheme.is_some_and(|s| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
    })
}

fn tokens(body: &str) -> Vec<Token> {
    let mut found: Vec<Token> = citation_groups(body)
        .into_iter()
        .map(|group| Token { range: group.range, cites: true })
        .collect();
    found.extend(
        links(body)
            .into_iter()
            .filter(|link| is_internal(&body[link.target.clone()]))
            .map(|link| Token { range: link.whole, cites: false }),
    );
    found.sort_by_key(|t| t.range.start);
    let mut merged: Vec<Token> = Vec::with_capacity(found.len());
    for token in found {
        match merged.last_mut() {
            Some(last) if token.range.start < last.range.end => {
                last.range.end = last.range.end.max(token.range.end);
                last.cites |= token.cites;
            }
            _ => merged.push(token),
        }
    }
    merged
}

/// Where a paragraph's body ends: at the whitespace before its block suffix (or before an
/// invalid ` ^token` at its end), else at its end.
fn body_end(par: &str) -> usize {
    if let Some((start, _)) = block_suffix(par) {
        return start;
    }
    match any_suffix(par) {
        Some(token) => par[..token.start - 1].trim_end_matches(is_space).len(),
        None => par.len(),
    }
}

/// What must be the same in a paragraph before and after: its block suffix and its citation
/// groups (a legacy paragraph's units depend on how its citations are grouped).
fn skeleton(par: &str) -> (Vec<&str>, Option<&str>, Vec<Vec<&str>>) {
    let ids = block_suffix(par).map(|(_, ids)| ids.into_iter().map(|r| &par[r]).collect());
    let invalid = any_suffix(par).map(|r| &par[r]);
    let groups = citation_groups(par)
        .into_iter()
        .map(|g| g.ids.into_iter().map(|r| &par[r]).collect())
        .collect();
    (ids.unwrap_or_default(), invalid, groups)
}

/// The internal link targets and block-link targets of `text`, in order.
fn internal_links(text: &str) -> (Vec<String>, Vec<String>) {
    let targets = links(text)
        .into_iter()
        .map(|l| text[l.target].to_owned())
        .filter(|t| is_internal(t))
        .collect();
    (targets, block_link_targets(text))
}

/// Whether the text after the last citation group of `body` is blank (or there is none).
fn ends_with_evidence(body: &str) -> bool {
    let from = citation_groups(body).last().map_or(body.len(), |g| g.range.end);
    body[from..].chars().all(is_space)
}

/// A paragraph (its text from the first line's start to the last line's end) with its text
/// mapped; `None` when the mapper changes nothing.
fn paragraph(par: &str, map: Map<'_>) -> Option<String> {
    let end = body_end(par);
    let (body, suffix) = par.split_at(end);
    let tokens = tokens(body);
    let mut gaps = Vec::with_capacity(tokens.len() + 1);
    let mut at = 0;
    for token in &tokens {
        gaps.push(at..token.range.start);
        at = token.range.end;
    }
    gaps.push(at..body.len());

    let maskable =
        tokens.len() <= SENTINELS && !body.chars().any(|c| sentinel_index(c, SENTINELS).is_some());
    if !maskable {
        // Only a paragraph holding such characters: each piece of text on its own.
        let changed: Vec<bool> =
            gaps.iter().map(|g| map.apply(&body[g.clone()]).is_some()).collect();
        return changed.contains(&true).then(|| redacted(body, suffix, &tokens, &gaps, &changed));
    }
    let mut masked = String::with_capacity(body.len() + 6 * tokens.len());
    for (k, gap) in gaps.iter().enumerate() {
        masked.push_str(&body[gap.clone()]);
        if k < tokens.len() {
            masked.push(' ');
            masked.push(sentinel(k));
            masked.push(' ');
        }
    }
    let mapped = map.apply(&masked)?;
    let Some(split) = Unmasked::split(&mapped, tokens.len()) else {
        // The mapper duplicated or reordered a sentinel: nothing of its answer can be placed.
        return Some(redacted(body, suffix, &tokens, &gaps, &vec![true; gaps.len()]));
    };
    if let Some(new) = split.rebuild(par, body, suffix, &tokens) {
        return (new != par).then_some(new);
    }
    let changed = split.changed(body, &gaps);
    Some(redacted(body, suffix, &tokens, &gaps, &changed))
}

fn sentinel(k: usize) -> char {
    let code = SENTINEL_BASE + u32::try_from(k).expect("at most SENTINELS tokens are masked");
    char::from_u32(code).expect("U+F0000..=U+FFFFD are characters")
}

/// The token a character stands for, when it is one of the first `n` sentinels.
fn sentinel_index(c: char, n: usize) -> Option<usize> {
    let k = usize::try_from(u32::from(c).checked_sub(SENTINEL_BASE)?).ok()?;
    (k < n).then_some(k)
}

/// The mapper's answer cut at the sentinels it kept.
struct Unmasked {
    /// Each sentinel found, in order, with the text between it and the sentinel before (the
    /// spaces of both sentinels taken off).
    found: Vec<(usize, String)>,
    /// The text after the last sentinel.
    rest: String,
}

impl Unmasked {
    /// `None` when a sentinel appears twice or out of order.
    fn split(mapped: &str, n: usize) -> Option<Unmasked> {
        let mut found: Vec<(usize, String)> = Vec::new();
        let mut text = String::new();
        let mut after_sentinel = false;
        for c in mapped.chars() {
            if let Some(k) = sentinel_index(c, n) {
                if found.last().is_some_and(|(last, _)| *last >= k) {
                    return None;
                }
                if text.ends_with(' ') {
                    text.pop();
                }
                found.push((k, std::mem::take(&mut text)));
                after_sentinel = true;
                continue;
            }
            if std::mem::take(&mut after_sentinel) && c == ' ' {
                continue;
            }
            text.push(c);
        }
        Some(Unmasked { found, rest: text })
    }

    /// Which pieces of text between tokens the mapper changed: all but those it left exactly
    /// as they were, between their two sentinels (or the start, or the end) found next to each
    /// other.
    fn changed(&self, body: &str, gaps: &[Range<usize>]) -> Vec<bool> {
        let n = gaps.len() - 1;
        // What the mapper left between token `i - 1` and token `i`.
        let between = |i: usize| -> Option<&str> {
            // Where in `found` the text after sentinel `i - 1` is.
            let after = match i {
                0 => 0,
                _ => self.found.iter().position(|(k, _)| *k == i - 1)? + 1,
            };
            if i == n {
                return (after == self.found.len()).then_some(self.rest.as_str());
            }
            self.found.get(after).filter(|(k, _)| *k == i).map(|(_, text)| text.as_str())
        };
        (0..=n).map(|i| between(i) != Some(&body[gaps[i].clone()])).collect()
    }

    /// The paragraph with the mapped text and every token that stays; `None` when it would not
    /// read as the same paragraph.
    fn rebuild(&self, par: &str, body: &str, suffix: &str, tokens: &[Token]) -> Option<String> {
        let mut out = String::with_capacity(par.len());
        let mut kept = vec![false; tokens.len()];
        // Where the last token put back ends in `out`, and which it was.
        let mut mark = 0;
        let mut last: Option<usize> = None;
        let mut emit = |out: &mut String, k: usize| {
            let token = &tokens[k];
            let apart = last.is_some_and(|j| tokens[j].range.end < token.range.start);
            if token.cites && out.len() == mark && apart {
                // All the text between it and the token before went: a space keeps two citation
                // groups from becoming one (the blank quote then gets its placeholder).
                out.push(' ');
            }
            if token.cites && !body[..token.range.start].ends_with([' ', '\t']) {
                // Normalization writes no space before a citation; only a quote that keeps text
                // loses it (a blank one keeps the space that holds the groups apart).
                let trimmed = out.trim_end_matches([' ', '\t']).len();
                if !out[mark..trimmed].chars().all(is_space) {
                    out.truncate(trimmed);
                }
            }
            out.push_str(&body[token.range.clone()]);
            mark = out.len();
            last = Some(k);
            kept[k] = true;
        };
        let mut next = 0;
        for (k, text) in &self.found {
            out.push_str(text);
            // The citations whose sentinels went come back after what is left before this one.
            for j in (next..*k).filter(|&j| tokens[j].cites) {
                emit(&mut out, j);
            }
            emit(&mut out, *k);
            next = k + 1;
        }
        out.push_str(&self.rest);
        for j in (next..tokens.len()).filter(|&j| tokens[j].cites) {
            emit(&mut out, j);
        }
        let out = fill_empty_quotes(&out, body);
        let new = drop_blank_lines(&format!("{out}{suffix}"), par);

        let kept_text: String = tokens
            .iter()
            .zip(&kept)
            .filter(|(_, kept)| **kept)
            .map(|(t, _)| format!("{} ", &body[t.range.clone()]))
            .collect();
        let lines = Document::parse(&new);
        let prose = !lines.lines().is_empty()
            && lines.lines().iter().all(|l| l.kind == LineKind::Paragraph);
        let new_body = &new[..body_end(&new)];
        let same = prose
            && skeleton(&new) == skeleton(par)
            && internal_links(new_body) == internal_links(&kept_text)
            && (!ends_with_evidence(body) || ends_with_evidence(new_body));
        same.then_some(new)
    }
}

/// `body` with [`REDACTED`] before every citation group that has only whitespace before it
/// (since the group before, or the start) where the same group in `original` had text: the
/// strict parse needs text there.
fn fill_empty_quotes(body: &str, original: &str) -> String {
    let had_text: Vec<bool> = {
        let mut previous = 0;
        citation_groups(original)
            .into_iter()
            .map(|g| {
                let quote = &original[previous..g.range.start];
                previous = g.range.end;
                !quote.chars().all(is_space)
            })
            .collect()
    };
    let mut out = String::with_capacity(body.len() + REDACTED.len());
    let mut copied = 0;
    let mut previous = 0;
    for (k, group) in citation_groups(body).into_iter().enumerate() {
        let blank = body[previous..group.range.start].chars().all(is_space);
        if blank && had_text.get(k).copied().unwrap_or(true) {
            out.push_str(&body[copied..group.range.start]);
            out.push_str(REDACTED);
            copied = group.range.start;
        }
        previous = group.range.end;
    }
    out.push_str(&body[copied..]);
    out
}

/// `par` without the whitespace-only lines the mapper left (a paragraph holds none) and
/// without a final line break (the file's own follows it), and without leading or trailing
/// whitespace that `original` did not have.
fn drop_blank_lines(par: &str, original: &str) -> String {
    let doc = Document::parse(par);
    let kept: Vec<_> = doc.lines().iter().filter(|l| l.kind != LineKind::Blank).collect();
    let mut out = String::with_capacity(par.len());
    for (n, line) in kept.iter().enumerate() {
        out.push_str(&par[line.content.clone()]);
        if n + 1 < kept.len() {
            out.push_str(&par[line.terminator.clone()]);
        }
    }
    if !original.ends_with(is_space) {
        let end = out.trim_end_matches(is_space).len();
        out.truncate(end);
    }
    if !original.starts_with(is_space) {
        let start = out.len() - out.trim_start_matches(is_space).len();
        out.drain(..start);
    }
    out
}

/// The paragraph with every token and every unchanged piece of text as it was, and each
/// changed piece [`REDACTED`] (its surrounding whitespace kept): always the same paragraph,
/// since every line still starts as it did or with `[`.
fn redacted(
    body: &str,
    suffix: &str,
    tokens: &[Token],
    gaps: &[Range<usize>],
    changed: &[bool],
) -> String {
    let mut out = String::with_capacity(body.len() + suffix.len());
    for (k, gap) in gaps.iter().enumerate() {
        let text = &body[gap.clone()];
        if changed[k] {
            out.push_str(&redacted_keeping_space(text));
        } else {
            out.push_str(text);
        }
        if let Some(token) = tokens.get(k) {
            out.push_str(&body[token.range.clone()]);
        }
    }
    out.push_str(suffix);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private(text: &str) -> Option<String> {
        let mut out = text.to_owned();
        while let Some(open) = out.find("<private>") {
            match out[open..].find("</private>") {
                Some(close) => out.replace_range(open..open + close + "</private>".len(), ""),
                None => out.truncate(open),
            }
        }
        let out = out.replace("SECRET", "[REDACTED:x]");
        (out != text).then_some(out)
    }

    fn check(input: &str, expected: Option<&str>) {
        let out = rewrite_topic(input, &private);
        assert_eq!(out.as_deref(), expected, "rewriting:\n{input}");
        let again = out.unwrap_or_else(|| input.to_owned());
        assert_eq!(rewrite_topic(&again, &private), None, "second pass on:\n{again}");
    }

    const DEF: &str =
        "\n\n[^e-1]: Time: `2024`; Sources: [a](x)\n[^e-2]: Time: `2024`; Sources: [b](y)\n";

    #[test]
    fn a_paragraph_keeps_its_ids_and_citations() {
        check(
            &format!("A SECRET.[^e-1] B.[^e-2] ^aaaaaaaa{DEF}"),
            Some(&format!("A [REDACTED:x].[^e-1] B.[^e-2] ^aaaaaaaa{DEF}")),
        );
        // A span across a citation: the citation stays, after what is left.
        check(
            &format!("A <private>B.[^e-1] C.</private>[^e-2] D.[^e-1] ^aaaaaaaa{DEF}"),
            Some(&format!("A[^e-1] [REDACTED][^e-2] D.[^e-1] ^aaaaaaaa{DEF}")),
        );
        // A quote removed whole.
        check(
            &format!("A.[^e-1] <private>B.</private>[^e-2] ^aaaaaaaa{DEF}"),
            Some(&format!("A.[^e-1] [REDACTED][^e-2] ^aaaaaaaa{DEF}")),
        );
        check(
            &format!("<private>A.[^e-1]\nB.[^e-2]\n^aaaaaaaa{DEF}"),
            Some(&format!("[REDACTED][^e-1] [REDACTED][^e-2]\n^aaaaaaaa{DEF}")),
        );
    }

    #[test]
    fn an_unclosed_span_stops_at_its_paragraph() {
        check(
            &format!("A <private>B.[^e-1] ^aaaaaaaa\n\nC.[^e-2] ^bbbbbbbb{DEF}"),
            Some(&format!("A[^e-1] ^aaaaaaaa\n\nC.[^e-2] ^bbbbbbbb{DEF}")),
        );
    }

    #[test]
    fn internal_links_are_never_mapped() {
        check(
            &format!(
                "See [SECRET](t.md#^bbbbbbbb) and [SECRET](https://x/SECRET).[^e-1] ^aaaaaaaa{DEF}"
            ),
            Some(&format!(
                "See [SECRET](t.md#^bbbbbbbb) and [[REDACTED:x]](https://x/[REDACTED:x]).[^e-1] ^aaaaaaaa{DEF}"
            )),
        );
        // A link inside a removed span goes with it.
        check(
            &format!("A<private> see [b](t.md#^bbbbbbbb)</private>.[^e-1] ^aaaaaaaa{DEF}"),
            Some(&format!("A.[^e-1] ^aaaaaaaa{DEF}")),
        );
    }

    #[test]
    fn what_would_break_the_paragraph_becomes_redacted() {
        // Removing the span would start a heading, make a new topic link, or leave a blank line.
        check(
            &format!("A.\n<private>x</private># B.[^e-1] ^aaaaaaaa{DEF}"),
            Some(&format!("[REDACTED][^e-1] ^aaaaaaaa{DEF}")),
        );
        check(
            &format!("A SECRET(t.md).[^e-1] ^aaaaaaaa{DEF}"),
            Some(&format!("[REDACTED][^e-1] ^aaaaaaaa{DEF}")),
        );
        check(
            &format!("A.\n<private>x</private>\nB.[^e-1] ^aaaaaaaa{DEF}"),
            Some(&format!("A.\nB.[^e-1] ^aaaaaaaa{DEF}")),
        );
        // A block suffix the mapper would extend.
        check(
            &format!("A.[^e-1] <private>x</private>^bbbbbbbb ^aaaaaaaa{DEF}"),
            Some(&format!("A.[^e-1] [REDACTED] ^aaaaaaaa{DEF}")),
        );
    }

    #[test]
    fn structure_lines_stay_what_they_are() {
        check(
            "# About SECRET\n## <private>x</private>\n<!-- SECRET -->\n```SECRET\nSECRET\n<private>a\n```\nb\n```\n",
            Some(
                "# About [REDACTED:x]\n## [REDACTED]\n<!-- [REDACTED:x] -->\n```[REDACTED:x]\n[REDACTED:x]\n\n```\nb\n```\n",
            ),
        );
        // A fenced line that would become a fence.
        check("```\n<private>x</private>```\n```\n", Some("```\n[REDACTED]\n```\n"));
    }

    #[test]
    fn definitions_keep_ids_times_and_targets() {
        check(
            "[^e-1]: Time: `2024`; Sources: [chat SECRET](openprogram/s/SECRET), [<private>x</private>](b)\n",
            Some(
                "[^e-1]: Time: `2024`; Sources: [chat (REDACTED:x)](openprogram/s/SECRET), [(REDACTED)](b)\n",
            ),
        );
    }

    #[test]
    fn nothing_to_map_is_none() {
        check(&format!("# T\n\nA.[^e-1] ^aaaaaaaa{DEF}"), None);
        assert_eq!(rewrite_topic("x SECRET", &|_| None), None);
        assert_eq!(rewrite_topic("x SECRET", &|t| Some(t.to_owned())), None);
    }
}
