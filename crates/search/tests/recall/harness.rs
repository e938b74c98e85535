//! The LoCoMo recall harness, shared by `examples/recall.rs` (release, prints the figures) and
//! the data suite (asserts floors): import the dev conversations' turns as v2 source records
//! (each LoCoMo session one archived session, as an agent's sessions are), run every QA
//! question, and measure recall@k of the evidence turns and the share of negative queries that
//! return nothing.

use std::collections::BTreeMap;
use std::path::Path;

use scriptorium_search::{Index, Query};
use scriptorium_topics_format::source::{ArchiveRecord, plan_append};
use serde_json::Value;

/// The negative set: questions on subjects absent from the conversations.
pub(crate) const NEGATIVE: &str = include_str!("negative.txt");
/// Questions about the conversations' people asking for facts absent from them (reported).
pub(crate) const ABSENT: &str = include_str!("absent.txt");

/// The figures of one run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Figures {
    /// The relevance floor used.
    pub(crate) min_coverage: f32,
    /// How many hits each question asked for (the @10 figures need 10).
    pub(crate) depth: usize,
    /// Answerable questions with evidence (categories 1–4).
    pub(crate) questions: usize,
    /// Share with any evidence turn in the top 5.
    pub(crate) recall_at_5: f64,
    /// Share with any evidence turn in the top 10.
    pub(crate) recall_at_10: f64,
    /// Share with every evidence turn in the top 5.
    pub(crate) strict_at_5: f64,
    /// Share with every evidence turn in the top 10.
    pub(crate) strict_at_10: f64,
    /// Negative queries run.
    pub(crate) negatives: usize,
    /// Share of negative queries returning nothing.
    pub(crate) negative_empty: f64,
    /// Absent-fact questions run (`absent.txt`).
    pub(crate) absent: usize,
    /// Share of absent-fact questions returning nothing.
    pub(crate) absent_empty: f64,
    /// Adversarial (category 5) questions run.
    pub(crate) adversarial: usize,
    /// Share of adversarial questions returning nothing.
    pub(crate) adversarial_empty: f64,
}

/// A prepared workspace with every conversation archived.
pub(crate) struct Locomo {
    _dir: tempfile::TempDir,
    /// The index (synced).
    pub(crate) index: Index,
    /// (conversation, question, evidence source ids, category).
    pub(crate) qa: Vec<(String, Vec<String>, u64)>,
}

/// `1:56 pm on 8 May, 2023` → `2023-05-08T13:56:00`.
pub(crate) fn session_timestamp(text: &str) -> Option<String> {
    let (time, date) = text.split_once(" on ")?;
    let (clock, meridiem) = time.trim().split_once(' ')?;
    let (hour, minute) = clock.split_once(':')?;
    let mut hour: u32 = hour.parse().ok()?;
    let minute: u32 = minute.parse().ok()?;
    match meridiem.to_ascii_lowercase().as_str() {
        "pm" if hour != 12 => hour += 12,
        "am" if hour == 12 => hour = 0,
        _ => {}
    }
    let mut parts = date.trim().split([' ', ',']).filter(|p| !p.is_empty());
    let day: u32 = parts.next()?.parse().ok()?;
    let month = match parts.next()?.get(..3)? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u32 = parts.next()?.parse().ok()?;
    Some(format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:00"))
}

/// Imports `locomo-dev.json` (under `data/locomo/`) into a fresh workspace and indexes it.
pub(crate) fn prepare(data: &Path) -> Locomo {
    let dir = tempfile::tempdir().expect("a temp dir");
    let qa = archive_into(data, dir.path());
    std::fs::create_dir_all(dir.path().join("topics")).expect("create topics/");
    let mut index = Index::open(dir.path()).expect("open the index");
    index.sync("locomo", None).expect("index LoCoMo");
    Locomo { _dir: dir, index, qa }
}

/// Archives every LoCoMo dev session under `<memory>/sources/` and returns the QA items.
pub(crate) fn archive_into(data: &Path, memory: &Path) -> Vec<(String, Vec<String>, u64)> {
    let json = std::fs::read_to_string(data.join("locomo").join("locomo-dev.json"))
        .expect("locomo-dev.json is readable");
    let samples: Vec<Value> = serde_json::from_str(&json).expect("locomo-dev.json is JSON");
    let mut qa = Vec::new();
    for sample in &samples {
        let sample_id = sample["sample_id"].as_str().expect("sample_id");
        let conversation = &sample["conversation"];
        let mut session = 1;
        while let Some(turns) = conversation[format!("session_{session}")].as_array() {
            let timestamp = conversation[format!("session_{session}_date_time")]
                .as_str()
                .and_then(session_timestamp);
            let thread = format!("{sample_id}-s{session}");
            let mut records = Vec::new();
            for turn in turns {
                let speaker = turn["speaker"].as_str().unwrap_or("unknown");
                let dia_id = turn["dia_id"].as_str().unwrap_or("");
                let mut text = turn["text"].as_str().unwrap_or("").to_owned();
                if let Some(caption) = turn["blip_caption"].as_str() {
                    text.push_str(&format!(" [shares a photo: {caption}]"));
                }
                let ordinal = records.len() as u64;
                let mut record =
                    ArchiveRecord::new("locomo", &thread, dia_id, ordinal, "user", text);
                record.timestamp = timestamp.clone();
                record.speaker_id = Some(speaker.to_owned());
                record.speaker_display = Some(speaker.to_owned());
                records.push(record);
            }
            let plan = plan_append(&records, &BTreeMap::new()).expect("LoCoMo turns archive");
            for write in plan.writes {
                let path = memory.join(&write.rel_path);
                std::fs::create_dir_all(path.parent().expect("archive paths have a parent"))
                    .expect("create the archive directory");
                std::fs::write(path, write.new_text).expect("write the archive");
            }
            session += 1;
        }
        for item in sample["qa"].as_array().into_iter().flatten() {
            let question = item["question"].as_str().unwrap_or("").to_owned();
            let category = item["category"].as_u64().unwrap_or(0);
            let evidence = item["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .flat_map(|e| {
                    e.split([';', ',', ' '])
                        .map(str::trim)
                        .filter(|e| !e.is_empty())
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                })
                .map(|dia| {
                    // `D<session>:<turn>` is archived in the session's own thread.
                    let session = dia.trim_start_matches('D').split(':').next().unwrap_or("");
                    format!("locomo/{sample_id}-s{session}/{dia}")
                })
                .collect::<Vec<_>>();
            qa.push((question, evidence, category));
        }
    }
    qa
}

fn share(count: usize, total: usize) -> f64 {
    if total == 0 { 0.0 } else { count as f64 / total as f64 }
}

/// Runs every question with the floor `min_coverage` through the library.
pub(crate) fn measure(locomo: &mut Locomo, min_coverage: f32) -> Figures {
    let index = &mut locomo.index;
    measure_with(&locomo.qa, min_coverage, 10, |text| {
        let mut query = Query::new(text);
        query.top_k = 10;
        query.min_coverage = min_coverage;
        index
            .search("locomo", &query)
            .expect("search")
            .into_iter()
            .map(|h| std::iter::once(h.id).chain(h.collapsed).collect())
            .collect()
    })
}

/// Runs every question through `search`, which returns, per hit, its ID and the IDs it stands
/// for ([`scriptorium_search::Hit::collapsed`]: a record with the same text counts as found),
/// at most `depth` hits (5 or 10: the @10 figures need 10).
pub(crate) fn measure_with(
    qa: &[(String, Vec<String>, u64)],
    min_coverage: f32,
    depth: usize,
    mut search: impl FnMut(&str) -> Vec<Vec<String>>,
) -> Figures {
    let mut figures = Figures { min_coverage, depth, ..Figures::default() };
    let (mut at5, mut at10, mut strict5, mut strict10) = (0, 0, 0, 0);
    let (mut adversarial_empty, mut negative_empty) = (0, 0);
    for (question, evidence, category) in qa {
        let hits = search(question);
        if *category == 5 {
            figures.adversarial += 1;
            adversarial_empty += usize::from(hits.is_empty());
            continue;
        }
        if evidence.is_empty() {
            continue;
        }
        figures.questions += 1;
        let within = |k: usize| {
            let mut found: Vec<&String> =
                hits.iter().take(k).flatten().filter(|id| evidence.contains(id)).collect();
            found.sort();
            found.dedup();
            found.len()
        };
        let distinct = {
            let mut e = evidence.clone();
            e.sort();
            e.dedup();
            e.len()
        };
        at5 += usize::from(within(5) > 0);
        at10 += usize::from(within(10) > 0);
        strict5 += usize::from(within(5) >= distinct);
        strict10 += usize::from(within(10) >= distinct);
    }
    let questions = |text: &'static str| {
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
    };
    for line in questions(NEGATIVE) {
        figures.negatives += 1;
        negative_empty += usize::from(search(line).is_empty());
    }
    let mut absent_empty = 0;
    for line in questions(ABSENT) {
        figures.absent += 1;
        absent_empty += usize::from(search(line).is_empty());
    }
    figures.absent_empty = share(absent_empty, figures.absent);
    figures.recall_at_5 = share(at5, figures.questions);
    figures.recall_at_10 = share(at10, figures.questions);
    figures.strict_at_5 = share(strict5, figures.questions);
    figures.strict_at_10 = share(strict10, figures.questions);
    figures.negative_empty = share(negative_empty, figures.negatives);
    figures.adversarial_empty = share(adversarial_empty, figures.adversarial);
    figures
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = |share: f64| format!("{:.1}%", share * 100.0);
        let deep = |share: f64| if self.depth >= 10 { pct(share) } else { "-".to_owned() };
        write!(
            f,
            "floor {:.2}: recall_any@5 {} recall_any@10 {} recall_all@5 {} recall_all@10 {} \
             over {} questions; unrelated empty {} of {}; absent facts empty {} of {}; \
             adversarial empty {} of {}",
            self.min_coverage,
            pct(self.recall_at_5),
            deep(self.recall_at_10),
            pct(self.strict_at_5),
            deep(self.strict_at_10),
            self.questions,
            pct(self.negative_empty),
            self.negatives,
            pct(self.absent_empty),
            self.absent,
            pct(self.adversarial_empty),
            self.adversarial,
        )
    }
}
