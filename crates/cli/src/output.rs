//! What the binary says, and how it ends: standard output that a closed pipe ends quietly,
//! and one classification of every failure into a wire error ([`WireError`]: the same code and
//! shape the MCP tools and the REST API use) and an exit code.
//!
//! Exit codes: 0 success; 1 the command ran and found problems (diagnostics, a refused change,
//! a file it could not import); 2 a usage error or a failure of the machine (IO, corrupt
//! state); 75 (`EX_TEMPFAIL`) retrying later can succeed (the lock is held, the workspace moved,
//! the disk is full).

use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;

use scriptorium_backend::engine::TxnError;
use scriptorium_backend::wire::{Code, WireError};

/// The exit code of a retryable failure: `EX_TEMPFAIL`.
pub(crate) const EXIT_RETRYABLE: u8 = 75;
/// The exit code of a command that ran and found problems.
pub(crate) const EXIT_PROBLEMS: u8 = 1;
/// The exit code of a usage error or a failure of the machine.
pub(crate) const EXIT_USAGE: u8 = 2;

/// Writes to standard output. When the reader has gone (`scriptorium grep x | head -1`) the
/// process ends at once with status 0 and says nothing, as other Unix tools do under `SIGPIPE`;
/// nothing the command still had to say matters to a closed pipe.
///
/// On a terminal, control characters other than tab and line feed are shown escaped
/// (`\u{1b}`): memory holds text from transcripts, notes and files edited elsewhere, and an
/// escape sequence in it must never reach the terminal as a command (a redirected or piped
/// output gets the bytes as stored).
pub(crate) fn stdout(args: fmt::Arguments<'_>) {
    use std::io::IsTerminal as _;
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let mut out = std::io::stdout().lock();
    let terminal = *TERMINAL.get_or_init(|| std::io::stdout().is_terminal());
    let written = if terminal {
        let text = args.to_string();
        let shown: String = if text.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\n')) {
            text.chars()
                .map(|c| {
                    if c.is_control() && !matches!(c, '\t' | '\n') {
                        c.escape_default().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect()
        } else {
            text
        };
        out.write_all(shown.as_bytes()).and_then(|()| out.flush())
    } else {
        out.write_fmt(args).and_then(|()| out.flush())
    };
    if let Err(error) = written {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        // Best effort: there is nowhere else to say it.
        let _ = writeln!(std::io::stderr(), "error: writing standard output: {error}");
        std::process::exit(i32::from(EXIT_USAGE));
    }
}

/// `print!` through [`stdout`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::stdout(format_args!($($arg)*)) };
}

/// `println!` through [`stdout`].
macro_rules! outln {
    () => { $crate::output::stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {out, outln};

/// Prints `value` as one pretty JSON document.
pub(crate) fn json(value: &serde_json::Value) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    outln!("{text}");
}

/// Prints a command's result with `--json`: one object (a list sits under a plural key, never
/// at the top), with `"ok": true` unless the command set `ok` itself (`false` with exit 1 when
/// it found problems: `check`, `import`, `write`). `ok` is true exactly when the exit code is 0.
pub(crate) fn document<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let mut value = serde_json::to_value(value)?;
    let Some(object) = value.as_object_mut() else {
        anyhow::bail!("a JSON result must be an object (a list goes under a key)");
    };
    object.entry("ok").or_insert(serde_json::Value::Bool(true));
    json(&value);
    Ok(())
}

/// A failure a command decided on itself: its wire error and exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: WireError,
    pub(crate) exit: u8,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.error.message)
    }
}

impl std::error::Error for Failure {}

/// A usage error (exit 2) with `code`.
pub(crate) fn usage(code: Code, message: impl Into<String>) -> anyhow::Error {
    Failure { error: WireError::new(code, message), exit: EXIT_USAGE }.into()
}

/// A problem the command found (exit 1) with `code`.
pub(crate) fn problem(code: Code, message: impl Into<String>) -> anyhow::Error {
    Failure { error: WireError::new(code, message), exit: EXIT_PROBLEMS }.into()
}

/// A wire error from the backend as a command's failure, with the exit code its code gets.
pub(crate) fn wire(error: WireError) -> anyhow::Error {
    let exit = exit_for(error.code);
    Failure { error, exit }.into()
}

/// The exit code of an engine refusal: 75 when retrying can succeed, 2 when the machine failed
/// (IO, corrupt state), 1 for a refused request.
fn exit_for(code: Code) -> u8 {
    if code.is_retryable() {
        EXIT_RETRYABLE
    } else if matches!(
        code,
        Code::Io
            | Code::CorruptState
            | Code::WorkspaceIdMissing
            | Code::IndexError
            | Code::GitUnavailable
            | Code::GitCorrupt
            | Code::Internal
    ) {
        EXIT_USAGE
    } else {
        EXIT_PROBLEMS
    }
}

/// The wire error and exit code of a failed command: the first error of a known kind in the
/// chain decides (a command's own [`Failure`], the engine's, the index's, the store's, an IO
/// error); anything else is a usage error.
pub(crate) fn classify(err: &anyhow::Error) -> (WireError, u8) {
    let message = format!("{err:#}");
    for cause in err.chain() {
        if let Some(failure) = cause.downcast_ref::<Failure>() {
            return (failure.error.clone(), failure.exit);
        }
        if let Some(txn) = cause.downcast_ref::<TxnError>() {
            let error = WireError::from_txn(txn);
            let exit = exit_for(error.code);
            return (error, exit);
        }
        if let Some(edit) = cause.downcast_ref::<scriptorium_backend::edit::EditFailure>() {
            let error = edit.wire();
            let exit = exit_for(error.code);
            return (error, exit);
        }
        if let Some(rebuild) = cause.downcast_ref::<scriptorium_backend::edit::RebuildError>() {
            if let scriptorium_backend::edit::RebuildError::Index(
                scriptorium_backend::memory::SearchError::Search(search),
            ) = rebuild
            {
                return search_failure(search);
            }
            if let Some(error) = rebuild.wire() {
                let error = WireError { message, ..error };
                let exit = exit_for(error.code);
                return (error, exit);
            }
        }
        if let Some(open) = cause.downcast_ref::<scriptorium_backend::memory::Error>() {
            return match open {
                scriptorium_backend::memory::Error::Txn { source, .. } => {
                    let error = WireError { message, ..WireError::from_txn(source) };
                    let exit = exit_for(error.code);
                    (error, exit)
                }
                _ => (WireError::new(Code::NoWorkspace, message), EXIT_USAGE),
            };
        }
        if let Some(search) = cause.downcast_ref::<scriptorium_backend::memory::SearchError>() {
            return match search {
                scriptorium_backend::memory::SearchError::Txn(txn) => {
                    let error = WireError::from_txn(txn);
                    let exit = exit_for(error.code);
                    (error, exit)
                }
                scriptorium_backend::memory::SearchError::Search(search) => search_failure(search),
                _ => (WireError::new(Code::Internal, message), EXIT_USAGE),
            };
        }
        if let Some(search) = cause.downcast_ref::<scriptorium_search::Error>() {
            return search_failure(search);
        }
        if let Some(history) = cause.downcast_ref::<scriptorium_history::Error>() {
            let code = Code::from(history.code());
            return (WireError::new(code, message), exit_for(code));
        }
        if cause.downcast_ref::<scriptorium_backend::config::ConfigError>().is_some() {
            return (WireError::new(Code::InvalidConfig, message), EXIT_USAGE);
        }
        if let Some(store) = cause.downcast_ref::<scriptorium_session_dag::Error>() {
            return match store {
                scriptorium_session_dag::Error::SessionNotFound(_) => {
                    (WireError::new(Code::SessionNotFound, message), EXIT_PROBLEMS)
                }
                scriptorium_session_dag::Error::Io { source, .. } => io_failure(source, message),
                scriptorium_session_dag::Error::Database { .. } => {
                    (WireError::new(Code::SessionDatabase, message), EXIT_RETRYABLE)
                }
                // Settings that cannot work (an untrusted certificate, an unreadable CA file):
                // a configuration error, as an invalid `scriptorium.toml` is.
                scriptorium_session_dag::Error::DatabaseTls { .. } => {
                    (WireError::new(Code::SessionDatabaseTls, message), EXIT_USAGE)
                }
                _ => (WireError::new(Code::Io, message), EXIT_USAGE),
            };
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return io_failure(io, message);
        }
    }
    (WireError::new(Code::InvalidArgument, message), EXIT_USAGE)
}

fn search_failure(search: &scriptorium_search::Error) -> (WireError, u8) {
    let code = Code::from(search.code());
    // A malformed query (a bad date, `--top-k` out of range) is a usage error.
    let exit = if code == Code::InvalidArgument { EXIT_USAGE } else { exit_for(code) };
    (WireError::new(code, search.to_string()), exit)
}

fn io_failure(io: &std::io::Error, message: String) -> (WireError, u8) {
    match io.kind() {
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
            (WireError::new(Code::NoSpace, message), EXIT_RETRYABLE)
        }
        std::io::ErrorKind::NotFound => (WireError::new(Code::NotFound, message), EXIT_USAGE),
        _ => (WireError::new(Code::Io, message), EXIT_USAGE),
    }
}

/// Reports a failed command: the JSON error document on standard output with `--json`, else
/// `error: …` (with every violation) on standard error; returns its exit code.
pub(crate) fn report(err: &anyhow::Error, as_json: bool) -> ExitCode {
    let (error, exit) = classify(err);
    if as_json {
        json(&error.to_json());
    } else {
        eprintln!("error: {error}");
    }
    ExitCode::from(exit)
}
