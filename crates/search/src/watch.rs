//! The outside-edit watch: a signal that lets a search skip the per-file stat of both trees it
//! otherwise pays to find edits made outside a transaction.
//!
//! A long-lived process (one per workspace: `.scriptorium/outside-watch.lock` is held with an
//! exclusive `flock` for its life) starts an [`OutsideWatch`]: inotify watches on every
//! directory of `topics/` and `sources/`, and a Unix socket, `.scriptorium/outside-watch.sock`.
//! The watch counts what happened in the trees (a *sequence*: every event, a queue overflow and
//! a new directory move it) and remembers the sequence at which a reader last found the trees
//! exactly as the revision record lists them (*clean*).
//!
//! A reader asks ([`ask`]) before it would scan: one connection, one line each way. The watch
//! first takes every event the kernel queued (`read` of its non-blocking inotify descriptor),
//! then answers. inotify queues an event within the system call that made the change, so
//! every edit that finished before the reader asked is counted in the answer: *clean* means no
//! write, create, delete, rename or attribute change happened in either tree since a full scan
//! found nothing outside. A reader that gets *dirty*, or no answer, scans as before and, when it
//! found nothing left outside, reports the sequence it was told before scanning
//! ([`mark_clean`]); the watch takes it only when nothing happened since.
//!
//! Key decision: the socket is served by one thread that blocks in `accept` and reads the
//! inotify queue only when asked, so the watch costs nothing while nobody searches; events wait
//! in the kernel's queue, and a queue that overflowed (`IN_Q_OVERFLOW`) only means the next
//! reader scans. Installs made by this implementation move the sequence too (the watch cannot
//! tell them from an editor's), so the first search after an install scans once.
//!
//! # Limitations
//!
//! - Linux only (inotify); elsewhere [`OutsideWatch::start`] returns `None` and every search
//!   scans.
//! - inotify sees changes made through this kernel: a change written by another machine to a
//!   network filesystem, or through a shared writable `mmap`, is not seen while the watch runs.
//! - A socket path longer than the platform allows (`sun_path`, 108 bytes on Linux) leaves the
//!   workspace unwatched.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use scriptorium_workspace_fs::{Fs as _, RealFs};

/// The socket a watch answers on, relative to the workspace root.
const SOCKET: &str = ".scriptorium/outside-watch.sock";
/// The lock a watch holds for its life, relative to the workspace root.
const LOCK: &str = ".scriptorium/outside-watch.lock";
/// How long a reader waits for an answer before it scans anyway (a watch that is alive answers
/// in microseconds; this only bounds a stuck one, so it is generous: on a loaded machine the
/// watch's thread may wait for a core).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// A watch's answer to [`ask`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Freshness {
    /// The watch's sequence when it answered (pass it to [`mark_clean`] after a scan).
    pub sequence: u64,
    /// Nothing changed in either tree since a scan found them as the record lists them.
    pub clean: bool,
}

/// Asks the watch of the workspace at `root`, if one runs; `None` when none answers (then the
/// caller scans).
pub fn ask(root: &Path) -> Option<Freshness> {
    let reply = request(root, "ask\n")?;
    let (sequence, clean) = reply.trim_end().split_once(' ')?;
    Some(Freshness { sequence: sequence.parse().ok()?, clean: clean == "clean" })
}

/// Tells the watch that a scan which began after it answered `sequence` found nothing outside
/// the record; returns whether the watch now says clean (it does not when anything happened in
/// the trees since `sequence`, the scan's own install included).
pub fn mark_clean(root: &Path, sequence: u64) -> bool {
    request(root, &format!("clean {sequence}\n")).is_some_and(|r| r.trim_end() == "clean")
}

fn request(root: &Path, line: &str) -> Option<String> {
    let mut stream = UnixStream::connect(root.join(SOCKET)).ok()?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(ANSWER_TIMEOUT)).ok()?;
    stream.write_all(line.as_bytes()).ok()?;
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).ok()?;
    reply.ends_with('\n').then_some(reply)
}

/// A running watch of one workspace; dropping it stops the watch and removes its socket.
#[derive(Debug)]
pub struct OutsideWatch {
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OutsideWatch {
    /// Starts watching the workspace at `root`. `Ok(None)` when another process watches it
    /// already, or this platform has no inotify; an error when the trees cannot be watched
    /// (e.g. the inotify watch limit, `fs.inotify.max_user_watches`, is reached).
    pub fn start(root: &Path) -> std::io::Result<Option<OutsideWatch>> {
        imp::start(root)
    }
}

impl Drop for OutsideWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the thread out of `accept`.
        let _ = UnixStream::connect(&self.socket);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = RealFs.remove_file(&self.socket);
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashMap;
    use std::io::{BufRead as _, BufReader, Write as _};
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixListener;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use scriptorium_workspace_fs::{FileKind, Fs as _, RealFs};

    use super::{LOCK, OutsideWatch, SOCKET};

    /// The trees watched, by their name in the workspace root.
    const TREES: [&str; 2] = ["topics", "sources"];

    /// What the watch knows.
    struct State {
        inotify: OwnedFd,
        root: PathBuf,
        /// The watch of the workspace root itself: an install exchanges `topics/` with its
        /// stage (a rename in the root), after which the watches below follow the old tree.
        root_wd: i32,
        /// Watch descriptor → the directory it watches.
        dirs: HashMap<i32, PathBuf>,
        sequence: u64,
        clean_at: Option<u64>,
    }

    fn watch_flags() -> WatchFlags {
        WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::DONT_FOLLOW
    }

    impl State {
        /// Watches `dir` and every directory below it (symlinks are not followed).
        fn add_tree(&mut self, dir: &Path) -> std::io::Result<()> {
            let mut stack = vec![dir.to_path_buf()];
            while let Some(dir) = stack.pop() {
                match inotify::add_watch(&self.inotify, &dir, watch_flags()) {
                    Ok(wd) => {
                        self.dirs.insert(wd, dir.clone());
                    }
                    // Gone already, or not a directory: its parent's event said so.
                    Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => continue,
                    Err(error) => return Err(error.into()),
                }
                let Ok(entries) = RealFs.read_dir(&dir) else { continue };
                for (name, kind) in entries {
                    if kind == FileKind::Dir {
                        stack.push(dir.join(name));
                    }
                }
            }
            Ok(())
        }

        /// Drops the watches of the tree `name` and watches what is now at its path.
        fn rewatch(&mut self, name: &str) -> std::io::Result<()> {
            let tree = self.root.join(name);
            let old: Vec<i32> =
                self.dirs.iter().filter(|(_, p)| p.starts_with(&tree)).map(|(wd, _)| *wd).collect();
            for wd in old {
                self.dirs.remove(&wd);
                let _ = inotify::remove_watch(&self.inotify, wd);
            }
            self.add_tree(&tree)
        }

        /// Takes every event queued so far.
        fn drain(&mut self) {
            let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
            let mut new_dirs = Vec::new();
            let mut replaced: Vec<&'static str> = Vec::new();
            let mut moved = false;
            {
                let mut reader = inotify::Reader::new(&self.inotify, &mut buf);
                loop {
                    match reader.next() {
                        Ok(event) => {
                            let flags = event.events();
                            if event.wd() == self.root_wd {
                                // Only `topics` and `sources` themselves matter in the root
                                // (the views there are derived).
                                let name = event.file_name().map(|n| n.to_bytes()).unwrap_or(b"");
                                if let Some(tree) = TREES.iter().find(|t| t.as_bytes() == name)
                                    && !replaced.contains(tree)
                                {
                                    replaced.push(tree);
                                }
                                if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                                    moved = true;
                                }
                                continue;
                            }
                            if flags.contains(ReadFlags::IGNORED) {
                                self.dirs.remove(&event.wd());
                                continue;
                            }
                            moved = true;
                            if flags.contains(ReadFlags::ISDIR)
                                && flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO)
                                && let (Some(dir), Some(name)) =
                                    (self.dirs.get(&event.wd()), event.file_name())
                            {
                                use std::os::unix::ffi::OsStrExt as _;
                                new_dirs
                                    .push(dir.join(std::ffi::OsStr::from_bytes(name.to_bytes())));
                            }
                        }
                        Err(rustix::io::Errno::INTR) => continue,
                        // `EAGAIN`: the queue is empty. Anything else: count it as a change,
                        // which only makes the next reader scan.
                        Err(rustix::io::Errno::AGAIN) => break,
                        Err(_) => {
                            moved = true;
                            break;
                        }
                    }
                }
            }
            for dir in new_dirs {
                // A directory that cannot be watched leaves the trees unwatched: never clean.
                if self.add_tree(&dir).is_err() {
                    self.clean_at = None;
                    moved = true;
                }
            }
            for tree in replaced {
                moved = true;
                if self.rewatch(tree).is_err() {
                    self.clean_at = None;
                }
            }
            if moved {
                self.sequence += 1;
            }
        }

        fn answer(&mut self, line: &str) -> String {
            self.drain();
            if let Some(sequence) = line.strip_prefix("clean ") {
                if sequence.trim_end().parse() == Ok(self.sequence) {
                    self.clean_at = Some(self.sequence);
                }
                let clean = self.clean_at == Some(self.sequence);
                return format!("{}\n", if clean { "clean" } else { "dirty" });
            }
            let clean = self.clean_at == Some(self.sequence);
            format!("{} {}\n", self.sequence, if clean { "clean" } else { "dirty" })
        }
    }

    pub(super) fn start(root: &Path) -> std::io::Result<Option<OutsideWatch>> {
        let mkdir = |dir: &Path| {
            scriptorium_workspace_fs::create_dir_all(&RealFs, dir, 0o700)
                .map_err(|e| std::io::Error::other(e.to_string()))
        };
        mkdir(&root.join(".scriptorium"))?;
        let lock = scriptorium_workspace_fs::open_lock_file(&root.join(LOCK))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(error)) => return Err(error),
        }
        let inotify = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
        let root_flags = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::ONLYDIR;
        let root_wd = inotify::add_watch(&inotify, root, root_flags)?;
        let mut state = State {
            inotify,
            root: root.to_path_buf(),
            root_wd,
            dirs: HashMap::new(),
            sequence: 0,
            clean_at: None,
        };
        for tree in TREES {
            let dir = root.join(tree);
            mkdir(&dir)?;
            state.add_tree(&dir)?;
        }
        let socket = root.join(SOCKET);
        // A socket file a killed watch left (the lock says no watch runs now).
        let _ = RealFs.remove_file(&socket);
        let listener = UnixListener::bind(&socket)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new().name("outside-watch".into()).spawn(move || {
            // Held for the thread's life: the lock says this watch runs.
            let _lock = lock;
            serve(&listener, &mut state, &stopping);
        })?;
        Ok(Some(OutsideWatch { socket, stop, thread: Some(thread) }))
    }

    fn serve(listener: &UnixListener, state: &mut State, stop: &AtomicBool) {
        for stream in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            let Ok(stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(super::ANSWER_TIMEOUT));
            let _ = stream.set_write_timeout(Some(super::ANSWER_TIMEOUT));
            let mut line = String::new();
            let mut reader = BufReader::new(&stream);
            if reader.read_line(&mut line).is_err() || !line.ends_with('\n') {
                continue;
            }
            let reply = state.answer(&line);
            let _ = (&stream).write_all(reply.as_bytes());
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::Path;

    use super::OutsideWatch;

    pub(super) fn start(_root: &Path) -> std::io::Result<Option<OutsideWatch>> {
        Ok(None)
    }
}

#[cfg(all(test, target_os = "linux"))]
#[expect(
    clippy::disallowed_methods,
    reason = "the tests edit the trees directly, as another program would"
)]
mod tests {
    use super::*;

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::create_dir_all(dir.path().join("topics/people")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("sources/openprogram/_v2")).expect("mkdir");
        std::fs::write(dir.path().join("topics/people/dana.md"), "# Dana\n").expect("write");
        std::fs::write(dir.path().join("sources/openprogram/_v2/s.md"), "x\n").expect("write");
        dir
    }

    /// Marks the watch clean at its current sequence; returns that sequence.
    fn scanned(root: &Path) -> u64 {
        let asked = ask(root).expect("the watch answers");
        assert!(mark_clean(root, asked.sequence), "nothing happened since the ask");
        assert!(ask(root).expect("answers").clean);
        asked.sequence
    }

    #[test]
    fn without_a_watch_nobody_answers_and_a_stopped_watch_stops_answering() {
        let dir = workspace();
        assert_eq!(ask(dir.path()), None);
        assert!(!mark_clean(dir.path(), 0));
        let watch = OutsideWatch::start(dir.path()).expect("start").expect("a watch");
        assert!(ask(dir.path()).is_some());
        drop(watch);
        assert_eq!(ask(dir.path()), None);
        assert!(!dir.path().join(SOCKET).exists(), "the socket is removed");
        // A watch started again after a kill-like leftover socket file still binds.
        std::fs::write(dir.path().join(SOCKET), "").expect("a leftover");
        let _watch = OutsideWatch::start(dir.path()).expect("start").expect("a watch");
        assert!(ask(dir.path()).is_some());
    }

    #[test]
    fn a_second_watch_of_one_workspace_does_not_start() {
        let dir = workspace();
        let _first = OutsideWatch::start(dir.path()).expect("start").expect("a watch");
        assert!(OutsideWatch::start(dir.path()).expect("start").is_none());
    }

    #[test]
    fn a_new_watch_is_dirty_until_a_scan_says_clean() {
        let dir = workspace();
        let _watch = OutsideWatch::start(dir.path()).expect("start").expect("a watch");
        let first = ask(dir.path()).expect("answers");
        assert!(!first.clean, "nobody has scanned since the watch started");
        scanned(dir.path());
    }

    #[test]
    fn an_edit_in_place_of_a_topic_or_an_archive_is_seen_by_the_next_ask() {
        let dir = workspace();
        let _watch = OutsideWatch::start(dir.path()).expect("start").expect("a watch");
        for file in ["topics/people/dana.md", "sources/openprogram/_v2/s.md"] {
            scanned(dir.path());
            // In place: the directory's mtime does not move, the watch must still see it.
            let path = dir.path().join(file);
            let mtime = std::fs::metadata(path.parent().expect("a parent")).expect("stat");
            std::fs::write(&path, "# Edited in place\n").expect("write");
            let after = std::fs::metadata(path.parent().expect("a parent")).expect("stat");
            assert_eq!(mtime.modified().ok(), after.modified().ok(), "an edit in place");
            assert!(!ask(dir.path()).expect("answers").clean, "{file}");
        }
    }

    #[test]
    fn a_clean_mark_from_before_a_change_is_refused() {
        let dir = workspace();
        let _watch = OutsideWatch::start(dir.path()).expect("start").expect("a watch");
        let before = ask(dir.path()).expect("answers");
        // A change lands while the reader scans: its mark must not hide it.
        std::fs::write(dir.path().join("topics/people/dana.md"), "# Changed\n").expect("write");
        assert!(!mark_clean(dir.path(), before.sequence));
        assert!(!ask(dir.path()).expect("answers").clean);
    }

    #[test]
    fn a_new_directory_is_watched_from_the_answer_that_reported_it() {
        let dir = workspace();
        let _watch = OutsideWatch::start(dir.path()).expect("start").expect("a watch");
        scanned(dir.path());
        let journal = dir.path().join("topics/projects/atlas/journal/2024");
        std::fs::create_dir_all(&journal).expect("mkdir");
        std::fs::write(journal.join("03-08.md"), "# Day\n").expect("write");
        assert!(!ask(dir.path()).expect("answers").clean, "new directories and a file");
        scanned(dir.path());
        // An edit deep inside the new directories is seen too.
        std::fs::write(journal.join("03-08.md"), "# Day, edited\n").expect("write");
        assert!(!ask(dir.path()).expect("answers").clean);
        scanned(dir.path());
        // A rename into the tree and a delete are changes as well.
        let outside = dir.path().join("elsewhere.md");
        std::fs::write(&outside, "# Moved in\n").expect("write");
        std::fs::rename(&outside, dir.path().join("topics/moved.md")).expect("rename");
        assert!(!ask(dir.path()).expect("answers").clean);
        scanned(dir.path());
        std::fs::remove_file(dir.path().join("topics/moved.md")).expect("remove");
        assert!(!ask(dir.path()).expect("answers").clean);
    }

    /// An install exchanges `topics/` with its stage (or renames twice where the filesystem
    /// cannot exchange): the watch follows the path, not the old directory.
    #[test]
    fn an_edit_after_the_tree_was_swapped_is_seen() {
        let dir = workspace();
        let _watch = OutsideWatch::start(dir.path()).expect("start").expect("a watch");
        let stage = dir.path().join(".scriptorium/stage");
        for exchange in [true, false] {
            scanned(dir.path());
            std::fs::create_dir_all(stage.join("people")).expect("mkdir");
            std::fs::write(stage.join("people/dana.md"), "# Dana, installed\n").expect("write");
            let topics = dir.path().join("topics");
            if exchange {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &stage,
                    rustix::fs::CWD,
                    &topics,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .expect("exchange");
            } else {
                let old = dir.path().join(".scriptorium/old");
                std::fs::rename(&topics, &old).expect("rename");
                std::fs::rename(&stage, &topics).expect("rename");
                std::fs::rename(&old, &stage).expect("rename");
            }
            assert!(!ask(dir.path()).expect("answers").clean, "the install itself");
            scanned(dir.path());
            // The old tree, now the stage, is no longer watched; the new one is.
            std::fs::write(stage.join("people/dana.md"), "# The spare\n").expect("write");
            assert!(ask(dir.path()).expect("answers").clean, "the stage is not a tree");
            std::fs::write(topics.join("people/dana.md"), "# Edited\n").expect("write");
            assert!(!ask(dir.path()).expect("answers").clean, "exchange: {exchange}");
            std::fs::remove_dir_all(&stage).expect("clear the stage");
        }
    }

    #[test]
    fn changes_outside_the_trees_leave_the_watch_clean() {
        let dir = workspace();
        let _watch = OutsideWatch::start(dir.path()).expect("start").expect("a watch");
        scanned(dir.path());
        std::fs::write(dir.path().join(".scriptorium/runtime.json"), "{}").expect("write");
        std::fs::write(dir.path().join("recent_events.jsonl"), "").expect("write");
        assert!(ask(dir.path()).expect("answers").clean);
    }
}
