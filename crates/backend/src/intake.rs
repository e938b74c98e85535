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
//!
//! Key decision: redaction happens here, once, before the store sees anything: every node's
//! content and the session's title pass through the [`Redactor`] (secrets become
//! `[REDACTED:<rule>]`, `<private>` spans go), so the session store, the archive, the topics,
//! the index, git and the writer's model requests only ever hold the redacted text. Redaction is
//! deterministic and node IDs come from the transcript, so re-importing a transcript stays
//! idempotent. The counts (never the values) go into the import report's `redacted` and the
//! workspace's totals ([`crate::privacy`]).
//!
//! And what was forgotten is never memory input again: a node the ledger names
//! (`forgotten.jsonl`, see [`crate::forget`]) is imported as the shell a forget leaves, so
//! re-importing a transcript brings nothing back.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use scriptorium_redact::{Counts, Redactor};
use scriptorium_session_dag::SessionStore;
use scriptorium_session_dag::import::{self, Parsed, Summary, Unit};

/// The reason an import report counts a writer's session under (`skipped`).
pub const WRITER_SESSION: &str =
    "session of the memory writer (its working directory is inside the memory workspace)";

/// What the importers of one home leave out, and how they redact what they keep.
#[derive(Clone, Debug)]
pub struct Intake {
    /// The memory workspace as given.
    root: PathBuf,
    /// The memory workspace as named and, when it exists, as resolved.
    memory: Vec<PathBuf>,
    redactor: Redactor,
    /// What the ledger says was forgotten (read when the door is built).
    forgotten: crate::forget::Forgotten,
}

impl Intake {
    /// The door of the home whose memory workspace is `memory_root`, redacting with
    /// `redactor` (the configuration's: [`crate::Config::redactor`]).
    pub fn new(memory_root: &Path, redactor: Redactor) -> Intake {
        let mut memory = vec![lexical(memory_root)];
        if let Ok(resolved) = memory_root.canonicalize()
            && !memory.contains(&resolved)
        {
            memory.push(resolved);
        }
        let forgotten = crate::forget::Forgotten::of(memory_root);
        Intake { root: memory_root.to_path_buf(), memory, redactor, forgotten }
    }

    /// The redactor of this door.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Whether `dir` (a session's working directory) is the memory workspace or lies inside it,
    /// as written or once symlinks are resolved.
    pub fn is_inside_memory(&self, dir: &Path) -> bool {
        inside(&self.memory, dir)
    }

    /// Drops from `parsed` the sessions that are not memory input (see the module docs),
    /// counting them in its report, and redacts what stays. Returns, per session left, what
    /// each of its nodes had redacted and what its titles had.
    fn admit(&self, parsed: &mut Parsed) -> Vec<(Vec<Counts>, Counts)> {
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
        // What was forgotten stays forgotten: such a node is imported as the shell a forget
        // leaves (its ID and place in the DAG, no content), never with its text again.
        for session in &mut parsed.sessions {
            let whole = self.forgotten.sessions.contains(&session.id.0);
            if whole {
                session.title = None;
                session.fallback_title = None;
            }
            for node in &mut session.nodes {
                if self.forgotten.contains(&session.id.0, &node.id.0) && !node.is_forgotten() {
                    *node = node.forgotten();
                }
            }
        }
        parsed
            .sessions
            .iter_mut()
            .map(|session| {
                let nodes = session
                    .nodes
                    .iter_mut()
                    .map(|node| {
                        crate::privacy::redact_nodes(&self.redactor, std::slice::from_mut(node))
                    })
                    .collect();
                let mut titles = Counts::default();
                crate::privacy::redact_opt(&self.redactor, &mut session.title, &mut titles);
                crate::privacy::redact_opt(
                    &self.redactor,
                    &mut session.fallback_title,
                    &mut titles,
                );
                (nodes, titles)
            })
            .collect()
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

    /// [`Intake::import_unit`] for one unit of many: the redaction counts go into the
    /// returned report only, and the caller adds the sum of its units' to the workspace's
    /// totals once, with [`Intake::record`] (a folder of hundreds of transcripts then pays one
    /// locked rewrite of the totals file instead of one per transcript; a crash before that
    /// loses counts, never a redaction).
    pub fn import_unit_of_many<S: SessionStore + ?Sized>(
        &self,
        store: &S,
        unit: &Unit,
    ) -> Result<Summary, import::Error> {
        let parsed = unit.parse()?;
        self.store_redacted(store, parsed, unit.first_path())
    }

    /// Adds what a run of [`Intake::import_unit_of_many`] redacted (the sum of its reports'
    /// `redacted`) to the workspace's totals.
    pub fn record(&self, redacted: &BTreeMap<String, usize>) {
        crate::privacy::record(&self.root, &Counts(redacted.clone()));
    }

    /// Stores what `parsed` admits (read from `path`), redacted. The report's `redacted`
    /// counts what the nodes new to the store had redacted (a re-import stores nothing new and
    /// counts nothing; the nodes a grown transcript adds are its last ones, in parse order).
    pub fn import_parsed<S: SessionStore + ?Sized>(
        &self,
        store: &S,
        parsed: Parsed,
        path: &Path,
    ) -> Result<Summary, import::Error> {
        let summary = self.store_redacted(store, parsed, path)?;
        self.record(&summary.report.redacted);
        Ok(summary)
    }

    /// [`Intake::import_parsed`] without adding the counts to the workspace's totals.
    fn store_redacted<S: SessionStore + ?Sized>(
        &self,
        store: &S,
        mut parsed: Parsed,
        path: &Path,
    ) -> Result<Summary, import::Error> {
        let counted = self.admit(&mut parsed);
        let mut summary = import::import_into(store, parsed, path)?;
        let mut redacted = Counts::default();
        for (session, (nodes, titles)) in summary.sessions.iter().zip(&counted) {
            for counts in nodes.iter().skip(nodes.len().saturating_sub(session.new_nodes)) {
                redacted.add(counts);
            }
            if session.new_nodes > 0 && session.new_nodes == session.nodes {
                redacted.add(titles);
            }
        }
        for (rule, n) in &redacted.0 {
            *summary.report.redacted.entry(rule.clone()).or_default() += n;
        }
        Ok(summary)
    }
}

/// Whether `dir` is the memory workspace at `memory_root` or lies inside it (see
/// [`Intake::is_inside_memory`]), without building a door (no redactor).
pub fn is_inside_memory(memory_root: &Path, dir: &Path) -> bool {
    let mut roots = vec![lexical(memory_root)];
    roots.extend(memory_root.canonicalize().ok());
    inside(&roots, dir)
}

fn inside(roots: &[PathBuf], dir: &Path) -> bool {
    if !dir.is_absolute() {
        return false;
    }
    let written = lexical(dir);
    let resolved = dir.canonicalize().ok();
    roots.iter().any(|root| {
        written.starts_with(root) || resolved.as_ref().is_some_and(|r| r.starts_with(root))
    })
}

/// `path` with `.` components dropped and `..` applied (no filesystem access), so that
/// `/srv/u/memory/.scriptorium/../x` is not taken to be inside the memory.
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
        let intake = Intake::new(&memory, Redactor::builtin());
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
