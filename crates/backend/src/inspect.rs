//! Read-only inspection of a memory workspace: `grep`, `get` and `browse`, shared by the CLI and
//! the MCP tools.
//!
//! Everything here reads files only under the memory root, never follows a symlink, never shells
//! out, and caps its output (the Python implementation's caps: 400 lines / 40 000 characters per
//! read, 200 grep matches, 500 listed files, 300-character snippets).

use std::path::{Component, Path};

use scriptorium_topics_format::source::{is_v2_source_path, scan};
use scriptorium_workspace_fs::read::read_in;
use scriptorium_workspace_fs::{FileKind, Fs as _, RealFs, is_internal_path, walk_where};

/// Lines returned by one [`get`].
pub const MAX_READ_LINES: usize = 400;
/// Characters returned by one [`get`].
pub const MAX_READ_CHARS: usize = 40_000;
/// Matches returned by one [`grep`].
pub const MAX_GREP_MATCHES: usize = 200;
/// Files listed by [`browse`] by default.
pub const DEFAULT_BROWSE_LIMIT: usize = 200;
/// Files listed by [`browse`] at most.
pub const MAX_BROWSE_LIMIT: usize = 500;
/// Characters of one grep snippet.
pub const SNIPPET_CHARS: usize = 300;

/// Why an inspection failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// The path is absolute, has `..`, or names an internal file (`.scriptorium*`, `.git`).
    #[error("path escapes the workspace: {0}")]
    Outside(String),
    /// Nothing readable at that path (missing, a symlink, a directory, not UTF-8).
    #[error("not found: {0}")]
    NotFound(String),
    /// The heading or block asked for is not in the file.
    #[error("{0}")]
    NoSuchPart(String),
}

impl InspectError {
    /// The stable code: `PATH_OUTSIDE_WORKSPACE`, `NOT_FOUND` or `MEMORY_NOT_FOUND`.
    pub fn code(&self) -> &'static str {
        self.wire_code().as_str()
    }

    /// [`InspectError::code`] as a wire code.
    pub fn wire_code(&self) -> crate::wire::Code {
        match self {
            InspectError::Outside(_) => crate::wire::Code::PathOutsideWorkspace,
            InspectError::NotFound(_) => crate::wire::Code::NotFound,
            InspectError::NoSuchPart(_) => crate::wire::Code::MemoryNotFound,
        }
    }
}

/// Checks a caller-given workspace-relative path and returns it normalized.
fn checked(rel: &str) -> Result<String, InspectError> {
    let trimmed = rel.trim().trim_start_matches("./").trim_end_matches('/');
    let path = Path::new(trimmed);
    let ok = !path.is_absolute()
        && path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let normal: Vec<&str> = trimmed.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    let normal = normal.join("/");
    if !ok || is_internal_path(&normal) {
        return Err(InspectError::Outside(rel.to_owned()));
    }
    Ok(normal)
}

/// Reads a regular UTF-8 file under the root, refusing a symlink anywhere on the way.
fn read_text(root: &Path, rel: &str) -> Result<String, InspectError> {
    read_in(&RealFs, root, rel)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| InspectError::NotFound(rel.to_owned()))
}

/// One file of [`browse`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// Workspace-relative path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Whether the file is derived (rebuilt from topics: `core.md`, `timeline/`, …).
    pub derived: bool,
}

/// What [`browse`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Listing {
    /// The files, sorted by path.
    pub entries: Vec<Entry>,
    /// Whether more files matched than `limit`.
    pub truncated: bool,
}

fn is_derived(rel: &str) -> bool {
    rel == "core.md"
        || rel == "recent_events.jsonl"
        || rel == "relations.json"
        || rel.starts_with("timeline/")
}

/// Every regular, non-internal file under `root` (symlinks skipped), sorted.
fn walk(root: &Path) -> Vec<(String, u64)> {
    let keep = |rel: &str, kind: FileKind| {
        !is_internal_path(rel) && matches!(kind, FileKind::File | FileKind::Dir)
    };
    let Ok(entries) = walk_where(&RealFs, root, &keep) else { return Vec::new() };
    entries
        .into_iter()
        .filter(|e| e.kind == FileKind::File && e.utf8)
        .map(|e| {
            let len = RealFs.metadata(&root.join(&e.raw)).map_or(0, |m| m.len);
            (e.rel, len)
        })
        .collect()
}

/// Lists the files under `prefix` (all files when empty), at most `limit` (clamped to
/// [`MAX_BROWSE_LIMIT`]).
pub fn browse(root: &Path, prefix: &str, limit: usize) -> Result<Listing, InspectError> {
    let prefix = if prefix.trim().is_empty() { String::new() } else { checked(prefix)? };
    let limit = limit.clamp(1, MAX_BROWSE_LIMIT);
    let files = walk(root);
    let mut matching = files.into_iter().filter(|(rel, _)| {
        prefix.is_empty() || rel == &prefix || rel.starts_with(&format!("{prefix}/"))
    });
    let entries: Vec<Entry> = matching
        .by_ref()
        .take(limit)
        .map(|(path, size)| Entry { derived: is_derived(&path), path, size })
        .collect();
    Ok(Listing { entries, truncated: matching.next().is_some() })
}

/// One grep match.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Match {
    /// Workspace-relative path.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// The line, cut to [`SNIPPET_CHARS`] characters.
    pub text: String,
}

/// What [`grep`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GrepResult {
    /// The matches, in path then line order.
    pub matches: Vec<Match>,
    /// Whether there were more than [`MAX_GREP_MATCHES`].
    pub truncated: bool,
}

/// A literal search over the text files under `prefix` (all of the workspace when empty),
/// case-insensitive unless `case_sensitive`.
pub fn grep(
    root: &Path,
    needle: &str,
    prefix: &str,
    case_sensitive: bool,
) -> Result<GrepResult, InspectError> {
    let files = walk(root);
    let prefix = if prefix.trim().is_empty() { String::new() } else { checked(prefix)? };
    let needle_folded = needle.to_lowercase();
    let mut result = GrepResult::default();
    if needle.is_empty() {
        return Ok(result);
    }
    for (rel, _) in files {
        if !(prefix.is_empty() || rel == prefix || rel.starts_with(&format!("{prefix}/"))) {
            continue;
        }
        let Ok(text) = read_text(root, &rel) else { continue };
        for (i, line) in text.lines().enumerate() {
            let hit = if case_sensitive {
                line.contains(needle)
            } else {
                line.to_lowercase().contains(&needle_folded)
            };
            if hit {
                if result.matches.len() == MAX_GREP_MATCHES {
                    result.truncated = true;
                    return Ok(result);
                }
                let text: String = line.chars().take(SNIPPET_CHARS).collect();
                result.matches.push(Match { path: rel.clone(), line: i + 1, text });
            }
        }
    }
    Ok(result)
}

/// What [`get`] returns.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Excerpt {
    /// Workspace-relative path.
    pub path: String,
    /// The text (capped at [`MAX_READ_LINES`] lines and [`MAX_READ_CHARS`] characters).
    pub text: String,
    /// Whether the text was cut.
    pub truncated: bool,
}

fn cap(text: &str) -> (String, bool) {
    let mut out = String::new();
    let mut truncated = false;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i == MAX_READ_LINES || out.chars().count() + line.chars().count() > MAX_READ_CHARS {
            truncated = true;
            break;
        }
        out.push_str(line);
    }
    (out, truncated)
}

/// A v2 archive without its metadata lines (`speaker-id`, `source-meta`, `record-lines`).
fn without_meta(text: &str) -> String {
    text.split_inclusive('\n')
        .filter(|line| {
            !(line.starts_with("<!-- speaker-id:")
                || line.starts_with("<!-- source-meta:")
                || line.starts_with("<!-- record-lines:"))
        })
        .collect()
}

/// The heading section `heading` (case-insensitive; the heading line and everything up to the
/// next heading of the same or a higher level).
fn section(text: &str, heading: &str) -> Option<String> {
    let wanted = heading.trim().trim_start_matches('#').trim().to_lowercase();
    let mut out = String::new();
    let mut level = None;
    for line in text.split_inclusive('\n') {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        let is_heading = (1..=6).contains(&hashes) && line[hashes..].starts_with([' ', '\t']);
        match level {
            None if is_heading && line[hashes..].trim().to_lowercase() == wanted => {
                level = Some(hashes);
                out.push_str(line);
            }
            Some(l) if is_heading && hashes <= l => break,
            Some(_) => out.push_str(line),
            None => {}
        }
    }
    level.map(|_| out)
}

/// The paragraph ending in ` ^block` (or carrying it among several IDs) and the footnote
/// definitions it cites.
fn block(text: &str, id: &str) -> Option<String> {
    let paragraphs: Vec<&str> = text.split("\n\n").collect();
    let suffix = format!("^{id}");
    let para = paragraphs.iter().find(|p| {
        p.split_whitespace().rev().take_while(|w| w.starts_with('^')).any(|w| w == suffix)
    })?;
    let mut out = para.trim_end().to_owned();
    out.push('\n');
    let mut rest = *para;
    let mut cited = Vec::new();
    while let Some(at) = rest.find("[^") {
        let after = &rest[at + 2..];
        if let Some(end) = after.find(']') {
            cited.push(&after[..end]);
        }
        rest = after;
    }
    for label in cited {
        let head = format!("[^{label}]:");
        if let Some(def) = text.lines().find(|l| l.trim_start().starts_with(&head)) {
            out.push('\n');
            out.push_str(def);
            out.push('\n');
        }
    }
    Some(out)
}

/// Reads a file, one heading section of it, or one block paragraph with its definitions.
pub fn get(
    root: &Path,
    path: &str,
    heading: Option<&str>,
    block_id: Option<&str>,
) -> Result<Excerpt, InspectError> {
    let rel = checked(path)?;
    let mut text = read_text(root, &rel)?;
    if rel.starts_with("sources/") && is_v2_source_path(&rel) && scan(&rel, &text).complete {
        text = without_meta(&text);
    }
    if let Some(heading) = heading {
        text = section(&text, heading)
            .ok_or_else(|| InspectError::NoSuchPart(format!("heading not found: {heading}")))?;
    }
    if let Some(id) = block_id {
        let id = id.trim_start_matches('^');
        text = block(&text, id)
            .ok_or_else(|| InspectError::NoSuchPart(format!("block not found: {id}")))?;
    }
    let (text, truncated) = cap(&text);
    Ok(Excerpt { path: rel, text, truncated })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        fs::create_dir_all(root.join("topics/people")).expect("mkdir");
        fs::create_dir_all(root.join(".scriptorium")).expect("mkdir");
        fs::create_dir_all(root.join("timeline/2024")).expect("mkdir");
        fs::write(
            root.join("topics/people/dave.md"),
            "# Dave\n\n## Work\n\nDave runs a bike shop.[^e-1] ^aaaa1111\n\n\
             [^e-1]: Time: `2024`; Sources: [shop](x)\n\n## Home\n\nDave lives by the sea.[^e-2] ^bbbb2222\n\n\
             [^e-2]: Time: `2024`; Sources: [home](y)\n",
        )
        .expect("write");
        fs::write(root.join("timeline/2024.md"), "# 2024\n").expect("write");
        fs::write(root.join(".scriptorium/runtime.json"), "{}").expect("write");
        dir
    }

    #[test]
    fn browse_lists_files_with_the_derived_flag_and_skips_internal_ones() {
        let dir = workspace();
        let listing = browse(dir.path(), "", 10).expect("browse");
        let paths: Vec<_> = listing.entries.iter().map(|e| (e.path.as_str(), e.derived)).collect();
        assert_eq!(paths, [("timeline/2024.md", true), ("topics/people/dave.md", false)]);
        let only = browse(dir.path(), "topics", 10).expect("browse");
        assert_eq!(only.entries.len(), 1);
        assert!(browse(dir.path(), "../etc", 10).is_err());
        assert!(browse(dir.path(), ".scriptorium", 10).is_err());
        let one = browse(dir.path(), "", 1).expect("browse");
        assert!(one.truncated);
    }

    #[test]
    fn grep_is_literal_and_case_insensitive_by_default() {
        let dir = workspace();
        let found = grep(dir.path(), "BIKE shop", "", false).expect("grep");
        assert_eq!(found.matches.len(), 1);
        assert_eq!(found.matches[0].path, "topics/people/dave.md");
        assert_eq!(found.matches[0].line, 5);
        assert!(grep(dir.path(), "BIKE shop", "", true).expect("grep").matches.is_empty());
        assert!(grep(dir.path(), "[^", "topics", false).expect("grep").matches.len() >= 2);
        assert!(grep(dir.path(), "{}", "", false).expect("grep").matches.is_empty(), "internal");
    }

    #[test]
    fn get_reads_a_file_a_section_or_a_block() {
        let dir = workspace();
        let whole = get(dir.path(), "topics/people/dave.md", None, None).expect("get");
        assert!(whole.text.contains("## Home"));
        let home = get(dir.path(), "topics/people/dave.md", Some("home"), None).expect("get");
        assert!(home.text.starts_with("## Home\n"));
        assert!(!home.text.contains("bike"));
        let block = get(dir.path(), "topics/people/dave.md", None, Some("^aaaa1111")).expect("get");
        assert_eq!(
            block.text,
            "Dave runs a bike shop.[^e-1] ^aaaa1111\n\n[^e-1]: Time: `2024`; Sources: [shop](x)\n"
        );
        let missing = get(dir.path(), "topics/people/dave.md", None, Some("cccc3333"));
        assert_eq!(missing.expect_err("no such block").code(), "MEMORY_NOT_FOUND");
        assert_eq!(
            get(dir.path(), "../x", None, None).expect_err("outside").code(),
            "PATH_OUTSIDE_WORKSPACE"
        );
        assert_eq!(
            get(dir.path(), "topics/none.md", None, None).expect_err("missing").code(),
            "NOT_FOUND"
        );
        assert_eq!(
            get(dir.path(), ".scriptorium/runtime.json", None, None).expect_err("internal").code(),
            "PATH_OUTSIDE_WORKSPACE"
        );
    }

    #[test]
    fn symlinks_are_never_followed() {
        let dir = workspace();
        let outside = tempfile::tempdir().expect("temp dir");
        fs::write(outside.path().join("secret.md"), "secret").expect("write");
        std::os::unix::fs::symlink(
            outside.path().join("secret.md"),
            dir.path().join("topics/link.md"),
        )
        .expect("symlink");
        assert_eq!(
            get(dir.path(), "topics/link.md", None, None).expect_err("link").code(),
            "NOT_FOUND"
        );
        assert!(grep(dir.path(), "secret", "", false).expect("grep").matches.is_empty());
        assert!(
            browse(dir.path(), "", 50)
                .expect("browse")
                .entries
                .iter()
                .all(|e| e.path != "topics/link.md")
        );
    }
}
