//! The source checks of a staged tree (checks 7–9 of the `validate` module docs, with the organizer
//! fix described there): every ref resolves, a ref new to a block ID is trusted, a ref new to the
//! workspace is the transaction's own evidence.

use std::collections::{HashMap, HashSet};

use scriptorium_topics_format::catalog::{SourceFiles, SourceResolver};
use scriptorium_topics_format::source::id::parse_d_handle;
use scriptorium_topics_format::source::{ArchiveResolver, SourceId, TrustState};
use scriptorium_topics_format::topic::{Document, LineKind};
use scriptorium_topics_format::{TopicFile, Unit};

use super::{Baseline, Rules, Violation};
use crate::code::ErrorCode;

/// Source resolution plus trust: what validation needs to know about the live `sources/`.
pub trait SourceCatalog: SourceResolver {
    /// The trust of `source_ref`; `None` when nothing archived vouches for it (no valid v2
    /// frame, no legacy file naming it).
    fn trust(&self, source_ref: &str) -> Option<TrustState>;
}

impl<F: SourceFiles> SourceCatalog for ArchiveResolver<F> {
    fn trust(&self, source_ref: &str) -> Option<TrustState> {
        ArchiveResolver::trust(self, source_ref)
    }
}

/// How trusted a block is: as trusted as *all* its refs (see `docs/format.md#trust`). A block
/// with a pending or unresolvable ref is [`TrustState::Pending`]: excluded from automatic
/// injection until every ref is promoted or archived.
pub fn block_trust(unit: &Unit, sources: &dyn SourceCatalog) -> TrustState {
    let trusted =
        unit.refs.iter().all(|source_ref| sources.trust(source_ref) == Some(TrustState::Trusted));
    if trusted { TrustState::Trusted } else { TrustState::Pending }
}

/// What the archive says about one ref, looked up once per validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Neither a `D<n>:<t>` handle nor a `<provider>/<thread>/<message>` reference.
    Invalid,
    /// Well formed, but nothing archived vouches for it.
    Missing,
    /// Archived with this trust.
    Archived(TrustState),
}

fn status(source_ref: &str, sources: &dyn SourceCatalog) -> Status {
    if parse_d_handle(source_ref).is_none() && SourceId::parse(source_ref).is_none() {
        return Status::Invalid;
    }
    match sources.trust(source_ref) {
        Some(state) => Status::Archived(state),
        None => Status::Missing,
    }
}

/// Checks every ref of every staged unit (aliases included, since newness is per block ID).
pub(super) fn check_refs(
    baseline: &Baseline,
    staged: &[TopicFile],
    units: &[Unit],
    sources: &dyn SourceCatalog,
    rules: &Rules<'_>,
    out: &mut Vec<Violation>,
) {
    let mut statuses: HashMap<&str, Status> = HashMap::new();
    let mut found: Vec<Finding<'_>> = Vec::new();
    for unit in units {
        for source_ref in &unit.refs {
            let state =
                *statuses.entry(source_ref.as_str()).or_insert_with(|| status(source_ref, sources));
            let mut report = |code: ErrorCode| found.push(Finding { unit, source_ref, code });
            match state {
                Status::Invalid => report(ErrorCode::InvalidSourceReference),
                Status::Missing => report(ErrorCode::MissingSourceReference),
                Status::Archived(trust) => {
                    let new_to_block = !baseline.block_cites(&unit.memory_id, source_ref);
                    if new_to_block && trust != TrustState::Trusted {
                        report(ErrorCode::SourceNotTrusted);
                    }
                    if let Some(allowed) = rules.allowed_new_sources
                        && !baseline.is_committed_ref(source_ref)
                        && !allowed.contains(source_ref)
                    {
                        report(ErrorCode::SourceNotInTransaction);
                    }
                }
            }
        }
    }
    if found.is_empty() {
        return;
    }
    let files = super::by_path(staged);
    let mut definitions: HashMap<&str, Definitions> = HashMap::new();
    let mut seen = HashSet::new();
    let mut located = Vec::with_capacity(found.len());
    for finding in found {
        let unit = finding.unit;
        let defs = definitions.entry(unit.topic_path.as_str()).or_insert_with(|| {
            files.get(unit.topic_path.as_str()).map(|f| Definitions::read(f)).unwrap_or_default()
        });
        let (line, col) = defs.locate(unit, finding.source_ref);
        let violation = Violation::at(
            finding.code,
            format!("topics/{}", unit.topic_path),
            line,
            col,
            message(finding.code, finding.source_ref),
        );
        if seen.insert((violation.path.clone(), line, col, finding.code, finding.source_ref)) {
            located.push(violation);
        }
    }
    out.extend(located);
}

/// The reference's message for a source violation.
fn message(code: ErrorCode, source_ref: &str) -> String {
    match code {
        ErrorCode::InvalidSourceReference => format!("invalid source reference: {source_ref}"),
        ErrorCode::MissingSourceReference => format!("missing source reference: {source_ref}"),
        ErrorCode::SourceNotTrusted => {
            format!("source reference is not trusted; promote it first: {source_ref}")
        }
        _ => format!("source reference is not evidence of this transaction: {source_ref}"),
    }
}

/// One source violation before it is positioned.
struct Finding<'u> {
    unit: &'u Unit,
    source_ref: &'u str,
    code: ErrorCode,
}

/// The footnote definition lines of one file: ID → (1-based line, line text).
#[derive(Default)]
struct Definitions {
    lines: HashMap<String, (u32, String)>,
}

impl Definitions {
    fn read(file: &TopicFile) -> Definitions {
        let doc = Document::parse(&file.text);
        let mut lines = HashMap::new();
        for (index, line) in doc.lines().iter().enumerate() {
            if !matches!(line.kind, LineKind::Definition { .. }) {
                continue;
            }
            let text = doc.line_text(index);
            let Some(id) = text.strip_prefix("[^").and_then(|rest| rest.split_once("]:")) else {
                continue;
            };
            let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
            lines.entry(id.0.to_owned()).or_insert_with(|| (number, text.to_owned()));
        }
        Definitions { lines }
    }

    /// The position of the link citing `source_ref` in the first definition of `unit` that
    /// carries it; the paragraph's first line when no definition can be found.
    fn locate(&self, unit: &Unit, source_ref: &str) -> (u32, u32) {
        for evidence in &unit.evidence {
            let Some(index) = evidence.refs.iter().position(|r| r == source_ref) else {
                continue;
            };
            let Some((line, text)) = self.lines.get(&evidence.citation_id) else {
                continue;
            };
            let col = evidence
                .targets
                .get(index)
                .and_then(|target| text.find(&format!("]({target})")).map(|at| at + 2))
                .map_or(1, |byte| column(text, byte));
            return (*line, col);
        }
        (unit.line, 1)
    }
}

/// The 1-based character column of byte offset `byte` in `line`.
fn column(line: &str, byte: usize) -> u32 {
    let chars = line.get(..byte).map_or(0, |prefix| prefix.chars().count());
    u32::try_from(chars + 1).unwrap_or(u32::MAX)
}
