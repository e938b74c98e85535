//! `cargo xtask deps`: the crate layering of `ARCHITECTURE.md#code-map`, checked against
//! `cargo metadata`.
//!
//! A new edge between our crates is a design change: add it here and to ARCHITECTURE.md in the
//! same commit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, bail};

/// The crates of layers L0 and L1 (see `ARCHITECTURE.md#code-map`). `redact` and `ids` are L0
/// crates of no dependency of ours, usable from every layer above.
const L0_L1: &[&str] = &[
    "scriptorium-ids",
    "scriptorium-topics-format",
    "scriptorium-redact",
    "scriptorium-workspace-fs",
    "scriptorium-session-dag",
    "scriptorium-markers",
    "scriptorium-txn",
    "scriptorium-views",
    "scriptorium-search",
    "scriptorium-history",
];
/// L0–L2.5: what `backend` may use (the writer, and the model clients above it).
const UP_TO_L2_5: &[&str] = &[
    "scriptorium-ids",
    "scriptorium-topics-format",
    "scriptorium-redact",
    "scriptorium-workspace-fs",
    "scriptorium-session-dag",
    "scriptorium-session-pg",
    "scriptorium-markers",
    "scriptorium-txn",
    "scriptorium-views",
    "scriptorium-search",
    "scriptorium-history",
    "scriptorium-writer",
    "scriptorium-model-clients",
];
/// What a face (`server`: web and MCP; `cli`) may use: the backend and the layers it does not
/// wrap. Never `txn` or `views`: every change and every locked read goes through `backend`
/// (`MemoryWorkspace::begin_edit`, `update`, `rebuild`, `search`; the engine's vocabulary
/// through `backend::engine`), so no face runs its own begin → validate → install. Never the
/// model clients either: models are built by `backend` (`models::build`).
const FACE: &[&str] = &[
    "scriptorium-ids",
    "scriptorium-topics-format",
    "scriptorium-redact",
    "scriptorium-workspace-fs",
    "scriptorium-session-dag",
    "scriptorium-markers",
    "scriptorium-search",
    "scriptorium-history",
    "scriptorium-writer",
    "scriptorium-backend",
];
/// [`FACE`] and the server: what `cli` may use.
const CLI: &[&str] = &[
    "scriptorium-ids",
    "scriptorium-topics-format",
    "scriptorium-redact",
    "scriptorium-workspace-fs",
    "scriptorium-session-dag",
    "scriptorium-markers",
    "scriptorium-search",
    "scriptorium-history",
    "scriptorium-writer",
    "scriptorium-backend",
    "scriptorium-server",
];
/// Every library crate but the model clients (reached through `backend`): what the end-to-end
/// tests may use.
const ALL_LIBRARIES: &[&str] = &[
    "scriptorium-ids",
    "scriptorium-topics-format",
    "scriptorium-redact",
    "scriptorium-workspace-fs",
    "scriptorium-session-dag",
    "scriptorium-session-pg",
    "scriptorium-markers",
    "scriptorium-txn",
    "scriptorium-views",
    "scriptorium-search",
    "scriptorium-history",
    "scriptorium-writer",
    "scriptorium-backend",
    "scriptorium-server",
];

/// For each of our packages, the packages of ours it may depend on (normal, build and dev
/// dependencies alike). `scriptorium-testkit` is additionally allowed as a dev-dependency of any
/// package and never as a normal one.
const ALLOWED: &[(&str, &[&str])] = &[
    ("scriptorium-ids", &[]),
    ("scriptorium-topics-format", &["scriptorium-ids"]),
    ("scriptorium-redact", &[]),
    ("scriptorium-workspace-fs", &["scriptorium-topics-format"]),
    ("scriptorium-session-dag", &[]),
    ("scriptorium-session-pg", &["scriptorium-session-dag"]),
    ("scriptorium-markers", &["scriptorium-session-dag", "scriptorium-ids"]),
    ("scriptorium-txn", &["scriptorium-topics-format", "scriptorium-workspace-fs"]),
    ("scriptorium-views", &["scriptorium-topics-format", "scriptorium-workspace-fs"]),
    ("scriptorium-search", &["scriptorium-topics-format", "scriptorium-workspace-fs"]),
    ("scriptorium-history", &["scriptorium-workspace-fs"]),
    ("scriptorium-writer", L0_L1),
    ("scriptorium-model-clients", &["scriptorium-writer"]),
    ("scriptorium-backend", UP_TO_L2_5),
    ("scriptorium-server", FACE),
    ("scriptorium-cli", CLI),
    ("scriptorium-testkit", &[]),
    ("scriptorium-tests", ALL_LIBRARIES),
    ("xtask", &[]),
];

const TESTKIT: &str = "scriptorium-testkit";

/// Packages one of ours must never reach, directly or through another of ours, and why. The
/// table above already refuses the direct edge; this names the rule, and holds it for paths
/// through a sibling (whose own edges may be allowed) too.
const NEVER_REACHES: &[(&str, &str, &str)] = &[(
    "scriptorium-markers",
    "scriptorium-topics-format",
    "the markers crate knows no Markdown (its WorkspaceId comes from scriptorium-ids)",
)];

/// Edges allowed as dev-dependencies only: a test or bench reads real data through a sibling
/// it must never depend on (`redact`'s precision suite and bench use `session-dag`'s importers).
const DEV_ONLY: &[(&str, &str)] = &[("scriptorium-redact", "scriptorium-session-dag")];

/// One dependency edge between two of our packages.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Edge {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) kind: String,
}

/// Reads the edges between workspace packages from `cargo metadata`.
pub(crate) fn edges(root: &Path) -> anyhow::Result<(BTreeSet<String>, Vec<Edge>)> {
    let output = crate::cargo()
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("parsing cargo metadata")?;
    let packages = meta["packages"].as_array().context("cargo metadata has no packages")?;
    let ours: BTreeSet<String> =
        packages.iter().filter_map(|p| p["name"].as_str().map(str::to_owned)).collect();
    let mut edges = Vec::new();
    for package in packages {
        let from = package["name"].as_str().unwrap_or_default();
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let to = dep["name"].as_str().unwrap_or_default();
            if ours.contains(to) {
                let kind = dep["kind"].as_str().unwrap_or("normal").to_owned();
                edges.push(Edge { from: from.to_owned(), to: to.to_owned(), kind });
            }
        }
    }
    edges.sort();
    Ok((ours, edges))
}

/// Whether one edge is allowed by the layering.
pub(crate) fn allowed(edge: &Edge, table: &BTreeMap<&str, &[&str]>) -> Result<(), String> {
    if edge.to == TESTKIT {
        return if edge.kind == "dev" {
            Ok(())
        } else {
            Err(format!(
                "{} -> {} ({}): testkit is a dev-dependency only",
                edge.from, edge.to, edge.kind
            ))
        };
    }
    if edge.kind == "dev" && DEV_ONLY.contains(&(edge.from.as_str(), edge.to.as_str())) {
        return Ok(());
    }
    match table.get(edge.from.as_str()) {
        None => Err(format!("{} is not in the layering table (xtask/src/deps.rs)", edge.from)),
        Some(targets) if targets.contains(&edge.to.as_str()) => Ok(()),
        Some(_) => Err(format!(
            "{} -> {} ({}) is not an allowed edge (ARCHITECTURE.md)",
            edge.from, edge.to, edge.kind
        )),
    }
}

/// The [`NEVER_REACHES`] rules `edges` break: for each, the path by which `from` reaches the
/// package it must not (its own edges of every kind, then normal and build edges onward: a
/// sibling's dev-dependencies are not built into it).
pub(crate) fn forbidden_paths(edges: &[Edge]) -> Vec<String> {
    let mut problems = Vec::new();
    for &(from, to, why) in NEVER_REACHES {
        // Breadth first, remembering each package's predecessor to name the path.
        let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(at) = queue.pop_front() {
            for edge in edges.iter().filter(|e| e.from == at) {
                let onward = at == from || edge.kind != "dev";
                if onward && edge.to != from && !previous.contains_key(edge.to.as_str()) {
                    previous.insert(&edge.to, at);
                    queue.push_back(&edge.to);
                }
            }
        }
        if previous.contains_key(to) {
            let mut path = vec![to];
            while let Some(&before) = path.last().and_then(|p| previous.get(p)) {
                path.push(before);
            }
            path.reverse();
            problems.push(format!("{} must not depend on {to}: {why}", path.join(" -> ")));
        }
    }
    problems
}

/// Fails on any edge the layering does not allow, on packages missing from the table, and on
/// any [`NEVER_REACHES`] rule broken.
pub(crate) fn check(root: &Path) -> anyhow::Result<()> {
    let table: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let (packages, edges) = edges(root)?;
    let mut problems: Vec<String> = packages
        .iter()
        .filter(|p| !table.contains_key(p.as_str()))
        .map(|p| format!("{p} is not in the layering table (xtask/src/deps.rs)"))
        .collect();
    problems.extend(edges.iter().filter_map(|e| allowed(e, &table).err()));
    problems.extend(forbidden_paths(&edges));
    if !problems.is_empty() {
        bail!("crate layering violated:\n  {}", problems.join("\n  "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_respects_the_layering() {
        check(&crate::repo_root()).unwrap();
    }

    #[test]
    fn forbidden_edges_are_reported() {
        let table: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
        let edge = |from: &str, to: &str, kind: &str| Edge {
            from: from.into(),
            to: to.into(),
            kind: kind.into(),
        };
        assert!(
            allowed(&edge("scriptorium-txn", "scriptorium-topics-format", "normal"), &table)
                .is_ok()
        );
        let err =
            allowed(&edge("scriptorium-txn", "scriptorium-views", "normal"), &table).unwrap_err();
        assert!(err.contains("not an allowed edge"), "{err}");
        assert!(
            allowed(&edge("scriptorium-topics-format", "scriptorium-session-dag", "dev"), &table)
                .is_err()
        );
        assert!(allowed(&edge("scriptorium-txn", TESTKIT, "dev"), &table).is_ok());
        assert!(allowed(&edge("scriptorium-txn", TESTKIT, "normal"), &table).is_err());
        assert!(allowed(&edge("scriptorium-new", "scriptorium-txn", "normal"), &table).is_err());
        let (redact, dag) = ("scriptorium-redact", "scriptorium-session-dag");
        assert!(allowed(&edge(redact, dag, "dev"), &table).is_ok());
        assert!(allowed(&edge(redact, dag, "normal"), &table).is_err());
        assert!(allowed(&edge("scriptorium-backend", redact, "normal"), &table).is_ok());
        let clients = "scriptorium-model-clients";
        assert!(allowed(&edge(clients, "scriptorium-writer", "normal"), &table).is_ok());
        assert!(allowed(&edge("scriptorium-backend", clients, "normal"), &table).is_ok());
        assert!(allowed(&edge("scriptorium-writer", clients, "normal"), &table).is_err());
        assert!(allowed(&edge("scriptorium-cli", clients, "normal"), &table).is_err());
        assert!(allowed(&edge("scriptorium-server", clients, "normal"), &table).is_err());
        // Faces reach the engine only through the backend, in tests too.
        for face in ["scriptorium-cli", "scriptorium-server"] {
            for engine in ["scriptorium-txn", "scriptorium-views"] {
                for kind in ["normal", "dev"] {
                    let err = allowed(&edge(face, engine, kind), &table).unwrap_err();
                    assert!(err.contains("not an allowed edge"), "{err}");
                }
            }
            assert!(allowed(&edge(face, "scriptorium-backend", "normal"), &table).is_ok());
        }
    }

    fn edge(from: &str, to: &str, kind: &str) -> Edge {
        Edge { from: from.into(), to: to.into(), kind: kind.into() }
    }

    #[test]
    fn markers_never_reach_the_topic_format() {
        let (markers, format) = ("scriptorium-markers", "scriptorium-topics-format");
        let table: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
        for kind in ["normal", "dev", "build"] {
            assert!(allowed(&edge(markers, format, kind), &table).is_err(), "{kind}");
        }
        assert!(allowed(&edge(markers, "scriptorium-ids", "normal"), &table).is_ok());
        assert!(allowed(&edge(format, "scriptorium-ids", "normal"), &table).is_ok());

        let today = [
            edge(markers, "scriptorium-ids", "normal"),
            edge(markers, "scriptorium-session-dag", "normal"),
            edge(format, "scriptorium-ids", "normal"),
        ];
        assert!(forbidden_paths(&today).is_empty());
        // Directly, of any kind.
        let direct = [edge(markers, format, "dev")];
        let problems = forbidden_paths(&direct);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("scriptorium-markers -> scriptorium-topics-format must not")
        );
        // Through a sibling whose own edge the table would allow: the path is named.
        let through = [
            edge(markers, "scriptorium-session-dag", "normal"),
            edge("scriptorium-session-dag", format, "normal"),
        ];
        let problems = forbidden_paths(&through);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with(
                "scriptorium-markers -> scriptorium-session-dag -> scriptorium-topics-format"
            ),
            "{}",
            problems[0]
        );
        // A sibling's dev-dependency is not built into the markers crate.
        let dev_of_sibling = [
            edge(markers, "scriptorium-session-dag", "normal"),
            edge("scriptorium-session-dag", format, "dev"),
        ];
        assert!(forbidden_paths(&dev_of_sibling).is_empty());
    }
}
