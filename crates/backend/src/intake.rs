//! The door through which transcripts enter the session store: every importer (`import`, the
//! hooks, `watch`, the demo) parses through `session-dag`'s importers and stores through
//! [`Intake::import_unit`] / [`Intake::import_parsed`], so what is never memory input is left out
//! in one place.
//!
//! Key decision: the writer's own agent runs are never memory input. The `command` writer runs
//! an agent (`claude -p`, `codex exec`) in a stage inside the memory workspace, and that agent
//! writes a transcript like any session of the user's; a session whose working directory lies
//! inside the memory workspace is therefore left out, whoever imports it (a hook, `watch` over
//! the agent's transcript folder, an explicit `import`). The hooks also stand down under
//! [`scriptorium_writer::model::command::WRITER_RUN_ENV`], so such a run fires nothing at all.

use std::path::{Component, Path, PathBuf};

use scriptorium_session_dag::SessionStore;
use scriptorium_session_dag::import::{self, Parsed, Summary, Unit};

/// The reason an import report counts a writer's session under (`skipped`).
pub const WRITER_SESSION: &str =
    "session of the memory writer (its working directory is inside the memory workspace)";

/// What the importers of one home leave out.
#[derive(Clone, Debug)]
pub struct Intake {
    /// The memory workspace as named and, when it exists, as resolved.
    memory: Vec<PathBuf>,
}

impl Intake {
    /// The door of the home whose memory workspace is `memory_root`.
    pub fn new(memory_root: &Path) -> Intake {
        let mut memory = vec![lexical(memory_root)];
        if let Ok(resolved) = memory_root.canonicalize()
            && !memory.contains(&resolved)
        {
            memory.push(resolved);
        }
        Intake { memory }
    }

    /// Whether `dir` (a session's working directory) is the memory workspace or lies inside it,
    /// as written or once symlinks are resolved.
    pub fn is_inside_memory(&self, dir: &Path) -> bool {
        if !dir.is_absolute() {
            return false;
        }
        let written = lexical(dir);
        let resolved = dir.canonicalize().ok();
        self.memory.iter().any(|root| {
            written.starts_with(root) || resolved.as_ref().is_some_and(|r| r.starts_with(root))
        })
    }

    /// Drops from `parsed` the sessions that are not memory input (see the module docs),
    /// counting them in its report. Returns how many were dropped.
    pub fn admit(&self, parsed: &mut Parsed) -> usize {
        let before = parsed.sessions.len();
        parsed.sessions.retain(|session| {
            !session
                .nodes
                .iter()
                .filter_map(|n| n.metadata.get("cwd"))
                .any(|cwd| self.is_inside_memory(Path::new(cwd)))
        });
        let dropped = before - parsed.sessions.len();
        if dropped > 0 {
            *parsed.report.skipped.entry(WRITER_SESSION.to_owned()).or_default() += dropped;
        }
        dropped
    }

    /// Parses `unit` and stores what it admits (see [`import::import_into`] for atomicity).
    pub fn import_unit<S: SessionStore + ?Sized>(
        &self,
        store: &S,
        unit: &Unit,
    ) -> Result<Summary, import::Error> {
        let parsed = unit.parse()?;
        self.import_parsed(store, parsed, unit.first_path())
    }

    /// Stores what `parsed` admits (read from `path`).
    pub fn import_parsed<S: SessionStore + ?Sized>(
        &self,
        store: &S,
        mut parsed: Parsed,
        path: &Path,
    ) -> Result<Summary, import::Error> {
        self.admit(&mut parsed);
        import::import_into(store, parsed, path)
    }
}

/// `path` with `.` components dropped and `..` applied (no filesystem access), so that
/// `/home/u/memory/.scriptorium/../x` is not taken to be inside the memory.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_inside_the_memory_is_recognised_as_written_and_as_resolved() {
        let dir = tempfile::tempdir().expect("a directory");
        let memory = dir.path().join("home/memory");
        std::fs::create_dir_all(memory.join(".scriptorium/txn/t-1")).expect("mkdir");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("home"), &link).expect("symlink");
        let intake = Intake::new(&memory);
        assert!(intake.is_inside_memory(&memory));
        assert!(intake.is_inside_memory(&memory.join(".scriptorium/txn/t-1")));
        assert!(intake.is_inside_memory(&link.join("memory/.scriptorium/txn/t-1")));
        // A stage that is gone still counts by its name.
        assert!(intake.is_inside_memory(&memory.join(".scriptorium/txn/t-gone")));
        assert!(!intake.is_inside_memory(&dir.path().join("home")));
        assert!(!intake.is_inside_memory(&dir.path().join("home/memory-notes")));
        assert!(!intake.is_inside_memory(&memory.join("../project")));
        assert!(!intake.is_inside_memory(Path::new("memory")));
    }
}
