//! Data-driven suites over third-party data (`SCRIPTORIUM_TEST_DATA`): reported as not run when
//! the data is absent, never as passed.
//!
//! `openprogram-workspace/memory/` was written by the Python implementation. Its creation order
//! (`.scriptorium/runtime.json`) must survive our transactions number for number, and a
//! workspace that lost the file must be seeded to the same numbers from parse order.

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

use std::fs;
use std::path::Path;

use scriptorium_testkit::{Failed, data_trial, fail, run};
use scriptorium_txn::{BeginOptions, Workspace};

fn main() -> std::process::ExitCode {
    run(vec![
        data_trial("python_creation_order_survives_a_transaction", |data| {
            creation_order_after_an_insert(data, false)
        }),
        data_trial("python_creation_order_is_seeded_alike_from_parse_order", |data| {
            creation_order_after_an_insert(data, true)
        }),
    ])
}

const TOPIC: &str = "topics/people/ronekex-pinriapohal-1.md";
/// A new paragraph citing the evidence of the first one, inserted before the second.
const NEW: &str = "Ronekex keeps the spare key of the workshop.[^e-e601abdd6a]\n\n";
const SECOND: &str = "Deltam book we quioth";

fn copy_tree(from: &Path, to: &Path) -> Result<(), Failed> {
    fs::create_dir_all(to).map_err(fail)?;
    for entry in fs::read_dir(from).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let target = to.join(entry.file_name());
        if entry.file_type().map_err(fail)?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target).map_err(fail)?;
        }
    }
    Ok(())
}

fn order_of(text: &str) -> Result<serde_json::Map<String, serde_json::Value>, Failed> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(fail)?;
    value["creation_order"].as_object().cloned().ok_or_else(|| fail("no creation_order"))
}

fn creation_order_after_an_insert(data: &Path, lose_runtime: bool) -> Result<(), Failed> {
    let memory = data.join("openprogram-workspace").join("memory");
    let python = fs::read_to_string(memory.join(".scriptorium/runtime.json")).map_err(fail)?;
    let dir = tempfile::tempdir().map_err(fail)?;
    let root = dir.path().join("memory");
    copy_tree(&memory, &root)?;
    if lose_runtime {
        fs::remove_file(root.join(".scriptorium/runtime.json")).map_err(fail)?;
    }
    let ws = Workspace::open(&root).map_err(fail)?;
    let mut staged = ws.begin(BeginOptions::default()).map_err(fail)?;
    let text = staged.read_file(TOPIC).map_err(fail)?.ok_or_else(|| fail("no topic"))?;
    if !text.contains(SECOND) {
        return Err(fail("the topic no longer has its second paragraph"));
    }
    staged.write_file(TOPIC, &text.replacen(SECOND, &format!("{NEW}{SECOND}"), 1)).map_err(fail)?;
    let validated = staged.validate().map_err(|rejected| fail(format!("{rejected:?}")))?;
    let installed = validated.install().map_err(fail)?;
    let [new_id] = installed.block_ids.values().collect::<Vec<_>>()[..] else {
        return Err(fail(format!("one new block expected: {:?}", installed.block_ids)));
    };

    let ours = fs::read_to_string(root.join(".scriptorium/runtime.json")).map_err(fail)?;
    let (theirs, mut after) = (order_of(&python)?, order_of(&ours)?);
    let max = theirs.values().filter_map(serde_json::Value::as_u64).max().unwrap_or(0);
    if after.remove(new_id.as_str()).and_then(|n| n.as_u64()) != Some(max + 1) {
        return Err(fail(format!("the new block {new_id} is not numbered {}", max + 1)));
    }
    if after != theirs {
        return Err(fail("a committed block was renumbered"));
    }
    // Byte for byte: the Python file with one more line before the closing brace.
    let line = format!(",\n    \"{new_id}\": {}\n  }},", max + 1);
    let expected = python.replacen("\n  },", &line, 1);
    if ours != expected {
        return Err(fail(format!("runtime.json layout differs:\n{ours}")));
    }
    Ok(())
}
