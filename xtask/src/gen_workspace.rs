//! `cargo xtask gen-workspace --blocks N[k|m] --out DIR [--seed S]`: writes a generated memory
//! workspace (see `generator.rs`, which the benches and tests include by path) and prints what it
//! wrote as JSON.

use anyhow::{Context, bail};

use crate::generator::{Spec, generate};

/// The seed benches and tests use unless told otherwise.
const DEFAULT_SEED: u64 = 0x5C41_9703;

/// Runs the command.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let usage = "usage: cargo xtask gen-workspace --blocks N[k|m] --out DIR [--seed S]";
    let (mut blocks, mut out, mut seed) = (None, None, DEFAULT_SEED);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().context(usage)?;
        match flag.as_str() {
            "--blocks" => blocks = Some(parse_count(value).context(usage)?),
            "--out" => out = Some(std::path::PathBuf::from(value)),
            "--seed" => seed = value.parse().context(usage)?,
            _ => bail!(usage),
        }
    }
    let (Some(blocks), Some(out)) = (blocks, out) else { bail!(usage) };
    if blocks == 0 {
        bail!("--blocks must be at least 1");
    }
    let start = std::time::Instant::now();
    let summary = generate(&out, &Spec { blocks, seed })
        .with_context(|| format!("generating into {}", out.display()))?;
    eprintln!("gen-workspace: {blocks} blocks in {:.1} s", start.elapsed().as_secs_f64());
    println!("{summary}");
    Ok(())
}

/// `10000`, `100k`, `1m`.
fn parse_count(value: &str) -> Option<usize> {
    let lower = value.to_ascii_lowercase();
    let (digits, scale) = match lower.strip_suffix('k') {
        Some(d) => (d, 1_000),
        None => match lower.strip_suffix('m') {
            Some(d) => (d, 1_000_000),
            None => (lower.as_str(), 1),
        },
    };
    digits.parse::<usize>().ok()?.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};
    use std::path::{Path, PathBuf};

    use super::*;

    #[test]
    fn counts_take_k_and_m() {
        assert_eq!(parse_count("10000"), Some(10_000));
        assert_eq!(parse_count("100k"), Some(100_000));
        assert_eq!(parse_count("1M"), Some(1_000_000));
        assert_eq!(parse_count("x"), None);
    }

    /// Every generated block ID is unique, every block link names a file (relative to the
    /// linking file) that holds the block, every citation names an archive frame, and the same
    /// seed writes the same bytes.
    #[test]
    fn the_same_seed_writes_the_same_consistent_tree() {
        let (a, b) = (scratch("a"), scratch("b"));
        let spec = Spec { blocks: 4_000, seed: 7 };
        let first = generate(&a, &spec).expect("generate");
        assert_eq!(first, generate(&b, &spec).expect("generate"));
        let files = tree(&a);
        assert_eq!(files, tree(&b));
        assert!(generate(&a, &spec).is_err(), "never overwrites");

        let mut ids = HashSet::new();
        for (path, text) in files.iter().filter(|(p, _)| p.starts_with("topics/")) {
            for line in text.lines().filter(|l| l.contains(" ^")) {
                let id = line.rsplit(" ^").next().expect("an id");
                assert!(ids.insert(id.to_owned()), "{id} twice ({path})");
            }
        }
        assert_eq!(ids.len(), spec.blocks);
        assert_eq!(first.topic_files, files.keys().filter(|p| p.starts_with("topics/")).count());
        assert!(first.links > 20 && first.samples.len() > 8, "{first}");
        assert!(first.samples.iter().any(|s| s.path.contains("/journal/")));

        let (mut links, mut citations) = (0, 0);
        for (path, text) in files.iter().filter(|(p, _)| p.starts_with("topics/")) {
            let dir = Path::new(path).parent().expect("a directory");
            for target in text.split("](").skip(1).map(|rest| &rest[..rest.find(')').expect(")")]) {
                let (file, fragment) = target.split_once('#').expect("a fragment");
                let file = normalize(&dir.join(file));
                let held = &files[&file];
                match fragment.strip_prefix('^') {
                    Some(id) => {
                        links += 1;
                        assert!(held.contains(&format!(" ^{id}\n")), "{path} -> {target}");
                    }
                    None => {
                        citations += 1;
                        assert!(held.contains(&format!("<a id=\"{fragment}\"></a>")), "{target}");
                    }
                }
            }
        }
        assert_eq!(links, first.links);
        assert!(citations >= spec.blocks);
        let _ = std::fs::remove_dir_all(a);
        let _ = std::fs::remove_dir_all(b);
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-gen-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// `a/b/../c` → `a/c`, as a `/`-joined string.
    fn normalize(path: &Path) -> String {
        let mut parts: Vec<String> = Vec::new();
        for part in path.components() {
            match part {
                std::path::Component::ParentDir => {
                    parts.pop();
                }
                other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
            }
        }
        parts.join("/")
    }

    /// Every file under `root`: workspace-relative path → text.
    fn tree(root: &Path) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("a directory") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path.strip_prefix(root).expect("inside").display().to_string();
                    out.insert(rel, std::fs::read_to_string(&path).expect("text"));
                }
            }
        }
        out
    }
}
