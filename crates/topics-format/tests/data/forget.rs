//! Forgetting in the workspace the Python implementation wrote
//! (`openprogram-workspace/memory`): a whole session's records, a few blocks and a word that
//! several paragraphs and source labels hold. The tree must still check clean, every removed
//! block be gone, no text hold the word, every other paragraph stay byte for byte, and the
//! derived views stay well-formed without a trace of what went.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use scriptorium_testkit::{Failed, Trial, data_trial, fail};
use scriptorium_topics_format::forget::{
    Forgetting, forget_in_tree, forget_in_view, sources_matching, tombstone_archive,
};
use scriptorium_topics_format::source::{ArchiveResolver, check_archive, scan};
use scriptorium_topics_format::topic::{Document, TopicFile, check_tree, normalize};

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    vec![
        data_trial("forget_openprogram_session_blocks_and_word", |data| {
            forget_scenario(
                data,
                Some("local_a327ddd6bf43"),
                &["0bfbe405", "c65284b6"],
                "shijorria",
                20,
            )
        }),
        // The word is in three paragraphs and three headings (which keep their place).
        data_trial("forget_openprogram_word_in_headings", |data| {
            forget_scenario(data, None, &[], "Tonbri", 3)
        }),
    ]
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

/// Each paragraph's text by its identity block ID.
fn paragraphs(files: &[TopicFile]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for file in files {
        let doc = Document::parse(&file.text);
        for p in doc.paragraphs() {
            if let Some(id) = doc.block_ids(p).last() {
                out.insert(id.as_str().to_owned(), doc.paragraph_text(p));
            }
        }
    }
    out
}

fn forget_scenario(
    data: &Path,
    session: Option<&str>,
    blocks: &[&str],
    word: &str,
    at_least_removed: usize,
) -> Result<(), Failed> {
    let memory = data.join("openprogram-workspace").join("memory");
    let mut all = BTreeMap::new();
    for dir in ["topics", "sources", "timeline"] {
        read_tree(&memory, &memory.join(dir), &mut all)?;
    }
    for file in ["recent_events.jsonl", "relations.json"] {
        all.insert(file.to_owned(), std::fs::read_to_string(memory.join(file)).map_err(fail)?);
    }
    let topics: Vec<TopicFile> = all
        .iter()
        .filter_map(|(path, text)| {
            Some(TopicFile::new(path.strip_prefix("topics/")?, text.clone()))
        })
        .collect();

    // The session's records: every frame of its archive.
    let mut sources: Vec<String> = Vec::new();
    if let Some(session) = session {
        let path = format!("sources/openprogram/_v2/{session}.md");
        let text = all.get(&path).ok_or("no such session archive")?;
        sources.extend(scan(&path, text).frames.iter().map(|f| f.source_id.to_owned()));
        check(sources.len() > 10, || format!("{} records", sources.len()))?;
    }
    let forgetting = Forgetting::new(&sources, blocks, Some(word)).map_err(fail)?;

    // The archives: tombstones for the session and for every record holding the word.
    let mut archives = BTreeMap::new();
    for (path, text) in all.iter().filter(|(p, _)| p.starts_with("sources/")) {
        let mut doomed = forgetting.source_set();
        doomed.extend(sources_matching(path, text, &forgetting));
        let new = tombstone_archive(path, text, &doomed).map_err(fail)?;
        let new = new.unwrap_or_else(|| text.clone());
        check(check_archive(path, &new).is_empty(), || format!("{path} does not check clean"))?;
        check(sources_matching(path, &new, &forgetting).is_empty(), || {
            format!("{path} still holds {word} in a record")
        })?;
        archives.insert(path.clone(), new);
    }

    // The topics.
    let out = forget_in_tree(&topics, &forgetting);
    let mut after: Vec<TopicFile> = topics.clone();
    for changed in &out.changed {
        if let Some(file) = after.iter_mut().find(|f| f.path == changed.path) {
            file.text = changed.text.clone();
        }
    }
    check(out.removed_blocks.len() >= at_least_removed, || {
        format!("{} blocks removed", out.removed_blocks.len())
    })?;
    let headings_before =
        topics.iter().flat_map(|f| f.text.lines()).filter(|l| l.starts_with('#')).count();
    let headings_after =
        after.iter().flat_map(|f| f.text.lines()).filter(|l| l.starts_with('#')).count();
    check(headings_before == headings_after, || "a heading went".to_owned())?;
    for block in blocks {
        check(out.removed_blocks.contains(*block), || format!("{block} was not removed"))?;
    }
    let resolver = ArchiveResolver::new(archives.clone());
    let parsed = check_tree(&after, &resolver);
    check(parsed.diagnostics.is_empty(), || format!("diagnostics: {:#?}", parsed.diagnostics))?;
    let forgotten: HashSet<&str> = sources.iter().map(String::as_str).collect();
    for unit in &parsed.units {
        check(!out.removed_blocks.contains(&unit.memory_id), || {
            format!("{} is still a unit", unit.memory_id)
        })?;
        check(unit.refs.iter().all(|r| !forgotten.contains(r.as_str())), || {
            format!("{} still cites a forgotten record", unit.memory_id)
        })?;
    }
    for file in &after {
        check(!file.text.contains(word), || format!("topics/{} still holds {word}", file.path))?;
    }
    let (old, new) = (paragraphs(&topics), paragraphs(&after));
    let mut untouched = 0;
    for (id, paragraph) in &new {
        if out.kept_blocks_uncited.contains(id) || out.kept_blocks_unlinked.contains(id) {
            continue;
        }
        check(old.get(id) == Some(paragraph), || format!("{id} changed"))?;
        untouched += 1;
    }
    check(untouched > 0 && new.len() + out.removed_blocks.len() >= old.len(), || {
        format!("{untouched} untouched of {}", new.len())
    })?;

    // What normalization makes of it: a fixed point but for emptied sections and files.
    let committed: HashSet<String> = parsed.units.iter().map(|u| u.memory_id.clone()).collect();
    let normalized = normalize(&after, &committed, &parsed.units, &resolver);
    check(normalized.dropped.is_empty(), || {
        format!("normalization refuses: {:?}", normalized.dropped)
    })?;
    for file in &normalized.files {
        let before = after.iter().find(|f| f.path == file.path).map(|f| f.text.as_str());
        let same = before == Some(file.text.as_str());
        // Only heading lines (of sections left without a record) may go.
        let headings_only = before.is_some_and(|b| {
            let kept: Vec<&str> = file.text.lines().collect();
            b.lines()
                .filter(|l| !kept.contains(l))
                .all(|l| l.starts_with('#') || l.trim().is_empty())
        });
        check(same || headings_only, || format!("normalization rewrote {}", file.path))?;
    }

    // The derived views.
    let removed: HashSet<String> = out.removed_blocks.iter().cloned().collect();
    for (path, text) in
        all.iter().filter(|(p, _)| !p.starts_with("topics/") && !p.starts_with("sources/"))
    {
        let view =
            forget_in_view(path, text, &forgetting, &removed).unwrap_or_else(|| text.clone());
        check(forget_in_view(path, &view, &forgetting, &removed).is_none(), || {
            format!("{path}: not idempotent")
        })?;
        check(!view.contains(word), || format!("{path} still holds {word}"))?;
        match path.as_str() {
            "recent_events.jsonl" => {
                for line in view.lines() {
                    let row: serde_json::Value = serde_json::from_str(line).map_err(fail)?;
                    let id = row["memory_id"].as_str().unwrap_or_default();
                    check(!removed.contains(id), || format!("recent event {id} stayed"))?;
                    check(committed.contains(id), || format!("recent event {id} has no unit"))?;
                }
            }
            "relations.json" => {
                let value: serde_json::Value = serde_json::from_str(&view).map_err(fail)?;
                let outbound = value["outbound"].as_object().ok_or("no outbound")?;
                let keys: HashSet<String> = outbound.keys().cloned().collect();
                check(keys == committed, || "outbound keys differ from the units".to_owned())?;
            }
            _ => {
                for id in &removed {
                    check(!view.contains(&format!("#^{id})")), || format!("{path} names {id}"))?;
                }
            }
        }
    }
    Ok(())
}
