//! The session registry: a small cache that lets `list_sessions` order sessions without
//! reading their logs.
//!
//! `registry.jsonl` holds one line per change of a session:
//! `{"s": <session id>, "u": <updated_at ms>, "h": <head or null>, "t": <title or null>, "p"?: <project>,
//! "n": <node count>, "len": <log length in bytes after the change>}`. Lines are appended (not
//! fsynced) after the session log itself was fsynced, under the `registry.lock` file lock. For a
//! session the line with the largest `len` wins (logs only grow).
//!
//! The registry is never trusted blindly: a listing compares each entry's `len` with the log's
//! current length (one `stat` per log, no read) and re-reads only the logs that disagree or have
//! no entry, then appends fresh lines. So a crash between the log fsync and the registry append,
//! a lost or torn registry line, or a deleted registry file only costs a re-read of the affected
//! logs. When the file holds many superseded lines it is compacted: written to a temporary file,
//! fsynced, renamed over the old one, and the directory fsynced.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{self, Access, Symlinks};
use crate::{NodeId, SessionId, Timestamp};

use super::io_error;

/// The registry file name.
pub(crate) const REGISTRY_FILE: &str = "registry.jsonl";
/// The registry lock file name.
pub(crate) const REGISTRY_LOCK: &str = "registry.lock";

/// One registry line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The session.
    pub(crate) s: SessionId,
    /// Its `updated_at`.
    pub(crate) u: Timestamp,
    /// Its head.
    pub(crate) h: Option<NodeId>,
    /// Its title.
    pub(crate) t: Option<String>,
    /// Its project (absent in entries written before projects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) p: Option<String>,
    /// Its node count.
    pub(crate) n: usize,
    /// The log length this entry describes.
    pub(crate) len: u64,
}

/// The registry's entries, best (largest `len`) per session, and how many lines were read.
pub(crate) fn read(dir: &Path) -> Result<(HashMap<SessionId, Entry>, usize), crate::Error> {
    let path = dir.join(REGISTRY_FILE);
    let mut bytes = Vec::new();
    if let Some(mut file) = files::open(&path, Access::Read, Symlinks::Refuse)? {
        file.read_to_end(&mut bytes).map_err(|e| io_error(&path, e))?;
    }
    let mut entries: HashMap<SessionId, Entry> = HashMap::new();
    let mut lines = 0;
    // A bad line (torn by a crash, or half-written by a concurrent appender) is just a missing
    // cache entry: the length check repairs it, so it is skipped silently.
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        lines += 1;
        if let Ok(entry) = serde_json::from_slice::<Entry>(line) {
            match entries.get(&entry.s) {
                Some(old) if old.len > entry.len => {}
                _ => {
                    entries.insert(entry.s.clone(), entry);
                }
            }
        }
    }
    Ok((entries, lines))
}

/// Appends `entries` as whole lines under the registry lock (no fsync: the registry is a cache
/// checked against the logs).
pub(crate) fn append(dir: &Path, entries: &[Entry]) -> Result<(), crate::Error> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut buf = Vec::new();
    for entry in entries {
        serde_json::to_writer(&mut buf, entry).expect("an entry is strings and numbers");
        buf.push(b'\n');
    }
    let _lock = lock(dir)?;
    let path = dir.join(REGISTRY_FILE);
    let mut file = files::open(&path, Access::Append { create: true }, Symlinks::Refuse)?
        .expect("a file opened with create exists");
    file.write_all(&buf).map_err(|e| io_error(&path, e))
}

/// Replaces the registry with exactly `entries`: temporary file, fsync, rename, directory fsync.
pub(crate) fn rewrite(dir: &Path, entries: &[Entry]) -> Result<(), crate::Error> {
    let mut buf = Vec::new();
    for entry in entries {
        serde_json::to_writer(&mut buf, entry).expect("an entry is strings and numbers");
        buf.push(b'\n');
    }
    let _lock = lock(dir)?;
    let path = dir.join(REGISTRY_FILE);
    let tmp = dir.join(format!("registry-{}.tmp", std::process::id()));
    let mut file = files::open(&tmp, Access::Truncate, Symlinks::Refuse)?
        .expect("a file opened with create exists");
    let mut write = || -> std::io::Result<()> {
        file.write_all(&buf)?;
        file.sync_all()?;
        // `rename` replaces a symlink at `path` itself; it never writes through it.
        std::fs::rename(&tmp, &path)?;
        super::sync_dir(dir)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error(&path, e)
    })
}

/// Holds the registry lock until dropped.
fn lock(dir: &Path) -> Result<File, crate::Error> {
    let path: PathBuf = dir.join(REGISTRY_LOCK);
    let file = files::open(&path, Access::Append { create: true }, Symlinks::Refuse)?
        .expect("a file opened with create exists");
    file.lock().map_err(|e| io_error(&path, e))?;
    Ok(file)
}
