//! The last-resort replacement of a literal by [`FORGOTTEN`](super::FORGOTTEN).

use std::borrow::Cow;
use std::ops::Range;

use super::FORGOTTEN;

/// `text` with every occurrence of `literal` replaced by [`FORGOTTEN`](super::FORGOTTEN), such
/// that the result holds no occurrence at all (borrowed when there was none).
///
/// Overlapping occurrences are replaced as their union, one marker per run. A marker can join
/// the text around it into a new occurrence (`N]b` in `N]bb` becomes `[FORGOTTEN]b`, which
/// holds `N]b` again); such an occurrence always takes in characters of the original text that
/// were kept, so those join the run and the replacement is repeated: each round covers more of
/// the original, and one round is the rule. `literal` must not be part of the marker (the
/// [`Forgetting`](super::Forgetting) constructor refuses that); an empty literal changes nothing.
pub fn redact<'t>(text: &'t str, literal: &str) -> Cow<'t, str> {
    if literal.is_empty() || FORGOTTEN.contains(literal) || !text.contains(literal) {
        return Cow::Borrowed(text);
    }
    let mut covered: Vec<Range<usize>> = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(literal) {
        let start = from + at;
        covered.push(start..start + literal.len());
        // Overlapping occurrences start inside this one: look again one character on.
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    merge(&mut covered);
    loop {
        let (out, pieces) = render(text, &covered);
        let mut joined = Vec::new();
        let mut search = 0;
        while let Some(at) = out[search..].find(literal) {
            let hit = search + at..search + at + literal.len();
            // The kept original bytes this occurrence takes in (a marker is covered already).
            let first = pieces.partition_point(|piece| piece.out.end <= hit.start);
            for piece in pieces[first..].iter().take_while(|piece| piece.out.start < hit.end) {
                if let Some(orig) = &piece.kept {
                    let lo = orig.start + hit.start.saturating_sub(piece.out.start);
                    let hi = orig.start + (hit.end.min(piece.out.end) - piece.out.start);
                    joined.push(lo..hi);
                }
            }
            search = hit.end;
        }
        if joined.is_empty() {
            return Cow::Owned(out);
        }
        covered.extend(joined);
        merge(&mut covered);
    }
}

/// One piece of the rendered text: kept original bytes (`kept`) or a marker.
struct Piece {
    out: Range<usize>,
    kept: Option<Range<usize>>,
}

/// The text with each covered run replaced by the marker, and where each piece came from.
fn render(text: &str, covered: &[Range<usize>]) -> (String, Vec<Piece>) {
    let mut out = String::with_capacity(text.len());
    let mut pieces = Vec::with_capacity(covered.len() * 2 + 1);
    let mut at = 0;
    for run in covered.iter().chain(std::iter::once(&(text.len()..text.len()))) {
        if run.start > at {
            pieces.push(Piece {
                out: out.len()..out.len() + run.start - at,
                kept: Some(at..run.start),
            });
            out.push_str(&text[at..run.start]);
        }
        if run.is_empty() {
            break;
        }
        pieces.push(Piece { out: out.len()..out.len() + FORGOTTEN.len(), kept: None });
        out.push_str(FORGOTTEN);
        at = run.end;
    }
    (out, pieces)
}

/// Sorts `runs` and merges those that overlap or touch. Ranges are always at character
/// boundaries: an occurrence starts and ends at boundaries of the rendered text, and kept pieces
/// are the original's own characters.
fn merge(runs: &mut Vec<Range<usize>>) {
    runs.sort_by_key(|run| run.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(runs.len());
    for run in runs.drain(..) {
        match merged.last_mut() {
            Some(last) if run.start <= last.end => last.end = last.end.max(run.end),
            _ => merged.push(run),
        }
    }
    *runs = merged;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, literal: &str, expected: &str) {
        let out = redact(text, literal);
        assert_eq!(out, expected, "{text:?} without {literal:?}");
        assert!(!out.contains(literal), "{out:?} still holds {literal:?}");
    }

    #[test]
    fn occurrences_become_one_marker_per_run() {
        check("call Ana, Ana knows", "Ana", "call [FORGOTTEN], [FORGOTTEN] knows");
        check("aaa", "aa", "[FORGOTTEN]");
        check("AnaAna", "Ana", "[FORGOTTEN]");
        check("nothing here", "Ana", "nothing here");
        check("é日é", "日", "é[FORGOTTEN]é");
    }

    #[test]
    fn a_marker_that_joins_a_new_occurrence_takes_it_in() {
        check("N]bb", "N]b", "[FORGOTTEN]");
        check("a]xx", "]x", "a[FORGOTTEN]");
        check("yy[", "y[", "[FORGOTTEN]");
        check("ab]]", "N]]", "ab]]");
        check("Ab]] N]]]", "N]]", "Ab]] [FORGOTTEN]");
    }

    #[test]
    fn a_literal_the_marker_holds_is_left_alone() {
        assert_eq!(redact("FORGOTTEN", "GOT"), "FORGOTTEN");
        assert_eq!(redact("x", ""), "x");
    }
}
