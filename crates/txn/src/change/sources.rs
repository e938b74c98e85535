//! Sources declared by an update request (see `docs/format.md#change-api-source-ids`):
//! `sources: [{label, role, content, observed_at?}]`, archived with the caller's provenance and
//! substituted for their `new-source-*` labels.
//!
//! Key decisions:
//!
//! - Identity comes only from [`super::UpdateContext`], never from the payload: an item with any
//!   other field (`principal_id`, `speaker_id`, …) is refused as an unknown field.
//! - The IDs are [`api_source_ids_under`] of the provenance and the items, so a retry with the
//!   same inputs mints the same IDs and re-archiving them writes nothing. The provider names the
//!   caller's surface (`mcp`, `web`, `cli`; see `docs/format.md#provenance`), or is the Python
//!   implementation's `claude-code` for a caller that names none.
//! - Labels: every maximal `new-source-[a-z0-9-]+` token of a substituted text must be a
//!   declared label (`MISSING_SOURCE` otherwise); the labels are then replaced longest first.
//!
//! # Limitations
//!
//! `observed_at` accepts the extended ISO-8601 forms Python's `datetime.fromisoformat`
//! accepts in practice — `YYYY-MM-DD`, optionally followed by `T`, `t` or a space and
//! `HH[:MM[:SS[.f…]]]` and an offset `Z` / `±HH[[:]MM]` — and renders them as
//! `datetime.isoformat()` does (`YYYY-MM-DDTHH:MM:SS[.ffffff][±HH:MM]`, digits past the sixth
//! fraction digit dropped). Basic (compact) forms, week and ordinal dates and offsets with
//! seconds are refused.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::{invalid, refuse};
use crate::change::ChangeLimits;
use crate::code::ErrorCode;
use crate::error::Result;
use scriptorium_topics_format::source::id::{
    API_SOURCE_PROVIDER, ApiProvenance, ApiSource, Surface, api_source_ids_under,
};
use scriptorium_topics_format::source::{ArchiveRecord, AuthorityTier, TrustState};

/// Most declared sources in one request.
pub const MAX_SOURCES: usize = 64;
/// Most bytes of all declared sources' contents together.
pub const MAX_SOURCE_BYTES: usize = 256_000;
/// The prefix of every declared label (`new-source-<a-z0-9->`).
pub const LABEL_PREFIX: &str = "new-source-";
/// The roles a declared source may have.
pub const ROLES: [&str; 4] = ["user", "assistant", "system", "tool"];

const NO_AUTHORITY: &str = "creating a source requires complete persisted authority";

/// One source declared by a request. Deserialized items are not yet checked; see
/// [`check`] (which [`super::UpdateRequest`] runs).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSource {
    /// `new-source-` followed by one or more of `a-z`, `0-9`, `-`.
    pub label: String,
    /// One of [`ROLES`].
    pub role: String,
    /// The message, verbatim.
    pub content: String,
    /// When it was observed; after [`check`], normalized (see the module limitations).
    #[serde(default)]
    pub observed_at: Option<String>,
}

/// Checks declared sources (`INVALID_ARGUMENT`): at most [`MAX_SOURCES`] items and
/// [`MAX_SOURCE_BYTES`] of content, each label well formed and unique, each role one of
/// [`ROLES`], each `observed_at` an ISO-8601 timestamp (normalized in place).
pub fn check(mut sources: Vec<NewSource>, limits: &ChangeLimits) -> Result<Vec<NewSource>> {
    let ChangeLimits { max_sources, max_source_bytes, .. } = *limits;
    if sources.len() > max_sources {
        return Err(invalid(format!("sources must contain at most {max_sources} items")));
    }
    let bytes: usize = sources.iter().map(|s| s.content.len()).sum();
    if bytes > max_source_bytes {
        return Err(invalid(format!(
            "sources content must total at most {max_source_bytes} bytes"
        )));
    }
    let mut labels = BTreeSet::new();
    for (i, source) in sources.iter_mut().enumerate() {
        if !is_label(&source.label) {
            return Err(invalid(format!("sources[{i}].label must match new-source-[a-z0-9-]+")));
        }
        if !labels.insert(source.label.clone()) {
            return Err(invalid(format!("sources contains a duplicate label: {}", source.label)));
        }
        if !ROLES.contains(&source.role.as_str()) {
            return Err(invalid(format!(
                "sources[{i}].role must be one of user, assistant, system, tool"
            )));
        }
        if let Some(observed) = &source.observed_at {
            let normalized = normalize_timestamp(observed).ok_or_else(|| {
                invalid(format!("sources[{i}].observed_at must be an ISO-8601 timestamp"))
            })?;
            source.observed_at = Some(normalized);
        }
    }
    Ok(sources)
}

/// Whether `text` is a declared-source label: `new-source-` and one or more of `a-z0-9-`.
pub fn is_label(text: &str) -> bool {
    text.strip_prefix(LABEL_PREFIX)
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(is_label_byte))
}

fn is_label_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
}

/// The archive records of `sources` and their label → source ID map, under `provenance`
/// (`WRITER_PRECONDITION_FAILED` when it is missing or incomplete: an empty field or a tier
/// other than `owner` / `paired`). Records are trusted, provider the `surface`'s (or
/// [`API_SOURCE_PROVIDER`] without one), ordinal = position from 1.
pub(crate) fn records(
    sources: &[NewSource],
    provenance: Option<&ApiProvenance>,
    speaker_display: Option<&str>,
    surface: Option<Surface>,
) -> Result<(Vec<ArchiveRecord>, BTreeMap<String, String>)> {
    let provenance = provenance.ok_or_else(no_authority)?;
    let fields = [
        &provenance.principal_id,
        &provenance.speaker_kind,
        &provenance.speaker_id,
        &provenance.origin_id,
    ];
    if fields.iter().any(|f| f.trim().is_empty()) {
        return Err(no_authority());
    }
    let tier = match provenance.authority_tier.as_str() {
        "owner" => AuthorityTier::Owner,
        "paired" => AuthorityTier::Paired,
        _ => return Err(no_authority()),
    };
    let items: Vec<ApiSource> = sources
        .iter()
        .map(|s| ApiSource {
            role: s.role.clone(),
            content: s.content.clone(),
            observed_at: s.observed_at.clone(),
        })
        .collect();
    let provider = surface.map_or(API_SOURCE_PROVIDER, Surface::provider);
    let ids = api_source_ids_under(provider, provenance, &items);
    let mut records = Vec::with_capacity(ids.len());
    let mut map = BTreeMap::new();
    for ((ordinal, source), id) in (1u64..).zip(sources).zip(ids) {
        let mut record = ArchiveRecord::new(
            provider,
            id.thread(),
            id.message(),
            ordinal,
            source.role.clone(),
            source.content.clone(),
        );
        record.timestamp = source.observed_at.clone();
        record.speaker_id = Some(provenance.speaker_id.clone());
        record.speaker_display =
            speaker_display.filter(|d| !d.trim().is_empty()).map(str::to_owned);
        record.speaker_kind = provenance.speaker_kind.clone();
        record.principal_id = provenance.principal_id.clone();
        record.authority_tier = Some(tier);
        record.trust_state = TrustState::Trusted;
        records.push(record);
        map.insert(source.label.clone(), id.as_str().to_owned());
    }
    Ok((records, map))
}

fn no_authority() -> crate::error::Error {
    refuse(ErrorCode::WriterPreconditionFailed, NO_AUTHORITY, None)
}

/// Label substitution over the texts of a request.
pub(crate) struct Labels {
    /// (label, source ID), longest label first.
    order: Vec<(String, String)>,
}

impl Labels {
    pub(crate) fn new(map: &BTreeMap<String, String>) -> Labels {
        let mut order: Vec<(String, String)> =
            map.iter().map(|(l, id)| (l.clone(), id.clone())).collect();
        order.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Labels { order }
    }

    /// `text` with every declared label replaced by its source ID, longest label first;
    /// `MISSING_SOURCE` names the first `new-source-*` token that is not declared.
    pub(crate) fn substitute(&self, text: &str) -> Result<String> {
        if !text.contains(LABEL_PREFIX) {
            return Ok(text.to_owned());
        }
        let mut rest = text;
        while let Some(at) = rest.find(LABEL_PREFIX) {
            let tail = &rest[at + LABEL_PREFIX.len()..];
            let len = tail.bytes().take_while(|b| is_label_byte(*b)).count();
            let token = &rest[at..at + LABEL_PREFIX.len() + len];
            if len > 0 && !self.order.iter().any(|(label, _)| label == token) {
                return Err(refuse(
                    ErrorCode::MissingSource,
                    format!("patch references undeclared source label: {token}"),
                    None,
                ));
            }
            rest = &rest[at + token.len()..];
        }
        let mut out = text.to_owned();
        for (label, id) in &self.order {
            if out.contains(label.as_str()) {
                out = out.replace(label.as_str(), id);
            }
        }
        Ok(out)
    }
}

/// Normalizes an ISO-8601 timestamp like Python's `datetime.fromisoformat(t).isoformat()`
/// (within the forms listed in the module limitations); `None` when it does not parse.
pub fn normalize_timestamp(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let digits = b.get(from..from + len)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| digits.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if year == 0 || !(1..=12).contains(&month) || day == 0 || day > days_in(year, month) {
        return None;
    }
    let date = format!("{year:04}-{month:02}-{day:02}");
    if b.len() == 10 {
        return Some(format!("{date}T00:00:00"));
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let mut pos = 11;
    let hour = num(pos, 2)?;
    pos += 2;
    let (mut minute, mut second, mut micros) = (0, 0, 0);
    if b.get(pos) == Some(&b':') {
        minute = num(pos + 1, 2)?;
        pos += 3;
        if b.get(pos) == Some(&b':') {
            second = num(pos + 1, 2)?;
            pos += 3;
            if matches!(b.get(pos), Some(b'.' | b',')) {
                pos += 1;
                let len = b[pos..].iter().take_while(|d| d.is_ascii_digit()).count();
                if len == 0 {
                    return None;
                }
                let kept = num(pos, len.min(6))?;
                micros = kept * 10u32.pow(6 - len.min(6) as u32);
                pos += len;
            }
        }
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let offset = match &b[pos..] {
        [] => String::new(),
        [b'Z'] => "+00:00".to_owned(),
        [sign @ (b'+' | b'-'), zone @ ..] => {
            let (h, m) = match zone.len() {
                2 => (num(pos + 1, 2)?, 0),
                4 => (num(pos + 1, 2)?, num(pos + 3, 2)?),
                5 if zone[2] == b':' => (num(pos + 1, 2)?, num(pos + 4, 2)?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            let sign = if *sign == b'-' && (h, m) != (0, 0) { '-' } else { '+' };
            format!("{sign}{h:02}:{m:02}")
        }
        _ => return None,
    };
    let fraction = if micros == 0 { String::new() } else { format!(".{micros:06}") };
    Some(format!("{date}T{hour:02}:{minute:02}:{second:02}{fraction}{offset}"))
}

fn days_in(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_normalize_like_isoformat() {
        let cases = [
            ("2024-04-02", Some("2024-04-02T00:00:00")),
            ("2024-04-02T09:30", Some("2024-04-02T09:30:00")),
            ("2024-04-02 09", Some("2024-04-02T09:00:00")),
            ("2024-04-02T09:30:05.5Z", Some("2024-04-02T09:30:05.500000+00:00")),
            ("2024-04-02T09:30:05.1234567-0130", Some("2024-04-02T09:30:05.123456-01:30")),
            ("2024-04-02T09:30:05.000+00:00", Some("2024-04-02T09:30:05+00:00")),
            ("2024-04-02T09:30:05-00:00", Some("2024-04-02T09:30:05+00:00")),
            ("2024-02-29", Some("2024-02-29T00:00:00")),
            ("2023-02-29", None),
            ("2024-13-01", None),
            ("2024-04-02T24:00", None),
            ("2024-04-02T09:30:05.", None),
            ("20240402", None),
            ("2024-04-02T09:30+24:00", None),
            ("yesterday", None),
            ("", None),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_timestamp(input).as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn labels_substitute_longest_first_and_refuse_undeclared() {
        let map = BTreeMap::from([
            ("new-source-a".to_owned(), "p/t/A".to_owned()),
            ("new-source-a-b".to_owned(), "p/t/AB".to_owned()),
        ]);
        let labels = Labels::new(&map);
        assert_eq!(
            labels.substitute("[x](new-source-a-b) [y](new-source-a)").expect("declared"),
            "[x](p/t/AB) [y](p/t/A)"
        );
        let error = labels.substitute("(new-source-a-c)").expect_err("undeclared");
        assert_eq!(error.code(), ErrorCode::MissingSource);
        assert!(error.to_string().contains("undeclared source label: new-source-a-c"), "{error}");
        assert_eq!(labels.substitute("new-source- alone").expect("no token"), "new-source- alone");
    }

    #[test]
    fn labels_are_checked() {
        assert!(is_label("new-source-a-1"));
        for bad in ["new-source-", "new-source-A", "source-a", "new-source-a_b"] {
            assert!(!is_label(bad), "{bad}");
        }
    }
}
