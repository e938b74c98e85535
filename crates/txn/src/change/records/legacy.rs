//! In-place edits of legacy `mem_` units (see `docs/format.md#memory-units`).
//!
//! A legacy paragraph has no block suffix; each citation group made only of `mem_*` labels is
//! one unit per label, whose content is the text since the previous such group. An update
//! replaces that text and rewrites the label's definition where it stands; a delete removes
//! the text and the citation (and the definition once nothing cites it). The other units of
//! the paragraph and the prose after its last group are left as they are; when no legacy
//! group is left, the whole paragraph goes.

use std::ops::Range;

use scriptorium_topics_format::topic::is_memory_id;

/// One legacy unit located in its paragraph text.
pub(super) struct Segment {
    /// The unit's text (from the previous legacy group's end to its group's start).
    pub(super) text: Range<usize>,
    /// The whole citation group holding the unit's label.
    pub(super) group: Range<usize>,
    /// The `[^label]` token of the unit.
    pub(super) token: Range<usize>,
    /// Whether the group cites other labels too.
    pub(super) shared: bool,
    /// How many legacy groups the paragraph has.
    pub(super) groups: usize,
}

/// A citation group: its range and each `[^label]` token's range and label.
type Group<'a> = (Range<usize>, Vec<(Range<usize>, &'a str)>);

/// The citation groups of `text`, left to right.
fn groups(text: &str) -> Vec<Group<'_>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find("[^") {
        let start = from + pos;
        let mut tokens = Vec::new();
        let mut i = start;
        while let Some((end, label)) = token_at(text, i) {
            tokens.push((i..end, label));
            i = end;
        }
        if tokens.is_empty() {
            from = start + 2;
        } else {
            out.push((start..i, tokens));
            from = i;
        }
    }
    out
}

/// The `[^label]` token at `i`: its end and label.
fn token_at(text: &str, i: usize) -> Option<(usize, &str)> {
    let rest = text.get(i..)?.strip_prefix("[^")?;
    let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))?;
    (len > 0 && rest[len..].starts_with(']')).then(|| (i + 2 + len + 1, &rest[..len]))
}

/// Locates legacy unit `memory_id` in paragraph `text` (`None` when it is not one of its
/// legacy units).
pub(super) fn locate(text: &str, memory_id: &str) -> Option<Segment> {
    let legacy: Vec<_> = groups(text)
        .into_iter()
        .filter(|(_, tokens)| tokens.iter().all(|(_, l)| is_memory_id(l)))
        .collect();
    let mut cursor = 0;
    for (group, tokens) in &legacy {
        if let Some((token, _)) = tokens.iter().find(|(_, l)| *l == memory_id) {
            return Some(Segment {
                text: cursor..group.start,
                group: group.clone(),
                token: token.clone(),
                shared: tokens.len() > 1,
                groups: legacy.len(),
            });
        }
        cursor = group.end;
    }
    None
}

/// `text` with unit `seg`'s content replaced by `content` (its label kept).
pub(super) fn replace(text: &str, seg: &Segment, memory_id: &str, content: &str) -> String {
    let old = &text[seg.text.clone()];
    let lead = &old[..old.len() - old.trim_start().len()];
    let trail = &old[old.trim_end().len()..];
    if seg.shared {
        // The group's other labels keep the old text: the updated unit goes first.
        let mut out = String::with_capacity(text.len() + content.len());
        out.push_str(&text[..seg.text.start]);
        out.push_str(lead);
        out.push_str(content);
        out.push_str(&format!("[^{memory_id}] "));
        out.push_str(old.trim_start());
        out.push_str(&text[seg.text.end..seg.token.start]);
        out.push_str(&text[seg.token.end..]);
        out
    } else {
        format!("{}{lead}{content}{trail}{}", &text[..seg.text.start], &text[seg.text.end..])
    }
}

/// `text` without unit `seg` (its content too unless other labels of its group keep it), or
/// `None` when the paragraph keeps no legacy unit.
pub(super) fn remove(text: &str, seg: &Segment) -> Option<String> {
    if seg.shared {
        return Some(format!("{}{}", &text[..seg.token.start], &text[seg.token.end..]));
    }
    if seg.groups <= 1 {
        return None;
    }
    // Keep the separator that preceded the removed text.
    let old = &text[seg.text.start..seg.group.end];
    let lead = &old[..old.len() - old.trim_start().len()];
    let rest = &text[seg.group.end..];
    let (lead, rest) = match (seg.text.start, lead.is_empty()) {
        (0, _) => ("", rest.trim_start()),
        (_, false) => (lead, rest.trim_start_matches([' ', '\t'])),
        (_, true) => ("", rest),
    };
    Some(format!("{}{lead}{rest}", &text[..seg.text.start]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_edits_and_removals() {
        let text = "A shop.[^mem_a] Tea.[^mem_b][^e1] Coffee.[^mem_c] Trailing.";
        let b = locate(text, "mem_b");
        assert!(b.is_none(), "a group with a non-mem label is no legacy group");
        let c = locate(text, "mem_c").expect("mem_c");
        assert_eq!(&text[c.text.clone()], " Tea.[^mem_b][^e1] Coffee.");
        let a = locate(text, "mem_a").expect("mem_a");
        assert_eq!(
            replace(text, &a, "mem_a", "A bakery."),
            "A bakery.[^mem_a] Tea.[^mem_b][^e1] Coffee.[^mem_c] Trailing."
        );
        assert_eq!(
            remove(text, &a).as_deref(),
            Some("Tea.[^mem_b][^e1] Coffee.[^mem_c] Trailing.")
        );
        assert_eq!(remove(text, &c).as_deref(), Some("A shop.[^mem_a] Trailing."));
        let shared = "X.[^mem_a][^mem_b] Y.";
        let a = locate(shared, "mem_a").expect("shared");
        assert_eq!(replace(shared, &a, "mem_a", "Z."), "Z.[^mem_a] X.[^mem_b] Y.");
        assert_eq!(remove(shared, &a).as_deref(), Some("X.[^mem_b] Y."));
        let only = locate("X.[^mem_a] Y.", "mem_a").expect("only");
        assert_eq!(remove("X.[^mem_a] Y.", &only), None);
    }
}
