//! Data-driven trials over archives written by the Python implementation
//! (`openprogram-workspace/memory/sources/`): each scans complete with no diagnostics, its
//! frames re-render to the same bytes, and re-archiving its own records changes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use scriptorium_testkit::{Failed, Trial, data_trial, fail};
use scriptorium_topics_format::source::{
    ArchiveRecord, SourceId, check_archive, plan_append, render_archive, scan,
};

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    vec![data_trial("archive::openprogram_workspace_sources", check_workspace_sources)]
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files_under(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn check_workspace_sources(data: &Path) -> Result<(), Failed> {
    let memory = data.join("openprogram-workspace/memory");
    let mut files = Vec::new();
    files_under(&memory.join("sources"), &mut files).map_err(fail)?;
    files.sort();
    if files.is_empty() {
        return Err("no archives found".into());
    }
    let mut frames_seen = 0;
    for file in files {
        let rel = file
            .strip_prefix(&memory)
            .map_err(fail)?
            .to_str()
            .ok_or("non-UTF-8 path")?
            .replace('\\', "/");
        let text = std::fs::read_to_string(&file).map_err(fail)?;
        let diagnostics = check_archive(&rel, &text);
        if !diagnostics.is_empty() {
            return Err(format!("{rel}: {diagnostics:?}").into());
        }
        let scanned = scan(&rel, &text);
        if !scanned.complete || scanned.frames.is_empty() {
            return Err(format!("{rel}: incomplete or empty scan").into());
        }
        frames_seen += scanned.frames.len();
        let rendered: Vec<String> = scanned.frames.iter().map(|frame| frame.render()).collect();
        if render_archive(&rendered) != text {
            return Err(
                format!("{rel}: re-rendering the frames does not reproduce the file").into()
            );
        }
        let records: Vec<ArchiveRecord> = scanned
            .frames
            .iter()
            .enumerate()
            .map(|(ordinal, frame)| {
                let id = SourceId::parse(frame.source_id).ok_or("frame id has no location")?;
                let mut record = ArchiveRecord::new(
                    id.provider(),
                    id.thread(),
                    id.message(),
                    ordinal as u64,
                    frame.speaker_label().unwrap_or("user"),
                    frame.content().unwrap_or(""),
                );
                record.timestamp = Some(frame.timestamp().to_owned());
                Ok(record)
            })
            .collect::<Result<_, Failed>>()?;
        let mut tree = BTreeMap::new();
        tree.insert(rel.clone(), text.clone());
        let plan = plan_append(&records, &tree).map_err(fail)?;
        if !plan.writes.is_empty() {
            return Err(format!("{rel}: re-archiving its own records plans a write").into());
        }
    }
    if frames_seen < 100 {
        return Err(format!("only {frames_seen} frames seen").into());
    }
    Ok(())
}
