//! The query, its validated plan, and the hits a search returns.

use serde::Serialize;

use crate::error::{Error, Result};

/// Results returned when [`Query::top_k`] is left at its default.
pub const DEFAULT_TOP_K: usize = 5;
/// The largest [`Query::top_k`] honoured; larger values are clamped.
pub const MAX_TOP_K: usize = 10;
/// The default relevance floor, [`Query::min_coverage`]: tuned on the LoCoMo dev split
/// (`examples/recall.rs`) so that recall@5 stays within a point of no floor while ≥ 95 % of
/// questions on subjects absent from memory return nothing.
pub const DEFAULT_MIN_COVERAGE: f32 = 0.35;

/// A recall query.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The query text, tokenized like the index (stopwords dropped).
    pub text: String,
    /// How many hits at most (default 5, clamped to 1..=10).
    pub top_k: usize,
    /// Only hits whose file path starts with this prefix, normalized: a leading
    /// `topics`/`sources` root is kept, anything else is taken under `topics/`; an archive also
    /// matches by its logical path without `/_v2`.
    pub path_prefix: Option<String>,
    /// Only hits with a date overlapping `YYYY[-MM[-DD]]` or later.
    pub date_from: Option<String>,
    /// Only hits with a date overlapping `YYYY[-MM[-DD]]` or earlier.
    pub date_to: Option<String>,
    /// Only source records whose speaker id, display or label equals this (case-insensitive);
    /// restricts the search to source records.
    pub speaker: Option<String>,
    /// Whether source records are searched besides topic blocks (default true).
    pub include_sources: bool,
    /// The relevance floor: the share of the query's weight (the IDF of its non-stopword terms)
    /// that a hit must match. `0.0` keeps only the "one non-stopword term" rule.
    pub min_coverage: f32,
    /// Recall scoped to one project (see [`ProjectScope`]).
    pub project: Option<ProjectScope>,
}

/// What a search scoped to one project sees: the project's topics, every topic that belongs to
/// no project, and the source records of the project's sessions. Other projects' topics
/// (`topics/projects/<other>/…`) and sessions are left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectScope {
    /// The project's topic directory, workspace-relative with a trailing `/`
    /// (`scriptorium_topics_format::project::topics_dir`).
    pub topics: String,
    /// The project's single topic file as the Python implementation names it
    /// (`topics/projects/<slug>.md`), which belongs to the project too.
    pub topic_file: String,
    /// The archives (workspace-relative, `sources/…/_v2/….md`) of the project's sessions.
    pub archives: Vec<String>,
}

impl ProjectScope {
    /// The scope of `project` (a session's project path), with the archives of its sessions.
    pub fn new(project: &str, archives: Vec<String>) -> Self {
        use scriptorium_topics_format::project::{topic_file, topics_dir};
        ProjectScope { topics: topics_dir(project), topic_file: topic_file(project), archives }
    }
}

impl Query {
    /// A query with every option at its default.
    pub fn new(text: impl Into<String>) -> Self {
        Query {
            text: text.into(),
            top_k: DEFAULT_TOP_K,
            path_prefix: None,
            date_from: None,
            date_to: None,
            speaker: None,
            include_sources: true,
            min_coverage: DEFAULT_MIN_COVERAGE,
            project: None,
        }
    }
}

/// Whether a hit is a topic block or a source record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HitKind {
    /// A paragraph of a topic file.
    Block,
    /// A frame of a v2 source archive.
    Source,
}

/// One search result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hit {
    /// Block or source record.
    pub kind: HitKind,
    /// The block ID (the paragraph's identity) or the source ID.
    pub id: String,
    /// The workspace-relative file (`topics/…` or `sources/…/_v2/…`).
    pub path: String,
    /// The fragment that resolves in that file: `#^<block id>` or `#source-…`.
    pub anchor: String,
    /// 1-based line where the paragraph or frame starts.
    pub line: u64,
    /// The heading path above a block (empty for sources).
    pub headings: Vec<String>,
    /// A short excerpt around the first matching term.
    pub snippet: String,
    /// The recall text (≤ 1 200 chars): `[dates] text` for a block, the record line(s) for a
    /// source.
    pub content: String,
    /// BM25 score (higher is better).
    pub score: f32,
    /// The dates (`YYYY[-MM[-DD]]`) the hit carries.
    pub dates: Vec<String>,
    /// The source references a block cites (resolved source IDs; an unresolved citation keeps
    /// its `sources/…#anchor` target).
    pub refs: Vec<String>,
    /// A source record's speaker ID.
    pub speaker_id: Option<String>,
    /// A source record's speaker display name.
    pub speaker_display: Option<String>,
    /// A source record's speaker label as archived.
    pub speaker_label: Option<String>,
    /// The IDs of the lower-ranked matches this hit stands for: the source records a block
    /// cites (its evidence) and hits with the same text. They are not returned on their own.
    pub collapsed: Vec<String>,
}

impl Hit {
    /// `path` + `anchor`, a link that opens the hit.
    pub fn link(&self) -> String {
        format!("{}{}", self.path, self.anchor)
    }
}

/// The recall text of `hits` (their `content`, separated by blank lines), ready for
/// [`crate::fence`].
pub fn recall_text(hits: &[Hit]) -> String {
    hits.iter().map(|hit| hit.content.as_str()).collect::<Vec<_>>().join("\n\n")
}

/// What changed between two revisions, when the caller knows (an install's changed files, an
/// archive append's files): workspace-relative paths such as `topics/a/b.md` or
/// `sources/openprogram/_v2/s.md`, including deleted files.
///
/// It says nothing of what changed before `since`, so [`crate::Index::sync`] trusts it only
/// when the index reflects exactly `since`; an index further behind (a process died between a
/// change and its index update) catches up from its manifest instead.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The revision the changes start from.
    pub since: String,
    /// The changed files.
    pub paths: Vec<String>,
}

/// A calendar date range as inclusive bounds on the three date encodings of the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DateWindow {
    pub(crate) days: (u64, u64),
    pub(crate) months: (u64, u64),
    pub(crate) years: (u64, u64),
}

/// The validated form of a [`Query`].
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) text: String,
    pub(crate) top_k: usize,
    pub(crate) prefix: Option<String>,
    pub(crate) window: Option<DateWindow>,
    pub(crate) speaker: Option<String>,
    pub(crate) include_sources: bool,
    pub(crate) min_coverage: f32,
    pub(crate) project: Option<ProjectScope>,
}

impl Plan {
    pub(crate) fn new(query: &Query) -> Result<Plan> {
        let window = date_window(query.date_from.as_deref(), query.date_to.as_deref())?;
        let speaker = match query.speaker.as_deref().map(str::trim) {
            Some("") | None => None,
            Some(_) if !query.include_sources => {
                return Err(Error::invalid(
                    "a speaker filter needs source records, but recall is topics-only \
                     (include_sources is false)",
                ));
            }
            Some(speaker) => Some(speaker.to_lowercase()),
        };
        if !query.min_coverage.is_finite() {
            return Err(Error::invalid("min_coverage must be a finite number"));
        }
        Ok(Plan {
            text: query.text.clone(),
            top_k: query.top_k.clamp(1, MAX_TOP_K),
            prefix: query.path_prefix.as_deref().and_then(normalize_prefix),
            window,
            speaker,
            include_sources: query.include_sources,
            min_coverage: query.min_coverage,
            project: query.project.clone(),
        })
    }
}

/// Normalizes a path prefix: a leading `topics`/`sources` root is kept, anything else goes
/// under `topics/`. An empty prefix is no filter.
pub(crate) fn normalize_prefix(prefix: &str) -> Option<String> {
    let trimmed = prefix.trim().trim_start_matches("./").trim_start_matches('/');
    if trimmed.is_empty() {
        return None;
    }
    let rooted = ["topics", "sources"]
        .iter()
        .any(|root| trimmed == *root || trimmed.starts_with(&format!("{root}/")));
    Some(if rooted { trimmed.to_owned() } else { format!("topics/{trimmed}") })
}

/// A parsed `YYYY[-MM[-DD]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Temporal {
    pub(crate) year: u32,
    pub(crate) month: Option<u32>,
    pub(crate) day: Option<u32>,
}

/// Parses `YYYY`, `YYYY-MM` or `YYYY-MM-DD` (ASCII digits, a real calendar date).
pub(crate) fn parse_temporal(text: &str) -> Option<Temporal> {
    let mut parts = text.split('-');
    let year = number(parts.next()?, 4)?;
    let month = parts.next().map(|m| number(m, 2)).map_or(Ok(None), |m| m.ok_or(()).map(Some));
    let month = month.ok()?;
    let day = parts.next().map(|d| number(d, 2)).map_or(Ok(None), |d| d.ok_or(()).map(Some));
    let day = day.ok()?;
    if parts.next().is_some() || (month.is_none() && day.is_some()) {
        return None;
    }
    if let Some(m) = month
        && !(1..=12).contains(&m)
    {
        return None;
    }
    if let (Some(m), Some(d)) = (month, day)
        && !(1..=days_in_month(year, m)).contains(&d)
    {
        return None;
    }
    Some(Temporal { year, month, day })
}

fn number(text: &str, width: usize) -> Option<u32> {
    (text.len() == width && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        _ => 28,
    }
}

/// Days since 0000-03-01 (proleptic Gregorian), always positive for 4-digit years.
pub(crate) fn day_number(year: u32, month: u32, day: u32) -> u64 {
    let (y, m) = if month <= 2 {
        (u64::from(year) + 399, month + 9)
    } else {
        (u64::from(year) + 400, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * u64::from(m) + 2) / 5 + u64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe
}

impl Temporal {
    /// The month index (`year * 12 + month - 1`) of the first month.
    fn first_month(self) -> u64 {
        u64::from(self.year) * 12 + u64::from(self.month.unwrap_or(1)) - 1
    }

    fn last_month(self) -> u64 {
        u64::from(self.year) * 12 + u64::from(self.month.unwrap_or(12)) - 1
    }

    fn first_day(self) -> u64 {
        day_number(self.year, self.month.unwrap_or(1), self.day.unwrap_or(1))
    }

    fn last_day(self) -> u64 {
        let month = self.month.unwrap_or(12);
        day_number(self.year, month, self.day.unwrap_or(days_in_month(self.year, month)))
    }

    /// The (field, value) encodings a stored date is indexed under: exactly one of day,
    /// month, year, by precision.
    pub(crate) fn encoding(self) -> DateEncoding {
        match (self.month, self.day) {
            (Some(m), Some(d)) => DateEncoding::Day(day_number(self.year, m, d)),
            (Some(_), None) => DateEncoding::Month(self.first_month()),
            _ => DateEncoding::Year(u64::from(self.year)),
        }
    }
}

/// How one stored date is indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DateEncoding {
    Day(u64),
    Month(u64),
    Year(u64),
}

fn date_window(from: Option<&str>, to: Option<&str>) -> Result<Option<DateWindow>> {
    let parse = |name: &str, value: &str| {
        parse_temporal(value.trim()).ok_or_else(|| {
            Error::invalid(format!("{name} must be YYYY, YYYY-MM or YYYY-MM-DD: {value}"))
        })
    };
    let from = from.filter(|v| !v.trim().is_empty()).map(|v| parse("date_from", v)).transpose()?;
    let to = to.filter(|v| !v.trim().is_empty()).map(|v| parse("date_to", v)).transpose()?;
    if from.is_none() && to.is_none() {
        return Ok(None);
    }
    let days = (from.map_or(0, Temporal::first_day), to.map_or(u64::MAX, Temporal::last_day));
    if days.0 > days.1 {
        return Err(Error::invalid("date_from is after date_to"));
    }
    // A month (year) overlaps [from, to] iff it lies between the month (year) of `from` and
    // that of `to`'s last day.
    let months = (from.map_or(0, Temporal::first_month), to.map_or(u64::MAX, Temporal::last_month));
    let years = (from.map_or(0, |t| u64::from(t.year)), to.map_or(u64::MAX, |t| u64::from(t.year)));
    Ok(Some(DateWindow { days, months, years }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporal_values() {
        assert!(parse_temporal("2024").is_some());
        assert!(parse_temporal("2024-02-29").is_some());
        assert!(parse_temporal("2023-02-29").is_none());
        assert!(parse_temporal("2024-13").is_none());
        assert!(parse_temporal("24-01").is_none());
        assert_eq!(day_number(2024, 3, 2) - day_number(2024, 2, 28), 3);
    }

    #[test]
    fn windows() {
        assert!(date_window(Some("2024-05"), Some("2024-04-30")).is_err());
        assert!(date_window(Some("2024-05"), Some("2024-05-01")).is_ok());
        let w = date_window(Some("2024-03-15"), None).unwrap().unwrap();
        assert_eq!(w.years, (2024, u64::MAX));
        assert_eq!(w.months.0, 2024 * 12 + 2);
    }

    #[test]
    fn prefixes() {
        assert_eq!(normalize_prefix("projects").as_deref(), Some("topics/projects"));
        assert_eq!(normalize_prefix("/sources/x").as_deref(), Some("sources/x"));
        assert_eq!(normalize_prefix("topics").as_deref(), Some("topics"));
        assert_eq!(normalize_prefix("  "), None);
    }
}
