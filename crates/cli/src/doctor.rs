//! `scriptorium doctor [--json]`: whether this setup works, check by check, and what to do about
//! each problem (see `docs/doctor.md`).
//!
//! The checks run in a fixed order, each with a stable ID: `home`, `workspace`, `index`, `git`,
//! `session-store`, `claude-code`, `codex`, `writer`, `last-write`, `sync-remote`. Each ends
//! `ok`, `warn` (works, but something deserves a look), `fail` (something does not work) or
//! `skipped` (nothing to check: an agent that is not installed, no remote configured, or a
//! check that needs what an earlier one found broken). The exit code is 0 when no check
//! failed (a warning passes, as a skipped check does), else 1.
//!
//! Key decision: the doctor only looks. It repairs nothing, so what it reports is what the
//! next command will meet; it opens the memory for reading (as `search` does), opens the
//! search index and git with gix without writing either, and reads the agents' files without
//! changing them. The only things it may leave behind are what any reading command leaves (a
//! crash's recovery, the revision record's stat cache) and, with a sync remote, the fetched
//! branch under `refs/scriptorium/remote/` that `sync` keeps too (nothing is merged or pushed).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use scriptorium_backend::Config;
use scriptorium_backend::config::ModelKind;
use scriptorium_backend::runtime::WriterStatus;
use serde::Serialize;

use crate::home::Home;
use crate::output::outln;

/// Arguments of `scriptorium doctor`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print the checks as JSON: `{"ok": …, "checks": [{id, status, finding, advice}]}`.
    #[arg(long)]
    pub(crate) json: bool,
}

/// How one check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    /// Nothing to check.
    Skipped,
    /// All is well.
    Ok,
    /// It works, but something deserves a look.
    Warn,
    /// Something does not work.
    Fail,
}

impl Status {
    fn mark(self) -> &'static str {
        match self {
            Status::Ok => "✓",
            Status::Warn => "!",
            Status::Fail => "✗",
            Status::Skipped => "-",
        }
    }
}

/// One check's result.
#[derive(Debug, Serialize)]
struct Check {
    /// The stable check ID.
    id: &'static str,
    status: Status,
    /// What the check found, in one line.
    finding: String,
    /// What to do, for a warning or a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    advice: Option<String>,
}

impl Check {
    fn new(id: &'static str, status: Status, finding: impl Into<String>) -> Check {
        Check { id, status, finding: finding.into(), advice: None }
    }

    fn ok(id: &'static str, finding: impl Into<String>) -> Check {
        Check::new(id, Status::Ok, finding)
    }

    fn skipped(id: &'static str, finding: impl Into<String>) -> Check {
        Check::new(id, Status::Skipped, finding)
    }

    fn warn(id: &'static str, finding: impl Into<String>, advice: impl Into<String>) -> Check {
        Check { advice: Some(advice.into()), ..Check::new(id, Status::Warn, finding) }
    }

    fn fail(id: &'static str, finding: impl Into<String>, advice: impl Into<String>) -> Check {
        Check { advice: Some(advice.into()), ..Check::new(id, Status::Fail, finding) }
    }
}

/// Problems one check collected: the worst status wins, findings and advice are joined.
#[derive(Default)]
struct Findings {
    status: Option<Status>,
    findings: Vec<String>,
    advice: Vec<String>,
}

impl Findings {
    fn add(&mut self, status: Status, finding: impl Into<String>, advice: impl Into<String>) {
        self.status = self.status.max(Some(status));
        self.findings.push(finding.into());
        let advice = advice.into();
        if !advice.is_empty() && !self.advice.contains(&advice) {
            self.advice.push(advice);
        }
    }

    /// The check: `ok` with `fine` when nothing was added.
    fn check(self, id: &'static str, fine: impl Into<String>) -> Check {
        match self.status {
            None => Check::ok(id, fine),
            Some(status) => Check {
                id,
                status,
                finding: self.findings.join("; "),
                advice: (!self.advice.is_empty()).then(|| self.advice.join("; ")),
            },
        }
    }
}

/// What the checks found so far that later checks need.
struct Context<'a> {
    home: &'a Home,
    /// The configuration, when it loads and memory is enabled.
    config: Option<Config>,
    /// The memory, opened for reading, when it opens.
    memory: Option<crate::memory::Opened>,
    /// Whether the workspace holds anything to index (blocks or source records).
    has_content: bool,
}

/// Runs every check; exit 0 when none failed.
pub(crate) fn run(home: &Home, args: &Args) -> anyhow::Result<ExitCode> {
    let mut ctx = Context { home, config: None, memory: None, has_content: true };
    let checks = vec![
        check_home(&mut ctx),
        check_workspace(&mut ctx),
        check_index(&ctx),
        check_git(&ctx),
        check_session_store(&ctx),
        check_claude_code(home),
        check_codex(home),
        check_writer(&ctx),
        check_last_write(&ctx),
        check_sync_remote(&ctx),
    ];
    let ok = checks.iter().all(|c| c.status != Status::Fail);
    if args.json {
        let mut out = serde_json::json!({ "ok": ok, "checks": checks });
        if !ok {
            let failed: Vec<&str> =
                checks.iter().filter(|c| c.status == Status::Fail).map(|c| c.id).collect();
            let error = scriptorium_backend::wire::WireError::new(
                scriptorium_backend::wire::Code::ProblemsFound,
                format!("{} check(s) failed: {}", failed.len(), failed.join(", ")),
            );
            out["error"] = error.to_json()["error"].clone();
        }
        crate::output::document(&out)?;
    } else {
        for check in &checks {
            outln!("{} {:<13} {}", check.status.mark(), check.id, check.finding);
            if let Some(advice) = &check.advice {
                outln!("    → {advice}");
            }
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(crate::output::EXIT_PROBLEMS) })
}

/// The mode bits of `path` (not following a symlink), if it exists.
fn mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::symlink_metadata(path).ok().map(|m| m.permissions().mode())
}

/// (1) `home`: the home exists and is not world-writable, what in it holds private data is
/// neither world-writable nor world-readable, and the configuration loads with memory enabled.
fn check_home(ctx: &mut Context<'_>) -> Check {
    const ID: &str = "home";
    let root = ctx.home.root();
    if !root.is_dir() {
        return Check::fail(
            ID,
            format!("no home at {}", root.display()),
            "run `scriptorium setup claude-code` (or `scriptorium init`), or pass --home",
        );
    }
    let mut found = Findings::default();
    // The home itself only lists what it holds (writable by others, though, anything in it
    // could be replaced); what holds transcripts, memory, logs, setup records and the
    // configuration (a PostgreSQL DSN may carry a password) must not be readable either.
    if mode(root).is_some_and(|mode| mode & 0o002 != 0) {
        found.add(
            Status::Fail,
            format!("{} is world-writable", root.display()),
            format!("chmod 700 {}", root.display()),
        );
    }
    let private = [
        (ctx.home.memory(), true),
        (ctx.home.sessions(), true),
        (root.join("logs"), true),
        (root.join("setup"), true),
        (root.join(scriptorium_backend::config::CONFIG_FILE), false),
    ];
    for (path, dir) in private {
        let Some(mode) = mode(&path) else { continue };
        let fix = format!("chmod {} {}", if dir { "700" } else { "600" }, path.display());
        if mode & 0o002 != 0 {
            found.add(Status::Fail, format!("{} is world-writable", path.display()), fix);
        } else if mode & 0o004 != 0 {
            found.add(Status::Warn, format!("{} is world-readable", path.display()), fix);
        }
    }
    match Config::load(root) {
        Err(err) => found.add(
            Status::Fail,
            format!("the configuration does not load: {err}"),
            format!(
                "fix {} (see docs/format.md)",
                root.join(scriptorium_backend::config::CONFIG_FILE).display()
            ),
        ),
        Ok(config) if !config.enabled() => found.add(
            Status::Warn,
            "memory is disabled (memory.backend = \"none\"): nothing else is checked",
            "remove memory.backend = \"none\" from scriptorium.toml to use memory",
        ),
        Ok(config) => ctx.config = Some(config),
    }
    found.check(ID, format!("{} (private, configuration loads)", root.display()))
}

/// The check of a step that needs the configuration, when it did not load.
fn no_config(id: &'static str) -> Check {
    Check::skipped(id, "needs a home whose configuration loads (see `home`)")
}

/// (2) `workspace`: `scriptorium check` on the memory workspace, then the memory opened for
/// reading (what every command does first).
fn check_workspace(ctx: &mut Context<'_>) -> Check {
    const ID: &str = "workspace";
    if ctx.config.is_none() {
        return no_config(ID);
    }
    let root = ctx.home.memory();
    if !scriptorium_backend::memory::MemoryWorkspace::exists(&root) {
        return Check::fail(
            ID,
            format!("no memory workspace at {}", root.display()),
            "run `scriptorium init`",
        );
    }
    let report = match crate::check::check_workspace(&root) {
        Ok(report) => report,
        Err(err) => {
            return Check::fail(ID, format!("the workspace cannot be read: {err:#}"), "");
        }
    };
    ctx.has_content = report.units > 0 || report.source_files > 0;
    match crate::memory::open_for_reading(ctx.home) {
        Ok(memory) => ctx.memory = Some(memory),
        Err(err) => {
            return Check::fail(
                ID,
                format!("the memory does not open: {err:#}"),
                "run `scriptorium status` for details; `scriptorium repair` fixes a lost \
                 workspace ID",
            );
        }
    }
    let counts = format!(
        "{} topic file(s), {} block(s), {} source file(s)",
        report.topic_files, report.units, report.source_files
    );
    match report.diagnostics.first() {
        None => Check::ok(ID, format!("{counts}, no problems")),
        Some(first) => Check::fail(
            ID,
            format!("{} problem(s) in {counts}, first: {first}", report.diagnostics.len()),
            "run `scriptorium check` for every problem, then fix the files (`scriptorium edit`)",
        ),
    }
}

/// (3) `index`: the search index opens and reflects the installed revision.
fn check_index(ctx: &Context<'_>) -> Check {
    const ID: &str = "index";
    let Some(memory) = &ctx.memory else {
        return Check::skipped(ID, "needs a memory that opens (see `workspace`)");
    };
    let root = memory.workspace().root();
    let revision = match memory.workspace().installed_revision() {
        Ok(revision) => revision,
        Err(err) => return Check::fail(ID, format!("the revision cannot be read: {err}"), ""),
    };
    let rebuild = "run `scriptorium rebuild` (a search catches up too, slowly on a large memory)";
    if !root.join(".scriptorium/index").is_dir() {
        if !ctx.has_content {
            return Check::ok(ID, "no index yet: nothing to index (the first search creates it)");
        }
        return Check::fail(ID, "there is no search index", rebuild);
    }
    // A corrupt index is recreated empty by opening it, and then reads as behind.
    match scriptorium_search::Index::open(root) {
        Err(err) => Check::fail(ID, format!("the index does not open: {err}"), rebuild),
        Ok(index) => match index.revision() {
            Some(at) if at == revision.as_str() => Check::ok(
                ID,
                format!("{} document(s) at the installed revision {at}", index.num_docs()),
            ),
            at => Check::fail(
                ID,
                format!(
                    "the index reflects revision {}, the memory is at {}",
                    at.unwrap_or("none"),
                    revision.as_str()
                ),
                rebuild,
            ),
        },
    }
}

/// (4) `git`: `HEAD` resolves, every object of its tree reads, and the committed tree equals
/// the files on disk (`topics/`, `sources/` and the views).
fn check_git(ctx: &Context<'_>) -> Check {
    const ID: &str = "git";
    let Some(memory) = &ctx.memory else {
        return Check::skipped(ID, "needs a memory that opens (see `workspace`)");
    };
    let root = memory.workspace().root();
    if !root.join(".git").exists() {
        return Check::fail(
            ID,
            "the memory has no git history",
            "run `scriptorium status` (opening the memory creates it)",
        );
    }
    match compare_head(root) {
        Err(err) => Check::fail(
            ID,
            format!("git history unreadable: {err}"),
            "inspect the repository with `git -C <home>/memory fsck`; memory itself does not \
             depend on git, and `scriptorium sync` can restore history from a remote",
        ),
        Ok(diff) if diff.is_clean() => Check::ok(
            ID,
            format!(
                "HEAD {} readable ({} file(s)), the files on disk are committed",
                &diff.head[..diff.head.len().min(12)],
                diff.files
            ),
        ),
        Ok(diff) => {
            let mut what = Vec::new();
            for (label, paths) in
                [("changed", &diff.changed), ("missing", &diff.missing), ("new", &diff.new)]
            {
                if let Some(first) = paths.first() {
                    what.push(format!("{} {label} (first: {first})", paths.len()));
                }
            }
            Check::fail(
                ID,
                format!("the files on disk differ from HEAD: {}", what.join(", ")),
                "run `scriptorium status`: opening the memory commits what git lacks and takes in \
                 edits made outside a transaction (`scriptorium check` says why it cannot)",
            )
        }
    }
}

/// What [`compare_head`] found.
struct HeadDiff {
    head: String,
    files: usize,
    changed: Vec<String>,
    missing: Vec<String>,
    new: Vec<String>,
}

impl HeadDiff {
    fn is_clean(&self) -> bool {
        self.changed.is_empty() && self.missing.is_empty() && self.new.is_empty()
    }
}

/// Reads `HEAD`'s commit and every tree and blob under it (gix, isolated from any git
/// configuration), comparing each blob with the file on disk, and lists the files of
/// `topics/` and `sources/` that are not committed.
fn compare_head(root: &Path) -> Result<HeadDiff, String> {
    let repo =
        gix::open_opts(root, gix::open::Options::isolated()).map_err(|e| format!("open: {e}"))?;
    let head = repo.head_commit().map_err(|e| format!("HEAD does not resolve: {e}"))?;
    let tree = head.tree_id().map_err(|e| format!("HEAD's tree: {e}"))?.detach();
    let mut diff = HeadDiff {
        head: head.id.to_hex().to_string(),
        files: 0,
        changed: Vec::new(),
        missing: Vec::new(),
        new: Vec::new(),
    };
    let mut committed = std::collections::HashSet::new();
    let mut trees = vec![(String::new(), tree)];
    while let Some((prefix, id)) = trees.pop() {
        let tree = repo.find_tree(id).map_err(|e| format!("tree {id} of {prefix:?}: {e}"))?;
        let decoded = tree.decode().map_err(|e| format!("tree {id}: {e}"))?;
        for entry in &decoded.entries {
            let name = String::from_utf8_lossy(entry.filename);
            let path =
                if prefix.is_empty() { name.into_owned() } else { format!("{prefix}/{name}") };
            let oid = entry.oid.to_owned();
            if entry.mode.is_tree() {
                trees.push((path, oid));
                continue;
            }
            let blob = repo.find_object(oid).map_err(|e| format!("object {oid} ({path}): {e}"))?;
            diff.files += 1;
            match std::fs::read(root.join(&path)) {
                Ok(bytes) if bytes == blob.data => {}
                Ok(_) => diff.changed.push(path.clone()),
                Err(_) => diff.missing.push(path.clone()),
            }
            committed.insert(path);
        }
    }
    for tree in ["topics", "sources"] {
        let mut files = Vec::new();
        list_files(&root.join(tree), tree, &mut files);
        diff.new.extend(files.into_iter().filter(|f| !committed.contains(f)));
    }
    for paths in [&mut diff.changed, &mut diff.missing, &mut diff.new] {
        paths.sort();
    }
    Ok(diff)
}

/// The regular files under `dir` (`rel` is its workspace-relative path), never through a
/// symlink.
fn list_files(dir: &Path, rel: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{rel}/{name}");
        if kind.is_dir() {
            list_files(&entry.path(), &path, out);
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// (5) `session-store`: the embedded store opens, or PostgreSQL answers at the configured DSN.
fn check_session_store(ctx: &Context<'_>) -> Check {
    const ID: &str = "session-store";
    let Some(config) = &ctx.config else { return no_config(ID) };
    let root = ctx.home.root();
    match &config.sessions.store {
        None if !ctx.home.sessions().is_dir() => {
            Check::ok(ID, "embedded store not created yet (nothing imported so far)")
        }
        None => match scriptorium_backend::sessions::Sessions::open(root, config) {
            Ok(store) => Check::ok(ID, format!("embedded store at {}", store.location())),
            Err(err) => Check::fail(
                ID,
                format!("the embedded store does not open: {err}"),
                format!("check {} (permissions, disk)", ctx.home.sessions().display()),
            ),
        },
        Some(_) => match scriptorium_backend::sessions::Sessions::open(root, config) {
            Ok(store) => Check::ok(ID, format!("PostgreSQL reachable at {}", store.location())),
            Err(err) => Check::fail(
                ID,
                format!("PostgreSQL is not reachable: {err}"),
                "start the server, or fix `[sessions] store` in scriptorium.toml",
            ),
        },
    }
}

/// The five events setup hooks, for both agents.
const EVENTS: [&str; 5] = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"];

/// `text` split into words as a POSIX shell does for what setup writes: whitespace
/// separates, single quotes quote, a backslash outside them takes the next character as is
/// (setup writes a quote inside a quoted word as `'\''`).
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            '\\' if !quoted => {
                word.get_or_insert_with(String::new).extend(chars.next());
            }
            c if c.is_whitespace() && !quoted => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// Whether two paths name the same file (compared canonically when both exist).
fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// This binary's path.
fn this_binary() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

/// Checks the hook commands of `agent` in the hooks document `doc` (the shape setup writes:
/// `hooks.<Event>[].hooks[].command`): each event has one, naming this binary and this home.
/// Returns whether any was found.
fn check_hooks(
    doc: &serde_json::Value,
    file: &Path,
    agent: &str,
    home: &Home,
    found: &mut Findings,
) -> bool {
    let again = format!("run `scriptorium setup {agent}` again (it rewrites its own entries)");
    let exe = this_binary();
    let mut any = false;
    for event in EVENTS {
        let commands: Vec<Vec<String>> = doc["hooks"][event]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|group| group["hooks"].as_array().into_iter().flatten())
            .filter_map(|handler| handler["command"].as_str())
            .map(shell_words)
            .filter(|words| words.ends_with(&["hook".into(), agent.into(), event.into()]))
            .collect();
        let Some(words) = commands.first() else {
            found.add(
                Status::Fail,
                format!("no {event} hook in {}", file.display()),
                again.clone(),
            );
            continue;
        };
        any = true;
        let program = Path::new(&words[0]);
        if let Some(exe) = &exe
            && !same_path(program, exe)
        {
            found.add(
                Status::Fail,
                format!("the {event} hook runs {}, not this binary ({})", words[0], exe.display()),
                again.clone(),
            );
        }
        let named = words.iter().position(|w| w == "--home").and_then(|i| words.get(i + 1));
        if !named.is_some_and(|h| same_path(Path::new(h), home.root())) {
            found.add(
                Status::Fail,
                format!(
                    "the {event} hook uses the home {}, not {}",
                    named.map_or("(default)", String::as_str),
                    home.root().display()
                ),
                again.clone(),
            );
        }
    }
    any
}

/// Checks an MCP server entry (`command`, `args`) against this binary and this home.
fn check_mcp_entry(
    entry: Option<(String, Vec<String>)>,
    file: &Path,
    agent: &str,
    home: &Home,
    found: &mut Findings,
) {
    let again = format!("run `scriptorium setup {agent}` again (it rewrites its own entries)");
    let Some((command, args)) = entry else {
        found.add(Status::Fail, format!("no scriptorium MCP server in {}", file.display()), again);
        return;
    };
    if let Some(exe) = this_binary()
        && !same_path(Path::new(&command), &exe)
    {
        found.add(
            Status::Fail,
            format!("the MCP server runs {command}, not this binary ({})", exe.display()),
            again.clone(),
        );
    }
    let home_ok = args.len() == 3
        && args[0] == "--home"
        && same_path(Path::new(&args[1]), home.root())
        && args[2] == "mcp";
    if !home_ok {
        found.add(
            Status::Fail,
            format!("the MCP server's arguments {args:?} do not name this home with `mcp`"),
            again,
        );
    }
}

/// Reads a JSON file: `Ok(None)` when missing.
fn read_json(path: &Path) -> Result<Option<serde_json::Value>, String> {
    match std::fs::read_to_string(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(format!("{}: {err}", path.display())),
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|err| format!("{} does not parse: {err}", path.display())),
    }
}

/// `name` on `PATH`, if there.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The user's home directory.
fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// Whether the hooks document `doc` holds a hook command of `agent` as setup writes it
/// (`… hook <agent> <Event>`, whatever binary and home it names).
fn has_hooks(doc: &serde_json::Value, agent: &str) -> bool {
    EVENTS.iter().any(|event| {
        doc["hooks"][event].as_array().into_iter().flatten().any(|group| {
            group["hooks"].as_array().into_iter().flatten().any(|handler| {
                handler["command"]
                    .as_str()
                    .is_some_and(|c| c.ends_with(&format!(" hook {agent} {event}")))
            })
        })
    })
}

/// The Claude Code plugin's id when the settings document `doc` enables it
/// (`"enabledPlugins": {"scriptorium@<marketplace>": true}`).
fn plugin_id(doc: &serde_json::Value) -> Option<String> {
    doc["enabledPlugins"].as_object()?.iter().find_map(|(name, on)| {
        (name.starts_with("scriptorium@") && on.as_bool() == Some(true)).then(|| name.clone())
    })
}

/// (6a) `claude-code`: the hooks (`.claude/settings.json`) and the MCP server (`~/.claude.json`,
/// or the project's `.mcp.json`) setup installed, for the user and for the current directory's
/// project, or the Claude Code plugin (`enabledPlugins` holds `scriptorium@…`).
fn check_claude_code(home: &Home) -> Check {
    const ID: &str = "claude-code";
    let user = user_home();
    // The places setup writes to, user scope first: (hooks file, MCP file).
    let mut scopes: Vec<(PathBuf, PathBuf)> = Vec::new();
    if let Some(user) = &user {
        scopes.push((user.join(".claude/settings.json"), user.join(".claude.json")));
    }
    if let Ok(project) = std::env::current_dir()
        && user.as_deref() != Some(project.as_path())
    {
        scopes.push((project.join(".claude/settings.json"), project.join(".mcp.json")));
    }
    let mut docs = Vec::new();
    for (settings, mcp) in scopes {
        match read_json(&settings) {
            Ok(doc) => docs.push((settings, mcp, doc.unwrap_or(serde_json::Value::Null))),
            Err(err) => return Check::fail(ID, err, "fix the file (it must be JSON)"),
        }
    }
    let plugin = docs.iter().find_map(|(_, _, doc)| plugin_id(doc));
    let hooked: Vec<&(PathBuf, PathBuf, serde_json::Value)> =
        docs.iter().filter(|(_, _, doc)| has_hooks(doc, "claude-code")).collect();
    let installed = user
        .as_ref()
        .is_some_and(|u| u.join(".claude").is_dir() || u.join(".claude.json").exists());
    if !installed && hooked.is_empty() && plugin.is_none() {
        return Check::skipped(ID, "Claude Code is not installed for this user");
    }
    let mut found = Findings::default();
    match (plugin, hooked.first()) {
        (None, None) => {
            return Check::warn(
                ID,
                "Claude Code is installed, but Scriptorium's hooks are not",
                "run `scriptorium setup claude-code`, or install the Claude Code plugin",
            );
        }
        (Some(plugin), None) => return plugin_check(&plugin, home, found),
        // Setup's hooks win: the plugin's stand down (see `plugin.rs`), so this works, but one
        // of the two is dead weight.
        (Some(plugin), Some((settings, _, _))) => found.add(
            Status::Warn,
            format!(
                "both setup's hooks ({}) and the plugin {plugin} are installed: the plugin's \
                 hooks stand down",
                settings.display()
            ),
            "keep one: `scriptorium setup claude-code --uninstall`, or disable the plugin",
        ),
        (None, Some(_)) => {}
    }
    for (settings_path, mcp_path, settings) in &hooked {
        check_hooks(settings, settings_path, "claude-code", home, &mut found);
        match read_json(mcp_path) {
            Err(err) => found.add(Status::Fail, err, "fix the file (it must be JSON)"),
            Ok(doc) => {
                let server = doc.as_ref().map(|d| &d["mcpServers"]["scriptorium"]);
                let entry = server.and_then(|s| {
                    let command = s["command"].as_str()?.to_owned();
                    let args = s["args"].as_array()?;
                    let args = args.iter().filter_map(|a| a.as_str().map(str::to_owned));
                    Some((command, args.collect()))
                });
                check_mcp_entry(entry, mcp_path, "claude-code", home, &mut found);
            }
        }
    }
    let files: Vec<String> = hooked.iter().map(|(s, _, _)| s.display().to_string()).collect();
    found.check(
        ID,
        format!(
            "{} hooks and the MCP server installed by setup ({}), for this binary and this home",
            EVENTS.len(),
            files.join(", ")
        ),
    )
}

/// The `claude-code` check when the plugin is installed (and setup's hooks are not): the
/// plugin runs the `scriptorium` on `PATH` with the default home.
fn plugin_check(plugin: &str, home: &Home, mut found: Findings) -> Check {
    const ID: &str = "claude-code";
    // The plugin runs the `scriptorium` on PATH with the default home.
    let Some(on_path) = on_path("scriptorium") else {
        return Check::fail(
            ID,
            format!("the plugin {plugin} runs `scriptorium` from PATH, and there is none"),
            "install it: `cargo install --locked --path crates/cli`",
        );
    };
    if let Some(exe) = this_binary()
        && !same_path(&on_path, &exe)
    {
        found.add(
            Status::Warn,
            format!("the plugin runs {}, not this binary ({})", on_path.display(), exe.display()),
            "install this build on PATH (`cargo install --locked --path crates/cli`)",
        );
    }
    let default = Home::resolve(None);
    if !same_path(default.root(), home.root()) {
        found.add(
            Status::Warn,
            format!(
                "the plugin uses the default home {}, not {}",
                default.root().display(),
                home.root().display()
            ),
            "set SCRIPTORIUM_HOME for Claude Code, or use `scriptorium setup claude-code \
             --home …` instead of the plugin",
        );
    }
    found.check(ID, format!("installed by the plugin {plugin}, running {}", on_path.display()))
}

/// (6b) `codex`: the hooks (`$CODEX_HOME/hooks.json`), the MCP server and the hooks feature
/// (`$CODEX_HOME/config.toml`), and the hooks' trust as setup recorded it.
fn check_codex(home: &Home) -> Check {
    const ID: &str = "codex";
    let dir = match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match user_home() {
            Some(user) => user.join(".codex"),
            None => return Check::skipped(ID, "neither CODEX_HOME nor HOME is set"),
        },
    };
    if !dir.is_dir() {
        return Check::skipped(ID, "Codex is not installed for this user");
    }
    let hooks_path = dir.join("hooks.json");
    let config_path = dir.join("config.toml");
    let hooks = match read_json(&hooks_path) {
        Ok(doc) => doc.unwrap_or(serde_json::Value::Null),
        Err(err) => return Check::fail(ID, err, "fix the file (it must be JSON)"),
    };
    let config = match std::fs::read_to_string(&config_path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => toml_edit::DocumentMut::new(),
        Err(err) => return Check::fail(ID, format!("{}: {err}", config_path.display()), ""),
        Ok(text) => match text.parse::<toml_edit::DocumentMut>() {
            Ok(doc) => doc,
            Err(err) => {
                return Check::fail(
                    ID,
                    format!("{} does not parse: {err}", config_path.display()),
                    "fix the file (it must be TOML)",
                );
            }
        },
    };
    let server = config.get("mcp_servers").and_then(|s| s.get("scriptorium"));
    if !has_hooks(&hooks, "codex") && server.is_none() {
        return Check::warn(
            ID,
            "Codex is installed, but Scriptorium's hooks are not",
            "run `scriptorium setup codex` (Codex has no plugin marketplace)",
        );
    }
    let mut found = Findings::default();
    check_hooks(&hooks, &hooks_path, "codex", home, &mut found);
    let entry = server.and_then(|s| {
        let command = s.get("command")?.as_str()?.to_owned();
        let args = s.get("args")?.as_array()?;
        Some((command, args.iter().filter_map(|a| a.as_str().map(str::to_owned)).collect()))
    });
    check_mcp_entry(entry, &config_path, "codex", home, &mut found);
    let feature = config.get("features").and_then(|f| f.get("hooks")).and_then(|h| h.as_bool());
    if feature != Some(true) {
        found.add(
            Status::Fail,
            format!("[features] hooks is not on in {}", config_path.display()),
            "run `scriptorium setup codex` again",
        );
    }
    // Trust: the `[hooks.state."<key>"]` entries setup wrote (its record lists their keys).
    let record = home.root().join("setup/codex-user.json");
    let trusted: Vec<String> = std::fs::read_to_string(&record)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|r| r["codex_trusted"].as_array().cloned())
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    let state = config.get("hooks").and_then(|h| h.get("state"));
    let recorded = trusted
        .iter()
        .filter(|key| {
            state.and_then(|s| s.get(key.as_str())).is_some_and(|e| e.get("trusted_hash").is_some())
        })
        .count();
    if trusted.is_empty() || recorded < trusted.len() {
        found.add(
            Status::Warn,
            "the hooks' trust is not recorded: Codex asks you to review them once",
            "review them in Codex (/hooks), or run `scriptorium setup codex --codex <path>` with \
             the codex binary",
        );
    }
    found.check(
        ID,
        format!(
            "{} hooks, the MCP server and the hooks feature installed by setup, trust recorded",
            EVENTS.len()
        ),
    )
}

/// (7) `writer`: the configured model answers: a remote model does one tool-call round trip
/// (`scriptorium model check`); a command writer's program runs `--version`.
fn check_writer(ctx: &Context<'_>) -> Check {
    const ID: &str = "writer";
    let Some(config) = &ctx.config else { return no_config(ID) };
    let model = &config.model;
    if !config.memory.writer.enabled {
        return Check::skipped(ID, "writing is off ([memory.writer] enabled = false)");
    }
    match model.kind {
        ModelKind::Journal => Check::ok(ID, "the journal writer (no model to reach)"),
        ModelKind::Scripted => match &model.script {
            Some(script) if ctx.home.root().join(script).is_file() => {
                Check::ok(ID, format!("the scripted writer ({})", script.display()))
            }
            _ => Check::fail(
                ID,
                "the scripted writer's script is missing",
                "set `script` in [model] to a file in the home",
            ),
        },
        ModelKind::Command => {
            let Some(program) = model.command.first() else {
                return Check::fail(
                    ID,
                    "the command writer has no command",
                    "set `command` in [model]",
                );
            };
            match version_of(program) {
                Ok(version) => Check::ok(ID, format!("the command writer: {program} {version}")),
                Err(err) => Check::fail(
                    ID,
                    format!("the command writer's `{program} --version` failed: {err}"),
                    "install the agent CLI, or fix `command` in [model]",
                ),
            }
        }
        ModelKind::Openai | ModelKind::Anthropic => {
            match scriptorium_backend::models::check(model) {
                Err(err) => Check::fail(
                    ID,
                    format!("the model is not configured: {err}"),
                    "fix [model] in scriptorium.toml",
                ),
                Ok(report) if report.tool_calls_work => {
                    Check::ok(ID, format!("{}: {}", report.model, report.finding))
                }
                Ok(report) => Check::fail(
                    ID,
                    format!("{}: {}", report.model, report.finding),
                    report.advice.unwrap_or_else(|| "run `scriptorium model check`".to_owned()),
                ),
            }
        }
    }
}

/// The first line `program --version` prints, within ten seconds (the child is killed after).
fn version_of(program: &str) -> Result<String, String> {
    use std::io::Read as _;
    let mut child = std::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if std::time::Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("no answer within 10 s".to_owned());
            }
            None => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    if !status.success() {
        return Err(format!("it exited with {status}"));
    }
    Ok(out.lines().next().unwrap_or_default().trim().to_owned())
}

/// What to do after a write failed with `code`.
fn write_advice(code: &str, session: &str, retryable: bool) -> String {
    let again = format!("`scriptorium write --session {session}`");
    if code.starts_with("MODEL_") || code == "WRITER_PRECONDITION_FAILED" {
        return format!("run `scriptorium model check` and fix [model], then {again}");
    }
    match code {
        // The agent writer's own failures (docs/writer.md).
        "WRITER_BUDGET_REACHED" => format!(
            "the day's token budget ([memory.writer] max_tokens_per_day) is spent: the turns \
             stay pending and are written after midnight UTC, or raise the budget, then {again}"
        ),
        "WRITER_NOT_LOGGED_IN" => {
            format!("log the agent in (run it once on its own, e.g. `claude`), then {again}")
        }
        "WRITER_CLI_MISSING" | "WRITER_CLI_TOO_OLD" => format!(
            "install or update the agent CLI [model] command names (or `scriptorium setup … \
             --writer journal`), then {again}"
        ),
        "WRITER_RATE_LIMITED" => format!("the provider rate-limited the writer: later, {again}"),
        "COMMIT_REJECTED" | "INVALID_TOPIC_FORMAT" | "MISSING_SOURCE" | "PATCH_CONFLICT" => {
            format!("run `scriptorium check`, fix what it lists, then {again}")
        }
        "GIT_COMMIT_FAILED" => format!("see the `git` check, then {again}"),
        _ if retryable => format!("retry: {again}"),
        _ => format!("see `scriptorium sessions show {session}`, then {again}"),
    }
}

/// (8) `last-write`: how the last write of each session ended (the writer status file).
fn check_last_write(ctx: &Context<'_>) -> Check {
    const ID: &str = "last-write";
    if ctx.config.is_none() {
        return no_config(ID);
    }
    let root = ctx.home.memory();
    if !root.is_dir() {
        return Check::skipped(ID, "needs a memory workspace (see `workspace`)");
    }
    let status = WriterStatus::load(&root);
    let mut found = Findings::default();
    for (session, write) in &status.sessions {
        if let Some((code, retryable)) = write.failure {
            // A spent budget or a rate limit is the configured limit working: a warning.
            let limit = matches!(code.as_str(), "WRITER_BUDGET_REACHED" | "WRITER_RATE_LIMITED");
            found.add(
                if limit { Status::Warn } else { Status::Fail },
                format!(
                    "session {session}: the last write failed with {} ({})",
                    code.as_str(),
                    if retryable { "retryable" } else { "permanent" }
                ),
                write_advice(code.as_str(), session, retryable),
            );
        }
    }
    // A failure recorded without a session (the other implementation's status file).
    if status.sessions.is_empty()
        && status.last_outcome == Some(scriptorium_backend::runtime::Outcome::Failure)
        && let Some(failure) = status.last_failure
    {
        found.add(
            Status::Fail,
            format!("the last write failed with {}", failure.reason_code.as_str()),
            write_advice(failure.reason_code.as_str(), "<id>", failure.retryable),
        );
    }
    let fine = match (status.sessions.len(), status.last_outcome) {
        (0, None) => "no write yet".to_owned(),
        (0, Some(_)) => "the last write succeeded".to_owned(),
        (n, _) => format!("the last write of each of {n} session(s) succeeded"),
    };
    found.check(ID, fine)
}

/// (9) `sync-remote`: the configured remote answers (its branch is fetched as `sync` fetches
/// it), and how this clone stands to it.
fn check_sync_remote(ctx: &Context<'_>) -> Check {
    const ID: &str = "sync-remote";
    let Some(config) = &ctx.config else { return no_config(ID) };
    let Some(url) = &config.sync.remote else {
        return Check::skipped(ID, "no sync remote configured ([sync] remote)");
    };
    let Some(memory) = &ctx.memory else {
        return Check::skipped(ID, "needs a memory that opens (see `workspace`)");
    };
    let root = memory.workspace().root();
    let history = match scriptorium_history::History::open_or_init(
        root,
        scriptorium_backend::memory::now(),
    ) {
        Ok(history) => history,
        Err(err) => return Check::fail(ID, format!("the git history does not open: {err}"), ""),
    };
    let shown = redact_url(url);
    let branch = match history.branch() {
        Ok(branch) => branch,
        Err(err) => return Check::fail(ID, format!("no branch to sync: {err}"), ""),
    };
    let theirs = match history.fetch(url, &branch) {
        Ok(theirs) => theirs,
        Err(err) => {
            return Check::fail(
                ID,
                format!("the remote {shown} is not reachable: {err}"),
                "check the URL in [sync] remote, the network and your git credentials",
            );
        }
    };
    let Some(theirs) = theirs else {
        return Check::warn(
            ID,
            format!("the remote {shown} has no {branch} branch yet"),
            "run `scriptorium sync` to push this memory",
        );
    };
    let ours = match history.head_commit() {
        Ok(Some(ours)) => ours,
        Ok(None) => return Check::warn(ID, "no commit to compare", "run `scriptorium sync`"),
        Err(err) => return Check::fail(ID, format!("HEAD: {err}"), ""),
    };
    use scriptorium_history::Ancestry;
    match history.ancestry(&ours, &theirs) {
        Err(err) => Check::fail(ID, format!("comparing with the remote: {err}"), ""),
        Ok(Ancestry::Same) => Check::ok(ID, format!("{shown} reachable, in step ({branch})")),
        Ok(Ancestry::Ahead) => Check::warn(
            ID,
            format!(
                "{shown} reachable; this memory is ahead by {} (to push)",
                commits(commits_not_in(root, &ours, &theirs))
            ),
            "run `scriptorium sync`",
        ),
        Ok(Ancestry::Behind) => Check::warn(
            ID,
            format!(
                "{shown} reachable; this memory is behind by {} (to take)",
                commits(commits_not_in(root, &theirs, &ours))
            ),
            "run `scriptorium sync`",
        ),
        Ok(Ancestry::Diverged { .. }) => Check::warn(
            ID,
            format!(
                "{shown} reachable; diverged: {} here, {} there",
                commits(commits_not_in(root, &ours, &theirs)),
                commits(commits_not_in(root, &theirs, &ours))
            ),
            "run `scriptorium sync` (it merges by block)",
        ),
    }
}

/// How many commits `tip` (hex) has that `other` (hex) lacks, walking the memory's
/// repository with gix (`None` when the walk fails).
fn commits_not_in(root: &Path, tip: &str, other: &str) -> Option<usize> {
    let repo = gix::open_opts(root, gix::open::Options::isolated()).ok()?;
    let tip = gix::ObjectId::from_hex(tip.as_bytes()).ok()?;
    let other = gix::ObjectId::from_hex(other.as_bytes()).ok()?;
    let walk = repo.rev_walk([tip]).with_hidden([other]).all().ok()?;
    let mut count = 0;
    for commit in walk {
        commit.ok()?;
        count += 1;
    }
    Some(count)
}

/// "3 commit(s)", or "some commits" when they could not be counted.
fn commits(count: Option<usize>) -> String {
    count.map_or_else(|| "some commits".to_owned(), |n| format!("{n} commit(s)"))
}

/// `url` without a password (`https://user:secret@host` → `https://user@host`).
fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((userinfo, host)) = rest.split_once('@')
        && let Some((user, _)) = userinfo.split_once(':')
    {
        return format!("{scheme}://{user}@{host}");
    }
    url.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_read_what_setup_quotes() {
        assert_eq!(
            shell_words("'/a b/scriptorium' --home /h hook claude-code Stop"),
            ["/a b/scriptorium", "--home", "/h", "hook", "claude-code", "Stop"]
        );
        assert_eq!(shell_words(r"'it'\''s' x"), ["it's", "x"]);
        assert_eq!(shell_words("''"), [""]);
    }

    #[test]
    fn a_url_loses_its_password_only() {
        assert_eq!(redact_url("https://u:pw@host/r.git"), "https://u@host/r.git");
        assert_eq!(redact_url("git@host:r.git"), "git@host:r.git");
        assert_eq!(redact_url("/srv/r.git"), "/srv/r.git");
    }
}
