//! Merging two clones' versions of the workspace at the level of the format, not of text (see
//! `docs/format.md#merging-two-clones`): topic files three-way by block ID, archives by union.
//!
//! A topic file is cut into *chunks* with an identity: a paragraph is keyed by its identity
//! block ID (the last of its suffix), a heading by its text, a footnote definition by its label,
//! a fence or any other line by its text. A chunk changed on one side only takes that side; a
//! chunk changed alike on both sides is taken once; a chunk changed differently on both sides,
//! or deleted on one side and changed on the other, is a [`BlockConflict`]. The merged file
//! keeps our order and places each chunk only the other side has right after the chunk that
//! precedes it there. A paragraph the merge keeps keeps the footnote definitions it cites, even
//! where the other side removed them (with a block that was their only citer), whichever side a
//! conflict was resolved for. Archives are append-only and content-addressed: two versions of one
//! archive merge by union of their frames (ours, then theirs' frames ours lacks); the one change
//! in place an archive may see, a frame replaced by one that [supersedes] it (its tombstone,
//! its redaction), wins over the original on either side.
//!
//! Pure: no IO. The merged texts still go through normalization and validation (a transaction)
//! before anything is installed; a merge that produces an invalid tree (say, one block ID in two
//! files) is refused there.

use std::collections::{HashMap, HashSet};

use crate::forget::{is_tombstone, replace_frames};
use crate::rewrite::is_redaction;
use crate::source::frame::append_frames_to;
use crate::source::{Frame, is_v2_source_path, scan};
use crate::topic::{Document, LineKind, citations};

/// Which side wins a conflict, when the person resolving it has chosen one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefer {
    /// This clone's version.
    Ours,
    /// The remote's version.
    Theirs,
}

/// One chunk changed differently on both sides (`None`: absent on that side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockConflict {
    /// The block ID of a paragraph, else the chunk's first line.
    pub block: String,
    /// The chunk at the merge base.
    pub base: Option<String>,
    /// This clone's chunk.
    pub ours: Option<String>,
    /// The remote's chunk.
    pub theirs: Option<String>,
}

/// The outcome of [`merge_topic`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicMerge {
    /// The merged file (`None`: the file is gone on the merged side). Conflicts take the
    /// preferred side, or ours when none was given.
    pub text: Option<String>,
    /// Every conflict, resolved by `prefer` or not.
    pub conflicts: Vec<BlockConflict>,
}

#[derive(Clone, Debug)]
struct Chunk {
    key: String,
    /// The chunk's own lines, with their line breaks.
    body: String,
    /// The blank lines after it.
    gap: String,
    /// A footnote definition (consecutive definitions need no blank line between them).
    definition: bool,
    /// The key of the chunk after it in its own file.
    next: Option<String>,
}

/// The chunks of `text` and the blank lines before the first one.
fn chunks(text: &str) -> (String, Vec<Chunk>) {
    let doc = Document::parse(text);
    let lines = doc.lines();
    let raw = |i: usize| &text[lines[i].content.start..lines[i].terminator.end];
    let starts: HashMap<usize, usize> =
        doc.paragraphs().iter().enumerate().map(|(n, p)| (p.lines.start, n)).collect();
    let mut lead = String::new();
    let mut out: Vec<Chunk> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut i = 0;
    while i < lines.len() {
        let (end, key, definition) = if let Some(&n) = starts.get(&i) {
            let paragraph = &doc.paragraphs()[n];
            let key = match doc.block_ids(paragraph).last() {
                Some(id) => format!("b:{}", id.as_str()),
                None => format!("p:{}", doc.paragraph_text(paragraph)),
            };
            (paragraph.lines.end.max(i + 1), key, false)
        } else {
            match &lines[i].kind {
                LineKind::Blank => {
                    match out.last_mut() {
                        Some(last) => last.gap.push_str(raw(i)),
                        None => lead.push_str(raw(i)),
                    }
                    i += 1;
                    continue;
                }
                LineKind::Fence => {
                    let mut end = i + 1;
                    while end < lines.len() && lines[end].kind == LineKind::Fenced {
                        end += 1;
                    }
                    if end < lines.len() && lines[end].kind == LineKind::Fence {
                        end += 1;
                    }
                    let body: String = (i..end).map(raw).collect();
                    (end, format!("f:{body}"), false)
                }
                LineKind::Heading { .. } => {
                    (i + 1, format!("h:{}", doc.line_text(i).trim()), false)
                }
                LineKind::Definition { .. } => {
                    let line = doc.line_text(i).trim_start();
                    let label = line.split_once("]:").map_or(line, |(label, _)| label);
                    (i + 1, format!("d:{label}"), true)
                }
                _ => (i + 1, format!("x:{}", doc.line_text(i)), false),
            }
        };
        let body: String = (i..end).map(raw).collect();
        let n = seen.entry(key.clone()).or_default();
        *n += 1;
        let key = if *n == 1 { key } else { format!("{key}\u{0}{n}") };
        if let Some(last) = out.last_mut() {
            last.next = Some(key.clone());
        }
        out.push(Chunk { key, body, gap: String::new(), definition, next: None });
        i = end;
    }
    (lead, out)
}

/// Merges three versions of one topic file (`None`: the file does not exist on that side).
pub fn merge_topic(
    base: Option<&str>,
    ours: Option<&str>,
    theirs: Option<&str>,
    prefer: Option<Prefer>,
) -> TopicMerge {
    let clean = |text| TopicMerge { text, conflicts: Vec::new() };
    if ours == theirs || theirs == base {
        return clean(ours.map(str::to_owned));
    }
    if ours == base {
        return clean(theirs.map(str::to_owned));
    }
    let split = |text: Option<&str>| text.map(chunks).unwrap_or_default();
    let (_, base_chunks) = split(base);
    let (lead, ours_chunks) = split(ours);
    let (theirs_lead, theirs_chunks) = split(theirs);
    let body_of = |list: &[Chunk]| -> HashMap<String, String> {
        list.iter().map(|c| (c.key.clone(), c.body.clone())).collect()
    };
    let (b, o, t) = (body_of(&base_chunks), body_of(&ours_chunks), body_of(&theirs_chunks));

    // The merged body of every key, or `None` when the key is gone.
    let mut keys: Vec<&String> = ours_chunks.iter().map(|c| &c.key).collect();
    keys.extend(theirs_chunks.iter().map(|c| &c.key).filter(|k| !o.contains_key(*k)));
    keys.extend(
        base_chunks.iter().map(|c| &c.key).filter(|k| !o.contains_key(*k) && !t.contains_key(*k)),
    );
    let mut conflicts = Vec::new();
    let mut merged: HashMap<&str, Option<&String>> = HashMap::new();
    for key in keys {
        let (bb, oo, tt) = (b.get(key), o.get(key), t.get(key));
        let value = if oo == tt || tt == bb {
            oo
        } else if oo == bb {
            tt
        } else {
            conflicts.push(BlockConflict {
                block: key
                    .get(2..)
                    .unwrap_or_default()
                    .split('\u{0}')
                    .next()
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
                base: bb.cloned(),
                ours: oo.cloned(),
                theirs: tt.cloned(),
            });
            if prefer == Some(Prefer::Theirs) { tt } else { oo }
        };
        merged.insert(key.as_str(), value);
    }

    // A kept paragraph keeps the definitions it cites. The side that removed a block removed
    // the definitions only that block cited; without this, a conflict resolved for the other
    // side's edit (or a paragraph one side added citing a definition the other side pruned)
    // would merge into an undefined footnote.
    let cited: HashSet<String> = merged
        .iter()
        .filter(|(key, _)| key.starts_with("b:") || key.starts_with("p:"))
        .filter_map(|(_, body)| *body)
        .flat_map(|body| citations(body).into_iter().map(|id| format!("d:[^{}", &body[id])))
        .collect();
    let mut from_base = HashSet::new();
    for key in &cited {
        if let Some(slot) = merged.get_mut(key.as_str())
            && slot.is_none()
        {
            *slot = o.get(key).or_else(|| t.get(key));
            if slot.is_none() {
                // Gone on both sides: the definition the merge base had.
                *slot = b.get(key);
                from_base.insert(key.as_str());
            }
        }
    }

    // Our order, then each chunk only theirs has right after its predecessor there.
    let mut order: Vec<&Chunk> = ours_chunks
        .iter()
        .filter(|c| merged.get(c.key.as_str()).is_some_and(Option::is_some))
        .collect();
    let mut placed: HashSet<&str> = order.iter().map(|c| c.key.as_str()).collect();
    let mut anchor: Option<&str> = None;
    for chunk in &theirs_chunks {
        let key = chunk.key.as_str();
        if !placed.contains(key) && merged.get(key).is_some_and(Option::is_some) {
            let mut at =
                anchor.and_then(|a| order.iter().position(|c| c.key == a)).map_or(0, |p| p + 1);
            // What ours added at the same place comes first, then theirs.
            while at < order.len()
                && !b.contains_key(&order[at].key)
                && !t.contains_key(&order[at].key)
            {
                at += 1;
            }
            order.insert(at, chunk);
            placed.insert(key);
        }
        if placed.contains(key) {
            anchor = Some(key);
        }
    }
    order.extend(base_chunks.iter().filter(|c| from_base.contains(c.key.as_str())));
    if order.is_empty() && (ours.is_none() || theirs.is_none()) {
        return TopicMerge { text: None, conflicts };
    }
    let mut text = if ours.is_some() { lead } else { theirs_lead };
    for (n, chunk) in order.iter().enumerate() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        // Chunks that were not neighbours get the blank line that keeps them apart (only
        // consecutive definitions sit on adjacent lines).
        if n > 0 {
            let before = order[n - 1];
            let neighbours = before.next.as_deref() == Some(chunk.key.as_str());
            if !neighbours && before.gap.is_empty() && !(before.definition && chunk.definition) {
                text.push('\n');
            }
        }
        let body = merged.get(chunk.key.as_str()).copied().flatten().unwrap_or(&chunk.body);
        text.push_str(body);
        // The gap of a chunk that moved next to new neighbours stays its own.
        text.push_str(&chunk.gap);
    }
    TopicMerge { text: Some(text), conflicts }
}

/// Two versions of one archive that cannot be joined: not frames this scan trusts whole, or a
/// frame that would read differently once appended.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: the two versions of this archive cannot be merged: {reason}")]
pub struct ArchiveConflict {
    /// The archive, workspace-relative.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// Merges two versions of the archive at `rel_path` by union (`None`: absent on that side; an
/// archive is never removed by a merge). One version extending the other is taken whole; else
/// both must be complete v2 archives, and theirs' frames ours lacks are appended to ours in
/// their order, byte for byte. The result scans complete and holds every frame of both.
///
/// A frame both sides hold with different bytes is a conflict (its reason names the source
/// ID), unless one of the two [supersedes] the other: a [tombstone](crate::forget::is_tombstone)
/// over any frame (a forgotten record is never brought back), a
/// [redaction](crate::rewrite::is_redaction) over its original (a redacted secret is never
/// brought back). The merge keeps the superseding frame, at the place the frame has in ours;
/// when it is theirs, the merged text does not start with ours. Which frame wins depends only
/// on the two frames, so when both sides hold the same source IDs in the same order,
/// `merge_archive(a, b)` and `merge_archive(b, a)` give the same bytes (with frames only one
/// side has, each side's own come first, as in any union).
pub fn merge_archive(
    rel_path: &str,
    ours: Option<&str>,
    theirs: Option<&str>,
) -> Result<Option<String>, ArchiveConflict> {
    let conflict =
        |reason: &str| ArchiveConflict { path: rel_path.to_owned(), reason: reason.to_owned() };
    let (ours, theirs) = match (ours, theirs) {
        (None, None) => return Ok(None),
        (Some(text), None) | (None, Some(text)) => return Ok(Some(text.to_owned())),
        (Some(ours), Some(theirs)) => (ours, theirs),
    };
    if theirs.starts_with(ours) {
        return Ok(Some(theirs.to_owned()));
    }
    if ours.starts_with(theirs) {
        return Ok(Some(ours.to_owned()));
    }
    if !is_v2_source_path(rel_path) {
        return Err(conflict("a legacy archive changed on both sides"));
    }
    let (mine, other) = (scan(rel_path, ours), scan(rel_path, theirs));
    if !mine.complete || !other.complete {
        return Err(conflict("one version does not scan complete"));
    }
    let mut added = Vec::new();
    // Our frames that theirs superseded: replaced by theirs, byte for byte.
    let mut replaced: Vec<(&Frame<'_>, String)> = Vec::new();
    for frame in &other.frames {
        if let Some(existing) = mine.frame(frame.source_id) {
            let rendered = frame.render();
            if existing.render() != rendered {
                if supersedes(frame, existing) {
                    replaced.push((existing, rendered));
                } else if !supersedes(existing, frame) {
                    return Err(conflict(&format!(
                        "source {} differs, and neither version is a tombstone or a redaction \
                         of the other",
                        frame.source_id
                    )));
                }
            }
            continue;
        }
        added.push(frame);
    }
    let base = if replaced.is_empty() {
        std::borrow::Cow::Borrowed(ours)
    } else {
        replaced.sort_by_key(|(frame, _)| frame.line);
        std::borrow::Cow::Owned(replace_frames(ours, &replaced))
    };
    let rendered: Vec<String> = added.iter().map(|f| f.render()).collect();
    let merged =
        if rendered.is_empty() { base.into_owned() } else { append_frames_to(&base, &rendered) };
    let check = scan(rel_path, &merged);
    let same = |f: &&Frame<'_>| {
        check.frame(f.source_id).is_some_and(|g| g.record == f.record && g.meta == f.meta)
    };
    let taken = |(f, new): &(&Frame<'_>, String)| {
        check.frame(f.source_id).is_some_and(|g| g.render() == *new)
    };
    if !check.complete
        || check.frames.len() != mine.frames.len() + added.len()
        || !added.iter().all(same)
        || !replaced.iter().all(taken)
    {
        return Err(conflict("the appended frames would read differently"));
    }
    Ok(Some(merged))
}

/// Whether the frame `new` may stand where the frame `old` of the same source ID stood: `new`
/// is a [tombstone](crate::forget::is_tombstone) and `old` is not, or `new` is a
/// [redaction](crate::rewrite::is_redaction) of `old`. Never true both ways, nor for equal
/// frames: a merge keeps the frame that supersedes the other, and an archive may become its
/// superseding version ([`extends_archive`]).
pub fn supersedes(new: &Frame<'_>, old: &Frame<'_>) -> bool {
    new.source_id == old.source_id
        && ((is_tombstone(new) && !is_tombstone(old)) || is_redaction(new, old))
}

/// Whether `merged` is the archive `current` (both at `rel_path`) with frames appended and some
/// of its frames replaced, in place, by frames that [supersede](supersedes) them (their
/// tombstones, their redactions): everything an archive may become besides the owner's
/// promotion, and what [`merge_archive`] returns when the other clone forgot or redacted a
/// record this one holds. Both must scan complete unless `merged` simply extends `current`.
pub fn extends_archive(rel_path: &str, current: &str, merged: &str) -> bool {
    if merged.starts_with(current) {
        return true;
    }
    let (before, after) = (scan(rel_path, current), scan(rel_path, merged));
    if !before.complete || !after.complete || after.frames.len() < before.frames.len() {
        return false;
    }
    let mut replaced = Vec::new();
    for (old, new) in before.frames.iter().zip(&after.frames) {
        if old.source_id != new.source_id {
            return false;
        }
        let rendered = new.render();
        if old.render() != rendered {
            if !supersedes(new, old) {
                return false;
            }
            replaced.push((old, rendered));
        }
    }
    merged.starts_with(&replace_frames(current, &replaced))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "# Facts\n\nAlice likes tea.[^e-1] ^aaaaaaaa\n\nBob likes coffee.[^e-1] ^bbbbbbbb\n\n[^e-1]: Time: 2026-01-01; Sources: [s](x)\n";

    #[test]
    fn edits_of_different_blocks_both_apply() {
        let ours = BASE.replace("Alice likes tea", "Alice likes green tea");
        let theirs = BASE.replace("Bob likes coffee", "Bob likes black coffee");
        let merge = merge_topic(Some(BASE), Some(&ours), Some(&theirs), None);
        assert!(merge.conflicts.is_empty(), "{:?}", merge.conflicts);
        let text = merge.text.unwrap();
        assert!(text.contains("Alice likes green tea"), "{text}");
        assert!(text.contains("Bob likes black coffee"), "{text}");
        assert_eq!(text.matches("^aaaaaaaa").count(), 1);
    }

    #[test]
    fn a_block_added_on_each_side_lands_after_its_neighbour() {
        let ours = BASE.replace("^aaaaaaaa\n", "^aaaaaaaa\n\nCarol arrived.[^e-1] ^cccccccc\n");
        let theirs = BASE.replace("^bbbbbbbb\n", "^bbbbbbbb\n\nDan left.[^e-1] ^dddddddd\n");
        let text = merge_topic(Some(BASE), Some(&ours), Some(&theirs), None).text.unwrap();
        let at = |s: &str| text.find(s).unwrap();
        assert!(at("^aaaaaaaa") < at("^cccccccc") && at("^cccccccc") < at("^bbbbbbbb"), "{text}");
        assert!(
            at("^bbbbbbbb") < at("^dddddddd") && at("^dddddddd") < at("[^e-1]: Time"),
            "{text}"
        );
        assert!(text.contains("^dddddddd\n\n[^e-1]:"), "{text}");
    }

    #[test]
    fn one_block_changed_differently_is_a_conflict_and_keeps_both() {
        let ours = BASE.replace("Alice likes tea", "Alice likes green tea");
        let theirs = BASE.replace("Alice likes tea", "Alice likes mint tea");
        let merge = merge_topic(Some(BASE), Some(&ours), Some(&theirs), None);
        assert_eq!(merge.conflicts.len(), 1);
        let conflict = &merge.conflicts[0];
        assert_eq!(conflict.block, "aaaaaaaa");
        assert!(conflict.ours.as_deref().unwrap().contains("green"));
        assert!(conflict.theirs.as_deref().unwrap().contains("mint"));
        let theirs_won = merge_topic(Some(BASE), Some(&ours), Some(&theirs), Some(Prefer::Theirs));
        assert!(theirs_won.text.unwrap().contains("mint tea"));
    }

    #[test]
    fn deleted_on_one_side_and_edited_on_the_other_is_a_conflict() {
        let ours = BASE.replace("Bob likes coffee.[^e-1] ^bbbbbbbb\n\n", "");
        let theirs = BASE.replace("Bob likes coffee", "Bob likes tea now");
        let merge = merge_topic(Some(BASE), Some(&ours), Some(&theirs), None);
        assert_eq!(merge.conflicts.len(), 1);
        assert_eq!(merge.conflicts[0].ours, None);
        // Deleted on one side, untouched on the other: gone.
        let theirs = BASE.replace("Alice likes tea", "Alice likes green tea");
        let merge = merge_topic(Some(BASE), Some(&ours), Some(&theirs), None);
        assert!(merge.conflicts.is_empty());
        let text = merge.text.unwrap();
        assert!(!text.contains("^bbbbbbbb") && text.contains("green tea"), "{text}");
    }

    /// Bob's block is the only one citing `[^e-2]`, so the side that deletes the block deletes
    /// that definition with it.
    const OWN: &str = "# Facts\n\nAlice likes tea.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: 2026-01-01; Sources: [s](x)\n\nBob likes coffee.[^e-2] ^bbbbbbbb\n\n[^e-2]: Time: 2026-01-01; Sources: [t](y)\n";

    /// Every `[^ID]` cited by a paragraph of `text` has exactly one definition line.
    fn every_citation_defined_once(text: &str) {
        let doc = Document::parse(text);
        for paragraph in doc.paragraphs() {
            let body = doc.paragraph_text(paragraph);
            for id in citations(&body) {
                let definition = format!("\n[^{}]: ", &body[id]);
                assert_eq!(text.matches(&definition).count(), 1, "{definition:?} in:\n{text}");
            }
        }
    }

    #[test]
    fn a_block_kept_against_its_deletion_keeps_the_definitions_it_cites() {
        let deleted = OWN.replace(
            "Bob likes coffee.[^e-2] ^bbbbbbbb\n\n[^e-2]: Time: 2026-01-01; Sources: [t](y)\n",
            "",
        );
        let edited = OWN.replace("Bob likes coffee", "Bob likes black coffee");
        for (ours, theirs, prefer) in
            [(&edited, &deleted, Prefer::Ours), (&deleted, &edited, Prefer::Theirs)]
        {
            let merge = merge_topic(Some(OWN), Some(ours), Some(theirs), Some(prefer));
            assert_eq!(merge.conflicts.len(), 1, "{prefer:?}: {:?}", merge.conflicts);
            let text = merge.text.unwrap();
            assert!(text.contains("Bob likes black coffee.[^e-2] ^bbbbbbbb\n"), "{text}");
            every_citation_defined_once(&text);
            let at = |s: &str| text.find(s).unwrap();
            assert!(at("^bbbbbbbb") < at("[^e-2]: Time"), "{text}");
        }
        // The side that deleted the block wins: its definition goes with it.
        let merge = merge_topic(Some(OWN), Some(&edited), Some(&deleted), Some(Prefer::Theirs));
        let text = merge.text.unwrap();
        assert!(!text.contains("[^e-2]"), "{text}");
    }

    #[test]
    fn a_paragraph_added_citing_a_definition_the_other_side_pruned_keeps_it() {
        let deleted = OWN.replace(
            "Bob likes coffee.[^e-2] ^bbbbbbbb\n\n[^e-2]: Time: 2026-01-01; Sources: [t](y)\n",
            "",
        );
        let added =
            OWN.replace("^aaaaaaaa\n", "^aaaaaaaa\n\nCarol likes coffee too.[^e-2] ^cccccccc\n");
        let merge = merge_topic(Some(OWN), Some(&added), Some(&deleted), None);
        assert!(merge.conflicts.is_empty(), "{:?}", merge.conflicts);
        let text = merge.text.unwrap();
        assert!(text.contains("Carol likes coffee too.") && !text.contains("Bob"), "{text}");
        every_citation_defined_once(&text);
    }

    #[test]
    fn files_created_or_removed_on_one_side_follow_that_side() {
        assert_eq!(merge_topic(None, None, Some(BASE), None).text.as_deref(), Some(BASE));
        assert_eq!(merge_topic(Some(BASE), Some(BASE), None, None).text, None);
        let both = merge_topic(None, Some(BASE), Some(BASE), None);
        assert_eq!(both.text.as_deref(), Some(BASE));
    }

    fn archive(records: &[(u64, &str)]) -> String {
        let frames: Vec<String> = records
            .iter()
            .map(|(n, text)| {
                crate::source::ArchiveRecord::new(
                    "claude-code",
                    "t",
                    format!("m{n}"),
                    *n,
                    "user",
                    *text,
                )
                .render()
            })
            .collect();
        crate::source::render_archive(&frames)
    }

    #[test]
    fn archives_merge_by_union_of_frames() {
        let path = "sources/claude-code/_v2/t.md";
        let base = archive(&[(1, "one")]);
        let ours = archive(&[(1, "one"), (2, "two")]);
        let theirs = archive(&[(1, "one"), (3, "three")]);
        assert!(scan(path, &ours).complete);
        assert_eq!(merge_archive(path, Some(&base), Some(&ours)).unwrap(), Some(ours.clone()));
        assert_eq!(merge_archive(path, None, Some(&ours)).unwrap(), Some(ours.clone()));
        let merged = merge_archive(path, Some(&ours), Some(&theirs)).unwrap().unwrap();
        assert!(merged.starts_with(&ours));
        let scanned = scan(path, &merged);
        assert!(scanned.complete && scanned.frames.len() == 3, "{merged}");
        assert!(scanned.contains("claude-code/t/m3"));
        // A frame both sides hold with different bytes cannot be joined.
        let forged = archive(&[(1, "one"), (2, "TWO")]);
        assert!(merge_archive(path, Some(&ours), Some(&forged)).is_err());
    }

    const ARCHIVE: &str = "sources/claude-code/_v2/t.md";

    #[test]
    fn a_redaction_wins_over_its_original_on_either_side() {
        let original = archive(&[(1, "one KEY"), (2, "two <private>p</private>"), (3, "three")]);
        let redacted = archive(&[(1, "one [REDACTED:k]"), (2, "two "), (3, "three")]);
        for (ours, theirs) in [(&original, &redacted), (&redacted, &original)] {
            let merged = merge_archive(ARCHIVE, Some(ours), Some(theirs)).unwrap();
            assert_eq!(merged.as_deref(), Some(redacted.as_str()));
        }
        // Not a redaction: other text around the marker.
        let other = archive(&[(1, "eno [REDACTED:k]"), (2, "two "), (3, "three")]);
        let err = merge_archive(ARCHIVE, Some(&original), Some(&other)).unwrap_err();
        assert!(err.reason.contains("source claude-code/t/m1 differs"), "{err}");
        assert!(merge_archive(ARCHIVE, Some(&other), Some(&original)).is_err());
    }

    #[test]
    fn an_archive_may_grow_and_lose_records_to_tombstones_and_redactions_only() {
        let text = archive(&[(1, "one"), (2, "two KEY")]);
        let forgotten = crate::forget::tombstone_archive(
            ARCHIVE,
            &text,
            &["claude-code/t/m1".to_owned()].into(),
        )
        .unwrap()
        .unwrap();
        let grown = append_frames_to(
            &forgotten,
            &[crate::forget::tombstone_frame("claude-code/t/m3", "x")],
        );
        let redacted = archive(&[(1, "one"), (2, "two [REDACTED:k]")]);
        let both = archive(&[(1, "one"), (2, "two [REDACTED:k]"), (4, "four")]);
        for merged in [&text, &forgotten, &grown, &redacted, &both] {
            assert!(extends_archive(ARCHIVE, &text, merged), "{merged}");
        }
        // Not back, not another record, not fewer records.
        assert!(!extends_archive(ARCHIVE, &forgotten, &text));
        assert!(!extends_archive(ARCHIVE, &redacted, &text));
        assert!(!extends_archive(ARCHIVE, &text, &archive(&[(1, "ONE"), (2, "two KEY")])));
        assert!(!extends_archive(ARCHIVE, &text, &archive(&[(1, "one")])));
        assert!(!extends_archive(ARCHIVE, &text, &archive(&[(2, "two KEY"), (1, "one")])));
    }

    #[test]
    fn chunks_that_were_not_neighbours_are_kept_apart_by_a_blank_line() {
        let base = "# Notes\n";
        let ours = "# Notes\n\nAlice.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: x; Sources: [a](y)\n";
        let theirs = "# Notes\n\nBob.[^e-2] ^bbbbbbbb\n\n[^e-2]: Time: x; Sources: [b](z)\n";
        let text = merge_topic(Some(base), Some(ours), Some(theirs), None).text.unwrap();
        let doc = Document::parse(&text);
        let ids: Vec<String> = doc
            .paragraphs()
            .iter()
            .flat_map(|p| doc.block_ids(p))
            .map(|id| id.as_str().to_owned())
            .collect();
        assert_eq!(ids, ["aaaaaaaa", "bbbbbbbb"], "{text}");
        assert!(text.contains("[^e-1]: Time: x; Sources: [a](y)\n\nBob."), "{text}");
    }
}
