//! Criterion: strict scan of a 50 000-frame source archive (budget: 50 ms).

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use scriptorium_topics_format::source::{ArchiveRecord, AuthorityTier, plan_append, scan};

/// 50 000 frames of one thread, shaped like the writer's: speaker marker, metadata, one or two
/// record lines.
fn archive() -> (String, String) {
    let records: Vec<ArchiveRecord> = (0..50_000u64)
        .map(|i| {
            let content = if i % 3 == 0 {
                format!("Message {i} about the budget tracker.\nA second line for message {i}.")
            } else {
                format!("Message {i}: the owner prefers plain language and short answers.")
            };
            let mut record = ArchiveRecord::new(
                "openprogram",
                "local_a327ddd6bf43",
                format!("msg_{i:016x}"),
                i,
                if i % 2 == 0 { "user" } else { "assistant" },
                content,
            );
            record.timestamp = Some("2024-01-01T09:03:00+00:00".to_owned());
            if i % 2 == 0 {
                record.speaker_id = Some("owner/local".to_owned());
                record.speaker_display = Some("Owner".to_owned());
            }
            record.speaker_kind = "owner".to_owned();
            record.principal_id = "owner/install/9d2e9fcd7f3860aa".to_owned();
            record.authority_tier = Some(AuthorityTier::Owner);
            record
        })
        .collect();
    let plan = plan_append(&records, &BTreeMap::new()).expect("valid records");
    let write = plan.writes.into_iter().next().expect("one archive");
    (write.rel_path, write.new_text)
}

fn scan_50k_frames(c: &mut Criterion) {
    let (rel, text) = archive();
    let scanned = scan(&rel, &text);
    assert!(scanned.complete);
    assert_eq!(scanned.frames.len(), 50_000);
    let mut group = c.benchmark_group("topics_format");
    group.sample_size(20);
    group.bench_function("scan_50k_frames", |b| {
        b.iter(|| {
            let scanned = scan(black_box(&rel), black_box(&text));
            black_box(scanned.frames.len())
        });
    });
    group.finish();
}

criterion_group!(benches, scan_50k_frames);
criterion_main!(benches);
