//! The figures computed from the topic files themselves: blocks, near-duplicates and noise
//! (their definitions are in the `writer_eval` module docs), and the small statistics of the
//! report.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;

use anyhow::Context;

/// One block of a topic file: its ID and its text as a reader sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    /// The topic file, relative to the memory workspace (`topics/…`).
    pub(crate) path: String,
    /// The block ID (the paragraph's trailing `^id`).
    pub(crate) id: String,
    /// The paragraph without its citations, block ID and link targets.
    pub(crate) text: String,
}

/// Every block of every `.md` file under `<memory>/topics`, files in path order.
pub(crate) fn read_blocks(memory: &Path) -> anyhow::Result<(Vec<Block>, usize)> {
    let mut files = Vec::new();
    collect(&memory.join("topics"), &mut files)?;
    files.sort();
    let mut blocks = Vec::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let rel = file.strip_prefix(memory).unwrap_or(file).to_string_lossy().into_owned();
        blocks.extend(blocks_in(&rel, &text));
    }
    Ok((blocks, files.len()))
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> anyhow::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    for entry in entries {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            collect(&path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// The blocks of one topic file: each run of non-blank lines whose last line ends in
/// ` ^<id>`, without its heading lines and footnote definitions. (A block holding a blank line,
/// such as a fenced code block, is seen from its last part only: an approximation that the
/// writers' one-paragraph blocks never meet.)
pub(crate) fn blocks_in(path: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut chunk: Vec<&str> = Vec::new();
    let mut flush = |chunk: &mut Vec<&str>| {
        if let Some(block) = block_of(path, chunk) {
            out.push(block);
        }
        chunk.clear();
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush(&mut chunk);
        } else {
            chunk.push(line);
        }
    }
    flush(&mut chunk);
    out
}

fn block_of(path: &str, chunk: &[&str]) -> Option<Block> {
    let lines: Vec<&str> = chunk
        .iter()
        .copied()
        .filter(|l| !l.starts_with('#') && !l.trim_start().starts_with("[^"))
        .collect();
    let last = lines.last()?.trim_end();
    let (body, id) = last.rsplit_once(" ^")?;
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if id.is_empty() || !id.chars().all(valid) {
        return None;
    }
    let mut raw: Vec<&str> = lines[..lines.len() - 1].to_vec();
    raw.push(body);
    Some(Block { path: path.to_owned(), id: id.to_owned(), text: reader_text(&raw.join("\n")) })
}

/// The text without footnote citations (`[^label]`) and with each link `[text](target)`
/// reduced to its text.
fn reader_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        if after.starts_with("[^")
            && let Some(close) = after.find(']')
        {
            rest = &after[close + 1..];
            continue;
        }
        if let Some(close) = after.find("](")
            && let Some(end) = after[close..].find(')')
            && !after[1..close].contains('[')
        {
            out.push_str(&after[1..close]);
            rest = &after[close + end + 1..];
            continue;
        }
        out.push('[');
        rest = &after[1..];
    }
    out.push_str(rest);
    out
}

/// Words per shingle of the near-duplicate measure.
pub(crate) const SHINGLE_WORDS: usize = 3;
/// The Jaccard similarity at which two blocks are near-duplicates.
pub(crate) const NEAR_DUPLICATE: f64 = 0.8;

/// The sorted, deduplicated hashes of a text's word 3-shingles: lower-cased, every run of
/// characters that are not letters or digits a word break. A text of fewer than three words is
/// one shingle (so two equal short texts match); a text without words has none.
pub(crate) fn shingles(text: &str) -> Vec<u64> {
    let lower = text.to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let hash = |words: &[&str]| {
        let mut hasher = DefaultHasher::new();
        words.hash(&mut hasher);
        hasher.finish()
    };
    let mut out: Vec<u64> = if words.len() < SHINGLE_WORDS {
        if words.is_empty() { Vec::new() } else { vec![hash(&words)] }
    } else {
        words.windows(SHINGLE_WORDS).map(hash).collect()
    };
    out.sort_unstable();
    out.dedup();
    out
}

fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - common;
    if union == 0 { 0.0 } else { common as f64 / union as f64 }
}

/// The near-duplicate pairs of `blocks` (indices, smaller first, in order): Jaccard ≥ 0.8 of
/// their shingle sets. Pairs are only compared when their sizes allow it (|A| ≥ 0.8·|B|).
pub(crate) fn near_duplicates(blocks: &[Block]) -> Vec<(usize, usize)> {
    let sets: Vec<Vec<u64>> = blocks.iter().map(|b| shingles(&b.text)).collect();
    let mut order: Vec<usize> = (0..blocks.len()).filter(|&i| !sets[i].is_empty()).collect();
    order.sort_by_key(|&i| (sets[i].len(), i));
    let mut pairs = Vec::new();
    for (n, &i) in order.iter().enumerate() {
        for &j in &order[n + 1..] {
            if (sets[i].len() as f64) < NEAR_DUPLICATE * sets[j].len() as f64 {
                break;
            }
            if jaccard(&sets[i], &sets[j]) >= NEAR_DUPLICATE {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

/// What kind of noise a pattern finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum NoiseKind {
    /// Transcript markup an agent's transcript carries and memory should not: command
    /// wrappers, injected context, interrupt notices.
    Wrapper,
    /// Tool chatter: tool results, test runner and compiler output, tracebacks.
    Tool,
    /// The writer narrating its own work: its tools, the workspace's files, its IDs.
    Writer,
}

impl NoiseKind {
    /// The JSON key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            NoiseKind::Wrapper => "wrapper",
            NoiseKind::Tool => "tool",
            NoiseKind::Writer => "writer",
        }
    }
}

/// How a pattern matches a block's reader text.
#[derive(Clone, Copy, Debug)]
enum Needle {
    /// The text contains it, case as written.
    Exact(&'static str),
    /// The lower-cased text contains it (given lower-case).
    Folded(&'static str),
    /// A pytest summary: `<n> passed` / `<n> failed` followed by ` in <seconds>s`.
    PytestSummary,
    /// A path inside the memory workspace: `topics/` or `sources/` followed, in the same
    /// word, by `.md`.
    WorkspacePath,
}

/// The noise patterns, by kind (documented in the `writer_eval` module docs). Tag names are
/// matched without their `<`, so an escaped (`\<command-name>`) or closing tag counts too.
const PATTERNS: &[(NoiseKind, Needle)] = &[
    (NoiseKind::Wrapper, Needle::Exact("command-name>")),
    (NoiseKind::Wrapper, Needle::Exact("command-message>")),
    (NoiseKind::Wrapper, Needle::Exact("command-args>")),
    (NoiseKind::Wrapper, Needle::Exact("local-command-stdout>")),
    (NoiseKind::Wrapper, Needle::Exact("local-command-stderr>")),
    (NoiseKind::Wrapper, Needle::Exact("local-command-caveat>")),
    (NoiseKind::Wrapper, Needle::Exact("system-reminder>")),
    (NoiseKind::Wrapper, Needle::Exact("bash-input>")),
    (NoiseKind::Wrapper, Needle::Exact("bash-stdout>")),
    (NoiseKind::Wrapper, Needle::Exact("bash-stderr>")),
    (NoiseKind::Wrapper, Needle::Exact("user-prompt-submit-hook>")),
    (NoiseKind::Wrapper, Needle::Exact("environment_context>")),
    (NoiseKind::Wrapper, Needle::Exact("user_instructions>")),
    (NoiseKind::Wrapper, Needle::Exact("permissions instructions>")),
    (NoiseKind::Wrapper, Needle::Exact("turn_aborted>")),
    (NoiseKind::Wrapper, Needle::Exact("Caveat: The messages below were generated by the user")),
    (NoiseKind::Wrapper, Needle::Exact("Request interrupted by user")),
    (NoiseKind::Tool, Needle::Exact("Tool result:")),
    (NoiseKind::Tool, Needle::Exact("tool_use_id")),
    (NoiseKind::Tool, Needle::Exact("tool_use_error>")),
    (NoiseKind::Tool, Needle::Exact("Traceback (most recent call last)")),
    (NoiseKind::Tool, Needle::Exact("short test summary info")),
    (NoiseKind::Tool, Needle::Exact("test session starts")),
    (NoiseKind::Tool, Needle::Exact("AssertionError")),
    (NoiseKind::Tool, Needle::Exact("error[E0")),
    (NoiseKind::Tool, Needle::Exact("npm ERR!")),
    (NoiseKind::Tool, Needle::PytestSummary),
    (NoiseKind::Writer, Needle::Exact("memory_changes")),
    (NoiseKind::Writer, Needle::Exact("commit_edits")),
    (NoiseKind::Writer, Needle::Exact("create_record")),
    (NoiseKind::Writer, Needle::Exact("update_record")),
    (NoiseKind::Writer, Needle::Exact("#source-")),
    (NoiseKind::Writer, Needle::Folded("topic file")),
    (NoiseKind::Writer, Needle::Folded("block id")),
    (NoiseKind::Writer, Needle::Folded("source record")),
    (NoiseKind::Writer, Needle::WorkspacePath),
];

/// The kinds of noise in one block's reader text (each kind once, in order).
pub(crate) fn noise_in(text: &str) -> Vec<NoiseKind> {
    let lower = text.to_lowercase();
    let mut kinds: Vec<NoiseKind> = PATTERNS
        .iter()
        .filter(|(_, needle)| match *needle {
            Needle::Exact(s) => text.contains(s),
            Needle::Folded(s) => lower.contains(s),
            Needle::PytestSummary => pytest_summary(&lower),
            Needle::WorkspacePath => workspace_path(text),
        })
        .map(|(kind, _)| *kind)
        .collect();
    kinds.dedup();
    kinds
}

fn pytest_summary(lower: &str) -> bool {
    let words: Vec<&str> = lower.split_whitespace().collect();
    words.windows(4).any(|w| {
        let count = w[0].trim_start_matches(['=', ' ']).parse::<u64>().is_ok();
        let verdict = matches!(w[1].trim_end_matches(','), "passed" | "failed" | "errors");
        let seconds = w[3]
            .trim_end_matches(['=', '.', ','])
            .strip_suffix('s')
            .is_some_and(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.'));
        count && verdict && w[2] == "in" && seconds
    })
}

fn workspace_path(text: &str) -> bool {
    text.split_whitespace().any(|word| {
        ["topics/", "sources/"]
            .iter()
            .any(|dir| word.find(dir).is_some_and(|at| word[at..].contains(".md")))
    })
}

/// The value at quantile `q` (0–1, nearest rank) of `values`, `None` when empty.
pub(crate) fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// The mean of `values`, `None` when empty.
pub(crate) fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// `part / whole`, `None` when `whole` is 0 (a share of nothing is no figure, not 0).
pub(crate) fn share(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOPIC: &str = "# Caroline\n\nIntro line without an ID.\n\n\
        Caroline went to a [support group](../x.md#^ab12cd34) yesterday.[^e-1] ^f5bcaebb\n\n\
        [^e-1]: Time: `2023-05-08`; Sources: [turn](../../sources/openprogram/_v2/s.md#source-1)\n\n\
        ## Later\n\
        Two lines\nof one block.[^e-2][^e-3] ^0a1b2c3d\n\n\
        Not a block ^bad id\n";

    #[test]
    fn blocks_are_paragraphs_ending_in_a_block_id_read_as_a_reader_sees_them() {
        let blocks = blocks_in("topics/people/caroline.md", TOPIC);
        let seen: Vec<(&str, &str)> =
            blocks.iter().map(|b| (b.id.as_str(), b.text.as_str())).collect();
        assert_eq!(
            seen,
            [
                ("f5bcaebb", "Caroline went to a support group yesterday."),
                ("0a1b2c3d", "Two lines\nof one block."),
            ]
        );
        assert!(noise_in(&blocks[0].text).is_empty(), "the footnote's archive path is no noise");
    }

    fn block(text: &str) -> Block {
        Block { path: "topics/a.md".into(), id: "x".into(), text: text.into() }
    }

    #[test]
    fn near_duplicates_are_jaccard_of_word_3_shingles_at_least_0_8() {
        let blocks = [
            block("Caroline went to an LGBTQ support group on 7 May 2023 and found it powerful."),
            // One word changed at the end: 12 of 14 shingles shared (0.857).
            block("Caroline went to an LGBTQ support group on 7 May 2023 and found it moving."),
            // Case and punctuation are no difference.
            block("caroline went to an lgbtq support group, on 7 may 2023; and found it powerful"),
            // A different fact sharing a prefix.
            block("Caroline went to an LGBTQ support group again in June with her friend Mel."),
            block("Thanks!"),
            block("thanks"),
            block("`^`"),
            block(""),
        ];
        assert_eq!(near_duplicates(&blocks), [(0, 1), (0, 2), (1, 2), (4, 5)]);
        assert_eq!(shingles("a b"), shingles("A, b!"));
        assert!(shingles("--").is_empty());
    }

    #[test]
    fn noise_patterns_by_kind() {
        let cases: &[(&str, &[NoiseKind])] = &[
            ("Caroline adopted a dog named Rex in 2023.", &[]),
            ("Owner said: \\<command-name>/clear\\</command-name>", &[NoiseKind::Wrapper]),
            ("<local-command-stdout>ok</local-command-stdout>", &[NoiseKind::Wrapper]),
            ("[Request interrupted by user for tool use]", &[NoiseKind::Wrapper]),
            ("Tool result: file written", &[NoiseKind::Tool]),
            ("=== 3 failed, 12 passed in 4.21s ===", &[NoiseKind::Tool]),
            ("Traceback (most recent call last): File x", &[NoiseKind::Tool]),
            ("She passed in 2019 after 3 years.", &[]),
            ("I called memory_changes with two records.", &[NoiseKind::Writer]),
            ("Updated topics/people/caroline.md with the new facts.", &[NoiseKind::Writer]),
            ("Each Block ID stays.", &[NoiseKind::Writer]),
            ("She keeps her sources/ in order.", &[]),
            ("Tool result: see topics/a.md", &[NoiseKind::Tool, NoiseKind::Writer]),
        ];
        for (text, kinds) in cases {
            assert_eq!(noise_in(text), *kinds, "{text}");
        }
    }

    #[test]
    fn statistics_of_nothing_are_no_figure() {
        assert_eq!(mean(&[]), None);
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(share(3, 0), None);
        assert_eq!(share(1, 4), Some(0.25));
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.5), Some(2.0));
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.9), Some(4.0));
        assert_eq!(mean(&[1.0, 2.0]), Some(1.5));
    }
}
