//! The example workspace the README's main command checks is valid, already normalized (what a
//! transaction would install), and its archive scans complete.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use scriptorium_topics_format::catalog::{FileLookup, SourceFiles};
use scriptorium_topics_format::source::{ArchiveResolver, check_archive, scan};
use scriptorium_topics_format::topic::{TopicFile, check_tree, normalize};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace")
}

fn read_tree(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("list the example workspace") {
        let path = entry.expect("read a directory entry").path();
        if path.is_dir() {
            read_tree(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).expect("inside the root").to_string_lossy();
            let text = std::fs::read_to_string(&path).expect("a UTF-8 file");
            out.insert(rel.replace('\\', "/"), text);
        }
    }
}

struct Tree(BTreeMap<String, String>);

impl SourceFiles for Tree {
    fn lookup(&self, rel: &str) -> FileLookup {
        self.0.get(rel).map_or(FileLookup::Missing, |t| FileLookup::Text(t.as_str().into()))
    }
}

#[test]
fn example_workspace_is_clean_normalized_and_complete() {
    let root = example();
    let mut files = BTreeMap::new();
    read_tree(&root, &root, &mut files);
    let topics: Vec<TopicFile> = files
        .iter()
        .filter_map(|(rel, text)| {
            let path = rel.strip_prefix("topics/")?;
            Some(TopicFile { path: path.to_owned(), text: text.clone() })
        })
        .collect();
    assert_eq!(topics.len(), 3);
    for (rel, text) in files.iter().filter(|(rel, _)| rel.starts_with("sources/")) {
        assert!(check_archive(rel, text).is_empty(), "{rel}");
        assert!(scan(rel, text).complete, "{rel}");
    }
    let resolver = ArchiveResolver::new(Tree(files.clone()));
    let parsed = check_tree(&topics, &resolver);
    assert!(parsed.diagnostics.is_empty(), "{:#?}", parsed.diagnostics);
    assert_eq!(parsed.units.len(), 4);
    let committed: HashSet<String> = parsed.units.iter().map(|u| u.memory_id.clone()).collect();
    let normalized = normalize(&topics, &committed, &parsed.units, &resolver);
    assert!(normalized.changed.is_empty(), "normalization would change {:?}", normalized.changed);
    assert!(normalized.deleted.is_empty());
}
