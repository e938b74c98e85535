//! `scriptorium edit PATH`: edit one topic file through a transaction.
//!
//! The editor works on the file inside the transaction's stage (the live file is untouched
//! until the install), the result is normalized and validated like every other change, and the
//! install is a compare-and-set on the revision read when the edit began. A rejected edit is
//! never lost: its text is saved under `<home>/drafts/` and the path is printed, so it can be
//! fixed and landed with `scriptorium edit PATH --from DRAFT`.
//!
//! Deleting a paragraph (its block ID) is never silent: an edit whose text leaves paragraphs out
//! names each one (`^id “first words…”`) and installs only once that is confirmed, with `y` on
//! a terminal or `--allow-delete`; the confirmed deletions go in the same transaction as the
//! rest of the edit, compare-and-set on the revision the edit began from.

use std::collections::BTreeSet;
use std::io::{IsTerminal as _, Read as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use scriptorium_backend::edit::{
    DeletedParagraph, EditFailure, EditOptions, TopicEdit, deletion_summary,
};
use scriptorium_backend::engine::{Installed, TxnError as Error, Violation, writable_path};

use crate::home::Home;
use crate::output::outln;
use crate::{EXIT_RETRYABLE, memory};

/// Arguments of `scriptorium edit`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The topic file: `topics/people/dave.md` or `people/dave.md` (created if missing).
    path: String,
    /// Take the new text from FILE (`-` for standard input) instead of opening `$VISUAL` or
    /// `$EDITOR`.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    /// The commit message (default `memory: edit topics/<path>`).
    #[arg(short, long)]
    message: Option<String>,
    /// Let the edit delete the paragraphs its text leaves out. Without it an edit that deletes
    /// paragraphs names them and asks on a terminal; elsewhere it is refused
    /// (`BLOCK_ID_REMOVED`), changing nothing.
    #[arg(long)]
    allow_delete: bool,
}

/// Runs the editor on `file` and waits for it.
fn run_editor(file: &std::path::Path) -> anyhow::Result<()> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_owned());
    // Through the shell, so `EDITOR="code --wait"` works; the path is passed as `$1`.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("scriptorium-edit")
        .arg(file)
        .status()
        .with_context(|| format!("starting the editor `{editor}`"))?;
    if !status.success() {
        bail!("the editor `{editor}` exited with {status}; nothing was changed");
    }
    Ok(())
}

/// Saves a rejected edit's text where the user can find it: `<home>/drafts/` (0700), the file
/// 0600 and new (a symlink planted at its name is never followed).
fn save_draft(home: &Home, txn_id: &str, rel: &str, text: &str) -> anyhow::Result<PathBuf> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
    let dir = home.drafts();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("making {} private", dir.display()))?;
    let name = format!("{txn_id}-{}", rel.replace('/', "__"));
    let path = dir.join(name);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Runs the command: exit 0 when installed or unchanged, 1 when rejected, 75 when another
/// writer got there first (retry), 2 on usage or IO errors.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    // A path is relative to `topics/` unless it names the workspace itself (`topics/…`, or a
    // read-only part such as `sources/…`, which is then refused as read-only).
    const WORKSPACE_NAMES: &[&str] = &[
        "topics",
        "sources",
        "timeline",
        "core.md",
        "recent_events.jsonl",
        "relations.json",
        ".scriptorium",
        ".git",
    ];
    let first = args.path.split('/').next().unwrap_or_default();
    let ws_path = if WORKSPACE_NAMES.contains(&first) {
        args.path.clone()
    } else {
        format!("topics/{}", args.path)
    };
    // The path is the command's argument: a path that cannot be edited is a usage error.
    let rel = writable_path(&ws_path).map_err(|err| {
        let error = scriptorium_backend::wire::WireError::from_txn(&err);
        anyhow::Error::from(crate::output::Failure { error, exit: crate::output::EXIT_USAGE })
    })?;
    let ws_path = format!("topics/{rel}");
    let memory = memory::open(home, false)?;
    let message = args.message.clone().unwrap_or_else(|| format!("memory: edit {ws_path}"));
    let options = |base_revision, delete_blocks| EditOptions {
        base_revision,
        lock_wait: Duration::from_secs(5),
        keep_blocks: true,
        delete_blocks,
        message: message.clone(),
    };
    let Some(mut edit) = begin(&memory, &ws_path, options(None, BTreeSet::new()))? else {
        return Ok(ExitCode::from(EXIT_RETRYABLE));
    };
    let before = edit.current()?;
    let text = match &args.from {
        Some(file) if file.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("reading standard input")?;
            text
        }
        Some(file) => {
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?
        }
        None => {
            run_editor(&edit.file_on_disk()?)?;
            edit.current()?.unwrap_or_default()
        }
    };
    if before.as_deref() == Some(text.as_str()) {
        outln!("{ws_path}: unchanged, nothing to install");
        return Ok(ExitCode::SUCCESS);
    }
    edit.set(Some(&text))?;
    let base = edit.base_revision().clone();
    let mut txn_id = edit.txn_id().to_owned();
    let mut failure = match edit.install() {
        Ok(installed) => return Ok(installed_outcome(&ws_path, &installed)),
        Err(failure) => failure,
    };
    // A text that only deletes paragraphs installs once the deletions are confirmed: the same
    // text again, the paragraphs declared, on the revision the edit began from.
    if let EditFailure::Rejected { deleted, .. } = &failure
        && failure.only_deletes()
        && confirmed(&args, deleted)?
    {
        let ids = deleted.iter().flat_map(|p| p.block_ids.iter().cloned()).collect();
        let said = deletion_summary(deleted);
        let Some(mut edit) = begin(&memory, &ws_path, options(Some(base), ids))? else {
            let draft = save_draft(home, &txn_id, &rel, &text)?;
            eprintln!("your text is saved in {}; retry with --from", draft.display());
            return Ok(ExitCode::from(EXIT_RETRYABLE));
        };
        edit.set(Some(&text))?;
        txn_id = edit.txn_id().to_owned();
        failure = match edit.install() {
            Ok(installed) => {
                outln!("{}", said.replacen("this edit deletes", "deleted", 1));
                return Ok(installed_outcome(&ws_path, &installed));
            }
            Err(failure) => failure,
        };
    }
    match failure {
        EditFailure::Rejected { ref violations, ref deleted } => {
            let draft = save_draft(home, &txn_id, &rel, &text)?;
            for violation in violations {
                outln!("{}", shown(violation));
            }
            let draft = draft.display();
            let them = if deleted.len() == 1 { "it" } else { "them" };
            if failure.only_deletes() {
                eprintln!(
                    "edit refused: {}; nothing was changed. Your text is saved in {draft}",
                    deletion_summary(deleted)
                );
                eprintln!(
                    "to delete {them}: scriptorium edit {ws_path} --from {draft} --allow-delete"
                );
            } else {
                eprintln!("edit rejected; nothing was changed. Your text is saved in {draft}");
                let allow = if deleted.is_empty() {
                    ""
                } else {
                    let also = deletion_summary(deleted).replacen("this edit", "it also", 1);
                    eprintln!("{also}; --allow-delete deletes {them}");
                    " --allow-delete"
                };
                eprintln!("fix it, then: scriptorium edit {ws_path} --from {draft}{allow}");
            }
            Ok(ExitCode::from(1))
        }
        EditFailure::Txn(err @ (Error::Busy { .. } | Error::ConcurrentUpdate { .. })) => {
            let draft = save_draft(home, &txn_id, &rel, &text)?;
            eprintln!("{}: {err}", err.code());
            eprintln!("your text is saved in {}; retry with --from", draft.display());
            Ok(ExitCode::from(EXIT_RETRYABLE))
        }
        EditFailure::Txn(err) => {
            let draft = save_draft(home, &txn_id, &rel, &text)?;
            eprintln!("your text is saved in {}", draft.display());
            Err(err.into())
        }
    }
}

/// Begins an edit of `ws_path`; `None` (after saying why) when another writer holds the lock.
fn begin(
    memory: &scriptorium_backend::memory::MemoryWorkspace,
    ws_path: &str,
    options: EditOptions,
) -> anyhow::Result<Option<TopicEdit>> {
    match memory.begin_edit(ws_path, options) {
        Ok(edit) => Ok(Some(edit)),
        Err(err) if err.is_retryable() => {
            eprintln!("{}: {err}", err.code());
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}

/// What an install prints; exit 0.
fn installed_outcome(ws_path: &str, installed: &Installed) -> ExitCode {
    if installed.noop {
        outln!(
            "{ws_path}: nothing changed (its normalized text is the installed one); \
             revision {} stays, no commit",
            installed.revision.as_str()
        );
    } else {
        let after = scriptorium_backend::memory::after(installed);
        outln!("installed {ws_path}: revision {}", installed.revision.as_str());
        memory::print_installed(installed, &after);
    }
    ExitCode::SUCCESS
}

/// Whether the user lets the edit delete `deleted`: `--allow-delete`, or `y` on the terminal
/// (asked only when standard input and standard error are one, and the text did not come
/// from standard input).
fn confirmed(args: &Args, deleted: &[DeletedParagraph]) -> anyhow::Result<bool> {
    if args.allow_delete {
        return Ok(true);
    }
    let text_on_stdin = args.from.as_ref().is_some_and(|f| f.as_os_str() == "-");
    if text_on_stdin || !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(false);
    }
    let n = deleted.len();
    eprintln!("this edit deletes {n} paragraph{}:", if n == 1 { "" } else { "s" });
    for paragraph in deleted {
        let ids: Vec<String> = paragraph.block_ids.iter().map(|id| format!("^{id}")).collect();
        eprintln!("  {} “{}”", ids.join(" "), paragraph.excerpt);
    }
    eprint!("delete {}? [y/N] ", if n == 1 { "it" } else { "them" });
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).context("reading the answer")?;
    Ok(matches!(answer.trim().to_lowercase().as_str(), "y" | "yes"))
}

/// A violation as the CLI prints it: `path:line:col: CODE message`, or `path: CODE message` for
/// one that has no line in the text (a deleted paragraph).
fn shown(violation: &Violation) -> String {
    match &violation.path {
        Some(path) if violation.line == 0 => {
            format!("{path}: {} {}", violation.code, violation.message)
        }
        _ => violation.to_string(),
    }
}
