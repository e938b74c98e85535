//! The pi session importer (mapping documented in the module docs of [`super`]).

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::util::{
    Content, FileMeta, Piece, content_text, file_stem, finish, join_texts, model_speaker,
    owner_speaker, parse_content, parse_rfc3339, push_pieces, read_lines, runtime_speaker,
    tool_speaker,
};
use super::{Error, Input, Parsed, Report};
use crate::{NodeId, NodeKind, Role, SessionId, Timestamp};

const FORMAT: &str = "pi";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    #[serde(borrow, default)]
    summary: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    branched_from: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent_session: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    first_kept_entry_index: Option<&'a RawValue>,
    #[serde(borrow, default)]
    first_kept_entry_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tokens_before: Option<&'a RawValue>,
    #[serde(borrow, default)]
    from_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    command: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    output: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    exit_code: Option<&'a RawValue>,
    #[serde(borrow, default)]
    custom_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    summary: Option<Cow<'a, str>>,
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
    arguments: Option<&'a RawValue>,
}

fn runtime() -> Option<crate::Speaker> {
    Some(runtime_speaker(FORMAT, "pi"))
}

/// The nodes of one entry (empty: the entry is skipped, with the reason).
fn plan(line: &Line<'_>, model: &str) -> Result<Vec<Piece>, String> {
    let kind = line.kind.as_deref().unwrap_or("");
    let summary = |meta: Vec<(&'static str, String)>| {
        let text = line.summary.as_deref().unwrap_or("").to_owned();
        if text.trim().is_empty() {
            return Err(format!("{kind} (no summary)"));
        }
        let mut p = Piece::new(Role::System, NodeKind::CompactionSummary, runtime(), text);
        p.meta = meta;
        Ok(vec![p])
    };
    match kind {
        "message" => {}
        "compaction" => {
            let mut meta = Vec::new();
            if let Some(t) = line.tokens_before {
                meta.push(("tokens_before", t.get().to_owned()));
            }
            if let Some(id) = line.first_kept_entry_id.as_deref() {
                meta.push(("first_kept_entry", id.to_owned()));
            } else if let Some(i) = line.first_kept_entry_index {
                meta.push(("first_kept_entry", i.get().to_owned()));
            }
            return summary(meta);
        }
        "branch_summary" => {
            let meta = line.from_id.as_deref().map(|f| ("from_id", f.to_owned())).into_iter();
            return summary(meta.collect());
        }
        "" => return Err("no type".to_owned()),
        other => return Err(other.to_owned()),
    }
    let Some(msg) = &line.message else { return Err("message (no message)".to_owned()) };
    let role = msg.role.as_deref().unwrap_or("");
    let empty = || format!("message:{role} (no content)");
    let pieces = match role {
        "user" => {
            let text = content_text(msg.content);
            if text.trim().is_empty() {
                return Err(empty());
            }
            vec![Piece::new(Role::User, NodeKind::Message, Some(owner_speaker()), text)]
        }
        "assistant" => {
            let model = msg.model.as_deref().unwrap_or(model);
            let speaker = || Some(model_speaker(model));
            let mut pieces = Vec::new();
            match parse_content::<Block<'_>>(msg.content) {
                Ok(Content::Text(text)) if !text.trim().is_empty() => pieces.push(Piece::new(
                    Role::Assistant,
                    NodeKind::Message,
                    speaker(),
                    text.into_owned(),
                )),
                Ok(Content::Blocks(blocks)) => {
                    let mut run: Vec<&str> = Vec::new();
                    let flush = |run: &mut Vec<&str>, pieces: &mut Vec<Piece>| {
                        if !run.is_empty() {
                            let text = join_texts(run.drain(..));
                            pieces.push(Piece::new(
                                Role::Assistant,
                                NodeKind::Message,
                                speaker(),
                                text,
                            ));
                        }
                    };
                    for block in &blocks {
                        match block.kind.as_deref() {
                            Some("text") => {
                                if let Some(t) = block.text.as_deref()
                                    && !t.trim().is_empty()
                                {
                                    run.push(t);
                                }
                            }
                            Some("toolCall") => {
                                flush(&mut run, &mut pieces);
                                let name = block.name.as_deref().unwrap_or("tool");
                                let args = block.arguments.map(RawValue::get).unwrap_or("{}");
                                let mut p = Piece::new(
                                    Role::Assistant,
                                    NodeKind::ToolCall,
                                    speaker(),
                                    format!("{name} {args}"),
                                );
                                p.meta.push(("tool_name", name.to_owned()));
                                if let Some(id) = block.id.as_deref() {
                                    p.meta.push(("tool_call_id", id.to_owned()));
                                }
                                pieces.push(p);
                            }
                            _ => {}
                        }
                    }
                    flush(&mut run, &mut pieces);
                }
                Ok(_) => {}
                Err(err) => return Err(format!("message:assistant (bad content: {err})")),
            }
            if pieces.is_empty() {
                return Err(empty());
            }
            pieces
        }
        "toolResult" => {
            let name = msg.tool_name.as_deref();
            let mut p = Piece::new(
                Role::Tool,
                NodeKind::ToolResult,
                name.map(tool_speaker),
                content_text(msg.content),
            );
            if let Some(n) = name {
                p.meta.push(("tool_name", n.to_owned()));
            }
            if let Some(c) = msg.tool_call_id.as_deref() {
                p.meta.push(("tool_call_id", c.to_owned()));
            }
            if msg.is_error == Some(true) {
                p.meta.push(("is_error", "true".to_owned()));
            }
            vec![p]
        }
        "bashExecution" => {
            let command = msg.command.as_deref().unwrap_or("");
            let output = msg.output.as_deref().unwrap_or("");
            let mut p = Piece::new(
                Role::Tool,
                NodeKind::ToolResult,
                Some(tool_speaker("bash")),
                format!("$ {command}\n{output}"),
            );
            p.meta.push(("bash_execution", "true".to_owned()));
            p.meta.push(("tool_name", "bash".to_owned()));
            if let Some(code) = msg.exit_code {
                p.meta.push(("exit_code", code.get().to_owned()));
            }
            vec![p]
        }
        "custom" => {
            let text = content_text(msg.content);
            if text.trim().is_empty() {
                return Err(empty());
            }
            let mut p = Piece::new(Role::User, NodeKind::Runtime, runtime(), text);
            if let Some(t) = msg.custom_type.as_deref() {
                p.meta.push(("custom_type", t.to_owned()));
            }
            vec![p]
        }
        "branchSummary" | "compactionSummary" => {
            let text = msg
                .summary
                .as_deref()
                .map(str::to_owned)
                .unwrap_or_else(|| content_text(msg.content));
            if text.trim().is_empty() {
                return Err(empty());
            }
            vec![Piece::new(Role::System, NodeKind::CompactionSummary, runtime(), text)]
        }
        other => return Err(format!("message:{other}")),
    };
    Ok(pieces)
}

/// The timestamp of an entry: an RFC 3339 string or milliseconds.
fn timestamp(raw: Option<&RawValue>) -> Option<Timestamp> {
    let raw = raw?.get();
    if raw.starts_with('"') {
        parse_rfc3339(raw.trim_matches('"'))
    } else {
        raw.parse::<i64>().ok().map(Timestamp)
    }
}

/// The session UUID in a pi file name `<time>_<uuid>.jsonl`.
fn session_of_path(path: &str) -> Option<String> {
    let name = path.rsplit(['/', '\\']).next()?;
    let stem = name.strip_suffix(".jsonl").unwrap_or(name);
    let (_, uuid) = stem.rsplit_once('_')?;
    (!uuid.is_empty()).then(|| uuid.to_owned())
}

/// Parses one pi session file.
pub(super) fn parse(input: &Input<'_>) -> Result<Parsed, Error> {
    let mut report = Report::default();
    let lines = read_lines::<Line<'_>>(input, &mut report)?;
    if lines.is_empty() {
        return Ok(Parsed { sessions: Vec::new(), report });
    }
    let file = FileMeta::new(FORMAT, input.path);
    let mut session_id: Option<String> = None;
    let mut branched_from: Option<String> = None;
    let mut cwd: Option<String> = None;
    let mut model = "pi".to_owned();
    let mut title: Option<String> = None;

    // Pass 1: plan every entry and index the entry IDs (producing or transparent).
    let mut plans: Vec<Result<Vec<Piece>, String>> = Vec::with_capacity(lines.len());
    let mut targets: HashMap<&str, Option<&str>> = HashMap::new();
    let mut produces: HashMap<&str, bool> = HashMap::new();
    for (_, line) in &lines {
        let kind = line.kind.as_deref().unwrap_or("");
        if kind == "model_change"
            && let Some(m) = line.model_id.as_deref()
        {
            model = m.to_owned();
        }
        let plan = if kind == "session" {
            if session_id.is_none() {
                session_id = line.id.as_deref().map(str::to_owned);
                branched_from = line
                    .branched_from
                    .as_deref()
                    .or(line.parent_session.as_deref())
                    .map(str::to_owned);
                cwd = line.cwd.as_deref().map(str::to_owned);
                if let Some(m) = line.model_id.as_deref() {
                    model = m.to_owned();
                }
                Err(String::new())
            } else {
                Err("session (repeated header)".to_owned())
            }
        } else if kind == "session_info" {
            if let Some(name) = line.name.as_deref() {
                title = Some(name.to_owned());
            }
            Err(String::new())
        } else {
            plan(line, &model)
        };
        if kind != "session"
            && let Some(id) = line.id.as_deref()
            && !produces.contains_key(id)
        {
            produces.insert(id, matches!(plan, Ok(ref p) if !p.is_empty()));
            targets.insert(id, line.parent_id.as_deref());
        }
        plans.push(plan);
    }

    // Pass 2: IDs and parents.
    let mut nodes = Vec::with_capacity(lines.len());
    let mut last: Option<NodeId> = None;
    let mut seen: HashMap<&str, ()> = HashMap::new();
    let mut ts = Timestamp(0);
    for ((line_no, line), plan) in lines.iter().zip(plans) {
        if let Some(t) = timestamp(line.timestamp) {
            ts = t;
        }
        let pieces = match plan {
            Ok(p) => p,
            Err(reason) => {
                if !reason.is_empty() {
                    report.skip(reason);
                }
                continue;
            }
        };
        let mut first_meta = Vec::new();
        let (base, parent) = match line.id.as_deref() {
            Some(id) => {
                if seen.insert(id, ()).is_some() {
                    report.skip("duplicate id");
                    continue;
                }
                let parent = match line.parent_id.as_deref() {
                    None => None,
                    Some(p) => match resolve(&targets, &produces, p) {
                        Ok(found) => found.map(|f| NodeId(f.to_owned())),
                        Err(missing) => {
                            first_meta.push(("missing_parent", missing.to_owned()));
                            None
                        }
                    },
                };
                (id.to_owned(), parent)
            }
            None => (format!("line-{line_no}"), last.clone()),
        };
        if parent.is_none()
            && let Some(b) = &branched_from
        {
            first_meta.push(("branched_from", b.clone()));
            if let Some(s) = session_of_path(b) {
                first_meta.push(("branched_from_session", s));
            }
        }
        let mut meta = file.base(*line_no);
        if let Some(c) = &cwd {
            meta.insert("cwd".to_owned(), c.clone());
        }
        last = push_pieces(&mut nodes, &base, parent, pieces, ts, &meta, first_meta).or(last);
    }
    let id = session_id.unwrap_or_else(|| file_stem(input.path));
    let session = finish(SessionId(id), title, nodes, last, &mut report);
    Ok(Parsed { sessions: vec![session], report })
}

/// Follows transparent entries from `start`: `Ok(Some(node))`, `Ok(None)` (a root), or
/// `Err(missing id)`. Bounded, so a cycle ends as missing.
fn resolve<'r>(
    targets: &HashMap<&'r str, Option<&'r str>>,
    produces: &HashMap<&'r str, bool>,
    start: &'r str,
) -> Result<Option<&'r str>, &'r str> {
    let mut p = start;
    for _ in 0..=targets.len() {
        match (produces.get(p), targets.get(p)) {
            (Some(true), _) => return Ok(Some(p)),
            (Some(false), Some(Some(next))) => p = next,
            (Some(false), _) => return Ok(None),
            (None, _) => return Err(p),
        }
    }
    Err(start)
}
