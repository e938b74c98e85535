//! Carrying a transaction's edits onto a newer revision: what a writer does when another
//! transaction (a note, a person's edit, another session's write) installed while its model
//! was editing the stage.
//!
//! Key decision: a rebase is a new transaction. [`Workspace::begin_rebased`] begins at the
//! current revision (so validation, the `sources/` check and the compare-and-set all see the
//! workspace as it is now) and writes the earlier transaction's [`StagedChange`]s into the new
//! stage, three-way by block against the text each change was made from
//! ([`merge_topic`]): a file the other installs did not touch takes the change as it is; a file
//! both changed merges when they changed different blocks; the same block changed differently
//! on both sides is a conflict, which the caller reports (nothing is guessed). The other
//! transactions' sources are not this one's business: they are committed evidence in the new
//! baseline, never new evidence of this transaction.

use scriptorium_topics_format::merge::merge_topic;

use crate::error::Result;
use crate::stage::Staged;
use crate::{BeginOptions, Workspace};

/// One topic file a transaction changed, with the text the change was made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedChange {
    /// The workspace-relative path (`topics/…/x.md`).
    pub path: String,
    /// The file at the transaction's base revision (`None`: it did not exist).
    pub base: Option<String>,
    /// The file as the transaction left it (`None`: removed).
    pub text: Option<String>,
}

/// The outcome of [`Workspace::begin_rebased`].
#[derive(Debug)]
#[must_use = "a rebased stage must be validated and installed, or dropped"]
pub enum Rebase {
    /// A transaction at the current revision holding the changes.
    Staged(Box<Staged>),
    /// The other installs changed these files (workspace-relative) in ways the changes cannot
    /// be merged with (the same block changed differently, or a file changed on one side and
    /// removed on the other). Nothing was written outside the discarded stage.
    Conflict(Vec<String>),
}

impl Staged {
    /// What this transaction changed so far: every topic file whose staged text differs from
    /// the baseline, with its baseline text (see [`Workspace::begin_rebased`]). Reads the
    /// files written through the stage, or every staged file once the stage directory was
    /// handed out.
    pub fn changes(&self) -> Result<Vec<StagedChange>> {
        let mut ignored = Vec::new();
        let mut changes = Vec::new();
        for rel in self.dirty_paths(&mut ignored)? {
            if !rel.ends_with(".md") {
                continue;
            }
            let path = format!("topics/{rel}");
            let base = self.baseline.file(&rel).map(|f| f.file.text.clone());
            let text = self.read_file(&path)?;
            if text != base {
                changes.push(StagedChange { path, base, text });
            }
        }
        Ok(changes)
    }
}

impl Workspace {
    /// Begins a transaction with `opts` at the current revision and writes `changes` (made
    /// against an earlier one) into its stage, merged three-way with what installed since (see
    /// the module docs). `opts.base_revision` is ignored: the point is the current revision.
    ///
    /// Writes only inside the new stage; a conflict drops it.
    pub fn begin_rebased(&self, opts: BeginOptions, changes: &[StagedChange]) -> Result<Rebase> {
        let mut staged = self.begin(BeginOptions { base_revision: None, ..opts })?;
        let mut conflicts = Vec::new();
        for change in changes {
            let theirs = staged.read_file(&change.path)?;
            let merged = merge_topic(
                change.base.as_deref(),
                change.text.as_deref(),
                theirs.as_deref(),
                None,
            );
            if !merged.conflicts.is_empty() {
                conflicts.push(change.path.clone());
                continue;
            }
            if merged.text == theirs {
                continue;
            }
            match merged.text {
                Some(text) => staged.write_file(&change.path, &text)?,
                None => staged.remove_file(&change.path)?,
            }
        }
        if conflicts.is_empty() {
            Ok(Rebase::Staged(Box::new(staged)))
        } else {
            Ok(Rebase::Conflict(conflicts))
        }
    }
}
