//! One transaction as a whole process, for measuring what a transaction costs on a large
//! workspace (`strace -c`, `/usr/bin/time`): `one_update <memory root> update <block id>
//! <source ref>` updates that record through `memory_changes`; `one_update <root> noop` runs
//! a transaction that changes nothing. Prints the outcome as one line.

use scriptorium_txn::{BeginOptions, UpdateRequest, Workspace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(root), Some(mode)) = (args.get(1), args.get(2)) else {
        return Err("usage: one_update <root> update <block id> <source ref> | noop".into());
    };
    let ws = Workspace::open(root)?;
    match mode.as_str() {
        "update" => {
            let (Some(id), Some(source)) = (args.get(3), args.get(4)) else {
                return Err("update needs a block id and a source ref".into());
            };
            let body = serde_json::json!({
                "base_revision": ws.revision()?.as_str(),
                "memory_changes": [{
                    "op": "update_record", "memory_id": id,
                    "content": format!("Updated at {}.", ws.revision()?.as_str()),
                    "time": "2024", "sources": [{"source": source, "label": "evidence"}],
                }],
            });
            let installed = ws.update(UpdateRequest::from_json(&body.to_string())?)?;
            println!("installed {} {:?}", installed.revision, installed.changed_files);
        }
        "noop" => {
            let installed = ws.begin(BeginOptions::default())?.validate()?.install()?;
            println!("noop {} {}", installed.noop, installed.revision);
        }
        _ => return Err(format!("unknown mode {mode}").into()),
    }
    Ok(())
}
