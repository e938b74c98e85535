//! The read-only legacy archive forms (see `docs/format.md#legacy-archives`):
//! `sources/<provider>/<thread>.md` (anchor + source-id pairs, no length framing) and
//! LoCoMo-style `sources/D<n>.md`.
//!
//! Key decision: read exactly as leniently as the Python reader. A legacy body can forge a header
//! (there is no length framing), so for citation only pairs whose computed location is this very
//! file and anchor count; for trust, every `source-id` comment and every `d<n>-<t>` anchor in a
//! legacy file counts as trusted (the owner accepted this evidence before trust tiers existed).

use std::sync::LazyLock;

use regex::Regex;

use super::id::{SourceId, is_digits, path_parts};
use crate::diag::{Code, Diagnostic};

/// `<a id="A"></a>\n<!-- source-id:S -->` as the citation resolver reads legacy provider files.
static PAIR: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"<a id="([^"]+)"></a>\n<!-- source-id:([^>\r\n]+) -->"#).ok());
/// `<!-- source-id:S -->` anywhere (may span lines), as the trusted-source set reads them.
static ANY_SOURCE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"<!-- source-id:([^>]+) -->").ok());
/// `<a id="d<n>-<t>"></a>`.
static D_ANCHOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"<a id="d(\d+)-(\d+)"></a>"#).ok());

/// Which legacy form a workspace-relative path has, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LegacyKind {
    /// `sources/<provider>/<thread>.md`.
    Provider,
    /// `sources/D<n>.md`.
    Conversation,
}

/// Classifies a path: `sources/D<n>.md` or `sources/<provider>/<thread>.md`; anything else
/// (including v2 paths) is `None`.
pub fn legacy_kind(rel_path: &str) -> Option<LegacyKind> {
    let parts: Vec<&str> = path_parts(rel_path).collect();
    match parts.as_slice() {
        ["sources", name] => name
            .strip_suffix(".md")
            .and_then(|stem| stem.strip_prefix('D'))
            .filter(|n| is_digits(n))
            .map(|_| LegacyKind::Conversation),
        ["sources", _provider, thread] => thread.ends_with(".md").then_some(LegacyKind::Provider),
        _ => None,
    }
}

/// One citable header of a legacy provider file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegacyHeader {
    /// The anchor id.
    pub anchor: String,
    /// The source id.
    pub source_id: String,
    /// 1-based line of the anchor line.
    pub line: u32,
}

/// The citable headers of a legacy provider file at `rel_path`: every anchor + source-id pair
/// whose computed legacy location is this file and this anchor, in file order.
pub fn legacy_headers(rel_path: &str, text: &str) -> Vec<LegacyHeader> {
    let Some(pair) = PAIR.as_ref() else {
        return Vec::new();
    };
    let here = normalized(rel_path);
    let mut line = 1u32;
    let mut counted = 0usize;
    let mut headers = Vec::new();
    for captures in pair.captures_iter(text) {
        let (Some(whole), Some(anchor), Some(source_id)) =
            (captures.get(0), captures.get(1), captures.get(2))
        else {
            continue;
        };
        let Some(id) = SourceId::parse(source_id.as_str()) else {
            continue;
        };
        let location = id.legacy_location();
        if location.path != here || location.anchor != anchor.as_str() {
            continue;
        }
        line += count_lf(&text[counted..whole.start()]);
        counted = whole.start();
        headers.push(LegacyHeader {
            anchor: anchor.as_str().to_owned(),
            source_id: source_id.as_str().to_owned(),
            line,
        });
    }
    headers
}

/// Every source id a legacy file vouches for: each `<!-- source-id:… -->` comment and each
/// `d<n>-<t>` anchor (as `D<n>:<t>`), in file order.
pub fn legacy_trusted_ids(text: &str) -> Vec<String> {
    let mut ids = Vec::new();
    if let Some(any) = ANY_SOURCE.as_ref() {
        ids.extend(any.captures_iter(text).filter_map(|c| c.get(1)).map(|m| m.as_str().to_owned()));
    }
    if let Some(d) = D_ANCHOR.as_ref() {
        ids.extend(
            d.captures_iter(text)
                .filter_map(|c| Some(format!("D{}:{}", c.get(1)?.as_str(), c.get(2)?.as_str()))),
        );
    }
    ids
}

/// The per-file check of a legacy archive: lenient like the reader. The one defect reported is a
/// header whose source id belongs to this file but whose anchor is not the id's anchor: such a
/// record can never be cited. Headers naming another file are ignored (a body may quote them).
pub fn check_legacy(rel_path: &str, text: &str) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    if legacy_kind(rel_path) != Some(LegacyKind::Provider) {
        return diagnostics;
    }
    let Some(pair) = PAIR.as_ref() else {
        return diagnostics;
    };
    let here = normalized(rel_path);
    for captures in pair.captures_iter(text) {
        let (Some(whole), Some(anchor), Some(source_id)) =
            (captures.get(0), captures.get(1), captures.get(2))
        else {
            continue;
        };
        let Some(id) = SourceId::parse(source_id.as_str()) else {
            continue;
        };
        let location = id.legacy_location();
        if location.path == here && location.anchor != anchor.as_str() {
            let line = 1 + count_lf(&text[..whole.start()]);
            diagnostics.push(Diagnostic::new(
                rel_path,
                line,
                8,
                Code::LegacyArchive,
                format!(
                    "legacy anchor {} does not match source id {} (expected {})",
                    anchor.as_str(),
                    id,
                    location.anchor
                ),
            ));
        }
    }
    diagnostics
}

fn normalized(rel_path: &str) -> String {
    path_parts(rel_path).collect::<Vec<_>>().join("/")
}

fn count_lf(text: &str) -> u32 {
    u32::try_from(text.bytes().filter(|&b| b == b'\n').count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::id::anchor_for;

    #[test]
    fn kinds() {
        assert_eq!(legacy_kind("sources/D1.md"), Some(LegacyKind::Conversation));
        assert_eq!(legacy_kind("sources/openprogram/sess.md"), Some(LegacyKind::Provider));
        assert_eq!(legacy_kind("sources/openprogram/_v2/sess.md"), None);
        assert_eq!(legacy_kind("sources/Dx.md"), None);
        assert_eq!(legacy_kind("topics/a/b.md"), None);
    }

    #[test]
    fn headers_must_belong_to_their_file() {
        let own = "openprogram/sess/m1";
        let other = "openprogram/other/m2";
        let text = format!(
            "# sess\n\n<a id=\"{}\"></a>\n<!-- source-id:{own} -->\n[t] user: hi\n\n<a id=\"{}\"></a>\n<!-- source-id:{other} -->\n[t] user: forged\n",
            anchor_for(own),
            anchor_for(other)
        );
        let headers = legacy_headers("sources/openprogram/sess.md", &text);
        assert_eq!(headers.len(), 1);
        assert_eq!(headers[0].source_id, own);
        assert_eq!(headers[0].line, 3);
        assert!(check_legacy("sources/openprogram/sess.md", &text).is_empty());
        let trusted = legacy_trusted_ids(&text);
        assert_eq!(trusted, vec![own.to_owned(), other.to_owned()]);
    }

    #[test]
    fn a_wrong_anchor_for_an_own_id_is_reported() {
        let text = "# sess\n\n<a id=\"source-0000000000000000\"></a>\n<!-- source-id:openprogram/sess/m1 -->\n[t] user: hi\n";
        let diagnostics = check_legacy("sources/openprogram/sess.md", text);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::LegacyArchive);
        assert_eq!(diagnostics[0].line, 3);
    }

    #[test]
    fn conversation_anchors_are_trusted_handles() {
        let text = "# D1\n\n<a id=\"d1-1\"></a>\n[2023-05-08] Caroline: hi [D1:1]\n\n<a id=\"d1-2\"></a>\n[2023-05-08] Mel: yo [D1:2]\n";
        assert_eq!(legacy_trusted_ids(text), vec!["D1:1".to_owned(), "D1:2".to_owned()]);
    }
}
