//! `scriptorium edit PATH`: edit one topic file through a transaction.
//!
//! The editor works on the file inside the transaction's stage (the live file is untouched
//! until the install), the result is normalized and validated like every other change, and the
//! install is a compare-and-set on the revision read when the edit began. A rejected edit is
//! never lost: its text is saved under `<home>/drafts/` and the path is printed, so it can be
//! fixed and landed with `scriptorium edit PATH --from DRAFT`.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use scriptorium_backend::edit::{EditFailure, EditOptions};
use scriptorium_backend::engine::{TxnError as Error, writable_path};

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
    let options = EditOptions {
        base_revision: None,
        lock_wait: Duration::from_secs(5),
        keep_blocks: true,
        message: args.message.clone().unwrap_or_else(|| format!("memory: edit {ws_path}")),
    };
    let mut edit = match memory.begin_edit(&ws_path, options) {
        Ok(edit) => edit,
        Err(err) if err.is_retryable() => {
            eprintln!("{}: {err}", err.code());
            return Ok(ExitCode::from(EXIT_RETRYABLE));
        }
        Err(err) => return Err(err.into()),
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
    let txn_id = edit.txn_id().to_owned();
    match edit.install() {
        Err(EditFailure::Rejected(violations)) => {
            let draft = save_draft(home, &txn_id, &rel, &text)?;
            for violation in &violations {
                outln!("{violation}");
            }
            eprintln!(
                "edit rejected; nothing was changed. Your text is saved in {}",
                draft.display()
            );
            eprintln!("fix it, then: scriptorium edit {ws_path} --from {}", draft.display());
            Ok(ExitCode::from(1))
        }
        Ok(installed) if installed.noop => {
            outln!(
                "{ws_path}: nothing changed (its normalized text is the installed one); \
                 revision {} stays, no commit",
                installed.revision.as_str()
            );
            Ok(ExitCode::SUCCESS)
        }
        Ok(installed) => {
            let after = scriptorium_backend::memory::after(&installed);
            outln!("installed {ws_path}: revision {}", installed.revision.as_str());
            memory::print_installed(&installed, &after);
            Ok(ExitCode::SUCCESS)
        }
        Err(EditFailure::Txn(err @ (Error::Busy { .. } | Error::ConcurrentUpdate { .. }))) => {
            let draft = save_draft(home, &txn_id, &rel, &text)?;
            eprintln!("{}: {err}", err.code());
            eprintln!("your text is saved in {}; retry with --from", draft.display());
            Ok(ExitCode::from(EXIT_RETRYABLE))
        }
        Err(EditFailure::Txn(err)) => {
            let draft = save_draft(home, &txn_id, &rel, &text)?;
            eprintln!("your text is saved in {}", draft.display());
            Err(err.into())
        }
    }
}
