//! The live `topics/` as a transaction sees it: one walk and one `lstat` per entry, each file's
//! content hash taken from the revision record's manifest when its stat is unchanged (as git
//! trusts its index), read only when it is new, changed or too recent to trust.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fs::{FileKind, Fs, Meta};
use crate::state::{ManifestEntry, irregular_hash, sha256_hex, topics_digest, walk_meta};

/// How far below the revision record's mtime a file's mtime must be for its stat to be
/// trusted: a write in the same timestamp granule as the record could keep size and mtime.
pub(crate) const RACY_NS: i64 = 100_000_000;

/// One regular file of the live tree.
#[derive(Clone, Debug)]
pub(crate) struct LiveFile {
    /// SHA-256 (hex) of its bytes.
    pub(crate) hash: String,
    /// Its `lstat`.
    pub(crate) meta: Meta,
    /// Its bytes, when the scan had to read them.
    pub(crate) bytes: Option<Vec<u8>>,
}

/// A regular file or directory whose name is not UTF-8, so that no topic can name it: not part
/// of memory, carried over unchanged by every transaction (`scriptorium check` reports it).
#[derive(Clone, Debug)]
pub(crate) struct Foreign {
    /// The exact path relative to `topics/`.
    pub(crate) raw: PathBuf,
    /// The lossy path (how it counts in the digest).
    pub(crate) rel: String,
    pub(crate) kind: FileKind,
}

impl Foreign {
    /// How the entry counts in the `topics/` digest: by kind, as every non-UTF-8 name does.
    pub(crate) fn digest_item(&self) -> (String, String) {
        (self.rel.clone(), irregular_hash(self.kind))
    }
}

/// The live `topics/` at one moment.
#[derive(Clone, Debug, Default)]
pub(crate) struct LiveTree {
    /// Every regular file with a UTF-8 path, relative to `topics/`.
    pub(crate) files: BTreeMap<String, LiveFile>,
    /// Directories with UTF-8 paths.
    pub(crate) dirs: Vec<String>,
    /// Symlinks, sockets, FIFOs, devices: a transaction cannot keep them.
    pub(crate) irregular: Vec<(String, FileKind)>,
    /// Entries with non-UTF-8 names.
    pub(crate) foreign: Vec<Foreign>,
    /// Files whose bytes differ from what the last install recorded, files it did not record,
    /// and recorded files that are gone: edits made outside any transaction.
    pub(crate) outside: BTreeSet<String>,
    /// Files whose stat had changed but whose bytes had not (a copy, a checkout, `touch`), and
    /// files re-read only because they were written just before the record (see
    /// [`StatTrust::settled_before`]): a fresh record would spare the next scans reading them.
    pub(crate) restated: usize,
}

impl LiveTree {
    /// The digest of the tree (see the crate docs, *Revision*).
    pub(crate) fn digest(&self) -> String {
        let mut items: Vec<(String, String)> =
            self.files.iter().map(|(rel, f)| (rel.clone(), f.hash.clone())).collect();
        items.extend(self.unlisted());
        items.sort();
        topics_digest(items.iter().map(|(a, b)| (a.as_str(), b.as_str())))
    }

    /// The digest items of the entries a manifest leaves out (special files, non-UTF-8
    /// names), sorted.
    pub(crate) fn unlisted(&self) -> Vec<(String, String)> {
        let mut items: Vec<(String, String)> = self
            .irregular
            .iter()
            .map(|(rel, kind)| (rel.clone(), irregular_hash(*kind)))
            .chain(self.foreign.iter().map(Foreign::digest_item))
            .collect();
        items.sort();
        items
    }

    /// The digest of the tree scanned against `record`: the record's own when the scan found
    /// exactly what it lists (every manifest file with its hash, no other file, the same
    /// unlisted entries), else [`LiveTree::digest`].
    pub(crate) fn digest_against(&self, record: &crate::state::RevisionRecord) -> String {
        match &record.unlisted {
            Some(unlisted) if self.outside.is_empty() && *unlisted == self.unlisted() => {
                record.topics.clone()
            }
            _ => self.digest(),
        }
    }

    /// The bytes of the live file `rel`: kept from the scan, or read now.
    pub(crate) fn bytes(&self, fs: &dyn Fs, topics: &Path, rel: &str) -> Result<Vec<u8>> {
        if let Some(bytes) = self.files.get(rel).and_then(|f| f.bytes.clone()) {
            return Ok(bytes);
        }
        let path = topics.join(rel);
        fs.read(&path).map_err(Error::io("read", &path))
    }

    /// The tree's manifest as the revision record keeps it.
    pub(crate) fn manifest(&self) -> Vec<ManifestEntry> {
        self.files
            .iter()
            .map(|(rel, f)| ManifestEntry {
                path: rel.clone(),
                sha256: f.hash.clone(),
                len: f.meta.len,
                mtime_ns: f.meta.mtime_ns,
                ino: f.meta.ino,
            })
            .collect()
    }
}

/// Whether a manifest entry still describes the file with stat `meta`, trusting it only when
/// it is older than `rev_mtime` by [`RACY_NS`].
fn trusted(entry: &ManifestEntry, meta: &Meta, rev_mtime: i64) -> Option<bool> {
    let same = entry.len == meta.len && entry.mtime_ns == meta.mtime_ns && entry.ino == meta.ino;
    if !same {
        return None;
    }
    Some(entry.mtime_ns < rev_mtime.saturating_sub(RACY_NS))
}

/// A file's content hash as a scan takes it.
pub(crate) struct Hashed {
    pub(crate) hash: String,
    /// The bytes, when they had to be read for a counted reason (new or changed stat).
    pub(crate) bytes: Option<Vec<u8>>,
    /// The bytes are as `known` recorded, yet a fresh record would spare the next scan this
    /// read (see [`LiveTree::restated`]).
    pub(crate) restated: bool,
}

/// The content hash of the regular file at `path` with stat `meta`, against its manifest entry
/// `known` (like git's index): taken from `known` when the stat is unchanged and older than the
/// record; re-read without counting the call when the stat is unchanged but too recent to
/// trust (racy: whether this read happens depends on timestamps, so it is not a counted call,
/// and its bytes are not kept, so what the operation reads does not depend on timestamps
/// either); read otherwise. The one rule of both the `topics/` and the `sources/` scan.
pub(crate) fn hash_by_stat(
    fs: &dyn Fs,
    path: &Path,
    meta: &Meta,
    known: Option<&ManifestEntry>,
    trust: StatTrust,
) -> Result<Hashed> {
    let same = |hash: &str| known.is_some_and(|e| e.sha256 == hash);
    Ok(match known.and_then(|e| trusted(e, meta, trust.record_mtime)) {
        Some(true) => Hashed {
            hash: known.map(|e| e.sha256.clone()).unwrap_or_default(),
            bytes: None,
            restated: false,
        },
        Some(false) => {
            let hash = sha256_hex(&fs.read_to_verify(path).map_err(Error::io("read", path))?);
            let restated = same(&hash) && meta.mtime_ns < trust.settled_before;
            Hashed { hash, bytes: None, restated }
        }
        None => {
            let bytes = fs.read(path).map_err(Error::io("read", path))?;
            let hash = sha256_hex(&bytes);
            Hashed { restated: same(&hash), hash, bytes: Some(bytes) }
        }
    })
}

/// When a scan may trust a recorded stat, and when a re-read one counts as settled.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StatTrust {
    /// The revision record's mtime (`i64::MIN`: trust nothing).
    pub(crate) record_mtime: i64,
    /// A file re-read because its stat was too close to the record, whose bytes are as recorded
    /// and whose mtime is older than this, counts as `restated`: a record written now would
    /// trust it (`i64::MIN`: never).
    pub(crate) settled_before: i64,
}

impl StatTrust {
    /// Trust nothing, count nothing (a first scan, recovery).
    pub(crate) const NONE: StatTrust =
        StatTrust { record_mtime: i64::MIN, settled_before: i64::MIN };

    /// The trust of the record at `record`, for a scan at `now_ns`.
    pub(crate) fn of(fs: &dyn Fs, record: &Path, now_ns: i64) -> StatTrust {
        StatTrust {
            record_mtime: record_mtime(fs, record),
            settled_before: now_ns.saturating_sub(RACY_NS),
        }
    }

    /// Only the record's mtime (the restated count is not wanted).
    pub(crate) fn record_only(fs: &dyn Fs, record: &Path) -> StatTrust {
        StatTrust { record_mtime: record_mtime(fs, record), settled_before: i64::MIN }
    }
}

/// Walks `topics` and hashes every regular file, trusting `manifest` (as `trust` says) for
/// files whose stat is unchanged; with `keep_bytes`, the bytes of every file it read are kept.
/// `outside` is filled against `manifest`.
pub(crate) fn scan(
    fs: &dyn Fs,
    topics: &Path,
    manifest: &[ManifestEntry],
    trust: StatTrust,
    keep_bytes: bool,
) -> Result<LiveTree> {
    let recorded: HashMap<&str, &ManifestEntry> =
        manifest.iter().map(|e| (e.path.as_str(), e)).collect();
    let mut tree = LiveTree::default();
    for (entry, meta) in walk_meta(fs, topics)? {
        match entry.kind {
            FileKind::Dir if entry.utf8 => tree.dirs.push(entry.rel),
            FileKind::File if entry.utf8 => {
                let path = topics.join(&entry.rel);
                let known = recorded.get(entry.rel.as_str()).copied();
                let hashed = hash_by_stat(fs, &path, &meta, known, trust)?;
                tree.restated += usize::from(hashed.restated);
                let (hash, bytes) = (hashed.hash, hashed.bytes);
                if known.is_none_or(|e| e.sha256 != hash) {
                    tree.outside.insert(entry.rel.clone());
                }
                let bytes = if keep_bytes { bytes } else { None };
                tree.files.insert(entry.rel, LiveFile { hash, meta, bytes });
            }
            FileKind::Dir | FileKind::File => {
                tree.foreign.push(Foreign { raw: entry.raw, rel: entry.rel, kind: entry.kind });
            }
            kind => tree.irregular.push((entry.rel, kind)),
        }
    }
    for entry in manifest {
        if !tree.files.contains_key(&entry.path) {
            tree.outside.insert(entry.path.clone());
        }
    }
    Ok(tree)
}

/// The mtime of the revision record (`i64::MIN` when it cannot be read: nothing is trusted).
pub(crate) fn record_mtime(fs: &dyn Fs, record: &Path) -> i64 {
    fs.metadata(record).map_or(i64::MIN, |m| m.mtime_ns)
}
