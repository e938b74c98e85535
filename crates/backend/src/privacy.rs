//! What the doors redacted, said without the values (see `scriptorium_redact`): the running
//! totals by rule in `.scriptorium/redactions.json`, which `status` shows, and the redaction of
//! session nodes as they enter the store.
//!
//! Key decision: a count is all that is ever kept of a redaction. The totals file holds rule
//! ids and numbers; the redacted value, its hash or a prefix of it appear nowhere.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use scriptorium_redact::{Counts, Redactor};
use scriptorium_session_dag::Node;
use scriptorium_workspace_fs::{Durability, RealFs};
use serde::{Deserialize, Serialize};

/// The file (in `.scriptorium/`) holding the running totals.
const TOTALS_FILE: &str = "redactions.json";

/// Redactions since the workspace was created, by rule (`status`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RedactionTotals {
    /// Every redaction, summed.
    pub total: usize,
    /// By rule id (`private` for `<private>` spans).
    pub by_rule: BTreeMap<String, usize>,
    /// When the last one was made (RFC 3339), if ever.
    pub last_at: Option<String>,
}

/// Redacts the content of `nodes` in place (every node, whatever its role: a tool result can
/// echo a key as well as a prompt can) and returns what it redacted.
pub fn redact_nodes(redactor: &Redactor, nodes: &mut [Node]) -> Counts {
    let mut counts = Counts::default();
    for node in nodes {
        let redaction = redactor.redact(&node.content);
        if !redaction.counts.is_empty() {
            counts.add(&redaction.counts);
            node.content = redaction.text.into_owned();
        }
    }
    counts
}

/// Redacts `text` when there is one, adding to `counts`.
pub fn redact_opt(redactor: &Redactor, text: &mut Option<String>, counts: &mut Counts) {
    if let Some(value) = text {
        let redaction = redactor.redact(value);
        if !redaction.counts.is_empty() {
            counts.add(&redaction.counts);
            *value = redaction.text.into_owned();
        }
    }
}

/// Adds `counts` to the totals of the workspace at `memory_root` (best effort: a count that
/// cannot be saved is logged, the redaction itself has happened). Serialized by a `flock`, so
/// parallel hooks lose no count.
pub fn record(memory_root: &Path, counts: &Counts) {
    if counts.is_empty() {
        return;
    }
    if let Err(error) = add_to_totals(memory_root, counts) {
        tracing::warn!(%error, "the redaction counts could not be saved");
    }
}

fn add_to_totals(memory_root: &Path, counts: &Counts) -> std::io::Result<()> {
    let runtime = memory_root.join(".scriptorium");
    if !runtime.is_dir() {
        return Ok(());
    }
    let lock = scriptorium_workspace_fs::open_lock_file(&runtime.join("redactions.lock"))?;
    lock.lock()?;
    let path = runtime.join(TOTALS_FILE);
    let mut totals = read_totals(&path);
    for (rule, n) in &counts.0 {
        *totals.by_rule.entry(rule.clone()).or_default() += n;
    }
    totals.total = totals.by_rule.values().sum();
    totals.last_at =
        crate::memory::wall_clock().format(&time::format_description::well_known::Rfc3339).ok();
    let bytes = serde_json::to_vec(&totals).map_err(std::io::Error::other)?;
    let temp = runtime.join("tmp-redactions.json");
    scriptorium_workspace_fs::write_atomic(&RealFs, &temp, &path, &bytes, 0o600, Durability::Cache)
        .map_err(std::io::Error::other)
}

fn read_totals(path: &Path) -> RedactionTotals {
    std::fs::read(path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

/// The totals of the workspace at `memory_root` (zero when none was recorded).
pub fn totals(memory_root: &Path) -> RedactionTotals {
    read_totals(&memory_root.join(".scriptorium").join(TOTALS_FILE))
}

/// `counts` in words for a log line or a person: `3 (github-pat 2, private 1)`; never a value.
pub fn describe(counts: &Counts) -> String {
    let rules: Vec<String> = counts.0.iter().map(|(rule, n)| format!("{rule} {n}")).collect();
    format!("{} ({})", counts.total(), rules.join(", "))
}
