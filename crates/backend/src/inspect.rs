//! Read-only inspection of a memory workspace: `grep`, `get` and `browse`, shared by the CLI and
//! the MCP tools.
//!
//! Everything here reads files only under the memory root, never follows a symlink, never shells
//! out, and caps its output (the Python implementation's caps: 400 lines / 40 000 characters per
//! read, 200 grep matches, 500 listed files, 300-character snippets); a longer read comes in
//! pages ([`Window`]) and says where the next one starts.

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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Entry {
    /// Workspace-relative path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Whether the file is derived (rebuilt from topics: `core.md`, `timeline/`, …).
    pub derived: bool,
}

/// What [`browse`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Match {
    /// Workspace-relative path.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// The line, cut to [`SNIPPET_CHARS`] characters.
    pub text: String,
}

/// What [`grep`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Excerpt {
    /// Workspace-relative path.
    pub path: String,
    /// The text: the lines of the window asked for, at most [`MAX_READ_LINES`] lines and
    /// [`MAX_READ_CHARS`] characters.
    pub text: String,
    /// Whether the text was cut (more lines follow at [`Excerpt::next_offset`]).
    pub truncated: bool,
    /// The 0-based line of the read (file, section, block or record) the text starts at.
    pub offset: usize,
    /// The lines of the whole read.
    pub total_lines: usize,
    /// Where the rest starts when the text was cut: pass it as the next `offset`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// The archived record read by its `source-…` anchor, with its place in the conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<Record>,
}

/// An archived record read by its anchor ([`get`] with a `source-…` block).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Record {
    /// Its source id (`provider/thread/message`).
    pub source_id: String,
    /// Its anchor (`source-…`).
    pub anchor: String,
    /// Its 1-based place among the archive's records (one archive is one conversation).
    pub position: usize,
    /// The records in the archive.
    pub records: usize,
    /// The turn before it in the conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<Turn>,
    /// The turn after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<Turn>,
    /// The blocks citing it (filled by the caller from the search index, which `get` does not
    /// open).
    pub cited_by: Vec<Citing>,
}

/// A block citing a [`Record`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Citing {
    /// The topic file (workspace-relative).
    pub path: String,
    /// The block ID.
    pub block_id: String,
    /// The start of its text, on one line (the search hit's snippet).
    pub snippet: String,
}

/// A block that links to a block of a topic (`[…](…#^id)`, recorded in `relations.json`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Backlink {
    /// The block linked to (an ID at a line end of the topic).
    pub target: String,
    /// The linking block. Its `path` is empty when the index knows no block by that ID (an
    /// alias ID, or an index not caught up).
    pub from: Citing,
}

/// A commit that changed a topic file: "what changed and why" for a person reviewing what an
/// agent wrote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TopicChange {
    /// The commit (hex).
    pub commit: String,
    /// The commit time, RFC 3339 (UTC).
    pub time: String,
    /// The first line of the commit message (what the change said it did).
    pub summary: String,
    /// The transaction that made it (the commit's `Txn-Id`).
    pub txn_id: Option<String>,
    /// `created`, `modified` or `removed`.
    pub change: &'static str,
    /// The unified diff of the file (3 lines of context; `a/` and `b/` name the path).
    pub diff: String,
    /// The whole file as this commit left it (`None` when it removed it): what a restore
    /// puts back, through the normal compare-and-set edit.
    pub text: Option<String>,
}

/// One transaction of the workspace's history and the files it changed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Transaction {
    /// The commit (hex).
    pub commit: String,
    /// The commit time, RFC 3339 (UTC).
    pub time: String,
    /// The first line of the commit message.
    pub summary: String,
    /// The transaction (the commit's `Txn-Id`).
    pub txn_id: Option<String>,
    /// The workspace-relative files it changed (topics, archives, derived views), in tree order.
    pub files: Vec<String>,
}

/// The workspace's transactions, newest first, at most `limit` (clamped to [`MAX_HISTORY`]),
/// each with the files it changed.
pub fn workspace_changes(
    history: &scriptorium_history::History,
    limit: usize,
) -> Result<Vec<Transaction>, scriptorium_history::Error> {
    history
        .log(None, limit.clamp(1, MAX_HISTORY))?
        .into_iter()
        .map(|entry| {
            Ok(Transaction {
                files: history.commit_files(&entry.commit)?,
                time: rfc3339(entry.time.seconds),
                commit: entry.commit,
                summary: entry.summary,
                txn_id: entry.txn_id,
            })
        })
        .collect()
}

/// `seconds` since the Unix epoch as RFC 3339 (UTC); empty when out of range.
fn rfc3339(seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

/// At most this many commits are listed with a topic's history.
pub const MAX_HISTORY: usize = 100;

/// The commits that changed the file `path` (workspace-relative), newest first, at most `limit`
/// (clamped to [`MAX_HISTORY`]), each with its diff.
pub fn topic_changes(
    history: &scriptorium_history::History,
    path: &str,
    limit: usize,
) -> Result<Vec<TopicChange>, scriptorium_history::Error> {
    let changes = history.file_changes(path, limit.clamp(1, MAX_HISTORY))?;
    Ok(changes
        .into_iter()
        .map(|c| {
            let (change, diff) = file_diff(path, c.before.as_deref(), c.after.as_deref());
            TopicChange {
                time: rfc3339(c.entry.time.seconds),
                commit: c.entry.commit,
                summary: c.entry.summary,
                txn_id: c.entry.txn_id,
                change,
                diff,
                text: c.after,
            }
        })
        .collect())
}

/// How a file changed (`created`, `modified`, `removed`) and its unified diff (3 lines of
/// context; `a/` and `b/` name the path).
fn file_diff(path: &str, before: Option<&str>, after: Option<&str>) -> (&'static str, String) {
    let diff = similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    let change = match (before, after) {
        (None, _) => "created",
        (_, None) => "removed",
        _ => "modified",
    };
    (change, diff)
}

/// One file of a [`CommitDiff`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CommitFile {
    /// The workspace-relative path.
    pub path: String,
    /// `created`, `modified` or `removed`.
    pub change: &'static str,
    /// The unified diff of the file (3 lines of context).
    pub diff: String,
}

/// One transaction's commit with the diff of every file it changed: `scriptorium show`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CommitDiff {
    /// The commit (hex).
    pub commit: String,
    /// The commit time, RFC 3339 (UTC).
    pub time: String,
    /// The first line of the commit message.
    pub summary: String,
    /// The transaction (the commit's `Txn-Id`).
    pub txn_id: Option<String>,
    /// The files it changed (only those at or below the path asked for), in tree order.
    pub files: Vec<CommitFile>,
}

/// The commit `rev` names (`HEAD`, an id, a unique prefix or a `Txn-Id`; see
/// [`scriptorium_history::History::resolve`]) with the diff of each file it changed at or below
/// `path`.
pub fn commit_diff(
    history: &scriptorium_history::History,
    rev: &str,
    path: Option<&str>,
) -> Result<CommitDiff, scriptorium_history::Error> {
    let (entry, changed) = history.commit_changes(rev, path)?;
    let files = changed
        .into_iter()
        .map(|f| {
            let (change, diff) = file_diff(&f.path, f.before.as_deref(), f.after.as_deref());
            CommitFile { path: f.path, change, diff }
        })
        .collect();
    Ok(CommitDiff {
        time: rfc3339(entry.time.seconds),
        commit: entry.commit,
        summary: entry.summary,
        txn_id: entry.txn_id,
        files,
    })
}

/// At most this many backlinks are listed with a topic.
pub const MAX_BACKLINKS: usize = 50;

/// At most this many citing blocks are listed with a record.
pub const MAX_CITING: usize = 20;

impl Citing {
    /// The citing blocks among search hits (block hits; others are skipped).
    pub fn from_hits(hits: &[scriptorium_search::Hit]) -> Vec<Citing> {
        hits.iter()
            .filter(|h| h.kind == scriptorium_search::HitKind::Block)
            .map(|h| Citing {
                path: h.path.clone(),
                block_id: h.id.clone(),
                snippet: h.snippet.clone(),
            })
            .collect()
    }
}

/// A neighbouring turn of a [`Record`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Turn {
    /// Its anchor (`get` it with this as the block).
    pub anchor: String,
    /// Its first [`SNIPPET_CHARS`] characters, on one line.
    pub snippet: String,
}

/// Which lines of a read [`get`] returns: from line `offset` (0-based), at most `limit` lines
/// (and never more than [`MAX_READ_LINES`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// The first line.
    pub offset: usize,
    /// At most this many lines (`None`: [`MAX_READ_LINES`]).
    pub limit: Option<usize>,
}

/// The lines of `text` in `window`, capped at [`MAX_READ_LINES`] lines and
/// [`MAX_READ_CHARS`] characters; the number of lines of `text`; and where the next page
/// starts when more follow.
fn page(text: &str, window: Window) -> (String, usize, Option<usize>) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let limit = window.limit.unwrap_or(MAX_READ_LINES).clamp(1, MAX_READ_LINES);
    let mut out = String::new();
    let mut chars = 0;
    let mut end = window.offset.min(lines.len());
    for line in lines.iter().skip(window.offset).take(limit) {
        let n = line.chars().count();
        // A first line longer than the cap still comes whole: a page is never empty.
        if end > window.offset && chars + n > MAX_READ_CHARS {
            break;
        }
        out.push_str(line);
        chars += n;
        end += 1;
    }
    (out, lines.len(), (end < lines.len()).then_some(end))
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

/// Reads a file, one heading section of it, one block paragraph with its definitions, or one
/// archived record by its `source-…` anchor (the block; `path` is its archive, and may carry
/// the anchor itself as a citation link does: `sources/…/s1.md#source-…`, with or without the
/// leading `../` of a link written in a topic file). `window` pages through what was read.
pub fn get(
    root: &Path,
    path: &str,
    heading: Option<&str>,
    block_id: Option<&str>,
    window: Window,
) -> Result<Excerpt, InspectError> {
    let (path, anchor) = match path.split_once('#') {
        Some((file, anchor)) if block_id.is_none() => (file, Some(anchor)),
        _ => (path, None),
    };
    let mut unlinked = path.trim_start();
    while let Some(rest) = unlinked.strip_prefix("../") {
        unlinked = rest;
    }
    let path = if unlinked.starts_with("sources/") { unlinked } else { path };
    let rel = checked(path)?;
    let block_id = block_id.or(anchor).map(|id| id.trim().trim_start_matches(['#', '^']));
    let raw = read_text(root, &rel)?;
    let archive = rel.starts_with("sources/") && is_v2_source_path(&rel);
    let mut record = None;
    let mut text =
        if archive && scan(&rel, &raw).complete { without_meta(&raw) } else { raw.clone() };
    if let Some(heading) = heading {
        text = section(&text, heading)
            .ok_or_else(|| InspectError::NoSuchPart(format!("heading not found: {heading}")))?;
    }
    if let Some(id) = block_id {
        let found = if archive && id.starts_with("source-") {
            archived(&rel, &raw, id).map(|(text, found)| {
                record = Some(found);
                text
            })
        } else {
            block(&text, id)
        };
        text = found.ok_or_else(|| InspectError::NoSuchPart(format!("block not found: {id}")))?;
    }
    let (text, total_lines, next_offset) = page(&text, window);
    Ok(Excerpt {
        path: rel,
        text,
        truncated: next_offset.is_some(),
        offset: window.offset,
        total_lines,
        next_offset,
        record,
    })
}

/// Turns listed by one [`conversation`] at most.
pub const MAX_TURNS: usize = 500;

/// One turn of a [`conversation`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Said {
    /// Its anchor (`source-…`).
    pub anchor: String,
    /// Its record text, cut to [`MAX_READ_CHARS`] characters.
    pub text: String,
}

/// The records of the archive at `path` (one archive is one conversation), in order: at most
/// [`MAX_TURNS`], and whether there were more.
pub fn conversation(root: &Path, path: &str) -> Result<(Vec<Said>, bool), InspectError> {
    let rel = checked(path)?;
    if !(rel.starts_with("sources/") && is_v2_source_path(&rel)) {
        return Err(InspectError::NotFound(rel));
    }
    let raw = read_text(root, &rel)?;
    let scanned = scan(&rel, &raw);
    let turns = scanned
        .frames
        .iter()
        .take(MAX_TURNS)
        .map(|f| Said {
            anchor: f.anchor.to_owned(),
            text: f.record.chars().take(MAX_READ_CHARS).collect(),
        })
        .collect();
    Ok((turns, scanned.frames.len() > MAX_TURNS))
}

/// The anchors of every record the v2 archive at `path` holds (by the strict scan); empty when
/// there is no such archive.
pub fn archived_anchors(root: &Path, path: &str) -> std::collections::HashSet<String> {
    let Ok(rel) = checked(path) else { return Default::default() };
    if !(rel.starts_with("sources/") && is_v2_source_path(&rel)) {
        return Default::default();
    }
    let Ok(raw) = read_text(root, &rel) else { return Default::default() };
    scan(&rel, &raw).frames.iter().map(|f| f.anchor.to_owned()).collect()
}

/// The record of archive `rel` (text `raw`) anchored `anchor`, with its neighbours.
fn archived(rel: &str, raw: &str, anchor: &str) -> Option<(String, Record)> {
    let scanned = scan(rel, raw);
    let at = scanned.frames.iter().position(|f| f.anchor == anchor)?;
    let frame = &scanned.frames[at];
    let turn = |i: Option<usize>| {
        let f = scanned.frames.get(i?)?;
        let one_line = f.record.split_whitespace().collect::<Vec<_>>().join(" ");
        Some(Turn {
            anchor: f.anchor.to_owned(),
            snippet: one_line.chars().take(SNIPPET_CHARS).collect(),
        })
    };
    let record = Record {
        source_id: frame.source_id.to_owned(),
        anchor: frame.anchor.to_owned(),
        position: at + 1,
        records: scanned.frames.len(),
        previous: turn(at.checked_sub(1)),
        next: turn(Some(at + 1)),
        cited_by: Vec::new(),
    };
    let mut text = frame.record.to_owned();
    text.push('\n');
    Some((text, record))
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
        let whole =
            get(dir.path(), "topics/people/dave.md", None, None, Window::default()).expect("get");
        assert!(whole.text.contains("## Home"));
        let home = get(dir.path(), "topics/people/dave.md", Some("home"), None, Window::default())
            .expect("get");
        assert!(home.text.starts_with("## Home\n"));
        assert!(!home.text.contains("bike"));
        let block =
            get(dir.path(), "topics/people/dave.md", None, Some("^aaaa1111"), Window::default())
                .expect("get");
        assert_eq!(
            block.text,
            "Dave runs a bike shop.[^e-1] ^aaaa1111\n\n[^e-1]: Time: `2024`; Sources: [shop](x)\n"
        );
        let missing =
            get(dir.path(), "topics/people/dave.md", None, Some("cccc3333"), Window::default());
        assert_eq!(missing.expect_err("no such block").code(), "MEMORY_NOT_FOUND");
        assert_eq!(
            get(dir.path(), "../x", None, None, Window::default()).expect_err("outside").code(),
            "PATH_OUTSIDE_WORKSPACE"
        );
        assert_eq!(
            get(dir.path(), "topics/none.md", None, None, Window::default())
                .expect_err("missing")
                .code(),
            "NOT_FOUND"
        );
        assert_eq!(
            get(dir.path(), ".scriptorium/runtime.json", None, None, Window::default())
                .expect_err("internal")
                .code(),
            "PATH_OUTSIDE_WORKSPACE"
        );
    }

    #[test]
    fn a_record_is_read_by_its_anchor_with_the_turns_around_it() {
        use scriptorium_topics_format::source::{ArchiveRecord, plan_append};
        let dir = workspace();
        let records: Vec<ArchiveRecord> = ["Hi, I am Ana.", "I moved to Lisbon.", "Bye."]
            .iter()
            .enumerate()
            .map(|(i, text)| {
                ArchiveRecord::new("openprogram", "s1", format!("u{i}"), i as u64, "user", *text)
            })
            .collect();
        let plan = plan_append(&records, &std::collections::BTreeMap::new()).expect("plan");
        let rel = &plan.writes[0].rel_path;
        fs::create_dir_all(dir.path().join(rel).parent().expect("parent")).expect("mkdir");
        fs::write(dir.path().join(rel), &plan.writes[0].new_text).expect("write");
        let raw = fs::read_to_string(dir.path().join(rel)).expect("read");
        let anchors: Vec<String> =
            scan(rel, &raw).frames.iter().map(|f| f.anchor.to_owned()).collect();

        // By the block, by the link a topic file writes, and by the path with its anchor.
        for (path, block) in [
            (rel.clone(), Some(anchors[1].as_str())),
            (format!("../../{rel}#{}", anchors[1]), None),
            (format!("{rel}#{}", anchors[1]), None),
        ] {
            let got = get(dir.path(), &path, None, block, Window::default()).expect("the record");
            assert!(got.text.contains("I moved to Lisbon."), "{got:?}");
            assert!(!got.text.contains("Ana") && !got.text.contains("source-meta"), "{got:?}");
            let record = got.record.expect("a record");
            assert_eq!((record.position, record.records), (2, 3));
            assert_eq!(record.source_id, "openprogram/s1/u1");
            assert_eq!(record.previous.expect("a turn before").anchor, anchors[0]);
            assert!(record.next.expect("a turn after").snippet.contains("Bye."));
        }
        let (turns, more) = conversation(dir.path(), rel).expect("the conversation");
        assert!(!more);
        assert_eq!(turns.iter().map(|t| t.anchor.as_str()).collect::<Vec<_>>(), anchors);
        assert!(turns[2].text.ends_with("user: Bye."), "{:?}", turns[2]);
        let first = get(dir.path(), rel, None, Some(&anchors[0]), Window::default()).expect("get");
        assert!(first.record.expect("a record").previous.is_none());
        let missing = get(dir.path(), rel, None, Some("source-0000"), Window::default());
        assert_eq!(missing.expect_err("no such record").code(), "MEMORY_NOT_FOUND");
        let escape = get(dir.path(), "../../etc/passwd#source-1", None, None, Window::default());
        assert_eq!(escape.expect_err("outside").code(), "PATH_OUTSIDE_WORKSPACE");
    }

    #[test]
    fn a_long_read_comes_in_pages_that_say_where_the_rest_starts() {
        let dir = workspace();
        let body: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        fs::write(dir.path().join("topics/long.md"), &body).expect("write");
        let first = get(dir.path(), "topics/long.md", None, None, Window::default()).expect("get");
        assert_eq!((first.total_lines, first.next_offset), (1000, Some(MAX_READ_LINES)));
        assert!(first.truncated && first.text.ends_with(&format!("line {}\n", MAX_READ_LINES - 1)));
        let mut offset = 0;
        let mut pages = String::new();
        loop {
            let page =
                get(dir.path(), "topics/long.md", None, None, Window { offset, limit: Some(300) })
                    .expect("a page");
            assert_eq!(page.offset, offset);
            pages.push_str(&page.text);
            match page.next_offset {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert_eq!(pages, body, "the pages add up to the file");
        let past =
            get(dir.path(), "topics/long.md", None, None, Window { offset: 5000, limit: None });
        let past = past.expect("past the end");
        assert!(past.text.is_empty() && !past.truncated);
        // A line longer than the character cap comes whole, alone.
        let wide = format!("{}\nshort\n", "x".repeat(MAX_READ_CHARS + 10));
        fs::write(dir.path().join("topics/wide.md"), &wide).expect("write");
        let page = get(dir.path(), "topics/wide.md", None, None, Window::default()).expect("get");
        assert_eq!((page.text.len(), page.next_offset), (MAX_READ_CHARS + 11, Some(1)));
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
            get(dir.path(), "topics/link.md", None, None, Window::default())
                .expect_err("link")
                .code(),
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
