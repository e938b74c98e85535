//! The large-workspace generator the benches use (`xtask/src/generator.rs`, included here by
//! path as the benches include it) writes what this implementation accepts: `check` passes on a
//! generated 10 000-block workspace as it comes, and a one-record change to one of its sample
//! blocks installs.

use crate::support::{ok, scriptorium};

#[path = "../../../../xtask/src/generator.rs"]
mod generator;

#[test]
fn a_generated_10k_block_workspace_checks_clean_and_takes_a_change() {
    let home = tempfile::tempdir().expect("a temp dir");
    let memory = home.path().join("memory");
    let summary = generator::generate(&memory, &generator::Spec { blocks: 10_000, seed: 39 })
        .expect("generate");
    assert_eq!(summary.blocks, 10_000);

    let out = scriptorium(home.path(), &["check"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // The samples are real blocks citing real records: a change to one installs.
    let sample = summary.samples.iter().find(|s| s.path.contains("/journal/")).expect("a sample");
    let status = ok(&scriptorium(home.path(), &["status", "--json"]));
    let base = status["revision"].as_str().expect("a revision").to_owned();
    let request = home.path().join("change.json");
    let body = serde_json::json!([{
        "op": "update_record",
        "memory_id": sample.block_id,
        "content": "Owner said the generated workspace takes a change.",
        "time": sample.when,
        "sources": [{"source": sample.source_ref, "label": "the sample"}],
    }]);
    std::fs::write(&request, body.to_string()).expect("write the request");
    let request = request.to_str().expect("utf-8");
    let updated = ok(&scriptorium(
        home.path(),
        &["update", "--json", "--base", &base, "--memory-changes", request],
    ));
    assert_eq!(updated["noop"], false, "{updated}");
    let text = std::fs::read_to_string(memory.join(&sample.path)).expect("read the sample file");
    assert!(text.contains("the generated workspace takes a change"), "{text}");
    let out = scriptorium(home.path(), &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}
