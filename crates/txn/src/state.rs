//! On-disk runtime state: the layout, the revision record with its `topics/` manifest, the
//! `sources/` stat fingerprint, `runtime.json`, the intent record, and the atomic file write.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::fs::{FileKind, Fs};
use crate::ids::{IdSource, Revision};

/// The paths of one workspace.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub(crate) root: PathBuf,
    pub(crate) topics: PathBuf,
    pub(crate) sources: PathBuf,
    pub(crate) runtime: PathBuf,
    pub(crate) txn: PathBuf,
    pub(crate) lock: PathBuf,
    pub(crate) revision: PathBuf,
    pub(crate) intent: PathBuf,
    /// `.scriptorium/txn/spare`: the tree the last install replaced, recycled by the next
    /// `begin` as its stage (see [`crate::pipeline`]).
    pub(crate) spare: PathBuf,
    pub(crate) runtime_json: PathBuf,
    pub(crate) workspace_id: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: &Path) -> Layout {
        let runtime = root.join(".scriptorium");
        Layout {
            root: root.to_path_buf(),
            topics: root.join("topics"),
            sources: root.join("sources"),
            txn: runtime.join("txn"),
            lock: runtime.join("write.lock"),
            revision: runtime.join("revision"),
            intent: runtime.join("intent.json"),
            spare: runtime.join("txn").join("spare"),
            runtime_json: runtime.join("runtime.json"),
            workspace_id: runtime.join("workspace-id"),
            runtime,
        }
    }
}

/// Hex SHA-256.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// One entry found by [`walk`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// `/`-separated path relative to the walked directory.
    pub(crate) rel: String,
    /// The exact relative path (differs from `rel` only when a name is not UTF-8).
    pub(crate) raw: PathBuf,
    pub(crate) kind: FileKind,
    /// Whether every component of the name is valid UTF-8 (else `rel` is lossy).
    pub(crate) utf8: bool,
}

/// Every entry under `base` (directories included, symlinks not followed), sorted by path.
/// A missing `base` yields nothing.
pub(crate) fn walk(fs: &dyn Fs, base: &Path) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, String, PathBuf, bool)> =
        vec![(base.to_path_buf(), String::new(), PathBuf::new(), true)];
    while let Some((dir, prefix, raw_prefix, utf8)) = stack.pop() {
        let entries = match fs.read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && prefix.is_empty() => {
                return Ok(Vec::new());
            }
            Err(e) => return Err(Error::io("read_dir", &dir)(e)),
        };
        for (name, kind) in entries {
            let (text, ok) = match name.to_str() {
                Some(s) => (s.to_owned(), utf8),
                None => (name.to_string_lossy().into_owned(), false),
            };
            let rel = if prefix.is_empty() { text } else { format!("{prefix}/{text}") };
            let raw = raw_prefix.join(&name);
            if kind == FileKind::Dir {
                stack.push((dir.join(&name), rel.clone(), raw.clone(), ok));
            }
            out.push(Entry { rel, raw, kind, utf8: ok });
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// The stat fingerprint of `sources/` (never its content): SHA-256 over every entry's path,
/// kind, size, mtime and inode, in path order.
pub(crate) fn sources_fingerprint(fs: &dyn Fs, sources: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    for entry in walk(fs, sources)? {
        // Directories do not count: an append that created a directory and then failed
        // leaves an empty one behind, which is not a change of the archive.
        if entry.kind == FileKind::Dir {
            continue;
        }
        let path = sources.join(&entry.rel);
        let meta = fs.metadata(&path).map_err(Error::io("stat", &path))?;
        let line = format!(
            "{:?}\0{}\0{}\0{}\0{}\n",
            entry.kind, entry.rel, meta.len, meta.mtime_ns, meta.ino
        );
        hasher.update(line.as_bytes());
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The digest of a `topics/` tree from its (path, content hash) pairs and its irregular
/// entries (symlinks, special files), in path order. Directories do not count.
pub(crate) fn topics_digest<'a>(items: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut hasher = Sha256::new();
    for (rel, hash) in items {
        hasher.update(rel.as_bytes());
        hasher.update([0]);
        hasher.update(hash.as_bytes());
        hasher.update([b'\n']);
    }
    hex::encode(hasher.finalize())
}

/// The hash recorded for an entry that is not a regular file.
pub(crate) fn irregular_hash(kind: FileKind) -> String {
    format!("{kind:?}").to_lowercase()
}

/// One `topics/` file as recorded at install.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ManifestEntry {
    pub(crate) path: String,
    pub(crate) sha256: String,
    pub(crate) len: u64,
    pub(crate) mtime_ns: i64,
    pub(crate) ino: u64,
}

/// How many [`InstalledBatch`]es the revision record keeps (the newest ones).
pub(crate) const BATCH_STAMPS: usize = 64;

/// A batch of session records a transaction writes into the topics (see
/// [`crate::BeginOptions::batch`]). The install records it in the revision record atomically
/// with the topics, so a writer that dies between installing a batch and marking it
/// recognises the batch on its next run ([`crate::Workspace::installed_batches`]) and marks it
/// without writing it again.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Batch {
    /// The first 16 hex digits of SHA-256 over `"scriptorium-batch/1"` and the batch's source
    /// IDs in batch order, NUL-separated.
    pub key: String,
    /// How many records the batch has.
    pub count: usize,
}

impl Batch {
    /// The batch of these source IDs (in batch order, oldest first).
    pub fn new<S: AsRef<str>>(source_ids: &[S]) -> Batch {
        let mut hasher = Sha256::new();
        hasher.update(b"scriptorium-batch/1");
        for id in source_ids {
            hasher.update([0]);
            hasher.update(id.as_ref().as_bytes());
        }
        Batch { key: hex::encode(&hasher.finalize()[..8]), count: source_ids.len() }
    }
}

/// A [`Batch`] and the transaction that installed it, as the revision record keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledBatch {
    /// The batch.
    #[serde(flatten)]
    pub batch: Batch,
    /// The transaction that installed it.
    pub txn_id: String,
}

/// `.scriptorium/revision`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RevisionRecord {
    pub(crate) version: u32,
    pub(crate) counter: u64,
    pub(crate) txn_id: String,
    pub(crate) topics: String,
    pub(crate) sources: String,
    /// The digest of `runtime.json` when the record was written (informational: runtime
    /// state is not part of the revision).
    pub(crate) runtime: String,
    pub(crate) files: Vec<ManifestEntry>,
    /// The workspace ID, so that a lost `.scriptorium/workspace-id` is restored rather than
    /// minted anew (which would make every written turn pending again). Absent in records
    /// written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) workspace_id: Option<String>,
    /// The batches the last installs wrote, oldest first, at most [`BATCH_STAMPS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) batches: Vec<InstalledBatch>,
}

impl RevisionRecord {
    pub(crate) fn revision(&self) -> Revision {
        revision_of(self.counter, &self.txn_id, &self.topics, &self.sources)
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

/// The revision string (see [`Revision`]). Runtime state (`runtime.json`: creation order and
/// organizer counters) is not part of it: a transaction that changes no topic byte keeps the
/// revision, so no agent's `base_revision` goes stale for bookkeeping.
pub(crate) fn revision_of(counter: u64, txn_id: &str, topics: &str, sources: &str) -> Revision {
    let mut hasher = Sha256::new();
    hasher.update(
        format!("scriptorium-revision/2\0{counter}\0{txn_id}\0{topics}\0{sources}").as_bytes(),
    );
    let digest = hasher.finalize();
    Revision(format!("{counter}-{}", hex::encode(&digest[..8])))
}

/// Reads the revision record; `None` when the file does not exist.
pub(crate) fn read_record(fs: &dyn Fs, layout: &Layout) -> Result<Option<RevisionRecord>> {
    let bytes = match fs.read(&layout.revision) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read", &layout.revision)(e)),
    };
    let record: RevisionRecord = serde_json::from_slice(&bytes).map_err(|e| {
        Error::corrupt(&layout.revision, format!("{e} (delete the file to rebuild it)"))
    })?;
    if record.version != 1 {
        return Err(Error::corrupt(&layout.revision, "unknown revision record version"));
    }
    Ok(Some(record))
}

/// The digest of `runtime.json` (empty when missing) and its bytes.
pub(crate) fn read_runtime(fs: &dyn Fs, layout: &Layout) -> Result<(String, Option<Vec<u8>>)> {
    match fs.read(&layout.runtime_json) {
        Ok(bytes) => Ok((sha256_hex(&bytes), Some(bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((String::new(), None)),
        Err(e) => Err(Error::io("read", &layout.runtime_json)(e)),
    }
}

/// Writes `bytes` to `target` atomically: a private temp file in `.scriptorium/` (0600), fsync,
/// rename over `target`, fsync of `target`'s directory. A crash leaves the old or the new bytes
/// (and at worst a `tmp-*` file, which recovery deletes).
pub(crate) fn write_atomic(
    fs: &dyn Fs,
    layout: &Layout,
    ids: &dyn IdSource,
    target: &Path,
    bytes: &[u8],
) -> Result<()> {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = layout.runtime.join(format!("tmp-{}-{name}", ids.hex8()));
    let result = (|| {
        fs.write(&tmp, bytes, 0o600).map_err(Error::io("write", &tmp))?;
        fs.sync_file(&tmp).map_err(Error::io("fsync", &tmp))?;
        fs.rename(&tmp, target).map_err(Error::io("rename", &tmp))
    })();
    if let Err(e) = result {
        // Best effort; recovery removes whatever is left.
        let _ = fs.remove_file(&tmp);
        return Err(e);
    }
    let dir = target.parent().unwrap_or(&layout.root);
    fs.sync_dir(dir).map_err(Error::io("fsync dir", dir))
}

/// Which way an install swaps the trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SwapMode {
    /// `renameat2(RENAME_EXCHANGE)`; the old tree ends at `<stage>/topics`.
    Exchange,
    /// Two renames: live → `<stage>/old-topics`, then `<stage>/topics` → live.
    Rename,
}

/// `.scriptorium/intent.json`: written (fsynced) before an install or an archive append
/// touches the live tree, removed after it finished.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Intent {
    pub(crate) version: u32,
    /// `install` or `archive`.
    pub(crate) kind: String,
    pub(crate) txn_id: String,
    /// The stage directory, relative to the memory root (installs only).
    pub(crate) stage: String,
    pub(crate) mode: SwapMode,
    /// Inode of the live `topics/` before the swap.
    pub(crate) old_ino: u64,
    /// Inode of the staged `topics/` (the live one after the swap).
    pub(crate) new_ino: u64,
    pub(crate) old_revision: String,
    pub(crate) new_revision: String,
    /// The revision record to write when rolling forward (for an archive, its `sources`
    /// field is recomputed from the disk).
    pub(crate) record: RevisionRecord,
    /// The new `runtime.json` bytes, when the install changes them.
    pub(crate) runtime: Option<String>,
    /// The `sources/` fingerprint before an archive append (empty for installs).
    #[serde(default)]
    pub(crate) old_sources: String,
}

/// The organizer counters of `runtime.json` (reference §5.4, §6.6).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Write commits since the last global organize.
    pub write_commits_since_global: u64,
    /// Batches written since the last local organize.
    pub local_batches: u64,
    /// Tokens written since the last local organize.
    pub local_tokens: u64,
    /// When the last global organize ran (ISO 8601), `None` when never.
    pub last_global_at: Option<String>,
}

/// `runtime.json` (reference §6.6): creation order plus the organizer counters. Unknown keys
/// are dropped; an unreadable file loads as the defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RuntimeState {
    pub(crate) creation_order: Vec<(String, u64)>,
    pub(crate) write_commits_since_global: serde_json::Value,
    pub(crate) local_batches: serde_json::Value,
    pub(crate) local_tokens: serde_json::Value,
    pub(crate) last_global_at: serde_json::Value,
}

impl RuntimeState {
    pub(crate) fn parse(bytes: Option<&[u8]>) -> RuntimeState {
        let defaults = RuntimeState {
            creation_order: Vec::new(),
            write_commits_since_global: 0.into(),
            local_batches: 0.into(),
            local_tokens: 0.into(),
            last_global_at: serde_json::Value::Null,
        };
        let Some(bytes) = bytes else { return defaults };
        let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(bytes) else {
            return defaults;
        };
        let int = |key: &str| match map.get(key) {
            Some(v @ serde_json::Value::Number(n)) if n.is_u64() || n.is_i64() => v.clone(),
            _ => 0.into(),
        };
        let mut order: Vec<(String, u64)> = Vec::new();
        if let Some(serde_json::Value::Object(co)) = map.get("creation_order") {
            for (id, value) in co {
                if let Some(n) = value.as_u64() {
                    order.push((id.clone(), n));
                }
            }
        }
        order.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        RuntimeState {
            creation_order: order,
            write_commits_since_global: int("write_commits_since_global"),
            local_batches: int("local_batches"),
            local_tokens: int("local_tokens"),
            last_global_at: match map.get("last_global_at") {
                Some(v @ (serde_json::Value::Number(_) | serde_json::Value::String(_))) => {
                    v.clone()
                }
                _ => serde_json::Value::Null,
            },
        }
    }

    /// The creation order as a map.
    pub(crate) fn order(&self) -> BTreeMap<String, u64> {
        self.creation_order.iter().cloned().collect()
    }

    /// The counters (a counter that is not a non-negative integer reads as 0).
    pub(crate) fn counters(&self) -> Counters {
        let int = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
        Counters {
            write_commits_since_global: int(&self.write_commits_since_global),
            local_batches: int(&self.local_batches),
            local_tokens: int(&self.local_tokens),
            last_global_at: self.last_global_at.as_str().map(str::to_owned),
        }
    }

    /// Replaces the counters.
    pub(crate) fn set_counters(&mut self, counters: &Counters) {
        self.write_commits_since_global = counters.write_commits_since_global.into();
        self.local_batches = counters.local_batches.into();
        self.local_tokens = counters.local_tokens.into();
        self.last_global_at = counters
            .last_global_at
            .as_ref()
            .map_or(serde_json::Value::Null, |at| serde_json::Value::String(at.clone()));
    }

    /// The Python layout: `json.dumps(indent=2)` with `creation_order` in creation order.
    pub(crate) fn render(&self) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
        let mut out = String::from("{\n  \"creation_order\": {");
        for (i, (id, n)) in self.creation_order.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(&format!("    {}: {n}", quote(id)));
        }
        out.push_str(if self.creation_order.is_empty() { "},\n" } else { "\n  },\n" });
        out.push_str(&format!(
            "  \"write_commits_since_global\": {},\n  \"local_batches\": {},\n  \
             \"local_tokens\": {},\n  \"last_global_at\": {}\n}}\n",
            self.write_commits_since_global,
            self.local_batches,
            self.local_tokens,
            self.last_global_at
        ));
        out
    }

    /// Reference §7.5: seeded from the committed units' parse order when empty; every ID new in
    /// `units` gets `max + 1, …` in parse order, aliases of one paragraph sharing a number.
    /// Returns whether anything was added.
    pub(crate) fn seed<'u>(
        &mut self,
        committed: impl Iterator<Item = &'u scriptorium_topics_format::Unit>,
        units: impl Iterator<Item = &'u scriptorium_topics_format::Unit>,
    ) -> bool {
        let mut changed = false;
        let mut known: HashMap<String, u64> = self.creation_order.iter().cloned().collect();
        if known.is_empty() {
            // Parse order of the committed tree: a unit's number is how many units were parsed
            // before its paragraph across the whole tree (the aliases of one paragraph share
            // it); `created_order` counts within the unit's file.
            let mut paragraph: Option<((&str, usize), u64)> = None;
            for (index, unit) in committed.enumerate() {
                let this = (unit.topic_path.as_str(), unit.created_order);
                let n = match paragraph {
                    Some((key, n)) if key == this => n,
                    _ => index as u64,
                };
                paragraph = Some((this, n));
                if known.insert(unit.memory_id.clone(), n).is_none() {
                    self.creation_order.push((unit.memory_id.clone(), n));
                    changed = true;
                }
            }
            self.creation_order.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        }
        let mut next = known.values().copied().max().map_or(0, |m| m + 1);
        let mut by_paragraph: BTreeMap<(String, usize), u64> = BTreeMap::new();
        for unit in units {
            if known.contains_key(&unit.memory_id) {
                continue;
            }
            let key = (unit.topic_path.clone(), unit.created_order);
            let n = *by_paragraph.entry(key).or_insert_with(|| {
                let n = next;
                next += 1;
                n
            });
            known.insert(unit.memory_id.clone(), n);
            self.creation_order.push((unit.memory_id.clone(), n));
            changed = true;
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_json_round_trips_in_python_layout() {
        let text = "{\n  \"creation_order\": {\n    \"0bfbe405\": 0,\n    \"258a76ef\": 1\n  },\n  \
                    \"write_commits_since_global\": 0,\n  \"local_batches\": 0,\n  \
                    \"local_tokens\": 0,\n  \"last_global_at\": null\n}\n";
        assert_eq!(RuntimeState::parse(Some(text.as_bytes())).render(), text);
        let empty = RuntimeState::parse(None).render();
        assert!(empty.starts_with("{\n  \"creation_order\": {},\n"), "{empty}");
        assert_eq!(RuntimeState::parse(Some(b"[1, 2]")), RuntimeState::parse(None));
    }

    #[test]
    fn revision_strings_have_the_documented_shape() {
        let revision = revision_of(12, "t-1", "a", "b");
        let (counter, hash) = revision.as_str().split_once('-').expect("dash");
        assert_eq!(counter, "12");
        assert_eq!(hash.len(), 16);
        assert_ne!(revision, revision_of(12, "t-1", "a", "c"));
        assert_ne!(revision, revision_of(13, "t-1", "a", "b"));
    }
}
