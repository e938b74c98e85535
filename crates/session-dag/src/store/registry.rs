//! The session registry: a small cache that lets `list_sessions` order sessions without
//! reading their logs.
//!
//! `registry.jsonl` holds one line per change of a session:
//! `{"s": <session id>, "u": <updated_at ms>, "h": <head or null>, "t": <title or null>, "p"?: <project>,
//! "n": <node count>, "len": <log length in bytes after the change>, "i"?: <the log's inode>}`.
//! Lines are appended (not fsynced) after the session log itself was fsynced, under the
//! `registry.lock` file lock. For a session the line with the largest `len` wins.
//!
//! The registry is never trusted blindly: a listing compares each entry's `len` (and `i`, when
//! present) with the log's current length and inode (one `stat` per log, no read) and re-reads
//! only the logs that disagree or have no entry, then appends fresh lines. So a crash between
//! the log fsync and the registry append, a lost or torn registry line, or a deleted registry
//! file only costs a re-read of the affected logs. When the file holds many superseded lines it
//! is compacted: written to `registry.tmp`, fsynced, renamed over the old one, and the
//! directory fsynced.
//!
//! A rewrite of a session's log (a forget, a rewrite of texts) must leave no copy of the old
//! texts here, titles included: before it renames its new log over the old one, it takes the
//! registry lock and replaces the registry with one that holds no line of that session
//! (`hold_without`), and lets the lock go only once the new log has the name. An entry read
//! from the old log must not be written after that either, so every write checks, under the
//! registry lock, that each entry's log still has the inode the entry was read from, and drops
//! the entries whose log was replaced. A forget of a title that the log no longer holds
//! removes the session's titled lines all the same (`scrub_titles`).

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
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
    /// The inode of the log this entry describes (absent in entries written before forgets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) i: Option<u64>,
}

impl Entry {
    /// Whether this entry describes the log as it is now: its length and its inode.
    pub(crate) fn describes(&self, len: u64, ino: u64) -> bool {
        self.len == len && self.i.is_none_or(|i| i == ino)
    }
}

/// The temporary file of a registry rewrite (always under the registry lock, so one name does).
const REGISTRY_TMP: &str = "registry.tmp";

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
/// checked against the logs), but those whose log was replaced since they were read.
pub(crate) fn append(dir: &Path, entries: &[Entry]) -> Result<(), crate::Error> {
    if entries.is_empty() {
        return Ok(());
    }
    let _lock = lock(dir)?;
    let buf = lines(current(dir, entries));
    if buf.is_empty() {
        return Ok(());
    }
    let path = dir.join(REGISTRY_FILE);
    let mut file = files::open(&path, Access::Append { create: true }, Symlinks::Refuse)?
        .expect("a file opened with create exists");
    file.write_all(&buf).map_err(|e| io_error(&path, e))
}

/// Replaces the registry with exactly `entries` (but those whose log changed since they were
/// read): temporary file, fsync, rename, directory fsync.
pub(crate) fn rewrite(dir: &Path, entries: &[Entry]) -> Result<(), crate::Error> {
    let _lock = lock(dir)?;
    replace(dir, &lines(current(dir, entries)))
}

/// Which of a session's registry lines [`remove_lines`] removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stale {
    /// Those that hold a title (the log was not rewritten, its title is gone).
    Titled,
    /// Every one (the log is being rewritten: its old lines describe another file, and one
    /// with a larger `len` would win over the new log's forever).
    Every,
}

/// Removes from the registry every line of `session` that holds a title, and every line that
/// cannot be read (a torn line may hold a title): a forget of the title of a log it did not
/// have to rewrite (the title was erased before, but a crash may have left it here). Under
/// the registry lock; atomic (see [`remove_lines`]). Returns whether the registry was
/// replaced.
pub(crate) fn scrub_titles(dir: &Path, session: &SessionId) -> Result<bool, crate::Error> {
    let _lock = lock(dir)?;
    remove_lines(dir, session, Stale::Titled)
}

/// The registry lock, held while a rewritten log of a session takes the old one's name; the
/// registry holds no line of that session (see [`hold_without`]).
#[must_use = "the registry is locked only while this is held"]
pub(crate) struct Held {
    _lock: File,
}

/// Locks the registry and removes every line of `session` from it, and every line that cannot
/// be read (atomic, see [`remove_lines`]), for a rewrite that is about to rename its new log
/// over the session's: while the lock is held nobody appends a line, and once the new log has
/// the name, a line read from the old one is dropped by every write ([`current`]). So no line
/// describing the old log, nor any title it held, is in the registry once the new log is
/// published, whatever crashes when.
pub(crate) fn hold_without(dir: &Path, session: &SessionId) -> Result<Held, crate::Error> {
    let lock = lock(dir)?;
    remove_lines(dir, session, Stale::Every)?;
    Ok(Held { _lock: lock })
}

/// Removes `session`'s `stale` lines, and every line that cannot be read: when there is such
/// a line, or a rewrite's temporary file was left behind, the registry is replaced (temporary
/// file, fsync, rename, directory fsync) by its other lines. Returns whether it was replaced.
/// The caller holds the registry lock.
fn remove_lines(dir: &Path, session: &SessionId, stale: Stale) -> Result<bool, crate::Error> {
    let path = dir.join(REGISTRY_FILE);
    let mut bytes = Vec::new();
    if let Some(mut file) = files::open(&path, Access::Read, Symlinks::Refuse)? {
        file.read_to_end(&mut bytes).map_err(|e| io_error(&path, e))?;
    }
    let mut keep = Vec::with_capacity(bytes.len());
    let mut found = false;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        match serde_json::from_slice::<Entry>(line) {
            Ok(old) if old.s == *session && (stale == Stale::Every || old.t.is_some()) => {
                found = true;
            }
            Ok(_) => {
                keep.extend_from_slice(line);
                keep.push(b'\n');
            }
            Err(_) => found = true,
        }
    }
    let leftover = std::fs::symlink_metadata(dir.join(REGISTRY_TMP)).is_ok();
    if !found && !leftover {
        return Ok(false);
    }
    replace(dir, &keep)?;
    Ok(true)
}

/// The entries whose log still has the inode (or, for an entry without one, the length) the
/// entry was read from. Called under the registry lock: a rewrite removes the session's lines
/// and renames its new log over the old one under that lock ([`hold_without`]), so an entry
/// read from the old log is dropped by that removal or here.
fn current<'a>(dir: &Path, entries: &'a [Entry]) -> impl Iterator<Item = &'a Entry> {
    entries.iter().filter(move |entry| {
        let log = dir.join(super::naming::log_file_name(&entry.s));
        match std::fs::symlink_metadata(&log) {
            Ok(meta) if meta.is_file() => match entry.i {
                Some(i) => i == meta.ino(),
                None => entry.len == meta.len(),
            },
            _ => false,
        }
    })
}

fn lines<'a>(entries: impl Iterator<Item = &'a Entry>) -> Vec<u8> {
    let mut buf = Vec::new();
    for entry in entries {
        serde_json::to_writer(&mut buf, entry).expect("an entry is strings and numbers");
        buf.push(b'\n');
    }
    buf
}

/// Replaces the registry with `bytes`: `registry.tmp`, fsync, rename, directory fsync. The
/// caller holds the registry lock.
fn replace(dir: &Path, bytes: &[u8]) -> Result<(), crate::Error> {
    let path = dir.join(REGISTRY_FILE);
    let tmp = dir.join(REGISTRY_TMP);
    let mut file = files::open(&tmp, Access::Truncate, Symlinks::Refuse)?
        .expect("a file opened with create exists");
    let mut write = || -> std::io::Result<()> {
        file.write_all(bytes)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dir: &Path, session: &str, title: &str) -> Entry {
        let id = SessionId(session.to_owned());
        let log = dir.join(super::super::naming::log_file_name(&id));
        let meta = std::fs::metadata(&log).expect("the log exists");
        Entry {
            s: id,
            u: Timestamp(1),
            h: None,
            t: Some(title.to_owned()),
            p: None,
            n: 1,
            len: meta.len(),
            i: Some(meta.ino()),
        }
    }

    /// An entry read from a log that a forget replaced since is never written, so a listing
    /// that read the old log cannot put back a title the forget's scrub removed.
    #[test]
    fn entries_of_a_replaced_log_are_not_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("s_old.log"), b"old log\n").expect("write");
        std::fs::write(dir.path().join("s_kept.log"), b"kept log\n").expect("write");
        let stale = entry(dir.path(), "old", "A secret title");
        let kept = entry(dir.path(), "kept", "A kept title");
        std::fs::write(dir.path().join("new.tmp"), b"new log\n").expect("write");
        std::fs::rename(dir.path().join("new.tmp"), dir.path().join("s_old.log")).expect("rename");
        append(dir.path(), &[stale.clone(), kept.clone()]).expect("append");
        rewrite(dir.path(), &[stale.clone(), kept.clone()]).expect("rewrite");
        append(dir.path(), &[stale]).expect("append");
        let registry = std::fs::read_to_string(dir.path().join(REGISTRY_FILE)).expect("read");
        assert!(!registry.contains("secret"), "{registry}");
        assert_eq!(registry.lines().count(), 1, "{registry}");
        assert!(registry.contains("A kept title"));
    }
}
