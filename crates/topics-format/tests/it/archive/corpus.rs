//! The frozen corpus `tests/corpus/sources/<case>/<workspace path>`: every case's reading and
//! diagnostics, pinned as snapshots. Cases named `valid-*` must have no diagnostics.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use scriptorium_topics_format::source::{self, check_archive, is_v2_source_path, legacy, scan};

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/sources")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("corpus directory is readable")
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// A readable account of how one archive file reads.
fn describe(rel: &str, text: &str) -> String {
    let mut out = String::new();
    writeln!(out, "file: {rel}").expect("write");
    if is_v2_source_path(rel) {
        let scanned = scan(rel, text);
        writeln!(out, "complete: {}", scanned.complete).expect("write");
        for frame in &scanned.frames {
            writeln!(
                out,
                "frame line {}: {} anchor={} lines={} speaker={:?} trust={} label={:?}",
                frame.line,
                frame.source_id,
                frame.anchor,
                frame.record_lines,
                frame.speaker_id(),
                frame.trust().as_str(),
                frame.speaker_label(),
            )
            .expect("write");
        }
    } else {
        for header in legacy::legacy_headers(rel, text) {
            writeln!(
                out,
                "legacy header line {}: {} anchor={}",
                header.line, header.source_id, header.anchor
            )
            .expect("write");
        }
        writeln!(out, "trusted: {:?}", legacy::legacy_trusted_ids(text)).expect("write");
    }
    for diagnostic in check_archive(rel, text) {
        writeln!(out, "diagnostic: {diagnostic}").expect("write");
    }
    out
}

#[test]
fn corpus_cases_read_as_pinned() {
    let root = corpus_root();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("corpus root")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "the corpus is missing cases");
    for case in cases {
        let name = case.file_name().and_then(|n| n.to_str()).expect("utf-8 case name").to_owned();
        let mut files = Vec::new();
        files_under(&case, &mut files);
        let mut report = String::new();
        let mut diagnostics = 0;
        for file in files {
            let rel = file
                .strip_prefix(&case)
                .expect("under the case")
                .to_str()
                .expect("utf-8 path")
                .replace('\\', "/");
            let text = std::fs::read_to_string(&file).expect("utf-8 corpus file");
            diagnostics += check_archive(&rel, &text).len();
            report.push_str(&describe(&rel, &text));
        }
        if name.starts_with("valid-") {
            assert_eq!(diagnostics, 0, "{name} must read without diagnostics:\n{report}");
        } else {
            assert!(diagnostics > 0, "{name} must be diagnosed:\n{report}");
        }
        insta::assert_snapshot!(name, report);
    }
}

#[test]
fn the_reference_example_is_byte_exact() {
    let rel = "sources/openprogram/_v2/sess-7f2a.md";
    let text = std::fs::read_to_string(corpus_root().join("valid-reference-example").join(rel))
        .expect("reference example");
    let scanned = scan(rel, &text);
    assert!(scanned.complete);
    let anchors: Vec<&str> = scanned.frames.iter().map(|f| f.anchor).collect();
    assert_eq!(anchors, ["source-d7e6772098d6b0d9", "source-0640c5fc0b1951db"]);
    let first = &scanned.frames[0];
    assert_eq!(first.record_lines, 2);
    assert!(first.record.ends_with("Second line  "));
    assert_eq!(first.speaker_id().as_deref(), Some("owner/local"));
    assert_eq!(first.speaker_display().as_deref(), Some("Owner"));
    assert_eq!(first.timestamp(), "2024-03-15T10:00:00+08:00");
    assert_eq!(
        first.content(),
        Some("I'm building a budget tracker in Flask, due 2024-04-15.\nSecond line  ")
    );
    let meta = &first.meta.as_ref().expect("meta line").meta;
    assert_eq!(meta.principal_id, "owner/install/cc9b723b75a34e44");
    let frames: Vec<String> = scanned.frames.iter().map(|f| f.render()).collect();
    assert_eq!(source::render_archive(&frames), text);
}

#[test]
fn a_truncated_copy_keeps_only_earlier_frames() {
    let rel = "sources/openprogram/_v2/sess-7f2a.md";
    let text = std::fs::read_to_string(corpus_root().join("invalid-truncated").join(rel))
        .expect("truncated copy");
    let scanned = scan(rel, &text);
    assert!(!scanned.complete);
    assert_eq!(scanned.frames.len(), 1);
    let fault = scanned.fault.expect("fault");
    assert_eq!(fault.code, scriptorium_topics_format::Code::ArchiveTruncated);
}
