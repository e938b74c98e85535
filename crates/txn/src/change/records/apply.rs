//! Applies checked `memory_changes` to the stage: content operations first in request order,
//! then moves in request order.
//!
//! The touched files are edited as line lists in memory and written to the stage at the end;
//! normalization (run by validation) then assigns block IDs and evidence IDs to the new
//! `[^new-evidence-record-<n>]` labels, expands plain source handles, re-links relocated
//! evidence and prunes emptied sections and files.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use scriptorium_topics_format::topic::{Document, LineKind, is_footnote_id, is_memory_id};

use super::{Destination, MemoryChange, Position, SourceRef, item_error, legacy, not_found};
use crate::error::Result;
use crate::stage::Staged;
use crate::validate::Baseline;

/// Applies `changes` to the stage.
pub(crate) fn apply(staged: &mut Staged, changes: &[MemoryChange]) -> Result<()> {
    let mut tree = Tree::load(staged, changes);
    let mut updated_blocks: HashSet<String> = HashSet::new();
    for (i, change) in changes.iter().enumerate() {
        match change {
            MemoryChange::CreateRecord { content, time, sources, destination } => {
                tree.create(i, content, time.as_deref(), sources, destination)?;
            }
            MemoryChange::UpdateRecord { memory_id, content, time, sources } => {
                let Some(found) = tree.find(memory_id) else {
                    let found =
                        tree.find_legacy(memory_id).ok_or_else(|| not_found(i, memory_id))?;
                    tree.update_legacy(&found, memory_id, content, time.as_deref(), sources);
                    continue;
                };
                let identity = found.ids.last().cloned().unwrap_or_default();
                if !updated_blocks.insert(identity) {
                    return Err(item_error(i, "two updates target the same merged block"));
                }
                tree.update(i, &found, content, time.as_deref(), sources);
            }
            MemoryChange::DeleteRecord { memory_id } => {
                let Some(found) = tree.find(memory_id) else {
                    let found =
                        tree.find_legacy(memory_id).ok_or_else(|| not_found(i, memory_id))?;
                    tree.delete_legacy(&found, memory_id);
                    continue;
                };
                tree.delete(i, &found, memory_id)?;
            }
            MemoryChange::MoveRecords { .. } => {}
        }
    }
    for (i, change) in changes.iter().enumerate() {
        if let MemoryChange::MoveRecords { memory_ids, destination } = change {
            tree.move_records(i, memory_ids, destination)?;
        }
    }
    tree.store(staged)
}

/// A paragraph found by one of its block IDs.
struct Found {
    path: String,
    lines: Range<usize>,
    /// The paragraph's block IDs, identity last.
    ids: Vec<String>,
}

/// The topic files as line lists, keyed by workspace-relative path: those the changes name
/// (the files holding their block IDs, their destinations), loaded at the start, any other
/// only when a search must look further (an ID no committed file holds), so a change costs
/// the files it touches, not the tree.
struct Tree {
    baseline: Arc<Baseline>,
    /// Every committed file is in `files`.
    all: bool,
    files: BTreeMap<String, Vec<String>>,
    existed: BTreeSet<String>,
    touched: BTreeSet<String>,
    /// Where each committed block ID lived at begin (a hint: checked before use).
    homes: HashMap<String, String>,
}

impl Tree {
    fn load(staged: &Staged, changes: &[MemoryChange]) -> Tree {
        let mut tree = Tree {
            baseline: Arc::clone(&staged.baseline),
            all: false,
            files: BTreeMap::new(),
            existed: BTreeSet::new(),
            touched: BTreeSet::new(),
            homes: HashMap::new(),
        };
        let baseline = Arc::clone(&tree.baseline);
        for change in changes {
            let (ids, destination): (Vec<&String>, Option<&Destination>) = match change {
                MemoryChange::CreateRecord { destination, .. } => (Vec::new(), Some(destination)),
                MemoryChange::UpdateRecord { memory_id, .. }
                | MemoryChange::DeleteRecord { memory_id } => (vec![memory_id], None),
                MemoryChange::MoveRecords { memory_ids, destination } => {
                    (memory_ids.iter().collect(), Some(destination))
                }
            };
            let anchor = destination.and_then(|d| match &d.position {
                Position::Before(anchor) | Position::After(anchor) => Some(anchor),
                Position::Start | Position::End => None,
            });
            for id in ids.into_iter().chain(anchor) {
                for rel in baseline.files_of(id) {
                    tree.ensure(&format!("topics/{rel}"));
                }
                if let Some((home, _)) = baseline.home(id) {
                    tree.homes.insert(id.clone(), format!("topics/{home}"));
                }
            }
            if let Some(destination) = destination {
                tree.ensure(&destination.topic_path);
            }
        }
        tree
    }

    /// Loads the committed file `path` (workspace-relative) unless it is loaded.
    fn ensure(&mut self, path: &str) {
        if self.files.contains_key(path) {
            return;
        }
        let Some(file) = path.strip_prefix("topics/").and_then(|rel| self.baseline.file(rel))
        else {
            return;
        };
        let doc = Document::parse(&file.file.text);
        let lines = (0..doc.lines().len()).map(|n| doc.line_text(n).to_owned()).collect();
        self.files.insert(path.to_owned(), lines);
        self.existed.insert(path.to_owned());
    }

    /// Loads every committed file (a search that found nothing in the loaded ones).
    fn load_all(&mut self) -> bool {
        if self.all {
            return false;
        }
        self.all = true;
        let baseline = Arc::clone(&self.baseline);
        for rel in baseline.paths() {
            self.ensure(&format!("topics/{rel}"));
        }
        true
    }

    /// [`Tree::find_loaded`], looking through every file when the loaded ones lack it.
    fn find(&mut self, memory_id: &str) -> Option<Found> {
        match self.find_loaded(memory_id) {
            None if self.load_all() => self.find_loaded(memory_id),
            found => found,
        }
    }

    /// [`Tree::find_legacy_loaded`], looking through every file when the loaded ones lack it.
    fn find_legacy(&mut self, memory_id: &str) -> Option<Found> {
        match self.find_legacy_loaded(memory_id) {
            None if self.load_all() => self.find_legacy_loaded(memory_id),
            found => found,
        }
    }

    /// Writes every touched file to the stage (a file left without content is removed).
    fn store(&self, staged: &mut Staged) -> Result<()> {
        for path in &self.touched {
            let lines = self.files.get(path).map(Vec::as_slice).unwrap_or_default();
            if lines.iter().all(|l| is_blank(l)) {
                if self.existed.contains(path) {
                    staged.remove_file(path)?;
                }
            } else {
                let mut text = lines.join("\n");
                text.push('\n');
                staged.write_file(path, &text)?;
            }
        }
        Ok(())
    }

    fn lines_mut(&mut self, path: &str) -> &mut Vec<String> {
        self.ensure(path);
        self.touched.insert(path.to_owned());
        self.files.entry(path.to_owned()).or_default()
    }

    fn find_loaded(&self, memory_id: &str) -> Option<Found> {
        let hint = self.homes.get(memory_id);
        let hinted = hint.and_then(|p| self.files.get_key_value(p));
        hinted.into_iter().chain(self.files.iter().filter(|(p, _)| Some(*p) != hint)).find_map(
            |(path, lines)| {
                let doc = document(lines);
                doc.paragraphs().iter().find_map(|p| {
                    let ids: Vec<String> = doc.block_ids(p).into_iter().map(String::from).collect();
                    ids.iter().any(|id| id == memory_id).then(|| Found {
                        path: path.clone(),
                        lines: p.lines.clone(),
                        ids,
                    })
                })
            },
        )
    }

    /// The paragraph holding legacy unit `memory_id` (a `mem_` citation group).
    fn find_legacy_loaded(&self, memory_id: &str) -> Option<Found> {
        if !is_memory_id(memory_id) {
            return None;
        }
        let hint = self.homes.get(memory_id);
        let hinted = hint.and_then(|p| self.files.get_key_value(p));
        hinted.into_iter().chain(self.files.iter().filter(|(p, _)| Some(*p) != hint)).find_map(
            |(path, lines)| {
                let doc = document(lines);
                doc.paragraphs().iter().find_map(|p| {
                    let legacy = doc.block_ids(p).is_empty()
                        && legacy::locate(&paragraph_text(lines, &p.lines), memory_id).is_some();
                    legacy.then(|| Found {
                        path: path.clone(),
                        lines: p.lines.clone(),
                        ids: vec![memory_id.to_owned()],
                    })
                })
            },
        )
    }

    /// Replaces legacy unit `memory_id`'s text in its paragraph and rewrites its definition
    /// where it stands (the other units and trailing prose are kept).
    fn update_legacy(
        &mut self,
        found: &Found,
        memory_id: &str,
        content: &str,
        time: Option<&str>,
        sources: &[SourceRef],
    ) {
        let lines = self.lines_mut(&found.path);
        let old = paragraph_text(lines, &found.lines);
        let Some(segment) = legacy::locate(&old, memory_id) else { return };
        let new = legacy::replace(&old, &segment, memory_id, content);
        lines.splice(found.lines.clone(), new.split('\n').map(str::to_owned));
        let rendered = definition(memory_id, time, sources);
        match definition_lines(lines).into_iter().find(|(id, _)| id == memory_id) {
            Some((_, n)) => lines[n] = rendered,
            None => {
                let end = found.lines.start + new.split('\n').count();
                insert_block(lines, end, vec![rendered]);
            }
        }
        let mut dropped = citations(&old);
        dropped.remove(memory_id);
        drop_uncited(lines, &dropped);
    }

    /// Removes legacy unit `memory_id` from its paragraph (the whole paragraph when it was
    /// the last legacy unit) and its definition when nothing cites it any more.
    fn delete_legacy(&mut self, found: &Found, memory_id: &str) {
        let lines = self.lines_mut(&found.path);
        let old = paragraph_text(lines, &found.lines);
        let Some(segment) = legacy::locate(&old, memory_id) else { return };
        match legacy::remove(&old, &segment) {
            Some(new) => {
                lines.splice(found.lines.clone(), new.split('\n').map(str::to_owned));
            }
            None => remove_range(lines, found.lines.clone()),
        }
        drop_uncited(lines, &citations(&old));
    }

    fn create(
        &mut self,
        i: usize,
        content: &str,
        time: Option<&str>,
        sources: &[SourceRef],
        destination: &Destination,
    ) -> Result<()> {
        let label = self.fresh_label(&destination.topic_path, i);
        let mut block = content_lines(content);
        if let Some(last) = block.last_mut() {
            last.push_str(&format!("[^{label}]"));
        }
        block.push(String::new());
        block.push(definition(&label, time, sources));
        let at = self.position(i, destination)?;
        insert_block(self.lines_mut(&destination.topic_path), at, block);
        Ok(())
    }

    fn update(
        &mut self,
        i: usize,
        found: &Found,
        content: &str,
        time: Option<&str>,
        sources: &[SourceRef],
    ) {
        let label = self.fresh_label(&found.path, i);
        let lines = self.lines_mut(&found.path);
        let old = paragraph_text(lines, &found.lines);
        let mut block = content_lines(content);
        if let Some(last) = block.last_mut() {
            last.push_str(&format!("[^{label}] ^{}", found.ids.join(" ^")));
        }
        let end = found.lines.start + block.len();
        lines.splice(found.lines.clone(), block);
        insert_block(lines, end, vec![definition(&label, time, sources)]);
        drop_uncited(lines, &citations(&old));
    }

    fn delete(&mut self, i: usize, found: &Found, memory_id: &str) -> Result<()> {
        let lines = self.lines_mut(&found.path);
        if found.ids.len() > 1 {
            let last = found.lines.end.saturating_sub(1);
            let base = lines.get(last).and_then(|l| strip_suffix(l, &found.ids));
            let Some(base) = base else {
                return Err(item_error(i, "cannot edit the block suffix of memory_id"));
            };
            let kept: Vec<&str> =
                found.ids.iter().map(String::as_str).filter(|id| *id != memory_id).collect();
            lines[last] = format!("{base} ^{}", kept.join(" ^"));
        } else {
            let old = paragraph_text(lines, &found.lines);
            remove_range(lines, found.lines.clone());
            drop_uncited(lines, &citations(&old));
        }
        Ok(())
    }

    fn move_records(
        &mut self,
        i: usize,
        memory_ids: &[String],
        destination: &Destination,
    ) -> Result<()> {
        // Collect the distinct paragraphs in order, checking shared physical blocks.
        let mut paragraphs: Vec<Found> = Vec::new();
        let mut k = 0;
        while let Some(id) = memory_ids.get(k) {
            let found = self.find(id).ok_or_else(|| not_found(i, id))?;
            if found.ids.iter().any(|other| !memory_ids.contains(other)) {
                return Err(item_error(
                    i,
                    "move_records must include every ID in a shared physical block",
                ));
            }
            let run = memory_ids.get(k..k + found.ids.len());
            if run != Some(found.ids.as_slice()) {
                return Err(item_error(
                    i,
                    "move_records must preserve shared physical block order",
                ));
            }
            k += found.ids.len();
            paragraphs.push(found);
        }
        // Take the paragraphs and their cited definitions out of their files.
        let mut moved_text: Vec<Vec<String>> = vec![Vec::new(); paragraphs.len()];
        let mut definitions: Vec<(String, String)> = Vec::new();
        let mut def_origin: HashMap<String, String> = HashMap::new();
        let mut by_file: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (n, found) in paragraphs.iter().enumerate() {
            by_file.entry(found.path.clone()).or_default().push(n);
        }
        for (path, mut members) in by_file {
            let lines = self.lines_mut(&path);
            let defs = definition_lines(lines);
            let mut cited_here: BTreeSet<String> = BTreeSet::new();
            for &n in &members {
                let found = &paragraphs[n];
                let text = &lines[found.lines.clone()];
                moved_text[n] = text.to_vec();
                cited_here.extend(citations(&text.join("\n")));
            }
            for id in &cited_here {
                let Some((_, line)) = defs.iter().find(|(d, _)| d == id) else { continue };
                let line = lines[*line].clone();
                match def_origin.get(id) {
                    Some(origin) if *origin != path => {
                        let same = definitions.iter().any(|(d, l)| d == id && *l == line);
                        if !same {
                            return Err(item_error(
                                i,
                                format!("evidence definition conflicts across sources: {id}"),
                            ));
                        }
                    }
                    Some(_) => {}
                    None => {
                        def_origin.insert(id.clone(), path.clone());
                        definitions.push((id.clone(), line));
                    }
                }
            }
            members.sort_by_key(|&n| std::cmp::Reverse(paragraphs[n].lines.start));
            for n in members {
                remove_range(lines, paragraphs[n].lines.clone());
            }
            drop_uncited(lines, &cited_here);
        }
        // Insert them at the destination.
        let at = self.position(i, destination)?;
        let dest = self.lines_mut(&destination.topic_path);
        let present = definition_lines(dest);
        let mut block: Vec<String> = Vec::new();
        for text in moved_text {
            if !block.is_empty() {
                block.push(String::new());
            }
            block.extend(text);
        }
        let mut defs_block = Vec::new();
        for (id, line) in definitions {
            match present.iter().find(|(d, _)| *d == id) {
                Some((_, n)) if dest[*n] == line => {}
                Some(_) => {
                    return Err(item_error(
                        i,
                        format!("evidence definition conflicts in destination: {id}"),
                    ));
                }
                None => defs_block.push(line),
            }
        }
        if !defs_block.is_empty() {
            block.push(String::new());
            block.extend(defs_block);
        }
        insert_block(dest, at, block);
        Ok(())
    }

    /// The line index where a block goes for `destination`, creating the heading chain for
    /// `start` and `end`.
    fn position(&mut self, i: usize, destination: &Destination) -> Result<usize> {
        let headings = &destination.headings;
        match &destination.position {
            Position::Start | Position::End => {
                let lines = self.lines_mut(&destination.topic_path);
                let body = ensure_chain(lines, headings);
                Ok(match destination.position {
                    Position::Start => body.start,
                    _ => body
                        .clone()
                        .rev()
                        .find(|&n| !is_blank(&lines[n]))
                        .map_or(body.start, |n| n + 1),
                })
            }
            Position::Before(anchor) | Position::After(anchor) => {
                let exists = self
                    .files
                    .get(&destination.topic_path)
                    .is_some_and(|lines| section(lines, headings).is_some());
                if !exists {
                    return Err(item_error(i, "destination heading path does not exist"));
                }
                let found = self.find(anchor).ok_or_else(|| not_found(i, anchor))?;
                let in_section = found.path == destination.topic_path
                    && self.files.get(&found.path).is_some_and(|lines| {
                        let doc = document(lines);
                        doc.paragraphs().iter().any(|p| {
                            p.lines == found.lines && p.headings.as_ref() == headings.as_slice()
                        })
                    });
                if !in_section {
                    return Err(item_error(
                        i,
                        "anchor_memory_id is not in the destination section",
                    ));
                }
                Ok(match destination.position {
                    Position::Before(_) => found.lines.start,
                    _ => found.lines.end,
                })
            }
        }
    }

    /// `new-evidence-record-<n>` with `n` the 1-based op index, bumped past labels in use.
    fn fresh_label(&self, path: &str, i: usize) -> String {
        let lines = self.files.get(path).map(Vec::as_slice).unwrap_or_default();
        let mut n = i + 1;
        loop {
            let label = format!("new-evidence-record-{n}");
            let needle = format!("[^{label}]");
            if !lines.iter().any(|l| l.contains(&needle)) {
                return label;
            }
            n += 1;
        }
    }
}

fn document(lines: &[String]) -> Document {
    Document::parse(&lines.join("\n"))
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

fn paragraph_text(lines: &[String], range: &Range<usize>) -> String {
    lines.get(range.clone()).map(|l| l.join("\n")).unwrap_or_default()
}

/// The content split into lines the way a topic file splits them.
fn content_lines(content: &str) -> Vec<String> {
    let doc = Document::parse(content);
    (0..doc.lines().len()).map(|n| doc.line_text(n).to_owned()).collect()
}

/// ``[^label]: Time: `time`; Sources: [label](source), …``.
fn definition(label: &str, time: Option<&str>, sources: &[SourceRef]) -> String {
    let links: Vec<String> =
        sources.iter().map(|s| format!("[{}]({})", s.label, s.source)).collect();
    format!("[^{label}]: Time: `{}`; Sources: {}", time.unwrap_or("undated"), links.join(", "))
}

/// The footnote IDs cited (`[^id]`, not followed by `:`) in `text`, in order.
fn citations(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("[^") {
        let after = &rest[start + 2..];
        if let Some(end) = after.find(']') {
            let id = &after[..end];
            if is_footnote_id(id) && !after[end + 1..].starts_with(':') {
                out.insert(id.to_owned());
            }
        }
        rest = after;
    }
    out
}

/// `(footnote id, line index)` of every definition line.
fn definition_lines(lines: &[String]) -> Vec<(String, usize)> {
    let doc = document(lines);
    doc.lines()
        .iter()
        .enumerate()
        .filter(|(_, line)| matches!(line.kind, LineKind::Definition { .. }))
        .filter_map(|(n, _)| {
            let text = lines.get(n)?.trim_start().strip_prefix("[^")?;
            let end = text.find("]:")?;
            Some((text[..end].to_owned(), n))
        })
        .collect()
}

/// Removes the definitions among `candidates` that no paragraph of the file still cites.
fn drop_uncited(lines: &mut Vec<String>, candidates: &BTreeSet<String>) {
    let doc = document(lines);
    let cited: BTreeSet<String> =
        doc.paragraphs().iter().flat_map(|p| citations(&paragraph_text(lines, &p.lines))).collect();
    let mut doomed: Vec<usize> = definition_lines(lines)
        .into_iter()
        .filter(|(id, _)| candidates.contains(id) && !cited.contains(id))
        .map(|(_, n)| n)
        .collect();
    doomed.sort_unstable();
    for n in doomed.into_iter().rev() {
        remove_range(lines, n..n + 1);
    }
}

/// Removes `range` and the blank line it leaves doubled.
fn remove_range(lines: &mut Vec<String>, range: Range<usize>) {
    if range.end > lines.len() || range.start >= range.end {
        return;
    }
    let (start, end) = (range.start, range.end);
    let blank_before = start == 0 || is_blank(&lines[start - 1]);
    let blank_after = lines.get(end).is_some_and(|l| is_blank(l));
    if blank_before && blank_after {
        lines.drain(start..=end);
    } else if blank_before && end == lines.len() && start > 0 {
        lines.drain(start - 1..end);
    } else {
        lines.drain(start..end);
    }
}

/// Inserts `block` at line `at`, separated by blank lines from its neighbours.
fn insert_block(lines: &mut Vec<String>, at: usize, block: Vec<String>) {
    let at = at.min(lines.len());
    let mut chunk = Vec::with_capacity(block.len() + 2);
    if at > 0 && !is_blank(&lines[at - 1]) {
        chunk.push(String::new());
    }
    chunk.extend(block);
    if lines.get(at).is_some_and(|l| !is_blank(l)) {
        chunk.push(String::new());
    }
    lines.splice(at..at, chunk);
}

/// `(line index, level, heading path)` of every heading line.
fn heading_paths(lines: &[String]) -> Vec<(usize, usize, Vec<String>)> {
    let doc = document(lines);
    let mut path: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (n, line) in doc.lines().iter().enumerate() {
        if let LineKind::Heading { level, text } = &line.kind {
            let level = usize::from(*level);
            path.truncate(level.saturating_sub(1));
            path.push(doc.text()[text.clone()].to_owned());
            out.push((n, level, path.clone()));
        }
    }
    out
}

/// The body lines of the section with heading path `headings` (the lines after its heading
/// up to the next heading; before the first heading for an empty path).
fn section(lines: &[String], headings: &[String]) -> Option<Range<usize>> {
    let all = heading_paths(lines);
    let next_after = |n: usize| all.iter().map(|h| h.0).find(|&m| m > n).unwrap_or(lines.len());
    if headings.is_empty() {
        return Some(0..all.first().map_or(lines.len(), |h| h.0));
    }
    let (n, ..) = all.iter().find(|h| h.2 == headings)?;
    Some(n + 1..next_after(*n))
}

/// Creates the missing levels of `headings` and returns the section's body.
fn ensure_chain(lines: &mut Vec<String>, headings: &[String]) -> Range<usize> {
    if let Some(body) = section(lines, headings) {
        return body;
    }
    let all = heading_paths(lines);
    let deepest = (1..headings.len())
        .rev()
        .find_map(|m| all.iter().find(|h| h.2 == headings[..m]).map(|h| (m, h.0)));
    let (existing, at) = match deepest {
        Some((m, n)) => {
            let next = all.iter().find(|h| h.0 > n && h.1 <= m).map_or(lines.len(), |h| h.0);
            (m, next)
        }
        None => (0, lines.len()),
    };
    let mut block = Vec::new();
    for (level, heading) in headings.iter().enumerate().skip(existing) {
        if !block.is_empty() {
            block.push(String::new());
        }
        block.push(format!("{} {heading}", "#".repeat(level + 1)));
    }
    // Back up over trailing blank lines so the new headings follow the section's text.
    let mut at = at;
    while at > 0 && is_blank(&lines[at - 1]) && at > 1 {
        at -= 1;
    }
    insert_block(lines, at, block);
    section(lines, headings).unwrap_or(lines.len()..lines.len())
}

/// The last line of a paragraph without its ` ^a ^b` suffix (`ids` in order).
fn strip_suffix(line: &str, ids: &[String]) -> Option<String> {
    let mut rest = line.trim_end();
    for id in ids.iter().rev() {
        rest = rest.strip_suffix(id.as_str())?.strip_suffix('^')?.trim_end_matches([' ', '\t']);
    }
    Some(rest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn heading_chain_is_created_after_the_deepest_prefix() {
        let mut l = lines("# Dave\n\nA.\n\n## Home\n\nB.\n\n# Other\n\nC.");
        let body = ensure_chain(&mut l, &["Dave".into(), "Work".into()]);
        assert_eq!(l.join("\n"), "# Dave\n\nA.\n\n## Home\n\nB.\n\n## Work\n\n# Other\n\nC.");
        assert_eq!(body, 9..10);
    }

    #[test]
    fn suffix_and_citations() {
        assert_eq!(
            strip_suffix("Fact.[^e1] ^a ^b", &["a".into(), "b".into()]).as_deref(),
            Some("Fact.[^e1]")
        );
        let cited: Vec<String> = citations("x[^e1][^e-2] y [^e1]: no").into_iter().collect();
        assert_eq!(cited, vec!["e-2".to_owned(), "e1".to_owned()]);
    }
}
