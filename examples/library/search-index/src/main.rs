//! Opens a memory workspace's search index (creating it or catching it up with the files when
//! needed) and searches it with `scriptorium-search` alone: no engine, no session store, no
//! server.
//!
//! Usage: `search-index [--expect-hits] <memory dir> <query>...`. The index lives in
//! `<memory dir>/.scriptorium/index/`. Prints what the sync did, then each query's hits, best
//! first, and the `<memory-context>` block an agent would be handed. With `--expect-hits`, a
//! query that finds nothing is a failure (exit 1); a workspace that cannot be indexed exits 2.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::UNIX_EPOCH;

use scriptorium_search::{Index, Query, fence, recall_text};

/// The revision label the index is brought to. The index stores the revision it reflects and a
/// search at another one first catches up with the changed files; the engine passes its own
/// revision, and a program without it can pass anything that changes when the files do — here
/// a fingerprint of every `topics/` and `sources/` file's path, size and modification time.
fn fingerprint(memory: &Path) -> std::io::Result<String> {
    fn walk(dir: &Path, hasher: &mut DefaultHasher) -> std::io::Result<()> {
        let mut entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let meta = entry.path().symlink_metadata()?;
            if meta.is_dir() {
                walk(&entry.path(), hasher)?;
            } else if meta.is_file() {
                entry.path().hash(hasher);
                meta.len().hash(hasher);
                let modified = meta.modified()?.duration_since(UNIX_EPOCH).unwrap_or_default();
                modified.as_nanos().hash(hasher);
            }
        }
        Ok(())
    }
    let mut hasher = DefaultHasher::new();
    for tree in ["topics", "sources"] {
        let dir = memory.join(tree);
        if dir.is_dir() {
            walk(&dir, &mut hasher)?;
        }
    }
    Ok(format!("files-{:016x}", hasher.finish()))
}

fn run(memory: &Path, queries: &[String], expect_hits: bool) -> Result<bool, String> {
    let revision = fingerprint(memory).map_err(|e| format!("cannot read the workspace: {e}"))?;
    let mut index = Index::open(memory).map_err(|e| format!("cannot open the index: {e}"))?;
    let before = index.revision().map(str::to_owned);
    let report = index.sync(&revision, None).map_err(|e| format!("cannot sync: {e}"))?;
    println!(
        "index at {revision} ({} documents): {}",
        index.num_docs(),
        if before.as_deref() == Some(revision.as_str()) {
            "already current".to_owned()
        } else {
            format!(
                "{} files indexed, {} removed{}",
                report.reindexed.len(),
                report.removed.len(),
                if report.full_walk { " (full walk)" } else { "" }
            )
        }
    );
    let mut all_found = true;
    for text in queries {
        let hits = index
            .search(&revision, &Query::new(text.as_str()))
            .map_err(|e| format!("query {text:?}: {e}"))?;
        println!("\n{text:?}: {} hits", hits.len());
        for hit in &hits {
            let kind = format!("{:?}", hit.kind).to_lowercase();
            println!("  {:>6.2}  {kind:<6} {}", hit.score, hit.link());
            println!("          {}", hit.snippet.replace('\n', " "));
        }
        if hits.is_empty() {
            all_found = false;
        } else {
            println!("{}", fence(&recall_text(&hits[..1])));
        }
    }
    Ok(all_found || !expect_hits)
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let expect_hits = args.first().is_some_and(|a| a == "--expect-hits");
    if expect_hits {
        args.remove(0);
    }
    if args.len() < 2 {
        eprintln!("usage: search-index [--expect-hits] <memory dir> <query>...");
        return ExitCode::from(2);
    }
    let memory = PathBuf::from(args.remove(0));
    match run(&memory, &args, expect_hits) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("search-index: a query found nothing");
            ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("search-index: {}: {error}", memory.display());
            ExitCode::from(2)
        }
    }
}
