//! [`ArchiveResolver`]: source-target resolution for the topic parser (see
//! `docs/format.md#source-link-targets`) and the trust of a source reference (see
//! `docs/format.md#trust`), over a caller-supplied `sources/` tree.
//!
//! Architecture Invariant: each archive file is looked up and scanned at most once per resolver
//! (one resolver per tree parse), whatever the number of citations into it.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use regex::Regex;

use super::id::{SourceId, is_v2_emittable, is_v2_source_path, parse_d_handle};
use super::legacy::{legacy_headers, legacy_trusted_ids};
use super::meta::TrustState;
use super::scan::scan;
use super::unicode::strip;
use crate::catalog::{FileLookup, SourceFiles, SourceResolver, TargetError};

/// `#d<n>-<t>` at the end of a target, case-insensitive.
static D_FRAGMENT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)#d(\d+)-(\d+)$").ok());

/// What one archive file contributes, computed once.
#[derive(Debug, Default)]
struct ArchiveIndex {
    /// anchor → source id, for citation.
    anchors: HashMap<String, String>,
    /// source id → trust, for the trusted-source set (v2: valid frames; legacy: every id).
    trust: HashMap<String, TrustState>,
    /// Whether this is a v2 archive (its frames are the only ones `link_target` points at).
    v2: bool,
}

/// Resolves source targets and trust against a [`SourceFiles`] tree, caching each archive.
pub struct ArchiveResolver<F: SourceFiles> {
    files: F,
    cache: Mutex<HashMap<String, Option<Arc<ArchiveIndex>>>>,
}

impl<F: SourceFiles> ArchiveResolver<F> {
    /// A resolver with an empty cache. Create one per tree parse: the cache is never invalidated.
    pub fn new(files: F) -> Self {
        ArchiveResolver { files, cache: Mutex::new(HashMap::new()) }
    }

    /// The underlying tree.
    pub fn files(&self) -> &F {
        &self.files
    }

    /// Resolves one definition link target of `topic_path` (relative to `topics/`):
    /// a plain handle verbatim; `relpath#anchor` through the archive it names; a `#d<n>-<t>`
    /// fragment as `D<n>:<t>`; anything else is `invalid source target: <target>`.
    pub fn resolve(&self, topic_path: &str, target: &str) -> Result<String, TargetError> {
        let stripped = strip(target);
        if parse_d_handle(stripped).is_some()
            || (!stripped.contains('#') && is_v2_emittable(stripped))
        {
            return Ok(stripped.to_owned());
        }
        if let Some(source_id) = self.resolve_path(topic_path, target) {
            return Ok(source_id);
        }
        if let Some(captures) = D_FRAGMENT.as_ref().and_then(|re| re.captures(target))
            && let (Some(n), Some(t)) = (captures.get(1), captures.get(2))
        {
            return Ok(format!("D{}:{}", n.as_str(), t.as_str()));
        }
        Err(TargetError { message: format!("invalid source target: {target}") })
    }

    fn resolve_path(&self, topic_path: &str, target: &str) -> Option<String> {
        let (raw_path, fragment) = target.split_once('#')?;
        if raw_path.is_empty() {
            return None;
        }
        let rel = join_normalized(&topic_dir(topic_path), raw_path)?;
        if !rel.starts_with("sources/") {
            return None;
        }
        let index = self.index(&rel)?;
        index.anchors.get(fragment).cloned()
    }

    /// The relative link target citing `source_ref` from `topic_path` (`_source_link`):
    /// `D<n>:<t>` → `sources/D<n>.md#d<n>-<t>`; a provider ref → its v2 location when the v2
    /// archive holds a valid frame for it, else its legacy location; relative to the topic's
    /// directory. Refs with no location are an error.
    pub fn try_link_target(
        &self,
        topic_path: &str,
        source_ref: &str,
    ) -> Result<String, TargetError> {
        let (path, anchor) = if let Some((n, t)) = parse_d_handle(source_ref) {
            (format!("sources/D{n}.md"), format!("d{n}-{t}"))
        } else {
            let Some(id) = SourceId::parse(source_ref) else {
                return Err(TargetError {
                    message: format!("invalid source reference: {source_ref}"),
                });
            };
            let location =
                if self.has_v2_frame(source_ref) { id.v2_location() } else { id.legacy_location() };
            (location.path, location.anchor)
        };
        Ok(format!("{}#{anchor}", relative_path(&path, &topic_dir(topic_path))))
    }

    /// Whether the v2 archive of `source_ref` holds a valid frame for it.
    pub fn has_v2_frame(&self, source_ref: &str) -> bool {
        let Some(id) = SourceId::parse(source_ref) else {
            return false;
        };
        self.index(&id.v2_path())
            .is_some_and(|index| index.v2 && index.trust.contains_key(source_ref))
    }

    /// The trust of a reference, `None` when nothing archived vouches for it: a valid v2 frame
    /// decides (meta-less frames are trusted); otherwise a legacy file at the reference's legacy
    /// location (or `sources/D<n>.md` for `D<n>:<t>`) that names it makes it trusted.
    pub fn trust(&self, source_ref: &str) -> Option<TrustState> {
        if let Some((n, _)) = parse_d_handle(source_ref) {
            return self.index(&format!("sources/D{n}.md"))?.trust.get(source_ref).copied();
        }
        let id = SourceId::parse(source_ref)?;
        if let Some(state) =
            self.index(&id.v2_path()).and_then(|i| i.trust.get(source_ref).copied())
        {
            return Some(state);
        }
        self.index(&id.legacy_path())?.trust.get(source_ref).copied()
    }

    /// The index of one archive, built on first use; `None` when the path holds no regular file.
    fn index(&self, rel: &str) -> Option<Arc<ArchiveIndex>> {
        let mut cache = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(entry) = cache.get(rel) {
            return entry.clone();
        }
        let entry = match self.files.lookup(rel) {
            FileLookup::Text(text) => Some(Arc::new(build_index(rel, &text))),
            FileLookup::Missing | FileLookup::NotRegularFile => None,
        };
        cache.insert(rel.to_owned(), entry.clone());
        entry
    }
}

impl<F: SourceFiles> SourceResolver for ArchiveResolver<F> {
    fn resolve_target(&self, topic_path: &str, target: &str) -> Result<String, TargetError> {
        self.resolve(topic_path, target)
    }

    /// See [`ArchiveResolver::try_link_target`]; a ref with no location is returned unchanged.
    fn link_target(&self, topic_path: &str, source_ref: &str) -> String {
        self.try_link_target(topic_path, source_ref).unwrap_or_else(|_| source_ref.to_owned())
    }
}

fn build_index(rel: &str, text: &str) -> ArchiveIndex {
    let mut index = ArchiveIndex::default();
    if is_v2_source_path(rel) {
        index.v2 = true;
        for frame in scan(rel, text).frames {
            index.anchors.insert(frame.anchor.to_owned(), frame.source_id.to_owned());
            index.trust.insert(frame.source_id.to_owned(), frame.trust());
        }
        return index;
    }
    for header in legacy_headers(rel, text) {
        index.anchors.insert(header.anchor, header.source_id);
    }
    for source_id in legacy_trusted_ids(text) {
        index.trust.insert(source_id, TrustState::Trusted);
    }
    index
}

/// `topics/` + the directory of `topic_path`, without a trailing `/`.
fn topic_dir(topic_path: &str) -> String {
    match topic_path.rfind('/') {
        Some(slash) => format!("topics/{}", &topic_path[..slash]),
        None => "topics".to_owned(),
    }
}

/// `base/rel` with `.` and `..` applied lexically; `None` when it is absolute or climbs out of
/// the memory root.
fn join_normalized(base: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// Python's `os.path.relpath(target, start)` for two clean relative paths, with `/`.
fn relative_path(target: &str, start: &str) -> String {
    crate::python::relpath(target, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(topic_dir("projects/x.md"), "topics/projects");
        assert_eq!(topic_dir("core.md"), "topics");
        assert_eq!(
            join_normalized("topics/projects", "../../sources/a/_v2/b.md").as_deref(),
            Some("sources/a/_v2/b.md")
        );
        assert_eq!(join_normalized("topics", "../../x"), None);
        assert_eq!(join_normalized("topics", "/etc/passwd"), None);
        assert_eq!(relative_path("sources/D1.md", "topics/projects"), "../../sources/D1.md");
        assert_eq!(relative_path("sources/D1.md", "topics"), "../sources/D1.md");
    }
}
