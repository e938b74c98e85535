//! The one rewrite of a session log: a forget ([`crate::SessionStore::forget`]).
//!
//! A log is append-only, so the bytes of a forgotten node would stay in every line that carries
//! them. A forget therefore writes the whole log again (`forget`): every record a reader
//! applies, in order, each on its own line, the lines that carry nothing forgotten copied byte
//! for byte, and:
//!
//! - the header first, with `rewrites` one more than the old header's;
//! - a `node` line of a forgotten node (its duplicates too) as [`crate::Node::forgotten`] leaves it;
//! - a `meta` line keeps, for a forgotten node, only the written markers (a patch left empty is
//!   dropped, a line left empty too);
//! - with the title erased, no `title` line;
//! - `batch` lines are dropped (their node lines stay, each a whole record: the new log is
//!   published whole, so it needs no batch to be all or nothing), and so are corrupt lines and
//!   a torn tail, which a reader skips anyway.
//!
//! Replaying the new log gives the state the old one gave, with the forgotten nodes erased.

use std::collections::HashSet;
use std::path::Path;

use crate::{MetadataBatch, NodeId, SessionId, is_marker_key};

use super::log::{self, Record};

/// The log `buf` (read whole, at `path`) with `targets` forgotten and, with `erase_title`, no
/// title; `None` when no line would change.
pub(crate) fn forget(
    buf: &[u8],
    path: &Path,
    session: &SessionId,
    targets: &HashSet<NodeId>,
    erase_title: bool,
) -> Option<Vec<u8>> {
    let scan = log::scan(buf, 0, path);
    let mut rewrites = 0;
    let mut changed = false;
    let mut body = Vec::with_capacity(buf.len());
    for scanned in scan.records {
        match scanned.record {
            Record::Session { rewrites: n, .. } => {
                rewrites = rewrites.max(n);
                continue;
            }
            Record::Node { node, head } if targets.contains(&node.id) => {
                let erased = node.forgotten();
                changed |= erased != node;
                log::write_node_line(&mut body, &erased, head);
                continue;
            }
            Record::Meta { patch } if patch.keys().any(|id| targets.contains(id)) => {
                let kept: MetadataBatch = patch
                    .iter()
                    .map(|(id, entries)| {
                        let mut entries = entries.clone();
                        if targets.contains(id) {
                            entries.retain(|key, _| is_marker_key(key));
                        }
                        (id.clone(), entries)
                    })
                    .filter(|(_, entries)| !entries.is_empty())
                    .collect();
                changed |= kept != patch;
                if !kept.is_empty() {
                    log::write_line(&mut body, &Record::Meta { patch: kept });
                }
                continue;
            }
            Record::Title { .. } if erase_title => {
                changed = true;
                continue;
            }
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
}
