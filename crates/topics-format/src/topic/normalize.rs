//! Normalization of staged topic edits (see `docs/format.md#normalization`, steps 1–9, in order),
//! byte for byte the Python output except for one deliberate fix: local evidence labels map to
//! stable IDs per (file, label), never per label alone (see
//! `docs/format.md#where-we-deliberately-differ`, row "evidence IDs").

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use super::grammar::{
    block_suffix, citation_at, citations, definition_match, heading_match, is_block_char,
    is_footnote_char, is_local_label, is_memory_id, line_has_block_id, links, split_bare_sources,
};
use super::ids::BlockId;
use super::parse::{TopicFile, Unit, compare_topic_paths};
use super::segment::{LineKind, segment};
use super::text::{collapse_whitespace, is_py_space, py_rstrip, py_strip, split_lines};
use crate::catalog::SourceResolver;

/// One stable evidence ID minted for a local label.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EvidenceAssignment {
    /// The file, relative to `topics/`.
    pub path: String,
    /// The local label as written (`e1`, `new-evidence-x`).
    pub label: String,
    /// The stable ID (`e-` + 10 hex).
    pub id: String,
}

/// What normalization made of a staged topic tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Normalized {
    /// The whole new tree in sorted path order (deleted files left out).
    pub files: Vec<TopicFile>,
    /// Paths (relative to `topics/`) whose text changed and that still exist.
    pub changed: Vec<String>,
    /// Paths (relative to `topics/`) deleted because they hold no record.
    pub deleted: Vec<String>,
    /// Block IDs assigned, keyed `topics/<file>#<k>` with `k` the assignment index in the file.
    pub block_ids: BTreeMap<String, BlockId>,
    /// Evidence IDs minted for local labels, in path then line order.
    pub evidence_ids: Vec<EvidenceAssignment>,
    /// Written text that step 9 (prune) would drop, in path then line order: prose, code and
    /// HTML lines of sections that hold no record (the reference drops them silently; a
    /// transaction refuses them instead, see [`prune_report`]).
    pub dropped: Vec<DroppedText>,
}

/// A run of written lines that pruning would drop (see [`prune_report`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedText {
    /// The file, relative to `topics/`.
    pub path: String,
    /// The 1-based line (in the normalized text) where the run starts.
    pub line: u32,
    /// The run's first line, trimmed.
    pub text: String,
}

/// What normalizing some files of a tree needs to know about the rest of it: the committed
/// tree, and what the files left out of the call already use (so that no ID minted for the
/// normalized files collides with one of theirs). [`normalize`] of a whole tree needs nothing
/// of the second kind; a transaction that normalizes only the files it changed
/// ([`normalize_with`]) answers it from its baseline.
pub trait TreeContext {
    /// Whether `id` is a block ID of the committed tree.
    fn is_committed_block(&self, id: &str) -> bool;
    /// The committed unit with this ID (evidence of a paragraph moved between files).
    fn committed_unit(&self, id: &str) -> Option<&Unit>;
    /// Whether an evidence ID is defined by a file that is not being normalized.
    fn evidence_id_elsewhere(&self, id: &str) -> bool;
    /// Whether a line-end `^token` of a file that is not being normalized is `id`.
    fn block_id_elsewhere(&self, id: &str) -> bool;
}

/// The context of a whole tree: its committed IDs and units, nothing elsewhere.
struct WholeTree<'a> {
    block_ids: &'a HashSet<String>,
    units: HashMap<&'a str, &'a Unit>,
}

impl TreeContext for WholeTree<'_> {
    fn is_committed_block(&self, id: &str) -> bool {
        self.block_ids.contains(id)
    }
    fn committed_unit(&self, id: &str) -> Option<&Unit> {
        self.units.get(id).copied()
    }
    fn evidence_id_elsewhere(&self, _: &str) -> bool {
        false
    }
    fn block_id_elsewhere(&self, _: &str) -> bool {
        false
    }
}

/// Normalizes the staged `files` (see `docs/format.md#normalization`).
///
/// `committed_block_ids` are the block IDs of the installed tree (a trailing `^id` that is not
/// one of them is an invention and is stripped); `committed_units` are its units (they recover
/// the sources of evidence that a plain file move left with broken relative links). No IO:
/// source links come from `sources`.
///
/// Idempotent in the transaction sense: normalizing the output again, with the IDs it assigned
/// added to `committed_block_ids`, changes nothing.
pub fn normalize(
    files: &[TopicFile],
    committed_block_ids: &HashSet<String>,
    committed_units: &[Unit],
    sources: &dyn SourceResolver,
) -> Normalized {
    let units = committed_units.iter().map(|u| (u.memory_id.as_str(), u)).collect();
    normalize_with(files, &WholeTree { block_ids: committed_block_ids, units }, sources)
}

/// [`normalize`] of some files of a tree, the rest of it described by `tree`. Normalizing only
/// the files a transaction changed gives each of them exactly the text normalizing the whole
/// tree would: a normalized file normalizes to itself, and the IDs minted for the changed
/// files avoid every ID the others use, as they would in a whole-tree pass.
pub fn normalize_with(
    files: &[TopicFile],
    tree: &dyn TreeContext,
    sources: &dyn SourceResolver,
) -> Normalized {
    let mut order: Vec<&TopicFile> = files.iter().collect();
    order.sort_by(|a, b| compare_topic_paths(&a.path, &b.path));
    let paths: Vec<&str> = order.iter().map(|f| f.path.as_str()).collect();
    let originals: Vec<&str> = order.iter().map(|f| f.text.as_str()).collect();
    let mut texts: Vec<String> = originals.iter().map(|t| (*t).to_owned()).collect();

    // Step 1: relocated evidence.
    let relocated = relocated_evidence(&paths, &texts, tree);

    // Step 2: stable evidence IDs, keyed by (file, label).
    let mut used_evidence: HashSet<String> = HashSet::new();
    for text in &texts {
        collect_defined_ids(text, &mut used_evidence);
    }
    let mut evidence: HashMap<(usize, String), String> = HashMap::new();
    let mut evidence_ids = Vec::new();
    for (f, text) in texts.iter().enumerate() {
        for span in split_lines(text) {
            let line = &text[span.start..span.end];
            let Some(m) = definition_match(line) else { continue };
            let label = &line[m.id.clone()];
            if !is_local_label(label) || evidence.contains_key(&(f, label.to_owned())) {
                continue;
            }
            let seed = source_identity_seed(&line[m.sources.clone()]);
            let id = super::ids::mint_avoiding(
                &mut used_evidence,
                &|id| tree.evidence_id_elsewhere(id),
                |counter| super::ids::evidence_id_candidate(&line[m.when.clone()], &seed, counter),
            );
            evidence_ids.push(EvidenceAssignment {
                path: paths[f].to_owned(),
                label: label.to_owned(),
                id: id.clone(),
            });
            evidence.insert((f, label.to_owned()), id);
        }
    }

    // Step 3: orphan rebinding.
    for text in &mut texts {
        if let Some(rebound) = rebind_orphans(text) {
            *text = rebound;
        }
    }

    // Step 4: strip invented block IDs.
    for text in &mut texts {
        if let Cow::Owned(stripped) = strip_invented(text, &|id| tree.is_committed_block(id)) {
            *text = stripped;
        }
    }

    // Step 5: assign block IDs.
    let mut used_blocks: HashSet<String> = HashSet::new();
    for text in &texts {
        collect_line_end_ids(text, &mut used_blocks);
    }
    let mut assigned: Vec<BTreeMap<usize, String>> = vec![BTreeMap::new(); texts.len()];
    let mut block_ids = BTreeMap::new();
    for (f, text) in texts.iter().enumerate() {
        let seg = segment(text);
        let basename = paths[f].rsplit('/').next().unwrap_or(paths[f]);
        for paragraph in &seg.paragraphs {
            let lines = &seg.lines[paragraph.lines.clone()];
            let Some(last) = lines.last() else { continue };
            if line_has_block_id(&text[last.start..last.end]) {
                continue;
            }
            let joined: Vec<&str> = lines.iter().map(|l| &text[l.start..l.end]).collect();
            let body = collapse_whitespace(&joined.join(" "));
            if body.is_empty() || !body.contains("[^") {
                continue;
            }
            let cited = citations(&body);
            if !cited.is_empty() && cited.iter().all(|r| is_memory_id(&body[r.clone()])) {
                continue;
            }
            let id = super::ids::mint_avoiding(
                &mut used_blocks,
                &|id| tree.is_committed_block(id) || tree.block_id_elsewhere(id),
                |counter| super::ids::block_id_candidate(basename, &body, counter).into_string(),
            );
            assigned[f].insert(paragraph.lines.end - 1, id);
        }
        for (k, id) in assigned[f].values().enumerate() {
            // Minted by the block-ID formula: 8 hex digits.
            if let Some(id) = BlockId::parse(id) {
                block_ids.insert(format!("topics/{}#{k}", paths[f]), id);
            }
        }
    }

    // Steps 6–8: rewrite labels, append IDs, re-render every line.
    let mut out = Normalized { block_ids, evidence_ids, ..Normalized::default() };
    for (f, text) in texts.iter().enumerate() {
        let text =
            replace_labels(text, |label| evidence.get(&(f, label.to_owned())).map(String::as_str));
        let mut lines: Vec<String> =
            split_lines(&text).iter().map(|l| text[l.start..l.end].to_owned()).collect();
        for (&index, id) in &assigned[f] {
            if let Some(line) = lines.get_mut(index) {
                *line = format!("{} ^{id}", py_rstrip(line));
            }
        }
        let rendered: Vec<String> = lines
            .iter()
            .map(|line| {
                render_line(line, paths[f], relocated.get(&(f, definition_id(line))), sources)
            })
            .collect();
        let normalized = format!("{}\n", py_rstrip(&rendered.join("\n")));
        // Step 9: prune.
        let (pruned, dropped) = prune_report(&normalized);
        out.dropped.extend(dropped.into_iter().map(|(line, text)| DroppedText {
            path: paths[f].to_owned(),
            line,
            text,
        }));
        match pruned {
            None => out.deleted.push(paths[f].to_owned()),
            Some(pruned) => {
                if pruned != originals[f] {
                    out.changed.push(paths[f].to_owned());
                }
                out.files.push(TopicFile { path: paths[f].to_owned(), text: pruned });
            }
        }
    }
    out
}

/// The ID of a definition line (empty for any other line).
fn definition_id(line: &str) -> String {
    definition_match(line).map(|m| line[m.id].to_owned()).unwrap_or_default()
}

/// Step 1: `(file, citation id) → refs` of committed evidence whose paragraph now sits in a
/// different file.
fn relocated_evidence(
    paths: &[&str],
    texts: &[String],
    tree: &dyn TreeContext,
) -> HashMap<(usize, String), Vec<String>> {
    let mut out = HashMap::new();
    for (f, text) in texts.iter().enumerate() {
        let seg = segment(text);
        for paragraph in &seg.paragraphs {
            let joined: Vec<&str> =
                seg.lines[paragraph.lines.clone()].iter().map(|l| &text[l.start..l.end]).collect();
            let paragraph = joined.join("\n");
            let cited: HashSet<&str> =
                citations(&paragraph).into_iter().map(|r| &paragraph[r]).collect();
            let record_ids: Vec<&str> = match block_suffix(&paragraph) {
                Some((_, ids)) => ids.into_iter().map(|r| &paragraph[r]).collect(),
                None => cited.iter().copied().filter(|c| is_memory_id(c)).collect(),
            };
            for block_id in record_ids {
                let Some(unit) = tree.committed_unit(block_id) else { continue };
                if unit.topic_path == paths[f] {
                    continue;
                }
                if unit.evidence.is_empty() {
                    if cited.contains(unit.memory_id.as_str()) {
                        out.entry((f, unit.memory_id.clone())).or_insert_with(|| unit.refs.clone());
                    }
                } else {
                    for e in &unit.evidence {
                        if cited.contains(e.citation_id.as_str()) {
                            out.entry((f, e.citation_id.clone()))
                                .or_insert_with(|| e.refs.to_vec());
                        }
                    }
                }
            }
        }
    }
    out
}

/// The evidence IDs a file defines (every non-local `[^ID]:` at a line start): what a
/// [`TreeContext::evidence_id_elsewhere`] answers for files left out of a normalization.
pub fn defined_evidence_ids(text: &str) -> Vec<String> {
    let mut used = HashSet::new();
    collect_defined_ids(text, &mut used);
    let mut out: Vec<String> = used.into_iter().collect();
    out.sort_unstable();
    out
}

/// The `^token`s at line ends of a file: what a [`TreeContext::block_id_elsewhere`] answers
/// for files left out of a normalization.
pub fn line_end_ids(text: &str) -> Vec<String> {
    let mut used = HashSet::new();
    collect_line_end_ids(text, &mut used);
    let mut out: Vec<String> = used.into_iter().collect();
    out.sort_unstable();
    out
}

/// Every non-local ID of a line starting `[^ID]:` (`(?m)^\[\^(ID)\]:`).
fn collect_defined_ids(text: &str, used: &mut HashSet<String>) {
    let b = text.as_bytes();
    let mut start = 0;
    loop {
        if let Some(id) = citation_at(text, start)
            && b.get(id.end + 1) == Some(&b':')
            && !is_local_label(&text[id.clone()])
        {
            used.insert(text[id].to_owned());
        }
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => break,
        }
    }
}

/// `_source_identity_seed`: the `|`-joined link targets, or the bare values.
fn source_identity_seed(sources: &str) -> String {
    let targets: Vec<&str> =
        links(sources).into_iter().map(|m| py_strip(&sources[m.target])).collect();
    if targets.is_empty() { split_bare_sources(sources).join("|") } else { targets.join("|") }
}

/// Step 3: rebinds local-label citations with no definition in the file to the definitions
/// that follow their paragraph, positionally. `None` when nothing changed.
fn rebind_orphans(text: &str) -> Option<String> {
    let seg = segment(text);
    let mut lines: Vec<String> =
        seg.lines.iter().map(|l| text[l.start..l.end].to_owned()).collect();
    let defined: Vec<Option<String>> =
        lines.iter().map(|l| definition_match(l).map(|m| l[m.id].to_owned())).collect();
    let defined_set: HashSet<&str> = defined.iter().flatten().map(String::as_str).collect();
    let mut replaced = false;
    for paragraph in &seg.paragraphs {
        let (start, end) = (paragraph.lines.start, paragraph.lines.end);
        let block = lines[start..end].join("\n");
        let orphans: Vec<String> = citations(&block)
            .into_iter()
            .map(|r| block[r].to_owned())
            .filter(|label| is_local_label(label) && !defined_set.contains(label.as_str()))
            .collect();
        if orphans.is_empty() {
            continue;
        }
        let nearby: Vec<String> =
            defined[end..].iter().flatten().take(orphans.len()).cloned().collect();
        for (orphan, target) in orphans.iter().zip(&nearby) {
            if orphan == target {
                continue;
            }
            let (from, to) = (format!("[^{orphan}]"), format!("[^{target}]"));
            for line in &mut lines[start..end] {
                *line = line.replace(&from, &to);
            }
            replaced = true;
        }
    }
    if !replaced {
        return None;
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

/// Whether the text after `end` is whitespace up to a `\n` or the end (`(?=\s*$)` with
/// `re.MULTILINE`).
fn rest_of_line_blank(text: &str, end: usize) -> bool {
    for c in text[end..].chars() {
        if c == '\n' {
            return true;
        }
        if !is_py_space(c) {
            return false;
        }
    }
    true
}

/// The maximal run of block-ID bytes after a `^` at `caret`.
fn id_run(text: &str, caret: usize) -> usize {
    let b = text.as_bytes();
    let mut end = caret + 1;
    while end < b.len() && is_block_char(b[end]) {
        end += 1;
    }
    end
}

/// Step 4: removes every `[ \t]*^token` at a line end whose token is not committed. A token is
/// kept when a committed ID is the whole token or a prefix followed by `-` (the reference's
/// `(?!(?:ids)\b)` lookahead).
fn strip_invented<'t>(text: &'t str, committed: &dyn Fn(&str) -> bool) -> Cow<'t, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(pos) = text[from..].find('^') {
        let caret = from + pos;
        let end = id_run(text, caret);
        from = caret + 1;
        if end == caret + 1 || !rest_of_line_blank(text, end) {
            continue;
        }
        let token = &text[caret + 1..end];
        let protected =
            committed(token) || token.match_indices('-').any(|(i, _)| committed(&token[..i]));
        if protected {
            from = end;
            continue;
        }
        let mut start = caret;
        while start > copied && matches!(b[start - 1], b' ' | b'\t') {
            start -= 1;
        }
        let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
        buf.push_str(&text[copied..start]);
        copied = end;
        from = end;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
    }
}

/// Step 5's used set: every `^ID` ending a line (`(?m)\^([A-Za-z0-9-]+)\s*$`).
fn collect_line_end_ids(text: &str, used: &mut HashSet<String>) {
    let mut from = 0;
    while let Some(pos) = text[from..].find('^') {
        let caret = from + pos;
        let end = id_run(text, caret);
        if end > caret + 1 && rest_of_line_blank(text, end) {
            used.insert(text[caret + 1..end].to_owned());
        }
        from = end.max(caret + 1);
    }
}

/// Step 6: replaces `[^label]` (not followed by an ID character) for every label `map` knows.
fn replace_labels<'t, 'm>(text: &'t str, map: impl Fn(&str) -> Option<&'m str>) -> Cow<'t, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(pos) = text[from..].find("[^") {
        let i = from + pos;
        from = i + 1;
        let Some(id) = citation_at(text, i) else { continue };
        let close = id.end;
        if b.get(close + 1).is_some_and(|&c| is_footnote_char(c)) {
            continue;
        }
        let Some(stable) = map(&text[id.clone()]) else { continue };
        let buf = out.get_or_insert_with(|| String::with_capacity(text.len() + 64));
        buf.push_str(&text[copied..id.start]);
        buf.push_str(stable);
        copied = id.end;
        from = close + 1;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
    }
}

/// The canonical definition line: ``[^id]: Time: `when`; Sources: link, link``.
pub fn render_definition(id: &str, when: Option<&str>, links: &[String]) -> String {
    format!("[^{id}]: Time: `{}`; Sources: {}", when.unwrap_or("undated"), links.join(", "))
}

/// Step 7 for one line.
fn render_line(
    line: &str,
    topic_path: &str,
    relocated: Option<&Vec<String>>,
    sources: &dyn SourceResolver,
) -> String {
    let Some(m) = definition_match(line) else {
        return normalize_prose_line(line);
    };
    let raw = &line[m.sources.clone()];
    let links: Vec<(&str, &str)> =
        links(raw).into_iter().map(|m| (&raw[m.label], &raw[m.target])).collect();
    let source_link = |source_ref: &str, label: &str| {
        format!("[{label}]({})", sources.link_target(topic_path, source_ref))
    };
    let mut rendered = Vec::new();
    let resolves =
        links.iter().all(|(_, t)| sources.resolve_target(topic_path, py_strip(t)).is_ok());
    match relocated {
        Some(refs) if !resolves && refs.len() == links.len() => {
            for (source_ref, (label, _)) in refs.iter().zip(&links) {
                rendered.push(source_link(source_ref, label));
            }
        }
        _ if !links.is_empty() => {
            for (label, target) in &links {
                let target = py_strip(target);
                let plain =
                    !target.contains('#') && sources.resolve_target(topic_path, target).is_ok();
                rendered.push(if plain {
                    source_link(target, label)
                } else {
                    format!("[{label}]({target})")
                });
            }
        }
        _ => {
            for value in split_bare_sources(raw) {
                rendered.push(source_link(value, value));
            }
        }
    }
    let when = &line[m.when.clone()];
    render_definition(&line[m.id.clone()], (when != "undated").then_some(when), &rendered)
}

/// Step 7 for a non-definition line: no spaces or tabs before a citation, one space before a
/// trailing `^id`.
fn normalize_prose_line(line: &str) -> String {
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(pos) = line[from..].find("[^") {
        let i = from + pos;
        from = i + 1;
        if citation_at(line, i).is_none() {
            continue;
        }
        let mut start = i;
        while start > copied && matches!(b[start - 1], b' ' | b'\t') {
            start -= 1;
        }
        out.push_str(&line[copied..start]);
        copied = i;
    }
    out.push_str(&line[copied..]);
    // `[ \t]*\^([A-Za-z0-9-]+)\s*$` → ` ^\1`.
    let content_end = out.trim_end_matches(is_py_space).len();
    let ob = out.as_bytes();
    let mut id_start = content_end;
    while id_start > 0 && is_block_char(ob[id_start - 1]) {
        id_start -= 1;
    }
    if id_start < content_end && id_start > 0 && ob[id_start - 1] == b'^' {
        let mut start = id_start - 1;
        while start > 0 && matches!(ob[start - 1], b' ' | b'\t') {
            start -= 1;
        }
        let id = out[id_start..content_end].to_owned();
        out.truncate(start);
        out.push_str(" ^");
        out.push_str(&id);
    }
    out
}

/// Step 9: drops heading sections that hold no record; `None` when the file holds no record.
pub fn prune(text: &str) -> Option<String> {
    prune_report(text).0
}

/// [`prune`], and the written text it drops: each run of consecutive dropped lines (a
/// paragraph, a code block, an HTML block) that are prose, code or HTML (headings, footnote definitions and blank lines are structure and may
/// go), as `(1-based line of the run's first line, that line trimmed)`.
pub fn prune_report(text: &str) -> (Option<String>, Vec<(u32, String)>) {
    let seg = segment(text);
    let lines: Vec<&str> = seg.lines.iter().map(|l| &text[l.start..l.end]).collect();
    let defs: Vec<Option<&str>> =
        lines.iter().map(|l| definition_match(l).map(|m| &l[m.id])).collect();
    let defined: HashSet<&str> = defs.iter().flatten().copied().collect();
    let mut record_paths: Vec<&[String]> = Vec::new();
    let mut referenced: HashSet<String> = HashSet::new();
    for paragraph in &seg.paragraphs {
        let joined = lines[paragraph.lines.clone()].join("\n");
        let cited: Vec<&str> = citations(&joined).into_iter().map(|r| &joined[r]).collect();
        if block_suffix(&joined).is_some() || cited.iter().any(|c| defined.contains(c)) {
            record_paths.push(&paragraph.headings);
            referenced.extend(cited.iter().map(|c| (*c).to_owned()));
        }
    }
    let written = |kind: &LineKind| {
        matches!(kind, LineKind::Paragraph | LineKind::Fence | LineKind::Fenced | LineKind::Html)
    };
    let mut dropped: Vec<(u32, String)> = Vec::new();
    let mut in_run = false;
    let mut drop_line = |number: usize, line: &str, kind: &LineKind, dropping: bool| {
        if dropping && written(kind) {
            if !in_run {
                let number = u32::try_from(number + 1).unwrap_or(u32::MAX);
                dropped.push((number, py_strip(line).to_owned()));
            }
            in_run = true;
        } else {
            in_run = false;
        }
    };
    if record_paths.is_empty() {
        for (number, (line, kind)) in lines.iter().zip(&seg.kinds).enumerate() {
            drop_line(number, line, kind, true);
        }
        return (None, dropped);
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut active = true;
    let mut headings: Vec<&str> = Vec::new();
    for (number, ((line, def), kind)) in lines.iter().zip(&defs).zip(&seg.kinds).enumerate() {
        // Deliberate fix: Python tracks headings on every line, so a `# comment` inside a code
        // fence could close the section and drop the record paragraph after it. The heading path
        // here is the segmentation's, which skips fenced lines.
        if let (LineKind::Heading { level, .. }, Some((_, range))) = (kind, heading_match(line)) {
            headings.truncate(usize::from(*level) - 1);
            headings.push(&line[range]);
            active = record_paths.iter().any(|record| {
                record.len() >= headings.len() && record.iter().zip(&headings).all(|(a, b)| a == b)
            });
        }
        let keep = active || def.is_some_and(|id| referenced.contains(id));
        drop_line(number, line, kind, !keep);
        if keep {
            kept.push(line);
        }
    }
    (Some(format!("{}\n", py_rstrip(&kept.join("\n")))), dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invented_ids() {
        let committed: HashSet<String> = ["abc".to_owned()].into();
        let committed = |id: &str| committed.contains(id);
        assert_eq!(strip_invented("x ^abc\ny ^madeup12  \nz^2\n", &committed), "x ^abc\ny  \nz\n");
        assert_eq!(strip_invented("a ^abc-d\n", &committed), "a ^abc-d\n");
        assert_eq!(strip_invented("a ^abcd\n", &committed), "a\n");
        assert_eq!(strip_invented("a ^x ^y\n", &committed), "a ^x\n");
    }

    #[test]
    fn prose_lines() {
        assert_eq!(normalize_prose_line("a \t[^e1] [^x ] b\t ^id  "), "a[^e1] [^x ] b ^id");
        assert_eq!(normalize_prose_line("x^2"), "x ^2");
    }

    #[test]
    fn labels() {
        let out = replace_labels("[^e1] [^e1]x [^e12] [^e1]", |l| (l == "e1").then_some("e-1"));
        assert_eq!(out, "[^e-1] [^e1]x [^e12] [^e-1]");
    }

    #[test]
    fn pruning() {
        let text = "# T\n\n## Empty\n\nintro\n\n## Kept\n\nFact.[^a] ^b\n\n# References\n\n[^a]: Time: `2024`; Sources: [x](y)\n";
        assert_eq!(
            prune(text).as_deref(),
            Some("# T\n\n## Kept\n\nFact.[^a] ^b\n\n[^a]: Time: `2024`; Sources: [x](y)\n")
        );
        assert_eq!(prune("# Only\n\nprose\n"), None);
    }
}
