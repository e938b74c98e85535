//! The frozen corpus: every file's diagnostics and units as snapshots, and the corpus
//! workspaces against their `EXPECTED` lists.

use std::fmt::Write as _;

use scriptorium_topics_format::Code;
use scriptorium_topics_format::source::check_archive;
use scriptorium_topics_format::topic::{Unit, check_tree};

use super::{corpus_dir, read_tree, topic_files, workspace_resolver};

/// A compact, stable rendering of units for snapshots.
fn describe_units(units: &[Unit]) -> String {
    let mut out = String::new();
    for u in units {
        let _ = writeln!(
            out,
            "{} (identity {}, aliases {:?}, order {}, line {}{})",
            u.memory_id,
            u.identity,
            u.aliases,
            u.created_order,
            u.line,
            if u.legacy { ", legacy" } else { "" }
        );
        let _ = writeln!(out, "  content: {:?}", u.content);
        let _ = writeln!(out, "  when: {:?} whens: {:?}", u.when, u.whens);
        let _ = writeln!(out, "  refs: {:?}", u.refs);
        let _ = writeln!(out, "  labels: {:?}", u.labels);
        let _ = writeln!(out, "  headings: {:?}", u.headings);
        if !u.relation_targets.is_empty() {
            let _ = writeln!(out, "  relations: {:?}", u.relation_targets);
        }
        for e in &u.evidence {
            let _ = writeln!(
                out,
                "  evidence {}: quote {:?} when {:?} refs {:?}",
                e.citation_id, e.quote, e.when, e.refs
            );
        }
    }
    out
}

/// Every corpus topic file, checked as a one-file tree with the valid workspace's sources.
#[test]
fn corpus_topics_snapshots() {
    let resolver = workspace_resolver("valid");
    let mut seen_codes = std::collections::BTreeSet::new();
    for group in ["valid", "invalid"] {
        let root = corpus_dir().join("topics").join(group);
        for file in topic_files(&root) {
            let parsed = check_tree(std::slice::from_ref(&file), &resolver);
            let mut report = String::new();
            for d in &parsed.diagnostics {
                seen_codes.insert(d.code);
                let _ = writeln!(report, "{d}");
            }
            if group == "valid" {
                assert!(parsed.diagnostics.is_empty(), "{}: {report}", file.path);
            } else {
                assert!(!parsed.diagnostics.is_empty(), "{} parses cleanly", file.path);
            }
            let _ = writeln!(report, "--- units");
            report.push_str(&describe_units(&parsed.units));
            let name = format!("{group}__{}", file.path.replace('/', "__").trim_end_matches(".md"));
            insta::with_settings!({ snapshot_path => corpus_dir().join("topics").join("snapshots"), prepend_module_to_snapshot => false }, {
                insta::assert_snapshot!(name, report);
            });
        }
    }
    let emitted = [
        Code::DuplicateFootnoteDefinition,
        Code::InvalidEvidenceDate,
        Code::SourceLinksRequired,
        Code::SourceLabelsRequired,
        Code::InvalidSourceTarget,
        Code::InvalidBlockId,
        Code::MissingContent,
        Code::UndefinedFootnote,
        Code::FootnoteRequired,
        Code::ContentAfterEvidence,
        Code::BlockIdRequired,
        Code::UncitedParagraph,
        Code::DuplicateMemoryId,
        Code::UnusedFootnote,
        Code::TopicLinkNotBlock,
        Code::DanglingBlockLink,
    ];
    for code in emitted {
        assert!(seen_codes.contains(&code), "no corpus case emits {code}");
    }
}

/// Each corpus workspace prints exactly its `EXPECTED` diagnostics (sorted lines).
#[test]
fn corpus_workspaces_match_expected() {
    let root = corpus_dir().join("workspaces");
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .expect("workspaces directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 2);
    for dir in names {
        let name = dir.file_name().expect("name").to_string_lossy().into_owned();
        let resolver = workspace_resolver(&name);
        let files = topic_files(&dir.join("topics"));
        let mut lines: Vec<String> =
            check_tree(&files, &resolver).diagnostics.iter().map(ToString::to_string).collect();
        for (path, text) in read_tree(&dir.join("sources")) {
            lines.extend(
                check_archive(&format!("sources/{path}"), &text).iter().map(ToString::to_string),
            );
        }
        lines.sort();
        let expected = std::fs::read_to_string(dir.join("EXPECTED")).expect("EXPECTED file");
        let expected: Vec<&str> = expected.lines().collect();
        assert_eq!(lines, expected, "workspace {name}");
    }
}
