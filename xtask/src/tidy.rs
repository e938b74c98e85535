//! `cargo xtask tidy`: repository rules that the compiler does not check.
//!
//! - every `.rs` file starts with a `//!` module doc;
//! - no debugging or placeholder macros, no ignored or should-panic tests, no `allow` attributes
//!   (an exception is an `expect` attribute with a reason);
//! - no trailing whitespace in source, docs and config (frozen corpora and snapshots excepted:
//!   their bytes are the test);
//! - no machine-specific absolute paths;
//! - no citation of design documents outside the repository (a section sign after `SPEC` or
//!   `reference`): the repository explains itself through its own docs (`docs/`, ARCHITECTURE.md);
//! - a crate's own `clippy.toml` (which replaces the root one for that crate) repeats every line
//!   of the root `clippy.toml` but its closing `]`, so no crate silently drops a workspace rule.

use std::path::{Path, PathBuf};

use anyhow::bail;

/// Directories never scanned.
const SKIP_DIRS: &[&str] = &["target", ".git", "node_modules", "scriptorium-demo"];

/// Text files whose trailing whitespace is data (corpora, snapshots).
fn whitespace_is_data(rel: &str) -> bool {
    rel.contains("/tests/corpus/") || rel.ends_with(".snap") || rel.contains("/snapshots/")
}

fn is_text(rel: &str) -> bool {
    const EXT: &[&str] =
        &[".rs", ".md", ".toml", ".txt", ".yml", ".yaml", ".sh", ".json", ".html", ".css", ".js"];
    EXT.iter().any(|e| rel.ends_with(e)) || rel.ends_with(".ci/run")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            if !SKIP_DIRS.contains(&name.as_ref()) && !name.starts_with("target") {
                walk(&entry.path(), out)?;
            }
        } else if file_type.is_file() {
            out.push(entry.path());
        }
    }
    Ok(())
}

/// The problems found in one file's text (`rel` is its repository-relative path).
pub(crate) fn problems_in(rel: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let forbidden_rs = [
        ["dbg", "!("].concat(),
        ["todo", "!("].concat(),
        ["#[", "ignore"].concat(),
        ["#[", "should_panic"].concat(),
        ["#[", "allow("].concat(),
        ["#![", "allow("].concat(),
    ];
    let machine_paths =
        [["/", "work", "/"].concat(), ["/", "root", "/"].concat(), ["/", "home", "/"].concat()];
    let outside_citations = [["SPEC", " §"].concat(), ["reference", " §"].concat()];
    if rel.ends_with(".rs") && !text.starts_with("//!") {
        problems.push(format!("{rel}:1: a .rs file must start with a `//!` module doc"));
    }
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if rel.ends_with(".rs") {
            for pat in &forbidden_rs {
                if line.contains(pat.as_str()) {
                    problems.push(format!("{rel}:{n}: `{pat}` is not allowed (STYLE.md)"));
                }
            }
        }
        if !whitespace_is_data(rel) && (line.ends_with(' ') || line.ends_with('\t')) {
            problems.push(format!("{rel}:{n}: trailing whitespace"));
        }
        for pat in &outside_citations {
            if line.contains(pat.as_str()) {
                problems.push(format!(
                    "{rel}:{n}: `{pat}` cites a document outside the repository (cite docs/)"
                ));
            }
        }
        for pat in &machine_paths {
            if line.contains(pat.as_str()) {
                problems.push(format!(
                    "{rel}:{n}: machine path `{pat}` (the repository speaks of the project only)"
                ));
            }
        }
    }
    problems
}

/// Runs every rule over the repository.
pub(crate) fn check(root: &Path) -> anyhow::Result<()> {
    let mut files = Vec::new();
    walk(root, &mut files)?;
    files.sort();
    let mut problems = Vec::new();
    let root_clippy = std::fs::read_to_string(root.join("clippy.toml")).unwrap_or_default();
    for path in files {
        let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
        if !is_text(&rel) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        problems.extend(problems_in(&rel, &text));
        if rel.starts_with("crates/") && rel.ends_with("/clippy.toml") {
            problems.extend(clippy_problems(&rel, &text, &root_clippy));
        }
    }
    if !problems.is_empty() {
        bail!("tidy found {} problem(s):\n  {}", problems.len(), problems.join("\n  "));
    }
    Ok(())
}

/// The lines of the root `clippy.toml` (but its closing `]`) that a crate's `clippy.toml` lacks.
fn clippy_problems(rel: &str, text: &str, root: &str) -> Vec<String> {
    root.lines()
        .filter(|line| line.trim() != "]" && !text.lines().any(|l| l == *line))
        .map(|line| format!("{rel}: lacks the root clippy.toml line `{line}`"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_is_tidy() {
        check(&crate::repo_root()).unwrap();
    }

    #[test]
    fn each_rule_fires() {
        let dbg = ["dbg", "!(x)"].concat();
        assert!(!problems_in("a.rs", "fn main() {}\n").is_empty(), "missing module doc");
        assert!(problems_in("a.rs", "//! doc\n").is_empty());
        assert_eq!(problems_in("a.rs", &format!("//! doc\nfn f() {{ {dbg}; }}\n")).len(), 1);
        assert_eq!(problems_in("a.md", "text \n").len(), 1);
        assert!(problems_in("crates/x/tests/corpus/a.md", "data  \n").is_empty());
        let path = ["/", "work", "/x"].concat();
        assert_eq!(problems_in("a.md", &format!("see {path}\n")).len(), 1);
        let allow = ["#[", "allow(dead_code)]"].concat();
        assert_eq!(problems_in("a.rs", &format!("//! d\n{allow}\n")).len(), 1);
        let citation = ["// see SPEC", " §4\n"].concat();
        assert_eq!(problems_in("a.rs", &format!("//! d\n{citation}")).len(), 1);
        let root = "a = 1\nlist = [\n    { x },\n]\n";
        assert!(
            clippy_problems("c", "a = 1\nlist = [\n    { x },\n    { y },\n]\n", root).is_empty()
        );
        assert_eq!(clippy_problems("c", "list = [\n    { y },\n]\n", root).len(), 2);
    }
}
