//! The cleaning rules (`scriptorium_markers::clean`) over every real transcript in
//! `SCRIPTORIUM_TEST_DATA`: how many messages were records before the rules and after, and what
//! each rule dropped or stripped, as a reviewed snapshot. Reported as not run when the data is
//! absent, never as passed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use scriptorium_markers::{SIDECHAIN_KEY, record_text};
use scriptorium_session_dag::import;
use scriptorium_session_dag::{EmbeddedStore, Node, NodeId, NodeKind, Role, SessionStore};
use scriptorium_testkit::{Failed, data_trial, fail};

/// A message as it was a record before the rules: a user or assistant message, not blank.
fn was_record(node: &Node) -> bool {
    node.kind == NodeKind::Message
        && matches!(node.role, Role::User | Role::Assistant)
        && !node.content.trim().is_empty()
}

/// One line of the report: the text, on one line, cut.
fn line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = flat.replace('\u{1b}', "␛");
    let cut: String = flat.chars().take(90).collect();
    if cut.len() < flat.len() { format!("{cut}…") } else { cut }
}

fn report(data: &Path) -> Result<String, Failed> {
    let mut out = String::new();
    let (mut before, mut after) = (0usize, 0usize);
    for dir in scriptorium_testkit::REAL_TRANSCRIPTS {
        let tmp = tempfile::tempdir().map_err(fail)?;
        let store = EmbeddedStore::open(tmp.path()).map_err(fail)?;
        let found = import::discover_auto(&[data.join(dir)]);
        let (units, errors) = (found.units, found.errors);
        if let Some(error) = errors.first() {
            return Err(fail(format!("{dir}: {error}")));
        }
        for unit in &units {
            import::import_unit(&store, unit).map_err(fail)?;
        }
        let mut nodes: BTreeMap<(String, NodeId), Node> = BTreeMap::new();
        for session in store
            .list_sessions(scriptorium_session_dag::Page { offset: 0, limit: usize::MAX })
            .map_err(fail)?
        {
            for tip in store.tips(&session.id).map_err(fail)? {
                for node in store.branch(&session.id, Some(&tip)).map_err(fail)? {
                    nodes.insert((session.id.0.clone(), node.id.clone()), node);
                }
            }
        }
        let old: Vec<&Node> = nodes.values().filter(|n| was_record(n)).collect();
        let kept = old.iter().filter(|n| record_text(n).is_some()).count();
        before += old.len();
        after += kept;
        writeln!(out, "## {dir}: {} records before, {kept} after", old.len()).map_err(fail)?;
        for node in &old {
            let role = if node.role == Role::User { "user" } else { "assistant" };
            let sidechain = node.metadata.get(SIDECHAIN_KEY).is_some_and(|v| v == "true");
            let role = if sidechain { format!("sub-agent {role}") } else { role.to_owned() };
            match record_text(node) {
                None => writeln!(out, "- dropped {role}: {}", line(&node.content)),
                Some(text) if text != node.content.trim() => {
                    writeln!(out, "- stripped {role}: {} ⇒ {}", line(&node.content), line(&text))
                }
                Some(_) => Ok(()),
            }
            .map_err(fail)?;
        }
    }
    writeln!(out, "\ntotal: {before} records before, {after} after").map_err(fail)?;
    Ok(out)
}

fn main() -> std::process::ExitCode {
    scriptorium_testkit::run(vec![data_trial("clean::real_transcripts", |data| {
        let report = report(data)?;
        insta::assert_snapshot!("real_transcripts", report);
        Ok(())
    })])
}
