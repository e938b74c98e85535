//! Rewriting any file of the workspace by its path, as an old commit holds it (see
//! `docs/format.md#rewriting-texts-in-place-redact`): the analog of
//! [`forget_in_view`](crate::forget::forget_in_view) for a text mapper.

use super::archive::rewrite_view as rewrite_archive_view;
use super::topic::rewrite as rewrite_topic_text;
use super::{Map, REDACTED, map_label, map_lines, map_text_lines};
use crate::forget::json::{is_json, map_strings};
use crate::forget::topic_id;
use crate::python::is_space;
use crate::topic::links;

/// The forget ledger: identifiers and hashes only, read by the forgets of other clones.
const LEDGER: &str = "forgotten.jsonl";

/// The file at `path` (workspace-relative, as a commit's tree names it) with its text mapped by
/// `map`; `None` when nothing changes, and for a text holding a NUL byte (a binary file; one
/// that is not UTF-8 never becomes a `&str`, and its caller keeps it as it is).
///
/// - `topics/**.md` and the core view `core.md`: as [`rewrite_topic`](super::rewrite_topic).
/// - `sources/**`: as [`rewrite_archive`](super::rewrite_archive); of a v2 archive that does not
///   scan complete, the valid frames so, and what follows the last of them (which no reader
///   trusts) line by line; a legacy archive the rewrite refuses, line by line.
/// - `timeline/**.md`: in each row `<quote> [Topic](…#^id) [label](source)…`, the quote as one
///   text and each source label; the heading and any other row line by line.
/// - `forgotten.jsonl` (the forget ledger): never (it holds identifiers and hashes, which other
///   clones replay).
/// - A `*.json` file that is JSON: every string, keys included, with the JSON around them byte
///   for byte.
/// - Any other file (`*.jsonl` included): line by line, so an unclosed `<private>` removes at
///   most to the end of its line; a line that is JSON has its strings mapped as above.
pub fn rewrite_in_view(
    path: &str,
    text: &str,
    map: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    if text.contains('\0') {
        return None;
    }
    let map = Map(map);
    if path == "core.md" || (path.starts_with("topics/") && path.ends_with(".md")) {
        rewrite_topic_text(text, map)
    } else if path.starts_with("sources/") {
        rewrite_archive_view(path, text, map)
    } else if path.starts_with("timeline/") && path.ends_with(".md") {
        timeline(text, map)
    } else if path == LEDGER {
        None
    } else if path.ends_with(".json") && is_json(text) {
        map_strings(text, &mut |s| map.apply(s))
    } else {
        // `*.jsonl` and any other text: each line that is JSON by its strings.
        map_lines(text, &mut |_, line| json_or_line(line, map))
    }
}

/// A JSON text with its strings mapped; any other text mapped whole.
fn json_or_line(line: &str, map: Map<'_>) -> Option<String> {
    if is_json(line) { map_strings(line, &mut |s| map.apply(s)) } else { map.apply(line) }
}

/// `timeline/<date>.md`: `# <date>`, then rows separated by an empty line.
fn timeline(text: &str, map: Map<'_>) -> Option<String> {
    let (body, end) = match text.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (text, ""),
    };
    if !body.starts_with("# ") {
        return map_text_lines(text, map);
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    for (i, piece) in body.split("\n\n").enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        let new = if i == 0 { map_text_lines(piece, map) } else { timeline_row(piece, map) };
        changed |= new.is_some();
        out.push_str(new.as_deref().unwrap_or(piece));
    }
    out.push_str(end);
    changed.then_some(out)
}

/// One timeline row: its quote (before the `[Topic]` link) as one text, kept a quote (no blank
/// line, not blank; else [`REDACTED`]), and the label of each source link after it; the links
/// stay. A row without a `[Topic]` link is mapped line by line.
fn timeline_row(row: &str, map: Map<'_>) -> Option<String> {
    let found = links(row);
    let Some(at) = found.iter().rposition(|l| {
        &row[l.label.clone()] == "Topic" && topic_id(&row[l.target.clone()]).is_some()
    }) else {
        return map_text_lines(row, map);
    };
    let quote_end = row[..found[at].whole.start].trim_end_matches(' ').len();
    let mut out = String::with_capacity(row.len());
    let mut copied = 0;
    if let Some(mapped) = map.apply(&row[..quote_end]) {
        let mapped = mapped.trim_end_matches(is_space);
        let fits = mapped.split('\n').all(|line| !line.chars().all(is_space));
        out.push_str(if fits { mapped } else { REDACTED });
        copied = quote_end;
    }
    let mut changed = copied > 0;
    for link in &found[at + 1..] {
        let Some(label) = map_label(&row[link.label.clone()], map) else { continue };
        out.push_str(&row[copied..link.label.start]);
        out.push_str(&label);
        copied = link.label.end;
        changed = true;
    }
    if !changed {
        return None;
    }
    out.push_str(&row[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(text: &str) -> Option<String> {
        let out = match text.find("<private>") {
            Some(at) => text[..at].to_owned(),
            None => text.to_owned(),
        };
        let out = out.replace("KEY", "[REDACTED:k]");
        (out != text).then_some(out)
    }

    fn check(path: &str, input: &str, expected: Option<&str>) {
        let out = rewrite_in_view(path, input, &map);
        assert_eq!(out.as_deref(), expected, "{path}:\n{input}");
        let again = out.unwrap_or_else(|| input.to_owned());
        assert_eq!(rewrite_in_view(path, &again, &map), None, "second pass of {path}");
    }

    #[test]
    fn timeline_quotes_and_labels() {
        check(
            "timeline/2024/03/15.md",
            "# 2024-03-15\n\nA KEY <private>b [Topic](../../../topics/t.md#^aaaaaaaa) [src KEY](../../../sources/openprogram/_v2/s.md#source-x)\n\n<private>B. [Topic](../../../topics/t.md#^bbbbbbbb)\n\nloose KEY <private>line\nnext KEY\n",
            Some(
                "# 2024-03-15\n\nA [REDACTED:k] [Topic](../../../topics/t.md#^aaaaaaaa) [src (REDACTED:k)](../../../sources/openprogram/_v2/s.md#source-x)\n\n[REDACTED] [Topic](../../../topics/t.md#^bbbbbbbb)\n\nloose [REDACTED:k] \nnext [REDACTED:k]\n",
            ),
        );
    }

    #[test]
    fn json_strings_only() {
        check(
            "recent_events.jsonl",
            "{\"memory_id\": \"a\", \"content\": \"KEY <private>x\\ny\", \"n\": 1.0}\nnot json KEY\n",
            Some(
                "{\"memory_id\": \"a\", \"content\": \"[REDACTED:k] \", \"n\": 1.0}\nnot json [REDACTED:k]\n",
            ),
        );
        check(
            "relations.json",
            "{\n  \"KEY\": [\"b\"]\n}\n",
            Some("{\n  \"[REDACTED:k]\": [\"b\"]\n}\n"),
        );
        check("forgotten.jsonl", "{\"sessions\": [\"KEY\"]}\n", None);
    }

    #[test]
    fn other_files_line_by_line_and_binaries_never() {
        check("notes.txt", "a <private>b\nc KEY\n", Some("a \nc [REDACTED:k]\n"));
        check("notes.txt", "nothing\n", None);
        assert_eq!(rewrite_in_view("x.bin", "KEY\0", &map), None);
    }

    #[test]
    fn topics_and_the_core_view_as_topics() {
        let text = "# KEY\n\nA <private>x.[^e-1] ^aaaaaaaa\n\nB.[^e-1] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: [a](sources/x.md#y)\n";
        let expected = "# [REDACTED:k]\n\nA[^e-1] ^aaaaaaaa\n\nB.[^e-1] ^bbbbbbbb\n\n[^e-1]: Time: `2024`; Sources: [a](sources/x.md#y)\n";
        check("core.md", text, Some(expected));
        check("topics/core.md", text, Some(expected));
    }
}
