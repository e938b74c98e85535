//! Rewriting the records of a source archive (see
//! `docs/format.md#rewriting-texts-in-place-redact`).
//!
//! Architecture Invariant: in a v2 archive only the message of a record changes. Each frame is
//! rendered again from its own parts with the new record text, so its `record-lines` count is
//! the new one and its anchor, source-id, speaker and metadata lines are what they were; the
//! bytes between frames are copied. Tombstones are never mapped.

use super::{Map, RewriteError, map_lines, map_text_lines};
use crate::forget::{is_tombstone, replace_frames};
use crate::source::legacy::{legacy_headers, legacy_trusted_ids};
use crate::source::scan::record_content_start;
use crate::source::{Frame, FrameParts, is_v2_source_path, render_frame, scan};

/// The archive at `rel_path` (workspace-relative) with the message of every record (what
/// follows `[<timestamp>] <label>: `, all its lines) mapped by `map` as one text; `Ok(None)`
/// when nothing changes.
///
/// - A v2 archive must scan complete ([`RewriteError::IncompleteArchive`] otherwise, unless
///   mapping it line by line would change nothing: then it is `Ok(None)`). Each
///   changed frame is rendered again (its `record-lines` count updated); the marker, the
///   anchor, source-id, speaker and metadata lines, the timestamps and labels, the
///   [tombstones](crate::forget::is_tombstone) and the bytes between frames stay. The result
///   scans complete with the same source IDs in the same order
///   ([`RewriteError::ArchiveStructure`] when a mapped record would not fit a count).
/// - A legacy archive (any other path: `sources/<provider>/<thread>.md`, `sources/D<n>.md`) has
///   no length framing; it is mapped line by line (the line count stays): the title `# …`, and
///   every line holding `<a id="` or `<!-- source-id:` stay, a record line `[<ts>] <label>: …`
///   has its text after the label mapped, any other line is mapped whole. When that would change
///   what its readers key on (the citable anchor and source-id pairs, the source IDs that vouch
///   for trust), it is [`RewriteError::LegacyArchive`].
pub fn rewrite_archive(
    rel_path: &str,
    text: &str,
    map: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, RewriteError> {
    rewrite(rel_path, text, Map(map))
}

fn rewrite(rel_path: &str, text: &str, map: Map<'_>) -> Result<Option<String>, RewriteError> {
    if !is_v2_source_path(rel_path) {
        return legacy(rel_path, text, map);
    }
    let scanned = scan(rel_path, text);
    if !scanned.complete {
        if map_text_lines(text, map).is_none() {
            // Nothing in it to rewrite (line by line, a `<private>` opened anywhere would show).
            return Ok(None);
        }
        return Err(RewriteError::IncompleteArchive {
            rel_path: rel_path.to_owned(),
            fault: scanned.fault.map(Box::new),
        });
    }
    let Some(new) = frames(text, &scanned.frames, map) else { return Ok(None) };
    let after = scan(rel_path, &new);
    let same = after.complete
        && after.frames.len() == scanned.frames.len()
        && after.frames.iter().zip(&scanned.frames).all(|(a, b)| a.source_id == b.source_id);
    if !same {
        return Err(RewriteError::ArchiveStructure { rel_path: rel_path.to_owned() });
    }
    Ok(Some(new))
}

/// [`rewrite_archive`] as a view of an old commit has it: a v2 archive that does not scan
/// complete has its valid frames rewritten and the rest, which no reader trusts, mapped line by
/// line; so has an archive [`rewrite_archive`] refuses.
pub(super) fn rewrite_view(rel_path: &str, text: &str, map: Map<'_>) -> Option<String> {
    if is_v2_source_path(rel_path) {
        let scanned = scan(rel_path, text);
        if !scanned.complete {
            // The valid frames end where the last one's record does; the fault is after.
            let tail = scanned.frames.last().map_or(0, |frame| {
                frame.record.as_ptr() as usize - text.as_ptr() as usize + frame.record.len()
            });
            let (head, rest) = text.split_at(tail);
            let new_head = frames(head, &scanned.frames, map);
            let new_rest = map_text_lines(rest, map);
            if new_head.is_none() && new_rest.is_none() {
                return None;
            }
            return Some(
                new_head.unwrap_or_else(|| head.to_owned()) + new_rest.as_deref().unwrap_or(rest),
            );
        }
    }
    rewrite(rel_path, text, map).unwrap_or_else(|_| map_text_lines(text, map))
}

/// `text` with the record of each frame of `frames` (a scan of `text`, or of a prefix of it)
/// mapped and the frame rendered again; `None` when no record changes.
fn frames(text: &str, frames: &[Frame<'_>], map: Map<'_>) -> Option<String> {
    let replacements: Vec<(&Frame<'_>, String)> = frames
        .iter()
        .filter(|frame| !is_tombstone(frame))
        .filter_map(|frame| {
            // Every scanned frame's first record line is a header.
            let at = record_content_start(frame.record)?;
            let content = map.apply(&frame.record[at..])?;
            let record = format!("{}{content}", &frame.record[..at]);
            Some((frame, render_frame(&FrameParts { record: &record, ..frame.parts() })))
        })
        .collect();
    (!replacements.is_empty()).then(|| replace_frames(text, &replacements))
}

/// A legacy archive mapped line by line (see [`rewrite_archive`]).
fn legacy(rel_path: &str, text: &str, map: Map<'_>) -> Result<Option<String>, RewriteError> {
    let new = map_lines(text, &mut |index, line| {
        let header = line.contains("<a id=\"") || line.contains("<!-- source-id:");
        if header || (index == 0 && line.starts_with("# ")) {
            return None;
        }
        match record_content_start(line) {
            Some(at) => map.apply(&line[at..]).map(|content| format!("{}{content}", &line[..at])),
            None => map.apply(line),
        }
    });
    let Some(new) = new else { return Ok(None) };
    if legacy_headers(rel_path, &new) != legacy_headers(rel_path, text)
        || legacy_trusted_ids(&new) != legacy_trusted_ids(text)
    {
        return Err(RewriteError::LegacyArchive { rel_path: rel_path.to_owned() });
    }
    Ok(Some(new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forget::tombstone_frame;
    use crate::source::{ArchiveRecord, render_archive};

    const PATH: &str = "sources/openprogram/_v2/t.md";

    fn frame(message: &str, content: &str) -> String {
        let mut record = ArchiveRecord::new("openprogram", "t", message, 1, "user", content);
        record.timestamp = Some("2024-03-15T10:00:00Z".into());
        record.speaker_id = Some("owner/local".into());
        record.render()
    }

    fn cut(text: &str) -> Option<String> {
        let out = match text.find("<private>") {
            Some(at) => text[..at].to_owned(),
            None => text.to_owned(),
        };
        let out = out.replace("KEY", "[REDACTED:k]");
        (out != text).then_some(out)
    }

    #[test]
    fn records_are_mapped_and_counted_again() {
        let text = render_archive(&[
            frame("m1", "a KEY\nline <private>two\nthree\n"),
            tombstone_frame("openprogram/t/m2", "t"),
            frame("m3", "plain"),
        ]);
        let out = rewrite_archive(PATH, &text, &cut).expect("complete").expect("changed");
        assert_eq!(
            out,
            render_archive(&[
                frame("m1", "a [REDACTED:k]\nline "),
                tombstone_frame("openprogram/t/m2", "t"),
                frame("m3", "plain"),
            ])
        );
        assert_eq!(rewrite_archive(PATH, &out, &cut), Ok(None));
    }

    #[test]
    fn an_incomplete_archive_is_refused_and_its_tail_mapped_by_line() {
        let text = render_archive(&[frame("m1", "KEY <private>x\ny"), frame("m2", "KEY")]);
        let torn = &text[..text.len() - 1];
        assert_eq!(
            rewrite_archive(PATH, torn, &cut).map_err(|e| e.code()),
            Err("REWRITE_INCOMPLETE_ARCHIVE")
        );
        assert_eq!(
            rewrite_archive(PATH, &text[..text.len() - 1].replace("KEY", "k"), &|_| None),
            Ok(None)
        );
        let out = rewrite_view(PATH, torn, Map(&cut)).expect("changed");
        let first = render_archive(&[frame("m1", "[REDACTED:k] ")]);
        assert!(out.starts_with(&first), "{out}");
        assert!(!out.contains("KEY") && !out.contains("\ny\n"), "{out}");
    }

    #[test]
    fn legacy_lines_keep_their_headers() {
        let text = "# t\n\n<a id=\"source-x\"></a>\n<!-- source-id:openprogram/t/m1 -->\n[t] user: KEY <private>x\nmore KEY\n";
        assert_eq!(
            rewrite_archive("sources/openprogram/t.md", text, &cut).expect("safe").as_deref(),
            Some(
                "# t\n\n<a id=\"source-x\"></a>\n<!-- source-id:openprogram/t/m1 -->\n[t] user: [REDACTED:k] \nmore [REDACTED:k]\n"
            )
        );
        // A source-id comment that runs on into a text line.
        let text = "# t\n\n<!-- source-id:openprogram/t/m1\nKEY -->\n";
        assert_eq!(
            rewrite_archive("sources/openprogram/t.md", text, &cut).map_err(|e| e.code()),
            Err("REWRITE_LEGACY_ARCHIVE")
        );
    }
}
