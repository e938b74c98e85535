//! The index's tantivy directory: tantivy's memory-mapped directory, except for the two small
//! files tantivy replaces as a whole (`meta.json` on every commit, `.managed.json` each time it
//! creates a file, six or seven times per commit), its lock files, and the files of a new
//! segment, which go to one file, the segment's *pack* (see *Packs* below).
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
//!
//! # Packs
//!
//! tantivy writes a segment as six files (postings, positions, terms, field norms, fast fields,
//! stored fields), and an install's update writes one small segment and usually removes the
//! previous one: twelve files made and deleted per install, on a filesystem where making a file
//! among recently deleted ones is what a small commit spends most of its time on (ext4 without
//! a journal scans them). So a new segment's files are written to memory, and once none of them
//! is still being written, to one new file `<segment id>.pack` (its format: `pack.rs`), which
//! holds them one after the other: an update calls [`IndexDirectory::pack_pending`] as soon as
//! its segment is written, and a commit (`meta.json`) packs whatever is still held first, so a
//! commit never names a file that is only in memory. A file is read from memory while it is
//! held, then from its pack (a slice of the pack's memory map), else as a file of its own; the
//! managed list names a pack's files, not the pack, and deleting them all deletes the pack (a
//! handle remembers which it deleted; a pack whose files are half deleted when the process
//! ends is listed whole to the next writer, which deletes the rest). A file deleted while it
//! is being written to memory ends as nothing, as an unlinked file would (a segment writer
//! dropped unused has its store file ended later by tantivy's compressor thread, after the
//! collection that deleted it). A pack that is not whole
//! (its writer was killed) is refused and listed under its own name, so the next writer's
//! collection removes it. What does not go to a pack: delete files (written for segments
//! already committed), a file written after its segment's pack, and files that would take the
//! memory held past [`HELD_MAX`] (a rebuild's large segments), which are written as they come.
//! An index written before packs reads as before, file by file.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use scriptorium_workspace_fs::{FileKind, Fs as _, RealFs};
use tantivy::Directory;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes, TerminatingWrite,
    WatchCallback, WatchHandle, WritePtr,
};

use crate::pack;

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
    /// Segment files written to memory and the packs they went to (see the module docs,
    /// *Packs*), shared by every clone of this handle (tantivy clones it for its threads).
    packing: Arc<Mutex<Packing>>,
}

/// See the module docs, *Packs*.
#[derive(Debug, Default)]
struct Packing {
    /// Segment files written and ended in memory, not yet in a pack: name -> content.
    pending: BTreeMap<String, OwnedBytes>,
    /// Bytes held in memory: by `pending` and by files still being written there.
    held: usize,
    /// Segment files being written, per segment ID.
    writing: HashMap<String, usize>,
    /// Names of the files being written to memory.
    in_memory: HashSet<String>,
    /// Files deleted while being written to memory: dropped when they end, as an unlinked
    /// file's last bytes are (tantivy deletes a file being written when it is garbage: the
    /// store file of a segment writer dropped unused, which its compressor thread ends later).
    unlinked: HashSet<String>,
    /// What this handle knows of a segment's pack (by segment ID): its table and the members
    /// it deleted, or `None` when the segment has no pack.
    packs: HashMap<String, Option<Known>>,
}

impl Packing {
    /// Whether this handle knows that `segment` has a pack.
    fn has_pack(&self, segment: &str) -> bool {
        matches!(self.packs.get(segment), Some(Some(_)))
    }

    /// Whether `name`, a member of `segment`'s pack, was deleted through this handle.
    fn deleted(&self, segment: &str, name: &str) -> bool {
        self.packs.get(segment).and_then(Option::as_ref).is_some_and(|k| k.deleted.contains(name))
    }
}

/// A pack this handle read or wrote.
#[derive(Debug)]
struct Known {
    table: Arc<pack::Table>,
    /// Members deleted through this handle: the pack goes once all of them are.
    deleted: BTreeSet<String>,
}

/// Segment files kept in memory at most, in all (see the module docs, *Packs*): a file that
/// would pass this is written to disk as it comes instead, as tantivy writes it.
const HELD_MAX: usize = 8 << 20;
/// Packs whose table a handle keeps before it forgets those it deleted nothing of (a
/// long-lived reader meets a new segment with every update).
const KNOWN_MAX: usize = 256;

impl IndexDirectory {
    pub(crate) fn open(root: &Path, synced: bool) -> tantivy::Result<IndexDirectory> {
        Ok(IndexDirectory {
            inner: MmapDirectory::open(root)?,
            root: root.to_path_buf(),
            synced,
            managed_dropped: Arc::new(AtomicBool::new(false)),
            packing: Arc::new(Mutex::new(Packing::default())),
        })
    }

    fn packing(&self) -> MutexGuard<'_, Packing> {
        self.packing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the segment files held in memory to disk: those of each segment no file of which
    /// is still being written go to one new pack, `<segment id>.pack` (or, for a segment that
    /// has a pack already, to files of their own). An update calls it once its segment is
    /// written, so that the commit only has `meta.json` left to write; tantivy's own commits
    /// (a merge's) reach it through [`Directory::atomic_write`] of `meta.json`.
    pub(crate) fn pack_pending(&self) -> io::Result<()> {
        let mut packing = self.packing();
        let ready: BTreeSet<String> = packing
            .pending
            .keys()
            .filter_map(|name| segment_of(name))
            .filter(|segment| packing.writing.get(*segment).is_none_or(|open| *open == 0))
            .map(str::to_owned)
            .collect();
        if ready.is_empty() {
            return Ok(());
        }
        for segment in &ready {
            let members: Vec<(String, OwnedBytes)> = packing
                .pending
                .iter()
                .filter(|(name, _)| segment_of(name) == Some(segment.as_str()))
                .map(|(name, bytes)| (name.clone(), bytes.clone()))
                .collect();
            let packed = packing.has_pack(segment);
            let written = if packed {
                None
            } else {
                let (bytes, table) =
                    pack::encode(members.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
                self.write_new(&format!("{segment}{}", pack::SUFFIX), &bytes)?.then_some(table)
            };
            match written {
                Some(table) => {
                    let known = Known { table: Arc::new(table), deleted: BTreeSet::new() };
                    packing.packs.insert(segment.clone(), Some(known));
                }
                // A segment whose pack exists (written before this file of it) keeps the
                // rest of its files as tantivy names them.
                None => {
                    for (name, bytes) in &members {
                        if !self.write_new(name, bytes)? {
                            return Err(io::Error::new(
                                io::ErrorKind::AlreadyExists,
                                format!("index file {name} exists"),
                            ));
                        }
                    }
                }
            }
            for (name, bytes) in &members {
                packing.pending.remove(name);
                packing.held -= bytes.len();
            }
        }
        if self.synced {
            self.inner.sync_directory()?;
        }
        Ok(())
    }

    /// Writes `bytes` as the new file `name` (synced in the synced mode); `false` when a file
    /// of that name exists (nothing is written). A failed write removes what it wrote.
    fn write_new(&self, name: &str, bytes: &[u8]) -> io::Result<bool> {
        let path = self.root.join(name);
        let mut file = match create_new(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(e),
        };
        let written = io::Write::write_all(&mut file, bytes)
            .and_then(|()| if self.synced { file.sync_all() } else { Ok(()) });
        if let Err(e) = written {
            drop(file);
            let _ = RealFs.remove_file(&path);
            return Err(e);
        }
        Ok(true)
    }

    /// What this handle knows of `segment`'s pack, reading its table when it does not yet;
    /// `None` when the segment has no pack. A pack that is not whole is an error.
    fn known_pack(
        &self,
        packing: &mut Packing,
        segment: &str,
    ) -> io::Result<Option<Arc<pack::Table>>> {
        if let Some(known) = packing.packs.get(segment) {
            return Ok(known.as_ref().map(|known| known.table.clone()));
        }
        let table = match self.inner.get_file_handle(&pack_path(segment)) {
            Ok(handle) => {
                let bytes = handle.read_bytes(0..handle.len())?;
                let table = pack::decode(bytes.as_slice()).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("the index pack {segment}{} is not whole", pack::SUFFIX),
                    )
                })?;
                Some(Arc::new(table))
            }
            Err(OpenReadError::FileDoesNotExist(_)) => None,
            Err(e) => return Err(io::Error::other(e)),
        };
        if packing.packs.len() >= KNOWN_MAX {
            packing.packs.retain(|_, known| known.as_ref().is_some_and(|k| !k.deleted.is_empty()));
        }
        let known = table.clone().map(|table| Known { table, deleted: BTreeSet::new() });
        packing.packs.insert(segment.to_owned(), known);
        Ok(table)
    }

    /// A new plain file for tantivy to write (`MmapDirectory`'s `open_write`, without its
    /// fsync at the end in the unsynced mode).
    fn open_plain(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        if self.synced {
            return self.inner.open_write(path);
        }
        let file = create_new(&self.root.join(path)).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                OpenWriteError::FileAlreadyExists(path.to_path_buf())
            } else {
                OpenWriteError::wrap_io_error(e, path.to_path_buf())
            }
        })?;
        Ok(io::BufWriter::new(Box::new(Unsynced(file))))
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
        let mut packing = self.packing();
        for (name, kind) in RealFs.read_dir(&self.root)? {
            let Some(name) = name.to_str().filter(|n| kind == FileKind::File && is_segment(n))
            else {
                continue;
            };
            let Some(segment) = pack_of(Path::new(name)) else {
                files.insert(name.to_owned());
                continue;
            };
            match self.known_pack(&mut packing, segment) {
                Ok(Some(table)) => {
                    let alive = table.members.keys().filter(|m| !packing.deleted(segment, m));
                    files.extend(alive.cloned());
                }
                // Gone meanwhile.
                Ok(None) => {}
                // Not whole (its writer was killed): listed under its own name, so that
                // tantivy's collection removes it.
                Err(_) => {
                    files.insert(name.to_owned());
                }
            }
        }
        files.extend(packing.pending.keys().cloned());
        serde_json::to_vec(&files).map_err(io::Error::other)
    }
}

/// A segment file's name: 32 hex digits (the segment's id), then `.` and its component.
fn is_segment(name: &str) -> bool {
    name.as_bytes().get(32) == Some(&b'.')
        && name.as_bytes()[..32].iter().all(u8::is_ascii_hexdigit)
}

/// A file tantivy writes for a new segment, which may go to the segment's pack: its name and
/// segment ID (`<32 hex digits>.<component>`; a delete file, `<id>.<opstamp>.del`, is written
/// for a segment already committed and never is).
fn packable(path: &Path) -> Option<(&str, &str)> {
    let name = path.to_str()?;
    let segment = segment_of(name)?;
    let component = &name[33..];
    (!component.is_empty() && !component.contains('.') && component != &pack::SUFFIX[1..])
        .then_some((name, segment))
}

/// The segment ID of a segment file's name.
fn segment_of(name: &str) -> Option<&str> {
    is_segment(name).then(|| &name[..32])
}

/// The segment ID of a pack's name.
fn pack_of(path: &Path) -> Option<&str> {
    let name = path.to_str()?;
    segment_of(name).filter(|_| &name[32..] == pack::SUFFIX)
}

fn pack_path(segment: &str) -> PathBuf {
    PathBuf::from(format!("{segment}{}", pack::SUFFIX))
}

/// Creates the new file `path` (`O_EXCL`, mode 0600) for writing.
fn create_new(path: &Path) -> io::Result<std::fs::File> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the index's segment files and packs are written through the file this \
                  returns, as tantivy's MmapDirectory does (a new file, never through a symlink)"
    )]
    let file = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
    };
    file
}

/// A segment file tantivy writes to memory, for its segment's pack (see the module docs,
/// *Packs*); written to disk as it comes instead once the memory held would pass
/// [`HELD_MAX`].
struct Held {
    directory: IndexDirectory,
    name: String,
    state: HeldState,
}

enum HeldState {
    Memory(Vec<u8>),
    Disk(WritePtr),
    /// Deleted while in memory: what comes is dropped.
    Unlinked,
    /// Ended (`terminate`), or failed; no longer counted as being written.
    Done,
}

impl Held {
    fn segment(&self) -> &str {
        &self.name[..32]
    }

    /// Ends this file's part in its segment's count of files being written.
    fn stop_writing(&self, packing: &mut Packing) {
        packing.in_memory.remove(&self.name);
        packing.unlinked.remove(&self.name);
        if let Some(open) = packing.writing.get_mut(self.segment()) {
            *open -= 1;
            if *open == 0 {
                packing.writing.remove(self.segment());
            }
        }
    }
}

impl io::Write for Held {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.state {
            HeldState::Memory(bytes) => {
                let mut packing = self.directory.packing();
                if packing.unlinked.contains(&self.name) {
                    packing.held -= bytes.len();
                    drop(packing);
                    self.state = HeldState::Unlinked;
                    return Ok(buf.len());
                }
                if packing.held + buf.len() <= HELD_MAX {
                    packing.held += buf.len();
                    bytes.extend_from_slice(buf);
                    return Ok(buf.len());
                }
                packing.held -= bytes.len();
                packing.in_memory.remove(&self.name);
                drop(packing);
                let held = std::mem::take(bytes);
                self.state = HeldState::Done;
                let disk = self.directory.open_plain(Path::new(&self.name));
                let disk = disk.map_err(io::Error::other).and_then(|mut disk| {
                    disk.write_all(&held)?;
                    disk.write_all(buf)?;
                    Ok(disk)
                });
                match disk {
                    Ok(disk) => {
                        self.state = HeldState::Disk(disk);
                        Ok(buf.len())
                    }
                    // Failed: what it wrote is collected as garbage.
                    Err(e) => {
                        self.stop_writing(&mut self.directory.packing());
                        Err(e)
                    }
                }
            }
            HeldState::Disk(disk) => disk.write(buf),
            HeldState::Unlinked => Ok(buf.len()),
            HeldState::Done => Err(io::Error::other("the index file was ended")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.state {
            HeldState::Disk(disk) => disk.flush(),
            HeldState::Memory(_) | HeldState::Unlinked | HeldState::Done => Ok(()),
        }
    }
}

impl TerminatingWrite for Held {
    fn terminate_ref(&mut self, token: AntiCallToken) -> io::Result<()> {
        let state = std::mem::replace(&mut self.state, HeldState::Done);
        let mut packing = self.directory.packing();
        let unlinked = packing.unlinked.contains(&self.name);
        self.stop_writing(&mut packing);
        match state {
            HeldState::Memory(bytes) if unlinked => {
                packing.held -= bytes.len();
                Ok(())
            }
            HeldState::Memory(bytes) => {
                packing.pending.insert(self.name.clone(), OwnedBytes::new(bytes));
                Ok(())
            }
            HeldState::Unlinked => Ok(()),
            HeldState::Disk(mut disk) => {
                drop(packing);
                disk.terminate_ref(token)
            }
            HeldState::Done => Err(io::Error::other("the index file was ended")),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Not ended: dropped on an error. What it wrote to disk is collected as garbage.
        match std::mem::replace(&mut self.state, HeldState::Done) {
            HeldState::Done => {}
            HeldState::Memory(bytes) => {
                let mut packing = self.directory.packing();
                packing.held -= bytes.len();
                self.stop_writing(&mut packing);
            }
            HeldState::Disk(_) | HeldState::Unlinked => {
                self.stop_writing(&mut self.directory.packing());
            }
        }
    }
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
        if let Some((name, segment)) = packable(path) {
            let mut packing = self.packing();
            if let Some(bytes) = packing.pending.get(name) {
                return Ok(Arc::new(bytes.clone()));
            }
            let table = self
                .known_pack(&mut packing, segment)
                .map_err(|e| OpenReadError::wrap_io_error(e, path.to_path_buf()))?;
            drop(packing);
            if let Some(range) = table.as_ref().and_then(|t| t.members.get(name)) {
                let whole = self.inner.get_file_handle(&pack_path(segment))?;
                let table = table.as_ref().expect("a member has a pack");
                if whole.len() != table.len {
                    let e = io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("the index pack {segment}{} changed", pack::SUFFIX),
                    );
                    return Err(OpenReadError::wrap_io_error(e, path.to_path_buf()));
                }
                let bytes = whole
                    .read_bytes(range.clone())
                    .map_err(|e| OpenReadError::wrap_io_error(e, path.to_path_buf()))?;
                return Ok(Arc::new(bytes));
            }
        }
        self.inner.get_file_handle(path)
    }

    /// A packed file is deleted from this handle's view of its pack, and the pack once all of
    /// its files are; a file held in memory is dropped.
    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        let io_error = |e: io::Error| DeleteError::IoError {
            io_error: Arc::new(e),
            filepath: path.to_path_buf(),
        };
        if let Some((name, segment)) = packable(path) {
            let mut packing = self.packing();
            if let Some(bytes) = packing.pending.remove(name) {
                packing.held -= bytes.len();
                return Ok(());
            }
            if packing.in_memory.contains(name) {
                packing.unlinked.insert(name.to_owned());
                return Ok(());
            }
            if let Some(table) = self.known_pack(&mut packing, segment).map_err(io_error)?
                && table.members.contains_key(name)
            {
                let known = packing.packs.get_mut(segment).and_then(Option::as_mut);
                let known = known.expect("a pack just read is known");
                known.deleted.insert(name.to_owned());
                if known.deleted.len() < table.members.len() {
                    return Ok(());
                }
                packing.packs.remove(segment);
                return match self.inner.delete(&pack_path(segment)) {
                    Ok(()) | Err(DeleteError::FileDoesNotExist(_)) => Ok(()),
                    Err(e) => Err(e),
                };
            }
        } else if let Some(segment) = pack_of(path) {
            // A pack that is not whole, listed under its own name (see `managed`).
            self.packing().packs.remove(segment);
        }
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        if Self::slotted(path) {
            return self
                .newest(path)
                .map(|found| found.is_some())
                .map_err(|e| OpenReadError::wrap_io_error(e, path.to_path_buf()));
        }
        if let Some((name, segment)) = packable(path) {
            let mut packing = self.packing();
            if packing.pending.contains_key(name) {
                return Ok(true);
            }
            if packing.in_memory.contains(name) {
                return Ok(!packing.unlinked.contains(name));
            }
            let table = self
                .known_pack(&mut packing, segment)
                .map_err(|e| OpenReadError::wrap_io_error(e, path.to_path_buf()))?;
            if table.is_some_and(|t| t.members.contains_key(name))
                && !packing.deleted(segment, name)
            {
                return Ok(true);
            }
        }
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let Some((name, segment)) = packable(path) else {
            return self.open_plain(path);
        };
        {
            let mut packing = self.packing();
            let packed = packing.has_pack(segment);
            if packed || self.inner.exists(path).unwrap_or(true) {
                drop(packing);
                return self.open_plain(path);
            }
            if packing.pending.contains_key(name) || packing.in_memory.contains(name) {
                return Err(OpenWriteError::FileAlreadyExists(path.to_path_buf()));
            }
            *packing.writing.entry(segment.to_owned()).or_default() += 1;
            packing.in_memory.insert(name.to_owned());
        }
        Ok(io::BufWriter::new(Box::new(Held {
            directory: self.clone(),
            name: name.to_owned(),
            state: HeldState::Memory(Vec::new()),
        })))
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
        if path == Path::new(META) {
            // A commit names only segments whose files are on disk.
            self.pack_pending()?;
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
    use scriptorium_testkit::file_names;

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

    const SEGMENT: &str = "0123456789abcdef0123456789abcdef";

    fn write(dir: &IndexDirectory, name: &str, bytes: &[u8]) {
        let mut file = dir.open_write(Path::new(name)).expect("open_write");
        io::Write::write_all(&mut file, bytes).expect("write");
        file.terminate().expect("terminate");
    }

    fn read(dir: &IndexDirectory, name: &str) -> Vec<u8> {
        let handle = dir.get_file_handle(Path::new(name)).expect("a handle");
        handle.read_bytes(0..handle.len()).expect("read").as_slice().to_vec()
    }

    fn managed(dir: &IndexDirectory) -> Vec<String> {
        serde_json::from_slice(&dir.atomic_read(Path::new(".managed.json")).expect("read"))
            .expect("a list")
    }

    #[test]
    fn a_segments_files_go_to_one_pack_and_are_read_back_from_it() {
        for synced in [false, true] {
            let tmp = tempfile::tempdir().expect("a temp dir");
            let dir = IndexDirectory::open(tmp.path(), synced).expect("open");
            let files = [("idx", b"postings".as_slice()), ("store", b"stored"), ("pos", b"")];
            for (component, bytes) in files {
                write(&dir, &format!("{SEGMENT}.{component}"), bytes);
            }
            // Held in memory until packed, and readable meanwhile.
            assert!(file_names(tmp.path()).is_empty(), "{:?}", file_names(tmp.path()));
            assert!(dir.exists(Path::new(&format!("{SEGMENT}.idx"))).expect("exists"));
            assert_eq!(read(&dir, &format!("{SEGMENT}.store")), b"stored");
            assert!(matches!(
                dir.open_write(Path::new(&format!("{SEGMENT}.idx"))),
                Err(OpenWriteError::FileAlreadyExists(_))
            ));
            dir.pack_pending().expect("pack");
            assert_eq!(file_names(tmp.path()), [format!("{SEGMENT}.pack")]);

            // Another handle (another process) finds each file in the pack.
            let other = IndexDirectory::open(tmp.path(), synced).expect("open");
            let members: Vec<String> =
                files.iter().map(|(component, _)| format!("{SEGMENT}.{component}")).collect();
            for ((_, bytes), name) in files.iter().zip(&members) {
                assert_eq!(read(&other, name), *bytes, "{name}");
                assert!(other.exists(Path::new(name)).expect("exists"));
            }
            let mut listed = members.clone();
            listed.sort();
            assert_eq!(managed(&other), listed, "the managed list names the pack's files");

            // Deleting its files removes the pack with the last one.
            for (n, name) in members.iter().enumerate() {
                assert!(tmp.path().join(format!("{SEGMENT}.pack")).exists(), "before {n}");
                other.delete(Path::new(name)).expect("delete");
                assert!(!other.exists(Path::new(name)).expect("exists"));
            }
            assert!(file_names(tmp.path()).is_empty(), "{:?}", file_names(tmp.path()));
        }
    }

    /// A process that ends with some of a pack's files deleted leaves the pack whole on disk:
    /// the next handle lists all its files, and deleting them deletes it.
    #[test]
    fn a_pack_half_deleted_by_one_handle_is_listed_whole_to_the_next() {
        let (tmp, dir) = dir();
        let members = [format!("{SEGMENT}.idx"), format!("{SEGMENT}.store")];
        for name in &members {
            write(&dir, name, b"bytes");
        }
        dir.pack_pending().expect("pack");
        dir.delete(Path::new(&members[0])).expect("delete");
        assert_eq!(managed(&dir), [members[1].clone()]);
        drop(dir);
        let next = IndexDirectory::open(tmp.path(), true).expect("open");
        assert_eq!(managed(&next), members);
        for name in &members {
            next.delete(Path::new(name)).expect("delete");
        }
        assert!(file_names(tmp.path()).is_empty(), "{:?}", file_names(tmp.path()));
    }

    #[test]
    fn a_segment_still_being_written_is_not_packed_and_a_packed_one_keeps_later_files_apart() {
        let (tmp, dir) = dir();
        let mut open = dir.open_write(Path::new(&format!("{SEGMENT}.term"))).expect("open");
        write(&dir, &format!("{SEGMENT}.idx"), b"postings");
        dir.pack_pending().expect("pack");
        assert!(file_names(tmp.path()).is_empty(), "a segment being written waits");
        io::Write::write_all(&mut open, b"terms").expect("write");
        open.terminate().expect("terminate");
        // A commit packs what it holds before it writes meta.json.
        dir.atomic_write(Path::new("meta.json"), b"{}").expect("commit");
        let pack = format!("{SEGMENT}.pack");
        assert_eq!(file_names(tmp.path()), [pack.clone(), "meta.json.slot0".into()]);
        // A file of the segment written after its pack is a file of its own.
        write(&dir, &format!("{SEGMENT}.fast"), b"columns");
        assert_eq!(
            file_names(tmp.path()),
            [format!("{SEGMENT}.fast"), pack, "meta.json.slot0".into()]
        );
        // Delete files are never held.
        write(&dir, &format!("{SEGMENT}.7.del"), b"alive");
        assert!(tmp.path().join(format!("{SEGMENT}.7.del")).exists());
        let other = IndexDirectory::open(tmp.path(), true).expect("open");
        for (component, bytes) in
            [("term", b"terms".as_slice()), ("idx", b"postings"), ("fast", b"columns")]
        {
            assert_eq!(read(&other, &format!("{SEGMENT}.{component}")), bytes, "{component}");
        }
    }

    /// tantivy deletes a file being written when it is garbage (the store file of a segment
    /// writer dropped unused is ended later by its compressor thread): it ends as nothing.
    #[test]
    fn a_file_deleted_while_written_ends_as_nothing() {
        let (tmp, dir) = dir();
        let name = format!("{SEGMENT}.store");
        let mut file = dir.open_write(Path::new(&name)).expect("open");
        io::Write::write_all(&mut file, b"stored").expect("write");
        io::Write::flush(&mut file).expect("flush");
        dir.delete(Path::new(&name)).expect("deleted while written");
        assert!(!dir.exists(Path::new(&name)).expect("exists"));
        io::Write::write_all(&mut file, b" and more").expect("write");
        file.terminate().expect("terminate");
        assert!(!dir.exists(Path::new(&name)).expect("exists"));
        dir.pack_pending().expect("pack");
        assert!(file_names(tmp.path()).is_empty(), "{:?}", file_names(tmp.path()));
        assert_eq!(dir.packing().held, 0, "nothing is held");
        // The name can be written again, and that file stays.
        write(&dir, &name, b"again");
        dir.pack_pending().expect("pack");
        assert_eq!(read(&IndexDirectory::open(tmp.path(), true).expect("open"), &name), b"again");
    }

    #[test]
    fn a_file_past_the_memory_limit_is_written_to_disk_as_it_comes() {
        let (tmp, dir) = dir();
        let big = vec![7u8; HELD_MAX + 1];
        write(&dir, &format!("{SEGMENT}.store"), &big);
        write(&dir, &format!("{SEGMENT}.idx"), b"postings");
        assert_eq!(file_names(tmp.path()), [format!("{SEGMENT}.store")]);
        dir.pack_pending().expect("pack");
        assert_eq!(file_names(tmp.path()), [format!("{SEGMENT}.pack"), format!("{SEGMENT}.store")]);
        assert_eq!(dir.packing().held, 0, "nothing is held any more");
        let other = IndexDirectory::open(tmp.path(), true).expect("open");
        assert_eq!(read(&other, &format!("{SEGMENT}.store")), big);
        assert_eq!(read(&other, &format!("{SEGMENT}.idx")), b"postings");
    }

    #[test]
    fn a_pack_cut_short_is_refused_and_listed_under_its_own_name_for_collection() {
        let (tmp, dir) = dir();
        write(&dir, &format!("{SEGMENT}.idx"), b"postings");
        dir.pack_pending().expect("pack");
        let pack = tmp.path().join(format!("{SEGMENT}.pack"));
        let bytes = std::fs::read(&pack).expect("read");
        std::fs::write(&pack, &bytes[..bytes.len() - 1]).expect("cut");
        let other = IndexDirectory::open(tmp.path(), true).expect("open");
        assert!(other.get_file_handle(Path::new(&format!("{SEGMENT}.idx"))).is_err());
        assert_eq!(managed(&other), [format!("{SEGMENT}.pack")]);
        other.delete(Path::new(&format!("{SEGMENT}.pack"))).expect("delete");
        assert!(file_names(tmp.path()).is_empty());
    }

    #[test]
    fn other_files_are_tantivys_own() {
        let (tmp, dir) = dir();
        dir.atomic_write(Path::new("other.json"), b"x").expect("write");
        assert_eq!(std::fs::read(tmp.path().join("other.json")).expect("read"), b"x");
    }
}
