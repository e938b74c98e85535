//! What the rewrite tests of both binaries share: a text mapper that behaves like
//! `scriptorium-redact`'s (every `<private>…</private>` span goes, an unclosed `<private>` takes
//! the rest of its input, then the planted secret [`TOKEN`] becomes `[REDACTED:x]`; idempotent,
//! like the real one), and the planting of secrets and private spans into real files.

use std::collections::BTreeMap;

use scriptorium_topics_format::forget::is_tombstone;
use scriptorium_topics_format::source::{FrameParts, render_archive, render_frame, scan};
use scriptorium_topics_format::topic::{Document, LineKind};

/// The planted secret.
pub(crate) const TOKEN: &str = "sk-PLANTED0secret";

/// The word every planted private span holds.
pub(crate) const HIDDEN: &str = "hidden";

/// The mapper: `None` when it changes nothing.
pub(crate) fn redact(text: &str) -> Option<String> {
    let mut out = text.to_owned();
    while let Some(open) = out.find("<private>") {
        match out[open..].find("</private>") {
            Some(close) => out.replace_range(open..open + close + "</private>".len(), ""),
            None => out.truncate(open),
        }
    }
    let out = out.replace(TOKEN, "[REDACTED:x]");
    (out != text).then_some(out)
}

/// Whether `text` holds anything planted.
pub(crate) fn holds_planted(text: &str) -> bool {
    text.contains(TOKEN) || text.contains(HIDDEN) || text.contains("<private>")
}

/// A record's message with something planted, by the frame's index: the secret, a private
/// span over lines, or an unclosed span over lines.
pub(crate) fn plant_record(index: usize, content: &str) -> String {
    match index % 3 {
        0 => format!("{content} {TOKEN}"),
        1 => format!("{content}<private>{HIDDEN}\nlines</private>"),
        _ => format!("{content}<private>{HIDDEN}\nrest\n"),
    }
}

/// What the mapper makes of [`plant_record`].
pub(crate) fn planted_record_redacted(index: usize, content: &str) -> String {
    match index % 3 {
        0 => format!("{content} [REDACTED:x]"),
        _ => content.to_owned(),
    }
}

/// The complete v2 archive `text` (at `rel_path`) with `edit` applied to the message of every
/// frame that is not a tombstone (by frame index), rendered as the archive writes it.
pub(crate) fn edit_records(
    rel_path: &str,
    text: &str,
    edit: &dyn Fn(usize, &str) -> String,
) -> String {
    let scanned = scan(rel_path, text);
    assert!(scanned.complete, "{rel_path} scans complete");
    let frames: Vec<String> = scanned
        .frames
        .iter()
        .enumerate()
        .map(|(i, frame)| {
            if is_tombstone(frame) {
                return frame.render();
            }
            let content = frame.content().expect("a canonical record header");
            let header = &frame.record[..frame.record.len() - content.len()];
            let record = format!("{header}{}", edit(i, content));
            render_frame(&FrameParts { record: &record, ..frame.parts() })
        })
        .collect();
    render_archive(&frames)
}

/// A topic file with something planted in most of its text: by block paragraph `k`, the secret
/// (`k % 4 == 0`), a private span (`1`), an unclosed `<private>` before the first citation
/// (`2`), nothing (`3`); the secret in every `##` heading and a private span and the secret in
/// the first source label of every definition.
pub(crate) fn plant_topic(text: &str) -> String {
    let doc = Document::parse(text);
    let lines = doc.lines();
    let starts: BTreeMap<usize, usize> =
        doc.paragraphs().iter().map(|p| (p.lines.start, p.lines.end)).collect();
    let mut out = String::with_capacity(text.len() * 2);
    let mut k = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        if let Some(&end) = starts.get(&i) {
            let span = line.content.start..lines[end - 1].content.end;
            let par = &text[span];
            let planted = match (k % 4, par.find("[^")) {
                (0, _) => format!("{TOKEN} said: {par}"),
                (1, _) => format!("<private>{HIDDEN} words</private>{par}"),
                (2, Some(at)) => format!("{} <private>{HIDDEN} rest{}", &par[..at], &par[at..]),
                _ => par.to_owned(),
            };
            out.push_str(&planted);
            out.push_str(&text[lines[end - 1].terminator.clone()]);
            k += 1;
            i = end;
            continue;
        }
        let content = &text[line.content.clone()];
        match line.kind {
            LineKind::Heading { level: 2, .. } => out.push_str(&format!("{content} {TOKEN}")),
            LineKind::Definition { .. } if content.contains("](") => {
                let at = content.find("](").expect("a link");
                out.push_str(&format!(
                    "{} <private>{HIDDEN}</private>{TOKEN}{}",
                    &content[..at],
                    &content[at..]
                ));
            }
            _ => out.push_str(content),
        }
        out.push_str(&text[line.terminator.clone()]);
        i += 1;
    }
    out
}

/// Each block paragraph's text by its identity block ID, and whether [`plant_topic`] leaves it
/// alone.
pub(crate) fn paragraphs(text: &str) -> BTreeMap<String, (String, bool)> {
    let doc = Document::parse(text);
    doc.paragraphs()
        .iter()
        .enumerate()
        .filter_map(|(k, p)| {
            let id = doc.block_ids(p).last()?.as_str().to_owned();
            Some((id, (doc.paragraph_text(p), k % 4 == 3)))
        })
        .collect()
}
