//! Finding secrets: gitleaks' `detect` for one fragment of text, on the built-in rules.
//!
//! One Aho-Corasick pass over the text (ASCII case-insensitive, as gitleaks lower-cases the
//! fragment) finds which rules' keywords occur, whether a `<private>` tag occurs, and whether a
//! redaction marker occurs; only the rules with a keyword present (and those without keywords)
//! run their regex. For each match, as gitleaks' `detectRule` does: the match is trimmed of
//! newlines; the secret is the rule's `secretGroup` (else its first non-empty capture group,
//! else the whole match) of the regex run again on the trimmed match; a secret whose Shannon
//! entropy is at most the rule's `entropy` is dropped; then the global allowlists and the rule's
//! own are consulted.
//!
//! Two kinds of rules are searched differently, with the same result (each shortcut is
//! exact, and checked against the whole regex by a property test):
//!
//! - gitleaks' semi-generic rules (`(?i)[\w.-]{0,50}?(?:discord)…`, 99 of them) start with a
//!   lazy run of word characters that no literal prefilter can skip, so the lazy DFA steps
//!   through every byte. They are searched without it (their [`Locator`]), and each match is
//!   extended back over the characters the prefix would have taken ([`locate`]).
//! - gitleaks' `generic-api-key`, whose keywords (`key`, `token`, `api`, `auth`…) are in nearly
//!   every message: every match of it holds one of its keywords, starts at most 50 bytes before
//!   it, and is followed within a bounded distance by an operator and a run of secret
//!   characters. So the regex runs only on windows around the keywords' occurrences that an
//!   assignment can follow (see [`Generic`]), each a slice of the text wide enough to hold
//!   every match through that occurrence. The regex has no look-behind and its only look-ahead,
//!   `$`, cannot be fooled by a window's end (the window ends 8 bytes past the secret's
//!   character run, and a secret is at least 10 characters). The windowing applies only while
//!   the rule's regex is the one it was proven for (a unit test pins it); otherwise the rule
//!   runs on the whole text like the others.
//!
//! The prefilter is ASCII case-insensitive, where gitleaks lower-cases with Unicode: a text
//! holding the Kelvin sign (`K`, which `(?i)` matches for `k`) or the long s (`ſ`, for `s`) runs
//! every rule on the whole text, without the shortcuts, so nothing a rule's regex would match
//! is skipped.
//!
//! Left out, on purpose: the `gitleaks:allow` comment (a pasted line saying so would keep its
//! secret in the memory), decoding passes (base64, hex, percent: gitleaks' default is none), and
//! `path`/`commit` checks (a message has neither).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

use crate::rules::{Allowlist, Locator, Rule, RuleSet, Target, shannon_entropy};

/// The most rules (and prefilter patterns) the fixed-size bitsets hold.
const MAX_RULES: usize = 512;
type Bits = [u64; MAX_RULES / 64];

fn set_bit(bits: &mut Bits, i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

fn has_bit(bits: &Bits, i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}

/// A secret found in the text: the byte range to redact, and the rule's rank (lower wins when
/// findings overlap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Finding {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) rank: u32,
}

/// What the prefilter pass saw.
#[derive(Debug)]
pub(crate) struct Scan {
    /// One bit per rule: its keywords occur (or it has none).
    rules: Bits,
    /// A `<private>` opening tag occurs.
    pub(crate) private: bool,
    /// Text shaped like a redaction marker (`[REDACTED:`) occurs.
    pub(crate) marker: bool,
    /// A character that `(?i)` folds to an ASCII letter occurs (`K`, `ſ`): every rule runs on
    /// the whole text.
    unicode_fold: bool,
    /// Where the generic rule's keywords occur (start, end), when it is windowed.
    generic_sites: Vec<(usize, usize)>,
}

impl Scan {
    /// Whether rule `i` runs.
    #[cfg(test)]
    fn has(&self, i: usize) -> bool {
        self.unicode_fold || has_bit(&self.rules, i)
    }

    /// The rules that run, in order, of `count` rules.
    fn rule_indices(&self, count: usize) -> impl Iterator<Item = usize> + '_ {
        let fold = self.unicode_fold;
        self.rules
            .iter()
            .enumerate()
            .take(count.div_ceil(64))
            .flat_map(move |(w, &word)| {
                let mut bits = if fold { u64::MAX } else { word };
                std::iter::from_fn(move || {
                    if bits == 0 {
                        return None;
                    }
                    let i = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    Some(i)
                })
            })
            .take_while(move |&i| i < count)
    }
}

/// What a prefilter pattern stands for.
#[derive(Debug)]
enum Pattern {
    /// A keyword, the rules it triggers, and whether it is one of the windowed generic rule's.
    Keyword(Vec<u32>, bool),
    /// `<private>`.
    Private,
    /// `[REDACTED:`.
    Marker,
    /// A non-ASCII character `(?i)` folds to an ASCII letter.
    UnicodeFold,
}

/// The generic rule's regex, as gitleaks' file spells it, for which the windowing is proven.
const GENERIC_REGEX: &str = r#"(?i)[\w.-]{0,50}?(?:access|auth|(?-i:[Aa]pi|API)|credential|creds|key|passw(?:or)?d|secret|token)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})(?:[\x60'"\s;]|\\[nr]|$)"#;
/// How far before a keyword a match can start: `[\w.-]{0,50}?` (ASCII here, one byte each).
const GENERIC_LEFT: usize = 50;
/// How many bytes after a keyword are looked at for the operator: the gap
/// `[ \t\w.-]{0,20}[\s'"]{0,3}`, then the operator's first byte.
const GENERIC_GAP: usize = 20 + 3 + 1;
/// How far after the operator's first byte the secret can start: the rest of the operator (at
/// most 3 bytes, `:::=`) and `[\x60'"\s=]{0,5}`, plus one.
const GENERIC_SECRET_START: usize = 3 + 5 + 1;
/// The shortest secret (`[\w.=-]{10,150}`; the other alternative needs 12).
const GENERIC_SECRET_MIN: usize = 10;
/// How far after a keyword a match's secret can start (`[ \t\w.-]{0,20}[\s'"]{0,3}`, an
/// operator of at most 4 bytes, `[\x60'"\s=]{0,5}`), plus the longest first alternative of the
/// secret (150); the second alternative is unbounded, and the window runs on over its
/// characters.
const GENERIC_RIGHT: usize = 20 + 3 + 4 + 5 + 150;
/// Past the secret's character run: its terminator (at most 2 bytes, `\n` spelled out), and
/// fewer bytes than the shortest secret, so that `$` at the window's end cannot end a match.
const GENERIC_TAIL: usize = 8;

/// Byte classes of the generic rule's parts, as a table: the gap between keyword and operator
/// (`[ \t\w.-]` and `[\s'"]`), an operator's first byte, a secret's byte (`[\w.=-]`,
/// `[a-z0-9+/]`; non-ASCII too, to be safe).
const GAP: u8 = 1;
const OPERATOR: u8 = 2;
const SECRET: u8 = 4;
static GENERIC_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let word = c.is_ascii_alphanumeric() || c == b'_';
        let mut class = 0;
        if word || matches!(c, b'.' | b'-' | b' ' | b'\t' | b'\n' | b'\r' | 0x0c | b'\'' | b'"') {
            class |= GAP;
        }
        if matches!(c, b'=' | b'>' | b':' | b'|' | b'?' | b',') {
            class |= OPERATOR;
        }
        if word || matches!(c, b'.' | b'=' | b'-' | b'+' | b'/') || c >= 0x80 {
            class |= SECRET;
        }
        table[b] = class;
        b += 1;
    }
    table
};

/// Whether a byte can continue a generic secret.
fn generic_secret_byte(b: u8) -> bool {
    GENERIC_CLASS[usize::from(b)] & SECRET != 0
}

/// Whether an assignment can follow a generic keyword ending at `end`: a necessary condition
/// of the regex. The first byte after the keyword that cannot be in the gap is within reach and
/// starts an operator (`=`, `>`, `:`, `||`, `?=`, `,`), and a run of at least 10 secret bytes
/// starts within reach after it.
fn generic_assignment_follows(bytes: &[u8], end: usize) -> bool {
    let gap_end = (end + GENERIC_GAP).min(bytes.len());
    let mut op = end;
    while op < gap_end && GENERIC_CLASS[usize::from(bytes[op])] & GAP != 0 {
        op += 1;
    }
    if op == gap_end || GENERIC_CLASS[usize::from(bytes[op])] & OPERATOR == 0 {
        return false;
    }
    let mut run = 0;
    let mut i = op + 1;
    while i < bytes.len() {
        if GENERIC_CLASS[usize::from(bytes[i])] & SECRET != 0 {
            run += 1;
            if run >= GENERIC_SECRET_MIN {
                return true;
            }
        } else if i > op + GENERIC_SECRET_START {
            return false;
        } else {
            run = 0;
        }
        i += 1;
    }
    false
}

/// The generic rule, searched in windows.
#[derive(Debug)]
struct Generic {
    rule: usize,
}

impl Generic {
    /// The matches of the generic `rule` in `text`, in order, given the occurrences of its
    /// keywords: its locator (or its regex) run on each window.
    fn search(
        &self,
        rule: &Rule,
        text: &str,
        sites: &[(usize, usize)],
        mut found: impl FnMut(usize, usize),
    ) {
        for (a, b) in self.windows(text, sites) {
            let window = &text[a..b];
            match &rule.locator {
                Some(locator) => locate(locator, window, |s, e| found(a + s, a + e)),
                None => {
                    for m in rule.regex().find_iter(window) {
                        found(a + m.start(), a + m.end());
                    }
                }
            }
        }
    }

    /// The windows of `text` holding every match of the generic regex, from the occurrences of
    /// its keywords (`sites`, as the prefilter found them): merged, in order.
    fn windows(&self, text: &str, sites: &[(usize, usize)]) -> Vec<(usize, usize)> {
        let bytes = text.as_bytes();
        let len = bytes.len();
        let mut sites: Vec<(usize, usize)> = sites
            .iter()
            .copied()
            .filter(|&(_, end)| generic_assignment_follows(bytes, end))
            .collect();
        sites.sort_unstable();
        let mut out: Vec<(usize, usize)> = Vec::new();
        // Where the last scan of a secret's character run stopped: every byte from its start
        // to here is a secret byte, so a later run starting before here ends here too.
        let mut scanned_to = 0;
        for (site_start, site_end) in sites {
            let mut start = site_start.saturating_sub(GENERIC_LEFT);
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let from = (site_end + GENERIC_RIGHT).min(len);
            let mut run_end = from.max(scanned_to);
            if from >= scanned_to {
                while run_end < len && generic_secret_byte(bytes[run_end]) {
                    run_end += 1;
                }
                scanned_to = run_end;
            }
            let mut end = (run_end + GENERIC_TAIL).min(len);
            while !text.is_char_boundary(end) {
                end += 1;
            }
            match out.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => out.push((start, end)),
            }
        }
        out
    }
}

/// The built-in rules with their prefilter.
#[derive(Debug)]
pub(crate) struct Builtin {
    pub(crate) set: RuleSet,
    /// Each rule's rank among the built-in rules: the non-generic rules in file order, then the
    /// generic ones (gitleaks' `filter` lets a specific rule's finding win over a generic one).
    rank: Vec<u32>,
    /// The rules by rank.
    by_rank: Vec<u32>,
    /// The keywords and the special patterns (ASCII case-insensitive, every occurrence).
    prefilter: AhoCorasick,
    patterns: Vec<Pattern>,
    /// The rules without keywords.
    always: Bits,
    generic: Option<Generic>,
}

impl Builtin {
    pub(crate) fn new(set: RuleSet) -> Builtin {
        assert!(set.rules.len() <= MAX_RULES, "at most {MAX_RULES} rules");
        let generic = set.rules.iter().position(generic_is_windowable).map(|rule| Generic { rule });
        let mut keywords: Vec<String> = Vec::new();
        let mut patterns: Vec<Pattern> = Vec::new();
        let mut always = [0; MAX_RULES / 64];
        for (index, rule) in set.rules.iter().enumerate() {
            if rule.keywords.is_empty() {
                set_bit(&mut always, index);
            }
            let is_generic = generic.as_ref().is_some_and(|g| g.rule == index);
            let index = index as u32;
            for keyword in &rule.keywords {
                match keywords.iter().position(|k| k == keyword) {
                    Some(p) => {
                        if let Pattern::Keyword(rules, generic) = &mut patterns[p] {
                            rules.push(index);
                            *generic |= is_generic;
                        }
                    }
                    None => {
                        keywords.push(keyword.clone());
                        patterns.push(Pattern::Keyword(vec![index], is_generic));
                    }
                }
            }
        }
        for (text, pattern) in [
            ("<private>", Pattern::Private),
            (crate::MARKER_PREFIX, Pattern::Marker),
            ("\u{212A}", Pattern::UnicodeFold),
            ("\u{17F}", Pattern::UnicodeFold),
        ] {
            keywords.push(text.to_owned());
            patterns.push(pattern);
        }
        assert!(patterns.len() <= MAX_RULES, "at most {MAX_RULES} prefilter patterns");
        let prefilter = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&keywords)
            .expect("the keywords build an automaton");
        let mut order: Vec<u32> = (0..set.rules.len() as u32).collect();
        order.sort_by_key(|&i| set.rules[i as usize].is_generic());
        let mut rank = vec![0; set.rules.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        Builtin { set, rank, by_rank: order, prefilter, patterns, always, generic }
    }

    /// Whether a rule of the files (run or excluded) has this id.
    pub(crate) fn has_id(&self, id: &str) -> bool {
        self.set.rules.iter().any(|r| r.id == id) || self.set.excluded.iter().any(|e| e.id == id)
    }

    /// The id of the rule of this rank.
    pub(crate) fn id_by_rank(&self, rank: usize) -> &str {
        &self.set.rules[self.by_rank[rank] as usize].id
    }

    /// The prefilter pass.
    pub(crate) fn scan(&self, text: &str) -> Scan {
        let mut scan = Scan {
            rules: self.always,
            private: false,
            marker: false,
            unicode_fold: false,
            generic_sites: Vec::new(),
        };
        let mut seen: Bits = [0; MAX_RULES / 64];
        for m in self.prefilter.find_overlapping_iter(text) {
            let p = m.pattern().as_usize();
            if let Pattern::Keyword(_, true) = self.patterns[p] {
                scan.generic_sites.push((m.start(), m.end()));
            }
            if has_bit(&seen, p) {
                continue;
            }
            set_bit(&mut seen, p);
            match &self.patterns[p] {
                Pattern::Keyword(rules, _) => {
                    for &r in rules {
                        set_bit(&mut scan.rules, r as usize);
                    }
                }
                Pattern::Private => scan.private = true,
                Pattern::Marker => scan.marker = true,
                Pattern::UnicodeFold => scan.unicode_fold = true,
            }
        }
        scan
    }

    /// Every finding of the rules the scan selected, ranked after `rank_offset` owner rules.
    pub(crate) fn detect(
        &self,
        text: &str,
        scan: &Scan,
        rank_offset: u32,
        findings: &mut Vec<Finding>,
    ) {
        let mut lines = LineCache::default();
        for index in scan.rule_indices(self.set.rules.len()) {
            let rule = &self.set.rules[index];
            let mut found = |start: usize, end: usize| {
                if let Some((s, e)) = self.check(rule, text, start, end, &mut lines) {
                    findings.push(Finding {
                        start: s,
                        end: e,
                        rank: rank_offset + self.rank[index],
                    });
                }
            };
            // With `K` or `ſ` in the text, neither shortcut's reasoning holds: whole text.
            let shortcuts = !scan.unicode_fold;
            if let Some(generic) = self.generic.as_ref().filter(|g| shortcuts && g.rule == index) {
                generic.search(rule, text, &scan.generic_sites, found);
            } else if let Some(locator) = rule.locator.as_ref().filter(|_| shortcuts) {
                locate(locator, text, found);
            } else {
                for m in rule.regex().find_iter(text) {
                    found(m.start(), m.end());
                }
            }
        }
    }

    /// gitleaks' checks of one match of `rule` at `start..end`: the range to redact, if it is a
    /// finding.
    fn check(
        &self,
        rule: &Rule,
        text: &str,
        start: usize,
        end: usize,
        lines: &mut LineCache,
    ) -> Option<(usize, usize)> {
        // gitleaks trims newlines off both ends of the match.
        let matched = &text[start..end];
        let start = start + (matched.len() - matched.trim_start_matches('\n').len());
        let matched = matched.trim_matches('\n');
        if matched.is_empty() {
            return None;
        }
        let end = start + matched.len();
        let (secret_start, secret_end) = secret_span(rule.regex(), rule.secret_group, matched);
        let secret = &matched[secret_start..secret_end];
        if rule.entropy != 0.0 && shannon_entropy(secret) <= rule.entropy {
            return None;
        }
        let mut allowed = |lists: &[Allowlist]| {
            lists.iter().any(|a| {
                let line = if a.target == Target::Line { lines.line(text, start, end) } else { "" };
                a.allows(secret, matched, line)
            })
        };
        if allowed(&self.set.global) || allowed(&rule.allowlists) {
            return None;
        }
        // An empty secret (a capture group that matched nothing) leaves nothing to redact:
        // redact the whole match instead.
        Some(if secret.is_empty() {
            (start, end)
        } else {
            (start + secret_start, start + secret_end)
        })
    }
}

/// Where a match of a rule with a [`Locator`](crate::rules::Locator) starts, given where its
/// locator matched (`at`): as far back as the prefix `[\w.-]{0,N}?` reaches over ASCII
/// `[0-9A-Za-z_.-]` (the text holds neither `K` nor `ſ`, the prefix's only non-ASCII members
/// under `(?i)`), but not before the search position `from`.
///
/// Exact: with `a` the leftmost position at or after `from` where the locator matches, the
/// leftmost match of `prefix · locator` starts at the leftmost position the prefix can reach
/// back from `a` (a later locator match could only reach back as far, since the prefix's run
/// back from it passes through `a` or stops after it), and the lazy prefix then takes the
/// nearest locator match, `a` itself, whose end is the match's end.
/// The matches of a rule through its [`Locator`](crate::rules::Locator), in order: those of the
/// whole regex, on a text with neither `K` nor `ſ`.
fn locate(locator: &Locator, text: &str, mut found: impl FnMut(usize, usize)) {
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos <= text.len()
        && let Some(m) = locator.regex().find_at(text, pos)
    {
        found(extend_back(bytes, m.start(), pos, locator.reach), m.end());
        pos = m.end();
        if m.is_empty() {
            pos += text[pos..].chars().next().map_or(1, char::len_utf8);
        }
    }
}

fn extend_back(bytes: &[u8], at: usize, from: usize, reach: usize) -> usize {
    let floor = from.max(at.saturating_sub(reach));
    let mut start = at;
    while start > floor
        && (bytes[start - 1].is_ascii_alphanumeric()
            || matches!(bytes[start - 1], b'_' | b'.' | b'-'))
    {
        start -= 1;
    }
    start
}

/// Whether `rule` is gitleaks' generic rule with the regex and keywords the windowing was
/// proven for.
fn generic_is_windowable(rule: &Rule) -> bool {
    let mut keywords: Vec<&str> = rule.keywords.iter().map(String::as_str).collect();
    keywords.sort_unstable();
    rule.go_source == GENERIC_REGEX
        && keywords
            == [
                "access",
                "api",
                "auth",
                "credential",
                "creds",
                "key",
                "passwd",
                "password",
                "secret",
                "token",
            ]
}

/// The secret's range within the (trimmed) match, as gitleaks picks it: the regex is run again
/// on the match alone; `secretGroup` if set, else the first non-empty group, else the whole
/// match.
fn secret_span(regex: &regex::Regex, secret_group: usize, matched: &str) -> (usize, usize) {
    let whole = (0, matched.len());
    if regex.captures_len() < 2 {
        return whole;
    }
    let Some(caps) = regex.captures(matched) else { return whole };
    if secret_group > 0 {
        return caps.get(secret_group).map_or((0, 0), |g| (g.start(), g.end()));
    }
    caps.iter().skip(1).flatten().find(|g| !g.is_empty()).map_or(whole, |g| (g.start(), g.end()))
}

/// The line(s) holding a match. A single line is remembered, so that many matches on one long
/// line do not scan it again each.
#[derive(Default)]
struct LineCache {
    /// The last single line computed.
    line: Option<(usize, usize)>,
}

impl LineCache {
    fn line<'t>(&mut self, text: &'t str, start: usize, end: usize) -> &'t str {
        if let Some((s, e)) = self.line
            && s <= start
            && end <= e
        {
            return &text[s..e];
        }
        let s = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let e = text[end..].find('\n').map_or(text.len(), |i| end + i);
        if !text[start..end].contains('\n') {
            self.line = Some((s, e));
        }
        &text[s..e]
    }
}

#[cfg(test)]
mod tests {
    use proptest::strategy::Strategy;

    use super::*;
    use crate::rules::{GITLEAKS_TOML, SCRIPTORIUM_TOML};

    fn builtin() -> &'static Builtin {
        static BUILTIN: std::sync::OnceLock<Builtin> = std::sync::OnceLock::new();
        BUILTIN.get_or_init(|| {
            Builtin::new(RuleSet::load(GITLEAKS_TOML, SCRIPTORIUM_TOML).expect("loads"))
        })
    }

    #[test]
    fn the_generic_rule_is_the_one_the_windowing_was_proven_for() {
        // If gitleaks changes its generic rule, re-derive GENERIC_LEFT, GENERIC_RIGHT and
        // GENERIC_TAIL from the new regex before updating GENERIC_REGEX.
        let b = builtin();
        let generic = b.generic.as_ref().expect("the generic rule is windowed");
        assert_eq!(b.set.rules[generic.rule].id, "generic-api-key");
    }

    /// The windowed search finds exactly the whole-text search's matches.
    #[test]
    fn windows_find_what_the_whole_text_search_finds() {
        let b = builtin();
        let generic = b.generic.as_ref().expect("windowed");
        let regex = b.set.rules[generic.rule].regex();
        let filler = "lorem ipsum dolor sit amet, ".repeat(20);
        let long_b64 = "Ab3+/x".repeat(60);
        let texts = [
            format!("{filler}api_key = \"Zq8Lm2Xv9Pq4Rt7Wn3Ks\"\n{filler}"),
            format!("{}_access_token: Zq8Lm2Xv9Pq4Rt7Wn3Ks", "a".repeat(48)),
            format!("{}_token=Zq8Lm2Xv9Pq4Rt7Wn3Ks;", "b".repeat(70)),
            format!("secret: {long_b64}=\n{filler}key={long_b64}"),
            format!("{filler}password := ________________________________________x9A"),
            format!("token, {}", "x".repeat(300)),
            "apikey=ab:cdefghijklmnopq apiKEY = 'Xy9Zq8Lm2Xv9Pq4Rt7Wn3Ks' AUTH,Qw8Er7Ty6Ui5Op4"
                .to_owned(),
            // No match: the secret's run ends in a character that is no terminator.
            format!("KEY = {}é", "Zq8Lm2Xv9Pq4Rt7Wn3Ks".repeat(10)),
        ];
        let mut matched = 0;
        for text in &texts {
            let whole: Vec<(usize, usize)> =
                regex.find_iter(text).map(|m| (m.start(), m.end())).collect();
            let mut windowed = Vec::new();
            let rule = &b.set.rules[generic.rule];
            generic.search(rule, text, &b.scan(text).generic_sites, |s, e| windowed.push((s, e)));
            assert_eq!(windowed, whole, "{text:?}");
            matched += usize::from(!whole.is_empty());
        }
        assert_eq!(matched, texts.len() - 1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Over arbitrary text made of the rule's keywords, operators, quotes, secret-like
        /// runs and filler, the windows give exactly the whole-text matches.
        #[test]
        fn windows_are_exact(pieces in proptest::collection::vec(proptest::prop_oneof![
            3 => proptest::sample::select(vec![
                "key", "KEY", "api", "API", "Api", "token", "secret", "passwd", "password",
                "auth", "access", "creds", "credential", "_", ".", "-", " ", "\t", "\n", "=",
                ":", ":=", "=>", ",", "||", "?=", ">", "\"", "'", "`", ";", "\\n", "é", "\u{212A}",
            ]).prop_map(str::to_owned),
            2 => "[A-Za-z0-9+/=._-]{1,40}",
            1 => "[a-z ]{1,80}",
            4 => (
                "[A-Za-z0-9_.-]{0,60}",
                proptest::sample::select(vec!["key", "API", "token", "Secret", "password", "auth", "access", "creds"]),
                "[ \\t0-9A-Za-z_.-]{0,8}",
                proptest::sample::select(vec!["=", ":", ":::=", "=>", "||", "?=", ",", ">", ""]),
                "[`'\" =]{0,3}",
                proptest::prop_oneof!["[A-Za-z0-9_.=-]{8,160}", "[A-Za-z0-9+/]{8,100}={0,3}"],
                proptest::sample::select(vec!["\"", "'", "\n", " ", ";", "", "x", "\\n", "é"]),
            )
                .prop_map(|(a, k, g, o, q, v, e)| format!("{a}{k}{g}{o}{q}{v}{e}")),
        ], 0..30)) {
            let b = builtin();
            let generic = b.generic.as_ref().expect("windowed");
            let regex = b.set.rules[generic.rule].regex();
            let text = pieces.concat();
            let whole: Vec<(usize, usize)> =
                regex.find_iter(&text).map(|m| (m.start(), m.end())).collect();
            let mut windowed = Vec::new();
            let rule = &b.set.rules[generic.rule];
            if !b.scan(&text).unicode_fold {
                generic.search(rule, &text, &b.scan(&text).generic_sites, |s, e| windowed.push((s, e)));
                proptest::prop_assert_eq!(windowed, whole);
            }
        }
    }

    /// The counts in a regex's repetitions (`{32}`, `{10,150}`): the lengths its secrets have.
    fn lengths(go: &str) -> Vec<usize> {
        let mut out = Vec::new();
        for part in go.split('{').skip(1) {
            let inner = part.split('}').next().unwrap_or("");
            out.extend(inner.split(',').filter_map(|n| n.parse::<usize>().ok()));
        }
        out.retain(|&n| n >= 8);
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1024, ..Default::default() })]

        /// For every rule with a locator, over text made of its keywords, operators, quotes and
        /// secret-like runs of the lengths its regex names, the located matches are the whole
        /// regex's.
        #[test]
        fn locators_are_exact(
            which in proptest::prelude::any::<proptest::sample::Index>(),
            pieces in proptest::collection::vec(proptest::prop_oneof![
                3 => proptest::prelude::any::<proptest::sample::Index>().prop_map(Piece::Keyword),
                3 => proptest::sample::select(vec![
                    "_api_token", "_KEY", "-secret", ".id", " ", "  ", "\t", "\n", "=", ":", ":=",
                    "=>", ",", "||", "?=", ">", "\"", "'", "`", ";", "\\n", "é", "x", "live_",
                    "test_", "su", "00", "key-", "pat", "access-sandbox-", "t1.", " = \"", "\": \"",
                ]).prop_map(|s| Piece::Text(s.to_owned())),
                3 => (proptest::prelude::any::<proptest::sample::Index>(), 0..5usize, proptest::prelude::any::<u64>())
                    .prop_map(|(n, class, seed)| Piece::Secret(n, class, seed)),
                4 => (
                    proptest::prelude::any::<proptest::sample::Index>(),
                    proptest::sample::select(vec!["_token = \"", "_api_key: ", "=", " := '", "\": \"", "_SECRET="]),
                    (proptest::prelude::any::<proptest::sample::Index>(), 0..5usize, proptest::prelude::any::<u64>()),
                    proptest::sample::select(vec!["\"", "'", "\n", " ", ";", "", "x"]),
                )
                    .prop_map(|(k, op, (n, class, seed), end)| Piece::Assign(k, op, n, class, seed, end)),
                1 => "[A-Za-z0-9_=+/-]{8,90}".prop_map(Piece::Text),
                1 => "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}".prop_map(Piece::Text),
            ], 0..24),
        ) {
            let b = builtin();
            let rules: Vec<&Rule> = b.set.rules.iter().filter(|r| r.locator.is_some()).collect();
            let rule = rules[which.index(rules.len())];
            let lens = lengths(&rule.go_source);
            let keyword = |k: &proptest::sample::Index| {
                let kw = &rule.keywords[k.index(rule.keywords.len())];
                if k.index(2) == 0 { kw.to_ascii_uppercase() } else { kw.clone() }
            };
            let secret = |n: &proptest::sample::Index, class: usize, seed: u64| -> String {
                let len = if lens.is_empty() { 32 } else { lens[n.index(lens.len())] };
                let alphabet: &[u8] = match class {
                    0 => b"0123456789abcdef",
                    1 => b"0123456789",
                    2 => b"abcdefghijklmnopqrstuvwxyz0123456789",
                    3 => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                    _ => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
                };
                let mut x = seed | 1;
                (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        char::from(alphabet[(x % alphabet.len() as u64) as usize])
                    })
                    .collect()
            };
            let text: String = pieces
                .iter()
                .map(|p| match p {
                    Piece::Keyword(k) => keyword(k),
                    Piece::Text(t) => t.clone(),
                    Piece::Secret(n, class, seed) => secret(n, *class, *seed),
                    Piece::Assign(k, op, n, class, seed, end) => {
                        format!("{}{op}{}{end}", keyword(k), secret(n, *class, *seed))
                    }
                })
                .collect();
            let whole: Vec<(usize, usize)> =
                rule.regex().find_iter(&text).map(|m| (m.start(), m.end())).collect();
            let mut located = Vec::new();
            locate(rule.locator.as_ref().expect("filtered"), &text, |s, e| located.push((s, e)));
            proptest::prop_assert_eq!(located, whole, "{} on {:?}", rule.id, text);
        }
    }

    #[derive(Clone, Debug)]
    enum Piece {
        Keyword(proptest::sample::Index),
        Text(String),
        Secret(proptest::sample::Index, usize, u64),
        Assign(
            proptest::sample::Index,
            &'static str,
            proptest::sample::Index,
            usize,
            u64,
            &'static str,
        ),
    }

    #[test]
    fn unicode_folding_runs_every_rule() {
        let b = builtin();
        let scan = b.scan("plain text");
        assert!(!scan.has(0) || b.set.rules[0].keywords.is_empty());
        let scan = b.scan("a \u{212A}ey here");
        assert!((0..b.set.rules.len()).all(|i| scan.has(i)));
    }
}
