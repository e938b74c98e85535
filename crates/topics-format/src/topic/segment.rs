//! Line classification and paragraph segmentation (see `docs/format.md#lines-and-paragraphs`),
//! and the lossless [`Document`] model built on them.

use std::ops::Range;
use std::sync::Arc;

use super::grammar::{definition_match, heading_match, is_blank, is_fence, is_html};
use super::ids::BlockId;
use super::text::{LineSpan, split_lines};

/// What one line of a topic file is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// A heading `#{1,6} text`.
    Heading {
        /// 1..=6.
        level: u8,
        /// The heading text (without the hashes and surrounding whitespace), as a byte range
        /// of the document.
        text: Range<usize>,
    },
    /// A footnote definition, canonical (`Time: …; Sources: …`) or legacy (`… · Sources: …`).
    Definition {
        /// The legacy `·` form.
        legacy: bool,
    },
    /// A line starting (after whitespace) with `<!--` or `<a `.
    Html,
    /// A line starting (after whitespace) with three backticks: it opens or closes a fence.
    Fence,
    /// A line inside a fence.
    Fenced,
    /// A whitespace-only line.
    Blank,
    /// Prose: part of a paragraph.
    Paragraph,
}

/// One line: its content, its line break, and its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// The content (without the line break), as a byte range of the document.
    pub content: Range<usize>,
    /// The line break (empty on a last line without one). `str.splitlines` breaks count:
    /// `\n`, `\r\n`, `\r`, `\x0b`, `\x0c`, `\x1c`–`\x1e`, U+0085, U+2028, U+2029.
    pub terminator: Range<usize>,
    /// What the line is.
    pub kind: LineKind,
}

/// A paragraph: a run of prose lines and the heading path above it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paragraph {
    /// The 0-based line indices it spans.
    pub lines: Range<usize>,
    /// The heading path (`path[:level-1] + [text]` at each heading).
    pub headings: Arc<[String]>,
}

/// The segmentation shared by the document model, the parser and the normalizer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Segments {
    pub(crate) lines: Vec<LineSpan>,
    pub(crate) kinds: Vec<LineKind>,
    pub(crate) paragraphs: Vec<Paragraph>,
}

/// Classifies every line of `text` and finds its paragraphs exactly as `paragraph_spans` does.
pub(crate) fn segment(text: &str) -> Segments {
    let lines = split_lines(text);
    let mut kinds = Vec::with_capacity(lines.len());
    let mut paragraphs = Vec::new();
    let mut headings: Vec<String> = Vec::new();
    let mut shared: Arc<[String]> = Arc::from(Vec::new());
    let mut start: Option<usize> = None;
    let mut in_fence = false;
    for (index, span) in lines.iter().enumerate() {
        let line = &text[span.start..span.end];
        let kind = classify(line, span.start, in_fence);
        match &kind {
            LineKind::Paragraph => {
                if start.is_none() {
                    start = Some(index);
                }
            }
            other => {
                if let Some(first) = start.take() {
                    paragraphs.push(Paragraph { lines: first..index, headings: shared.clone() });
                }
                match other {
                    LineKind::Fence => in_fence = !in_fence,
                    LineKind::Heading { level, text: range } => {
                        headings.truncate(usize::from(*level) - 1);
                        headings.push(text[range.clone()].to_owned());
                        shared = Arc::from(headings.clone());
                    }
                    _ => {}
                }
            }
        }
        kinds.push(kind);
    }
    if let Some(first) = start {
        paragraphs.push(Paragraph { lines: first..lines.len(), headings: shared });
    }
    Segments { lines, kinds, paragraphs }
}

/// The kind of one line; `offset` is where the line starts in the document.
fn classify(line: &str, offset: usize, in_fence: bool) -> LineKind {
    // Cheap first-byte dispatch: every structural form starts (after optional whitespace) with
    // one of a few bytes, so prose lines skip the matchers.
    if is_fence(line) {
        return LineKind::Fence;
    }
    if in_fence {
        return LineKind::Fenced;
    }
    let first = line.as_bytes().first().copied();
    if first == Some(b'[')
        && let Some(m) = definition_match(line)
    {
        return LineKind::Definition { legacy: m.legacy };
    }
    if is_html(line) {
        return LineKind::Html;
    }
    if first == Some(b'#')
        && let Some((level, text)) = heading_match(line)
    {
        return LineKind::Heading { level, text: offset + text.start..offset + text.end };
    }
    if is_blank(line) {
        return LineKind::Blank;
    }
    LineKind::Paragraph
}

/// A topic file as classified lines: lossless (`render` gives back the exact input, for every
/// string, valid or not) and the basis of the parser and the normalizer.
///
/// ```
/// use scriptorium_topics_format::topic::{Document, LineKind};
///
/// let text = "# Budget\r\n\r\nFact.[^e1] ^abc12345\n\n[^e1]: Time: `2024`; Sources: [a](b)";
/// let doc = Document::parse(text);
/// assert_eq!(doc.render(), text);
/// assert!(matches!(doc.lines()[0].kind, LineKind::Heading { level: 1, .. }));
/// assert_eq!(doc.paragraphs().len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Document {
    text: String,
    lines: Vec<Line>,
    paragraphs: Vec<Paragraph>,
}

impl Document {
    /// Classifies `text`. Never fails: any string is a document.
    pub fn parse(text: &str) -> Document {
        let segments = segment(text);
        let lines = segments
            .lines
            .iter()
            .zip(segments.kinds)
            .map(|(span, kind)| Line {
                content: span.start..span.end,
                terminator: span.end..span.next,
                kind,
            })
            .collect();
        Document { text: text.to_owned(), lines, paragraphs: segments.paragraphs }
    }

    /// The lines in order; together they cover the text exactly.
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// The paragraphs in order.
    pub fn paragraphs(&self) -> &[Paragraph] {
        &self.paragraphs
    }

    /// The original text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The content of line `index` (without its break).
    pub fn line_text(&self, index: usize) -> &str {
        self.lines.get(index).map_or("", |l| &self.text[l.content.clone()])
    }

    /// The paragraph's text as the parser sees it: its lines joined by `\n`, then stripped.
    pub fn paragraph_text(&self, paragraph: &Paragraph) -> String {
        let joined: Vec<&str> = paragraph.lines.clone().map(|i| self.line_text(i)).collect();
        super::text::py_strip(&joined.join("\n")).to_owned()
    }

    /// The block IDs ending the paragraph (` ^a ^b`), identity last; empty when it has none.
    /// This is only the suffix grammar: whether the paragraph is a valid record is the parser's
    /// business.
    pub fn block_ids(&self, paragraph: &Paragraph) -> Vec<BlockId> {
        let text = self.paragraph_text(paragraph);
        super::grammar::block_suffix(&text)
            // The suffix grammar admits block-ID characters only.
            .map(|(_, ids)| ids.into_iter().filter_map(|r| BlockId::parse(&text[r])).collect())
            .unwrap_or_default()
    }

    /// Reassembles the text from the lines: always equal to the input of [`Document::parse`].
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.text.len());
        for line in &self.lines {
            out.push_str(&self.text[line.content.clone()]);
            out.push_str(&self.text[line.terminator.clone()]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_and_structure() {
        let text = "intro\n```\n# not a heading\n```\n<!-- c -->\n  <a id=\"x\"></a>\ntail\n";
        let doc = Document::parse(text);
        let kinds: Vec<_> = doc.lines().iter().map(|l| l.kind.clone()).collect();
        assert_eq!(kinds[1], LineKind::Fence);
        assert_eq!(kinds[2], LineKind::Fenced);
        assert_eq!(kinds[4], LineKind::Html);
        assert_eq!(kinds[5], LineKind::Html);
        assert_eq!(doc.paragraphs().len(), 2);
        assert_eq!(doc.render(), text);
    }

    #[test]
    fn heading_path() {
        let doc = Document::parse("# A\n## B\np\n# C\nq\n### D\nr");
        let paths: Vec<Vec<String>> =
            doc.paragraphs().iter().map(|p| p.headings.to_vec()).collect();
        assert_eq!(paths, vec![vec!["A", "B"], vec!["C"], vec!["C", "D"]]);
    }
}
