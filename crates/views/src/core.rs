//! The root `core.md`: `topics/core.md` rendered under a token budget, with the footnote fix
//! below, and the promotion of a legacy root `core.md` (see `docs/format.md#core-view`).
//!
//! Chunking follows the Python implementation (blank-line runs split chunks; a chunk's block ID
//! is its trailing ` ^id`), except for footnote definitions: instead of riding on whatever chunk
//! precedes them, every definition goes with the first *kept* paragraph that cites it, wherever
//! it sits in the file (see `docs/format.md#where-we-deliberately-differ`, row "core chunking").
//! For the usual layout — each paragraph followed by its definitions — the bytes are the Python
//! ones. The budget counts what a model receives ([`compact`]: no definitions, citations, block
//! IDs or link targets), not the root file's bytes, so a tight budget keeps more paragraphs than
//! the Python implementation does.

use std::borrow::Cow;
use std::collections::HashMap;

use scriptorium_topics_format::catalog::{SourceFiles, SourceResolver};
use scriptorium_topics_format::source::{ArchiveResolver, TrustState};
use scriptorium_topics_format::{TopicFile, parse_tree, tokens};

use crate::paths::{is_py_space, normalize, relative};

/// The default core budget, in o200k_base tokens.
pub const DEFAULT_CORE_BUDGET: usize = 2_000;

/// The master's path relative to `topics/`.
pub const CORE_TOPIC: &str = "core.md";

/// What one render came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreReport {
    /// o200k_base tokens of what a model receives of the rendered text ([`compact`]): what the
    /// budget counts.
    pub tokens: usize,
    /// The budget it was rendered under.
    pub budget: usize,
    /// Block IDs laid down, in file order.
    pub rendered_block_ids: Vec<String>,
    /// Block IDs left out, in file order: blocks citing pending sources, then every block from
    /// the first paragraph that did not fit to the end of the master.
    pub excluded_block_ids: Vec<String>,
}

/// A rendered root `core.md` and its report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreRender {
    /// The root `core.md` bytes; `None` when there is no master (`topics/core.md`).
    pub text: Option<String>,
    /// Tokens, budget, rendered and excluded block IDs.
    pub report: CoreReport,
}

/// What the render needs to know about sources: which source a definition link of
/// `topics/core.md` names, and whether that source is trusted (see `docs/format.md#core-view`,
/// step 3).
pub trait SourceTrust {
    /// The source reference a definition link target of `topics/core.md` names (the target as
    /// written, relative to `topics/`), or `None` when it names nothing.
    fn resolve(&self, target: &str) -> Option<String>;
    /// Whether the reference is trusted (a v2 frame that is trusted or meta-less, a legacy ID).
    fn is_trusted(&self, source_ref: &str) -> bool;
}

/// Trusts every source: the empty pending set the Python implementation uses when the topic tree
/// does not parse.
#[derive(Clone, Copy, Debug, Default)]
pub struct TrustAll;

impl SourceTrust for TrustAll {
    fn resolve(&self, target: &str) -> Option<String> {
        Some(target.to_owned())
    }
    fn is_trusted(&self, _source_ref: &str) -> bool {
        true
    }
}

impl<F: SourceFiles> SourceTrust for ArchiveResolver<F> {
    fn resolve(&self, target: &str) -> Option<String> {
        ArchiveResolver::resolve(self, CORE_TOPIC, target).ok()
    }
    fn is_trusted(&self, source_ref: &str) -> bool {
        self.trust(source_ref) == Some(TrustState::Trusted)
    }
}

/// One footnote definition of the master: its ID and its lines (a definition chunk may carry
/// continuation lines).
struct Definition<'a> {
    id: &'a str,
    text: Cow<'a, str>,
}

/// One non-definition chunk: a paragraph, a heading, a comment.
struct Chunk<'a> {
    text: Cow<'a, str>,
    block_id: Option<&'a str>,
    /// Footnote IDs cited, in order, duplicates kept.
    cites: Vec<&'a str>,
}

/// The master, chunked.
struct Master<'a> {
    chunks: Vec<Chunk<'a>>,
    definitions: Vec<Definition<'a>>,
    /// Footnote ID → index into `definitions` (the first definition wins).
    by_id: HashMap<&'a str, usize>,
}

/// Renders the root `core.md` from the master text under `budget_tokens` (see
/// `docs/format.md#core-view`, with the footnote fix of the module docs). Pure and
/// deterministic; it never fails.
///
/// In file order: a chunk with a block ID whose cited sources are not all trusted (per `trust`)
/// is excluded and skipped; otherwise the chunk, with every definition it cites that no earlier
/// kept chunk took, is kept if the text still fits the budget; the first chunk that does not
/// fit ends the render and it and every later block are excluded. Relative links are re-rooted
/// from `topics/` to the workspace root. A definition no kept chunk cites is left out.
///
/// `master` is `topics/core.md`, or `None` when it does not exist (then `text` is `None` and
/// the root file must be left alone). When the topic tree does not parse, pass [`TrustAll`].
pub fn render_core(
    master: Option<&str>,
    trust: &dyn SourceTrust,
    budget_tokens: usize,
) -> CoreRender {
    let mut report = CoreReport { budget: budget_tokens, ..CoreReport::default() };
    let Some(master) = master else {
        return CoreRender { text: None, report };
    };
    let master = chunk_master(master);
    let mut taken = vec![false; master.definitions.len()];
    // (chunk index, rendered text, definition indices it took)
    let mut kept: Vec<(usize, String, Vec<usize>)> = Vec::new();
    let mut estimate = 0usize;
    for (index, chunk) in master.chunks.iter().enumerate() {
        if chunk.block_id.is_some() && is_pending(&master, chunk, trust) {
            continue;
        }
        let mut defs: Vec<usize> = chunk
            .cites
            .iter()
            .filter_map(|id| master.by_id.get(id).copied())
            .filter(|&d| !taken[d])
            .collect();
        defs.sort_unstable();
        defs.dedup();
        let mut text = move_links(&chunk.text, &["topics"], &[]);
        for &d in &defs {
            text.push_str("\n\n");
            text.push_str(&move_links(&master.definitions[d].text, &["topics"], &[]));
        }
        // What the model receives of it, plus the separator before it (or the final line
        // break for the first chunk): one token in the usual case; the exact count below
        // corrects any difference.
        let size = tokens::count(&compact(&text)) + 1;
        if estimate + size > budget_tokens {
            break;
        }
        estimate += size;
        for &d in &defs {
            taken[d] = true;
        }
        kept.push((index, text, defs));
    }
    // BPE counts are not quite additive across chunk boundaries: measure the text itself and
    // give back whole chunks until it fits.
    let (text, count) = loop {
        let text = join_kept(&kept);
        let count = tokens::count(&compact(&text));
        if count <= budget_tokens || kept.is_empty() {
            break (text, count);
        }
        kept.pop();
    };
    report.tokens = count;
    report.rendered_block_ids = kept
        .iter()
        .filter_map(|(index, _, _)| master.chunks[*index].block_id.map(str::to_owned))
        .collect();
    // Every chunk not kept was pending or at or after the first that did not fit.
    let mut kept_indices = kept.iter().map(|(index, _, _)| *index).peekable();
    report.excluded_block_ids = master
        .chunks
        .iter()
        .enumerate()
        .filter(|(index, _)| {
            let is_kept = kept_indices.peek() == Some(index);
            if is_kept {
                kept_indices.next();
            }
            !is_kept
        })
        .filter_map(|(_, chunk)| chunk.block_id.map(str::to_owned))
        .collect();
    CoreRender { text: Some(text), report }
}

/// The core as a model receives it (the injected form of a rendered core, and what the budget
/// counts): the text of each paragraph and heading, without footnote definitions, `[^…]`
/// citations or `^id` block suffixes, and with each link reduced to its text (`[tracker](…)` →
/// `tracker`). The citations stay in the root `core.md`, where a person follows them.
pub fn compact(rendered: &str) -> String {
    let mut out = String::with_capacity(rendered.len());
    for chunk in blank_line_split(rendered) {
        let lines: Vec<String> = chunk
            .lines()
            .filter(|line| definition_id(line).is_none())
            .map(compact_line)
            .filter(|line| !line.trim().is_empty())
            .collect();
        if lines.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&lines.join("\n"));
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// One line without citations, block suffixes and link targets.
fn compact_line(line: &str) -> String {
    let mut text = line.to_owned();
    while let Some(id) = block_id(&text) {
        let cut = text.trim_end_matches(is_py_space).len() - id.len() - 1;
        text.truncate(cut);
        text.truncate(text.trim_end_matches(is_py_space).len());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        // `[^id]`: a citation, dropped.
        if let Some(cite) = after.strip_prefix('^') {
            let end = cite.find(|c: char| !is_footnote_char(c)).unwrap_or(cite.len());
            if end > 0 && cite[end..].starts_with(']') {
                rest = &cite[end + 1..];
                continue;
            }
        }
        // `[text](target)`: the text.
        if let Some(close) = after.find(']')
            && let Some(inner) = after[close + 1..].strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            out.push_str(&after[..close]);
            rest = &inner[end + 1..];
            continue;
        }
        out.push('[');
        rest = after;
    }
    out.push_str(rest);
    out.trim_end().to_owned()
}

/// Kept chunks joined by a blank line, trailing whitespace removed, one final line break; empty
/// when nothing was kept.
fn join_kept(kept: &[(usize, String, Vec<usize>)]) -> String {
    let mut text = String::new();
    for (i, (_, chunk, _)) in kept.iter().enumerate() {
        if i > 0 {
            text.push_str("\n\n");
        }
        text.push_str(chunk);
    }
    let trimmed = text.trim_end_matches(is_py_space).len();
    text.truncate(trimmed);
    if !text.is_empty() {
        text.push('\n');
    }
    text
}

/// Whether any source the chunk cites is untrusted or unresolvable.
fn is_pending(master: &Master<'_>, chunk: &Chunk<'_>, trust: &dyn SourceTrust) -> bool {
    chunk.cites.iter().filter_map(|id| master.by_id.get(id)).any(|&d| {
        let targets = definition_targets(&master.definitions[d].text);
        targets.is_empty()
            || targets
                .iter()
                .any(|target| trust.resolve(target).is_none_or(|r| !trust.is_trusted(&r)))
    })
}

/// The link targets of a definition's `Sources:` part.
fn definition_targets(text: &str) -> Vec<&str> {
    let Some(at) = text.find("Sources:") else {
        return Vec::new();
    };
    let mut rest = &text[at + "Sources:".len()..];
    let mut targets = Vec::new();
    // `\[([^]]+)\]\(([^)]+)\)`, leftmost, non-overlapping.
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else { break };
        let tail = &after[close + 1..];
        if close > 0
            && let Some(inner) = tail.strip_prefix('(')
            && let Some(end) = inner.find(')')
            && end > 0
        {
            targets.push(&inner[..end]);
            rest = &inner[end + 1..];
            continue;
        }
        rest = after;
    }
    targets
}

/// The leading `[^id]:` of a definition line (after leading whitespace), if it is one.
fn definition_id(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(is_py_space).strip_prefix("[^")?;
    let end = rest.find(|c: char| !is_footnote_char(c))?;
    (end > 0 && rest[end..].starts_with("]:")).then(|| &rest[..end])
}

fn is_footnote_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn is_block_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// The trailing block ID: `\s\^([A-Za-z0-9-]+)\s*$`.
fn block_id(chunk: &str) -> Option<&str> {
    let trimmed = chunk.trim_end_matches(is_py_space);
    let start = trimmed.trim_end_matches(is_block_char).len();
    let id = &trimmed[start..];
    let before = trimmed[..start].strip_suffix('^')?;
    (!id.is_empty() && before.ends_with(is_py_space)).then_some(id)
}

/// Every `[^id]` citation, in order.
fn citations(text: &str) -> Vec<&str> {
    let mut cites = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("[^") {
        let after = &rest[at + 2..];
        let end = after.find(|c: char| !is_footnote_char(c)).unwrap_or(after.len());
        if end > 0 && after[end..].starts_with(']') {
            cites.push(&after[..end]);
        }
        rest = after;
    }
    cites
}

/// Splits on `\n\s*\n` like Python's `re.split`, yielding each piece stripped of `\n`.
fn blank_line_split(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while let Some(offset) = text[i..].find('\n') {
        let nl = i + offset;
        // Greedy `\s*` then `\n`: the separator ends at the last `\n` of the whitespace run.
        let mut last_nl = None;
        for (j, c) in text[nl + 1..].char_indices() {
            if !is_py_space(c) {
                break;
            }
            if c == '\n' {
                last_nl = Some(nl + 1 + j);
            }
        }
        match last_nl {
            Some(end) => {
                pieces.push(&text[start..nl]);
                start = end + 1;
                i = end + 1;
            }
            None => i = nl + 1,
        }
        if i >= bytes.len() {
            break;
        }
    }
    pieces.push(&text[start..]);
    pieces.into_iter().map(|p| p.trim_matches('\n')).collect()
}

fn chunk_master(text: &str) -> Master<'_> {
    let mut master = Master { chunks: Vec::new(), definitions: Vec::new(), by_id: HashMap::new() };
    for block in blank_line_split(text) {
        if block.trim_matches(is_py_space).is_empty() {
            continue;
        }
        if definition_id(block).is_some() {
            // A definition chunk: each definition line starts a definition, other lines
            // continue the one above.
            let mut current: Option<(&str, usize, usize)> = None;
            let mut offset = 0;
            for line in block.split_inclusive('\n') {
                let line_start = offset;
                offset += line.len();
                if let Some(id) = definition_id(line) {
                    if let Some((id, s, e)) = current.take() {
                        master.push_definition(id, Cow::Borrowed(&block[s..e]));
                    }
                    current = Some((id, line_start, offset));
                } else if let Some((_, _, e)) = current.as_mut() {
                    *e = offset;
                }
            }
            if let Some((id, s, e)) = current {
                master.push_definition(id, Cow::Borrowed(block[s..e].trim_end_matches('\n')));
            }
            continue;
        }
        // A content chunk: definition lines inside it are taken out and attached by citation
        // like any other.
        let has_inner_definition = block.lines().skip(1).any(|line| definition_id(line).is_some());
        let text: Cow<'_, str> = if has_inner_definition {
            let mut kept = Vec::new();
            for line in block.split('\n') {
                match definition_id(line) {
                    Some(id) => master.push_definition(id, Cow::Borrowed(line)),
                    None => kept.push(line),
                }
            }
            Cow::Owned(kept.join("\n"))
        } else {
            Cow::Borrowed(block)
        };
        let cites = block
            .split('\n')
            .filter(|line| definition_id(line).is_none())
            .flat_map(citations)
            .collect();
        let block_id = block_id(block);
        master.chunks.push(Chunk { text, block_id, cites });
    }
    master
}

impl<'a> Master<'a> {
    fn push_definition(&mut self, id: &'a str, text: Cow<'a, str>) {
        let index = self.definitions.len();
        self.definitions.push(Definition { id, text });
        self.by_id.entry(self.definitions[index].id).or_insert(index);
    }
}

/// Rewrites relative Markdown link targets as a file moves from directory `from` to directory
/// `to` (both relative to the workspace root, as components): Python's `_move_links`, i.e.
/// `(?<=\]\()([^)\s#]+)(?=[)#])` replaced by the re-rooted path; `http://`, `https://`,
/// `mailto:` and absolute targets are left alone.
pub(crate) fn move_links(text: &str, from: &[&str], to: &[&str]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while let Some(offset) = text[search..].find("](") {
        let start = search + offset + 2;
        search = start;
        let rest = &text[start..];
        let len = rest.find(|c: char| c == ')' || c == '#' || is_py_space(c)).unwrap_or(rest.len());
        if len == 0 || !matches!(rest[len..].chars().next(), Some(')' | '#')) {
            continue;
        }
        let path = &rest[..len];
        if ["http://", "https://", "mailto:", "/"].iter().any(|p| path.starts_with(p)) {
            continue;
        }
        let joined = format!("{}/{path}", from.join("/"));
        let moved = relative(&normalize(&joined), to);
        out.push_str(&text[copied..start]);
        out.push_str(&moved);
        copied = start + len;
        search = copied;
    }
    out.push_str(&text[copied..]);
    out
}

/// The master a legacy root `core.md` becomes (see `docs/format.md#core-view`): its links
/// re-rooted from the workspace root to `topics/` (`sources/…` → `../sources/…`), returned only
/// when the whole topic tree with it as `topics/core.md` parses without a diagnostic. `None`
/// means: leave the root file alone, it is the only copy.
///
/// `topics` is the rest of the tree (a `core.md` among them is ignored: a master, once present,
/// always wins, and the caller should not promote then).
pub fn promote_legacy_core(
    root_core: &str,
    topics: &[TopicFile],
    sources: &dyn SourceResolver,
) -> Option<String> {
    if topics.iter().any(|file| file.path == CORE_TOPIC) {
        return None;
    }
    let master = move_links(root_core, &[], &["topics"]);
    let mut tree: Vec<TopicFile> = topics.to_vec();
    tree.push(TopicFile::new(CORE_TOPIC, master.clone()));
    parse_tree(&tree, sources).is_valid().then_some(master)
}

#[cfg(test)]
mod tests {
    use super::{
        blank_line_split, block_id, citations, definition_id, definition_targets, move_links,
    };

    #[test]
    fn split_matches_python_re_split() {
        assert_eq!(blank_line_split("a\n\nb"), ["a", "b"]);
        assert_eq!(blank_line_split("a\n  \n \n  b\nc"), ["a", "  b\nc"]);
        assert_eq!(blank_line_split("a\nb\n"), ["a\nb"]);
        assert_eq!(blank_line_split("\n\na\n\n\n"), ["", "a", ""]);
    }

    #[test]
    fn block_id_needs_whitespace_before_caret() {
        assert_eq!(block_id("text.[^e1] ^abc-1 "), Some("abc-1"));
        assert_eq!(block_id("text ^a ^b"), Some("b"));
        assert_eq!(block_id("text^a"), None);
        assert_eq!(block_id("# Core"), None);
    }

    #[test]
    fn definitions_and_citations() {
        assert_eq!(definition_id("  [^e-1]: Time: x"), Some("e-1"));
        assert_eq!(definition_id("[^e-1] not"), None);
        assert_eq!(citations("a[^x][^y_2] b [^] [^z]:"), ["x", "y_2", "z"]);
        assert_eq!(
            definition_targets("[^e]: Time: `undated`; Sources: [a](x.md#s), [b c](y#t)"),
            ["x.md#s", "y#t"]
        );
    }

    #[test]
    fn links_are_rerooted() {
        let text = "[a](../sources/x.md#s) [b](other.md#^id) [c](https://e.org) [d](/abs) [e](x y)";
        assert_eq!(
            move_links(text, &["topics"], &[]),
            "[a](sources/x.md#s) [b](topics/other.md#^id) [c](https://e.org) [d](/abs) [e](x y)"
        );
        assert_eq!(move_links("[a](sources/x.md#s)", &[], &["topics"]), "[a](../sources/x.md#s)");
    }
}
