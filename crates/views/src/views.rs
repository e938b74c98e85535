//! `timeline/`, `recent_events.jsonl` and `relations.json` from parsed units, byte for byte as
//! the Python implementation writes them (see `docs/format.md#derived-views`), and the stable
//! creation order (see `docs/format.md#creation-order`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use scriptorium_topics_format::Unit;
use scriptorium_topics_format::topic::is_valid_temporal;

use crate::paths::{is_py_space, normalize, relative, topic_dir};
use crate::pyjson;

/// Creation numbers by memory ID: the order the transaction engine keeps in `runtime.json`
/// (it numbers every new ID as it installs it).
pub trait Numbering {
    /// The creation number of `id`, if it has one.
    fn number(&self, id: &str) -> Option<u64>;
    /// One more than the largest number (0 when there is none).
    fn next_number(&self) -> u64;
}

impl<S: std::hash::BuildHasher> Numbering for HashMap<String, u64, S> {
    fn number(&self, id: &str) -> Option<u64> {
        self.get(id).copied()
    }
    fn next_number(&self) -> u64 {
        self.values().max().map_or(0, |max| max + 1)
    }
}

impl Numbering for BTreeMap<String, u64> {
    fn number(&self, id: &str) -> Option<u64> {
        self.get(id).copied()
    }
    fn next_number(&self) -> u64 {
        self.values().max().map_or(0, |max| max + 1)
    }
}

/// The default number of units in `recent_events.jsonl`.
pub const DEFAULT_RECENT_LIMIT: usize = 50;

/// The derived views of one topic tree, as bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Views {
    /// Workspace-relative path (`timeline/2024.md`, `timeline/2024/01.md`,
    /// `timeline/2024/01/01.md`) → file text. Exactly the files `timeline/` must hold.
    pub timeline: BTreeMap<String, String>,
    /// The `recent_events.jsonl` text (empty when there are no units or the limit is 0).
    pub recent_events: String,
    /// The `relations.json` text.
    pub relations: String,
}

/// Rebuilds the views from the units of a parsed tree (in tree order). Pure and deterministic.
///
/// `creation_order` is the engine's order ([`Numbering`]); an ID it lacks (a tree written by
/// hand) is numbered after the others in parse order, for this render only.
///
/// Block links to IDs that no unit has are listed as they are (the transaction's validation
/// rejects them before a rebuild; the Python code would raise here).
pub fn rebuild<'u>(
    units: impl Iterator<Item = &'u Unit> + Clone,
    creation_order: &dyn Numbering,
    recent_limit: usize,
) -> Views {
    Views {
        timeline: timeline(units.clone(), None),
        recent_events: recent_events(units.clone(), creation_order, recent_limit),
        relations: relations(units),
    }
}

/// Which views an install touches: the timeline files of every date a changed unit (before
/// and after) is filed under, and `relations.json` when a block appeared, disappeared or
/// changed its links. A unit of a changed file that renders the same timeline rows as before
/// (same ID, text, dates, sources and file) touches nothing. `recent_events.jsonl` is always
/// recomputed (one pass over the units).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Affected {
    /// The `when` values whose timeline files must be rendered again.
    pub whens: BTreeSet<String>,
    /// Whether `relations.json` must be rendered again.
    pub relations: bool,
}

/// Everything of a unit its timeline rows show (a unit that keeps it keeps its rows).
fn row_key(unit: &Unit) -> impl Eq + '_ {
    let evidence: Vec<_> =
        unit.evidence.iter().map(|e| (&e.quote, &e.when, &e.refs, &e.targets, &e.labels)).collect();
    (
        (&unit.content, &unit.when, &unit.topic_path),
        (&unit.refs, &unit.link_targets, &unit.labels),
        evidence,
    )
}

/// What changes between the units `before` and `after` of the files an install changed.
pub fn affected<'u>(
    before: impl Iterator<Item = &'u Unit>,
    after: impl Iterator<Item = &'u Unit>,
) -> Affected {
    let mut out = Affected::default();
    type Targets<'a> = Option<&'a [String]>;
    // Block ID → (unit before, unit after).
    let mut units: HashMap<&str, (Option<&Unit>, Option<&Unit>)> = HashMap::new();
    for unit in before {
        units.entry(&unit.memory_id).or_default().0 = Some(unit);
    }
    for unit in after {
        units.entry(&unit.memory_id).or_default().1 = Some(unit);
    }
    for (old, new) in units.values() {
        let same_rows = match (old, new) {
            (Some(old), Some(new)) => row_key(old) == row_key(new),
            _ => false,
        };
        if !same_rows {
            for unit in old.iter().chain(new) {
                out.whens.extend(whens_of(unit).map(str::to_owned));
            }
        }
        let targets = |unit: &Option<&'u Unit>| -> Targets<'u> {
            unit.map(|u| u.relation_targets.as_slice())
        };
        out.relations |= targets(old) != targets(new);
    }
    out
}

/// The views an install changes: the timeline files of `affected.whens` (`None`: no row is
/// filed there any more, remove the file), `recent_events.jsonl`, and `relations.json` when
/// `affected.relations`. `units` is the whole installed tree, in tree order; only its rows on
/// the affected dates are rendered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewsUpdate {
    /// Workspace-relative timeline path → its new text, or `None` to remove it.
    pub timeline: BTreeMap<String, Option<String>>,
    /// The `recent_events.jsonl` text.
    pub recent_events: String,
    /// The `relations.json` text, when it must be rewritten.
    pub relations: Option<String>,
}

/// [`rebuild`] of only what `affected` names (see [`ViewsUpdate`]). Equal, file for file, to
/// the same files of a full rebuild.
pub fn update<'u>(
    units: impl Iterator<Item = &'u Unit> + Clone,
    creation_order: &dyn Numbering,
    recent_limit: usize,
    affected: &Affected,
) -> ViewsUpdate {
    let rendered = timeline(units.clone(), Some(&affected.whens));
    let timeline = affected
        .whens
        .iter()
        .filter(|when| is_dated(when))
        .map(|when| {
            let path = timeline_path(when);
            let text = rendered.get(&path).cloned();
            (path, text)
        })
        .collect();
    ViewsUpdate {
        timeline,
        recent_events: recent_events(units.clone(), creation_order, recent_limit),
        relations: affected.relations.then(|| relations(units)),
    }
}

/// The `when` values a unit's timeline rows are filed under: those of its dated evidence, or
/// its own `when` when no evidence is dated.
fn whens_of(unit: &Unit) -> impl Iterator<Item = &str> {
    let mut dated: Vec<&str> =
        unit.evidence.iter().filter_map(|e| e.when.as_deref()).filter(|w| is_dated(w)).collect();
    if dated.is_empty()
        && let Some(when) = unit.when.as_deref().filter(|w| is_dated(w))
    {
        dated.push(when);
    }
    dated.into_iter()
}

/// `timeline/<YYYY>[/<MM>[/<DD>]].md` for a `when` value.
fn timeline_path(when: &str) -> String {
    let parts: Vec<&str> = when.split('-').collect();
    format!("timeline/{}.md", parts.join("/"))
}

/// `{"backlinks": {target: [sorted sources]}, "outbound": {id: [sorted unique targets]}}`,
/// keys sorted, one line, `\n`.
fn relations<'u>(units: impl Iterator<Item = &'u Unit>) -> String {
    let mut outbound: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for unit in units {
        // A later unit with the same ID replaces an earlier one, as a Python dict does.
        outbound
            .insert(&unit.memory_id, unit.relation_targets.iter().map(String::as_str).collect());
    }
    let mut backlinks: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (source, targets) in &outbound {
        for target in targets {
            backlinks.entry(target).or_default().push(source);
        }
    }
    let mut out = String::with_capacity(32 + 16 * outbound.len());
    out.push_str("{\"backlinks\": {");
    for (i, (target, sources)) in backlinks.iter_mut().enumerate() {
        sources.sort_unstable();
        if i > 0 {
            out.push_str(", ");
        }
        pyjson::string(&mut out, target);
        out.push_str(": ");
        pyjson::string_list(&mut out, sources.iter().copied());
    }
    out.push_str("}, \"outbound\": {");
    for (i, (source, targets)) in outbound.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        pyjson::string(&mut out, source);
        out.push_str(": ");
        pyjson::string_list(&mut out, targets.iter().copied());
    }
    out.push_str("}}\n");
    out
}

/// A real `YYYY`, `YYYY-MM` or `YYYY-MM-DD` value (not `undated`).
fn is_dated(value: &str) -> bool {
    value != "undated" && is_valid_temporal(value)
}

/// One timeline row before sorting.
struct Row<'a> {
    unit: &'a Unit,
    text: &'a str,
    refs: &'a [String],
    targets: &'a [String],
    labels: &'a [String],
}

fn timeline<'u>(
    units: impl Iterator<Item = &'u Unit>,
    only: Option<&BTreeSet<String>>,
) -> BTreeMap<String, String> {
    let mut grouped: HashMap<&'u str, Vec<Row<'u>>> = HashMap::new();
    let wanted = |when: &str| only.is_none_or(|whens| whens.contains(when));
    for unit in units {
        let mut dated =
            unit.evidence.iter().filter(|e| e.when.as_deref().is_some_and(is_dated)).peekable();
        if dated.peek().is_some() {
            for evidence in dated {
                let when = evidence.when.as_deref().unwrap_or_default();
                if !wanted(when) {
                    continue;
                }
                grouped.entry(when).or_default().push(Row {
                    unit,
                    text: &evidence.quote,
                    refs: &evidence.refs,
                    targets: &evidence.targets,
                    labels: &evidence.labels,
                });
            }
        } else if let Some(when) = unit.when.as_deref().filter(|w| is_dated(w) && wanted(w)) {
            grouped.entry(when).or_default().push(Row {
                unit,
                text: &unit.content,
                refs: &unit.refs,
                targets: &unit.link_targets,
                labels: &unit.labels,
            });
        }
    }
    grouped
        .into_iter()
        .map(|(when, mut rows)| {
            let parts: Vec<&str> = when.split('-').collect();
            let path = timeline_path(when);
            let mut dir: Vec<&str> = vec!["timeline"];
            dir.extend(&parts[..parts.len() - 1]);
            // Stable: ties keep parse order, like Python's `sorted`.
            rows.sort_by(|a, b| {
                let key_a = (a.refs.first().map_or("", String::as_str), a.unit.memory_id.as_str());
                let key_b = (b.refs.first().map_or("", String::as_str), b.unit.memory_id.as_str());
                key_a.cmp(&key_b)
            });
            let mut text = String::with_capacity(64 + 160 * rows.len());
            text.push_str("# ");
            text.push_str(when);
            let mut links = Links::default();
            for row in &rows {
                text.push_str("\n\n");
                push_row(&mut text, row, &dir, &mut links);
            }
            let trimmed = text.trim_end_matches(is_py_space).len();
            text.truncate(trimmed);
            text.push('\n');
            (path, text)
        })
        .collect()
}

/// The relative links of one timeline file, computed once per topic file and per source link
/// (a day's rows mostly come from a few topics citing a few archives).
#[derive(Default)]
struct Links<'u> {
    topics: HashMap<&'u str, String>,
    sources: HashMap<(&'u str, &'u str), String>,
}

impl<'u> Links<'u> {
    /// `topics/<topic_path>` relative to `dir`.
    fn topic(&mut self, topic_path: &'u str, dir: &[&str]) -> &str {
        self.topics.entry(topic_path).or_insert_with(|| {
            let mut topic = vec!["topics"];
            topic.extend(normalize(topic_path));
            relative(&topic, dir)
        })
    }

    /// A source link path written in `topic_path`, relative to `dir`.
    fn source(&mut self, topic_path: &'u str, path: &'u str, dir: &[&str]) -> &str {
        self.sources.entry((topic_path, path)).or_insert_with(|| {
            if path.starts_with('/') {
                // An absolute target has no workspace-relative form; it is kept as written.
                return path.to_owned();
            }
            let joined = format!("{}/{path}", topic_dir(topic_path).join("/"));
            relative(&normalize(&joined), dir)
        })
    }
}

/// `<quote> [Topic](<rel>#^<id>) [<label>](<rel source link>)…`
fn push_row<'u>(out: &mut String, row: &Row<'u>, dir: &[&str], links: &mut Links<'u>) {
    let unit = row.unit;
    out.push_str(row.text);
    out.push_str(" [Topic](");
    out.push_str(links.topic(&unit.topic_path, dir));
    out.push('#');
    if !unit.memory_id.starts_with("mem_") {
        out.push('^');
    }
    out.push_str(&unit.memory_id);
    out.push_str(") ");
    let labels = if row.labels.len() == row.refs.len() { row.labels } else { row.refs };
    for (i, (label, link)) in labels.iter().zip(row.targets).enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let (path, fragment) = match link.split_once('#') {
            Some((path, fragment)) => (path, Some(fragment)),
            None => (link.as_str(), None),
        };
        out.push('[');
        out.push_str(label);
        out.push_str("](");
        out.push_str(links.source(&unit.topic_path, path, dir));
        if let Some(fragment) = fragment {
            out.push('#');
            out.push_str(fragment);
        }
        out.push(')');
    }
}

/// The last `limit` units in ascending creation order, one JSON object per line.
fn recent_events<'u>(
    units: impl Iterator<Item = &'u Unit> + Clone,
    given: &dyn Numbering,
    limit: usize,
) -> String {
    if limit == 0 {
        return String::new();
    }
    // IDs the order lacks (a tree written by hand) come after the others, in parse order.
    let mut next = given.next_number();
    let mut extra: HashMap<&str, u64> = HashMap::new();
    let mut keyed: Vec<(u64, usize, &Unit)> = Vec::new();
    for (i, unit) in units.enumerate() {
        let id = unit.memory_id.as_str();
        let number = given.number(id).unwrap_or_else(|| {
            *extra.entry(id).or_insert_with(|| {
                next += 1;
                next - 1
            })
        });
        keyed.push((number, i, unit));
    }
    // The newest `limit` by (number, parse index): a stable sort's tail, in linear time.
    let skip = keyed.len().saturating_sub(limit);
    if skip > 0 {
        keyed.select_nth_unstable_by_key(skip, |&(created, i, _)| (created, i));
    }
    let newest = &mut keyed[skip..];
    newest.sort_unstable_by_key(|&(created, i, _)| (created, i));
    let mut out = String::new();
    for &(created, _, unit) in &*newest {
        out.push_str("{\"memory_id\": ");
        pyjson::string(&mut out, &unit.memory_id);
        out.push_str(", \"when\": ");
        match &unit.when {
            Some(when) => pyjson::string(&mut out, when),
            None => out.push_str("null"),
        }
        out.push_str(", \"whens\": ");
        let mut whens: Vec<&str> = Vec::new();
        for when in unit.evidence.iter().filter_map(|e| e.when.as_deref()) {
            if !whens.contains(&when) {
                whens.push(when);
            }
        }
        pyjson::string_list(&mut out, whens);
        out.push_str(", \"content\": ");
        pyjson::string(&mut out, &unit.content);
        for key in ["refs", "source_refs"] {
            out.push_str(", \"");
            out.push_str(key);
            out.push_str("\": ");
            pyjson::string_list(&mut out, unit.refs.iter().map(String::as_str));
        }
        out.push_str(", \"topic_path\": ");
        pyjson::string(&mut out, &format!("topics/{}", unit.topic_path));
        out.push_str(", \"headings\": ");
        pyjson::string_list(&mut out, unit.headings.iter().map(String::as_str));
        out.push_str(", \"created_order\": ");
        out.push_str(&created.to_string());
        out.push_str("}\n");
    }
    out
}
