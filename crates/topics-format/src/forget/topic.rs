//! Forgetting in topic files (see `docs/format.md#forgetting-in-topic-files`).
//!
//! One file is read once as a [`Document`]; every decision is made on its lines and paragraphs,
//! and the new text is assembled from the untouched bytes of every line that stays and the new
//! bytes of the few that change. Removal works on whole units of the grammar (a paragraph, a
//! definition line, a source link, a citation, a block link, a fenced block), so nothing is
//! left that the strict parse would refuse: a definition without a source goes with its
//! citations, a paragraph without a citation goes, and an edited paragraph that would no longer
//! segment as the same one paragraph with the same block IDs goes whole.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

use super::redact::redact;
use super::{Forgetting, parent_dir};
use crate::python::is_space;
use crate::topic::{
    BLOCK_LINK, Document, LineKind, TopicFile, block_suffix, citation_groups, citations,
    definition_match, is_memory_id, links, split_bare_sources,
};

/// What [`forget_in_topic`] did to one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicForget {
    /// The new text; `None` when the file does not change. A file left without a record holds
    /// only headings, HTML or fenced lines, or nothing at all.
    pub text: Option<String>,
    /// Every unit ID that is gone, in file order: all the IDs (aliases included) of each removed
    /// paragraph, and the legacy `mem_` units a kept legacy paragraph lost.
    pub removed_blocks: Vec<String>,
    /// The unit IDs of paragraphs that stay but lost a citation (and the text only that citation
    /// supported), in file order.
    pub kept_blocks_uncited: Vec<String>,
    /// The unit IDs of paragraphs that stay but had a block link turned into its label.
    pub kept_blocks_unlinked: Vec<String>,
    /// The footnote IDs whose definitions went, in file order.
    pub removed_footnotes: Vec<String>,
    /// The 1-based lines (of the input) of headings, HTML lines and fences that held the literal:
    /// it was replaced by [`FORGOTTEN`](super::FORGOTTEN), or the line (a fence: its whole
    /// block) went when a replacement would change what the line is.
    pub redacted_lines: Vec<u32>,
}

/// What [`forget_in_tree`] did to a tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeForget {
    /// Every file whose text changed, with its new text, in input order.
    pub changed: Vec<TopicFile>,
    /// Every unit ID that is gone, in any file.
    pub removed_blocks: BTreeSet<String>,
    /// The unit IDs of paragraphs that stay but lost a citation.
    pub kept_blocks_uncited: BTreeSet<String>,
    /// The unit IDs of paragraphs that stay but lost a block link.
    pub kept_blocks_unlinked: BTreeSet<String>,
}

/// Forgets `forgetting` in one topic file (`path` relative to `topics/`), given the blocks
/// removed in other files (`removed_elsewhere`: links to them become their labels).
///
/// - A paragraph goes (with the blank line that separated it) when one of its unit IDs is a
///   forgotten block, when it holds the literal, when it cited something and cites nothing
///   any more, or when what is left of it would not segment as the same paragraph.
/// - A footnote definition loses every source link that names a forgotten record or whose
///   link holds the literal (the rest joined by `", "`, as normalization writes them); a
///   definition left without a source, or that still holds the literal, goes, and so do its
///   citations in every paragraph of the file; a definition whose citing paragraphs all went
///   goes too.
/// - A citation group whose citations all went takes with it the text it supported (the text
///   since the group before it), so the paragraph keeps only text that is still cited, and its
///   block ID.
/// - A block link to a removed block (here or in `removed_elsewhere`) becomes its label.
/// - A heading, HTML line or fence that holds the literal has it replaced by
///   [`FORGOTTEN`](super::FORGOTTEN).
///
/// Everything else stays byte for byte. A heading whose section is left empty stays (the
/// transaction's normalization prunes it). Idempotent: forgetting the same again in the result
/// changes nothing.
#[must_use = "nothing is forgotten until the new text is installed"]
pub fn forget_in_topic(
    path: &str,
    text: &str,
    forgetting: &Forgetting,
    removed_elsewhere: &HashSet<String>,
) -> TopicForget {
    let dir = match parent_dir(path) {
        "" => "topics".to_owned(),
        parent => format!("topics/{parent}"),
    };
    forget_in_text(text, &dir, forgetting, &|id| forgetting.forgets_block(id), &|id| {
        removed_elsewhere.contains(id)
    })
}

/// Forgets `forgetting` in a whole topic tree: which blocks go in every file, then the links to
/// them. Returns each changed file's new text and every removed block ID.
///
/// Two passes in practice: the first finds what goes in each file, the second turns the links
/// into those blocks (in the files that hold a block link) into their labels. Only when such a
/// label joins its surroundings into the literal does that paragraph go too, and the pass is
/// repeated with what it removed.
#[must_use = "nothing is forgotten until the new texts are installed"]
pub fn forget_in_tree(files: &[TopicFile], forgetting: &Forgetting) -> TreeForget {
    let mut removed: HashSet<String> = HashSet::new();
    let mut results: Vec<TopicForget> = Vec::with_capacity(files.len());
    for file in files {
        results.push(forget_in_topic(&file.path, &file.text, forgetting, &removed));
    }
    loop {
        let all: HashSet<String> =
            results.iter().flat_map(|r| r.removed_blocks.iter().cloned()).collect();
        if all.is_subset(&removed) {
            break;
        }
        removed.extend(all);
        for (file, result) in files.iter().zip(results.iter_mut()) {
            // Only a block link depends on what other files removed.
            if file.text.contains("#^") {
                *result = forget_in_topic(&file.path, &file.text, forgetting, &removed);
            }
        }
    }
    let mut out = TreeForget::default();
    for (file, result) in files.iter().zip(results) {
        out.removed_blocks.extend(result.removed_blocks);
        out.kept_blocks_uncited.extend(result.kept_blocks_uncited);
        out.kept_blocks_unlinked.extend(result.kept_blocks_unlinked);
        if let Some(text) = result.text {
            out.changed.push(TopicFile { path: file.path.clone(), text });
        }
    }
    out
}

/// One footnote definition line.
struct Def {
    line: usize,
    id: String,
    removed: bool,
    /// The line with some source links taken out.
    rewritten: Option<String>,
}

/// One paragraph.
struct Para {
    lines: Range<usize>,
    /// Byte range of the text: the first line's start to the last line's content end.
    span: Range<usize>,
    /// Its unit IDs: the block suffix (identity last), or the legacy `mem_` citations.
    ids: Vec<String>,
    /// The footnote IDs it cites.
    cites: Vec<String>,
    removed: bool,
    /// The new text, when it stays but changes.
    edited: Option<String>,
    uncited: bool,
    unlinked: bool,
    /// Legacy units the paragraph lost while staying.
    lost_units: Vec<String>,
}

/// What editing a paragraph gave.
enum Edit {
    Remove,
    Keep { text: Option<String>, uncited: bool, unlinked: bool, lost_units: Vec<String> },
}

/// [`forget_in_topic`] of a text whose links are relative to `dir` (workspace-relative), with
/// the forgotten blocks given by `forgotten` and the blocks removed elsewhere by `elsewhere`.
/// The root `core.md` view is read with the same rules (`dir` = `""`).
pub(crate) fn forget_in_text(
    text: &str,
    dir: &str,
    forgetting: &Forgetting,
    forgotten: &dyn Fn(&str) -> bool,
    elsewhere: &dyn Fn(&str) -> bool,
) -> TopicForget {
    let doc = Document::parse(text);
    let lines = doc.lines();
    let content = |i: usize| &text[lines[i].content.clone()];

    let mut defs = definitions(&doc, text, dir, forgetting);
    let mut def_of: HashMap<&str, usize> = HashMap::new();
    for (k, def) in defs.iter().enumerate() {
        def_of.entry(def.id.as_str()).or_insert(k);
    }

    let mut paras: Vec<Para> = doc
        .paragraphs()
        .iter()
        .filter_map(|paragraph| {
            let first = lines.get(paragraph.lines.start)?;
            let last = lines.get(paragraph.lines.end.checked_sub(1)?)?;
            let span = first.content.start..last.content.end;
            let par = &text[span.clone()];
            let ids = unit_ids(par);
            let cites: Vec<String> =
                citations(par).into_iter().map(|r| par[r].to_owned()).collect();
            let removed = ids.iter().any(|id| forgotten(id)) || forgetting.matches(par);
            Some(Para {
                lines: paragraph.lines.clone(),
                span,
                ids,
                cites,
                removed,
                edited: None,
                uncited: false,
                unlinked: false,
                lost_units: Vec::new(),
            })
        })
        .collect();

    // Paragraphs, until no further block is removed here (a removal here only matters to the
    // paragraphs holding a block link).
    let mut removed_here: HashSet<String> =
        paras.iter().filter(|p| p.removed).flat_map(|p| p.ids.iter().cloned()).collect();
    let mut first = true;
    loop {
        let mut grew = false;
        for para in paras.iter_mut().filter(|p| !p.removed) {
            let par = &text[para.span.clone()];
            if !first && !par.contains("#^") {
                continue;
            }
            let gone = |id: &str| elsewhere(id) || removed_here.contains(id);
            match edit_paragraph(par, &para.ids, &defs, &def_of, &gone, forgetting) {
                Edit::Remove => {
                    para.removed = true;
                    para.edited = None;
                    removed_here.extend(para.ids.iter().cloned());
                    grew = true;
                }
                Edit::Keep { text, uncited, unlinked, lost_units } => {
                    for unit in &lost_units {
                        grew |= removed_here.insert(unit.clone());
                    }
                    para.edited = text;
                    para.uncited = uncited;
                    para.unlinked = unlinked;
                    para.lost_units = lost_units;
                }
            }
        }
        first = false;
        if !grew {
            break;
        }
    }

    // A definition whose citing paragraphs all went would be unused.
    let mut citers: HashMap<&str, (usize, usize)> = HashMap::new();
    for para in &paras {
        for id in &para.cites {
            let entry = citers.entry(id.as_str()).or_insert((0, 0));
            entry.0 += 1;
            if para.removed {
                entry.1 += 1;
            }
        }
    }
    for def in &mut defs {
        if let Some(&(all, gone)) = citers.get(def.id.as_str())
            && all == gone
        {
            def.removed = true;
        }
    }

    let mut gone = vec![false; lines.len()];
    let mut replaced: Vec<Option<String>> = vec![None; lines.len()];
    for para in paras.iter().filter(|p| p.removed) {
        gone[para.lines.clone()].fill(true);
    }
    for def in &defs {
        if def.removed {
            gone[def.line] = true;
        } else if let Some(line) = &def.rewritten {
            replaced[def.line] = Some(line.clone());
        }
    }
    let redacted_lines = redact_structure(&doc, text, forgetting, &mut gone, &mut replaced);

    let edited_at: HashMap<usize, &Para> = paras
        .iter()
        .filter(|p| !p.removed && p.edited.is_some())
        .map(|p| (p.lines.start, p))
        .collect();
    let blank_before = absorb_blank_lines(&doc, &mut gone);
    let mut out = String::with_capacity(text.len());
    // The line break of the last line written: an empty line that keeps two paragraphs apart
    // is written with it.
    let mut line_break = "\n";
    let mut i = 0;
    while i < lines.len() {
        if blank_before[i] {
            out.push_str(line_break);
        }
        if gone[i] {
            i += 1;
            continue;
        }
        let (body, last) = match edited_at.get(&i).and_then(|p| Some((p.edited.as_deref()?, p))) {
            Some((edited, para)) => (edited, para.lines.end - 1),
            None => (replaced[i].as_deref().unwrap_or(content(i)), i),
        };
        out.push_str(body);
        let terminator = &text[lines[last].terminator.clone()];
        out.push_str(terminator);
        if !terminator.is_empty() {
            line_break = terminator;
        }
        i = last + 1;
    }

    let mut report = TopicForget { redacted_lines, ..TopicForget::default() };
    for para in &paras {
        if para.removed {
            report.removed_blocks.extend(para.ids.iter().cloned());
            continue;
        }
        report.removed_blocks.extend(para.lost_units.iter().cloned());
        let kept = para.ids.iter().filter(|id| !para.lost_units.contains(id)).cloned();
        if para.uncited {
            report.kept_blocks_uncited.extend(kept.clone());
        }
        if para.unlinked {
            report.kept_blocks_unlinked.extend(kept);
        }
    }
    report.removed_footnotes = defs.iter().filter(|d| d.removed).map(|d| d.id.clone()).collect();
    if out != text {
        report.text = Some(out);
    }
    report
}

/// Every footnote definition line, with the source links that name forgotten records (or hold
/// the literal) taken out.
fn definitions(doc: &Document, text: &str, dir: &str, forgetting: &Forgetting) -> Vec<Def> {
    let mut defs = Vec::new();
    for (index, line) in doc.lines().iter().enumerate() {
        if !matches!(line.kind, LineKind::Definition { .. }) {
            continue;
        }
        let body = &text[line.content.clone()];
        let Some(m) = definition_match(body) else { continue };
        let sources = &body[m.sources.clone()];
        let found = links(sources);
        // The entries of the `Sources:` list: its links, or (a legacy form) its bare values.
        let entries: Vec<(&str, &str)> = if found.is_empty() {
            split_bare_sources(sources).into_iter().map(|value| (value, value)).collect()
        } else {
            found.iter().map(|l| (&sources[l.whole.clone()], &sources[l.target.clone()])).collect()
        };
        let kept: Vec<&str> = entries
            .iter()
            .filter(|(whole, target)| {
                !forgetting.names_source(dir, target) && !forgetting.matches(whole)
            })
            .map(|(whole, _)| *whole)
            .collect();
        let (removed, rewritten) = if kept.len() == entries.len() {
            (forgetting.matches(body), None)
        } else if kept.is_empty() {
            (true, None)
        } else {
            let line = format!(
                "{}{}{}",
                &body[..m.sources.start],
                kept.join(", "),
                &body[m.sources.end..]
            );
            (forgetting.matches(&line), Some(line))
        };
        defs.push(Def { line: index, id: body[m.id.clone()].to_owned(), removed, rewritten });
    }
    defs
}

/// The unit IDs of a paragraph: its block suffix (identity last), else its legacy `mem_`
/// citation groups.
fn unit_ids(par: &str) -> Vec<String> {
    if let Some((_, ids)) = block_suffix(par) {
        return ids.into_iter().map(|r| par[r].to_owned()).collect();
    }
    citation_groups(par)
        .into_iter()
        .filter(|g| g.ids.iter().all(|r| is_memory_id(&par[r.clone()])))
        .flat_map(|g| g.ids.into_iter().map(|r| par[r].to_owned()).collect::<Vec<_>>())
        .collect()
}

/// What is left of one paragraph: without the citations of removed definitions (a group that
/// loses all of them takes the text it supported), with block links to `gone` blocks turned
/// into their labels.
fn edit_paragraph(
    par: &str,
    ids: &[String],
    defs: &[Def],
    def_of: &HashMap<&str, usize>,
    gone: &dyn Fn(&str) -> bool,
    forgetting: &Forgetting,
) -> Edit {
    let suffix = block_suffix(par);
    let body_end = suffix.as_ref().map_or(par.len(), |(start, _)| *start);
    let legacy = suffix.is_none();
    let removed_def = |id: &str| def_of.get(id).is_some_and(|&k| defs[k].removed);
    let mut cuts: Vec<Range<usize>> = Vec::new();
    let mut lost_units = Vec::new();
    let (mut cited, mut left) = (0, 0);
    let mut previous_end = 0;
    for group in citation_groups(&par[..body_end]) {
        let dead: Vec<&Range<usize>> =
            group.ids.iter().filter(|r| removed_def(&par[(*r).clone()])).collect();
        cited += group.ids.len();
        left += group.ids.len() - dead.len();
        if dead.len() == group.ids.len() {
            // The text since the group before was supported by this group alone.
            cuts.push(previous_end..group.range.end);
        } else {
            cuts.extend(dead.iter().map(|r| r.start - 2..r.end + 1));
        }
        if legacy {
            lost_units.extend(
                dead.iter().map(|r| &par[(*r).clone()]).filter(|id| ids.iter().any(|u| u == id)),
            );
        }
        previous_end = group.range.end;
    }
    if cited > 0 && left == 0 {
        return Edit::Remove;
    }
    let uncited = !cuts.is_empty();
    let cut = apply_cuts(par, &mut cuts);
    let (unlinked_text, unlinked) = unlink(&cut, gone);
    if !uncited && !unlinked {
        return Edit::Keep {
            text: None,
            uncited,
            unlinked,
            lost_units: lost_units.into_iter().map(str::to_owned).collect(),
        };
    }
    if forgetting.matches(&unlinked_text) || !same_paragraph(&unlinked_text, par, legacy) {
        return Edit::Remove;
    }
    Edit::Keep {
        text: Some(unlinked_text),
        uncited,
        unlinked,
        lost_units: lost_units.into_iter().map(str::to_owned).collect(),
    }
}

/// `par` without the `cuts`; a cut from the start also takes the whitespace after it, so the
/// paragraph does not start with the space that separated two sentences.
fn apply_cuts(par: &str, cuts: &mut [Range<usize>]) -> String {
    if cuts.is_empty() {
        return par.to_owned();
    }
    cuts.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(par.len());
    let mut copied = 0;
    for cut in cuts.iter() {
        if cut.start > copied {
            out.push_str(&par[copied..cut.start]);
        }
        copied = copied.max(cut.end);
        if out.is_empty() {
            copied = par[copied..].find(|c: char| !is_space(c)).map_or(par.len(), |k| copied + k);
        }
    }
    out.push_str(&par[copied.min(par.len())..]);
    out
}

/// Every block link to a `gone` block turned into its label; whether one was.
fn unlink(text: &str, gone: &dyn Fn(&str) -> bool) -> (String, bool) {
    if !text.contains("#^") {
        return (text.to_owned(), false);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for caps in BLOCK_LINK.captures_iter(text) {
        let (Some(whole), Some(id)) = (caps.get(0), caps.get(1)) else { continue };
        if !gone(id.as_str()) {
            continue;
        }
        // `\[[^]]+\]`: the label ends at the first `]`.
        let link = whole.as_str();
        let label = link[1..].split(']').next().unwrap_or_default();
        out.push_str(&text[copied..whole.start()]);
        out.push_str(label);
        copied = whole.end();
    }
    if copied == 0 {
        return (text.to_owned(), false);
    }
    out.push_str(&text[copied..]);
    (out, true)
}

/// Every block link to a `gone` block of `text` turned into its label (borrowed when none).
pub(crate) fn unlink_gone<'t>(
    text: &'t str,
    gone: &dyn Fn(&str) -> bool,
) -> std::borrow::Cow<'t, str> {
    match unlink(text, gone) {
        (out, true) => std::borrow::Cow::Owned(out),
        (_, false) => std::borrow::Cow::Borrowed(text),
    }
}

/// Whether `edited` still reads as one paragraph (every line prose) with the block IDs of the
/// original `par`.
fn same_paragraph(edited: &str, par: &str, legacy: bool) -> bool {
    let doc = Document::parse(edited);
    if doc.lines().is_empty() || doc.lines().iter().any(|l| l.kind != LineKind::Paragraph) {
        return false;
    }
    if legacy {
        return block_suffix(edited).is_none();
    }
    let ids = |t: &str| {
        block_suffix(t).map(|(_, ids)| ids.into_iter().map(|r| t[r].to_owned()).collect::<Vec<_>>())
    };
    ids(edited) == ids(par)
}

/// Replaces the literal in headings, HTML lines and fences (or drops the line, a fence with its
/// whole block, when the replacement would change what the line is). Returns the 1-based lines
/// that held it.
fn redact_structure(
    doc: &Document,
    text: &str,
    forgetting: &Forgetting,
    gone: &mut [bool],
    replaced: &mut [Option<String>],
) -> Vec<u32> {
    let Some(literal) = forgetting.literal() else {
        return Vec::new();
    };
    let lines = doc.lines();
    let mut out = Vec::new();
    let mut fence_open: Option<usize> = None;
    let mut drop_fence: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        let body = &text[line.content.clone()];
        let holds = body.contains(literal);
        let structure = matches!(
            line.kind,
            LineKind::Fence | LineKind::Fenced | LineKind::Heading { .. } | LineKind::Html
        );
        if holds && structure {
            out.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
        }
        match &line.kind {
            LineKind::Fence => {
                let opening = fence_open.is_none();
                if opening {
                    fence_open = Some(i);
                }
                if holds {
                    let redacted = redact(body, literal);
                    if kind_alone(&redacted) == LineKind::Fence && !redacted.contains(literal) {
                        replaced[i] = Some(redacted.into_owned());
                    } else {
                        drop_fence = fence_open;
                    }
                }
                if !opening {
                    if let (Some(open), Some(_)) = (fence_open, drop_fence) {
                        gone[open..=i].fill(true);
                    }
                    fence_open = None;
                    drop_fence = None;
                }
            }
            LineKind::Heading { .. } | LineKind::Html | LineKind::Fenced if holds => {
                let redacted = redact(body, literal);
                let kind = kind_alone(&redacted);
                let same = match &line.kind {
                    LineKind::Fenced => kind != LineKind::Fence,
                    LineKind::Heading { .. } => matches!(kind, LineKind::Heading { .. }),
                    other => kind == *other,
                };
                if same && !redacted.contains(literal) {
                    replaced[i] = Some(redacted.into_owned());
                } else {
                    gone[i] = true;
                }
            }
            _ => {}
        }
    }
    // A fence left open runs to the end of the file.
    if let (Some(open), Some(_)) = (fence_open, drop_fence) {
        gone[open..].fill(true);
    }
    out
}

/// The kind of a line read on its own (outside any fence).
fn kind_alone(line: &str) -> LineKind {
    Document::parse(line).lines().first().map_or(LineKind::Blank, |l| l.kind.clone())
}

/// Takes away, with each run of removed lines, the blank line that separated it (the one after
/// it; when the end of the file went, the blank lines left at the end), and keeps two prose
/// lines that were apart from becoming one paragraph: returns where an empty line must be
/// written to keep them apart.
fn absorb_blank_lines(doc: &Document, gone: &mut [bool]) -> Vec<bool> {
    let lines = doc.lines();
    let n = lines.len();
    let blank = |i: usize| lines[i].kind == LineKind::Blank;
    let mut i = 0;
    while i < n {
        if !gone[i] {
            i += 1;
            continue;
        }
        while i < n && gone[i] {
            i += 1;
        }
        if i < n && blank(i) {
            gone[i] = true;
            i += 1;
        }
    }
    if gone.last() == Some(&true) {
        for k in (0..n).rev() {
            if gone[k] {
                continue;
            }
            if !blank(k) {
                break;
            }
            gone[k] = true;
        }
    }
    let prose = |i: usize| lines[i].kind == LineKind::Paragraph;
    let mut blank_before = vec![false; n];
    let mut previous: Option<usize> = None;
    for i in 0..n {
        if gone[i] {
            continue;
        }
        if let Some(p) = previous
            && i > p + 1
            && prose(p)
            && prose(i)
        {
            match (p + 1..i).find(|&k| blank(k)) {
                Some(k) => gone[k] = false,
                None => blank_before[i] = true,
            }
        }
        previous = Some(i);
    }
    blank_before
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "../sources/openprogram/_v2/s.md";

    /// `[label](../sources/openprogram/_v2/s.md#<anchor of openprogram/s/<m>>)`.
    fn link(label: &str, message: &str) -> String {
        format!(
            "[{label}]({SRC}#{})",
            crate::source::anchor_for(&format!("openprogram/s/{message}"))
        )
    }

    fn forgetting(sources: &[&str], blocks: &[&str], literal: Option<&str>) -> Forgetting {
        let sources: Vec<String> = sources.iter().map(|m| format!("openprogram/s/{m}")).collect();
        Forgetting::new(sources, blocks, literal).expect("valid")
    }

    /// `input` (with `{m}` standing for the link to message `m`) forgets to `expected`
    /// (`None`: unchanged).
    fn check(input: &str, f: &Forgetting, expected: Option<&str>) -> TopicForget {
        check_with(input, f, &HashSet::new(), expected)
    }

    fn check_with(
        input: &str,
        f: &Forgetting,
        elsewhere: &HashSet<String>,
        expected: Option<&str>,
    ) -> TopicForget {
        let expand = |s: &str| {
            let mut s = s.to_owned();
            for m in ["u1", "u2", "u3"] {
                s = s.replace(&format!("{{{m}}}"), &link(m, m));
            }
            s
        };
        let input = expand(input);
        let out = forget_in_topic("t.md", &input, f, elsewhere);
        assert_eq!(out.text.as_deref(), expected.map(expand).as_deref(), "forgetting in:\n{input}");
        // Idempotent.
        let again = out.text.clone().unwrap_or(input);
        assert_eq!(forget_in_topic("t.md", &again, f, elsewhere).text, None, "second pass");
        out
    }

    #[test]
    fn a_paragraph_citing_only_forgotten_records_goes_with_its_definition() {
        let out = check(
            "# T\n\nA.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}\n\nB.[^e-2] ^bbbbbbbb\n\n[^e-2]: Time: `2024`; Sources: {u2}\n",
            &forgetting(&["u1"], &[], None),
            Some("# T\n\nB.[^e-2] ^bbbbbbbb\n\n[^e-2]: Time: `2024`; Sources: {u2}\n"),
        );
        assert_eq!(out.removed_blocks, ["aaaaaaaa"]);
        assert_eq!(out.removed_footnotes, ["e-1"]);
    }

    #[test]
    fn a_definition_loses_only_the_forgotten_link() {
        let out = check(
            "A.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}, {u2}, {u3}\n",
            &forgetting(&["u2"], &[], None),
            Some("A.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}, {u3}\n"),
        );
        assert!(out.removed_blocks.is_empty() && out.kept_blocks_uncited.is_empty());
    }

    #[test]
    fn plain_handles_and_bare_values_are_recognised() {
        check(
            "A.[^e1] ^aaaaaaaa\n\n[^e1]: 2024 · Sources: openprogram/s/u1, openprogram/s/u2\n",
            &forgetting(&["u1"], &[], None),
            Some("A.[^e1] ^aaaaaaaa\n\n[^e1]: 2024 · Sources: openprogram/s/u2\n"),
        );
        check(
            "A.[^e1] ^aaaaaaaa\n\n[^e1]: Time: `2024`; Sources: [a](openprogram/s/u1)\n",
            &forgetting(&["u1"], &[], None),
            Some(""),
        );
    }

    #[test]
    fn a_kept_paragraph_keeps_what_is_still_cited() {
        let defs = "\n\n[^e-1]: Time: `2024`; Sources: {u1}\n[^e-2]: Time: `2024`; Sources: {u2}\n";
        let f = forgetting(&["u1"], &[], None);
        // The forgotten group was the first: its sentence goes, the rest starts the paragraph.
        let out = check(
            &format!("A.[^e-1] B.[^e-2] ^aaaaaaaa{defs}"),
            &f,
            Some("B.[^e-2] ^aaaaaaaa\n\n[^e-2]: Time: `2024`; Sources: {u2}\n"),
        );
        assert_eq!(out.kept_blocks_uncited, ["aaaaaaaa"]);
        // The last: no content is left after the final evidence.
        check(
            &format!("A.[^e-2] B.[^e-1] ^aaaaaaaa{defs}"),
            &f,
            Some("A.[^e-2] ^aaaaaaaa\n\n[^e-2]: Time: `2024`; Sources: {u2}\n"),
        );
        // One group citing both: the text stays, only the citation goes.
        check(
            &format!("A.[^e-1][^e-2] ^aaaaaaaa{defs}"),
            &f,
            Some("A.[^e-2] ^aaaaaaaa\n\n[^e-2]: Time: `2024`; Sources: {u2}\n"),
        );
        // Across lines.
        check(
            &format!("A.[^e-1]\nB.[^e-2]\n^aaaaaaaa{defs}"),
            &f,
            Some("B.[^e-2]\n^aaaaaaaa\n\n[^e-2]: Time: `2024`; Sources: {u2}\n"),
        );
    }

    #[test]
    fn a_definition_cited_elsewhere_stays() {
        check(
            "A.[^e-1] ^aaaaaaaa\n\nB.[^e-1] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            &forgetting(&[], &["aaaaaaaa"], None),
            Some("B.[^e-1] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: {u1}\n"),
        );
    }

    #[test]
    fn forgotten_blocks_go_by_identity_or_alias() {
        let text = "A.[^e-1] ^aaaaaaaa ^cccccccc\n\n[^e-1]: Time: `2024`; Sources: {u1}\n\n# End\n";
        for id in ["aaaaaaaa", "cccccccc"] {
            let out = check(text, &forgetting(&[], &[id], None), Some("# End\n"));
            assert_eq!(out.removed_blocks, ["aaaaaaaa", "cccccccc"]);
        }
    }

    #[test]
    fn block_links_to_removed_blocks_become_their_labels() {
        let f = forgetting(&[], &["aaaaaaaa"], None);
        let out = check(
            "A.[^e-1] ^aaaaaaaa\n\nSee [the fact](#^aaaaaaaa) and [that](other.md#^bbbbbbbb).[^e-1] ^cccccccc\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            &f,
            Some(
                "See the fact and [that](other.md#^bbbbbbbb).[^e-1] ^cccccccc\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            ),
        );
        assert_eq!(out.kept_blocks_unlinked, ["cccccccc"]);
        let elsewhere: HashSet<String> = ["bbbbbbbb".to_owned()].into();
        check_with(
            "See [that](other.md#^bbbbbbbb).[^e-1] ^cccccccc\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            &forgetting(&[], &[], None),
            &elsewhere,
            Some("See that.[^e-1] ^cccccccc\n\n[^e-1]: Time: `2024`; Sources: {u1}\n"),
        );
    }

    #[test]
    fn the_literal_takes_paragraphs_links_and_words_in_structure() {
        let f = forgetting(&[], &[], Some("Ana"));
        let out = check(
            "# About Ana\n\n<!-- Ana -->\n\nAna likes tea.[^e-1] ^aaaaaaaa\n\nBob likes tea.[^e-1][^e-2] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: {u1}\n[^e-2]: Time: `2024`; Sources: [chat with Ana]({SRC}#x), {u2}\n\n```\nAna\n```\n",
            &f,
            Some(
                "# About [FORGOTTEN]\n\n<!-- [FORGOTTEN] -->\n\nBob likes tea.[^e-1][^e-2] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: {u1}\n[^e-2]: Time: `2024`; Sources: {u2}\n\n```\n[FORGOTTEN]\n```\n",
            ),
        );
        assert_eq!(out.removed_blocks, ["aaaaaaaa"]);
        assert_eq!(out.redacted_lines, [1, 3, 13]);
    }

    #[test]
    fn a_structure_line_the_marker_would_change_goes() {
        // `#` + the literal: replacing it would make the heading prose; the fence would stop
        // being one, so its whole block goes.
        check(
            "# Ana x\n# Keep\n\n```\ncode\n```\n\nA.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            &forgetting(&[], &[], Some("# Ana")),
            Some(
                "# Keep\n\n```\ncode\n```\n\nA.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            ),
        );
        check(
            "# Keep\n\n```code\nx\n```\n\nA.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            &forgetting(&[], &[], Some("```code")),
            Some("# Keep\n\nA.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}\n"),
        );
    }

    #[test]
    fn removing_a_line_between_paragraphs_keeps_them_apart() {
        check(
            "A.[^e-1][^e-2] ^aaaaaaaa\n[^e-2]: Time: `2024`; Sources: {u2}\nB.[^e-1] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            &forgetting(&["u2"], &[], None),
            Some(
                "A.[^e-1] ^aaaaaaaa\n\nB.[^e-1] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            ),
        );
        check(
            "A.[^e-1] ^aaaaaaaa\n<!-- Ana -->\nB.[^e-1] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            &forgetting(&[], &[], Some("<!-- Ana")),
            Some(
                "A.[^e-1] ^aaaaaaaa\n\nB.[^e-1] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            ),
        );
    }

    #[test]
    fn the_last_paragraph_takes_the_blank_line_before_it() {
        check(
            "# T\n\nA.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}\n\nB.[^e-2] ^bbbbbbbb\n\n[^e-2]: Time: `2024`; Sources: {u2}\n",
            &forgetting(&["u2"], &[], None),
            Some("# T\n\nA.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}\n"),
        );
    }

    #[test]
    fn legacy_units_go_by_their_citation() {
        let out = check(
            "One.[^mem_a] Two.[^mem_b]\n\n[^mem_a]: Time: `2024`; Sources: {u1}\n[^mem_b]: Time: `2024`; Sources: {u2}\n",
            &forgetting(&["u1"], &[], None),
            Some("Two.[^mem_b]\n\n[^mem_b]: Time: `2024`; Sources: {u2}\n"),
        );
        assert_eq!(out.removed_blocks, ["mem_a"]);
        check(
            "One.[^mem_a] Two.[^mem_b]\n\n[^mem_a]: Time: `2024`; Sources: {u1}\n[^mem_b]: Time: `2024`; Sources: {u2}\n",
            &forgetting(&[], &["mem_b"], None),
            Some(""),
        );
    }

    #[test]
    fn an_edit_that_would_change_the_paragraph_removes_it() {
        // Without its first sentence the line would start a heading.
        check(
            "A.[^e-1] # B.[^e-2] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}\n[^e-2]: Time: `2024`; Sources: {u2}\n",
            &forgetting(&["u1"], &[], None),
            Some(""),
        );
    }

    #[test]
    fn nothing_to_forget_changes_nothing() {
        check(
            "# T\n\nA.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `2024`; Sources: {u1}\n",
            &forgetting(&["u9"], &["zzzzzzzz"], Some("Zed")),
            None,
        );
    }
}
