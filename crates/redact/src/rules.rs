//! The built-in rule set: gitleaks' default configuration (`rules/gitleaks.toml`, unmodified) and
//! our layer on top of it (`rules/scriptorium.toml`), both in gitleaks' own schema and loaded
//! with gitleaks' semantics (see `config/config.go` and `config/allowlist.go` upstream).
//!
//! Loading parses both files and builds the keyword prefilter; nothing is compiled. Each rule's
//! regex, and each allowlist's joined regex and stopword automaton, is compiled the first time a
//! text needs it (gitleaks compiles everything up front; a hook process that redacts one short
//! message would pay for two hundred regexes it never runs).
//!
//! What does not apply to message text is left out and listed by [`RuleSet::excluded`]: a rule
//! scoped by `path` (gitleaks runs it only on files whose path matches, and a message has no
//! path) and the rules our layer disables (`[extend] disabledRules`). Path and commit
//! allowlists never allow anything here, as in gitleaks when a fragment has neither.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use regex::{Regex, RegexBuilder};
use serde::Deserialize;

use crate::goregex;

/// gitleaks' default rules, byte for byte (see `rules/README.md`).
pub(crate) const GITLEAKS_TOML: &str = include_str!("../rules/gitleaks.toml");
/// Our layer: extra rules, rule-targeted allowlists, disabled rules.
pub(crate) const SCRIPTORIUM_TOML: &str = include_str!("../rules/scriptorium.toml");

/// The compiled-size limit of one rule's regex (the `regex` default is 10 MiB; a few of
/// gitleaks' counted repetitions need more).
const SIZE_LIMIT: usize = 64 << 20;

// ---------------------------------------------------------------------------------------------
// The schema (gitleaks' `ViperConfig`, the fields it reads).

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileSpec {
    #[serde(default)]
    #[expect(dead_code, reason = "part of gitleaks' schema; read and ignored")]
    title: Option<String>,
    #[serde(default)]
    #[expect(dead_code, reason = "part of gitleaks' schema; read and ignored")]
    description: Option<String>,
    #[serde(default)]
    #[expect(dead_code, reason = "part of gitleaks' schema; read and ignored")]
    min_version: Option<String>,
    #[serde(default)]
    extend: Option<ExtendSpec>,
    /// The deprecated single global allowlist (gitleaks' default file still uses it).
    #[serde(default)]
    allowlist: Option<AllowlistSpec>,
    #[serde(default)]
    allowlists: Vec<AllowlistSpec>,
    #[serde(default)]
    rules: Vec<RuleSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ExtendSpec {
    #[serde(default)]
    #[expect(dead_code, reason = "our layer always extends the embedded default")]
    use_default: bool,
    #[serde(default)]
    disabled_rules: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuleSpec {
    id: String,
    #[serde(default)]
    #[expect(dead_code, reason = "part of gitleaks' schema; read and ignored")]
    description: Option<String>,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    secret_group: usize,
    #[serde(default)]
    entropy: f64,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    #[expect(dead_code, reason = "part of gitleaks' schema; read and ignored")]
    tags: Vec<String>,
    #[serde(default)]
    allowlist: Option<AllowlistSpec>,
    #[serde(default)]
    allowlists: Vec<AllowlistSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AllowlistSpec {
    #[serde(default)]
    #[expect(dead_code, reason = "part of gitleaks' schema; read and ignored")]
    description: Option<String>,
    #[serde(default)]
    condition: Option<String>,
    #[serde(default)]
    commits: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    target_rules: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// The loaded rules.

/// What an allowlist's regexes are matched against (`regexTarget`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// The secret (the capture group, else the whole match): the default.
    Secret,
    /// The whole match of the rule's regex.
    Match,
    /// The line(s) holding the match.
    Line,
}

/// One allowlist of a rule, or a global one.
#[derive(Debug)]
pub(crate) struct Allowlist {
    /// `condition = "AND"`: every check present must pass (else any one).
    pub(crate) and: bool,
    pub(crate) target: Target,
    /// Whether it lists commits or paths: under AND such an allowlist never allows message text
    /// (a message has neither); under OR they are simply never checked.
    pub(crate) has_commits_or_paths: bool,
    /// The Go source of the regexes, joined as gitleaks joins them: `(?:a|b|…)`.
    regex_source: Option<String>,
    regex: OnceLock<Regex>,
    /// Lower-cased, deduplicated stopwords.
    stopwords: Vec<String>,
    stopword_matcher: OnceLock<AhoCorasick>,
}

impl Allowlist {
    fn from_spec(spec: AllowlistSpec, what: &str) -> Result<Allowlist, String> {
        let and = match spec.condition.as_deref().map(str::to_ascii_uppercase).as_deref() {
            Some("AND" | "&&") => true,
            None | Some("" | "OR" | "||") => false,
            Some(other) => {
                return Err(format!("{what}: unknown allowlist condition {other:?}"));
            }
        };
        let target = match spec.regex_target.as_deref() {
            None | Some("" | "secret") => Target::Secret,
            Some("match") => Target::Match,
            Some("line") => Target::Line,
            Some(other) => return Err(format!("{what}: unknown allowlist regexTarget {other:?}")),
        };
        if spec.commits.is_empty()
            && spec.paths.is_empty()
            && spec.regexes.is_empty()
            && spec.stopwords.is_empty()
        {
            return Err(format!(
                "{what}: an allowlist must contain at least one check for: commits, paths, regexes, or stopwords"
            ));
        }
        let regex_source = (!spec.regexes.is_empty())
            .then(|| goregex::translate(&format!("(?:{})", spec.regexes.join("|"))));
        let mut stopwords: Vec<String> = spec.stopwords.iter().map(|w| w.to_lowercase()).collect();
        stopwords.sort();
        stopwords.dedup();
        Ok(Allowlist {
            and,
            target,
            has_commits_or_paths: !spec.commits.is_empty() || !spec.paths.is_empty(),
            regex_source,
            regex: OnceLock::new(),
            stopwords,
            stopword_matcher: OnceLock::new(),
        })
    }

    /// Whether the regexes match `target` (gitleaks: never for an empty target).
    fn regex_allows(&self, target: &str) -> bool {
        let Some(source) = &self.regex_source else { return false };
        if target.is_empty() {
            return false;
        }
        self.regex
            .get_or_init(|| compile(source).expect("built-in allowlists compile (tested)"))
            .is_match(target)
    }

    /// Whether the secret contains a stopword (ASCII case-insensitively; the stopwords are
    /// ASCII).
    fn stopword_allows(&self, secret: &str) -> bool {
        if self.stopwords.is_empty() || secret.is_empty() {
            return false;
        }
        self.stopword_matcher
            .get_or_init(|| {
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .build(&self.stopwords)
                    .expect("stopword automata build (tested)")
            })
            .is_match(secret)
    }

    /// gitleaks' `checkFindingAllowed` for one allowlist, on a fragment with no commit and no
    /// path.
    pub(crate) fn allows(&self, secret: &str, matched: &str, line: &str) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => matched,
            Target::Line => line,
        };
        if self.and {
            if self.has_commits_or_paths {
                return false;
            }
            (self.regex_source.is_none() || self.regex_allows(target))
                && (self.stopwords.is_empty() || self.stopword_allows(secret))
        } else {
            self.regex_allows(target) || self.stopword_allows(secret)
        }
    }

    #[cfg(test)]
    pub(crate) fn compile_all(&self) -> Result<(), String> {
        if let Some(source) = &self.regex_source {
            compile(source).map_err(|e| e.to_string())?;
        }
        if !self.stopwords.is_empty() {
            AhoCorasick::new(&self.stopwords).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// One rule that runs on message text.
#[derive(Debug)]
pub(crate) struct Rule {
    pub(crate) id: String,
    /// The regex as the rule file spells it (Go's syntax).
    pub(crate) go_source: String,
    /// The regex, translated from Go's syntax.
    source: String,
    regex: OnceLock<Regex>,
    /// For a regex that starts with gitleaks' identifier prefix `[\w.-]{0,50}?`: the regex
    /// without it (see [`Locator`]).
    pub(crate) locator: Option<Locator>,
    /// `secretGroup`: 0 means the first non-empty capture group, else the whole match.
    pub(crate) secret_group: usize,
    /// `entropy`: a secret whose Shannon entropy is at most this is not one (0: no check).
    pub(crate) entropy: f64,
    /// Lower-cased keywords; empty: the rule runs on every text.
    pub(crate) keywords: Vec<String>,
    pub(crate) allowlists: Vec<Allowlist>,
}

impl Rule {
    /// The compiled regex (compiled on first use).
    pub(crate) fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| compile(&self.source).expect("built-in rules compile (tested)"))
    }

    /// Whether gitleaks would give way to another rule's finding on the same secret (its
    /// `filter`: a rule whose id contains `generic` yields to any other).
    pub(crate) fn is_generic(&self) -> bool {
        self.id.to_ascii_lowercase().contains("generic")
    }

    #[cfg(test)]
    pub(crate) fn source(&self) -> &str {
        &self.source
    }
}

/// A rule's regex without its leading `[\w.-]{0,50}?` (gitleaks' semi-generic rules, and the
/// generic one): the same matches are found by searching this regex and extending each match
/// back over at most `reach` characters of `[\w.-]` (see `engine`).
///
/// The prefix keeps the lazy DFA from skipping anything (any word character may start a match),
/// while the rest starts with the rule's identifiers, which the regex engine finds fast.
#[derive(Debug)]
pub(crate) struct Locator {
    source: String,
    regex: OnceLock<Regex>,
    /// How many characters the prefix can take: 50, or 100 for the doubled prefix.
    pub(crate) reach: usize,
}

impl Locator {
    /// The forms gitleaks' generator writes (`cmd/generate/config/utils/generate.go`): the
    /// case-insensitive `(?i)[\w.-]{0,50}?REST` and the doubled `[\w.-]{0,50}?(?i:[\w.-]{0,50}?REST`.
    ///
    /// The prefix must be concatenated with the whole rest: a `|` outside any group (or, in the
    /// doubled form, directly inside the `(?i:` group) would make it a prefix of one
    /// alternative only, and such a rule keeps its whole regex.
    fn of(go: &str) -> Option<Locator> {
        const PREFIX: &str = r"[\w.-]{0,50}?";
        let (rest, reach, doubled) =
            if let Some(rest) = go.strip_prefix("(?i)").and_then(|r| r.strip_prefix(PREFIX)) {
                (format!("(?i){rest}"), 50, false)
            } else if let Some(rest) = go
                .strip_prefix(PREFIX)
                .and_then(|r| r.strip_prefix("(?i:"))
                .and_then(|r| r.strip_prefix(PREFIX))
            {
                (format!("(?i:{rest}"), 100, true)
            } else {
                return None;
            };
        let bars = alternation_groups(&rest);
        if bars.iter().any(|group| group.is_none() || (doubled && *group == Some(0))) {
            return None;
        }
        Some(Locator { source: goregex::translate(&rest), regex: OnceLock::new(), reach })
    }

    /// The compiled regex (compiled on first use).
    pub(crate) fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| compile(&self.source).expect("built-in rules compile (tested)"))
    }

    #[cfg(test)]
    pub(crate) fn source(&self) -> &str {
        &self.source
    }
}

/// For each `|` of a Go regex (outside classes, unescaped): the group it is directly in, by the
/// order the groups open (`None`: at the top level).
fn alternation_groups(go: &str) -> Vec<Option<usize>> {
    let chars: Vec<char> = go.chars().collect();
    let mut out = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut opened = 0;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => {
                // Skip the class: a leading `]` (or `^]`) is a literal, `[:name:]` nests.
                i += 1;
                if chars.get(i) == Some(&'^') {
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    i += 1;
                }
                while i < chars.len() && chars[i] != ']' {
                    if chars[i] == '\\' {
                        i += 1;
                    } else if chars[i] == '[' && chars.get(i + 1) == Some(&':') {
                        while i < chars.len()
                            && !(chars[i] == ':' && chars.get(i + 1) == Some(&']'))
                        {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
            }
            '(' => {
                stack.push(opened);
                opened += 1;
            }
            ')' => {
                stack.pop();
            }
            '|' => out.push(stack.last().copied()),
            _ => {}
        }
        i += 1;
    }
    out
}

/// A rule of the files that does not run on message text, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Excluded {
    pub(crate) id: String,
    pub(crate) reason: String,
}

/// The loaded rule set.
#[derive(Debug)]
pub(crate) struct RuleSet {
    /// In file order: gitleaks' rules, then ours.
    pub(crate) rules: Vec<Rule>,
    /// The global allowlists (gitleaks' `[allowlist]`, then ours).
    pub(crate) global: Vec<Allowlist>,
    pub(crate) excluded: Vec<Excluded>,
}

/// Compiles one translated regex.
pub(crate) fn compile(source: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(source).size_limit(SIZE_LIMIT).build()
}

fn parse(text: &str, name: &str) -> Result<FileSpec, String> {
    toml::from_str(text).map_err(|e| format!("{name}: {e}"))
}

impl RuleSet {
    /// Loads gitleaks' file and our layer. Errors name the file and rule.
    pub(crate) fn load(gitleaks: &str, ours: &str) -> Result<RuleSet, String> {
        let base = parse(gitleaks, "rules/gitleaks.toml")?;
        let layer = parse(ours, "rules/scriptorium.toml")?;
        let disabled = layer.extend.as_ref().map(|e| e.disabled_rules.clone()).unwrap_or_default();
        let mut rules = Vec::new();
        let mut global = Vec::new();
        let mut excluded = Vec::new();
        let mut targeted: Vec<(String, Allowlist)> = Vec::new();
        for (file, spec) in [("rules/gitleaks.toml", base), ("rules/scriptorium.toml", layer)] {
            let mut lists: Vec<AllowlistSpec> = spec.allowlist.into_iter().collect();
            lists.extend(spec.allowlists);
            for mut list in lists {
                let targets = std::mem::take(&mut list.target_rules);
                let allowlist = Allowlist::from_spec(list, &format!("{file}: [[allowlists]]"))?;
                if targets.is_empty() {
                    global.push(allowlist);
                } else {
                    let mut targets = targets.into_iter();
                    // One allowlist object per target (gitleaks shares a pointer; same effect).
                    if let Some(first) = targets.next() {
                        for other in targets {
                            targeted.push((other, clone_allowlist(&allowlist)));
                        }
                        targeted.push((first, allowlist));
                    }
                }
            }
            for rule in spec.rules {
                if rules.iter().any(|r: &Rule| r.id == rule.id)
                    || excluded.iter().any(|e: &Excluded| e.id == rule.id)
                {
                    return Err(format!("{file}: rule {} is defined twice", rule.id));
                }
                if disabled.contains(&rule.id) {
                    excluded.push(Excluded {
                        id: rule.id,
                        reason: "disabled by rules/scriptorium.toml".to_owned(),
                    });
                    continue;
                }
                let Some(regex) = rule.regex else {
                    excluded.push(Excluded {
                        id: rule.id,
                        reason: "path-only rule: it flags files by name, and a message has no path"
                            .to_owned(),
                    });
                    continue;
                };
                if let Some(path) = rule.path {
                    excluded.push(Excluded {
                        id: rule.id,
                        reason: format!(
                            "scoped to files whose path matches {path}: a message has no path"
                        ),
                    });
                    continue;
                }
                let what = format!("{file}: rule {}", rule.id);
                let mut allowlists = Vec::new();
                for list in rule.allowlist.into_iter().chain(rule.allowlists) {
                    allowlists.push(Allowlist::from_spec(list, &what)?);
                }
                // The generic rule's secret class takes `.` already (a trailing period joins
                // the secret); its windowed search is proven for the regex exactly as written.
                let regex = if rule.id == GENERIC_ID { regex } else { in_prose(&regex) };
                rules.push(Rule {
                    source: goregex::translate(&regex),
                    locator: Locator::of(&regex),
                    go_source: regex,
                    regex: OnceLock::new(),
                    secret_group: rule.secret_group,
                    entropy: rule.entropy,
                    keywords: rule.keywords.iter().map(|k| k.to_lowercase()).collect(),
                    allowlists,
                    id: rule.id,
                });
            }
        }
        for id in &disabled {
            if !excluded.iter().any(|e| &e.id == id) {
                return Err(format!("rules/scriptorium.toml: disabled rule {id} does not exist"));
            }
        }
        for (id, allowlist) in targeted {
            match rules.iter_mut().find(|r| r.id == id) {
                Some(rule) => rule.allowlists.push(allowlist),
                None if excluded.iter().any(|e| e.id == id) => {}
                None => return Err(format!("[[allowlists]] target rule ID '{id}' does not exist")),
            }
        }
        Ok(RuleSet { rules, global, excluded })
    }
}

/// gitleaks' generic rule, left exactly as written (see [`in_prose`]).
pub(crate) const GENERIC_ID: &str = "generic-api-key";

/// The end of a token as gitleaks' rules require it after the secret: a quote, a backtick,
/// whitespace, `;`, an escaped newline or the end of the text. Code ends a token so; prose also
/// ends one with sentence punctuation.
const CODE_TERMINATOR: &str = r#"(?:[\x60'"\s;]|\\[nr]|$)"#;

/// [`CODE_TERMINATOR`] that also takes the punctuation that ends a token in a sentence
/// (`my key is sk_live_…, and`, `(token ghp_…)`, `… is ghp_….`).
const PROSE_TERMINATOR: &str = r#"(?:[\x60'"\s;.,:!?)\]>]|\\[nr]|$)"#;

/// A rule's regex as it runs on messages: [`CODE_TERMINATOR`] widened to
/// [`PROSE_TERMINATOR`] (the one change made to gitleaks' rules; the secret itself is matched
/// as gitleaks matches it, the punctuation stays outside it). Without it, the stripe rule misses
/// "the key is sk_live_….", the most ordinary way a person pastes one.
fn in_prose(regex: &str) -> String {
    regex.replace(CODE_TERMINATOR, PROSE_TERMINATOR)
}

fn clone_allowlist(a: &Allowlist) -> Allowlist {
    Allowlist {
        and: a.and,
        target: a.target,
        has_commits_or_paths: a.has_commits_or_paths,
        regex_source: a.regex_source.clone(),
        regex: OnceLock::new(),
        stopwords: a.stopwords.clone(),
        stopword_matcher: OnceLock::new(),
    }
}

/// gitleaks' `shannonEntropy`: the entropy of the distribution of the string's characters,
/// with frequencies taken over its length in *bytes* (as gitleaks computes it; for ASCII, the
/// usual Shannon entropy in bits per character).
pub(crate) fn shannon_entropy(data: &str) -> f64 {
    if data.is_empty() {
        return 0.0;
    }
    let mut ascii = [0u32; 128];
    let mut other: Vec<(char, u32)> = Vec::new();
    for c in data.chars() {
        if c.is_ascii() {
            ascii[c as usize] += 1;
        } else if let Some(slot) = other.iter_mut().find(|(k, _)| *k == c) {
            slot.1 += 1;
        } else {
            other.push((c, 1));
        }
    }
    let inv = 1.0 / data.len() as f64;
    let mut entropy = 0.0;
    for count in ascii.iter().copied().chain(other.iter().map(|(_, n)| *n)) {
        if count > 0 {
            let freq = f64::from(count) * inv;
            entropy -= freq * freq.log2();
        }
    }
    entropy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_matches_gitleaks() {
        assert_eq!(shannon_entropy(""), 0.0);
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("ab") - 1.0).abs() < 1e-12);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-12);
        // Non-ASCII: rune counts over the byte length, as gitleaks computes it.
        let e = shannon_entropy("éa");
        let want = -(1.0 / 3.0) * (1.0f64 / 3.0).log2() * 2.0;
        assert!((e - want).abs() < 1e-12, "{e} {want}");
    }
}

#[cfg(test)]
mod load_tests {
    use super::*;

    #[test]
    fn every_rule_compiles_or_is_excluded_with_its_reason() {
        let set = RuleSet::load(GITLEAKS_TOML, SCRIPTORIUM_TOML).expect("loads");
        let mut failures = Vec::new();
        for rule in &set.rules {
            if let Err(e) = compile(rule.source()) {
                failures.push(format!("{}: {e}", rule.id));
            }
            if let Some(locator) = &rule.locator
                && let Err(e) = compile(locator.source())
            {
                failures.push(format!("{} locator: {e}", rule.id));
            }
            for a in &rule.allowlists {
                if let Err(e) = a.compile_all() {
                    failures.push(format!("{} allowlist: {e}", rule.id));
                }
            }
        }
        for a in &set.global {
            if let Err(e) = a.compile_all() {
                failures.push(format!("global allowlist: {e}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        let gitleaks: FileSpec = toml::from_str(GITLEAKS_TOML).expect("parses");
        let ours: FileSpec = toml::from_str(SCRIPTORIUM_TOML).expect("parses");
        // Every rule of both files either runs or is excluded, with its reason.
        assert_eq!(set.rules.len() + set.excluded.len(), gitleaks.rules.len() + ours.rules.len());
        assert_eq!((gitleaks.rules.len(), ours.rules.len()), (222, 13));
        assert_eq!(set.rules.len(), 230);
        let excluded: Vec<String> =
            set.excluded.iter().map(|e| format!("{}: {}", e.id, e.reason)).collect();
        assert_eq!(
            excluded,
            [
                r"freemius-secret-key: scoped to files whose path matches (?i)\.php$: a message has no path",
                r"hashicorp-tf-password: scoped to files whose path matches (?i)\.(?:tf|hcl)$: a message has no path",
                r"kubernetes-secret-yaml: scoped to files whose path matches (?i)\.ya?ml$: a message has no path",
                r"nuget-config-password: scoped to files whose path matches (?i)nuget\.config$: a message has no path",
                "pkcs12-file: path-only rule: it flags files by name, and a message has no path",
            ]
        );
    }

    #[test]
    fn tokens_end_at_sentence_punctuation_as_in_code() {
        let set = RuleSet::load(GITLEAKS_TOML, SCRIPTORIUM_TOML).expect("loads");
        let widened = set.rules.iter().filter(|r| r.go_source.contains(PROSE_TERMINATOR)).count();
        assert!(widened > 100, "gitleaks' rules end tokens so: {widened}");
        assert!(
            set.rules.iter().all(|r| !r.go_source.contains(CODE_TERMINATOR) || r.id == GENERIC_ID)
        );
        let key = format!("sk_live_{}", "Zq8Lm2Xv9Pq4Rt7WbN3cK6dF");
        for text in [format!("the key is {key}."), format!("({key}), then"), format!("{key}!")] {
            let out = crate::Redactor::builtin().redact(&text).text.into_owned();
            assert!(!out.contains(&key), "{out}");
            assert!(out.contains("[REDACTED:stripe-access-token]"), "{out}");
        }
    }

    #[test]
    fn rule_ids_are_safe_in_a_marker() {
        let set = RuleSet::load(GITLEAKS_TOML, SCRIPTORIUM_TOML).expect("loads");
        for rule in &set.rules {
            assert!(crate::valid_id(&rule.id), "{}", rule.id);
            assert!(rule.id != crate::PRIVATE_ID);
        }
    }

    #[test]
    fn the_semi_generic_rules_have_locators() {
        let set = RuleSet::load(GITLEAKS_TOML, SCRIPTORIUM_TOML).expect("loads");
        let with: Vec<&str> =
            set.rules.iter().filter(|r| r.locator.is_some()).map(|r| r.id.as_str()).collect();
        assert_eq!(with.len(), 99, "{with:?}");
        // The rules that start with the prefix but keep their whole regex: a top-level
        // alternation.
        let without: Vec<&str> = set
            .rules
            .iter()
            .filter(|r| r.locator.is_none() && r.go_source.contains(r"[\w.-]{0,50}?"))
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(without, ["atlassian-api-token"]);
    }

    #[test]
    fn alternations_are_placed_in_their_groups() {
        assert_eq!(alternation_groups("a|b"), [None]);
        assert_eq!(alternation_groups("(a|b)|c"), [Some(0), None]);
        assert_eq!(alternation_groups(r"(?i:x(?:a|b)|c)d"), [Some(1), Some(0)]);
        assert_eq!(alternation_groups(r"[|]\|(?:[]|]|x)"), [Some(0)]);
        assert_eq!(alternation_groups(r"[[:alpha:]|]"), Vec::<Option<usize>>::new());
    }
}
