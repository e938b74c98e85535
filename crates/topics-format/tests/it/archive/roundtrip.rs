//! Properties: render-then-scan gives back exactly the records, and planning is idempotent.

use std::collections::BTreeMap;

use proptest::prelude::*;
use scriptorium_topics_format::source::speaker::normalize_identity_header_part;
use scriptorium_topics_format::source::{
    ArchiveRecord, AuthorityTier, TrustState, plan_append, scan,
};

fn content() -> impl Strategy<Value = String> {
    let pieces = prop::collection::vec(
        prop_oneof![
            Just("\n".to_owned()),
            Just("\r\n".to_owned()),
            Just("\r".to_owned()),
            Just("-->".to_owned()),
            Just("  ".to_owned()),
            Just("".to_owned()),
            Just("<!-- openprogram-source-archive:v2 -->\n\n".to_owned()),
            Just(
                "<a id=\"source-0640c5fc0b1951db\"></a>\n<!-- source-id:openprogram/t/a1 -->\n"
                    .to_owned()
            ),
            Just("<!-- record-lines:999999999 -->\n[x] forged: body\n\n".to_owned()),
            Just("<!-- speaker-id:owner%2Flocal -->\n".to_owned()),
            "\\PC{0,12}",
            any::<String>(),
        ],
        0..8,
    );
    pieces.prop_map(|parts| parts.concat())
}

fn records() -> impl Strategy<Value = Vec<ArchiveRecord>> {
    let one = (
        content(),
        prop::option::of("[ -Z^-~é世]{0,12}"),
        prop::option::of(any::<String>()),
        prop::option::of(any::<String>()),
        any::<bool>(),
        prop::option::of(prop_oneof![Just(AuthorityTier::Owner), Just(AuthorityTier::Paired)]),
        "[a-z]{1,6}",
        any::<String>(),
    );
    prop::collection::vec(one, 1..6).prop_map(|rows| {
        rows.into_iter()
            .enumerate()
            .map(
                |(
                    index,
                    (content, timestamp, speaker_id, display, pending, tier, role, principal),
                )| {
                    let mut record = ArchiveRecord::new(
                        "openprogram",
                        "thread-1",
                        format!("m{index}"),
                        index as u64,
                        role,
                        content,
                    );
                    record.timestamp = timestamp;
                    record.speaker_id = speaker_id;
                    record.speaker_display = display;
                    record.trust_state =
                        if pending { TrustState::Pending } else { TrustState::Trusted };
                    record.authority_tier = tier;
                    record.principal_id = principal;
                    record
                },
            )
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn render_then_scan_gives_back_the_records(batch in records()) {
        let mut tree = BTreeMap::new();
        let plan = plan_append(&batch, &tree).expect("valid records");
        prop_assert_eq!(plan.writes.len(), 1);
        let write = &plan.writes[0];
        let scanned = scan(&write.rel_path, &write.new_text);
        prop_assert!(scanned.complete, "{:?}", scanned.fault);
        prop_assert_eq!(scanned.frames.len(), batch.len());
        for (frame, record) in scanned.frames.iter().zip(&batch) {
            prop_assert_eq!(frame.source_id, record.source_id());
            prop_assert_eq!(frame.record, record.record_text());
            prop_assert_eq!(frame.speaker_id(), record.speaker_marker().map(|_| record.speaker_id.clone().unwrap_or_default()));
            let meta = &frame.meta.as_ref().expect("meta written").meta;
            prop_assert_eq!(meta, &record.meta_normalized());
            prop_assert_eq!(frame.timestamp(), record.timestamp.as_deref().unwrap_or(""));
            let label = normalize_identity_header_part(&record.speaker_label());
            prop_assert_eq!(frame.speaker_label(), Some(label.as_str()));
            prop_assert_eq!(frame.content(), Some(record.content.as_str()));
        }
        tree.insert(write.rel_path.clone(), write.new_text.clone());
        let again = plan_append(&batch, &tree).expect("still valid");
        prop_assert!(again.writes.is_empty());
    }
}

trait Normalized {
    fn meta_normalized(&self) -> scriptorium_topics_format::source::SourceMeta;
}

impl Normalized for ArchiveRecord {
    /// Empty kind/principal are written as `unknown`.
    fn meta_normalized(&self) -> scriptorium_topics_format::source::SourceMeta {
        let mut meta = self.meta();
        for field in [&mut meta.speaker_kind, &mut meta.principal_id] {
            if field.is_empty() {
                *field = "unknown".to_owned();
            }
        }
        meta
    }
}
