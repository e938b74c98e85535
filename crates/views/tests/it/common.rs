//! Shared helpers: the frozen corpus workspace and a deterministic hand-written-style master.

use std::path::PathBuf;

use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::{TreeParse, parse_tree};
use scriptorium_workspace_fs::read::{FsSources, read_topics};

/// The valid corpus workspace of `topics-format` (read in place, never copied into this crate).
pub(crate) fn corpus_workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topics-format/tests/corpus/workspaces/valid")
}

pub(crate) fn parse_workspace(root: &std::path::Path) -> TreeParse {
    let files = read_topics(root).expect("corpus topics are readable");
    parse_tree(&files, &ArchiveResolver::new(FsSources::new(root)))
}

const PEOPLE: [&str; 8] = [
    "Mara",
    "the owner's brother Tomas",
    "Priya",
    "Dave",
    "Ines",
    "the landlord",
    "Kenji",
    "Aunt Rosa",
];
const PLACES: [&str; 6] = [
    "Lisbon",
    "the Leeds office",
    "a cabin near Bergen",
    "the allotment",
    "Osaka",
    "the bike shop",
];
const FACTS: [&str; 10] = [
    "keeps the spare keys and expects a message before anyone drops by",
    "is allergic to peanuts, so shared dinners avoid satay and most granola",
    "prefers phone calls to long emails and answers fastest before nine in the morning",
    "lent the owner a road bike that still needs its rear brake pads replaced",
    "is saving for a kiln and asked to be told about second-hand pottery sales",
    "runs the monthly book club, which has moved to the first Thursday",
    "finished a part-time data course and is now looking for analyst roles",
    "is learning Portuguese and likes practising over lunch on Fridays",
    "sends invoices as PDF only and wants them filed under the year they were paid",
    "is planning a walking trip and wants a list of huts that take bookings",
];
const ASIDES: [&str; 7] = [
    "The owner said this twice, once while laughing about it.",
    "This came up while planning the spring budget.",
    "It was mentioned in passing, but the owner asked to remember it.",
    "Nothing about this is expected to change before the summer.",
    "The owner wants reminders about it a week ahead, not on the day.",
    "When it last came up, the owner added that cost matters less than timing.",
    "The details were confirmed later the same evening.",
];

/// Paragraph `i` of the synthetic master: body text (with one or two citations) and its
/// definitions.
pub(crate) fn master_paragraph(i: usize) -> (String, Vec<String>) {
    let who = PEOPLE[i % PEOPLE.len()];
    let place = PLACES[(i * 5 + 1) % PLACES.len()];
    let fact = FACTS[(i * 3 + 2) % FACTS.len()];
    let aside = ASIDES[(i * 7 + 3) % ASIDES.len()];
    let first = format!("e-{:010x}", (i as u64 * 0x9e37_79b9 + 17) % 0xff_ffff_ffff);
    let second = format!("e-{:010x}", (i as u64 * 0x85eb_ca6b + 91) % 0xff_ffff_ffff);
    let block = format!("{:08x}", (i as u64 * 0x2545_f491 + 7) % 0xffff_ffff);
    let two = i.is_multiple_of(3);
    let mut body = format!("{} (item {i}), who lives near {place}, {fact}.", capitalize(who));
    if two {
        body.push_str(&format!("[^{first}] {aside}[^{second}]"));
    } else {
        body.push_str(&format!(" {aside}[^{first}]"));
    }
    body.push_str(&format!(" ^{block}"));
    let month = i % 12 + 1;
    let mut defs = vec![format!(
        "[^{first}]: Time: `2024-{month:02}`; Sources: [{who} said so](../sources/openprogram/_v2/sess-{i:04}.md#source-{:016x})",
        i * 31 + 5
    )];
    if two {
        defs.push(format!(
            "[^{second}]: Time: `undated`; Sources: [aside](../sources/openprogram/_v2/sess-{i:04}.md#source-{:016x}), [follow-up](https://example.org/notes/{i})",
            i * 31 + 6
        ));
    }
    (body, defs)
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// A master of `n` paragraphs, each followed by its definitions.
pub(crate) fn master_interleaved(n: usize) -> String {
    let mut text = String::from("# Core\n");
    for i in 0..n {
        let (body, defs) = master_paragraph(i);
        text.push('\n');
        text.push_str(&body);
        text.push('\n');
        for def in defs {
            text.push('\n');
            text.push_str(&def);
            text.push('\n');
        }
    }
    text
}

/// The same master with every definition grouped at the end (see
/// `docs/format.md#where-we-deliberately-differ`, row "core chunking").
pub(crate) fn master_grouped(n: usize) -> String {
    let mut text = String::from("# Core\n");
    let mut all = Vec::new();
    for i in 0..n {
        let (body, defs) = master_paragraph(i);
        text.push('\n');
        text.push_str(&body);
        text.push('\n');
        all.extend(defs);
    }
    for def in all {
        text.push('\n');
        text.push_str(&def);
        text.push('\n');
    }
    text
}
