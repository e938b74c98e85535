//! `scriptorium check`: validates a workspace's `topics/` and `sources/` and prints every
//! diagnostic as `path:line:col: CODE message`.
//!
//! Reading files is this command's job (the format crate does no IO): topic files and archives
//! are read here through `scriptorium-workspace-fs` (its one walk; symlinks are reported, never
//! read through), and `sources/` is offered to the parser through its `FsSources`, which never
//! follows a symlink anywhere on a path.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use scriptorium_backend::engine::FsSources;
use scriptorium_topics_format::source::{ArchiveResolver, check_archive};
use scriptorium_topics_format::topic::{TopicFile, check_tree};
use scriptorium_topics_format::{Code, Diagnostic};
use scriptorium_workspace_fs::{FileKind, Fs as _, RealFs};

use crate::home::Home;
use crate::output::outln;

/// Arguments of `scriptorium check`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The memory workspace to check (default: `<home>/memory`).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// One file found under `topics/` or `sources/`.
enum Found {
    Text(String, String),
    NotUtf8(String, Vec<u8>),
    Symlink(String),
    /// A file or directory whose name is not UTF-8 (the lossy path): no link can name it, so
    /// it is not part of memory (transactions carry it over unchanged).
    BadName(String),
}

/// Lists the files under `prefix` (workspace-relative paths), directory by directory in name
/// order, through the workspace's one walk (never through a symlink).
fn walk(root: &Path, prefix: &str, out: &mut Vec<Found>) -> anyhow::Result<()> {
    let dir = root.join(prefix);
    let entries = scriptorium_workspace_fs::walk(&RealFs, &dir)
        .with_context(|| format!("reading {}", dir.display()))?;
    // The first entry with a name that is not UTF-8 is reported; what is below it is not read.
    let mut bad_dirs: Vec<PathBuf> = Vec::new();
    let mut found: Vec<(String, Found)> = Vec::new();
    for entry in entries {
        if bad_dirs.iter().any(|bad| entry.raw.starts_with(bad)) {
            continue;
        }
        let rel = format!("{prefix}/{}", entry.rel);
        if !entry.utf8 {
            bad_dirs.push(entry.raw);
            found.push((rel.clone(), Found::BadName(rel)));
            continue;
        }
        match entry.kind {
            FileKind::Symlink if rel.ends_with(".md") => {
                found.push((rel.clone(), Found::Symlink(rel)));
            }
            FileKind::File if rel.ends_with(".md") => {
                let path = dir.join(&entry.raw);
                let bytes = RealFs.read(&path).with_context(|| format!("reading {rel}"))?;
                let file = match String::from_utf8(bytes) {
                    Ok(text) => Found::Text(rel.clone(), text),
                    Err(err) => Found::NotUtf8(rel.clone(), err.into_bytes()),
                };
                found.push((rel, file));
            }
            _ => {}
        }
    }
    found.sort_by(|a, b| a.0.split('/').cmp(b.0.split('/')));
    out.extend(found.into_iter().map(|(_, file)| file));
    Ok(())
}

/// The diagnostic for a file that is not UTF-8, at its first invalid byte.
fn not_utf8(rel: &str, bytes: &[u8]) -> Diagnostic {
    let valid = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(err) => err.valid_up_to(),
    };
    let prefix = String::from_utf8_lossy(&bytes[..valid]);
    let line = prefix.matches('\n').count() + 1;
    let col = prefix.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Diagnostic::new(
        rel,
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(col).unwrap_or(u32::MAX),
        Code::InvalidUtf8,
        format!("file is not valid UTF-8 (byte {valid})"),
    )
}

/// The diagnostic for a name that is not UTF-8.
fn bad_name(rel: String) -> Diagnostic {
    Diagnostic::new(
        rel,
        1,
        1,
        Code::InvalidUtf8,
        "the file name is not valid UTF-8, so no link can name it and it is not part of memory; \
         rename or remove it",
    )
}

/// What a check found.
pub(crate) struct Report {
    pub(crate) topic_files: usize,
    pub(crate) source_files: usize,
    pub(crate) units: usize,
    pub(crate) diagnostics: Vec<Diagnostic>,
}

/// Checks one workspace directory (`scriptorium check`, and the doctor's `workspace` check).
pub(crate) fn check_workspace(root: &Path) -> anyhow::Result<Report> {
    if !root.is_dir() {
        bail!("{} is not a memory workspace (no such directory)", root.display());
    }
    let mut diagnostics = Vec::new();
    let topics_found = tree(root, "topics", &mut diagnostics)?;
    let sources_found = tree(root, "sources", &mut diagnostics)?;
    let (topic_files, source_files) = (topics_found.len(), sources_found.len());
    let mut topics = Vec::new();
    for (file, tree) in topics_found
        .into_iter()
        .map(|f| (f, "topic file"))
        .chain(sources_found.into_iter().map(|f| (f, "source archive")))
    {
        match file {
            Found::BadName(rel) => diagnostics.push(bad_name(rel)),
            Found::Text(rel, text) if tree == "topic file" && text.contains('\0') => {
                // Every transaction refuses such a file; so does the check.
                let at = text.find('\0').unwrap_or(0);
                let line = text[..at].matches('\n').count() + 1;
                diagnostics.push(Diagnostic::new(
                    rel,
                    u32::try_from(line).unwrap_or(u32::MAX),
                    1,
                    Code::NulByte,
                    "topic file contains a NUL byte",
                ));
            }
            Found::Text(rel, text) if tree == "topic file" => {
                topics.push(TopicFile { path: rel.trim_start_matches("topics/").to_owned(), text });
            }
            Found::Text(rel, text) => diagnostics.extend(check_archive(&rel, &text)),
            Found::NotUtf8(rel, bytes) => diagnostics.push(not_utf8(&rel, &bytes)),
            Found::Symlink(rel) => diagnostics.push(Diagnostic::new(
                rel,
                1,
                1,
                Code::NotRegularFile,
                format!("{tree} is a symlink"),
            )),
        }
    }
    let resolver = ArchiveResolver::new(FsSources::new(root));
    let parsed = check_tree(&topics, &resolver);
    diagnostics.extend(parsed.diagnostics);
    diagnostics.sort();
    diagnostics.dedup();
    Ok(Report { topic_files, source_files, units: parsed.units.len(), diagnostics })
}

/// The files under `root/<name>` (`topics` or `sources`): none when it is missing, and none
/// but a diagnostic when it is a symlink (it is never read through).
fn tree(root: &Path, name: &str, diagnostics: &mut Vec<Diagnostic>) -> anyhow::Result<Vec<Found>> {
    let mut found = Vec::new();
    match RealFs.metadata(&root.join(name)).map(|m| m.kind) {
        Ok(FileKind::Symlink) => diagnostics.push(Diagnostic::new(
            name,
            1,
            1,
            Code::NotRegularFile,
            format!("{name}/ is a symlink; it is never read through"),
        )),
        Ok(FileKind::Dir) => walk(root, name, &mut found)?,
        _ => {}
    }
    Ok(found)
}

/// Runs the command: exit 0 when clean, 1 when there are diagnostics, 2 on usage or IO errors.
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let root = args.workspace.unwrap_or_else(|| home.memory());
    let report = check_workspace(&root)?;
    if args.json {
        let diagnostics: Vec<_> = report
            .diagnostics
            .iter()
            .map(|d| {
                serde_json::json!({
                    "path": d.path, "line": d.line, "col": d.col,
                    "code": d.code.as_str(), "message": d.message,
                })
            })
            .collect();
        let out = serde_json::json!({
            "workspace": root.display().to_string(),
            "ok": report.diagnostics.is_empty(),
            "topic_files": report.topic_files,
            "source_files": report.source_files,
            "blocks": report.units,
            "diagnostics": diagnostics,
        });
        let mut out = out;
        if !report.diagnostics.is_empty() {
            let error = scriptorium_backend::wire::WireError::new(
                scriptorium_backend::wire::Code::ProblemsFound,
                format!("{} problem(s) found (see `diagnostics`)", report.diagnostics.len()),
            );
            out["error"] = error.to_json()["error"].clone();
        }
        crate::output::document(&out)?;
    } else {
        for diagnostic in &report.diagnostics {
            outln!("{diagnostic}");
        }
        eprintln!(
            "checked {} topic file(s) ({} block(s)) and {} source file(s): {} problem(s)",
            report.topic_files,
            report.units,
            report.source_files,
            report.diagnostics.len()
        );
    }
    Ok(if report.diagnostics.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
