//! Criterion: parse + validate a 10 000-block topic tree (~5 MB, 200 files) with an in-memory
//! source resolver. Budget: 50 ms.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use scriptorium_topics_format::catalog::{SourceResolver, TargetError};
use scriptorium_topics_format::topic::{TopicFile, check_tree};

/// Link target → source ref, as a resolver that already scanned every archive would answer.
struct MapResolver(HashMap<String, String>);

impl SourceResolver for MapResolver {
    fn resolve_target(&self, _topic_path: &str, target: &str) -> Result<String, TargetError> {
        self.0
            .get(target)
            .cloned()
            .ok_or_else(|| TargetError { message: format!("invalid source target: {target}") })
    }

    fn link_target(&self, _topic_path: &str, source_ref: &str) -> String {
        source_ref.to_owned()
    }
}

const WORDS: &[&str] = &[
    "budget", "tracker", "Flask", "deadline", "Craig", "prefers", "plain", "language", "meeting",
    "release", "review", "Tuesday", "office", "moved", "Japan", "bike", "shop", "project", "the",
    "a", "of", "to", "and", "with", "later", "notes", "draft", "server", "database", "trains",
];

/// A deterministic pseudo-random sequence (no RNG dependency).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        usize::try_from((self.0 >> 33) % n as u64).unwrap_or(0)
    }
}

fn sentence(rng: &mut Lcg, words: usize) -> String {
    let mut out = String::new();
    for i in 0..words {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.next(WORDS.len())]);
    }
    out.push('.');
    out
}

fn tree(blocks: usize, files: usize) -> (Vec<TopicFile>, MapResolver) {
    let mut rng = Lcg(7);
    let mut targets = HashMap::new();
    let mut out = Vec::new();
    let per_file = blocks / files;
    let mut block = 0;
    for f in 0..files {
        let path = format!("area{}/topic-{f:04}.md", f % 10);
        let mut text = format!("# Topic {f}\n\n");
        for b in 0..per_file {
            if b % 10 == 0 {
                text.push_str(&format!("## Section {}\n\n", b / 10));
            }
            let thread = format!("t{:04}", block % 500);
            let mut cites = String::new();
            let mut defs = String::new();
            for k in 0..1 + block % 2 {
                let id = format!("e-{:010x}", block * 2 + k);
                let anchor = format!("source-{:016x}", block * 2 + k);
                let target = format!("../../sources/openprogram/_v2/{thread}.md#{anchor}");
                targets.insert(target.clone(), format!("openprogram/{thread}/m{}", block * 2 + k));
                cites.push_str(&format!("[^{id}]"));
                defs.push_str(&format!(
                    "[^{id}]: Time: `2024-{:02}-{:02}`; Sources: [{}]({target})\n",
                    1 + block % 12,
                    1 + block % 28,
                    sentence(&mut rng, 2).trim_end_matches('.')
                ));
            }
            let first = sentence(&mut rng, 24);
            let second = sentence(&mut rng, 16);
            text.push_str(&format!(
                "{first} {second}{cites} ^{:08x}\n\n{defs}\n",
                0x1000_0000 + block
            ));
            block += 1;
        }
        out.push(TopicFile::new(path, text));
    }
    (out, MapResolver(targets))
}

fn bench(c: &mut Criterion) {
    let (files, resolver) = tree(10_000, 200);
    let bytes: usize = files.iter().map(|f| f.text.len()).sum();
    let parsed = check_tree(&files, &resolver);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics.first());
    assert_eq!(parsed.units.len(), 10_000);
    eprintln!("topic tree: {} files, {bytes} bytes, {} blocks", files.len(), parsed.units.len());
    let mut group = c.benchmark_group("topics_format");
    group.sample_size(20);
    group.bench_function("parse_validate_10k_blocks", |b| {
        // The result's drop (10 000 units) is the caller's cost, not the parse's.
        b.iter_with_large_drop(|| check_tree(black_box(&files), &resolver));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
