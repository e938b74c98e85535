//! Data-driven trials: conformance with a workspace written by the Python implementation, and
//! the block-ID view of real Obsidian notes.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use scriptorium_testkit::{Failed, Trial, data_trial};
use scriptorium_topics_format::Code;
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::topic::{
    Document, LineKind, TopicFile, Unit, check_tree, normalize, parse_tree,
};

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    vec![
        data_trial("topics_openprogram_workspace_conformance", openprogram_conformance),
        data_trial("topics_openprogram_workspace_normalize_is_noop", openprogram_normalize_noop),
        data_trial("topics_obsidian_block_ids", obsidian_block_ids),
        data_trial("topics_markdown_footnotes_are_prose", markdown_footnotes),
    ]
}

fn check(ok: bool, message: impl FnOnce() -> String) -> Result<(), Failed> {
    if ok { Ok(()) } else { Err(message().into()) }
}

/// Every regular file under `root`, keyed by its `/`-separated path relative to `root`.
fn read_tree(root: &Path) -> Result<BTreeMap<String, String>, Failed> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> Result<(), Failed> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(scriptorium_testkit::fail)? {
            entries.push(entry.map_err(scriptorium_testkit::fail)?.path());
        }
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(root, &path, out)?;
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                let rel = path.strip_prefix(root).map_err(scriptorium_testkit::fail)?;
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.insert(rel.join("/"), text);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out)?;
    Ok(out)
}

struct Workspace {
    files: Vec<TopicFile>,
    resolver: ArchiveResolver<BTreeMap<String, String>>,
    memory: std::path::PathBuf,
}

fn openprogram(data: &Path) -> Result<Workspace, Failed> {
    let memory = data.join("openprogram-workspace").join("memory");
    let files = read_tree(&memory.join("topics"))?
        .into_iter()
        .filter(|(path, _)| path.ends_with(".md"))
        .map(|(path, text)| TopicFile::new(path, text))
        .collect();
    let sources = read_tree(&memory.join("sources"))?
        .into_iter()
        .map(|(path, text)| (format!("sources/{path}"), text))
        .collect();
    Ok(Workspace { files, resolver: ArchiveResolver::new(sources), memory })
}

fn json(path: &Path) -> Result<serde_json::Value, Failed> {
    let text = std::fs::read_to_string(path).map_err(scriptorium_testkit::fail)?;
    serde_json::from_str(&text).map_err(scriptorium_testkit::fail)
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .map_or_else(Vec::new, |a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
}

/// The workspace parses with no diagnostic, and every unit agrees with the derived views and the
/// runtime state Python wrote.
fn openprogram_conformance(data: &Path) -> Result<(), Failed> {
    let ws = openprogram(data)?;
    let parsed = check_tree(&ws.files, &ws.resolver);
    check(parsed.diagnostics.is_empty(), || format!("diagnostics: {:#?}", parsed.diagnostics))?;
    check(parsed.units.len() == 100, || format!("{} units", parsed.units.len()))?;
    let by_id: BTreeMap<&str, &Unit> =
        parsed.units.iter().map(|u| (u.memory_id.as_str(), u)).collect();

    // recent_events.jsonl: content, when/whens, refs, topic path, headings, created order.
    let recent = std::fs::read_to_string(ws.memory.join("recent_events.jsonl"))
        .map_err(scriptorium_testkit::fail)?;
    let mut rows = 0;
    for line in recent.lines() {
        let row: serde_json::Value =
            serde_json::from_str(line).map_err(scriptorium_testkit::fail)?;
        let id = row["memory_id"].as_str().unwrap_or_default();
        let unit = by_id.get(id).ok_or_else(|| format!("recent event {id} has no unit"))?;
        check(row["content"].as_str() == Some(unit.content.as_str()), || format!("{id}: content"))?;
        check(row["when"].as_str() == unit.when.as_deref(), || format!("{id}: when"))?;
        check(strings(&row["whens"]) == unit.whens, || format!("{id}: whens"))?;
        check(strings(&row["refs"]) == unit.refs, || format!("{id}: refs"))?;
        check(strings(&row["source_refs"]) == unit.refs, || format!("{id}: source_refs"))?;
        check(
            row["topic_path"].as_str() == Some(format!("topics/{}", unit.topic_path).as_str()),
            || format!("{id}: topic_path"),
        )?;
        check(strings(&row["headings"]) == *unit.headings, || format!("{id}: headings"))?;
        check(row["created_order"].as_u64() == Some(unit.created_order as u64), || {
            format!("{id}: created_order")
        })?;
        rows += 1;
    }
    check(rows == 50, || format!("{rows} recent events"))?;

    // relations.json: an outbound entry per unit, with its sorted unique targets.
    let relations = json(&ws.memory.join("relations.json"))?;
    let outbound = relations["outbound"].as_object().ok_or("relations.json has no outbound")?;
    let keys: BTreeSet<&str> = outbound.keys().map(String::as_str).collect();
    check(keys == by_id.keys().copied().collect(), || {
        "outbound keys differ from unit IDs".to_owned()
    })?;
    for (id, targets) in outbound {
        let mut ours: Vec<String> = by_id[id.as_str()].relation_targets.clone();
        ours.sort();
        ours.dedup();
        check(strings(targets) == ours, || format!("{id}: outbound"))?;
    }

    // runtime.json creation order equals the parse order: it was seeded from the committed
    // units' parse order and no unit moved since.
    let runtime = json(&ws.memory.join(".scriptorium").join("runtime.json"))?;
    let order =
        runtime["creation_order"].as_object().ok_or("runtime.json has no creation_order")?;
    check(order.len() == parsed.units.len(), || "creation_order size".to_owned())?;
    for unit in &parsed.units {
        check(
            order.get(&unit.memory_id).and_then(serde_json::Value::as_u64)
                == Some(unit.created_order as u64),
            || {
                format!(
                    "{}: creation order {:?} vs parse order {}",
                    unit.memory_id,
                    order.get(&unit.memory_id),
                    unit.created_order
                )
            },
        )?;
    }

    // IDs have the runtime-minted shapes. (The staged text they were minted from is not part
    // of the workspace, so the formulas themselves are pinned by the reference's verified values
    // in the integration tests, not here.)
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let mut evidence = 0;
    for unit in &parsed.units {
        check(unit.memory_id.len() == 8 && hex(&unit.memory_id), || {
            format!("block ID {}", unit.memory_id)
        })?;
        for e in &unit.evidence {
            let id = e.citation_id.strip_prefix("e-").unwrap_or_default();
            check(id.len() == 10 && hex(id), || {
                format!("{}: evidence ID {}", unit.memory_id, e.citation_id)
            })?;
            evidence += 1;
        }
    }
    check(evidence == 100, || format!("{evidence} evidence annotations"))?;
    Ok(())
}

/// Normalizing the (already normalized) workspace, with its IDs committed, changes no byte.
fn openprogram_normalize_noop(data: &Path) -> Result<(), Failed> {
    let ws = openprogram(data)?;
    let parsed = parse_tree(&ws.files, &ws.resolver);
    let ids: HashSet<String> = parsed.units.iter().map(|u| u.memory_id.clone()).collect();
    let out = normalize(&ws.files, &ids, &parsed.units, &ws.resolver);
    check(out.changed.is_empty() && out.deleted.is_empty(), || {
        format!("changed {:?}, deleted {:?}", out.changed, out.deleted)
    })?;
    check(out.block_ids.is_empty() && out.evidence_ids.is_empty(), || "IDs minted".to_owned())?;
    for (file, original) in out.files.iter().zip(&ws.files) {
        check(file == original, || format!("{} differs", file.path))?;
    }
    Ok(())
}

/// Obsidian's block-ID rule for the last line of a block: `\s\^([A-Za-z0-9-]+)$`.
fn obsidian_block_id(line: &str) -> Option<&str> {
    let trimmed = line.trim_end();
    let caret = trimmed.rfind('^')?;
    let id = &trimmed[caret + 1..];
    let spaced = trimmed[..caret].ends_with(char::is_whitespace);
    (spaced && !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        .then_some(id)
}

/// For every paragraph of real Obsidian notes, the block ID we see equals Obsidian's; the known
/// differences ("Differences from Obsidian" in the `topic` module docs) are asserted exactly.
fn obsidian_block_ids(data: &Path) -> Result<(), Failed> {
    let mut notes = BTreeMap::new();
    for (dir, name) in [
        (data.join("obsidian-export").join("input").join("main-samples"), "obsidian-export"),
        (data.join("markdown-oxide").join("vault"), "markdown-oxide"),
    ] {
        for (path, text) in read_tree(&dir)? {
            if path.ends_with(".md") {
                notes.insert(format!("{name}/{path}"), text);
            }
        }
    }
    let mut agreed = Vec::new();
    let mut obsidian_only = Vec::new();
    for (path, text) in &notes {
        let doc = Document::parse(text);
        check(doc.render() == *text, || format!("{path}: round trip"))?;
        for paragraph in doc.paragraphs() {
            let ours = doc.block_ids(paragraph);
            let last = doc.line_text(paragraph.lines.end - 1);
            let theirs = obsidian_block_id(last);
            match (ours.last(), theirs) {
                (Some(a), Some(b)) => {
                    check(a == b, || format!("{path}: we see ^{a}, Obsidian ^{b}"))?;
                    agreed.push(format!("{path}:{a}"));
                }
                (None, Some(b)) => obsidian_only.push(format!("{path}:{b}")),
                (Some(a), None) => return Err(format!("{path}: we see ^{a}, Obsidian none").into()),
                (None, None) => {}
            }
        }
        // Difference 3: a heading with `^id` is a heading here, never a record.
        for line in doc.lines() {
            if let LineKind::Heading { .. } = line.kind {
                let heading = &text[line.content.clone()];
                if let Some(id) = obsidian_block_id(heading) {
                    obsidian_only.push(format!("{path}:{id} (heading)"));
                }
            }
        }
        // Difference 5: the strict parse rejects Obsidian notes (no evidence) but never panics,
        // and rejects a paragraph with an ID only for its missing evidence.
        let parsed = parse_tree(&[TopicFile::new(path.clone(), text.clone())], &NoSources);
        for d in &parsed.diagnostics {
            check(
                matches!(
                    d.code,
                    Code::FootnoteRequired
                        | Code::BlockIdRequired
                        | Code::UncitedParagraph
                        | Code::InvalidBlockId
                        | Code::MissingContent
                        | Code::ContentAfterEvidence
                        | Code::UndefinedFootnote
                        | Code::UnusedFootnote
                ),
                || format!("{path}: unexpected {d}"),
            )?;
        }
    }
    agreed.sort();
    check(agreed.len() >= 10, || format!("only {} agreeing block IDs: {agreed:?}", agreed.len()))?;
    let expected_only: Vec<String> = Vec::new();
    check(obsidian_only == expected_only, || {
        format!("Obsidian-only block IDs: {obsidian_only:?}")
    })?;
    Ok(())
}

/// Footnote suites: CommonMark/GFM footnote definitions (`[^1]: text`) are prose to the topic
/// grammar (difference 5), and any text round-trips.
fn markdown_footnotes(data: &Path) -> Result<(), Failed> {
    let specs = read_tree(&data.join("markdown-specs"))?;
    let mut footnote_files = 0;
    let mut prose_definitions = 0;
    for (path, text) in specs.iter().filter(|(p, _)| p.contains("footnote")) {
        footnote_files += 1;
        let doc = Document::parse(text);
        check(doc.render() == *text, || format!("{path}: round trip"))?;
        for line in doc.lines() {
            let content = &text[line.content.clone()];
            if content.starts_with("[^") && content.contains("]:") {
                let ours = matches!(line.kind, LineKind::Definition { .. });
                check(ours == (content.contains("Sources:")), || {
                    format!("{path}: {content:?} classified {:?}", line.kind)
                })?;
                prose_definitions += usize::from(!ours);
            }
        }
        let _ = parse_tree(&[TopicFile::new(path.clone(), text.clone())], &NoSources);
    }
    check(footnote_files >= 5 && prose_definitions >= 20, || {
        format!("{footnote_files} files, {prose_definitions} definitions")
    })?;
    Ok(())
}

/// A resolver for notes that cite no archive.
struct NoSources;

impl scriptorium_topics_format::catalog::SourceResolver for NoSources {
    fn resolve_target(
        &self,
        _topic_path: &str,
        target: &str,
    ) -> Result<String, scriptorium_topics_format::catalog::TargetError> {
        Err(scriptorium_topics_format::catalog::TargetError {
            message: format!("invalid source target: {target}"),
        })
    }

    fn link_target(&self, _topic_path: &str, source_ref: &str) -> String {
        source_ref.to_owned()
    }
}
