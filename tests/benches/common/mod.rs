//! The synthetic workspace the benches share: topic files of cited paragraphs with the
//! archives they cite.

use std::path::Path;

use scriptorium_topics_format::source::{ArchiveRecord, anchor_for, plan_append};

/// Paragraphs per topic file.
pub(crate) const BLOCKS_PER_FILE: usize = 50;

/// Writes `files` topic files of `BLOCKS_PER_FILE` cited paragraphs each, with one archive per
/// file holding the cited messages.
/// The paragraph text of block `b` of file `f` is given by `text`.
pub(crate) fn generate_with(
    root: &Path,
    files: usize,
    text: &mut dyn FnMut(usize, usize) -> String,
) {
    for f in 0..files {
        let thread = format!("bench-{f:04}");
        let records: Vec<ArchiveRecord> = (0..BLOCKS_PER_FILE)
            .map(|b| {
                let mut r = ArchiveRecord::new(
                    "openprogram",
                    thread.clone(),
                    format!("m{b}"),
                    b as u64,
                    "user",
                    format!(
                        "Message {b} of thread {f}: the owner mentions topic {f}-{b} in passing."
                    ),
                );
                r.timestamp = Some(format!("2024-03-{:02}T10:00:00+00:00", 1 + b % 28));
                r
            })
            .collect();
        let tree = std::collections::BTreeMap::<String, String>::new();
        let plan = plan_append(&records, &tree).expect("valid records");
        for write in plan.writes {
            let path = root.join(&write.rel_path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(path, write.new_text).expect("write archive");
        }
        let mut page = format!("# Topic {f}\n\n## Facts\n");
        for b in 0..BLOCKS_PER_FILE {
            let id = format!("openprogram/{thread}/m{b}");
            page.push_str(&format!(
                "\n{}[^e-{f:04}{b:06}] ^{f:04}{b:04}\n\n\
                 [^e-{f:04}{b:06}]: Time: `2024-03-{:02}`; Sources: [item {b}](../sources/openprogram/_v2/{thread}.md#{})\n",
                text(f, b),
                1 + b % 28,
                anchor_for(&id)
            ));
        }
        let topic = root.join(format!("topics/t{f:04}.md"));
        std::fs::create_dir_all(topic.parent().expect("a parent")).expect("mkdir");
        std::fs::write(topic, page).expect("write topic");
    }
}
