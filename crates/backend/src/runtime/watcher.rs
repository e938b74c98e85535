//! The idle-session watcher (see `ARCHITECTURE.md#cratesbackend`): sessions idle for 30 minutes
//! are written once at their boundary (a forced write), and `.scriptorium/session-end.json`
//! remembers, per session, the `updated_at` (Unix milliseconds) it was last settled at.
//!
//! Key decision: every terminal outcome is saved (atomically) before the next session is
//! touched, so a crash mid-pass never repeats a completed model call; and a corrupt state file
//! is an error that is never overwritten, because reading it as empty would write (and bill)
//! every session again. The three-way result of the write decides what is recorded:
//!
//! | write | recorded | writer status | event `memory.ingest_ended` |
//! |---|---|---|---|
//! | `Ok` | yes | success | `ok=true retryable=false reason=""` |
//! | retryable failure | no (next poll retries) | failure | `ok=false retryable=true` |
//! | permanent failure | yes (logged as a warning) | failure | `ok=false retryable=false` |
//!
//! A session is skipped when its `updated_at` is 0, younger than the idle allowance, or equal
//! to the recorded value; one without records (no head, or only tool, runtime or empty turns) is
//! recorded without a write.
//!
//! # Limitations
//!
//! - A second watcher on the same memory is refused for as long as the first lives (the lock is
//!   an `flock`, released by the kernel if the process dies).
//! - Sessions are visited newest first, page by page; a session listed twice in one pass
//!   (because the listing shifted) is visited once. A session appearing during a pass waits for
//!   the next one.
//! - A session whose branch cannot be read is left unrecorded (retried next poll) and counted
//!   as retryable; the writer status is not touched since no write was attempted.
//! - The idle rule uses the `now` given to the scan; the writer status is stamped with the wall
//!   clock at each outcome. A failure to save the writer status is logged, never fatal; a
//!   failure to save the state file ends the pass with [`WatcherStateError::Io`].

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use scriptorium_session_dag::{Page, Session, SessionId, SessionStore, Timestamp};
use scriptorium_writer::{WriteFailure, Writer};
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::status::{WriterStatus, open_lock};
use super::{STATE_DIR, ensure_private_dir, remove_stale_temporaries, write_atomic};

/// The state file, relative to the memory root's state directory.
pub const STATE_FILE: &str = "session-end.json";
/// The lock file held by the live watcher.
pub const LOCK_FILE: &str = "session-end.lock";

/// What the watcher calls to write a session at its boundary.
pub trait SessionWriter: Send + Sync {
    /// Writes everything `session` owes (a forced write); `Ok` means nothing more is owed.
    fn write_forced(&self, session: &SessionId) -> Result<(), WriteFailure>;
}

impl SessionWriter for Writer {
    fn write_forced(&self, session: &SessionId) -> Result<(), WriteFailure> {
        self.write(session, true).map(drop)
    }
}

/// How often and how far the watcher looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatcherConfig {
    /// The pause before the first scan and between scans (300 s).
    pub poll: Duration,
    /// How long a session must be untouched to be written (30 min).
    pub idle: Duration,
    /// Sessions listed per page (500).
    pub page: usize,
}

impl Default for WatcherConfig {
    fn default() -> Self {
        WatcherConfig {
            poll: Duration::from_secs(300),
            idle: Duration::from_secs(30 * 60),
            page: 500,
        }
    }
}

/// Why the watcher could not open or scan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatcherStateError {
    /// Another watcher holds the lock of this memory.
    #[error(
        "another `scriptorium watch` is already running for the memory in {}",
        lock.parent().and_then(Path::parent).unwrap_or(lock).display()
    )]
    Busy {
        /// The lock file.
        lock: PathBuf,
    },
    /// The state file is not a JSON object; it is left untouched.
    #[error(
        "session-end state {} is corrupt ({detail}); it is left untouched: repair or remove it",
        path.display()
    )]
    Corrupt {
        /// The state file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A file operation failed.
    #[error("session-end state: cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`lock`, `read`, `save`, …).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Listing the sessions failed.
    #[error("session-end scan: listing sessions failed: {0}")]
    Store(#[source] scriptorium_session_dag::Error),
}

/// What one scan did, in sessions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Written successfully and recorded.
    pub written: usize,
    /// Failed retryably: not recorded, retried next poll.
    pub retryable: usize,
    /// Failed permanently: recorded anyway.
    pub permanent: usize,
    /// Not written: idle rules, already recorded, or nothing to write (recorded).
    pub skipped: usize,
}

/// The watcher of one memory; holds `.scriptorium/session-end.lock` while it lives.
#[derive(Debug)]
pub struct Watcher {
    root: PathBuf,
    state: PathBuf,
    config: WatcherConfig,
    _lock: File,
}

/// `session-end.json`: session ID → the `updated_at` it was settled at.
type Processed = Map<String, Value>;

impl Watcher {
    /// Opens the watcher of the memory at `memory_root` with the default configuration, taking
    /// its lock without waiting ([`WatcherStateError::Busy`] if another watcher holds it), and
    /// removes the temporaries an interrupted save left.
    pub fn open(memory_root: impl Into<PathBuf>) -> Result<Watcher, WatcherStateError> {
        let root = memory_root.into();
        let dir = root.join(STATE_DIR);
        ensure_private_dir(&dir).map_err(io_error("create", &dir))?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = open_lock(&lock_path).map_err(io_error("open", &lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(WatcherStateError::Busy { lock: lock_path });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_error("lock", &lock_path)(e)),
        }
        let state = dir.join(STATE_FILE);
        remove_stale_temporaries(&state);
        Ok(Watcher { root, state, config: WatcherConfig::default(), _lock: lock })
    }

    /// The same watcher with `config`.
    pub fn with_config(mut self, config: WatcherConfig) -> Watcher {
        self.config = config;
        self
    }

    /// The configuration.
    pub fn config(&self) -> WatcherConfig {
        self.config
    }

    /// The state file (`.scriptorium/session-end.json`).
    pub fn state_path(&self) -> &Path {
        &self.state
    }

    /// One pass over every session of `store`, at `now` (see the module docs for the rules).
    pub fn scan(
        &self,
        store: &dyn SessionStore,
        writer: &dyn SessionWriter,
        now: Timestamp,
    ) -> Result<ScanReport, WatcherStateError> {
        self.scan_until(store, writer, now, &AtomicBool::new(false))
    }

    /// [`Watcher::scan`], returning early (at a session boundary) once `stop` is set.
    fn scan_until(
        &self,
        store: &dyn SessionStore,
        writer: &dyn SessionWriter,
        now: Timestamp,
        stop: &AtomicBool,
    ) -> Result<ScanReport, WatcherStateError> {
        let mut processed = self.load()?;
        let mut report = ScanReport::default();
        let idle = i64::try_from(self.config.idle.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now.0.saturating_sub(idle);
        let limit = self.config.page.max(1);
        let mut seen = HashSet::new();
        let mut offset = 0;
        loop {
            let page =
                store.list_sessions(Page { offset, limit }).map_err(WatcherStateError::Store)?;
            let len = page.len();
            for session in page {
                if stop.load(Ordering::Relaxed) {
                    return Ok(report);
                }
                if seen.insert(session.id.clone()) {
                    self.visit(&session, store, writer, cutoff, &mut processed, &mut report)?;
                }
            }
            if len < limit {
                return Ok(report);
            }
            offset += len;
        }
    }

    /// Settles one listed session.
    fn visit(
        &self,
        session: &Session,
        store: &dyn SessionStore,
        writer: &dyn SessionWriter,
        cutoff: i64,
        processed: &mut Processed,
        report: &mut ScanReport,
    ) -> Result<(), WatcherStateError> {
        let at = session.updated_at.0;
        let settled = processed.get(session.id.as_str()).and_then(Value::as_i64) == Some(at);
        if at == 0 || at > cutoff || settled {
            report.skipped += 1;
            return Ok(());
        }
        let messages = match count_records(store, session) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(
                    session = %session.id,
                    error = %e,
                    "memory.session_end: branch unreadable"
                );
                report.retryable += 1;
                return Ok(());
            }
        };
        if messages == 0 {
            report.skipped += 1;
            return self.record(processed, session);
        }
        tracing::info!(session = %session.id, messages, "memory.ingest_started");
        let outcome = writer.write_forced(&session.id);
        self.settle(session, outcome, processed, report)
    }

    /// Records (and saves) a terminal outcome, then reports it to the writer status and the log.
    fn settle(
        &self,
        session: &Session,
        outcome: Result<(), WriteFailure>,
        processed: &mut Processed,
        report: &mut ScanReport,
    ) -> Result<(), WatcherStateError> {
        let sid = &session.id;
        let now = crate::memory::wall_clock();
        let failure = match outcome {
            Ok(()) => {
                self.record(processed, session)?;
                report.written += 1;
                tracing::info!(
                    session = %sid,
                    ok = true,
                    retryable = false,
                    reason = "",
                    "memory.ingest_ended"
                );
                best_effort(WriterStatus::record_success(&self.root, now, Some(sid), None));
                return Ok(());
            }
            Err(failure) => failure,
        };
        let (reason, code) = (failure.reason.as_str(), failure.code.as_str());
        if failure.retryable {
            report.retryable += 1;
            tracing::info!(
                session = %sid,
                ok = false,
                retryable = true,
                reason,
                reason_code = code,
                "memory.ingest_ended"
            );
        } else {
            self.record(processed, session)?;
            report.permanent += 1;
            tracing::warn!(
                session = %sid,
                ok = false,
                retryable = false,
                reason,
                reason_code = code,
                "memory.ingest_ended"
            );
        }
        best_effort(WriterStatus::record_failure(&self.root, now, Some(sid), &failure));
        Ok(())
    }

    /// Records `session` as settled at its `updated_at` and saves the state.
    fn record(
        &self,
        processed: &mut Processed,
        session: &Session,
    ) -> Result<(), WatcherStateError> {
        processed.insert(session.id.0.clone(), Value::from(session.updated_at.0));
        let mut bytes = Value::Object(processed.clone()).to_string().into_bytes();
        bytes.push(b'\n');
        write_atomic(&self.state, &bytes).map_err(io_error("save", &self.state))
    }

    /// Reads the state; a missing file is empty, anything but a JSON object is corrupt.
    fn load(&self) -> Result<Processed, WatcherStateError> {
        let bytes = match std::fs::read(&self.state) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Processed::new()),
            Err(e) => return Err(io_error("read", &self.state)(e)),
        };
        let corrupt =
            |detail: String| WatcherStateError::Corrupt { path: self.state.clone(), detail };
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(corrupt("not a JSON object".into())),
            Err(e) => Err(corrupt(e.to_string())),
        }
    }
}

/// The records (user and assistant messages with content) on the head branch.
fn count_records(
    store: &dyn SessionStore,
    session: &Session,
) -> Result<usize, scriptorium_session_dag::Error> {
    if session.head.is_none() {
        return Ok(0);
    }
    let branch = store.branch(&session.id, None)?;
    Ok(scriptorium_markers::records(&branch).len())
}

fn best_effort(result: Result<(), super::StatusError>) {
    if let Err(e) = result {
        tracing::warn!(error = %e, "memory.writer_status: not saved");
    }
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> WatcherStateError {
    let path = path.to_path_buf();
    move |source| WatcherStateError::Io { action, path, source }
}

/// The wall clock as a session timestamp.
fn wall_clock() -> Timestamp {
    let ms = crate::memory::wall_clock().unix_timestamp_nanos() / 1_000_000;
    Timestamp(i64::try_from(ms).unwrap_or(i64::MAX))
}

/// Resolves once `shutdown` is `true` or its sender is gone (nobody can stop us any more, so
/// the owner is taken to have left).
pub(crate) async fn shutdown_signalled(shutdown: &mut watch::Receiver<bool>) {
    // An error means the sender was dropped: treated as a shutdown.
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Sleeps for `pause`; `true` if `shutdown` fired first.
pub(crate) async fn sleep_or_shutdown(
    pause: Duration,
    shutdown: &mut watch::Receiver<bool>,
) -> bool {
    tokio::select! {
        () = tokio::time::sleep(pause) => false,
        () = shutdown_signalled(shutdown) => true,
    }
}

/// The watcher loop: sleeps `poll` first, then scans every `poll` (on a blocking thread) with
/// the wall clock as `now`, until `shutdown` becomes `true` (or its sender is dropped).
///
/// Scan errors are logged and swallowed: a corrupt state file is logged at error level on every
/// poll and left untouched; other errors are warnings. A shutdown during a scan stops it at the
/// next session boundary; the loop returns once the session in flight is settled.
pub async fn run_watcher(
    watcher: Watcher,
    store: Arc<dyn SessionStore + Send + Sync>,
    writer: Arc<dyn SessionWriter>,
    mut shutdown: watch::Receiver<bool>,
) {
    let watcher = Arc::new(watcher);
    let poll = watcher.config.poll;
    while !sleep_or_shutdown(poll, &mut shutdown).await {
        let stop = Arc::new(AtomicBool::new(false));
        let task = {
            let (watcher, store, writer, stop) =
                (Arc::clone(&watcher), Arc::clone(&store), Arc::clone(&writer), Arc::clone(&stop));
            tokio::task::spawn_blocking(move || {
                watcher.scan_until(&*store, &*writer, wall_clock(), &stop)
            })
        };
        tokio::pin!(task);
        let stopping = tokio::select! {
            result = &mut task => { log_scan(result); false }
            () = shutdown_signalled(&mut shutdown) => true,
        };
        if stopping {
            stop.store(true, Ordering::Relaxed);
            log_scan(task.await);
            return;
        }
    }
}

fn log_scan(result: Result<Result<ScanReport, WatcherStateError>, tokio::task::JoinError>) {
    match result {
        Ok(Ok(r)) => tracing::info!(
            written = r.written,
            retryable = r.retryable,
            permanent = r.permanent,
            skipped = r.skipped,
            "memory.session_end: scan finished"
        ),
        Ok(Err(e @ WatcherStateError::Corrupt { .. })) => {
            tracing::error!(error = %e, "memory.session_end: scan refused");
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "memory.session_end: scan failed"),
        Err(e) => tracing::error!(error = %e, "memory.session_end: scan panicked"),
    }
}
