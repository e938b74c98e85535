//! Precision of the built-in rules on real data in `SCRIPTORIUM_TEST_DATA`: every message of
//! every real transcript (Claude Code, Codex and pi, read through the importers, as `import`
//! will redact them), every JSON string of every line of those transcripts (tool inputs and
//! outputs, metadata: what the importers leave out too), and every string of LoCoMo are
//! redacted, and the complete list of redactions (file, rule, the text taken out, shown as it
//! is: these are public third-party test data) is a reviewed snapshot. Each entry must be a
//! secret or a credential-shaped value; a false positive is fixed in `rules/scriptorium.toml`,
//! never by editing gitleaks' file. Redacting each text twice must change nothing more.
//! Reported as not run when the data is absent, never as passed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use scriptorium_redact::Redactor;
use scriptorium_session_dag::import;
use scriptorium_testkit::{Failed, data_trial, fail};

/// Where the transcripts are: every real one, and claude-code-log's synthetic ones.
fn transcript_dirs() -> Vec<&'static str> {
    let mut dirs = scriptorium_testkit::REAL_TRANSCRIPTS.to_vec();
    dirs.push("claude-code-log/synthetic");
    dirs
}

/// The texts of one section of the report, with the file each comes from.
type Texts = Vec<(String, String)>;

/// The messages (titles included) of every transcript, as the importers read them.
fn messages(data: &Path) -> Result<Texts, Failed> {
    let mut out = Vec::new();
    for dir in transcript_dirs() {
        let found = import::discover_auto(&[data.join(dir)]);
        if let Some(error) = found.errors.first() {
            return Err(fail(format!("{dir}: {error}")));
        }
        for unit in &found.units {
            let parsed = unit.parse().map_err(fail)?;
            let name = unit.first_path().strip_prefix(data).map_err(fail)?.display().to_string();
            for session in parsed.sessions {
                for title in session.title.iter().chain(&session.fallback_title) {
                    out.push((name.clone(), title.clone()));
                }
                for node in session.nodes {
                    out.push((name.clone(), node.content));
                }
            }
        }
    }
    Ok(out)
}

/// Every JSON string of every line of every transcript.
fn json_strings(data: &Path) -> Result<Texts, Failed> {
    let mut out = Vec::new();
    for dir in transcript_dirs() {
        for path in jsonl_files(&data.join(dir))? {
            let name = path.strip_prefix(data).map_err(fail)?.display().to_string();
            for line in std::fs::read_to_string(&path).map_err(fail)?.lines() {
                let Ok(json) = serde_json::from_str::<serde_json::Value>(line) else { continue };
                let mut strings = Vec::new();
                collect_strings(&json, &mut strings);
                out.extend(strings.into_iter().map(|s| (name.clone(), s)));
            }
        }
    }
    Ok(out)
}

/// Every string of LoCoMo (dialogue turns, questions, answers, summaries).
fn locomo(data: &Path) -> Result<Texts, Failed> {
    let file = "locomo/locomo-dev.json";
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join(file)).map_err(fail)?).map_err(fail)?;
    let mut strings = Vec::new();
    collect_strings(&json, &mut strings);
    Ok(strings.into_iter().map(|s| (file.to_owned(), s)).collect())
}

/// The `*.jsonl` files under `dir`, recursively, sorted.
fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>, Failed> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(fail)? {
        let path = entry.map_err(fail)?.path();
        if path.is_dir() {
            out.extend(jsonl_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn collect_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// One section of the report: a line per redaction (file, rule, the text taken out), then the
/// totals.
fn section(out: &mut String, title: &str, texts: &Texts) -> Result<(), Failed> {
    let redactor = Redactor::builtin();
    let mut by_rule: BTreeMap<String, usize> = BTreeMap::new();
    let mut bytes = 0;
    writeln!(out, "## {title}").map_err(fail)?;
    for (file, text) in texts {
        bytes += text.len();
        let (redaction, reviewed) = redactor.review(text);
        let again = redactor.redact(&redaction.text);
        if again.text != redaction.text || !again.counts.is_empty() {
            return Err(fail(format!("{file}: redacting twice changed the text")));
        }
        if reviewed.len() != redaction.counts.total() {
            return Err(fail(format!("{file}: {reviewed:?} but counts {:?}", redaction.counts)));
        }
        for r in reviewed {
            *by_rule.entry(r.rule.clone()).or_default() += 1;
            writeln!(out, "{file}\t{}\t{:?}", r.rule, r.text).map_err(fail)?;
        }
    }
    let total: usize = by_rule.values().sum();
    writeln!(out, "{} texts, {bytes} bytes, {total} redactions {by_rule:?}\n", texts.len())
        .map_err(fail)?;
    Ok(())
}

fn report(data: &Path) -> Result<String, Failed> {
    let mut out = String::new();
    section(&mut out, "transcript messages, as the importers read them", &messages(data)?)?;
    section(&mut out, "every JSON string of every transcript line", &json_strings(data)?)?;
    section(&mut out, "LoCoMo, every string", &locomo(data)?)?;
    Ok(out)
}

fn main() -> std::process::ExitCode {
    scriptorium_testkit::run(vec![data_trial("precision::real_data", |data| {
        let report = report(data)?;
        insta::assert_snapshot!("precision_real_data", report);
        Ok(())
    })])
}
