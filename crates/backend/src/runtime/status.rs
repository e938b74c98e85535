//! The writer status file `.scriptorium/writer-status.json` (see `docs/format.md#runtime-files`):
//! the last write outcome, when the writer last succeeded, the last failure's code, and how the
//! last write of each session ended (`sessions`, the newest [`SESSIONS_KEPT`]).
//!
//! Key decision: the status is best effort and lives outside the transaction, so it never
//! changes the workspace revision and a failure to save it never fails a write. Updates are
//! serialised across processes by an exclusive lock on `writer-status.json.lock` (read, modify,
//! atomic save); reads take no lock, since a save replaces the file by rename. Reading is
//! forgiving: a missing or unreadable file, bad JSON, a wrong `version` or a malformed field
//! reads as nulls, and an unknown reason code reads as `WRITER_FAILURE_UNKNOWN`.
//!
//! ```json
//! {"version": 1, "last_outcome": "failure",
//!  "last_success_at": "2026-08-10T11:59:00+00:00",
//!  "last_failure": {"at": "2026-08-10T12:00:00+00:00",
//!                   "reason_code": "CONCURRENT_UPDATE", "retryable": true},
//!  "sessions": {"s1": {"at": "2026-08-10T11:59:00+00:00", "outcome": "success", "turns": 4},
//!               "s2": {"at": "2026-08-10T12:00:00+00:00", "outcome": "failure",
//!                      "reason_code": "CONCURRENT_UPDATE", "retryable": true}}}
//! ```
//!
//! `sessions` is this implementation's own key, written only once a session's write was
//! recorded (the other implementation writes the file without it, and a status it saves drops
//! it: a session then shows no last write until its next one).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};

use scriptorium_session_dag::SessionId;
use scriptorium_workspace_fs::{Fs as _, RealFs};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use scriptorium_writer::{FailureCode, WriteFailure};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{STATE_DIR, ensure_private_dir, remove_stale_temporaries, write_atomic};

/// The status file, relative to the memory root's state directory.
pub const STATUS_FILE: &str = "writer-status.json";
/// The lock file serialising updates of the status.
pub const STATUS_LOCK_FILE: &str = "writer-status.json.lock";
/// The only format version understood.
pub const STATUS_VERSION: u64 = 1;
/// How many sessions' last writes the file keeps (the oldest is dropped first).
pub const SESSIONS_KEPT: usize = 256;

/// How the last write ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything owed was written, or nothing was owed.
    Success,
    /// The write failed (retryable or not).
    Failure,
}

impl Outcome {
    /// The JSON form: `success` or `failure`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
        }
    }
}

/// The last failed write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastFailure {
    /// When it failed.
    pub at: OffsetDateTime,
    /// Its reason code.
    pub reason_code: FailureCode,
    /// Whether it was retryable.
    pub retryable: bool,
}

/// How the last write of one session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionWrite {
    /// When it ended.
    pub at: OffsetDateTime,
    /// A success: the turns it handed to memory (0: nothing was owed); `None` when the runner
    /// did not count them (the idle-session watcher).
    pub turns: Option<usize>,
    /// A failure: its reason code and whether retrying can help.
    pub failure: Option<(FailureCode, bool)>,
}

/// The writer status; `None` fields are `null` in the file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriterStatus {
    /// How the last write ended.
    pub last_outcome: Option<Outcome>,
    /// When a write last succeeded.
    pub last_success_at: Option<OffsetDateTime>,
    /// The last failure.
    pub last_failure: Option<LastFailure>,
    /// How the last write of each session ended, by session ID (the newest [`SESSIONS_KEPT`]).
    pub sessions: BTreeMap<String, SessionWrite>,
}

/// Why the status could not be updated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatusError {
    /// A file operation failed.
    #[error("writer status: cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`lock`, `save`, …).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

impl WriterStatus {
    /// The status file of the memory at `memory_root`.
    pub fn path(memory_root: &Path) -> PathBuf {
        memory_root.join(STATE_DIR).join(STATUS_FILE)
    }

    /// Reads the status of the memory at `memory_root`; anything unreadable reads as nulls.
    pub fn load(memory_root: &Path) -> WriterStatus {
        // `O_NOFOLLOW`: a symlink planted at the status path reads as no status.
        RealFs
            .read(&Self::path(memory_root))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .map(|value| Self::from_json(&value))
            .unwrap_or_default()
    }

    /// Reads a status from its JSON form, leniently (see the module docs).
    pub fn from_json(value: &Value) -> WriterStatus {
        let Some(object) = value.as_object() else { return WriterStatus::default() };
        if object.get("version").and_then(Value::as_u64) != Some(STATUS_VERSION) {
            return WriterStatus::default();
        }
        let last_outcome = match object.get("last_outcome").and_then(Value::as_str) {
            Some("success") => Some(Outcome::Success),
            Some("failure") => Some(Outcome::Failure),
            _ => None,
        };
        WriterStatus {
            last_outcome,
            last_success_at: object.get("last_success_at").and_then(parse_time),
            last_failure: object.get("last_failure").and_then(Value::as_object).and_then(failure),
            sessions: object
                .get("sessions")
                .and_then(Value::as_object)
                .map(|sessions| {
                    sessions
                        .iter()
                        .filter_map(|(id, write)| Some((id.clone(), session_write(write)?)))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The JSON form written to the file.
    pub fn to_json(&self) -> Value {
        let last_failure = self.last_failure.map(|f| {
            json!({
                "at": format_time(f.at),
                "reason_code": f.reason_code.as_str(),
                "retryable": f.retryable,
            })
        });
        let mut value = json!({
            "version": STATUS_VERSION,
            "last_outcome": self.last_outcome.map(Outcome::as_str),
            "last_success_at": self.last_success_at.map(format_time),
            "last_failure": last_failure,
        });
        if !self.sessions.is_empty() {
            let sessions: Map<String, Value> =
                self.sessions.iter().map(|(id, write)| (id.clone(), write.to_json())).collect();
            value["sessions"] = Value::Object(sessions);
        }
        value
    }

    /// Records how a write of `session` ended, now, whichever path ran it (the backend's
    /// `write` for the hooks and MCP, `scriptorium write`, the page's "write now", `watch`):
    /// the last outcome and the session's own; a success counts the turns the report's batches
    /// handed to memory. Best effort: a status that cannot be saved is logged, never a write's
    /// failure.
    pub fn record_outcome(
        memory_root: &Path,
        session: &SessionId,
        outcome: &Result<scriptorium_writer::WriteReport, WriteFailure>,
    ) {
        let now = crate::memory::wall_clock();
        let saved = match outcome {
            Ok(report) => {
                let turns = report.batches.iter().map(|b| b.source_ids.len()).sum();
                WriterStatus::record_success(memory_root, now, Some(session), Some(turns))
            }
            Err(failure) => WriterStatus::record_failure(memory_root, now, Some(session), failure),
        };
        if let Err(error) = saved {
            tracing::warn!(%error, "could not save the writer status");
        }
    }

    /// Records a successful write at `at` (keeping the last failure), and as the last write of
    /// `session` with the `turns` it wrote, when given.
    pub fn record_success(
        memory_root: &Path,
        at: OffsetDateTime,
        session: Option<&SessionId>,
        turns: Option<usize>,
    ) -> Result<(), StatusError> {
        update(memory_root, |status| {
            status.last_outcome = Some(Outcome::Success);
            status.last_success_at = Some(at);
            if let Some(session) = session {
                let write = SessionWrite { at, turns, failure: None };
                status.keep_session(session, write);
            }
        })
    }

    /// Records a failed write at `at` (keeping the last success time), and as the last write
    /// of `session`, when given.
    pub fn record_failure(
        memory_root: &Path,
        at: OffsetDateTime,
        session: Option<&SessionId>,
        failure: &WriteFailure,
    ) -> Result<(), StatusError> {
        update(memory_root, |status| {
            status.last_outcome = Some(Outcome::Failure);
            status.last_failure =
                Some(LastFailure { at, reason_code: failure.code, retryable: failure.retryable });
            if let Some(session) = session {
                let write = SessionWrite {
                    at,
                    turns: None,
                    failure: Some((failure.code, failure.retryable)),
                };
                status.keep_session(session, write);
            }
        })
    }

    /// Sets the last write of `session`, dropping the oldest sessions beyond [`SESSIONS_KEPT`].
    fn keep_session(&mut self, session: &SessionId, write: SessionWrite) {
        self.sessions.insert(session.0.clone(), write);
        while self.sessions.len() > SESSIONS_KEPT {
            let oldest = self.sessions.iter().min_by_key(|(_, w)| w.at).map(|(id, _)| id.clone());
            match oldest {
                Some(id) => self.sessions.remove(&id),
                None => break,
            };
        }
    }
}

/// A session's last write from its JSON form; `None` (dropped) without a valid `at` and
/// `outcome`.
fn session_write(value: &Value) -> Option<SessionWrite> {
    let object = value.as_object()?;
    let at = object.get("at").and_then(parse_time)?;
    let outcome = match object.get("outcome").and_then(Value::as_str)? {
        "success" => Outcome::Success,
        "failure" => Outcome::Failure,
        _ => return None,
    };
    let turns = object.get("turns").and_then(Value::as_u64).and_then(|n| usize::try_from(n).ok());
    let failure = (outcome == Outcome::Failure).then(|| {
        let code = object
            .get("reason_code")
            .and_then(|code| serde_json::from_value::<FailureCode>(code.clone()).ok())
            .unwrap_or(FailureCode::WriterFailureUnknown);
        (code, object.get("retryable").and_then(Value::as_bool).unwrap_or(false))
    });
    Some(SessionWrite { at, turns: turns.filter(|_| failure.is_none()), failure })
}

impl SessionWrite {
    /// How it ended: a failure when it carries one.
    pub fn outcome(&self) -> Outcome {
        if self.failure.is_some() { Outcome::Failure } else { Outcome::Success }
    }

    /// As the status file and the Sessions view show it: `{at, outcome[, turns][, reason_code,
    /// retryable]}`.
    pub fn to_json(&self) -> Value {
        let mut value = json!({ "at": format_time(self.at), "outcome": self.outcome().as_str() });
        if let Some(turns) = self.turns {
            value["turns"] = json!(turns);
        }
        if let Some((code, retryable)) = self.failure {
            value["reason_code"] = json!(code.as_str());
            value["retryable"] = json!(retryable);
        }
        value
    }
}

/// `last_failure` is kept only with a valid `at` and a boolean `retryable`; its code is coerced.
fn failure(object: &Map<String, Value>) -> Option<LastFailure> {
    let at = object.get("at").and_then(parse_time)?;
    let retryable = object.get("retryable").and_then(Value::as_bool)?;
    let reason_code = object
        .get("reason_code")
        .and_then(|code| serde_json::from_value::<FailureCode>(code.clone()).ok())
        .unwrap_or(FailureCode::WriterFailureUnknown);
    Some(LastFailure { at, reason_code, retryable })
}

fn parse_time(value: &Value) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(value.as_str()?, &Rfc3339).ok()
}

/// `2026-08-10T12:00:00+00:00`: whole seconds and an explicit offset, as in the reference.
fn format_time(at: OffsetDateTime) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second][offset_hour sign:mandatory]:[offset_minute]"
    );
    at.format(&format).unwrap_or_default()
}

/// Read, modify and save the status under the cross-process lock.
fn update(memory_root: &Path, change: impl FnOnce(&mut WriterStatus)) -> Result<(), StatusError> {
    let dir = memory_root.join(STATE_DIR);
    let io = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| StatusError::Io { action, path, source }
    };
    ensure_private_dir(&dir).map_err(io("create", &dir))?;
    let lock_path = dir.join(STATUS_LOCK_FILE);
    let lock = open_lock(&lock_path).map_err(io("open", &lock_path))?;
    lock.lock().map_err(io("lock", &lock_path))?;
    let path = WriterStatus::path(memory_root);
    remove_stale_temporaries(&path);
    let mut status = WriterStatus::load(memory_root);
    change(&mut status);
    let mut bytes = status.to_json().to_string().into_bytes();
    bytes.push(b'\n');
    write_atomic(&path, &bytes).map_err(io("save", &path))
}

/// Opens (creating it, mode 0600) a lock file. The file is never removed: removing a lock file
/// would let two processes lock two different files.
pub(crate) fn open_lock(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn root() -> tempfile::TempDir {
        tempfile::tempdir().expect("tempdir")
    }

    #[test]
    fn a_missing_file_reads_as_nulls() {
        let dir = root();
        assert_eq!(WriterStatus::load(dir.path()), WriterStatus::default());
    }

    #[test]
    fn success_then_failure_round_trips_in_the_reference_shape() {
        let dir = root();
        let ok_at = datetime!(2026-08-10 11:59:00 UTC);
        let failed_at = datetime!(2026-08-10 12:00:00 UTC);
        WriterStatus::record_success(dir.path(), ok_at, None, None).unwrap();
        let busy = WriteFailure {
            reason: "lock held".into(),
            retryable: true,
            code: FailureCode::ConcurrentUpdate,
        };
        WriterStatus::record_failure(dir.path(), failed_at, None, &busy).unwrap();
        let text = std::fs::read_to_string(WriterStatus::path(dir.path())).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            json!({"version": 1, "last_outcome": "failure",
                   "last_success_at": "2026-08-10T11:59:00+00:00",
                   "last_failure": {"at": "2026-08-10T12:00:00+00:00",
                                    "reason_code": "CONCURRENT_UPDATE", "retryable": true}})
        );
        let status = WriterStatus::load(dir.path());
        assert_eq!(status.last_outcome, Some(Outcome::Failure));
        assert_eq!(status.last_success_at, Some(ok_at));
        let expected = LastFailure {
            at: failed_at,
            reason_code: FailureCode::ConcurrentUpdate,
            retryable: true,
        };
        assert_eq!(status.last_failure, Some(expected));
        // A later success keeps the last failure and leaves no temporary behind.
        WriterStatus::record_success(dir.path(), datetime!(2026-08-10 13:00:00 UTC), None, None)
            .unwrap();
        let status = WriterStatus::load(dir.path());
        assert_eq!(status.last_outcome, Some(Outcome::Success));
        assert_eq!(status.last_failure, Some(expected));
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join(STATE_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [STATUS_FILE, STATUS_LOCK_FILE]);
    }

    #[test]
    fn corrupt_or_wrong_version_files_read_as_nulls_and_are_replaced_by_the_next_record() {
        let dir = root();
        let path = WriterStatus::path(dir.path());
        ensure_private_dir(path.parent().unwrap()).unwrap();
        for bytes in [
            &b"{not json"[..],
            b"[1, 2]",
            br#"{"version": 2, "last_outcome": "success"}"#,
            br#"{"last_outcome": "success"}"#,
        ] {
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(WriterStatus::load(dir.path()), WriterStatus::default());
        }
        let at = datetime!(2026-01-02 03:04:05 UTC);
        WriterStatus::record_success(dir.path(), at, None, None).unwrap();
        let status = WriterStatus::load(dir.path());
        assert_eq!(status.last_success_at, Some(at));
        assert_eq!(status.last_failure, None);
    }

    #[test]
    fn each_sessions_last_write_is_kept_beside_the_last_outcome() {
        let dir = root();
        let (a, b) = (SessionId("a".into()), SessionId("b".into()));
        let at = |minute: u8| datetime!(2026-08-10 12:00:00 UTC).replace_minute(minute).unwrap();
        WriterStatus::record_success(dir.path(), at(1), Some(&a), Some(4)).unwrap();
        let timeout = WriteFailure {
            reason: "slow".into(),
            retryable: true,
            code: FailureCode::ModelTimeout,
        };
        WriterStatus::record_failure(dir.path(), at(2), Some(&b), &timeout).unwrap();
        let text = std::fs::read_to_string(WriterStatus::path(dir.path())).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value["sessions"],
            json!({"a": {"at": "2026-08-10T12:01:00+00:00", "outcome": "success", "turns": 4},
                   "b": {"at": "2026-08-10T12:02:00+00:00", "outcome": "failure",
                         "reason_code": "MODEL_TIMEOUT", "retryable": true}})
        );
        let status = WriterStatus::load(dir.path());
        assert_eq!(status.last_outcome, Some(Outcome::Failure));
        assert_eq!(status.sessions["a"].turns, Some(4));
        assert_eq!(status.sessions["b"].failure, Some((FailureCode::ModelTimeout, true)));
        // A later success of `b` replaces its failure; `a` keeps its own.
        WriterStatus::record_success(dir.path(), at(3), Some(&b), Some(0)).unwrap();
        let status = WriterStatus::load(dir.path());
        assert_eq!(status.sessions["b"].outcome(), Outcome::Success);
        assert_eq!(status.sessions["b"].failure, None);
        assert_eq!(status.sessions["a"].at, at(1));
        // Only the newest SESSIONS_KEPT are kept: the oldest goes first.
        let mut many = WriterStatus::load(dir.path());
        for i in 0..SESSIONS_KEPT {
            let write = SessionWrite {
                at: at(10) + time::Duration::seconds(i64::try_from(i).unwrap()),
                turns: Some(1),
                failure: None,
            };
            many.keep_session(&SessionId(format!("s{i}")), write);
        }
        assert_eq!(many.sessions.len(), SESSIONS_KEPT);
        assert!(!many.sessions.contains_key("a") && !many.sessions.contains_key("b"));
        // Malformed entries are dropped, the others read.
        let value = json!({"version": 1, "sessions": {
            "ok": {"at": "2026-08-10T12:00:00Z", "outcome": "success"},
            "no-at": {"outcome": "success"}, "odd": {"at": "2026-08-10T12:00:00Z", "outcome": "maybe"},
            "list": [1]}});
        let status = WriterStatus::from_json(&value);
        assert_eq!(status.sessions.keys().collect::<Vec<_>>(), ["ok"]);
    }

    #[test]
    fn malformed_fields_read_as_nulls_and_unknown_codes_are_coerced() {
        let value = json!({"version": 1, "last_outcome": "maybe",
                           "last_success_at": "yesterday",
                           "last_failure": {"at": "2026-08-10T12:00:00Z",
                                            "reason_code": "GIT_UNAVAILABLE", "retryable": false}});
        let status = WriterStatus::from_json(&value);
        assert_eq!(status.last_outcome, None);
        assert_eq!(status.last_success_at, None);
        let failure = status.last_failure.unwrap();
        assert_eq!(failure.reason_code, FailureCode::WriterFailureUnknown);
        assert!(!failure.retryable);
        assert_eq!(failure.at, datetime!(2026-08-10 12:00:00 UTC));
        let no_at = json!({"version": 1, "last_failure": {"reason_code": "COMMIT_REJECTED",
                                                          "retryable": false}});
        assert_eq!(WriterStatus::from_json(&no_at).last_failure, None);
        let bad_flag = json!({"version": 1, "last_failure": {"at": "2026-08-10T12:00:00Z",
                                                             "retryable": "yes"}});
        assert_eq!(WriterStatus::from_json(&bad_flag).last_failure, None);
    }
}
