//! Criterion benchmarks of `scriptorium-views` (group `views`): the core render of a
//! 10 000-paragraph master and of a ~12 000-token one under the default 2 000-token budget
//! (budget: ≤ 1 ms), and a full
//! rebuild of timeline, recent events and relations from 10 000 parsed units, parse excluded
//! (budget: ≤ 50 ms).

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::{TopicFile, parse_tree};
use scriptorium_views::{TrustAll, affected, rebuild, render_core, update};

/// A master of `n` cited paragraphs, each followed by its definition.
fn master(n: usize) -> String {
    let mut text = String::from("# Core\n");
    for i in 0..n {
        text.push_str(&format!(
            "\nThe owner mentioned fact {i}: the weekly market moved to Saturday and the stall \
             with the good bread now opens at eight.[^e-{i:010x}] ^{i:08x}\n\n\
             [^e-{i:010x}]: Time: `2024-{:02}-{:02}`; Sources: [turn {i}](../sources/openprogram/_v2/sess-{:04}.md#source-{i:016x})\n",
            i % 12 + 1,
            i % 28 + 1,
            i % 97
        ));
    }
    text
}

/// 100 topic files of 100 paragraphs each, with dated evidence and block links.
fn tree() -> Vec<TopicFile> {
    (0..100)
        .map(|f| {
            let mut text = format!("# Topic {f}\n\n## Section\n");
            for p in 0..100 {
                let i = f * 100 + p;
                let link = if p > 0 {
                    format!(" See [earlier](#^{:08x}).", i - 1)
                } else {
                    String::new()
                };
                text.push_str(&format!(
                    "\nFact {i} about the project, with a few more words of content.{link}[^e-{i:010x}] ^{i:08x}\n\n\
                     [^e-{i:010x}]: Time: `2024-{:02}-{:02}`; Sources: [turn {i}](../sources/D{}.md#d{}-{})\n",
                    i % 12 + 1,
                    i % 28 + 1,
                    f + 1,
                    f + 1,
                    p + 1
                ));
            }
            TopicFile::new(format!("area/topic-{f:03}.md"), text)
        })
        .collect()
}

fn views(c: &mut Criterion) {
    let mut group = c.benchmark_group("views");
    let stress = master(10_000);
    group.bench_function("core_render_10k", |b| {
        b.iter(|| render_core(Some(black_box(&stress)), &TrustAll, 2_000));
    });
    // The size the reference measured: a hand-written master of about 12 000 tokens.
    let typical = master(200);
    group.bench_function("core_render_12k_tokens", |b| {
        b.iter(|| render_core(Some(black_box(&typical)), &TrustAll, 2_000));
    });
    let parse = parse_tree(&tree(), &ArchiveResolver::new(BTreeMap::new()));
    assert!(parse.is_valid(), "{:?}", parse.diagnostics.first());
    assert_eq!(parse.units.len(), 10_000);
    let order: BTreeMap<String, u64> = BTreeMap::new();
    group.bench_function("rebuild_10k_blocks", |b| {
        b.iter(|| rebuild(black_box(parse.units.iter()), &order, 50));
    });
    // One install that changed one file: only its dates' timeline files and the recent events.
    let first = &parse.units[0].topic_path;
    let changed: Vec<_> = parse.units.iter().filter(|u| &u.topic_path == first).collect();
    let touched = affected(changed.iter().copied(), changed.iter().copied());
    group.bench_function("update_one_file_10k_blocks", |b| {
        b.iter(|| update(black_box(parse.units.iter()), &order, 50, &touched));
    });
    group.finish();
}

criterion_group!(benches, views);
criterion_main!(benches);
