//! The generic JSONL importer (schema documented in the module docs of [`super`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::util::{
    FileMeta, Piece, content_text, file_stem, finish, owner_speaker, parse_rfc3339, push_pieces,
    read_lines,
};
use super::{BadLine, Error, Input, Parsed, Report};
use crate::{Node, NodeId, NodeKind, Role, SessionId, Speaker, Timestamp};

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    created_at: Option<&'a RawValue>,
    #[serde(default)]
    speaker: Option<Speaker>,
    #[serde(borrow, default)]
    session: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    metadata: Option<BTreeMap<String, String>>,
}

fn role(s: &str) -> Option<Role> {
    Some(match s {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        "tool" => Role::Tool,
        _ => return None,
    })
}

fn kind(s: &str) -> Option<NodeKind> {
    Some(match s {
        "message" => NodeKind::Message,
        "tool_call" => NodeKind::ToolCall,
        "tool_result" => NodeKind::ToolResult,
        "runtime" => NodeKind::Runtime,
        "compaction_summary" => NodeKind::CompactionSummary,
        _ => return None,
    })
}

fn created_at(raw: Option<&RawValue>) -> Result<Option<Timestamp>, String> {
    let Some(raw) = raw else { return Ok(None) };
    let text = raw.get();
    if text == "null" {
        return Ok(None);
    }
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(Some(Timestamp(ms)));
    }
    let s: Cow<'_, str> =
        serde_json::from_str(text).map_err(|_| format!("created_at is not a string: {text}"))?;
    parse_rfc3339(&s).map(Some).ok_or_else(|| format!("created_at is not RFC 3339: {s}"))
}

struct Draft {
    nodes: Vec<Node>,
    head: Option<NodeId>,
}

/// Parses one generic JSONL file.
pub(super) fn parse(input: &Input<'_>) -> Result<Parsed, Error> {
    let mut report = Report::default();
    let lines = read_lines::<Line<'_>>(input, &mut report)?;
    let file = FileMeta::new("jsonl", input.path);
    let default_session = file_stem(input.path);
    let mut order: Vec<String> = Vec::new();
    let mut drafts: HashMap<String, Draft> = HashMap::new();
    let mut ts = Timestamp(0);
    for (line_no, line) in lines {
        let bad =
            |reason: String| BadLine { path: input.path.to_path_buf(), line: line_no, reason };
        let Some(id) = line.id.as_deref().filter(|s| !s.is_empty()) else {
            report.bad_lines.push(bad("missing id".to_owned()));
            continue;
        };
        let Some(role) = line.role.as_deref().and_then(role) else {
            report.bad_lines.push(bad("missing or unknown role".to_owned()));
            continue;
        };
        let kind = match line.kind.as_deref() {
            None => NodeKind::Message,
            Some(k) => match kind(k) {
                Some(k) => k,
                None => {
                    report.bad_lines.push(bad(format!("unknown kind {k:?}")));
                    continue;
                }
            },
        };
        match created_at(line.created_at) {
            Ok(Some(t)) => ts = t,
            Ok(None) => {}
            Err(reason) => {
                report.bad_lines.push(bad(reason));
                continue;
            }
        }
        // An assistant turn without a speaker has no model to name: it is labelled by its role
        // ("assistant"), never by an invented `model/unknown`.
        let speaker = line.speaker.or_else(|| (role == Role::User).then(owner_speaker));
        let session = line.session.as_deref().unwrap_or(&default_session).to_owned();
        let draft = drafts.entry(session.clone()).or_insert_with(|| {
            order.push(session);
            Draft { nodes: Vec::new(), head: None }
        });
        let mut meta = file.base(line_no);
        for (k, v) in line.metadata.unwrap_or_default() {
            meta.entry(k).or_insert(v);
        }
        let piece = Piece::new(role, kind, speaker, content_text(line.content));
        let parent = line.parent.as_deref().map(|p| NodeId(p.to_owned()));
        draft.head = push_pieces(&mut draft.nodes, id, parent, vec![piece], ts, &meta, Vec::new());
    }
    let mut sessions = Vec::with_capacity(order.len());
    for id in order {
        if let Some(draft) = drafts.remove(&id) {
            sessions.push(finish(SessionId(id), None, draft.nodes, draft.head, &mut report));
        }
    }
    Ok(Parsed { sessions, report })
}
