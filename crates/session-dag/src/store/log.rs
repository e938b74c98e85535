//! The session log format: one JSON object per line, and the tolerant scanner that reads it.
//!
//! Records (field `op`):
//!
//! | `op` | fields | meaning |
//! |---|---|---|
//! | `session` | `v` (1), `id`, `rewrites` (absent when 0) | header, the first line of every log; `rewrites` counts the rewrites of the log (forgets, rewrites of texts) |
//! | `node` | `node` (a [`Node`]), `head` | a node was appended; `head: true` moves the head to it |
//! | `batch` | `n` | the next `n` lines are `node` records written by one `append_batch`; they count only when all `n` are present |
//! | `head` | `node`, `at` | the head moved at `at` (ms) |
//! | `rewind` | `node`, `at` | the node was rewound at `at` (ms) |
//! | `meta` | `patch` (`{node: {key: value}}`) | metadata merged into nodes |
//! | `title` | `title` (string or null) | the session title changed |
//! | `project` | `project` (string or null) | the session's project changed |
//!
//! Unknown fields are ignored, so later versions may add some.
//!
//! A log only grows, except when a forget or a rewrite of texts writes it again whole (see [`super::rewrite`]): the
//! rewritten log's header carries the next `rewrites` count, so a reader that remembers the
//! header line it read knows whether the bytes after its offset continue what it read.

use std::ops::Range;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{MetadataBatch, Node, NodeId, SessionId, Timestamp};

use super::{LoadWarning, WarningKind};

/// The version written in the header record.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// One log record.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Record {
    /// The header.
    Session {
        /// The format version.
        v: u32,
        /// The session ID.
        id: SessionId,
        /// How many times a rewrite (a forget, a rewrite of texts) wrote the log again
        /// (absent: never).
        #[serde(default, skip_serializing_if = "is_zero")]
        rewrites: u64,
    },
    /// A node append.
    Node {
        /// The node.
        node: Node,
        /// Whether the head moved to it.
        #[serde(default)]
        head: bool,
    },
    /// The start of a batch of `n` node records.
    Batch {
        /// How many node records follow.
        n: usize,
    },
    /// A head move.
    Head {
        /// The new head.
        node: NodeId,
        /// When it moved.
        at: Timestamp,
    },
    /// A rewind.
    Rewind {
        /// The rewound node.
        node: NodeId,
        /// When.
        at: Timestamp,
    },
    /// A metadata merge.
    Meta {
        /// The patches.
        patch: MetadataBatch,
    },
    /// A title change.
    Title {
        /// The new title.
        title: Option<String>,
    },
    /// A project change.
    Project {
        /// The new project.
        project: Option<String>,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Serializes `record` as one line (with its `\n`) onto `out`.
pub(crate) fn write_line(out: &mut Vec<u8>, record: &Record) {
    serde_json::to_writer(&mut *out, record).expect("log records are strings, numbers and maps");
    out.push(b'\n');
}

/// Serializes a `node` record without cloning the node.
pub(crate) fn write_node_line(out: &mut Vec<u8>, node: &Node, head: bool) {
    out.extend_from_slice(if head {
        b"{\"op\":\"node\",\"head\":true,\"node\":"
    } else {
        b"{\"op\":\"node\",\"head\":false,\"node\":"
    });
    serde_json::to_writer(&mut *out, node).expect("a node is strings, numbers and maps");
    out.extend_from_slice(b"}\n");
}

/// One record [`scan`] found.
#[derive(Debug)]
pub(crate) struct Scanned {
    /// Its 1-based line number.
    pub(crate) line: usize,
    /// Its line's bytes in the scanned buffer, without the line end.
    pub(crate) span: Range<usize>,
    /// The record.
    pub(crate) record: Record,
}

/// What [`scan`] found in a byte range of a log.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The records to apply, in order (a batch's header is not one: its node records are).
    pub(crate) records: Vec<Scanned>,
    /// How many bytes form complete, settled lines (the rest is a torn or garbage tail).
    pub(crate) consumed: usize,
    /// How many lines `consumed` covers.
    pub(crate) lines: usize,
    /// What was skipped, and why.
    pub(crate) warnings: Vec<LoadWarning>,
}

/// A batch being read: (records so far, lines still expected, line of its header).
type OpenBatch = (Vec<Scanned>, usize, usize);

/// Scans `buf`, which starts at line `first_line + 1` of the log at `path`.
///
/// Never fails: a line that does not parse is reported and skipped when more lines follow it
/// (a corrupt middle line), and left unconsumed when it is the last line (a torn or garbage tail
/// from a crash; the next writer truncates it). A `batch` counts only when all its node lines
/// are present; an incomplete batch at the end is left unconsumed as a whole.
pub(crate) fn scan(buf: &[u8], first_line: usize, path: &Path) -> Scan {
    let mut scan = Scan::default();
    let mut pos = 0;
    let mut line_no = first_line;
    let mut batch: Option<OpenBatch> = None;
    let warn = |scan: &mut Scan, line: usize, kind: WarningKind, message: String| {
        scan.warnings.push(LoadWarning { path: path.to_path_buf(), line, kind, message });
    };
    loop {
        let Some(newline) = buf[pos..].iter().position(|&b| b == b'\n') else {
            if pos < buf.len() {
                let message =
                    format!("torn last line ({} bytes without a newline) skipped", buf.len() - pos);
                warn(&mut scan, line_no + 1, WarningKind::TornTail, message);
            }
            break;
        };
        let line = &buf[pos..pos + newline];
        let next = pos + newline + 1;
        line_no += 1;
        let is_last = next == buf.len();
        let parsed = serde_json::from_slice::<Record>(line);
        let span = pos..pos + newline;
        match parsed {
            Err(err) if is_last => {
                let message = format!("unreadable last line skipped: {err}");
                warn(&mut scan, line_no, WarningKind::TornTail, message);
                break;
            }
            Err(err) => {
                let message = format!("corrupt line skipped: {err}");
                warn(&mut scan, line_no, WarningKind::CorruptLine, message);
                if let Some((_, expected, _)) = batch.as_mut() {
                    *expected -= 1;
                }
            }
            Ok(record @ Record::Node { .. }) if batch.is_some() => {
                if let Some((records, expected, _)) = batch.as_mut() {
                    records.push(Scanned { line: line_no, span, record });
                    *expected -= 1;
                }
            }
            Ok(record) => {
                if let Some((records, _, header)) = batch.take() {
                    let message = format!(
                        "batch started at line {header} is interrupted by another record; \
                         its {} node(s) are kept",
                        records.len()
                    );
                    warn(&mut scan, line_no, WarningKind::InvalidRecord, message);
                    scan.records.extend(records);
                }
                match record {
                    Record::Batch { n } if n > 0 => batch = Some((Vec::new(), n, line_no)),
                    Record::Batch { .. } => {}
                    record => scan.records.push(Scanned { line: line_no, span, record }),
                }
            }
        }
        if batch.as_ref().is_some_and(|(_, expected, _)| *expected == 0)
            && let Some((records, _, _)) = batch.take()
        {
            scan.records.extend(records);
        }
        if batch.is_none() {
            scan.consumed = next;
            scan.lines = line_no - first_line;
        }
        pos = next;
    }
    if let Some((records, expected, header)) = batch {
        let message = format!(
            "incomplete batch at the end (line {header}: {} node(s) present, {expected} missing) \
             skipped",
            records.len()
        );
        warn(&mut scan, header, WarningKind::IncompleteBatch, message);
    }
    scan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_line(id: &str) -> Vec<u8> {
        let node = Node {
            id: NodeId(id.to_owned()),
            parent: None,
            role: crate::Role::User,
            kind: crate::NodeKind::Message,
            speaker: None,
            content: "hi\nthere".to_owned(),
            created_at: Timestamp(1),
            metadata: Default::default(),
            rewound: false,
        };
        let mut out = Vec::new();
        write_node_line(&mut out, &node, false);
        out
    }

    #[test]
    fn node_lines_round_trip_through_record() {
        let line = node_line("a");
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let record: Record = serde_json::from_slice(&line).expect("parses");
        assert!(matches!(record, Record::Node { head: false, node } if node.id.0 == "a"));
    }

    #[test]
    fn batch_counts_only_when_complete() {
        let mut buf = b"{\"op\":\"batch\",\"n\":2}\n".to_vec();
        buf.extend(node_line("a"));
        let partial = scan(&buf, 0, Path::new("x"));
        assert_eq!((partial.records.len(), partial.consumed), (0, 0));
        assert_eq!(partial.warnings[0].kind, WarningKind::IncompleteBatch);
        buf.extend(node_line("b"));
        let full = scan(&buf, 0, Path::new("x"));
        assert_eq!((full.records.len(), full.consumed, full.lines), (2, buf.len(), 3));
        assert!(full.warnings.is_empty());
    }

    #[test]
    fn corrupt_middle_line_is_reported_with_its_number() {
        let mut buf = node_line("a");
        buf.extend_from_slice(b"{not json\n");
        buf.extend(node_line("b"));
        let scanned = scan(&buf, 10, Path::new("x"));
        assert_eq!(scanned.records.len(), 2);
        assert_eq!(scanned.warnings.len(), 1);
        assert_eq!(scanned.warnings[0].line, 12);
        assert_eq!(scanned.warnings[0].kind, WarningKind::CorruptLine);
        assert_eq!(scanned.consumed, buf.len());
    }

    #[test]
    fn garbage_last_line_is_left_unconsumed() {
        let mut buf = node_line("a");
        let good = buf.len();
        buf.extend_from_slice(b"\0\0\0garbage\n");
        let scanned = scan(&buf, 0, Path::new("x"));
        assert_eq!((scanned.records.len(), scanned.consumed), (1, good));
        assert_eq!(scanned.warnings[0].kind, WarningKind::TornTail);
    }
}
