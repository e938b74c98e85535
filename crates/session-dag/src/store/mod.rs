//! The embedded session store: one append-only, fsynced log per session, loaded lazily into an
//! in-memory index, plus a registry cache for listing.
//!
//! # Layout of the store directory
//!
//! - `s_<escaped id>.log` / `h_<sha256>.log`: one log per session (names: see [`naming`]);
//!   format: see [`log`].
//! - `registry.jsonl`, `registry.lock`: the listing cache (see [`registry`]).
//! - `<log name>.tmp`: a rewrite's new log while it is written (see [`rewrite`]); one left by a
//!   crash is removed by the next write of its session.
//!
//! # Durability and concurrency
//!
//! Every mutating call takes an exclusive `flock` on the session's log, first applies whatever
//! other processes appended since this store last looked, truncates a torn tail left by a
//! crash, then writes its whole lines with one `write` on an `O_APPEND` descriptor and
//! `fdatasync`s before returning (the directory is fsynced too when the log is new). Readers
//! take a shared lock while reading a log, so they never see a half-written line of a live
//! writer; what they find unfinished is a crash's leftovers, which are skipped with a warning.
//!
//! # Rewriting: forgets and rewrites of texts
//!
//! [`SessionStore::forget`] and [`SessionStore::rewrite_texts`] cannot append: the old bytes
//! must leave the file. Under the log's exclusive lock a rewrite catches up, writes the whole
//! new log ([`rewrite`]) to `<log name>.tmp` (created exclusively, 0600), locks that file too
//! and fsyncs it; then, under the registry lock, removes every registry line of the session
//! (one atomic replace of the registry), renames the new log over the old one and fsyncs the
//! directory, and lets the registry lock go; then it reads the new log back (this store's cache
//! holds the new texts) and records the session's registry entry. A crash leaves the old log or
//! the new one, never a mix, and once the new log has the name the registry holds nothing of
//! the old one (see [`registry`]); the temporary file a crash leaves is removed by the next
//! write of the session.
//!
//! The rule that makes the handoff safe: **a lock counts only on the file the log's name
//! points to.** Everyone opens the log by its path, locks it, and then compares the inode it
//! locked with the inode at the path; when they differ (a rewrite renamed a new log over the
//! one it opened while it waited for the lock), it drops that file and opens the path again.
//! So no writer ever appends to a replaced log, and no reader reads one after the rewrite
//! finished; and since the new log is locked before it is renamed into place, nobody reaches
//! it before it is durable. A store also remembers the inode and the first line (whose
//! `rewrites` count a rewrite increments) of the log it read: when either differs, or the log
//! got shorter, it reads the log again from the start instead of continuing at its old offset.
//!
//! # Privacy and symlinks
//!
//! The directory and every directory the store creates on the way to it are 0700, every file
//! it writes 0600, whatever the umask (a store directory or log left looser by an earlier
//! version is tightened when opened for writing). Logs and registry files are opened with
//! `O_NOFOLLOW`, and a symlinked store directory is refused at [`EmbeddedStore::open`]: a
//! symlink planted at a log path is [`Error::SymlinkRefused`], and the store never reads or
//! writes anything outside its directory through one. A FIFO or device at a log path is
//! [`Error::NotRegularFile`] (never blocks).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::files::{self, Access, Symlinks};
use crate::{
    Error, MetadataBatch, Node, NodeId, Page, Session, SessionId, SessionStore, Timestamp,
};

pub mod log;
pub mod naming;
pub mod registry;
pub mod rewrite;
mod state;

use log::Record;
use state::SessionState;

/// The source of the current time, injected so tests are deterministic.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        #[expect(
            clippy::disallowed_methods,
            reason = "the real source behind the store's injected Clock"
        )]
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Timestamp(now)
    }
}

impl<F: Fn() -> Timestamp + Send + Sync> Clock for F {
    fn now(&self) -> Timestamp {
        self()
    }
}

/// What kind of problem a [`LoadWarning`] reports.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarningKind {
    /// The last line is incomplete or unreadable (a crash during a write); it was skipped and
    /// the next write truncates it.
    TornTail,
    /// The last `batch` of the log is missing node lines (a crash during `append_batch`); the
    /// whole batch was skipped.
    IncompleteBatch,
    /// A line followed by other lines does not parse; it was skipped and the rest loaded.
    CorruptLine,
    /// A line parses but cannot apply (duplicate node, unknown node, parent cycle, …).
    InvalidRecord,
    /// The registry cache could not be updated (listing repairs it from the logs).
    Registry,
}

/// A problem found while reading a session log: never fatal, the rest of the log loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadWarning {
    /// The log file.
    pub path: PathBuf,
    /// The 1-based line number (0 when not about one line).
    pub line: usize,
    /// What went wrong.
    pub kind: WarningKind,
    /// A human explanation.
    pub message: String,
}

impl std::fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
    }
}

/// A session and its size, as listed by [`EmbeddedStore::list_summaries`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session.
    pub session: Session,
    /// How many nodes it has (rewound ones included).
    pub nodes: usize,
}

/// A session's slot in the cache: `None` until its log was first read.
type Slot = Arc<Mutex<Option<SessionState>>>;

/// The embedded [`SessionStore`]: append-only logs in one directory.
///
/// Reads are served from an in-memory index of each session, loaded on first access.
/// [`SessionStore::node`] never looks at the disk once the session is loaded; `branch`, `tips`
/// and `session` first pick up lines that other processes appended (one `stat` when nothing
/// changed); every write does so under the lock before checking its preconditions.
pub struct EmbeddedStore {
    dir: PathBuf,
    clock: Arc<dyn Clock>,
    sessions: Mutex<HashMap<SessionId, Slot>>,
    warnings: Mutex<Vec<LoadWarning>>,
    logs_read: AtomicUsize,
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore").field("dir", &self.dir).finish_non_exhaustive()
    }
}

/// What a mutation decided, under the session lock.
enum Plan<R> {
    /// Nothing to write; return this.
    Nothing(R),
    /// Write `bytes` (whole lines), then apply `records` to the index and return `result`.
    Write { bytes: Vec<u8>, records: Vec<Record>, result: R },
}

/// A rewritten log written and fsynced beside the log, locked, not yet published; dropped
/// unpublished, it is removed.
#[must_use = "a staged log is removed unless it is published"]
struct StagedLog {
    file: File,
    tmp: Unpublished,
}

/// The path of a staged log, removed when dropped before it is published.
struct Unpublished(Option<PathBuf>);

impl Drop for Unpublished {
    fn drop(&mut self) {
        if let Some(tmp) = self.0.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io { path: path.to_path_buf(), source }
}

/// Makes a new directory entry durable.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Which `flock` [`open_locked`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockKind {
    Shared,
    Exclusive,
}

/// Opens the file at `path` (see [`files::open`]) and locks it, making sure the lock is on the
/// file the path names once the lock is held: a rewrite may have renamed a new log over the
/// one opened while the lock was awaited; then the path is opened again. `Ok(None)`: there is
/// no file (and `access` does not create one).
fn open_locked(path: &Path, access: Access, kind: LockKind) -> Result<Option<File>, Error> {
    loop {
        let Some(file) = files::open(path, access, Symlinks::Refuse)? else { return Ok(None) };
        match kind {
            LockKind::Shared => file.lock_shared(),
            LockKind::Exclusive => file.lock(),
        }
        .map_err(|e| io_error(path, e))?;
        let held = file.metadata().map_err(|e| io_error(path, e))?;
        match std::fs::symlink_metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => return Ok(Some(file)),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(path, e)),
        }
    }
}

/// Removes the temporary file a rewrite left behind (a crash); nothing when there is none.
fn remove_leftover(tmp: &Path) -> Result<(), Error> {
    match std::fs::remove_file(tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(tmp, e)),
        _ => Ok(()),
    }
}

/// The first line of `bytes`, its line end included (empty when there is no complete line).
fn first_line(bytes: &[u8]) -> &[u8] {
    bytes.iter().position(|&b| b == b'\n').map_or(&[], |end| &bytes[..=end])
}

/// Whether `file` starts with `header`.
fn starts_with(file: &File, header: &[u8]) -> std::io::Result<bool> {
    let mut buf = vec![0; header.len()];
    match file.read_exact_at(&mut buf, 0) {
        Ok(()) => Ok(buf == header),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave an index half-applied (records apply only
    // after the write succeeded, and applying does not panic), so the data is still usable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl EmbeddedStore {
    /// Appends `record` (a session-level field) unless `unchanged` holds for the session.
    fn set_field(
        &self,
        session: &SessionId,
        unchanged: impl FnOnce(&SessionState) -> bool,
        record: Record,
    ) -> Result<(), Error> {
        self.mutate(session, false, |state| {
            if unchanged(state) {
                return Ok(Plan::Nothing(()));
            }
            let mut bytes = Vec::new();
            log::write_line(&mut bytes, &record);
            Ok(Plan::Write { bytes, records: vec![record], result: () })
        })
    }
    /// Opens (creating it if needed) the store in `dir`, with the system clock. Reads no log.
    ///
    /// Disk effect: creates `dir` and its missing parents with mode 0700 (not fsynced), or sets
    /// an existing `dir` that is open to group or others to 0700; nothing else. A `dir` that is
    /// a symlink is [`Error::SymlinkRefused`].
    pub fn open(dir: impl Into<PathBuf>) -> Result<EmbeddedStore, Error> {
        EmbeddedStore::open_with_clock(dir, Arc::new(SystemClock))
    }

    /// Opens (creating it if needed) the store in `dir` with `clock` (used for the `at` of head
    /// moves and rewinds). Reads no log.
    ///
    /// Disk effect: as [`EmbeddedStore::open`].
    pub fn open_with_clock(
        dir: impl Into<PathBuf>,
        clock: Arc<dyn Clock>,
    ) -> Result<EmbeddedStore, Error> {
        let dir = dir.into();
        files::ensure_private_dir(&dir)?;
        Ok(EmbeddedStore {
            dir,
            clock,
            sessions: Mutex::new(HashMap::new()),
            warnings: Mutex::new(Vec::new()),
            logs_read: AtomicUsize::new(0),
        })
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log file name of `session` inside the store directory: `s_` + the ID with every byte
    /// outside `[a-z0-9_-]` written `%xx` (lower-case hex) + `.log`, or `h_` + the SHA-256 of
    /// the ID + `.log` when that would exceed 200 bytes. Any ID is safe: the name never holds
    /// `/` or `..`, and two IDs never share a name, even on case-insensitive file systems.
    pub fn log_file_name(session: &SessionId) -> String {
        naming::log_file_name(session)
    }

    /// The path of `session`'s log.
    pub fn log_path(&self, session: &SessionId) -> PathBuf {
        self.dir.join(naming::log_file_name(session))
    }

    /// Every warning collected so far (torn tails, corrupt lines, …), oldest first.
    pub fn warnings(&self) -> Vec<LoadWarning> {
        lock(&self.warnings).clone()
    }

    /// How many times this store opened a session log to read it (lazy loads, catch-ups,
    /// header reads): an instrument to check that reading one session reads no other.
    pub fn logs_read(&self) -> usize {
        self.logs_read.load(Ordering::Relaxed)
    }

    /// Picks up what other processes appended to `session`'s log since this store last read it.
    pub fn refresh(&self, session: &SessionId) -> Result<(), Error> {
        self.with_state(session, true, |_| ())
    }

    /// Sessions with their node counts, newest `updated_at` first (ties by ID).
    ///
    /// Reads the registry and `stat`s every log; reads only the logs whose registry entry is
    /// missing or stale, then records fresh entries. Sessions without nodes are not listed.
    /// Disk effects: appends to the registry (not fsynced), and may compact it atomically
    /// (temporary file, fsync, rename, directory fsync).
    pub fn list_summaries(&self, page: Page) -> Result<Vec<SessionSummary>, Error> {
        // The registry is a cache: one that cannot be trusted (a symlink) is no cache at all.
        let (mut entries, lines) = match registry::read(&self.dir) {
            Ok(read) => read,
            Err(err @ Error::SymlinkRefused { .. }) => {
                self.warn_registry(&err);
                (HashMap::new(), 0)
            }
            Err(err) => return Err(err),
        };
        let by_name: HashMap<String, SessionId> =
            entries.keys().map(|id| (naming::log_file_name(id), id.clone())).collect();
        let mut all = Vec::new();
        let mut fresh = Vec::new();
        for (name, len, ino) in self.log_files()? {
            let id = match by_name.get(&name) {
                Some(id) => id.clone(),
                None => match naming::decode_log_file_name(&name) {
                    Some(naming::Decoded::Id(id)) => id,
                    Some(naming::Decoded::Hashed) => match self.header_id(&self.dir.join(&name))? {
                        Some(id) => id,
                        None => continue,
                    },
                    None => continue,
                },
            };
            match entries.remove(&id) {
                Some(entry) if entry.describes(len, ino) => all.push(entry),
                _ => {
                    let entry = self.with_state(&id, true, registry_entry)?;
                    fresh.push(entry.clone());
                    all.push(entry);
                }
            }
        }
        if let Err(err) = registry::append(&self.dir, &fresh) {
            self.warn_registry(&err);
        }
        if lines > 2 * all.len() + 64
            && let Err(err) = registry::rewrite(&self.dir, &all)
        {
            self.warn_registry(&err);
        }
        let mut live: Vec<registry::Entry> = all.into_iter().filter(|e| e.n > 0).collect();
        live.sort_by(|a, b| b.u.cmp(&a.u).then_with(|| a.s.cmp(&b.s)));
        Ok(live
            .into_iter()
            .skip(page.offset)
            .take(page.limit)
            .map(|e| SessionSummary {
                session: Session { id: e.s, head: e.h, updated_at: e.u, title: e.t, project: e.p },
                nodes: e.n,
            })
            .collect())
    }

    /// Rebuilds the registry from every log (reading all of them) and returns how many
    /// sessions it lists. Disk effect: the registry is replaced atomically (temporary file,
    /// fsync, rename, directory fsync).
    pub fn rebuild_registry(&self) -> Result<usize, Error> {
        let mut all = Vec::new();
        for (name, _, _) in self.log_files()? {
            let id = match naming::decode_log_file_name(&name) {
                Some(naming::Decoded::Id(id)) => id,
                Some(naming::Decoded::Hashed) => match self.header_id(&self.dir.join(&name))? {
                    Some(id) => id,
                    None => continue,
                },
                None => continue,
            };
            all.push(self.with_state(&id, true, registry_entry)?);
        }
        registry::rewrite(&self.dir, &all)?;
        Ok(all.iter().filter(|e| e.n > 0).count())
    }

    /// The session log files in the directory, with their lengths and inodes.
    fn log_files(&self) -> Result<Vec<(String, u64, u64)>, Error> {
        let mut out = Vec::new();
        let read_dir = std::fs::read_dir(&self.dir).map_err(|e| io_error(&self.dir, e))?;
        for dirent in read_dir {
            let dirent = dirent.map_err(|e| io_error(&self.dir, e))?;
            let Ok(name) = dirent.file_name().into_string() else { continue };
            if naming::decode_log_file_name(&name).is_none() {
                continue;
            }
            let meta = dirent.metadata().map_err(|e| io_error(&dirent.path(), e))?;
            if meta.is_file() {
                out.push((name, meta.len(), meta.ino()));
            }
        }
        Ok(out)
    }

    /// The session ID in a log's header line, if it has a readable one.
    fn header_id(&self, path: &Path) -> Result<Option<SessionId>, Error> {
        let Some(file) = files::open(path, Access::Read, Symlinks::Refuse)? else {
            return Ok(None);
        };
        self.logs_read.fetch_add(1, Ordering::Relaxed);
        let mut first = Vec::new();
        BufReader::new(file.take(64 * 1024))
            .read_until(b'\n', &mut first)
            .map_err(|e| io_error(path, e))?;
        Ok(match serde_json::from_slice::<Record>(first.trim_ascii_end()) {
            Ok(Record::Session { id, .. }) => Some(id),
            _ => None,
        })
    }

    fn warn_registry(&self, err: &Error) {
        lock(&self.warnings).push(LoadWarning {
            path: self.dir.join(registry::REGISTRY_FILE),
            line: 0,
            kind: WarningKind::Registry,
            message: format!("registry not updated: {err}"),
        });
    }

    fn slot(&self, session: &SessionId) -> Slot {
        let mut sessions = lock(&self.sessions);
        if let Some(slot) = sessions.get(session) {
            return Arc::clone(slot);
        }
        let slot: Slot = Arc::new(Mutex::new(None));
        sessions.insert(session.clone(), Arc::clone(&slot));
        slot
    }

    /// Runs `f` on the session's index, loading it first if needed; with `refresh`, first
    /// applies what other processes appended.
    fn with_state<R>(
        &self,
        session: &SessionId,
        refresh: bool,
        f: impl FnOnce(&SessionState) -> R,
    ) -> Result<R, Error> {
        let slot = self.slot(session);
        let mut guard = lock(&slot);
        let state = match &mut *guard {
            Some(state) => {
                if refresh {
                    self.catch_up(state)?;
                }
                state
            }
            empty => {
                let mut state = SessionState::new(session.clone(), self.log_path(session));
                self.catch_up(&mut state)?;
                empty.insert(state)
            }
        };
        Ok(f(state))
    }

    /// Applies what the log holds beyond what `state` has read, under a shared lock. One
    /// `stat` when the log has the length and the inode `state` last saw.
    fn catch_up(&self, state: &mut SessionState) -> Result<(), Error> {
        let (len, ino) = match std::fs::symlink_metadata(&state.path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Error::SymlinkRefused { path: state.path.clone() });
            }
            Ok(meta) if !meta.is_file() => {
                let kind = files::kind(&meta);
                return Err(Error::NotRegularFile { path: state.path.clone(), kind });
            }
            Ok(meta) => (meta.len(), meta.ino()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (0, state.ino),
            Err(e) => return Err(io_error(&state.path, e)),
        };
        if len == state.seen_len && ino == state.ino {
            return Ok(());
        }
        let Some(mut file) = open_locked(&state.path, Access::Read, LockKind::Shared)? else {
            return Ok(());
        };
        self.read_tail(&mut file, state)
    }

    /// Reads and applies the log beyond `state.loaded_len` through `file` (locked by the
    /// caller). A log that is not the one `state` read (another inode, another first line, or
    /// shorter than what was applied: a rewrite replaced it) is read again from the start.
    fn read_tail(&self, file: &mut File, state: &mut SessionState) -> Result<(), Error> {
        let path = state.path.clone();
        let meta = file.metadata().map_err(|e| io_error(&path, e))?;
        let len = meta.len();
        if state.loaded_len > 0
            && (meta.ino() != state.ino
                || len < state.loaded_len
                || !starts_with(file, &state.header).map_err(|e| io_error(&path, e))?)
        {
            *state = SessionState::new(state.id.clone(), path.clone());
        }
        state.ino = meta.ino();
        if len == state.seen_len {
            return Ok(());
        }
        self.logs_read.fetch_add(1, Ordering::Relaxed);
        file.seek(SeekFrom::Start(state.loaded_len)).map_err(|e| io_error(&path, e))?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).map_err(|e| io_error(&path, e))?;
        let scan = log::scan(&buf, state.loaded_lines, &path);
        if state.loaded_len == 0 {
            state.header = first_line(&buf[..scan.consumed]).to_vec();
        }
        let mut warnings = scan.warnings;
        for scanned in scan.records {
            state.apply(scanned.line, scanned.record, &mut warnings);
        }
        state.loaded_len += scan.consumed as u64;
        state.loaded_lines += scan.lines;
        state.seen_len = state.loaded_len + (buf.len() - scan.consumed) as u64;
        if !warnings.is_empty() {
            lock(&self.warnings).extend(warnings);
        }
        Ok(())
    }

    /// Writes `bytes`, a rewritten log, to `tmp` (created exclusively and locked before it is
    /// reachable by the log's name) and fsyncs it. Dropping the result unpublished removes it.
    fn stage_log(&self, tmp: &Path, bytes: &[u8]) -> Result<StagedLog, Error> {
        let file = files::open(tmp, Access::CreateNew, Symlinks::Refuse)?
            .expect("a file opened with create exists");
        let staged = StagedLog { file, tmp: Unpublished(Some(tmp.to_path_buf())) };
        let mut file = &staged.file;
        let written = (|| -> std::io::Result<()> {
            file.lock()?;
            file.write_all(bytes)?;
            file.sync_all()
        })();
        written.map_err(|e| io_error(tmp, e))?;
        Ok(staged)
    }

    /// Publishes `staged` as `state`'s log: renames it over the log and fsyncs the directory;
    /// `state` is then empty, to be read again from the returned file (still locked). The
    /// caller holds the old log's exclusive lock and the session mutex.
    fn publish_log(&self, state: &mut SessionState, staged: StagedLog) -> Result<File, Error> {
        let path = state.path.clone();
        let StagedLog { file, tmp: mut unpublished } = staged;
        let tmp = unpublished.0.take().expect("a staged log is published once");
        if let Err(e) = std::fs::rename(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_error(&path, e));
        }
        // From here the log is the new file: whatever fails, `state` must not stay the old one's.
        *state = SessionState::new(state.id.clone(), path);
        sync_dir(&self.dir).map_err(|e| io_error(&self.dir, e))?;
        Ok(file)
    }

    /// Rewrites `session`'s log whole (see the module docs, *Rewriting*). Under the session
    /// mutex and the log's exclusive lock: catches up, lets `edit` make the [`rewrite::Edit`]
    /// from the session's state (`None`: nothing to do), writes the new log and fsyncs it;
    /// then, holding the registry lock with every line of the session removed from it, renames
    /// the new log over the old one and fsyncs the directory; then reads it back, and records
    /// its registry entry. Returns the edit once it ran, and whether the log was replaced
    /// (`false`: no line changed, nothing was written).
    ///
    /// A registry that cannot be cleaned fails the call before the log is replaced when
    /// `strict` says so of the edit (a title it changed may be in the registry); otherwise it
    /// is a warning, and the new log is published all the same.
    fn rewrite_log<E: rewrite::Edit>(
        &self,
        session: &SessionId,
        edit: impl FnOnce(&SessionState) -> Option<E>,
        strict: impl FnOnce(&E) -> bool,
    ) -> Result<Option<(E, bool)>, Error> {
        let slot = self.slot(session);
        let (edit, entry) = {
            let mut guard = lock(&slot);
            let state = guard
                .get_or_insert_with(|| SessionState::new(session.clone(), self.log_path(session)));
            let path = state.path.clone();
            let Some(mut file) =
                open_locked(&path, Access::Append { create: false }, LockKind::Exclusive)?
            else {
                return Err(Error::SessionNotFound(session.clone()));
            };
            self.read_tail(&mut file, state)?;
            if !state.exists() {
                return Err(Error::SessionNotFound(session.clone()));
            }
            let tmp = self.dir.join(naming::temporary_log_file_name(session));
            remove_leftover(&tmp)?;
            let Some(mut edit) = edit(state) else { return Ok(None) };
            let loaded = usize::try_from(state.loaded_len).expect("a loaded log fits in memory");
            let mut buf = vec![0; loaded];
            file.read_exact_at(&mut buf, 0).map_err(|e| io_error(&path, e))?;
            let Some(bytes) = rewrite::rewrite(&buf, &path, session, &mut edit) else {
                return Ok(Some((edit, false)));
            };
            drop(buf);
            let staged = self.stage_log(&tmp, &bytes)?;
            let held = match registry::hold_without(&self.dir, session) {
                Ok(held) => Some(held),
                Err(err) if strict(&edit) => return Err(err),
                // Only a cache that a listing repairs.
                Err(err) => {
                    self.warn_registry(&err);
                    None
                }
            };
            let mut new = self.publish_log(state, staged)?;
            drop(held);
            self.read_tail(&mut new, state)?;
            (edit, registry_entry(state))
        };
        if let Err(err) = registry::append(&self.dir, &[entry]) {
            self.warn_registry(&err);
        }
        Ok(Some((edit, true)))
    }

    /// Runs one mutation: under the session mutex and the log's exclusive lock, catches up,
    /// lets `plan` decide, writes and fsyncs, applies, then records a registry entry.
    /// Without `create`, a session without a log is [`Error::SessionNotFound`].
    /// Moves the head; the `head` line carries `at`, or the clock's time (read only when a line
    /// is written).
    fn move_head(
        &self,
        session: &SessionId,
        node: &NodeId,
        at: Option<Timestamp>,
    ) -> Result<(), Error> {
        self.mutate(session, false, |state| {
            if !state.index.contains_key(node) {
                return Err(node_not_found(session, node));
            }
            if state.head.as_ref() == Some(node) {
                return Ok(Plan::Nothing(()));
            }
            let at = at.unwrap_or_else(|| self.clock.now());
            let record = Record::Head { node: node.clone(), at };
            let mut bytes = Vec::new();
            log::write_line(&mut bytes, &record);
            Ok(Plan::Write { bytes, records: vec![record], result: () })
        })
    }

    fn mutate<R>(
        &self,
        session: &SessionId,
        create: bool,
        plan: impl FnOnce(&SessionState) -> Result<Plan<R>, Error>,
    ) -> Result<R, Error> {
        let slot = self.slot(session);
        let (result, entry) = {
            let mut guard = lock(&slot);
            let state = guard
                .get_or_insert_with(|| SessionState::new(session.clone(), self.log_path(session)));
            let path = state.path.clone();
            let Some(mut file) =
                open_locked(&path, Access::Append { create }, LockKind::Exclusive)?
            else {
                return Err(Error::SessionNotFound(session.clone()));
            };
            self.read_tail(&mut file, state)?;
            remove_leftover(&self.dir.join(naming::temporary_log_file_name(session)))?;
            if !create && !state.exists() {
                return Err(Error::SessionNotFound(session.clone()));
            }
            let (bytes, records, result) = match plan(state)? {
                Plan::Nothing(result) => return Ok(result),
                Plan::Write { bytes, records, result } => (bytes, records, result),
            };
            let new_log = state.loaded_len == 0;
            let mut out = Vec::with_capacity(bytes.len() + 64);
            if new_log {
                log::write_line(
                    &mut out,
                    &Record::Session { v: log::FORMAT_VERSION, id: session.clone(), rewrites: 0 },
                );
                state.header = first_line(&out).to_vec();
            }
            out.extend_from_slice(&bytes);
            let write = |file: &mut File| -> std::io::Result<()> {
                if state.seen_len > state.loaded_len {
                    // The torn tail of a crash (already reported when read).
                    file.set_len(state.loaded_len)?;
                }
                file.write_all(&out)?;
                file.sync_data()?;
                if new_log {
                    sync_dir(&self.dir)?;
                }
                Ok(())
            };
            if let Err(e) = write(&mut file) {
                // Best effort: leave no partial line behind; a later writer would truncate it.
                let _ = file.set_len(state.loaded_len);
                state.seen_len = u64::MAX;
                return Err(io_error(&path, e));
            }
            let mut warnings = Vec::new();
            let line = state.loaded_lines + 1;
            for record in records {
                state.apply(line, record, &mut warnings);
            }
            state.loaded_len += out.len() as u64;
            state.loaded_lines += out.iter().filter(|&&b| b == b'\n').count();
            state.seen_len = state.loaded_len;
            if !warnings.is_empty() {
                lock(&self.warnings).extend(warnings);
            }
            (result, registry_entry(state))
        };
        if let Err(err) = registry::append(&self.dir, &[entry]) {
            self.warn_registry(&err);
        }
        Ok(result)
    }
}

fn registry_entry(state: &SessionState) -> registry::Entry {
    registry::Entry {
        s: state.id.clone(),
        u: state.updated_at,
        h: state.head.clone(),
        t: state.title.clone(),
        p: state.project.clone(),
        n: state.nodes.len(),
        len: state.seen_len,
        i: Some(state.ino),
    }
}

fn node_not_found(session: &SessionId, node: &NodeId) -> Error {
    Error::NodeNotFound { session: session.clone(), node: node.clone() }
}

impl SessionStore for EmbeddedStore {
    /// Atomicity: one `node` line, written whole and fsynced before returning.
    fn append(&self, session: &SessionId, node: Node) -> Result<(), Error> {
        self.mutate(session, true, |state| {
            if state.index.contains_key(&node.id) {
                return Err(Error::DuplicateNode { session: session.clone(), node: node.id });
            }
            if (node.parent.as_ref() == Some(&node.id) || state.dangling.contains(&node.id))
                && crate::dag::closes_cycle(&node.id, node.parent.as_ref(), |id| state.get(id))
            {
                return Err(Error::ParentCycle { session: session.clone(), node: node.id });
            }
            let mut bytes = Vec::with_capacity(node.content.len() + 256);
            log::write_node_line(&mut bytes, &node, true);
            Ok(Plan::Write { bytes, records: vec![Record::Node { node, head: true }], result: () })
        })
    }

    /// Atomicity: all new nodes are written as one `batch` with one fsync; after a crash the
    /// batch is either wholly present or wholly absent. A node that would close a parent cycle
    /// fails the whole batch with [`Error::ParentCycle`] before anything is written.
    fn append_batch(&self, session: &SessionId, nodes: Vec<Node>) -> Result<usize, Error> {
        self.mutate(session, true, |state| {
            let mut accepted: Vec<Node> = Vec::with_capacity(nodes.len());
            let mut staged: HashMap<NodeId, usize> = HashMap::new();
            let mut batch_dangling: std::collections::HashSet<NodeId> = Default::default();
            for node in nodes {
                if state.index.contains_key(&node.id) || staged.contains_key(&node.id) {
                    continue;
                }
                let lookup = |id: &NodeId| match staged.get(id) {
                    Some(&k) => Some(&accepted[k]),
                    None => state.get(id),
                };
                if (node.parent.as_ref() == Some(&node.id)
                    || state.dangling.contains(&node.id)
                    || batch_dangling.contains(&node.id))
                    && crate::dag::closes_cycle(&node.id, node.parent.as_ref(), lookup)
                {
                    return Err(Error::ParentCycle { session: session.clone(), node: node.id });
                }
                batch_dangling.remove(&node.id);
                if let Some(parent) = &node.parent
                    && !state.index.contains_key(parent)
                    && !staged.contains_key(parent)
                {
                    batch_dangling.insert(parent.clone());
                }
                staged.insert(node.id.clone(), accepted.len());
                accepted.push(node);
            }
            let count = accepted.len();
            if count == 0 {
                return Ok(Plan::Nothing(0));
            }
            let move_head = state.head.is_none();
            let size: usize = accepted.iter().map(|n| n.content.len() + 256).sum();
            let mut bytes = Vec::with_capacity(size + 32);
            log::write_line(&mut bytes, &Record::Batch { n: count });
            let records = accepted
                .into_iter()
                .enumerate()
                .map(|(i, node)| {
                    let head = move_head && i + 1 == count;
                    log::write_node_line(&mut bytes, &node, head);
                    Record::Node { node, head }
                })
                .collect();
            Ok(Plan::Write { bytes, records, result: count })
        })
    }

    /// Atomicity: one `head` line, fsynced; moving to the current head writes nothing.
    fn set_head(&self, session: &SessionId, node: &NodeId) -> Result<(), Error> {
        self.move_head(session, node, None)
    }

    /// As [`SessionStore::set_head`], the `head` line carrying `at`.
    fn set_head_at(&self, session: &SessionId, node: &NodeId, at: Timestamp) -> Result<(), Error> {
        self.move_head(session, node, Some(at))
    }

    /// Atomicity: one `rewind` line, fsynced; rewinding a rewound node writes nothing. The
    /// session's `updated_at` moves to the clock's time (the live branches changed).
    fn rewind(&self, session: &SessionId, node: &NodeId) -> Result<(), Error> {
        self.mutate(session, false, |state| {
            match state.get(node) {
                None => return Err(node_not_found(session, node)),
                Some(n) if n.rewound => return Ok(Plan::Nothing(())),
                Some(_) => {}
            }
            let record = Record::Rewind { node: node.clone(), at: self.clock.now() };
            let mut bytes = Vec::new();
            log::write_line(&mut bytes, &record);
            Ok(Plan::Write { bytes, records: vec![record], result: () })
        })
    }

    fn branch(&self, session: &SessionId, tip: Option<&NodeId>) -> Result<Vec<Node>, Error> {
        self.with_state(session, true, |state| {
            if !state.exists() {
                return Err(Error::SessionNotFound(session.clone()));
            }
            let Some(tip) = tip.or(state.head.as_ref()) else { return Ok(Vec::new()) };
            let Some(&position) = state.index.get(tip) else {
                return Err(node_not_found(session, tip));
            };
            Ok(state
                .branch_positions(position)
                .into_iter()
                .map(|i| state.nodes[i].clone())
                .collect())
        })?
    }

    /// The head first even when it is not a leaf (it was moved back: the conversation
    /// continues from there); a rewound head is replaced by its nearest live ancestor.
    fn tips(&self, session: &SessionId) -> Result<Vec<NodeId>, Error> {
        self.with_state(session, true, |state| {
            if state.exists() {
                Ok(state.tips())
            } else {
                Err(Error::SessionNotFound(session.clone()))
            }
        })?
    }

    /// Served from memory once the session is loaded (no disk access); an unknown session
    /// reads as `None`.
    fn node(&self, session: &SessionId, node: &NodeId) -> Result<Option<Node>, Error> {
        self.with_state(session, false, |state| state.get(node).cloned())
    }

    /// Atomicity: the whole batch is one `meta` line, fsynced; patches that change nothing are
    /// dropped, and an all-no-op batch writes nothing. Every node must exist
    /// ([`Error::NodeNotFound`] otherwise, before anything is written).
    fn merge_metadata(&self, session: &SessionId, batch: &MetadataBatch) -> Result<(), Error> {
        self.mutate(session, false, |state| {
            let mut patch = MetadataBatch::new();
            for (node_id, entries) in batch {
                let Some(node) = state.get(node_id) else {
                    return Err(node_not_found(session, node_id));
                };
                let changed: std::collections::BTreeMap<String, String> = entries
                    .iter()
                    .filter(|(k, v)| node.metadata.get(*k) != Some(*v))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !changed.is_empty() {
                    patch.insert(node_id.clone(), changed);
                }
            }
            if patch.is_empty() {
                return Ok(Plan::Nothing(()));
            }
            let record = Record::Meta { patch };
            let mut bytes = Vec::new();
            log::write_line(&mut bytes, &record);
            Ok(Plan::Write { bytes, records: vec![record], result: () })
        })
    }

    /// Walks the in-memory index under one lock, lending each node to `visit` without copying.
    fn walk_ancestors(
        &self,
        session: &SessionId,
        tip: &NodeId,
        visit: &mut dyn FnMut(&Node) -> bool,
    ) -> Result<bool, Error> {
        self.with_state(session, false, |state| {
            let Some(&first) = state.index.get(tip) else { return false };
            let mut current = Some(first);
            while let Some(i) = current {
                let node = &state.nodes[i];
                if !visit(node) {
                    break;
                }
                current = node.parent.as_ref().and_then(|p| state.index.get(p).copied());
            }
            true
        })
    }

    fn session(&self, session: &SessionId) -> Result<Option<Session>, Error> {
        self.with_state(session, true, |state| state.exists().then(|| state.session()))
    }

    /// Catches up with the log first (like `branch`), then copies the session's nodes.
    fn nodes(&self, session: &SessionId) -> Result<Vec<Node>, Error> {
        self.with_state(session, true, |state| state.nodes.clone())
    }

    /// Atomicity: the log is rewritten whole (see the module docs, *Rewriting*): a crash
    /// leaves the old log or the new one. Writes nothing when no line would change. The
    /// registry loses the session's old lines (and so its old titles) in one atomic replace
    /// before the new log takes the old one's name.
    fn forget(
        &self,
        session: &SessionId,
        nodes: &[NodeId],
        erase_title: bool,
    ) -> Result<usize, Error> {
        let mut changed = 0;
        let outcome = self.rewrite_log(
            session,
            |state| {
                let targets: HashSet<NodeId> =
                    nodes.iter().filter(|id| state.index.contains_key(*id)).cloned().collect();
                changed = targets
                    .iter()
                    .filter_map(|id| state.get(id))
                    .filter(|node| **node != node.forgotten())
                    .count();
                (!targets.is_empty() || erase_title)
                    .then_some(rewrite::Forget { targets, erase_title })
            },
            |_| erase_title,
        )?;
        if erase_title && !matches!(outcome, Some((_, true))) {
            // The log holds no title, but the registry may (a forget of an earlier build that
            // crashed between its rename and its scrub; a registry restored from a copy): the
            // forget is done only once that is gone too.
            registry::scrub_titles(&self.dir, session)?;
        }
        Ok(changed)
    }

    /// Atomicity: as [`SessionStore::forget`]: the log is rewritten whole (see the module docs,
    /// *Rewriting*), `map` running under the log's lock on every `node` line's content and
    /// every `title` line's title (superseded ones, and duplicate node lines, included); a
    /// crash leaves the old log or the new one. Writes nothing when `map` changes nothing. The
    /// registry loses the session's old lines in one atomic replace before the new log takes
    /// the old one's name; this store's cache is read again from the new log.
    fn rewrite_texts(
        &self,
        session: &SessionId,
        map: &mut dyn FnMut(&str) -> Option<String>,
    ) -> Result<usize, Error> {
        let outcome =
            self.rewrite_log(session, |_| Some(rewrite::MapTexts::new(map)), |edit| edit.title)?;
        Ok(outcome.map_or(0, |(edit, _)| edit.nodes.len() + usize::from(edit.title)))
    }

    fn list_sessions(&self, page: Page) -> Result<Vec<Session>, Error> {
        Ok(self.list_summaries(page)?.into_iter().map(|s| s.session).collect())
    }

    /// Atomicity: one `project` line, fsynced; setting the current project writes nothing.
    fn set_project(&self, session: &SessionId, project: Option<String>) -> Result<(), Error> {
        let unchanged = |state: &SessionState| state.project == project;
        self.set_field(session, unchanged, Record::Project { project: project.clone() })
    }

    /// Atomicity: one `title` line, fsynced; setting the current title writes nothing.
    fn set_title(&self, session: &SessionId, title: Option<String>) -> Result<(), Error> {
        let unchanged = |state: &SessionState| state.title == title;
        self.set_field(session, unchanged, Record::Title { title: title.clone() })
    }
}
