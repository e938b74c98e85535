//! The strict parse of a topic tree into memory units (see `docs/format.md#memory-units`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use super::grammar::{
    any_suffix, block_link_targets, block_suffix, citation_groups, citations, definition_match,
    is_memory_id, is_valid_temporal, links,
};
use super::segment::{LineKind, Segments, segment};
use super::text::{
    FastMap, FastSet, LineSpan, is_py_space, line_col, py_strip, py_strip_range, to_u32,
};
use crate::catalog::SourceResolver;
use crate::diag::{Code, Diagnostic};

/// One topic file as text. `path` is relative to `topics/` and `/`-separated
/// (e.g. `projects/budget-tracker.md`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TopicFile {
    /// Path relative to `topics/`, `/`-separated.
    pub path: String,
    /// The file's text.
    pub text: String,
}

impl TopicFile {
    /// A file at `path` (relative to `topics/`) with `text`.
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        TopicFile { path: path.into(), text: text.into() }
    }

    /// The workspace-relative path, `topics/<path>`, as diagnostics name it.
    pub fn workspace_path(&self) -> String {
        format!("topics/{}", self.path)
    }
}

/// One footnote a unit cites: the quote it supports and what the definition says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    /// The footnote ID, e.g. `e-cecd4ddc68`.
    pub citation_id: String,
    /// The text between the previous citation group and this one, trimmed.
    pub quote: String,
    /// The time value, `None` for `undated`.
    pub when: Option<String>,
    /// The resolved source references, one per link (shared with the definition).
    pub refs: Arc<[String]>,
    /// The link targets as written.
    pub targets: Arc<[String]>,
    /// The link labels as written.
    pub labels: Arc<[String]>,
}

/// A memory unit: one block ID of one paragraph (aliases are full units), or one legacy
/// `mem_` citation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// This unit's ID.
    pub memory_id: String,
    /// The paragraph's identity: the last ID of its suffix (equal to `memory_id` for the
    /// identity unit itself and for legacy units).
    pub identity: String,
    /// The other IDs of the same paragraph's suffix, in suffix order.
    pub aliases: Vec<String>,
    /// The paragraph body with every citation removed, trimmed.
    pub content: String,
    /// The first dated evidence time.
    pub when: Option<String>,
    /// Every distinct dated evidence time, in order.
    pub whens: Vec<String>,
    /// Ordered union of the evidence's source references.
    pub refs: Vec<String>,
    /// The link target of each of `refs` (as written in the first definition citing it).
    pub link_targets: Vec<String>,
    /// The link label of each of `refs`.
    pub labels: Vec<String>,
    /// Block-link targets (`[x](…#^id)`) in the body, in order.
    pub relation_targets: Vec<String>,
    /// The heading path above the paragraph (shared by the paragraphs of one section).
    pub headings: Arc<[String]>,
    /// The file, relative to `topics/`.
    pub topic_path: String,
    /// Units parsed before this paragraph across the tree (aliases share their paragraph's).
    pub created_order: usize,
    /// 1-based line where the paragraph starts.
    pub line: u32,
    /// Byte range of the (stripped) paragraph in the file.
    pub span: Range<usize>,
    /// The cited footnotes, in citation order (empty for legacy units).
    pub evidence: Vec<Evidence>,
    /// A legacy `mem_` unit (a paragraph without a block suffix).
    pub legacy: bool,
}

impl Unit {
    /// The footnote IDs this unit cites, in order.
    pub fn cited_evidence_ids(&self) -> impl Iterator<Item = &str> {
        self.evidence.iter().map(|e| e.citation_id.as_str())
    }
}

/// The result of parsing a topic tree: every unit that parsed and every violation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeParse {
    /// Units in tree order (files in sorted path order, paragraphs in file order).
    pub units: Vec<Unit>,
    /// Every violation, grouped by file in tree order, by position within a file.
    pub diagnostics: Vec<Diagnostic>,
}

impl TreeParse {
    /// Whether the tree parsed without a diagnostic.
    pub fn is_valid(&self) -> bool {
        self.diagnostics.is_empty()
    }
}

/// Orders topic paths like Python's `sorted()` over `Path` objects: component by component,
/// so `core.md` < `people/…` and `a/x.md` < `a-b.md`.
pub fn compare_topic_paths(a: &str, b: &str) -> Ordering {
    a.split('/').filter(|c| !c.is_empty()).cmp(b.split('/').filter(|c| !c.is_empty()))
}

/// Parses a whole topic tree strictly (see `docs/format.md#memory-units`): files in sorted path
/// order, every violation collected, units from the paragraphs that parsed.
///
/// Source link targets are resolved through `sources` (no IO here).
pub fn parse_tree(files: &[TopicFile], sources: &dyn SourceResolver) -> TreeParse {
    let mut order: Vec<&TopicFile> = files.iter().collect();
    order.sort_by(|a, b| compare_topic_paths(&a.path, &b.path));
    let mut tree = TreeState::default();
    for file in order {
        let start = tree.diagnostics.len();
        parse_file(file, sources, &mut tree);
        tree.diagnostics[start..].sort_by_key(|d| (d.line, d.col));
    }
    TreeParse { units: tree.units, diagnostics: tree.diagnostics }
}

#[derive(Default)]
struct TreeState<'f> {
    units: Vec<Unit>,
    /// Every unit ID so far, borrowed from the files.
    seen: FastSet<&'f str>,
    diagnostics: Vec<Diagnostic>,
}

/// One footnote definition of the file being parsed.
struct Definition<'t> {
    when: Option<&'t str>,
    refs: Arc<[String]>,
    targets: Arc<[String]>,
    labels: Arc<[String]>,
    /// It parsed without a diagnostic: units citing it can be emitted.
    ok: bool,
    line: usize,
    used: bool,
}

/// Reports diagnostics at byte offsets of one file.
struct Reporter<'t> {
    path: String,
    text: &'t str,
    lines: &'t [LineSpan],
}

impl Reporter<'_> {
    fn at(&self, offset: usize, code: Code, message: String) -> Diagnostic {
        let (line, col) = line_col(self.lines, self.text, offset);
        Diagnostic::new(self.path.clone(), line, col, code, message)
    }
}

fn parse_file<'f>(file: &'f TopicFile, sources: &dyn SourceResolver, tree: &mut TreeState<'f>) {
    let text = file.text.as_str();
    let seg = segment(text);
    let rep = Reporter { path: file.workspace_path(), text, lines: &seg.lines };
    let mut defs = definitions(file, &seg, sources, &rep, &mut tree.diagnostics);
    for paragraph in &seg.paragraphs {
        let par = ParagraphText::new(text, &seg.lines[paragraph.lines.clone()]);
        let ctx = ParagraphCtx {
            file,
            par: &par,
            headings: &paragraph.headings,
            line_index: paragraph.lines.start,
            rep: &rep,
        };
        parse_paragraph(&ctx, &mut defs, tree);
    }
    let mut unused: Vec<(&str, usize)> =
        defs.iter().filter(|(_, d)| !d.used).map(|(id, d)| (*id, d.line)).collect();
    unused.sort_by_key(|(_, line)| *line);
    for (id, line) in unused {
        let offset = seg.lines[line].start;
        tree.diagnostics.push(rep.at(
            offset,
            Code::UnusedFootnote,
            format!("unused footnote definition: {id}"),
        ));
    }
}

/// Parses every definition line of the file.
fn definitions<'t>(
    file: &'t TopicFile,
    seg: &Segments,
    sources: &dyn SourceResolver,
    rep: &Reporter<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> FastMap<&'t str, Definition<'t>> {
    let text = file.text.as_str();
    let mut defs: FastMap<&str, Definition<'_>> = FastMap::default();
    for (index, (span, kind)) in seg.lines.iter().zip(&seg.kinds).enumerate() {
        if !matches!(kind, LineKind::Definition { .. }) {
            continue;
        }
        let line = &text[span.start..span.end];
        let Some(m) = definition_match(line) else { continue };
        let at = |r: usize| span.start + r;
        let id = &line[m.id.clone()];
        if defs.contains_key(id) {
            diagnostics.push(rep.at(
                span.start,
                Code::DuplicateFootnoteDefinition,
                format!("duplicate footnote definition: {id}"),
            ));
            continue;
        }
        let when = &line[m.when.clone()];
        let mut ok = true;
        if when != "undated" && !is_valid_temporal(when) {
            diagnostics.push(rep.at(
                at(m.when.start),
                Code::InvalidEvidenceDate,
                format!("invalid evidence date: {when}"),
            ));
            ok = false;
        }
        let source_text = &line[m.sources.clone()];
        let mut refs = Vec::new();
        let mut targets = Vec::new();
        let mut labels = Vec::new();
        let mut blank_label = false;
        for link in links(source_text) {
            let label = &source_text[link.label.clone()];
            let target = &source_text[link.target.clone()];
            if py_strip(label).is_empty() && !blank_label {
                blank_label = true;
                diagnostics.push(rep.at(
                    at(m.sources.start + link.whole.start),
                    Code::SourceLabelsRequired,
                    format!("memory source labels required: {id}"),
                ));
                ok = false;
            }
            match sources.resolve_target(&file.path, target) {
                Ok(source_ref) => refs.push(source_ref),
                Err(err) => {
                    diagnostics.push(rep.at(
                        at(m.sources.start + link.target.start),
                        Code::InvalidSourceTarget,
                        err.message,
                    ));
                    ok = false;
                }
            }
            targets.push(target);
            labels.push(label);
        }
        if targets.is_empty() {
            diagnostics.push(rep.at(
                at(m.sources.start),
                Code::SourceLinksRequired,
                format!("memory source links required: {id}"),
            ));
            ok = false;
        }
        let when = (when != "undated").then_some(when);
        let targets: Vec<String> = targets.into_iter().map(str::to_owned).collect();
        let labels: Vec<String> = labels.into_iter().map(str::to_owned).collect();
        defs.insert(
            id,
            Definition {
                when,
                refs: refs.into(),
                targets: targets.into(),
                labels: labels.into(),
                ok,
                line: index,
                used: false,
            },
        );
    }
    defs
}

/// A paragraph's text as Python builds it (`"\n".join(lines).strip()`), with a map back to
/// file offsets.
struct ParagraphText<'t> {
    joined: Cow<'t, str>,
    /// Where each line starts in `joined`, and in the file.
    starts: Vec<(usize, usize)>,
    /// The stripped range of `joined`.
    stripped: Range<usize>,
}

impl<'t> ParagraphText<'t> {
    fn new(text: &'t str, lines: &[LineSpan]) -> Self {
        let (joined, starts) = match lines {
            [one] => (Cow::Borrowed(&text[one.start..one.end]), vec![(0, one.start)]),
            _ => {
                let mut joined = String::new();
                let mut starts = Vec::with_capacity(lines.len());
                for (i, line) in lines.iter().enumerate() {
                    if i > 0 {
                        joined.push('\n');
                    }
                    starts.push((joined.len(), line.start));
                    joined.push_str(&text[line.start..line.end]);
                }
                (Cow::Owned(joined), starts)
            }
        };
        let stripped = py_strip_range(&joined);
        ParagraphText { joined, starts, stripped }
    }

    /// The stripped paragraph text.
    fn text(&self) -> &str {
        &self.joined[self.stripped.clone()]
    }

    /// The file offset of byte `offset` of [`Self::text`].
    fn file_offset(&self, offset: usize) -> usize {
        let joined = self.stripped.start + offset;
        let k = self.starts.partition_point(|(s, _)| *s <= joined).saturating_sub(1);
        let (line_start, file_start) = self.starts.get(k).copied().unwrap_or((0, 0));
        file_start + (joined - line_start)
    }
}

struct ParagraphCtx<'a, 't> {
    file: &'t TopicFile,
    par: &'a ParagraphText<'t>,
    headings: &'a Arc<[String]>,
    line_index: usize,
    rep: &'a Reporter<'a>,
}

impl<'t> ParagraphCtx<'_, 't> {
    /// The file's own text for a range of the paragraph text (for keys that outlive the
    /// paragraph).
    fn file_str(&self, range: &Range<usize>) -> &'t str {
        let file: &'t str = &self.file.text;
        file.get(self.par.file_offset(range.start)..self.par.file_offset(range.end)).unwrap_or("")
    }

    fn report(&self, offset: usize, code: Code, message: String) -> Diagnostic {
        self.rep.at(self.par.file_offset(offset), code, message)
    }

    fn span(&self) -> Range<usize> {
        let len = self.par.text().len();
        self.par.file_offset(0)..self.par.file_offset(len)
    }
}

fn parse_paragraph<'f>(
    ctx: &ParagraphCtx<'_, 'f>,
    defs: &mut FastMap<&str, Definition<'_>>,
    tree: &mut TreeState<'f>,
) {
    let par = ctx.par.text();
    let before = tree.diagnostics.len();
    let block = block_suffix(par);
    if block.is_none() {
        if let Some(token) = any_suffix(par) {
            tree.diagnostics.push(ctx.report(
                token.start - 1,
                Code::InvalidBlockId,
                format!("invalid block_id: {}", &par[token]),
            ));
        } else {
            legacy_paragraph(ctx, defs, tree);
        }
    } else if let Some((start, ids)) = block {
        block_paragraph(ctx, defs, tree, start, &ids);
    }
    if tree.diagnostics.len() > before {
        // A paragraph with a violation still counts as citing its footnotes, so one mistake
        // does not also report every definition it cites as unused.
        for id in citations(par) {
            if let Some(def) = defs.get_mut(&par[id]) {
                def.used = true;
            }
        }
    }
}

fn block_paragraph<'f>(
    ctx: &ParagraphCtx<'_, 'f>,
    defs: &mut FastMap<&str, Definition<'_>>,
    tree: &mut TreeState<'f>,
    suffix_start: usize,
    ids: &[Range<usize>],
) {
    let par = ctx.par.text();
    let identity = ids.last().map_or("", |r| &par[r.clone()]);
    let body = par[..suffix_start].trim_end_matches(is_py_space);
    let mut evidence = Vec::new();
    let mut cursor = 0;
    let mut ok = true;
    let groups = citation_groups(body);
    for group in &groups {
        let quote = py_strip(&body[cursor..group.range.start]);
        if quote.is_empty() {
            let first = group.ids.first().map_or("", |r| &body[r.clone()]);
            tree.diagnostics.push(ctx.report(
                group.range.start,
                Code::MissingContent,
                format!("missing memory content before {first}"),
            ));
            ok = false;
        }
        for id_range in &group.ids {
            let id = &body[id_range.clone()];
            match defs.get_mut(id) {
                None => {
                    tree.diagnostics.push(ctx.report(
                        id_range.start - 2,
                        Code::UndefinedFootnote,
                        format!("undefined footnote: {id}"),
                    ));
                    ok = false;
                }
                Some(def) => {
                    def.used = true;
                    ok &= def.ok;
                    evidence.push(Evidence {
                        citation_id: id.to_owned(),
                        quote: quote.to_owned(),
                        when: def.when.map(str::to_owned),
                        refs: def.refs.clone(),
                        targets: def.targets.clone(),
                        labels: def.labels.clone(),
                    });
                }
            }
        }
        cursor = group.range.end;
    }
    if groups.is_empty() {
        tree.diagnostics.push(ctx.report(
            0,
            Code::FootnoteRequired,
            format!("memory source footnote required: {identity}"),
        ));
        ok = false;
    } else {
        let rest = &body[cursor..];
        let lead = rest.len() - rest.trim_start_matches(is_py_space).len();
        if lead < rest.len() {
            tree.diagnostics.push(ctx.report(
                cursor + lead,
                Code::ContentAfterEvidence,
                format!("content after final evidence: {identity}"),
            ));
            ok = false;
        }
    }
    if !ok {
        return;
    }
    let (refs, link_targets, labels) = union_refs(&evidence);
    let mut whens: Vec<String> = Vec::new();
    for when in evidence.iter().filter_map(|e| e.when.as_ref()) {
        if !whens.contains(when) {
            whens.push(when.clone());
        }
    }
    let all_ids: Vec<&str> = ids.iter().map(|r| &par[r.clone()]).collect();
    let created_order = tree.units.len();
    let template = Unit {
        memory_id: String::new(),
        identity: identity.to_owned(),
        aliases: Vec::new(),
        content: py_strip(&remove_citations(body)).to_owned(),
        when: whens.first().cloned(),
        whens,
        refs,
        link_targets,
        labels,
        relation_targets: block_link_targets(body),
        headings: ctx.headings.clone(),
        topic_path: ctx.file.path.clone(),
        created_order,
        line: to_u32(ctx.line_index + 1 + par_line_offset(ctx.par)),
        span: ctx.span(),
        evidence,
        legacy: false,
    };
    let fresh: Vec<usize> = (0..ids.len())
        .filter(|&k| {
            let id = ctx.file_str(&ids[k]);
            let new = tree.seen.insert(id);
            if !new {
                tree.diagnostics.push(ctx.report(
                    ids[k].start - 1,
                    Code::DuplicateMemoryId,
                    format!("duplicate memory_id: {id}"),
                ));
            }
            new
        })
        .collect();
    let mut template = Some(template);
    for (n, &k) in fresh.iter().enumerate() {
        // The last unit takes the template itself: one paragraph, one set of allocations.
        let mut unit = if n + 1 == fresh.len() { template.take() } else { template.clone() }
            .expect("the template is taken only by the last unit");
        unit.memory_id = all_ids[k].to_owned();
        if all_ids.len() > 1 {
            unit.aliases = all_ids
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .map(|(_, s)| (*s).to_owned())
                .collect();
        }
        tree.units.push(unit);
    }
}

/// The number of lines of the joined paragraph before its first non-whitespace character.
fn par_line_offset(par: &ParagraphText<'_>) -> usize {
    par.starts.partition_point(|(s, _)| *s <= par.stripped.start).saturating_sub(1)
}

fn legacy_paragraph<'f>(
    ctx: &ParagraphCtx<'_, 'f>,
    defs: &mut FastMap<&str, Definition<'_>>,
    tree: &mut TreeState<'f>,
) {
    let par = ctx.par.text();
    let mut cursor = 0;
    let mut found = false;
    let mut failed = false;
    let mut pending = Vec::new();
    for group in citation_groups(par) {
        let ids: Vec<(&'f str, usize)> =
            group.ids.iter().map(|r| (ctx.file_str(r), r.start)).collect();
        if ids.iter().any(|(id, _)| !is_memory_id(id)) {
            // Python skips such a group without moving its cursor: the next legacy unit's
            // content runs from the previous legacy group.
            continue;
        }
        let content = py_strip(&par[cursor..group.range.start]);
        if content.is_empty() {
            let first = ids.first().map_or("", |(id, _)| id);
            tree.diagnostics.push(ctx.report(
                group.range.start,
                Code::MissingContent,
                format!("missing memory content before {first}"),
            ));
            failed = true;
        }
        for (id, at) in ids {
            found = true;
            match defs.get_mut(id) {
                None => {
                    tree.diagnostics.push(ctx.report(
                        at - 2,
                        Code::UndefinedFootnote,
                        format!("undefined footnote: {id}"),
                    ));
                    failed = true;
                }
                Some(def) => {
                    def.used = true;
                    failed |= !def.ok;
                    pending.push((
                        id,
                        at,
                        content.to_owned(),
                        def.when,
                        def.refs.clone(),
                        def.targets.clone(),
                        def.labels.clone(),
                    ));
                }
            }
        }
        cursor = group.range.end;
    }
    if !found {
        // A paragraph that cites something but has no block ID lacks the ID (normalization
        // assigns it); one that cites nothing lacks the citation, which only its author can add.
        let diagnostic = if par.contains("[^") {
            ctx.report(
                0,
                Code::BlockIdRequired,
                format!("memory block ID required: {}", ctx.file.path),
            )
        } else {
            ctx.report(0, Code::UncitedParagraph, uncited_message(par))
        };
        tree.diagnostics.push(diagnostic);
        return;
    }
    if failed {
        return;
    }
    let base = tree.units.len();
    let line = to_u32(ctx.line_index + 1 + par_line_offset(ctx.par));
    for (k, (id, at, content, when, refs, targets, labels)) in pending.into_iter().enumerate() {
        if !tree.seen.insert(id) {
            tree.diagnostics.push(ctx.report(
                at - 2,
                Code::DuplicateMemoryId,
                format!("duplicate memory_id: {id}"),
            ));
            continue;
        }
        tree.units.push(Unit {
            memory_id: id.to_owned(),
            identity: id.to_owned(),
            aliases: Vec::new(),
            content,
            when: when.map(str::to_owned),
            whens: when.map(str::to_owned).into_iter().collect(),
            refs: refs.to_vec(),
            link_targets: targets.to_vec(),
            labels: labels.to_vec(),
            relation_targets: Vec::new(),
            headings: ctx.headings.clone(),
            topic_path: ctx.file.path.clone(),
            created_order: base + k,
            line,
            span: ctx.span(),
            evidence: Vec::new(),
            legacy: true,
        });
    }
}

/// `SINGLE_CITATION.sub("", body)`.
fn remove_citations(body: &str) -> Cow<'_, str> {
    let found = citations(body);
    if found.is_empty() {
        return Cow::Borrowed(body);
    }
    let mut out = String::with_capacity(body.len());
    let mut from = 0;
    for id in found {
        out.push_str(&body[from..id.start - 2]);
        from = id.end + 1;
    }
    out.push_str(&body[from..]);
    Cow::Owned(out)
}

/// The ordered union of the evidence's refs, with the target and label of each first
/// occurrence.
fn union_refs(evidence: &[Evidence]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut refs: Vec<String> = Vec::new();
    let mut targets = Vec::new();
    let mut labels = Vec::new();
    for e in evidence {
        for ((r, t), l) in e.refs.iter().zip(e.targets.iter()).zip(e.labels.iter()) {
            if !refs.contains(r) {
                refs.push(r.clone());
                targets.push(t.clone());
                labels.push(l.clone());
            }
        }
    }
    (refs, targets, labels)
}

/// The message of [`Code::UncitedParagraph`] for the paragraph `text`: what is missing and
/// how to supply it.
pub fn uncited_message(text: &str) -> String {
    format!("paragraph cites no source: {}; {CITE_HINT}", excerpt(text))
}

/// What every uncited-text message ends with.
pub const CITE_HINT: &str = "every paragraph must cite the archived message it came from: end \
     it with a footnote like [^e1] and add the line [^e1]: Time: `YYYY-MM-DD`; Sources: \
     [label](<source ref>)";

/// The first 60 characters of `text` (whitespace collapsed), quoted, `…` when cut.
pub fn excerpt(text: &str) -> String {
    let flat = super::text::collapse_whitespace(text);
    let flat = py_strip(&flat);
    let mut out: String = flat.chars().take(60).collect();
    if flat.chars().nth(60).is_some() {
        out.push('…');
    }
    format!("{out:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_path_order() {
        let mut paths = vec!["projects/x.md", "a-b.md", "core.md", "a/x.md", "people/dave.md"];
        paths.sort_by(|a, b| compare_topic_paths(a, b));
        assert_eq!(paths, ["a/x.md", "a-b.md", "core.md", "people/dave.md", "projects/x.md"]);
    }
}
