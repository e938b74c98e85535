//! The Markdown preview (`web::markdown::render`): the preview's rules (listed in the module docs
//! of `crates/server/src/web/markdown.rs`) on hand-written cases, hostile payloads that must never
//! reach the output, a snapshot of the budget-tracker topic (the example that opens
//! `docs/format.md#topic-files`), and the footnote and block-ID fixtures of the shared test data
//! (`$SCRIPTORIUM_TEST_DATA/markdown-specs/`, `…/obsidian-export/`), which are reported as ignored
//! when the data is absent.

use std::path::Path;

use scriptorium_server::web::markdown::{MAX_NESTING, render};
use scriptorium_testkit::{Failed, Trial, data_trial, fail, run};

/// Fails the trial unless `cond`.
fn check(cond: bool, what: impl std::fmt::Display) -> Result<(), Failed> {
    if cond { Ok(()) } else { Err(fail(what)) }
}

/// The tags of `html` (`<…>`), lowercased.
fn tags(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        let Some(end) = rest[at..].find('>') else { break };
        out.push(rest[at..at + end + 1].to_lowercase());
        rest = &rest[at + end + 1..];
    }
    out
}

/// The displayed footnote numbers, in order (`[1]`, `[2]`, … inside `footnote-ref` sups).
fn ref_numbers(html: &str) -> Vec<String> {
    html.split("<sup class=\"footnote-ref\">")
        .skip(1)
        .filter_map(|part| {
            let text = part.split("</a>").next()?;
            let label = text.rsplit('>').next()?;
            Some(label.trim_start_matches('[').trim_end_matches(']').to_owned())
        })
        .collect()
}

/// The number of footnote definitions listed at the end.
fn definitions(html: &str) -> usize {
    html.split("<section class=\"footnotes\">")
        .nth(1)
        .map_or(0, |s| s.matches("<li id=\"fn-").count())
}

/// No tag other than the allowed ones, no event handler, no script URL.
fn assert_safe(html: &str) -> Result<(), Failed> {
    const ALLOWED: &[&str] = &[
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "a",
        "sup",
        "section",
        "hr",
        "code",
        "pre",
        "em",
        "strong",
        "del",
        "blockquote",
        "br",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    ];
    for tag in tags(html) {
        let name: String = tag
            .trim_start_matches('<')
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        check(ALLOWED.contains(&name.as_str()), format!("tag {tag} in {html}"))?;
        for bad in [" on", "style=", "javascript:", "data:", "srcdoc", "<!--"] {
            check(!tag.contains(bad), format!("{bad:?} in tag {tag}"))?;
        }
    }
    Ok(())
}

fn case(name: &str, test: fn() -> Result<(), Failed>) -> Trial {
    Trial::test(name, test)
}

const BUDGET_TRACKER: &str = "# Budget tracker\n\n## Status\n\n\
Craig is building a budget tracker in Flask, due 2024-04-15.[^e-cecd4ddc68] ^6dfc15f1\n\n\
[^e-cecd4ddc68]: Time: `2024-03-15`; Sources: [Flask tracker](../../sources/openprogram/_v2/sess-7f2a.md#source-d7e6772098d6b0d9)\n\n\
Merged fact.[^e-4f4c7a2b93] ^abc12345 ^def45678\n\n\
[^e-4f4c7a2b93]: Time: `2024-03`; Sources: [merge](../../sources/openprogram/_v2/sess-7f2a.md#source-0640c5fc0b1951db)\n\n\
Calvin plans to stay in Japan for a year.[^e-9bae588a38][^e-1c2d3e4f50] ^7ffb575c\n\n\
[^e-9bae588a38]: Time: `2024-01`; Sources: [plan](../../sources/openprogram/_v2/sess-7f2a.md#source-1111111111111111)\n\
[^e-1c2d3e4f50]: Time: `2024-02`; Sources: [update](../../sources/openprogram/_v2/sess-7f2a.md#source-2222222222222222)\n\n\
Dave runs a bike shop; see [tracker](../projects/budget-tracker.md#^6dfc15f1).[^e-cecd4ddc68] ^4d5ed8b5\n";

fn reference_topic_snapshot() -> Result<(), Failed> {
    let html = render(BUDGET_TRACKER);
    insta::assert_snapshot!("budget_tracker", html);
    // Evidence and block IDs never show as text; numbers follow first reference.
    check(
        ref_numbers(&html) == ["1", "2", "3", "4", "1"],
        format!("numbers {:?}", ref_numbers(&html)),
    )?;
    check(definitions(&html) == 4, "four definitions")?;
    for id in ["6dfc15f1", "abc12345", "def45678", "7ffb575c", "4d5ed8b5"] {
        check(html.contains(&format!("id=\"^{id}\"></a>")), format!("anchor {id}"))?;
        check(!html.contains(&format!("^{id}<")) && !html.contains(&format!(" ^{id}")), id)?;
    }
    check(!html.contains("e-cecd4ddc68"), "evidence IDs are hidden")?;
    // Source links keep their URL; the topic link keeps its block fragment.
    check(
        html.contains(
            "href=\"../../sources/openprogram/_v2/sess-7f2a.md#source-d7e6772098d6b0d9\"",
        ),
        "source link",
    )?;
    check(html.contains("href=\"../projects/budget-tracker.md#^6dfc15f1\""), "topic link")?;
    assert_safe(&html)
}

fn named_footnotes_are_numbered_by_first_reference() -> Result<(), Failed> {
    let html =
        render("B[^b] then A[^a] and B again[^b].\n\n[^a]: first defined\n[^b]: second defined\n");
    check(ref_numbers(&html) == ["1", "2", "1"], &html)?;
    let list = html.split("<section class=\"footnotes\">").nth(1).unwrap_or_default();
    let second = list.find("second defined").unwrap_or(usize::MAX);
    let first = list.find("first defined").unwrap_or(0);
    check(second < first, "b is note 1, a is note 2")?;
    check(html.contains("id=\"fnref-1-2\""), "a repeated reference has its own id")?;
    check(
        html.find("<section").unwrap_or(0) > html.find("B again").unwrap_or(usize::MAX),
        "list at the end",
    )
}

fn continuation_lines_belong_to_the_previous_footnote() -> Result<(), Failed> {
    let html = render("Text[^1].\n\n[^1]: first line\n  continued here\n\nAfter.\n");
    let list = html.split("<section class=\"footnotes\">").nth(1).unwrap_or_default();
    check(list.contains("continued here"), &html)?;
    check(html.split("<section").next().unwrap_or_default().contains("After."), "body paragraph")
}

fn inline_footnotes_join_the_numbering() -> Result<(), Failed> {
    let html = render("Named[^n] and inline^[an inline note] here.\n\n[^n]: named note\n");
    check(ref_numbers(&html) == ["1", "2"], &html)?;
    check(definitions(&html) == 2, "two notes")?;
    check(!html.contains("^["), "no literal syntax left")
}

fn undefined_references_stay_literal() -> Result<(), Failed> {
    let html = render("Nothing defines [^ghost] here.\n");
    check(html.contains("[^ghost]"), &html)?;
    check(!html.contains("footnote-ref") && !html.contains("<section"), "no footnote")
}

fn code_is_untouched() -> Result<(), Failed> {
    let src = "Use `[^1] ^abc ^[x]` inline.[^1]\n\n```\n[^1] ^abc12345 ^[x]\n```\n\n    indented [^1] ^abc\n\n- item\n\n  ```\n  ^[in list fence] [^1]\n  ```\n\n[^1]: note\n";
    let html = render(src);
    check(html.contains("<code>[^1] ^abc ^[x]</code>"), format!("code span: {html}"))?;
    check(html.contains("[^1] ^abc12345 ^[x]\n</code></pre>"), "fence")?;
    check(html.contains("indented [^1] ^abc\n</code></pre>"), "indented code")?;
    check(html.contains("^[in list fence] [^1]\n</code></pre>"), "list fence")?;
    check(ref_numbers(&html) == ["1"], "one real reference")
}

fn escapes_stay_literal() -> Result<(), Failed> {
    let html = render("Not a note \\[^1] nor \\^[inline] nor id \\^abc123\n\n[^1]: unused\n");
    check(html.contains("[^1]") && html.contains("^[inline]") && html.contains("^abc123"), &html)?;
    check(!html.contains("footnote-ref") && !html.contains("block-anchor"), "nothing converted")
}

fn block_ids_become_invisible_anchors() -> Result<(), Failed> {
    let html = render(
        "A fact. ^abc-123\n\nTwo ids. ^a1 ^b2\n\nA list:\n\n- item ^li-1\n\n^standalone\n\nglued^nope and ^notlast here\n",
    );
    for id in ["abc-123", "a1", "b2", "li-1", "standalone"] {
        check(
            html.contains(&format!("<a class=\"block-anchor\" id=\"^{id}\"")),
            format!("{id}: {html}"),
        )?;
    }
    check(html.contains("glued^nope and ^notlast here"), "not paragraph-final: literal")?;
    check(!html.contains("<p></p>"), "a standalone ID leaves no empty paragraph")?;
    let bad = render("Underscore is no id. ^ab_c\n");
    check(bad.contains("^ab_c") && !bad.contains("block-anchor"), "only Latin letters, digits, -")
}

fn hostile_payloads_never_reach_the_output() -> Result<(), Failed> {
    let payloads = [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<svg onload=alert(1)><circle/></svg>",
        "<iframe src=\"https://evil.example\"></iframe>",
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "![img](javascript:alert(1))",
        "<!-- <script>alert(1)</script> -->",
        "<!--><script>alert(1)</script>-->",
        "<a href=\"javascript:alert(1)\">x</a>",
        "<p style=\"background:url(x)\" onclick=\"x()\">styled</p>",
        "x[^1]\n\n[^1]: <script>alert(1)</script> [l](javascript:alert(1))",
        "x^[<img src=x onerror=alert(1)>]",
        "Fact. ^abc\"onmouseover=\"alert(1)",
        "<style>body{display:none}</style>",
        "<math><mi xlink:href=\"javascript:alert(1)\">x</mi></math>",
    ];
    for payload in payloads {
        let html = render(payload);
        assert_safe(&html)
            .map_err(|e| fail(format!("{payload}: {}", e.message().unwrap_or_default())))?;
        check(!html.to_lowercase().contains("<script"), payload)?;
    }
    Ok(())
}

fn internal_placeholder_lookalikes_are_plain_text() -> Result<(), Failed> {
    // The renderer works on parser events and uses no placeholder strings; text that looks like
    // one (or like the markup it emits) stays text.
    for text in [
        "\u{0}FN0\u{0}",
        "@@FOOTNOTE_1@@",
        "%%SCRIPTORIUM_FN_0%%",
        "\u{e000}fn-1\u{e001}",
        "fnref-1",
        "<sup class=\"footnote-ref\"><a href=\"#fn-1\">[1]</a></sup>",
    ] {
        let html = render(&format!("Text {text} end.\n"));
        check(!html.contains("footnote-ref\"><a"), format!("{text}: {html}"))?;
        check(definitions(&html) == 0, "no notes")?;
    }
    Ok(())
}

/// The deepest element nesting of `html`, and the sum over its start tags of the depth each
/// opens at. That sum is the work of an HTML tree builder that scans its stack of open elements
/// at every start tag, as html5ever (inside ammonia) does to close a `<p>` in button scope: a
/// preview whose depth is bounded keeps the sanitizer linear in the size of its input.
fn nesting(html: &str) -> (usize, usize) {
    let (mut depth, mut deepest, mut scans) = (0usize, 0usize, 0usize);
    for tag in tags(html) {
        if tag.starts_with("</") {
            depth = depth.saturating_sub(1);
            continue;
        }
        scans += depth;
        let void = tag.ends_with("/>") || tag.starts_with("<br") || tag.starts_with("<hr");
        if !void {
            depth += 1;
            deepest = deepest.max(depth);
        }
    }
    (deepest, scans)
}

/// The deepest nesting the preview may emit: [`MAX_NESTING`] plus what a leaf block (a table:
/// `table > tbody > tr > td`), a footnote reference (`sup > a`) and the footnote list (`section
/// > ol > li > p`) add around it.
const DEEPEST: usize = MAX_NESTING + 10;

/// Inputs whose nesting grows with their size, `n` bytes or a little more.
fn deep_inputs(n: usize) -> Vec<(&'static str, String)> {
    vec![
        ("blockquote markers", ">".repeat(n)),
        ("spaced blockquote markers", format!("{}deep text\n", "> ".repeat(n / 2))),
        ("bullet list markers", format!("{}deep text\n", "- ".repeat(n / 2))),
        ("ordered list markers", format!("{}deep text\n", "1. ".repeat(n / 3))),
        ("quoted lists", format!("{}deep text\n", "> - ".repeat(n / 4))),
        ("emphasis", format!("{}deep text{}\n", "*a ".repeat(n / 6), " b*".repeat(n / 6))),
        ("links", format!("{}deep text{}\n", "[".repeat(n / 5), "](u)".repeat(n / 5))),
        ("footnote", format!("x[^a]\n\n[^a]: {}deep text\n", "> ".repeat(n / 2))),
    ]
}

/// Checks the rendering of one deep input: bounded depth, linear tree-builder work and output,
/// and its text kept.
fn check_deep(name: &str, src: &str) -> Result<String, Failed> {
    let html = render(src);
    let (deepest, scans) = nesting(&html);
    check(deepest <= DEEPEST, format!("{name} ({} bytes): {deepest} nested elements", src.len()))?;
    check(
        scans <= DEEPEST * src.len(),
        format!("{name} ({} bytes): {scans} open-element scans", src.len()),
    )?;
    check(html.len() <= 16 * src.len() + 4096, format!("{name}: {} bytes of HTML", html.len()))?;
    check(!src.contains("deep text") || html.contains("deep text"), format!("{name}: text kept"))?;
    assert_safe(&html)?;
    Ok(html)
}

fn deep_nesting_renders_at_a_bounded_depth_in_linear_work() -> Result<(), Failed> {
    // A 100 KB topic of `>` took minutes: ammonia's tree builder scanned every open element at
    // every start tag. Small inputs first, so a regression fails fast.
    for (name, src) in deep_inputs(10_000) {
        check_deep(name, &src)?;
    }
    // Doubling the input at most doubles the output.
    for ((name, half), (_, full)) in deep_inputs(50_000).into_iter().zip(deep_inputs(100_000)) {
        let small = check_deep(name, &half)?;
        let large = check_deep(name, &full)?;
        check(
            large.len() <= 2 * small.len() + 4096,
            format!("{name}: {} bytes of HTML for 50 KB, {} for 100 KB", small.len(), large.len()),
        )?;
    }
    // Nothing beyond the limit is dropped: every level's text is shown, in order.
    let levels = 3 * MAX_NESTING;
    let quoted: String = (1..=levels).map(|k| format!("{} level-{k}\n", ">".repeat(k))).collect();
    let listed: String =
        (1..=levels).map(|k| format!("{}- level-{k}\n", "  ".repeat(k - 1))).collect();
    for (name, src) in [("quotes", quoted), ("lists", listed)] {
        let html = check_deep(name, &src)?;
        let mut at = 0;
        for k in 1..=levels {
            let word = format!("level-{k}");
            // The word itself, not the start of `level-{k}0`.
            let found = html[at..]
                .match_indices(&word)
                .map(|(i, _)| at + i + word.len())
                .find(|&end| !html.as_bytes().get(end).is_some_and(u8::is_ascii_digit));
            check(found.is_some(), format!("{name}: {word} missing after byte {at}"))?;
            at = found.unwrap_or(at);
        }
    }
    Ok(())
}

/// The markdown-it-footnote fixtures (`title / . / markdown / . / html / .`).
fn markdown_it_cases(data: &Path) -> Result<Vec<(String, String, String)>, Failed> {
    let text =
        std::fs::read_to_string(data.join("markdown-specs/markdown-it-footnote/footnote.txt"))
            .map_err(fail)?;
    let lines: Vec<&str> = text.lines().collect();
    let mut cases = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] == "." {
            let title =
                lines[..i].iter().rev().find(|l| !l.trim().is_empty()).copied().unwrap_or("");
            let mut parts = Vec::new();
            let mut current = Vec::new();
            i += 1;
            while i < lines.len() && parts.len() < 2 {
                if lines[i] == "." {
                    parts.push(current.join("\n"));
                    current.clear();
                } else {
                    current.push(lines[i]);
                }
                i += 1;
            }
            if let [md, html] = parts.as_slice() {
                cases.push((title.to_owned(), format!("{md}\n"), html.clone()));
            }
        } else {
            i += 1;
        }
    }
    Ok(cases)
}

/// The numbers markdown-it shows (`[1]`, `[1:1]` for a repeated reference → `1`).
fn expected_numbers(html: &str) -> Vec<String> {
    html.split("<sup class=\"footnote-ref\">")
        .skip(1)
        .filter_map(|part| {
            let text = part.split("</a>").next()?.rsplit('>').next()?;
            let label = text.trim_start_matches('[').trim_end_matches(']');
            Some(label.split(':').next().unwrap_or(label).to_owned())
        })
        .collect()
}

fn markdown_it_footnote_numbering(data: &Path) -> Result<(), Failed> {
    let cases = markdown_it_cases(data)?;
    check(cases.len() >= 10, format!("{} cases parsed", cases.len()))?;
    let mut compared = 0;
    for (title, md, expected) in &cases {
        let html = render(md);
        assert_safe(&html)?;
        let want = expected_numbers(expected);
        let got = ref_numbers(&html);
        check(got == want, format!("{title}: got {got:?}, want {want:?}\n{html}"))?;
        let want_defs = expected.matches("<li id=\"fn").count();
        check(definitions(&html) == want_defs, format!("{title}: definitions\n{html}"))?;
        compared += 1;
    }
    // Inline notes keep their markup.
    let markup = render("foo^[ *bar* ]\n");
    check(markup.contains("<li id=\"fn-1\"><p> <em>bar</em> </p>"), markup)?;
    check(compared == cases.len(), "every case compared")
}

fn micromark_gfm_fixtures_are_safe_and_numbered(data: &Path) -> Result<(), Failed> {
    let dir = data.join("markdown-specs/micromark-gfm-footnote/fixtures");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).map_err(fail)? {
        let path = entry.map_err(fail)?.path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let md = std::fs::read_to_string(&path).map_err(fail)?;
        let html = render(&md);
        assert_safe(&html)?;
        // Numbers are consecutive from 1 in first-reference order.
        let mut max = 0;
        for n in ref_numbers(&html) {
            let n: usize = n.parse().map_err(fail)?;
            check(n <= max + 1, format!("{}: number {n} after {max}", path.display()))?;
            max = max.max(n);
        }
        check(definitions(&html) == max, format!("{}: {max} notes listed", path.display()))?;
        seen += 1;
    }
    check(seen >= 20, format!("{seen} fixtures"))?;
    let calls = render(&std::fs::read_to_string(dir.join("duplicate-calls.md")).map_err(fail)?);
    check(ref_numbers(&calls).iter().all(|n| n == "1") && definitions(&calls) == 1, calls)
}

fn obsidian_block_ids_and_footnotes(data: &Path) -> Result<(), Failed> {
    let dir = data.join("obsidian-export/input/main-samples");
    let section = render(&std::fs::read_to_string(dir.join("section-ref-a.md")).map_err(fail)?);
    check(section.contains("<a class=\"block-anchor\" id=\"^dda637\""), &section)?;
    check(section.contains("This is a block<a class=\"block-anchor\""), "ID text hidden")?;
    let pure =
        render(&std::fs::read_to_string(dir.join("pure-markdown-examples.md")).map_err(fail)?);
    check(ref_numbers(&pure) == ["1"] && definitions(&pure) == 1, &pure)?;
    check(!pure.contains("fn1]"), "the label is not shown")?;
    for entry in std::fs::read_dir(&dir).map_err(fail)? {
        let path = entry.map_err(fail)?.path();
        if path.extension().is_some_and(|e| e == "md") {
            assert_safe(&render(&std::fs::read_to_string(&path).map_err(fail)?))?;
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    run(vec![
        case("reference_topic_snapshot", reference_topic_snapshot),
        case(
            "named_footnotes_are_numbered_by_first_reference",
            named_footnotes_are_numbered_by_first_reference,
        ),
        case(
            "continuation_lines_belong_to_the_previous_footnote",
            continuation_lines_belong_to_the_previous_footnote,
        ),
        case("inline_footnotes_join_the_numbering", inline_footnotes_join_the_numbering),
        case("undefined_references_stay_literal", undefined_references_stay_literal),
        case("code_is_untouched", code_is_untouched),
        case("escapes_stay_literal", escapes_stay_literal),
        case("block_ids_become_invisible_anchors", block_ids_become_invisible_anchors),
        case("hostile_payloads_never_reach_the_output", hostile_payloads_never_reach_the_output),
        case(
            "internal_placeholder_lookalikes_are_plain_text",
            internal_placeholder_lookalikes_are_plain_text,
        ),
        case(
            "deep_nesting_renders_at_a_bounded_depth_in_linear_work",
            deep_nesting_renders_at_a_bounded_depth_in_linear_work,
        ),
        data_trial("markdown_it_footnote_numbering", markdown_it_footnote_numbering),
        data_trial(
            "micromark_gfm_fixtures_are_safe_and_numbered",
            micromark_gfm_fixtures_are_safe_and_numbered,
        ),
        data_trial("obsidian_block_ids_and_footnotes", obsidian_block_ids_and_footnotes),
    ])
}
