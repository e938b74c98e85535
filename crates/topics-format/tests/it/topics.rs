//! Topic-file integration tests: corpus snapshots, round trip, normalization, fuzz loop.

mod corpus;
mod links;
mod normalize;
mod obsidian;
mod props;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use scriptorium_topics_format::catalog::{SourceResolver, TargetError};
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::topic::TopicFile;

/// `tests/corpus` of this crate.
fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("corpus")
}

/// Every file under `root`, keyed by its `/`-separated path relative to `root`.
fn read_tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("corpus directory is readable")
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("under root");
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                out.insert(rel, std::fs::read_to_string(&path).expect("corpus file is UTF-8"));
            }
        }
    }
    let mut out = BTreeMap::new();
    if root.is_dir() {
        walk(root, root, &mut out);
    }
    out
}

/// The topic files under `root` (paths relative to it).
fn topic_files(root: &Path) -> Vec<TopicFile> {
    read_tree(root).into_iter().map(|(path, text)| TopicFile::new(path, text)).collect()
}

/// A resolver over the `sources/` of the corpus workspace `name`.
fn workspace_resolver(name: &str) -> ArchiveResolver<BTreeMap<String, String>> {
    let root = corpus_dir().join("workspaces").join(name);
    let sources = read_tree(&root.join("sources"))
        .into_iter()
        .map(|(path, text)| (format!("sources/{path}"), text))
        .collect();
    ArchiveResolver::new(sources)
}

/// A tiny resolver for tests that need no archive: plain handles (`D<n>:<t>`,
/// `provider/thread/message`) resolve to themselves, `(../)+sources/<ref>.md#x` targets to `<ref>`,
/// and a ref links as `(../)+sources/<ref>.md#x` from the topic's directory.
struct TestResolver;

impl SourceResolver for TestResolver {
    fn resolve_target(&self, _topic_path: &str, target: &str) -> Result<String, TargetError> {
        let target = target.trim();
        let d_handle =
            target.strip_prefix('D').and_then(|rest| rest.split_once(':')).is_some_and(|(n, t)| {
                !n.is_empty()
                    && !t.is_empty()
                    && (n.to_owned() + t).bytes().all(|b| b.is_ascii_digit())
            });
        let parts: Vec<&str> = target.splitn(3, '/').collect();
        let provider = parts.len() == 3
            && parts.iter().all(|p| !p.is_empty())
            && !target.contains('#')
            && !target.starts_with('.')
            && !target.contains(char::is_whitespace);
        if d_handle || provider {
            return Ok(target.to_owned());
        }
        if let Some(rest) = target.trim_start_matches("../").strip_prefix("sources/")
            && let Some((source_ref, "x")) = rest.rsplit_once(".md#")
        {
            return Ok(source_ref.to_owned());
        }
        Err(TargetError { message: format!("invalid source target: {target}") })
    }

    fn link_target(&self, topic_path: &str, source_ref: &str) -> String {
        let up = "../".repeat(topic_path.matches('/').count() + 1);
        format!("{up}sources/{source_ref}.md#x")
    }
}
