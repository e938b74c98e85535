//! Data-driven suites over third-party data (`SCRIPTORIUM_TEST_DATA`): reported as not run when
//! the data is absent, never as passed.
//!
//! The views rebuilt from the topics of `openprogram-workspace/memory/` (written by the Python
//! implementation) must be byte-identical to the views the Python code wrote there.

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use scriptorium_testkit::{Failed, data_trial, fail, run};
use scriptorium_topics_format::parse_tree;
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_views::rebuild;
use scriptorium_workspace_fs::read::{FsSources, read_topics};

fn main() -> std::process::ExitCode {
    run(vec![data_trial("openprogram_workspace_views_are_byte_identical", python_views_match)])
}

fn timeline_files(dir: &Path, rel: &str, out: &mut BTreeMap<String, String>) -> Result<(), Failed> {
    for entry in fs::read_dir(dir).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let entry_rel = format!("{rel}/{name}");
        if entry.file_type().map_err(fail)?.is_dir() {
            timeline_files(&entry.path(), &entry_rel, out)?;
        } else {
            out.insert(entry_rel, fs::read_to_string(entry.path()).map_err(fail)?);
        }
    }
    Ok(())
}

fn python_views_match(data: &Path) -> Result<(), Failed> {
    let memory = data.join("openprogram-workspace").join("memory");
    let files = read_topics(&memory).map_err(fail)?;
    let parse = parse_tree(&files, &ArchiveResolver::new(FsSources::new(&memory)));
    if !parse.is_valid() {
        return Err(fail(format!("diagnostics: {:?}", parse.diagnostics)));
    }
    let order = creation_order(&memory)?;
    let views = rebuild(parse.units.iter(), &order, 50);

    let mut expected_timeline = BTreeMap::new();
    timeline_files(&memory.join("timeline"), "timeline", &mut expected_timeline)?;
    let ours: Vec<&String> = views.timeline.keys().collect();
    let theirs: Vec<&String> = expected_timeline.keys().collect();
    if ours != theirs {
        return Err(fail(format!("timeline files differ: ours {ours:?}, Python {theirs:?}")));
    }
    for (path, text) in &expected_timeline {
        check_same(path, &views.timeline[path], text)?;
    }
    let recent = fs::read_to_string(memory.join("recent_events.jsonl")).map_err(fail)?;
    check_same("recent_events.jsonl", &views.recent_events, &recent)?;
    let relations = fs::read_to_string(memory.join("relations.json")).map_err(fail)?;
    check_same("relations.json", &views.relations, &relations)?;
    Ok(())
}

/// `runtime.json`'s `creation_order` (the transaction engine owns the file; the views only
/// read the order).
fn creation_order(memory: &Path) -> Result<BTreeMap<String, u64>, Failed> {
    let text = fs::read_to_string(memory.join(".scriptorium/runtime.json")).map_err(fail)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(fail)?;
    serde_json::from_value(value["creation_order"].clone()).map_err(fail)
}

fn check_same(name: &str, ours: &str, theirs: &str) -> Result<(), Failed> {
    if ours == theirs {
        return Ok(());
    }
    let line = ours.lines().zip(theirs.lines()).position(|(a, b)| a != b);
    let detail = match line {
        Some(i) => format!(
            "first difference at line {}:\n ours: {:?}\n python: {:?}",
            i + 1,
            ours.lines().nth(i).unwrap_or_default(),
            theirs.lines().nth(i).unwrap_or_default()
        ),
        None => format!("lengths differ: ours {} bytes, python {} bytes", ours.len(), theirs.len()),
    };
    Err(fail(format!("{name} differs; {detail}")))
}
