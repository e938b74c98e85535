//! Shared pieces of the importers: line splitting, timestamps, speakers, metadata, and the final
//! ordering of a session's nodes (parents first, cycles cut, tips counted).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{BadLine, Error, Input, ParsedSession, Report};
use crate::{Node, NodeId, NodeKind, Role, SessionId, Speaker, Timestamp};

/// The local owner: the speaker of every user turn of an imported transcript.
pub fn owner_speaker() -> Speaker {
    Speaker { id: "owner/local".to_owned(), display: "Owner".to_owned() }
}

/// The speaker of a model turn.
pub(crate) fn model_speaker(model: &str) -> Speaker {
    Speaker { id: format!("model/{model}"), display: model.to_owned() }
}

/// The speaker of a runtime turn of `format`'s tool.
pub(crate) fn runtime_speaker(id: &str, display: &str) -> Speaker {
    Speaker { id: format!("runtime/{id}"), display: display.to_owned() }
}

/// The speaker of a tool result.
pub(crate) fn tool_speaker(name: &str) -> Speaker {
    Speaker { id: format!("tool/{name}"), display: name.to_owned() }
}

/// Parses an RFC 3339 timestamp into milliseconds since the epoch.
pub(crate) fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok().map(Timestamp)
}

/// The lines of a file: `(1-based line number, line)` for every non-blank line. Lines that are
/// not UTF-8 are returned as `Err` with their number.
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, Result<&str, ()>)> {
    bytes.split(|&b| b == b'\n').enumerate().filter_map(|(i, line)| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some((i + 1, std::str::from_utf8(line).map_err(|_| ())))
    })
}

/// Reads the lines of `input` as `T`, recording bad lines in `report`. Fails with
/// [`Error::NotJsonl`] when the input has lines but none of them parses.
pub(crate) fn read_lines<'a, T: Deserialize<'a>>(
    input: &Input<'a>,
    report: &mut Report,
) -> Result<Vec<(usize, T)>, Error> {
    let mut out = Vec::new();
    let mut first_bad: Option<(usize, String)> = None;
    for (line_no, line) in lines(input.bytes) {
        report.lines += 1;
        let reason = match line {
            Err(()) => "not UTF-8".to_owned(),
            Ok(text) if !text.trim_start().starts_with('{') => "not a JSON object".to_owned(),
            Ok(text) => match serde_json::from_str::<T>(text) {
                Ok(value) => {
                    out.push((line_no, value));
                    continue;
                }
                Err(err) => format!("invalid record: {err}"),
            },
        };
        if first_bad.is_none() {
            first_bad = Some((line_no, reason.clone()));
        }
        report.bad_lines.push(BadLine { path: input.path.to_path_buf(), line: line_no, reason });
    }
    if out.is_empty()
        && let Some((line, reason)) = first_bad
    {
        return Err(Error::NotJsonl { path: input.path.to_path_buf(), line, reason });
    }
    Ok(out)
}

/// A JSON value that is either a string or a list of content blocks.
pub(crate) enum Content<'a, B> {
    /// No content.
    None,
    /// A plain string.
    Text(Cow<'a, str>),
    /// A list of blocks.
    Blocks(Vec<B>),
}

/// Parses a raw `content` value: a string, a list of `B`, or null.
pub(crate) fn parse_content<'a, B: Deserialize<'a>>(
    raw: Option<&'a RawValue>,
) -> Result<Content<'a, B>, serde_json::Error> {
    let Some(raw) = raw else { return Ok(Content::None) };
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => Ok(Content::Text(serde_json::from_str(text)?)),
        Some(b'[') => Ok(Content::Blocks(serde_json::from_str(text)?)),
        _ => Ok(Content::None),
    }
}

/// A minimal text block, for contents where only `text` blocks matter.
#[derive(Deserialize)]
pub(crate) struct TextBlock<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) text: Option<Cow<'a, str>>,
}

/// The text of a content value: the string, or the `\n`-join of its non-empty `text` blocks.
pub(crate) fn content_text(raw: Option<&RawValue>) -> String {
    match parse_content::<TextBlock<'_>>(raw) {
        Ok(Content::Text(s)) => s.into_owned(),
        Ok(Content::Blocks(blocks)) => join_texts(
            blocks
                .iter()
                .filter(|b| {
                    matches!(
                        b.kind.as_deref(),
                        Some("text") | Some("input_text") | Some("output_text")
                    )
                })
                .filter_map(|b| b.text.as_deref()),
        ),
        // A structured value (an object): keep its JSON text rather than lose it.
        Ok(Content::None) => {
            raw.map(|r| r.get().to_owned()).filter(|s| s != "null").unwrap_or_default()
        }
        Err(_) => raw.map(|r| r.get().to_owned()).unwrap_or_default(),
    }
}

/// `\n`-joins the non-blank texts.
pub(crate) fn join_texts<'s>(texts: impl IntoIterator<Item = &'s str>) -> String {
    let mut out = String::new();
    for text in texts {
        if text.trim().is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(text);
    }
    out
}

/// The file stem, as a fallback session ID.
pub(crate) fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_owned())
}

/// One node to be: everything but its ID and parent.
pub(crate) struct Piece {
    pub(crate) role: Role,
    pub(crate) kind: NodeKind,
    pub(crate) speaker: Option<Speaker>,
    pub(crate) content: String,
    pub(crate) meta: Vec<(&'static str, String)>,
}

impl Piece {
    pub(crate) fn new(
        role: Role,
        kind: NodeKind,
        speaker: Option<Speaker>,
        content: String,
    ) -> Piece {
        Piece { role, kind, speaker, content, meta: Vec::new() }
    }
}

/// The ID of piece `i` of `count` pieces of a record with source ID `base`: the last piece gets
/// the source ID, earlier ones `<base>#<i>`.
pub(crate) fn piece_id(base: &str, i: usize, count: usize) -> String {
    if i + 1 == count { base.to_owned() } else { format!("{base}#{i}") }
}

/// The shared per-file metadata (`source_format`, `source_file`).
#[derive(Clone)]
pub(crate) struct FileMeta {
    pub(crate) format: &'static str,
    pub(crate) file: String,
}

impl FileMeta {
    pub(crate) fn new(format: &'static str, path: &Path) -> FileMeta {
        FileMeta { format, file: path.display().to_string() }
    }

    /// The base metadata of a node from line `line`.
    pub(crate) fn base(&self, line: usize) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("source_format".to_owned(), self.format.to_owned());
        m.insert("source_file".to_owned(), self.file.clone());
        m.insert("source_line".to_owned(), line.to_string());
        m
    }
}

/// Turns the pieces of one record into nodes chained after `parent`; returns the last node's ID
/// (`None` when there were no pieces: the record is transparent).
pub(crate) fn push_pieces(
    nodes: &mut Vec<Node>,
    base_id: &str,
    mut parent: Option<NodeId>,
    pieces: Vec<Piece>,
    created_at: Timestamp,
    meta: &BTreeMap<String, String>,
    first_meta: Vec<(&'static str, String)>,
) -> Option<NodeId> {
    let count = pieces.len();
    let mut first_meta = Some(first_meta);
    for (i, piece) in pieces.into_iter().enumerate() {
        let mut metadata = meta.clone();
        for (k, v) in piece.meta {
            metadata.insert(k.to_owned(), v);
        }
        if let Some(extra) = first_meta.take() {
            for (k, v) in extra {
                metadata.insert(k.to_owned(), v);
            }
        }
        let id = NodeId(piece_id(base_id, i, count));
        nodes.push(Node {
            id: id.clone(),
            parent: parent.take(),
            role: piece.role,
            kind: piece.kind,
            speaker: piece.speaker,
            content: piece.content,
            created_at,
            metadata,
            rewound: false,
        });
        parent = Some(id);
    }
    parent
}

/// Finishes a session: drops nodes whose ID repeats (first wins), clears parents that are not
/// nodes of the session (keeping them as `missing_parent`), orders parents before children
/// (cutting cycles), counts tips, and picks a fallback title.
pub(crate) fn finish(
    id: SessionId,
    title: Option<String>,
    nodes: Vec<Node>,
    head: Option<NodeId>,
    report: &mut Report,
) -> ParsedSession {
    let mut index: HashMap<String, usize> = HashMap::with_capacity(nodes.len());
    let mut kept: Vec<Node> = Vec::with_capacity(nodes.len());
    for node in nodes {
        if index.contains_key(node.id.as_str()) {
            report.skip("duplicate id");
            continue;
        }
        index.insert(node.id.0.clone(), kept.len());
        kept.push(node);
    }
    let mut nodes = kept;
    for node in &mut nodes {
        if let Some(parent) = &node.parent
            && !index.contains_key(parent.as_str())
        {
            let missing = node.parent.take().map(|p| p.0).unwrap_or_default();
            node.metadata.insert("missing_parent".to_owned(), missing);
        }
    }
    // Parents first: walk up from each unvisited node, emitting ancestors before it. A parent
    // still on the current walk means a cycle: cut it there.
    let parent_of = |nodes: &[Node], i: usize| -> Option<usize> {
        nodes[i].parent.as_ref().and_then(|p| index.get(p.as_str()).copied())
    };
    let n = nodes.len();
    let mut state = vec![0u8; n];
    let mut order = Vec::with_capacity(n);
    let mut stack = Vec::new();
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        let mut cur = start;
        loop {
            state[cur] = 1;
            stack.push(cur);
            match parent_of(&nodes, cur) {
                Some(p) if state[p] == 0 => cur = p,
                Some(p) if state[p] == 1 => {
                    let cut = nodes[cur].parent.take().map(|p| p.0).unwrap_or_default();
                    nodes[cur].metadata.insert("cycle_parent".to_owned(), cut);
                    break;
                }
                _ => break,
            }
        }
        while let Some(j) = stack.pop() {
            state[j] = 2;
            order.push(j);
        }
    }
    let mut has_child = vec![false; n];
    for i in 0..n {
        if let Some(p) = parent_of(&nodes, i) {
            has_child[p] = true;
        }
    }
    let branches = has_child.iter().filter(|c| !**c).count();
    let fallback_title = first_user_line(&nodes);
    let mut slots: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
    let nodes: Vec<Node> = order.into_iter().filter_map(|i| slots[i].take()).collect();
    let head = head.filter(|h| index.contains_key(h.as_str()));
    ParsedSession { id, title, fallback_title, nodes, head, branches }
}

/// The first line of the first user message that reads as prose (not a `<tag>` the tool wrapped
/// around a command or its output), at most 80 characters.
fn first_user_line(nodes: &[Node]) -> Option<String> {
    nodes
        .iter()
        .filter(|n| n.role == Role::User && n.kind == NodeKind::Message)
        .filter_map(|n| n.content.lines().map(str::trim).find(|l| !l.is_empty()))
        .find(|line| !line.starts_with('<'))
        .map(|line| truncate_chars(line, 80))
}

/// At most `max` characters of `s`, with `…` when cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}
