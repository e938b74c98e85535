//! The rewrites of a session log: a forget ([`crate::SessionStore::forget`]) and a rewrite of
//! texts ([`crate::SessionStore::rewrite_texts`]).
//!
//! A log is append-only, so the bytes a rewrite takes out would stay in every line that carries
//! them. A rewrite therefore writes the whole log again (`rewrite`): every record a reader
//! applies, in order, each on its own line, the lines its `Edit` leaves alone copied byte for
//! byte, and:
//!
//! - the header first, with `rewrites` one more than the old header's;
//! - a `node` line (a duplicate, which a reader skips, too) as `Edit::node` leaves it;
//! - a `meta` line as `Edit::meta` leaves it (a patch left empty is dropped, a line left
//!   empty too);
//! - a `title` line (a superseded one too) as `Edit::title` leaves it;
//! - `batch` lines are dropped (their node lines stay, each a whole record: the new log is
//!   published whole, so it needs no batch to be all or nothing), and so are corrupt lines and
//!   a torn tail, which a reader skips anyway.
//!
//! Replaying the new log gives the state the old one gave, with the edit applied. The two
//! edits: `Forget` (the nodes erased as [`crate::Node::forgotten`] leaves them, and the
//! titles) and `MapTexts` (the contents and titles a caller's map changes).

use std::collections::HashSet;
use std::path::Path;

use crate::{MetadataBatch, Node, NodeId, SessionId, is_marker_key};

use super::log::{self, Record};

/// What becomes of a `title` line in a rewrite.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TitleLine {
    /// It stays as it is.
    Keep,
    /// It goes.
    Drop,
    /// It holds this title instead.
    Set(String),
}

/// What a rewrite changes, record by record: the one part the rewrites do not share. Each
/// method sees a record as its line holds it; what it returns equal to that record leaves the
/// line as it is.
pub(crate) trait Edit {
    /// The node a `node` line holds in the new log; `None` keeps the line.
    fn node(&mut self, node: &Node) -> Option<Node>;

    /// The patch a `meta` line holds in the new log (an empty one drops the line); `None`
    /// keeps the line.
    fn meta(&mut self, patch: &MetadataBatch) -> Option<MetadataBatch> {
        let _ = patch;
        None
    }

    /// What becomes of a `title` line holding `title`.
    fn title(&mut self, title: Option<&str>) -> TitleLine {
        let _ = title;
        TitleLine::Keep
    }
}

/// The log `buf` (read whole, at `path`) with `edit` applied; `None` when no line would
/// change.
pub(crate) fn rewrite(
    buf: &[u8],
    path: &Path,
    session: &SessionId,
    edit: &mut dyn Edit,
) -> Option<Vec<u8>> {
    let scan = log::scan(buf, 0, path);
    let mut rewrites = 0;
    let mut changed = false;
    let mut body = Vec::with_capacity(buf.len());
    for scanned in scan.records {
        match &scanned.record {
            Record::Session { rewrites: n, .. } => {
                rewrites = rewrites.max(*n);
                continue;
            }
            Record::Node { node, head } => {
                if let Some(new) = edit.node(node).filter(|new| new != node) {
                    changed = true;
                    log::write_node_line(&mut body, &new, *head);
                    continue;
                }
            }
            Record::Meta { patch } => {
                if let Some(kept) = edit.meta(patch).filter(|kept| kept != patch) {
                    changed = true;
                    let kept: MetadataBatch =
                        kept.into_iter().filter(|(_, entries)| !entries.is_empty()).collect();
                    if !kept.is_empty() {
                        log::write_line(&mut body, &Record::Meta { patch: kept });
                    }
                    continue;
                }
            }
            Record::Title { title } => match edit.title(title.as_deref()) {
                TitleLine::Keep => {}
                TitleLine::Drop => {
                    changed = true;
                    continue;
                }
                TitleLine::Set(new) if title.as_ref() == Some(&new) => {}
                TitleLine::Set(new) => {
                    changed = true;
                    log::write_line(&mut body, &Record::Title { title: Some(new) });
                    continue;
                }
            },
            _ => {}
        }
        body.extend_from_slice(&buf[scanned.span]);
        body.push(b'\n');
    }
    if !changed {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() + 64);
    let header =
        Record::Session { v: log::FORMAT_VERSION, id: session.clone(), rewrites: rewrites + 1 };
    log::write_line(&mut out, &header);
    out.extend_from_slice(&body);
    Some(out)
}

/// A forget: the `targets` erased (their metadata patches keep only the written markers) and,
/// with `erase_title`, no title line.
pub(crate) struct Forget {
    /// The nodes to erase.
    pub(crate) targets: HashSet<NodeId>,
    /// Whether every title goes.
    pub(crate) erase_title: bool,
}

impl Edit for Forget {
    fn node(&mut self, node: &Node) -> Option<Node> {
        self.targets.contains(&node.id).then(|| node.forgotten())
    }

    fn meta(&mut self, patch: &MetadataBatch) -> Option<MetadataBatch> {
        if !patch.keys().any(|id| self.targets.contains(id)) {
            return None;
        }
        let kept = patch
            .iter()
            .map(|(id, entries)| {
                let mut entries = entries.clone();
                if self.targets.contains(id) {
                    entries.retain(|key, _| is_marker_key(key));
                }
                (id.clone(), entries)
            })
            .filter(|(_, entries)| !entries.is_empty())
            .collect();
        Some(kept)
    }

    fn title(&mut self, _: Option<&str>) -> TitleLine {
        if self.erase_title { TitleLine::Drop } else { TitleLine::Keep }
    }
}

/// A rewrite of texts: every non-empty content and title goes through `map`; what it changes
/// is recorded in `nodes` and `title`.
pub(crate) struct MapTexts<'a> {
    map: &'a mut dyn FnMut(&str) -> Option<String>,
    /// The nodes whose content (in some line) changed.
    pub(crate) nodes: HashSet<NodeId>,
    /// Whether a title (in some line) changed.
    pub(crate) title: bool,
}

impl<'a> MapTexts<'a> {
    pub(crate) fn new(map: &'a mut dyn FnMut(&str) -> Option<String>) -> MapTexts<'a> {
        MapTexts { map, nodes: HashSet::new(), title: false }
    }

    /// What `map` makes of `text`, when it is not empty and `map` changes it.
    fn apply(&mut self, text: &str) -> Option<String> {
        if text.is_empty() {
            return None;
        }
        (self.map)(text).filter(|new| new != text)
    }
}

impl Edit for MapTexts<'_> {
    fn node(&mut self, node: &Node) -> Option<Node> {
        let content = self.apply(&node.content)?;
        self.nodes.insert(node.id.clone());
        Some(Node { content, ..node.clone() })
    }

    fn title(&mut self, title: Option<&str>) -> TitleLine {
        match title.and_then(|title| self.apply(title)) {
            Some(new) => {
                self.title = true;
                TitleLine::Set(new)
            }
            None => TitleLine::Keep,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{Node, NodeKind, Role, Speaker, Timestamp};

    fn node(id: &str, content: &str) -> Node {
        Node {
            id: NodeId(id.to_owned()),
            parent: None,
            role: Role::User,
            kind: NodeKind::Message,
            speaker: Some(Speaker { id: "owner/local".into(), display: "Ana".into() }),
            content: content.to_owned(),
            created_at: Timestamp(1),
            metadata: BTreeMap::from([("cwd".to_owned(), format!("/srv/{content}"))]),
            rewound: false,
        }
    }

    fn forget(
        buf: &[u8],
        path: &Path,
        session: &SessionId,
        targets: &HashSet<NodeId>,
        erase_title: bool,
    ) -> Option<Vec<u8>> {
        rewrite(buf, path, session, &mut Forget { targets: targets.clone(), erase_title })
    }

    fn log_of(records: &[Record]) -> Vec<u8> {
        let mut out = Vec::new();
        for record in records {
            log::write_line(&mut out, record);
        }
        out
    }

    #[test]
    fn every_line_that_carries_a_forgotten_node_is_erased_and_the_rest_is_copied() {
        let s = SessionId("s".into());
        let patch = |id: &str, note: &str| {
            MetadataBatch::from([(
                NodeId(id.to_owned()),
                BTreeMap::from([
                    ("memory_written_scriptorium".to_owned(), "w-1".to_owned()),
                    ("note".to_owned(), note.to_owned()),
                ]),
            )])
        };
        let mut buf = log_of(&[
            Record::Session { v: 1, id: s.clone(), rewrites: 0 },
            Record::Batch { n: 2 },
            Record::Node { node: node("a", "secret a"), head: false },
            Record::Node { node: node("b", "kept b"), head: true },
            Record::Meta { patch: patch("a", "secret note") },
            Record::Meta { patch: patch("b", "kept note") },
            Record::Title { title: Some("secret title".into()) },
        ]);
        buf.extend_from_slice(b"{\"op\":\"node\",\"node\":{\"content\":\"secret torn");
        let targets = HashSet::from([NodeId("a".into())]);
        let out = forget(&buf, Path::new("x"), &s, &targets, true).expect("changed");
        let text = String::from_utf8(out.clone()).expect("utf-8");
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains("/srv/kept b") && text.contains("kept note"), "b is kept: {text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"{"op":"session","v":1,"id":"s","rewrites":1}"#);
        assert_eq!(lines.len(), 5, "header, a, b, two metadata patches: {text}");
        // Forgetting again changes nothing, even with the title.
        assert_eq!(forget(&out, Path::new("x"), &s, &targets, true), None);
        let again = forget(&out, Path::new("x"), &s, &HashSet::from([NodeId("b".into())]), false)
            .expect("b changes");
        assert!(
            String::from_utf8(again)
                .expect("utf-8")
                .starts_with(r#"{"op":"session","v":1,"id":"s","rewrites":2}"#)
        );
    }

    #[test]
    fn a_rewrite_of_texts_maps_every_content_and_title_and_copies_every_other_line() {
        let s = SessionId("s".into());
        let plain =
            |id: &str, content: &str| Node { metadata: BTreeMap::new(), ..node(id, content) };
        let mut forgotten = node("f", "").forgotten();
        forgotten.metadata.insert("note".into(), "secret in metadata".into());
        let lines = [
            Record::Session { v: 1, id: s.clone(), rewrites: 2 },
            Record::Batch { n: 2 },
            Record::Node { node: plain("a", "a secret"), head: false },
            Record::Node { node: plain("b", "kept b"), head: true },
            Record::Node { node: forgotten, head: false },
            Record::Title { title: Some("first secret title".into()) },
            Record::Meta {
                patch: MetadataBatch::from([(
                    NodeId("a".into()),
                    BTreeMap::from([("note".to_owned(), "secret note".to_owned())]),
                )]),
            },
            Record::Title { title: None },
            // A duplicate of `a` (a reader skips it): it holds the text all the same.
            Record::Node { node: plain("a", "another secret"), head: false },
            Record::Title { title: Some("second secret title".into()) },
        ];
        let buf = log_of(&lines);
        let mut seen = Vec::new();
        let mut map = |text: &str| {
            seen.push(text.to_owned());
            text.contains("secret").then(|| text.replace("secret", "[REDACTED]"))
        };
        let mut edit = MapTexts::new(&mut map);
        let out = rewrite(&buf, Path::new("x"), &s, &mut edit).expect("changed");
        let (nodes, title) = (edit.nodes, edit.title);
        assert_eq!((nodes, title), (HashSet::from([NodeId("a".into())]), true));
        seen.sort();
        let expected =
            ["a secret", "another secret", "first secret title", "kept b", "second secret title"];
        assert_eq!(seen, expected, "every non-empty text once, no metadata");
        let text = String::from_utf8(out.clone()).expect("utf-8");
        let old = String::from_utf8(buf).expect("utf-8");
        let (old, new): (Vec<&str>, Vec<&str>) = (old.lines().collect(), text.lines().collect());
        assert_eq!(new[0], r#"{"op":"session","v":1,"id":"s","rewrites":3}"#);
        assert_eq!(new.len(), old.len() - 1, "the batch line goes: {text}");
        for line in &new[1..] {
            let kept = old.contains(line);
            let mapped = line.contains("[REDACTED]");
            assert!(kept != mapped, "copied byte for byte, or mapped: {line}");
        }
        assert_eq!(
            new.iter().filter(|l| l.contains("secret")).collect::<Vec<_>>(),
            [&old[4], &old[6]],
            "only metadata still holds the text (the forgotten node's note, the patch)"
        );
        // Mapping again changes nothing: the same text back is no change either.
        let mut again = |text: &str| Some(text.replace("secret", "[REDACTED]"));
        assert_eq!(rewrite(&out, Path::new("x"), &s, &mut MapTexts::new(&mut again)), None);
    }
}
