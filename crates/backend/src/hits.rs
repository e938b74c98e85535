//! Search hits as a person (or a model) reads them, the same on every face: a source record
//! names its session by title and project, never by a bare archive path; speakers are names;
//! dates lead the recall text.
//!
//! The search crate knows files, not sessions: [`labels`] maps the archives of a result's
//! source records to their sessions through the session store (one listing per search, and
//! none when the result holds no source record, as per-turn recall's topic-only results do).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use scriptorium_search::{Hit, HitKind};
use scriptorium_session_dag::{Page, SessionStore};
use serde::Serialize;
use serde_json::Value;

/// The session a source record was archived from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionLabel {
    /// The session ID.
    pub id: String,
    /// Its title, when the transcript gave one.
    pub title: Option<String>,
    /// Its project (see [`crate::project`]), when known.
    pub project: Option<String>,
}

/// The sessions of the archives `hits` come from, keyed by archive path. Archives that belong
/// to no session in `store` (records added through the change API) are absent.
///
/// # Errors
///
/// The store's, when it cannot list its sessions.
pub fn labels(
    store: &dyn SessionStore,
    hits: &[Hit],
) -> Result<BTreeMap<String, SessionLabel>, scriptorium_session_dag::Error> {
    let wanted: BTreeSet<&str> =
        hits.iter().filter(|h| h.kind == HitKind::Source).map(|h| h.path.as_str()).collect();
    let mut found = BTreeMap::new();
    if wanted.is_empty() {
        return Ok(found);
    }
    for session in store.list_sessions(Page { offset: 0, limit: usize::MAX })? {
        let path = scriptorium_writer::archive_path(&session.id);
        if wanted.contains(path.as_str()) {
            let label =
                SessionLabel { id: session.id.0, title: session.title, project: session.project };
            found.insert(path, label);
        }
    }
    Ok(found)
}

/// [`labels`] with the session store of `home` (the one its configuration names, see
/// [`crate::sessions`]; none when no hit is a source record, or the embedded store's directory
/// does not exist). A store that cannot be opened or listed, or a configuration that cannot be
/// read, is logged and yields no labels: a search never fails for it, its records are named by
/// their archives.
pub fn labels_in(home: &Path, hits: &[Hit]) -> BTreeMap<String, SessionLabel> {
    if !hits.iter().any(|h| h.kind == HitKind::Source) {
        return BTreeMap::new();
    }
    let config = match crate::Config::load(home) {
        Ok(config) => config,
        Err(error) => {
            tracing::warn!(%error, "the configuration could not be read: records are named by their archives");
            return BTreeMap::new();
        }
    };
    labels_or_warn(match crate::sessions::Sessions::open_existing(home, &config) {
        Ok(Some(store)) => labels(&*store, hits),
        Ok(None) => Ok(BTreeMap::new()),
        Err(error) => Err(error),
    })
}

/// The labels, or none (logged) when the store failed.
pub(crate) fn labels_or_warn(
    found: Result<BTreeMap<String, SessionLabel>, scriptorium_session_dag::Error>,
) -> BTreeMap<String, SessionLabel> {
    found.unwrap_or_else(|error| {
        tracing::warn!(%error, "the session store could not be read: records are named by their archives");
        BTreeMap::new()
    })
}

/// One line that says where a hit comes from: a block's file and heading path; a record's
/// session title, project, speaker and date (`"Fix the flaky test" · scriptorium · Ana ·
/// 2024-03-15`). A record whose archive belongs to no known session is named by its provider
/// and thread.
pub fn origin(hit: &Hit, label: Option<&SessionLabel>) -> String {
    match hit.kind {
        HitKind::Block if hit.headings.is_empty() => hit.path.clone(),
        HitKind::Block => format!("{} › {}", hit.path, hit.headings.join(" › ")),
        HitKind::Source => {
            let mut parts: Vec<String> = Vec::new();
            match label {
                Some(label) => {
                    let title = label.title.as_deref().unwrap_or("untitled session");
                    parts.push(format!("\"{title}\""));
                    if let Some(project) = &label.project {
                        parts.push(project_name(project).to_owned());
                    }
                }
                None => parts.push(archive_name(&hit.path)),
            }
            let speaker = hit
                .speaker_display
                .as_deref()
                .or(hit.speaker_label.as_deref())
                .or(hit.speaker_id.as_deref());
            parts.extend(speaker.map(str::to_owned));
            parts.extend(hit.dates.first().cloned());
            parts.join(" · ")
        }
    }
}

/// A hit as JSON: its fields, and `session` (id, title, project) for a source record whose
/// session is known.
pub fn to_json(hit: &Hit, label: Option<&SessionLabel>) -> Value {
    let mut value = serde_json::to_value(hit).unwrap_or(Value::Null);
    if let Some(object) = value.as_object_mut() {
        if let Some(label) = label {
            object.insert("session".into(), serde_json::to_value(label).unwrap_or(Value::Null));
        }
        object.insert("origin".into(), Value::String(origin(hit, label)));
    }
    value
}

/// A project path's last component (`/srv/code/app` → `app`).
fn project_name(project: &str) -> &str {
    project.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next().unwrap_or(project)
}

/// `sources/<provider>/_v2/<thread>.md` → `<provider> session <thread>`, or `added through
/// <surface>` for a record a surface archived (`sources/mcp/…`, see
/// `docs/format.md#provenance`).
fn archive_name(path: &str) -> String {
    let rest = path.strip_prefix("sources/").unwrap_or(path);
    let (provider, file) = rest.split_once("/_v2/").unwrap_or(("", rest));
    let thread = file.strip_suffix(".md").unwrap_or(file);
    if let Some(surface) = scriptorium_topics_format::source::id::Surface::of_provider(provider) {
        return format!("added through {surface}");
    }
    if provider.is_empty() { thread.to_owned() } else { format!("{provider} session {thread}") }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use scriptorium_session_dag::{
        EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, Timestamp,
    };

    use super::*;

    fn source_hit(path: &str) -> Hit {
        Hit {
            kind: HitKind::Source,
            id: "openprogram/s/m1".into(),
            path: path.into(),
            anchor: "#source-1".into(),
            line: 3,
            headings: Vec::new(),
            snippet: String::new(),
            content: "[2024-03-15T10:00:00Z] Ana: hi".into(),
            score: 1.0,
            dates: vec!["2024-03-15".into()],
            refs: Vec::new(),
            speaker_id: Some("ana".into()),
            speaker_display: Some("Ana".into()),
            speaker_label: Some("Ana (ana)".into()),
            collapsed: Vec::new(),
        }
    }

    #[test]
    fn a_record_is_named_by_its_session_title_and_project() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store = EmbeddedStore::open(dir.path()).expect("a store");
        let id = SessionId("3f2a9c1e-0b7d-4c55-9e61-2d8f0a7b6c11".into());
        let node = Node {
            id: NodeId("n1".into()),
            parent: None,
            role: Role::User,
            kind: NodeKind::Message,
            speaker: None,
            content: "hello".into(),
            created_at: Timestamp(1_700_000_000_000),
            metadata: BTreeMap::new(),
            rewound: false,
        };
        store.append(&id, node).expect("append");
        store.set_title(&id, Some("Fix the flaky test".into())).expect("title");
        store.set_project(&id, Some("/srv/code/app".into())).expect("project");
        let hits = vec![
            source_hit(&scriptorium_writer::archive_path(&id)),
            source_hit("sources/claude-code/_v2/other.md"),
        ];
        let labels = labels(&store, &hits).expect("labels");
        assert_eq!(labels.len(), 1);
        let label = labels.get(&hits[0].path);
        assert_eq!(origin(&hits[0], label), "\"Fix the flaky test\" · app · Ana · 2024-03-15");
        let json = to_json(&hits[0], label);
        assert_eq!(json["session"]["title"], "Fix the flaky test");
        assert_eq!(json["session"]["project"], "/srv/code/app");
        assert_eq!(origin(&hits[1], None), "claude-code session other · Ana · 2024-03-15");
        let note = source_hit("sources/mcp/_v2/0123456789abcdef.md");
        assert_eq!(origin(&note, None), "added through mcp · Ana · 2024-03-15");
        assert!(to_json(&hits[1], None).get("session").is_none());
    }
}
