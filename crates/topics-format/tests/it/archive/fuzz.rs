//! A fuzz loop for the strict scan: arbitrary lines and bytes never panic, the frames found are
//! always the file's own bytes, and a huge `record-lines` costs nothing.

use proptest::prelude::*;
use scriptorium_topics_format::source::{V2_MARKER, anchor_for, check_archive, scan};

const PATH: &str = "sources/openprogram/_v2/t.md";

fn line() -> impl Strategy<Value = String> {
    let id =
        prop_oneof![Just("openprogram/t/m1"), Just("openprogram/t/m2"), Just("openprogram/u/m1")];
    prop_oneof![
        Just(String::new()),
        Just(V2_MARKER.to_owned()),
        id.clone().prop_map(|id| format!("<a id=\"{}\"></a>", anchor_for(id))),
        id.prop_map(|id| format!("<!-- source-id:{id} -->")),
        Just("<a id=\"source-\"></a>".to_owned()),
        Just("<!-- speaker-id:owner%2Flocal -->".to_owned()),
        Just("<!-- speaker-id:%ZZ -->".to_owned()),
        Just("<!-- speaker-id: -->".to_owned()),
        Just("<!-- source-meta:eyJ -->".to_owned()),
        (0u32..4).prop_map(|n| format!("<!-- record-lines:{n} -->")),
        Just("<!-- record-lines:999999999 -->".to_owned()),
        Just("[t] user: hello".to_owned()),
        Just("[t] user: hello\r".to_owned()),
        any::<String>(),
    ]
}

fn archive_text() -> impl Strategy<Value = String> {
    (any::<bool>(), prop::collection::vec(line(), 0..40), any::<bool>()).prop_map(
        |(header, lines, final_lf)| {
            let mut text = if header { format!("{V2_MARKER}\n\n") } else { String::new() };
            text.push_str(&lines.join("\n"));
            if final_lf {
                text.push('\n');
            }
            text
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn scanning_arbitrary_lines_never_panics(text in archive_text()) {
        let scanned = scan(PATH, &text);
        prop_assert_eq!(scanned.complete, scanned.fault.is_none());
        let lines: Vec<&str> = text.split('\n').collect();
        for frame in &scanned.frames {
            // Every frame is the file's own bytes at its own lines.
            let start = frame.line as usize - 1;
            let rendered = frame.render();
            let own: Vec<&str> = rendered.trim_end_matches('\n').split('\n').collect();
            prop_assert_eq!(&lines[start..start + own.len()], own.as_slice());
        }
        let _ = check_archive(PATH, &text);
    }

    #[test]
    fn scanning_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = scan(PATH, &text);
        let with_header = format!("{V2_MARKER}\n\n{text}");
        let _ = scan(PATH, &with_header);
        let _ = check_archive("sources/openprogram/t.md", &text);
    }
}

/// A declared count of a billion lines is compared with the lines that exist before anything is
/// sized by it: sizing anything by it would need gigabytes, so this finishing at all is the test.
#[test]
fn a_huge_record_count_allocates_nothing_proportional() {
    let id = "openprogram/t/m1";
    for tail in ["", "\n", "[t] user: x\n\n"] {
        let text = format!(
            "{V2_MARKER}\n\n<a id=\"{}\"></a>\n<!-- source-id:{id} -->\n<!-- record-lines:999999999 -->\n[t] user: x\n{tail}",
            anchor_for(id)
        );
        let scanned = scan(PATH, &text);
        assert!(!scanned.complete);
        assert!(scanned.frames.is_empty());
    }
}
