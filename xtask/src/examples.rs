//! The library examples (`examples/library/*`, see `docs/library.md`): crates outside the
//! workspace that use ours by path, as another project would. `cargo xtask examples` (and `ci`)
//! builds each offline against its committed `Cargo.lock` (`--locked`), runs it against a real
//! workspace (it must succeed), and checks the dependency trees of those that promise to stay
//! light: no async runtime, web stack, HTTP client, PostgreSQL or MCP.
//!
//! `cargo xtask examples --update-locks` rewrites the examples' lock files from the workspace's
//! (after a change to our crates' dependencies).
//!
//! The examples build in the workspace's target directory, so they reuse every dependency the
//! workspace compiled with the same features and profile (their manifests repeat the
//! workspace's debug profile for that reason).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The packages a light example must not pull in, by any path.
pub(crate) const HEAVY: &[&str] =
    &["tokio", "axum", "hyper", "reqwest", "postgres", "tokio-postgres", "rmcp"];

/// One example: its directory under `examples/library/`, whether it must stay light, and the
/// runs that prove it works.
struct Example {
    dir: &'static str,
    light: bool,
}

const EXAMPLES: &[Example] = &[
    Example { dir: "validate-workspace", light: true },
    Example { dir: "search-index", light: true },
    Example { dir: "agent-loop", light: false },
];

/// A package of a dependency tree, with the chain of packages that pulls it in.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) name: String,
    pub(crate) path: Vec<String>,
}

/// Parses `cargo tree --prefix depth` output (`<depth><name> v<version> [(source)] [(*)]` per
/// line): every package with the chain from the root to it, in the order cargo printed them.
pub(crate) fn parse_tree(text: &str) -> anyhow::Result<Vec<Found>> {
    let mut chain: Vec<String> = Vec::new();
    let mut found = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        let depth: usize = line[..digits]
            .parse()
            .with_context(|| format!("cargo tree line without a depth: {line:?}"))?;
        let name = line[digits..]
            .split_whitespace()
            .next()
            .with_context(|| format!("cargo tree line without a package: {line:?}"))?;
        if depth > chain.len() {
            bail!("cargo tree line deeper than its parent: {line:?}");
        }
        chain.truncate(depth);
        chain.push(name.to_owned());
        found.push(Found { name: name.to_owned(), path: chain.clone() });
    }
    Ok(found)
}

/// The [`HEAVY`] packages in a parsed tree, each once, with the first chain that reaches it.
pub(crate) fn heavy_in(tree: &[Found]) -> Vec<String> {
    let mut problems: Vec<String> = Vec::new();
    for heavy in HEAVY {
        if let Some(hit) = tree.iter().find(|f| f.name == *heavy) {
            problems.push(format!("{heavy} (via {})", hit.path.join(" -> ")));
        }
    }
    problems
}

/// The distinct packages of a parsed tree, the root excluded.
pub(crate) fn size(tree: &[Found]) -> usize {
    let names: std::collections::BTreeSet<&str> =
        tree.iter().filter(|f| f.path.len() > 1).map(|f| f.name.as_str()).collect();
    names.len()
}

fn manifest(root: &Path, example: &Example) -> PathBuf {
    root.join("examples/library").join(example.dir).join("Cargo.toml")
}

/// `cargo <args> --manifest-path <example>` in the workspace's target directory, offline and
/// locked.
fn example_cargo(root: &Path, example: &Example, args: &[&str]) -> Command {
    let mut cmd = crate::cargo();
    cmd.args(args)
        .args(["--offline", "--locked", "--manifest-path"])
        .arg(manifest(root, example))
        .env("CARGO_TARGET_DIR", root.join("target"));
    cmd
}

/// What to do when an example's lock file no longer matches our crates' dependencies.
const STALE_LOCK_HINT: &str = "an example's Cargo.lock is stale (our crates' dependencies \
    changed): run `cargo xtask examples --update-locks` and commit the lock files";

/// The example's normal dependency tree.
fn tree(root: &Path, example: &Example) -> anyhow::Result<Vec<Found>> {
    let output = example_cargo(root, example, &["tree", "-e", "normal", "--prefix", "depth"])
        .output()
        .with_context(|| format!("running cargo tree for {}", example.dir))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let hint = if stderr.contains("--locked") { STALE_LOCK_HINT } else { "" };
        bail!("cargo tree for {} failed: {stderr}{hint}", example.dir);
    }
    parse_tree(&String::from_utf8_lossy(&output.stdout))
}

/// Copies the `topics/` and `sources/` trees of `memory` to `to` (emptied first), writable.
fn copy_workspace(memory: &Path, to: &Path) -> anyhow::Result<()> {
    fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
        for entry in
            std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))?
        {
            let entry = entry?;
            let (source, target) = (entry.path(), to.join(entry.file_name()));
            let kind = entry.file_type()?;
            if kind.is_dir() {
                copy(&source, &target)?;
            } else if kind.is_file() {
                let text = std::fs::read(&source)
                    .with_context(|| format!("reading {}", source.display()))?;
                std::fs::write(&target, text)
                    .with_context(|| format!("writing {}", target.display()))?;
            }
        }
        Ok(())
    }
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    for tree in ["topics", "sources"] {
        copy(&memory.join(tree), &to.join(tree))?;
    }
    Ok(())
}

/// Rewrites each example's `Cargo.lock` as the workspace's, pruned by cargo to what the example
/// uses: the same versions as the workspace, never a fresh resolution.
fn update_locks(root: &Path) -> anyhow::Result<()> {
    for example in EXAMPLES {
        let dir = root.join("examples/library").join(example.dir);
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
            .with_context(|| format!("copying the workspace's Cargo.lock to {}", dir.display()))?;
        let mut cmd = crate::cargo();
        cmd.args(["metadata", "--format-version", "1", "--offline", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .stdout(std::process::Stdio::null());
        crate::run_step(&format!("prune {}/Cargo.lock", example.dir), cmd)?;
    }
    Ok(())
}

/// `cargo xtask examples [--update-locks]`.
pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    match args {
        [] => check(root, &crate::data_dir()?),
        [flag] if flag == "--update-locks" => update_locks(root),
        _ => bail!("usage: cargo xtask examples [--update-locks]"),
    }
}

/// A topic paragraph without evidence must come out as its diagnostic, with its stable code,
/// and exit 1: the example reports problems, it does not only succeed.
fn rejects_a_broken_workspace(root: &Path, example: &Example, memory: &Path) -> anyhow::Result<()> {
    if memory.exists() {
        std::fs::remove_dir_all(memory)
            .with_context(|| format!("removing {}", memory.display()))?;
    }
    let topics = memory.join("topics");
    std::fs::create_dir_all(&topics).with_context(|| format!("creating {}", topics.display()))?;
    std::fs::write(topics.join("notes.md"), "# Notes\n\nA paragraph without evidence.\n")
        .with_context(|| format!("writing {}", topics.display()))?;
    eprintln!("==> example {} on a broken workspace (must exit 1)", example.dir);
    let output = example_cargo(root, example, &["run", "--quiet"])
        .arg("--")
        .arg(memory)
        .output()
        .with_context(|| format!("running {}", example.dir))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let expected = "topics/notes.md:3:1: UNCITED_PARAGRAPH";
    if output.status.code() != Some(1) || !stdout.contains(expected) {
        bail!(
            "{} on a broken workspace: expected exit 1 and {expected:?}, got {} with:\n{stdout}{}",
            example.dir,
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// Builds, runs and checks every example; `data` is the shared test data directory.
pub(crate) fn check(root: &Path, data: &Path) -> anyhow::Result<()> {
    let scratch = root.join("target/library-examples");
    let openprogram = data.join("openprogram-workspace/memory");
    let mut problems = Vec::new();
    for example in EXAMPLES {
        let started = std::time::Instant::now();
        let found = tree(root, example)?;
        let heavy = heavy_in(&found);
        eprintln!("==> example {}: {} packages in its normal tree", example.dir, size(&found));
        if example.light && !heavy.is_empty() {
            problems.push(format!("{} pulls in {}", example.dir, heavy.join(", ")));
        }
        let runs: Vec<Vec<String>> = match example.dir {
            "validate-workspace" => vec![
                vec![root.join("examples/workspace").display().to_string()],
                vec![openprogram.display().to_string()],
            ],
            "search-index" => {
                let copy = scratch.join("openprogram-memory");
                copy_workspace(&openprogram, &copy)?;
                let dir = copy.display().to_string();
                // The second run finds the index current and only searches.
                let args = ["--expect-hits", &dir, "garsa henroul", "zanculgar stosa"];
                let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
                vec![args.clone(), args]
            }
            "agent-loop" => {
                let home = scratch.join("agent-home");
                if home.exists() {
                    std::fs::remove_dir_all(&home)
                        .with_context(|| format!("removing {}", home.display()))?;
                }
                vec![vec![home.display().to_string()]]
            }
            other => bail!("no runs defined for example {other}"),
        };
        for args in runs {
            let mut cmd = example_cargo(root, example, &["run", "--quiet"]);
            cmd.arg("--").args(&args);
            crate::run_step(&format!("example {} {}", example.dir, args.join(" ")), cmd)?;
        }
        if example.dir == "validate-workspace" {
            rejects_a_broken_workspace(root, example, &scratch.join("broken-memory"))?;
        }
        eprintln!("    example {} took {:.1}s", example.dir, started.elapsed().as_secs_f64());
    }
    if !problems.is_empty() {
        bail!("library examples pull in what they must not:\n  {}", problems.join("\n  "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = "\
0search-index v0.1.0 (/repo/examples/library/search-index)
1scriptorium-search v0.1.0 (/repo/crates/search)
2serde v1.0.229
3serde_derive v1.0.229 (proc-macro)
2tantivy v0.27.0
3tokio v1.48.0
4pin-project-lite v0.2.16
3serde v1.0.229 (*)
1hyper v1.7.0
";

    #[test]
    fn a_tree_is_parsed_with_each_package_s_chain() {
        let found = parse_tree(TREE).unwrap();
        assert_eq!(found.len(), 9);
        assert_eq!(
            found[0],
            Found { name: "search-index".into(), path: vec!["search-index".into()] }
        );
        assert_eq!(
            found[6].path,
            ["search-index", "scriptorium-search", "tantivy", "tokio", "pin-project-lite"]
        );
        // A dedup mark (`(*)`) and a climb back up both keep the chain right.
        assert_eq!(found[7].path, ["search-index", "scriptorium-search", "tantivy", "serde"]);
        assert_eq!(found[8].path, ["search-index", "hyper"]);
        assert_eq!(size(&found), 7, "root excluded, serde once");
    }

    #[test]
    fn heavy_packages_are_named_with_their_path() {
        let found = parse_tree(TREE).unwrap();
        assert_eq!(
            heavy_in(&found),
            [
                "tokio (via search-index -> scriptorium-search -> tantivy -> tokio)",
                "hyper (via search-index -> hyper)",
            ]
        );
        let light = parse_tree("0a v0.1.0\n1tokio-util v0.7.0\n1postgres-types v0.2.0\n").unwrap();
        assert!(heavy_in(&light).is_empty(), "names are matched whole");
    }

    /// The real trees, from `cargo tree` over the committed lock files (no build): the promise
    /// holds for the light examples, and the check does see what the backend example pulls in.
    #[test]
    fn the_light_examples_stay_light_and_the_backend_example_does_not() {
        let root = crate::repo_root();
        for example in EXAMPLES {
            let found = tree(&root, example).unwrap();
            assert_eq!(found[0].name, example.dir);
            let heavy = heavy_in(&found);
            if example.light {
                assert!(heavy.is_empty(), "{}: {heavy:?}", example.dir);
            } else {
                let tokio = heavy.iter().find(|h| h.starts_with("tokio (via agent-loop -> "));
                assert!(tokio.is_some(), "{heavy:?}");
            }
        }
    }

    #[test]
    fn malformed_trees_are_errors() {
        assert!(parse_tree("search-index v0.1.0\n").is_err(), "no depth");
        assert!(parse_tree("0a v0.1.0\n2b v0.1.0\n").is_err(), "a skipped level");
        assert!(parse_tree("3\n").is_err(), "no package");
    }
}
