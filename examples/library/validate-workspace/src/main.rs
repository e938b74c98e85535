//! Reads a memory workspace's topic files and source archives from disk and validates them with
//! `scriptorium-topics-format` alone: the crate does no IO, so this program reads the files and
//! hands them over as text (`TopicFile`) and through the `SourceFiles` seam.
//!
//! Usage: `validate-workspace <memory dir>` (the directory holding `topics/` and `sources/`).
//! Prints every diagnostic as `path:line:col: CODE message` and a summary; exits 1 when the
//! workspace has problems, 2 when it cannot be read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use scriptorium_topics_format::catalog::{FileLookup, SourceFiles};
use scriptorium_topics_format::source::{ArchiveResolver, check_archive, is_v2_source_path, scan};
use scriptorium_topics_format::{TopicFile, check_tree, tokens};

/// `sources/` on disk, as the parser asks for it: one file at a time, never through a symlink.
struct DiskSources {
    memory: PathBuf,
}

impl SourceFiles for DiskSources {
    fn lookup(&self, rel: &str) -> FileLookup {
        let path = self.memory.join(rel);
        match std::fs::symlink_metadata(&path) {
            Err(_) => FileLookup::Missing,
            Ok(meta) if !meta.is_file() => FileLookup::NotRegularFile,
            Ok(_) => match std::fs::read_to_string(&path) {
                Ok(text) => FileLookup::Text(Arc::from(text)),
                Err(_) => FileLookup::NotRegularFile,
            },
        }
    }
}

/// Every regular file under `dir` whose name ends in `.md`, as `/`-separated paths relative to
/// `base`, in sorted order. Symlinks are skipped, as the workspace's own walk skips them.
fn markdown_files(base: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    let mut entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            markdown_files(base, &path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "md") {
            let rel = path.strip_prefix(base).unwrap_or(&path);
            let parts: Vec<_> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            out.push(parts.join("/"));
        }
    }
    Ok(())
}

fn run(memory: &Path) -> std::io::Result<bool> {
    let topics_dir = memory.join("topics");
    let mut topic_paths = Vec::new();
    markdown_files(&topics_dir, &topics_dir, &mut topic_paths)?;
    let mut topics = Vec::with_capacity(topic_paths.len());
    for path in topic_paths {
        let text = std::fs::read_to_string(topics_dir.join(&path))?;
        topics.push(TopicFile::new(path, text));
    }

    // The archives are checked on their own (the strict v2 scan), then read again through the
    // resolver by the topic parse, which needs them to resolve every citation.
    let mut archive_paths = Vec::new();
    let sources_dir = memory.join("sources");
    if sources_dir.is_dir() {
        markdown_files(memory, &sources_dir, &mut archive_paths)?;
    }
    let mut diagnostics = Vec::new();
    let mut frames = 0;
    for rel in archive_paths.iter().filter(|p| is_v2_source_path(p)) {
        let text = std::fs::read_to_string(memory.join(rel))?;
        frames += scan(rel, &text).frames.len();
        diagnostics.extend(check_archive(rel, &text));
    }

    let resolver = ArchiveResolver::new(DiskSources { memory: memory.to_path_buf() });
    let parsed = check_tree(&topics, &resolver);
    diagnostics.extend(parsed.diagnostics);

    let mut per_file: BTreeMap<&str, usize> = BTreeMap::new();
    for topic in &topics {
        per_file.insert(&topic.path, 0);
    }
    for unit in &parsed.units {
        if let Some(count) = per_file.get_mut(unit.topic_path.as_str()) {
            *count += 1;
        }
    }
    let topic_tokens: usize = topics.iter().map(|t| tokens::count(&t.text)).sum();
    for diagnostic in &diagnostics {
        println!("{diagnostic}");
    }
    for (path, blocks) in &per_file {
        println!("topics/{path}: {blocks} blocks");
    }
    println!(
        "{}: {} topic files, {} blocks, {} archives ({} records), {} tokens of topics, {} problems",
        memory.display(),
        topics.len(),
        parsed.units.len(),
        archive_paths.len(),
        frames,
        topic_tokens,
        diagnostics.len(),
    );
    Ok(diagnostics.is_empty())
}

fn main() -> ExitCode {
    let Some(memory) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: validate-workspace <memory dir>");
        return ExitCode::from(2);
    };
    match run(&memory) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("validate-workspace: cannot read {}: {error}", memory.display());
            ExitCode::from(2)
        }
    }
}
