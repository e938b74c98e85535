//! Tombstones (see `docs/format.md#tombstones`): a forgotten record's frame replaced by one that
//! keeps its source ID and anchor and says nothing else.
//!
//! ```text
//! <a id="source-d7e6772098d6b0d9"></a>
//! <!-- source-id:openprogram/sess-7f2a/u1 -->
//! <!-- record-lines:1 -->
//! [2024-03-15T10:00:00+08:00] forgotten: [FORGOTTEN]
//! ```
//!
//! Architecture Invariant: a tombstone is an ordinary v2 frame. The strict scan of either
//! implementation reads it without a fault, so a tombstoned archive still scans complete, the
//! frames after it stay trusted, appends still plan against it, and a citation of the
//! forgotten ID still resolves (to the tombstone) instead of dangling.

use std::collections::HashSet;

use super::{FORGOTTEN, ForgetError, Forgetting};
use crate::source::frame::{FrameParts, record_text, render_frame};
use crate::source::legacy::legacy_trusted_ids;
use crate::source::{Frame, is_v2_source_path, scan};

/// The speaker label of a tombstone's record.
pub const TOMBSTONE_LABEL: &str = "forgotten";

/// A tombstone's record text: `[<timestamp>] forgotten: [FORGOTTEN]`.
pub fn tombstone_record(timestamp: &str) -> String {
    record_text(timestamp, TOMBSTONE_LABEL, FORGOTTEN)
}

/// The tombstone of `source_id`, whose record was dated `timestamp`, as the archive holds it
/// (anchor, source-id, count and record lines, each ending in LF; frames are separated by one
/// more LF).
pub fn tombstone_frame(source_id: &str, timestamp: &str) -> String {
    render_frame(&FrameParts {
        source_id,
        speaker_marker: None,
        meta_token: None,
        record: &tombstone_record(timestamp),
    })
}

/// Whether a scanned frame is a tombstone: no speaker and no metadata line, and the one record
/// line `[<timestamp>] forgotten: [FORGOTTEN]`.
pub fn is_tombstone(frame: &Frame<'_>) -> bool {
    frame.speaker_marker.is_none()
        && frame.meta_token.is_none()
        && frame.record_lines == 1
        && frame.record.strip_prefix('[').and_then(|rest| rest.split_once(']')).is_some_and(
            |(_, rest)| {
                rest.strip_prefix(' ')
                    .and_then(|rest| rest.strip_prefix(TOMBSTONE_LABEL))
                    .and_then(|rest| rest.strip_prefix(": "))
                    == Some(FORGOTTEN)
            },
        )
}

/// The archive at `rel_path` (workspace-relative) with the frame of every source in `sources`
/// replaced by its tombstone, every other byte unchanged; `Ok(None)` when it holds none of them
/// (or only their tombstones already: a tombstone stays byte for byte, so this is idempotent).
///
/// The archive must scan complete ([`ForgetError::IncompleteArchive`] otherwise: nothing the
/// strict scan does not trust is rewritten). A legacy archive (not a v2 path) is never
/// rewritten: `Ok(None)` when no `source-id` comment or `d<n>-<t>` anchor in it names a
/// forgotten source, [`ForgetError::LegacyArchive`] when one does.
pub fn tombstone_archive(
    rel_path: &str,
    text: &str,
    sources: &HashSet<String>,
) -> Result<Option<String>, ForgetError> {
    if sources.is_empty() {
        return Ok(None);
    }
    if !is_v2_source_path(rel_path) {
        return if legacy_trusted_ids(text).iter().any(|id| sources.contains(id)) {
            Err(ForgetError::LegacyArchive { rel_path: rel_path.to_owned() })
        } else {
            Ok(None)
        };
    }
    let scanned = scan(rel_path, text);
    if !scanned.complete {
        return Err(ForgetError::IncompleteArchive {
            rel_path: rel_path.to_owned(),
            fault: scanned.fault.map(Box::new),
        });
    }
    let doomed: Vec<&Frame<'_>> = scanned
        .frames
        .iter()
        .filter(|frame| sources.contains(frame.source_id) && !is_tombstone(frame))
        .collect();
    if doomed.is_empty() {
        return Ok(None);
    }
    let replacements = doomed
        .into_iter()
        .map(|frame| (frame, tombstone_frame(frame.source_id, frame.timestamp())))
        .collect::<Vec<_>>();
    Ok(Some(replace_frames(text, &replacements)))
}

/// The source IDs of the frames of a complete v2 archive whose record holds the literal of
/// `forgetting` (tombstones excluded), in archive order: what `--matching` forgets in the
/// archive. Empty for a legacy path, an incomplete archive, or no literal.
pub fn sources_matching(rel_path: &str, text: &str, forgetting: &Forgetting) -> Vec<String> {
    let Some(literal) = forgetting.literal() else {
        return Vec::new();
    };
    if !is_v2_source_path(rel_path) || !text.contains(literal) {
        return Vec::new();
    }
    let scanned = scan(rel_path, text);
    if !scanned.complete {
        return Vec::new();
    }
    scanned
        .frames
        .iter()
        .filter(|frame| frame.record.contains(literal) && !is_tombstone(frame))
        .map(|frame| frame.source_id.to_owned())
        .collect()
}

/// The archive at `rel_path` with the tombstones of the forgotten records and of every record
/// holding the literal, scanned once: `None` when it is not a v2 archive that scans complete
/// (nothing to tombstone there), `Some(None)` when nothing changes.
pub(crate) fn forget_in_archive(
    rel_path: &str,
    text: &str,
    forgetting: &Forgetting,
) -> Option<Option<String>> {
    if !is_v2_source_path(rel_path) {
        return None;
    }
    if !forgetting.matches(text) && !forgetting.holds_archive(rel_path) {
        // Neither a forgotten record nor the literal can be in it.
        return Some(None);
    }
    let scanned = scan(rel_path, text);
    if !scanned.complete {
        return None;
    }
    let doomed: Vec<(&Frame<'_>, String)> = scanned
        .frames
        .iter()
        .filter(|frame| {
            !is_tombstone(frame)
                && (forgetting.forgets_source(frame.source_id) || forgetting.matches(frame.record))
        })
        .map(|frame| (frame, tombstone_frame(frame.source_id, frame.timestamp())))
        .collect();
    Some((!doomed.is_empty()).then(|| replace_frames(text, &doomed)))
}

/// `text` with each frame's bytes (anchor line to last record line) replaced by the rendered
/// frame given with it (whose final LF is the frame's own line end). `frames` are frames of a
/// scan of `text`, in file order.
pub(crate) fn replace_frames(text: &str, frames: &[(&Frame<'_>, String)]) -> String {
    let base = text.as_ptr() as usize;
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (frame, rendered) in frames {
        // The anchor is a slice of `text` right after `<a id="` at the start of its line; the
        // record is a slice of `text` ending where the frame's last line ends.
        let start = (frame.anchor.as_ptr() as usize - base).saturating_sub("<a id=\"".len());
        let end = frame.record.as_ptr() as usize - base + frame.record.len();
        out.push_str(&text[copied..start]);
        out.push_str(rendered.strip_suffix('\n').unwrap_or(rendered));
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{ArchiveRecord, render_archive};

    const PATH: &str = "sources/openprogram/_v2/t.md";

    fn archive(records: &[(&str, &str)]) -> String {
        let frames: Vec<String> = records
            .iter()
            .enumerate()
            .map(|(n, (message, content))| {
                let mut record =
                    ArchiveRecord::new("openprogram", "t", *message, n as u64, "user", *content);
                record.timestamp = Some(format!("2024-03-15T10:00:0{n}Z"));
                record.speaker_id = Some("owner/local".into());
                record.render()
            })
            .collect();
        render_archive(&frames)
    }

    fn set(ids: &[&str]) -> HashSet<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    #[test]
    fn a_tombstone_keeps_anchor_id_and_time_and_nothing_else() {
        assert_eq!(
            tombstone_frame("openprogram/sess-7f2a/u1", "2024-03-15T10:00:00+08:00"),
            "<a id=\"source-d7e6772098d6b0d9\"></a>\n\
             <!-- source-id:openprogram/sess-7f2a/u1 -->\n\
             <!-- record-lines:1 -->\n\
             [2024-03-15T10:00:00+08:00] forgotten: [FORGOTTEN]\n"
        );
    }

    #[test]
    fn only_the_named_frames_change() {
        let text = archive(&[("m1", "one"), ("m2", "two\nlines\n"), ("m3", "three")]);
        let out = tombstone_archive(PATH, &text, &set(&["openprogram/t/m2"])).unwrap().unwrap();
        let scanned = scan(PATH, &out);
        assert!(scanned.complete, "{out}");
        assert_eq!(scanned.frames.len(), 3);
        assert!(!is_tombstone(&scanned.frames[0]) && !is_tombstone(&scanned.frames[2]));
        assert!(is_tombstone(&scanned.frames[1]));
        assert_eq!(scanned.frames[1].timestamp(), "2024-03-15T10:00:01Z");
        let before = scan(PATH, &text);
        for k in [0, 2] {
            assert_eq!(scanned.frames[k].render(), before.frames[k].render());
        }
        assert!(!out.contains(": two") && !out.contains("\nlines\n"), "{out}");
        // Idempotent, and a no-op for sources the archive does not hold.
        assert_eq!(tombstone_archive(PATH, &out, &set(&["openprogram/t/m2"])), Ok(None));
        assert_eq!(tombstone_archive(PATH, &text, &set(&["openprogram/t/m9"])), Ok(None));
        assert_eq!(tombstone_archive(PATH, &text, &HashSet::new()), Ok(None));
    }

    #[test]
    fn the_last_frame_and_every_frame() {
        let text = archive(&[("m1", "one"), ("m2", "two")]);
        let all = set(&["openprogram/t/m1", "openprogram/t/m2"]);
        let out = tombstone_archive(PATH, &text, &all).unwrap().unwrap();
        assert_eq!(
            out,
            render_archive(&[
                tombstone_frame("openprogram/t/m1", "2024-03-15T10:00:00Z"),
                tombstone_frame("openprogram/t/m2", "2024-03-15T10:00:01Z"),
            ])
        );
    }

    #[test]
    fn untrusted_archives_are_never_rewritten() {
        let text = archive(&[("m1", "one")]);
        let torn = &text[..text.len() - 3];
        let err = tombstone_archive(PATH, torn, &set(&["openprogram/t/m1"])).unwrap_err();
        assert_eq!(err.code(), "FORGET_INCOMPLETE_ARCHIVE");
        let legacy =
            "# t\n\n<a id=\"source-x\"></a>\n<!-- source-id:openprogram/t/m1 -->\n[t] user: x\n";
        let err =
            tombstone_archive("sources/openprogram/t.md", legacy, &set(&["openprogram/t/m1"]));
        assert_eq!(err.map_err(|e| e.code()), Err("FORGET_LEGACY_ARCHIVE"));
        assert_eq!(
            tombstone_archive("sources/openprogram/t.md", legacy, &set(&["openprogram/t/m2"])),
            Ok(None)
        );
    }

    #[test]
    fn records_holding_the_literal_are_found() {
        let text = archive(&[("m1", "call Ana"), ("m2", "no one"), ("m3", "Ana again")]);
        let none: [&str; 0] = [];
        let forgetting = Forgetting::new(none, none, Some("Ana")).unwrap();
        assert_eq!(
            sources_matching(PATH, &text, &forgetting),
            ["openprogram/t/m1", "openprogram/t/m3"]
        );
    }
}
