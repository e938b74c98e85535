//! The LoCoMo dev split as the writer evaluation reads it: conversations cut to the slice,
//! written out as generic JSONL transcripts (`scriptorium import jsonl`), the QA items whose
//! evidence lies inside the slice, and the recorded script of the `scripted` harness writer.
//!
//! The reading follows the recall harness (`crates/search/tests/recall/harness.rs`), so both
//! see the same turns: each LoCoMo session is one session (`<sample>-s<n>`, as an agent's
//! sessions are), a turn's text gets ` [shares a photo: <caption>]` when it shares one, the
//! session's `date_time` is the time of its turns, and an evidence entry is split at `;`, `,`
//! and spaces. That harness archives records directly through the format crate; this one goes
//! through the importer and the writer, as a user's transcripts do, so it keeps its own copy of
//! the few lines of reading (xtask depends on no crate of ours).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// The provider part of every writer source ID (`crates/writer`'s `source_id`).
const PROVIDER: &str = "openprogram";

/// One LoCoMo turn.
#[derive(Clone, Debug)]
pub(crate) struct Turn {
    /// `D<session>:<n>`, the node ID the transcript gives it.
    pub(crate) dia_id: String,
    /// Who says it.
    pub(crate) speaker: String,
    /// What is said (with the shared photo's caption).
    pub(crate) text: String,
}

/// One LoCoMo session: one imported session.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    /// `<sample>-s<n>`.
    pub(crate) id: String,
    /// RFC 3339 time of its turns, when LoCoMo's `date_time` reads.
    pub(crate) time: Option<String>,
    /// Its turns, in order.
    pub(crate) turns: Vec<Turn>,
}

/// One QA item with evidence.
#[derive(Clone, Debug)]
pub(crate) struct Question {
    /// The question, asked as the search query.
    pub(crate) text: String,
    /// The writer source IDs of its evidence turns (those that exist in the data).
    pub(crate) evidence: Vec<String>,
}

/// One conversation, cut to the slice.
#[derive(Clone, Debug)]
pub(crate) struct Conversation {
    /// `conv-26`, …
    pub(crate) sample_id: String,
    /// Its sessions in order (only those with turns in the slice).
    pub(crate) sessions: Vec<Session>,
    /// The answerable questions (categories 1–4) whose evidence lies inside the slice.
    pub(crate) questions: Vec<Question>,
    /// Answerable questions left out: no evidence turn in the data, or evidence outside the
    /// slice.
    pub(crate) questions_skipped: usize,
}

impl Conversation {
    /// Turns in the slice.
    pub(crate) fn turns(&self) -> usize {
        self.sessions.iter().map(|s| s.turns.len()).sum()
    }
}

/// Which part of the split is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Slice {
    /// The first N conversations (all when `None`).
    pub(crate) conversations: Option<usize>,
    /// The first N sessions of each conversation (all when `None`).
    pub(crate) sessions: Option<usize>,
}

/// The writer's source ID of a turn (`openprogram/<session>/<node>`): session and node IDs of
/// LoCoMo hold no character the writer percent-encodes.
pub(crate) fn source_id(session: &str, dia_id: &str) -> String {
    format!("{PROVIDER}/{session}/{dia_id}")
}

/// Reads `<data>/locomo/locomo-dev.json` and cuts it to `slice`.
pub(crate) fn load(data: &Path, slice: Slice) -> anyhow::Result<Vec<Conversation>> {
    let path = data.join("locomo").join("locomo-dev.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let samples: Vec<Value> =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let take = slice.conversations.unwrap_or(samples.len());
    samples.iter().take(take).map(|sample| conversation(sample, slice.sessions)).collect()
}

fn conversation(sample: &Value, max_sessions: Option<usize>) -> anyhow::Result<Conversation> {
    let Some(sample_id) = sample["sample_id"].as_str() else {
        bail!("a LoCoMo sample without sample_id");
    };
    let conversation = &sample["conversation"];
    // Every turn of the data (for evidence that names a turn that does not exist) and the
    // session each belongs to.
    let mut all_turns: BTreeMap<String, String> = BTreeMap::new();
    let mut sessions = Vec::new();
    let max_sessions = max_sessions.unwrap_or(usize::MAX);
    let mut n = 1;
    while let Some(turns) = conversation[format!("session_{n}")].as_array() {
        let id = format!("{sample_id}-s{n}");
        let time = conversation[format!("session_{n}_date_time")]
            .as_str()
            .and_then(session_timestamp)
            .map(|t| format!("{t}Z"));
        let mut kept = Vec::new();
        for turn in turns {
            let dia_id = turn["dia_id"].as_str().unwrap_or("").to_owned();
            if dia_id.is_empty() {
                continue;
            }
            all_turns.insert(dia_id.clone(), id.clone());
            if n > max_sessions {
                continue;
            }
            let mut text = turn["text"].as_str().unwrap_or("").to_owned();
            if let Some(caption) = turn["blip_caption"].as_str() {
                text.push_str(&format!(" [shares a photo: {caption}]"));
            }
            let speaker = turn["speaker"].as_str().unwrap_or("unknown").to_owned();
            kept.push(Turn { dia_id, speaker, text });
        }
        if !kept.is_empty() {
            sessions.push(Session { id, time, turns: kept });
        }
        n += 1;
    }
    let imported: BTreeSet<&str> =
        sessions.iter().flat_map(|s| s.turns.iter().map(|t| t.dia_id.as_str())).collect();
    let mut questions = Vec::new();
    let mut questions_skipped = 0;
    for item in sample["qa"].as_array().into_iter().flatten() {
        let category = item["category"].as_u64().unwrap_or(0);
        if !(1..=4).contains(&category) {
            continue;
        }
        // Evidence naming no turn of the data (a few LoCoMo typos: `D`, `D:11:26`) is left
        // out; a question counts when it has evidence and all of it is inside the slice.
        let evidence: Vec<&str> = item["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .flat_map(|e| e.split([';', ',', ' ']))
            .map(str::trim)
            .filter(|e| all_turns.contains_key(*e))
            .collect();
        if evidence.is_empty() || !evidence.iter().all(|e| imported.contains(e)) {
            questions_skipped += 1;
            continue;
        }
        let mut evidence: Vec<String> =
            evidence.iter().map(|dia| source_id(&all_turns[*dia], dia)).collect();
        evidence.sort();
        evidence.dedup();
        let text = item["question"].as_str().unwrap_or("").trim().to_owned();
        if text.is_empty() {
            questions_skipped += 1;
            continue;
        }
        questions.push(Question { text, evidence });
    }
    Ok(Conversation { sample_id: sample_id.to_owned(), sessions, questions, questions_skipped })
}

/// `1:56 pm on 8 May, 2023` → `2023-05-08T13:56:00` (as the recall harness reads it).
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
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let prefix = parts.next()?.get(..3)?;
    let month = MONTHS.iter().position(|m| *m == prefix)? + 1;
    let year: u32 = parts.next()?.parse().ok()?;
    if hour > 23 || minute > 59 || !(1..=31).contains(&day) {
        return None;
    }
    Some(format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:00"))
}

/// The conversation as generic JSONL (one line per turn, see the importer's module docs):
/// every turn a `user` message of its speaker (`locomo/<name>`), the two people being equals,
/// each session a chain from its first turn.
pub(crate) fn transcript(conversation: &Conversation) -> String {
    let mut out = String::new();
    for session in &conversation.sessions {
        let mut parent: Option<&str> = None;
        for turn in &session.turns {
            let line = json!({
                "id": turn.dia_id,
                "parent": parent,
                "role": "user",
                "content": turn.text,
                "created_at": session.time,
                "speaker": {"id": speaker_id(&turn.speaker), "display": turn.speaker},
                "session": session.id,
            });
            out.push_str(&line.to_string());
            out.push('\n');
            parent = Some(&turn.dia_id);
        }
    }
    out
}

fn speaker_id(name: &str) -> String {
    format!("locomo/{}", slug(name))
}

/// Lower-case letters and digits, other runs as one `-`.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() { "unknown".to_owned() } else { out.to_owned() }
}

/// What the harness script of one session does (see [`harness_script`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Files every turn, cited, in one `memory_changes` call.
    Clean,
    /// First writes an uncited paragraph (rejected), then files the turns in the repair run.
    RepairedOnce,
    /// Writes an uncited paragraph in the write run and again in the repair run: the batch is
    /// rejected (`COMMIT_REJECTED`) and its turns stay pending.
    Rejected,
}

impl Plan {
    /// The plan of the session at `index` (0-based, in writing order): the second session is
    /// repaired once and the third rejected, so one run of three sessions or more exercises
    /// every batch outcome; all others are clean.
    pub(crate) fn of(index: usize) -> Plan {
        match index {
            1 => Plan::RepairedOnce,
            2 => Plan::Rejected,
            _ => Plan::Clean,
        }
    }
}

/// The recorded script of the `scripted` harness writer for one session (see the
/// `writer_eval` module docs): each turn becomes one cited block `<Speaker>: <text>` in
/// `topics/people/<speaker>.md`; the first session of each conversation also pins its first
/// turn, verbatim, to `topics/core.md` (a known core and a known near-duplicate pair) and files
/// one planted tool-chatter paragraph (a known noise block); `plan` adds the failures.
pub(crate) fn harness_script(session: &Session, first_of_conversation: bool, plan: Plan) -> Value {
    let day = session.time.as_deref().and_then(|t| t.get(..10));
    let record = |topic: String, heading: &str, content: String, turn: &Turn| {
        json!({
            "op": "create_record",
            "content": content,
            "time": day,
            "sources": [{"source": source_id(&session.id, &turn.dia_id), "label": "turn"}],
            "destination": {"topic_path": topic, "headings": [heading], "position": "end"},
        })
    };
    // Only the turns the writer is given: an acknowledgement is no record.
    let turns: Vec<&Turn> = session.turns.iter().filter(|t| recorded(&t.text)).collect();
    let mut changes: Vec<Value> = turns
        .iter()
        .map(|turn| {
            let topic = format!("topics/people/{}.md", slug(&turn.speaker));
            let content = format!("{}: {}", turn.speaker, plain(&turn.text));
            record(topic, &turn.speaker, content, turn)
        })
        .collect();
    if first_of_conversation && let Some(first) = turns.first() {
        let content = format!("{}: {}", first.speaker, plain(&first.text));
        changes.push(record("topics/core.md".to_owned(), "Core", content, first));
        let topic = format!("topics/people/{}.md", slug(&first.speaker));
        let chatter = "Tool result: 1 passed in 0.01s".to_owned();
        changes.push(record(topic, &first.speaker, chatter, first));
    }
    let calls: Vec<Value> = changes
        .chunks(MAX_CHANGES)
        .map(|chunk| json!({"tool": "memory_changes", "arguments": {"changes": chunk}}))
        .collect();
    let commit = json!({"tool": "commit_edits"});
    let uncited = json!({"tool": "write", "arguments": {
        "path": "topics/people/uncited.md",
        "content": "# Uncited\n\nA paragraph citing a footnote it never defines.[^e1]\n",
    }});
    let mut steps = Vec::new();
    match plan {
        Plan::Clean => {}
        Plan::RepairedOnce => steps.extend([uncited.clone(), commit.clone()]),
        Plan::Rejected => {
            steps.extend([uncited.clone(), commit.clone(), uncited, commit]);
            return Value::Array(steps);
        }
    }
    steps.extend(calls);
    steps.push(commit);
    Value::Array(steps)
}

/// Acknowledgements that carry nothing to remember, as compared: lower-case letters and digits
/// only. The writer never sees such a turn (`crates/markers/src/clean.rs`, rule 5, holds the
/// list this copies), so a script citing one would be refused.
const ACKNOWLEDGEMENTS: &[&str] = &[
    "ok", "okay", "k", "kk", "yes", "y", "yep", "yeah", "yup", "no", "n", "nope", "thanks",
    "thankyou", "thx", "ty", "continue", "goon", "goahead", "proceed", "sure", "cool", "nice",
    "great", "perfect", "done", "next", "hi", "hello", "hey", "yo", "wow", "lgtm", "ls", "pwd",
    "clear", "exit", "quit",
];

/// Whether the writer records a turn of this text: not empty, not an acknowledgement.
pub(crate) fn recorded(text: &str) -> bool {
    let folded: String =
        text.chars().flat_map(char::to_lowercase).filter(|c| c.is_alphanumeric()).collect();
    !folded.is_empty() && !ACKNOWLEDGEMENTS.contains(&folded.as_str())
}

/// Operations per `memory_changes` call (the change API's limit).
const MAX_CHANGES: usize = 64;

/// `text` as one plain paragraph: whitespace collapsed, and what the topic parser reads as
/// citation, link or block syntax (brackets, `^`, backslashes, backticks, `<`) replaced.
fn plain(text: &str) -> String {
    let mapped: String = text
        .chars()
        .map(|c| match c {
            '[' => '(',
            ']' => ')',
            '^' | '\\' | '`' | '<' | '>' => ' ',
            c => c,
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_times_read_as_the_recall_harness_reads_them() {
        let t = |s: &str| session_timestamp(s);
        assert_eq!(t("1:56 pm on 8 May, 2023").as_deref(), Some("2023-05-08T13:56:00"));
        assert_eq!(t("12:09 am on 13 September, 2023").as_deref(), Some("2023-09-13T00:09:00"));
        assert_eq!(t("12:30 pm on 1 January, 2022").as_deref(), Some("2022-01-01T12:30:00"));
        assert_eq!(t("sometime in May"), None);
    }

    fn sample() -> Value {
        json!({
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ana", "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a dog."},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a cat"},
                ],
                "session_2_date_time": "2:00 pm on 9 May, 2023",
                "session_2": [
                    {"speaker": "Ana", "dia_id": "D2:1", "text": "The dog is called Rex."},
                ],
                "session_3_date_time": "2:00 pm on 10 May, 2023",
            },
            "qa": [
                {"question": "What did Ana adopt?", "evidence": ["D1:1"], "category": 1},
                {"question": "Dog's name?", "evidence": ["D2:1; D1:1"], "category": 4},
                {"question": "Typo", "evidence": ["D", "D:1:1"], "category": 2},
                {"question": "Adversarial", "evidence": ["D1:2"], "category": 5},
            ],
        })
    }

    #[test]
    fn a_slice_keeps_the_questions_whose_evidence_it_holds() {
        let whole = conversation(&sample(), None).unwrap();
        assert_eq!(whole.turns(), 3);
        assert_eq!(whole.sessions[0].time.as_deref(), Some("2023-05-08T13:56:00Z"));
        assert_eq!(whole.sessions[0].turns[1].text, "Look! [shares a photo: a cat]");
        let evidence: Vec<&Vec<String>> = whole.questions.iter().map(|q| &q.evidence).collect();
        assert_eq!(
            evidence,
            [
                &vec!["openprogram/conv-x-s1/D1:1".to_owned()],
                &vec!["openprogram/conv-x-s1/D1:1".to_owned(), "openprogram/conv-x-s2/D2:1".into()],
            ]
        );
        assert_eq!(whole.questions_skipped, 1, "the typo question");
        let cut = conversation(&sample(), Some(1)).unwrap();
        assert_eq!(cut.sessions.len(), 1);
        assert_eq!(cut.questions.len(), 1);
        assert_eq!(cut.questions_skipped, 2);
    }

    #[test]
    fn the_transcript_is_one_chain_per_session_of_user_turns() {
        let conversation = conversation(&sample(), None).unwrap();
        let text = transcript(&conversation);
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["parent"], Value::Null);
        assert_eq!(lines[1]["parent"], "D1:1");
        assert_eq!(lines[2]["parent"], Value::Null);
        assert_eq!(lines[2]["session"], "conv-x-s2");
        assert_eq!(lines[1]["speaker"], json!({"id": "locomo/bo", "display": "Bo"}));
        assert_eq!(lines[0]["role"], "user");
    }

    #[test]
    fn acknowledgements_are_no_records() {
        assert!(!recorded("Thanks!"));
        assert!(!recorded("  Thank you. "));
        assert!(!recorded("Wow!!"));
        assert!(!recorded("🎉"));
        assert!(recorded("Thanks! It helps me stay motivated."));
        assert!(recorded("Rex"));
    }

    #[test]
    fn the_harness_script_plants_its_known_cases() {
        let conversation = conversation(&sample(), None).unwrap();
        let session = &conversation.sessions[0];
        let clean = harness_script(session, true, Plan::Clean);
        let steps = clean.as_array().unwrap();
        assert_eq!(steps.len(), 2, "{clean:#}");
        let changes = steps[0]["arguments"]["changes"].as_array().unwrap();
        assert_eq!(changes.len(), 4, "two turns, the core pin, the planted chatter");
        assert_eq!(changes[1]["content"], "Bo: Look! (shares a photo: a cat)");
        assert_eq!(changes[2]["destination"]["topic_path"], "topics/core.md");
        assert_eq!(changes[2]["content"], changes[0]["content"]);
        let repaired = harness_script(session, false, Plan::RepairedOnce);
        let tools: Vec<&str> =
            repaired.as_array().unwrap().iter().map(|s| s["tool"].as_str().unwrap()).collect();
        assert_eq!(tools, ["write", "commit_edits", "memory_changes", "commit_edits"]);
        let rejected = harness_script(session, false, Plan::Rejected);
        let tools: Vec<&str> =
            rejected.as_array().unwrap().iter().map(|s| s["tool"].as_str().unwrap()).collect();
        assert_eq!(tools, ["write", "commit_edits", "write", "commit_edits"]);
    }
}
