//! Block links between topics (see `docs/format.md#topic-to-topic-links`): the link checks a
//! transaction runs, and the rewrite that keeps links pointing at a block's current file.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::grammar::{definition_match, is_block_id, is_memory_id};
use super::parse::{TopicFile, Unit, compare_topic_paths};
use super::text::{py_rstrip, split_lines};
use crate::catalog::SourceResolver;
use crate::diag::{Code, Diagnostic};

/// `\[[^]\n]+\]\(([^)\n]+)\)`: a one-line link in unit content.
static CONTENT_LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[[^\]\n]+\]\(([^)\n]+)\)").expect("static pattern compiles"));

/// A URL scheme prefix (`^[A-Za-z][A-Za-z0-9+.-]*:`).
static SCHEME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z][A-Za-z0-9+.-]*:").expect("static pattern compiles"));

/// The block link as the install rewrite matches it: prefix, path, ID, suffix.
static REWRITE_LINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\[[^\]\n]+\]\()([^)\n#]*)#\^(mem_[A-Za-z0-9_-]+|[A-Za-z0-9-]+)(\))")
        .expect("static pattern compiles")
});

/// Checks that every relative link from a unit to another topic `.md` targets a block
/// (`#^<id>`): `TOPIC_LINK_NOT_BLOCK`. Units whose content and evidence equal their `baseline`
/// unit (same ID) are not checked, as in the reference.
///
/// `files` locates each diagnostic; a unit whose file is not in `files` is reported at its line.
pub fn check_topic_links(
    files: &[TopicFile],
    units: &[Unit],
    baseline: &[Unit],
) -> Vec<Diagnostic> {
    let before: HashMap<&str, &Unit> = baseline.iter().map(|u| (u.memory_id.as_str(), u)).collect();
    check_topic_links_in(files, units, &|id| before.get(id).copied())
}

/// [`check_topic_links`] with the baseline unit of an ID given by `before`.
pub fn check_topic_links_in<'u>(
    files: &[TopicFile],
    units: &[Unit],
    before: &dyn Fn(&str) -> Option<&'u Unit>,
) -> Vec<Diagnostic> {
    let texts: HashMap<&str, &str> =
        files.iter().map(|f| (f.path.as_str(), f.text.as_str())).collect();
    let mut out = Vec::new();
    for unit in units.iter().filter(|u| u.memory_id == u.identity) {
        if before(unit.memory_id.as_str())
            .is_some_and(|p| p.content == unit.content && p.evidence == unit.evidence)
        {
            continue;
        }
        if !unit.content.contains("](") {
            continue;
        }
        for caps in CONTENT_LINK.captures_iter(&unit.content) {
            let Some(target) = caps.get(1).map(|m| m.as_str()) else { continue };
            if links_to_topic_without_block(&unit.topic_path, target) {
                out.push(locate(
                    &texts,
                    unit,
                    target,
                    Code::TopicLinkNotBlock,
                    format!(
                        "Topic-to-Topic link must target #^block-id: {} -> {target}",
                        unit.topic_path
                    ),
                ));
            }
        }
    }
    out
}

/// Whether `target`, written in `topic_path`, is a relative link to a topic `.md` that does not
/// carry a `#^<BLOCK_ID|MEMORY_ID>` fragment.
fn links_to_topic_without_block(topic_path: &str, target: &str) -> bool {
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (target, None),
    };
    if path.is_empty() || path.starts_with('/') || SCHEME.is_match(path) {
        return false;
    }
    let dir = parent(topic_path);
    let joined = if dir.is_empty() { unquote(path) } else { format!("{dir}/{}", unquote(path)) };
    let normal = normpath(&joined);
    let parts: Vec<&str> = normal.split('/').collect();
    let is_md = parts.last().is_some_and(|name| suffix(name).eq_ignore_ascii_case(".md"));
    let block_fragment = fragment
        .and_then(|f| f.strip_prefix('^'))
        .is_some_and(|id| is_memory_id(id) || is_block_id(id));
    is_md && !parts.contains(&"..") && !block_fragment
}

/// Checks that every block-link target exists among `units`: `DANGLING_BLOCK_LINK`.
pub fn check_dangling_links(files: &[TopicFile], units: &[Unit]) -> Vec<Diagnostic> {
    let ids: std::collections::HashSet<&str> = units.iter().map(|u| u.memory_id.as_str()).collect();
    check_dangling_links_in(files, units, &|id| ids.contains(id))
}

/// [`check_dangling_links`] of `units` (of `files`), the IDs that exist given by `exists`.
pub fn check_dangling_links_in(
    files: &[TopicFile],
    units: &[Unit],
    exists: &dyn Fn(&str) -> bool,
) -> Vec<Diagnostic> {
    let texts: HashMap<&str, &str> =
        files.iter().map(|f| (f.path.as_str(), f.text.as_str())).collect();
    let mut out = Vec::new();
    for unit in units.iter().filter(|u| u.memory_id == u.identity) {
        for target in &unit.relation_targets {
            if !exists(target.as_str()) {
                out.push(locate(
                    &texts,
                    unit,
                    &format!("#^{target})"),
                    Code::DanglingBlockLink,
                    format!("dangling block link: {target}"),
                ));
            }
        }
    }
    out
}

/// Everything `scriptorium check` asks of a topic tree at rest: the strict parse, then
/// `DANGLING_BLOCK_LINK` and `TOPIC_LINK_NOT_BLOCK` over every unit (no baseline, so every
/// unit counts as changed). Diagnostics are grouped by file in tree order, by position within a
/// file.
pub fn check_tree(files: &[TopicFile], sources: &dyn SourceResolver) -> super::parse::TreeParse {
    let mut parsed = super::parse::parse_tree(files, sources);
    parsed.diagnostics.extend(check_dangling_links(files, &parsed.units));
    parsed.diagnostics.extend(check_topic_links(files, &parsed.units, &[]));
    let mut order: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    order.sort_by(|a, b| compare_topic_paths(a, b));
    let rank: HashMap<String, usize> =
        order.iter().enumerate().map(|(i, p)| (format!("topics/{p}"), i)).collect();
    parsed.diagnostics.sort_by_key(|d| (rank.get(&d.path).copied(), d.line, d.col));
    parsed
}

/// A diagnostic at the first occurrence of `needle` in the unit's paragraph.
fn locate(
    texts: &HashMap<&str, &str>,
    unit: &Unit,
    needle: &str,
    code: Code,
    message: String,
) -> Diagnostic {
    let path = format!("topics/{}", unit.topic_path);
    let Some(text) = texts.get(unit.topic_path.as_str()) else {
        return Diagnostic::new(path, unit.line, 1, code, message);
    };
    let offset = text
        .get(unit.span.clone())
        .and_then(|p| p.find(needle))
        .map_or(unit.span.start, |i| unit.span.start + i);
    let lines = split_lines(text);
    let (line, col) = super::text::line_col(&lines, text, offset);
    Diagnostic::new(path, line, col, code, message)
}

/// Rewrites, in every file, (1) the definitions cited by `units` from their evidence, with
/// source links regenerated through `sources`, and (2) every block link so its path part points
/// at the target's current file (relative, percent-quoted with safe `/._-`). Returns the files
/// whose text changed, with the new text (`"\n".join(lines).rstrip() + "\n"`).
///
/// This is the install-time refresh that repairs links after blocks move between files.
pub fn rewrite_links(
    files: &[TopicFile],
    units: &[Unit],
    sources: &dyn SourceResolver,
) -> Vec<TopicFile> {
    let target_paths: HashMap<&str, &str> =
        units.iter().map(|u| (u.memory_id.as_str(), u.topic_path.as_str())).collect();
    rewrite_links_in(files, units, &|id| target_paths.get(id).map(|p| (*p).to_owned()), sources)
}

/// [`rewrite_links`] of `files`, with `units` the units of those files (their evidence) and
/// the current file of every block given by `home` (relative to `topics/`).
pub fn rewrite_links_in(
    files: &[TopicFile],
    units: &[Unit],
    home: &dyn Fn(&str) -> Option<String>,
    sources: &dyn SourceResolver,
) -> Vec<TopicFile> {
    let mut evidence_by_path: HashMap<&str, HashMap<&str, &super::parse::Evidence>> =
        HashMap::new();
    for unit in units {
        let entry = evidence_by_path.entry(unit.topic_path.as_str()).or_default();
        for e in &unit.evidence {
            entry.insert(e.citation_id.as_str(), e);
        }
    }
    let mut order: Vec<&TopicFile> = files.iter().collect();
    order.sort_by(|a, b| compare_topic_paths(&a.path, &b.path));
    let mut changed = Vec::new();
    for file in order {
        let annotations = evidence_by_path.get(file.path.as_str());
        let dir = parent(&file.path);
        let mut rendered: Vec<String> = Vec::new();
        for span in split_lines(&file.text) {
            let mut line = file.text[span.start..span.end].to_owned();
            if let Some(m) = definition_match(&line) {
                let id = &line[m.id.clone()];
                if let Some(e) = annotations.and_then(|a| a.get(id)) {
                    let labels = if e.labels.len() == e.refs.len() { &e.labels } else { &e.refs };
                    let links: Vec<String> = e
                        .refs
                        .iter()
                        .zip(labels.iter())
                        .map(|(r, label)| {
                            format!("[{label}]({})", sources.link_target(&file.path, r))
                        })
                        .collect();
                    line = super::normalize::render_definition(id, e.when.as_deref(), &links);
                }
            }
            if line.contains("#^") {
                line = REWRITE_LINK
                    .replace_all(&line, |caps: &Captures<'_>| {
                        let id = &caps[3];
                        match home(id) {
                            None => caps[0].to_owned(),
                            Some(target) => format!(
                                "{}{}#^{id}{}",
                                &caps[1],
                                quote(&relpath(&target, dir)),
                                &caps[4]
                            ),
                        }
                    })
                    .into_owned();
            }
            rendered.push(line);
        }
        let normalized = format!("{}\n", py_rstrip(&rendered.join("\n")));
        if normalized != file.text {
            changed.push(TopicFile { path: file.path.clone(), text: normalized });
        }
    }
    changed
}

/// The block IDs that links of `text` point at (`[label](path#^id)`, as the install rewrite
/// matches them), each once, sorted: the files whose links follow a block when it moves.
pub fn block_link_ids(text: &str) -> Vec<String> {
    if !text.contains("#^") {
        return Vec::new();
    }
    let mut out: Vec<String> =
        REWRITE_LINK.captures_iter(text).map(|caps| caps[3].to_owned()).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The directory part of a `/`-separated path (`""` at the top).
fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// `PurePath(name).suffix`.
fn suffix(name: &str) -> &str {
    match name.rfind('.') {
        Some(i) if i > 0 && i + 1 < name.len() => &name[i..],
        _ => "",
    }
}

use crate::python::{normpath, relpath};

/// `urllib.parse.quote(value, safe="/._-")`: ASCII letters, digits, `_.-~` and `/` stay,
/// every other byte of the UTF-8 encoding becomes `%XX`.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for &b in value.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `urllib.parse.unquote`: `%XX` sequences decoded as UTF-8, invalid bytes replaced.
pub(crate) fn unquote(value: &str) -> String {
    if !value.contains('%') {
        return value.to_owned();
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(b) = hex {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_path_helpers() {
        assert_eq!(relpath("archive/grouped.md", ""), "archive/grouped.md");
        assert_eq!(relpath("projects/x.md", "people"), "../projects/x.md");
        assert_eq!(relpath("people/x.md", "people"), "x.md");
        assert_eq!(quote("a b/é~%.md"), "a%20b/%C3%A9~%25.md");
        assert_eq!(unquote("a%20b%zz%C3%A9"), "a b%zzé");
        assert_eq!(normpath("a/./b/../c"), "a/c");
        assert_eq!(normpath("../x"), "../x");
        assert_eq!(suffix(".md"), "");
        assert_eq!(suffix("x.MD"), ".MD");
    }

    #[test]
    fn topic_link_rule() {
        assert!(links_to_topic_without_block("people/dave.md", "../projects/x.md"));
        assert!(links_to_topic_without_block("people/dave.md", "../projects/x.md#intro"));
        assert!(!links_to_topic_without_block("people/dave.md", "../projects/x.md#^abc"));
        assert!(!links_to_topic_without_block("people/dave.md", "../../sources/x.md"));
        assert!(!links_to_topic_without_block("people/dave.md", "https://x.md"));
        assert!(!links_to_topic_without_block("people/dave.md", "/abs.md"));
    }
}
