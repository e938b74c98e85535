//! The Claude Code importer (mapping documented in the module docs of [`super`]).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::util::{
    Content, FileMeta, Piece, content_text, file_stem, finish, model_speaker, owner_speaker,
    parse_content, parse_rfc3339, piece_id, push_pieces, read_lines, runtime_speaker, tool_speaker,
};
use super::{Error, Input, Parsed, Report};
use crate::{NodeId, NodeKind, Role, SessionId, Timestamp};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    subtype: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent_uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    logical_parent_uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(default)]
    is_sidechain: Option<bool>,
    #[serde(borrow, default)]
    agent_id: Option<Cow<'a, str>>,
    #[serde(default)]
    is_meta: Option<bool>,
    #[serde(default)]
    is_compact_summary: Option<bool>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    git_branch: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    #[serde(borrow, default)]
    summary: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    leaf_uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_use_result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    compact_metadata: Option<CompactMetadata<'a>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    /// The API message ID: the rows of one assistant message (one per content block) share it.
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CompactMetadata<'a> {
    #[serde(borrow, default)]
    trigger: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentRef<'a> {
    #[serde(borrow, default)]
    agent_id: Option<Cow<'a, str>>,
}

/// The `.meta.json` of a new-layout sub-agent.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentMeta {
    #[serde(default)]
    agent_type: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// One node-to-be of a record, borrowing the record's blocks.
enum PieceRef<'r> {
    Text(Vec<&'r str>),
    ToolUse(&'r Block<'r>),
    ToolResult(&'r Block<'r>),
}

/// A parsed line with where it came from.
struct Rec<'a> {
    input: usize,
    line_no: usize,
    line: Line<'a>,
    content: Content<'a, Block<'a>>,
    sidechain: bool,
}

/// What a record ID resolves to.
#[derive(Clone, Copy)]
enum Target<'r> {
    /// The record produced nodes; its last node has the record's ID.
    Node,
    /// The record produced no node: children attach to this parent instead.
    Alias(Option<&'r str>),
}

enum Resolved<'r> {
    Node(&'r str),
    Root,
    Missing(&'r str),
}

fn is_text_kind(kind: Option<&str>) -> bool {
    kind == Some("text")
}

fn plan<'r>(content: &'r Content<'r, Block<'r>>) -> (Vec<PieceRef<'r>>, bool) {
    let mut pieces = Vec::new();
    let mut thinking = false;
    match content {
        Content::None => {}
        Content::Text(text) => {
            if !text.trim().is_empty() {
                pieces.push(PieceRef::Text(vec![text.as_ref()]));
            }
        }
        Content::Blocks(blocks) => {
            let mut run: Vec<&'r str> = Vec::new();
            for block in blocks {
                match block.kind.as_deref() {
                    k if is_text_kind(k) => {
                        if let Some(text) = block.text.as_deref()
                            && !text.trim().is_empty()
                        {
                            run.push(text);
                        }
                    }
                    Some("tool_use") | Some("server_tool_use") => {
                        if !run.is_empty() {
                            pieces.push(PieceRef::Text(std::mem::take(&mut run)));
                        }
                        pieces.push(PieceRef::ToolUse(block));
                    }
                    Some("tool_result") => {
                        if !run.is_empty() {
                            pieces.push(PieceRef::Text(std::mem::take(&mut run)));
                        }
                        pieces.push(PieceRef::ToolResult(block));
                    }
                    Some("thinking") | Some("redacted_thinking") => thinking = true,
                    _ => {}
                }
            }
            if !run.is_empty() {
                pieces.push(PieceRef::Text(run));
            }
        }
    }
    (pieces, thinking)
}

const FORMAT: &str = "claude-code";

/// Parses one Claude Code session group.
pub(super) fn parse(inputs: &[Input<'_>]) -> Result<Parsed, Error> {
    let mut report = Report::default();
    let mut recs: Vec<Rec<'_>> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        for (line_no, line) in read_lines::<Line<'_>>(input, &mut report)? {
            let content = match line.message.as_ref().map(|m| m.content) {
                Some(raw) => match parse_content::<Block<'_>>(raw) {
                    Ok(c) => c,
                    Err(err) => {
                        report.bad_lines.push(super::BadLine {
                            path: input.path.to_path_buf(),
                            line: line_no,
                            reason: format!("invalid message content: {err}"),
                        });
                        continue;
                    }
                },
                None => Content::None,
            };
            let sidechain = input.sidechain || line.is_sidechain == Some(true);
            recs.push(Rec { input: i, line_no, line, content, sidechain });
        }
    }
    let Some(first) = inputs.first() else { return Ok(Parsed { sessions: Vec::new(), report }) };
    if recs.is_empty() {
        return Ok(Parsed { sessions: Vec::new(), report });
    }

    let session_id = recs
        .iter()
        .filter(|r| !r.sidechain)
        .chain(recs.iter())
        .find_map(|r| r.line.session_id.as_deref())
        .map(str::to_owned)
        .unwrap_or_else(|| file_stem(first.path));

    // Plan every record, and index IDs, tool calls and sub-agent links.
    let plans: Vec<(Vec<PieceRef<'_>>, bool)> = recs.iter().map(|r| plan(&r.content)).collect();
    let mut targets: HashMap<&str, Target<'_>> = HashMap::with_capacity(recs.len());
    let mut owner: Vec<bool> = vec![false; recs.len()];
    let mut tool_nodes: HashMap<&str, String> = HashMap::new();
    let mut tool_names: HashMap<&str, &str> = HashMap::new();
    let mut agent_links: HashMap<String, &str> = HashMap::new();
    let mut boundaries: HashMap<&str, Option<&str>> = HashMap::new();
    for (idx, (rec, (pieces, _))) in recs.iter().zip(&plans).enumerate() {
        let line = &rec.line;
        let Some(uuid) = line.uuid.as_deref() else { continue };
        if targets.contains_key(uuid) {
            continue;
        }
        owner[idx] = true;
        let kind = line.kind.as_deref();
        let produces = matches!(kind, Some("user") | Some("assistant")) && !pieces.is_empty();
        let target = if produces {
            Target::Node
        } else if kind == Some("system") && line.subtype.as_deref() == Some("compact_boundary") {
            let trigger = line.compact_metadata.as_ref().and_then(|m| m.trigger.as_deref());
            boundaries.insert(uuid, trigger);
            Target::Alias(line.logical_parent_uuid.as_deref().or(line.parent_uuid.as_deref()))
        } else {
            Target::Alias(line.parent_uuid.as_deref())
        };
        targets.insert(uuid, target);
        if produces {
            let n = pieces.len();
            for (i, piece) in pieces.iter().enumerate() {
                match piece {
                    PieceRef::ToolUse(block) => {
                        if let Some(id) = block.id.as_deref() {
                            tool_nodes.insert(id, piece_id(uuid, i, n));
                            if let Some(name) = block.name.as_deref() {
                                tool_names.insert(id, name);
                            }
                        }
                    }
                    PieceRef::ToolResult(block) => {
                        if let (Some(raw), Some(call)) =
                            (line.tool_use_result, block.tool_use_id.as_deref())
                            && raw.get().starts_with('{')
                            && raw.get().contains("\"agentId\"")
                            && let Ok(AgentRef { agent_id: Some(agent) }) =
                                serde_json::from_str::<AgentRef<'_>>(raw.get())
                        {
                            agent_links.insert(agent.into_owned(), call);
                        }
                    }
                    PieceRef::Text(_) => {}
                }
            }
        }
    }
    let resolve = |start| resolve(&targets, start);
    let reparent = parallel_results(&recs, &plans);

    // Title: a summary of one of this session's leaves.
    let mut title = None;
    let metas: Vec<FileMeta> = inputs.iter().map(|i| FileMeta::new(FORMAT, i.path)).collect();
    let agent_metas: Vec<Option<AgentMeta>> =
        inputs.iter().map(|i| i.meta.and_then(|m| serde_json::from_slice(m).ok())).collect();
    let mut last_ts: Vec<Timestamp> = vec![Timestamp(0); inputs.len()];
    let mut nodes = Vec::with_capacity(recs.len());
    let mut head: Option<(Timestamp, usize, &str)> = None;
    let mut described: HashSet<usize> = HashSet::new();
    for (idx, (rec, (pieces, thinking))) in recs.iter().zip(&plans).enumerate() {
        let line = &rec.line;
        let kind = line.kind.as_deref().unwrap_or("");
        if let Some(ts) = line.timestamp.as_deref().and_then(parse_rfc3339) {
            last_ts[rec.input] = ts;
        }
        match kind {
            "user" | "assistant" => {}
            "summary" => {
                match line.leaf_uuid.as_deref().map(&resolve) {
                    Some(Resolved::Node(_)) if line.summary.is_some() => {
                        title = line.summary.as_deref().map(str::to_owned);
                    }
                    _ => report.skip("summary (leaf not in session)"),
                }
                continue;
            }
            "system" => {
                match line.subtype.as_deref() {
                    Some("compact_boundary") => {}
                    Some(sub) => report.skip(format!("system:{sub}")),
                    None => report.skip("system"),
                }
                continue;
            }
            "" => {
                report.skip("no type");
                continue;
            }
            other => {
                report.skip(other.to_owned());
                continue;
            }
        }
        let Some(uuid) = line.uuid.as_deref() else {
            report.skip(format!("{kind} without uuid"));
            continue;
        };
        if !owner[idx] {
            report.skip("duplicate uuid");
            continue;
        }
        if pieces.is_empty() {
            report.skip(if *thinking {
                format!("{kind} (thinking only)")
            } else {
                format!("{kind} (no content)")
            });
            continue;
        }
        let mut first_meta: Vec<(&'static str, String)> = Vec::new();
        let parent_uuid = reparent.get(uuid).copied().or(line.parent_uuid.as_deref());
        let parent = match parent_uuid.map(&resolve) {
            Some(Resolved::Node(p)) => Some(NodeId(p.to_owned())),
            Some(Resolved::Missing(p)) => {
                first_meta.push(("missing_parent", p.to_owned()));
                None
            }
            Some(Resolved::Root) | None => None,
        };
        let parent = match parent {
            None if rec.sidechain && first_meta.is_empty() => {
                let link = line
                    .agent_id
                    .as_deref()
                    .and_then(|a| agent_links.get(a))
                    .and_then(|call| tool_nodes.get(call).map(|node| (*call, node)));
                match link {
                    Some((call, node)) => {
                        first_meta.push(("spawned_by_tool_call", call.to_owned()));
                        Some(NodeId(node.clone()))
                    }
                    None => None,
                }
            }
            other => other,
        };
        if rec.sidechain
            && described.insert(rec.input)
            && let Some(meta) = &agent_metas[rec.input]
        {
            if let Some(t) = &meta.agent_type {
                first_meta.push(("agent_type", t.clone()));
            }
            if let Some(d) = &meta.description {
                first_meta.push(("agent_description", d.clone()));
            }
        }
        if let Some(p) = line.parent_uuid.as_deref()
            && let Some(trigger) = boundaries.get(p)
        {
            first_meta.push(("compact_boundary", p.to_owned()));
            if let Some(t) = trigger {
                first_meta.push(("compact_trigger", (*t).to_owned()));
            }
        }

        let mut meta = metas[rec.input].base(rec.line_no);
        let mut put = |k: &str, v: &str| {
            meta.insert(k.to_owned(), v.to_owned());
        };
        if let Some(v) = line.cwd.as_deref() {
            put("cwd", v);
        }
        if let Some(v) = line.git_branch.as_deref() {
            put("git_branch", v);
        }
        if rec.sidechain {
            put("is_sidechain", "true");
        }
        if let Some(v) = line.agent_id.as_deref() {
            put("agent_id", v);
        }
        if let Some(v) = line.session_id.as_deref()
            && v != session_id
        {
            put("source_session_id", v);
        }
        if line.is_meta == Some(true) {
            put("is_meta", "true");
        }
        let model = line.message.as_ref().and_then(|m| m.model.as_deref());
        if kind == "assistant"
            && let Some(m) = model
        {
            put("model", m);
        }

        let runtime = || Some(runtime_speaker(FORMAT, "Claude Code"));
        let synthetic = model == Some("<synthetic>");
        let materialized: Vec<Piece> = pieces
            .iter()
            .map(|piece| match piece {
                PieceRef::Text(texts) => {
                    let content = texts.join("\n");
                    if line.is_compact_summary == Some(true) {
                        Piece::new(Role::System, NodeKind::CompactionSummary, runtime(), content)
                    } else if kind == "user" && line.is_meta == Some(true) {
                        Piece::new(Role::User, NodeKind::Runtime, runtime(), content)
                    } else if kind == "user" {
                        Piece::new(Role::User, NodeKind::Message, Some(owner_speaker()), content)
                    } else if synthetic {
                        Piece::new(Role::Assistant, NodeKind::Runtime, runtime(), content)
                    } else {
                        let speaker = model_speaker(model.unwrap_or("claude"));
                        Piece::new(Role::Assistant, NodeKind::Message, Some(speaker), content)
                    }
                }
                PieceRef::ToolUse(block) => {
                    let name = block.name.as_deref().unwrap_or("tool");
                    let input = block.input.map(RawValue::get).unwrap_or("{}");
                    let speaker = model_speaker(model.unwrap_or("claude"));
                    let mut p = Piece::new(
                        Role::Assistant,
                        NodeKind::ToolCall,
                        Some(speaker),
                        format!("{name} {input}"),
                    );
                    p.meta.push(("tool_name", name.to_owned()));
                    if let Some(id) = block.id.as_deref() {
                        p.meta.push(("tool_call_id", id.to_owned()));
                    }
                    p
                }
                PieceRef::ToolResult(block) => {
                    let call = block.tool_use_id.as_deref();
                    let name = call.and_then(|c| tool_names.get(c).copied());
                    let mut p = Piece::new(
                        Role::Tool,
                        NodeKind::ToolResult,
                        name.map(tool_speaker),
                        content_text(block.content),
                    );
                    if let Some(n) = name {
                        p.meta.push(("tool_name", n.to_owned()));
                    }
                    if let Some(c) = call {
                        p.meta.push(("tool_call_id", c.to_owned()));
                    }
                    if block.is_error == Some(true) {
                        p.meta.push(("is_error", "true".to_owned()));
                    }
                    p
                }
            })
            .collect();
        let created_at = last_ts[rec.input];
        push_pieces(&mut nodes, uuid, parent, materialized, created_at, &meta, first_meta);
        if !rec.sidechain && head.is_none_or(|(ts, i, _)| (created_at, idx) >= (ts, i)) {
            head = Some((created_at, idx, uuid));
        }
    }
    let head = head.map(|(_, _, uuid)| NodeId(uuid.to_owned()));
    let session = finish(SessionId(session_id), title, nodes, head, &mut report);
    Ok(Parsed { sessions: vec![session], report })
}

/// Follows skipped records from `start` to the node a child of `start` attaches to. Bounded, so
/// an alias cycle in hostile input ends as a missing parent.
/// Parallel tool calls made one branch. Claude Code writes an assistant message with several
/// `tool_use` blocks as one row per block, chained (`T1 → T2 → T3`, one message ID), and each
/// result as a row whose parent is the row of its own call (`R1 → T1`, `R2 → T2`, `R3 → T3`),
/// the conversation going on after the last result written. Taken as written, every result but
/// the last is a branch of its own, and the head misses the calls it made. This maps each such
/// result row to its new parent so that the calls and their results form one chain
/// (`T1 → T2 → T3 → R1 → R2 → R3`, results in file order): the first result after the last
/// call, each later one after the one before it. Sidechains are left as written; a message
/// with one call (or results that already chain) maps nothing.
fn parallel_results<'r>(
    recs: &'r [Rec<'r>],
    plans: &[(Vec<PieceRef<'r>>, bool)],
) -> HashMap<&'r str, &'r str> {
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    for (i, rec) in recs.iter().enumerate() {
        if let Some(uuid) = rec.line.uuid.as_deref() {
            by_uuid.entry(uuid).or_insert(i);
        }
    }
    // The call rows of each assistant message, in file order.
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, (rec, (pieces, _))) in recs.iter().zip(plans).enumerate() {
        let calls = pieces.iter().any(|p| matches!(p, PieceRef::ToolUse(_)));
        let message = rec.line.message.as_ref().and_then(|m| m.id.as_deref());
        if rec.sidechain || rec.line.kind.as_deref() != Some("assistant") || !calls {
            continue;
        }
        let Some(message) = message else { continue };
        match groups.iter_mut().find(|(id, _)| *id == message) {
            Some((_, rows)) => rows.push(i),
            None => groups.push((message, vec![i])),
        }
    }
    // The user or assistant row a parent link leads to, through rows that are neither.
    let conversational = |mut uuid: &'r str| -> Option<&'r str> {
        for _ in 0..recs.len() {
            let rec = &recs[*by_uuid.get(uuid)?];
            if matches!(rec.line.kind.as_deref(), Some("user" | "assistant")) {
                return Some(uuid);
            }
            uuid = rec.line.parent_uuid.as_deref()?;
        }
        None
    };
    let mut reparent = HashMap::new();
    for (_, rows) in groups.iter().filter(|(_, rows)| rows.len() > 1) {
        let calls: HashSet<&str> =
            rows.iter().filter_map(|&i| recs[i].line.uuid.as_deref()).collect();
        let Some(last) = rows.last().and_then(|&i| recs[i].line.uuid.as_deref()) else { continue };
        let results: Vec<&str> = recs
            .iter()
            .zip(plans)
            .filter(|(rec, (pieces, _))| {
                !rec.sidechain
                    && rec.line.kind.as_deref() == Some("user")
                    && pieces.iter().any(|p| matches!(p, PieceRef::ToolResult(_)))
                    && rec
                        .line
                        .parent_uuid
                        .as_deref()
                        .and_then(conversational)
                        .is_some_and(|p| calls.contains(p))
            })
            .filter_map(|(rec, _)| rec.line.uuid.as_deref())
            .collect();
        let mut previous = last;
        for result in results {
            reparent.insert(result, previous);
            previous = result;
        }
    }
    reparent
}

fn resolve<'r>(targets: &HashMap<&'r str, Target<'r>>, start: &'r str) -> Resolved<'r> {
    let mut p = start;
    for _ in 0..=targets.len() {
        match targets.get(p) {
            Some(Target::Node) => return Resolved::Node(p),
            Some(Target::Alias(Some(next))) => p = next,
            Some(Target::Alias(None)) => return Resolved::Root,
            None => return Resolved::Missing(p),
        }
    }
    Resolved::Missing(start)
}
