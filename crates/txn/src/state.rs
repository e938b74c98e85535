//! On-disk runtime state: the layout, the revision record with its `topics/` manifest, the
//! `sources/` scan, `runtime.json`, the intent record, and the atomic file write.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::fs::{FileKind, Fs};
use crate::ids::{IdSource, Revision};

pub(crate) use scriptorium_workspace_fs::Layout;

/// Hex SHA-256.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

pub(crate) use scriptorium_workspace_fs::{walk, walk_meta};

/// `sources/` by content, as the revision record keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SourcesScan {
    /// What counts for the revision: [`SourcesScan::content`], or, for a record written
    /// before content digests while `sources/` is as it recorded, that record's stat
    /// fingerprint (so an upgrade moves no revision; the next install records the content).
    pub(crate) digest: String,
    /// The content digest: SHA-256 over each entry's path and content hash (an entry that is
    /// not a regular file counts by kind), in path order; directories do not count.
    pub(crate) content: String,
    /// Every non-directory entry with its stat and hash (what the record keeps).
    pub(crate) files: Vec<ManifestEntry>,
    /// Entries whose stat had changed but whose bytes had not (a copy, a checkout, `touch`):
    /// the record's stat cache is stale, see [`refresh_stats`].
    pub(crate) restated: usize,
}

/// Scans `sources/` against the record's manifest `known`: one `lstat` per entry, the hash
/// taken from `known` when the stat is unchanged and older than the record by
/// [`crate::live::RACY_NS`], the bytes read and hashed otherwise (as the `topics/` scan does).
/// `known_content` is the content digest of `known` when the caller has it: a scan that finds
/// exactly the entries of `known` with their hashes takes it instead of hashing the manifest
/// again (the same items in the same walk order give the same digest).
pub(crate) fn scan_sources(
    fs: &dyn Fs,
    sources: &Path,
    known: &[ManifestEntry],
    known_content: Option<&str>,
    trust: crate::live::StatTrust,
) -> Result<SourcesScan> {
    let known_count = known.len();
    let known: HashMap<&str, &ManifestEntry> = known.iter().map(|e| (e.path.as_str(), e)).collect();
    let mut scan = SourcesScan::default();
    let mut as_known = known_content.is_some();
    for (entry, meta) in walk_meta(fs, sources)? {
        // Directories do not count: an append that created a directory and then failed
        // leaves an empty one behind, which is not a change of the archive.
        if entry.kind == FileKind::Dir {
            continue;
        }
        let path = sources.join(&entry.rel);
        let recorded = known.get(entry.rel.as_str()).copied();
        let sha256 = if entry.kind == FileKind::File {
            let hashed = crate::live::hash_by_stat(fs, &path, &meta, recorded, trust)?;
            scan.restated += usize::from(hashed.restated);
            hashed.hash
        } else {
            irregular_hash(entry.kind)
        };
        as_known &= recorded.is_some_and(|e| e.sha256 == sha256);
        scan.files.push(ManifestEntry {
            path: entry.rel,
            sha256,
            len: meta.len,
            mtime_ns: meta.mtime_ns,
            ino: meta.ino,
        });
    }
    scan.content = match known_content {
        Some(content) if as_known && scan.files.len() == known_count => content.to_owned(),
        _ => topics_digest(scan.files.iter().map(|e| (e.path.as_str(), e.sha256.as_str()))),
    };
    scan.digest = scan.content.clone();
    Ok(scan)
}

/// [`scan_sources`] against the revision record `record`, with its rule for records written
/// before content digests (see [`SourcesScan::digest`]).
pub(crate) fn sources_of(
    fs: &dyn Fs,
    sources: &Path,
    record: &RevisionRecord,
    trust: crate::live::StatTrust,
) -> Result<SourcesScan> {
    // A record written before content digests keeps no manifest and a stat fingerprint as
    // its digest; every other record's digest is the content digest of its manifest.
    let known_content = (!record.source_files.is_empty()).then_some(record.sources.as_str());
    let mut scan = scan_sources(fs, sources, &record.source_files, known_content, trust)?;
    if record.source_files.is_empty()
        && scan.content != record.sources
        && legacy_sources_fingerprint(fs, sources)? == record.sources
    {
        scan.digest = record.sources.clone();
    }
    Ok(scan)
}

/// The stat fingerprint records written before content digests kept for `sources/`:
/// SHA-256 over every entry's path, kind, size, mtime and inode, in path order.
fn legacy_sources_fingerprint(fs: &dyn Fs, sources: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    for entry in walk(fs, sources)? {
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

/// `record` with the stat of every manifest entry (of `topics/` and `sources/`) whose bytes
/// are unchanged taken from the live scans. The digests, the
/// counter and the transaction stay, so the revision does not move: this only spares later
/// scans from re-reading files a copy or checkout touched (git's index refresh).
pub(crate) fn refresh_stats(
    record: &RevisionRecord,
    topics: &crate::live::LiveTree,
    sources: &SourcesScan,
) -> RevisionRecord {
    /// The live stat of an entry whose bytes are the recorded ones.
    fn restat(entry: &mut ManifestEntry, live: Option<(&str, u64, i64, u64)>) {
        if let Some((hash, len, mtime_ns, ino)) = live
            && hash == entry.sha256
        {
            (entry.len, entry.mtime_ns, entry.ino) = (len, mtime_ns, ino);
        }
    }
    let mut next = record.clone();
    for entry in &mut next.files {
        let live = topics.files.get(&entry.path);
        restat(entry, live.map(|l| (l.hash.as_str(), l.meta.len, l.meta.mtime_ns, l.meta.ino)));
    }
    let live: HashMap<&str, &ManifestEntry> =
        sources.files.iter().map(|e| (e.path.as_str(), e)).collect();
    for entry in &mut next.source_files {
        let l = live.get(entry.path.as_str());
        restat(entry, l.map(|l| (l.sha256.as_str(), l.len, l.mtime_ns, l.ino)));
    }
    next
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
    /// The `sources/` manifest (every non-directory entry's path, hash and stat), so that a
    /// scan re-reads only entries whose stat changed. Absent in records written before it
    /// existed (their `sources` is a stat fingerprint, see [`scan_sources`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) source_files: Vec<ManifestEntry>,
    /// The workspace ID, so that a lost `.scriptorium/workspace-id` is restored rather than
    /// minted anew (which would make every written turn pending again). Absent in records
    /// written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) workspace_id: Option<String>,
    /// The batches the last installs wrote, oldest first, at most [`BATCH_STAMPS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) batches: Vec<InstalledBatch>,
    /// The digest items (path, kind) of the `topics/` entries `files` leaves out (special
    /// files, non-UTF-8 names), sorted: with `files`, exactly what `topics` digests, so a scan
    /// that finds both as recorded takes `topics` instead of hashing the manifest again.
    /// Absent in records written before it existed (and in the empty record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unlisted: Option<Vec<(String, String)>>,
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
    read_record_bytes(fs, layout)?.map(|bytes| parse_record(layout, &bytes)).transpose()
}

/// The bytes of the revision record (`None` when missing).
pub(crate) fn read_record_bytes(fs: &dyn Fs, layout: &Layout) -> Result<Option<Vec<u8>>> {
    match fs.read(&layout.revision) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", &layout.revision)(e)),
    }
}

/// Parses the revision record `bytes` (read from `layout.revision`).
pub(crate) fn parse_record(layout: &Layout, bytes: &[u8]) -> Result<RevisionRecord> {
    let record: RevisionRecord = serde_json::from_slice(bytes).map_err(|e| {
        Error::corrupt(&layout.revision, format!("{e} (delete the file to rebuild it)"))
    })?;
    if record.version != 1 {
        return Err(Error::corrupt(&layout.revision, "unknown revision record version"));
    }
    Ok(record)
}

/// The bytes of `runtime.json` (`None` when missing).
pub(crate) fn read_runtime(fs: &dyn Fs, layout: &Layout) -> Result<Option<Vec<u8>>> {
    match fs.read(&layout.runtime_json) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
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
    let durability = scriptorium_workspace_fs::Durability::Durable;
    Ok(scriptorium_workspace_fs::write_atomic(fs, &tmp, target, bytes, 0o600, durability)?)
}

/// Writes the intent record `bytes` atomically and durably: into `.scriptorium/intent.next`
/// (the file the last removal left there, or a new one), fsync, rename to `intent.json`, fsync
/// of `.scriptorium/`. A crash before the rename leaves no intent (whatever `intent.next`
/// holds is never read). Only the holder of the write lock writes or removes the intent.
pub(crate) fn write_intent(fs: &dyn Fs, layout: &Layout, bytes: &[u8]) -> Result<()> {
    let durability = scriptorium_workspace_fs::Durability::Durable;
    let next = &layout.intent_next;
    Ok(scriptorium_workspace_fs::write_atomic(fs, next, &layout.intent, bytes, 0o600, durability)?)
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
    /// The `sources/` content digest before an archive append (empty for installs).
    #[serde(default)]
    pub(crate) old_sources: String,
}

/// The organizer counters of `runtime.json` (see
/// `docs/format.md#creation-order-and-organizer-counters`).
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

/// The creation order of `runtime.json`: memory ID → creation number (see
/// `docs/format.md#creation-order`).
///
/// Numbers only grow and entries are never dropped, so the order is kept as a shared table
/// (the file as last parsed or compacted) plus the entries numbered since: a transaction that
/// adds IDs copies nothing of the table, and the file's text is the table's cached rendering
/// followed by the new entries.
#[derive(Clone, Debug, Default)]
pub struct CreationOrder {
    table: Arc<OrderTable>,
    /// Entries numbered after the table's, sorted by (number, ID); every number is larger than
    /// the table's.
    added: Vec<(String, u64)>,
    added_index: HashMap<String, u64>,
}

/// The shared part of a [`CreationOrder`].
#[derive(Debug, Default)]
struct OrderTable {
    /// `(id, number)`, sorted by number then ID (the order the file lists them in).
    entries: Vec<(String, u64)>,
    index: HashMap<String, u64>,
    /// The entries as the file lists them (`    "id": n` lines joined by `,\n`), rendered once.
    rendered: std::sync::OnceLock<String>,
}

impl PartialEq for CreationOrder {
    fn eq(&self, other: &CreationOrder) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl CreationOrder {
    fn from_index(index: HashMap<String, u64>) -> CreationOrder {
        let mut entries: Vec<(String, u64)> =
            index.iter().map(|(id, n)| (id.clone(), *n)).collect();
        entries.sort_unstable_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        CreationOrder {
            table: Arc::new(OrderTable { entries, index, rendered: std::sync::OnceLock::new() }),
            added: Vec::new(),
            added_index: HashMap::new(),
        }
    }

    /// The creation number of `id`.
    pub fn get(&self, id: &str) -> Option<u64> {
        self.table.index.get(id).or_else(|| self.added_index.get(id)).copied()
    }

    /// One more than the largest number (0 when empty): the next ID's number.
    pub fn next(&self) -> u64 {
        self.added.last().or(self.table.entries.last()).map_or(0, |(_, n)| n + 1)
    }

    /// How many IDs have a number.
    pub fn len(&self) -> usize {
        self.table.entries.len() + self.added.len()
    }

    /// Whether no ID has a number.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every `(id, number)`, by number then ID.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.table.entries.iter().chain(&self.added).map(|(id, n)| (id.as_str(), *n))
    }

    /// The order as a map.
    pub fn to_map(&self) -> HashMap<String, u64> {
        self.iter().map(|(id, n)| (id.to_owned(), n)).collect()
    }

    /// Numbers `id` (which must have none) `n`, at least [`CreationOrder::next`].
    fn push(&mut self, id: String, n: u64) {
        self.added_index.insert(id.clone(), n);
        self.added.push((id, n));
    }

    /// Folds the added entries into a new table once they are many (amortized: a fold copies
    /// the table, and happens after a number of additions proportional to its size).
    fn compact_if_large(&mut self) {
        if self.added.len() > 256 && self.added.len() > self.table.entries.len() / 8 {
            let mut index = self.table.index.clone();
            index.extend(self.added_index.drain());
            *self = CreationOrder::from_index(index);
        }
    }

    fn render_into(&self, out: &mut String) {
        let table = self.table.rendered.get_or_init(|| {
            let mut text = String::with_capacity(24 * self.table.entries.len());
            for (i, (id, n)) in self.table.entries.iter().enumerate() {
                if i > 0 {
                    text.push_str(",\n");
                }
                push_entry(&mut text, id, *n);
            }
            text
        });
        out.push_str(table);
        for (i, (id, n)) in self.added.iter().enumerate() {
            if i > 0 || !table.is_empty() {
                out.push_str(",\n");
            }
            push_entry(out, id, *n);
        }
    }
}

/// `    "<id>": <n>`.
fn push_entry(out: &mut String, id: &str, n: u64) {
    use std::fmt::Write as _;
    out.push_str("    ");
    push_json_string(out, id);
    let _ = write!(out, ": {n}");
}

/// `runtime.json` (see `docs/format.md#creation-order-and-organizer-counters`): creation order
/// plus the organizer counters. Unknown keys are dropped; an unreadable file loads as the
/// defaults.
///
/// Parsed once per version of the file and shared ([`RuntimeCache`]); a transaction clones it
/// (cheaply: the order's table is shared) only when it adds an ID or moves a counter.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RuntimeState {
    pub(crate) creation_order: CreationOrder,
    pub(crate) write_commits_since_global: serde_json::Value,
    pub(crate) local_batches: serde_json::Value,
    pub(crate) local_tokens: serde_json::Value,
    pub(crate) last_global_at: serde_json::Value,
}

/// `runtime.json` as read, before the rules of [`RuntimeState::parse`] apply.
#[derive(Deserialize)]
struct RawRuntime {
    #[serde(default)]
    creation_order: OrderField,
    #[serde(default)]
    write_commits_since_global: serde_json::Value,
    #[serde(default)]
    local_batches: serde_json::Value,
    #[serde(default)]
    local_tokens: serde_json::Value,
    #[serde(default)]
    last_global_at: serde_json::Value,
}

/// The `creation_order` value: the entries of an object whose value is a non-negative integer
/// (a later duplicate key wins, as in `json.loads`); anything else is no entries.
#[derive(Default)]
struct OrderField(HashMap<String, u64>);

impl<'de> Deserialize<'de> for OrderField {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = OrderField;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<OrderField, A::Error> {
                let mut out = HashMap::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((id, value)) = map.next_entry::<String, serde_json::Value>()? {
                    match value.as_u64() {
                        Some(n) => out.insert(id, n),
                        None => out.remove(&id),
                    };
                }
                Ok(OrderField(out))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<OrderField, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(OrderField::default())
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<OrderField, E> {
                Ok(OrderField::default())
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<OrderField, E> {
                Ok(OrderField::default())
            }
            fn visit_u64<E>(self, _: u64) -> std::result::Result<OrderField, E> {
                Ok(OrderField::default())
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<OrderField, E> {
                Ok(OrderField::default())
            }
            fn visit_str<E>(self, _: &str) -> std::result::Result<OrderField, E> {
                Ok(OrderField::default())
            }
            fn visit_unit<E>(self) -> std::result::Result<OrderField, E> {
                Ok(OrderField::default())
            }
        }
        deserializer.deserialize_any(Entries)
    }
}

impl RuntimeState {
    pub(crate) fn parse(bytes: Option<&[u8]>) -> RuntimeState {
        let defaults = RuntimeState {
            creation_order: CreationOrder::default(),
            write_commits_since_global: 0.into(),
            local_batches: 0.into(),
            local_tokens: 0.into(),
            last_global_at: serde_json::Value::Null,
        };
        let Some(bytes) = bytes else { return defaults };
        // Not a JSON object (or not JSON): the defaults. (A struct also deserializes from an
        // array; the file must be an object.)
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return defaults;
        }
        let Ok(raw) = serde_json::from_slice::<RawRuntime>(bytes) else { return defaults };
        let int = |v: serde_json::Value| match v {
            v @ serde_json::Value::Number(_) if v.is_u64() || v.is_i64() => v,
            _ => 0.into(),
        };
        RuntimeState {
            creation_order: CreationOrder::from_index(raw.creation_order.0),
            write_commits_since_global: int(raw.write_commits_since_global),
            local_batches: int(raw.local_batches),
            local_tokens: int(raw.local_tokens),
            last_global_at: match raw.last_global_at {
                v @ (serde_json::Value::Number(_) | serde_json::Value::String(_)) => v,
                _ => serde_json::Value::Null,
            },
        }
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
        use std::fmt::Write as _;
        let order = &self.creation_order;
        let mut out = String::with_capacity(160 + 24 * order.len());
        out.push_str("{\n  \"creation_order\": {");
        if order.is_empty() {
            out.push_str("},\n");
        } else {
            out.push('\n');
            order.render_into(&mut out);
            out.push_str("\n  },\n");
        }
        let _ = write!(
            out,
            "  \"write_commits_since_global\": {},\n  \"local_batches\": {},\n  \
             \"local_tokens\": {},\n  \"last_global_at\": {}\n}}\n",
            self.write_commits_since_global,
            self.local_batches,
            self.local_tokens,
            self.last_global_at
        );
        out
    }

    /// Whether [`RuntimeState::seed`] would add anything: some unit of `units` has no number,
    /// or the order is empty and there are committed units to seed it from. Costs what `units`
    /// holds.
    pub(crate) fn lacks<'u>(
        &self,
        mut committed: impl Iterator<Item = &'u scriptorium_topics_format::Unit>,
        mut units: impl Iterator<Item = &'u scriptorium_topics_format::Unit>,
    ) -> bool {
        (self.creation_order.is_empty() && committed.next().is_some())
            || units.any(|u| self.creation_order.get(&u.memory_id).is_none())
    }

    /// Numbers the creation order (see `docs/format.md#creation-order`): seeded from the
    /// committed units' parse order when empty; every ID new in `units` gets `max + 1, …` in
    /// parse order, aliases of one paragraph sharing a number. Returns whether anything was
    /// added. Costs what `units` holds, plus the committed tree
    /// once when the order is empty.
    pub(crate) fn seed<'u>(
        &mut self,
        committed: impl Iterator<Item = &'u scriptorium_topics_format::Unit>,
        units: impl Iterator<Item = &'u scriptorium_topics_format::Unit>,
    ) -> bool {
        let order = &mut self.creation_order;
        let before = order.len();
        if order.is_empty() {
            // Parse order of the committed tree: a unit's number is how many units were parsed
            // before its paragraph across the whole tree (the aliases of one paragraph share
            // it); `created_order` counts within the unit's file.
            let mut index: HashMap<String, u64> = HashMap::new();
            let mut paragraph: Option<((&str, usize), u64)> = None;
            for (i, unit) in committed.enumerate() {
                let this = (unit.topic_path.as_str(), unit.created_order);
                let n = match paragraph {
                    Some((key, n)) if key == this => n,
                    _ => i as u64,
                };
                paragraph = Some((this, n));
                index.entry(unit.memory_id.clone()).or_insert(n);
            }
            *order = CreationOrder::from_index(index);
        }
        let mut next = order.next();
        let mut by_paragraph: HashMap<(&str, usize), u64> = HashMap::new();
        let first_added = order.added.len();
        for unit in units {
            if order.get(&unit.memory_id).is_some() {
                continue;
            }
            let key = (unit.topic_path.as_str(), unit.created_order);
            let n = *by_paragraph.entry(key).or_insert_with(|| {
                let n = next;
                next += 1;
                n
            });
            order.push(unit.memory_id.clone(), n);
        }
        // Aliases share a number: list them by ID, as a parse of the file would.
        order.added[first_added..].sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        order.compact_if_large();
        order.len() != before
    }
}

/// `s` as a JSON string as Python's `json.dumps` (default `ensure_ascii=True`) writes
/// `runtime.json`'s keys.
fn push_json_string(out: &mut String, s: &str) {
    scriptorium_topics_format::python::push_json_string_ascii(out, s);
}

/// The parsed `runtime.json` of one version of the file, kept by the workspace handle: `begin`
/// reads the file and parses it only when its bytes differ from the cached ones.
#[derive(Clone, Debug, Default)]
pub(crate) struct RuntimeCache {
    pub(crate) bytes: Option<Arc<[u8]>>,
    pub(crate) state: Arc<RuntimeState>,
}

impl RuntimeCache {
    /// The state of `bytes`: the cached one when the bytes are the same.
    pub(crate) fn state_of(cached: Option<&RuntimeCache>, bytes: Option<Vec<u8>>) -> RuntimeCache {
        if let Some(cached) = cached
            && cached.bytes.as_deref() == bytes.as_deref()
        {
            return cached.clone();
        }
        let state = Arc::new(RuntimeState::parse(bytes.as_deref()));
        RuntimeCache { bytes: bytes.map(Arc::from), state }
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
    fn runtime_json_keeps_only_integer_numbers_and_the_last_duplicate() {
        let text = br#"{"creation_order": {"a": 1, "b": -2, "c": 1.5, "d": "3", "a": 4},
                      "local_batches": 2}"#;
        let state = RuntimeState::parse(Some(text));
        let order: Vec<(&str, u64)> = state.creation_order.iter().collect();
        assert_eq!(order, [("a", 4)]);
        assert_eq!(state.counters().local_batches, 2);
        for other in
            [&br#"{"creation_order": [1, 2], "local_batches": 2}"#[..], br#"{"creation_order": 7}"#]
        {
            assert!(RuntimeState::parse(Some(other)).creation_order.is_empty());
        }
        assert_eq!(RuntimeState::parse(Some(b"  [1, 2]")), RuntimeState::parse(None));
        assert_eq!(RuntimeState::parse(Some(b"{not json")), RuntimeState::parse(None));
    }

    /// A unit of `path` at paragraph `order` with `id`.
    fn unit(path: &str, order: usize, id: &str) -> scriptorium_topics_format::Unit {
        let text = format!("# T\n\nFact.[^e1] ^{id}\n\n[^e1]: Time: `2024`; Sources: [s](x/y/z)\n");
        let file = scriptorium_topics_format::TopicFile::new(path, text);
        let resolver = scriptorium_topics_format::source::ArchiveResolver::new(
            std::collections::BTreeMap::new(),
        );
        let mut parse = scriptorium_topics_format::parse_tree(&[file], &resolver);
        let mut unit = parse.units.remove(0);
        unit.created_order = order;
        unit
    }

    #[test]
    fn numbers_added_in_layers_render_as_one_file_and_survive_compaction() {
        let committed: Vec<_> = (0..3).map(|i| unit("a.md", i, &format!("0000000{i}"))).collect();
        let mut state = RuntimeState::parse(None);
        assert!(state.seed(committed.iter(), std::iter::empty()));
        let mut reference = state.clone();
        // Many transactions, each adding two aliases of one paragraph and one more paragraph.
        for round in 0..400u32 {
            let new = [
                unit("b.md", 0, &format!("{:08x}", 0x1000_0000 + 2 * round)),
                unit("b.md", 0, &format!("{:08x}", 0x1000_0001 + 2 * round)),
                unit("b.md", 1, &format!("{:08x}", 0x2000_0000 + round)),
            ];
            assert!(state.lacks(committed.iter(), new.iter()));
            assert!(state.seed(committed.iter(), new.iter()));
            assert!(!state.lacks(committed.iter(), new.iter()));
            assert!(!state.seed(committed.iter(), new.iter()), "numbered once");
            // The layered state renders what a parse of its own file renders.
            if round % 97 == 0 || round == 399 {
                let text = state.render();
                let reparsed = RuntimeState::parse(Some(text.as_bytes()));
                assert_eq!(reparsed.render(), text);
                assert_eq!(reparsed, state);
            }
            reference = state.clone();
        }
        assert_eq!(reference.creation_order.len(), 3 + 3 * 400);
        assert_eq!(reference.creation_order.get("00000002"), Some(2));
        // Round r's aliases share number 3 + 2r, its other paragraph gets 4 + 2r.
        assert_eq!(
            reference.creation_order.get(&format!("{:08x}", 0x1000_0001 + 2 * 399)),
            Some(801)
        );
        assert_eq!(reference.creation_order.get(&format!("{:08x}", 0x2000_0000 + 399)), Some(802));
        assert_eq!(reference.creation_order.next(), 803);
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
