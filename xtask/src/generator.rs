//! `cargo xtask gen-workspace --blocks N --out DIR [--seed S]`: a large memory workspace in the
//! OpenProgram layout, for the benches and the tests that need one at 10 000, 100 000 or
//! 1 000 000 blocks.
//!
//! Key decision: this file depends on nothing of ours (only `std` and `sha2`), so the benches and
//! tests of any crate include it by path (`#[path = ".../xtask/src/generator.rs"]`) and every one of
//! them measures the same shapes; xtask itself may depend on no crate of the workspace. What it
//! writes is checked where the format lives: a `#[test]` runs `scriptorium check` on 10 000
//! generated blocks, and the process bench checks each workspace it generates.
//!
//! The shapes follow the workspace the Python implementation wrote (`openprogram-workspace` in
//! the test data): topic files under `people/`, `preferences/`, `research/`, `tooling/` and
//! `projects/` of 8 to 48 cited paragraphs (2–20 KB, in `## ` sections of 3 to 7), every
//! paragraph ending in a block ID and citing one or two archived records through a footnote
//! whose definition links the record's v2 frame; project journals
//! (`projects/<slug>/journal/YYYY/MM-DD.md`, 4 to 20 paragraphs, as the journal writer files
//! them); a `core.md` master; links from ~4 % of the paragraphs to a block of a person or a
//! project; one v2 archive per session of 40 records (owner and assistant turns, the Python
//! implementation's metadata tokens), one record for every five blocks. Everything comes from
//! one seeded generator: the same `--blocks` and `--seed` give the same bytes.
//!
//! Only the canonical files are written (`topics/`, `sources/`): `scriptorium rebuild` derives
//! the views, the first transaction the creation order.
//!
//! # Limitations
//!
//! - Text is made-up words (like the Python implementation's synthetic sessions): realistic in
//!   length and token counts, not in meaning; recall benchmarks use LoCoMo instead.
//! - No legacy forms (`mem_` IDs, `D<n>` archives), no pending sources: the workspace is what a
//!   heavy user's years of writes leave, not a migration corpus.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use sha2::{Digest, Sha256};

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    /// Paragraphs (blocks) in all topic files together.
    pub(crate) blocks: usize,
    /// Seeds every choice.
    pub(crate) seed: u64,
}

/// One generated block a bench or test can change: its ID, its file, a record it cites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    /// The block ID.
    pub(crate) block_id: String,
    /// Its file, workspace-relative (`topics/…`).
    pub(crate) path: String,
    /// A source ID it cites (archived, trusted).
    pub(crate) source_ref: String,
    /// The date of that record (`YYYY-MM-DD`).
    pub(crate) when: String,
}

/// What [`generate`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Blocks written.
    pub(crate) blocks: usize,
    /// Topic files written.
    pub(crate) topic_files: usize,
    /// Archive files written (one per session).
    pub(crate) archives: usize,
    /// Archived records.
    pub(crate) records: usize,
    /// Block links between topics.
    pub(crate) links: usize,
    /// Bytes of `topics/`.
    pub(crate) topic_bytes: u64,
    /// Bytes of `sources/`.
    pub(crate) source_bytes: u64,
    /// Blocks spread over the tree (journals, people, projects, the core), for benches to change.
    pub(crate) samples: Vec<Sample>,
}

/// The summary as one JSON object (what `cargo xtask gen-workspace` prints).
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{\"blocks\": {}, \"topic_files\": {}, \"archives\": {}, \"records\": {}, \
             \"links\": {}, \"topic_bytes\": {}, \"source_bytes\": {}, \"samples\": [",
            self.blocks,
            self.topic_files,
            self.archives,
            self.records,
            self.links,
            self.topic_bytes,
            self.source_bytes
        )?;
        for (i, s) in self.samples.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(
                f,
                "{sep}{{\"block_id\": \"{}\", \"path\": \"{}\", \"source_ref\": \"{}\", \
                 \"when\": \"{}\"}}",
                s.block_id, s.path, s.source_ref, s.when
            )?;
        }
        f.write_str("]}")
    }
}

/// The Python implementation's metadata token of an owner turn (authority `owner`).
const OWNER_META: &str = "eyJhdXRob3JpdHlfdGllciI6Im93bmVyIiwicHJpbmNpcGFsX2lkIjoib3duZXIvaW5zdGFsbC85ZDJlOWZjZDdmMzg2MGFhIiwic3BlYWtlcl9raW5kIjoib3duZXIiLCJ0cnVzdF9zdGF0ZSI6InRydXN0ZWQiLCJ2ZXJzaW9uIjoxfQ";
/// … and of an assistant turn.
const ASSISTANT_META: &str = "eyJhdXRob3JpdHlfdGllciI6Im93bmVyIiwicHJpbmNpcGFsX2lkIjoib3duZXIvaW5zdGFsbC85ZDJlOWZjZDdmMzg2MGFhIiwic3BlYWtlcl9raW5kIjoiYXNzaXN0YW50IiwidHJ1c3Rfc3RhdGUiOiJ0cnVzdGVkIiwidmVyc2lvbiI6MX0";

/// Records per session (one archive each), as in the Python implementation's sessions.
const RECORDS_PER_SESSION: usize = 40;
/// Blocks per archived record.
const BLOCKS_PER_RECORD: usize = 5;

/// SplitMix64: small, fast, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        rng.next();
        rng
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A bijection of `0..2^bits`: distinct inputs give distinct IDs.
fn permute(index: u64, seed: u64, bits: u32) -> u64 {
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let mut x = index.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(seed) & mask;
    x ^= x >> (bits / 2);
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9 | 1) & mask;
    x ^ (x >> (bits / 3))
}

/// The block ID of block `k`: 8 lowercase hex digits, as the runtime mints them.
fn block_id(k: usize, seed: u64) -> String {
    format!("{:08x}", permute(k as u64, seed, 32))
}

/// The evidence ID of footnote `k`: `e-` + 10 lowercase hex digits.
fn evidence_id(k: usize, seed: u64) -> String {
    format!("e-{:010x}", permute(k as u64, seed ^ 0xE1, 40))
}

/// `source-` + the first 8 bytes of SHA-256 of the source ID, in hex.
fn anchor(source_id: &str) -> String {
    let digest = Sha256::digest(source_id.as_bytes());
    let mut out = String::from("source-");
    for b in &digest[..8] {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Syllables of the made-up vocabulary (the Python implementation's sessions use such words).
const SYLLABLES: &[&str] = &[
    "bri", "tor", "zan", "cul", "gar", "sel", "roy", "en", "ton", "hen", "roul", "mi", "zan", "lo",
    "vi", "ro", "feul", "sto", "sa", "tam", "vel", "pin", "ka", "shi", "jor", "ria", "nek", "del",
    "fin", "wis", "ber", "ex", "fe", "lex", "quo", "dra", "mo", "pra", "ul", "yen",
];
/// Plain words between the made-up ones.
const PLAIN: &[&str] = &[
    "the", "of", "to", "and", "a", "in", "is", "on", "for", "with", "prefers", "wants", "said",
    "agreed", "next", "week", "project", "deadline", "release", "draft", "review", "likes",
    "dislikes", "keep", "remember", "team", "cost", "price", "test", "before", "after", "meeting",
];

fn word(rng: &mut Rng, out: &mut String) {
    if rng.chance(45) {
        out.push_str(PLAIN[rng.range(0, PLAIN.len() - 1)]);
    } else {
        for _ in 0..rng.range(2, 3) {
            out.push_str(SYLLABLES[rng.range(0, SYLLABLES.len() - 1)]);
        }
    }
}

/// One to three sentences of 6–18 words, capitalized, each ending in `.`.
fn sentences(rng: &mut Rng, out: &mut String, max: usize) {
    for s in 0..rng.range(1, max) {
        if s > 0 {
            out.push(' ');
        }
        let start = out.len();
        for w in 0..rng.range(6, 18) {
            if w > 0 {
                out.push(' ');
            }
            word(rng, out);
        }
        if let Some(first) = out[start..].chars().next() {
            let upper = first.to_ascii_uppercase();
            out.replace_range(start..start + first.len_utf8(), upper.encode_utf8(&mut [0; 4]));
        }
        out.push('.');
    }
}

/// A short name made of two capitalized made-up words, and its slug.
fn name(rng: &mut Rng, index: usize) -> (String, String) {
    let mut first = String::new();
    let mut last = String::new();
    for _ in 0..rng.range(2, 3) {
        first.push_str(SYLLABLES[rng.range(0, SYLLABLES.len() - 1)]);
    }
    for _ in 0..rng.range(2, 4) {
        last.push_str(SYLLABLES[rng.range(0, SYLLABLES.len() - 1)]);
    }
    let slug = format!("{first}-{last}-{index}");
    let cap = |s: &str| {
        let mut c = s.chars();
        c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
    };
    (format!("{} {}", cap(&first), cap(&last)), slug)
}

/// A date `days` after 2021-01-04 (`YYYY-MM-DD`), months of 28 days so every date is real.
fn date(days: usize) -> (usize, usize, usize) {
    let months = days / 28;
    (2021 + months / 12, 1 + months % 12, 1 + days % 28)
}

/// One archived session.
struct Session {
    thread: String,
    /// (year, month, day).
    day: (usize, usize, usize),
    /// Source IDs, in order; even records are the owner's.
    records: Vec<String>,
}

/// What kind of topic file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Core,
    Person,
    Project,
    Preference,
    Research,
    Tooling,
    Journal,
}

/// One planned topic file.
struct Plan {
    kind: Kind,
    /// Path relative to `topics/`.
    path: String,
    title: String,
    /// Its blocks are `first..first + count` (global block numbers).
    first: usize,
    count: usize,
    /// The sessions it cites.
    sessions: Vec<usize>,
}

/// `os.path.relpath(target, start_dir)` of two relative `/`-paths (no `.` or `..` in them).
fn relpath(target: &str, start_dir: &str) -> String {
    let t: Vec<&str> = target.split('/').collect();
    let s: Vec<&str> =
        if start_dir.is_empty() { Vec::new() } else { start_dir.split('/').collect() };
    let common = t.iter().zip(&s).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; s.len() - common];
    parts.extend(&t[common..]);
    parts.join("/")
}

fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// Plans every file: which blocks it holds and which sessions it cites.
fn plan(spec: &Spec, sessions: usize) -> Vec<Plan> {
    let mut rng = Rng::new(spec.seed, 1);
    let mut plans: Vec<Plan> = Vec::new();
    let mut next = 0usize;
    let core = (spec.blocks / 500).clamp(3, 24).min(spec.blocks);
    let mut push = |plans: &mut Vec<Plan>, kind, path: String, title: String, count: usize| {
        plans.push(Plan { kind, path, title, first: next, count, sessions: Vec::new() });
        next += count;
    };
    push(&mut plans, Kind::Core, "core.md".to_owned(), "Core".to_owned(), core);
    let rest = spec.blocks - core;
    let journals = rest * 3 / 10;
    let projects = (rest / 5000).max(1);
    let mut project_names: Vec<(String, String)> = Vec::new();
    for p in 0..projects {
        project_names.push(name(&mut rng, p));
    }
    // Topic files: people, projects (overview and aspects), preferences, research, tooling.
    let mut topic_blocks = rest - journals;
    let mut index = 0usize;
    while topic_blocks > 0 {
        let count = rng.range(8, 48).min(topic_blocks);
        let (kind, path, title) = match index % 10 {
            0..=2 => {
                let (title, slug) = name(&mut rng, index);
                (Kind::Person, format!("people/{slug}.md"), title)
            }
            3 | 4 => {
                let (project, slug) = &project_names[(index / 10) % projects];
                if index / 10 < projects && index % 10 == 3 {
                    (Kind::Project, format!("projects/{slug}.md"), project.clone())
                } else {
                    let (aspect, aslug) = name(&mut rng, index);
                    (Kind::Project, format!("projects/{slug}/{aslug}.md"), aspect)
                }
            }
            5 => {
                let (title, slug) = name(&mut rng, index);
                (Kind::Preference, format!("preferences/{slug}.md"), title)
            }
            6 | 7 => {
                let (title, slug) = name(&mut rng, index);
                (Kind::Research, format!("research/{slug}.md"), title)
            }
            _ => {
                let (title, slug) = name(&mut rng, index);
                (Kind::Tooling, format!("tooling/{slug}.md"), title)
            }
        };
        push(&mut plans, kind, path, title, count);
        topic_blocks -= count;
        index += 1;
    }
    // Journals: each project's days in order, a day's second file `MM-DD-2.md`.
    let mut journal_blocks = journals;
    let mut days = vec![0usize; projects];
    let mut j = 0usize;
    let mut journal_paths = std::collections::HashSet::new();
    while journal_blocks > 0 {
        let count = rng.range(4, 20).min(journal_blocks);
        let p = j % projects;
        days[p] += rng.range(0, 2);
        let (y, m, d) = date(days[p] % (28 * 12 * 5));
        let (project, slug) = &project_names[p];
        let mut path = format!("projects/{slug}/journal/{y}/{m:02}-{d:02}.md");
        let mut part = 2;
        while !journal_paths.insert(path.clone()) {
            path = format!("projects/{slug}/journal/{y}/{m:02}-{d:02}-{part}.md");
            part += 1;
        }
        let title = format!("{project} journal {y}-{m:02}-{d:02}");
        push(&mut plans, Kind::Journal, path, title, count);
        journal_blocks -= count;
        j += 1;
    }
    // Sessions: each file cites one to three, spread evenly over the tree.
    let files = plans.len();
    for (i, plan) in plans.iter_mut().enumerate() {
        let base = i * sessions / files.max(1);
        let many = if plan.kind == Kind::Journal { 1 } else { rng.range(1, 3) };
        plan.sessions = (0..many).map(|k| (base + k * 7) % sessions).collect();
    }
    plans
}

/// Writes a workspace of `spec.blocks` blocks under `root` (`root/topics`, `root/sources`).
/// `root` must not hold a `topics/` or `sources/` yet: nothing is ever overwritten.
pub(crate) fn generate(root: &Path, spec: &Spec) -> io::Result<Summary> {
    for dir in ["topics", "sources"] {
        if root.join(dir).exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists already", root.join(dir).display()),
            ));
        }
    }
    let records = spec.blocks.div_ceil(BLOCKS_PER_RECORD).max(RECORDS_PER_SESSION);
    let session_count = records.div_ceil(RECORDS_PER_SESSION);
    let plans = plan(spec, session_count);
    let mut summary = Summary {
        blocks: spec.blocks,
        topic_files: plans.len(),
        archives: session_count,
        records: session_count * RECORDS_PER_SESSION,
        links: 0,
        topic_bytes: 0,
        source_bytes: 0,
        samples: Vec::new(),
    };

    // Sessions and their archives.
    let mut rng = Rng::new(spec.seed, 2);
    let mut sessions: Vec<Session> = Vec::with_capacity(session_count);
    let v2 = root.join("sources/openprogram/_v2");
    std::fs::create_dir_all(&v2)?;
    let mut text = String::new();
    for s in 0..session_count {
        let thread = format!("local_{:012x}", permute(s as u64, spec.seed ^ 0x5E55, 48));
        let day = date(s * (28 * 12 * 5) / session_count.max(1));
        let mut ids = Vec::with_capacity(RECORDS_PER_SESSION);
        text.clear();
        text.push_str("<!-- openprogram-source-archive:v2 -->\n");
        for r in 0..RECORDS_PER_SESSION {
            let global = s * RECORDS_PER_SESSION + r;
            let id =
                format!("openprogram/{thread}/msg_{:016x}", permute(global as u64, spec.seed, 64));
            let owner = r % 2 == 0;
            let minutes = 9 * 60 + 3 * r;
            let _ = write!(
                text,
                "\n<a id=\"{}\"></a>\n<!-- source-id:{id} -->\n{}<!-- source-meta:{} -->\n\
                 <!-- record-lines:1 -->\n[{}-{:02}-{:02}T{:02}:{:02}:00+00:00] {}: ",
                anchor(&id),
                if owner { "<!-- speaker-id:owner%2Flocal -->\n" } else { "" },
                if owner { OWNER_META } else { ASSISTANT_META },
                day.0,
                day.1,
                day.2,
                minutes / 60,
                minutes % 60,
                if owner { "Owner (owner/local)" } else { "assistant" },
            );
            sentences(&mut rng, &mut text, 3);
            text.push('\n');
            ids.push(id);
        }
        std::fs::write(v2.join(format!("{thread}.md")), &text)?;
        summary.source_bytes += text.len() as u64;
        sessions.push(Session { thread, day, records: ids });
    }

    // Link targets: blocks of people and projects (never journals or the core).
    let targets: Vec<usize> = plans
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.kind, Kind::Person | Kind::Project))
        .map(|(i, _)| i)
        .collect();

    // Topic files.
    let mut rng = Rng::new(spec.seed, 3);
    let topics = root.join("topics");
    let every = (plans.len() / 48).max(1);
    for (f, plan) in plans.iter().enumerate() {
        let dir = parent(&plan.path);
        let up = "../".repeat(plan.path.matches('/').count() + 1);
        text.clear();
        let _ = writeln!(text, "# {}", plan.title);
        let mut section_left = 0usize;
        let mut section = 0usize;
        for b in plan.first..plan.first + plan.count {
            if plan.kind != Kind::Journal && section_left == 0 {
                section += 1;
                section_left = rng.range(3, 7);
                let _ = write!(text, "\n## ");
                let (heading, _) = name(&mut rng, section);
                let _ = writeln!(text, "{heading} {section}");
            }
            section_left = section_left.saturating_sub(1);
            let session = &sessions[plan.sessions[rng.range(0, plan.sessions.len() - 1)]];
            let cited: Vec<&String> = if rng.chance(15) {
                let a = rng.range(0, RECORDS_PER_SESSION - 2);
                vec![&session.records[a], &session.records[a + 1]]
            } else {
                vec![&session.records[rng.range(0, RECORDS_PER_SESSION / 2 - 1) * 2]]
            };
            text.push('\n');
            if plan.kind == Kind::Journal {
                text.push_str(if rng.chance(50) { "Owner said: " } else { "Owner asked: " });
            }
            sentences(&mut rng, &mut text, 2);
            let linking = plan.kind != Kind::Core && rng.chance(4) && !targets.is_empty();
            if linking {
                let target = &plans[targets[rng.range(0, targets.len() - 1)]];
                let t = target.first + rng.range(0, target.count - 1);
                if target.path != plan.path {
                    let (label, _) = name(&mut rng, t);
                    let _ = write!(
                        text,
                        " See [{label}]({}#^{}).",
                        relpath(&target.path, dir),
                        block_id(t, spec.seed)
                    );
                    summary.links += 1;
                }
            }
            let evidence = evidence_id(b, spec.seed);
            let id = block_id(b, spec.seed);
            let _ = writeln!(text, "[^{evidence}] ^{id}");
            let (y, m, d) = session.day;
            let _ = write!(text, "\n[^{evidence}]: Time: `{y}-{m:02}-{d:02}`; Sources: ");
            for (i, source) in cited.iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                let mut label = String::new();
                word(&mut rng, &mut label);
                label.push(' ');
                word(&mut rng, &mut label);
                let _ = write!(
                    text,
                    "{sep}[{label}]({up}sources/openprogram/_v2/{}.md#{})",
                    session.thread,
                    anchor(source)
                );
            }
            text.push('\n');
            if f % every == 0 && b == plan.first + plan.count / 2 {
                summary.samples.push(Sample {
                    block_id: id,
                    path: format!("topics/{}", plan.path),
                    source_ref: cited[0].clone(),
                    when: format!("{y}-{m:02}-{d:02}"),
                });
            }
        }
        let path = topics.join(&plan.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &text)?;
        summary.topic_bytes += text.len() as u64;
    }
    Ok(summary)
}
