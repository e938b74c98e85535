//! Merging archives when one clone has redacted and the other not yet (see
//! `scriptorium_topics_format::rewrite::is_redaction`): the redacted frame wins on either side,
//! as a tombstone does, and anything that is not a redaction of the other frame still
//! conflicts. The corpus archives redacted with the shared mapper, then the properties: for
//! random records and a random redaction of them the merge keeps the redaction whatever the
//! order, and a frame saying something its original did not never wins.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use scriptorium_topics_format::forget::tombstone_archive;
use scriptorium_topics_format::merge::{extends_archive, merge_archive};
use scriptorium_topics_format::rewrite::rewrite_archive;
use scriptorium_topics_format::source::frame::append_frames_to;
use scriptorium_topics_format::source::{ArchiveRecord, is_v2_source_path, render_archive, scan};

use crate::redact::{edit_records, plant_record, redact};

const ARCHIVE: &str = "sources/openprogram/_v2/sess-7f2a.md";

fn record(message: &str, n: u64, content: &str) -> String {
    let mut record = ArchiveRecord::new("openprogram", "sess-7f2a", message, n, "user", content);
    record.timestamp = Some(format!("2024-03-15T10:00:0{n}Z"));
    record.speaker_id = Some("owner/local".into());
    record.render()
}

/// The archive of `(message, content)` records, numbered in order.
fn archive(records: &[(&str, &str)]) -> String {
    let frames: Vec<String> = records
        .iter()
        .enumerate()
        .map(|(n, (message, content))| record(message, n as u64, content))
        .collect();
    render_archive(&frames)
}

/// Both orders of the merge give `expected`, which extends both sides; merging it again with
/// either side gives it back.
#[track_caller]
fn merges_to(a: &str, b: &str, expected: &str) {
    for (ours, theirs) in [(a, b), (b, a)] {
        let merged = merge_archive(ARCHIVE, Some(ours), Some(theirs)).expect("merges");
        assert_eq!(merged.as_deref(), Some(expected), "ours:\n{ours}\ntheirs:\n{theirs}");
        assert!(extends_archive(ARCHIVE, ours, expected), "from:\n{ours}");
        for side in [ours, theirs, expected] {
            let again = merge_archive(ARCHIVE, Some(expected), Some(side)).expect("merges");
            assert_eq!(again.as_deref(), Some(expected), "again with:\n{side}");
        }
    }
    assert!(scan(ARCHIVE, expected).complete);
}

/// Both orders of the merge conflict, naming `source`.
#[track_caller]
fn conflicts(a: &str, b: &str, source: &str) {
    for (ours, theirs) in [(a, b), (b, a)] {
        let err = merge_archive(ARCHIVE, Some(ours), Some(theirs)).expect_err("conflicts");
        assert!(err.reason.contains(&format!("source {source} differs")), "{err}");
        assert!(!extends_archive(ARCHIVE, ours, theirs));
    }
}

// ---- the frozen corpus ----

/// Every valid v2 corpus archive with something planted in each record: the rewrite with the
/// shared mapper wins over it in both orders of the merge, and an archive can become it.
#[test]
fn the_corpus_archives_merge_to_their_redactions() {
    let mut merged = 0;
    for case in std::fs::read_dir(corpus().join("sources")).expect("corpus") {
        let case = case.expect("corpus entry").path();
        let name = case.file_name().expect("a name").to_string_lossy().into_owned();
        if !name.starts_with("valid-") {
            continue;
        }
        for path in archives_under(&case) {
            let rel = path.strip_prefix(&case).expect("below the case");
            let rel = rel.to_string_lossy().replace('\\', "/");
            if !is_v2_source_path(&rel) {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("readable");
            let planted = edit_records(&rel, &text, &plant_record);
            let Some(redacted) = rewrite_archive(&rel, &planted, &redact).expect("complete") else {
                continue;
            };
            for (ours, theirs) in [(&planted, &redacted), (&redacted, &planted)] {
                let out = merge_archive(&rel, Some(ours), Some(theirs)).expect("merges");
                assert_eq!(out.as_ref(), Some(&redacted), "{name}");
            }
            assert!(extends_archive(&rel, &planted, &redacted), "{name}");
            assert!(!extends_archive(&rel, &redacted, &planted), "{name}");
            merged += 1;
        }
    }
    assert!(merged >= 3, "only {merged} corpus archives had records to redact");
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn archives_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(archives_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

// ---- cases ----

#[test]
fn a_redacted_record_wins_over_its_original_in_both_orders() {
    let original = archive(&[("u1", "one"), ("u2", "my key is sk-0123 ok"), ("u3", "three")]);
    let redacted =
        archive(&[("u1", "one"), ("u2", "my key is [REDACTED:openai-key] ok"), ("u3", "three")]);
    merges_to(&original, &redacted, &redacted);
    // What the rewrite makes of the original is such a redaction.
    let mapped = rewrite_archive(ARCHIVE, &original, &|text: &str| {
        text.contains("sk-0123").then(|| text.replace("sk-0123", "[REDACTED:openai-key]"))
    });
    assert_eq!(mapped, Ok(Some(redacted)));

    // Each side redacted a different record: both redactions, whatever the order.
    let original = archive(&[("u1", "one sk-1"), ("u2", "two sk-2")]);
    let first = archive(&[("u1", "one [REDACTED:k]"), ("u2", "two sk-2")]);
    let second = archive(&[("u1", "one sk-1"), ("u2", "two [REDACTED:k]")]);
    let both = archive(&[("u1", "one [REDACTED:k]"), ("u2", "two [REDACTED:k]")]);
    merges_to(&first, &second, &both);
    merges_to(&original, &both, &both);
}

#[test]
fn a_removed_private_span_wins_without_a_marker() {
    let original = archive(&[
        ("u1", "lives at <private>12 Elm St.\nflat 3</private>, moved in May"),
        ("u2", "tail <PRIVATE>runs to the end\nof the message"),
    ]);
    let redacted = archive(&[("u1", "lives at , moved in May"), ("u2", "tail ")]);
    merges_to(&original, &redacted, &redacted);
    // The deletion must be every private span, whole, and nothing else.
    let partial = archive(&[("u1", "lives at <private>12 Elm St."), ("u2", "tail ")]);
    conflicts(&original, &partial, "openprogram/sess-7f2a/u1");
    let more = archive(&[("u1", "lives at , moved"), ("u2", "tail ")]);
    conflicts(&original, &more, "openprogram/sess-7f2a/u1");
    let plain = archive(&[("u1", "one two three")]);
    conflicts(&plain, &archive(&[("u1", "one three")]), "openprogram/sess-7f2a/u1");
}

#[test]
fn unrelated_texts_still_conflict() {
    let ours = archive(&[("u1", "one"), ("u2", "the meeting is on Monday")]);
    let theirs = archive(&[("u1", "one"), ("u2", "the meeting is on Tuesday")]);
    conflicts(&ours, &theirs, "openprogram/sess-7f2a/u2");
}

#[test]
fn a_marker_where_the_original_had_other_text_around_it_conflicts() {
    let original = archive(&[("u1", "token sk-0123 for staging")]);
    for other in [
        "token [REDACTED:k] for production",
        "key [REDACTED:k] for staging",
        "token [REDACTED:k] for staging, rotated",
        "token sk-0123 [REDACTED:k] for staging",
    ] {
        conflicts(&original, &archive(&[("u1", other)]), "openprogram/sess-7f2a/u1");
    }
    // The same redaction under another header is another record.
    let mut moved = ArchiveRecord::new("openprogram", "sess-7f2a", "u1", 0, "assistant", "x");
    moved.content = "token [REDACTED:k] for staging".into();
    moved.timestamp = Some("2024-03-15T10:00:00Z".into());
    moved.speaker_id = Some("owner/local".into());
    moved.speaker_display = Some("Someone".into());
    conflicts(&original, &render_archive(&[moved.render()]), "openprogram/sess-7f2a/u1");
}

#[test]
fn a_tombstone_wins_over_a_redaction() {
    let original = archive(&[("u1", "one"), ("u2", "key sk-0123")]);
    let redacted = archive(&[("u1", "one"), ("u2", "key [REDACTED:k]")]);
    let forgotten =
        tombstone_archive(ARCHIVE, &original, &["openprogram/sess-7f2a/u2".into()].into())
            .expect("complete")
            .expect("holds u2");
    merges_to(&redacted, &forgotten, &forgotten);
    merges_to(&original, &forgotten, &forgotten);
}

#[test]
fn of_two_redactions_the_one_that_redacts_the_other_wins_else_they_conflict() {
    let original = archive(&[("u1", "a=sk-0123 b=ghp_456")]);
    let first = archive(&[("u1", "a=[REDACTED:openai] b=ghp_456")]);
    let both = archive(&[("u1", "a=[REDACTED:openai] b=[REDACTED:github-pat]")]);
    let second = archive(&[("u1", "a=sk-0123 b=[REDACTED:github-pat]")]);
    merges_to(&first, &both, &both);
    merges_to(&second, &both, &both);
    merges_to(&original, &both, &both);
    // Each clone's rules found a different secret: no frame holds both without the original.
    conflicts(&first, &second, "openprogram/sess-7f2a/u1");
    // The same secret under two rule IDs.
    let renamed = archive(&[("u1", "a=[REDACTED:generic] b=ghp_456")]);
    conflicts(&first, &renamed, "openprogram/sess-7f2a/u1");
}

#[test]
fn with_new_frames_on_each_side_the_redaction_keeps_ours_place() {
    let base = [("u1", "one"), ("u2", "key sk-0123")];
    let ours = append_frames_to(&archive(&base), &[record("u3", 3, "three")]);
    let theirs_base = archive(&[("u1", "one"), ("u2", "key [REDACTED:k]")]);
    let theirs = append_frames_to(&theirs_base, &[record("u4", 4, "four")]);
    let merged = merge_archive(ARCHIVE, Some(&ours), Some(&theirs)).expect("merges").expect("text");
    assert_eq!(
        merged,
        append_frames_to(&theirs_base, &[record("u3", 3, "three"), record("u4", 4, "four")])
    );
    assert!(extends_archive(ARCHIVE, &ours, &merged));
    let back = merge_archive(ARCHIVE, Some(&theirs), Some(&ours)).expect("merges").expect("text");
    assert_eq!(back, append_frames_to(&theirs, &[record("u3", 3, "three")]));
    assert!(extends_archive(ARCHIVE, &theirs, &back));
    // Idempotent: merging either result with either side again changes nothing.
    for (result, side) in [(&merged, &ours), (&merged, &theirs), (&back, &ours), (&back, &theirs)] {
        let again = merge_archive(ARCHIVE, Some(result), Some(side)).expect("merges");
        assert_eq!(again.as_ref(), Some(result));
    }
}

// ---- properties ----

/// A piece of a generated message: what the original holds and what its redaction holds.
#[derive(Clone, Debug)]
enum Piece {
    /// Text both hold (never `<`, `%` or `@`; may be a marker the original already held).
    Keep(String),
    /// A secret (holds `@`) the redaction replaces by `[REDACTED:<rule>]`.
    Secret(String, usize),
    /// A private span the redaction drops.
    Private(String),
}

const RULES: &[&str] = &["generic-api-key", "aws-access-token", "owner-1", "Ticket.X_2"];

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        3 => "[ab \n]{1,5}".prop_map(Piece::Keep),
        1 => Just(Piece::Keep("[REDACTED:old]".into())),
        2 => ("[ab]{0,3}", 0..RULES.len()).prop_map(|(s, r)| Piece::Secret(format!("@{s}"), r)),
        1 => "[ab@ \n]{0,4}".prop_map(Piece::Private),
    ]
}

/// The original message and its redaction (an unclosed span at the end when `tail` is set).
fn messages(pieces: &[Piece], tail: Option<&str>) -> (String, String) {
    let (mut original, mut redacted) = (String::new(), String::new());
    for piece in pieces {
        match piece {
            Piece::Keep(text) => {
                original.push_str(text);
                redacted.push_str(text);
            }
            Piece::Secret(text, rule) => {
                original.push_str(text);
                redacted.push_str(&format!("[REDACTED:{}]", RULES[*rule]));
            }
            Piece::Private(text) => original.push_str(&format!("<private>{text}</private>")),
        }
    }
    if let Some(tail) = tail {
        original.push_str(&format!("<private>{tail}"));
    }
    (original, redacted)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_merge_keeps_a_random_redaction_whatever_the_order(
        records in prop::collection::vec(
            (prop::collection::vec(piece(), 0..8), prop::option::of("[ab@ \n]{0,4}")),
            1..5,
        ),
        extra in any::<bool>(),
    ) {
        let pairs: Vec<(String, String)> =
            records.iter().map(|(pieces, tail)| messages(pieces, tail.as_deref())).collect();
        let ids: Vec<String> = (0..pairs.len()).map(|n| format!("m{n}")).collect();
        let original: Vec<(&str, &str)> =
            ids.iter().zip(&pairs).map(|(id, (o, _))| (id.as_str(), o.as_str())).collect();
        let redacted: Vec<(&str, &str)> =
            ids.iter().zip(&pairs).map(|(id, (_, r))| (id.as_str(), r.as_str())).collect();
        let (original, redacted) = (archive(&original), archive(&redacted));
        for (ours, theirs) in [(&original, &redacted), (&redacted, &original)] {
            let merged = merge_archive(ARCHIVE, Some(ours), Some(theirs));
            prop_assert_eq!(merged, Ok(Some(redacted.clone())));
        }
        prop_assert!(extends_archive(ARCHIVE, &original, &redacted));
        if original != redacted {
            prop_assert!(!extends_archive(ARCHIVE, &redacted, &original));
        }
        // With a frame only the original's side has, still the redaction, then that frame.
        if extra {
            let grown = append_frames_to(&original, &[record("x", 9, "new")]);
            let want = append_frames_to(&redacted, &[record("x", 9, "new")]);
            let merged = merge_archive(ARCHIVE, Some(&redacted), Some(&grown));
            prop_assert_eq!(merged, Ok(Some(want.clone())));
            let merged = merge_archive(ARCHIVE, Some(&grown), Some(&redacted));
            prop_assert_eq!(merged, Ok(Some(want)));
        }
    }

    /// A frame whose message holds a character its original never held (`%`) never wins: the
    /// merge conflicts or keeps the original.
    #[test]
    fn a_frame_saying_something_new_never_wins(
        pieces in prop::collection::vec(piece(), 0..8),
        tail in prop::option::of("[ab@ \n]{0,4}"),
        at in any::<prop::sample::Index>(),
    ) {
        let (original, redacted) = messages(&pieces, tail.as_deref());
        let mut changed = redacted.clone();
        // Anywhere outside a marker: before the first one, or at the end.
        let cut = at.index(changed.find('[').unwrap_or(changed.len()) + 1);
        changed.insert(cut.min(changed.len()), '%');
        let (original, changed) = (archive(&[("u1", &original)]), archive(&[("u1", &changed)]));
        for (ours, theirs) in [(&original, &changed), (&changed, &original)] {
            match merge_archive(ARCHIVE, Some(ours), Some(theirs)) {
                Ok(Some(merged)) => prop_assert_eq!(&merged, &original),
                Ok(None) => prop_assert!(false, "an archive went missing"),
                Err(err) => prop_assert!(err.reason.contains("differs"), "{}", err),
            }
        }
        prop_assert!(!extends_archive(ARCHIVE, &original, &changed));
    }
}
