//! A minimal unified-diff applier over the stage.
//!
//! A patch is a sequence of file sections, each `--- a/<path>` followed by `+++ b/<path>`
//! (`a/`, `b/` stripped; `/dev/null` on the old side creates the file, on the new side deletes
//! it; anything after a tab is a timestamp and ignored), then one or more hunks
//! `@@ -<start>[,<len>] +<start>[,<len>] @@`. A hunk's body is read by its header's counts:
//! lines starting with ` ` (context), `-` (removed), `+` (added), an empty line (empty
//! context) and `\ No newline at end of file`. Lines outside sections and hunks (`diff --git`,
//! `index …`, `new file mode 100644`) are ignored, except the headers git writes for renames,
//! copies, mode changes, symlinks and binary files, which are refused.
//!
//! Hunks of a section are applied in start order; context and removed lines must equal the
//! file's lines exactly, ignoring the line ending; hunks may not overlap.
//!
//! | message | code |
//! |---|---|
//! | `patch is empty` | `INVALID_ARGUMENT` |
//! | `patch contains no file sections` | `INVALID_ARGUMENT` |
//! | `malformed patch: --- without +++` | `INVALID_ARGUMENT` |
//! | `patch section has no file path` | `INVALID_ARGUMENT` |
//! | `patch hunk outside a file section` | `INVALID_ARGUMENT` |
//! | `patch file section has no hunks` | `INVALID_ARGUMENT` |
//! | `patch exceeds 512000 bytes` | `INVALID_ARGUMENT` |
//! | `malformed patch hunk header: <line>` | `INVALID_ARGUMENT` |
//! | `malformed patch hunk: <line>` (a bad line, or counts the body misses) | `INVALID_ARGUMENT` |
//! | `malformed patch hunk: <header> undercounts its body (next line: …)` | `INVALID_ARGUMENT` |
//! | `unsupported patch header: <line>` (rename/copy/mode/symlink/binary) | `INVALID_ARGUMENT` |
//! | `patch renames a file` (old and new paths differ) | `INVALID_ARGUMENT` |
//! | a path outside `topics/**/*.md` | `PATH_OUTSIDE_WORKSPACE` / `READ_ONLY_PATH` |
//! | `patch creates a file that already exists` | `PATCH_CONFLICT` |
//! | `patch modifies a file that does not exist` | `PATCH_CONFLICT` |
//! | `patch deletes a file that does not exist` | `PATCH_CONFLICT` |
//! | `overlapping patch hunks` | `PATCH_CONFLICT` |
//! | `patch context runs past end of file` (`line`) | `PATCH_CONFLICT` |
//! | `patch context does not match file contents` (`line`, `expected`, `found`) | `PATCH_CONFLICT`|
//!
//! The messages without a reference counterpart (hunk header and body shape, unsupported
//! headers, renames, size) are ours; the reference lists only the others.

use serde_json::{Map, Value};

use super::{ChangeLimits, invalid, refuse};
use crate::code::ErrorCode;
use crate::error::{Error, Result};
use crate::stage::{Staged, writable_path};

/// One file section of a parsed patch.
#[derive(Debug)]
pub(crate) struct Section {
    /// Normalized workspace-relative path (`topics/…`).
    path: String,
    kind: Kind,
    hunks: Vec<Hunk>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Create,
    Modify,
    Delete,
}

#[derive(Debug)]
struct Hunk {
    old_start: usize,
    old_len: usize,
    lines: Vec<HunkLine>,
}

#[derive(Debug)]
enum HunkLine {
    Context(String),
    Remove(String),
    /// The text, and whether a line break follows it.
    Add(String, bool),
}

/// Headers git writes that this applier refuses.
const UNSUPPORTED: [&str; 10] = [
    "rename from",
    "rename to",
    "copy from",
    "copy to",
    "similarity index",
    "dissimilarity index",
    "old mode",
    "new mode",
    "GIT binary patch",
    "Binary files",
];

/// The byte limit alone (what [`crate::UpdateRequest::from_json_with`] checks).
pub(crate) fn check_size(text: &str, limits: &ChangeLimits) -> Result<()> {
    if text.len() > limits.max_change_bytes {
        return Err(invalid(format!("patch exceeds {} bytes", limits.max_change_bytes)));
    }
    Ok(())
}

/// Parses a patch (no IO).
pub(crate) fn parse(text: &str, limits: &ChangeLimits) -> Result<Vec<Section>> {
    check_size(text, limits)?;
    if text.trim().is_empty() {
        return Err(invalid("patch is empty"));
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut sections: Vec<Section> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(old) = header(line, "---") {
            let Some(new) = lines.get(i + 1).and_then(|next| header(next, "+++")) else {
                return Err(invalid("malformed patch: --- without +++"));
            };
            sections.push(section(old, new)?);
            i += 2;
        } else if line.starts_with("@@") {
            let Some(section) = sections.last_mut() else {
                return Err(invalid("patch hunk outside a file section"));
            };
            let (hunk, next) = hunk(&lines, i)?;
            // A header that undercounts its body leaves body lines behind; read as "outside
            // any hunk" they would be ignored and the patch applied in part.
            if let Some(stray) = stray_body_line(&lines, next) {
                return Err(invalid(format!(
                    "malformed patch hunk: {} undercounts its body (next line: {stray})",
                    lines[i]
                )));
            }
            section.hunks.push(hunk);
            i = next;
        } else if header(line, "+++").is_some() {
            return Err(invalid("malformed patch: +++ without ---"));
        } else {
            if is_unsupported(line) {
                return Err(invalid(format!("unsupported patch header: {line}")));
            }
            i += 1;
        }
    }
    if sections.is_empty() {
        return Err(invalid("patch contains no file sections"));
    }
    if let Some(empty) = sections.iter().find(|s| s.hunks.is_empty()) {
        return Err(refuse(
            ErrorCode::InvalidArgument,
            "patch file section has no hunks",
            Some(&empty.path),
        ));
    }
    Ok(sections)
}

/// The first line at or after `lines[at]` (right after a hunk's counted body) if it is a body
/// line the header did not count: it starts with `+`, `-` or a space and is not the
/// `---`/`+++` pair that opens the next file section. Empty lines are empty context to the body
/// reader, so they are skipped: past the body they are stray only when a body line follows.
fn stray_body_line<'a>(lines: &[&'a str], at: usize) -> Option<&'a str> {
    let at = (at..lines.len()).find(|&k| !lines[k].is_empty())?;
    let line = lines[at];
    let opens_section = header(line, "---").is_some()
        && lines.get(at + 1).is_some_and(|next| header(next, "+++").is_some());
    (!opens_section && line.starts_with(['+', '-', ' '])).then_some(line)
}

/// The rest of a `---`/`+++` header line (`marker` alone, or followed by a space).
fn header<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(marker)?;
    if rest.is_empty() { Some(rest) } else { rest.strip_prefix(' ') }
}

fn is_unsupported(line: &str) -> bool {
    let symlink_mode = ["new file mode ", "deleted file mode ", "index "]
        .iter()
        .any(|prefix| line.starts_with(prefix) && line.ends_with(" 120000"))
        || line.starts_with("new file mode 120000")
        || line.starts_with("deleted file mode 120000");
    symlink_mode || UNSUPPORTED.iter().any(|prefix| line.starts_with(prefix))
}

/// The path of a `---`/`+++` header: `None` for `/dev/null`.
fn header_path(raw: &str) -> Option<&str> {
    let path = raw.split('\t').next().unwrap_or_default().trim();
    if path == "/dev/null" {
        return None;
    }
    Some(path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")).unwrap_or(path))
}

fn section(old: &str, new: &str) -> Result<Section> {
    let (old, new) = (header_path(old), header_path(new));
    let no_path = || invalid("patch section has no file path");
    let (raw, kind) = match (old, new) {
        (None, None) => return Err(no_path()),
        (None, Some(new)) => (new, Kind::Create),
        (Some(old), None) => (old, Kind::Delete),
        (Some(old), Some(new)) => {
            if !old.is_empty() && !new.is_empty() && old != new {
                return Err(refuse(ErrorCode::InvalidArgument, "patch renames a file", Some(new)));
            }
            (if new.is_empty() { old } else { new }, Kind::Modify)
        }
    };
    if raw.is_empty() {
        return Err(no_path());
    }
    let rel = writable_path(raw)
        .map_err(|error| refuse(error.code(), super::files::plain(&error), Some(raw)))?;
    Ok(Section { path: format!("topics/{rel}"), kind, hunks: Vec::new() })
}

/// `@@ -a[,b] +c[,d] @@…` → (a, b, c, d).
fn hunk_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (a, b) = range(old)?;
    let (c, d) = range(new)?;
    Some((a, b, c, d))
}

/// Reads the hunk starting at `lines[at]`; returns it and the index after it.
fn hunk(lines: &[&str], at: usize) -> Result<(Hunk, usize)> {
    let header = lines[at];
    let Some((old_start, old_len, _, new_len)) = hunk_header(header) else {
        return Err(invalid(format!("malformed patch hunk header: {header}")));
    };
    let (mut old_seen, mut new_seen) = (0usize, 0usize);
    let mut body: Vec<HunkLine> = Vec::new();
    let mut i = at + 1;
    while old_seen < old_len || new_seen < new_len {
        let Some(line) = lines.get(i) else {
            return Err(invalid(format!("malformed patch hunk: {header} is truncated")));
        };
        if let Some(rest) = line.strip_prefix('+') {
            body.push(HunkLine::Add(rest.to_owned(), true));
            new_seen += 1;
        } else if let Some(rest) = line.strip_prefix('-') {
            body.push(HunkLine::Remove(rest.to_owned()));
            old_seen += 1;
        } else if let Some(rest) = line.strip_prefix(' ') {
            body.push(HunkLine::Context(rest.to_owned()));
            old_seen += 1;
            new_seen += 1;
        } else if line.is_empty() {
            body.push(HunkLine::Context(String::new()));
            old_seen += 1;
            new_seen += 1;
        } else if line.starts_with('\\') {
            no_newline(&mut body);
        } else {
            return Err(invalid(format!("malformed patch hunk: {line}")));
        }
        i += 1;
    }
    if old_seen != old_len || new_seen != new_len {
        return Err(invalid(format!("malformed patch hunk: {header} does not match its body")));
    }
    if lines.get(i).is_some_and(|line| line.starts_with('\\')) {
        no_newline(&mut body);
        i += 1;
    }
    Ok((Hunk { old_start, old_len, lines: body }, i))
}

/// `\ No newline at end of file` after an added line: the new file ends without a break.
fn no_newline(body: &mut [HunkLine]) {
    if let Some(HunkLine::Add(_, newline)) = body.last_mut() {
        *newline = false;
    }
}

/// Applies the parsed sections to the stage, in order.
pub(crate) fn apply(staged: &mut Staged, sections: &[Section]) -> Result<()> {
    for section in sections {
        let current = staged.read_file(&section.path)?;
        let conflict =
            |message: &str| refuse(ErrorCode::PatchConflict, message, Some(section.path.as_str()));
        let original = match (section.kind, current) {
            (Kind::Create, Some(_)) => {
                return Err(conflict("patch creates a file that already exists"));
            }
            (Kind::Create, None) => String::new(),
            (Kind::Modify, None) => {
                return Err(conflict("patch modifies a file that does not exist"));
            }
            (Kind::Delete, None) => {
                return Err(conflict("patch deletes a file that does not exist"));
            }
            (Kind::Modify | Kind::Delete, Some(text)) => text,
        };
        let patched = apply_hunks(&original, &section.hunks, &section.path)?;
        match section.kind {
            Kind::Delete => staged.remove_file(&section.path)?,
            Kind::Create | Kind::Modify => staged.write_file(&section.path, &patched)?,
        }
    }
    Ok(())
}

/// Applies `hunks` to `text` (the file at `path`, for error reports).
fn apply_hunks(text: &str, hunks: &[Hunk], path: &str) -> Result<String> {
    // Each line as (content without its ending, ending).
    let old: Vec<(&str, &str)> = text
        .split_inclusive('\n')
        .map(|line| {
            let content = line.strip_suffix('\n').unwrap_or(line);
            let content = content.strip_suffix('\r').unwrap_or(content);
            (content, &line[content.len()..])
        })
        .collect();
    let mut order: Vec<&Hunk> = hunks.iter().collect();
    order.sort_by_key(|h| h.old_start);
    let mut out: Vec<(String, String)> = Vec::new();
    let mut cursor = 0usize;
    for hunk in order {
        // `-k,0` inserts after line k; `-k,n` starts at line k.
        let start =
            if hunk.old_len == 0 { hunk.old_start } else { hunk.old_start.saturating_sub(1) };
        if start < cursor {
            return Err(refuse(ErrorCode::PatchConflict, "overlapping patch hunks", Some(path)));
        }
        if start > old.len() {
            return Err(past_end(path, start));
        }
        out.extend(old[cursor..start].iter().map(|(c, e)| ((*c).to_owned(), (*e).to_owned())));
        let mut at = start;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(expected) | HunkLine::Remove(expected) => {
                    let Some((found, ending)) = old.get(at) else {
                        return Err(past_end(path, at));
                    };
                    if found != expected {
                        let mut details = Map::new();
                        details.insert("line".into(), Value::from(at + 1));
                        details.insert("expected".into(), Value::from(expected.as_str()));
                        details.insert("found".into(), Value::from(*found));
                        return Err(Error::Change {
                            code: ErrorCode::PatchConflict,
                            message: "patch context does not match file contents".into(),
                            path: Some(path.to_owned()),
                            details,
                        });
                    }
                    if matches!(line, HunkLine::Context(_)) {
                        out.push(((*found).to_owned(), (*ending).to_owned()));
                    }
                    at += 1;
                }
                HunkLine::Add(added, newline) => {
                    out.push((added.clone(), if *newline { "\n".into() } else { String::new() }));
                }
            }
        }
        cursor = at;
    }
    out.extend(old[cursor..].iter().map(|(c, e)| ((*c).to_owned(), (*e).to_owned())));
    let last = out.len().saturating_sub(1);
    let mut patched = String::with_capacity(text.len());
    for (i, (content, ending)) in out.iter().enumerate() {
        patched.push_str(content);
        if ending.is_empty() && i != last {
            patched.push('\n');
        } else {
            patched.push_str(ending);
        }
    }
    Ok(patched)
}

/// `patch context runs past end of file` at 0-based line `at`.
fn past_end(path: &str, at: usize) -> Error {
    let mut details = Map::new();
    details.insert("line".into(), Value::from(at + 1));
    Error::Change {
        code: ErrorCode::PatchConflict,
        message: "patch context runs past end of file".into(),
        path: Some(path.to_owned()),
        details,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patched(text: &str, patch: &str) -> Result<String> {
        let sections = parse(patch, &ChangeLimits::default())?;
        apply_hunks(text, &sections[0].hunks, &sections[0].path)
    }

    #[test]
    fn applies_hunks_in_start_order() {
        let text = "a\nb\nc\nd\ne\n";
        let patch = "--- a/topics/x.md\n+++ b/topics/x.md\n\
                     @@ -4,2 +4,2 @@\n d\n-e\n+E\n\
                     @@ -1,2 +1,3 @@\n a\n+a2\n b\n";
        assert_eq!(patched(text, patch).expect("applies"), "a\na2\nb\nc\nd\nE\n");
    }

    #[test]
    fn keeps_crlf_and_missing_final_newline() {
        let text = "a\r\nb";
        let patch = "--- a/topics/x.md\n+++ b/topics/x.md\n@@ -1,2 +1,3 @@\n a\n b\n+c\n\
                     \\ No newline at end of file\n";
        assert_eq!(patched(text, patch).expect("applies"), "a\r\nb\nc");
    }

    #[test]
    fn header_paths() {
        assert_eq!(header_path("a/topics/x.md\t2024-01-01"), Some("topics/x.md"));
        assert_eq!(header_path("/dev/null"), None);
        assert_eq!(header_path("topics/x.md"), Some("topics/x.md"));
    }
}
