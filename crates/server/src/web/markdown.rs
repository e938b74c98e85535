//! The Markdown preview of the page: topic, timeline and core text rendered to sanitized HTML
//! with Obsidian's reading-view conventions.
//!
//! Rules, in the order they apply:
//!
//! - Named footnotes `[^id]` that have a definition are shown as consecutive `[1]`, `[2]`, …
//!   superscripts, numbered by first reference; a repeated reference shows the same number.
//!   The definitions are taken out of the body and listed, in number order, in an ordered list
//!   after a separator at the end (`<section class="footnotes"><hr><ol>…`). A definition that is
//!   never referenced is dropped; a reference without a definition stays literal text
//!   (`[^id]`). Lines following a definition line (two-space indented or not) belong to it, as
//!   in CommonMark.
//! - An inline footnote `^[text]` joins the same numbering, its text becoming the definition.
//! - A paragraph-final ` ^block-id` (one or more; Latin letters, digits and hyphens), or a
//!   paragraph that is only such IDs, becomes an invisible anchor `<a class="block-anchor"
//!   id="^block-id"></a>`; the ID is never shown.
//! - Code spans, fenced and indented code are untouched; backslash-escaped syntax (`\[^1]`,
//!   `\^[x]`, `\^abc`) stays literal.
//! - Raw HTML is never rendered: it is shown as literal text. Images become links to their
//!   target (the CSP allows no remote images).
//!
//! Key decision: the transformation works on pulldown-cmark's event stream, never on the source
//! text, so it uses no placeholder strings at all: no original text can collide with an
//! internal marker, and code is recognised by the same parser that renders it. The result is
//! then sanitized by ammonia with an allow-list of exactly what this renderer emits, so even a
//! bug here cannot let a script, an event handler or a `javascript:` URL through.
//!
//! The work is linear in the input. pulldown-cmark parses deep nesting in linear time, but the
//! sanitizer's HTML tree builder scans all open elements at every start tag, so HTML nested as
//! deep as the text is long made a render quadratic (a 100 KB line of `>` took minutes). The
//! renderer therefore never emits more than [`MAX_NESTING`] nested elements (plus the few a
//! table or a footnote adds).
//!
//! # Limitations
//!
//! - Nesting beyond [`MAX_NESTING`] elements is flattened, never dropped: a quote, list,
//!   emphasis or link that would open deeper is not rendered as such, but its content is, one
//!   level up, with a line break where a flattened quote, list or list item began or ended.
//!   Every word of a 100 000-level quote chain is on the page; the levels beyond the cap are
//!   just not indented further, and a link that deep shows its text without its target.
//!
//! - An inline footnote ends with its paragraph: `^[` without its `]` before the end of the
//!   block stays literal. Its number is taken when it closes, so a named reference inside it
//!   is numbered first.
//! - Block IDs are recognised at the end of paragraphs and tight list items, not headings.
//! - Duplicate definitions: the first one wins; definitions never referenced are not shown.
//!
//! # Example
//!
//! ```
//! use scriptorium_server::web::markdown::render;
//!
//! let html = render("Dave runs a bike shop.[^e-1] ^4d5ed8b5\n\n[^e-1]: Time: `2024`\n");
//! assert!(html.contains(">[1]</a></sup>"));
//! assert!(html.contains(r#"id="^4d5ed8b5""#));
//! assert!(!html.contains("e-1"));
//! ```

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::OnceLock;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

/// The class of the section holding the footnote definitions.
pub const FOOTNOTES_CLASS: &str = "footnotes";
/// The class of an invisible block anchor.
pub const BLOCK_ANCHOR_CLASS: &str = "block-anchor";
/// The deepest nesting of elements the preview emits for one text: deeper quotes, lists,
/// emphasis and links are flattened (see the module docs). Enough for 30 levels of nested lists.
pub const MAX_NESTING: usize = 64;

type Spanned<'a> = (Event<'a>, Range<usize>);

/// Renders `markdown` to sanitized HTML (see the module docs for the rules).
pub fn render(markdown: &str) -> String {
    sanitizer().clean(&render_unsanitized(markdown)).to_string()
}

/// The renderer's HTML before sanitizing (exposed to the tests through [`render`] only).
fn render_unsanitized(src: &str) -> String {
    let options =
        Options::ENABLE_FOOTNOTES | Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events: Vec<Spanned<'_>> = Parser::new_ext(src, options).into_offset_iter().collect();

    // Take the definitions out of the body (the first definition of a label wins).
    let mut body = Vec::with_capacity(events.len());
    let mut definitions: HashMap<String, Vec<Spanned<'_>>> = HashMap::new();
    let mut current: Option<(String, Vec<Spanned<'_>>)> = None;
    let mut depth = 0usize;
    for (event, range) in events {
        match (&mut current, event) {
            (None, Event::Start(Tag::FootnoteDefinition(label))) => {
                current = Some((key(&label), Vec::new()));
                depth = 0;
            }
            (Some(_), Event::End(TagEnd::FootnoteDefinition)) if depth == 0 => {
                if let Some((label, inner)) = current.take() {
                    definitions.entry(label).or_insert(inner);
                }
            }
            (Some((_, inner)), event) => {
                match &event {
                    Event::Start(Tag::FootnoteDefinition(_)) => depth += 1,
                    Event::End(TagEnd::FootnoteDefinition) => depth = depth.saturating_sub(1),
                    _ => {}
                }
                inner.push((event, range));
            }
            (None, event) => body.push((event, range)),
        }
    }

    let mut notes = Notes { defined: definitions.keys().cloned().collect(), ..Notes::default() };
    let mut out = String::with_capacity(src.len() * 2);
    html::push_html(&mut out, flatten(transform(src, body, &mut notes)).into_iter());

    // Definitions in number order; rendering one may number more (references inside notes).
    let mut items = String::new();
    let mut next = 0;
    while next < notes.order.len() {
        let number = next + 1;
        let note = notes.order[next].clone();
        next += 1;
        let mut inner = String::new();
        match note {
            Note::Named(label) => {
                let events = definitions.remove(&label).unwrap_or_default();
                html::push_html(
                    &mut inner,
                    flatten(transform(src, events, &mut notes)).into_iter(),
                );
            }
            Note::Inline(body) => {
                inner.push_str("<p>");
                html::push_html(&mut inner, flatten(body).into_iter());
                inner.push_str("</p>");
            }
        }
        items.push_str(&format!(
            "<li id=\"fn-{number}\">{inner}<a class=\"footnote-backref\" href=\"#fnref-{number}\">\u{21a9}</a></li>\n"
        ));
    }
    if !items.is_empty() {
        out.push_str(&format!(
            "<section class=\"{FOOTNOTES_CLASS}\">\n<hr />\n<ol>\n{items}</ol>\n</section>\n"
        ));
    }
    out
}

/// A footnote label's identity (GFM matches labels case-insensitively).
fn key(label: &str) -> String {
    label.to_lowercase()
}

/// One numbered footnote.
#[derive(Clone, Debug)]
enum Note<'a> {
    /// A named definition, by [`key`].
    Named(String),
    /// An inline `^[…]` note: its content's events.
    Inline(Vec<Event<'a>>),
}

/// The numbering state of one render.
#[derive(Default)]
struct Notes<'a> {
    /// Labels that have a definition.
    defined: HashSet<String>,
    /// Notes in number order (number = index + 1).
    order: Vec<Note<'a>>,
    /// Named label → number.
    numbers: HashMap<String, usize>,
    /// References emitted so far per number (for unique reference IDs).
    refs: HashMap<usize, usize>,
}

impl<'a> Notes<'a> {
    /// The superscript of a reference to note `number`.
    fn reference(&mut self, number: usize) -> String {
        let seen = self.refs.entry(number).or_insert(0);
        *seen += 1;
        let id =
            if *seen == 1 { format!("fnref-{number}") } else { format!("fnref-{number}-{seen}") };
        format!(
            "<sup class=\"footnote-ref\"><a href=\"#fn-{number}\" id=\"{id}\">[{number}]</a></sup>"
        )
    }

    fn named(&mut self, label: &str) -> Option<String> {
        let label = key(label);
        if !self.defined.contains(&label) {
            return None;
        }
        let number = match self.numbers.get(&label) {
            Some(&n) => n,
            None => {
                self.order.push(Note::Named(label.clone()));
                self.numbers.insert(label, self.order.len());
                self.order.len()
            }
        };
        Some(self.reference(number))
    }

    fn inline(&mut self, body: Vec<Event<'a>>) -> String {
        self.order.push(Note::Inline(body));
        let number = self.order.len();
        self.reference(number)
    }
}

/// An inline note being read: its content so far and the bracket depth still open.
struct Open<'a> {
    body: Vec<Event<'a>>,
    depth: usize,
}

/// Sends `event` to the open inline note, if any, else to `out`.
fn push<'a>(out: &mut Vec<Event<'a>>, open: &mut Option<Open<'a>>, event: Event<'a>) {
    match open {
        Some(note) => note.body.push(event),
        None => out.push(event),
    }
}

/// Gives up an inline note that its block ended inside: its text goes out literally.
fn abandon<'a>(out: &mut Vec<Event<'a>>, open: &mut Option<Open<'a>>) {
    if let Some(note) = open.take() {
        out.push(Event::Text(CowStr::Borrowed("^[")));
        out.extend(note.body);
    }
}

/// Whether an event can sit inside an inline note (inline content).
fn is_inline(event: &Event<'_>) -> bool {
    match event {
        Event::Text(_)
        | Event::Code(_)
        | Event::SoftBreak
        | Event::HardBreak
        | Event::InlineHtml(_)
        | Event::InlineMath(_)
        | Event::FootnoteReference(_) => true,
        Event::Start(tag) => matches!(
            tag,
            Tag::Emphasis | Tag::Strong | Tag::Strikethrough | Tag::Link { .. } | Tag::Image { .. }
        ),
        Event::End(tag) => matches!(
            tag,
            TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Link
                | TagEnd::Image
        ),
        _ => false,
    }
}

/// Whether `tag` is a leaf block or a part of a table: an element that cannot hold another of
/// its kind, so it adds a bounded depth and is always kept.
fn is_leaf(tag: &Tag<'_>) -> bool {
    matches!(
        tag,
        Tag::Paragraph
            | Tag::Heading { .. }
            | Tag::CodeBlock(_)
            | Tag::HtmlBlock
            | Tag::MetadataBlock(_)
            | Tag::Table(_)
            | Tag::TableHead
            | Tag::TableRow
            | Tag::TableCell
    )
}

/// Whether the element `end` closes holds blocks (so its content needs a separator when the
/// element itself is flattened away).
fn is_block_container(end: TagEnd) -> bool {
    matches!(
        end,
        TagEnd::BlockQuote(_)
            | TagEnd::List(_)
            | TagEnd::Item
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
    )
}

/// Caps the element nesting of one event sequence at [`MAX_NESTING`]: a container that would
/// open deeper (a quote, a list with its items, emphasis, a link, …) is left out, its start
/// and end tags only; everything inside it is kept, one level up. Leaf blocks (paragraphs,
/// headings, code, tables) are always kept: they add a bounded depth. A flattened block
/// container leaves a line break (`<br>`) in its place, so the texts of flattened list items
/// stay on lines of their own.
///
/// Why: the sanitizer's HTML tree builder scans its stack of open elements at every start tag,
/// so nesting as deep as the input is long made a render quadratic in the input size. With the
/// depth bounded it is linear. Elements still open at the end are closed, so each sequence is
/// balanced on its own. An end tag that closes nothing open (an inline note that began inside
/// an emphasis takes the start tag with it) goes out unchanged, as it always did.
fn flatten(events: Vec<Event<'_>>) -> Vec<Event<'_>> {
    let mut out = Vec::with_capacity(events.len());
    // Per open element: its end tag and whether it was kept.
    let mut open: Vec<(TagEnd, bool)> = Vec::new();
    let mut depth = 0usize;
    for event in events {
        match event {
            Event::Start(tag) => {
                let end = tag.to_end();
                let keep = match &tag {
                    // A list's items go with it: it is kept only with room for one.
                    Tag::Item => matches!(open.last(), Some((TagEnd::List(_), true))),
                    Tag::List(_) => depth + 2 <= MAX_NESTING,
                    leaf if is_leaf(leaf) => true,
                    _ => depth < MAX_NESTING,
                };
                open.push((end, keep));
                if keep {
                    depth += 1;
                    out.push(Event::Start(tag));
                } else if is_block_container(end) {
                    separate(&mut out);
                }
            }
            Event::End(end) => match open.last() {
                Some(&(top, kept)) if top == end => {
                    open.pop();
                    if kept {
                        depth -= 1;
                        out.push(Event::End(end));
                    } else if is_block_container(end) {
                        separate(&mut out);
                    }
                }
                _ => out.push(Event::End(end)),
            },
            other => out.push(other),
        }
    }
    out.extend(open.into_iter().rev().filter(|&(_, kept)| kept).map(|(end, _)| Event::End(end)));
    out
}

/// Puts a line break after inline content that a flattened block container ends or precedes
/// (once: a run of flattened containers leaves one break, not one per container).
fn separate(out: &mut Vec<Event<'_>>) {
    let inline_last = match out.last() {
        Some(Event::End(end)) => matches!(
            end,
            TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Superscript
                | TagEnd::Subscript
                | TagEnd::Link
                | TagEnd::Image
        ),
        Some(Event::Start(_) | Event::SoftBreak | Event::HardBreak) | None => false,
        Some(_) => true,
    };
    if inline_last {
        out.push(Event::HardBreak);
    }
}

/// Applies the preview rules to one event sequence (the body or one definition).
fn transform<'a>(src: &'a str, events: Vec<Spanned<'a>>, notes: &mut Notes<'a>) -> Vec<Event<'a>> {
    let mut out: Vec<Event<'a>> = Vec::with_capacity(events.len());
    let mut open: Option<Open<'a>> = None;
    let mut run: Vec<Spanned<'a>> = Vec::new();
    // Whether the current run's first character was backslash-escaped.
    let mut escaped_start = false;
    let mut last_end: Option<usize> = None;
    let mut in_code = 0usize;
    let mut skip_end = 0usize;
    let mut iter = events.into_iter().peekable();
    while let Some((event, range)) = iter.next() {
        // A text event right after a backslash that no event covers is an escaped character.
        let gap = last_end.is_some_and(|end| range.start > end)
            && range.start > 0
            && src.as_bytes().get(range.start - 1) == Some(&b'\\');
        // A container's range spans its content: only its start precedes what follows.
        last_end = Some(if matches!(event, Event::Start(_)) { range.start } else { range.end });
        if in_code > 0 {
            match &event {
                Event::Start(Tag::CodeBlock(_)) => in_code += 1,
                Event::End(TagEnd::CodeBlock) => in_code -= 1,
                _ => {}
            }
            out.push(event);
            continue;
        }
        if open.is_some() && !is_inline(&event) {
            abandon(&mut out, &mut open);
        }
        match event {
            Event::Text(_) | Event::SoftBreak => {
                // A soft break joins the run (as its source line ending), so an inline note
                // may span lines.
                let verbatim = match &event {
                    Event::Text(text) => src.get(range.clone()) == Some(text.as_ref()),
                    _ => true,
                };
                if !verbatim {
                    // An entity or similar: shown as parsed, never transformed.
                    let run = std::mem::take(&mut run);
                    flush(src, run, escaped_start, false, notes, &mut open, &mut out);
                    push(&mut out, &mut open, event);
                    continue;
                }
                if gap && !run.is_empty() {
                    let run = std::mem::take(&mut run);
                    flush(src, run, escaped_start, false, notes, &mut open, &mut out);
                }
                if run.is_empty() {
                    escaped_start = gap;
                }
                run.push((event, range));
                if matches!(iter.peek(), Some((Event::Text(_) | Event::SoftBreak, _))) {
                    continue;
                }
                let is_final = matches!(
                    iter.peek(),
                    Some((Event::End(TagEnd::Paragraph | TagEnd::Item), _)) | None
                );
                let run = std::mem::take(&mut run);
                let emptied = flush(src, run, escaped_start, is_final, notes, &mut open, &mut out);
                if emptied
                    && matches!(iter.peek(), Some((Event::End(TagEnd::Paragraph), _)))
                    && let Some(at) = out.iter().rposition(|e| !matches!(e, Event::Html(_)))
                    && matches!(out[at], Event::Start(Tag::Paragraph))
                {
                    // A paragraph of block IDs only: keep the anchors, drop the paragraph.
                    out.remove(at);
                    skip_end += 1;
                }
            }
            Event::End(TagEnd::Paragraph) if skip_end > 0 => skip_end -= 1,
            Event::Start(Tag::CodeBlock(kind)) => {
                in_code += 1;
                out.push(Event::Start(Tag::CodeBlock(kind)));
            }
            Event::FootnoteReference(label) => match notes.named(&label) {
                Some(sup) => push(&mut out, &mut open, Event::Html(sup.into())),
                None => push(&mut out, &mut open, Event::Text(format!("[^{label}]").into())),
            },
            Event::Html(raw) | Event::InlineHtml(raw) => {
                push(&mut out, &mut open, Event::Text(raw));
            }
            Event::Start(Tag::Image { link_type, dest_url, title, id }) => {
                let link = Event::Start(Tag::Link { link_type, dest_url, title, id });
                push(&mut out, &mut open, link);
            }
            Event::End(TagEnd::Image) => push(&mut out, &mut open, Event::End(TagEnd::Link)),
            other => push(&mut out, &mut open, other),
        }
    }
    abandon(&mut out, &mut open);
    out
}

/// Emits one run of adjacent, verbatim text (and soft-break) events: inline notes opening,
/// continuing or closing in it, then (at the end of a paragraph) the block IDs.
/// `escaped_start`: the run's first character was escaped, so it cannot start any syntax.
/// Returns whether the run was only block IDs (nothing visible remains).
fn flush<'a>(
    src: &'a str,
    run: Vec<Spanned<'a>>,
    escaped_start: bool,
    is_final: bool,
    notes: &mut Notes<'a>,
    open: &mut Option<Open<'a>>,
    out: &mut Vec<Event<'a>>,
) -> bool {
    let (Some(first), Some(last)) = (run.first(), run.last()) else { return false };
    let text: &'a str = src.get(first.1.start..last.1.end).unwrap_or_default();
    let mut visible = false;
    let mut rest = text;
    if escaped_start && let Some(c) = rest.chars().next() {
        let (lead, after) = rest.split_at(c.len_utf8());
        visible |= open.is_none();
        push(out, open, Event::Text(CowStr::Borrowed(lead)));
        rest = after;
    }
    loop {
        if let Some(note) = open.as_mut() {
            match close_at(rest, &mut note.depth) {
                Some(at) => {
                    if at > 0 {
                        note.body.push(Event::Text(CowStr::Borrowed(&rest[..at])));
                    }
                    let body = open.take().map(|n| n.body).unwrap_or_default();
                    let blank =
                        body.iter().all(|e| matches!(e, Event::Text(t) if t.trim().is_empty()));
                    if blank {
                        out.push(Event::Text(CowStr::Borrowed("^[")));
                        out.extend(body);
                        out.push(Event::Text(CowStr::Borrowed("]")));
                    } else {
                        out.push(Event::Html(notes.inline(body).into()));
                    }
                    visible = true;
                    rest = &rest[at + 1..];
                }
                None => {
                    if !rest.is_empty() {
                        note.body.push(Event::Text(CowStr::Borrowed(rest)));
                    }
                    return false;
                }
            }
            continue;
        }
        let Some(at) = rest.find("^[") else { break };
        if at > 0 {
            out.push(Event::Text(CowStr::Borrowed(&rest[..at])));
            visible = true;
        }
        *open = Some(Open { body: Vec::new(), depth: 1 });
        rest = &rest[at + 2..];
    }
    let mut anchors = Vec::new();
    let mut tail = rest;
    if is_final {
        let line_start = matches!(
            out.last(),
            None | Some(
                Event::Start(Tag::Paragraph | Tag::Item) | Event::SoftBreak | Event::HardBreak
            )
        );
        // `\^abc`: the escaped caret went out as `lead`, and `abc` is no block ID.
        let (kept, ids) = split_block_ids(rest, !visible && line_start);
        tail = kept;
        anchors = ids;
    }
    if !tail.is_empty() {
        out.push(Event::Text(CowStr::Borrowed(tail)));
        visible = true;
    }
    let emptied = !visible && !anchors.is_empty();
    for id in anchors {
        out.push(Event::Html(
            format!("<a class=\"{BLOCK_ANCHOR_CLASS}\" id=\"^{id}\"></a>").into(),
        ));
    }
    emptied
}

/// The byte index of the `]` that closes an inline note whose brackets are `depth` deep,
/// updating `depth` when the note stays open past `text`.
fn close_at(text: &str, depth: &mut usize) -> Option<usize> {
    for (i, c) in text.char_indices() {
        match c {
            '[' => *depth += 1,
            ']' => {
                *depth -= 1;
                if *depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether `word` is `^` followed by Latin letters, digits and hyphens.
fn is_block_id(word: &str) -> bool {
    word.strip_prefix('^').is_some_and(|id| {
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

/// Splits trailing ` ^id` words off `text`: the text to keep (trailing spaces removed) and the
/// IDs in order. With `whole`, the text may consist of IDs only (a standalone ID line).
fn split_block_ids(text: &str, whole: bool) -> (&str, Vec<String>) {
    let mut kept = text.trim_end();
    let mut ids = Vec::new();
    loop {
        let (head, word, spaced) = match kept.rfind(char::is_whitespace) {
            Some(at) => (&kept[..at], kept[at..].trim_start(), true),
            None => ("", kept, false),
        };
        // `text^id` glued to what precedes it (in another event) is not a block ID.
        if !is_block_id(word) || (!spaced && !whole) {
            break;
        }
        ids.push(word[1..].to_owned());
        kept = head.trim_end();
        if kept.is_empty() {
            break;
        }
    }
    if ids.is_empty() {
        return (text, ids);
    }
    ids.reverse();
    (kept, ids)
}

/// The sanitizer: exactly the elements and attributes this renderer emits.
fn sanitizer() -> &'static ammonia::Builder<'static> {
    static BUILDER: OnceLock<ammonia::Builder<'static>> = OnceLock::new();
    BUILDER.get_or_init(|| {
        let mut b = ammonia::Builder::empty();
        b.add_tags([
            "p",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "ul",
            "ol",
            "li",
            "a",
            "sup",
            "section",
            "hr",
            "code",
            "pre",
            "em",
            "strong",
            "del",
            "blockquote",
            "br",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
        ]);
        b.add_tag_attributes("a", ["href", "id", "title"]);
        b.add_tag_attributes("sup", ["id"]);
        b.add_tag_attributes("li", ["id"]);
        b.add_tag_attributes("ol", ["start"]);
        b.add_allowed_classes("section", [FOOTNOTES_CLASS]);
        b.add_allowed_classes("sup", ["footnote-ref"]);
        b.add_allowed_classes("a", [BLOCK_ANCHOR_CLASS, "footnote-backref"]);
        b.url_schemes(["http", "https"].into_iter().collect());
        b.url_relative(ammonia::UrlRelative::PassThrough);
        // No `rel`: the page sends no referrer at all (`Referrer-Policy: no-referrer`) and opens
        // no new windows.
        b.link_rel(None);
        b.strip_comments(true);
        b.clean_content_tags(["script", "style"].into_iter().collect());
        b
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ids_split_off_the_end_only() {
        assert_eq!(
            split_block_ids("fact. ^abc ^d-1", false),
            ("fact.", vec!["abc".into(), "d-1".into()])
        );
        assert_eq!(split_block_ids("^abc", true), ("", vec!["abc".into()]));
        assert_eq!(split_block_ids("^abc", false).1, Vec::<String>::new());
        assert_eq!(split_block_ids("x ^ab_c", false).1, Vec::<String>::new());
        assert_eq!(split_block_ids("x ^abc y", false).1, Vec::<String>::new());
    }

    #[test]
    fn flattening_keeps_the_content_and_balances_the_tags() {
        let deep = ">".repeat(MAX_NESTING * 2) + " deep";
        let events = flatten(Parser::new(&deep).collect());
        let quotes = events.iter().filter(|e| matches!(e, Event::Start(Tag::BlockQuote(_))));
        assert_eq!(quotes.count(), MAX_NESTING);
        assert!(events.iter().any(|e| matches!(e, Event::Text(t) if t.as_ref() == "deep")));
        let ends = events.iter().filter(|e| matches!(e, Event::End(TagEnd::BlockQuote(_))));
        assert_eq!(ends.count(), MAX_NESTING);
        // An element left open is closed; an end tag without its start passes unchanged.
        let open = flatten(vec![Event::Start(Tag::Emphasis), Event::Text("a".into())]);
        assert_eq!(open.last(), Some(&Event::End(TagEnd::Emphasis)));
        let stray = flatten(vec![Event::Text("a".into()), Event::End(TagEnd::Strong)]);
        assert_eq!(stray.last(), Some(&Event::End(TagEnd::Strong)));
    }

    #[test]
    fn inline_notes_close_at_the_balancing_bracket() {
        let mut depth = 1;
        assert_eq!(close_at("b [c]] d", &mut depth), Some(5));
        let mut depth = 1;
        assert_eq!(close_at("b [c", &mut depth), None);
        assert_eq!(depth, 2);
        assert_eq!(close_at("]]", &mut depth), Some(1));
    }
}
