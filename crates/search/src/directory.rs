//! The index's tantivy directory: tantivy's memory-mapped directory, except for the two small
//! files tantivy replaces as a whole (`meta.json` on every commit, `.managed.json` each time it
//! creates a file, six or seven times per commit), and its lock files.
//!
//! tantivy replaces those with a new temporary file and a rename. On a one-paragraph install
//! that is eight new inodes and eight freed ones per commit, and creating an inode among
//! recently freed ones is what ext4 spends most of such a commit on. Here `meta.json` lives in
//! two fixed *slots* (`meta.json.slot0`, `meta.json.slot1`), written in place,
//! alternately: a write overwrites the slot that does not hold the newest version. A slot is
//!
//! ```text
//! "SCRSLOT1" | seq: u64 LE | len: u64 LE | check: u64 LE | len bytes of content
//! ```
//!
//! where `check` is FNV-1a over `seq`, `len` and the content. A read takes the valid slot with
//! the highest `seq`; a slot torn by a crash, or being overwritten while another process reads
//! it, fails its check and the other slot (the previous version) is read instead, so a reader
//! sees the old or the new content, never a mix, as with a rename. Writers are serialized by
//! tantivy's writer lock (the index is written under the workspace write lock as well).
//!
//! In the synced mode (no boot identity, see the crate docs, *Durability*) `meta.json`'s slot
//! is `fsync`ed on every write, as the commit point, and segment files are synced as tantivy's
//! own directory syncs them; in the unsynced mode nothing is (the index checks itself after a
//! reboot instead).
//!
//! `.managed.json` is not stored at all: what it is for is derived from the directory. tantivy
//! lists there the files it created, so that its garbage collection deletes those no commit
//! uses (among them what a killed writer left, which must go before a writer that replays the
//! same operations names a file the same), and saves the list each time it creates a file.
//! Read here, it is *every segment file in the directory* (a name of 32 hex digits and a `.`:
//! every file tantivy creates, delete files included), so no save, lost or torn, can hide a
//! file from the next writer's collection; a save writes nothing (a list an earlier version
//! stored in slots is still read, then removed by the next save). The index has one writer at
//! a time (tantivy's writer lock), which takes that list when it opens, so no file of another
//! writer's unfinished segment can be in it.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use scriptorium_workspace_fs::{FileKind, Fs as _, RealFs};
use tantivy::Directory;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};

/// The files kept in slots (tantivy's names).
const SLOTTED: [&str; 2] = [META, MANAGED];
/// tantivy's commit record.
const META: &str = "meta.json";
/// tantivy's list of the files it created.
const MANAGED: &str = ".managed.json";
const MAGIC: &[u8; 8] = b"SCRSLOT1";
const HEADER: usize = 32;

/// See the module docs.
#[derive(Clone, Debug)]
pub(crate) struct IndexDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    /// Whether writes are fsynced (tantivy's protocol) or left to the page cache (the index
    /// checks itself after a reboot instead: see the crate docs, *Durability*).
    synced: bool,
    /// Set once no stored `.managed.json` is left (see
    /// [`IndexDirectory::drop_stored_managed_list`]): nothing stores one again, so later saves
    /// need not look (a commit saves the list six or seven times).
    managed_dropped: Arc<AtomicBool>,
}

impl IndexDirectory {
    pub(crate) fn open(root: &Path, synced: bool) -> tantivy::Result<IndexDirectory> {
        Ok(IndexDirectory {
            inner: MmapDirectory::open(root)?,
            root: root.to_path_buf(),
            synced,
            managed_dropped: Arc::new(AtomicBool::new(false)),
        })
    }

    fn slotted(path: &Path) -> bool {
        SLOTTED.iter().any(|name| path == Path::new(name))
    }

    fn slot_path(&self, path: &Path, slot: usize) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".slot{slot}"));
        self.root.join(name)
    }

    /// The newest valid version of a slotted file: (slot, seq, content).
    fn newest(&self, path: &Path) -> io::Result<Option<(usize, u64, Vec<u8>)>> {
        let mut best: Option<(usize, u64, Vec<u8>)> = None;
        for slot in 0..2 {
            let Some((seq, content)) = read_slot(&self.slot_path(path, slot))? else {
                continue;
            };
            if best.as_ref().is_none_or(|(_, best_seq, _)| seq > *best_seq) {
                best = Some((slot, seq, content));
            }
        }
        Ok(best)
    }

    fn write_slotted(&self, path: &Path, content: &[u8]) -> io::Result<()> {
        let (slot, seq) = match self.newest(path)? {
            Some((newest, seq, _)) => (1 - newest, seq + 1),
            None => (0, 1),
        };
        let target = self.slot_path(path, slot);
        let created = match RealFs.metadata(&target) {
            Ok(_) => false,
            Err(e) if e.kind() == io::ErrorKind::NotFound => true,
            Err(e) => return Err(e),
        };
        let len = content.len() as u64;
        let mut bytes = Vec::with_capacity(HEADER + content.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&seq.to_le_bytes());
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&check(seq, len, content).to_le_bytes());
        bytes.extend_from_slice(content);
        // In place (the same inode): a crash mid-write tears this slot only.
        RealFs.write(&target, &bytes, 0o600)?;
        if !self.synced {
            return Ok(());
        }
        if path == Path::new(META) {
            RealFs.sync_file(&target)?;
        }
        if created {
            // A new slot's directory entry must be durable before the slot counts.
            self.inner.sync_directory()?;
        }
        Ok(())
    }
}

impl IndexDirectory {
    /// tantivy's managed list: the stored one (a JSON array of file names; none when missing or
    /// unreadable) and every segment file in the directory (see the module docs).
    /// What tantivy's saving of `.managed.json` does here: nothing is written (the list is the
    /// directory's segment files, see the module docs), and a list an earlier version stored is
    /// removed, so that names it kept of files long deleted stop coming back.
    fn drop_stored_managed_list(&self) -> io::Result<()> {
        if self.managed_dropped.load(Ordering::Relaxed) {
            return Ok(());
        }
        for slot in 0..2 {
            match RealFs.remove_file(&self.slot_path(Path::new(MANAGED), slot)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        self.managed_dropped.store(true, Ordering::Relaxed);
        Ok(())
    }

    fn managed(&self) -> io::Result<Vec<u8>> {
        let stored = self.newest(Path::new(MANAGED))?;
        let mut files: BTreeSet<String> = stored
            .and_then(|(_, _, content)| serde_json::from_slice(&content).ok())
            .unwrap_or_default();
        for (name, kind) in RealFs.read_dir(&self.root)? {
            if let Some(name) = name.to_str().filter(|n| kind == FileKind::File && is_segment(n)) {
                files.insert(name.to_owned());
            }
        }
        serde_json::to_vec(&files).map_err(io::Error::other)
    }
}

/// A segment file's name: 32 hex digits (the segment's id), then `.` and its component.
fn is_segment(name: &str) -> bool {
    name.as_bytes().get(32) == Some(&b'.')
        && name.as_bytes()[..32].iter().all(u8::is_ascii_hexdigit)
}

/// A slot's (seq, content), or `None` when it is missing or fails its check.
fn read_slot(path: &Path) -> io::Result<Option<(u64, Vec<u8>)>> {
    let bytes = match RealFs.read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    if bytes.get(..8) != Some(MAGIC.as_slice()) {
        return Ok(None);
    }
    let (Some(seq), Some(len), Some(stored)) = (word(8), word(16), word(24)) else {
        return Ok(None);
    };
    let Some(content) =
        usize::try_from(len).ok().and_then(|len| bytes.get(HEADER..HEADER.checked_add(len)?))
    else {
        return Ok(None);
    };
    Ok((check(seq, len, content) == stored).then(|| (seq, content.to_vec())))
}

fn check(seq: u64, len: u64, content: &[u8]) -> u64 {
    seq.to_le_bytes()
        .iter()
        .chain(len.to_le_bytes().iter())
        .chain(content)
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

impl Directory for IndexDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        if Self::slotted(path) {
            return self
                .newest(path)
                .map(|found| found.is_some())
                .map_err(|e| OpenReadError::wrap_io_error(e, path.to_path_buf()));
        }
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        if self.synced {
            return self.inner.open_write(path);
        }
        let full = self.root.join(path);
        #[expect(
            clippy::disallowed_methods,
            reason = "tantivy writes its segment files through the file this returns; this is \
                      MmapDirectory's open_write (a new file, never through a symlink) without \
                      its fsync at the end"
        )]
        let file = {
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&full)
        };
        let file = file.map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                OpenWriteError::FileAlreadyExists(path.to_path_buf())
            } else {
                OpenWriteError::wrap_io_error(e, path.to_path_buf())
            }
        })?;
        Ok(io::BufWriter::new(Box::new(Unsynced(file))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        if path == Path::new(MANAGED) {
            return self.managed().map_err(|e| OpenReadError::wrap_io_error(e, path.to_path_buf()));
        }
        if Self::slotted(path) {
            return match self.newest(path) {
                Ok(Some((_, _, content))) => Ok(content),
                Ok(None) => Err(OpenReadError::FileDoesNotExist(path.to_path_buf())),
                Err(e) => Err(OpenReadError::wrap_io_error(e, path.to_path_buf())),
            };
        }
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        if path == Path::new(MANAGED) {
            return self.drop_stored_managed_list();
        }
        if Self::slotted(path) {
            return self.write_slotted(path, data);
        }
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        if !self.synced {
            return Ok(());
        }
        self.inner.sync_directory()
    }

    /// tantivy's locks as an exclusive `flock` on a file that stays: tantivy's own directory
    /// creates the file for each lock and deletes it on release, two new inodes per commit and
    /// one per search process for nothing (the `flock` is the lock, not the file).
    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        let path = self.root.join(&lock.filepath);
        let file = scriptorium_workspace_fs::open_lock_file(&path);
        let file = file.map_err(|e| LockError::IoError(Arc::new(e)))?;
        if lock.is_blocking {
            file.lock().map_err(|e| LockError::IoError(Arc::new(e)))?;
        } else if let Err(e) = file.try_lock() {
            return Err(match e {
                std::fs::TryLockError::WouldBlock => LockError::LockBusy,
                std::fs::TryLockError::Error(e) => LockError::IoError(Arc::new(e)),
            });
        }
        // Closing the file (dropping the lock) releases the flock.
        Ok(DirectoryLock::from(Box::new(file)))
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

/// A new index file whose end (`terminate`) leaves it to the page cache, where tantivy's own
/// writer fsyncs it.
struct Unsynced(std::fs::File);

impl io::Write for Unsynced {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for Unsynced {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        io::Write::flush(&mut self.0)
    }
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "the tests tear slot files directly, as a crash would"
)]
mod tests {
    use super::*;

    fn dir() -> (tempfile::TempDir, IndexDirectory) {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let dir = IndexDirectory::open(tmp.path(), true).expect("open");
        (tmp, dir)
    }

    #[test]
    fn the_newest_write_is_read_and_slots_alternate() {
        let (tmp, dir) = dir();
        let meta = Path::new("meta.json");
        assert!(!dir.exists(meta).expect("exists"));
        assert!(matches!(dir.atomic_read(meta), Err(OpenReadError::FileDoesNotExist(_))));
        for round in 0..5u8 {
            let content = vec![b'a' + round; 10 + usize::from(round)];
            dir.atomic_write(meta, &content).expect("write");
            assert_eq!(dir.atomic_read(meta).expect("read"), content);
        }
        assert!(dir.exists(meta).expect("exists"));
        assert!(tmp.path().join("meta.json.slot0").exists());
        assert!(tmp.path().join("meta.json.slot1").exists());
        assert!(!tmp.path().join("meta.json").exists(), "no plain file is written");
    }

    #[test]
    fn a_torn_newest_slot_falls_back_to_the_previous_version() {
        let (tmp, dir) = dir();
        let meta = Path::new("meta.json");
        dir.atomic_write(meta, b"first version").expect("write");
        dir.atomic_write(meta, b"second version").expect("write");
        // The second write went to slot 1; tear it as a crash mid-write would.
        let slot = tmp.path().join("meta.json.slot1");
        let mut bytes = std::fs::read(&slot).expect("read slot");
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&slot, &bytes).expect("tear");
        assert_eq!(dir.atomic_read(meta).expect("read"), b"first version");
        // The next write overwrites the torn slot, not the good one.
        dir.atomic_write(meta, b"third").expect("write");
        assert_eq!(dir.atomic_read(meta).expect("read"), b"third");
        std::fs::write(&slot, b"SCRSLOT1 short").expect("truncate");
        assert_eq!(dir.atomic_read(meta).expect("read"), b"first version");
    }

    #[test]
    fn the_managed_list_holds_every_segment_file_in_the_directory() {
        let (tmp, dir) = dir();
        let managed = Path::new(".managed.json");
        let read = |dir: &IndexDirectory| -> Vec<String> {
            serde_json::from_slice(&dir.atomic_read(managed).expect("read")).expect("a list")
        };
        assert!(read(&dir).is_empty());
        let segment = "0123456789abcdef0123456789abcdef";
        std::fs::write(tmp.path().join(format!("{segment}.idx")), b"").expect("a segment file");
        std::fs::write(tmp.path().join(format!("{segment}.7.del")), b"").expect("a delete file");
        std::fs::write(tmp.path().join("scriptorium-manifest.json"), b"{}").expect("ours");
        let files = [format!("{segment}.7.del"), format!("{segment}.idx")];
        // tantivy's save stores nothing: the list is the directory's segment files.
        dir.atomic_write(managed, br#"["gone.idx"]"#).expect("write");
        assert_eq!(read(&dir), files);
        assert!(!tmp.path().join(".managed.json.slot0").exists());
        // A list an earlier version stored in a slot is read, until the next save removes it
        // (the first of each directory handle: a handle that removed it has no more to remove).
        dir.write_slotted(managed, br#"["gone.idx"]"#).expect("a stored list");
        let dir = IndexDirectory::open(tmp.path(), false).expect("a new handle");
        assert_eq!(read(&dir), [files[0].clone(), files[1].clone(), "gone.idx".into()]);
        dir.atomic_write(managed, b"[]").expect("write");
        assert_eq!(read(&dir), files);
        assert!(!tmp.path().join(".managed.json.slot1").exists());
        // A torn stored list still yields the directory's segment files.
        std::fs::write(tmp.path().join(".managed.json.slot0"), b"SCRSLOT1 torn").expect("tear");
        assert_eq!(read(&dir), files);
    }

    #[test]
    fn other_files_are_tantivys_own() {
        let (tmp, dir) = dir();
        dir.atomic_write(Path::new("other.json"), b"x").expect("write");
        assert_eq!(std::fs::read(tmp.path().join("other.json")).expect("read"), b"x");
    }
}
