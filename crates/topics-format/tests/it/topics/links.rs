//! Block links (see `docs/format.md#topic-to-topic-links`): the Topic-to-Topic rule, dangling
//! links, and the rewrite after blocks move.

use scriptorium_topics_format::Code;
use scriptorium_topics_format::topic::{
    TopicFile, check_dangling_links, check_topic_links, parse_tree, quote, rewrite_links,
};

use super::TestResolver;

const DEF: &str = "[^e-0000000001]: Time: `2024`; Sources: [a](../sources/p/t/a.md#x)";

fn file(path: &str, paragraph: &str) -> TopicFile {
    TopicFile::new(
        path,
        format!(
            "{paragraph}\n\n{}\n",
            DEF.replace("../", &"../".repeat(path.matches('/').count() + 1))
        ),
    )
}

/// The reference's test: moving a block into `archive/grouped.md` re-paths the link in `other.md`.
#[test]
fn moved_block_links_are_repathed() {
    let files = [
        file("other.md", "See [the fact](grouped.md#^abc12345).[^e-0000000001] ^oth00001"),
        file("archive/grouped.md", "The fact.[^e-0000000001] ^abc12345"),
    ];
    let parsed = parse_tree(&files, &TestResolver);
    assert!(parsed.is_valid(), "{:?}", parsed.diagnostics);
    let changed = rewrite_links(&files, &parsed.units, &TestResolver);
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].path, "other.md");
    assert!(
        changed[0].text.starts_with(
            "See [the fact](archive/grouped.md#^abc12345).[^e-0000000001] ^oth00001\n"
        )
    );
    // Idempotent: rewriting the rewritten tree changes nothing.
    let mut files = files.to_vec();
    files[0] = changed[0].clone();
    assert!(
        rewrite_links(&files, &parse_tree(&files, &TestResolver).units, &TestResolver).is_empty()
    );
}

#[test]
fn rewrite_quotes_paths_like_python() {
    assert_eq!(quote("../a b/ü~x_y.md"), "../a%20b/%C3%BC~x_y.md");
    let files = [
        file("x/from.md", "Go [there](nowhere.md#^tgt00001).[^e-0000000001] ^frm00001"),
        file("y z/to.md", "There.[^e-0000000001] ^tgt00001"),
    ];
    let parsed = parse_tree(&files, &TestResolver);
    let changed = rewrite_links(&files, &parsed.units, &TestResolver);
    assert!(changed[0].text.starts_with("Go [there](../y%20z/to.md#^tgt00001)"));
}

#[test]
fn topic_links_must_target_blocks_only_when_changed() {
    let files = [file("p/a.md", "See [b](b.md) and [c](../q/c.md#top).[^e-0000000001] ^aaaa0001")];
    let parsed = parse_tree(&files, &TestResolver);
    let diagnostics = check_topic_links(&files, &parsed.units, &[]);
    let lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "topics/p/a.md:1:9: TOPIC_LINK_NOT_BLOCK Topic-to-Topic link must target #^block-id: p/a.md -> b.md",
            "topics/p/a.md:1:23: TOPIC_LINK_NOT_BLOCK Topic-to-Topic link must target #^block-id: p/a.md -> ../q/c.md#top",
        ]
    );
    // Unchanged since the baseline: not checked (the reference only checks edited units).
    assert!(check_topic_links(&files, &parsed.units, &parsed.units).is_empty());
}

#[test]
fn dangling_links_are_reported_at_the_link() {
    let files =
        [file("a.md", "See [x](b.md#^missing1) and [self](#^aaaa0001).[^e-0000000001] ^aaaa0001")];
    let parsed = parse_tree(&files, &TestResolver);
    let diagnostics = check_dangling_links(&files, &parsed.units);
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0].code, Code::DanglingBlockLink);
    assert_eq!(
        diagnostics[0].to_string(),
        "topics/a.md:1:13: DANGLING_BLOCK_LINK dangling block link: missing1"
    );
}
