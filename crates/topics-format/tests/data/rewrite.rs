//! Rewriting the workspace the Python implementation wrote (`openprogram-workspace/memory`)
//! with secrets and `<private>` spans planted in its records, paragraphs, headings, source
//! labels, timeline rows and recent events: nothing planted may be left, every archive must
//! scan complete with the same frames, the topics must check clean with the same units, a
//! paragraph left alone (the one after an unclosed `<private>` among them) must stay byte for
//! byte, the views must stay well-formed, and the unplanted workspace must not change at all.

use std::collections::BTreeMap;
use std::path::Path;

use scriptorium_testkit::{Failed, Trial, data_trial, fail};
use scriptorium_topics_format::forget::{is_tombstone, tombstone_archive};
use scriptorium_topics_format::rewrite::{rewrite_archive, rewrite_in_view, rewrite_topic};
use scriptorium_topics_format::source::{ArchiveResolver, check_archive, scan};
use scriptorium_topics_format::topic::{TopicFile, check_tree};
use scriptorium_topics_format::{TreeParse, Unit};

use crate::redact::{
    HIDDEN, TOKEN, edit_records, holds_planted, paragraphs, plant_record, plant_topic,
    planted_record_redacted, redact,
};

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    vec![data_trial("rewrite_openprogram_workspace_with_planted_secrets", scenario)]
}

fn check(ok: bool, message: impl FnOnce() -> String) -> Result<(), Failed> {
    if ok { Ok(()) } else { Err(message().into()) }
}

/// Every regular file under `dir`, keyed by its `/`-separated path relative to `root`.
fn read_tree(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> Result<(), Failed> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(fail)? {
        entries.push(entry.map_err(fail)?.path());
    }
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_tree(root, &path, out)?;
        } else {
            let rel = path.strip_prefix(root).map_err(fail)?;
            let rel: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            out.insert(rel.join("/"), std::fs::read_to_string(&path).map_err(fail)?);
        }
    }
    Ok(())
}

fn view(path: &str, text: &str) -> Option<String> {
    rewrite_in_view(path, text, &redact)
}

/// Each unit's ID, refs and cited footnotes, in order.
fn units(parsed: &TreeParse) -> Vec<(String, Vec<String>, Vec<String>)> {
    parsed
        .units
        .iter()
        .map(|u: &Unit| {
            let cited = u.evidence.iter().map(|e| e.citation_id.clone()).collect();
            (u.memory_id.clone(), u.refs.to_vec(), cited)
        })
        .collect()
}

fn scenario(data: &Path) -> Result<(), Failed> {
    let memory = data.join("openprogram-workspace").join("memory");
    let mut all = BTreeMap::new();
    for dir in ["topics", "sources", "timeline"] {
        read_tree(&memory, &memory.join(dir), &mut all)?;
    }
    for file in ["recent_events.jsonl", "relations.json"] {
        all.insert(file.to_owned(), std::fs::read_to_string(memory.join(file)).map_err(fail)?);
    }

    // Nothing planted: nothing changes.
    for (path, text) in &all {
        check(view(path, text).is_none(), || format!("{path} changed with nothing planted"))?;
    }

    // The archives: the first frame of each tombstoned, every other record planted.
    let mut archives = BTreeMap::new();
    let mut records = 0;
    for (path, text) in all.iter().filter(|(p, _)| p.starts_with("sources/")) {
        check(rewrite_archive(path, text, &redact) == Ok(None), || format!("{path} changed"))?;
        let first = scan(path, text).frames.first().map(|f| f.source_id.to_owned());
        let doomed = first.into_iter().collect();
        let text = tombstone_archive(path, text, &doomed).map_err(fail)?.unwrap_or(text.clone());
        let planted = edit_records(path, &text, &plant_record);
        let out = rewrite_archive(path, &planted, &redact).map_err(fail)?.ok_or("no change")?;
        check(out == edit_records(path, &text, &planted_record_redacted), || {
            format!("{path}: not exactly the planted text redacted")
        })?;
        check(!holds_planted(&out), || format!("{path} holds something planted"))?;
        check(check_archive(path, &out).is_empty(), || format!("{path} does not check clean"))?;
        let (before, after) = (scan(path, &text), scan(path, &out));
        check(after.complete && after.frames.len() == before.frames.len(), || {
            format!("{path}: frames differ")
        })?;
        for (old, new) in before.frames.iter().zip(&after.frames) {
            check(old.source_id == new.source_id && old.meta_token == new.meta_token, || {
                format!("{path}: {} changed its framing", old.source_id)
            })?;
            check(!is_tombstone(old) || old.render() == new.render(), || {
                format!("{path}: the tombstone of {} changed", old.source_id)
            })?;
        }
        records += after.frames.len();
        check(rewrite_archive(path, &out, &redact) == Ok(None), || format!("{path}: twice"))?;
        check(view(path, &planted).as_deref() == Some(out.as_str()), || {
            format!("{path}: the view differs")
        })?;
        archives.insert(path.clone(), out);
    }
    check(records > 50, || format!("{records} records"))?;
    let resolver = ArchiveResolver::new(archives);

    // The topics.
    let topics: Vec<TopicFile> = all
        .iter()
        .filter_map(|(path, text)| {
            Some(TopicFile::new(path.strip_prefix("topics/")?, text.clone()))
        })
        .collect();
    let before = check_tree(&topics, &resolver);
    check(before.diagnostics.is_empty(), || format!("diagnostics: {:#?}", before.diagnostics))?;
    let mut after = Vec::new();
    let mut untouched = 0;
    for file in &topics {
        let planted = plant_topic(&file.text);
        let out = rewrite_topic(&planted, &redact).ok_or("no change")?;
        check(!holds_planted(&out), || format!("topics/{} holds something planted", file.path))?;
        check(out.contains("[REDACTED:x]"), || format!("topics/{}: nothing redacted", file.path))?;
        check(rewrite_topic(&out, &redact).is_none(), || format!("{}: twice", file.path))?;
        check(view(&format!("topics/{}", file.path), &planted).as_deref() == Some(&out), || {
            format!("topics/{}: the view differs", file.path)
        })?;
        let new = paragraphs(&out);
        for (id, (text, alone)) in paragraphs(&file.text) {
            if alone {
                check(new.get(&id).map(|p| &p.0) == Some(&text), || format!("{id} changed"))?;
                untouched += 1;
            }
        }
        after.push(TopicFile::new(file.path.clone(), out));
    }
    check(untouched > 10, || format!("{untouched} paragraphs left alone"))?;
    let parsed = check_tree(&after, &resolver);
    check(parsed.diagnostics.is_empty(), || format!("diagnostics: {:#?}", parsed.diagnostics))?;
    check(units(&parsed) == units(&before), || "the units differ".to_owned())?;

    // The views.
    for (path, text) in all.iter().filter(|(p, _)| p.starts_with("timeline/")) {
        let planted: Vec<String> = text
            .split("\n\n")
            .enumerate()
            .map(|(k, row)| match k % 3 {
                0 if k > 0 => format!("{TOKEN} <private>{HIDDEN}</private>{row}"),
                1 => format!("<private>{HIDDEN} {row}"),
                _ => row.to_owned(),
            })
            .collect();
        let planted = planted.join("\n\n");
        let out = view(path, &planted).ok_or("no change")?;
        check(!holds_planted(&out), || format!("{path} holds something planted:\n{out}"))?;
        let rows = |t: &str| t.split("\n\n").count();
        check(rows(&out) == rows(text), || format!("{path}: rows differ"))?;
        let topic_links = |t: &str| t.matches("[Topic](").count();
        check(topic_links(&out) == topic_links(text), || format!("{path}: links differ"))?;
        check(view(path, &out).is_none(), || format!("{path}: twice"))?;
    }
    let events = &all["recent_events.jsonl"];
    let planted =
        events.replace("\"content\": \"", &format!("\"content\": \"{TOKEN} <private>{HIDDEN} "));
    let out = view("recent_events.jsonl", &planted).ok_or("no change")?;
    check(!holds_planted(&out), || "recent_events.jsonl holds something planted".to_owned())?;
    let ids = |t: &str| -> Result<Vec<serde_json::Value>, Failed> {
        t.lines()
            .map(|l| {
                Ok(serde_json::from_str::<serde_json::Value>(l).map_err(fail)?["memory_id"].clone())
            })
            .collect()
    };
    check(ids(&out)? == ids(events)?, || "recent events differ".to_owned())?;
    check(view("recent_events.jsonl", &out).is_none(), || "recent events twice".to_owned())?;
    Ok(())
}
