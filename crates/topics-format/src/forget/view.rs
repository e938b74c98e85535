//! Forgetting in the derived views of old commits, and in any other file of the workspace (see
//! `docs/format.md#forgetting-in-derived-views`).

use std::borrow::Cow;
use std::collections::HashSet;

use super::archive::forget_in_archive;
use super::json::Json;
use super::redact::redact;
use super::topic::{forget_in_text, unlink_gone};
use super::{Forgetting, forget_in_topic, parent_dir};
use crate::python::is_space;
use crate::topic::{is_block_id, is_memory_id, links};

/// Forgets `forgetting` in the file at `path` (workspace-relative), where `removed_blocks` are
/// the blocks the topics lost (every removed unit ID, as [`forget_in_tree`](super::forget_in_tree)
/// reports them). `None` when the file does not change.
///
/// - `core.md` (the core view): its paragraphs go as in a topic file, those of `removed_blocks`
///   too.
/// - `timeline/**.md`: a row goes when its `[Topic]` link names a removed block, when its quote
///   holds the literal, or when every source link it had names a forgotten record (or holds the
///   literal); such source links go from the rows that stay, and block links to removed blocks
///   in a quote become their labels.
/// - `recent_events.jsonl`: the line of a removed block goes (and one whose content holds the
///   literal, or whose refs were all forgotten); forgotten records leave `refs` and
///   `source_refs`, block links to removed blocks in `content` become their labels.
/// - `relations.json`: the entries of removed blocks go, and every edge to one.
/// - `topics/**.md`: [`forget_in_topic`] with `removed_blocks` as removed elsewhere.
/// - `sources/**`: a v2 archive that scans complete gets the tombstones of the forgotten
///   records and of every record holding the literal
///   ([`tombstone_archive`](super::tombstone_archive)); its framing is never touched.
///
/// Then, as the last safety net for any path but a complete v2 archive, every remaining
/// occurrence of the literal is replaced by [`FORGOTTEN`](super::FORGOTTEN): in the strings of
/// the JSON views (keys and values; JSON syntax is never touched), in the text of every other
/// file. The views stay well-formed (valid JSON, their own layout) but are not what a rebuild
/// would write: `recent_events.jsonl` keeps fewer than its limit, a `created_order` keeps the
/// number it had, a timeline file whose rows all went stays with its heading alone, the core
/// view is not refilled up to its budget, and `whens` keep the dates of evidence that went.
pub fn forget_in_view(
    path: &str,
    text: &str,
    forgetting: &Forgetting,
    removed_blocks: &HashSet<String>,
) -> Option<String> {
    let gone = |id: &str| removed_blocks.contains(id) || forgetting.forgets_block(id);
    let structured = if path == "core.md" {
        forget_in_text(text, "", forgetting, &gone, &|id| removed_blocks.contains(id)).text
    } else if path == "recent_events.jsonl" {
        return recent_events(text, forgetting, &gone);
    } else if path == "relations.json" {
        return relations(text, forgetting, &gone);
    } else if path.starts_with("timeline/") && path.ends_with(".md") {
        timeline(path, text, forgetting, &gone)
    } else if let Some(topic) = path.strip_prefix("topics/").filter(|p| p.ends_with(".md")) {
        forget_in_topic(topic, text, forgetting, removed_blocks).text
    } else if let Some(tombstoned) =
        path.strip_prefix("sources/").and_then(|_| forget_in_archive(path, text, forgetting))
    {
        // The framing of a trusted archive is never touched: no safety net.
        return tombstoned;
    } else {
        None
    };
    let current = structured.as_deref().unwrap_or(text);
    match forgetting.literal().map(|literal| redact(current, literal)) {
        Some(Cow::Owned(net)) => Some(net),
        _ => structured,
    }
}

/// The literal replaced in one string; whether it was.
fn redact_string(forgetting: &Forgetting, s: &mut String) -> bool {
    match forgetting.literal().map(|literal| redact(s, literal)) {
        Some(Cow::Owned(out)) => {
            *s = out;
            true
        }
        _ => false,
    }
}

/// `timeline/<date>.md`: `# <date>`, then rows separated by an empty line, each
/// `<quote> [Topic](<topic>#^<id>) [<label>](<source>)…`.
fn timeline(
    path: &str,
    text: &str,
    forgetting: &Forgetting,
    gone: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let dir = parent_dir(path);
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut pieces = body.split("\n\n");
    let header = pieces.next()?;
    if !header.starts_with("# ") {
        return None;
    }
    let mut rows: Vec<Cow<'_, str>> = Vec::new();
    let mut changed = false;
    for row in pieces {
        match timeline_row(row, dir, forgetting, gone) {
            Some(Cow::Borrowed(kept)) => rows.push(Cow::Borrowed(kept)),
            Some(edited) => {
                rows.push(edited);
                changed = true;
            }
            None => changed = true,
        }
    }
    if !changed {
        return None;
    }
    let mut out = header.to_owned();
    for row in rows {
        out.push_str("\n\n");
        out.push_str(&row);
    }
    let trimmed = out.trim_end_matches(is_space).len();
    out.truncate(trimmed);
    out.push('\n');
    Some(out)
}

/// One timeline row as it stays (`None`: it goes).
fn timeline_row<'r>(
    row: &'r str,
    dir: &str,
    forgetting: &Forgetting,
    gone: &dyn Fn(&str) -> bool,
) -> Option<Cow<'r, str>> {
    let found = links(row);
    // The row's own link: the last `[Topic]` link to a block; the source links follow it.
    let Some(at) = found.iter().rposition(|l| {
        &row[l.label.clone()] == "Topic" && topic_id(&row[l.target.clone()]).is_some()
    }) else {
        return Some(Cow::Borrowed(row));
    };
    let topic = &found[at];
    if topic_id(&row[topic.target.clone()]).is_some_and(gone) {
        return None;
    }
    let quote = &row[..topic.whole.start];
    if forgetting.matches(quote) {
        return None;
    }
    let sources = &found[at + 1..];
    let dead: Vec<_> = sources
        .iter()
        .filter(|l| {
            forgetting.names_source(dir, &row[l.target.clone()])
                || forgetting.matches(&row[l.whole.clone()])
        })
        .collect();
    if !sources.is_empty() && dead.len() == sources.len() {
        return None;
    }
    let new_quote = unlink_gone(quote, gone);
    if dead.is_empty() && matches!(new_quote, Cow::Borrowed(_)) {
        return Some(Cow::Borrowed(row));
    }
    if forgetting.matches(&new_quote) {
        return None;
    }
    let mut out = new_quote.into_owned();
    let mut copied = topic.whole.start;
    for link in dead {
        // The space that separates it from the link before.
        let start = if row[..link.whole.start].ends_with(' ') {
            link.whole.start - 1
        } else {
            link.whole.start
        };
        out.push_str(&row[copied..start.max(copied)]);
        copied = link.whole.end;
    }
    out.push_str(&row[copied..]);
    Some(Cow::Owned(out))
}

/// The block a `[Topic]` link target names: its `#^<id>` (or `#mem_…`) fragment.
pub(crate) fn topic_id(target: &str) -> Option<&str> {
    let fragment = target.split_once('#')?.1;
    let id = fragment.strip_prefix('^').unwrap_or(fragment);
    (is_block_id(id) || is_memory_id(id)).then_some(id)
}

/// `recent_events.jsonl`: one JSON object per line.
fn recent_events(
    text: &str,
    forgetting: &Forgetting,
    gone: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let Some(mut value) = Json::parse(body) else {
            // Not JSON: the safety net alone.
            let mut raw = body.to_owned();
            changed |= redact_string(forgetting, &mut raw);
            out.push_str(&raw);
            out.push_str(end);
            continue;
        };
        let str_of = |key: &str| value.get(key).and_then(Json::as_str);
        if str_of("memory_id").is_some_and(gone)
            || str_of("content").is_some_and(|c| forgetting.matches(c))
        {
            changed = true;
            continue;
        }
        let mut edited = false;
        let mut emptied = false;
        for key in ["refs", "source_refs"] {
            if let Some(Json::Array(items)) = value.get_mut(key) {
                let before = items.len();
                items.retain(|item| !item.as_str().is_some_and(|s| forgetting.forgets_source(s)));
                edited |= items.len() != before;
                emptied |= before > 0 && items.is_empty();
            }
        }
        if emptied {
            changed = true;
            continue;
        }
        if let Some(Json::String(content)) = value.get_mut("content")
            && let Cow::Owned(unlinked) = unlink_gone(content, gone)
        {
            *content = unlinked;
            edited = true;
        }
        edited |= value.edit_strings(&mut |s| redact_string(forgetting, s));
        if edited {
            value.write(&mut out);
            out.push_str(end);
            changed = true;
        } else {
            out.push_str(line);
        }
    }
    changed.then_some(out)
}

/// `relations.json`: `{"backlinks": {target: [sources]}, "outbound": {id: [targets]}}`.
fn relations(text: &str, forgetting: &Forgetting, gone: &dyn Fn(&str) -> bool) -> Option<String> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let Some(mut value) = Json::parse(body) else {
        let mut raw = text.to_owned();
        return redact_string(forgetting, &mut raw).then_some(raw);
    };
    let mut changed = false;
    for key in ["outbound", "backlinks"] {
        let Some(Json::Object(entries)) = value.get_mut(key) else { continue };
        let before = entries.len();
        entries.retain(|(id, _)| !gone(id));
        changed |= entries.len() != before;
        for (_, edges) in entries.iter_mut() {
            if let Json::Array(items) = edges {
                let before = items.len();
                items.retain(|item| !item.as_str().is_some_and(gone));
                changed |= items.len() != before;
            }
        }
        if key == "backlinks" {
            // A target no one links to any more has no entry.
            let before = entries.len();
            entries.retain(|(_, edges)| !matches!(edges, Json::Array(items) if items.is_empty()));
            changed |= entries.len() != before;
        }
    }
    changed |= value.edit_strings(&mut |s| redact_string(forgetting, s));
    if !changed {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    value.write(&mut out);
    if text.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forgetting(sources: &[&str], blocks: &[&str], literal: Option<&str>) -> Forgetting {
        Forgetting::new(sources, blocks, literal).expect("valid")
    }

    fn removed(ids: &[&str]) -> HashSet<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    fn check(path: &str, input: &str, f: &Forgetting, gone: &[&str], expected: Option<&str>) {
        let out = forget_in_view(path, input, f, &removed(gone));
        assert_eq!(out.as_deref(), expected, "{path}:\n{input}");
        let again = out.unwrap_or_else(|| input.to_owned());
        assert_eq!(forget_in_view(path, &again, f, &removed(gone)), None, "second pass");
    }

    #[test]
    fn timeline_rows_of_removed_blocks_go() {
        let anchor = crate::source::anchor_for("openprogram/s/u1");
        let u1 = format!("../../../sources/openprogram/_v2/s.md#{anchor}");
        let u2 = "../../../sources/openprogram/_v2/s.md#source-other";
        let input = format!(
            "# 2024-03-15\n\nA. [Topic](../../../topics/t.md#^aaaaaaaa) [a](x)\n\nB, see [A](../../../topics/t.md#^aaaaaaaa). [Topic](../../../topics/t.md#^bbbbbbbb) [u1]({u1}) [u2]({u2})\n\nC. [Topic](../../../topics/t.md#^cccccccc) [u1]({u1})\n"
        );
        check(
            "timeline/2024/03/15.md",
            &input,
            &forgetting(&["openprogram/s/u1"], &[], None),
            &["aaaaaaaa"],
            Some(&format!(
                "# 2024-03-15\n\nB, see A. [Topic](../../../topics/t.md#^bbbbbbbb) [u2]({u2})\n"
            )),
        );
    }

    #[test]
    fn a_timeline_left_without_rows_keeps_its_heading() {
        check(
            "timeline/2024.md",
            "# 2024\n\nA. [Topic](../topics/t.md#^aaaaaaaa) [a](x)\n",
            &forgetting(&[], &[], None),
            &["aaaaaaaa"],
            Some("# 2024\n"),
        );
    }

    #[test]
    fn recent_events_lose_lines_refs_and_links() {
        let input = concat!(
            r#"{"memory_id": "aaaaaaaa", "when": null, "whens": [], "content": "A.", "refs": ["p/t/1"], "source_refs": ["p/t/1"], "topic_path": "topics/t.md", "headings": ["T"], "created_order": 0}"#,
            "\n",
            r#"{"memory_id": "bbbbbbbb", "when": null, "whens": [], "content": "See [A](t.md#^aaaaaaaa).", "refs": ["p/t/1", "p/t/2"], "source_refs": ["p/t/1", "p/t/2"], "topic_path": "topics/t.md", "headings": ["About Ana"], "created_order": 1}"#,
            "\n",
            r#"{"memory_id": "cccccccc", "when": null, "whens": [], "content": "C.", "refs": ["p/t/1"], "source_refs": ["p/t/1"], "topic_path": "topics/t.md", "headings": [], "created_order": 2}"#,
            "\n",
        );
        check(
            "recent_events.jsonl",
            input,
            &forgetting(&["p/t/1"], &[], Some("Ana")),
            &["aaaaaaaa"],
            Some(concat!(
                r#"{"memory_id": "bbbbbbbb", "when": null, "whens": [], "content": "See A.", "refs": ["p/t/2"], "source_refs": ["p/t/2"], "topic_path": "topics/t.md", "headings": ["About [FORGOTTEN]"], "created_order": 1}"#,
                "\n",
            )),
        );
    }

    #[test]
    fn relations_lose_entries_and_edges() {
        check(
            "relations.json",
            "{\"backlinks\": {\"aaaaaaaa\": [\"bbbbbbbb\"], \"cccccccc\": [\"aaaaaaaa\", \"bbbbbbbb\"]}, \"outbound\": {\"aaaaaaaa\": [\"cccccccc\"], \"bbbbbbbb\": [\"aaaaaaaa\", \"cccccccc\"], \"cccccccc\": []}}\n",
            &forgetting(&[], &[], None),
            &["aaaaaaaa"],
            Some(
                "{\"backlinks\": {\"cccccccc\": [\"bbbbbbbb\"]}, \"outbound\": {\"bbbbbbbb\": [\"cccccccc\"], \"cccccccc\": []}}\n",
            ),
        );
    }

    #[test]
    fn the_core_view_loses_paragraphs_of_removed_blocks() {
        check(
            "core.md",
            "# Core\n\nA.[^e-1] ^aaaaaaaa\n\n[^e-1]: Time: `undated`; Sources: [a](sources/openprogram/_v2/s.md#source-x)\n\nB, see [A](topics/t.md#^aaaaaaaa).[^e-2] ^bbbbbbbb\n\n[^e-2]: Time: `undated`; Sources: [b](sources/openprogram/_v2/s.md#source-y)\n",
            &forgetting(&[], &[], None),
            &["aaaaaaaa"],
            Some(
                "# Core\n\nB, see A.[^e-2] ^bbbbbbbb\n\n[^e-2]: Time: `undated`; Sources: [b](sources/openprogram/_v2/s.md#source-y)\n",
            ),
        );
    }

    #[test]
    fn any_other_file_gets_the_safety_net() {
        check(
            "notes.txt",
            "call Ana\n",
            &forgetting(&[], &[], Some("Ana")),
            &[],
            Some("call [FORGOTTEN]\n"),
        );
        check("notes.txt", "nothing\n", &forgetting(&[], &[], Some("Ana")), &[], None);
    }

    #[test]
    fn archives_get_tombstones_not_replacements() {
        let mut record =
            crate::source::ArchiveRecord::new("openprogram", "s", "u1", 1, "user", "call Ana");
        record.timestamp = Some("t".into());
        let text = crate::source::render_archive(&[record.render()]);
        let out = forget_in_view(
            "sources/openprogram/_v2/s.md",
            &text,
            &forgetting(&[], &[], Some("Ana")),
            &HashSet::new(),
        );
        assert_eq!(
            out,
            Some(crate::source::render_archive(&[super::super::tombstone_frame(
                "openprogram/s/u1",
                "t"
            )]))
        );
    }
}
